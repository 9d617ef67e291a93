//! What a parallel loop needs when it is outlined into a function: captured registers, shared and private buffers.
//!
//! A `LoopHint::Parallel` loop runs its iterations on several threads, each
//! thread a contiguous chunk, inside an outlined body function
//! (`parallel.rs`). This module decides, from the vector program alone, what
//! crosses the function boundary and refuses loops whose iterations are not
//! independent in a way the emitter can see:
//!
//! - registers read in the loop and not assigned in it are *captured*: their
//!   values before the loop are passed by value;
//! - registers assigned in the loop are private to each chunk. A register
//!   assigned in the loop and read outside it (a value carried out of the
//!   loop), or read in an iteration where no earlier statement of that
//!   iteration can have assigned it (an accumulator carried between
//!   iterations), is an error. A read that only *may* be unassigned in its
//!   iteration is allowed and sees an unspecified value: lowering produces
//!   such reads for register tiles whose rows are loaded under a predicate,
//!   where the value of a row outside the predicate is never stored;
//! - parameter buffers are shared (the schedule guarantees that iterations
//!   write disjoint elements);
//! - a local buffer used only inside the loop is scratch memory: it is
//!   private, allocated once per chunk in the body function;
//! - a local buffer used inside and outside the loop cannot be private. It is
//!   shared when the loop only reads it, or when every write in the loop is at
//!   a position that depends on the loop variable (a whole-tensor temporary or
//!   a tile spanning the loop, whose iterations own disjoint elements);
//!   otherwise every iteration would write the same elements of one buffer,
//!   which is an error.

use super::LlvmError;
use crate::vprog::{walk, BufId, BufKind, Op, Program, Reg, Stmt};
use std::collections::BTreeSet;

/// How often registers are read and buffers are accessed in a statement list.
#[derive(Clone, Debug)]
pub(crate) struct Usage {
    /// Reads per register.
    pub(crate) reads: Vec<u32>,
    /// Accesses (loads, stores, gathers, scatters) per buffer.
    pub(crate) accesses: Vec<u32>,
    /// Writes per buffer.
    pub(crate) writes: Vec<u32>,
}

impl Usage {
    /// The usage of `stmts` (recursively).
    pub(crate) fn of(prog: &Program, stmts: &[Stmt]) -> Usage {
        let mut u = Usage {
            reads: vec![0; prog.regs.len()],
            accesses: vec![0; prog.buffers.len()],
            writes: vec![0; prog.buffers.len()],
        };
        walk(stmts, &mut |s| u.add(s));
        u
    }

    fn add(&mut self, s: &Stmt) {
        for r in s.operands() {
            self.reads[r.0 as usize] += 1;
        }
        if let Some(b) = op_buffer(s) {
            self.accesses[b.0 as usize] += 1;
        }
        if let Some((b, _)) = stmt_write(s) {
            self.accesses[b.0 as usize] += 1;
            self.writes[b.0 as usize] += 1;
        }
    }
}

/// True if `stmts` contain a parallel loop.
pub(crate) fn has_parallel(stmts: &[Stmt]) -> bool {
    let mut found = false;
    walk(stmts, &mut |s| found |= matches!(s, Stmt::Loop { hint: crate::vprog::LoopHint::Parallel, .. }));
    found
}

/// The outermost parallel loops of `stmts` (not nested in another parallel loop), in program order.
pub(crate) fn outermost_parallel(stmts: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::new();
    for s in stmts {
        match s {
            Stmt::Loop { hint: crate::vprog::LoopHint::Parallel, .. } => out.push(s),
            Stmt::Loop { body, .. } => out.extend(outermost_parallel(body)),
            Stmt::If { then_body, else_body, .. } => {
                out.extend(outermost_parallel(then_body));
                out.extend(outermost_parallel(else_body));
            }
            _ => {}
        }
    }
    out
}

/// The buffer an assignment reads from, if any.
fn op_buffer(s: &Stmt) -> Option<BufId> {
    match s {
        Stmt::Assign { op: Op::Load { buf, .. } | Op::VLoad { buf, .. } | Op::Gather { buf, .. }, .. } => Some(*buf),
        Stmt::ZaLoad { buf, .. } => Some(*buf),
        _ => None,
    }
}

/// The buffer a statement writes and the register giving the position.
fn stmt_write(s: &Stmt) -> Option<(BufId, Reg)> {
    match s {
        Stmt::Store { buf, index, .. } => Some((*buf, *index)),
        Stmt::VStore { buf, base, .. } => Some((*buf, *base)),
        Stmt::Scatter { buf, indices, .. } => Some((*buf, *indices)),
        Stmt::ZaStore { buf, base, .. } => Some((*buf, *base)),
        _ => None,
    }
}

