//! Which schedule a kernel is built with: its pinned record, else the best replayable record of its workload and target definitions, else the default schedule; records passed over are reported as stale, with the reason.
//!
//! A record names what produced it by three things: the hash of its
//! workload's definition, the hash of its target's definition, and its
//! trace. Another definition of the same workload reference or target name
//! makes a record stale ("defined differently", with what differs); a trace
//! this scaletune no longer parses or replays on the workload's loop nest
//! (a record of an incompatible scaletune version) is stale too.

use super::manifest::KernelSpec;
use super::BuildError;
use crate::tune::store::{target_definition, vl_set, workload_definition};
use scaletune_codegen::pipeline::schedule;
use scaletune_database::{hash_text, Database, Record};
use scaletune_space::ir::Nest;
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::Workload;
use std::collections::BTreeMap;

/// A record passed over, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale {
    /// The record.
    pub record: i64,
    /// Why it cannot be used.
    pub reason: String,
}

/// The schedule chosen for one kernel.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// The record replayed (`None`: the default schedule, the unscheduled nest).
    pub record: Option<Record>,
    /// Its trace (`None` for the default schedule and for a record of the unscheduled nest).
    pub trace: Option<Trace>,
    /// The scheduled loop nest.
    pub nest: Nest,
    /// Records passed over.
    pub stale: Vec<Stale>,
}

/// The vector length to specialize fixed-length kinds to: the kernel's one VL, if it names one.
pub fn specialize_vl(k: &KernelSpec) -> Option<u32> {
    match k.vl.as_deref() {
        Some([one]) => Some(*one),
        _ => None,
    }
}

/// The record's trace replayed on the kernel's workload and target.
fn replay(k: &KernelSpec, r: &Record) -> Result<(Option<Trace>, Nest), String> {
    let trace = if r.trace.trim().is_empty() {
        None
    } else {
        Some(parse_trace(&r.trace).map_err(|e| format!("its trace no longer parses ({e})"))?)
    };
    let nest = schedule(&k.workload, trace.as_ref(), &k.target, specialize_vl(k))
        .map_err(|e| format!("its trace no longer replays ({e})"))?;
    Ok((trace, nest))
}

/// Picks the schedule of a kernel.
pub fn choose(db: &Database, k: &KernelSpec) -> Result<Chosen, BuildError> {
    let wh = hash_text(&workload_definition(&k.workload));
    let th = hash_text(&target_definition(&k.target));
    if let Some(id) = k.record {
        return pinned(db, k, id, &wh, &th);
    }
    let mut recs: Vec<Record> = db
        .workload_records(&wh)?
        .into_iter()
        .filter(|r| r.target_hash == th && r.status == "ok" && r.objective.is_some())
        .filter(|r| k.vl.as_ref().is_none_or(|v| r.vl_set == vl_set(v)))
        .collect();
    // Figures of different runners, VL sets or kinds do not compare: keep those measured like the latest.
    let latest =
        recs.iter().max_by_key(|r| r.id).map(|r| (r.runner.clone(), r.vl_set.clone(), r.objective_kind.clone()));
    recs.retain(|r| latest.as_ref().is_some_and(|(a, b, c)| (a, b, c) == (&r.runner, &r.vl_set, &r.objective_kind)));
    recs.sort_by(|a, b| {
        a.best_objective()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.best_objective().unwrap_or(f64::INFINITY))
            .then(a.id.cmp(&b.id))
    });
    let mut stale = Vec::new();
    for r in recs {
        match replay(k, &r) {
            Ok((trace, nest)) => return Ok(Chosen { record: Some(r), trace, nest, stale }),
            Err(reason) => stale.push(Stale { record: r.id, reason }),
        }
    }
    stale.extend(other_definitions(db, k, &wh, &th)?);
    let nest = schedule(&k.workload, None, &k.target, specialize_vl(k))
        .map_err(|e| BuildError::Compile { kernel: k.name.clone(), message: e.to_string() })?;
    Ok(Chosen { record: None, trace: None, nest, stale })
}

fn pinned(db: &Database, k: &KernelSpec, id: i64, wh: &str, th: &str) -> Result<Chosen, BuildError> {
    let Some(r) = db.record(id)? else {
        return Err(BuildError::Pinned {
            kernel: k.name.clone(),
            record: id,
            message: format!("{} has no record {id}", db.path().display()),
        });
    };
    let mismatch = |why: String| BuildError::Pinned {
        kernel: k.name.clone(),
        record: id,
        message: format!(
            "it is a record of {} on {}, not of {} on {}{why}",
            record_workload(db, &r),
            r.target_name,
            k.workload.reference(),
            k.target.name
        ),
    };
    if r.workload_hash != wh || r.target_hash != th {
        // Say what differs where the names agree (the same reference under another definition).
        let why = [
            (r.workload_hash != wh && record_workload(db, &r) == k.workload.reference())
                .then(|| workload_difference(db, &r, &k.workload)),
            (r.target_hash != th && r.target_name == k.target.name).then(|| target_difference(db, &r, &k.target)),
        ];
        let why: Vec<String> = why.into_iter().flatten().collect();
        return Err(mismatch(if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) }));
    }
    if let Some(v) = &k.vl {
        if r.vl_set != vl_set(v) {
            return Err(mismatch(format!(" at VLs [{}] (it was measured at [{}])", vl_set(v), r.vl_set)));
        }
    }
    if r.status != "ok" || r.objective.is_none() {
        return Err(BuildError::Pinned {
            kernel: k.name.clone(),
            record: id,
            message: format!("it is not a measured schedule (status {}: {})", r.status, r.message),
        });
    }
    match replay(k, &r) {
        Ok((trace, nest)) => Ok(Chosen { record: Some(r), trace, nest, stale: Vec::new() }),
        Err(reason) => {
            Err(BuildError::Pinned { kernel: k.name.clone(), record: id, message: format!("stale: {reason}") })
        }
    }
}

