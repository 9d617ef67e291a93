//! Sampling instructions in traces: decisions recorded, replayed without the
//! RNG, and refused with a reason when they no longer fit.

use super::*;
use crate::caps::VectorCaps;
use crate::design::DesignSpace;
use crate::ir::Nest;
use crate::sample::{lanes_per_granule, task_rng, TileChoice};
use crate::workload::load;

fn nest(workload: &str, caps: VectorCaps) -> Nest {
    Nest::from_workload(&load(workload).expect("loads"), caps)
}

fn replay_error(workload: &str, caps: VectorCaps, text: &str) -> TraceError {
    let t = parse_trace(text).expect("parses");
    let mut n = nest(workload, caps);
    t.apply(&mut n).expect_err("the decision does not fit")
}

const TILED: &str = r#"b = get_block("C")
i, j, k = get_loops(b)
t1, t2, t3 = sample_perfect_tile(i, n=3, max_innermost_factor=8, decision=[16, 4, 4])
i0, i1, i2 = split(i, factors=[t1, t2, t3])
t4, t5 = sample_mixed_tile(j, n=2, max_innermost_fixed=16, max_innermost_vscale=4, decision=[4*vscale])
j0, j1 = split(j, factors=[t4, t5])
tail = sample_categorical(candidates=["predicate", "peel", "scalar"], probs=[0.4, 0.3, 0.3], decision=1)
reorder(i0, j0, k, i1, i2, j1)
vectorize(j1, tail=tail)
"#;

#[test]
fn decided_traces_replay_and_keep_their_decisions() {
    let t = parse_trace(TILED).expect("parses");
    let mut a = nest("matmul:M=256,N=256,K=256", VectorCaps::sve_any());
    t.apply(&mut a).expect("applies");
    // Sampling a fully decided trace draws nothing: any RNG gives the same trace and nest.
    for seed in [1, 2, 3] {
        let mut b = nest("matmul:M=256,N=256,K=256", VectorCaps::sve_any());
        let (decided, _) = t.sample(&mut b, &mut task_rng(seed, 0)).expect("samples");
        assert_eq!(decided.insts, t.insts);
        assert_eq!(b.to_string(), a.to_string());
    }
    // The text and JSON forms keep the decisions.
    assert_eq!(parse_trace(&t.to_string()).expect("parses").insts, t.insts);
    assert_eq!(Trace::from_json(&t.to_json()).expect("parses").insts, t.insts);
}

#[test]
fn a_perfect_tiling_refuses_a_changed_shape() {
    let e = replay_error("matmul:M=200,N=256,K=256", VectorCaps::sve_any(), TILED);
    assert_eq!(e.kind, TraceErrorKind::Sample);
    assert_eq!(e.line, Some(3));
    assert!(e.inst.as_deref().is_some_and(|i| i.starts_with("t1, t2, t3 = sample_perfect_tile(i")), "{e}");
    assert!(e.message.contains("multiplies to 256, but the loop's extent is 200"), "{e}");
}

#[test]
fn a_scalable_tiling_refuses_factors_outside_its_domain() {
    // f32 has 4 lanes per 128-bit granule: `3*vscale` is no multiple of them ...
    let f32_matmul = "matmul:M=64,N=64,K=64";
    let text = TILED.replace("decision=[16, 4, 4]", "decision=[4, 4, 4]").replace("[4*vscale]", "[3*vscale]");
    let e = replay_error(f32_matmul, VectorCaps::sve_any(), &text);
    assert_eq!(e.kind, TraceErrorKind::Sample);
    assert!(e.message.contains("decision [3*vscale] is not in the domain (4 lanes per granule"), "{e}");
    // ... and a multiplier above the maximum is refused too.
    let text = TILED.replace("decision=[16, 4, 4]", "decision=[4, 4, 4]").replace("[4*vscale]", "[32*vscale]");
    let e = replay_error(f32_matmul, VectorCaps::sve_any(), &text);
    assert!(e.message.contains("vscale multipliers up to 4"), "{e}");
}