/// What crosses the boundary of one outlined parallel loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParallelPlan {
    /// Registers read in the loop and assigned before it, ascending.
    pub(crate) captures: Vec<Reg>,
    /// Every register the loop reads or assigns (its variable included), ascending.
    pub(crate) regs: Vec<Reg>,
    /// Buffers used in the loop and shared with the kernel, ascending, with
    /// whether the loop writes them.
    pub(crate) shared: Vec<(BufId, bool)>,
    /// Local buffers used only in the loop: private to each chunk, ascending.
    pub(crate) private: Vec<BufId>,
}

/// Plans the outlining of `for var in ..  { body }` (a parallel loop) of
/// `prog`, whose whole-program usage is `total`.
pub(crate) fn plan(prog: &Program, total: &Usage, var: Reg, body: &[Stmt]) -> Result<ParallelPlan, LlvmError> {
    let fail = |reason: String| LlvmError::Parallel { kernel: prog.name.clone(), var: var.to_string(), reason };
    let inside = Usage::of(prog, body);
    let mut assigned = BTreeSet::from([var]);
    walk(body, &mut |s| assigned.extend(s.def()));
    for &r in &assigned {
        let outside = total.reads[r.0 as usize] - inside.reads[r.0 as usize];
        if outside > 0 {
            return Err(fail(format!("register {r} is assigned in the loop and read outside it")));
        }
    }
    let mut may_be_assigned = BTreeSet::from([var]);
    check_assigned_before_read(body, &assigned, &mut may_be_assigned).map_err(|r| {
        fail(format!(
            "register {r} is read in every iteration before the iteration assigns it (a value carried between \
             iterations)"
        ))
    })?;
    let mut regs = assigned.clone();
    let mut captures = Vec::new();
    for (i, &n) in inside.reads.iter().enumerate() {
        let r = Reg(i as u32);
        if n > 0 && !assigned.contains(&r) {
            captures.push(r);
            regs.insert(r);
        }
    }
    let mut shared = Vec::new();
    let mut private = Vec::new();
    let mut tainted: Option<BTreeSet<Reg>> = None;
    for (i, &n) in inside.accesses.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let b = BufId(i as u32);
        let buf = prog.buffer(b);
        let written = inside.writes[i] > 0;
        let only_here = total.accesses[i] == n;
        match buf.kind {
            BufKind::Local { .. } if only_here => private.push(b),
            BufKind::Local { .. } if written => {
                let tainted = tainted.get_or_insert_with(|| depends_on(body, var));
                let mut bad = false;
                walk(body, &mut |s| {
                    bad |= stmt_write(s).is_some_and(|(wb, pos)| wb == b && !tainted.contains(&pos));
                });
                if bad {
                    return Err(fail(format!(
                        "the local buffer `{}` is used outside the loop, so it cannot be private to a thread, and \
                         the loop writes it at a position that does not depend on the iteration, so threads \
                         would overwrite each other",
                        buf.name
                    )));
                }
                shared.push((b, true));
            }
            _ => shared.push((b, written)),
        }
    }
    Ok(ParallelPlan { captures, regs: regs.into_iter().collect(), shared, private })
}

/// Walks `stmts` in order with the set of registers that may have been
/// assigned so far in the current iteration; returns the first register of
/// `assigned` read where no earlier statement of the iteration assigns it.
/// A statement of an inner loop body does not count as earlier than the
/// statements before it in that body (the first inner iteration would read
/// the previous outer iteration's value).
fn check_assigned_before_read(stmts: &[Stmt], assigned: &BTreeSet<Reg>, may: &mut BTreeSet<Reg>) -> Result<(), Reg> {
    for s in stmts {
        if let Some(r) = s.operands().into_iter().find(|r| assigned.contains(r) && !may.contains(r)) {
            return Err(r);
        }
        match s {
            Stmt::Assign { dst, .. } => {
                may.insert(*dst);
            }
            Stmt::Loop { var, body, .. } => {
                may.insert(*var);
                check_assigned_before_read(body, assigned, may)?;
            }
            Stmt::If { then_body, else_body, .. } => {
                let mut then_may = may.clone();
                check_assigned_before_read(then_body, assigned, &mut then_may)?;
                check_assigned_before_read(else_body, assigned, may)?;
                may.extend(then_may);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The registers whose value depends on `var` in `body`, through operands or
/// through conditions and loop bounds that depend on it (to a fixed point).
fn depends_on(body: &[Stmt], var: Reg) -> BTreeSet<Reg> {
    let mut set = BTreeSet::from([var]);
    loop {
        let before = set.len();
        taint(body, false, &mut set);
        if set.len() == before {
            return set;
        }
    }
}

fn taint(stmts: &[Stmt], control: bool, set: &mut BTreeSet<Reg>) {
    for s in stmts {
        let dep = control || s.operands().iter().any(|r| set.contains(r));
        match s {
            Stmt::Assign { dst, .. } if dep => {
                set.insert(*dst);
            }
            Stmt::Loop { var, body, .. } => {
                if dep {
                    set.insert(*var);
                }
                taint(body, control, set);
            }
            Stmt::If { then_body, else_body, .. } => {
                taint(then_body, dep, set);
                taint(else_body, dep, set);
            }
            _ => {}
        }
    }
}
