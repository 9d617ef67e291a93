//! Emission of vprog operations (`Op`) and of vector memory statements.
//!
//! The semantics follow the doc comments of `vprog::types` exactly; notes on
//! the less obvious cases:
//! - integer `Add`/`Sub`/`Mul`/`Neg` wrap (no `nsw`/`nuw` flags);
//! - `FloorDiv`/`FloorMod` round toward negative infinity (`sdiv`/`srem`
//!   plus a sign fix-up). A zero divisor (outside the defined domain) gives
//!   `a` and `0` instead of undefined behaviour, and `MIN / -1` wraps;
//! - shift amounts are taken modulo the bit width (like Rust's
//!   `wrapping_shl`/`wrapping_shr`), never poison;
//! - float `Lt`/`Le`/`Eq` are ordered comparisons and `Ne` is unordered
//!   (true when a NaN is involved); booleans compare as unsigned (false < true);
//! - `ActiveLaneMask` compares signed indices: both operands are offset by
//!   2^63 (a sign-bit flip) before `llvm.get.active.lane.mask`, which compares
//!   unsigned, so lane `i` is exactly `base + i < bound` for every i64;
//! - `Cast` float to int is `llvm.fptosi.sat`: it truncates toward zero and
//!   saturates (NaN gives 0) where `fptosi` would give poison; int to int
//!   sign-extends or truncates (wraps);
//! - float add/sub/mul carry the `contract` flag so that FMAs form.

use super::emit::{Emitter, NONAME};
use super::types::{elem_align, wrap_int};
use super::LlvmError;
use crate::target::Arch;
use crate::vprog::{BinOp, BufId, CmpOp, Const, Elem, Lanes, Op, ReduceOp, Reg, Ty, UnOp};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate as IP, LLVMRealPredicate as RP};
use scaletune_space::DType;

type V = LLVMValueRef;

