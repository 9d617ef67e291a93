//! Reports of a synthetic tuning database: the data series of every chart against values worked out by hand, the page's structure as a snapshot, escaping, labels of emulated figures, determinism and refusals.

use expect_test::expect_file;
use scaletune_database::{hash_text, Database, NewBaseline, NewJob, NewRecord};
use scaletune_reports::data::{self, Series};
use scaletune_reports::{Filter, Report, ReportError};
use std::path::Path;

const MATMUL: &str = r#"{"name":"matmul","params":[["M",8],["N",8]],"tensors":[]}"#;
/// A trace whose text needs escaping in HTML.
const ODD_TRACE: &str = "annotate(l0, \"note\", \"a<b & c>d\")";

fn per_vl(kind: &str, figures: &[(u32, f64)]) -> String {
    let runs: Vec<serde_json::Value> = figures
        .iter()
        .map(|(vl, x)| match kind {
            "time_s" => serde_json::json!({"vl_bits": vl, "status": "ok", "timing": {"median_s": x}, "emulated": null}),
            _ => serde_json::json!({"vl_bits": vl, "status": "ok", "timing": null, "emulated": {"est_cycles": x, "instructions": 2.0 * x}}),
        })
        .collect();
    serde_json::to_string(&runs).expect("json")
}

struct Rec<'a> {
    trial: i64,
    trace: &'a str,
    status: &'a str,
    objective: Option<f64>,
    kind: Option<&'a str>,
    predicted: Option<f64>,
    figures: &'a [(u32, f64)],
}

/// Two tasks: matmul natively at VL 128,256 (time) under a random job, and
/// under QEMU (estimated cycles) under an evolutionary job.
fn synthetic(path: &Path) -> Database {
    let db = Database::open(path).expect("opens");
    let w = db.upsert_workload(MATMUL).expect("workload");
    db.set_workload_flops(w.id, 1e6).expect("flops");
    let t = db.upsert_target("neoverse-v1", "name = neoverse-v1\n").expect("target");
    let random = db
        .create_job(&NewJob {
            arguments: r#"{"strategy":"random","trials":5}"#.into(),
            seed: 1,
            strategy: "random".into(),
        })
        .expect("job");
    let evo = db
        .create_job(&NewJob {
            arguments: r#"{"strategy":"evolutionary","trials":3}"#.into(),
            seed: 2,
            strategy: "evolutionary".into(),
        })
        .expect("job");
    let insert = |job: i64, runner: &str, kind: &str, r: Rec<'_>| {
        db.insert_record(&NewRecord {
            job_id: Some(job),
            workload_id: w.id,
            target_id: t.id,
            trial_idx: r.trial,
            space_trace: String::new(),
            trace: r.trace.into(),
            trace_hash: hash_text(r.trace),
            runner: runner.into(),
            vl_set: "128,256".into(),
            status: r.status.into(),
            message: if r.status == "ok" { String::new() } else { "SIGSEGV at <kernel>\nmore".into() },
            metrics: per_vl(kind, r.figures),
            objective: r.objective,
            objective_kind: kind.into(),
            build_s: 0.1,
            run_s: 0.1,
            vector_kind: r.kind.map(str::to_string),
            predicted: r.predicted,
            code: None,
        })
        .expect("inserts");
    };
    let native = [
        Rec {
            trial: 0,
            trace: "",
            status: "ok",
            objective: Some(4e-3),
            kind: Some("scalar"),
            predicted: None,
            figures: &[(128, 4e-3), (256, 4e-3)],
        },
        Rec {
            trial: 1,
            trace: "vla",
            status: "ok",
            objective: Some(2e-3),
            kind: Some("SVE-VLA"),
            predicted: None,
            figures: &[(128, 3e-3), (256, 1.5e-3)],
        },
        Rec {
            trial: 2,
            trace: "bad",
            status: "run_error",
            objective: None,
            kind: Some("SVE-VLS"),
            predicted: None,
            figures: &[],
        },
        Rec {
            trial: 3,
            trace: ODD_TRACE,
            status: "ok",
            objective: Some(1e-3),
            kind: Some("SVE-VLS"),
            predicted: Some(1.5e-3),
            figures: &[(128, 1.2e-3), (256, 0.9e-3)],
        },
        Rec {
            trial: 4,
            trace: "vla2",
            status: "ok",
            objective: Some(3e-3),
            kind: Some("SVE-VLA"),
            predicted: Some(2.5e-3),
            figures: &[(128, 2.5e-3), (256, 2.8e-3)],
        },
    ];
    for r in native {
        insert(random, "native", "time_s", r);
    }
    let emulated = [
        Rec {
            trial: 0,
            trace: "vla",
            status: "ok",
            objective: Some(900.0),
            kind: Some("SVE-VLA"),
            predicted: None,
            figures: &[(128, 1200.0), (256, 675.0)],
        },
        Rec { trial: 1, trace: "slow", status: "timeout", objective: None, kind: None, predicted: None, figures: &[] },
        Rec {
            trial: 2,
            trace: "vls",
            status: "ok",
            objective: Some(800.0),
            kind: Some("SVE-VLS"),
            predicted: None,
            figures: &[(128, 1000.0), (256, 640.0)],
        },
    ];
    for r in emulated {
        insert(evo, "qemu", "est_cycles", r);
    }
    let base = NewBaseline {
        workload_id: w.id,
        target_id: t.id,
        name: "openblas".into(),
        runner: "native".into(),
        vl_set: "128,256".into(),
        objective: Some(5e-4),
        objective_kind: "time_s".into(),
        metrics: "{}".into(),
    };
    db.insert_baseline(&base).expect("baseline");
    db
}

