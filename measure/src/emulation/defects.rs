//! Known defects of the QEMU a target runs under, found by probing it: runs whose outputs QEMU computes wrong are judged by the interpreter instead.
//!
//! QEMU 7.2 (Debian 12) computes the 32-bit `smopa` (i8 quads into i32
//! tiles) wrong: it writes only part of the tile's rows (QEMU issue 2083,
//! fixed upstream in 2024 by "target/arm: Fix 32-bit SMOPA"). Every int8
//! SME candidate then fails its check under that QEMU, however right its
//! code. [`smopa_i32_is_wrong`] finds out whether the target's QEMU has the
//! defect, once per process and QEMU command: a tiny static program (one
//! `smopa` at the run's streaming vector length, in assembly, so that any
//! AArch64 C compiler builds it) prints whether every element of the tile
//! is right. The harness asks only when a kernel that uses `smopa` fails
//! its check under QEMU (`crate::harness::Harness::judge_run`).

use crate::cleanup::ScratchDir;
use crate::process::{run_with_timeout, Ending};
use scaletune_codegen::target::{Arch, Target};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The probe: `scaletune_smopa_probe(a, b, out)` zeroes ZA, accumulates one
/// `smopa` of the byte vectors `a` and `b` into `za0.s`, stores its rows to
/// `out` and returns the streaming vector length in bytes; `main` compares
/// every element with the sum of four products it should hold.
const PROBE_SOURCE: &str = r#"#include <stdint.h>
#include <stdio.h>
uint64_t scaletune_smopa_probe(const int8_t *a, const int8_t *b, int32_t *out);
__asm__(
  ".arch armv9-a+sme\n"
  ".text\n"
  ".globl scaletune_smopa_probe\n"
  ".type scaletune_smopa_probe, %function\n"
  "scaletune_smopa_probe:\n"
  "  smstart\n"
  "  ptrue p0.b\n"
  "  ld1b {z0.b}, p0/z, [x0]\n"
  "  ld1b {z1.b}, p0/z, [x1]\n"
  "  zero {za}\n"
  "  smopa za0.s, p0/m, p0/m, z0.b, z1.b\n"
  "  ptrue p1.s\n"
  "  cntw x3\n"
  "  mov w12, #0\n"
  "1:\n"
  "  st1w {za0h.s[w12, 0]}, p1, [x2]\n"
  "  addvl x2, x2, #1\n"
  "  add w12, w12, #1\n"
  "  cmp x12, x3\n"
  "  b.lo 1b\n"
  "  rdsvl x0, #1\n"
  "  smstop\n"
  "  ret\n");
static int8_t a[256], b[256];
static int32_t out[64 * 64];
int main(void) {
  for (int i = 0; i < 256; i++) { a[i] = (int8_t)(i % 7 - 3); b[i] = (int8_t)(i % 5 - 2); }
  uint64_t bytes = scaletune_smopa_probe(a, b, out);
  if (bytes < 16 || bytes > 256) { printf("svl %llu\n", (unsigned long long)bytes); return 1; }
  uint64_t n = bytes / 4;
  int right = 1;
  for (uint64_t r = 0; r < n; r++)
    for (uint64_t c = 0; c < n; c++) {
      int32_t s = 0;
      for (int q = 0; q < 4; q++) s += a[4 * r + q] * b[4 * c + q];
      right &= out[r * n + c] == s;
    }
  puts(right ? "right" : "wrong");
  return 0;
}
"#;

/// How long building or running the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Verdicts by (C compiler command, QEMU command): each probed once per process.
type Verdicts = Mutex<HashMap<(Vec<String>, Vec<String>), Arc<OnceLock<Result<bool, String>>>>>;

fn verdicts() -> &'static Verdicts {
    static VERDICTS: OnceLock<Verdicts> = OnceLock::new();
    VERDICTS.get_or_init(Default::default)
}

/// Whether the QEMU that runs `target` at `vl_bits` computes the 32-bit
/// `smopa` wrong (`Ok(false)`: it is right). `Err` when the target has no
/// QEMU command, is not AArch64, or the probe cannot be built or run, with
/// the reason. Concurrent callers with the same commands wait for one probe.
pub fn smopa_i32_is_wrong(target: &Target, vl_bits: u32) -> Result<bool, String> {
    if target.arch != Arch::Aarch64 {
        return Err(format!("target `{}` is not AArch64", target.name));
    }
    let qemu = target.qemu_command(vl_bits).ok_or_else(|| format!("target `{}` runs natively", target.name))?;
    let key = (target.cc.clone(), qemu);
    let cell = {
        let mut table = verdicts().lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(table.entry(key.clone()).or_default())
    };
    cell.get_or_init(|| probe(&key.0, &key.1)).clone()
}

/// Builds the probe with `cc` and runs it under `qemu`.
fn probe(cc: &[String], qemu: &[String]) -> Result<bool, String> {
    let (Some((cc, cc_args)), Some((qemu, qemu_args))) = (cc.split_first(), qemu.split_first()) else {
        return Err("an empty C compiler or QEMU command".into());
    };
    let dir = ScratchDir::new("scaletune-smopa-probe-").map_err(|e| format!("creating a temporary directory: {e}"))?;
    let (src, exe) = (dir.path().join("smopa_probe.c"), dir.path().join("smopa_probe"));
    std::fs::write(&src, PROBE_SOURCE).map_err(|e| format!("writing the smopa probe: {e}"))?;
    let mut build = Command::new(cc);
    build.args(cc_args).arg(&src).arg("-o").arg(&exe);
    let built = run_with_timeout(build, PROBE_TIMEOUT);
    if built.ending != Ending::Exited(0) {
        return Err(format!("building the smopa probe failed ({:?}): {}", built.ending, built.stderr.trim()));
    }
    let mut run_it = Command::new(qemu);
    run_it.args(qemu_args).arg(&exe);
    let ran = run_with_timeout(run_it, PROBE_TIMEOUT);
    match (&ran.ending, ran.stdout.trim()) {
        (Ending::Exited(0), "right") => Ok(false),
        (Ending::Exited(0), "wrong") => Ok(true),
        (ending, stdout) => {
            Err(format!("the smopa probe ended with {ending:?} printing {stdout:?}; stderr: {}", ran.stderr.trim()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe builds and runs at every streaming vector length of the
    /// `sme` target, and gives one verdict for all of them (the defect does
    /// not depend on the length); a target without QEMU is refused.
    #[test]
    fn the_probe_gives_one_verdict_at_every_streaming_length() {
        let sme = Target::load("sme").expect("sme target");
        let verdicts: Vec<bool> = [128, 256, 512, 2048]
            .into_iter()
            .map(|vl| smopa_i32_is_wrong(&sme, vl).unwrap_or_else(|e| panic!("VL {vl}: {e}")))
            .collect();
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "{verdicts:?}");
        let host = Target::load("host").expect("host target");
        assert!(smopa_i32_is_wrong(&host, 512).is_err());
    }
}