impl Emitter<'_> {
    /// Emits `op`, whose result has type `ty`, and returns its value.
    pub(crate) fn op(&mut self, op: &Op, ty: Ty) -> Result<V, LlvmError> {
        let b = self.b;
        // SAFETY (for every `unsafe` block in this function): operands are
        // values of this function whose types were checked by vprog::verify to
        // match what each instruction requires.
        Ok(match op {
            Op::Copy(r) => self.load_reg(*r),
            Op::Const(c) => self.constant(*c),
            Op::VScale => self.vscale()?,
            Op::Bin(o, x, y) => self.bin(*o, *x, *y)?,
            Op::Un(o, x) => self.un(*o, *x)?,
            Op::Fma(x, y, z) => self.fma(self.load_reg(*x), self.load_reg(*y), self.load_reg(*z))?,
            Op::Cmp(o, x, y) => self.cmp(*o, *x, *y),
            Op::Select(c, x, y) => {
                let (c, x, y) = (self.load_reg(*c), self.load_reg(*x), self.load_reg(*y));
                unsafe { LLVMBuildSelect(b, c, x, y, NONAME) }
            }
            Op::Cast(r, e) => self.cast(*r, *e)?,
            Op::Bitcast(r, e) => {
                let v = self.load_reg(*r);
                if self.prog.ty(*r).elem == *e {
                    v
                } else {
                    unsafe { LLVMBuildBitCast(b, v, self.t.ty(ty), NONAME) }
                }
            }
            Op::Splat(r, lanes) => self.splat(self.load_reg(*r), ty.elem, *lanes),
            Op::Step(lanes) => self.step(*lanes)?,
            Op::ActiveLaneMask { base, bound, lanes } => {
                let sign = self.t.i64_const(i64::MIN);
                let (base, bound) = (self.load_reg(*base), self.load_reg(*bound));
                let (base, bound) =
                    unsafe { (LLVMBuildXor(b, base, sign, NONAME), LLVMBuildXor(b, bound, sign, NONAME)) };
                self.active_lane_mask(self.t.ty(Ty::mask(*lanes)), base, bound)?
            }
            Op::Load { buf, index } => {
                let p = self.elem_ptr(*buf, self.load_reg(*index), true);
                self.load(self.t.ty(ty), p, elem_align(self.buf_elem(*buf)))
            }
            Op::VLoad { buf, base, lanes: _, mask } => {
                let align = elem_align(self.buf_elem(*buf));
                let p = self.elem_ptr(*buf, self.load_reg(*base), mask.is_none());
                match mask {
                    None => self.load(self.t.ty(ty), p, align),
                    Some(m) => self.masked_load(self.t.ty(ty), p, align, self.load_reg(*m))?,
                }
            }
            Op::Gather { buf, indices, mask } => {
                let ptrs = self.element_ptrs(*buf, *indices);
                let mask = self.mask_or_all(*mask, ty);
                self.masked_gather(self.t.ty(ty), ptrs, elem_align(self.buf_elem(*buf)), mask)?
            }
            Op::Reduce(o, r) => self.reduce(*o, *r)?,
            Op::Extract(v, lane) => {
                let (v, lane) = (self.load_reg(*v), self.load_reg(*lane));
                unsafe { LLVMBuildExtractElement(b, v, lane, NONAME) }
            }
            Op::ZaReadVertical { tile, slice } => self.za_read_vertical(*tile, *slice, ty)?,
            Op::Interleave(x, y) => {
                let args = [self.load_reg(*x), self.load_reg(*y)];
                self.intrinsic("llvm.vector.interleave2", &[self.t.ty(ty)], &args)?
            }
        })
    }

    fn constant(&self, c: Const) -> V {
        // SAFETY: the constant's type matches its kind.
        unsafe {
            match c {
                Const::Float(v, DType::BF16) => self.bf16_const(v),
                Const::Float(v, d) => LLVMConstReal(self.t.elem(Elem::Data(d)), v),
                Const::Int(v, e) => self.t.const_int(self.t.elem(e), wrap_int(v, e)),
                Const::Bool(v) => LLVMConstInt(self.t.i1, u64::from(v), 0),
            }
        }
    }

    /// An integer constant of type `ty` (splatted for vectors).
    fn int_like(&self, ty: Ty, v: i64) -> V {
        let c = self.t.const_int(self.t.elem(ty.elem), wrap_int(v, ty.elem));
        match ty.lanes {
            None => c,
            Some(l) => self.splat(c, ty.elem, l),
        }
    }

    /// A vector whose lanes all equal the scalar `v` (insertelement + shufflevector).
    pub(crate) fn splat(&self, v: V, elem: Elem, lanes: Lanes) -> V {
        let vec_ty = self.t.ty(Ty::vector(elem, lanes));
        let mask_ty = self.t.vector(self.t.i32, lanes);
        // SAFETY: `v` has type `elem`; a zero mask is valid for scalable shuffles.
        unsafe {
            let poison = LLVMGetPoison(vec_ty);
            let ins = LLVMBuildInsertElement(self.b, poison, v, self.t.i64_const(0), NONAME);
            LLVMBuildShuffleVector(self.b, ins, poison, LLVMConstNull(mask_ty), NONAME)
        }
    }

    fn step(&self, lanes: Lanes) -> Result<V, LlvmError> {
        let vec_ty = self.t.vector(self.t.i64, lanes);
        if lanes.scalable {
            return self.step_vector(vec_ty);
        }
        let mut items: Vec<V> = (0..lanes.min).map(|i| self.t.i64_const(i64::from(i))).collect();
        // SAFETY: `items` holds `lanes.min` i64 constants.
        Ok(unsafe { LLVMConstVector(items.as_mut_ptr(), lanes.min) })
    }

    fn load(&self, ty: LLVMTypeRef, p: V, align: u32) -> V {
        // SAFETY: `p` is a pointer; `ty` a first-class type.
        unsafe {
            let v = LLVMBuildLoad2(self.b, ty, p, NONAME);
            LLVMSetAlignment(v, align);
            v
        }
    }

    fn flagged(&self, v: V, flags: llvm_sys::LLVMFastMathFlags) -> V {
        // SAFETY: `v` is a live value; flags only apply to FP operations.
        unsafe {
            if LLVMCanValueUseFastMathFlags(v) != 0 {
                LLVMSetFastMathFlags(v, flags);
            }
        }
        v
    }

    fn bin(&self, o: BinOp, x: Reg, y: Reg) -> Result<V, LlvmError> {
        let ty = self.prog.ty(x);
        let float = ty.elem.is_float();
        let (a, c) = (self.load_reg(x), self.load_reg(y));
        let b = self.b;
        let contract = llvm_sys::LLVMFastMathAllowContract;
        // SAFETY: `a` and `c` have the same type, as vprog::verify checked.
        Ok(unsafe {
            match o {
                BinOp::Add if float => self.flagged(LLVMBuildFAdd(b, a, c, NONAME), contract),
                BinOp::Sub if float => self.flagged(LLVMBuildFSub(b, a, c, NONAME), contract),
                BinOp::Mul if float => self.flagged(LLVMBuildFMul(b, a, c, NONAME), contract),
                BinOp::Add => LLVMBuildAdd(b, a, c, NONAME),
                BinOp::Sub => LLVMBuildSub(b, a, c, NONAME),
                BinOp::Mul => LLVMBuildMul(b, a, c, NONAME),
                BinOp::Div => LLVMBuildFDiv(b, a, c, NONAME),
                BinOp::FloorDiv => self.floor_div_mod(ty, a, c, false),
                BinOp::FloorMod => self.floor_div_mod(ty, a, c, true),
                BinOp::Min if float => self.binary_intrinsic("llvm.minnum", a, c)?,
                BinOp::Max if float => self.binary_intrinsic("llvm.maxnum", a, c)?,
                BinOp::Min => self.binary_intrinsic("llvm.smin", a, c)?,
                BinOp::Max => self.binary_intrinsic("llvm.smax", a, c)?,
                BinOp::And => LLVMBuildAnd(b, a, c, NONAME),
                BinOp::Or => LLVMBuildOr(b, a, c, NONAME),
                BinOp::Shl | BinOp::Shr => {
                    let amount = LLVMBuildAnd(b, c, self.int_like(ty, i64::from(ty.elem.bits()) - 1), NONAME);
                    if o == BinOp::Shl {
                        LLVMBuildShl(b, a, amount, NONAME)
                    } else {
                        LLVMBuildAShr(b, a, amount, NONAME)
                    }
                }
            }
        })
    }

    /// Floor division or floor modulo of integers of type `ty`.
    fn floor_div_mod(&self, ty: Ty, a: V, d: V, modulo: bool) -> V {
        let b = self.b;
        let (zero, one, minus_one) = (self.int_like(ty, 0), self.int_like(ty, 1), self.int_like(ty, -1));
        // SAFETY: all operands have type `ty` (or the matching i1 shape).
        unsafe {
            // Divisors 0 and -1 are replaced by 1 so that sdiv/srem never trap.
            let is_minus_one = LLVMBuildICmp(b, IP::LLVMIntEQ, d, minus_one, NONAME);
            let is_zero = LLVMBuildICmp(b, IP::LLVMIntEQ, d, zero, NONAME);
            let unsafe_divisor = LLVMBuildOr(b, is_minus_one, is_zero, NONAME);
            let safe = LLVMBuildSelect(b, unsafe_divisor, one, d, NONAME);
            let q = LLVMBuildSDiv(b, a, safe, NONAME);
            let r = LLVMBuildSRem(b, a, safe, NONAME);
            // Truncated results are off by one when the remainder is non-zero
            // and its sign differs from the divisor's.
            let r_nonzero = LLVMBuildICmp(b, IP::LLVMIntNE, r, zero, NONAME);
            let signs = LLVMBuildXor(b, r, d, NONAME);
            let signs_differ = LLVMBuildICmp(b, IP::LLVMIntSLT, signs, zero, NONAME);
            let fix = LLVMBuildAnd(b, r_nonzero, signs_differ, NONAME);
            if modulo {
                // r is 0 for the replaced divisors, so no fix-up applies.
                let adjust = LLVMBuildSelect(b, fix, d, zero, NONAME);
                LLVMBuildAdd(b, r, adjust, NONAME)
            } else {
                let q = LLVMBuildAdd(b, q, LLVMBuildSExt(b, fix, self.t.ty(ty), NONAME), NONAME);
                let negated = LLVMBuildSub(b, zero, a, NONAME);
                LLVMBuildSelect(b, is_minus_one, negated, q, NONAME)
            }
        }
    }

    fn un(&self, o: UnOp, x: Reg) -> Result<V, LlvmError> {
        let ty = self.prog.ty(x);
        let v = self.load_reg(x);
        let b = self.b;
        // SAFETY: the operation suits the operand type (vprog::verify).
        Ok(unsafe {
            match o {
                UnOp::Neg if ty.elem.is_float() => LLVMBuildFNeg(b, v, NONAME),
                UnOp::Neg => LLVMBuildSub(b, self.int_like(ty, 0), v, NONAME),
                UnOp::Abs if ty.elem.is_float() => self.unary_intrinsic("llvm.fabs", v)?,
                UnOp::Abs => self.int_abs(v)?,
                UnOp::Sqrt => self.unary_intrinsic("llvm.sqrt", v)?,
                UnOp::Floor => self.unary_intrinsic("llvm.floor", v)?,
                UnOp::RoundEven => self.unary_intrinsic("llvm.roundeven", v)?,
                UnOp::Not => LLVMBuildNot(b, v, NONAME),
            }
        })
    }

    fn cmp(&self, o: CmpOp, x: Reg, y: Reg) -> V {
        let elem = self.prog.ty(x).elem;
        let (a, c) = (self.load_reg(x), self.load_reg(y));
        // SAFETY: both operands have the same type.
        unsafe {
            if elem.is_float() {
                let p = match o {
                    CmpOp::Lt => RP::LLVMRealOLT,
                    CmpOp::Le => RP::LLVMRealOLE,
                    CmpOp::Eq => RP::LLVMRealOEQ,
                    CmpOp::Ne => RP::LLVMRealUNE,
                };
                LLVMBuildFCmp(self.b, p, a, c, NONAME)
            } else {
                let unsigned = elem == Elem::Bool;
                let p = match o {
                    CmpOp::Lt if unsigned => IP::LLVMIntULT,
                    CmpOp::Le if unsigned => IP::LLVMIntULE,
                    CmpOp::Lt => IP::LLVMIntSLT,
                    CmpOp::Le => IP::LLVMIntSLE,
                    CmpOp::Eq => IP::LLVMIntEQ,
                    CmpOp::Ne => IP::LLVMIntNE,
                };
                LLVMBuildICmp(self.b, p, a, c, NONAME)
            }
        }
    }

    /// Numeric conversion: fpext/fptrunc, `llvm.fptosi.sat`, sitofp, sext/trunc.
    fn cast(&self, r: Reg, to: Elem) -> Result<V, LlvmError> {
        let from_ty = self.prog.ty(r);
        let from = from_ty.elem;
        let v = self.load_reg(r);
        if from == to {
            return Ok(v);
        }
        if from == Elem::Data(DType::BF16) {
            return self.widen_bf16(v, to, from_ty);
        }
        if to == Elem::Data(DType::BF16) {
            return self.narrow_to_bf16(v, from, from_ty);
        }
        let dest = self.t.ty(from_ty.with_elem(to));
        let b = self.b;
        if from.is_float() && !to.is_float() {
            return self.float_to_int(v, from_ty, to);
        }
        // SAFETY: source and destination have the same shape; bool casts are
        // rejected by vprog::verify.
        Ok(unsafe {
            match (from.is_float(), to.is_float()) {
                (true, true) if to.bits() > from.bits() => LLVMBuildFPExt(b, v, dest, NONAME),
                (true, true) => LLVMBuildFPTrunc(b, v, dest, NONAME),
                (false, true) => LLVMBuildSIToFP(b, v, dest, NONAME),
                (false, false) if to.bits() > from.bits() => LLVMBuildSExt(b, v, dest, NONAME),
                (false, false) if to.bits() < from.bits() => LLVMBuildTrunc(b, v, dest, NONAME),
                (_, false) => v,
            }
        })
    }

    /// Float to integer: truncates toward zero and saturates (NaN gives 0)
    /// with `llvm.fptosi.sat`, instead of `fptosi`'s poison outside the
    /// range (the interpreter's semantics; free on AArch64, where `fcvtzs`
    /// saturates). x86 vectors take selects instead
    /// ([`Emitter::float_to_int_selected`]).
    ///
    /// f16 is first widened to f32 (exactly): LLVM 19 cannot legalize
    /// `fptosi.sat` of f16 vectors on RVV, nor of `<1 x half>` on AArch64.
    pub(crate) fn float_to_int(&self, v: V, from_ty: Ty, to: Elem) -> Result<V, LlvmError> {
        let (v, from_ty) = if from_ty.elem == Elem::Data(DType::F16) {
            let wide_ty = from_ty.with_elem(Elem::F32);
            // SAFETY: f16 to f32 of the same shape.
            (unsafe { LLVMBuildFPExt(self.b, v, self.t.ty(wide_ty), NONAME) }, wide_ty)
        } else {
            (v, from_ty)
        };
        if self.target.arch == Arch::X86_64 && from_ty.lanes.is_some() {
            return Ok(self.float_to_int_selected(v, from_ty, to));
        }
        let dest = self.t.ty(from_ty.with_elem(to));
        self.intrinsic("llvm.fptosi.sat", &[dest, self.t.ty(from_ty)], &[v])
    }

    /// [`Emitter::float_to_int`] of an x86 vector: LLVM 19 scalarizes a
    /// vector `fptosi.sat` there (a conversion and two compares per lane:
    /// a vectorized `cos` took 597 lines of assembly for its loop instead
    /// of 164). `fptosi` with the lanes out of range and the NaN lanes
    /// replaced by selects computes the same in a few vector instructions;
    /// the poison `fptosi` gives for those lanes is never selected. Below
    /// `-2^(b-1)` every float truncates below the range (between it and
    /// `-2^(b-1) - 1` the saturated and the truncated value are both the
    /// minimum), and from `2^(b-1)` up every float truncates above it.
    fn float_to_int_selected(&self, v: V, from_ty: Ty, to: Elem) -> V {
        let int_ty = from_ty.with_elem(to);
        let half = 1i128 << (to.bits() - 1);
        let fconst = |x: f64| {
            // SAFETY: a float constant of the operand's element type.
            let c = unsafe { LLVMConstReal(self.t.elem(from_ty.elem), x) };
            match from_ty.lanes {
                Some(l) => self.splat(c, from_ty.elem, l),
                None => c,
            }
        };
        let (lo, hi) = (fconst(-(half as f64)), fconst(half as f64));
        let (min, max, zero) =
            (self.int_like(int_ty, (-half) as i64), self.int_like(int_ty, (half - 1) as i64), self.int_like(int_ty, 0));
        let b = self.b;
        // SAFETY: `v` is a float vector of `from_ty`; every compare and
        // select is of that shape, with integers of `int_ty`.
        unsafe {
            let t = LLVMBuildFPToSI(b, v, self.t.ty(int_ty), NONAME);
            let below = LLVMBuildFCmp(b, RP::LLVMRealOLT, v, lo, NONAME);
            let r = LLVMBuildSelect(b, below, min, t, NONAME);
            let above = LLVMBuildFCmp(b, RP::LLVMRealOGE, v, hi, NONAME);
            let r = LLVMBuildSelect(b, above, max, r, NONAME);
            let nan = LLVMBuildFCmp(b, RP::LLVMRealUNO, v, v, NONAME);
            LLVMBuildSelect(b, nan, zero, r, NONAME)
        }
    }

    /// Reads a mask register, or makes an all-true mask of `ty`'s shape.
    fn mask_or_all(&self, mask: Option<Reg>, ty: Ty) -> V {
        match mask {
            Some(m) => self.load_reg(m),
            // SAFETY: an all-ones i1 vector constant (a splat for scalable types).
            None => unsafe { LLVMConstAllOnes(self.t.ty(ty.with_elem(Elem::Bool))) },
        }
    }

    /// A vector of pointers to the elements `indices` of `buf`.
    ///
    /// On AArch64 and x86, when every valid index of the buffer fits in 32
    /// bits, the indices are truncated to i32 before the (sign-extending)
    /// GEP: addresses of valid lanes are unchanged, and the targets use
    /// 32-bit vector offsets (`ld1w z.s, [x, z.s, sxtw #2]` on SVE,
    /// `vgatherdps` on AVX-512) instead of splitting the gather. RVV indexes
    /// with XLEN-wide offsets anyway, so there the indices stay i64.
    fn element_ptrs(&self, buf: BufId, indices: Reg) -> V {
        let idx_ty = self.prog.ty(indices);
        let mut idx = self.load_reg(indices);
        if self.target.arch != Arch::Riscv64 && self.max_len(buf) <= i32::MAX as usize {
            // SAFETY: truncation of an i64 vector to an i32 vector of the same shape.
            idx = unsafe { LLVMBuildTrunc(self.b, idx, self.t.ty(idx_ty.with_elem(Elem::I32)), NONAME) };
        }
        self.elem_ptr(buf, idx, false)
    }

    /// The largest length of `buf` over the target's vscale values.
    fn max_len(&self, buf: BufId) -> usize {
        let b = self.prog.buffer(buf);
        self.target.caps.vscale_values.iter().map(|&v| b.len_at(v)).max().unwrap_or(b.len)
    }

    /// `VStore`: a plain vector store, or `llvm.masked.store`.
    pub(crate) fn vstore(&mut self, buf: BufId, base: Reg, value: Reg, mask: Option<Reg>) -> Result<(), LlvmError> {
        let align = elem_align(self.buf_elem(buf));
        let p = self.elem_ptr(buf, self.load_reg(base), mask.is_none());
        let v = self.load_reg(value);
        match mask {
            None => self.store(v, p, align),
            Some(m) => self.masked_store(v, p, align, self.load_reg(m))?,
        }
        Ok(())
    }

    /// `Scatter`: `llvm.masked.scatter` (all-true mask when none is given).
    pub(crate) fn scatter(&mut self, buf: BufId, indices: Reg, value: Reg, mask: Option<Reg>) -> Result<(), LlvmError> {
        let ptrs = self.element_ptrs(buf, indices);
        let mask = self.mask_or_all(mask, self.prog.ty(value));
        let v = self.load_reg(value);
        self.masked_scatter(v, ptrs, elem_align(self.buf_elem(buf)), mask)
    }

    fn reduce(&self, o: ReduceOp, r: Reg) -> Result<V, LlvmError> {
        let ty = self.prog.ty(r);
        let v = self.load_reg(r);
        if ty.elem.is_float() {
            match o {
                ReduceOp::Add => self.reduce_fadd(v, self.t.elem(ty.elem)),
                ReduceOp::Max => self.unary_intrinsic("llvm.vector.reduce.fmax", v),
                ReduceOp::Min => self.unary_intrinsic("llvm.vector.reduce.fmin", v),
            }
        } else {
            let name = match o {
                ReduceOp::Add => "llvm.vector.reduce.add",
                ReduceOp::Max => "llvm.vector.reduce.smax",
                ReduceOp::Min => "llvm.vector.reduce.smin",
            };
            self.unary_intrinsic(name, v)
        }
    }
}