#[test]
fn lanes_per_granule_follow_the_dtype_and_the_granule() {
    let sve = VectorCaps::sve_any();
    let rvv = VectorCaps::scalable(64, 128, 1024);
    assert_eq!([32, 16, 64, 8].map(|b| lanes_per_granule(&sve, b)), [4, 8, 2, 16]);
    assert_eq!([32, 16, 64, 8].map(|b| lanes_per_granule(&rvv, b)), [2, 4, 1, 8]);
    // A scalable tiling's innermost factor is m * L * vscale for m a power of two up to the maximum.
    let text = r#"b = get_block("C")
i, j, k = get_loops(b)
t1, t2, t3 = sample_scalable_tile(j, n=3, max_innermost_vscale=4)
j0, j1, j2 = split(j, factors=[t1, t2, t3])
vectorize(j2, tail="predicate")
"#;
    let t = parse_trace(text).expect("parses");
    for (caps, lanes) in [(sve, 4i64), (rvv, 2)] {
        let mut seen = std::collections::BTreeSet::new();
        let mut rng = task_rng(5, 0);
        for _ in 0..200 {
            let mut n = nest("matmul:M=16,N=100,K=8", caps.clone());
            let (decided, _) = t.sample(&mut n, &mut rng).expect("samples");
            let Inst::SampleScalableTile { decision: Some(d), .. } = &decided.insts[2] else { panic!("decided") };
            let inner = TileChoice::from_texpr(&d[1]).expect("a tile choice");
            let TileChoice::Scalable(k) = inner else { panic!("the innermost level is scalable: {d:?}") };
            assert!(matches!(TileChoice::from_texpr(&d[0]), Some(TileChoice::Fixed(_))), "{d:?}");
            seen.insert(k);
            // The decided trace replays without the RNG.
            decided.apply(&mut nest("matmul:M=16,N=100,K=8", caps.clone())).expect("replays");
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![lanes, 2 * lanes, 4 * lanes]);
    }
}

#[test]
fn categorical_decisions_out_of_range_or_missing_are_refused() {
    let e = replay_error("matmul:M=256,N=256,K=256", VectorCaps::sve_any(), &TILED.replace("decision=1", "decision=3"));
    assert!(e.message.contains("decision 3 is not one of the 3 candidates"), "{e}");
    let e =
        replay_error("matmul:M=256,N=256,K=256", VectorCaps::sve_any(), &TILED.replace(", decision=[16, 4, 4]", ""));
    assert!(e.message.contains("has no decision"), "{e}");
}

/// Sampling arguments below their least value are parse errors at the
/// argument (a negative decision was read as a huge one).
#[test]
fn sampling_arguments_below_their_least_value_are_refused_where_written() {
    let err = |text: &str| parse_trace(text).expect_err("refused").to_string();
    let loops = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    assert_eq!(
        err("t = sample_categorical(candidates=[\"peel\", \"scalar\"], probs=[0.5, 0.5], decision=-1)\n"),
        "line 1, column 82: `t = sample_categorical(candidates=[\"peel\", \"scalar\"], probs=[0.5, 0.5], decision=-1)`: \
         `decision` must be at least 0, not -1"
    );
    assert_eq!(
        err(&format!("{loops}t1, t2 = sample_perfect_tile(i, n=2, max_innermost_factor=-4, decision=[2, 4])\n")),
        "line 3, column 59: `t1, t2 = sample_perfect_tile(i, n=2, max_innermost_factor=-4, decision=[2, 4])`: \
         `max_innermost_factor` must be at least 1, not -4"
    );
    assert_eq!(
        err(&format!("{loops}t1 = sample_scalable_tile(j, n=0, max_innermost_vscale=1)\n")),
        "line 3, column 32: `t1 = sample_scalable_tile(j, n=0, max_innermost_vscale=1)`: `n` must be at least 1, not 0"
    );
}

#[test]
fn a_design_space_sample_replays_only_on_its_own_shape() {
    let w = load("conv2d_nhwc:H=6,WI=7,C=4,F=9").expect("loads");
    let n = Nest::from_workload(&w, VectorCaps::sve_any());
    let space = DesignSpace::generate(&n);
    let mut rng = task_rng(2, 0);
    let mut refused = 0;
    for _ in 0..20 {
        let s = space.sample(&mut rng).expect("samples");
        s.trace.apply(&mut n.clone()).expect("replays on its own shape");
        let other = Nest::from_workload(&load("conv2d_nhwc:H=7,WI=7,C=4,F=9").expect("loads"), VectorCaps::sve_any());
        if let Err(e) = s.trace.apply(&mut other.clone()) {
            assert_eq!(e.kind, TraceErrorKind::Sample, "{e}");
            refused += 1;
        }
    }
    // The output rows (H - 2) are tiled perfectly: a decision for 4 rows cannot multiply to 5.
    assert_eq!(refused, 20);
}

