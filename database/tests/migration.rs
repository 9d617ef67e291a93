//! Schema migrations from every released version: databases written by schema versions 1, 2 and 3 open with the current code with their data intact, and exports of version 1 still import.

use scaletune_database::{hash_text, Database, NewBaseline, MIGRATIONS, SCHEMA_VERSION};
use std::path::Path;

/// Migration 1 as released. A released migration is never edited: a change
/// of schema is a new migration.
const V1_SQL: &str = include_str!("fixtures/schema_v1.sql");
/// Migration 2 as released.
const V2_SQL: &str = include_str!("fixtures/schema_v2.sql");
/// Migration 3 as released.
const V3_SQL: &str = include_str!("fixtures/schema_v3.sql");

#[test]
fn the_released_migrations_are_unchanged() {
    assert_eq!(MIGRATIONS[0], V1_SQL);
    assert_eq!(MIGRATIONS[1], V2_SQL);
    assert_eq!(MIGRATIONS[2], V3_SQL);
    assert_eq!(SCHEMA_VERSION, 4);
}

/// A database as scaletune with schema version 1 wrote it: a job, a
/// workload, a target and three records (ok, failed, the unscheduled nest).
fn write_v1(path: &Path) {
    let c = rusqlite::Connection::open(path).expect("creates");
    c.execute_batch(V1_SQL).expect("v1 schema");
    c.pragma_update(None, "user_version", 1).expect("version");
    c.pragma_update(None, "application_id", scaletune_database::APPLICATION_ID).expect("application id");
    c.execute_batch(
        "INSERT INTO workloads (definition, hash) VALUES ('{\"name\":\"matmul\"}', 'wh');
         INSERT INTO targets (name, definition, hash) VALUES ('host', 'name = host', 'th');
         INSERT INTO jobs (arguments, seed, strategy, status, started_at, ended_at, stop_reason, state)
             VALUES ('{\"strategy\":\"random\"}', 3, 'random', 'finished', '2024-01-02T03:04:05.000Z',
                     '2024-01-02T03:05:00.000Z', 'trial budget reached', '{\"batches\":1}');",
    )
    .expect("rows");
    for (i, (trace, status, objective)) in
        [("", "ok", Some(4e-3)), ("split(a)", "ok", Some(1e-3)), ("split(b)", "run_error", None)].iter().enumerate()
    {
        c.execute(
            "INSERT INTO records (job_id, workload_id, target_id, trial_idx, space_trace, trace, trace_hash, runner,
                 vl_set, status, message, metrics, objective, objective_kind, build_s, run_s, created_at)
             VALUES (1, 1, 1, ?1, 'space', ?2, ?3, 'native', '256', ?4, '', '[]', ?5, 'time_s', 0.5, 0.25,
                     '2024-01-02T03:04:06.000Z')",
            (i as i64, trace, hash_text(trace), status, objective),
        )
        .expect("record");
    }
}

/// The database at `path` opened (and so migrated), checked sound and
/// current, and its records.
fn migrated(path: &Path) -> (Database, Vec<scaletune_database::Record>) {
    let db = Database::open(path).expect("opens and migrates");
    let report = db.check().expect("checks");
    assert!(report.ok(), "{report}");
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    let records = db.all_records().expect("records");
    (db, records)
}

#[test]
fn a_version_1_database_migrates_with_its_data_and_new_columns_null() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.db");
    write_v1(&path);
    let db = Database::open(&path).expect("opens and migrates");
    let report = db.check().expect("checks");
    assert!(report.ok(), "{report}");
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    let records = db.all_records().expect("records");
    type Seen<'a> = (i64, &'a str, &'a str, Option<f64>, Option<&'a str>, Option<f64>);
    let seen: Vec<Seen<'_>> = records
        .iter()
        .map(|r| (r.trial_idx, r.trace.as_str(), r.status.as_str(), r.objective, r.vector_kind.as_deref(), r.predicted))
        .collect();
    assert_eq!(
        seen,
        [
            (0, "", "ok", Some(4e-3), None, None),
            (1, "split(a)", "ok", Some(1e-3), None, None),
            (2, "split(b)", "run_error", None, None, None)
        ]
    );
    assert_eq!(records[1].created_at, "2024-01-02T03:04:06.000Z");
    let job = db.job(1).expect("job").expect("exists");
    assert_eq!((job.strategy.as_str(), job.state.as_deref()), ("random", Some("{\"batches\":1}")));
    let w = db.workload(1).expect("workload").expect("exists");
    assert_eq!((w.definition.as_str(), w.flops), ("{\"name\":\"matmul\"}", None));
    // The new table and column work on the migrated file.
    db.set_workload_flops(1, 2e6).expect("flops");
    assert_eq!(db.workload(1).expect("workload").expect("exists").flops, Some(2e6));
    assert!(db.baselines(1, 1).expect("baselines").is_empty());
    drop(db);
    // Opening again runs nothing more.
    let db = Database::open(&path).expect("reopens");
    assert_eq!(db.check().expect("checks").schema_version, SCHEMA_VERSION);
    assert_eq!(db.all_records().expect("records").len(), 3);
}

