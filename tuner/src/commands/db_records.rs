//! What `db import` and `db check` hold a record's contents to, beyond SQLite's own integrity: a status, vector-length set, objective, metrics and traces this scaletune reads.
//!
//! The database keeps these fields as text it does not interpret; a record
//! whose text no command can read (a hand-edited export, a row written by
//! something else) would otherwise import, rank and print as garbage.

use crate::tune::objective::ObjectiveKind;
use scaletune_database::{Database, NewRecord};
use scaletune_measure::{Status, VlMeasurement};
use scaletune_space::trace::parse_trace;

/// The status names a record may have.
const STATUSES: &str = "ok, build_error, run_error, timeout, wrong_result, unmeasured";

/// What is wrong with a record's contents, if anything (the first problem).
pub fn record_problem(r: &NewRecord) -> Option<String> {
    status_problem(&r.status)
        .or_else(|| vl_set_problem(&r.vl_set))
        .or_else(|| objective_problem(r))
        .or_else(|| metrics_problem(&r.metrics))
        .or_else(|| trace_problem("trace", &r.trace))
        .or_else(|| trace_problem("space_trace", &r.space_trace))
}

fn status_problem(status: &str) -> Option<String> {
    let known = serde_json::from_value::<Status>(serde_json::Value::String(status.to_string())).is_ok();
    (!known).then(|| format!("`status` is `{status}`, not one of {STATUSES}"))
}

/// A canonical VL set: positive lengths in bits, ascending, each once (`128,256`).
fn vl_set_problem(vl_set: &str) -> Option<String> {
    let bad = || Some(format!("`vl_set` is `{vl_set}`, not vector lengths in bits, ascending (`128,256`)"));
    let mut last = 0u32;
    for part in vl_set.split(',') {
        match part.parse::<u32>() {
            Ok(vl) if vl > last => last = vl,
            _ => return bad(),
        }
    }
    None
}

fn objective_problem(r: &NewRecord) -> Option<String> {
    let kinds = [ObjectiveKind::Time, ObjectiveKind::Cycles, ObjectiveKind::Instructions];
    if !kinds.iter().any(|k| k.name() == r.objective_kind) {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Some(format!("`objective_kind` is `{}`, not one of {}", r.objective_kind, names.join(", ")));
    }
    match r.objective {
        Some(x) if !(x.is_finite() && x > 0.0) => Some(format!("`objective` is {x}, not a positive number")),
        _ => None,
    }
}

fn metrics_problem(metrics: &str) -> Option<String> {
    serde_json::from_str::<Vec<VlMeasurement>>(metrics)
        .err()
        .map(|e| format!("`metrics` is not the runs of a measurement: {e}"))
}

fn trace_problem(field: &str, trace: &str) -> Option<String> {
    parse_trace(trace).err().map(|e| format!("`{field}` does not parse: {e}"))
}

/// Each import line's record problem, as `import line N: ...`: the first
/// one found, or `None` when every line is readable (lines that are not
/// records at all are left for the import itself to refuse).
pub fn import_problem(lines: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(lines);
    for (i, line) in text.lines().enumerate() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let Some(record) = value.get("record") else { continue };
        let Ok(record) = serde_json::from_value::<NewRecord>(record.clone()) else { continue };
        if let Some(p) = record_problem(&record) {
            return Some(format!("import line {}: {p}", i + 1));
        }
    }
    None
}

/// `db check`'s line on record contents: `records: ok`, or the records
/// whose contents no command can read, with the first problem of each.
pub fn check_line(db: &Database) -> (String, bool) {
    let records = match db.all_records() {
        Ok(r) => r,
        Err(e) => return (format!("records: unreadable: {e}"), false),
    };
    let problems: Vec<String> =
        records.iter().filter_map(|r| record_problem(&r.data).map(|p| format!("record {}: {p}", r.id))).collect();
    if problems.is_empty() {
        return ("records: ok".to_string(), true);
    }
    (format!("records: {} unreadable: {}", problems.len(), problems.join("; ")), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> NewRecord {
        NewRecord {
            job_id: None,
            workload_id: 0,
            target_id: 0,
            trial_idx: 0,
            space_trace: String::new(),
            trace: "b = get_block(\"C\")\n".into(),
            trace_hash: String::new(),
            runner: "native".into(),
            vl_set: "128,256".into(),
            status: "ok".into(),
            message: String::new(),
            metrics: "[]".into(),
            objective: Some(1e-3),
            objective_kind: "time_s".into(),
            build_s: 0.1,
            run_s: 0.1,
            vector_kind: None,
            predicted: None,
            code: None,
        }
    }

    /// `db check` names each unreadable record with its first problem.
    #[test]
    fn the_check_names_unreadable_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("c.db")).expect("opens");
        assert_eq!(check_line(&db), ("records: ok".to_string(), true));
        let w = db.upsert_workload("w").expect("workload");
        let t = db.upsert_target("t", "t").expect("target");
        for (i, status) in ["ok", "bogus"].into_iter().enumerate() {
            let mut r = record();
            (r.workload_id, r.target_id, r.trial_idx, r.status) = (w.id, t.id, i as i64, status.into());
            r.trace = format!("{}# {i}\n", r.trace);
            r.trace_hash = scaletune_database::hash_text(&r.trace);
            db.insert_record(&r).expect("inserts");
        }
        let want = "records: 1 unreadable: record 2: `status` is `bogus`, not one of ok, build_error, run_error, \
                    timeout, wrong_result, unmeasured";
        assert_eq!(check_line(&db), (want.to_string(), false));
    }

    /// An edit of a record, and the problem it makes.
    type Case = (fn(&mut NewRecord), &'static str);

    #[test]
    fn each_field_a_command_reads_is_checked() {
        assert_eq!(record_problem(&record()), None);
        let cases: [Case; 7] = [
            (
                |r| r.status = "bogus".into(),
                "`status` is `bogus`, not one of ok, build_error, run_error, timeout, wrong_result, unmeasured",
            ),
            (|r| r.vl_set = "abc".into(), "`vl_set` is `abc`, not vector lengths in bits, ascending (`128,256`)"),
            (
                |r| r.vl_set = "256,128".into(),
                "`vl_set` is `256,128`, not vector lengths in bits, ascending (`128,256`)",
            ),
            (
                |r| r.objective_kind = "bananas".into(),
                "`objective_kind` is `bananas`, not one of time_s, est_cycles, instructions",
            ),
            (|r| r.objective = Some(-1.0), "`objective` is -1, not a positive number"),
            (
                |r| r.metrics = "not json".into(),
                "`metrics` is not the runs of a measurement: expected ident at line 1 column 2",
            ),
            (
                |r| r.trace = "garbage here(".into(),
                "`trace` does not parse: line 1, column 9: `garbage here(`: expected `(` after `garbage`, found `here`",
            ),
        ];
        let got: Vec<Option<String>> = cases
            .iter()
            .map(|(edit, _)| {
                let mut r = record();
                edit(&mut r);
                record_problem(&r)
            })
            .collect();
        let want: Vec<Option<String>> = cases.iter().map(|(_, m)| Some(m.to_string())).collect();
        assert_eq!(got, want);
    }
}
