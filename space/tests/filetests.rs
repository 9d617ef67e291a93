//! Snapshot filetests of the schedule space: trace text round trips and scheduled loop nests; cases in `tests/filetests/`, bless with `UPDATE_EXPECT=1`.

use expect_test::expect_file;
use scaletune_space::filetest::{run_dir, Case};
use scaletune_space::ir::Nest;
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::load;
use scaletune_space::VectorCaps;
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests").join(name)
}

/// `scalable GRANULE MIN MAX` or `fixed BITS`.
fn caps(case: &Case) -> VectorCaps {
    let words: Vec<u32> = case
        .require("caps")
        .split_whitespace()
        .skip(1)
        .map(|w| w.parse().unwrap_or_else(|e| panic!("{}: caps: {e}", case.path.display())))
        .collect();
    match (case.require("caps").split_whitespace().next(), words.as_slice()) {
        (Some("scalable"), [g, lo, hi]) => VectorCaps::scalable(*g, *lo, *hi),
        (Some("fixed"), [bits]) => VectorCaps::fixed(*bits),
        _ => panic!("{}: caps is `scalable GRANULE MIN MAX` or `fixed BITS`", case.path.display()),
    }
}

#[test]
fn trace_text_round_trips() {
    run_dir(&dir("traces"), "trace", |case| {
        let trace = parse_trace(&case.body).unwrap_or_else(|e| panic!("{e}"));
        let printed = trace.to_string();
        expect_file![case.snapshot()].assert_eq(&printed);
        // The printed form is a fixed point, and the JSON form keeps every instruction.
        let again = parse_trace(&printed).unwrap_or_else(|e| panic!("printed form does not parse: {e}"));
        assert_eq!(again.to_string(), printed, "printing is not idempotent");
        let json = Trace::from_json(&trace.to_json()).unwrap_or_else(|e| panic!("JSON: {e}"));
        assert_eq!(json.insts, trace.insts, "the JSON round trip changed the trace");
    });
}

#[test]
fn scheduled_loop_nests() {
    run_dir(&dir("nests"), "case", |case| {
        let w = load(case.require("workload")).unwrap_or_else(|e| panic!("{e}"));
        let mut nest = Nest::from_workload(&w, caps(case));
        let trace = parse_trace(&case.body).unwrap_or_else(|e| panic!("{e}"));
        trace.apply(&mut nest).unwrap_or_else(|e| panic!("{e}"));
        expect_file![case.snapshot()].assert_eq(&nest.to_string());
    });
}