/// The workload reference of a record, from its stored definition.
fn record_workload(db: &Database, r: &Record) -> String {
    let def = db.workload_definition(r.workload_id).ok().flatten().unwrap_or_default();
    match serde_json::from_str::<Workload>(&def) {
        Ok(w) => w.reference(),
        Err(_) => match serde_json::from_str::<serde_json::Value>(&def) {
            Ok(v) => format!("{} (a definition this scaletune cannot read)", v["name"].as_str().unwrap_or("?")),
            Err(_) => format!("workload {}", &r.workload_hash[..12.min(r.workload_hash.len())]),
        },
    }
}

/// What differs between a record's workload definition and the current one.
fn workload_difference(db: &Database, r: &Record, w: &Workload) -> String {
    let def = db.workload_definition(r.workload_id).ok().flatten().unwrap_or_default();
    let now = serde_json::to_value(w).unwrap_or_default();
    let Ok(then) = serde_json::from_str::<serde_json::Value>(&def) else {
        return "its workload definition is not JSON this scaletune reads".into();
    };
    if serde_json::from_value::<Workload>(then.clone()).is_err() {
        return format!("workload `{}` was recorded in a form this scaletune cannot read (another version)", w.name);
    }
    let keys: Vec<&str> = ["name", "params", "tensors", "scalars", "stmts", "description"]
        .into_iter()
        .filter(|k| then.get(k) != now.get(k))
        .collect();
    format!("workload `{}` was defined differently: {} changed", w.reference(), keys.join(", "))
}

/// What differs between a record's target definition and the current one.
fn target_difference(db: &Database, r: &Record, t: &scaletune_codegen::target::Target) -> String {
    if r.target_name != t.name {
        return format!("target `{}` is not `{}`", r.target_name, t.name);
    }
    let then = db.target_definition(r.target_id).ok().flatten().unwrap_or_default();
    let now = target_definition(t);
    let changed: Vec<String> = now
        .lines()
        .filter(|l| !then.lines().any(|x| x == *l))
        .map(|l| {
            let key = l.split(" = ").next().unwrap_or(l);
            let old = then.lines().find(|x| x.starts_with(&format!("{key} = "))).unwrap_or("(none)");
            format!("{old} (recorded) vs {l} (now)")
        })
        .collect();
    format!("target `{}` was defined differently: {}", t.name, changed.join(", "))
}

/// Records of the same workload reference and target name under other definitions: one stale entry per definition pair (its best record).
fn other_definitions(db: &Database, k: &KernelSpec, wh: &str, th: &str) -> Result<Vec<Stale>, BuildError> {
    let mut best: BTreeMap<(i64, i64), Record> = BTreeMap::new();
    let mut names: BTreeMap<i64, bool> = BTreeMap::new();
    for r in db.ok_records_for_target_name(&k.target.name)? {
        if r.workload_hash == wh && r.target_hash == th {
            continue;
        }
        let same_workload = *names.entry(r.workload_id).or_insert_with(|| {
            r.workload_hash == wh || {
                let def = db.workload_definition(r.workload_id).ok().flatten().unwrap_or_default();
                match serde_json::from_str::<Workload>(&def) {
                    Ok(w) => w.reference() == k.workload.reference(),
                    Err(_) => serde_json::from_str::<serde_json::Value>(&def)
                        .is_ok_and(|v| v["name"].as_str() == Some(k.workload.name.as_str())),
                }
            }
        });
        if !same_workload {
            continue;
        }
        let e = best.entry((r.workload_id, r.target_id)).or_insert_with(|| r.clone());
        if r.best_objective().unwrap_or(f64::INFINITY) < e.best_objective().unwrap_or(f64::INFINITY) {
            *e = r;
        }
    }
    Ok(best
        .into_values()
        .map(|r| {
            let mut why = Vec::new();
            if r.workload_hash != wh {
                why.push(workload_difference(db, &r, &k.workload));
            }
            if r.target_hash != th {
                why.push(target_difference(db, &r, &k.target));
            }
            Stale { record: r.id, reason: why.join("; ") }
        })
        .collect())
}
