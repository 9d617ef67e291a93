//! The texts `scaletune build` writes beside the libraries: the C header and the Rust file of `extern "C"` declarations.
//!
//! Both are functions of the manifest and the chosen records only (no
//! paths, times or host names), so the same database and manifest give the
//! same bytes. Both name a kernel's parameters alike ([`param_names`]: a
//! tensor named `fn` or `int` is the parameter `fn_` or `int_`, and the
//! comment says which tensor it is), and every text in a comment goes
//! through [`comment_text`] ([`c_comment_text`] in C).

use super::manifest::KernelSpec;
use super::names::{c_comment_text, comment_text, param_names};
use crate::tune::objective::ObjectiveKind;
use crate::tune::summary::format_objective;
use scaletune_database::Record;
use scaletune_space::workload::{Role, Workload};
use scaletune_space::DType;
use std::fmt::Write as _;

/// What the texts say about one built kernel.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    /// The manifest's kernel.
    pub spec: &'a KernelSpec,
    /// The record replayed (`None`: the default schedule).
    pub record: Option<&'a Record>,
    /// The library file holding it.
    pub library: String,
    /// The only vector length the object runs at, if it is fixed-length code.
    pub built_for_vl: Option<u32>,
}

/// One kernel parameter: name, C type, Rust type, and its description.
struct Param {
    /// The parameter's name in both files.
    name: String,
    /// What it was named in the workload, if the parameter is named otherwise (``tensor `fn` ``).
    was: Option<String>,
    c: String,
    rust: String,
    about: String,
}

impl Param {
    /// The parameter as the comments name it: `fn_ (tensor `fn`)` for a renamed one.
    fn label(&self) -> String {
        match &self.was {
            Some(w) => c_comment_text(&format!("{} ({w})", self.name)).into_owned(),
            None => self.name.clone(),
        }
    }
}

fn rust_elem(d: DType) -> &'static str {
    match d {
        DType::F16 | DType::BF16 => "u16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I8 => "i8",
        DType::I32 => "i32",
    }
}

/// The kernel's parameters in ABI order: tensors (inputs and outputs) in
/// declared order, then scalars; named by [`param_names`] (`guard`: the
/// header's include guard).
fn params(w: &Workload, guard: &str) -> Vec<Param> {
    let mut out = Vec::new();
    for id in w.arg_tensors() {
        let t = w.tensor(id);
        let output = t.role == Role::Output;
        let shape: Vec<String> = t.shape.iter().map(i64::to_string).collect();
        let mut note = match t.dtype {
            DType::F16 => ", IEEE half bits".to_string(),
            DType::BF16 => ", bfloat16 bits (the upper half of an f32)".to_string(),
            _ => String::new(),
        };
        if let Some((lo, hi)) = t.range {
            note.push_str(&format!(", every value in [{lo}, {hi})"));
        }
        out.push(Param {
            name: t.name.clone(),
            was: Some(format!("tensor `{}`", t.name)),
            c: format!("{}{} *", if output { "" } else { "const " }, t.dtype.c_type()),
            rust: format!("{} {}", if output { "*mut" } else { "*const" }, rust_elem(t.dtype)),
            about: format!("{}[{}] {}{}", t.dtype, shape.join(", "), if output { "output" } else { "input" }, note),
        });
    }
    for s in &w.scalars {
        let (c, rust) = if s.dtype == DType::F64 { ("double ", "f64") } else { ("float ", "f32") };
        out.push(Param {
            name: s.name.clone(),
            was: Some(format!("scalar `{}`", s.name)),
            c: c.into(),
            rust: rust.into(),
            about: format!("{} scalar (the workload's value: {})", s.dtype, s.value),
        });
    }
    let given: Vec<&str> = out.iter().map(|p| p.name.as_str()).collect();
    let names = param_names(&given, guard);
    for (p, name) in out.iter_mut().zip(names) {
        if p.name == name {
            p.was = None;
        }
        p.name = name;
    }
    out
}

/// The record's figures, one line.
fn figures(e: &Entry<'_>) -> String {
    let Some(r) = e.record else {
        return "default schedule (the unscheduled loop nest): no usable record in the database".into();
    };
    let kind = match r.objective_kind.as_str() {
        "time_s" => Some(ObjectiveKind::Time),
        "est_cycles" => Some(ObjectiveKind::Cycles),
        "instructions" => Some(ObjectiveKind::Instructions),
        _ => None,
    };
    let value = match (kind, r.best_objective()) {
        (Some(k), Some(x)) => format_objective(k, x),
        (None, Some(x)) => format!("{x:e} {}", r.objective_kind),
        (_, None) => "-".into(),
    };
    let gflops = match (kind, r.best_objective(), e.spec.workload.flops()) {
        (Some(ObjectiveKind::Time), Some(x), Some(f)) if x > 0.0 => format!(", {:.2} GFLOPS", f / x / 1e9),
        _ => String::new(),
    };
    format!("record {}: {value}{gflops} ({} runner, VLs [{}])", r.id, r.runner, r.vl_set)
}