#[test]
fn a_version_2_database_migrates_with_its_records_unconfirmed_and_takes_remeasurements() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v2.db");
    write_v1(&path);
    {
        let c = rusqlite::Connection::open(&path).expect("opens");
        c.execute_batch(V2_SQL).expect("v2 schema");
        c.pragma_update(None, "user_version", 2).expect("version");
        c.execute_batch("UPDATE records SET vector_kind = 'AVX2', predicted = 2e-3 WHERE trace = 'split(a)'")
            .expect("v2 columns");
    }
    let (db, records) = migrated(&path);
    let seen: Vec<_> = records
        .iter()
        .map(|r| (r.trace.as_str(), r.objective, r.vector_kind.as_deref(), r.remeasured.len(), r.confirmed))
        .collect();
    assert_eq!(
        seen,
        [
            ("", Some(4e-3), None, 0, None),
            ("split(a)", Some(1e-3), Some("AVX2"), 0, None),
            ("split(b)", None, None, 0, None)
        ]
    );
    // The new columns work on the migrated file: split(a) measured twice
    // more, slower, falls behind the unscheduled nest.
    let (w, t) = (records[0].workload_hash.clone(), records[0].target_hash.clone());
    let best = |db: &Database| -> Vec<String> {
        db.best_k(&w, &t, 5, &Default::default()).expect("best").iter().map(|r| r.trace.clone()).collect()
    };
    assert_eq!(best(&db), ["split(a)", ""]);
    for objective in [6e-3, 5e-3] {
        let run = scaletune_database::NewRemeasurement {
            job_id: Some(1),
            status: "ok",
            metrics: "[]",
            objective: Some(objective),
        };
        db.remeasure(records[1].id, &run).expect("remeasures");
    }
    assert_eq!(best(&db), ["", "split(a)"]);
    assert_eq!(db.record(records[1].id).expect("reads").expect("exists").confirmed, Some(5e-3));
}

#[test]
fn baselines_replace_on_the_same_key_and_are_listed_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("b.db")).expect("opens");
    let w = db.upsert_workload("{\"name\":\"matmul\"}").expect("workload");
    let t = db.upsert_target("host", "name = host\n").expect("target");
    let base = |name: &str, objective: f64| NewBaseline {
        workload_id: w.id,
        target_id: t.id,
        name: name.into(),
        runner: "native".into(),
        vl_set: "256".into(),
        objective: Some(objective),
        objective_kind: "time_s".into(),
        metrics: "{}".into(),
    };
    let first = db.insert_baseline(&base("openblas", 2e-3)).expect("inserts");
    db.insert_baseline(&base("clang-naive", 9e-3)).expect("inserts");
    let again = db.insert_baseline(&base("openblas", 1e-3)).expect("replaces");
    assert_eq!(first, again);
    let listed: Vec<(String, Option<f64>)> =
        db.baselines(w.id, t.id).expect("lists").iter().map(|b| (b.name.clone(), b.objective)).collect();
    assert_eq!(listed, [("clang-naive".to_string(), Some(9e-3)), ("openblas".to_string(), Some(1e-3))]);
    // Another VL set is another baseline.
    db.insert_baseline(&NewBaseline { vl_set: "128".into(), ..base("openblas", 5e-3) }).expect("inserts");
    assert_eq!(db.baselines(w.id, t.id).expect("lists").len(), 3);
}

