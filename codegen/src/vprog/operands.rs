//! The registers operations and statements read, for passes that analyse or rewrite them.

use super::types::{Op, Reg, Stmt};

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

    /// Calls `f` on each register this operation reads, in operand order,
    /// to rewrite it.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Reg)) {
        match self {
            Op::Const(_) | Op::VScale | Op::Step(_) => {}
            Op::Copy(a) | Op::Un(_, a) | Op::Cast(a, _) | Op::Bitcast(a, _) | Op::Splat(a, _) | Op::Reduce(_, a) => {
                f(a)
            }
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Extract(a, b) | Op::Interleave(a, b) => {
                f(a);
                f(b);
            }
            Op::Fma(a, b, c) | Op::Select(a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
            Op::ActiveLaneMask { base, bound, .. } => {
                f(base);
                f(bound);
            }
            Op::ZaReadVertical { slice, .. } => f(slice),
            Op::Load { index, .. } => f(index),
            Op::VLoad { base: a, mask, .. } | Op::Gather { indices: a, mask, .. } => {
                f(a);
                mask.iter_mut().for_each(f);
            }
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

    /// Calls `f` on each register this statement itself reads (not those
    /// of nested bodies), in operand order, to rewrite it.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Reg)) {
        match self {
            Stmt::Assign { op, .. } => op.for_each_operand_mut(f),
            Stmt::Store { index: a, value: b, .. } | Stmt::Loop { start: a, end: b, .. } => {
                f(a);
                f(b);
            }
            Stmt::VStore { base: a, value: b, mask, .. } | Stmt::Scatter { indices: a, value: b, mask, .. } => {
                f(a);
                f(b);
                mask.iter_mut().for_each(f);
            }
            Stmt::If { cond, .. } => f(cond),
            Stmt::ZaZero { .. } => {}
            Stmt::ZaLoad { row, base, mask, .. } | Stmt::ZaStore { row, base, mask, .. } => {
                f(row);
                f(base);
                mask.iter_mut().for_each(f);
            }
            Stmt::Mopa { a, b, a_mask, b_mask, .. } => {
                f(a);
                f(b);
                a_mask.iter_mut().for_each(&mut f);
                b_mask.iter_mut().for_each(f);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vprog::types::{BinOp, BufId, Lanes, LoopHint};

    /// Rewriting each operand visits the registers `operands` lists, in its
    /// order, for statements with two to four operands and optional masks.
    #[test]
    fn rewriting_visits_the_operands_in_order() {
        let r = Reg;
        let l = Lanes::fixed(4);
        let stmts = vec![
            Stmt::Assign { dst: r(0), op: Op::Bin(BinOp::Add, r(1), r(2)) },
            Stmt::Assign { dst: r(0), op: Op::Fma(r(3), r(1), r(2)) },
            Stmt::Assign { dst: r(0), op: Op::VLoad { buf: BufId(0), base: r(5), lanes: l, mask: Some(r(6)) } },
            Stmt::Assign { dst: r(0), op: Op::Gather { buf: BufId(0), indices: r(7), mask: None } },
            Stmt::Assign { dst: r(0), op: Op::ActiveLaneMask { base: r(8), bound: r(9), lanes: l } },
            Stmt::Store { buf: BufId(0), index: r(1), value: r(2) },
            Stmt::VStore { buf: BufId(0), base: r(3), value: r(4), mask: Some(r(5)) },
            Stmt::Scatter { buf: BufId(0), indices: r(6), value: r(7), mask: None },
            Stmt::Loop { var: r(0), start: r(1), end: r(2), body: Vec::new(), hint: LoopHint::None },
            Stmt::If { cond: r(3), then_body: Vec::new(), else_body: Vec::new() },
            Stmt::ZaZero { tile: 0 },
            Stmt::ZaLoad { tile: 0, row: r(4), buf: BufId(0), base: r(5), mask: Some(r(6)) },
            Stmt::Mopa { tile: 0, a: r(7), b: r(8), a_mask: Some(r(9)), b_mask: Some(r(10)) },
        ];
        for mut st in stmts {
            let listed: Vec<Reg> = st.operands().into_iter().collect();
            let mut visited = Vec::new();
            st.for_each_operand_mut(|x| {
                visited.push(*x);
                x.0 += 100;
            });
            assert_eq!(visited, listed, "{st:?}");
            let moved: Vec<Reg> = st.operands().iter().map(|x| Reg(x.0 - 100)).collect();
            assert_eq!(moved, listed, "{st:?}");
        }
    }
}
