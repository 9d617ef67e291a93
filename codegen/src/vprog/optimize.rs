//! Loop-invariant code motion and common-subexpression elimination on a vector program.
//!
//! Lowering writes every index expression out in full where it is used, with
//! its constants, inside the innermost loop. LLVM cleans that up, but the
//! interpreter would execute all of it; this pass does the cleaning once, on
//! the program both of them get, so that the oracle still runs exactly what
//! is emitted. It only moves and removes pure assignments to registers that
//! have one definition:
//!
//! - an assignment in a loop body whose operands are not assigned in the
//!   loop moves in front of the loop, if evaluating it early cannot fail
//!   (integer division, remainder and shifts only by a positive constant; no
//!   loads, no lane extraction). Nothing moves out of a parallel loop (its
//!   outlined body would receive constants as captured values) or into its
//!   body (LLVM hoists better within the outlined function);
//! - an assignment computing what an earlier one in the same or an
//!   enclosing statement list computed, from the same registers, is dropped
//!   and its register replaced by the earlier one, if every read of it lies
//!   where the earlier one's value is current (within that list).

use super::types::{BinOp, Const, LoopHint, Op, Program, Reg, Stmt, Ty};
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

/// Optimizes `prog` in place.
pub fn optimize(prog: &mut Program) {
    // The tables of the last program this thread optimized, emptied: a
    // search optimizes thousands of programs of similar sizes.
    let mut w = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let body = std::mem::take(&mut prog.body);
    let n_regs = prog.regs.len();
    w.defs.fill(&mut w.place, n_regs, &body);
    let body = hoist(body, &w.defs, &mut w.place, &mut w.spare);
    w.scopes.fill(n_regs, &body);
    w.table.clear();
    // Emptying a map costs its capacity: one sized for a much larger
    // program than this one is let go.
    if w.index.capacity() > 4 * n_regs.max(1024) {
        w.index = FxHashMap::default();
    }
    w.index.clear();
    w.renames.clear();
    w.renames.resize(n_regs, None);
    let mut cse = Cse {
        prog,
        defs: &w.defs,
        scopes: &w.scopes,
        table: std::mem::take(&mut w.table),
        index: std::mem::take(&mut w.index),
        renames: std::mem::take(&mut w.renames),
        next_list: 0,
        in_parallel: false,
    };
    let mut body = body;
    cse.list(&mut body);
    (w.table, w.index, w.renames) = (cse.table, cse.index, cse.renames);
    prog.body = body;
    SCRATCH.with(|s| *s.borrow_mut() = w);
}

/// The tables of [`optimize`], kept per thread between programs.
#[derive(Default)]
struct Scratch {
    defs: Defs,
    place: Placement,
    scopes: Scopes,
    table: Vec<Available>,
    index: FxHashMap<u64, SmallVec<[usize; 2]>>,
    renames: Vec<Option<Reg>>,
    /// Empty statement lists for the hoister's fronts.
    spare: Vec<Vec<Stmt>>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// How each register is defined.
#[derive(Default)]
struct Defs {
    /// Assignments per register.
    assigns: Vec<u32>,
    /// Loops whose variable it is.
    loops: Vec<u32>,
    /// For each register, an integer constant it is assigned (the value
    /// of a register with one definition, see [`Defs::constant`]).
    consts: Vec<Option<i64>>,
}

impl Defs {
    /// Makes these the definitions of the `n_regs` registers of `body`, and
    /// `p` where they are assigned (one walk for both).
    fn fill(&mut self, p: &mut Placement, n_regs: usize, body: &[Stmt]) {
        fn reset<T: Clone>(v: &mut Vec<T>, n: usize, x: T) {
            v.clear();
            v.resize(n, x);
        }
        reset(&mut self.assigns, n_regs, 0);
        reset(&mut self.loops, n_regs, 0);
        reset(&mut self.consts, n_regs, None);
        reset(&mut p.end, 1, 0);
        reset(&mut p.single, n_regs, NONE);
        p.multi.clear();
        self.list(p, body, 0);
        p.end[0] = p.end.len() as u32;
    }

