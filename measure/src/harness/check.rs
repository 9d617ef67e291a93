//! Comparing the kernel's outputs with the reference and describing the first mismatch.

use super::driver::VL_REPORT_PREFIX;
use scaletune_space::reference::{compare, Comparison, RefTensor};
use scaletune_space::workload::Workload;
use scaletune_space::{TensorData, TensorId};

/// The result of comparing all output tensors.
#[derive(Clone, Debug)]
pub(crate) struct OutputCheck {
    /// One comparison per output tensor.
    pub comparisons: Vec<Comparison>,
    /// Largest absolute error over all outputs.
    pub max_abs_err: f64,
    /// A description of every failing tensor, empty if all passed.
    pub failures: Vec<String>,
}

/// The multi-dimensional (row-major) index of a flat element index.
pub(crate) fn unravel(flat: usize, shape: &[i64]) -> Vec<i64> {
    let mut rest = flat as i64;
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let extent = shape[d].max(1);
        idx[d] = rest % extent;
        rest /= extent;
    }
    idx
}

/// Splits the concatenated output bytes into tensors and compares each with
/// its reference. `Err` describes an output file of the wrong size.
pub(crate) fn check_outputs(
    workload: &Workload,
    outputs: &[TensorId],
    bytes: &[u8],
    refs: &[RefTensor],
) -> Result<OutputCheck, String> {
    let expected: usize = outputs.iter().map(|id| byte_len(workload, *id)).sum();
    if bytes.len() != expected {
        return Err(format!("output file has {} bytes, expected {expected}", bytes.len()));
    }
    let mut tensors = Vec::with_capacity(outputs.len());
    let mut offset = 0;
    for id in outputs {
        let t = workload.tensor(*id);
        let n = byte_len(workload, *id);
        let got = TensorData::from_le_bytes(t.dtype, &bytes[offset..offset + n])
            .ok_or_else(|| format!("output tensor `{}` is not a whole number of elements", t.name))?;
        offset += n;
        tensors.push((*id, got));
    }
    Ok(check_tensors(workload, &tensors, refs))
}

/// Compares each output tensor with its reference and describes every
/// failing one: the one judgement of a kernel's outputs, whether they come
/// from a compiled run or from the interpreter.
pub(crate) fn check_tensors(
    workload: &Workload,
    outputs: &[(TensorId, TensorData)],
    refs: &[RefTensor],
) -> OutputCheck {
    let mut comparisons = Vec::with_capacity(outputs.len());
    let mut failures = Vec::new();
    let mut max_abs_err: f64 = 0.0;
    for (id, got) in outputs {
        let t = workload.tensor(*id);
        let c = compare(&t.name, got, &refs[id.index()]);
        max_abs_err = max_abs_err.max(c.max_abs_err);
        if !c.passed() {
            failures.push(describe_failure(&c, &t.shape, t.len()));
        }
        comparisons.push(c);
    }
    OutputCheck { comparisons, max_abs_err, failures }
}

fn byte_len(workload: &Workload, id: TensorId) -> usize {
    let t = workload.tensor(id);
    t.len() * t.dtype.bytes()
}

/// `tensor `C`: 3 of 64 elements wrong; first at flat index 5 = C[1, 1]: got NaN, expected 0.25 (allowed error 2e-8)`.
fn describe_failure(c: &Comparison, shape: &[i64], len: usize) -> String {
    let mut s = format!("tensor `{}`: {} of {len} elements wrong", c.tensor, c.mismatches);
    if let Some((flat, got, want, bound)) = c.first_mismatch {
        let idx: Vec<String> = unravel(flat, shape).iter().map(i64::to_string).collect();
        s.push_str(&format!(
            "; first at flat index {flat} = {}[{}]: got {got}, expected {want} (allowed error {bound:.3e})",
            c.tensor,
            idx.join(", ")
        ));
    }
    s
}

/// The vector length (bits) the driver reported on stdout, if any.
pub(crate) fn reported_vl_bits(stdout: &str) -> Option<u32> {
    stdout.lines().find_map(|l| l.trim().strip_prefix(VL_REPORT_PREFIX)).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_is_row_major() {
        assert_eq!(unravel(0, &[3, 4]), vec![0, 0]);
        assert_eq!(unravel(5, &[3, 4]), vec![1, 1]);
        assert_eq!(unravel(23, &[2, 3, 4]), vec![1, 2, 3]);
        assert_eq!(unravel(7, &[10]), vec![7]);
        assert_eq!(unravel(0, &[]), Vec::<i64>::new());
    }

    #[test]
    fn vl_report_is_parsed() {
        assert_eq!(reported_vl_bits("scaletune-driver: vl_bits=256\n"), Some(256));
        assert_eq!(reported_vl_bits("noise\nscaletune-driver: vl_bits=2048\nmore\n"), Some(2048));
        assert_eq!(reported_vl_bits("nothing here\n"), None);
    }
}
