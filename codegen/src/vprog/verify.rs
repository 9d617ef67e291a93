//! Type checker for vector programs, run between lowering and emission.

use super::types::*;
use scaletune_space::DType;
use thiserror::Error;

/// A vector program violates a typing rule.
#[derive(Debug, Error, PartialEq)]
#[error("vector program `{kernel}` is ill-typed at `{stmt}`: {reason}")]
pub struct VerifyError {
    /// Kernel name.
    pub kernel: String,
    /// The offending statement, printed briefly.
    pub stmt: String,
    /// What is wrong.
    pub reason: String,
}

/// Checks every statement of `prog` for operand and result types.
pub fn verify(prog: &Program) -> Result<(), VerifyError> {
    let mut v = Verifier { prog };
    v.body(&prog.body)
}

struct Verifier<'a> {
    prog: &'a Program,
}

type R = Result<(), String>;

impl Verifier<'_> {
    fn err(&self, s: &Stmt, reason: String) -> VerifyError {
        let mut text = format!("{s:?}");
        text.truncate(120);
        VerifyError { kernel: self.prog.name.clone(), stmt: text, reason }
    }

    fn body(&mut self, stmts: &[Stmt]) -> Result<(), VerifyError> {
        for s in stmts {
            self.stmt(s).map_err(|r| self.err(s, r))?;
            match s {
                Stmt::Loop { body, .. } => self.body(body)?,
                Stmt::If { then_body, else_body, .. } => {
                    self.body(then_body)?;
                    self.body(else_body)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn reg(&self, r: Reg) -> Result<Ty, String> {
        self.prog.regs.get(r.0 as usize).copied().ok_or_else(|| format!("register {r} does not exist"))
    }

    fn buf(&self, b: BufId) -> Result<&Buffer, String> {
        self.prog.buffers.get(b.0 as usize).ok_or_else(|| format!("buffer {} does not exist", b.0))
    }

    fn expect(&self, r: Reg, want: Ty, what: &str) -> R {
        let t = self.reg(r)?;
        if t != want {
            return Err(format!("{what} {r} has type {t}, expected {want}"));
        }
        Ok(())
    }

    fn scalar_index(&self, r: Reg, what: &str) -> R {
        self.expect(r, Ty::index(), what)
    }

    fn mask(&self, m: Option<Reg>, lanes: Option<Lanes>) -> R {
        if let Some(m) = m {
            let lanes = lanes.ok_or("mask on a scalar access")?;
            self.expect(m, Ty::mask(lanes), "mask")?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R {
        match s {
            Stmt::Assign { dst, op } => {
                let got = self.op(op)?;
                let want = self.reg(*dst)?;
                if got != want {
                    return Err(format!("result type {got} does not match destination type {want}"));
                }
                Ok(())
            }
            Stmt::Store { buf, index, value } => {
                let b = self.buf(*buf)?;
                self.scalar_index(*index, "store index")?;
                self.expect(*value, Ty::scalar(Elem::Data(b.dtype)), "stored value")
            }
            Stmt::VStore { buf, base, value, mask } => {
                let b = self.buf(*buf)?;
                self.scalar_index(*base, "vstore base")?;
                let t = self.reg(*value)?;
                if t.elem != Elem::Data(b.dtype) || !t.is_vector() {
                    return Err(format!("vstore of {t} into {} buffer", b.dtype));
                }
                self.mask(*mask, t.lanes)
            }
            Stmt::Scatter { buf, indices, value, mask } => {
                let b = self.buf(*buf)?;
                let t = self.reg(*value)?;
                if t.elem != Elem::Data(b.dtype) || !t.is_vector() {
                    return Err(format!("scatter of {t} into {} buffer", b.dtype));
                }
                self.expect(*indices, t.with_elem(Elem::Index), "scatter indices")?;
                self.mask(*mask, t.lanes)
            }
            Stmt::Loop { var, start, end, .. } => {
                self.scalar_index(*var, "loop variable")?;
                self.scalar_index(*start, "loop start")?;
                self.scalar_index(*end, "loop end")
            }
            Stmt::If { cond, .. } => self.expect(*cond, Ty::bool(), "if condition"),
            Stmt::ZaZero { tile } => za_tile(*tile),
            Stmt::ZaLoad { tile, row, buf, base, mask } | Stmt::ZaStore { tile, row, buf, base, mask } => {
                za_tile(*tile)?;
                let b = self.buf(*buf)?;
                if !matches!(b.dtype, DType::F32 | DType::I32) {
                    return Err(format!("ZA slice of a {} buffer (32-bit tiles only)", b.dtype));
                }
                self.scalar_index(*row, "ZA slice")?;
                self.scalar_index(*base, "ZA slice base")?;
                self.mask(*mask, Some(za_lanes()))
            }
            Stmt::Mopa { tile, a, b, a_mask, b_mask } => {
                za_tile(*tile)?;
                let t = self.reg(*a)?;
                let group = match t.elem {
                    Elem::Data(d) => mopa_group(d).ok_or_else(|| format!("outer product of {d} vectors"))?,
                    _ => return Err(format!("outer product of {t}")),
                };
                let want = Ty::vector(t.elem, za_lanes().times(group));
                self.expect(*a, want, "outer product operand")?;
                self.expect(*b, want, "outer product operand")?;
                self.mask(*a_mask, Some(want.lanes.expect("vector")))?;
                self.mask(*b_mask, want.lanes)
            }
        }
    }

    fn same(&self, a: Reg, b: Reg) -> Result<Ty, String> {
        let (ta, tb) = (self.reg(a)?, self.reg(b)?);
        if ta != tb {
            return Err(format!("operands {a}: {ta} and {b}: {tb} differ in type"));
        }
        Ok(ta)
    }

    fn op(&self, op: &Op) -> Result<Ty, String> {
        Ok(match op {
            Op::Copy(r) => self.reg(*r)?,
            Op::Const(c) => Ty::scalar(c.elem()),
            Op::VScale => Ty::index(),
            Op::Bin(o, a, b) => {
                let t = self.same(*a, *b)?;
                let ok = match o {
                    BinOp::Div => t.elem.is_float(),
                    BinOp::FloorDiv | BinOp::FloorMod | BinOp::Shl | BinOp::Shr => t.elem.is_int(),
                    BinOp::And | BinOp::Or => t.elem.is_int() || t.elem == Elem::Bool,
                    _ => t.elem != Elem::Bool,
                };
                if !ok {
                    return Err(format!("{o:?} is not defined on {t}"));
                }
                t
            }
            Op::Un(o, a) => {
                let t = self.reg(*a)?;
                let ok = match o {
                    UnOp::Not => t.elem == Elem::Bool,
                    UnOp::Sqrt | UnOp::Floor | UnOp::RoundEven => t.elem.is_float(),
                    UnOp::Neg | UnOp::Abs => t.elem != Elem::Bool,
                };
                if !ok {
                    return Err(format!("{o:?} is not defined on {t}"));
                }
                t
            }
            Op::Fma(a, b, c) => {
                let t = self.same(*a, *b)?;
                self.same(*a, *c)?;
                if !t.elem.is_float() {
                    return Err(format!("fma on {t}"));
                }
                t
            }
            Op::Cmp(_, a, b) => self.same(*a, *b)?.with_elem(Elem::Bool),
            Op::Select(c, a, b) => {
                let t = self.same(*a, *b)?;
                let tc = self.reg(*c)?;
                if tc.elem != Elem::Bool || (tc.is_vector() && tc.lanes != t.lanes) {
                    return Err(format!("select condition {tc} does not fit operands {t}"));
                }
                t
            }
            Op::Cast(r, e) => {
                let t = self.reg(*r)?;
                if t.elem == Elem::Bool || *e == Elem::Bool {
                    return Err("cast to or from bool".into());
                }
                t.with_elem(*e)
            }
            Op::Bitcast(r, e) => {
                let t = self.reg(*r)?;
                if t.elem.bits() != e.bits() || t.elem == Elem::Bool {
                    return Err(format!("bitcast from {} to {e} changes width", t.elem));
                }
                t.with_elem(*e)
            }
            Op::Splat(r, l) => {
                let t = self.reg(*r)?;
                if t.is_vector() {
                    return Err("splat of a vector".into());
                }
                Ty::vector(t.elem, *l)
            }
            Op::Step(l) => Ty::vector(Elem::Index, *l),
            Op::ActiveLaneMask { base, bound, lanes } => {
                self.scalar_index(*base, "mask base")?;
                self.scalar_index(*bound, "mask bound")?;
                Ty::mask(*lanes)
            }
            Op::Load { buf, index } => {
                let b = self.buf(*buf)?;
                self.scalar_index(*index, "load index")?;
                Ty::scalar(Elem::Data(b.dtype))
            }
            Op::VLoad { buf, base, lanes, mask } => {
                let b = self.buf(*buf)?;
                self.scalar_index(*base, "vload base")?;
                self.mask(*mask, Some(*lanes))?;
                Ty::vector(Elem::Data(b.dtype), *lanes)
            }
            Op::Gather { buf, indices, mask } => {
                let b = self.buf(*buf)?;
                let t = self.reg(*indices)?;
                if t.elem != Elem::Index || !t.is_vector() {
                    return Err(format!("gather indices have type {t}"));
                }
                self.mask(*mask, t.lanes)?;
                t.with_elem(Elem::Data(b.dtype))
            }
            Op::Reduce(_, r) => {
                let t = self.reg(*r)?;
                if !t.is_vector() || t.elem == Elem::Bool {
                    return Err(format!("reduce of {t}"));
                }
                Ty::scalar(t.elem)
            }
            Op::Extract(v, i) => {
                let t = self.reg(*v)?;
                self.scalar_index(*i, "extract lane")?;
                if !t.is_vector() {
                    return Err("extract from a scalar".into());
                }
                Ty::scalar(t.elem)
            }
            Op::ZaReadVertical { tile, slice } => {
                za_tile(*tile)?;
                self.scalar_index(*slice, "ZA slice")?;
                Ty::vector(Elem::F32, za_lanes())
            }
            Op::Interleave(a, b) => {
                let t = self.same(*a, *b)?;
                match t.lanes {
                    Some(l) => Ty { elem: t.elem, lanes: Some(l.times(2)) },
                    None => return Err("interleave of scalars".into()),
                }
            }
        })
    }
}

/// Reduction elements per row of an outer-product operand of `d` elements:
/// 1 for f32 (`fmopa`), 2 for f16 and bf16 (widening `fmopa` / `bfmopa`), 4 for i8 (`smopa`).
pub fn mopa_group(d: DType) -> Option<u32> {
    match d {
        DType::F32 => Some(1),
        DType::F16 | DType::BF16 => Some(2),
        DType::I8 => Some(4),
        _ => None,
    }
}

/// The lanes of one f32 streaming vector: the side of a ZA tile.
fn za_lanes() -> Lanes {
    Lanes::scalable(4)
}

fn za_tile(tile: u8) -> Result<(), String> {
    if tile < ZA_TILES {
        Ok(())
    } else {
        Err(format!("ZA tile {tile} does not exist (f32 tiles 0 to {})", ZA_TILES - 1))
    }
}
