//! `scaletune tune` and `scaletune db` end to end: a real job on this machine, interrupted and resumed without measuring anything twice, a second job that reuses the first's records, two processes tuning into one file, the database commands, and refused databases.

mod common;

use common::{root, scaletune, stderr, stdout, text};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORKLOAD: &str = "matmul:M=48,N=40,K=24";

fn tune(db: &Path, extra: &[&str]) -> std::process::Output {
    let db = db.to_str().expect("utf-8");
    let mut args =
        vec!["tune", WORKLOAD, "--target", "host", "--db", db, "--repeat", "2", "--min-repeat-ms", "1", "--batch", "4"];
    args.extend_from_slice(extra);
    scaletune(&args)
}

/// `scaletune tune --resume JOB --db DB EXTRA...`: the job's own options,
/// so none of [`tune`]'s (which `--resume` refuses).
fn resume(db: &Path, job: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["tune", "--resume", job, "--db", db.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    scaletune(&args)
}

/// A finished job of 8 random trials of [`WORKLOAD`] into `DIR/tune.db`:
/// the database's path and what the job printed.
fn random_job(dir: &Path) -> (std::path::PathBuf, std::process::Output) {
    let db = dir.join("tune.db");
    let first = tune(&db, &["--trials", "8", "--strategy", "random"]);
    assert!(first.status.success(), "{}", text(&first));
    (db, first)
}

/// Record count and distinct (trace, runner, VL set) keys of the JSON-lines export.
fn records(db: &Path) -> (usize, usize) {
    let o = scaletune(&["db", "export", "--db", db.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let keys: std::collections::HashSet<String> = lines
        .iter()
        .map(|l| {
            format!("{}|{}|{}|{}", l["workload"], l["record"]["trace"], l["record"]["runner"], l["record"]["vl_set"])
        })
        .collect();
    (lines.len(), keys.len())
}

#[test]
fn an_interrupted_job_resumes_without_measuring_anything_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("tune.db");
    let child = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .args(["tune", WORKLOAD, "--target", "host", "--db", db.to_str().expect("utf-8")])
        .args(["--repeat", "2", "--min-repeat-ms", "1", "--batch", "4", "--trials", "400"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    // Interrupt once a first batch is recorded.
    let start = Instant::now();
    loop {
        let (n, _) = if db.exists() { records(&db) } else { (0, 0) };
        if n >= 4 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no batch recorded in two minutes");
        std::thread::sleep(Duration::from_millis(200));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("signals");
    let out = child.wait_with_output().expect("ends");
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(130), "{printed}");
    assert!(printed.contains("job 1 interrupted"), "{printed}");
    assert!(printed.contains("resume with: scaletune tune --resume 1"), "{printed}");
    let (before, distinct) = records(&db);
    assert_eq!(before, distinct);
    let check = scaletune(&["db", "check", "--db", db.to_str().expect("utf-8")]);
    assert!(check.status.success() && stdout(&check).contains("verdict: ok"), "{}", text(&check));

    // Resuming with other workloads or another target is refused, the job untouched.
    let dbs = db.to_str().expect("utf-8");
    let other = scaletune(&["tune", "axpy", "--resume", "1", "--db", dbs]);
    assert_eq!(
        (other.status.code(), stderr(&other)),
        (
            Some(2),
            format!(
                "error: job 1 tunes {WORKLOAD}; `--resume` continues it with its own workloads: leave out `axpy`\n"
            )
        )
    );
    let elsewhere = scaletune(&["tune", "--resume", "1", "--target", "neon", "--db", dbs]);
    assert_eq!(
        stderr(&elsewhere),
        "error: job 1 tunes on target `host`; `--resume` continues it there: leave out `--target neon`\n"
    );
    let reseeded = resume(&db, "1", &["--seed", "7", "--threads", "1", "--time-limit", "1s"]);
    assert_eq!(
        stderr(&reseeded),
        "error: job 1 keeps the --seed, --threads it was started with; `--resume` continues it so: leave out --seed \
         --threads\n"
    );
    let fewer = resume(&db, "1", &["--trials", "3"]);
    assert_eq!(
        stderr(&fewer),
        format!("error: job 1 has had {before} trials; --trials 3 must be more to continue it\n")
    );
    assert_eq!(records(&db).0, before, "a refused resume measured something");
    let stats = scaletune(&["db", "stats", "--db", dbs]);
    assert!(stdout(&stats).contains("jobs: 1 interrupted"), "{}", text(&stats));

    // Resume with a smaller budget so the test ends: the job's own arguments
    // are used, so its budget of 400 stands; a time limit bounds this run.
    let resumed = resume(&db, "1", &["--time-limit", "4s"]);
    let printed = text(&resumed);
    assert!(resumed.status.success(), "{printed}");
    assert!(printed.starts_with(&format!("resuming job 1 after {before} trials")), "{printed}");
    let (after, distinct) = records(&db);
    assert_eq!(after, distinct, "a candidate was measured twice");
    assert!(after > before, "the resumed job measured nothing new");
    // The summary covers the whole job: its trials column counts the
    // trials before the interrupt too (every record is one of its trials).
    let out = stdout(&resumed);
    let row = out.lines().find(|l| l.starts_with(WORKLOAD)).unwrap_or_else(|| panic!("no summary row:\n{out}"));
    assert_eq!(row.get(89..96).map(str::trim), Some(after.to_string().as_str()), "{row}");
}

#[test]
fn a_second_job_knows_the_first_ones_candidates_and_db_commands_read_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, first) = random_job(dir.path());
    let printed = stdout(&first);
    assert!(printed.contains("job 1 finished: 8 trials in all; trial budget reached"), "{printed}");
    assert!(printed.contains("best schedule of matmul:M=48,N=40,K=24"), "{printed}");
    let second = tune(&db, &["--trials", "8"]);
    let printed = stdout(&second);
    assert!(printed.contains("(8 candidates known)"), "{printed}");
    let (n, distinct) = records(&db);
    assert_eq!((n, distinct), (16, 16));

    let dbs = db.to_str().expect("utf-8");
    let best = scaletune(&["db", "best", WORKLOAD, "--target", "host", "--db", dbs]);
    assert!(best.status.success(), "{}", text(&best));
    // What `db best` prints is a schedule `check` accepts.
    let file = dir.path().join("best.trace");
    std::fs::write(&file, stdout(&best)).expect("writes");
    let check = scaletune(&["check", WORKLOAD, "--target", "host", "--schedule", file.to_str().expect("utf-8")]);
    assert!(check.status.success(), "{}", text(&check));
    let record: i64 =
        stdout(&best).split_whitespace().nth(2).and_then(|r| r.trim_end_matches(':').parse().ok()).expect("record id");
    let show = scaletune(&["show", &record.to_string(), "--db", dbs]);
    let shown = stdout(&show);
    assert!(show.status.success(), "{}", text(&show));
    for section in ["## trace", "## loop nest", "## vector program", "## assembly"] {
        assert!(shown.contains(section), "{section} missing:\n{shown}");
    }
    let stats = scaletune(&["db", "stats", "--db", dbs]);
    assert!(stdout(&stats).contains("16 records; jobs: 2 finished"), "{}", text(&stats));

    // Export, import into a new file: every record arrives once.
    let export = dir.path().join("all.jsonl");
    assert!(scaletune(&["db", "export", "--db", dbs, "--out", export.to_str().expect("utf-8")]).status.success());
    let other = dir.path().join("other.db");
    let import = scaletune(&["db", "import", export.to_str().expect("utf-8"), "--db", other.to_str().expect("utf-8")]);
    assert_eq!(stdout(&import), "imported 16 records, 0 already present\n", "{}", text(&import));

    // A database file imports as its export does: a third file merged from
    // the first gets every record, and the first imported again gets none.
    let third = dir.path().join("third.db");
    let ts = third.to_str().expect("utf-8");
    let from_db = scaletune(&["db", "import", dbs, "--db", ts]);
    assert_eq!(stdout(&from_db), "imported 16 records, 0 already present\n", "{}", text(&from_db));
    let again = scaletune(&["db", "import", dbs, "--db", ts]);
    assert_eq!(stdout(&again), "imported 0 records, 16 already present\n", "{}", text(&again));
    let exported = |db: &str| stdout(&scaletune(&["db", "export", "--db", db]));
    assert_eq!(exported(ts).lines().count(), 16);
    let garbage = dir.path().join("notes.txt");
    std::fs::write(&garbage, "not records\n").expect("writes");
    let gs = garbage.to_str().expect("utf-8");
    let refused = scaletune(&["db", "import", gs, "--db", ts]);
    assert_eq!(
        (refused.status.code(), stderr(&refused)),
        (
            Some(2),
            format!("error: {gs} is neither an export of `scaletune db export` (JSON lines) nor an SQLite database\n")
        )
    );
    // A record whose contents no command reads is refused with its line,
    // and the whole import with it.
    let lines = stdout(&scaletune(&["db", "export", "--db", dbs]));
    let mut edited: Vec<serde_json::Value> =
        lines.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let trace = "garbage here(";
    edited[2]["record"]["trace"] = trace.into();
    edited[2]["record"]["trace_hash"] = scaletune_database::hash_text(trace).into();
    let bad = dir.path().join("edited.jsonl");
    let text_lines: Vec<String> = edited.iter().map(|v| v.to_string()).collect();
    std::fs::write(&bad, text_lines.join("\n")).expect("writes");
    let fresh = dir.path().join("fresh.db");
    let refused = scaletune(&["db", "import", bad.to_str().expect("utf-8"), "--db", fresh.to_str().expect("utf-8")]);
    assert_eq!(
        (refused.status.code(), stderr(&refused)),
        (
            Some(2),
            format!(
                "error: importing {}: import line 3: `trace` does not parse: line 1, column 9: `garbage here(`: \
                 expected `(` after `garbage`, found `here`\n",
                bad.display()
            )
        )
    );
    assert!(!fresh.exists(), "a refused import created the database");

    // An export never overwrites a database, its own or another.
    let before = std::fs::read(&db).expect("reads");
    for onto in [dbs, ts] {
        let over = scaletune(&["db", "export", "--db", dbs, "-o", onto]);
        assert_eq!(
            (over.status.code(), stderr(&over)),
            (
                Some(2),
                format!("error: {onto} is an SQLite database, which the export would overwrite: name another file\n")
            )
        );
    }
    assert_eq!(std::fs::read(&db).expect("reads"), before, "a refused export changed the database");
    let neon = scaletune(&["db", "top", "matmul", "--target", "neon", "--db", dbs]);
    assert_eq!(
        stderr(&neon),
        format!("error: no measured schedule of matmul:M=128,N=128,K=128 on neon in {dbs}\n"),
        "the message names the shape looked up"
    );
    let manifest = dir.path().join("k.toml");
    std::fs::write(&manifest, format!("[[kernel]]\nname = \"mm\"\nworkload = \"{WORKLOAD}\"\ntarget = \"host\"\n"))
        .expect("writes");
    let ms = manifest.to_str().expect("utf-8");
    let onto_file = scaletune(&["build", "--db", dbs, "--manifest", ms, "--out-dir", ms]);
    assert_eq!(
        (onto_file.status.code(), stderr(&onto_file)),
        (Some(2), format!("error: cannot write {ms}: a file, not a directory: --out-dir names where the outputs go\n"))
    );
    let none = scaletune(&["db", "top", WORKLOAD, "--target", "host", "-k", "0", "--db", dbs]);
    assert_eq!((none.status.code(), stderr(&none)), (Some(2), "error: -k must be at least 1\n".to_string()));
    let itself = scaletune(&["db", "import", dbs, "--db", dbs]);
    assert_eq!(
        (itself.status.code(), stderr(&itself)),
        (Some(2), format!("error: {dbs} is the database being imported into; name another database or an export\n"))
    );
}

/// A finished job resumed with a larger `--trials` runs the extra trials
/// and keeps the new budget; a plain resume after that measures nothing.
#[test]
fn a_finished_job_resumed_with_a_larger_budget_runs_the_extra_trials() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = random_job(dir.path());
    let (before, _) = records(&db);
    let more = resume(&db, "1", &["--trials", "12"]);
    assert!(more.status.success(), "{}", text(&more));
    assert!(stdout(&more).contains("job 1 finished: 12 trials in all; trial budget reached"), "{}", text(&more));
    let (after, distinct) = records(&db);
    assert_eq!((after - before, after), (4, distinct), "four new candidates, none measured twice");
    let again = resume(&db, "1", &[]);
    assert!(stdout(&again).contains("job 1 finished: 12 trials in all"), "{}", text(&again));
    assert_eq!(records(&db).0, after, "the raised budget was not kept");
}

/// A job refused by its options, or by a runner it cannot have, leaves no
/// job behind (and, refused before the database opens, no file).
#[test]
fn a_refused_job_leaves_no_job_marked_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("refused.db");
    let dbs = db.to_str().expect("utf-8");
    let cases: [(&[&str], &str); 4] = [
        (&["--repeat", "5000"], "error: bad timing protocol: repeat must be in 1..=1000, not 5000\n"),
        (&["--farm", "farm.toml"], "error: --farm lists remote agents; it needs --runner remote\n"),
        (&["--time-limit", "0s"], "error: --time-limit must be more than 0\n"),
        (
            &["--report", "Cargo.toml"],
            "error: --report Cargo.toml: not a directory (the report is DIR/index.html with its charts beside it)\n",
        ),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["tune", WORKLOAD, "--target", "host", "--db", dbs];
        args.extend_from_slice(extra);
        let o = scaletune(&args);
        assert_eq!((o.status.code(), stderr(&o)), (Some(2), expect.to_string()), "{extra:?}");
        assert!(!db.exists(), "{extra:?} left a database behind");
    }
    // Refused once the database is open: it holds no job.
    let remote = tune(&db, &["--runner", "remote"]);
    assert_eq!(
        stderr(&remote),
        "error: --runner remote needs --farm FILE listing the agents (see configs/farm.example.toml)\n"
    );
    let stats = scaletune(&["db", "stats", "--db", dbs]);
    assert_eq!(stdout(&stats), format!("{dbs}: 0 records; jobs: none\n"), "{}", text(&stats));
}

