//! Generation of the C driver that loads the arguments, calls the kernel once and writes the outputs.
//!
//! The driver is a single C file specific to one workload and kernel symbol:
//! the argument sizes and the scalar values (as exact bit patterns) are baked
//! in. It takes two paths on its command line, `INPUT OUTPUT`, optionally
//! followed by timing options (see [`super::timing`]):
//!
//! 1. pins itself to a CPU if `--pin-core N` is given (`sched_setaffinity`);
//! 2. prints the vector length it runs at on stdout (`scaletune-driver:
//!    vl_bits=N`), read from `prctl(PR_SVE_GET_VL)` on AArch64 Linux and from
//!    the `vlenb` CSR on RISC-V builds with the V extension;
//! 3. reads every argument tensor from `INPUT` into 64-byte aligned buffers
//!    surrounded by guard bytes;
//! 4. calls the kernel once (the correctness run);
//! 5. checks the guard bytes and that the inputs are unchanged;
//! 6. writes every output tensor of that first call, concatenated, to `OUTPUT`;
//! 7. in timing mode (`--repeat N` with N > 0): warm-up calls, calibration of
//!    the calls per repeat, the timed repeats (`CLOCK_MONOTONIC`, optionally
//!    writing a buffer larger than the last-level cache before each), then
//!    the same checks as in step 5 plus a check that the outputs are
//!    bit-identical to the first call's; the timings are printed on stdout
//!    (`scaletune-timing: ...` lines).
//!
//! Exit status: 0 on success, [`EXIT_IO`] for usage and I/O failures,
//! [`EXIT_KERNEL_FAULT`] when the kernel wrote outside its outputs or into an
//! input (in any call), [`EXIT_UNSTABLE_OUTPUTS`] when the timed calls left
//! outputs different from the first call's (the output file, written before,
//! still holds the first call's, so the harness compares them first).

use super::HarnessError;
use scaletune_space::workload::{Role, Workload};
use scaletune_space::DType;
use std::fmt::Write as _;

/// The prefix of the line on which the driver reports its vector length.
pub(crate) const VL_REPORT_PREFIX: &str = "scaletune-driver: vl_bits=";

/// Driver exit status for usage and I/O failures.
pub(crate) const EXIT_IO: i32 = 2;

/// Driver exit status when the kernel wrote outside an output or into an input.
pub(crate) const EXIT_KERNEL_FAULT: i32 = 3;

/// Driver exit status when the timed calls changed the outputs of the first call.
pub(crate) const EXIT_UNSTABLE_OUTPUTS: i32 = 4;

/// Prefix of every identifier the driver defines (macros in upper case); kernels may not use it.
const INTERNAL_PREFIX: &str = "scaletune_drv_";

/// Checks that `symbol` is a C identifier the driver can declare.
fn check_symbol(symbol: &str) -> Result<(), HarnessError> {
    let bad = |why: &str| HarnessError::Unsupported(format!("kernel symbol `{symbol}` {why}"));
    let mut chars = symbol.chars();
    match chars.next() {
        None => return Err(bad("is empty")),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => return Err(bad("is not a C identifier")),
        Some(_) => {}
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad("is not a C identifier"));
    }
    if symbol == "main" || symbol.to_ascii_lowercase().starts_with(INTERNAL_PREFIX) {
        return Err(bad("collides with a name of the driver"));
    }
    Ok(())
}

/// Escapes a string for a C string literal (tensor names are identifiers, but be safe).
fn c_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}

/// The driver's C source with `@name@` placeholders (`driver.c`).
const DRIVER_TEMPLATE: &str = include_str!("driver.c");

