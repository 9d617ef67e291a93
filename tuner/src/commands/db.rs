//! `scaletune db` (stats, top, best, export, import, check) and `scaletune show RECORD`: reading and moving the tuning database.

use crate::pipeline::load_workload;
use crate::tune::objective::ObjectiveKind;
use crate::tune::store::workload_definition;
use crate::tune::summary::si;
use anyhow::{bail, Context};
use scaletune_codegen::pipeline::{compile, Options};
use scaletune_codegen::target::Target;
use scaletune_database::{hash_text, Database, Record};
use scaletune_space::trace::parse_trace;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `db` subcommands.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum DbCommand {
    /// Counts of jobs and records, and the best objective per workload and target.
    Stats,
    /// The best records of a workload on a target.
    Top {
        /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
        workload: String,
        /// Target name.
        #[arg(long, short)]
        target: String,
        /// How many.
        #[arg(short, default_value_t = 10)]
        k: usize,
    },
    /// The best trace of a workload on a target, as text `--schedule` accepts.
    Best {
        /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
        workload: String,
        /// Target name.
        #[arg(long, short)]
        target: String,
    },
    /// Every record as JSON lines (to FILE, or standard output).
    Export {
        /// Output file.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Records of another database (duplicates skipped): its JSON-lines
    /// export, or the database file itself.
    Import {
        /// JSON-lines file (`db export`), or another scaletune database.
        file: PathBuf,
    },
    /// Integrity, foreign keys, schema version.
    Check,
}

/// The database file of a command.
pub fn db_path(db: Option<&Path>) -> PathBuf {
    db.map_or_else(scaletune_database::default_path, Path::to_path_buf)
}

/// The records of a workload on a target, best first: matched by the
/// workload's definition and the target's name, among the records measured
/// like the latest one (same runner, VL set and objective kind: figures of
/// different kinds do not compare). The unscheduled nest's record (empty
/// trace; each job measures it first) competes too, as in `scaletune
/// build`: where no schedule beat it, it is the best.
fn best_records(db: &Database, workload: &str, target: &str, k: usize) -> anyhow::Result<Vec<Record>> {
    let w = load_workload(workload)?;
    let t = Target::load(target)?;
    let wh = hash_text(&workload_definition(&w));
    let mut recs: Vec<Record> = db
        .workload_records(&wh)?
        .into_iter()
        .filter(|r| r.status == "ok" && r.objective.is_some() && r.target_name == t.name)
        .collect();
    let latest =
        recs.iter().max_by_key(|r| r.id).map(|r| (r.runner.clone(), r.vl_set.clone(), r.objective_kind.clone()));
    recs.retain(|r| Some((&r.runner, &r.vl_set, &r.objective_kind)) == latest.as_ref().map(|(a, b, c)| (a, b, c)));
    recs.sort_by(|a, b| {
        a.best_objective()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.best_objective().unwrap_or(f64::INFINITY))
            .then(a.id.cmp(&b.id))
    });
    recs.truncate(k);
    Ok(recs)
}

/// The shape a workload argument names (`matmul` is `matmul:M=128,N=128,K=128`), for messages.
fn shape_of(workload: &str) -> String {
    load_workload(workload).map_or_else(|_| workload.to_string(), |w| w.reference())
}

/// The record's objective; for a re-measured record the confirmed median,
/// with how many runs it is the median of.
pub(crate) fn objective_text(r: &Record) -> String {
    let Some(x) = r.best_objective() else { return "-".into() };
    let value = stored_objective_text(&r.objective_kind, x);
    match r.confirmed {
        Some(_) => {
            let runs = 1 + r.remeasured.iter().filter(|m| m.objective.is_some()).count();
            format!("{value} (median of {runs} runs)")
        }
        None => value,
    }
}

/// An objective stored under the name `kind` (`time_s`, `est_cycles`,
/// `instructions`) with its unit: times in seconds' units, emulated
/// figures with a k/M/G suffix and marked as emulated.
fn stored_objective_text(kind: &str, x: f64) -> String {
    match kind {
        "time_s" => crate::tune::summary::format_objective(ObjectiveKind::Time, x),
        kind => format!("{} {kind} (emulated)", si(x)),
    }
}