/// A job on a new shape of a workload the database knows starts from the
/// other shape's best schedule: its first batch holds that schedule with
/// the perfect tilings moved to the new extents and every other decision
/// kept.
#[test]
fn a_new_shape_starts_from_the_best_schedule_of_another_in_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = random_job(dir.path());
    let dbs = db.to_str().expect("utf-8");
    let other = "matmul:M=48,N=40,K=16";
    let args = ["tune", other, "--target", "host", "--db", dbs, "--repeat", "2", "--min-repeat-ms", "1"];
    let second = scaletune(&[&args[..], &["--batch", "4", "--trials", "4"]].concat());
    assert!(second.status.success(), "{}", text(&second));
    let export = scaletune(&["db", "export", "--db", dbs]);
    let records: Vec<serde_json::Value> =
        stdout(&export).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let of_job = |job: i64| -> Vec<&serde_json::Value> {
        records.iter().map(|r| &r["record"]).filter(|r| r["job_id"] == job).collect()
    };
    let best = of_job(1)
        .into_iter()
        .filter(|r| r["status"] == "ok" && r["trace"] != "")
        .min_by(|a, b| {
            a["objective"].as_f64().unwrap_or(f64::MAX).total_cmp(&b["objective"].as_f64().unwrap_or(f64::MAX))
        })
        .expect("the first job has a best schedule");
    let but_perfect_tilings =
        |t: &str| -> String { t.lines().filter(|l| !l.contains("sample_perfect_tile")).collect::<Vec<_>>().join("\n") };
    let wanted = but_perfect_tilings(best["trace"].as_str().expect("text"));
    let second_job = of_job(2);
    assert_eq!(second_job.len(), 4);
    assert!(
        second_job.iter().any(|r| but_perfect_tilings(r["trace"].as_str().expect("text")) == wanted),
        "no schedule of the second job is the first one's best:\n{}",
        best["trace"]
    );
}

