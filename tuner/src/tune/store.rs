//! Between the tuner and the tuning database: canonical texts and hashes of workloads and targets, and measurements as records.

use super::objective::Objective;
use super::task::Task;
use crate::cost_model::{CostModel, Row};
use scaletune_codegen::pipeline::lower_nest;
use scaletune_codegen::target::Target;
use scaletune_database::NewRecord;
use scaletune_measure::Measurement;
use scaletune_space::design::Sample;
use scaletune_space::ir::Nest;
use scaletune_space::workload::Workload;
use scaletune_space::{VectorCaps, VectorKind};

/// The canonical definition of a workload (its whole resolved form, so a
/// changed statement or shape is another workload).
pub fn workload_definition(w: &Workload) -> String {
    serde_json::to_string(w).unwrap_or_else(|_| w.reference())
}

/// The canonical definition of a target: every resolved field that changes
/// the code or how it runs, one `key = value` line each.
pub fn target_definition(t: &Target) -> String {
    format!(
        "name = {}\narch = {:?}\ntriple = {}\ncpu = {}\nfeatures = {}\ncaps = {}\ndefault_vl_bits = {:?}\nmca_cpu = {:?}\n",
        t.name,
        t.arch,
        t.triple,
        t.cpu,
        t.features,
        caps_definition(&t.caps),
        t.default_vl_bits,
        t.mca_cpu
    )
}

/// The caps line of [`target_definition`], written as it always was (the
/// fields the caps had when databases began to store it). A field added
/// since, `half_vectors`, follows from the arch and features, which the
/// definition holds already, and is left out: adding it changed no stored
/// target's hash, so no database's records were orphaned.
fn caps_definition(c: &VectorCaps) -> String {
    format!(
        "VectorCaps {{ scalable: {}, granule_bits: {}, vscale_values: {:?}, has_sme: {}, has_gather: {} }}",
        c.scalable, c.granule_bits, c.vscale_values, c.has_sme, c.has_gather
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
    /// The kind of vector code ([`vector_kind`]).
    pub vector_kind: Option<String>,
    /// The cost model's predicted objective at proposal time.
    pub predicted: Option<f64>,
}

/// The label of a vector kind as records and reports show it: `SVE-VLA`
/// and `RVV-VLA` are length-agnostic code, `SVE-VLS` and `RVV-VLS` code
/// fixed to one vector length.
pub fn kind_label(kind: VectorKind) -> &'static str {
    match kind {
        VectorKind::Neon => "NEON",
        VectorKind::Sve => "SVE-VLS",
        VectorKind::SveVla => "SVE-VLA",
        VectorKind::Sme => "SME",
        VectorKind::Rvv | VectorKind::RvvFixed(_) => "RVV-VLS",
        VectorKind::RvvVla => "RVV-VLA",
        VectorKind::Avx512 => "AVX-512",
        VectorKind::Avx2 => "AVX2",
        VectorKind::Sse => "SSE",
    }
}

/// The kind of vector code a scheduled nest lowers to: `scalar` when its
/// vector program has no vector register, else the label of the vector kind
/// the schedule chose (the kind whose capabilities the nest carries).
/// `None` if the nest does not lower.
pub fn vector_kind(w: &Workload, nest: &Nest) -> Option<String> {
    let prog = lower_nest(w, nest).ok()?;
    if prog.regs.iter().all(|t| t.lanes.is_none()) {
        return Some("scalar".into());
    }
    let kind = nest.kinds.iter().find(|(_, caps)| *caps == nest.caps).map(|(k, _)| *k)?;
    Some(kind_label(kind).into())
}

/// The cost model's predicted objective of each sample: the model predicts
/// `ln(objective)` centred on its task's mean, so the prediction is put
/// back on the objective's scale with the mean of the task's training rows.
/// `None` without a model, without rows of the task, or for a sample that
/// does not lower.
pub fn predicted_objectives(
    model: Option<&CostModel>,
    task: &Task,
    rows: &[Row],
    samples: &[Sample],
) -> Vec<Option<f64>> {
    let logs: Vec<f64> = rows.iter().filter(|r| r.task == task.idx).map(|r| r.objective.ln()).collect();
    let (Some(model), false) = (model, logs.is_empty()) else { return vec![None; samples.len()] };
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    samples
        .iter()
        .map(|s| {
            let f = task.lowered_one(s)?.features.to_vec();
            let p = model.predict(&[f]).first().copied()?;
            Some((f64::from(p) + mean).exp()).filter(|x| x.is_finite())
        })
        .collect()
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
            vector_kind: self.vector_kind,
            predicted: self.predicted,
            code: (!m.code.is_empty()).then(|| m.code.clone()),
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
    fn vector_kinds_come_from_the_lowered_program() {
        use scaletune_codegen::pipeline::initial_nest;
        use scaletune_space::trace::parse_trace;
        let w =
            scaletune_space::workload::WorkloadRef::parse("matmul:M=16,N=20,K=8").expect("ref").load().expect("loads");
        let target = Target::load("sve-generic").expect("target");
        let kind_of = |schedule: &str| {
            let mut nest = initial_nest(&w, &target);
            parse_trace(schedule).expect("parses").apply(&mut nest).expect("applies");
            vector_kind(&w, &nest)
        };
        assert_eq!(kind_of("").as_deref(), Some("scalar"));
        let vla = "use_vectors(\"sve-vla\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1, tail=\"predicate\")\n";
        assert_eq!(kind_of(vla).as_deref(), Some("SVE-VLA"));
        let neon = "use_vectors(\"neon\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 4])\nreorder(i, j0, k, j1)\nvectorize(j1)\n";
        assert_eq!(kind_of(neon).as_deref(), Some("NEON"));
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

    /// A target's definition, and so its hash in every database, stays as
    /// it was when records began to be stored for it.
    #[test]
    fn target_definitions_keep_their_stored_form() {
        let rvv = Target::load("rvv").expect("target");
        expect_test::expect![[r#"
            name = rvv
            arch = Riscv64
            triple = riscv64-unknown-linux-gnu
            cpu = generic-rv64
            features = +m,+a,+f,+d,+c,+v,+zfhmin
            caps = VectorCaps { scalable: true, granule_bits: 64, vscale_values: [2, 4, 8, 16], has_sme: false, has_gather: true }
            default_vl_bits = [128, 256, 1024]
            mca_cpu = Some("sifive-x280")
        "#]]
        .assert_eq(&target_definition(&rvv));
    }
}
