//! A builder that appends statements to a [`Program`] and infers result types.

use super::types::*;
use scaletune_space::DType;

/// Appends statements to a program under construction.
///
/// Statements go to the innermost open body; `begin_*`/`end_*` pairs open
/// and close loop and if bodies. Result types of operations are inferred from
/// their operands.
pub struct Builder {
    prog: Program,
    stack: Vec<Vec<Stmt>>,
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
        }
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
        self.push(Stmt::Assign { dst, op });
    }

    /// Appends a statement to the innermost open body.
    pub fn push(&mut self, stmt: Stmt) {
        self.stack.last_mut().expect("builder body stack is never empty").push(stmt);
    }

    /// An index constant.
    pub fn index(&mut self, v: i64) -> Reg {
        self.emit(Op::Const(Const::Int(v, Elem::Index)))
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

    /// Binary operation helper.
    pub fn bin(&mut self, op: BinOp, a: Reg, b: Reg) -> Reg {
        self.emit(Op::Bin(op, a, b))
    }

    /// Opens a loop body; the returned register is the loop variable.
    pub fn begin_loop(&mut self) -> Reg {
        self.stack.push(Vec::new());
        self.new_reg(Ty::index())
    }

    /// Closes the innermost open body as a loop.
    pub fn end_loop(&mut self, var: Reg, start: Reg, end: Reg, hint: LoopHint) {
        let body = self.stack.pop().expect("end_loop without begin_loop");
        self.push(Stmt::Loop { var, start, end, body, hint });
    }

    /// Opens a nested body (for `if` branches or loops built by hand).
    pub fn begin_body(&mut self) {
        self.stack.push(Vec::new());
    }

    /// Closes the innermost open body and returns its statements.
    pub fn end_body(&mut self) -> Vec<Stmt> {
        assert!(self.stack.len() > 1, "end_body without begin_body");
        self.stack.pop().expect("checked above")
    }

    /// Finishes the program.
    pub fn finish(mut self) -> Program {
        assert_eq!(self.stack.len(), 1, "unclosed body in builder");
        self.prog.body = self.stack.pop().expect("checked above");
        self.prog
    }
}
