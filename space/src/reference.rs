//! The reference semantics of a workload, with first-order error bounds.
//!
//! [`evaluate`] runs every statement with plain loops in f64 (integers
//! exactly) and carries, beside each value, a bound on how far a correct
//! kernel computing in the tensor's own precision may be from it: rounding of
//! every operation, propagation through functions, and any association order
//! of a reduction (`(n-1) * eps * sum|terms|`). [`compare`] checks a kernel's
//! output against it element by element.

use crate::expr::eval;
use crate::ids::{TensorId, VarId};
use crate::workload::{AxisKind, BinOp, Role, UnFn, UpdateOp, Value, Workload};
use crate::{DType, TensorData};
use thiserror::Error;

/// Reference values and error bounds of one tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor {
    /// Ideal values.
    pub values: Vec<f64>,
    /// Per-element bound on a correct kernel's deviation.
    pub errors: Vec<f64>,
}

/// Failure of the reference evaluation itself.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum ReferenceError {
    /// Wrong number or shape of arguments.
    #[error("reference: {0}")]
    Args(String),
    /// An index could not be evaluated or was out of bounds.
    #[error("reference: statement `{stmt}`: {message}")]
    Index {
        /// Statement text.
        stmt: String,
        /// What happened.
        message: String,
    },
}

/// Evaluates the workload on `args` (in `arg_tensors` order) and returns the
/// reference contents of every tensor, indexed by `TensorId`.
pub fn evaluate(w: &Workload, args: &[TensorData]) -> Result<Vec<RefTensor>, ReferenceError> {
    let arg_ids = w.arg_tensors();
    if args.len() != arg_ids.len() {
        return Err(ReferenceError::Args(format!("expected {} tensors, got {}", arg_ids.len(), args.len())));
    }
    let mut mem: Vec<RefTensor> =
        w.tensors.iter().map(|t| RefTensor { values: vec![f64::NAN; t.len()], errors: vec![0.0; t.len()] }).collect();
    for (id, data) in arg_ids.iter().zip(args) {
        let t = w.tensor(*id);
        if data.len() != t.len() || data.dtype() != t.dtype {
            return Err(ReferenceError::Args(format!(
                "tensor `{}` must be {} x {}, got {} x {}",
                t.name,
                t.len(),
                t.dtype,
                data.len(),
                data.dtype()
            )));
        }
        if t.role == Role::Input {
            let slot = &mut mem[id.index()];
            slot.values = (0..data.len()).map(|i| data.get(i)).collect();
        }
    }
    for s in &w.stmts {
        run_statement(w, s, &mut mem)?;
    }
    Ok(mem)
}

fn strides(shape: &[i64]) -> Vec<i64> {
    let mut st = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    st
}

struct Eval<'a> {
    w: &'a Workload,
    mem: &'a [RefTensor],
    point: &'a [i64],
    stmt: &'a str,
}

impl Eval<'_> {
    fn offset(&self, t: TensorId, idx: &[crate::expr::Expr]) -> Result<usize, ReferenceError> {
        let tensor = self.w.tensor(t);
        let st = strides(&tensor.shape);
        let mut off = 0i64;
        for (d, e) in idx.iter().enumerate() {
            let var = |v: VarId| self.point.get(v.index()).copied();
            let load = |lt: TensorId, li: &[i64]| -> Option<i64> {
                let tt = self.w.tensor(lt);
                let o: i64 = li.iter().zip(strides(&tt.shape)).map(|(a, b)| a * b).sum();
                self.mem[lt.index()].values.get(usize::try_from(o).ok()?).map(|v| *v as i64)
            };
            let x = eval(e, &var, 1, &load)
                .map_err(|err| ReferenceError::Index { stmt: self.stmt.to_string(), message: err.to_string() })?;
            if x < 0 || x >= tensor.shape[d] {
                return Err(ReferenceError::Index {
                    stmt: self.stmt.to_string(),
                    message: format!("index {x} out of bounds for dimension {d} of `{}`", tensor.name),
                });
            }
            off += x * st[d];
        }
        Ok(off as usize)
    }

    /// Value and error bound.
    fn value(&self, v: &Value) -> Result<(f64, f64), ReferenceError> {
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
        Ok(match v {
            Value::Const(c, d) => (*c, round(*d, *c)),
            Value::Scalar(i, d) => {
                let x = self.w.scalars[*i].value;
                (x, round(*d, x))
            }
            Value::Read(a, _) => {
                let o = self.offset(a.tensor, &a.indices)?;
                let t = &self.mem[a.tensor.index()];
                (t.values[o], t.errors[o])
            }
            Value::Cast(d, a) => {
                let (x, e) = self.value(a)?;
                if d.is_float() {
                    (x, e + round(*d, x))
                } else {
                    (wrap(x.trunc(), *d), if e > 0.0 { e + 1.0 } else { 0.0 })
                }
            }
            Value::Un(u, a) => {
                let (x, e) = self.value(a)?;
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
                let ((x, ex), (y, ey)) = (self.value(a)?, self.value(b)?);
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
        })
    }
}

