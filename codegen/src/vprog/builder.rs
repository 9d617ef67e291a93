//! A builder that appends statements to a [`Program`] and infers result types.

use super::types::*;
use rustc_hash::FxHashMap;
use scaletune_space::DType;
use std::collections::hash_map::Entry;

/// The index constants of one statement list, by value.
type ListConsts = FxHashMap<i64, Reg>;
/// The index operations of one statement list, by operation and operands.
type ListOps = FxHashMap<(BinOp, Reg, Reg), Reg>;

/// Emptied list maps and statement buffers a thread's last [`Builder`]
/// left, for the next one.
#[derive(Default)]
struct Pool {
    maps: Vec<(ListConsts, ListOps)>,
    lists: Vec<Vec<Stmt>>,
}

thread_local! {
    static POOL: std::cell::RefCell<Pool> = std::cell::RefCell::default();
}

/// Maps (and buffers) a thread's pool keeps: a program has a few dozen lists.
const POOL_MAX: usize = 64;

/// Entries past which a map or buffer is not kept in the pool.
const POOL_MAX_CAPACITY: usize = 4096;

/// Appends statements to a program under construction.
///
/// Statements go to the innermost open body; `begin_*`/`end_*` pairs open
/// and close loop and if bodies. Result types of operations are inferred from
/// their operands.
///
/// Index arithmetic is folded as it is emitted. Lowering writes index
/// expressions out per unrolled copy, with the copy's number as a
/// constant; this keeps most of them from being written at all (the
/// clean-up pass would otherwise remove them one by one):
///
/// - an index constant, or an index operation on the same registers,
///   already computed in the same statement list is reused
///   ([`Builder::index`], [`Builder::bin`]). Within one list an earlier
///   statement always ran before a later one in the same iteration, so this
///   is sound as long as no operand was assigned in between:
///   [`Builder::assign`] forgets every operation computed so far. Not an
///   enclosing list's: an operand assigned later in a loop between the two
///   would change it for the next iteration, and a constant shared across
///   lists lets the clean-up pass merge more address computations, which
///   changes what LLVM generates (the same list's leave it unchanged);
/// - a [`Builder::bin`] of two index constants, or with an identity
///   operand (`x + 0`, `x * 1`), gives the constant or `x`.
pub struct Builder {
    prog: Program,
    stack: Vec<Vec<Stmt>>,
    /// Per open list (parallel to `stack`): its index constants by value.
    consts: Vec<ListConsts>,
    /// Per open list: its index operations by operation and operands.
    ops: Vec<ListOps>,
    /// Per register: its value if [`Builder::index`] made it (never assigned again).
    const_of: Vec<Option<i64>>,
    /// Maps of closed lists, cleared, for the next lists to reuse.
    spare: Vec<(ListConsts, ListOps)>,
    /// Statement buffers of closed lists, emptied, for the next lists to
    /// reuse: a list grows in its buffer and is copied out once, at its
    /// exact size, when it closes.
    spare_lists: Vec<Vec<Stmt>>,
}

impl Builder {
    /// Starts an empty program with the given kernel name.
    pub fn new(name: impl Into<String>) -> Builder {
        Builder {
            prog: Program {
                name: name.into(),
                regs: Vec::new(),
                buffers: Vec::new(),
                params: Vec::new(),
                body: Vec::new(),
            },
            stack: vec![Vec::new()],
            consts: vec![FxHashMap::default()],
            ops: vec![FxHashMap::default()],
            const_of: Vec::new(),
            spare: Vec::new(),
            spare_lists: Vec::new(),
        }
        .with_pool()
    }

