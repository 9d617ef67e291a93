//! The value and error bound of a statement's right-hand side at one point.

use super::plan::AccessPlan;
use super::{strides, RefTensor, ReferenceError};
use crate::expr::eval;
use crate::ids::VarId;
use crate::workload::{BinOp, UnFn, Value, Workload};
use crate::DType;
use std::cell::{Cell, RefCell};

/// Evaluation at one point of a statement.
pub(super) struct Eval<'a> {
    w: &'a Workload,
    mem: &'a [RefTensor],
    point: &'a [i64],
    stmt: &'a str,
    /// The right-hand side's reads, in evaluation order.
    reads: &'a [AccessPlan<'a>],
    /// The next read [`Eval::value`] meets.
    next_read: Cell<usize>,
    /// The first error met. Evaluation goes on after it (with NaNs) rather
    /// than returning it up through every level: results of the size of a
    /// `Result` cost the hot path more than the arithmetic.
    error: RefCell<Option<ReferenceError>>,
}

impl<'a> Eval<'a> {
    pub(super) fn new(
        w: &'a Workload,
        mem: &'a [RefTensor],
        point: &'a [i64],
        stmt: &'a str,
        reads: &'a [AccessPlan<'a>],
    ) -> Self {
        Eval { w, mem, point, stmt, reads, next_read: Cell::new(0), error: RefCell::new(None) }
    }

    /// Records `message` as the error, unless one came first.
    #[cold]
    fn fail(&self, message: String) {
        let mut error = self.error.borrow_mut();
        if error.is_none() {
            *error = Some(ReferenceError::Index { stmt: self.stmt.to_string(), message });
        }
    }

    /// `result`, or the first error met in producing it.
    fn checked<T>(&self, result: T) -> Result<T, ReferenceError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(result),
        }
    }

    /// The flat offset of the element `a` locates at this point.
    pub(super) fn locate(&self, a: &AccessPlan<'_>) -> Result<usize, ReferenceError> {
        let o = self.offset(a);
        self.checked(o.unwrap_or(0))
    }

    /// The flat offset of the element `a` locates at this point (`None`:
    /// the error is recorded).
    fn offset(&self, a: &AccessPlan<'_>) -> Option<usize> {
        if let Some(off) = a.flat.as_ref().and_then(|f| f.affine_at(self.point)) {
            return Some(off as usize);
        }
        let tensor = self.w.tensor(a.tensor);
        let mut off = 0i64;
        for (d, (ix, e)) in a.dims.iter().zip(a.exprs).enumerate() {
            let x = match ix.affine_at(self.point) {
                Some(x) => x,
                None => self.plain_index(e)?,
            };
            if x < 0 || x >= tensor.shape[d] {
                self.fail(format!("index {x} out of bounds for dimension {d} of `{}`", tensor.name));
                return None;
            }
            off += x * a.strides[d];
        }
        Some(off as usize)
    }

    /// An index by the plain evaluator (loads of integer tensors, division, ...).
    fn plain_index(&self, e: &crate::expr::Expr) -> Option<i64> {
        let var = |v: VarId| self.point.get(v.index()).copied();
        let load = |lt: crate::ids::TensorId, li: &[i64]| -> Option<i64> {
            let tt = self.w.tensor(lt);
            let o: i64 = li.iter().zip(strides(&tt.shape)).map(|(a, b)| a * b).sum();
            self.mem[lt.index()].values.get(usize::try_from(o).ok()?).map(|v| *v as i64)
        };
        eval(e, &var, 1, &load).map_err(|err| self.fail(err.to_string())).ok()
    }

    /// Value and error bound of the right-hand side.
    pub(super) fn value(&self, v: &Value) -> Result<(f64, f64), ReferenceError> {
        let r = self.term(v);
        self.checked(r)
    }

    /// Value and error bound of `v`; NaNs after an error (recorded).
    fn term(&self, v: &Value) -> (f64, f64) {
        let eps = v.dtype().epsilon();
        // One rounding to the value's dtype: relative, plus the absolute
        // error of a result in the subnormal range (sums and differences of
        // subnormals are exact, so `+` and `-` need only the relative part).
        let round = |d: DType, r: f64| d.epsilon() * r.abs() + d.min_subnormal();
        let wrap = |x: f64, d: DType| match d {
            DType::I8 => ((x as i64) as i8) as f64,
            DType::I32 => ((x as i64) as i32) as f64,
            _ => x,
        };
        match v {
            Value::Const(c, d) => (*c, round(*d, *c)),
            Value::Scalar(i, d) => {
                let x = self.w.scalars[*i].value;
                (x, round(*d, x))
            }
            Value::Read(..) => {
                let n = self.next_read.get();
                self.next_read.set(n + 1);
                let a = &self.reads[n];
                match self.offset(a) {
                    Some(o) => {
                        let t = &self.mem[a.tensor.index()];
                        (t.values[o], t.errors[o])
                    }
                    None => (f64::NAN, f64::NAN),
                }
            }
            Value::Cast(d, a) => {
                let (x, e) = self.term(a);
                let e_int = if e > 0.0 { e + 1.0 } else { 0.0 };
                if d.is_float() {
                    (x, e + round(*d, x))
                } else if a.dtype().is_float() {
                    // Float to integer truncates toward zero and saturates,
                    // NaN giving 0, as the interpreter and the generated
                    // code do (`llvm.fptosi.sat`); integer narrowing wraps.
                    (saturate(x, *d), e_int)
                } else {
                    (wrap(x.trunc(), *d), e_int)
                }
            }
            Value::Un(u, a) => {
                let (x, e) = self.term(a);
                match u {
                    UnFn::Neg => (wrap(-x, v.dtype()), e),
                    UnFn::Abs => (wrap(x.abs(), v.dtype()), e),
                    UnFn::Sqrt => {
                        let r = x.sqrt();
                        let prop = if x > 0.0 { (e / x.sqrt()).min(e.sqrt()) } else { e.sqrt() };
                        (r, prop + round(v.dtype(), r))
                    }
                    UnFn::Exp => {
                        let r = x.exp();
                        (r, ((x + e).exp() - r) + 4.0 * round(v.dtype(), r))
                    }
                    UnFn::Cos => (x.cos(), e.min(2.0) + 4.0 * eps),
                }
            }
            Value::Bin(op, a, b) => {
                let ((x, ex), (y, ey)) = (self.term(a), self.term(b));
                let d = v.dtype();
                match op {
                    BinOp::Add => {
                        let r = wrap(x + y, d);
                        (r, ex + ey + eps * r.abs())
                    }
                    BinOp::Sub => {
                        let r = wrap(x - y, d);
                        (r, ex + ey + eps * r.abs())
                    }
                    BinOp::Mul => {
                        let r = wrap(x * y, d);
                        (r, x.abs() * ey + y.abs() * ex + ex * ey + round(d, r))
                    }
                    BinOp::Div => {
                        let r = x / y;
                        let e = if y.abs() > ey { (ex + r.abs() * ey) / (y.abs() - ey) } else { f64::INFINITY };
                        (r, e + round(d, r))
                    }
                    BinOp::Max => (x.max(y), ex.max(ey)),
                    BinOp::Min => (x.min(y), ex.max(ey)),
                }
            }
        }
    }
}

/// `x` truncated toward zero and saturated to integer dtype `d`, NaN giving
/// 0 (Rust's float-to-integer `as`); other dtypes keep `x`.
pub(crate) fn saturate(x: f64, d: DType) -> f64 {
    match d {
        DType::I8 => f64::from(x as i8),
        DType::I32 => f64::from(x as i32),
        _ => x,
    }
}