fn pts(s: &Series) -> Vec<(f64, f64)> {
    s.points.clone()
}

#[test]
fn chart_series_are_computed_from_the_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = synthetic(&dir.path().join("t.db"));
    let report = Report::from_db(&db, &Filter::default()).expect("report");
    let labels: Vec<String> = report.groups.iter().map(|g| g.label()).collect();
    assert_eq!(
        labels,
        ["matmul:M=8,N=8 on neoverse-v1 (native VL 128,256)", "matmul:M=8,N=8 on neoverse-v1 (qemu VL 128,256)"]
    );
    let (native, qemu) = (&report.groups[0], &report.groups[1]);
    assert!(!native.emulated() && qemu.emulated());

    let curves = data::tuning_curves(native, &report.strategies);
    assert_eq!(curves.len(), 1);
    assert_eq!(curves[0].name, "random (job 1)");
    assert_eq!(pts(&curves[0]), [(0.0, 4e-3), (1.0, 2e-3), (2.0, 2e-3), (3.0, 1e-3), (4.0, 1e-3)]);
    let curves = data::tuning_curves(qemu, &report.strategies);
    assert_eq!(curves[0].name, "evolutionary (job 2)");
    assert_eq!(pts(&curves[0]), [(0.0, 900.0), (1.0, 900.0), (2.0, 800.0)]);

    let (dots, crosses) = data::candidates(native);
    let by_kind: Vec<(String, Vec<(f64, f64)>)> = dots.iter().map(|s| (s.name.clone(), pts(s))).collect();
    assert_eq!(
        by_kind,
        [
            ("SVE-VLA".to_string(), vec![(1.0, 2e-3), (4.0, 3e-3)]),
            ("SVE-VLS".to_string(), vec![(3.0, 1e-3)]),
            ("scalar".to_string(), vec![(0.0, 4e-3)])
        ]
    );
    assert_eq!(crosses.iter().map(|s| (s.name.as_str(), s.points.len())).collect::<Vec<_>>(), [("run_error", 1)]);
    let (dots, crosses) = data::candidates(qemu);
    assert_eq!(dots.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["SVE-VLA", "SVE-VLS"]);
    assert_eq!(crosses[0].name, "timeout");

    // Per VL: the best of each side; the scalar default schedule is neither.
    let scaling = data::vl_scaling(&[native]);
    assert_eq!(scaling[0].name, "best length-agnostic");
    assert_eq!(pts(&scaling[0]), [(128.0, 2.5e-3), (256.0, 1.5e-3)]);
    assert_eq!(scaling[1].name, "best fixed-length");
    assert_eq!(pts(&scaling[1]), [(128.0, 1.2e-3), (256.0, 0.9e-3)]);

    let leader = data::leader(native).expect("a best record");
    assert_eq!(leader.record.trace, ODD_TRACE);
    let gflops = leader.gflops.expect("time objective with known flops");
    assert!((gflops - 1.0).abs() < 1e-12, "{gflops}");
    assert_eq!(leader.vs_default, Some(4.0));
    assert_eq!(leader.vs_baselines, [("openblas".to_string(), 0.5)]);
    let leader = data::leader(qemu).expect("a best record");
    assert_eq!((leader.gflops, leader.vs_default), (None, None), "no GFLOPS from cycles, no default measured");

    assert_eq!(
        data::failures(&report.groups).into_iter().collect::<Vec<_>>(),
        [("run_error".to_string(), 1), ("timeout".to_string(), 1)]
    );
    assert_eq!(data::predicted_vs_measured(native), [(1.5e-3, 1e-3), (2.5e-3, 3e-3)]);
    assert!(data::predicted_vs_measured(qemu).is_empty());
}

