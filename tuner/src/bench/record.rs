//! Bench figures kept in the bench database as baselines (`openblas`, `clang-naive`), keyed like the tuned records they compare with, so `scaletune report` shows the tuned kernel's speed-up over each.

use super::contenders::Kernel;
use super::BenchError;
use crate::tune::store;
use scaletune_codegen::target::Target;
use scaletune_database::{Database, NewBaseline};
use scaletune_space::workload::Workload;

/// One baseline's figure for a shape.
pub struct Figure<'a> {
    /// Which kernel (only baselines are recorded).
    pub kernel: Kernel,
    /// The objective (seconds per call, or geometric-mean estimated cycles).
    pub objective: Option<f64>,
    /// What the metrics JSON holds (per-round times or per-VL counts).
    pub metrics: &'a serde_json::Value,
}

/// Writes (replacing on key) the baselines of one shape measured by
/// `runner` at `vls` with objective `objective_kind`.
pub fn record(
    db: &Database,
    workload: &Workload,
    target: &Target,
    runner: &str,
    vls: &[u32],
    objective_kind: &str,
    figures: &[Figure<'_>],
) -> Result<(), BenchError> {
    let w = db.upsert_workload(&store::workload_definition(workload))?;
    let t = db.upsert_target(&target.name, &store::target_definition(target))?;
    for f in figures {
        let Kernel::Baseline(kind) = f.kernel else { continue };
        db.insert_baseline(&NewBaseline {
            workload_id: w.id,
            target_id: t.id,
            name: kind.name().to_string(),
            runner: runner.to_string(),
            vl_set: store::vl_set(vls),
            objective: f.objective,
            objective_kind: objective_kind.to_string(),
            metrics: f.metrics.to_string(),
        })?;
    }
    Ok(())
}

/// The geometric mean of positive values (`None` if any is missing or not positive).
pub fn geomean(values: &[Option<f64>]) -> Option<f64> {
    let logs: Option<Vec<f64>> = values.iter().map(|v| v.filter(|x| *x > 0.0).map(f64::ln)).collect();
    let logs = logs.filter(|l| !l.is_empty())?;
    Some((logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_needs_every_value() {
        assert_eq!(geomean(&[Some(2.0), Some(8.0)]), Some(4.0));
        assert_eq!(geomean(&[Some(2.0), None]), None);
        assert_eq!(geomean(&[Some(2.0), Some(0.0)]), None);
        assert_eq!(geomean(&[]), None);
    }
}
