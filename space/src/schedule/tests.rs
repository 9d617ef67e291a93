//! Schedule primitives checked against the workload reference by executing
//! the scheduled nest at several vscale values, plus legality errors.

use crate::caps::VectorCaps;
use crate::data::make_args;
use crate::ir::{parse_nest, Nest};
use crate::reference::evaluate;
use crate::schedule::ErrorKind;
use crate::trace::{parse_trace, TraceErrorKind};
use crate::workload::{load, Workload};

pub(crate) const MATMUL_EXAMPLE: &str = r#"b = get_block("C")
i, j, k = get_loops(b)
i0, i1 = split(i, factors=[None, 4])
j0, j1 = split(j, factors=[None, 4*vscale])
reorder(i0, j0, k, i1, j1)
unroll(i1)
vectorize(j1, tail="predicate")
"#;

fn inputs(w: &Workload) -> Vec<Vec<f64>> {
    let args = make_args(w, 11);
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

/// Applies `trace` to `workload`, checks structure, text round trip and
/// results at every vscale of `caps`; returns the scheduled nest.
pub(crate) fn check(workload: &str, trace: &str, caps: VectorCaps) -> Nest {
    let w = load(workload).expect("workload loads");
    let mut nest = Nest::from_workload(&w, caps.clone());
    let t = parse_trace(trace).expect("trace parses");
    t.apply(&mut nest).unwrap_or_else(|e| panic!("{e}"));
    nest.verify().expect("verifies");
    let text = nest.to_string();
    let back = parse_nest(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_string(), text, "text form round-trips");
    let refv = evaluate(&w, &make_args(&w, 11)).expect("reference");
    let ins = inputs(&w);
    for &vs in &caps.vscale_values {
        for n in [&nest, &back] {
            let out = n.execute(vs, &ins).unwrap_or_else(|e| panic!("vscale {vs}: {e}\n{text}"));
            for (tid, t) in w.tensors.iter().enumerate() {
                if t.role != crate::workload::Role::Output {
                    continue;
                }
                for (i, (g, r)) in out[tid].iter().zip(&refv[tid].values).enumerate() {
                    assert!(
                        (g - r).abs() <= 1e-9 * (1.0 + r.abs()) || (g.is_nan() && r.is_nan()),
                        "vscale {vs}: {}[{i}] = {g}, expected {r}\n{text}",
                        t.name
                    );
                }
            }
        }
    }
    nest
}

fn sve() -> VectorCaps {
    VectorCaps::scalable(128, 128, 2048)
}

#[test]
fn matmul_example_schedule() {
    let nest = check("matmul:M=67,N=131,K=29", MATMUL_EXAMPLE, sve());
    expect_test::expect![[r#"
        nest matmul
        caps scalable granule 128 vscale [1, 2, 4, 8, 16] gather
        tensor A: f32[67, 29] input
        tensor B: f32[29, 131] input
        tensor C: f32[67, 131] output
        for i0 in 17:
          for j0 in ceildiv(131, 4*vscale):
            for k in 29:
              for i1 in 4 unroll:
                for j1 in 4*vscale vectorize(predicate):
                  block C[vi: 67 = i0*4 + i1, vj: 131 = j0*4*vscale + j1, vk: 29 reduce = k] where i0*4 + i1 < 67, j0*4*vscale + j1 < 131 init:
                    C[vi, vj] += (A[vi, vk] * B[vk, vj])
    "#]]
    .assert_eq(&nest.to_string());
}

#[test]
fn dividing_split_has_no_predicate_on_a_fixed_target() {
    let nest = check("matmul:M=64,N=128,K=8", MATMUL_EXAMPLE, VectorCaps::fixed(512));
    let b = nest.find_block("C").expect("C");
    assert!(nest.block(b).predicates.is_empty(), "{nest}");
}

#[test]
fn tails_peel_and_scalar_are_legal_for_split_tails() {
    for tail in ["peel", "scalar"] {
        let t = MATMUL_EXAMPLE.replace("\"predicate\"", &format!("\"{tail}\""));
        check("matmul:M=67,N=131,K=29", &t, sve());
    }
}

#[test]
fn fuse_then_split_then_vectorize() {
    let t = r#"b = get_block("Y")
j, i = get_loops(b)
f = fuse(j, i)
f0, f1 = split(f, factors=[None, 2*vscale])
vectorize(f1)
"#;
    check("transpose:M=7,N=5", t, sve());
}

#[test]
fn cache_write_and_transposed_cache_read() {
    let t = format!(
        "{MATMUL_EXAMPLE}w = cache_write(b, at=j0)\np = cache_read(b, \"B\", at=j0, layout=[1, 0])\na = cache_read(b, \"A\", at=j0)\n"
    );
    let nest = check("matmul:M=13,N=21,K=9", &t, sve());
    let text = nest.to_string();
    assert!(text.contains("tensor C_local: f32[4, 4*vscale] local"), "{text}");
    assert!(text.contains("tensor B_local: f32[4*vscale, 9] local"), "{text}");
}

#[test]
fn decompose_reduction_moves_the_init() {
    let t = format!("{MATMUL_EXAMPLE}init = decompose_reduction(b, k)\n");
    let nest = check("matmul:M=9,N=10,K=3", &t, sve());
    let init = nest.find_block("C_init").expect("init block");
    assert!(!nest.block(nest.find_block("C").expect("C")).init);
    let loops = nest.ancestors(crate::ir::Node::Block(init));
    assert_eq!(loops.len(), 4, "{nest}");
}

#[test]
fn lowering_initializes_a_reduction_past_loops_that_carry_none_of_it() {
    // Where `decompose_all_inits` (lowering's) puts C's zeros, by the loops
    // enclosing the init block.
    let placed = |trace: &str| {
        let w = load("matmul:M=12,N=16,K=8").expect("workload");
        let mut nest = Nest::from_workload(&w, VectorCaps::fixed(128));
        parse_trace(trace).expect("parses").apply(&mut nest).expect("applies");
        nest.decompose_all_inits();
        let init = nest.find_block("C_init").expect("an init block");
        let names: Vec<String> =
            nest.ancestors(crate::ir::Node::Block(init)).iter().map(|l| nest.loop_name(*l).to_string()).collect();
        names.join(" ")
    };
    let tiles = |kc: i64, inner: &str| {
        format!(
            "b = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 4])\ni0, i1 = split(i, factors=[None, 3])\nk0, k1 = split(k, factors=[None, {kc}])\nreorder(j0, k0, i0, k1, i1, j1)\n{inner}"
        )
    };
    // k0 runs once: past it and the serial loop over row tiles, to k1.
    expect_test::expect!["j0 k0 i0 i1_init j1_init"].assert_eq(&placed(&tiles(8, "unroll(i1)\n")));
    // k0 runs twice: before it, over the whole strip.
    expect_test::expect!["j0 i0_init i1_init j1_init"].assert_eq(&placed(&tiles(4, "unroll(i1)\n")));
    // A parallel loop over the row tiles stops the move at k0.
    expect_test::expect!["j0 i0_init i1_init j1_init"].assert_eq(&placed(&tiles(8, "unroll(i1)\nparallel(i0)\n")));
}

#[test]
fn softmax_fused_by_compute_at() {
    let t = r#"y = get_block("Y")
i, j = get_loops(y)
s = get_block("S")
compute_at(s, i)
e = get_block("E")
compute_at(e, i)
m = get_block("Mx")
compute_at(m, i)
"#;
    let nest = check("softmax_rows:M=5,N=9", t, sve());
    assert_eq!(nest.root.len(), 1, "{nest}");
}

#[test]
fn conv_with_cache_read_of_the_input_window() {
    let t = r#"b = get_block("Out")
n, oh, ow, f, r, s, c = get_loops(b)
f0, f1 = split(f, factors=[None, 4*vscale])
reorder(n, oh, ow, f0, r, s, c, f1)
vectorize(f1, tail="peel")
p = cache_read(b, "In", at=ow)
"#;
    check("conv2d_nhwc:H=6,WI=6,C=3,F=5,S=2", t, sve());
}

fn fail(workload: &str, trace: &str) -> crate::trace::TraceError {
    fail_on(&load(workload).expect("loads"), trace)
}

fn fail_on(w: &Workload, trace: &str) -> crate::trace::TraceError {
    fail_nest(Nest::from_workload(w, sve()), trace)
}

fn fail_nest(mut nest: Nest, trace: &str) -> crate::trace::TraceError {
    let t = parse_trace(trace).expect("parses");
    let before = nest.to_string();
    let e = t.apply(&mut nest).expect_err("must fail");
    // The failing instruction left the nest as the ones before it made it.
    let upto = nest;
    let n = e.line.expect("the error names its line") - 1;
    let prefix: String = trace.lines().take(n).map(|l| format!("{l}\n")).collect();
    let mut again = parse_nest(&before).expect("reparses");
    parse_trace(&prefix).expect("parses").apply(&mut again).expect("the instructions before apply");
    assert_eq!(again.to_string(), upto.to_string(), "a failed primitive changed the nest");
    e
}

/// Asserts the error's one line names the instruction, the primitive and the reason.
fn names(e: &crate::trace::TraceError, inst: &str, reason: &str) {
    let text = e.to_string();
    assert!(text.contains(&format!("`{inst}`: ")), "instruction `{inst}` not named: {text}");
    assert!(text.contains(reason), "reason `{reason}` not in: {text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

fn inline_workload(toml: &str) -> Workload {
    crate::workload::WorkloadSpec::parse(toml, "inline.toml", "inline")
        .and_then(|s| s.instantiate(&[]))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn f16_loops_are_not_vectorized_where_vectors_cannot_hold_f16() {
    // Scalable RVV without Zvfh: the f16 reads of the matmul's block may
    // not become vectors; its f32 write-back to a local may.
    let rvv = VectorCaps { half_vectors: false, ..VectorCaps::scalable(64, 128, 1024) };
    let w = load("matmul_f16:M=8,N=16,K=4").expect("loads");
    let j_vector = "b = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 2*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1)\n";
    let e = fail_nest(Nest::from_workload(&w, rvv.clone()), j_vector);
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::LoopKind));
    assert_eq!(
        e.to_string(),
        "line 5: `vectorize(j1, tail=\"predicate\")`: vectorize: cannot vectorize loop `j1`: block `C` computes with f16 values, \
         and this target's vectors cannot hold f16 elements (scalable f16 vectors on RVV need the Zvfh extension)"
    );
    // The same schedule where vectors hold f16.
    check("matmul_f16:M=8,N=16,K=4", j_vector, VectorCaps::scalable(64, 128, 1024));
    // An f32 block of the same nest still vectorizes.
    let write_back = "b = get_block(\"C\")\ni, j, k = get_loops(b)\nc = cache_write(b, at=i)\ni2, i3, j2 = get_loops(c)\nj3, j4 = split(j2, factors=[None, 2*vscale])\nvectorize(j4)\n";
    let mut nest = Nest::from_workload(&w, rvv);
    parse_trace(write_back).expect("parses").apply(&mut nest).unwrap_or_else(|e| panic!("{e}"));
    assert!(nest.caps_text().ends_with(" no_f16_vectors"), "{}", nest.caps_text());
    let back = parse_nest(&nest.to_string()).expect("reparses");
    assert_eq!(back.caps, nest.caps, "the text form keeps the caps");
}

#[test]
fn illegal_schedules_are_refused_with_a_reason() {
    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nvectorize(kk)\n");
    assert_eq!(e.kind, TraceErrorKind::UnknownName);
    assert_eq!(e.to_string(), "line 3: `vectorize(kk, tail=\"predicate\")`: `kk` is not defined");

    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nvectorize(j)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::LoopKind));
    assert!(e.message.contains("extent 128 is not a vector length"), "{e}");

    let e = fail("matmul", "b = get_block(\"Q\")\n");
    assert!(e.message.contains("no block named `Q` (blocks: C)"), "{e}");

    let e = fail(
        "softmax_rows",
        "e = get_block(\"E\")\ni, j = get_loops(e)\ny = get_block(\"Y\")\ni2, j2 = get_loops(y)\nreorder(j, i2)\n",
    );
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Structure));

    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[4, 8])\n");
    assert!(e.message.contains("multiply to 32, which can be less than its extent 128"), "{e}");

    let e = fail(
        "matmul",
        "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, 4])\nunroll(i)\n",
    );
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Stale));

    let e = fail("matmul:N=10", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 3])\nf = fuse(j0, j1)\nf0, f1 = split(f, factors=[None, 4])\nreorder(k, f1)\nvectorize(f1, tail=\"peel\")\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::LoopKind), "{e}");
    assert!(e.message.contains("tail=\"peel\" needs a tail condition"), "{e}");

    let e =
        fail("softmax_rows", "m = get_block(\"Mx\")\ny = get_block(\"Y\")\ni, j = get_loops(y)\ncompute_at(m, i)\n");
    assert!(e.message.contains("reads `Mx` outside"), "{e}");

    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nparallel(k)\n");
    assert!(e.message.contains("carries the reduction of block `C`"), "{e}");

    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nk0, k1 = split(k, factors=[None, 4])\nreorder(k0, i, j, k1)\ninit = decompose_reduction(b, i)\n");
    assert!(e.message.contains("loop `k0` outside `i` carries the reduction"), "{e}");

    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nw = cache_write(b, at=k)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Region));

    let e = fail("paged_read", "b = get_block(\"X\")\np, v = get_loops(b)\nc = cache_read(b, \"Storage\", at=p)\n");
    assert!(e.message.contains("cannot bound dimension 0 of `Storage`"), "{e}");

    // split: at most one inferred factor.
    let e = fail(
        "matmul",
        "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1, i2 = split(i, factors=[None, 4, None])\n",
    );
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::BadFactors));
    names(&e, "i0, i1, i2 = split(i, factors=[None, 4, None])", "split: at most one factor of `i` may be None");

    // get_loops: as many names as loops.
    let e = fail("matmul", "b = get_block(\"C\")\ni, j = get_loops(b)\n");
    assert_eq!(e.kind, TraceErrorKind::WrongKind);
    names(&e, "i, j = get_loops(b)", "block `C` has 3 loop(s) but 2 name(s) are given");

    // fuse: spatial with reduction iterators, loops not directly nested.
    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nf = fuse(j, k)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Structure));
    names(&e, "f = fuse(j, k)", "fuse: fusing would mix spatial and reduction iterators of block `C`");
    let e = fail("matmul", "b = get_block(\"C\")\ni, j, k = get_loops(b)\nf = fuse(i, k)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Structure));
    names(&e, "f = fuse(i, k)", "fuse: `k` is not the only child of `i`; fuse needs directly nested loops");
    let e = fail(
        "softmax_rows:N=8",
        "e = get_block(\"E\")\ni, j = get_loops(e)\ny = get_block(\"Y\")\ni2, j2 = get_loops(y)\nf = fuse(i, i2)\n",
    );
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Structure));
    names(&e, "f = fuse(i, i2)", "fuse: `i_3` is not the only child of `i_1`");

    // vectorize: a body that does not depend on the loop. `Mx[i]`, computed
    // at E's column loop, is the same for every column.
    let e = fail(
        "softmax_rows:N=8",
        "m = get_block(\"Mx\")\ne = get_block(\"E\")\ni, j = get_loops(e)\ncompute_at(m, j)\nvectorize(j)\n",
    );
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::LoopKind));
    names(
        &e,
        "vectorize(j, tail=\"predicate\")",
        "vectorize: cannot vectorize loop `j_1`: block `Mx` does not depend on it",
    );

    // vectorize: a body that carries a dependence (the sum reads E, which
    // the block before it in the same loop writes).
    let w = inline_workload(
        "compute = [\"E[i] = exp(X[i])\", \"S[0] += E[i]\"]\n[tensors]\nX = { dtype = \"f32\", shape = [8] }\nE = { dtype = \"f32\", shape = [8], role = \"temp\" }\nS = { dtype = \"f32\", shape = [1], role = \"output\" }\n",
    );
    let e =
        fail_on(&w, "s = get_block(\"S\")\ni = get_loops(s)\ne = get_block(\"E\")\ncompute_at(e, i)\nvectorize(i)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::LoopKind));
    names(
        &e,
        "vectorize(i, tail=\"predicate\")",
        "vectorize: cannot vectorize loop `i_1`: its body carries a dependence: block `S` reads `E` written by block `E`",
    );

    // reorder: moving a reduction loop that another block under the same
    // loops depends on. No sequence of primitives builds such a nest from a
    // workload today (compute_at only moves producers, each alone in its
    // nest), so the nest is given in its text form: `Y` reads the running
    // sum `S[vi]` inside the reduction loop `k`.
    let nest = parse_nest(
        "nest running_sum\ncaps scalable granule 128 vscale [1, 2, 4, 8, 16] gather\ntensor A: f32[8, 8] input\ntensor S: f32[8] temp\ntensor Y: f32[8, 8] output\nfor i in 8:\n  for k in 8:\n    block S[vi: 8 = i, vk: 8 reduce = k] init:\n      S[vi] += A[vi, vk]\n    block Y[wi: 8 = i, wk: 8 = k]:\n      Y[wi, wk] = S[wi]\n",
    )
    .expect("parses");
    let e = fail_nest(nest, "y = get_block(\"Y\")\ni, k = get_loops(y)\nreorder(k, i)\n");
    assert_eq!(e.kind, TraceErrorKind::Schedule(ErrorKind::Dependence));
    names(
        &e,
        "reorder(k, i)",
        "reorder: moving loop `k` would break the dependence of block `Y` on the reduction in block `S`",
    );
}

