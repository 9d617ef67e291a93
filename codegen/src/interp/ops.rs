//! Evaluation of operations (`dst = op`) on scalars and vectors.
//!
//! Vector results are built in a scratch vector of the machine and swapped
//! into the destination register, whose old buffer becomes the next scratch:
//! after warm-up no operation allocates.

use super::exec::{lane_of, Machine};
use super::value::{self, Class, Scalar};
use super::InterpError;
use crate::vprog::{BinOp, BufId, CmpOp, Const, Op, ReduceOp, Reg, UnOp};
use std::mem::take;

type R = Result<(), InterpError>;

fn internal(what: impl Into<String>) -> InterpError {
    InterpError::Internal(what.into())
}

fn same_len(a: usize, b: usize) -> R {
    if a != b {
        return Err(internal(format!("vector operands of {a} and {b} lanes")));
    }
    Ok(())
}

/// Applies `f` lane by lane to two slices of equal length, pushing into `out`.
#[inline]
fn zip_into<T: Copy, U>(out: &mut Vec<U>, x: &[T], y: &[T], mut f: impl FnMut(T, T) -> Result<U, InterpError>) -> R {
    same_len(x.len(), y.len())?;
    for (&a, &b) in x.iter().zip(y) {
        out.push(f(a, b)?);
    }
    Ok(())
}