#[test]
fn filters_select_tasks_and_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = synthetic(&dir.path().join("t.db"));
    let only =
        |f: Filter| Report::from_db(&db, &f).map(|r| r.groups.iter().map(|g| g.runner.clone()).collect::<Vec<_>>());
    assert_eq!(only(Filter { job: Some(2), ..Filter::default() }).expect("job 2"), ["qemu"]);
    assert_eq!(only(Filter { workload: Some("matmul".into()), ..Filter::default() }).expect("by name").len(), 2);
    assert_eq!(only(Filter { workload: Some("matmul:M=8,N=8".into()), ..Filter::default() }).expect("by ref").len(), 2);
    // With a job filter the default schedule measured by any job still counts.
    let r = Report::from_db(&db, &Filter { job: Some(1), ..Filter::default() }).expect("job 1");
    assert_eq!(r.groups[0].default_objective, Some(4e-3));
    match only(Filter { target: Some("a64fx".into()), ..Filter::default() }) {
        Err(ReportError::Empty(m)) => assert!(m.contains("match --target a64fx"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(only(Filter { job: Some(9), ..Filter::default() }), Err(ReportError::NoJob(9))));
    let empty = Database::open(&dir.path().join("empty.db")).expect("opens");
    match Report::from_db(&empty, &Filter::default()) {
        Err(e) => assert_eq!(
            e.to_string(),
            format!("nothing to report: {} has no records", dir.path().join("empty.db").display())
        ),
        Ok(_) => panic!("an empty database gave a report"),
    }
}

/// The page with every inline SVG replaced by a placeholder.
fn structure(page: &str) -> String {
    let mut out = String::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("</svg>").map_or(rest.len(), |e| start + e + "</svg>".len());
        out.push_str("<svg>…</svg>");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn the_page_escapes_labels_emulation_and_is_the_same_every_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = synthetic(&dir.path().join("t.db"));
    let report = Report::from_db(&db, &Filter::default()).expect("report");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let files = report.write(&a).expect("writes");
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().expect("name").to_string_lossy().into_owned()).collect();
    assert_eq!(
        names,
        [
            "index.html",
            "curve-1.png",
            "curve-2.png",
            "candidates-1.png",
            "candidates-2.png",
            "scaling-1.png",
            "scaling-2.png",
            "failures-by-status.png",
            "predicted-1.png"
        ]
    );
    Report::from_db(&db, &Filter::default()).expect("report").write(&b).expect("writes");
    for f in &names {
        let (x, y) = (std::fs::read(a.join(f)).expect("reads"), std::fs::read(b.join(f)).expect("reads"));
        assert!(x == y, "{f} differs between two reports of the same database");
        if f.ends_with(".png") {
            assert_eq!(&x[..8], b"\x89PNG\r\n\x1a\n", "{f}");
        }
    }
    let page = std::fs::read_to_string(a.join("index.html")).expect("reads");
    assert!(page.contains("a&lt;b &amp; c&gt;d"), "the trace is escaped");
    assert!(!page.contains("a<b"), "raw trace text in the page");
    for external in ["<script", "<link", "src=", "url("] {
        assert!(!page.contains(external), "the page loads something: {external}");
    }
    assert_eq!(page.matches("<svg").count(), 8);
    expect_file!["snapshots/report.html"].assert_eq(&structure(&page));
}
