//! Parallel loops on several threads: outlined bodies and the thread-pool runtime, run natively and under QEMU.
//!
//! Every run test compiles a hand-built program with parallel loops, links
//! the one returned object with a C driver, runs it on the host, on
//! length-agnostic SVE (128 and 512 bits) and on RVV (VLEN 128 and 512) with
//! `SCALETUNE_NUM_THREADS` = 1, 2 and 4, and requires the outputs to be
//! bit-identical to the interpreter's (so also to each other).

mod llvm_util;

use llvm_util::diff::{generic_driver, same_values};
use llvm_util::parallel::{broken, par_ranges, par_scale, par_scratch, par_temp, Broken};
use llvm_util::{lanes32, link, vscale_at};
use scaletune_codegen::interp::{self, ArgValue, InterpOptions};
use scaletune_codegen::llvm::{compile, CompileOptions, LlvmError, PARALLEL_FOR};
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::{Lanes, Param, Program};
use scaletune_space::{DType, TensorData};
use std::path::Path;
use std::process::Command;

const THREADS: [u32; 3] = [1, 2, 4];

/// Host (native), SVE and RVV (under QEMU) with the vector lengths to run at.
fn targets() -> Vec<(Target, Vec<u32>)> {
    let load = |n: &str| Target::load(n).unwrap_or_else(|e| panic!("loading target {n}: {e}"));
    let host = load("host");
    let host_vls = host.default_vl_bits.clone();
    vec![(host, host_vls), (load("sve-generic"), vec![128, 512]), (load("rvv"), vec![128, 512])]
}

