//! The registers operations and statements read, for passes that analyse or rewrite them.

use super::types::{Op, Reg, Stmt};
use smallvec::SmallVec;

/// The registers one operation or statement reads (at most four, kept inline).
pub type Operands<T> = SmallVec<[T; 4]>;

impl Op {
    /// The registers this operation reads, in operand order.
    pub fn operands(&self) -> Operands<Reg> {
        match self {
            Op::Const(_) | Op::VScale | Op::Step(_) => Operands::new(),
            Op::Copy(a) | Op::Un(_, a) | Op::Cast(a, _) | Op::Bitcast(a, _) | Op::Splat(a, _) | Op::Reduce(_, a) => {
                smallvec::smallvec![*a]
            }
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Extract(a, b) | Op::Interleave(a, b) => {
                smallvec::smallvec![*a, *b]
            }
            Op::Fma(a, b, c) | Op::Select(a, b, c) => smallvec::smallvec![*a, *b, *c],
            Op::ActiveLaneMask { base, bound, .. } => smallvec::smallvec![*base, *bound],
            Op::ZaReadVertical { slice, .. } => smallvec::smallvec![*slice],
            Op::Load { index, .. } => smallvec::smallvec![*index],
            Op::VLoad { base, mask, .. } => std::iter::once(*base).chain(*mask).collect(),
            Op::Gather { indices, mask, .. } => std::iter::once(*indices).chain(*mask).collect(),
        }
    }

    /// Mutable references to the registers this operation reads.
    pub fn operands_mut(&mut self) -> Operands<&mut Reg> {
        match self {
            Op::Const(_) | Op::VScale | Op::Step(_) => Operands::new(),
            Op::Copy(a) | Op::Un(_, a) | Op::Cast(a, _) | Op::Bitcast(a, _) | Op::Splat(a, _) | Op::Reduce(_, a) => {
                smallvec::smallvec![a]
            }
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Extract(a, b) | Op::Interleave(a, b) => {
                smallvec::smallvec![a, b]
            }
            Op::Fma(a, b, c) | Op::Select(a, b, c) => smallvec::smallvec![a, b, c],
            Op::ActiveLaneMask { base, bound, .. } => smallvec::smallvec![base, bound],
            Op::ZaReadVertical { slice, .. } => smallvec::smallvec![slice],
            Op::Load { index, .. } => smallvec::smallvec![index],
            Op::VLoad { base, mask, .. } => std::iter::once(base).chain(mask.as_mut()).collect(),
            Op::Gather { indices, mask, .. } => std::iter::once(indices).chain(mask.as_mut()).collect(),
        }
    }
}

impl Stmt {
    /// The registers this statement itself reads (not those of nested bodies).
    pub fn operands(&self) -> Operands<Reg> {
        match self {
            Stmt::Assign { op, .. } => op.operands(),
            Stmt::Store { index, value, .. } => smallvec::smallvec![*index, *value],
            Stmt::VStore { base, value, mask, .. } => [*base, *value].into_iter().chain(*mask).collect(),
            Stmt::Scatter { indices, value, mask, .. } => [*indices, *value].into_iter().chain(*mask).collect(),
            Stmt::Loop { start, end, .. } => smallvec::smallvec![*start, *end],
            Stmt::If { cond, .. } => smallvec::smallvec![*cond],
            Stmt::ZaZero { .. } => Operands::new(),
            Stmt::ZaLoad { row, base, mask, .. } | Stmt::ZaStore { row, base, mask, .. } => {
                [*row, *base].into_iter().chain(*mask).collect()
            }
            Stmt::Mopa { a, b, a_mask, b_mask, .. } => [*a, *b].into_iter().chain(*a_mask).chain(*b_mask).collect(),
        }
    }

    /// Mutable references to the registers this statement itself reads.
    pub fn operands_mut(&mut self) -> Operands<&mut Reg> {
        match self {
            Stmt::Assign { op, .. } => op.operands_mut(),
            Stmt::Store { index, value, .. } => smallvec::smallvec![index, value],
            Stmt::VStore { base, value, mask, .. } => [base, value].into_iter().chain(mask.as_mut()).collect(),
            Stmt::Scatter { indices, value, mask, .. } => [indices, value].into_iter().chain(mask.as_mut()).collect(),
            Stmt::Loop { start, end, .. } => smallvec::smallvec![start, end],
            Stmt::If { cond, .. } => smallvec::smallvec![cond],
            Stmt::ZaZero { .. } => Operands::new(),
            Stmt::ZaLoad { row, base, mask, .. } | Stmt::ZaStore { row, base, mask, .. } => {
                [row, base].into_iter().chain(mask.as_mut()).collect()
            }
            Stmt::Mopa { a, b, a_mask, b_mask, .. } => {
                [a, b].into_iter().chain(a_mask.as_mut()).chain(b_mask.as_mut()).collect()
            }
        }
    }

    /// The register this statement assigns (a loop assigns its variable).
    pub fn def(&self) -> Option<Reg> {
        match self {
            Stmt::Assign { dst, .. } => Some(*dst),
            Stmt::Loop { var, .. } => Some(*var),
            _ => None,
        }
    }
}

/// Calls `f` on every statement of `stmts`, parents before children.
pub fn walk(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::Loop { body, .. } => walk(body, f),
            Stmt::If { then_body, else_body, .. } => {
                walk(then_body, f);
                walk(else_body, f);
            }
            _ => {}
        }
    }
}
