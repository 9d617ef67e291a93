//! Arithmetic work of a workload: the operation count that GFLOPS figures divide by.

use super::{UnFn, UpdateOp, Value, Workload};

impl Workload {
    /// Arithmetic operations the workload performs, counted on its
    /// statements as written: per iteration point, one for every binary
    /// operation and function of the right-hand side, plus one for an
    /// accumulating update (`+=`, `max=`, `min=`); times the number of
    /// iteration points. A matmul `C[i, j] += A[i, k] * B[k, j]` counts
    /// `2 * M * N * K`. Reads, copies and casts count nothing, so a pure
    /// data-movement workload (a transpose) has no FLOPs: `None`.
    pub fn flops(&self) -> Option<f64> {
        let total: f64 = self
            .stmts
            .iter()
            .map(|s| {
                let points: f64 = s.axes.iter().map(|a| a.extent.max(0) as f64).product();
                let update = if s.op == UpdateOp::Assign { 0 } else { 1 };
                points * f64::from(ops(&s.rhs) + update)
            })
            .sum();
        (total > 0.0).then_some(total)
    }
}

/// Operations in a value expression.
fn ops(v: &Value) -> u32 {
    match v {
        Value::Const(..) | Value::Scalar(..) | Value::Read(..) => 0,
        Value::Cast(_, a) => ops(a),
        Value::Un(UnFn::Neg, a) => ops(a),
        Value::Un(_, a) => 1 + ops(a),
        Value::Bin(_, a, b) => 1 + ops(a) + ops(b),
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::WorkloadRef;

    fn flops(reference: &str) -> Option<f64> {
        WorkloadRef::parse(reference).expect("parses").load().expect("loads").flops()
    }

    #[test]
    fn matmul_counts_a_multiply_and_an_add_per_point() {
        assert_eq!(flops("matmul:M=4,N=5,K=6"), Some(2.0 * 4.0 * 5.0 * 6.0));
    }

    #[test]
    fn data_movement_has_no_flops() {
        assert_eq!(flops("transpose:M=8,N=8"), None);
    }
}