/// The JSON lines `db import FILE` reads: FILE itself, or, when FILE is an
/// SQLite file, what `db export --db FILE` prints (so databases of several
/// machines merge in one step; a damaged, foreign or newer one is refused
/// as every command refuses it). Importing a database into itself is an
/// error.
fn import_source(file: &Path, into: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    if !scaletune_database::has_sqlite_header(&bytes) {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|&b| b != b'{') {
            bail!(
                "{} is neither an export of `scaletune db export` (JSON lines) nor an SQLite database",
                file.display()
            );
        }
        return Ok(bytes);
    }
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if same(file, into) {
        bail!("{} is the database being imported into; name another database or an export", file.display());
    }
    drop(bytes);
    let source = Database::open_existing(file).with_context(|| format!("importing {}", file.display()))?;
    let mut lines = Vec::new();
    source.export_jsonl(&mut lines).with_context(|| format!("reading the records of {}", file.display()))?;
    Ok(lines)
}

/// `db export -o FILE` writes JSON lines over FILE: refused when FILE is an
/// SQLite file (the database being exported, or any other), which the
/// export would destroy.
fn refuse_overwriting_a_database(file: &Path) -> anyhow::Result<()> {
    let mut head = [0u8; 16];
    let is_sqlite = std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| scaletune_database::has_sqlite_header(&head));
    if is_sqlite {
        bail!("{} is an SQLite database, which the export would overwrite: name another file", file.display());
    }
    Ok(())
}

