//! The tuning database on real files: records, dedup, queries, jobs, export/import, concurrency, durability and refusals.

use scaletune_database::{
    hash_text, Database, DbError, JobStatus, NewJob, NewRecord, NewRemeasurement, Placed, RecordFilter, RecordKey,
    APPLICATION_ID, SCHEMA_VERSION,
};
use std::path::Path;

fn record(db: &Database, job: Option<i64>, trace: &str, objective: Option<f64>, vl_set: &str) -> NewRecord {
    let w = db.upsert_workload("{\"name\":\"matmul\"}").expect("workload");
    let t = db.upsert_target("host", "name = host\n").expect("target");
    NewRecord {
        job_id: job,
        workload_id: w.id,
        target_id: t.id,
        trial_idx: 0,
        space_trace: "b = get_block(\"C\")".into(),
        trace: trace.into(),
        trace_hash: hash_text(trace),
        runner: "native".into(),
        vl_set: vl_set.into(),
        status: if objective.is_some() { "ok".into() } else { "run_error".into() },
        message: if objective.is_some() { String::new() } else { "SIGSEGV".into() },
        metrics: "[{\"vl_bits\":256}]".into(),
        objective,
        objective_kind: "time_s".into(),
        build_s: 0.5,
        run_s: 0.25,
        vector_kind: Some("SVE-VLA".into()),
        predicted: objective.map(|o| o * 1.5),
        code: Some(format!("code of {trace}")),
    }
}

fn job(db: &Database) -> i64 {
    db.create_job(&NewJob { arguments: "{\"trials\":8}".into(), seed: 7, strategy: "random".into() }).expect("job")
}

#[test]
fn a_record_round_trips_and_is_never_stored_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("t.db")).expect("opens");
    let j = job(&db);
    let rec = record(&db, Some(j), "trace one", Some(1e-3), "256");
    let first = db.insert_record(&rec).expect("inserts");
    assert!(!first.existed);
    let stored = db.record(first.id).expect("reads").expect("exists");
    assert_eq!(stored.data, rec);
    assert_eq!(stored.target_name, "host");
    assert_eq!(stored.workload_hash, hash_text("{\"name\":\"matmul\"}"));
    // The same key again: the first record stays, untouched.
    let again = db.insert_record(&NewRecord { objective: Some(5.0), ..rec.clone() }).expect("inserts");
    assert_eq!((again.id, again.existed), (first.id, true));
    assert_eq!(db.record(first.id).expect("reads").expect("exists").objective, Some(1e-3));
    // Another VL set is another candidate.
    assert!(!db.insert_record(&record(&db, Some(j), "trace one", Some(2e-3), "128,256")).expect("inserts").existed);
    let key = RecordKey {
        workload_id: rec.workload_id,
        target_id: rec.target_id,
        trace_hash: hash_text("trace one"),
        vl_set: "256".into(),
        runner: "native".into(),
    };
    assert_eq!(db.lookup(&key).expect("looks up").map(|r| r.id), Some(first.id));
    assert_eq!(db.lookup(&RecordKey { runner: "qemu".into(), ..key }).expect("looks up"), None);
}

#[test]
fn best_k_orders_ok_records_and_filters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("t.db")).expect("opens");
    for (i, obj) in [Some(3.0), None, Some(1.0), Some(2.0)].into_iter().enumerate() {
        db.insert_record(&record(&db, None, &format!("t{i}"), obj, "256")).expect("inserts");
    }
    db.insert_record(&record(&db, None, "other vl", Some(0.5), "128")).expect("inserts");
    let (w, t) = (hash_text("{\"name\":\"matmul\"}"), hash_text("name = host\n"));
    let all: Vec<Option<f64>> =
        db.best_k(&w, &t, 10, &RecordFilter::default()).expect("best").iter().map(|r| r.objective).collect();
    assert_eq!(all, [Some(0.5), Some(1.0), Some(2.0), Some(3.0)]);
    let filter = RecordFilter { vl_set: Some("256".into()), ..Default::default() };
    let two: Vec<String> = db.best_k(&w, &t, 2, &filter).expect("best").iter().map(|r| r.trace.clone()).collect();
    assert_eq!(two, ["t2", "t3"]);
    let stats = db.stats().expect("stats");
    assert_eq!(stats.records, 5);
    assert_eq!(stats.tasks[0].statuses["run_error"], 1);
    assert_eq!(stats.tasks[0].best["time_s"], 0.5);
}

