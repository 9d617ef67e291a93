//! Between the tuner and the tuning database: canonical texts and hashes of workloads and targets, and measurements as records.

use super::objective::Objective;
use scaletune_codegen::target::Target;
use scaletune_database::NewRecord;
use scaletune_measure::Measurement;
use scaletune_space::workload::Workload;

/// The canonical definition of a workload (its whole resolved form, so a
/// changed statement or shape is another workload).
pub fn workload_definition(w: &Workload) -> String {
    serde_json::to_string(w).unwrap_or_else(|_| w.reference())
}

/// The canonical definition of a target: every resolved field that changes
/// the code or how it runs, one `key = value` line each.
pub fn target_definition(t: &Target) -> String {
    format!(
        "name = {}\narch = {:?}\ntriple = {}\ncpu = {}\nfeatures = {}\ncaps = {:?}\ndefault_vl_bits = {:?}\nmca_cpu = {:?}\n",
        t.name, t.arch, t.triple, t.cpu, t.features, t.caps, t.default_vl_bits, t.mca_cpu
    )
}

/// The canonical text of a set of vector lengths: ascending, comma-separated.
pub fn vl_set(vls: &[u32]) -> String {
    let mut v = vls.to_vec();
    v.sort_unstable();
    v.dedup();
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// What a record of one measured candidate holds.
pub struct RecordInput<'a> {
    /// The job that measured it.
    pub job: i64,
    /// Workload row.
    pub workload_id: i64,
    /// Target row.
    pub target_id: i64,
    /// Trial index within the job.
    pub trial_idx: i64,
    /// Design-space trace text ("" for a schedule not drawn from a space).
    pub space_trace: String,
    /// Concrete trace text.
    pub trace: String,
    /// Runner kind name.
    pub runner: &'a str,
    /// Vector lengths measured at.
    pub vls: &'a [u32],
    /// The measurement.
    pub measurement: &'a Measurement,
    /// The job's objective.
    pub objective: &'a Objective,
}

impl RecordInput<'_> {
    /// The record to insert, with the objective's value if the candidate is ok.
    pub fn into_record(self) -> NewRecord {
        let m = self.measurement;
        NewRecord {
            job_id: Some(self.job),
            workload_id: self.workload_id,
            target_id: self.target_id,
            trial_idx: self.trial_idx,
            space_trace: self.space_trace,
            trace_hash: scaletune_database::hash_text(&self.trace),
            trace: self.trace,
            runner: self.runner.to_string(),
            vl_set: vl_set(self.vls),
            status: m.status.name().to_string(),
            message: m.message.clone(),
            metrics: serde_json::to_string(&m.runs).unwrap_or_else(|_| "[]".into()),
            objective: self.objective.value(m),
            objective_kind: self.objective.kind.name().to_string(),
            build_s: m.build_s,
            run_s: m.runs.iter().map(|r| r.wall_s).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vl_sets_are_canonical() {
        assert_eq!(vl_set(&[256, 128, 256]), "128,256");
        assert_eq!(vl_set(&[]), "");
    }

    #[test]
    fn definitions_tell_workloads_and_targets_apart() {
        let load = |r: &str| scaletune_space::workload::WorkloadRef::parse(r).expect("ref").load().expect("loads");
        assert_ne!(workload_definition(&load("matmul:M=8")), workload_definition(&load("matmul:M=9")));
        assert_eq!(workload_definition(&load("matmul:M=8")), workload_definition(&load("matmul:M=8")));
        let v1 = Target::load("neoverse-v1").expect("target");
        let v2 = Target::load("neoverse-v2").expect("target");
        assert_ne!(target_definition(&v1), target_definition(&v2));
    }
}
