//! What the report shows, computed from the database: tasks as measured alike, and the data series of every chart and table.

use crate::{Filter, ReportError};
use scaletune_database::{Database, Record};
use serde_json::Value;
use std::collections::BTreeMap;

/// Records of one workload on one target measured alike (same runner,
/// vector-length set and objective kind): their objectives compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The workload's reference (`matmul:M=64,N=64,K=64`).
    pub workload: String,
    /// The target's name.
    pub target: String,
    /// Runner kind.
    pub runner: String,
    /// Vector lengths measured at.
    pub vl_set: String,
    /// What the objective measures.
    pub objective_kind: String,
    /// Floating-point operations of one call, when known.
    pub flops: Option<f64>,
    /// The records in the report's scope, by job, trial and id.
    pub records: Vec<Record>,
    /// The default schedule's objective (the unscheduled nest measured by a
    /// job, else a `default-schedule` baseline), from any job.
    pub default_objective: Option<f64>,
    /// Bench baselines measured alike (name, objective), by name.
    pub baselines: Vec<(String, f64)>,
}

impl Group {
    /// True for figures of an emulator (estimated cycles, instructions, QEMU).
    pub fn emulated(&self) -> bool {
        self.objective_kind != "time_s" || self.runner == "qemu"
    }

    /// A one-line name: workload on target, runner and vector lengths.
    pub fn label(&self) -> String {
        let vls = if self.vl_set.is_empty() { String::new() } else { format!(" VL {}", self.vl_set) };
        format!("{} on {} ({}{vls})", self.workload, self.target, self.runner)
    }
}

/// A named series of (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// The reference of a workload from its stored definition (the tuner's JSON:
/// `name` and `params` as `[name, value]` pairs); the definition itself if
/// it is not that JSON.
pub fn workload_reference(definition: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(definition) else { return definition.to_string() };
    let Some(name) = v.get("name").and_then(Value::as_str) else { return definition.to_string() };
    let params: Vec<String> = v
        .get("params")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(|p| Some(format!("{}={}", p.get(0)?.as_str()?, p.get(1)?.as_i64()?))).collect())
        .unwrap_or_default();
    if params.is_empty() {
        name.to_string()
    } else {
        format!("{name}:{}", params.join(","))
    }
}

/// A job's strategy: `strategy` of its arguments JSON, else the job's column.
pub fn job_strategy(arguments: &str, column: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| v.get("strategy").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| column.to_string())
}

