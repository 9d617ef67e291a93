//! Shared harness of the LLVM emitter tests: compile, link with a C driver, run natively or under QEMU.
#![allow(dead_code)]

pub mod diff;
pub mod parallel;
pub mod programs;

use scaletune_codegen::llvm::{compile, Artifacts, CompileOptions};
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::{Lanes, Program};
use std::path::Path;
use std::process::Command;

/// The targets every run test covers, with the vector lengths (bits) to run at.
pub fn run_targets() -> Vec<(Target, Vec<u32>)> {
    let load = |n: &str| Target::load(n).unwrap_or_else(|e| panic!("loading target {n}: {e}"));
    let host = load("host");
    let host_vls = host.default_vl_bits.clone();
    vec![
        (host, host_vls),
        (load("sve-generic"), vec![128, 256, 512, 2048]),
        (load("neoverse-v1"), vec![256]),
        (load("rvv"), vec![128, 512]),
    ]
}

/// Lanes of one full 32-bit-element vector register on `target`
/// (`4 x vscale` on SVE, `2 x vscale` on RVV, the native width on x86).
pub fn lanes32(target: &Target) -> Lanes {
    if target.caps.scalable {
        Lanes::scalable(target.caps.granule_bits / 32)
    } else {
        Lanes::fixed(target.caps.max_bits() / 32)
    }
}

/// Compiles at O3, panicking with the error on failure.
pub fn compile_o3(prog: &Program, target: &Target) -> Artifacts {
    compile(prog, target, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("compiling {} for {}: {e}", prog.name, target.name))
}

fn run_command(mut cmd: Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Links `object` with the C `driver` using the target's compiler command.
pub fn link(target: &Target, object: &[u8], driver: &str, dir: &Path) -> std::path::PathBuf {
    let obj = dir.join("kernel.o");
    let src = dir.join("driver.c");
    let exe = dir.join("driver");
    std::fs::write(&obj, object).expect("write object");
    std::fs::write(&src, driver).expect("write driver");
    let (cc, args) = target.cc.split_first().expect("target has a cc command");
    let mut cmd = Command::new(cc);
    cmd.args(args).arg(&src).arg(&obj).arg("-o").arg(&exe).args(&target.libs);
    run_command(cmd, &format!("linking for {}", target.name));
    exe
}

/// Runs an executable for `target` at `vl_bits` (natively or under QEMU).
pub fn run(target: &Target, exe: &Path, vl_bits: u32) -> String {
    let cmd = match target.qemu_command(vl_bits) {
        Some(q) => {
            let mut c = Command::new(&q[0]);
            c.args(&q[1..]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    run_command(cmd, &format!("running on {} at VL {vl_bits}", target.name))
}

/// The vscale a target runs at for a vector length.
pub fn vscale_at(target: &Target, vl_bits: u32) -> u32 {
    if target.caps.scalable {
        target.vscale_for_vl(vl_bits).expect("valid VL")
    } else {
        target.caps.vscale_values[0]
    }
}

/// For every run target (in parallel threads): builds the program, compiles
/// it, links it with `driver`, runs it at each vector length and compares
/// stdout with `expect(target, vscale)`.
pub fn check_everywhere(
    build: impl Fn(&Target) -> Program + Sync,
    driver: &str,
    expect: impl Fn(&Target, u32) -> String + Sync,
) {
    check_everywhere_with(&CompileOptions::default(), build, driver, expect)
}

/// [`check_everywhere`] with explicit compile options.
pub fn check_everywhere_with(
    opts: &CompileOptions,
    build: impl Fn(&Target) -> Program + Sync,
    driver: &str,
    expect: impl Fn(&Target, u32) -> String + Sync,
) {
    let targets = run_targets();
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(target, vls)| {
                let (build, expect) = (&build, &expect);
                s.spawn(move || {
                    let prog = build(target);
                    let art = compile(&prog, target, opts)
                        .unwrap_or_else(|e| panic!("compiling {} for {}: {e}", prog.name, target.name));
                    let dir = tempfile::tempdir().expect("tempdir");
                    let exe = link(target, &art.object, driver, dir.path());
                    for &vl in vls {
                        let got = run(target, &exe, vl);
                        let want = expect(target, vscale_at(target, vl));
                        assert!(
                            got == want,
                            "{} on {} at VL {vl}: output differs\n--- got\n{got}--- want\n{want}--- IR\n{}",
                            prog.name,
                            target.name,
                            art.llvm_ir
                        );
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

/// C helpers every driver starts with: `pf` prints a float's bits, `pi` an int.
pub const C_PRELUDE: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static void pf(float x) { uint32_t u; memcpy(&u, &x, 4); printf("%08x\n", u); }
static void pi(int32_t x) { printf("%d\n", x); }
"#;

/// The line `pf` prints for `x`.
pub fn pf(x: f32) -> String {
    format!("{:08x}\n", x.to_bits())
}

/// The line `pi` prints for `x`.
pub fn pi(x: i32) -> String {
    format!("{x}\n")
}

/// Elements of the `vadd` driver's vectors (`programs::vadd(VADD_N, ..)`).
pub const VADD_N: usize = 37;

/// A driver for `vadd(a, b, y, 1.5)` that prints `y` and the 64 guard
/// elements after it (which must keep their -7).
pub fn vadd_driver() -> String {
    format!(
        "{C_PRELUDE}
void vadd(const float *a, const float *b, float *y, float s);
int main(void) {{
  enum {{ N = {VADD_N}, PAD = 64 }};
  float a[N], b[N], y[N + PAD];
  for (int i = 0; i < N; i++) {{ a[i] = i * 0.5f - 3.0f; b[i] = 1.25f * i; }}
  for (int i = 0; i < N + PAD; i++) y[i] = -7.0f;
  vadd(a, b, y, 1.5f);
  for (int i = 0; i < N + PAD; i++) pf(y[i]);
  return 0;
}}
"
    )
}

/// What [`vadd_driver`] prints for a correct kernel.
pub fn vadd_expected() -> String {
    (0..VADD_N + 64)
        .map(|i| {
            if i < VADD_N {
                let (a, b) = (i as f32 * 0.5 - 3.0, 1.25 * i as f32);
                pf(1.5 * (a + b))
            } else {
                pf(-7.0)
            }
        })
        .collect()
}