    /// Takes the maps and buffers the last builder of this thread left
    /// ([`Builder::finish`]): a search lowers thousands of programs of
    /// similar shapes a second, and each list's maps and buffer otherwise
    /// grow from nothing again.
    fn with_pool(mut self) -> Builder {
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            self.spare = std::mem::take(&mut p.maps);
            self.spare_lists = std::mem::take(&mut p.lists);
        });
        self
    }

    /// Gives the emptied maps and buffers back to this thread's pool, but
    /// no more than [`POOL_MAX`] of each and none grown past
    /// [`POOL_MAX_CAPACITY`] entries (a large program's are let go).
    fn return_to_pool(&mut self) {
        let mut maps = std::mem::take(&mut self.spare);
        maps.extend(self.consts.drain(..).zip(self.ops.drain(..)));
        maps.retain(|(c, o)| c.capacity() <= POOL_MAX_CAPACITY && o.capacity() <= POOL_MAX_CAPACITY);
        maps.truncate(POOL_MAX);
        maps.iter_mut().for_each(|(c, o)| {
            c.clear();
            o.clear();
        });
        let mut lists = std::mem::take(&mut self.spare_lists);
        lists.retain(|l| l.is_empty() && l.capacity() <= POOL_MAX_CAPACITY);
        lists.truncate(POOL_MAX);
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            p.maps = maps;
            p.lists = lists;
        });
    }

    /// The value of `r` if it is an index constant made by [`Builder::index`].
    pub fn const_value(&self, r: Reg) -> Option<i64> {
        self.const_of.get(r.0 as usize).copied().flatten()
    }

    /// The program built so far (bodies still open are not included).
    pub fn program(&self) -> &Program {
        &self.prog
    }

    /// Adds a buffer.
    pub fn add_buffer(&mut self, buf: Buffer) -> BufId {
        self.prog.buffers.push(buf);
        BufId(self.prog.buffers.len() as u32 - 1)
    }

    /// Adds a tensor parameter for an existing buffer.
    pub fn add_tensor_param(&mut self, buf: BufId) {
        self.prog.params.push(Param::Tensor(buf));
    }

    /// Adds a scalar parameter and returns the register holding it.
    pub fn add_scalar_param(&mut self, name: impl Into<String>, dtype: DType) -> Reg {
        let reg = self.new_reg(Ty::scalar(Elem::Data(dtype)));
        self.prog.params.push(Param::Scalar { name: name.into(), reg });
        reg
    }

    /// Allocates a fresh register of the given type.
    pub fn new_reg(&mut self, ty: Ty) -> Reg {
        self.prog.regs.push(ty);
        self.const_of.push(None);
        Reg(self.prog.regs.len() as u32 - 1)
    }

    /// The type of a register.
    pub fn ty(&self, r: Reg) -> Ty {
        self.prog.ty(r)
    }

    /// Infers the result type of an operation.
    pub fn infer(&self, op: &Op) -> Ty {
        let p = &self.prog;
        match op {
            Op::Copy(r) | Op::Un(_, r) => p.ty(*r),
            Op::Const(c) => Ty::scalar(c.elem()),
            Op::VScale => Ty::index(),
            Op::Bin(_, a, b) => {
                // A scalar-vector mix takes the vector shape.
                let (ta, tb) = (p.ty(*a), p.ty(*b));
                if ta.is_vector() {
                    ta
                } else {
                    tb
                }
            }
            Op::Fma(a, _, _) => p.ty(*a),
            Op::Cmp(_, a, _) => p.ty(*a).with_elem(Elem::Bool),
            Op::Select(c, a, _) => {
                let (tc, ta) = (p.ty(*c), p.ty(*a));
                Ty { elem: ta.elem, lanes: ta.lanes.or(tc.lanes) }
            }
            Op::Cast(r, e) | Op::Bitcast(r, e) => p.ty(*r).with_elem(*e),
            Op::Splat(r, l) => Ty::vector(p.ty(*r).elem, *l),
            Op::Step(l) => Ty::vector(Elem::Index, *l),
            Op::ActiveLaneMask { lanes, .. } => Ty::mask(*lanes),
            Op::Load { buf, .. } => Ty::scalar(Elem::Data(p.buffer(*buf).dtype)),
            Op::VLoad { buf, lanes, .. } => Ty::vector(Elem::Data(p.buffer(*buf).dtype), *lanes),
            Op::Gather { buf, indices, .. } => p.ty(*indices).with_elem(Elem::Data(p.buffer(*buf).dtype)),
            Op::Reduce(_, r) | Op::Extract(r, _) => Ty::scalar(p.ty(*r).elem),
            Op::ZaReadVertical { .. } => Ty::vector(Elem::F32, Lanes::scalable(4)),
            Op::Interleave(a, _) => {
                let t = p.ty(*a);
                Ty { elem: t.elem, lanes: t.lanes.map(|l| l.times(2)) }
            }
        }
    }

    /// Emits `op` into a fresh register and returns it.
    pub fn emit(&mut self, op: Op) -> Reg {
        let ty = self.infer(&op);
        let dst = self.new_reg(ty);
        self.push(Stmt::Assign { dst, op });
        dst
    }

    /// Emits `dst = op` into an existing register.
    pub fn assign(&mut self, dst: Reg, op: Op) {
        debug_assert!(self.const_value(dst).is_none(), "assigning to a shared index constant");
        self.ops.iter_mut().for_each(FxHashMap::clear);
        self.push(Stmt::Assign { dst, op });
    }

    /// Appends a statement to the innermost open body.
    pub fn push(&mut self, stmt: Stmt) {
        self.stack.last_mut().expect("builder body stack is never empty").push(stmt);
    }

    /// An index constant: the register of the same list that holds it
    /// already, or a new one.
    pub fn index(&mut self, v: i64) -> Reg {
        let next = Reg(self.prog.regs.len() as u32);
        match self.consts.last_mut().expect("one map per open list").entry(v) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                e.insert(next);
                let r = self.emit(Op::Const(Const::Int(v, Elem::Index)));
                debug_assert_eq!(r, next);
                self.const_of[r.0 as usize] = Some(v);
                r
            }
        }
    }

    /// A constant of a data dtype.
    pub fn constant(&mut self, v: f64, dtype: DType) -> Reg {
        if dtype.is_float() {
            self.emit(Op::Const(Const::Float(v, dtype)))
        } else {
            self.emit(Op::Const(Const::Int(v as i64, Elem::Data(dtype))))
        }
    }

    /// A boolean constant.
    pub fn bool(&mut self, v: bool) -> Reg {
        self.emit(Op::Const(Const::Bool(v)))
    }

    /// Binary operation helper. Index arithmetic on constants is folded
    /// (`+`, `-`, `*`, `min`, `max` of two constants, when the result fits),
    /// and so are `x + 0`, `0 + x`, `x - 0`, `x * 1` and `1 * x` for an
    /// index `x` (scalar or vector).
    pub fn bin(&mut self, op: BinOp, a: Reg, b: Reg) -> Reg {
        if let Some(r) = self.fold(op, a, b) {
            return r;
        }
        let index = self.prog.ty(a).elem == Elem::Index && self.prog.ty(b).elem == Elem::Index;
        if !index {
            return self.emit(Op::Bin(op, a, b));
        }
        // The register `emit` allocates next, recorded with one look-up.
        let next = Reg(self.prog.regs.len() as u32);
        match self.ops.last_mut().expect("one map per open list").entry((op, a, b)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                e.insert(next);
                let r = self.emit(Op::Bin(op, a, b));
                debug_assert_eq!(r, next);
                r
            }
        }
    }

    /// What [`Builder::bin`] folds.
    fn fold(&mut self, op: BinOp, a: Reg, b: Reg) -> Option<Reg> {
        let (x, y) = (self.const_value(a), self.const_value(b));
        if let (Some(x), Some(y)) = (x, y) {
            let v = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Min => Some(x.min(y)),
                BinOp::Max => Some(x.max(y)),
                _ => None,
            }?;
            return Some(self.index(v));
        }
        let index = |r: Reg| self.prog.ty(r).elem == Elem::Index;
        match (op, x, y) {
            (BinOp::Add | BinOp::Sub, _, Some(0)) | (BinOp::Mul, _, Some(1)) if index(a) => Some(a),
            (BinOp::Add, Some(0), _) | (BinOp::Mul, Some(1), _) if index(b) => Some(b),
            _ => None,
        }
    }

    /// Opens a loop body; the returned register is the loop variable.
    pub fn begin_loop(&mut self) -> Reg {
        self.begin_body();
        self.new_reg(Ty::index())
    }

    /// Closes the innermost open body as a loop.
    pub fn end_loop(&mut self, var: Reg, start: Reg, end: Reg, hint: LoopHint) {
        assert!(self.stack.len() > 1, "end_loop without begin_loop");
        let body = self.end_body();
        self.push(Stmt::Loop { var, start, end, body, hint });
    }

    /// Opens a nested body (for `if` branches or loops built by hand).
    pub fn begin_body(&mut self) {
        self.stack.push(self.spare_lists.pop().unwrap_or_default());
        let (consts, ops) = self.spare.pop().unwrap_or_default();
        self.consts.push(consts);
        self.ops.push(ops);
    }

    /// Closes the innermost open body and returns its statements.
    pub fn end_body(&mut self) -> Vec<Stmt> {
        assert!(self.stack.len() > 1, "end_body without begin_body");
        if let (Some(mut consts), Some(mut ops)) = (self.consts.pop(), self.ops.pop()) {
            consts.clear();
            ops.clear();
            self.spare.push((consts, ops));
        }
        let mut buf = self.stack.pop().expect("checked above");
        let mut list = Vec::with_capacity(buf.len());
        list.append(&mut buf);
        self.spare_lists.push(buf);
        list
    }

    /// Finishes the program.
    pub fn finish(mut self) -> Program {
        assert_eq!(self.stack.len(), 1, "unclosed body in builder");
        self.prog.body = self.stack.pop().expect("checked above");
        self.return_to_pool();
        self.prog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The assignments of a statement list (not nested ones), as `(dst, op)`.
    fn assigns(body: &[Stmt]) -> Vec<(Reg, Op)> {
        body.iter()
            .filter_map(|s| match s {
                Stmt::Assign { dst, op } => Some((*dst, op.clone())),
                _ => None,
            })
            .collect()
    }

    /// A builder on a thread where one finished starts with that one's
    /// emptied maps and buffers, and builds the same program as a builder
    /// with none.
    #[test]
    fn a_finished_builder_leaves_its_maps_and_buffers_to_the_next() {
        fn build() -> (Program, usize, usize) {
            let mut b = Builder::new("k");
            let (pooled_maps, pooled_lists) = (b.spare.len(), b.spare_lists.len());
            let x = b.add_scalar_param("x", DType::I32);
            let x = b.emit(Op::Cast(x, Elem::Index));
            for _ in 0..3 {
                let var = b.begin_loop();
                let c = b.index(7);
                b.bin(BinOp::Add, x, c);
                b.bin(BinOp::Mul, var, c);
                let (zero, end) = (b.index(0), b.index(4));
                b.end_loop(var, zero, end, LoopHint::None);
            }
            (b.finish(), pooled_maps, pooled_lists)
        }
        std::thread::spawn(|| {
            let (first, maps, lists) = build();
            assert_eq!((maps, lists), (0, 0), "a new thread's first builder has nothing pooled");
            // The root list's maps and the loops' (one after another, so one set).
            let (second, maps, lists) = build();
            assert!((maps, lists) == (2, 1), "{maps} maps and {lists} buffers pooled");
            assert!(POOL.with(|p| p.borrow().maps.iter().all(|(c, o)| c.is_empty() && o.is_empty())));
            assert_eq!(format!("{first:?}"), format!("{second:?}"));
        })
        .join()
        .expect("the builder thread");
    }

    #[test]
    fn index_constants_and_operations_are_reused_within_one_list_only() {
        let mut b = Builder::new("k");
        let (c, again) = (b.index(5), b.index(5));
        assert_eq!(c, again);
        let x = b.add_scalar_param("x", DType::I32);
        let x = b.emit(Op::Cast(x, Elem::Index));
        let sum = b.bin(BinOp::Add, x, c);
        assert_eq!(b.bin(BinOp::Add, x, c), sum);
        assert_ne!(b.bin(BinOp::Add, c, x), sum, "operands in another order are another operation");
        // A nested list computes its own.
        let var = b.begin_loop();
        let (inner_c, inner_sum) = (b.index(5), b.bin(BinOp::Add, x, c));
        assert!(inner_c != c && inner_sum != sum);
        assert_eq!(b.bin(BinOp::Add, x, c), inner_sum);
        let end = b.index(4);
        b.end_loop(var, c, end, LoopHint::None);
        // Back in the outer list, its own again.
        assert_eq!((b.index(5), b.bin(BinOp::Add, x, c)), (c, sum));
        let prog = b.finish();
        // The outer list: one 5, x + 5 and 5 + x; the loop's body: its own 5 and x + 5.
        let outer = assigns(&prog.body);
        assert_eq!(outer.iter().filter(|(_, op)| matches!(op, Op::Const(Const::Int(5, _)))).count(), 1);
        assert_eq!(outer.iter().filter(|(_, op)| matches!(op, Op::Bin(BinOp::Add, ..))).count(), 2);
        let Some(Stmt::Loop { body, .. }) = prog.body.last() else { panic!("a loop last: {:?}", prog.body) };
        let inner = assigns(body);
        assert_eq!(inner.iter().filter(|(_, op)| matches!(op, Op::Const(Const::Int(5, _)))).count(), 1);
        assert_eq!(inner.iter().filter(|(_, op)| matches!(op, Op::Bin(BinOp::Add, ..))).count(), 1);
    }

    #[test]
    fn an_assignment_between_two_equal_operations_keeps_both() {
        let mut b = Builder::new("k");
        let acc = b.new_reg(Ty::index());
        let zero = b.index(0);
        b.assign(acc, Op::Copy(zero));
        let one = b.index(1);
        let first = b.bin(BinOp::Max, acc, one);
        b.assign(acc, Op::Copy(first));
        let second = b.bin(BinOp::Max, acc, one);
        assert_ne!(first, second, "acc changed in between");
    }

    #[test]
    fn index_arithmetic_on_constants_and_identities_is_folded() {
        let mut b = Builder::new("k");
        let (one, zero, c512) = (b.index(1), b.index(0), b.index(512));
        assert_eq!(b.bin(BinOp::Mul, one, c512), c512);
        let three = b.index(3);
        let p = b.bin(BinOp::Mul, three, c512);
        assert_eq!(b.const_value(p), Some(1536));
        let diff = b.bin(BinOp::Sub, three, c512);
        assert_eq!(diff, b.index(-509));
        let min = b.bin(BinOp::Min, three, c512);
        assert_eq!(min, three);
        let x = b.add_scalar_param("x", DType::I32);
        let x = b.emit(Op::Cast(x, Elem::Index));
        for (op, l, r) in [
            (BinOp::Add, x, zero),
            (BinOp::Add, zero, x),
            (BinOp::Sub, x, zero),
            (BinOp::Mul, x, one),
            (BinOp::Mul, one, x),
        ] {
            assert_eq!(b.bin(op, l, r), x, "{op:?}");
        }
        // Not folded: 0 - x, division (its failure is the program's), overflow.
        let neg = b.bin(BinOp::Sub, zero, x);
        assert_ne!(neg, x);
        let d = b.bin(BinOp::FloorDiv, c512, zero);
        assert_eq!(b.const_value(d), None);
        let big = b.index(i64::MAX);
        let two = b.index(2);
        let o = b.bin(BinOp::Mul, big, two);
        assert_eq!(b.const_value(o), None);
        // A data (not index) operation is neither folded nor reused.
        let f = b.constant(1.0, DType::F32);
        let (s1, s2) = (b.bin(BinOp::Add, f, f), b.bin(BinOp::Add, f, f));
        assert_ne!(s1, s2);
        let prog = b.finish();
        let kept: Vec<Op> =
            assigns(&prog.body).into_iter().map(|(_, op)| op).filter(|op| matches!(op, Op::Bin(..))).collect();
        assert_eq!(kept.len(), 5, "0 - x, 512 / 0, MAX * 2 and the two data additions: {kept:?}");
    }
}
