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

/// The C type of a tensor element.
fn c_elem_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "uint16_t",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I8 => "int8_t",
        DType::I32 => "int32_t",
    }
}

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
        let ty = c_elem_type(t.dtype);
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

    let mut src = String::new();
    let _ = write!(
        src,
        r#"/* Generated by scaletune-measure: correctness driver for `{reference}`, kernel `{symbol}`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/prctl.h>
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#endif

extern void {symbol}({params});

#define SCALETUNE_DRV_GUARD 64
#define SCALETUNE_DRV_GUARD_BYTE 0xA5
#define SCALETUNE_DRV_N_ARGS {n_args}

struct {p}arg {{
    const char *name;
    size_t bytes;
    int is_output;
    unsigned char *base;
    unsigned char *data;
    unsigned char *copy;
    unsigned char *first;
}};

static struct {p}arg {p}args[] = {{
{table}}};

static inline float {p}f32(uint32_t bits) {{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}}

static inline double {p}f64(uint64_t bits) {{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}}

{timing_helpers}
static void {p}report_vl(void) {{
#if defined(__aarch64__) && defined(__linux__)
    int r = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
    if (r >= 0) {{
        printf("{vl_prefix}%d\n", (r & 0xffff) * 8);
    }}
#elif defined(__riscv) && defined(__riscv_vector)
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb));
    printf("{vl_prefix}%lu\n", vlenb * 8);
#endif
    fflush(stdout);
}}

static size_t {p}padded(size_t bytes) {{
    return (bytes + SCALETUNE_DRV_GUARD - 1) / SCALETUNE_DRV_GUARD * SCALETUNE_DRV_GUARD;
}}

#define SCALETUNE_DRV_GUARD_INTACT (-1L - SCALETUNE_DRV_GUARD * 2)

/* The first damaged guard byte, as a byte offset from the tensor's start, or SCALETUNE_DRV_GUARD_INTACT. */
static long {p}guard_damage(const struct {p}arg *a) {{
    size_t total = SCALETUNE_DRV_GUARD + {p}padded(a->bytes) + SCALETUNE_DRV_GUARD;
    for (size_t b = 0; b < SCALETUNE_DRV_GUARD; b++) {{
        if (a->base[b] != SCALETUNE_DRV_GUARD_BYTE) {{
            return (long)b - (long)SCALETUNE_DRV_GUARD;
        }}
    }}
    for (size_t b = SCALETUNE_DRV_GUARD + a->bytes; b < total; b++) {{
        if (a->base[b] != SCALETUNE_DRV_GUARD_BYTE) {{
            return (long)b - (long)SCALETUNE_DRV_GUARD;
        }}
    }}
    return SCALETUNE_DRV_GUARD_INTACT;
}}

/* The correctness call and every timed call. */
static void {p}call(void) {{
    {symbol}(
        {call});
}}

/* Checks the guard bytes and that the inputs are unchanged; 1 (after messages on stderr) on a fault. */
static int {p}check_args(const char *when) {{
    int fault = 0;
    for (int i = 0; i < SCALETUNE_DRV_N_ARGS; i++) {{
        struct {p}arg *a = &{p}args[i];
        long bad = {p}guard_damage(a);
        if (bad != SCALETUNE_DRV_GUARD_INTACT) {{
            fprintf(stderr, "scaletune-driver: kernel wrote outside tensor `%s` (byte offset %ld, size %zu) in %s\n",
                    a->name, bad, a->bytes, when);
            fault = 1;
        }}
        if (a->copy && memcmp(a->copy, a->data, a->bytes) != 0) {{
            fprintf(stderr, "scaletune-driver: kernel modified input tensor `%s` in %s\n", a->name, when);
            fault = 1;
        }}
    }}
    return fault;
}}

