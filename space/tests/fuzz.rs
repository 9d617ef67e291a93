//! Fuzz targets of the space crate on the stable toolchain (see
//! `scaletune_space::fuzz`): workload files and references, traces (parsed,
//! printed back, applied) and the loop-nest text format never panic. A smoke
//! run under `cargo test`; `make fuzz` runs each for `FUZZ_SECS` seconds.
//! Crashers found by `make fuzz` are the regression tests at the end.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use scaletune_space::design::DesignSpace;
use scaletune_space::fuzz::{self, mutate, with_mutations};
use scaletune_space::ir::{parse_nest, Nest};
use scaletune_space::sample::task_rng;
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::{load, WorkloadSpec};
use scaletune_space::VectorCaps;

/// A workload file must parse, instantiate and build its nest or fail with an error.
fn workload_file(text: &str) -> Result<(), TestCaseError> {
    if let Ok(spec) = WorkloadSpec::parse(text, "fuzz.toml", "fuzz") {
        let w =
            spec.instantiate(&[]).map_err(|e| TestCaseError::fail(format!("parsed but does not instantiate: {e}")))?;
        let nest = Nest::from_workload(&w, VectorCaps::sve_any());
        nest.check_limits()
            .map_err(|e| TestCaseError::fail(format!("an accepted workload is beyond the limits: {e}")))?;
        let _ = w.flops();
    }
    Ok(())
}

#[test]
fn fuzz_workload_files() {
    fuzz::run("workload files", with_mutations(fuzz::workload_text()), |t| workload_file(&t));
}

#[test]
fn fuzz_workload_references() {
    fuzz::run("workload references", fuzz::workload_reference(), |r| {
        if let Ok(w) = load(&r) {
            Nest::from_workload(&w, VectorCaps::fixed(128))
                .check_limits()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        Ok(())
    });
}

/// A parsed trace prints to text that parses back to the same trace, and
/// applies to a nest or fails with an error.
fn trace(text: &str) -> Result<(), TestCaseError> {
    let Ok(t) = parse_trace(text) else { return Ok(()) };
    let printed = t.to_string();
    let again = parse_trace(&printed)
        .map_err(|e| TestCaseError::fail(format!("printed trace does not parse: {e}\n{printed}")))?;
    prop_assert_eq!(&again.insts, &t.insts, "printed:\n{}", printed);
    prop_assert_eq!(&again.names, &t.names);
    let w = load("matmul:M=16,N=12,K=8").expect("loads");
    for caps in [VectorCaps::sve_any(), VectorCaps::fixed(256)] {
        let mut nest = Nest::from_workload(&w, caps);
        if t.apply(&mut nest).is_ok() {
            nest.check_limits()
                .map_err(|e| TestCaseError::fail(format!("an applied trace is beyond the limits: {e}")))?;
        }
        let mut nest = Nest::from_workload(&w, VectorCaps::sve_any());
        let _ = t.sample(&mut nest, &mut task_rng(1, 0));
    }
    Ok(())
}

#[test]
fn fuzz_traces() {
    fuzz::run("traces", with_mutations(fuzz::trace_text()), |t| trace(&t));
}

/// Loop-nest texts to mutate: the naive and a sampled nest of a few workloads.
fn nest_texts() -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in
        ["matmul:M=9,N=21,K=6", "softmax_rows:M=3,N=21", "paged_read:P=11,PAGES=40", "conv2d_nhwc:H=5,WI=6,C=3,F=9"]
            .iter()
            .enumerate()
    {
        let w = load(r).expect("loads");
        let nest = Nest::from_workload(&w, VectorCaps::sve_any());
        out.push(nest.to_string());
        let space = DesignSpace::generate(&nest);
        if let Some(d) = space.traces.first() {
            let mut n = nest.clone();
            if d.trace.sample(&mut n, &mut task_rng(7, i as u64)).is_ok() {
                out.push(n.to_string());
            }
        }
    }
    out
}

#[test]
fn fuzz_loop_nest_text() {
    let texts = nest_texts();
    let strategy = prop::sample::select(texts)
        .prop_flat_map(|t| prop_oneof![Just(t.clone()), mutate(t.clone()), mutate(t).prop_flat_map(mutate)]);
    fuzz::run("loop-nest text", strategy, |text| {
        if let Ok(nest) = parse_nest(&text) {
            let _ = nest.verify();
            let _ = nest.check_limits();
            let _ = nest.to_string();
        }
        Ok(())
    });
}

/// Design spaces of every shipped workload: printed, parsed back, equal.
#[test]
fn design_space_traces_print_and_parse_back() {
    for name in scaletune_space::workload::shipped_names() {
        let w = load(name).expect("loads");
        let nest = Nest::from_workload(&w, VectorCaps::sve_any());
        for d in DesignSpace::generate(&nest).traces {
            let mut n = nest.clone();
            let Ok((sampled, _)) = d.trace.sample(&mut n, &mut task_rng(3, 0)) else { continue };
            for t in [&d.trace, &sampled] {
                let again: Trace = parse_trace(&t.to_string()).expect("a printed trace parses");
                assert_eq!(again.insts, t.insts, "{name}:\n{t}");
                assert_eq!(again.names, t.names, "{name}");
            }
        }
    }
}

/// Crashers found by `make fuzz` (and inputs of the same class): each is an
/// error naming the instruction, not a panic, an overflow or an enumeration
/// without end.
#[test]
fn fuzz_crashers_are_errors() {
    let head = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    let cases = [
        // Found by fuzz_traces: `m * lanes` overflowed while enumerating.
        ("t0, t1 = sample_mixed_tile(i, n=2, max_innermost_fixed=4611686018427387904, max_innermost_vscale=4611686018427387904, decision=[0])", "decisions, the limit"),
        ("t0, t1 = sample_scalable_tile(i, n=2, max_innermost_vscale=9223372036854775807)", "decisions, the limit"),
        ("t0, t1, t2, t3 = sample_mixed_tile(i, n=4, max_innermost_fixed=100000, max_innermost_vscale=4)", "decisions, the limit"),
    ];
    let outs: Vec<String> = (0..70).map(|n| format!("p{n}")).collect();
    let many = format!("{} = sample_perfect_tile(i, n=70, max_innermost_factor=4)", outs.join(", "));
    let cases = cases.iter().map(|(i, w)| (i.to_string(), *w)).chain([(many, "beyond the limit of 64")]);
    for (inst, want) in cases {
        let text = format!("{head}{inst}\n");
        let t = parse_trace(&text).unwrap_or_else(|e| panic!("{e}"));
        let w = load("matmul:M=16,N=12,K=8").expect("loads");
        let mut nest = Nest::from_workload(&w, VectorCaps::sve_any());
        let e = t.sample(&mut nest, &mut task_rng(1, 0)).expect_err("refused");
        assert!(e.to_string().contains(want), "{inst}: {e}");
    }
}
