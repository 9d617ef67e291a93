//! Text rendering of workloads and statements.

use super::*;
use std::fmt::Write;

impl Workload {
    /// Renders an access with axis names from `axes`.
    pub fn access_text(&self, a: &Access, var: &dyn Fn(VarIdT) -> String) -> String {
        let tname = |t: TensorId| self.tensor(t).name.clone();
        let idx: Vec<String> = a.indices.iter().map(|e| e.display(var, &tname).to_string()).collect();
        format!("{}[{}]", self.tensor(a.tensor).name, idx.join(", "))
    }

    /// Renders a value expression.
    pub fn value_text(&self, v: &Value, var: &dyn Fn(VarIdT) -> String) -> String {
        match v {
            Value::Const(c, d) => {
                if d.is_float() {
                    format!("{c:?}")
                } else {
                    format!("{}", *c as i64)
                }
            }
            Value::Scalar(i, _) => self.scalars[*i].name.clone(),
            Value::Read(a, _) => self.access_text(a, var),
            Value::Bin(op, a, b) => {
                let (a, b) = (self.value_text(a, var), self.value_text(b, var));
                match op {
                    BinOp::Add => format!("({a} + {b})"),
                    BinOp::Sub => format!("({a} - {b})"),
                    BinOp::Mul => format!("({a} * {b})"),
                    BinOp::Div => format!("({a} / {b})"),
                    BinOp::Max => format!("max({a}, {b})"),
                    BinOp::Min => format!("min({a}, {b})"),
                }
            }
            Value::Un(u, a) => format!("{}({})", u.name(), self.value_text(a, var)),
            Value::Cast(d, a) => format!("{d}({})", self.value_text(a, var)),
        }
    }

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
                .map(|a| format!("{}:{}{}", a.name, a.extent, if a.kind == AxisKind::Reduce { " (reduce)" } else { "" }))
                .collect();
            let _ = writeln!(s, "  block {}: {}    axes {}", st.name, st.text, axes.join(", "));
        }
        s
    }
}

type VarIdT = crate::ids::VarId;