    /// Counts the definitions in `stmts`, the list of loop `at` (numbered
    /// as [`Placement`] does), and places them.
    fn list(&mut self, p: &mut Placement, stmts: &[Stmt], at: u32) {
        for st in stmts {
            match st {
                Stmt::Assign { dst, op } => {
                    self.assigns[dst.0 as usize] += 1;
                    if let Op::Const(Const::Int(v, _)) = op {
                        self.consts[dst.0 as usize] = Some(*v);
                    }
                    p.place(*dst, at);
                }
                Stmt::Loop { var, body, .. } => {
                    self.loops[var.0 as usize] += 1;
                    let id = p.end.len() as u32;
                    p.end.push(0);
                    p.place(*var, id);
                    self.list(p, body, id);
                    p.end[id as usize] = p.end.len() as u32;
                }
                Stmt::If { then_body, else_body, .. } => {
                    self.list(p, then_body, at);
                    self.list(p, else_body, at);
                }
                _ => {}
            }
        }
    }

    /// The value of `r` if it has one definition, an integer constant.
    fn constant(&self, r: Reg) -> Option<i64> {
        self.consts[r.0 as usize].filter(|_| self.single(r))
    }

    /// Assigned by exactly one assignment and no loop.
    fn single(&self, r: Reg) -> bool {
        self.assigns[r.0 as usize] == 1 && self.loops[r.0 as usize] == 0
    }

    /// Holds one value wherever it can be read: a single assignment, a
    /// loop variable (within one iteration), or a parameter.
    fn stable(&self, r: Reg) -> bool {
        let (a, l) = (self.assigns[r.0 as usize], self.loops[r.0 as usize]);
        (a == 1 && l == 0) || (a == 0 && l <= 1)
    }

    /// `op` has no effect and reads no memory.
    fn pure(op: &Op) -> bool {
        !matches!(op, Op::Load { .. } | Op::VLoad { .. } | Op::Gather { .. } | Op::ZaReadVertical { .. })
    }

    /// `op` is pure and cannot fail, whatever its operands hold.
    fn movable(&self, op: &Op) -> bool {
        match op {
            Op::Bin(BinOp::FloorDiv | BinOp::FloorMod, _, b) => self.constant(*b).is_some_and(|v| v > 0),
            Op::Bin(BinOp::Shl | BinOp::Shr, _, b) => self.constant(*b).is_some_and(|v| (0..8).contains(&v)),
            Op::Extract(..) => false,
            _ => Self::pure(op),
        }
    }
}

/// Where registers are assigned, by loop: loops are numbered in depth-first
/// order (the program's body is 0, each loop one more than the last loop
/// entered before it), so the loops nested in loop `k` are `k+1 .. end[k]`,
/// and a register is assigned inside loop `k` when one of its assignments is
/// in a loop of that range. Hoisting an assignment out of a loop renumbers
/// it to the enclosing loop.
#[derive(Default)]
struct Placement {
    /// For loop `k`, one past the last loop nested in it.
    end: Vec<u32>,
    /// The loop of each register's assignment (a loop variable: its own
    /// loop); `NONE` for parameters, `MULTI` for registers assigned more
    /// than once.
    single: Vec<u32>,
    /// Registers assigned more than once: every loop they are assigned in.
    multi: FxHashMap<Reg, Vec<u32>>,
}

const NONE: u32 = u32::MAX;
const MULTI: u32 = u32::MAX - 1;

impl Placement {
    fn place(&mut self, r: Reg, at: u32) {
        let slot = &mut self.single[r.0 as usize];
        if *slot == MULTI {
            self.multi.get_mut(&r).expect("a register placed twice has a list").push(at);
        } else if *slot == NONE {
            *slot = at;
        } else {
            self.multi.insert(r, vec![*slot, at]);
            *slot = MULTI;
        }
    }

