//! Property test of the schedule space: for shipped workloads, targets and
//! seeds, every sampled trace is legal, its text replays to the same loop
//! nest, and lowered and interpreted it computes the reference result; so do
//! its mutants (decisions changed, or a structural option changed).

use proptest::prelude::*;
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::lower::lower;
use scaletune_codegen::pipeline::{compile_nest, initial_nest, Options};
use scaletune_codegen::target::Target;
use scaletune_space::data::make_args;
use scaletune_space::design::DesignSpace;
use scaletune_space::ir::Nest;
use scaletune_space::reference::{compare, evaluate};
use scaletune_space::sample::task_rng;
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::{load, Role};

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

const TARGETS: &[&str] = &["sve-generic", "neoverse-v1", "rvv", "host", "neon", "sme", "apple-m4"];

fn interpret(w: &scaletune_space::workload::Workload, nest: &Nest, text: &str, seed: u64) -> Result<(), TestCaseError> {
    let prog = lower(nest, "k").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let args = make_args(w, seed);
    let reference = evaluate(w, &args).expect("reference");
    let dom = &nest.caps.vscale_values;
    let mut vscales: Vec<u32> = [1u32, 2, 4].into_iter().filter(|v| dom.contains(v)).collect();
    if vscales.is_empty() {
        vscales.push(dom[0]);
    }
    for vs in vscales {
        let mut a: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
        a.extend(w.scalars.iter().map(|x| ArgValue::Scalar(x.value)));
        run(&prog, &mut a, &InterpOptions::new(vs))
            .map_err(|e| TestCaseError::fail(format!("vscale {vs}: {e}\n{text}")))?;
        for (k, id) in w.arg_tensors().iter().enumerate() {
            if w.tensor(*id).role != Role::Output {
                continue;
            }
            let c = compare(&w.tensor(*id).name, a[k].as_tensor().expect("tensor"), &reference[id.index()]);
            prop_assert!(c.passed(), "vscale {}: {:?}\n{}\n{}", vs, c, text, nest);
        }
    }
    Ok(())
}

fn check(wi: usize, ti: usize, seed: u64) -> Result<(), TestCaseError> {
    check_on(WORKLOADS[wi], TARGETS[ti], seed)
}