#[test]
fn trace_syntax_errors_have_positions() {
    let e = parse_trace("b = get_block(\"C\")\ni, j = split(b, factors=[None 4])\n").expect_err("bad");
    assert_eq!(
        e.to_string(),
        "line 2, column 31: `i, j = split(b, factors=[None 4])`: expected `,` or `]` in a list, found `4`"
    );
    let e = parse_trace("frobnicate(x)\n").expect_err("bad");
    assert!(e.message.starts_with("unknown instruction `frobnicate`"), "{e}");
    let e = parse_trace("vectorize(j, tail=\"sideways\")\n").expect_err("bad");
    assert!(e.message.contains("unknown tail \"sideways\""), "{e}");
}

#[test]
fn traces_round_trip_through_text_and_json() {
    let t = parse_trace(&format!("{MATMUL_EXAMPLE}w = cache_write(b, at=j0)\np = cache_read(b, \"B\", at=j0, layout=[1, 0])\nannotate(j0, key=\"unroll_max_step\", value=\"16\")\n")).expect("parses");
    let text = t.to_string();
    assert_eq!(parse_trace(&text).expect("reparses").to_string(), text);
    let json = t.to_json();
    let back = crate::trace::Trace::from_json(&json).expect("json");
    assert_eq!(back.insts, t.insts);
}

