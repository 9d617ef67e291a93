//! Text rendering of workloads and statements.

use super::*;
use std::fmt::Write;

/// Names used when printing expressions and values.
pub struct Names<'a> {
    /// Variable names.
    pub var: &'a dyn Fn(VarIdT) -> String,
    /// Tensor names.
    pub tensor: &'a dyn Fn(TensorId) -> String,
    /// Scalar argument names.
    pub scalar: &'a dyn Fn(usize) -> String,
}

/// Renders an access `T[e0, e1]`.
pub fn access_text(a: &Access, n: &Names) -> String {
    let idx: Vec<String> = a.indices.iter().map(|e| e.display(n.var, n.tensor).to_string()).collect();
    format!("{}[{}]", (n.tensor)(a.tensor), idx.join(", "))
}

/// Renders a value expression in the statement syntax (parenthesized binary operations).
pub fn value_text(v: &Value, n: &Names) -> String {
    match v {
        Value::Const(c, d) => {
            if d.is_float() {
                format!("{c:?}")
            } else {
                format!("{}", *c as i64)
            }
        }
        Value::Scalar(i, _) => (n.scalar)(*i),
        Value::Read(a, _) => access_text(a, n),
        Value::Bin(op, a, b) => {
            let (a, b) = (value_text(a, n), value_text(b, n));
            match op {
                BinOp::Add => format!("({a} + {b})"),
                BinOp::Sub => format!("({a} - {b})"),
                BinOp::Mul => format!("({a} * {b})"),
                BinOp::Div => format!("({a} / {b})"),
                BinOp::Max => format!("max({a}, {b})"),
                BinOp::Min => format!("min({a}, {b})"),
            }
        }
        Value::Un(u, a) => format!("{}({})", u.name(), value_text(a, n)),
        Value::Cast(d, a) => format!("{d}({})", value_text(a, n)),
    }
}

impl Workload {
    /// A multi-line human description (for `scaletune workloads NAME`).
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{} — {}", self.reference(), self.description);
        for t in &self.tensors {
            let role = match t.role {
                Role::Input => "input",
                Role::Output => "output",
                Role::Temp => "temp",
            };
            let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            let range = t.range.map(|(lo, hi)| format!(", values in [{lo}, {hi})")).unwrap_or_default();
            let _ = writeln!(s, "  tensor {}: {}[{}] {role}{range}", t.name, t.dtype, shape.join(", "));
        }
        for sc in &self.scalars {
            let _ = writeln!(s, "  scalar {}: {} = {}", sc.name, sc.dtype, sc.value);
        }
        for st in &self.stmts {
            let axes: Vec<String> = st
                .axes
                .iter()
                .map(|a| {
                    format!("{}:{}{}", a.name, a.extent, if a.kind == AxisKind::Reduce { " (reduce)" } else { "" })
                })
                .collect();
            let _ = writeln!(s, "  block {}: {}    axes {}", st.name, st.text, axes.join(", "));
        }
        s
    }
}

type VarIdT = crate::ids::VarId;