fn check_on(workload: &str, target: &str, seed: u64) -> Result<(), TestCaseError> {
    let w = load(workload).expect("loads");
    let t = Target::load(target).expect("target");
    let nest = initial_nest(&w, &t);
    let space = DesignSpace::generate(&nest);
    prop_assert!(!space.traces.is_empty());
    let mut rng = task_rng(seed, 0);
    let s = space.sample(&mut rng).map_err(|e| TestCaseError::fail(format!("cannot sample: {e}")))?;
    prop_assert!(!s.trace.has_undecided());
    // The decided trace, as text, replays to the same nest without an RNG.
    let text = s.trace.to_string();
    let mut replay = nest.clone();
    parse_trace(&text).expect("parses").apply(&mut replay).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(replay.to_string(), s.nest.to_string());
    // It computes the reference at every vscale of its vector kind among 1, 2, 4.
    interpret(&w, &s.nest, &text, seed)?;
    // A mutation changes decisions only, replays, and is still correct.
    if let Some((m, scheduled, _)) = scaletune_space::mutators::mutate(&s.trace, &nest, &mut rng) {
        prop_assert_eq!(m.without_decisions(), s.trace.without_decisions());
        prop_assert!(m != *s.trace);
        let mut mn = nest.clone();
        m.apply(&mut mn).map_err(|e| TestCaseError::fail(format!("mutant does not apply: {e}")))?;
        prop_assert_eq!(mn.to_string(), scheduled.to_string());
        interpret(&w, &mn, &m.to_string(), seed)?;
    }
    // A structural move (another gather strategy, reuse, reduction strategy
    // or fusion) replays and is still correct.
    if let Some(m) = scaletune_space::mutators::mutate_structure(&space, &s, &mut rng) {
        prop_assert!(m.space_trace != s.space_trace);
        let text = m.trace.to_string();
        let mut mn = nest.clone();
        parse_trace(&text).expect("parses").apply(&mut mn).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(mn.to_string(), m.nest.to_string());
        interpret(&w, &mn, &text, seed)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn sampled_schedules_are_legal_replay_and_compute_the_reference(
        wi in 0usize..WORKLOADS.len(),
        ti in 0usize..TARGETS.len(),
        seed in any::<u64>(),
    ) {
        check(wi, ti, seed)?;
    }
}

/// Extents without good divisors on fixed-length targets: rows prime (any
/// register tile up to 8, the last rows guarded) and columns that no
/// multiple of a vector divides (vectors with a sampled tail). Every draw,
/// and its mutants, computes the reference.
#[test]
fn irregular_extents_on_fixed_targets_compute_the_reference() {
    for target in ["host", "neon"] {
        for seed in 0..24 {
            if let Err(e) = check_on("matmul:M=13,N=22,K=5", target, seed) {
                panic!("{target}, seed {seed}: {e}");
            }
        }
    }
}

/// The micro-kernel branches (GotoBLAS loop order, register tiles sized to
/// the register file, a packed panel): draws of each compute the
/// reference, on shapes where the rows and the column strips leave partial
/// tiles and where they divide evenly, on fixed-length targets and, at
/// every vscale among 1, 2 and 4, on scalable ones.
#[test]
fn micro_kernel_draws_compute_the_reference() {
    let cases = [
        "matmul:M=13,N=22,K=5",
        "matmul:M=12,N=32,K=8",
        "batch_matmul:BS=2,M=5,N=9,K=3",
        "conv2d_nhwc:H=5,WI=6,C=3,F=9",
        "matmul_f16:M=5,N=19,K=4",
        "matmul_bf16:M=7,N=16,K=4",
    ];
    for target in ["host", "neon", "neoverse-v1", "sve-generic", "rvv"] {
        for workload in cases {
            let w = load(workload).expect("loads");
            let t = Target::load(target).expect("target");
            let nest = initial_nest(&w, &t);
            let space = DesignSpace::generate(&nest);
            let micro: Vec<_> = space.traces.iter().filter(|t| t.rules.iter().any(|r| r == "micro-kernel")).collect();
            // Vectors that cannot hold f16 (RVV without Zvfh) leave f16
            // matmuls no vectorized compute, and so no micro-kernel.
            let f16_unvectorized = workload.starts_with("matmul_f16") && !t.caps.half_vectors;
            assert_eq!(micro.is_empty(), f16_unvectorized, "{workload} on {target}: micro-kernel branches");
            interpret_draws(&w, &nest, &micro, 0..4, &format!("{workload} on {target}, micro-kernel"));
        }
    }
}

/// Draws of each of `traces` with every seed of `seeds` compute the
/// reference in the interpreter ([`interpret`]); a failure names `what`.
fn interpret_draws(
    w: &scaletune_space::workload::Workload,
    nest: &Nest,
    traces: &[&scaletune_space::design::SpaceTrace],
    seeds: std::ops::Range<u64>,
    what: &str,
) {
    for (k, st) in traces.iter().enumerate() {
        for seed in seeds.clone() {
            let mut rng = task_rng(seed, k as u64);
            let mut n = nest.clone();
            let (trace, _) = st.trace.sample(&mut n, &mut rng).expect("draws");
            if let Err(e) = interpret(w, &n, &trace.to_string(), seed) {
                panic!("{what} trace {k}, seed {seed}: {e}");
            }
        }
    }
}

/// The micro-kernels with the reduction blocks outermost, which only an
/// operand read along the rows larger than L2 gets (here 1.07 MB: 260 rows,
/// a partial last register tile, by 1030 of the reduction, blocks of 103
/// or 206 among others): draws of each compute the reference, at every
/// vscale among 1, 2 and 4 on scalable targets.
#[test]
fn micro_kernels_with_the_reduction_blocks_outermost_compute_the_reference() {
    let workload = "matmul:M=260,N=20,K=1030";
    let w = load(workload).expect("loads");
    for target in ["host", "neoverse-v1", "rvv"] {
        let t = Target::load(target).expect("target");
        let nest = initial_nest(&w, &t);
        let space = DesignSpace::generate(&nest);
        let outer: Vec<_> = space
            .traces
            .iter()
            .filter(|t| t.choices.iter().any(|c| c.key == "micro-kernel order" && c.value == "reduction blocks outer"))
            .collect();
        assert!(!outer.is_empty(), "{workload} on {target}: no reduction-outer micro-kernel");
        interpret_draws(&w, &nest, &outer, 7..8, &format!("{workload} on {target}, reduction-outer"));
    }
}

/// Workloads with every parameter taken from `SIZES` (one, primes, powers
/// of two, a million): shapes the interpreter cannot run quickly, so the
/// property below only lowers.
const TEMPLATES: &[&str] = &[
    "scale_add:N={}",
    "row_sum:M={},N={}",
    "softmax_rows:M={},N={}",
    "matmul:M={},N={},K={}",
    "transpose:M={},N={}",
    "conv2d_nhwc:H={},WI={},C={},F={}",
    "matmul_i8:M={},N={},K={}",
];

const SIZES: &[i64] = &[1, 2, 3, 17, 64, 1000, 65_536, 1 << 20];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Any sampled candidate that passes the nest verifier lowers (to a
    /// program or a lowering error), without a panic, at any shape the
    /// workload accepts.
    #[test]
    fn sampled_candidates_that_verify_lower_without_panicking(
        wi in 0usize..TEMPLATES.len(),
        sizes in prop::collection::vec(prop::sample::select(SIZES), 4),
        ti in 0usize..TARGETS.len(),
        seed in any::<u64>(),
    ) {
        let mut reference = TEMPLATES[wi].to_string();
        for s in &sizes {
            reference = reference.replacen("{}", &s.to_string(), 1);
        }
        // Shapes beyond the limits are refused when the workload loads.
        let Ok(w) = load(&reference) else { return Ok(()) };
        let t = Target::load(TARGETS[ti]).expect("target");
        let nest = initial_nest(&w, &t);
        let space = DesignSpace::generate(&nest);
        let Ok(s) = space.sample(&mut task_rng(seed, 0)) else { return Ok(()) };
        if s.nest.verify().is_ok() {
            let _ = lower(&s.nest, "k");
        }
    }
}

/// Every sampled candidate of every workload compiles for its target, LLVM
/// included: the schedule space makes no vector type the target's backend
/// refuses (scalable f16 vectors on RVV without Zvfh, say), so no trial of a
/// tuning job is spent on a build that cannot succeed.
#[test]
fn sampled_candidates_compile_on_every_target() {
    let mut failures = Vec::new();
    for workload in WORKLOADS {
        let w = load(workload).expect("loads");
        for target in TARGETS {
            let t = Target::load(target).expect("target");
            let space = DesignSpace::generate(&initial_nest(&w, &t));
            for seed in 0..2 {
                let s = space.sample(&mut task_rng(seed, 0)).expect("samples");
                if let Err(e) = compile_nest(&w, (*s.nest).clone(), &t, &Options::default()) {
                    failures.push(format!("{workload} on {target}, seed {seed}: {e}\n{}", s.trace));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Where vectors cannot hold f16 (RVV without Zvfh), an f16 matmul keeps
/// its multi-level tiling with the vector level as a plain loop: its draws
/// compute the reference and build.
#[test]
fn f16_matmuls_tile_where_vectors_cannot_hold_f16() {
    let w = load("matmul_f16:M=5,N=19,K=4").expect("loads");
    let t = Target::load("rvv").expect("target");
    assert!(!t.caps.half_vectors, "the shipped rvv target has no Zvfh");
    let nest = initial_nest(&w, &t);
    let space = DesignSpace::generate(&nest);
    let tiled: Vec<_> = space.traces.iter().filter(|t| t.rules.iter().any(|r| r == "multi-level-tiling")).collect();
    assert!(!tiled.is_empty(), "no tiling branch");
    for (k, st) in tiled.iter().enumerate() {
        for seed in 0..2 {
            let mut n = nest.clone();
            let (trace, _) = st.trace.sample(&mut n, &mut task_rng(seed, k as u64)).expect("draws");
            let text = trace.to_string();
            assert!(text.contains("split("), "tiled: {text}");
            if let Err(e) = interpret(&w, &n, &text, seed) {
                panic!("tiling trace {k}, seed {seed}: {e}");
            }
            if let Err(e) = compile_nest(&w, n, &t, &Options::default()) {
                panic!("tiling trace {k}, seed {seed}: {e}\n{text}");
            }
        }
    }
}