/// Runs a `db` subcommand; returns the text to print and the exit status.
pub fn run(cmd: &DbCommand, db: Option<&Path>) -> anyhow::Result<(String, u8)> {
    let path = db_path(db);
    let mut out = String::new();
    if let DbCommand::Import { file } = cmd {
        let lines = import_source(file, &path)?;
        // Checked before the target opens, so a refused import creates no
        // file (the import parses the lines again: imports are rare and small).
        if let Some(problem) = super::db_records::import_problem(&lines) {
            bail!("importing {}: {problem}", file.display());
        }
        let db = Database::open(&path)?;
        let stats = db.import_jsonl(lines.as_slice()).with_context(|| format!("importing {}", file.display()))?;
        let _ = write!(out, "imported {} records, {} already present", stats.inserted, stats.duplicates);
        if stats.other_code > 0 {
            let _ = write!(
                out,
                ", {} present with a measurement of other code or none (the newer or only measurement kept, the other in \
                 the record's history)",
                stats.other_code
            );
        }
        out.push('\n');
        return Ok((out, 0));
    }
    let db = Database::open_existing(&path)?;
    match cmd {
        DbCommand::Stats => {
            let s = db.stats()?;
            let jobs: Vec<String> = s.jobs.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let _ = writeln!(
                out,
                "{}: {} records; jobs: {}",
                path.display(),
                s.records,
                if jobs.is_empty() { "none".into() } else { jobs.join(", ") }
            );
            if s.without_code > 0 {
                let _ = writeln!(
                    out,
                    "  {} records do not name the code they measured (written before schema version 4): \
                     the next job measures the best, failed and baseline ones again",
                    s.without_code
                );
            }
            if s.superseded > 0 {
                let _ = writeln!(
                    out,
                    "  {} superseded measurements kept in their records' histories (of code no longer built, or that no runner made)",
                    s.superseded
                );
            }
            for t in &s.tasks {
                let def = db
                    .workload_records(&t.workload_hash)?
                    .first()
                    .and_then(|r| db.workload_definition(r.workload_id).ok().flatten())
                    .unwrap_or_default();
                let name = serde_json::from_str::<scaletune_space::workload::Workload>(&def)
                    .map_or_else(|_| t.workload_hash[..12].to_string(), |w| w.reference());
                let statuses: Vec<String> = t.statuses.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let best: Vec<String> = t.best.iter().map(|(k, v)| stored_objective_text(k, *v)).collect();
                let _ = writeln!(
                    out,
                    "  {name} on {}: {}; best {}",
                    t.target,
                    statuses.join(", "),
                    if best.is_empty() { "-".into() } else { best.join(", ") }
                );
            }
        }
        DbCommand::Top { workload, target, k } => {
            if *k == 0 {
                bail!("-k must be at least 1");
            }
            for r in best_records(&db, workload, target, *k)? {
                let _ = writeln!(
                    out,
                    "record {:>6}  {:>32}  runner {} VLs [{}]  job {}{}",
                    r.id,
                    objective_text(&r),
                    r.runner,
                    r.vl_set,
                    r.job_id.map_or("-".into(), |j| j.to_string()),
                    if r.trace.trim().is_empty() { "  (unscheduled nest)" } else { "" }
                );
            }
            if out.is_empty() {
                bail!("no measured schedule of {} on {target} in {}", shape_of(workload), path.display());
            }
        }
        DbCommand::Best { workload, target } => {
            let Some(r) = best_records(&db, workload, target, 1)?.into_iter().next() else {
                bail!("no measured schedule of {} on {target} in {}", shape_of(workload), path.display());
            };
            let _ =
                writeln!(out, "# record {}: {} ({} runner, VLs [{}])", r.id, objective_text(&r), r.runner, r.vl_set);
            if r.trace.trim().is_empty() {
                // An empty schedule: `--schedule` takes it as the unscheduled nest.
                out.push_str("# the unscheduled loop nest: no measured schedule beat it\n");
            } else {
                out.push_str(&r.trace);
                if !r.trace.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        DbCommand::Export { out: file } => {
            let mut bytes = Vec::new();
            let n = db.export_jsonl(&mut bytes)?;
            match file {
                Some(f) => {
                    refuse_overwriting_a_database(f)?;
                    std::fs::write(f, &bytes).with_context(|| format!("cannot write {}", f.display()))?;
                    let _ = writeln!(out, "exported {n} records to {}", f.display());
                }
                None => out.push_str(&String::from_utf8_lossy(&bytes)),
            }
        }
        DbCommand::Check => {
            let report = db.check()?;
            let (records, records_ok) = super::db_records::check_line(&db);
            let ok = report.ok() && records_ok;
            // The database's own findings, then the records', then one verdict.
            let text = report.to_string();
            let findings = text.lines().filter(|l| !l.starts_with("verdict: ")).collect::<Vec<_>>().join("\n");
            let verdict = if ok { "ok" } else { "PROBLEMS" };
            let _ = writeln!(out, "{}: {findings}\n{records}\nverdict: {verdict}", path.display());
            return Ok((out, u8::from(!ok)));
        }
        DbCommand::Import { .. } => unreachable!("handled above"),
    }
    Ok((out, 0))
}

/// The messages of a record's runs (its `metrics`) that its own message
/// does not already give, one line per vector length: why a run failed, or
/// how a run that passed was judged (by the interpreter, past a QEMU
/// defect). Empty when there are none or the metrics do not parse.
fn run_notes(metrics: &str, message: &str) -> String {
    let runs: Vec<scaletune_measure::VlMeasurement> = serde_json::from_str(metrics).unwrap_or_default();
    let mut out = String::new();
    for run in runs.iter().filter(|run| !run.message.is_empty() && !message.contains(&run.message)) {
        let _ = writeln!(out, "VL {}: {}: {}", run.vl_bits, run.status.name(), run.message);
    }
    out
}

/// `show RECORD`: a record's figures, trace, loop nest, vector program and assembly.
pub fn show(record: i64, db: Option<&Path>) -> anyhow::Result<String> {
    let path = db_path(db);
    let db = Database::open_existing(&path)?;
    let Some(r) = db.record(record)? else { bail!("{} has no record {record}", path.display()) };
    let def = db.workload_definition(r.workload_id)?.unwrap_or_default();
    let w: scaletune_space::workload::Workload = serde_json::from_str(&def)
        .with_context(|| format!("record {record}: its workload definition is not one this scaletune reads"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "record {}: {} on {}, runner {}, VLs [{}], job {}, trial {}",
        r.id,
        w.reference(),
        r.target_name,
        r.runner,
        r.vl_set,
        r.job_id.map_or("-".into(), |j| j.to_string()),
        r.trial_idx
    );
    let _ = writeln!(
        out,
        "status {}{}; objective {}; build {:.2} s, run {:.2} s; {}",
        r.status,
        if r.message.is_empty() { String::new() } else { format!(" ({})", r.message) },
        objective_text(&r),
        r.build_s,
        r.run_s,
        r.created_at
    );
    out.push_str(&run_notes(&r.metrics, &r.message));
    for m in &r.remeasured {
        let value = run_objective_text(m.objective, &r.objective_kind);
        let job = m.job_id.map_or("-".into(), |j| j.to_string());
        let _ = writeln!(out, "re-measured: status {}; objective {value}; job {job}; {}", m.status, m.at);
    }
    let target =
        Target::load(&r.target_name).with_context(|| format!("record {record}: target `{}`", r.target_name))?;
    let trace = parse_trace(&r.trace).map_err(|e| anyhow::anyhow!("record {record}: {e}"))?;
    out.push_str(&code_line(&r, &w, &target, &trace));
    for h in &r.superseded {
        let value = run_objective_text(h.objective, &h.objective_kind);
        let job = h.job_id.map_or("-".into(), |j| j.to_string());
        let _ = writeln!(
            out,
            "superseded: code {}; status {}; objective {value}; job {job}; {}",
            short_code(h.code.as_deref()),
            h.status,
            h.created_at
        );
    }
    let _ =
        writeln!(out, "\n## trace\n{}", if r.trace.is_empty() { "(unscheduled)\n".into() } else { r.trace.clone() });
    let mut opts = Options::default();
    opts.emit.asm = true;
    let c =
        compile(&w, Some(&trace), &target, &opts).with_context(|| format!("record {record}: compiling its trace"))?;
    let _ = writeln!(out, "## loop nest\n{}", c.nest);
    let _ = writeln!(out, "## vector program\n{}", c.program);
    let _ = writeln!(out, "## assembly ({})\n{}", c.target.name, c.asm.unwrap_or_default());
    Ok(out)
}

/// One run's objective of kind `kind` as `show` prints it (`-`: none).
fn run_objective_text(objective: Option<f64>, kind: &str) -> String {
    match (objective, kind) {
        (Some(x), "time_s") => crate::tune::summary::format_objective(ObjectiveKind::Time, x),
        (Some(x), kind) => format!("{} {kind}", si(x)),
        (None, _) => "-".into(),
    }
}

/// The first 12 hex digits of a code identity, or `not recorded`.
fn short_code(code: Option<&str>) -> String {
    code.map_or_else(|| "not recorded".into(), |c| c.get(..12).unwrap_or(c).to_string())
}

/// The `code` line of `show`: the code the record measured, and whether
/// this build makes the same from its trace (the code built at the
/// record's vector lengths, as a job compares it).
fn code_line(
    r: &scaletune_database::Record,
    w: &scaletune_space::workload::Workload,
    target: &Target,
    trace: &scaletune_space::trace::Trace,
) -> String {
    let vls: Vec<u32> = r.vl_set.split(',').filter_map(|v| v.parse().ok()).collect();
    let c = scaletune_measure::Candidate::new(
        0,
        std::sync::Arc::new(w.clone()),
        std::sync::Arc::new(target.clone()),
        trace.clone(),
    )
    .with_vl_bits(vls);
    let now = scaletune_measure::LlvmBuilder::new().code(&c);
    let verdict = match (&r.code, &now) {
        (Some(code), Ok(current)) if code == current => "what this build makes from its trace".to_string(),
        (Some(_), Ok(current)) => format!("this build makes other code from its trace ({})", short_code(Some(current))),
        (_, Err(_)) => "this build cannot build its trace".to_string(),
        (None, Ok(current)) => format!("this build makes {}", short_code(Some(current))),
    };
    format!("code {}: {verdict}\n", short_code(r.code.as_deref()))
}

#[cfg(test)]
mod tests {
    /// Each run's message that the record's own does not give gets a line.
    #[test]
    fn show_gives_the_runs_messages_the_record_does_not() {
        use scaletune_measure::{Status, VlMeasurement};
        let judged = "judged by the interpreter: this QEMU computes the 32-bit `smopa` wrong";
        let runs = vec![
            VlMeasurement::bare(128, Status::Ok, "qemu", judged),
            VlMeasurement::bare(256, Status::Ok, "qemu", ""),
            VlMeasurement::bare(512, Status::Timeout, "qemu", "timed out after 60.0 s"),
        ];
        let metrics = serde_json::to_string(&runs).expect("serializes");
        expect_test::expect![[r#"
            VL 128: ok: judged by the interpreter: this QEMU computes the 32-bit `smopa` wrong
        "#]]
        .assert_eq(&super::run_notes(&metrics, "VL 512: timed out after 60.0 s"));
        assert_eq!(super::run_notes("not json", ""), "");
    }

    use super::*;

    /// `db stats` and `db top` print stored objectives in the summary's
    /// units, not as raw numbers.
    #[test]
    fn stored_objectives_print_with_their_unit() {
        let shown: Vec<String> =
            [("time_s", 3.2651e-5), ("time_s", 2.5e-3), ("est_cycles", 155_400.0), ("instructions", 2.5e6)]
                .iter()
                .map(|(k, x)| stored_objective_text(k, *x))
                .collect();
        expect_test::expect![[r#"
            32.651 us
            2.500 ms
            155.4 k est_cycles (emulated)
            2.50 M instructions (emulated)"#]]
        .assert_eq(&shown.join("\n"));
    }
}