#[test]
fn records_of_a_target_name_span_its_definitions_and_keep_theirs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("t.db")).expect("opens");
    let ok = db.insert_record(&record(&db, None, "t0", Some(1.0), "256")).expect("inserts");
    db.insert_record(&record(&db, None, "failed", None, "256")).expect("inserts");
    let newer = db.upsert_target("host", "name = host\ncpu = znver4\n").expect("target");
    let other = db.upsert_target("rvv", "name = rvv\n").expect("target");
    let again = db
        .insert_record(&NewRecord { target_id: newer.id, ..record(&db, None, "t1", Some(2.0), "256") })
        .expect("inserts");
    db.insert_record(&NewRecord { target_id: other.id, ..record(&db, None, "t2", Some(3.0), "256") }).expect("inserts");
    let ids: Vec<i64> = db.ok_records_for_target_name("host").expect("reads").iter().map(|r| r.id).collect();
    assert_eq!(ids, [ok.id, again.id]);
    let stored = db.record(again.id).expect("reads").expect("exists");
    assert_eq!(db.target_definition(stored.target_id).expect("reads").as_deref(), Some("name = host\ncpu = znver4\n"));
    assert_eq!(db.target_definition(999).expect("reads"), None);
}

#[test]
fn jobs_keep_state_and_history_in_trial_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("t.db")).expect("opens");
    let j = job(&db);
    for i in [2, 0, 1] {
        db.insert_record(&NewRecord { trial_idx: i, ..record(&db, Some(j), &format!("t{i}"), Some(1.0), "256") })
            .expect("inserts");
    }
    db.update_job_state(j, "{\"batches\":3}").expect("state");
    db.finish_job(j, JobStatus::Interrupted, "interrupted").expect("finish");
    let stored = db.job(j).expect("reads").expect("exists");
    assert_eq!(
        (stored.status, stored.state.as_deref(), stored.stop_reason.as_deref()),
        (JobStatus::Interrupted, Some("{\"batches\":3}"), Some("interrupted"))
    );
    assert!(stored.ended_at.is_some());
    db.reopen_job(j).expect("reopens");
    assert_eq!(db.job(j).expect("reads").expect("exists").status, JobStatus::Running);
    let trials: Vec<i64> = db.job_history(j).expect("history").iter().map(|r| r.trial_idx).collect();
    assert_eq!(trials, [0, 1, 2]);
    assert!(matches!(db.update_job_state(99, "{}"), Err(DbError::NoJob(99))));
}

