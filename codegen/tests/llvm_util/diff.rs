//! Differential harness: a compiled kernel against the vector-program interpreter on the same arguments.
//!
//! A generic C driver reads every tensor argument from `in<i>.bin` in the
//! directory given as `argv[1]`, surrounds it with guard zones, calls the
//! kernel, checks the guards and writes the tensors back to `out<i>.bin`.

use super::{link, vscale_at};
use scaletune_codegen::interp::{self, ArgValue, InterpOptions};
use scaletune_codegen::llvm::{compile, CompileOptions};
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::{Param, Program};
use scaletune_space::{DType, TensorData};
use std::fmt::Write;
use std::path::Path;

/// Bytes of guard zone before and after every tensor.
const GUARD: usize = 256;

/// The C expression of a scalar argument of dtype `d`.
fn c_scalar(d: DType, v: f64) -> String {
    match d {
        DType::F32 => format!("u2f(0x{:08x}u)", (v as f32).to_bits()),
        DType::F64 => format!("u2d(0x{:016x}ull)", v.to_bits()),
        DType::I8 => format!("(int8_t){}", v as i64),
        DType::I32 => format!("(int32_t){}", v as i64),
        DType::F16 | DType::BF16 => panic!("the test driver does not pass 16-bit float scalars"),
    }
}

/// A driver for `prog` with the scalar arguments of `args` baked in.
pub fn generic_driver(prog: &Program, args: &[ArgValue]) -> String {
    let mut decl = Vec::new();
    let mut call = Vec::new();
    let mut body = String::new();
    for (i, (p, a)) in prog.params.iter().zip(args).enumerate() {
        match (p, a) {
            (Param::Tensor(b), ArgValue::Tensor(t)) => {
                let ty = prog.buffer(*b).dtype.c_type();
                decl.push(format!("{ty} *p{i}"));
                call.push(format!("({ty} *)(b{i} + {GUARD})"));
                let bytes = t.len() * t.dtype().bytes();
                writeln!(body, "  size_t n{i} = {bytes}; unsigned char *b{i} = load(dir, {i}, n{i});").unwrap();
            }
            (Param::Scalar { reg, .. }, ArgValue::Scalar(v)) => {
                let d = match prog.ty(*reg).elem {
                    scaletune_codegen::vprog::Elem::Data(d) => d,
                    other => panic!("scalar parameter of type {other}"),
                };
                decl.push(format!("{} s{i}", d.c_type()));
                call.push(c_scalar(d, *v));
            }
            _ => panic!("argument {i} does not match its parameter"),
        }
    }
    let mut after = String::new();
    for (i, p) in prog.params.iter().enumerate() {
        if let Param::Tensor(_) = p {
            writeln!(after, "  check_and_save(dir, {i}, b{i}, n{i});").unwrap();
        }
    }
    format!(
        r#"#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static float u2f(uint32_t u) {{ float f; memcpy(&f, &u, 4); return f; }}
static double u2d(uint64_t u) {{ double f; memcpy(&f, &u, 8); return f; }}
static unsigned char *load(const char *dir, int i, size_t n) {{
  char path[4096]; snprintf(path, sizeof path, "%s/in%d.bin", dir, i);
  unsigned char *b = aligned_alloc(64, (n + 2 * {GUARD} + 63) / 64 * 64);
  memset(b, 0xa5, n + 2 * {GUARD});
  FILE *f = fopen(path, "rb");
  if (!f || fread(b + {GUARD}, 1, n, f) != n) {{ fprintf(stderr, "cannot read %s\n", path); exit(2); }}
  fclose(f);
  return b;
}}
static void check_and_save(const char *dir, int i, unsigned char *b, size_t n) {{
  for (size_t k = 0; k < {GUARD}; k++)
    if (b[k] != 0xa5 || b[{GUARD} + n + k] != 0xa5) {{ fprintf(stderr, "guard zone of argument %d overwritten\n", i); exit(3); }}
  char path[4096]; snprintf(path, sizeof path, "%s/out%d.bin", dir, i);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b + {GUARD}, 1, n, f) != n) {{ fprintf(stderr, "cannot write %s\n", path); exit(2); }}
  fclose(f);
}}
void {name}({decl});
int main(int argc, char **argv) {{
  if (argc != 2) return 1;
  const char *dir = argv[1];
{body}  {name}({call});
{after}  return 0;
}}
"#,
        name = prog.name,
        decl = if decl.is_empty() { "void".to_string() } else { decl.join(", ") },
        call = call.join(", "),
    )
}

