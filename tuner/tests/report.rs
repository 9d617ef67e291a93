//! `scaletune report` and `tune --report` end to end: a real small job on this machine, the report's files and content, the page rendered by headless Chromium (not blank, no console errors), and refusals.

mod common;

use common::{scaletune, stdout, text};
use std::path::Path;
use std::process::Command;

const WORKLOAD: &str = "matmul:M=48,N=40,K=24";

/// Pixels of a PNG that are not (near) white, and the pixel count.
fn non_white(png_file: &Path) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_file).expect("opens")));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let ink = pixels.chunks(channels).filter(|p| p.iter().take(3).any(|&c| c < 200)).count();
    (ink, pixels.len() / channels)
}

#[test]
fn a_real_job_reports_into_a_page_that_chromium_renders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("tune.db");
    let live = dir.path().join("live");
    let dbs = db.to_str().expect("utf-8");
    let o = scaletune(&[
        "tune",
        WORKLOAD,
        "--target",
        "host",
        "--db",
        dbs,
        "--repeat",
        "2",
        "--min-repeat-ms",
        "1",
        "--batch",
        "4",
        "--trials",
        "12",
        "--strategy",
        "random",
        "--report",
        live.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains(&format!("report: {}", live.join("index.html").display())), "{}", text(&o));
    assert!(live.join("index.html").is_file() && live.join("curve-1.png").is_file());

    let out = dir.path().join("report");
    let o = scaletune(&["report", "--db", dbs, "--out", out.to_str().expect("utf-8"), "--workload", "matmul"]);
    assert!(o.status.success(), "{}", text(&o));
    // Curves, candidates and scaling always; failures and the cost model when the job had them.
    let pngs = std::fs::read_dir(&out)
        .expect("lists")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "png")))
        .count();
    assert!(pngs >= 3, "{pngs} charts");
    assert_eq!(stdout(&o), format!("wrote {} ({pngs} charts as PNG beside it)\n", out.join("index.html").display()));
    for png in ["curve-1.png", "candidates-1.png", "scaling-1.png"] {
        let (ink, all) = non_white(&out.join(png));
        assert!(ink > all / 200, "{png} is blank: {ink} of {all} pixels inked");
    }
    let page = std::fs::read_to_string(out.join("index.html")).expect("reads");
    for part in ["<h2>Leaderboard</h2>", WORKLOAD, "random (job 1)", "<pre class=\"trace\">", "GFLOPS"] {
        assert!(page.contains(part), "{part} missing from the page");
    }
    // The same database and filter give the same page, byte for byte.
    let again_dir = dir.path().join("again");
    let again =
        scaletune(&["report", "--db", dbs, "--out", again_dir.to_str().expect("utf-8"), "--workload", "matmul"]);
    assert!(again.status.success(), "{}", text(&again));
    let same = std::fs::read(again_dir.join("index.html")).expect("reads") == page.as_bytes();
    assert!(same, "the same database gave another page");

    // Headless Chromium: a screenshot that is not blank, and no console errors.
    let shot = dir.path().join("shot.png");
    let url = format!("file://{}", out.join("index.html").display());
    let chrome = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1100,1600",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs (Debian package chromium, installed by make deps)");
    let log = text(&chrome);
    assert!(chrome.status.success(), "{log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "the page logged: {console:?}");
    let (ink, all) = non_white(&shot);
    assert!(ink > all / 50, "the screenshot is blank: {ink} of {all} pixels inked");
}

#[test]
fn bad_report_requests_are_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.db");
    let out = dir.path().join("out");
    let outs = out.to_str().expect("utf-8");
    let o = scaletune(&["report", "--db", missing.to_str().expect("utf-8"), "--out", outs]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o), format!("error: {} does not exist\n", missing.display()));
    let o = scaletune(&["report", "--workload", "matmul:Q=1", "--db", "nowhere.db", "--out", outs]);
    assert_eq!(
        (o.status.code(), text(&o)),
        (
            Some(2),
            "error: bad workload reference `matmul:Q=1`: workload `matmul` has no parameter `Q` (parameters: M, N, K)\n"
                .to_string()
        )
    );
    let empty = dir.path().join("empty.db");
    scaletune_database::Database::open(&empty).expect("creates");
    let o = scaletune(&["report", "--db", empty.to_str().expect("utf-8"), "--out", outs]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o), format!("error: nothing to report: {} has no records\n", empty.display()));
    assert!(!out.exists(), "nothing written for nothing to report");
    let o = scaletune(&["report", "--db", empty.to_str().expect("utf-8"), "--out", outs, "--job", "3"]);
    assert_eq!(text(&o), "error: no job 3 in the database\n");
    // An output directory that cannot be made: the message names it.
    let db = dir.path().join("one.db");
    let d = scaletune_database::Database::open(&db).expect("creates");
    let w = d.upsert_workload("{\"name\":\"scale_add\",\"params\":[]}").expect("workload");
    let t = d.upsert_target("host", "name = host\n").expect("target");
    d.insert_record(&scaletune_database::NewRecord {
        job_id: None,
        workload_id: w.id,
        target_id: t.id,
        trial_idx: 0,
        space_trace: String::new(),
        trace: String::new(),
        trace_hash: scaletune_database::hash_text(""),
        runner: "native".into(),
        vl_set: "256".into(),
        status: "ok".into(),
        message: String::new(),
        metrics: "[]".into(),
        objective: Some(1e-3),
        objective_kind: "time_s".into(),
        build_s: 0.0,
        run_s: 0.0,
        vector_kind: Some("scalar".into()),
        predicted: None,
        code: None,
    })
    .expect("inserts");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").expect("writes");
    let o = scaletune(&["report", "--db", db.to_str().expect("utf-8"), "--out", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    let msg = text(&o);
    assert!(msg.starts_with(&format!("error: report into {0}: cannot write {0}: ", file.display())), "{msg}");
    assert_eq!(std::fs::read_to_string(&file).expect("reads"), "not a directory");
}