/// `fuse` substitutes every fused loop's variable at once
/// (`Nest::replace_vars`): on sampled nests of several workloads, that
/// gives the nest that substituting them one at a time gives.
#[test]
fn substituting_variables_at_once_equals_one_at_a_time() {
    use crate::design::DesignSpace;
    use crate::expr::Expr;
    use crate::sample::task_rng;
    let mut compared = 0;
    for reference in ["matmul:M=24,N=40,K=16", "conv2d_nhwc", "softmax_rows:M=4,N=24", "layer_norm"] {
        let w = load(reference).expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, sve()));
        let mut rng = task_rng(21, 0);
        for _ in 0..6 {
            let Ok(s) = space.sample(&mut rng) else { continue };
            // Every loop with a loop directly inside it: fuse's substitution of the pair.
            for outer in s.nest.all_loops() {
                let [crate::ir::Node::Loop(inner)] = s.nest.loop_(outer).body[..] else { continue };
                let mut nest = (*s.nest).clone();
                let (eo, ei) = (nest.extent(outer).clone(), nest.extent(inner).clone());
                let f = nest.new_var("f", crate::expr::simplify(&(eo.clone() * ei.clone()), &nest));
                let subst = [
                    (nest.loop_(outer).var, crate::expr::simplify(&Expr::Var(f).floordiv(ei.clone()), &nest)),
                    (nest.loop_(inner).var, crate::expr::simplify(&Expr::Var(f).floormod(ei), &nest)),
                ];
                let mut one_by_one = nest.clone();
                for (v, e) in &subst {
                    one_by_one.replace_var(*v, e);
                }
                let before = nest.to_string();
                nest.replace_vars(&subst);
                assert_eq!(nest.to_string(), one_by_one.to_string(), "{reference}");
                compared += usize::from(nest.to_string() != before);
            }
        }
    }
    assert!(compared > 40, "{compared} substitutions that changed a nest");
}