#[test]
fn the_best_candidates_are_re_measured_at_the_end_and_every_run_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("tune.db");
    // (No re-checks during the search: only the end's runs are counted here.)
    let out = tune(
        &db,
        &["--trials", "8", "--strategy", "random", "--confirm", "3", "--confirm-rounds", "2", "--recheck-best", "0"],
    );
    let printed = stdout(&out);
    assert!(out.status.success(), "{}", text(&out));
    // Three candidates twice each, and a fourth if it became the best
    // before it was re-measured.
    let line = printed.lines().find(|l| l.starts_with("re-measured the best ")).expect("a confirmation line");
    let three = line.starts_with("re-measured the best 3 of matmul:M=48,N=40,K=24: 6/6 runs passed; best ");
    let four = line.starts_with("re-measured the best 4 of matmul:M=48,N=40,K=24: 8/8 runs passed; best ");
    assert!(three || four, "{printed}");
    let o = scaletune(&["db", "export", "--db", db.to_str().expect("utf-8")]);
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 8, "re-measuring adds no record");
    let counts: Vec<usize> = lines.iter().map(|l| l["remeasured"].as_array().map_or(0, Vec::len)).collect();
    let remeasured: Vec<usize> = counts.iter().copied().filter(|&n| n > 0).collect();
    assert!(remeasured == [2, 2, 2] || remeasured == [2, 2, 2, 2], "{counts:?}");
    for l in &lines {
        for run in l["remeasured"].as_array().into_iter().flatten() {
            assert_eq!((run["job_id"].as_i64(), run["status"].as_str()), (Some(1), Some("ok")), "{run}");
            assert!(run["objective"].as_f64().is_some_and(|x| x > 0.0), "{run}");
        }
    }
    // `db best` answers with a re-measured record and says so, unless the
    // unscheduled nest (the job's baseline, measured once) beat them all,
    // as it may on a noisy machine with 8 random trials of a tiny matmul.
    let best = scaletune(&["db", "best", WORKLOAD, "--target", "host", "--db", db.to_str().expect("utf-8")]);
    let best_text = stdout(&best);
    let first = best_text.lines().next().unwrap_or_default().to_string();
    let baseline_won = best_text.lines().nth(1) == Some("# the unscheduled loop nest: no measured schedule beat it");
    assert!(first.contains("(median of 3 runs)") || baseline_won, "{}", text(&best));
    // `db top` lists the re-measured records as such, and `show` lists a re-measured record's runs.
    let top = scaletune(&["db", "top", WORKLOAD, "--target", "host", "--db", db.to_str().expect("utf-8")]);
    let top_text = stdout(&top);
    let confirmed: Vec<&str> = top_text.lines().filter(|l| l.contains("(median of 3 runs)")).collect();
    assert!(confirmed.len() >= 3, "{}", text(&top));
    if baseline_won {
        assert!(top_text.lines().next().is_some_and(|l| l.ends_with("(unscheduled nest)")), "{top_text}");
    } else {
        assert!(top_text.lines().next() == confirmed.first().copied(), "{top_text}");
    }
    let record = confirmed[0].split_whitespace().nth(1).expect("record id").to_string();
    let show = scaletune(&["show", &record, "--db", db.to_str().expect("utf-8")]);
    let shown = stdout(&show);
    let runs: Vec<&str> = shown.lines().filter(|l| l.starts_with("re-measured: status ok; objective ")).collect();
    assert_eq!(runs.len(), 2, "{shown}");
    assert!(runs.iter().all(|l| l.contains("; job 1; ")), "{shown}");
    // Resuming the finished job measures nothing, not even its best again.
    let again = resume(&db, "1", &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(!stdout(&again).contains("re-measured"), "{}", text(&again));
    let o = scaletune(&["db", "export", "--db", db.to_str().expect("utf-8")]);
    let after: Vec<usize> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|l| l["remeasured"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(after, counts);
    // Without re-measuring, nothing is.
    let other = dir.path().join("plain.db");
    let out = tune(&other, &["--trials", "8", "--strategy", "random", "--confirm", "0", "--recheck-best", "0"]);
    assert!(out.status.success() && !stdout(&out).contains("re-measured"), "{}", text(&out));
    let o = scaletune(&["db", "export", "--db", other.to_str().expect("utf-8")]);
    assert!(stdout(&o).lines().all(|l| l.contains("\"remeasured\":[]")), "{}", stdout(&o));
}

#[test]
fn two_jobs_tuning_into_one_file_at_once_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shared.db");
    let spawn = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_scaletune"))
            .args(["tune", WORKLOAD, "--target", "host", "--db", db.to_str().expect("utf-8"), "--trials", "12"])
            .args(["--repeat", "2", "--min-repeat-ms", "1", "--batch", "4", "--strategy", "random", "--seed", seed])
            .current_dir(root())
            .output()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| spawn("1"));
        let b = s.spawn(|| spawn("2"));
        (a.join().expect("joins").expect("runs"), b.join().expect("joins").expect("runs"))
    });
    for o in [&a, &b] {
        assert!(o.status.success(), "{}", text(o));
        assert!(!text(o).contains("locked"), "{}", text(o));
    }
    let (n, distinct) = records(&db);
    assert_eq!(n, distinct);
    // Each job recorded 12 trials; a candidate both drew is stored once.
    assert!(n > 12 && n <= 24, "{n} records");
}