/// Runs `exe` with `args` for `target` at `vl_bits` with `threads` pool threads; returns stdout.
fn run(target: &Target, exe: &Path, args: &[String], vl_bits: u32, threads: u32) -> String {
    let mut cmd: Vec<String> = target.qemu_command(vl_bits).unwrap_or_default();
    cmd.push(exe.display().to_string());
    cmd.extend(args.iter().cloned());
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .env("SCALETUNE_NUM_THREADS", threads.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{} at VL {vl_bits} with {threads} threads: {} failed: {}",
        target.name,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Deterministic arguments for `prog`: tensors of varied values, scalars 3.
fn make_args(prog: &Program) -> Vec<ArgValue> {
    prog.params
        .iter()
        .map(|p| match p {
            Param::Tensor(b) => {
                let buf = prog.buffer(*b);
                let mut t = TensorData::zeros(buf.dtype, buf.len);
                for i in 0..buf.len {
                    let v = if buf.dtype == DType::I32 {
                        ((i * 37) % buf.len) as f64
                    } else {
                        (i % 97) as f64 * 0.37 - 5.0
                    };
                    t.set(i, v);
                }
                ArgValue::Tensor(t)
            }
            Param::Scalar { .. } => ArgValue::Scalar(3.0),
        })
        .collect()
}

/// Compiles the program for every target, runs it at every vector length and
/// thread count, and compares every tensor with the interpreter's.
fn check_against_interpreter(build: impl Fn(&Target) -> Program + Sync, opts: &CompileOptions) {
    std::thread::scope(|s| {
        let handles: Vec<_> = targets()
            .into_iter()
            .map(|(target, vls)| {
                let build = &build;
                s.spawn(move || {
                    let prog = build(&target);
                    let args = make_args(&prog);
                    let art = compile(&prog, &target, opts).unwrap_or_else(|e| panic!("compiling for {}: {e}", target.name));
                    let dir = tempfile::tempdir().expect("tempdir");
                    let exe = link(&target, &art.object, &generic_driver(&prog, &args), dir.path());
                    for (i, a) in args.iter().enumerate() {
                        if let ArgValue::Tensor(t) = a {
                            std::fs::write(dir.path().join(format!("in{i}.bin")), t.to_le_bytes()).expect("write input");
                        }
                    }
                    for &vl in &vls {
                        let vscale = vscale_at(&target, vl);
                        let mut want = args.clone();
                        interp::run(&prog, &mut want, &InterpOptions::new(vscale)).expect("interpreter");
                        for threads in THREADS {
                            run(&target, &exe, &[dir.path().display().to_string()], vl, threads);
                            for (i, w) in want.iter().enumerate() {
                                let Some(w) = w.as_tensor() else { continue };
                                let bytes = std::fs::read(dir.path().join(format!("out{i}.bin"))).expect("output");
                                let got = TensorData::from_le_bytes(w.dtype(), &bytes).expect("whole elements");
                                assert!(
                                    same_values(w, &got),
                                    "{} on {} at VL {vl} with {threads} threads: argument {i} differs from the interpreter",
                                    prog.name,
                                    target.name
                                );
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

/// (a) `y = 2x` over 1000 rows with a scalable (SVE, RVV) or fixed (host)
/// vector loop per row and a captured vector register.
#[test]
fn elementwise_parallel_loop_matches_the_interpreter_at_every_thread_count() {
    check_against_interpreter(|t| par_scale(1000, 19, lanes32(t)), &CompileOptions::default());
}

/// (b) A per-iteration scratch buffer is private to each thread: iterations
/// fill it with their own index and read it back after a busy loop, so a
/// shared buffer would be overwritten by other threads. Also at O0, where
/// every load and store stays.
#[test]
fn local_scratch_buffers_are_private_to_each_thread() {
    check_against_interpreter(|_| par_scratch(48, 64, 400), &CompileOptions::default());
    check_against_interpreter(|_| par_scratch(24, 64, 100), &CompileOptions { opt_level: 0 });
}

/// (c) Two parallel loops over `[0, 37)` and `[37, 1000)` (a non-zero start,
/// as tail splitting produces), the second capturing a scalar parameter.
#[test]
fn parallel_loops_with_a_non_zero_start_cover_their_range() {
    check_against_interpreter(|t| par_ranges(1000, 11, 37, lanes32(t)), &CompileOptions::default());
}

/// A local buffer written by one parallel loop and read by another is shared.
#[test]
fn a_temporary_written_and_read_by_two_parallel_loops_is_shared() {
    check_against_interpreter(|_| par_temp(333), &CompileOptions::default());
}

/// A driver that records, through the runtime's chunk hook, which thread ran
/// each chunk of two calls of `par_scale`, and prints one line per call:
/// chunks, distinct threads, whether chunk 0 ran on the calling thread,
/// whether the chunks tile `[0, rows)` in order, and whether `y == 2x`.
fn hook_driver(rows: usize, cols: usize) -> String {
    format!(
        r#"#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
extern void (*scaletune_rt_chunk_hook_v1)(int64_t chunk, int64_t begin, int64_t end);
void par_scale(const float *x, float *y);
enum {{ ROWS = {rows}, N = {rows} * {cols}, MAXC = 64 }};
static pthread_t who[MAXC]; static int64_t lo[MAXC], hi[MAXC]; static int seen[MAXC];
static void hook(int64_t c, int64_t b, int64_t e) {{
  if (c < MAXC) {{ who[c] = pthread_self(); lo[c] = b; hi[c] = e; seen[c] = 1; }}
}}
static float x[N], y[N];
int main(void) {{
  for (int i = 0; i < N; i++) x[i] = (float)(i % 97) - 40.0f;
  scaletune_rt_chunk_hook_v1 = hook;
  for (int call = 0; call < 2; call++) {{
    for (int c = 0; c < MAXC; c++) seen[c] = 0;
    for (int i = 0; i < N; i++) y[i] = 0.0f;
    par_scale(x, y);
    int chunks = 0, threads = 0, tiled = 1, ok = 1;
    while (chunks < MAXC && seen[chunks]) chunks++;
    for (int c = 0; c < chunks; c++) {{
      int fresh = 1;
      for (int d = 0; d < c; d++) if (pthread_equal(who[c], who[d])) fresh = 0;
      threads += fresh;
      if (lo[c] != (c == 0 ? 0 : hi[c - 1]) || hi[c] <= lo[c]) tiled = 0;
    }}
    if (chunks > 0 && hi[chunks - 1] != ROWS) tiled = 0;
    for (int i = 0; i < N; i++) if (y[i] != 2.0f * x[i]) ok = 0;
    int main0 = chunks > 0 && pthread_equal(who[0], pthread_self());
    printf("chunks=%d threads=%d main0=%d tiled=%d ok=%d\n", chunks, threads, main0, tiled, ok);
  }}
  return 0;
}}
"#
    )
}

/// (d) The runtime runs `min(threads, rows)` chunks on as many distinct
/// threads, chunk 0 on the caller, contiguous and in order; with one thread
/// it runs serially without the pool. The pool is reused by the second call.
#[test]
fn the_pool_runs_one_chunk_per_thread() {
    const ROWS: usize = 6;
    std::thread::scope(|s| {
        for (target, vls) in targets() {
            s.spawn(move || {
                let prog = par_scale(ROWS, 21, lanes32(&target));
                let art = compile(&prog, &target, &CompileOptions::default()).expect("compile");
                let dir = tempfile::tempdir().expect("tempdir");
                let exe = link(&target, &art.object, &hook_driver(ROWS, 21), dir.path());
                for threads in [1, 2, 4, 8] {
                    let got = run(&target, &exe, &[], vls[0], threads);
                    let line = match threads {
                        1 => "chunks=0 threads=0 main0=0 tiled=1 ok=1\n".to_string(),
                        t => {
                            let k = (t as usize).min(ROWS);
                            format!("chunks={k} threads={k} main0=1 tiled=1 ok=1\n")
                        }
                    };
                    assert_eq!(got, line.repeat(2), "{} with {threads} threads", target.name);
                }
            });
        }
    });
}

/// Without `SCALETUNE_NUM_THREADS` the pool has one thread per CPU the
/// process may run on: all of them normally, one when pinned with `taskset`
/// (as the timing protocol's `--pin-core` does), so a pinned candidate does
/// not time threads fighting over one core.
#[test]
fn the_default_thread_count_follows_the_affinity_mask() {
    const ROWS: usize = 64;
    let target = Target::load("host").expect("host");
    let prog = par_scale(ROWS, 21, lanes32(&target));
    let art = compile(&prog, &target, &CompileOptions::default()).expect("compile");
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = link(&target, &art.object, &hook_driver(ROWS, 21), dir.path());
    let run_with = |prefix: &[&str]| {
        let mut cmd = Command::new(prefix.first().copied().unwrap_or(exe.to_str().expect("path")));
        if !prefix.is_empty() {
            cmd.args(&prefix[1..]).arg(&exe);
        }
        let out = cmd.env_remove("SCALETUNE_NUM_THREADS").output().expect("run the driver");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let nproc = Command::new("nproc").output().expect("nproc");
    let cpus: usize = String::from_utf8_lossy(&nproc.stdout).trim().parse().expect("a CPU count");
    let expected = match cpus.min(ROWS) {
        1 => "chunks=0 threads=0 main0=0 tiled=1 ok=1\n".to_string(),
        k => format!("chunks={k} threads={k} main0=1 tiled=1 ok=1\n"),
    };
    assert_eq!(run_with(&[]), expected.repeat(2), "{cpus} CPUs");
    let pinned = run_with(&["taskset", "-c", "0"]);
    assert_eq!(pinned, "chunks=0 threads=0 main0=0 tiled=1 ok=1\n".repeat(2), "pinned to CPU 0");
}

/// Symbols of an object as `llvm-nm` prints them (`<kind> <name>` per line).
fn symbols(object: &[u8]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("k.o");
    std::fs::write(&path, object).expect("write object");
    let out = Command::new("llvm-nm-19").arg("--defined-only").arg(&path).output().expect("llvm-nm-19");
    assert!(out.status.success(), "llvm-nm failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let name = w.next()?.to_string();
            Some((w.next()?.to_string(), name))
        })
        .collect()
}

/// (e) Only objects with a parallel loop contain the runtime; there its entry
/// point is local, so the kernel stays the only global function. Objects are
/// byte-identical across compilations.
#[test]
fn only_objects_with_parallel_loops_contain_the_runtime() {
    for (target, _) in targets() {
        let serial = llvm_util::programs::vadd(37, lanes32(&target));
        let art = compile(&serial, &target, &CompileOptions::default()).expect("compile vadd");
        let syms = symbols(&art.object);
        assert!(!syms.iter().any(|(_, n)| n.starts_with("scaletune_")), "{}: {syms:?}", target.name);

        let prog = par_scale(1000, 19, lanes32(&target));
        let art = compile(&prog, &target, &CompileOptions::default()).expect("compile par_scale");
        let syms = symbols(&art.object);
        assert!(syms.iter().any(|(k, n)| n == PARALLEL_FOR && k == "t"), "{}: {syms:?}", target.name);
        let global_text: Vec<&str> =
            syms.iter().filter(|(k, _)| k == "T" || k == "W").map(|(_, n)| n.as_str()).collect();
        assert_eq!(global_text, ["par_scale"], "{}", target.name);
        assert!(art.llvm_ir.contains("@par_scale.par.0("), "{}", target.name);
        assert!(!art.llvm_ir.contains("define weak"), "{}: the IR is the kernel's only", target.name);
        let again = compile(&prog, &target, &CompileOptions::default()).expect("compile again");
        assert!(again.object == art.object, "{}: objects differ between compilations", target.name);
    }
}

/// Loops whose iterations visibly depend on each other are refused.
#[test]
fn dependent_iterations_are_refused() {
    let target = Target::load("sve-generic").expect("target");
    for (kind, needle) in [
        (Broken::Carried, "carried between iterations"),
        (Broken::LiveOut, "read outside it"),
        (Broken::SharedScratch, "`scratch` is used outside the loop"),
    ] {
        match compile(&broken(kind), &target, &CompileOptions::default()) {
            Err(e @ LlvmError::Parallel { .. }) => {
                assert!(e.to_string().contains(needle), "{kind:?}: {e}");
            }
            other => panic!("{kind:?}: expected a parallel-loop error, got {:?}", other.map(|a| a.object.len())),
        }
    }
}

/// Fixed-length vectors on the SVE target (NEON code) in a parallel loop.
#[test]
fn fixed_vectors_in_parallel_loops_run() {
    check_against_interpreter(|_| par_scale(100, 13, Lanes::fixed(4)), &CompileOptions::default());
}