/// The records in scope, grouped; groups ordered by workload, target, runner, VL set, objective kind.
pub fn load(db: &Database, filter: &Filter) -> Result<(Vec<Group>, BTreeMap<i64, String>), ReportError> {
    let mut strategies = BTreeMap::new();
    for j in db.jobs()? {
        strategies.insert(j.id, job_strategy(&j.arguments, &j.strategy));
    }
    if let Some(job) = filter.job {
        if !strategies.contains_key(&job) {
            return Err(ReportError::NoJob(job));
        }
    }
    let workloads: BTreeMap<i64, (String, Option<f64>)> =
        db.workloads()?.into_iter().map(|w| (w.id, (workload_reference(&w.definition), w.flops))).collect();
    let all = db.all_records()?;
    if all.is_empty() {
        return Err(ReportError::Empty(format!("{} has no records", db.path().display())));
    }
    let workload_matches = |id: i64| match (&filter.workload, workloads.get(&id)) {
        (None, _) => true,
        (Some(want), Some((reference, _))) => reference == want || reference.split(':').next() == Some(want.as_str()),
        (Some(_), None) => false,
    };
    type Key = (String, String, String, String, String);
    let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
    let key = |r: &Record| -> Key {
        let w = workloads.get(&r.workload_id).map(|w| w.0.clone()).unwrap_or_default();
        (w, r.target_name.clone(), r.runner.clone(), r.vl_set.clone(), r.objective_kind.clone())
    };
    // The default schedule of every group, from any job.
    let mut defaults: BTreeMap<Key, f64> = BTreeMap::new();
    for r in &all {
        if r.trace.is_empty() && r.status == "ok" {
            if let Some(o) = r.objective {
                defaults.entry(key(r)).or_insert(o);
            }
        }
    }
    for r in &all {
        let in_scope = workload_matches(r.workload_id)
            && filter.target.as_ref().is_none_or(|t| *t == r.target_name)
            && filter.job.is_none_or(|j| r.job_id == Some(j));
        if !in_scope {
            continue;
        }
        let k = key(r);
        let g = groups.entry(k.clone()).or_insert_with(|| Group {
            workload: k.0.clone(),
            target: k.1.clone(),
            runner: k.2.clone(),
            vl_set: k.3.clone(),
            objective_kind: k.4.clone(),
            flops: workloads.get(&r.workload_id).and_then(|w| w.1),
            records: Vec::new(),
            default_objective: defaults.get(&k).copied(),
            baselines: Vec::new(),
        });
        g.records.push(r.clone());
    }
    if groups.is_empty() {
        return Err(ReportError::Empty(format!("no records of {} match {}", db.path().display(), filter.describe())));
    }
    let mut out: Vec<Group> = groups.into_values().collect();
    for g in &mut out {
        g.records.sort_by_key(|r| (r.job_id, r.trial_idx, r.id));
        let (w, t) = (g.records[0].workload_id, g.records[0].target_id);
        for b in db.baselines(w, t)? {
            if b.runner != g.runner || b.vl_set != g.vl_set || b.objective_kind != g.objective_kind {
                continue;
            }
            let Some(o) = b.objective else { continue };
            if b.name == "default-schedule" {
                g.default_objective = g.default_objective.or(Some(o));
            } else {
                g.baselines.push((b.name.clone(), o));
            }
        }
    }
    Ok((out, strategies))
}

/// Best objective so far against the trial index, one series per job
/// (named by its strategy); records outside jobs form one series in id order.
pub fn tuning_curves(g: &Group, strategies: &BTreeMap<i64, String>) -> Vec<Series> {
    let mut per_job: BTreeMap<Option<i64>, Vec<&Record>> = BTreeMap::new();
    for r in &g.records {
        per_job.entry(r.job_id).or_default().push(r);
    }
    let mut out = Vec::new();
    for (job, recs) in per_job {
        let name = match job {
            Some(j) => format!("{} (job {j})", strategies.get(&j).map_or("?", String::as_str)),
            None => "outside jobs".to_string(),
        };
        let mut best = f64::INFINITY;
        let mut points = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            if let Some(o) = r.objective.filter(|_| r.status == "ok") {
                best = best.min(o);
            }
            if best.is_finite() {
                let x = if job.is_some() { r.trial_idx as f64 } else { i as f64 };
                points.push((x, best));
            }
        }
        if !points.is_empty() {
            out.push(Series { name, points });
        }
    }
    out
}

/// Every candidate: ok ones per vector kind (objective against trial),
/// failures per status (at the trial; y is left to the chart).
pub fn candidates(g: &Group) -> (Vec<Series>, Vec<Series>) {
    let mut ok: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut failed: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &g.records {
        let x = r.trial_idx as f64;
        match r.objective.filter(|_| r.status == "ok") {
            Some(o) => ok.entry(r.vector_kind.clone().unwrap_or_else(|| "unknown".into())).or_default().push((x, o)),
            None => failed.entry(r.status.clone()).or_default().push((x, 0.0)),
        }
    }
    let to_series = |m: BTreeMap<String, Vec<(f64, f64)>>| -> Vec<Series> {
        m.into_iter().map(|(name, points)| Series { name, points }).collect()
    };
    (to_series(ok), to_series(failed))
}

/// True for the labels of length-agnostic code.
pub fn is_length_agnostic(kind: &str) -> bool {
    kind == "SVE-VLA" || kind == "RVV-VLA"
}