int main(int argc, char **argv) {{
    struct {p}timing timing;
    if (argc < 3 || {p}parse_timing(argc - 3, argv + 3, &timing) != 0) {{
        fprintf(stderr, "scaletune-driver: usage: %s INPUT OUTPUT [--warmup N] [--number N] [--repeat N] "
                        "[--min-repeat-ms N] [--flush-cache] [--pin-core N]\n", argv[0]);
        return {exit_io};
    }}
    if (timing.pin_core >= 0 && {p}pin(timing.pin_core) != 0) {{
        return {exit_io};
    }}
    {p}report_vl();

    FILE *in = fopen(argv[1], "rb");
    if (!in) {{
        fprintf(stderr, "scaletune-driver: cannot open input file %s\n", argv[1]);
        return {exit_io};
    }}
    for (int i = 0; i < SCALETUNE_DRV_N_ARGS; i++) {{
        struct {p}arg *a = &{p}args[i];
        size_t total = SCALETUNE_DRV_GUARD + {p}padded(a->bytes) + SCALETUNE_DRV_GUARD;
        a->base = (unsigned char *)aligned_alloc(SCALETUNE_DRV_GUARD, total);
        if (!a->base) {{
            fprintf(stderr, "scaletune-driver: cannot allocate %zu bytes for tensor `%s`\n", total, a->name);
            return {exit_io};
        }}
        memset(a->base, SCALETUNE_DRV_GUARD_BYTE, total);
        a->data = a->base + SCALETUNE_DRV_GUARD;
        if (a->bytes > 0 && fread(a->data, 1, a->bytes, in) != a->bytes) {{
            fprintf(stderr, "scaletune-driver: input file too short while reading tensor `%s` (%zu bytes)\n",
                    a->name, a->bytes);
            return {exit_io};
        }}
        if (!a->is_output && a->bytes > 0) {{
            a->copy = (unsigned char *)malloc(a->bytes);
            if (!a->copy) {{
                fprintf(stderr, "scaletune-driver: cannot allocate a copy of tensor `%s`\n", a->name);
                return {exit_io};
            }}
            memcpy(a->copy, a->data, a->bytes);
        }}
    }}
    if (fgetc(in) != EOF) {{
        fprintf(stderr, "scaletune-driver: input file is longer than the arguments\n");
        return {exit_io};
    }}
    if (fclose(in) != 0) {{
        fprintf(stderr, "scaletune-driver: cannot close input file\n");
        return {exit_io};
    }}

    {p}call();
    if ({p}check_args("the first call")) {{
        return {exit_fault};
    }}

    /* The outputs of the first call are the ones checked: written before any timed call. */
    FILE *out = fopen(argv[2], "wb");
    if (!out) {{
        fprintf(stderr, "scaletune-driver: cannot create output file %s\n", argv[2]);
        return {exit_io};
    }}
    for (int i = 0; i < SCALETUNE_DRV_N_ARGS; i++) {{
        struct {p}arg *a = &{p}args[i];
        if (a->is_output && a->bytes > 0 && fwrite(a->data, 1, a->bytes, out) != a->bytes) {{
            fprintf(stderr, "scaletune-driver: cannot write tensor `%s` to the output file\n", a->name);
            return {exit_io};
        }}
    }}
    if (fclose(out) != 0) {{
        fprintf(stderr, "scaletune-driver: cannot close output file\n");
        return {exit_io};
    }}

    if (timing.repeat > 0) {{
        for (int i = 0; i < SCALETUNE_DRV_N_ARGS; i++) {{
            struct {p}arg *a = &{p}args[i];
            if (a->is_output && a->bytes > 0) {{
                a->first = (unsigned char *)malloc(a->bytes);
                if (!a->first) {{
                    fprintf(stderr, "scaletune-driver: cannot allocate a copy of output `%s`\n", a->name);
                    return {exit_io};
                }}
                memcpy(a->first, a->data, a->bytes);
            }}
        }}
        if ({p}time_calls({p}call, &timing) != 0) {{
            return {exit_io};
        }}
        if ({p}check_args("a timed call")) {{
            return {exit_fault};
        }}
        int unstable = 0;
        for (int i = 0; i < SCALETUNE_DRV_N_ARGS; i++) {{
            struct {p}arg *a = &{p}args[i];
            if (a->first && memcmp(a->first, a->data, a->bytes) != 0) {{
                fprintf(stderr, "scaletune-driver: the timed calls left output `%s` different from the first call's\n",
                        a->name);
                unstable = 1;
            }}
        }}
        if (unstable) {{
            return {exit_unstable};
        }}
    }}
    return 0;
}}
"#,
        reference = workload.reference().replace("*/", "* /"),
        p = INTERNAL_PREFIX,
        vl_prefix = VL_REPORT_PREFIX,
        exit_io = EXIT_IO,
        exit_fault = EXIT_KERNEL_FAULT,
        exit_unstable = EXIT_UNSTABLE_OUTPUTS,
        timing_helpers = super::timing::DRIVER_HELPERS,
    );
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
    fn bad_symbols_are_rejected() {
        let w = load("scale_add:N=10").expect("loads");
        for s in ["", "1abc", "a-b", "main", "scaletune_drv_x", "a b"] {
            assert!(matches!(driver_source(&w, s), Err(HarnessError::Unsupported(_))), "{s:?}");
        }
        assert!(driver_source(&w, "_ok9").is_ok());
    }
}