#[test]
fn names_of_the_wrong_kind_are_parse_errors_naming_the_line() {
    let err = |text: &str| parse_trace(text).expect_err("wrong kind").to_string();
    assert_eq!(
        err("b = get_block(\"C\")\ni, j, k = get_loops(b)\nl = get_loops(i)\n"),
        "line 3: `l = get_loops(i)`: `i` is a loop, not a block"
    );
    assert_eq!(err("b = get_block(\"C\")\nunroll(b)\n"), "line 2: `unroll(b)`: `b` is a block, not a loop");
    assert_eq!(
        err("b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, j])\n"),
        "line 3: `i0, i1 = split(i, factors=[None, j])`: `j` is a loop, not an integer"
    );
    let t = "k = sample_categorical(candidates=[\"sve\", \"neon\"], probs=[0.5, 0.5])\nb = get_block(\"C\")\ni, j, kk = get_loops(b)\nvectorize(j, tail=k)\n";
    assert_eq!(err(t), "line 4: `vectorize(j, tail=k)`: `k` is a vector kind, not a tail strategy");
    let t = "t = sample_categorical(candidates=[\"peel\", \"scalar\"], probs=[0.5, 0.5])\nuse_vectors(t)\n";
    assert_eq!(err(t), "line 2: `use_vectors(t)`: `t` is a tail strategy, not a vector kind");
    let t = "t = sample_categorical(candidates=[4, \"peel\"], probs=[0.5, 0.5])\n";
    assert!(err(t).ends_with("candidates mix an integer and a tail strategy"), "{}", err(t));
}