    /// True if `r` is assigned inside loop `k` (its body or deeper).
    fn inside(&self, r: Reg, k: u32) -> bool {
        let range = k..self.end[k as usize];
        match self.single[r.0 as usize] {
            MULTI => self.multi[&r].iter().any(|l| range.contains(l)),
            at => range.contains(&at),
        }
    }
}

/// Moves loop-invariant assignments in front of their loops, as far out as
/// they can go, in one pass over the program: each statement moves once,
/// however many loops it leaves.
/// `spare` holds empty lists for the fronts of loops, and gets them back.
fn hoist(body: Vec<Stmt>, defs: &Defs, place: &mut Placement, spare: &mut Vec<Vec<Stmt>>) -> Vec<Stmt> {
    let mut h = Hoister { defs, place, next: 0, exits: Vec::new(), spare: std::mem::take(spare) };
    let body = h.list(body, 0, 0, false);
    *spare = h.spare;
    body
}

/// A loop whose invariant assignments may leave it.
struct Exit {
    /// The loop (numbered as [`Placement`] does).
    id: u32,
    /// The loop whose statement list the loop is in (0: the program's body).
    to: u32,
    /// Assignments that left it, in program order: they go in front of it.
    front: Vec<Stmt>,
}

struct Hoister<'a> {
    defs: &'a Defs,
    place: &'a mut Placement,
    /// Loops numbered so far.
    next: u32,
    /// The loops around the current statement that an assignment may leave,
    /// innermost last.
    exits: Vec<Exit>,
    /// Emptied `front` lists of loops already left, for the next loops to
    /// fill without growing a new list from nothing.
    spare: Vec<Vec<Stmt>>,
}

impl Hoister<'_> {
    /// Hoists from `stmts`, the list of loop `at` (0: the program's body),
    /// the body of a parallel loop if `parallel_body`. An assignment in it
    /// may leave the loops `exits[floor..]`, innermost first, while its
    /// operands are not assigned in the loop it leaves. Nothing leaves a
    /// parallel loop (it would become a captured value of the outlined
    /// body), and nothing moves into its body (LLVM hoists better from the
    /// loops of the outlined function).
    fn list(&mut self, stmts: Vec<Stmt>, at: u32, floor: usize, parallel_body: bool) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(stmts.len());
        for st in stmts {
            match st {
                Stmt::Loop { var, start, end, body, hint } => {
                    self.next += 1;
                    let id = self.next;
                    let parallel = hint == LoopHint::Parallel;
                    let body = if parallel || parallel_body {
                        self.list(body, id, self.exits.len(), parallel)
                    } else {
                        let front = self.spare.pop().unwrap_or_default();
                        self.exits.push(Exit { id, to: at, front });
                        let body = self.list(body, id, floor, false);
                        let mut exit = self.exits.pop().expect("pushed above");
                        out.append(&mut exit.front);
                        self.spare.push(exit.front);
                        body
                    };
                    out.push(Stmt::Loop { var, start, end, body, hint });
                }
                Stmt::If { cond, then_body, else_body } => {
                    let inner = self.exits.len();
                    let then_body = self.list(then_body, at, inner, false);
                    let else_body = self.list(else_body, at, inner, false);
                    out.push(Stmt::If { cond, then_body, else_body });
                }
                Stmt::Assign { dst, op } => match self.destination(dst, &op, floor) {
                    Some(k) => self.exits[k].front.push(Stmt::Assign { dst, op }),
                    None => out.push(Stmt::Assign { dst, op }),
                },
                other => out.push(other),
            }
        }
        out
    }

    /// The outermost of the loops `exits[floor..]` that `dst = op` leaves
    /// (leaving the innermost first, then each next one while it stays
    /// invariant), with its placement updated; `None` if it stays.
    fn destination(&mut self, dst: Reg, op: &Op, floor: usize) -> Option<usize> {
        if self.exits.len() == floor || !(self.defs.single(dst) && self.defs.movable(op)) {
            return None;
        }
        let mut dest = None;
        let operands = op.operands();
        for k in (floor..self.exits.len()).rev() {
            let e = &self.exits[k];
            if operands.iter().any(|r| self.place.inside(*r, e.id)) {
                break;
            }
            self.place.single[dst.0 as usize] = e.to;
            dest = Some(k);
        }
        dest
    }
}

/// Statement lists numbered in depth-first order (the body 0, then each
/// loop body and branch as it is entered), with where each register is read.
#[derive(Default)]
struct Scopes {
    /// For list `k`, one past the last list nested in it.
    end: Vec<u32>,
    /// The lowest and highest list each register is read in (`(u32::MAX, 0)`
    /// if it is never read): the lists nested in `k` are a range, so every
    /// read lies in one of them when both of these do.
    reads: Vec<(u32, u32)>,
}

impl Scopes {
    /// Makes these the statement lists of `body` and the reads of its
    /// `n_regs` registers.
    fn fill(&mut self, n_regs: usize, body: &[Stmt]) {
        self.end.clear();
        self.reads.clear();
        self.reads.resize(n_regs, (u32::MAX, 0));
        self.list(body);
    }

