//! The registers operations and statements read, for passes that analyse or rewrite them.

use super::types::{Op, Reg, Stmt};
use smallvec::SmallVec;

/// Mutable references to the registers one operation or statement reads
/// (at most four, kept inline).
pub type OperandsMut<'a> = SmallVec<[&'a mut Reg; 4]>;

/// The registers one operation or statement reads, in operand order: at
/// most four, held in place (passes ask for them once per statement and
/// per loop they consider, so this allocates and frees nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operands {
    regs: [Reg; 4],
    len: u8,
}

impl Operands {
    const NONE: Operands = Operands { regs: [Reg(0); 4], len: 0 };

    /// `regs` followed by the registers of `extra` that are present.
    #[inline]
    fn of<const N: usize>(regs: [Reg; N], extra: [Option<Reg>; 2]) -> Operands {
        let mut out = Operands::NONE;
        out.regs[..N].copy_from_slice(&regs);
        let mut len = N;
        if let Some(r) = extra[0] {
            out.regs[len] = r;
            len += 1;
        }
        if let Some(r) = extra[1] {
            out.regs[len] = r;
            len += 1;
        }
        out.len = len as u8;
        out
    }
}

impl std::ops::Deref for Operands {
    type Target = [Reg];
    fn deref(&self) -> &[Reg] {
        &self.regs[..self.len as usize]
    }
}

impl IntoIterator for Operands {
    type Item = Reg;
    type IntoIter = std::iter::Take<std::array::IntoIter<Reg, 4>>;
    fn into_iter(self) -> Self::IntoIter {
        self.regs.into_iter().take(self.len as usize)
    }
}

impl Op {
    /// The registers this operation reads, in operand order.
    #[inline]
    pub fn operands(&self) -> Operands {
        match self {
            Op::Const(_) | Op::VScale | Op::Step(_) => Operands::NONE,
            Op::Copy(a) | Op::Un(_, a) | Op::Cast(a, _) | Op::Bitcast(a, _) | Op::Splat(a, _) | Op::Reduce(_, a) => {
                Operands::of([*a], [None, None])
            }
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Extract(a, b) | Op::Interleave(a, b) => {
                Operands::of([*a, *b], [None, None])
            }
            Op::Fma(a, b, c) | Op::Select(a, b, c) => Operands::of([*a, *b, *c], [None, None]),
            Op::ActiveLaneMask { base, bound, .. } => Operands::of([*base, *bound], [None, None]),
            Op::ZaReadVertical { slice, .. } => Operands::of([*slice], [None, None]),
            Op::Load { index, .. } => Operands::of([*index], [None, None]),
            Op::VLoad { base, mask, .. } => Operands::of([*base], [*mask, None]),
            Op::Gather { indices, mask, .. } => Operands::of([*indices], [*mask, None]),
        }
    }

    /// Mutable references to the registers this operation reads.
    pub fn operands_mut(&mut self) -> OperandsMut<'_> {
        match self {
            Op::Const(_) | Op::VScale | Op::Step(_) => OperandsMut::new(),
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
    #[inline]
    pub fn operands(&self) -> Operands {
        match self {
            Stmt::Assign { op, .. } => op.operands(),
            Stmt::Store { index, value, .. } => Operands::of([*index, *value], [None, None]),
            Stmt::VStore { base, value, mask, .. } => Operands::of([*base, *value], [*mask, None]),
            Stmt::Scatter { indices, value, mask, .. } => Operands::of([*indices, *value], [*mask, None]),
            Stmt::Loop { start, end, .. } => Operands::of([*start, *end], [None, None]),
            Stmt::If { cond, .. } => Operands::of([*cond], [None, None]),
            Stmt::ZaZero { .. } => Operands::NONE,
            Stmt::ZaLoad { row, base, mask, .. } | Stmt::ZaStore { row, base, mask, .. } => {
                Operands::of([*row, *base], [*mask, None])
            }
            Stmt::Mopa { a, b, a_mask, b_mask, .. } => Operands::of([*a, *b], [*a_mask, *b_mask]),
        }
    }

    /// Mutable references to the registers this statement itself reads.
    pub fn operands_mut(&mut self) -> OperandsMut<'_> {
        match self {
            Stmt::Assign { op, .. } => op.operands_mut(),
            Stmt::Store { index, value, .. } => smallvec::smallvec![index, value],
            Stmt::VStore { base, value, mask, .. } => [base, value].into_iter().chain(mask.as_mut()).collect(),
            Stmt::Scatter { indices, value, mask, .. } => [indices, value].into_iter().chain(mask.as_mut()).collect(),
            Stmt::Loop { start, end, .. } => smallvec::smallvec![start, end],
            Stmt::If { cond, .. } => smallvec::smallvec![cond],
            Stmt::ZaZero { .. } => OperandsMut::new(),
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