/// One vector length's figure of a record, from its per-VL metrics JSON.
pub fn figures_per_vl(metrics: &str, objective_kind: &str) -> Vec<(u32, f64)> {
    let Ok(Value::Array(runs)) = serde_json::from_str::<Value>(metrics) else { return Vec::new() };
    runs.iter()
        .filter_map(|r| {
            if r.get("status").and_then(Value::as_str) != Some("ok") {
                return None;
            }
            let vl = u32::try_from(r.get("vl_bits")?.as_u64()?).ok()?;
            let x = match objective_kind {
                "time_s" => r.get("timing")?.get("median_s")?.as_f64()?,
                "est_cycles" => r.get("emulated")?.get("est_cycles")?.as_f64()?,
                "instructions" => r.get("emulated")?.get("instructions")?.as_f64()?,
                _ => return None,
            };
            (x.is_finite() && x > 0.0).then_some((vl, x))
        })
        .collect()
}

/// Vector-length scaling of groups of one workload, target, runner and
/// objective kind: at every vector length measured, the best figure of
/// length-agnostic code and of fixed-length vector code (ok records only).
pub fn vl_scaling(groups: &[&Group]) -> Vec<Series> {
    let mut vla: BTreeMap<u32, f64> = BTreeMap::new();
    let mut fixed: BTreeMap<u32, f64> = BTreeMap::new();
    for g in groups {
        for r in g.records.iter().filter(|r| r.status == "ok") {
            let Some(kind) = r.vector_kind.as_deref() else { continue };
            if kind == "scalar" {
                continue;
            }
            let side = if is_length_agnostic(kind) { &mut vla } else { &mut fixed };
            for (vl, x) in figures_per_vl(&r.metrics, &r.objective_kind) {
                let e = side.entry(vl).or_insert(x);
                *e = e.min(x);
            }
        }
    }
    let mut out = Vec::new();
    for (name, m) in [("best length-agnostic", vla), ("best fixed-length", fixed)] {
        if !m.is_empty() {
            out.push(Series { name: name.into(), points: m.into_iter().map(|(v, x)| (f64::from(v), x)).collect() });
        }
    }
    out
}

/// A leaderboard row: a group's best candidate and what it is worth.
#[derive(Clone, Debug, PartialEq)]
pub struct Leader {
    /// The best ok record.
    pub record: Record,
    /// GFLOPS (time objectives with known FLOPs only).
    pub gflops: Option<f64>,
    /// Speed-up over the default schedule.
    pub vs_default: Option<f64>,
    /// Speed-up over each bench baseline (name, speed-up).
    pub vs_baselines: Vec<(String, f64)>,
}

/// The group's best ok record (lowest objective, confirmed by
/// re-measurement where it was, then lowest id) and its figures.
pub fn leader(g: &Group) -> Option<Leader> {
    let best = g.records.iter().filter(|r| r.status == "ok" && r.objective.is_some()).min_by(|a, b| {
        a.best_objective()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.best_objective().unwrap_or(f64::INFINITY))
            .then(a.id.cmp(&b.id))
    })?;
    let o = best.best_objective()?;
    let gflops = g.flops.filter(|_| g.objective_kind == "time_s").map(|f| f / o / 1e9);
    Some(Leader {
        record: best.clone(),
        gflops,
        vs_default: g.default_objective.map(|d| d / o),
        vs_baselines: g.baselines.iter().map(|(n, b)| (n.clone(), b / o)).collect(),
    })
}

/// Records per status other than ok.
pub fn failures(groups: &[Group]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in groups.iter().flat_map(|g| &g.records) {
        if r.status != "ok" {
            *out.entry(r.status.clone()).or_default() += 1;
        }
    }
    out
}

/// (predicted, measured) objectives of the ok records that have a prediction.
pub fn predicted_vs_measured(g: &Group) -> Vec<(f64, f64)> {
    g.records.iter().filter(|r| r.status == "ok").filter_map(|r| Some((r.predicted?, r.objective?))).collect()
}