#[test]
fn a_file_that_is_not_a_tuning_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("notes.db");
    std::fs::write(&db, "shopping list: eggs, flour, milk, and enough text to fill an SQLite header's hundred bytes, twice over, so it is read whole").expect("writes");
    let o = tune(&db, &["--trials", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("is not a usable SQLite database (no SQLite header); it was left untouched"),
        "{}",
        text(&o)
    );
    assert!(std::fs::read_to_string(&db).expect("reads").starts_with("shopping list"));
    let o = scaletune(&["db", "stats", "--db", dir.path().join("missing.db").to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("missing.db does not exist"), "{}", text(&o));
}

/// Records of code this build no longer makes (here: a database exported
/// and changed as an older scaletune would have left it) are checked when
/// a job starts, measured again first, and keep their earlier measurement
/// in their history, as does a record no runner measured; a job after
/// that finds nothing to measure again.
#[test]
fn records_of_other_code_or_no_measurement_are_measured_again_and_keep_their_earlier_measurement() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, _) = random_job(dir.path());
    let exported = scaletune(&["db", "export", "--db", a.to_str().expect("utf-8")]);
    assert!(exported.status.success(), "{}", text(&exported));
    let mut lines: Vec<serde_json::Value> =
        stdout(&exported).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 8);
    assert!(
        lines
            .iter()
            .all(|l| l["record"]["code"].as_str().is_some_and(|c| c.len() == 64)
                || l["record"]["status"] == "build_error")
    );
    let trace = |l: &serde_json::Value| l["record"]["trace"].as_str().expect("trace").to_string();
    let mut ok: Vec<&mut serde_json::Value> = lines
        .iter_mut()
        .filter(|l| l["record"]["status"] == "ok" && !l["record"]["trace"].as_str().expect("trace").is_empty())
        .collect();
    assert!(ok.len() >= 3, "three scheduled candidates passed");
    ok.sort_by(|x, y| {
        x["record"]["objective"].as_f64().partial_cmp(&y["record"]["objective"].as_f64()).expect("numbers")
    });
    // The best measured other code (and a figure it does not have now); another crashed on old code.
    ok[0]["record"]["code"] = "old-code".into();
    ok[0]["record"]["objective"] = 1e-9.into();
    let best = trace(ok[0]);
    ok[1]["record"]["code"] = "old-code".into();
    ok[1]["record"]["status"] = "wrong_result".into();
    ok[1]["record"]["objective"] = serde_json::Value::Null;
    let crashed = trace(ok[1]);
    // And no runner measured a third (its agent went away, say).
    ok[2]["record"]["status"] = "unmeasured".into();
    ok[2]["record"]["objective"] = serde_json::Value::Null;
    let unmeasured = trace(ok[2]);
    // The baseline was written before records kept their code.
    let baseline = lines.iter_mut().find(|l| l["record"]["trace"] == "").expect("the baseline");
    baseline["record"].as_object_mut().expect("object").remove("code");
    let old_export = dir.path().join("old.jsonl");
    std::fs::write(&old_export, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("writes");
    let b = dir.path().join("b.db");
    let bs = b.to_str().expect("utf-8");
    let import = scaletune(&["db", "import", old_export.to_str().expect("utf-8"), "--db", bs]);
    assert_eq!(stdout(&import), "imported 8 records, 0 already present\n", "{}", text(&import));
    let stats = stdout(&scaletune(&["db", "stats", "--db", bs]));
    let unknown = stats.lines().nth(1).unwrap_or_default();
    assert_eq!(
        unknown,
        "  1 records do not name the code they measured (written before schema version 4): the next job measures \
         the best, failed and baseline ones again",
        "{stats}"
    );

    let job = tune(&b, &["--trials", "4", "--strategy", "random"]);
    let printed = stdout(&job);
    assert!(job.status.success(), "{}", text(&job));
    let note =
        printed.lines().find(|l| l.starts_with("note: 3 of the ")).unwrap_or_else(|| panic!("no note:\n{printed}"));
    assert!(note.ends_with("records checked measured other code than this build makes (or did not record their code): they are measured again first, their earlier measurements kept"), "{note}");
    assert!(
        printed.contains(
            "\nnote: 1 record(s) that no runner measured (status unmeasured) are measured again first (once more at most)\n"
        ),
        "{printed}"
    );
    let after = scaletune(&["db", "export", "--db", bs]);
    let after: Vec<serde_json::Value> =
        stdout(&after).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(after.len(), 8, "four measured again in place");
    let of = |t: &str| after.iter().find(|l| l["record"]["trace"] == t).unwrap_or_else(|| panic!("no record of {t:?}"));
    for (t, old_status) in
        [(best.as_str(), "ok"), (crashed.as_str(), "wrong_result"), ("", "ok"), (unmeasured.as_str(), "unmeasured")]
    {
        let l = of(t);
        assert_eq!(l["record"]["status"], "ok", "{t:?} measured again: {l}");
        assert_eq!(l["record"]["job_id"], 2, "{l}");
        assert!(l["record"]["code"].as_str().is_some_and(|c| c.len() == 64), "{l}");
        let history = l["superseded"].as_array().expect("a history");
        assert_eq!(history.len(), 1, "{l}");
        assert_eq!(history[0]["status"], old_status, "{l}");
        assert_eq!(history[0]["job_id"], 1, "{l}");
    }
    assert_eq!(of(&best)["superseded"][0]["objective"], 1e-9);
    assert_ne!(of(&best)["record"]["objective"], 1e-9);
    assert_eq!(of(&crashed)["superseded"][0]["code"], "old-code");
    assert_eq!(of("")["superseded"][0]["code"], serde_json::Value::Null);
    let check = scaletune(&["db", "check", "--db", bs]);
    assert!(check.status.success() && stdout(&check).contains("verdict: ok"), "{}", text(&check));
    let stats = stdout(&scaletune(&["db", "stats", "--db", bs]));
    assert_eq!(
        stats.lines().nth(1).unwrap_or_default(),
        "  4 superseded measurements kept in their records' histories (of code no longer built, or that no runner made)",
        "{stats}"
    );
    // The old export imported again: its measurements of other code are
    // older than the records', and are in their histories already.
    let again = scaletune(&["db", "import", old_export.to_str().expect("utf-8"), "--db", bs]);
    assert_eq!(
        stdout(&again),
        "imported 0 records, 6 already present, 2 present with a measurement of other code or none (the newer or \
         only measurement kept, the other in the record's history)\n",
        "{}",
        text(&again)
    );
    let histories: Vec<usize> = stdout(&scaletune(&["db", "export", "--db", bs]))
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("a JSON line")["superseded"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .collect();
    assert_eq!(histories.iter().sum::<usize>(), 4, "no history entry twice: {histories:?}");
    // `show` names the code and the measurement it superseded (records
    // keep the ids of the import, in the export's order).
    let id = lines.iter().position(|l| trace(l) == best).expect("best") + 1;
    let show = scaletune(&["show", &id.to_string(), "--db", bs]);
    let shown = stdout(&show);
    assert!(show.status.success(), "{}", text(&show));
    let code = shown.lines().find(|l| l.starts_with("code ")).unwrap_or_else(|| panic!("no code line:\n{shown}"));
    assert!(code.ends_with(": what this build makes from its trace"), "{code}");
    let old = shown.lines().filter(|l| l.starts_with("superseded: ")).collect::<Vec<_>>();
    assert_eq!(old.len(), 1, "{shown}");
    assert!(old[0].starts_with("superseded: code old-code; status ok; objective "), "{}", old[0]);
    assert!(old[0].contains("; job 1; "), "{}", old[0]);

    // Everything checked is current now: the next job measures only new candidates.
    let again = tune(&b, &["--trials", "4", "--strategy", "random"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(!stdout(&again).contains("note: "), "{}", stdout(&again));
    assert_eq!(records(&b), (12, 12));
}
