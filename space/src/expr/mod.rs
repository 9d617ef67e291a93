//! Integer index expressions over variables and the symbol `vscale`.
//!
//! Loop extents, split factors, tensor indices and predicates are [`Expr`]s.
//! [`simplify`] puts an expression in a canonical polynomial form and proves
//! facts (a remainder is smaller than its divisor, a predicate always holds)
//! for every vscale the target allows, by interval arithmetic at each allowed
//! vscale value.

mod bounds;
mod memo;
mod parse;
mod poly;
mod print;
mod simplify;
#[cfg(test)]
mod tests;

pub use bounds::{bounds, eval, EvalError, RangeCtx};
pub use parse::{parse_expr, NameResolver};
pub use print::ExprDisplay;
pub use simplify::{linear_in, prove_le, prove_lt, simplify, Linear};

use crate::ids::{TensorId, VarId};
use serde::{Deserialize, Serialize};

/// An integer expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Expr {
    /// A constant.
    Int(i64),
    /// A loop or iteration variable.
    Var(VarId),
    /// The runtime vector-length multiplier.
    VScale,
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `floor(a / b)`.
    FloorDiv(Box<Expr>, Box<Expr>),
    /// `a - b * floor(a / b)`.
    FloorMod(Box<Expr>, Box<Expr>),
    /// `ceil(a / b)` for positive `b`.
    CeilDiv(Box<Expr>, Box<Expr>),
    /// `min(a, b)`.
    Min(Box<Expr>, Box<Expr>),
    /// `max(a, b)`.
    Max(Box<Expr>, Box<Expr>),
    /// An element of an integer tensor (indirect indexing).
    Load(TensorId, Vec<Expr>),
}

impl Expr {
    /// A variable.
    pub fn var(v: VarId) -> Expr {
        Expr::Var(v)
    }

    /// `c * vscale`.
    pub fn vscale_times(c: i64) -> Expr {
        if c == 1 {
            Expr::VScale
        } else {
            Expr::Mul(Box::new(Expr::Int(c)), Box::new(Expr::VScale))
        }
    }

    /// `floordiv(self, b)`.
    pub fn floordiv(self, b: Expr) -> Expr {
        Expr::FloorDiv(Box::new(self), Box::new(b))
    }

    /// `floormod(self, b)`.
    pub fn floormod(self, b: Expr) -> Expr {
        Expr::FloorMod(Box::new(self), Box::new(b))
    }

    /// `ceildiv(self, b)`.
    pub fn ceildiv(self, b: Expr) -> Expr {
        Expr::CeilDiv(Box::new(self), Box::new(b))
    }

    /// `min(self, b)`.
    pub fn min(self, b: Expr) -> Expr {
        Expr::Min(Box::new(self), Box::new(b))
    }

    /// `max(self, b)`.
    pub fn max(self, b: Expr) -> Expr {
        Expr::Max(Box::new(self), Box::new(b))
    }

    /// The constant value, if this is a literal.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The direct sub-expressions.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Int(_) | Expr::Var(_) | Expr::VScale => Vec::new(),
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::FloorDiv(a, b)
            | Expr::FloorMod(a, b)
            | Expr::CeilDiv(a, b)
            | Expr::Min(a, b)
            | Expr::Max(a, b) => vec![a, b],
            Expr::Load(_, idx) => idx.iter().collect(),
        }
    }

    /// True if `pred` holds for this node or any sub-expression.
    pub fn any(&self, pred: &dyn Fn(&Expr) -> bool) -> bool {
        pred(self) || self.children().into_iter().any(|c| c.any(pred))
    }

    /// True if the variable occurs.
    pub fn uses_var(&self, v: VarId) -> bool {
        self.any(&|e| matches!(e, Expr::Var(x) if *x == v))
    }

    /// True if `vscale` occurs.
    pub fn uses_vscale(&self) -> bool {
        self.any(&|e| matches!(e, Expr::VScale))
    }

    /// True if a tensor load occurs.
    pub fn has_load(&self) -> bool {
        self.any(&|e| matches!(e, Expr::Load(..)))
    }

    /// Every variable that occurs, in first-occurrence order, without repeats.
    pub fn vars(&self) -> Vec<VarId> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out
    }

    fn collect_vars(&self, out: &mut Vec<VarId>) {
        if let Expr::Var(v) = self {
            if !out.contains(v) {
                out.push(*v);
            }
        }
        for c in self.children() {
            c.collect_vars(out);
        }
    }

    /// Rebuilds the expression bottom-up, replacing every leaf (`Int`,
    /// `Var`, `VScale`) for which `f` returns an expression.
    pub fn map_leaves(&self, f: &dyn Fn(&Expr) -> Option<Expr>) -> Expr {
        let bx = |e: &Expr| Box::new(e.map_leaves(f));
        match self {
            Expr::Int(_) | Expr::Var(_) | Expr::VScale => f(self).unwrap_or_else(|| self.clone()),
            Expr::Add(a, b) => Expr::Add(bx(a), bx(b)),
            Expr::Sub(a, b) => Expr::Sub(bx(a), bx(b)),
            Expr::Mul(a, b) => Expr::Mul(bx(a), bx(b)),
            Expr::FloorDiv(a, b) => Expr::FloorDiv(bx(a), bx(b)),
            Expr::FloorMod(a, b) => Expr::FloorMod(bx(a), bx(b)),
            Expr::CeilDiv(a, b) => Expr::CeilDiv(bx(a), bx(b)),
            Expr::Min(a, b) => Expr::Min(bx(a), bx(b)),
            Expr::Max(a, b) => Expr::Max(bx(a), bx(b)),
            Expr::Load(t, idx) => Expr::Load(*t, idx.iter().map(|i| i.map_leaves(f)).collect()),
        }
    }

    /// Replaces variables for which `f` returns an expression.
    pub fn substitute(&self, f: &dyn Fn(VarId) -> Option<Expr>) -> Expr {
        self.map_leaves(&|e| match e {
            Expr::Var(v) => f(*v),
            _ => None,
        })
    }

    /// Replaces `vscale` by a constant.
    pub fn with_vscale(&self, vscale: i64) -> Expr {
        self.map_leaves(&|e| matches!(e, Expr::VScale).then_some(Expr::Int(vscale)))
    }
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::Int(v)
    }
}

impl From<VarId> for Expr {
    fn from(v: VarId) -> Expr {
        Expr::Var(v)
    }
}

macro_rules! bin_op {
    ($trait:ident, $method:ident, $variant:ident) => {
        impl std::ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::$variant(Box::new(self), Box::new(rhs))
            }
        }
        impl std::ops::$trait<i64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: i64) -> Expr {
                Expr::$variant(Box::new(self), Box::new(Expr::Int(rhs)))
            }
        }
    };
}

bin_op!(Add, add, Add);
bin_op!(Sub, sub, Sub);
bin_op!(Mul, mul, Mul);