/// The schedule's trace lines (what was measured, as stored).
fn trace_lines(e: &Entry<'_>) -> Vec<String> {
    match e.record {
        Some(r) if !r.trace.trim().is_empty() => r.trace.lines().map(str::to_string).collect(),
        Some(_) => vec!["(the unscheduled loop nest)".into()],
        None => Vec::new(),
    }
}

fn where_built(e: &Entry<'_>) -> String {
    let vl = e.built_for_vl.map_or(String::new(), |v| format!("; fixed-length code, runs only at VL {v} bits"));
    format!("{} on {} in {}{vl}", e.spec.workload.reference(), e.spec.target.name, e.library)
}

/// The C header.
pub fn header(entries: &[Entry<'_>], guard: &str, manifest: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "/* Generated by `scaletune build` from {}; do not edit. */", c_comment_text(manifest));
    let _ = writeln!(s, "#ifndef {guard}\n#define {guard}\n\n#include <stdint.h>\n");
    s.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    for e in entries {
        let ps = params(&e.spec.workload, guard);
        let _ = writeln!(s, "\n/*\n * {}: {}", e.spec.name, c_comment_text(&where_built(e)));
        for p in &ps {
            let _ = writeln!(s, " *   {}: {}", p.label(), p.about);
        }
        let _ = writeln!(s, " * schedule: {}", c_comment_text(&figures(e)));
        for l in trace_lines(e) {
            let _ = writeln!(s, " *   {}", c_comment_text(&l));
        }
        s.push_str(" */\n");
        let args: Vec<String> = ps.iter().map(|p| format!("{}{}", p.c, p.name)).collect();
        let args = if args.is_empty() { "void".to_string() } else { args.join(", ") };
        let _ = writeln!(s, "void {}({args});", e.spec.name);
    }
    let _ = writeln!(s, "\n#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {guard} */");
    s
}

/// The Rust declarations (for `include!`: no inner attributes or inner doc
/// comments); `guard` is the header's include guard, so that both files name
/// the parameters alike.
pub fn rust(entries: &[Entry<'_>], guard: &str, manifest: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// Generated by `scaletune build` from {}; do not edit.", comment_text(manifest));
    s.push_str("#[allow(non_snake_case, dead_code)]\nunsafe extern \"C\" {\n");
    for (i, e) in entries.iter().enumerate() {
        let ps = params(&e.spec.workload, guard);
        if i > 0 {
            s.push('\n');
        }
        let _ = writeln!(s, "    /// `{}`: {}", e.spec.name, comment_text(&where_built(e)));
        let _ = writeln!(s, "    ///");
        for p in &ps {
            let was = p.was.as_ref().map_or(String::new(), |w| format!(" ({})", comment_text(w)));
            let _ = writeln!(s, "    /// - `{}`{was}: {}", p.name, p.about);
        }
        let _ = writeln!(s, "    ///\n    /// Schedule: {}", comment_text(&figures(e)));
        let lines = trace_lines(e);
        if !lines.is_empty() {
            s.push_str("    ///\n    /// ```text\n");
            for l in lines {
                let _ = writeln!(s, "    /// {}", comment_text(&l));
            }
            s.push_str("    /// ```\n");
        }
        let args: Vec<String> = ps.iter().map(|p| format!("{}: {}", p.name, p.rust)).collect();
        let _ = writeln!(s, "    pub fn {}({});", e.spec.name, args.join(", "));
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::params;
    use expect_test::expect;

    #[test]
    fn sixteen_bit_float_tensors_travel_as_their_bits() {
        let mut shown = String::new();
        for name in ["matmul_f16:M=2,N=3,K=4", "matmul_bf16:M=2,N=3,K=4"] {
            let w = scaletune_space::workload::load(name).expect("workload");
            for p in params(&w, "G_H") {
                shown.push_str(&format!("{} | {}{} | {} | {}\n", name, p.c, p.name, p.rust, p.about));
            }
        }
        expect![[r#"
            matmul_f16:M=2,N=3,K=4 | const uint16_t *A | *const u16 | f16[2, 4] input, IEEE half bits
            matmul_f16:M=2,N=3,K=4 | const uint16_t *B | *const u16 | f16[4, 3] input, IEEE half bits
            matmul_f16:M=2,N=3,K=4 | float *C | *mut f32 | f32[2, 3] output
            matmul_bf16:M=2,N=3,K=4 | const uint16_t *A | *const u16 | bf16[2, 4] input, bfloat16 bits (the upper half of an f32)
            matmul_bf16:M=2,N=3,K=4 | const uint16_t *B | *const u16 | bf16[4, 3] input, bfloat16 bits (the upper half of an f32)
            matmul_bf16:M=2,N=3,K=4 | float *C | *mut f32 | f32[2, 3] output
        "#]].assert_eq(&shown);
    }
}