#[test]
fn export_then_import_preserves_every_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Database::open(&dir.path().join("a.db")).expect("opens");
    let j = job(&src);
    for i in 0..5 {
        let obj = if i == 3 { None } else { Some(f64::from(i) + 0.5) };
        src.insert_record(&NewRecord {
            trial_idx: i64::from(i),
            ..record(&src, Some(j), &format!("t{i}"), obj, "256")
        })
        .expect("inserts");
    }
    src.insert_record(&record(&src, None, "no job", Some(9.0), "256")).expect("inserts");
    // t1 and t0 re-measured (t0 once, slower; t1 twice: one run no runner could make).
    let id_of = |db: &Database, trace: &str| {
        db.all_records().expect("records").into_iter().find(|r| r.trace == trace).expect("exists").id
    };
    let run = |objective: Option<f64>| NewRemeasurement {
        job_id: Some(j),
        status: if objective.is_some() { "ok" } else { "unmeasured" },
        metrics: "[]",
        objective,
    };
    assert_eq!(src.remeasure(id_of(&src, "t1"), &run(Some(2.5))).expect("remeasures"), Some(2.0));
    assert_eq!(src.remeasure(id_of(&src, "t1"), &run(None)).expect("remeasures"), Some(2.0));
    assert_eq!(src.remeasure(id_of(&src, "t0"), &run(Some(4.5))).expect("remeasures"), Some(2.5));
    let mut bytes = Vec::new();
    assert_eq!(src.export_jsonl(&mut bytes).expect("exports"), 6);
    let dst = Database::open(&dir.path().join("b.db")).expect("opens");
    // A record the destination measured itself is kept, not duplicated.
    dst.insert_record(&record(&dst, None, "t0", Some(0.5), "256")).expect("inserts");
    let stats = dst.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!((stats.inserted, stats.duplicates), (5, 1));
    let strip = |db: &Database| {
        let mut v: Vec<(String, Option<f64>, String, String, String)> = db
            .all_records()
            .expect("records")
            .into_iter()
            .map(|r| (r.trace.clone(), r.objective, r.status.clone(), r.metrics.clone(), r.created_at.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let (a, b) = (strip(&src), strip(&dst));
    assert_eq!(
        a.iter().map(|x| (&x.0, x.1, &x.2, &x.3)).collect::<Vec<_>>(),
        b.iter().map(|x| (&x.0, x.1, &x.2, &x.3)).collect::<Vec<_>>()
    );
    // Re-measurements travel with their record, and merge into one the
    // destination already had; the run of the record's job keeps its job.
    let runs = |db: &Database, trace: &str| {
        let r = db.record(id_of(db, trace)).expect("reads").expect("exists");
        let jobs: Vec<bool> = r.remeasured.iter().map(|m| m.job_id.is_some()).collect();
        (r.remeasured.iter().map(|m| (m.status.clone(), m.objective)).collect::<Vec<_>>(), jobs, r.confirmed)
    };
    let t1 = runs(&dst, "t1");
    assert_eq!(t1.0, [("ok".to_string(), Some(2.5)), ("unmeasured".to_string(), None)]);
    assert_eq!((t1.1, t1.2), (vec![true, true], Some(2.0)));
    let t0 = runs(&dst, "t0");
    assert_eq!((t0.0, t0.1, t0.2), (vec![("ok".to_string(), Some(4.5))], vec![true], Some(2.5)));
    let imported_job = dst.jobs().expect("jobs");
    assert_eq!(imported_job.len(), 1);
    assert_eq!(dst.job_history(imported_job[0].id).expect("history").len(), 4, "t0 was the destination's own");
    // Importing again adds nothing.
    assert_eq!(dst.import_jsonl(bytes.as_slice()).expect("imports").inserted, 0);
    // A malformed line: an error naming it, and nothing of the import applied.
    let fresh = Database::open(&dir.path().join("c.db")).expect("opens");
    let mut bad = bytes.clone();
    bad.extend_from_slice(b"{not json\n");
    match fresh.import_jsonl(bad.as_slice()) {
        Err(DbError::Import { line: 7, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(fresh.all_records().expect("records").is_empty());
}

#[test]
fn a_record_that_fails_a_re_measurement_leaves_the_winners_and_keeps_every_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(&dir.path().join("a.db")).expect("opens");
    let j = job(&db);
    let fast = db.insert_record(&record(&db, Some(j), "fast", Some(1.0), "256")).expect("inserts").id;
    let slow = db.insert_record(&record(&db, Some(j), "slow", Some(2.0), "256")).expect("inserts").id;
    let (w, t) = {
        let r = db.record(fast).expect("reads").expect("exists");
        (r.workload_hash.clone(), r.target_hash.clone())
    };
    let best = |db: &Database| -> Vec<String> {
        db.best_k(&w, &t, 5, &RecordFilter::default()).expect("best").into_iter().map(|r| r.trace.clone()).collect()
    };
    let run = |status: &'static str, objective: Option<f64>| NewRemeasurement {
        job_id: Some(j),
        status,
        metrics: "[]",
        objective,
    };
    assert_eq!(db.remeasure(fast, &run("ok", Some(1.2))).expect("remeasures"), Some(1.1));
    // A run no runner could make does not count against the candidate.
    assert_eq!(db.remeasure(slow, &run("unmeasured", None)).expect("remeasures"), Some(2.0));
    assert_eq!(best(&db), ["fast", "slow"]);
    // A wrong result on a later run: out of the winners, every run kept.
    assert_eq!(db.remeasure(fast, &run("wrong_result", None)).expect("remeasures"), None);
    assert_eq!(best(&db), ["slow"]);
    let r = db.record(fast).expect("reads").expect("exists");
    assert_eq!(
        (r.status.as_str(), r.message.as_str(), r.objective),
        (
            "wrong_result",
            "passed its first run, then failed 1 of 2 re-measurements (the first with wrong_result)",
            Some(1.0)
        )
    );
    assert_eq!(r.remeasured.iter().map(|m| m.status.as_str()).collect::<Vec<_>>(), ["ok", "wrong_result"]);
    // A passing run later does not bring it back.
    db.remeasure(fast, &run("ok", Some(0.9))).expect("remeasures");
    assert_eq!(best(&db), ["slow"]);
    // Another database learns it on import, even for a record it measured itself.
    let mut bytes = Vec::new();
    db.export_jsonl(&mut bytes).expect("exports");
    let other = Database::open(&dir.path().join("b.db")).expect("opens");
    let own = other.insert_record(&record(&other, None, "fast", Some(0.5), "256")).expect("inserts").id;
    other.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!(other.record(own).expect("reads").expect("exists").status, "wrong_result");
    assert_eq!(best(&other), ["slow"]);
}

/// A candidate measured again because it now builds other code: the new
/// measurement is the record's, the earlier one (with its re-measurements)
/// stays in the record's history, and imports merge by the same rule, the
/// newer measurement first.
#[test]
fn a_measurement_of_other_code_takes_the_records_place_and_keeps_the_earlier_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tick = || std::thread::sleep(std::time::Duration::from_millis(5));
    let (src, dst, later) = (
        Database::open(&dir.path().join("a.db")).expect("opens"),
        Database::open(&dir.path().join("b.db")).expect("opens"),
        Database::open(&dir.path().join("c.db")).expect("opens"),
    );
    let old = |db: &Database, code: &str, objective: f64| NewRecord {
        code: Some(code.into()),
        ..record(db, None, "t", Some(objective), "256")
    };
    // The destination measured the old code first.
    let dst_own = dst.insert_record(&old(&dst, "old", 3.0)).expect("inserts").id;
    tick();
    let (j1, j2) = (job(&src), job(&src));
    let first = src.insert_record(&NewRecord { job_id: Some(j1), ..old(&src, "old", 1.0) }).expect("inserts");
    let run = NewRemeasurement { job_id: Some(j1), status: "ok", metrics: "[]", objective: Some(1.2) };
    src.remeasure(first.id, &run).expect("remeasures");
    tick();
    let again = NewRecord { job_id: Some(j2), trial_idx: 4, ..old(&src, "new", 2.0) };
    // A plain insert keeps what is there; a replacement takes its place.
    assert_eq!(src.insert_record(&again).expect("inserts").placed, Placed::Kept);
    let ins = src.replace_record(&again).expect("replaces");
    assert_eq!((ins.id, ins.existed, ins.placed), (first.id, true, Placed::Replaced));
    let r = src.record(first.id).expect("reads").expect("exists");
    assert_eq!(r.data, again);
    assert_eq!((r.remeasured.len(), r.confirmed), (0, None));
    assert_eq!(
        r.superseded
            .iter()
            .map(|h| (h.code.as_deref(), h.objective, h.job_id, h.remeasured.len(), h.confirmed))
            .collect::<Vec<_>>(),
        [(Some("old"), Some(1.0), Some(j1), 1, Some(1.1))]
    );
    assert!(r.superseded[0].created_at < r.created_at);
    assert_eq!(src.job_history(j2).expect("history").iter().map(|h| h.id).collect::<Vec<_>>(), [first.id]);
    assert!(src.job_history(j1).expect("history").is_empty(), "the record now is job {j2}'s");
    let w = r.workload_hash.clone();
    let best: Vec<Option<f64>> = src
        .best_k(&w, &r.target_hash, 5, &RecordFilter::default())
        .expect("best")
        .iter()
        .map(|b| b.objective)
        .collect();
    assert_eq!(best, [Some(2.0)]);
    // Measured again on the same code (another process was first): kept as it is.
    let same = src.replace_record(&NewRecord { objective: Some(7.0), ..again.clone() }).expect("keeps");
    assert_eq!((same.id, same.placed), (first.id, Placed::Kept));
    assert_eq!(src.record(first.id).expect("reads").expect("exists").superseded.len(), 1);
    assert_eq!(src.record(first.id).expect("reads").expect("exists").objective, Some(2.0));
    // A record no runner measured takes a measurement of the same code.
    let unmeasured = NewRecord { status: "unmeasured".into(), objective: None, ..record(&src, None, "v", None, "256") };
    let v = src.insert_record(&unmeasured).expect("inserts").id;
    let measured = src.replace_record(&record(&src, None, "v", Some(3.0), "256")).expect("replaces");
    assert_eq!((measured.id, measured.placed), (v, Placed::Replaced));
    let r = src.record(v).expect("reads").expect("exists");
    assert_eq!((r.status.as_str(), r.objective, r.superseded.len()), ("ok", Some(3.0), 1));
    assert_eq!(r.superseded[0].status, "unmeasured");
    // A key not measured yet is simply inserted.
    let fresh = src.replace_record(&record(&src, None, "u", Some(1.0), "256")).expect("inserts");
    assert_eq!((fresh.existed, fresh.placed), (false, Placed::New));
    assert!(src.check().expect("checks").ok());
    let stats = src.stats().expect("stats");
    assert_eq!((stats.records, stats.superseded, stats.without_code), (3, 2, 0));

    // The newer measurement of other code replaces the destination's own,
    // which joins the imported history; importing again changes nothing.
    let mut bytes = Vec::new();
    src.export_jsonl(&mut bytes).expect("exports");
    tick();
    let later_own = later.insert_record(&old(&later, "newest", 0.5)).expect("inserts").id;
    let stats = dst.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!((stats.inserted, stats.duplicates, stats.other_code), (2, 0, 1));
    let histories = |db: &Database, id: i64| {
        let r = db.record(id).expect("reads").expect("exists");
        let h: Vec<(Option<String>, Option<f64>)> =
            r.superseded.iter().map(|h| (h.code.clone(), h.objective)).collect();
        (r.code.clone(), r.objective, h)
    };
    let expected = (
        Some("new".to_string()),
        Some(2.0),
        vec![(Some("old".to_string()), Some(3.0)), (Some("old".to_string()), Some(1.0))],
    );
    assert_eq!(histories(&dst, dst_own), expected);
    let stats = dst.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!((stats.inserted, stats.duplicates, stats.other_code), (0, 3, 0));
    assert_eq!(histories(&dst, dst_own), expected);
    // Into a database that measured newer code since, the import is history.
    let stats = later.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!((stats.inserted, stats.duplicates, stats.other_code), (2, 0, 1));
    assert_eq!(
        histories(&later, later_own),
        (
            Some("newest".to_string()),
            Some(0.5),
            vec![(Some("old".to_string()), Some(1.0)), (Some("new".to_string()), Some(2.0))]
        )
    );
    assert!(dst.check().expect("checks").ok() && later.check().expect("checks").ok());
    // Into a database where no runner measured `v`: the imported measurement
    // of the same code takes its place.
    let waiting = Database::open(&dir.path().join("d.db")).expect("opens");
    let own = waiting
        .insert_record(&NewRecord {
            status: "unmeasured".into(),
            objective: None,
            ..record(&waiting, None, "v", None, "256")
        })
        .expect("inserts")
        .id;
    let stats = waiting.import_jsonl(bytes.as_slice()).expect("imports");
    assert_eq!((stats.inserted, stats.duplicates, stats.other_code), (2, 0, 1));
    let r = waiting.record(own).expect("reads").expect("exists");
    assert_eq!((r.status.as_str(), r.objective), ("ok", Some(3.0)));
    assert_eq!(r.superseded.iter().map(|h| h.status.as_str()).collect::<Vec<_>>(), ["unmeasured", "unmeasured"]);
}

#[test]
fn concurrent_writers_lose_nothing_and_never_see_a_locked_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    Database::open(&path).expect("creates");
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let db = Database::open(&path).expect("opens");
                for i in 0..150 {
                    db.insert_record(&record(&db, None, &format!("w{w} t{i}"), Some(1.0), "256"))
                        .expect("no locked error");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let db = Database::open(&path).expect("opens");
    assert_eq!(db.all_records().expect("records").len(), 450);
    assert!(db.check().expect("checks").ok());
}

#[test]
fn processes_creating_one_new_file_at_once_never_see_a_locked_database() {
    // Two jobs started together on a database that does not exist yet
    // race to create it, switch it to WAL and migrate it.
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..40 {
        let path = dir.path().join(format!("new{round}.db"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(4));
        let openers: Vec<_> = (0..4)
            .map(|w| {
                let (path, start) = (path.clone(), std::sync::Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    let db = Database::open(&path).map_err(|e| format!("opener {w}: {e}"))?;
                    db.insert_record(&record(&db, None, &format!("w{w}"), Some(1.0), "256"))
                        .map_err(|e| format!("writer {w}: {e}"))
                })
            })
            .collect();
        for o in openers {
            if let Err(e) = o.join().expect("opener") {
                panic!("round {round}: {e}");
            }
        }
        let db = Database::open(&path).expect("opens");
        assert_eq!(db.all_records().expect("records").len(), 4);
        assert!(db.check().expect("checks").ok());
    }
}

/// A new database file and a thread writing into it with `write` (given
/// its path and a flag that says stop, or that it has finished), for tests
/// that open the file meanwhile.
struct Writer {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl Writer {
    fn start(write: fn(&std::path::Path, &std::sync::atomic::AtomicBool) -> usize) -> Writer {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("busy.db");
        Database::open(&path).expect("creates");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (path, done) = (path.clone(), std::sync::Arc::clone(&done));
            std::thread::spawn(move || write(&path, &done))
        };
        Writer { _dir: dir, path, done, thread }
    }

    fn done(&self) -> bool {
        self.done.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Tells it to stop; the records it wrote.
    fn stop(self) -> usize {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().expect("writer")
    }
}

#[test]
fn a_database_opened_while_another_process_checkpoints_it_is_not_called_corrupt() {
    // A job's commits reach the main file by checkpoints (SQLite's
    // automatic one after about 4 MB of WAL): a process that opens the file
    // meanwhile must not take the pages being copied for damage.
    let w = Writer::start(|path, done| {
        let db = Database::open(path).expect("opens");
        let padding = "x".repeat(64 * 1024);
        for i in 0..600 {
            db.insert_record(&record(&db, None, &format!("t{i} {padding}"), Some(1.0), "256")).expect("inserts");
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        600
    });
    let mut opens = 0;
    while !w.done() {
        if let Err(e) = Database::open(&w.path) {
            panic!("open {opens} while the writer checkpoints: {e}");
        }
        opens += 1;
    }
    assert_eq!(w.stop(), 600);
    assert!(opens > 0);
}

#[test]
fn a_database_opened_while_others_open_write_and_close_it_is_not_called_corrupt() {
    // A process that finds no `-wal` and `-shm` beside the file reads it
    // without locks; another may open it, commit and close it meanwhile,
    // checkpointing into the main file under that reader.
    let w = Writer::start(|path, done| {
        let padding = "x".repeat(16 * 1024);
        let mut i = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let db = Database::open(path).expect("opens");
            for _ in 0..4 {
                db.insert_record(&record(&db, None, &format!("t{i} {padding}"), Some(1.0), "256")).expect("inserts");
                i += 1;
            }
        }
        i
    });
    let refused: Vec<String> = (0..400).filter_map(|_| Database::open(&w.path).err()).map(|e| e.to_string()).collect();
    let written = w.stop();
    assert!(written > 0);
    assert!(
        refused.is_empty(),
        "{} of 400 opens refused while {written} records were written: {:?}",
        refused.len(),
        refused.first()
    );
}

#[test]
fn a_record_is_durable_the_moment_it_is_inserted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let db = Database::open(&path).expect("opens");
    let j = job(&db);
    db.insert_record(&record(&db, Some(j), "t", Some(1.0), "256")).expect("inserts");
    // The process dies here: no finish_job, no close.
    std::mem::forget(db);
    let db = Database::open(&path).expect("reopens");
    assert_eq!(db.job_history(j).expect("history").len(), 1);
    assert_eq!(db.job(j).expect("job").expect("exists").status, JobStatus::Running);
    let report = db.check().expect("checks");
    assert!(report.ok(), "{report}");
}

#[test]
fn a_record_with_unreadable_re_measurements_or_history_is_named_by_reads_and_by_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let db = Database::open(&path).expect("opens");
    let j = job(&db);
    let id = db.insert_record(&record(&db, Some(j), "t", Some(1.0), "256")).expect("inserts").id;
    drop(db);
    // Damaged by hand (or by a tool that is not scaletune).
    let raw = rusqlite::Connection::open(&path).expect("opens");
    raw.execute("UPDATE records SET remeasured = '[{\"not\": 1}' WHERE id = ?1", [id]).expect("damages");
    drop(raw);
    let db = Database::open(&path).expect("opens");
    let file = path.display().to_string();
    for err in [db.job_history(j).expect_err("refused"), db.record(id).expect_err("refused")] {
        assert_eq!(
            err.to_string().replace(&file, "<db>"),
            format!(
                "<db> is not a usable SQLite database (record {id} has unreadable re-measurements: \
                 missing field `status` at line 1 column 11); it was left untouched"
            )
        );
    }
    let report = db.check().expect("checks");
    assert!(!report.ok());
    assert_eq!(report.unreadable_runs, [id]);
    assert!(report.unreadable_history.is_empty());
    // A damaged history is named the same way, and by check on its own line.
    let other = db.insert_record(&record(&db, Some(j), "u", Some(1.0), "256")).expect("inserts").id;
    drop(db);
    let raw = rusqlite::Connection::open(&path).expect("opens");
    raw.execute("UPDATE records SET superseded = '[1]' WHERE id = ?1", [other]).expect("damages");
    drop(raw);
    let db = Database::open(&path).expect("opens");
    let err = db.record(other).expect_err("refused").to_string().replace(&file, "<db>");
    assert!(
        err.starts_with(&format!(
            "<db> is not a usable SQLite database (record {other} has unreadable superseded measurements: "
        )),
        "{err}"
    );
    let report = db.check().expect("checks");
    assert_eq!((report.unreadable_runs.clone(), report.unreadable_history.clone()), (vec![id], vec![other]));
    assert_eq!(
        report.to_string(),
        format!(
            "integrity: ok\nforeign keys: ok\nre-measurements: unreadable in record(s) {id}\n\
             superseded measurements: unreadable in record(s) {other}\nschema version: {SCHEMA_VERSION} (this scaletune: {SCHEMA_VERSION})\napplication id: {APPLICATION_ID:#x}\nverdict: PROBLEMS"
        )
    );
}

fn refused_untouched(path: &Path) -> DbError {
    let before = std::fs::read(path).expect("reads");
    let siblings = |p: &Path| std::fs::read_dir(p.parent().expect("dir")).expect("lists").count();
    let n = siblings(path);
    let err = Database::open(path).expect_err("refused");
    assert_eq!(std::fs::read(path).expect("reads"), before, "the file changed");
    assert_eq!(siblings(path), n, "a journal or other file appeared");
    err
}

/// Reading commands make no database of an empty file, and a directory is
/// named as one.
#[test]
fn an_empty_file_is_not_made_a_database_by_reading_and_a_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("writes");
    let err =
        Database::open_existing(&empty).err().map(|e| e.to_string().replace(&dir.path().display().to_string(), "DIR"));
    assert_eq!(
        err.as_deref(),
        Some("DIR/empty.db is empty: not a tuning database yet (a tuning job makes one); it was left untouched")
    );
    assert_eq!(std::fs::metadata(&empty).expect("exists").len(), 0);
    let err = Database::open(dir.path()).err().map(|e| e.to_string().replace(&dir.path().display().to_string(), "DIR"));
    assert_eq!(err.as_deref(), Some("DIR: a directory, not a database file"));
    let nowhere = dir.path().join("no/such/dir/t.db");
    let err = Database::open(&nowhere).err().map(|e| e.to_string().replace(&dir.path().display().to_string(), "DIR"));
    assert_eq!(
        err.as_deref(),
        Some("DIR/no/such/dir/t.db: cannot create it: the directory DIR/no/such/dir does not exist")
    );
}