/// `template` with every `@name@` placeholder replaced by its value, in one
/// pass (inserted text is never scanned again); an unknown name is left as is.
fn fill_template(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let value =
            after.find('@').and_then(|end| values.iter().find(|(n, _)| *n == &after[..end]).map(|(n, v)| (n.len(), v)));
        match value {
            Some((len, v)) => {
                out.push_str(v);
                rest = &after[len + 1..];
            }
            None => {
                out.push('@');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The C source of the correctness driver for `workload` and kernel `symbol`.
///
/// Fails if the symbol is not a usable C identifier or a scalar has a type
/// the ABI does not pass (only f32 and f64 scalars are supported).
pub fn driver_source(workload: &Workload, symbol: &str) -> Result<String, HarnessError> {
    check_symbol(symbol)?;
    let args = workload.arg_tensors();
    let mut params: Vec<String> = Vec::new();
    let mut call_args: Vec<String> = Vec::new();
    let mut table = String::new();
    for (i, id) in args.iter().enumerate() {
        let t = workload.tensor(*id);
        let ty = t.dtype.c_type();
        params.push(format!("{ty} *t{i}"));
        call_args.push(format!("({ty} *){INTERNAL_PREFIX}args[{i}].data"));
        let bytes = t.len() * t.dtype.bytes();
        let _ = writeln!(
            table,
            "    {{{}, {bytes}u, {}, 0, 0, 0, 0}},",
            c_string(&t.name),
            i32::from(t.role == Role::Output)
        );
    }
    for (i, s) in workload.scalars.iter().enumerate() {
        match s.dtype {
            DType::F32 => {
                params.push(format!("float s{i}"));
                call_args.push(format!("{INTERNAL_PREFIX}f32(0x{:08x}u)", (s.value as f32).to_bits()));
            }
            DType::F64 => {
                params.push(format!("double s{i}"));
                call_args.push(format!("{INTERNAL_PREFIX}f64(0x{:016x}ull)", s.value.to_bits()));
            }
            other => {
                return Err(HarnessError::Unsupported(format!(
                    "scalar `{}` has type {other}; the kernel ABI passes only f32 and f64 scalars",
                    s.name
                )))
            }
        }
    }
    let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
    let call = call_args.join(",\n        ");
    let n_args = args.len();
    // A zero-length array is not C; keep one dummy entry when there are no arguments.
    if args.is_empty() {
        table.push_str("    {\"\", 0u, 0, 0, 0, 0, 0},\n");
    }

    let reference = workload.reference().replace("*/", "* /");
    let values: [(&str, String); 12] = [
        ("reference", reference),
        ("symbol", symbol.to_string()),
        ("params", params),
        ("n_args", n_args.to_string()),
        ("table", table),
        ("call", call),
        ("p", INTERNAL_PREFIX.to_string()),
        ("vl_prefix", VL_REPORT_PREFIX.to_string()),
        ("exit_io", EXIT_IO.to_string()),
        ("exit_fault", EXIT_KERNEL_FAULT.to_string()),
        ("exit_unstable", EXIT_UNSTABLE_OUTPUTS.to_string()),
        ("timing_helpers", super::timing::DRIVER_HELPERS.to_string()),
    ];
    let src = fill_template(DRIVER_TEMPLATE, &values);
    Ok(src)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_space::workload::load;

    #[test]
    fn scale_add_driver_declares_the_abi() {
        let w = load("scale_add:N=10").expect("loads");
        let src = driver_source(&w, "kern").expect("generates");
        assert!(src.contains("extern void kern(float *t0, float *t1, float *t2, float s0);"), "{src}");
        // s = 1.5 as exact bits.
        assert!(src.contains("scaletune_drv_f32(0x3fc00000u)"), "{src}");
        assert!(src.contains("{\"Y\", 40u, 1, 0, 0, 0, 0},"), "{src}");
        assert!(src.contains("#define SCALETUNE_DRV_GUARD 64"), "{src}");
    }

    #[test]
    fn templates_are_filled_in_one_pass() {
        let values = [("a", "@b@".to_string()), ("b", "B".to_string())];
        assert_eq!(fill_template("x @a@ y @b@ z @c@ @", &values), "x @b@ y B z @c@ @");
        assert_eq!(fill_template("no placeholders", &values), "no placeholders");
        assert_eq!(fill_template("a@b", &values), "a@b");
    }

    #[test]
    fn bad_symbols_are_rejected() {
        let w = load("scale_add:N=10").expect("loads");
        for s in ["", "1abc", "a-b", "main", "scaletune_drv_x", "a b"] {
            assert!(matches!(driver_source(&w, s), Err(HarnessError::Unsupported(_))), "{s:?}");
        }
        assert!(driver_source(&w, "_ok9").is_ok());
    }
}
