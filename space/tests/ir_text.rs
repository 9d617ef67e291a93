//! The text form of loop nests: the naive and scheduled nests of every shipped
//! workload print, parse back to the same text and compute the same results
//! (scalars, index-tensor ranges, indirect indices, casts, cos/exp, local
//! cache tensors, vector loops with tails); malformed text gets an error with
//! its line, column and what was expected.

use scaletune_space::data::make_args;
use scaletune_space::design::DesignSpace;
use scaletune_space::ir::{parse_nest, Nest};
use scaletune_space::sample::task_rng;
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::{load, shipped_names, Workload};
use scaletune_space::VectorCaps;

/// Every shipped workload at a size the nest executor runs quickly.
const WORKLOADS: &[&str] = &[
    "scale_add:N=37",
    "axpy:N=29",
    "daxpy:N=23",
    "sum_cos:N=45",
    "row_sum:M=5,N=19",
    "softmax_rows:M=3,N=21",
    "layer_norm:M=3,N=21",
    "matmul:M=9,N=21,K=6",
    "matmul_bt:M=7,N=10,K=13",
    "batch_matmul:BS=2,M=5,N=9,K=3",
    "outer_product:M=6,N=17",
    "paged_read:P=11,PAGES=40",
    "transpose:M=7,N=13",
    "conv2d_nhwc:H=5,WI=6,C=3,F=9",
    "depthwise_conv2d_nhwc:H=5,WI=6,C=11",
    "matmul_i8:M=5,N=19,K=4",
    "matmul_f16:M=5,N=19,K=4",
    "matmul_bf16:M=5,N=19,K=4",
];

/// Vector capabilities the schedules are drawn for: length-agnostic SVE,
/// NEON (no gathers) and RVV (64-bit granules).
fn caps() -> Vec<VectorCaps> {
    vec![VectorCaps::scalable(128, 128, 2048), VectorCaps::fixed(128), VectorCaps::scalable(64, 128, 1024)]
}

/// One `Vec<f64>` per workload tensor (inputs from the deterministic data,
/// outputs and temporaries NaN), as [`Nest::execute`] takes them.
fn inputs(w: &Workload) -> Vec<Vec<f64>> {
    let args = make_args(w, 5);
    let ids = w.arg_tensors();
    w.tensors
        .iter()
        .enumerate()
        .map(|(i, t)| match ids.iter().position(|x| x.index() == i) {
            Some(p) => (0..args[p].len()).map(|k| args[p].get(k)).collect(),
            None => vec![f64::NAN; t.len()],
        })
        .collect()
}