    fn list(&mut self, stmts: &[Stmt]) {
        let id = self.end.len();
        self.end.push(0);
        for st in stmts {
            for r in st.operands() {
                let (lo, hi) = &mut self.reads[r.0 as usize];
                *lo = (*lo).min(id as u32);
                *hi = (*hi).max(id as u32);
            }
            match st {
                Stmt::Loop { body, .. } => self.list(body),
                Stmt::If { then_body, else_body, .. } => {
                    self.list(then_body);
                    self.list(else_body);
                }
                _ => {}
            }
        }
        self.end[id] = self.end.len() as u32;
    }

    /// True if every read of `r` is in list `k` or a list nested in it.
    fn reads_within(&self, r: Reg, k: u32) -> bool {
        let (lo, hi) = self.reads[r.0 as usize];
        lo == u32::MAX || (lo >= k && hi < self.end[k as usize])
    }
}

/// An available value: the operation, its type, the register holding it,
/// and the statement list it was computed in.
struct Available {
    /// [`key_of`] of the type and operation.
    key: u64,
    ty: Ty,
    op: Op,
    reg: Reg,
    list: u32,
}

struct Cse<'a> {
    prog: &'a Program,
    defs: &'a Defs,
    scopes: &'a Scopes,
    /// Available values, innermost list last.
    table: Vec<Available>,
    /// Positions in `table` by the hash of the type and operation.
    index: FxHashMap<u64, SmallVec<[usize; 2]>>,
    /// The register each dropped one is replaced by, by register number.
    renames: Vec<Option<Reg>>,
    next_list: u32,
    /// Inside a parallel loop: only values of the same list are reused.
    in_parallel: bool,
}

impl Cse<'_> {
    fn list(&mut self, stmts: &mut Vec<Stmt>) {
        let id = self.next_list;
        self.next_list += 1;
        let mark = self.table.len();
        // In place: the list only loses statements.
        stmts.retain_mut(|st| {
            let renames = &self.renames;
            st.for_each_operand_mut(|r| {
                if let Some(n) = renames[r.0 as usize] {
                    *r = n;
                }
            });
            match st {
                Stmt::Loop { body, hint, .. } => {
                    let outer = self.in_parallel;
                    self.in_parallel |= *hint == LoopHint::Parallel;
                    self.list(body);
                    self.in_parallel = outer;
                }
                Stmt::If { then_body, else_body, .. } => {
                    self.list(then_body);
                    self.list(else_body);
                }
                Stmt::Assign { dst, op } => return !self.reuse(*dst, op, id),
                _ => {}
            }
            true
        });
        for a in self.table.drain(mark..) {
            if let Some(at) = self.index.get_mut(&a.key) {
                at.pop();
            }
        }
    }

    /// Records `dst = op` (computed in list `id`) as available, or, if an
    /// earlier register holds the same value wherever `dst` is read,
    /// renames `dst` to it and returns true (the assignment goes).
    fn reuse(&mut self, dst: Reg, op: &Op, id: u32) -> bool {
        if !(self.defs.single(dst) && Defs::pure(op) && op.operands().iter().all(|r| self.defs.stable(*r))) {
            return false;
        }
        let ty = self.prog.ty(dst);
        let key = key_of(&ty, op);
        // One look-up of the key, found or not (most operations are new).
        let at = self.index.entry(key).or_default();
        let table = &self.table;
        let found = at
            .iter()
            .map(|i| &table[*i])
            .find(|a| a.ty == ty && a.op == *op && (!self.in_parallel || a.list == id))
            .map(|a| (a.reg, a.list));
        match found {
            Some((reg, list)) if self.scopes.reads_within(dst, list) => {
                self.renames[dst.0 as usize] = Some(reg);
                true
            }
            Some(_) => false,
            None => {
                at.push(self.table.len());
                self.table.push(Available { key, ty, op: op.clone(), reg: dst, list: id });
                false
            }
        }
    }
}

/// The hash of a type and operation (the CSE table's key; equal pairs are
/// confirmed by comparison).
fn key_of(ty: &Ty, op: &Op) -> u64 {
    let mut h = FxHasher::default();
    ty.hash(&mut h);
    op.hash(&mut h);
    h.finish()
}
