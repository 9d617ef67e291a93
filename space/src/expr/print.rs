//! Text form of expressions: `i0*4 + i1`, `ceildiv(131, 4*vscale)`.

use super::Expr;
use crate::ids::{TensorId, VarId};
use std::fmt;

/// An expression paired with the names of its variables and tensors.
pub struct ExprDisplay<'a> {
    expr: &'a Expr,
    var: &'a dyn Fn(VarId) -> String,
    tensor: &'a dyn Fn(TensorId) -> String,
}

impl Expr {
    /// Displays the expression using the given naming functions.
    pub fn display<'a>(
        &'a self,
        var: &'a dyn Fn(VarId) -> String,
        tensor: &'a dyn Fn(TensorId) -> String,
    ) -> ExprDisplay<'a> {
        ExprDisplay { expr: self, var, tensor }
    }
}

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Add(..) | Expr::Sub(..) => 1,
        Expr::Mul(..) => 2,
        Expr::Int(v) if *v < 0 => 1,
        _ => 3,
    }
}

impl ExprDisplay<'_> {
    fn write(&self, e: &Expr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |x: &Expr, min: u8, f: &mut fmt::Formatter<'_>| -> fmt::Result {
            if prec(x) < min {
                f.write_str("(")?;
                self.write(x, f)?;
                f.write_str(")")
            } else {
                self.write(x, f)
            }
        };
        let call = |name: &str, a: &Expr, b: &Expr, f: &mut fmt::Formatter<'_>| -> fmt::Result {
            write!(f, "{name}(")?;
            self.write(a, f)?;
            f.write_str(", ")?;
            self.write(b, f)?;
            f.write_str(")")
        };
        match e {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Var(v) => f.write_str(&(self.var)(*v)),
            Expr::VScale => f.write_str("vscale"),
            Expr::Add(a, b) => {
                sub(a, 1, f)?;
                f.write_str(" + ")?;
                sub(b, 2, f)
            }
            Expr::Sub(a, b) => {
                sub(a, 1, f)?;
                f.write_str(" - ")?;
                sub(b, 2, f)
            }
            Expr::Mul(a, b) => {
                sub(a, 2, f)?;
                f.write_str("*")?;
                sub(b, 3, f)
            }
            Expr::FloorDiv(a, b) => call("floordiv", a, b, f),
            Expr::FloorMod(a, b) => call("floormod", a, b, f),
            Expr::CeilDiv(a, b) => call("ceildiv", a, b, f),
            Expr::Min(a, b) => call("min", a, b, f),
            Expr::Max(a, b) => call("max", a, b, f),
            Expr::Load(t, idx) => {
                f.write_str(&(self.tensor)(*t))?;
                f.write_str("[")?;
                for (i, x) in idx.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    self.write(x, f)?;
                }
                f.write_str("]")
            }
        }
    }
}

impl fmt::Display for ExprDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(self.expr, f)
    }
}