#[test]
fn garbage_truncated_foreign_and_newer_files_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database at all, just some text that is long enough to hold a header ....................",
    )
    .expect("writes");
    assert!(matches!(refused_untouched(&garbage), DbError::Corrupt { .. }));

    // A real database, cut in the middle.
    let good = dir.path().join("good.db");
    {
        let db = Database::open(&good).expect("opens");
        for i in 0..300 {
            db.insert_record(&record(&db, None, &format!("{i} {}", "x".repeat(200)), Some(1.0), "256"))
                .expect("inserts");
        }
    }
    let bytes = std::fs::read(&good).expect("reads");
    let cut_dir = tempfile::tempdir().expect("tempdir");
    let cut = cut_dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("writes");
    let err = refused_untouched(&cut);
    assert!(matches!(err, DbError::Corrupt { .. }), "{err}");

    let foreign_dir = tempfile::tempdir().expect("tempdir");
    let foreign = foreign_dir.path().join("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).expect("creates");
        c.execute_batch(
            "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT); INSERT INTO photos (path) VALUES ('a.jpg');",
        )
        .expect("writes");
    }
    let err = refused_untouched(&foreign);
    assert!(matches!(err, DbError::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("left untouched"));

    let newer_dir = tempfile::tempdir().expect("tempdir");
    let newer = newer_dir.path().join("newer.db");
    {
        drop(Database::open(&newer).expect("opens"));
        let c = rusqlite::Connection::open(&newer).expect("opens");
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1).expect("sets");
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;").expect("checkpoints");
    }
    match refused_untouched(&newer) {
        DbError::Newer { found, known, .. } => assert_eq!((found, known), (SCHEMA_VERSION + 1, SCHEMA_VERSION)),
        other => panic!("{other}"),
    }
}

#[test]
fn an_empty_file_and_a_missing_file_become_a_current_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("writes");
    let db = Database::open(&empty).expect("opens");
    assert_eq!(db.check().expect("checks").schema_version, SCHEMA_VERSION);
    assert!(matches!(Database::open_existing(&dir.path().join("none.db")), Err(DbError::Missing { .. })));
}
