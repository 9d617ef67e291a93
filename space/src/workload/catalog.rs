//! The shipped workloads and `NAME[:P=V,...]` references.

use super::error::WorkloadError;
use super::spec::WorkloadSpec;
use super::Workload;
use std::path::Path;

const SHIPPED: &[(&str, &str)] = &[
    ("scale_add", include_str!("../../../configs/workloads/scale_add.toml")),
    ("axpy", include_str!("../../../configs/workloads/axpy.toml")),
    ("daxpy", include_str!("../../../configs/workloads/daxpy.toml")),
    ("sum_cos", include_str!("../../../configs/workloads/sum_cos.toml")),
    ("row_sum", include_str!("../../../configs/workloads/row_sum.toml")),
    ("softmax_rows", include_str!("../../../configs/workloads/softmax_rows.toml")),
    ("layer_norm", include_str!("../../../configs/workloads/layer_norm.toml")),
    ("matmul", include_str!("../../../configs/workloads/matmul.toml")),
    ("matmul_bt", include_str!("../../../configs/workloads/matmul_bt.toml")),
    ("batch_matmul", include_str!("../../../configs/workloads/batch_matmul.toml")),
    ("outer_product", include_str!("../../../configs/workloads/outer_product.toml")),
    ("paged_read", include_str!("../../../configs/workloads/paged_read.toml")),
    ("transpose", include_str!("../../../configs/workloads/transpose.toml")),
    ("conv2d_nhwc", include_str!("../../../configs/workloads/conv2d_nhwc.toml")),
    ("depthwise_conv2d_nhwc", include_str!("../../../configs/workloads/depthwise_conv2d_nhwc.toml")),
    ("matmul_i8", include_str!("../../../configs/workloads/matmul_i8.toml")),
    ("matmul_f16", include_str!("../../../configs/workloads/matmul_f16.toml")),
    ("matmul_bf16", include_str!("../../../configs/workloads/matmul_bf16.toml")),
];

/// Names of the shipped workloads, in catalog order.
pub fn shipped_names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}

/// A parsed workload reference: `NAME`, `NAME:P=V,P=V`, or a path to a TOML
/// file (optionally followed by `:P=V,...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadRef {
    /// Shipped name or file path.
    pub name: String,
    /// Parameter overrides in the order given.
    pub overrides: Vec<(String, i64)>,
}

impl WorkloadRef {
    /// Parses a reference string.
    pub fn parse(reference: &str) -> Result<WorkloadRef, WorkloadError> {
        let bad = |message: String| WorkloadError::BadReference { reference: reference.to_string(), message };
        let (name, rest) = match reference.rsplit_once(':') {
            Some((n, r)) if r.contains('=') => (n, Some(r)),
            _ => (reference, None),
        };
        if name.is_empty() {
            return Err(bad("missing workload name".into()));
        }
        if name.rsplit_once(':').is_some_and(|(_, r)| r.contains('=')) {
            // `matmul:M=8:N=8`: parameters joined by `:` (a path may hold `:`, a parameter never does).
            let (head, params) = reference.split_once(':').unwrap_or((reference, ""));
            let fixed = format!("{head}:{}", params.replace(':', ","));
            return Err(bad(format!("parameters are separated by `,`, not `:`: `{fixed}`")));
        }
        let mut overrides = Vec::new();
        for part in rest.map(|r| r.split(',').collect::<Vec<_>>()).unwrap_or_default() {
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("`{part}` is not P=V")))?;
            let k = k.trim();
            let v: i64 =
                v.trim().parse().map_err(|_| bad(format!("value of `{k}` is not an integer: `{}`", v.trim())))?;
            if k.is_empty() {
                return Err(bad("empty parameter name".into()));
            }
            if overrides.iter().any(|(seen, _)| seen == k) {
                return Err(bad(format!("parameter `{k}` is given twice")));
            }
            overrides.push((k.to_string(), v));
        }
        Ok(WorkloadRef { name: name.to_string(), overrides })
    }

    /// Loads the spec the reference names.
    pub fn spec(&self) -> Result<WorkloadSpec, WorkloadError> {
        if let Some((n, text)) = SHIPPED.iter().find(|(n, _)| *n == self.name) {
            return WorkloadSpec::parse(text, &format!("configs/workloads/{n}.toml"), n);
        }
        let path = Path::new(&self.name);
        if self.name.ends_with(".toml") || path.exists() {
            return WorkloadSpec::from_file(path);
        }
        Err(WorkloadError::Unknown { name: self.name.clone(), known: shipped_names().join(", ") })
    }

    /// Loads and instantiates the workload.
    pub fn load(&self) -> Result<Workload, WorkloadError> {
        self.spec()?.instantiate(&self.overrides)
    }
}

/// Parses and loads a workload reference in one step.
pub fn load(reference: &str) -> Result<Workload, WorkloadError> {
    WorkloadRef::parse(reference)?.load()
}
