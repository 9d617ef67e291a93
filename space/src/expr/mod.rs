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
use std::sync::Arc;

/// The variables of an expression ([`Expr::vars`]).
pub type Vars = smallvec::SmallVec<[VarId; 8]>;

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
    Add(Arc<Expr>, Arc<Expr>),
    /// `a - b`.
    Sub(Arc<Expr>, Arc<Expr>),
    /// `a * b`.
    Mul(Arc<Expr>, Arc<Expr>),
    /// `floor(a / b)`.
    FloorDiv(Arc<Expr>, Arc<Expr>),
    /// `a - b * floor(a / b)`.
    FloorMod(Arc<Expr>, Arc<Expr>),
    /// `ceil(a / b)` for positive `b`.
    CeilDiv(Arc<Expr>, Arc<Expr>),
    /// `min(a, b)`.
    Min(Arc<Expr>, Arc<Expr>),
    /// `max(a, b)`.
    Max(Arc<Expr>, Arc<Expr>),
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
            Expr::Mul(Arc::new(Expr::Int(c)), Arc::new(Expr::VScale))
        }
    }

    /// `floordiv(self, b)`.
    pub fn floordiv(self, b: Expr) -> Expr {
        Expr::FloorDiv(Arc::new(self), Arc::new(b))
    }

    /// `floormod(self, b)`.
    pub fn floormod(self, b: Expr) -> Expr {
        Expr::FloorMod(Arc::new(self), Arc::new(b))
    }

    /// `ceildiv(self, b)`.
    pub fn ceildiv(self, b: Expr) -> Expr {
        Expr::CeilDiv(Arc::new(self), Arc::new(b))
    }

    /// `min(self, b)`.
    pub fn min(self, b: Expr) -> Expr {
        Expr::Min(Arc::new(self), Arc::new(b))
    }

    /// `max(self, b)`.
    pub fn max(self, b: Expr) -> Expr {
        Expr::Max(Arc::new(self), Arc::new(b))
    }

    /// The constant value, if this is a literal.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The operands of this node, by arity.
    fn parts(&self) -> Parts<'_> {
        match self {
            Expr::Int(_) | Expr::Var(_) | Expr::VScale => Parts::Leaf,
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::FloorDiv(a, b)
            | Expr::FloorMod(a, b)
            | Expr::CeilDiv(a, b)
            | Expr::Min(a, b)
            | Expr::Max(a, b) => Parts::Pair(a, b),
            Expr::Load(_, idx) => Parts::List(idx),
        }
    }

    /// The direct sub-expressions.
    pub fn children(&self) -> impl Iterator<Item = &Expr> + '_ {
        let (pair, list): (Option<[&Expr; 2]>, &[Expr]) = match self.parts() {
            Parts::Leaf => (None, &[]),
            Parts::Pair(a, b) => (Some([a, b]), &[]),
            Parts::List(l) => (None, l),
        };
        pair.into_iter().flatten().chain(list)
    }

    /// True if `pred` holds for this node or any sub-expression.
    pub fn any<F: Fn(&Expr) -> bool + ?Sized>(&self, pred: &F) -> bool {
        pred(self)
            || match self.parts() {
                Parts::Leaf => false,
                Parts::Pair(a, b) => a.any(pred) || b.any(pred),
                Parts::List(l) => l.iter().any(|i| i.any(pred)),
            }
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

    /// Every variable that occurs, in first-occurrence order, without
    /// repeats (inline up to eight: index expressions have a handful).
    pub fn vars(&self) -> Vars {
        let mut out = Vars::new();
        self.for_each_var(&mut |v| {
            if !out.contains(&v) {
                out.push(v);
            }
        });
        out
    }

    /// Calls `f` on every occurrence of a variable, left to right (without
    /// allocating, unlike [`Expr::vars`]).
    pub fn for_each_var(&self, f: &mut impl FnMut(VarId)) {
        match self.parts() {
            Parts::Leaf => {
                if let Expr::Var(v) = self {
                    f(*v)
                }
            }
            Parts::Pair(a, b) => {
                a.for_each_var(f);
                b.for_each_var(f);
            }
            Parts::List(l) => l.iter().for_each(|i| i.for_each_var(f)),
        }
    }

    /// Rebuilds the expression bottom-up, replacing every leaf (`Int`,
    /// `Var`, `VScale`) for which `f` returns an expression. Sub-trees with
    /// no replaced leaf are shared with `self`, not copied.
    pub fn map_leaves(&self, f: &dyn Fn(&Expr) -> Option<Expr>) -> Expr {
        self.map_leaves_changed(f).unwrap_or_else(|| self.clone())
    }

    /// [`Expr::map_leaves`], or `None` when no leaf was replaced.
    fn map_leaves_changed(&self, f: &dyn Fn(&Expr) -> Option<Expr>) -> Option<Expr> {
        let pair = |a: &Arc<Expr>, b: &Arc<Expr>| -> Option<(Arc<Expr>, Arc<Expr>)> {
            match (a.map_leaves_changed(f), b.map_leaves_changed(f)) {
                (None, None) => None,
                (x, y) => Some((x.map_or_else(|| Arc::clone(a), Arc::new), y.map_or_else(|| Arc::clone(b), Arc::new))),
            }
        };
        Some(match self {
            Expr::Int(_) | Expr::Var(_) | Expr::VScale => return f(self),
            Expr::Add(a, b) => pair(a, b).map(|(a, b)| Expr::Add(a, b))?,
            Expr::Sub(a, b) => pair(a, b).map(|(a, b)| Expr::Sub(a, b))?,
            Expr::Mul(a, b) => pair(a, b).map(|(a, b)| Expr::Mul(a, b))?,
            Expr::FloorDiv(a, b) => pair(a, b).map(|(a, b)| Expr::FloorDiv(a, b))?,
            Expr::FloorMod(a, b) => pair(a, b).map(|(a, b)| Expr::FloorMod(a, b))?,
            Expr::CeilDiv(a, b) => pair(a, b).map(|(a, b)| Expr::CeilDiv(a, b))?,
            Expr::Min(a, b) => pair(a, b).map(|(a, b)| Expr::Min(a, b))?,
            Expr::Max(a, b) => pair(a, b).map(|(a, b)| Expr::Max(a, b))?,
            Expr::Load(t, idx) => {
                let changed: Vec<Option<Expr>> = idx.iter().map(|i| i.map_leaves_changed(f)).collect();
                if changed.iter().all(Option::is_none) {
                    return None;
                }
                Expr::Load(*t, changed.into_iter().zip(idx).map(|(c, i)| c.unwrap_or_else(|| i.clone())).collect())
            }
        })
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

/// The operands of an expression node, by arity (what the traversals match on).
enum Parts<'a> {
    /// A constant, variable or `vscale`.
    Leaf,
    /// A binary operation's operands.
    Pair(&'a Expr, &'a Expr),
    /// A load's indices.
    List(&'a [Expr]),
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
                Expr::$variant(Arc::new(self), Arc::new(rhs))
            }
        }
        impl std::ops::$trait<i64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: i64) -> Expr {
                Expr::$variant(Arc::new(self), Arc::new(Expr::Int(rhs)))
            }
        }
    };
}

bin_op!(Add, add, Add);
bin_op!(Sub, sub, Sub);
bin_op!(Mul, mul, Mul);
