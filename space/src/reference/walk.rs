//! The points of one statement: shared among threads in contiguous runs, and within a run walked a block of points at a time.
//!
//! Each spatial point reduces over the reduction axes in order, exactly as
//! the one-point-at-a-time walk does, so values and bounds are the same to
//! the bit. A block of consecutive points takes each reduction step in turn
//! for all of its points (a matmul's block of `j` reads one stretch of a
//! row of `B` per `k`, not a column), which keeps the reads in cache. A
//! block that meets an error is walked again one point at a time, so the
//! error reported is the one the plain walk meets first.

use super::eval::Eval;
use super::plan::AccessPlan;
use super::{Mode, RefTensor, ReferenceError};
use crate::workload::{AxisKind, Statement, UpdateOp, Workload};
use crate::DType;

/// Spatial points walked together.
const BLOCK: i64 = 64;

/// `(flat offset of the element written, value, bound)` per spatial point.
type Results = Vec<(usize, f64, f64)>;

/// Runs one statement into `mem`.
pub(super) fn run_statement(
    w: &Workload,
    s: &Statement,
    mem: &mut [RefTensor],
    mode: Mode,
) -> Result<(), ReferenceError> {
    let n_spatial = s.axes.iter().filter(|a| a.kind == AxisKind::Spatial).count();
    let extents: Vec<i64> = s.axes.iter().map(|a| a.extent).collect();
    let fast = matches!(mode, Mode::Fast { .. });
    let plan = |a| AccessPlan::new(a, &w.tensor(a.tensor).shape, &extents, !fast);
    let lhs = plan(&s.lhs);
    let reads: Vec<AccessPlan<'_>> = s.rhs.reads().into_iter().map(plan).collect();
    // Every statement visits at least one point, even with an empty axis.
    let all_spatial = extents[..n_spatial].iter().all(|e| *e > 0);
    let points = extents[..n_spatial].iter().map(|e| (*e).max(0)).product::<i64>().max(1);
    let terms = points.saturating_mul(extents[n_spatial..].iter().map(|e| (*e).max(1)).product::<i64>());
    let threads = match mode {
        Mode::Fast { threads, parallel_from } if terms >= parallel_from && all_spatial => threads as i64,
        _ => 1,
    }
    .min(points);
    let run =
        Run { w, s, mem: &*mem, extents: &extents, n_spatial, lhs: &lhs, reads: &reads, blocks: fast && all_spatial };
    let results = if threads <= 1 {
        run.points(0, points)?
    } else {
        let chunk = (points + threads - 1) / threads;
        let runs = (points + chunk - 1) / chunk;
        let parts: Vec<Result<Results, ReferenceError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..runs)
                .map(|t| {
                    let run = &run;
                    let (first, count) = (t * chunk, chunk.min(points - t * chunk));
                    scope.spawn(move || run.points(first, count))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        // The first error in point order is the one the one-thread walk meets.
        let mut all = Vec::with_capacity(points as usize);
        for part in parts {
            all.extend(part?);
        }
        all
    };
    let slot = &mut mem[s.lhs.tensor.index()];
    for (o, v, e) in results {
        slot.values[o] = v;
        slot.errors[o] = e;
    }
    Ok(())
}

/// A statement being evaluated: everything a run of its points needs.
struct Run<'a> {
    w: &'a Workload,
    s: &'a Statement,
    mem: &'a [RefTensor],
    extents: &'a [i64],
    n_spatial: usize,
    lhs: &'a AccessPlan<'a>,
    reads: &'a [AccessPlan<'a>],
    /// Walk blocks of points (else one point at a time).
    blocks: bool,
}

/// The running reduction of one spatial point.
#[derive(Clone, Copy)]
struct Acc {
    value: f64,
    bound: f64,
    abs_sum: f64,
}

