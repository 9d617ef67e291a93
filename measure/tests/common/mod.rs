//! Helpers shared by the runner, builder and farm tests: targets, workloads, hand-written C kernels.
//!
//! Kernels that crash, hang or compute wrong results cannot come out of a
//! valid schedule, so tests write them in C, compile them with `clang-19 -c
//! -O2` for the target, and link them into a [`Built`] with
//! [`Harness::build`] exactly as the LLVM builder does. [`CraftedBuilder`]
//! does that for chosen candidate ids and hands every other candidate to the
//! real [`LlvmBuilder`], so a farm batch mixes both.

#![allow(dead_code)]

use scaletune_codegen::target::Target;
use scaletune_measure::builder::{BuildError, Builder};
use scaletune_measure::{Built, Candidate, CheckRequest, Harness, LlvmBuilder};
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::{load, Workload};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

pub fn target(name: &str) -> Arc<Target> {
    Arc::new(Target::load(name).unwrap_or_else(|e| panic!("loading target {name}: {e}")))
}

pub fn workload(reference: &str) -> Arc<Workload> {
    Arc::new(load(reference).unwrap_or_else(|e| panic!("loading workload {reference}: {e}")))
}

pub fn trace(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("parsing trace: {e}\n{text}"))
}

/// Compiles C source to an object for `target` with `clang-19 -c -O2`.
pub fn compile_c(target: &Target, source: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("kernel.c");
    let obj = dir.path().join("kernel.o");
    std::fs::write(&src, source).expect("write kernel source");
    let flags: Vec<String> =
        target.cc.iter().filter(|a| a.starts_with("--target=") || a.starts_with("-march")).cloned().collect();
    let out = Command::new("clang-19")
        .args(["-c", "-O2", "-Wall", "-Werror"])
        .args(&flags)
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("start clang-19");
    assert!(out.status.success(), "clang-19 failed on\n{source}\n{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(&obj).expect("read object")
}

/// A [`Built`] of a hand-written kernel named `kernel`.
pub fn crafted_built(id: u64, w: &Workload, t: &Target, source: &str, timeout: Duration) -> Built {
    crafted_built_seeded(id, w, t, source, timeout, 1)
}

/// [`crafted_built`] with inputs made from `seed`.
pub fn crafted_built_seeded(id: u64, w: &Workload, t: &Target, source: &str, timeout: Duration, seed: u64) -> Built {
    let object = compile_c(t, source);
    let req = CheckRequest {
        workload: w,
        target: t,
        object: &object,
        symbol: "kernel",
        vl_bits: vec![],
        seed,
        timeout,
        work_dir: None,
    };
    let harness = Harness::build(&req).unwrap_or_else(|e| panic!("harness: {e}"));
    Built::new(id, format!("crafted-{id}"), harness, 0.0)
}

/// `Y = s * (A + B)` over N elements, then `extra` (a statement with access to `calls`, the call count).
pub fn scale_add_c(n: usize, extra: &str) -> String {
    format!(
        r#"
#include <stdint.h>
#include <unistd.h>
#define N {n}
static int calls;
void kernel(float *a, float *b, float *y, float s) {{
    calls++;
    for (int i = 0; i < N; i++) y[i] = s * (a[i] + b[i]);
    {extra}
}}
"#
    )
}

/// Builds chosen candidates from C source, the others with LLVM.
pub struct CraftedBuilder {
    pub llvm: LlvmBuilder,
    pub sources: HashMap<u64, String>,
}

impl Builder for CraftedBuilder {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        match self.sources.get(&c.id) {
            Some(src) => Ok(crafted_built(c.id, &c.workload, &c.target, src, c.timeout)),
            None => self.llvm.build(c),
        }
    }
}

/// The traces used for real candidates on `scale_add`.
pub fn scale_add_traces() -> Vec<Trace> {
    let base = "b = get_block(\"Y\")\ni = get_loops(b)\n";
    vec![
        trace(base),
        trace(&format!("{base}i0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"predicate\")\n")),
        trace(&format!("{base}i0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"peel\")\n")),
        trace(&format!("{base}i0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"scalar\")\n")),
        trace(&format!("{base}i0, i1 = split(i, factors=[None, 8])\nvectorize(i1, tail=\"scalar\")\n")),
    ]
}

/// The traces used for real candidates on `matmul` (an accumulating `+=` kernel).
pub fn matmul_traces() -> Vec<Trace> {
    let base = "b = get_block(\"C\")\ni, j, k = get_loops(b)\n";
    vec![
        trace(base),
        trace(&format!(
            "{base}i0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
             reorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"predicate\")\n"
        )),
        trace(&format!(
            "{base}j0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1, tail=\"peel\")\n"
        )),
    ]
}