#[test]
fn exports_carry_the_new_fields_and_version_1_exports_still_import() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Database::open(&dir.path().join("src.db")).expect("opens");
    let w = src.upsert_workload("{\"name\":\"matmul\"}").expect("workload");
    src.set_workload_flops(w.id, 1.5e6).expect("flops");
    let t = src.upsert_target("host", "name = host\n").expect("target");
    let mut rec = scaletune_database::NewRecord {
        job_id: None,
        workload_id: w.id,
        target_id: t.id,
        trial_idx: 0,
        space_trace: String::new(),
        trace: "vectorize(j)".into(),
        trace_hash: hash_text("vectorize(j)"),
        runner: "qemu".into(),
        vl_set: "128,256".into(),
        status: "ok".into(),
        message: String::new(),
        metrics: "[]".into(),
        objective: Some(1000.0),
        objective_kind: "est_cycles".into(),
        build_s: 0.1,
        run_s: 0.2,
        vector_kind: Some("SVE-VLA".into()),
        predicted: Some(900.0),
        code: Some("c0de".into()),
    };
    src.insert_record(&rec).expect("inserts");
    let mut bytes = Vec::new();
    src.export_jsonl(&mut bytes).expect("exports");
    let dst = Database::open(&dir.path().join("dst.db")).expect("opens");
    dst.import_jsonl(bytes.as_slice()).expect("imports");
    let got = dst.all_records().expect("records");
    rec.workload_id = got[0].workload_id;
    rec.target_id = got[0].target_id;
    assert_eq!(got[0].data, rec);
    assert_eq!(dst.workload(got[0].workload_id).expect("workload").expect("exists").flops, Some(1.5e6));

    // A line as schema version 1 exported it: no vector kind, prediction or flops.
    let v1_line = r#"{"workload":"{\"name\":\"softmax\"}","target_name":"host","target":"name = host\n","job":null,"created_at":"2024-01-02T03:04:06.000Z","record":{"job_id":null,"workload_id":1,"target_id":1,"trial_idx":0,"space_trace":"","trace":"","trace_hash":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","runner":"native","vl_set":"256","status":"ok","message":"","metrics":"[]","objective":0.004,"objective_kind":"time_s","build_s":0.5,"run_s":0.25}}"#;
    let stats = dst.import_jsonl(format!("{v1_line}\n").as_bytes()).expect("imports a v1 line");
    assert_eq!(stats.inserted, 1);
    let old = dst.all_records().expect("records").pop().expect("the v1 record");
    assert_eq!(
        (old.trace.as_str(), old.objective, old.vector_kind.clone(), old.predicted, old.code.clone()),
        ("", Some(0.004), None, None, None)
    );
    assert!(old.superseded.is_empty());
    assert_eq!(dst.workload(old.workload_id).expect("workload").expect("exists").flops, None);
}

#[test]
fn a_version_3_database_migrates_with_its_re_measurements_and_codes_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v3.db");
    write_v1(&path);
    {
        let c = rusqlite::Connection::open(&path).expect("opens");
        c.execute_batch(V2_SQL).expect("v2 schema");
        c.execute_batch(V3_SQL).expect("v3 schema");
        c.pragma_update(None, "user_version", 3).expect("version");
        c.execute_batch(
            "UPDATE records SET remeasured = '[{\"job_id\":1,\"status\":\"ok\",\"metrics\":\"[]\",\"objective\":0.002,\"at\":\"2024-01-02T03:05:00.000Z\"}]', \
             confirmed = 1.5e-3 WHERE trace = 'split(a)'",
        )
        .expect("v3 columns");
    }
    let (db, records) = migrated(&path);
    let seen: Vec<_> = records
        .iter()
        .map(|r| (r.trace.as_str(), r.remeasured.len(), r.confirmed, r.code.clone(), r.superseded.len()))
        .collect();
    assert_eq!(seen, [("", 0, None, None, 0), ("split(a)", 1, Some(1.5e-3), None, 0), ("split(b)", 0, None, None, 0)]);
    // The new columns work on the migrated file: split(a) measured again on
    // known code takes the record's place, the old measurement in its history.
    let again =
        scaletune_database::NewRecord { objective: Some(3e-3), code: Some("c0de".into()), ..records[1].data.clone() };
    let ins = db.replace_record(&again).expect("replaces");
    assert_eq!((ins.id, ins.placed), (records[1].id, scaletune_database::Placed::Replaced));
    let now = db.record(records[1].id).expect("reads").expect("exists");
    assert_eq!(
        (now.objective, now.code.as_deref(), now.remeasured.len(), now.confirmed),
        (Some(3e-3), Some("c0de"), 0, None)
    );
    let old = &now.superseded[..];
    assert_eq!(old.len(), 1);
    assert_eq!(
        (old[0].objective, old[0].code.clone(), old[0].remeasured.len(), old[0].confirmed),
        (Some(1e-3), None, 1, Some(1.5e-3))
    );
    assert_eq!(old[0].created_at, "2024-01-02T03:04:06.000Z");
    assert!(db.check().expect("checks").ok());
}