impl Machine<'_> {
    /// Executes `dst = op`.
    ///
    /// Scalar arithmetic, scalar fma and scalar loads take a small inlined
    /// fast path; everything else goes through [`Machine::assign_general`].
    #[inline]
    pub(crate) fn assign(&mut self, dst: Reg, op: &Op) -> R {
        match *op {
            Op::Bin(o, a, b) if self.rf.lanes(a).is_none() => {
                let kind = self.rf.kind(a);
                match kind.class() {
                    Class::Int => self.rf.set_i(dst, value::int_bin(o, kind, self.rf.i(a)?, self.rf.i(b)?)?),
                    Class::Float => self.rf.set_f(dst, value::float_bin(o, kind, self.rf.f(a)?, self.rf.f(b)?)?),
                    Class::Bool => self.rf.set_b(dst, value::bool_bin(o, self.rf.b(a)?, self.rf.b(b)?)?),
                }
            }
            Op::Fma(a, b, c) if self.rf.lanes(a).is_none() => {
                let kind = self.rf.kind(a);
                self.rf.set_f(dst, value::fma(kind, self.rf.f(a)?, self.rf.f(b)?, self.rf.f(c)?))
            }
            Op::Load { buf, index } => {
                self.stats.loads += 1;
                self.stats.elements_loaded += 1;
                let index = self.rf.i(index)?;
                match self.rf.class(dst) {
                    Class::Float => {
                        let x = self.mem.read_f(buf, index)?;
                        self.rf.set_f(dst, x)
                    }
                    Class::Int => {
                        let x = self.mem.read_i(buf, index)?;
                        self.rf.set_i(dst, x)
                    }
                    Class::Bool => Err(internal("load of a bool")),
                }
            }
            _ => self.assign_general(dst, op),
        }
    }

    /// Executes `dst = op` for every operation (the slow path of [`Machine::assign`]).
    #[inline(never)]
    fn assign_general(&mut self, dst: Reg, op: &Op) -> R {
        if self.rf.lanes(dst).is_some() {
            self.stats.vector_ops += 1;
        }
        match op {
            Op::Copy(a) => self.copy(dst, *a),
            Op::Const(c) => self.constant(dst, c),
            Op::VScale => self.rf.set_i(dst, i64::from(self.vscale)),
            Op::Bin(o, a, b) => self.bin(dst, *o, *a, *b),
            Op::Un(o, a) => self.un(dst, *o, *a),
            Op::Fma(a, b, c) => self.fma(dst, *a, *b, *c),
            Op::Cmp(o, a, b) => self.cmp(dst, *o, *a, *b),
            Op::Select(c, a, b) => self.select(dst, *c, *a, *b),
            Op::Cast(a, _) => self.convert(dst, *a, false),
            Op::Bitcast(a, _) => self.convert(dst, *a, true),
            Op::Splat(a, _) => self.splat(dst, *a),
            Op::Step(_) => {
                let n = self.dst_lanes(dst)?;
                let mut out = take(&mut self.si);
                out.clear();
                out.extend(0..n as i64);
                self.si = self.rf.put_vi(dst, out)?;
                Ok(())
            }
            Op::ActiveLaneMask { base, bound, .. } => {
                let (base, bound) = (i128::from(self.rf.i(*base)?), i128::from(self.rf.i(*bound)?));
                let n = self.dst_lanes(dst)?;
                let mut out = take(&mut self.sb);
                out.clear();
                out.extend((0..n as i128).map(|i| base + i < bound));
                self.sb = self.rf.put_vb(dst, out)?;
                Ok(())
            }
            Op::Load { .. } => Err(internal("scalar load outside the fast path")),
            Op::VLoad { buf, base, mask, .. } => {
                let base = self.rf.i(*base)?;
                let n = self.dst_lanes(dst)?;
                let mut idx = take(&mut self.si);
                idx.clear();
                idx.extend((0..n as i64).map(|i| base.saturating_add(i)));
                self.vector_load(dst, *buf, idx, *mask)
            }
            Op::Gather { buf, indices, mask } => {
                let mut idx = take(&mut self.si);
                idx.clear();
                idx.extend_from_slice(self.rf.vi(*indices)?);
                self.vector_load(dst, *buf, idx, *mask)
            }
            Op::Reduce(o, a) => {
                self.stats.vector_ops += 1;
                self.reduce(dst, *o, *a)
            }
            Op::Extract(v, lane) => {
                self.stats.vector_ops += 1;
                let lane = self.rf.i(*lane)?;
                let n = self.rf.lanes(*v).ok_or_else(|| internal("extract from a scalar"))?;
                if lane < 0 || lane as u64 >= n as u64 {
                    return Err(InterpError::LaneOutOfRange { lane, lanes: n });
                }
                let l = lane as usize;
                match self.rf.class(*v) {
                    Class::Float => self.rf.set_f(dst, lane_of(self.rf.vf(*v)?, l)?),
                    Class::Int => self.rf.set_i(dst, lane_of(self.rf.vi(*v)?, l)?),
                    Class::Bool => self.rf.set_b(dst, lane_of(self.rf.vb(*v)?, l)?),
                }
            }
            Op::Interleave(a, b) => self.interleave(dst, *a, *b),
            Op::ZaReadVertical { tile, slice } => self.za_read_vertical(dst, *tile, *slice),
        }
    }

    /// `dst = a[0], b[0], a[1], b[1], ...`.
    fn interleave(&mut self, dst: Reg, a: Reg, b: Reg) -> R {
        fn zip<T: Copy>(out: &mut Vec<T>, x: &[T], y: &[T]) -> R {
            same_len(x.len(), y.len())?;
            out.clear();
            for (&p, &q) in x.iter().zip(y) {
                out.push(p);
                out.push(q);
            }
            Ok(())
        }
        match self.rf.class(a) {
            Class::Float => {
                let mut out = take(&mut self.sf);
                zip(&mut out, self.rf.vf(a)?, self.rf.vf(b)?)?;
                self.sf = self.rf.put_vf(dst, out)?;
            }
            Class::Int => {
                let mut out = take(&mut self.si);
                zip(&mut out, self.rf.vi(a)?, self.rf.vi(b)?)?;
                self.si = self.rf.put_vi(dst, out)?;
            }
            Class::Bool => {
                let mut out = take(&mut self.sb);
                zip(&mut out, self.rf.vb(a)?, self.rf.vb(b)?)?;
                self.sb = self.rf.put_vb(dst, out)?;
            }
        }
        Ok(())
    }

    fn dst_lanes(&self, dst: Reg) -> Result<usize, InterpError> {
        self.rf.lanes(dst).ok_or_else(|| internal(format!("{dst} is not a vector")))
    }

    /// Loads the active lanes at `idx` into the vector register `dst`
    /// (masked-off lanes read nothing and yield zero).
    fn vector_load(&mut self, dst: Reg, buf: BufId, idx: Vec<i64>, mask: Option<Reg>) -> R {
        self.stats.loads += 1;
        let n = self.dst_lanes(dst)?;
        same_len(idx.len(), n)?;
        let active = self.active_mask(mask, n)?;
        self.stats.elements_loaded += active.iter().filter(|&&on| on).count() as u64;
        match self.rf.class(dst) {
            Class::Float => {
                let mut out = take(&mut self.sf);
                out.clear();
                self.mem.load_lanes_f(buf, &idx, &active, &mut out)?;
                self.sf = self.rf.put_vf(dst, out)?;
            }
            Class::Int => {
                let mut out = take(&mut self.si2);
                out.clear();
                self.mem.load_lanes_i(buf, &idx, &active, &mut out)?;
                self.si2 = self.rf.put_vi(dst, out)?;
            }
            Class::Bool => return Err(internal("load of a mask")),
        }
        self.si = idx;
        self.sb = active;
        Ok(())
    }

    fn copy(&mut self, dst: Reg, a: Reg) -> R {
        match (self.rf.lanes(a).is_some(), self.rf.class(a)) {
            (false, Class::Float) => self.rf.set_f(dst, self.rf.f(a)?),
            (false, Class::Int) => self.rf.set_i(dst, self.rf.i(a)?),
            (false, Class::Bool) => self.rf.set_b(dst, self.rf.b(a)?),
            (true, Class::Float) => {
                let mut out = take(&mut self.sf);
                out.clear();
                out.extend_from_slice(self.rf.vf(a)?);
                self.sf = self.rf.put_vf(dst, out)?;
                Ok(())
            }
            (true, Class::Int) => {
                let mut out = take(&mut self.si);
                out.clear();
                out.extend_from_slice(self.rf.vi(a)?);
                self.si = self.rf.put_vi(dst, out)?;
                Ok(())
            }
            (true, Class::Bool) => {
                let mut out = take(&mut self.sb);
                out.clear();
                out.extend_from_slice(self.rf.vb(a)?);
                self.sb = self.rf.put_vb(dst, out)?;
                Ok(())
            }
        }
    }

    fn constant(&mut self, dst: Reg, c: &Const) -> R {
        let kind = self.rf.kind(dst);
        match (*c, kind.class()) {
            (Const::Float(v, _), Class::Float) => self.rf.set_f(dst, value::round_float(kind, v)),
            (Const::Int(v, _), Class::Int) => self.rf.set_i(dst, value::wrap_int(kind, v)),
            (Const::Bool(v), Class::Bool) => self.rf.set_b(dst, v),
            _ => Err(InterpError::InvalidProgram(format!("constant {c:?} does not match its element type"))),
        }
    }

    fn bin(&mut self, dst: Reg, op: BinOp, a: Reg, b: Reg) -> R {
        let kind = self.rf.kind(a);
        match (self.rf.lanes(a).is_some(), kind.class()) {
            (false, Class::Float) => self.rf.set_f(dst, value::float_bin(op, kind, self.rf.f(a)?, self.rf.f(b)?)?),
            (false, Class::Int) => self.rf.set_i(dst, value::int_bin(op, kind, self.rf.i(a)?, self.rf.i(b)?)?),
            (false, Class::Bool) => self.rf.set_b(dst, value::bool_bin(op, self.rf.b(a)?, self.rf.b(b)?)?),
            (true, Class::Float) => {
                let mut out = take(&mut self.sf);
                out.clear();
                zip_into(&mut out, self.rf.vf(a)?, self.rf.vf(b)?, |x, y| value::float_bin(op, kind, x, y))?;
                self.sf = self.rf.put_vf(dst, out)?;
                Ok(())
            }
            (true, Class::Int) => {
                let mut out = take(&mut self.si);
                out.clear();
                zip_into(&mut out, self.rf.vi(a)?, self.rf.vi(b)?, |x, y| value::int_bin(op, kind, x, y))?;
                self.si = self.rf.put_vi(dst, out)?;
                Ok(())
            }
            (true, Class::Bool) => {
                let mut out = take(&mut self.sb);
                out.clear();
                zip_into(&mut out, self.rf.vb(a)?, self.rf.vb(b)?, |x, y| value::bool_bin(op, x, y))?;
                self.sb = self.rf.put_vb(dst, out)?;
                Ok(())
            }
        }
    }

    fn un(&mut self, dst: Reg, op: UnOp, a: Reg) -> R {
        let kind = self.rf.kind(a);
        match (self.rf.lanes(a).is_some(), kind.class()) {
            (false, Class::Float) => self.rf.set_f(dst, value::float_un(op, kind, self.rf.f(a)?)?),
            (false, Class::Int) => self.rf.set_i(dst, value::int_un(op, kind, self.rf.i(a)?)?),
            (false, Class::Bool) => self.rf.set_b(dst, value::bool_un(op, self.rf.b(a)?)?),
            (true, Class::Float) => {
                let mut out = take(&mut self.sf);
                out.clear();
                for &x in self.rf.vf(a)? {
                    out.push(value::float_un(op, kind, x)?);
                }
                self.sf = self.rf.put_vf(dst, out)?;
                Ok(())
            }
            (true, Class::Int) => {
                let mut out = take(&mut self.si);
                out.clear();
                for &x in self.rf.vi(a)? {
                    out.push(value::int_un(op, kind, x)?);
                }
                self.si = self.rf.put_vi(dst, out)?;
                Ok(())
            }
            (true, Class::Bool) => {
                let mut out = take(&mut self.sb);
                out.clear();
                for &x in self.rf.vb(a)? {
                    out.push(value::bool_un(op, x)?);
                }
                self.sb = self.rf.put_vb(dst, out)?;
                Ok(())
            }
        }
    }

    fn fma(&mut self, dst: Reg, a: Reg, b: Reg, c: Reg) -> R {
        let kind = self.rf.kind(a);
        if kind.class() != Class::Float {
            return Err(internal("fma on non-floats"));
        }
        if self.rf.lanes(a).is_none() {
            return self.rf.set_f(dst, value::fma(kind, self.rf.f(a)?, self.rf.f(b)?, self.rf.f(c)?));
        }
        let mut out = take(&mut self.sf);
        out.clear();
        let (x, y, z) = (self.rf.vf(a)?, self.rf.vf(b)?, self.rf.vf(c)?);
        same_len(x.len(), y.len())?;
        same_len(x.len(), z.len())?;
        out.extend(x.iter().zip(y).zip(z).map(|((&x, &y), &z)| value::fma(kind, x, y, z)));
        self.sf = self.rf.put_vf(dst, out)?;
        Ok(())
    }

    fn cmp(&mut self, dst: Reg, op: CmpOp, a: Reg, b: Reg) -> R {
        if self.rf.lanes(a).is_none() {
            let r = match self.rf.class(a) {
                Class::Float => value::cmp_float(op, self.rf.f(a)?, self.rf.f(b)?),
                Class::Int => value::cmp_int(op, self.rf.i(a)?, self.rf.i(b)?),
                Class::Bool => value::cmp_bool(op, self.rf.b(a)?, self.rf.b(b)?),
            };
            return self.rf.set_b(dst, r);
        }
        let mut out = take(&mut self.sb);
        out.clear();
        match self.rf.class(a) {
            Class::Float => zip_into(&mut out, self.rf.vf(a)?, self.rf.vf(b)?, |x, y| Ok(value::cmp_float(op, x, y)))?,
            Class::Int => zip_into(&mut out, self.rf.vi(a)?, self.rf.vi(b)?, |x, y| Ok(value::cmp_int(op, x, y)))?,
            Class::Bool => zip_into(&mut out, self.rf.vb(a)?, self.rf.vb(b)?, |x, y| Ok(value::cmp_bool(op, x, y)))?,
        }
        self.sb = self.rf.put_vb(dst, out)?;
        Ok(())
    }

    fn select(&mut self, dst: Reg, c: Reg, a: Reg, b: Reg) -> R {
        if self.rf.lanes(c).is_none() {
            // A scalar condition picks one whole operand; both are read.
            let (pick, other) = if self.rf.b(c)? { (a, b) } else { (b, a) };
            self.rf.check_assigned(other)?;
            return self.copy(dst, pick);
        }
        let n = self.dst_lanes(dst)?;
        let mut cond = take(&mut self.sb);
        cond.clear();
        cond.extend_from_slice(self.rf.vb(c)?);
        same_len(cond.len(), n)?;
        match self.rf.class(a) {
            Class::Float => {
                let mut out = take(&mut self.sf);
                out.clear();
                let (x, y) = (self.rf.vf(a)?, self.rf.vf(b)?);
                same_len(x.len(), n)?;
                same_len(y.len(), n)?;
                out.extend(cond.iter().zip(x.iter().zip(y)).map(|(&on, (&x, &y))| if on { x } else { y }));
                self.sf = self.rf.put_vf(dst, out)?;
            }
            Class::Int => {
                let mut out = take(&mut self.si);
                out.clear();
                let (x, y) = (self.rf.vi(a)?, self.rf.vi(b)?);
                same_len(x.len(), n)?;
                same_len(y.len(), n)?;
                out.extend(cond.iter().zip(x.iter().zip(y)).map(|(&on, (&x, &y))| if on { x } else { y }));
                self.si = self.rf.put_vi(dst, out)?;
            }
            Class::Bool => {
                let (x, y) = (self.rf.vb(a)?, self.rf.vb(b)?);
                same_len(x.len(), n)?;
                same_len(y.len(), n)?;
                let mut out = take(&mut self.sb2);
                out.clear();
                out.extend(cond.iter().zip(x.iter().zip(y)).map(|(&on, (&x, &y))| if on { x } else { y }));
                self.sb2 = self.rf.put_vb(dst, out)?;
            }
        }
        self.sb = cond;
        Ok(())
    }

    fn splat(&mut self, dst: Reg, a: Reg) -> R {
        let n = self.dst_lanes(dst)?;
        match self.rf.class(a) {
            Class::Float => {
                let x = self.rf.f(a)?;
                let mut out = take(&mut self.sf);
                out.clear();
                out.resize(n, x);
                self.sf = self.rf.put_vf(dst, out)?;
            }
            Class::Int => {
                let x = self.rf.i(a)?;
                let mut out = take(&mut self.si);
                out.clear();
                out.resize(n, x);
                self.si = self.rf.put_vi(dst, out)?;
            }
            Class::Bool => {
                let x = self.rf.b(a)?;
                let mut out = take(&mut self.sb);
                out.clear();
                out.resize(n, x);
                self.sb = self.rf.put_vb(dst, out)?;
            }
        }
        Ok(())
    }

    /// `Cast` (numeric) or `Bitcast` (bit reinterpretation) of `a` into `dst`.
    fn convert(&mut self, dst: Reg, a: Reg, bits: bool) -> R {
        let (from, to) = (self.rf.kind(a), self.rf.kind(dst));
        let conv = |x: Scalar| if bits { value::bitcast(from, to, x) } else { value::cast(to, x) };
        let as_f = |s: Scalar| match s {
            Scalar::F(v) => Ok(v),
            _ => Err(internal("conversion produced a non-float")),
        };
        let as_i = |s: Scalar| match s {
            Scalar::I(v) => Ok(v),
            _ => Err(internal("conversion produced a non-integer")),
        };
        if self.rf.lanes(a).is_none() {
            let x = match from.class() {
                Class::Float => Scalar::F(self.rf.f(a)?),
                Class::Int => Scalar::I(self.rf.i(a)?),
                Class::Bool => return Err(internal("conversion of a bool")),
            };
            return match conv(x)? {
                Scalar::F(v) => self.rf.set_f(dst, v),
                Scalar::I(v) => self.rf.set_i(dst, v),
            };
        }
        match (from.class(), to.class()) {
            (Class::Float, Class::Float) => {
                let mut out = take(&mut self.sf);
                out.clear();
                for &x in self.rf.vf(a)? {
                    out.push(as_f(conv(Scalar::F(x))?)?);
                }
                self.sf = self.rf.put_vf(dst, out)?;
            }
            (Class::Int, Class::Float) => {
                let mut out = take(&mut self.sf);
                out.clear();
                for &x in self.rf.vi(a)? {
                    out.push(as_f(conv(Scalar::I(x))?)?);
                }
                self.sf = self.rf.put_vf(dst, out)?;
            }
            (Class::Float, Class::Int) => {
                let mut out = take(&mut self.si);
                out.clear();
                for &x in self.rf.vf(a)? {
                    out.push(as_i(conv(Scalar::F(x))?)?);
                }
                self.si = self.rf.put_vi(dst, out)?;
            }
            (Class::Int, Class::Int) => {
                let mut out = take(&mut self.si);
                out.clear();
                for &x in self.rf.vi(a)? {
                    out.push(as_i(conv(Scalar::I(x))?)?);
                }
                self.si = self.rf.put_vi(dst, out)?;
            }
            _ => return Err(internal("conversion to or from a mask")),
        }
        Ok(())
    }

    fn reduce(&mut self, dst: Reg, op: ReduceOp, a: Reg) -> R {
        let kind = self.rf.kind(a);
        match kind.class() {
            Class::Float => {
                let v = self.rf.vf(a)?;
                let (&first, rest) = v.split_first().ok_or_else(|| internal("reduction of an empty vector"))?;
                let r = rest.iter().fold(first, |acc, &x| match op {
                    ReduceOp::Add => value::round_float(kind, acc + x),
                    ReduceOp::Max => acc.max(x),
                    ReduceOp::Min => acc.min(x),
                });
                self.rf.set_f(dst, r)
            }
            Class::Int => {
                let v = self.rf.vi(a)?;
                let (&first, rest) = v.split_first().ok_or_else(|| internal("reduction of an empty vector"))?;
                let r = rest.iter().fold(first, |acc, &x| match op {
                    ReduceOp::Add => value::wrap_int(kind, acc.wrapping_add(x)),
                    ReduceOp::Max => acc.max(x),
                    ReduceOp::Min => acc.min(x),
                });
                self.rf.set_i(dst, r)
            }
            Class::Bool => Err(internal("reduction of a mask")),
        }
    }
}