/// Prints `nest`, parses it back, checks the text is unchanged, the parsed
/// nest verifies, and both compute bit-identical tensors at two vscales.
/// Returns the text.
fn round_trip(w: &Workload, nest: &Nest, what: &str) -> String {
    let text = nest.to_string();
    let back = parse_nest(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
    assert_eq!(back.to_string(), text, "{what}: the text form does not round-trip");
    back.verify().unwrap_or_else(|e| panic!("{what}: parsed nest does not verify: {e}\n{text}"));
    assert_eq!(back.caps, nest.caps, "{what}");
    let ins = inputs(w);
    for &vs in nest.caps.vscale_values.iter().take(2) {
        let a = nest.execute(vs, &ins).unwrap_or_else(|e| panic!("{what}, vscale {vs}: {e}\n{text}"));
        let b = back.execute(vs, &ins).unwrap_or_else(|e| panic!("{what}, vscale {vs}, parsed: {e}\n{text}"));
        assert_eq!(a.len(), b.len(), "{what}");
        for (t, (x, y)) in a.iter().zip(&b).enumerate() {
            let same = x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{what}, vscale {vs}: tensor {} differs after the round trip\n{text}", w.tensors[t].name);
        }
    }
    text
}

#[test]
fn the_table_covers_every_shipped_workload() {
    let mut names: Vec<&str> = WORKLOADS.iter().map(|r| r.split(':').next().expect("name")).collect();
    names.sort_unstable();
    let mut shipped = shipped_names();
    shipped.sort_unstable();
    assert_eq!(names, shipped);
}

#[test]
fn naive_nests_of_every_shipped_workload_round_trip() {
    let mut all = String::new();
    for r in WORKLOADS {
        let w = load(r).expect("loads");
        for c in caps() {
            all += &round_trip(&w, &Nest::from_workload(&w, c), &format!("{r} naive"));
        }
    }
    // The features the text form must carry are really exercised.
    for feature in [
        "scalar s: f32 = 1.5",         // scale_add's scalar
        "scalar a: f32 = 0.75",        // axpy's scalar
        "scalar a: f64 = 0.3",         // daxpy's f64 scalar
        "tensor Out: f64[23] output",  // daxpy's f64 tensors
        "i32[11] input range [0, 40]", // paged_read's index tensor and its range
        "Storage[Ind[",                // an indirect index
        "cos(",                        // sum_cos
        "exp(",                        // softmax_rows
        "i32(",                        // matmul_i8's widening casts
        "f32(",                        // matmul_f16's widening casts
        "bf16[5, 4] input",            // matmul_bf16's tensors
        "max=",                        // softmax_rows's max reduction
        "temp",                        // softmax_rows's temporaries
    ] {
        assert!(all.contains(feature), "no naive nest shows `{feature}`");
    }
}

#[test]
fn sampled_schedules_of_every_shipped_workload_round_trip() {
    let mut all = String::new();
    for r in WORKLOADS {
        let w = load(r).expect("loads");
        for (ci, c) in caps().into_iter().enumerate() {
            let nest = Nest::from_workload(&w, c);
            let space = DesignSpace::generate(&nest);
            for seed in 0..3u64 {
                let mut rng = task_rng(seed, ci as u64);
                let s = space.sample(&mut rng).unwrap_or_else(|e| panic!("{r}: cannot sample: {e}"));
                all += &round_trip(&w, &s.nest, &format!("{r}, caps {ci}, seed {seed}\n{}", s.trace));
            }
        }
    }
    for feature in ["vectorize(", " unroll:", " local"] {
        assert!(all.contains(feature), "no sampled nest shows `{feature}`");
    }
}

/// Hand-written schedules reaching what sampling may miss: transposed and
/// plain cache reads, a cache write, a decomposed reduction, a peeled and a
/// scalar tail, a gathered vector loop, fused statements, the init blocks
/// of a reduction into one element and of a max reduction.
#[test]
fn hand_written_schedules_round_trip() {
    let cases = [
        (
            "matmul:M=13,N=21,K=9",
            "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"peel\")\nw = cache_write(b, at=j0)\np = cache_read(b, \"B\", at=j0, layout=[1, 0])\na = cache_read(b, \"A\", at=j0)\n",
        ),
        (
            "matmul:M=9,N=10,K=3",
            "b = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 2*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1, tail=\"scalar\")\ninit = decompose_reduction(b, k)\n",
        ),
        (
            "paged_read:P=11,PAGES=40",
            "b = get_block(\"X\")\np, v = get_loops(b)\np0, p1 = split(p, factors=[None, 4*vscale])\nreorder(p0, v, p1)\nvectorize(p1, tail=\"predicate\")\n",
        ),
        (
            "softmax_rows:M=3,N=21",
            "y = get_block(\"Y\")\ni, j = get_loops(y)\ns = get_block(\"S\")\ncompute_at(s, i)\ne = get_block(\"E\")\ncompute_at(e, i)\nm = get_block(\"Mx\")\ncompute_at(m, i)\n",
        ),
        (
            "conv2d_nhwc:H=6,WI=6,C=3,F=5,S=2",
            "b = get_block(\"Out\")\nn, oh, ow, f, r, s, c = get_loops(b)\nf0, f1 = split(f, factors=[None, 4*vscale])\nreorder(n, oh, ow, f0, r, s, c, f1)\nvectorize(f1, tail=\"peel\")\np = cache_read(b, \"In\", at=ow)\n",
        ),
        // A reduction into one element: its init block has no iteration variables.
        (
            "sum_cos:N=45",
            "b = get_block(\"S\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1)\ninit = decompose_reduction(b, i0)\n",
        ),
        // A max reduction: its init is `-inf`.
        (
            "softmax_rows:M=3,N=21",
            "m = get_block(\"Mx\")\ni, j = get_loops(m)\ninit = decompose_reduction(m, j)\n",
        ),
        (
            "transpose:M=7,N=5",
            "b = get_block(\"Y\")\nj, i = get_loops(b)\nf = fuse(j, i)\nf0, f1 = split(f, factors=[None, 2*vscale])\nvectorize(f1)\n",
        ),
    ];
    let mut all = String::new();
    for (r, trace) in cases {
        let w = load(r).expect("loads");
        let mut nest = Nest::from_workload(&w, VectorCaps::scalable(128, 128, 2048));
        parse_trace(trace).expect("parses").apply(&mut nest).unwrap_or_else(|e| panic!("{r}: {e}"));
        all += &round_trip(&w, &nest, &format!("{r}\n{trace}"));
    }
    for feature in [
        "tensor C_local: f32[4, 4*vscale] local",
        "tensor B_local: f32[4*vscale, 9] local",
        "vectorize(peel)",
        "vectorize(scalar)",
        "vectorize(predicate)",
        "C_init",
        "In_local",
        "block S_init[]:",
        "Mx[vi_init] = -inf",
    ] {
        assert!(all.contains(feature), "no hand-scheduled nest shows `{feature}`");
    }
}

/// Malformed nest texts: each error names the line, the column and what was
/// expected; none panics.
#[test]
fn malformed_nest_text_is_refused_with_a_position() {
    let good = "nest k\ncaps fixed granule 128 vscale [1]\ntensor A: f32[4] input\ntensor B: f32[4] output\nfor i in 4:\n  block B[vi: 4 = i]:\n    B[vi] = (A[vi] * 2)\n";
    let n = parse_nest(good).unwrap_or_else(|e| panic!("the base text parses: {e}"));
    assert_eq!(parse_nest(&n.to_string()).expect("reparses").to_string(), n.to_string());
    let cases: &[(&str, &str, &str)] = &[
        ("nest k\n", "", "line 1, column 1: expected `nest NAME` first"),
        (
            "  block B[vi: 4 = i]:",
            "   block B[vi: 4 = i]:",
            "line 6, column 1: indentation must be a multiple of two spaces",
        ),
        ("tensor A: f32[4] input", "tensor A: f33[4] input", "line 3, column 11: unknown dtype `f33`"),
        (
            "tensor A: f32[4] input",
            "tensor A: f32[4] inbound",
            "line 3, column 18: expected input, output, temp or local",
        ),
        ("caps fixed", "caps wobbly", "line 2, column 6: expected `scalable` or `fixed`"),
        (
            "vscale [1]",
            "vscale [1] gather shiny",
            "line 2, column 42: expected `gather`, `sme`, `no_f16_vectors` or end of line",
        ),
        ("for i in 4:", "for i in 4", "line 5, column 11: expected `:` at the end of the loop header"),
        ("= i]", "= q]", "line 6, column 19: unknown variable `q`"),
        ("for i in 4:", "loop i in 4:", "line 5, column 1: expected `for` or `block`"),
        (
            "    B[vi] = (A[vi] * 2)\n",
            "",
            "line 6, column 3: a block header must be followed by its statement, indented",
        ),
        (
            "B[vi] = (A[vi] * 2)",
            "B[vi] = (A[vi] * )",
            "line 7, column 22: expected a value (number, tensor element, scalar or function call), found `)`",
        ),
        ("B[vi] = (A[vi] * 2)", "B[vi] = (Q[vi] * 2)", "line 7, column 14: unknown tensor `Q`"),
    ];
    for (from, to, want) in cases {
        assert!(good.contains(from), "{from}");
        let bad = good.replacen(from, to, 1);
        let e = parse_nest(&bad).expect_err(&format!("must not parse:\n{bad}"));
        let msg = e.to_string();
        assert!(msg.starts_with("line "), "{msg}");
        assert!(msg.contains(want), "`{want}` not in `{msg}` for\n{bad}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
}