fn run_statement(w: &Workload, s: &crate::workload::Statement, mem: &mut [RefTensor]) -> Result<(), ReferenceError> {
    let n_spatial = s.axes.iter().filter(|a| a.kind == AxisKind::Spatial).count();
    let extents: Vec<i64> = s.axes.iter().map(|a| a.extent).collect();
    let lhs_t = w.tensor(s.lhs.tensor);
    let eps = lhs_t.dtype.epsilon();
    let n_red: i64 = extents[n_spatial..].iter().product();
    let mut point = vec![0i64; extents.len()];
    let mut results: Vec<(usize, f64, f64)> = Vec::new();
    loop {
        // One spatial point: reduce over all reduction points.
        let (mut acc, mut acc_err, mut abs_sum) = match s.op.neutral(lhs_t.dtype) {
            Some(n) => (n, 0.0, 0.0),
            None => (f64::NAN, 0.0, 0.0),
        };
        let ev = Eval { w, mem, point: &point, stmt: &s.text };
        let lhs_off = ev.offset(s.lhs.tensor, &s.lhs.indices)?;
        loop {
            let ev = Eval { w, mem, point: &point, stmt: &s.text };
            let (x, e) = ev.value(&s.rhs)?;
            match s.op {
                UpdateOp::Assign => {
                    acc = x;
                    acc_err = e;
                }
                UpdateOp::Add => {
                    acc = match lhs_t.dtype {
                        DType::I32 => ((acc as i64 + x as i64) as i32) as f64,
                        _ => acc + x,
                    };
                    acc_err += e;
                    abs_sum += x.abs();
                }
                UpdateOp::Max => {
                    acc = acc.max(x);
                    acc_err = acc_err.max(e);
                }
                UpdateOp::Min => {
                    acc = acc.min(x);
                    acc_err = acc_err.max(e);
                }
            }
            if !advance(&mut point[n_spatial..], &extents[n_spatial..]) {
                break;
            }
        }
        if s.op == UpdateOp::Add {
            acc_err += (n_red - 1).max(1) as f64 * eps * abs_sum;
        }
        acc_err += eps * acc.abs() + lhs_t.dtype.min_subnormal();
        results.push((lhs_off, acc, acc_err));
        if !advance(&mut point[..n_spatial], &extents[..n_spatial]) {
            break;
        }
    }
    let slot = &mut mem[s.lhs.tensor.index()];
    for (o, v, e) in results {
        slot.values[o] = v;
        slot.errors[o] = e;
    }
    Ok(())
}

/// Odometer increment; false when it wraps around (or there are no digits).
fn advance(point: &mut [i64], extents: &[i64]) -> bool {
    for d in (0..point.len()).rev() {
        point[d] += 1;
        if point[d] < extents[d] {
            return true;
        }
        point[d] = 0;
    }
    false
}

/// The outcome of comparing one output tensor with the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Tensor name.
    pub tensor: String,
    /// Largest absolute difference.
    pub max_abs_err: f64,
    /// Largest difference divided by its allowed bound (<= 1 passes).
    pub max_ratio: f64,
    /// The first element outside its bound: (flat index, got, expected, bound).
    pub first_mismatch: Option<(usize, f64, f64, f64)>,
    /// Number of elements outside their bound.
    pub mismatches: usize,
}