impl Run<'_> {
    /// The point (spatial coordinates, reduction coordinates zero) that is
    /// `index`-th in row-major order.
    fn point_at(&self, index: i64) -> Vec<i64> {
        let mut point = vec![0i64; self.extents.len()];
        let mut rest = index;
        for d in (0..self.n_spatial).rev() {
            if self.extents[d] > 0 {
                point[d] = rest % self.extents[d];
                rest /= self.extents[d];
            }
        }
        point
    }

    fn eval<'p>(&'p self, point: &'p [i64]) -> Eval<'p> {
        Eval::new(self.w, self.mem, point, &self.s.text, self.reads)
    }

    fn start(&self) -> Acc {
        let dtype = self.w.tensor(self.s.lhs.tensor).dtype;
        Acc { value: self.s.op.neutral(dtype).unwrap_or(f64::NAN), bound: 0.0, abs_sum: 0.0 }
    }

    /// Folds one term `(x, e)` into `acc`.
    #[inline]
    fn add(&self, acc: &mut Acc, (x, e): (f64, f64)) {
        match self.s.op {
            UpdateOp::Assign => {
                acc.value = x;
                acc.bound = e;
            }
            UpdateOp::Add => {
                acc.value = match self.w.tensor(self.s.lhs.tensor).dtype {
                    DType::I32 => ((acc.value as i64 + x as i64) as i32) as f64,
                    _ => acc.value + x,
                };
                acc.bound += e;
                acc.abs_sum += x.abs();
            }
            UpdateOp::Max => {
                acc.value = acc.value.max(x);
                acc.bound = acc.bound.max(e);
            }
            UpdateOp::Min => {
                acc.value = acc.value.min(x);
                acc.bound = acc.bound.max(e);
            }
        }
    }

    /// The value and bound of a finished reduction.
    fn finish(&self, acc: Acc) -> (f64, f64) {
        let dtype = self.w.tensor(self.s.lhs.tensor).dtype;
        let eps = dtype.epsilon();
        let n_red: i64 = self.extents[self.n_spatial..].iter().product();
        let mut bound = acc.bound;
        if self.s.op == UpdateOp::Add {
            bound += (n_red - 1).max(1) as f64 * eps * acc.abs_sum;
        }
        bound += eps * acc.value.abs() + dtype.min_subnormal();
        (acc.value, bound)
    }

    /// The results of `count` spatial points from the `first` (in row-major
    /// order), each reduced over all reduction points.
    fn points(&self, first: i64, count: i64) -> Result<Results, ReferenceError> {
        if !self.blocks {
            return self.one_by_one(first, count);
        }
        let mut results = Vec::with_capacity(count as usize);
        let mut start = first;
        while start < first + count {
            let n = BLOCK.min(first + count - start);
            match self.block(start, n) {
                Some(block) => results.extend(block),
                None => results.extend(self.one_by_one(start, n)?),
            }
            start += n;
        }
        Ok(results)
    }

    /// `count` points one after the other, each reduced in full before the
    /// next: the plain walk, which stops at the first error.
    fn one_by_one(&self, first: i64, count: i64) -> Result<Results, ReferenceError> {
        let n_spatial = self.n_spatial;
        let mut point = self.point_at(first);
        let mut results = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let mut acc = self.start();
            let lhs_off = self.eval(&point).locate(self.lhs)?;
            loop {
                let term = self.eval(&point).value(&self.s.rhs)?;
                self.add(&mut acc, term);
                if !advance(&mut point[n_spatial..], &self.extents[n_spatial..]) {
                    break;
                }
            }
            let (value, bound) = self.finish(acc);
            results.push((lhs_off, value, bound));
            advance(&mut point[..n_spatial], &self.extents[..n_spatial]);
        }
        Ok(results)
    }

    /// `count` points together, a reduction step at a time; `None` if any
    /// evaluation failed (the caller walks the block again to find which).
    fn block(&self, first: i64, count: i64) -> Option<Results> {
        let n_spatial = self.n_spatial;
        let mut points = Vec::with_capacity(count as usize);
        let mut point = self.point_at(first);
        for _ in 0..count {
            points.push(point.clone());
            advance(&mut point[..n_spatial], &self.extents[..n_spatial]);
        }
        let mut offsets = Vec::with_capacity(points.len());
        for p in &points {
            offsets.push(self.eval(p).locate(self.lhs).ok()?);
        }
        let mut accs = vec![self.start(); points.len()];
        let mut reduction = vec![0i64; self.extents.len() - n_spatial];
        loop {
            for (p, acc) in points.iter_mut().zip(&mut accs) {
                p[n_spatial..].copy_from_slice(&reduction);
                let term = self.eval(p).value(&self.s.rhs).ok()?;
                self.add(acc, term);
            }
            if !advance(&mut reduction, &self.extents[n_spatial..]) {
                break;
            }
        }
        Some(offsets.into_iter().zip(accs).map(|(o, acc)| (o, self.finish(acc))).map(|(o, (v, e))| (o, v, e)).collect())
    }
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
