//! Snapshot filetests of code generation: vector programs and optimized LLVM IR of kernels per target, through the one compile pipeline; cases in `tests/filetests/`, bless with `UPDATE_EXPECT=1`.
//!
//! Header lines of a case: `# workload:` (a catalog reference), `# target:`
//! (a shipped target, or a file relative to `tests/filetests/`), optionally
//! `# vl:` (specialize fixed-length kinds to that vector length) and
//! `# schedule:` (a trace file relative to the repository root); without a
//! schedule, the case's body is the trace.

use expect_test::expect_file;
use scaletune_codegen::pipeline::{compile, Compiled, Emit, Options};
use scaletune_codegen::target::Target;
use scaletune_space::filetest::{run_dir, Case};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::load;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests").join(name)
}

/// Compiles a case through the pipeline, with the LLVM IR text.
fn compile_case(case: &Case) -> Compiled {
    let w = load(case.require("workload")).unwrap_or_else(|e| panic!("{e}"));
    let name = case.require("target");
    let target_file = dir("").join(name);
    let t = if target_file.extension().is_some_and(|x| x == "toml") {
        Target::load(&target_file.display().to_string())
    } else {
        Target::load(name)
    }
    .unwrap_or_else(|e| panic!("{e}"));
    let text = match case.get("schedule") {
        Some(file) => std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}")),
        None => case.body.clone(),
    };
    let trace = parse_trace(&text).unwrap_or_else(|e| panic!("{e}"));
    let vl_bits = case.get("vl").map(|v| v.parse().unwrap_or_else(|e| panic!("vl: {e}")));
    let opts = Options { emit: Emit { llvm_ir: true, asm: false }, vl_bits, ..Options::default() };
    compile(&w, Some(&trace), &t, &opts).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn vector_programs() {
    run_dir(&dir("vprog"), "case", |case| {
        expect_file![case.snapshot()].assert_eq(&compile_case(case).program.to_string());
    });
}

#[test]
fn llvm_ir_per_target() {
    run_dir(&dir("llvm"), "case", |case| {
        let ir = compile_case(case).llvm_ir.unwrap_or_else(|| panic!("no IR text"));
        expect_file![case.snapshot()].assert_eq(&ir);
    });
}