/// True if two tensors are equal element by element, NaN matching any NaN.
pub fn same_values(a: &TensorData, b: &TensorData) -> bool {
    a.dtype() == b.dtype()
        && a.len() == b.len()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get(i), b.get(i));
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        })
}

/// Compiles `prog` for `target`, runs it at every vector length of `vls` on
/// `args`, runs the interpreter at the same vscale and asserts that every
/// tensor argument ends up identical.
pub fn check_against_interpreter(
    prog: &Program,
    target: &Target,
    opts: &CompileOptions,
    args: &[ArgValue],
    vls: &[u32],
) {
    let art =
        compile(prog, target, opts).unwrap_or_else(|e| panic!("compiling {} for {}: {e}", prog.name, target.name));
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = link(target, &art.object, &generic_driver(prog, args), dir.path());
    for &vl in vls {
        let vscale = vscale_at(target, vl);
        let mut expected = args.to_vec();
        interp::run(prog, &mut expected, &InterpOptions::new(vscale))
            .unwrap_or_else(|e| panic!("interpreting {} at vscale {vscale}: {e}", prog.name));
        let got = run_with_files(target, &exe, dir.path(), args, vl);
        for (i, (want, got)) in expected.iter().zip(&got).enumerate() {
            let (Some(want), Some(got)) = (want.as_tensor(), got) else { continue };
            if !same_values(want, got) {
                let diffs: Vec<String> = (0..want.len())
                    .filter(|&k| !same_values(&slice(want, k), &slice(got, k)))
                    .take(12)
                    .map(|k| format!("[{k}] interp {} compiled {}", want.get(k), got.get(k)))
                    .collect();
                panic!(
                    "{} on {} at VL {vl} (vscale {vscale}): argument {i} differs from the interpreter:\n{}\n--- IR\n{}",
                    prog.name,
                    target.name,
                    diffs.join("\n"),
                    art.llvm_ir
                );
            }
        }
    }
}

fn slice(t: &TensorData, k: usize) -> TensorData {
    let mut one = TensorData::zeros(t.dtype(), 1);
    one.set(0, t.get(k));
    one
}

/// Writes the inputs, runs the driver, reads the tensors back (None for scalars).
fn run_with_files(target: &Target, exe: &Path, dir: &Path, args: &[ArgValue], vl: u32) -> Vec<Option<TensorData>> {
    for (i, a) in args.iter().enumerate() {
        if let ArgValue::Tensor(t) = a {
            std::fs::write(dir.join(format!("in{i}.bin")), t.to_le_bytes()).expect("write input");
            let _ = std::fs::remove_file(dir.join(format!("out{i}.bin")));
        }
    }
    let mut cmd: Vec<String> = target.qemu_command(vl).unwrap_or_default();
    cmd.push(exe.display().to_string());
    cmd.push(dir.display().to_string());
    let out = std::process::Command::new(&cmd[0]).args(&cmd[1..]).output().expect("start driver");
    assert!(
        out.status.success(),
        "{} at VL {vl}: driver failed with {}: {}",
        target.name,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            a.as_tensor().map(|t| {
                let bytes = std::fs::read(dir.join(format!("out{i}.bin"))).expect("read output");
                TensorData::from_le_bytes(t.dtype(), &bytes).expect("whole elements")
            })
        })
        .collect()
}