impl Comparison {
    /// True if every element is within its bound.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// Compares a kernel's output tensor with the reference.
pub fn compare(name: &str, got: &TensorData, reference: &RefTensor) -> Comparison {
    let mut c =
        Comparison { tensor: name.to_string(), max_abs_err: 0.0, max_ratio: 0.0, first_mismatch: None, mismatches: 0 };
    for i in 0..got.len().min(reference.values.len()) {
        let (g, r) = (got.get(i), reference.values[i]);
        let bound = 2.0 * reference.errors[i] + 1e-300;
        let ok = if r.is_nan() {
            g.is_nan()
        } else if r.is_infinite() {
            g == r
        } else {
            (g - r).abs() <= bound
        };
        let diff = if g.is_nan() || r.is_nan() {
            if ok {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (g - r).abs()
        };
        if diff.is_finite() {
            c.max_abs_err = c.max_abs_err.max(diff);
        } else if !ok {
            c.max_abs_err = f64::INFINITY;
        }
        c.max_ratio = c.max_ratio.max(if ok && diff == 0.0 { 0.0 } else { diff / bound });
        if !ok {
            c.mismatches += 1;
            if c.first_mismatch.is_none() {
                c.first_mismatch = Some((i, g, r, bound));
            }
        }
    }
    if got.len() != reference.values.len() {
        c.mismatches += 1;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::make_args;
    use crate::workload::load;

    #[test]
    fn matmul_matches_hand_computation() {
        let w = load("matmul:M=3,N=4,K=5").expect("loads");
        let args = make_args(&w, 7);
        let r = evaluate(&w, &args).expect("evaluates");
        let (a, b) = (&args[0], &args[1]);
        let c = &r[2];
        for i in 0..3 {
            for j in 0..4 {
                let want: f64 = (0..5).map(|k| a.get(i * 5 + k) * b.get(k * 4 + j)).sum();
                assert!((c.values[i * 4 + j] - want).abs() < 1e-12);
                assert!(c.errors[i * 4 + j] > 0.0 && c.errors[i * 4 + j] < 1e-5);
            }
        }
        // An f32 computation of the same sums passes; a perturbed one fails.
        let mut got = TensorData::zeros(DType::F32, 12);
        for i in 0..3 {
            for j in 0..4 {
                let mut s = 0f32;
                for k in (0..5).rev() {
                    s += a.get(i * 5 + k) as f32 * b.get(k * 4 + j) as f32;
                }
                got.set(i * 4 + j, f64::from(s));
            }
        }
        assert!(compare("C", &got, c).passed());
        got.set(5, got.get(5) + 1e-3);
        let cmp = compare("C", &got, c);
        assert_eq!(cmp.mismatches, 1);
        assert_eq!(cmp.first_mismatch.map(|m| m.0), Some(5));
    }

    #[test]
    fn inputs_are_deterministic_and_outputs_poisoned() {
        let w = load("paged_read:P=50").expect("loads");
        let a = make_args(&w, 1);
        let bytes = |v: &[TensorData]| v.iter().map(|t| t.to_le_bytes()).collect::<Vec<_>>();
        assert!(bytes(&a) == bytes(&make_args(&w, 1)));
        assert!(bytes(&a) != bytes(&make_args(&w, 2)));
        let ind = &a[1];
        assert!((0..ind.len()).all(|i| (0.0..8192.0).contains(&ind.get(i))));
        assert!(a[2].get(0).is_nan());
        let r = evaluate(&w, &a).expect("evaluates");
        let x = &r[2];
        let row = ind.get(3) as usize;
        assert_eq!(x.values[3 * 8 + 5], a[0].get(row * 8 + 5));
    }

    #[test]
    fn softmax_rows_sum_to_one_and_i8_is_exact() {
        let w = load("softmax_rows:M=4,N=10").expect("loads");
        let r = evaluate(&w, &make_args(&w, 3)).expect("evaluates");
        let y = &r[w.tensor_id("Y").expect("Y").index()];
        let s: f64 = y.values[0..10].iter().sum();
        assert!((s - 1.0).abs() < 1e-12);
        let w = load("matmul_i8:M=2,N=2,K=3").expect("loads");
        let args = make_args(&w, 3);
        let r = evaluate(&w, &args).expect("evaluates");
        let want: f64 = (0..3).map(|k| args[0].get(k) * args[1].get(k * 2)).sum();
        assert_eq!(r[2].values[0], want);
        assert_eq!(r[2].errors[0], 0.0);
    }

    /// A product rounded into the subnormal range is within the bound for
    /// both f32 and f64; a flushed-to-zero f32 result (FTZ/DAZ) is not.
    #[test]
    fn subnormal_products_are_within_the_bound_and_flushed_zeros_are_not() {
        for (dtype, s) in [("f32", 1e-39), ("f64", 1e-310)] {
            let text = format!(
                "compute = [\"Y[i] = s * X[i]\"]\n[scalars]\ns = {{ dtype = \"{dtype}\", value = {s:e} }}\n[tensors]\nX = {{ dtype = \"{dtype}\", shape = [64] }}\nY = {{ dtype = \"{dtype}\", shape = [64], role = \"output\" }}\n"
            );
            let w = crate::workload::WorkloadSpec::parse(&text, "t.toml", "t")
                .and_then(|sp| sp.instantiate(&[]))
                .expect("parses");
            let args = make_args(&w, 4);
            let r = evaluate(&w, &args).expect("evaluates");
            let d = w.tensors[1].dtype;
            let mut got = TensorData::zeros(d, 64);
            for i in 0..64 {
                let x = args[0].get(i);
                let y = if d == DType::F32 { f64::from(s as f32 * x as f32) } else { s * x };
                assert!(y == 0.0 || y.abs() < if d == DType::F32 { 1.2e-38 } else { 2.3e-308 }, "{y} is subnormal");
                got.set(i, y);
            }
            assert!(compare("Y", &got, &r[1]).passed(), "{dtype}: {:?}", compare("Y", &got, &r[1]));
            if d == DType::F32 {
                // (For f64, `compare`'s absolute floor of 1e-300 covers subnormals.)
                let flushed = TensorData::zeros(d, 64);
                let c = compare("Y", &flushed, &r[1]);
                assert!(c.mismatches > 60, "{dtype}: {c:?}");
            }
        }
    }
}