#[test]
fn choices_are_typed_values() {
    let e = parse_trace("use_vectors(\"altivec\")\n").expect_err("unknown kind").to_string();
    assert!(e.starts_with("line 1, column 13: ") && e.contains("unknown vector kind `altivec`"), "{e}");
    let e =
        parse_trace("t = sample_categorical(candidates=[\"fast\"], probs=[1.0])\n").expect_err("unknown").to_string();
    assert!(e.contains("unknown candidate \"fast\""), "{e}");
    let t = parse_trace("k = sample_categorical(candidates=[\"rvv-256\", \"sve-vla\", 8], probs=[0.5, 0.5, 0.0])\n");
    assert!(t.is_err(), "mixed kinds and integers");
    let t = parse_trace(
        "k = sample_categorical(candidates=[\"rvv-256\", \"sve-vla\"], probs=[0.5, 0.5])\nuse_vectors(k)\n",
    )
    .expect("parses");
    match &t.insts[0] {
        Inst::SampleCategorical { candidates, .. } => assert_eq!(
            candidates,
            &[Cand::Kind(crate::VectorKind::RvvFixed(256)), Cand::Kind(crate::VectorKind::SveVla)]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(Trace::from_json(&t.to_json()).expect("json").insts, t.insts);
}

#[test]
fn names_live_once_in_the_trace_and_arguments_are_typed_ids() {
    let text = "b = get_block(\"C\")\ni, j, k = get_loops(b)\nannotate(b, key=\"unroll_max_step\", value=\"4\")\nannotate(i, key=\"unroll_max_step\", value=\"4\")\ni, i1 = split(i, factors=[None, 4])\nunroll(i)\n";
    let t = parse_trace(text).expect("parses");
    assert_eq!(*t.names, ["b", "i", "j", "k", "i", "i1"]);
    assert_eq!(t.insts[0], Inst::GetBlock { out: BlockRv(0), name: "C".into() });
    assert_eq!(
        t.insts[2].clone(),
        Inst::Annotate { target: LoopOrBlock::Block(BlockRv(0)), key: "unroll_max_step".into(), value: SArg::lit("4") }
    );
    assert!(matches!(t.insts[3], Inst::Annotate { target: LoopOrBlock::Loop(LoopRv(1)), .. }));
    // A name defined again is a new random variable; later uses see the latest.
    assert!(matches!(&t.insts[4], Inst::Split { outs, loop_: LoopRv(1), .. } if outs == &[LoopRv(4), LoopRv(5)]));
    assert_eq!(t.insts[5], Inst::Unroll { loop_: LoopRv(4) });
    assert_eq!(t.to_string(), text);
    assert_eq!(t.name(LoopRv(5)), "i1");
    // The JSON form keeps the names.
    assert_eq!(Trace::from_json(&t.to_json()).expect("json"), Trace { lines: Vec::new(), ..t.clone() });
}

#[test]
fn json_with_an_unnamed_random_variable_is_refused() {
    let t = parse_trace("b = get_block(\"C\")\ni, j, k = get_loops(b)\nunroll(i)\n").expect("parses");
    let json = t.to_json().replace(r#""loop":1"#, r#""loop":7"#);
    let e = Trace::from_json(&json).expect_err("id 7 has no name").to_string();
    assert!(e.contains("instruction 2 (`unroll`) refers to random variable 7, but only 4 are named"), "{e}");
}

#[test]
fn traces_built_with_typed_ids_print_and_replay() {
    let mut t = Trace::default();
    let b = t.new_block("b");
    let loops: Vec<LoopRv> = ["i", "j", "k"].iter().map(|n| t.new_loop(*n)).collect();
    let f = t.new_value("f");
    let (j0, j1) = (t.new_loop("j0"), t.new_loop("j1"));
    t.insts = vec![
        Inst::GetBlock { out: b, name: "C".into() },
        Inst::GetLoops { outs: loops.clone(), block: b },
        Inst::SampleCategorical {
            out: f,
            candidates: vec![Cand::Int(4), Cand::Int(8)],
            probs: vec![0.5, 0.5],
            decision: Some(1),
        },
        Inst::Split { outs: vec![j0, j1], loop_: loops[1], factors: vec![None, Some(TExpr::Rv(f))] },
        Inst::Vectorize { loop_: j1, tail: Choice::Lit(crate::ir::Tail::Peel) },
    ];
    let text = t.to_string();
    assert!(text.contains("j0, j1 = split(j, factors=[None, f])\nvectorize(j1, tail=\"peel\")\n"), "{text}");
    let mut a = nest("matmul:M=16,N=20,K=8", VectorCaps::sve_any());
    let env = t.apply(&mut a).expect("applies");
    assert!(env.loop_(j1).is_some() && env.block(b).is_some() && env.loop_(LoopRv(b.0)).is_none());
    assert_eq!(env.value(f), Some(&Value::Expr(crate::expr::Expr::Int(8))));
    let mut p = nest("matmul:M=16,N=20,K=8", VectorCaps::sve_any());
    parse_trace(&text).expect("parses").apply(&mut p).expect("replays");
    assert_eq!(p.to_string(), a.to_string());
}

#[test]
fn string_literals_with_quotes_and_backslashes_print_and_read_back() {
    let text = "b0 = get_block(\"a \\\"q\\\" b\\\\c\")\nc = cache_read(b0, \"k\\\\\", at=l)\nd = cache_read(b0, \"\\\"\", at=l)\n";
    let t = parse_trace(text).expect("parses");
    assert_eq!(t.to_string(), text);
    assert_eq!(parse_trace(&t.to_string()).expect("parses").insts, t.insts);
}

/// `annotate` takes the keys lowering reads, with values their key takes:
/// a literal is checked when the text is parsed, at its column.
#[test]
fn annotate_refuses_unknown_keys_and_bad_values_when_parsed() {
    let head = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    let shown: Vec<String> = [
        "annotate(i, key=\"bogus\", value=\"1\")",
        "annotate(i, key=\"tensorize\", value=\"za_fmopa\")",
        "annotate(i, key=\"unroll_max_step\", value=\"abc\")",
        "annotate(i, key=\"unroll_max_step\", value=\"-5\")",
        "annotate(i, key=\"unroll_max_step\", value=-5)",
        "annotate(i, key=\"unroll_max_step\", value=\"+5\")",
        "annotate(i, key=\"unroll_max_step\", value=\"\")",
        "annotate(i, key=\"unroll_max_step\", value=\"99999999999999999999\")",
        "annotate(i, key=\"unroll_max_step\", value=4*4)",
        "annotate(i, key=\"unroll_max_step\", value=1.5)",
        "annotate(i, key=\"unroll_max_step\")",
    ]
    .iter()
    .map(|line| parse_trace(&format!("{head}{line}\n")).expect_err(line).to_string())
    .collect();
    assert_eq!(
        shown,
        [
            "line 3, column 17: `annotate(i, key=\"bogus\", value=\"1\")`: unknown annotation key `bogus` (known: unroll_max_step)",
            "line 3, column 17: `annotate(i, key=\"tensorize\", value=\"za_fmopa\")`: the annotation key `tensorize` is set by the `tensorize` primitive only",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=\"abc\")`: `unroll_max_step` must be a non-negative integer, not `abc`",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=\"-5\")`: `unroll_max_step` must be a non-negative integer, not `-5`",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=-5)`: `unroll_max_step` must be a non-negative integer, not `-5`",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=\"+5\")`: `unroll_max_step` must be a non-negative integer, not `+5`",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=\"\")`: `unroll_max_step` must be a non-negative integer, not ``",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=\"99999999999999999999\")`: `unroll_max_step` must be at most 9223372036854775807, not `99999999999999999999`",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=4*4)`: `value` must be a \"string\", an integer or a name",
            "line 3, column 42: `annotate(i, key=\"unroll_max_step\", value=1.5)`: `value` must be a \"string\", an integer or a name",
            "line 3, column 34: `annotate(i, key=\"unroll_max_step\")`: `annotate` needs `value=\"...\"` or `value=N`",
        ]
    );
}

/// `value=16` is the string `"16"`: it prints as the stored traces write it,
/// and replays to the same annotation.
#[test]
fn annotate_takes_an_integer_literal_and_prints_it_as_a_string() {
    let head = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    let bare = parse_trace(&format!("{head}annotate(i, key=\"unroll_max_step\", value=16)\n")).expect("parses");
    let quoted = parse_trace(&format!("{head}annotate(i, key=\"unroll_max_step\", value=\"16\")\n")).expect("parses");
    assert_eq!(bare.insts, quoted.insts);
    assert_eq!(bare.to_string(), format!("{head}annotate(i, key=\"unroll_max_step\", value=\"16\")\n"));
    let mut n = nest("matmul:M=8,N=8,K=8", VectorCaps::sve_any());
    bare.apply(&mut n).expect("replays");
    let Some(&crate::ir::Node::Loop(i)) = n.root.first() else { panic!("a root loop") };
    assert_eq!(n.loop_(i).annotations.get("unroll_max_step").map(String::as_str), Some("16"));
    // A sampled depth prints by its name, as the rules write it.
    let sampled = format!(
        "{head}unroll38 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25], decision=2)\n\
         annotate(i, key=\"unroll_max_step\", value=unroll38)\n"
    );
    let t = parse_trace(&sampled).expect("parses");
    assert_eq!(t.to_string(), sampled);
    let mut n = nest("matmul:M=8,N=8,K=8", VectorCaps::sve_any());
    t.apply(&mut n).expect("replays");
    let Some(&crate::ir::Node::Loop(i)) = n.root.first() else { panic!("a root loop") };
    assert_eq!(n.loop_(i).annotations.get("unroll_max_step").map(String::as_str), Some("16"));
}

/// What parsing cannot see is refused on replay: a sampled value its key
/// does not take, a block, a key of a trace built in code.
#[test]
fn annotate_refuses_sampled_values_blocks_and_unknown_keys_on_replay() {
    let head = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    let replay = |text: &str| {
        let t = parse_trace(text).expect("parses");
        let e = t.apply(&mut nest("matmul:M=8,N=8,K=8", VectorCaps::sve_any())).expect_err("refused");
        assert_eq!(e.kind, TraceErrorKind::Schedule(crate::schedule::ErrorKind::Annotation));
        e.to_string()
    };
    assert_eq!(
        replay(&format!(
            "{head}u = sample_categorical(candidates=[-1, 4], probs=[0.5, 0.5], decision=0)\n\
             annotate(i, key=\"unroll_max_step\", value=u)\n"
        )),
        "line 4: `annotate(i, key=\"unroll_max_step\", value=u)`: annotate: `unroll_max_step` must be a non-negative integer, not `-1`"
    );
    assert_eq!(
        replay(&format!(
            "{head}u = sample_categorical(candidates=[\"peel\", \"scalar\"], probs=[0.5, 0.5], decision=1)\n\
             annotate(i, key=\"unroll_max_step\", value=u)\n"
        )),
        "line 4: `annotate(i, key=\"unroll_max_step\", value=u)`: annotate: `unroll_max_step` must be a non-negative integer, not `scalar`"
    );
    assert_eq!(
        replay(&format!("{head}annotate(b, key=\"unroll_max_step\", value=\"4\")\n")),
        "line 3: `annotate(b, key=\"unroll_max_step\", value=\"4\")`: annotate: `unroll_max_step` annotates a loop, not block `C`"
    );
    let mut t = parse_trace(head).expect("parses");
    let i = LoopOrBlock::Loop(LoopRv(1));
    t.insts.push(Inst::Annotate { target: i, key: "bogus".into(), value: SArg::lit("1") });
    let e = t.apply(&mut nest("matmul:M=8,N=8,K=8", VectorCaps::sve_any())).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "`annotate(i, key=\"bogus\", value=\"1\")`: annotate: unknown annotation key `bogus` (known: unroll_max_step)"
    );
}
