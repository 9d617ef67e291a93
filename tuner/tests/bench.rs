//! `scaletune bench --quick` end to end: the tables' structure (values masked), every kernel passing its check, the JSON figures, and a second run that reuses the bench database.

mod common;

use common::{scaletune, stdout, text};
use expect_test::expect;

/// Masks what depends on the machine and the run: the CPU's name and ISA,
/// the OpenBLAS kernels (the line must name those `bench.json` records),
/// the vector code clang chose, every number; runs of spaces become one.
fn mask(out: &str, json: &serde_json::Value, dir: &str) -> String {
    let mut s = out.replace(dir, "<out>");
    if let Some(used) = json["openblas"]["used"].as_str() {
        let line = s.lines().find(|l| l.starts_with("OpenBLAS: ")).expect("an OpenBLAS line").to_string();
        assert!(line.starts_with(&format!("OpenBLAS: {used} kernels (")), "{line}");
        s = s.replace(&line, "OpenBLAS: <kernels>");
    }
    let mut masked = String::new();
    for line in s.lines() {
        // The CPU's model and vector ISA name it in the header line only: a
        // code column reads the same as the ISA on some machines ("AVX-512").
        let mut line = line.to_string();
        if line.starts_with("host: ") {
            for key in ["model", "vector_isa"] {
                if let Some(v) = json["cpu"][key].as_str() {
                    line = line.replace(v, &format!("<{key}>"));
                }
            }
        }
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| match w {
                "SVE" | "NEON" | "AVX-512" | "AVX2" | "SSE" | "scalar" => "<code>".to_string(),
                w => mask_numbers(w),
            })
            .collect();
        masked.push_str(&words.join(" "));
        masked.push('\n');
    }
    masked
}

/// Every maximal run of digits and dots holding a digit becomes `#`.
fn mask_numbers(word: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in word.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() || c == '.' {
            run.push(c);
            continue;
        }
        if run.chars().any(|r| r.is_ascii_digit()) {
            out.push('#');
        } else {
            out.push_str(&run);
        }
        run.clear();
        if c != ' ' {
            out.push(c);
        }
    }
    out
}

#[test]
fn masking_keeps_words_and_hides_numbers() {
    assert_eq!(mask_numbers("matmul:M=64,N=48"), "matmul:M=#,N=#");
    assert_eq!(mask_numbers("0.61x"), "#x");
    assert_eq!(mask_numbers("..."), "...");
    assert_eq!(mask_numbers("12.5%"), "#%");
}

#[test]
fn quick_bench_prints_every_kernel_checked_and_reuses_its_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().to_str().expect("utf-8").to_string();
    let o = scaletune(&["bench", "--quick", "--out", &out_dir]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("bench.json")).expect("bench.json written"))
            .expect("bench.json is JSON");
    expect![[r#"
        host: <model> (<vector_isa>), one thread; FMA peak # GFLOPS (# f# lanes x # chains)
        fed from L#: #% of the FMA rate of the same probe run (median of #; best # GFLOPS), a #x#-register broadcast-FMA tile over an L#-resident panel: the most a kernel that loads its operands can reach
        # probes, slowest # GFLOPS; `of peak` divides each timing round by the probe run right after it
        OpenBLAS: <kernels>
        shape kernel code check time (us) GFLOPS vs OpenBLAS vs clang of peak
        matmul:M=#,N=#,K=# tuned - ok # # #x #x #%
        default - ok # # #x #x #%
        clang-naive <code> ok # # #x #x #%
        openblas library ok # # #x #x #%
        conv#d_nhwc:H=#,WI=#,C=#,F=# tuned - ok # # - #x #%
        default - ok # # - #x #%
        clang-naive <code> ok # # - #x #%
        sum_cos:N=# tuned - ok # # - #x #%
        default - ok # # - #x #%
        clang-naive <code> ok # # - #x #%

        neoverse-v# at VL #/#/# under QEMU: estimated cycles and instructions per call; clang/this above # means fewer than clang
        shape kernel code VL check est. cycles instructions clang/this cy clang/this in
        matmul:M=#,N=#,K=# tuned - # ok # # #x #x
        tuned - # ok # # #x #x
        tuned - # ok # # #x #x
        default - # ok # # #x #x
        default - # ok # # #x #x
        default - # ok # # #x #x
        clang-naive <code> # ok # # #x #x
        clang-naive <code> # ok # # #x #x
        clang-naive <code> # ok # # #x #x
        wrote <out>/bench.json
    "#]]
    .assert_eq(&mask(&stdout(&o), &json, &out_dir));

    // OpenBLAS runs kernels of the CPU's vector ISA, not a pre-AVX fallback.
    let isa = json["cpu"]["vector_isa"].as_str().expect("vector ISA");
    let used = json["openblas"]["used"].as_str().expect("the OpenBLAS kernels are recorded");
    if isa == "AVX-512" || isa == "AVX2+FMA" {
        assert!(!scaletune::bench::openblas::is_pre_avx(used), "{isa} CPU, OpenBLAS runs {used}");
    }

    // Every kernel passed the reference check, and the figures are figures.
    let host = json["host"].as_array().expect("host rows");
    let emulated = json["emulated"].as_array().expect("emulated rows");
    assert_eq!((host.len(), emulated.len()), (10, 9));
    for r in host.iter().chain(emulated) {
        assert_eq!(r["status"], "ok", "{r}");
    }
    for r in host {
        assert!(r["time_s"].as_f64().is_some_and(|t| t > 0.0), "{r}");
        assert!(r["gflops"].as_f64().is_some_and(|g| g > 0.0), "{r}");
    }
    for r in emulated {
        assert!(r["est_cycles"].as_f64().is_some_and(|c| c > 0.0), "{r}");
        assert!(r["instructions"].as_u64().is_some_and(|i| i > 0), "{r}");
    }
    let clang = |r: &&serde_json::Value| r["kernel"] == "clang-naive";
    assert!(host.iter().filter(clang).all(|r| r["vs_clang"].as_f64() == Some(1.0)));
    assert!(json["peak_gflops"].as_f64().is_some_and(|p| p > 1.0));
    assert!(json["l1_fed_gflops"].as_f64().is_some_and(|p| p > 1.0));
    assert!(json["l1_fed_share"].as_f64().is_some_and(|s| s > 0.0));
    // The probe ran at the start, after the one timing round of each of the three host shapes, and at the end.
    assert_eq!(json["peak_runs"].as_array().map(Vec::len), Some(5));
    for r in host {
        let share = r["gflops"].as_f64().unwrap_or(0.0) / json["peak_gflops"].as_f64().unwrap_or(1.0);
        let paired = r["of_peak"].as_f64().expect("of_peak");
        assert!(paired >= share * 0.999, "paired with the round's own probe, never below the best probe's share: {r}");
    }

    // A second run finds the trial budget in the database and tunes nothing.
    let again = scaletune(&["bench", "--quick", "--out", &out_dir]);
    assert!(again.status.success(), "{}", text(&again));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("  tune "), "the second run tuned again:\n{stderr}");
    assert!(stderr.contains("bench: sum_cos:N=256 on host"), "{stderr}");

    // The bench keeps its baselines in its database: the report's leaderboard
    // gives the tuned kernels' speed-up over OpenBLAS (host matmul) and clang
    // (host and emulated).
    let db = dir.path().join("scaletune.db").display().to_string();
    let rep = dir.path().join("report").display().to_string();
    let o = scaletune(&["report", "--db", &db, "--out", &rep]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(dir.path().join("report/index.html")).expect("index.html");
    assert_eq!(page.matches("x openblas").count(), 1, "one host matmul compared with OpenBLAS");
    assert_eq!(page.matches("x clang-naive").count(), 4, "three host shapes and one emulated compared with clang");
}

/// `bench --search-efficiency` of one seed per strategy into `out`, then `extra`.
fn search_args<'a>(out: &'a str, trials: &'a str, shape: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args =
        vec!["bench", "--search-efficiency", "--trials", trials, "--seeds", "1", "--shapes", shape, "--out", out];
    args.extend_from_slice(extra);
    args
}

/// The lines of a search-efficiency table with every number masked.
fn masked_lines(table: &str) -> Vec<String> {
    table.lines().map(|l| l.split_whitespace().map(mask_numbers).collect::<Vec<_>>().join(" ")).collect()
}

/// The per-run rows of a masked search-efficiency table.
fn strategy_rows(masked: &[String]) -> Vec<&String> {
    masked.iter().filter(|l| l.starts_with("random #") || l.starts_with("evolutionary #")).collect()
}

/// `--search-efficiency`: cold-start runs of both strategies, each into its
/// own database, and the table comparing the trials they need.
#[test]
fn search_efficiency_runs_both_strategies_from_cold_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().to_str().expect("utf-8").to_string();
    let o = scaletune(&search_args(&out_dir, "6", "matmul:M=32,N=32,K=16", &[]));
    assert!(o.status.success(), "{}", text(&o));
    let masked = masked_lines(&stdout(&o));
    // Which run reaches the goal first depends on timing; the shape does not.
    let rows = strategy_rows(&masked);
    assert_eq!(rows.len(), 2, "{masked:#?}");
    assert!(rows[0].starts_with("random # # # GFLOPS"), "{masked:#?}");
    assert!(rows[1].starts_with("evolutionary # # # GFLOPS"), "{masked:#?}");
    // Every run's incumbents were timed again, together, and nothing failed.
    assert_eq!(
        masked[0],
        "curves: each trial's incumbent, its # distinct candidates (# distinct codes, each timed once) re-measured together in # interleaved rounds",
        "{masked:#?}"
    );
    assert!(masked[1].starts_with("search efficiency of matmul:M=#,N=#,K=#: best of all runs # GFLOPS; goal # GFLOPS"));
    // A ratio of medians, a bound when random's median run never got there, or none.
    let last = masked.last().expect("lines");
    assert!(
        last.starts_with("random needs #x the trials of evolutionary")
            || last.starts_with(
                "random needs more than #x the trials of evolutionary (its median run did not get there in #)"
            )
            || last == "no ratio: evolutionary's median run did not get there in # trials",
        "{masked:#?}"
    );
    for s in ["random-1.db", "evolutionary-1.db"] {
        assert!(dir.path().join("search").join(s).exists(), "{s}");
    }
}

/// `--search-efficiency` on a target the host cannot run: under QEMU with
/// estimated cycles, which do not depend on the machine's load, so two
/// runs print the same table, and nothing is re-measured.
#[test]
fn search_efficiency_under_qemu_counts_cycles_and_repeats_exactly() {
    let run = || {
        let dir = tempfile::tempdir().expect("tempdir");
        let out_dir = dir.path().to_str().expect("utf-8").to_string();
        let on = ["--target", "neoverse-v1", "--vl", "128,256"];
        let o = scaletune(&search_args(&out_dir, "3", "matmul:M=8,N=8,K=4", &on));
        assert!(o.status.success(), "{}", text(&o));
        assert!(!text(&o).contains("re-measuring"), "{}", text(&o));
        stdout(&o)
    };
    let first = run();
    let masked = masked_lines(&first);
    assert_eq!(
        masked[0],
        "curves: each trial's incumbent at estimated cycles, which do not vary between runs, counted at the end of each batch"
    );
    assert_eq!(masked[1], "search efficiency of matmul:M=#,N=#,K=#: best of all runs # cycles; goal # cycles");
    let rows = strategy_rows(&masked);
    assert_eq!(rows.len(), 2, "{masked:#?}");
    assert!(rows.iter().all(|r| r.contains(" # cycles ")), "{masked:#?}");
    assert_eq!(run(), first, "a second run gives the same table");
}

/// `--first-seed` and `--strategies` pick the runs: here evolutionary's
/// seed 4 alone, the run a `--seeds 4` bench would make last, and no
/// random run (its database is not written, and no ratio is printed).
#[test]
fn search_efficiency_runs_the_seeds_and_strategies_it_is_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().to_str().expect("utf-8").to_string();
    let on = ["--target", "neoverse-v1", "--vl", "128", "--first-seed", "4", "--strategies", "evolutionary"];
    let o = scaletune(&search_args(&out_dir, "2", "matmul:M=8,N=8,K=4", &on));
    assert!(o.status.success(), "{}", text(&o));
    let table = stdout(&o);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("random ") || l.starts_with("evolutionary "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 1, "{table}");
    assert_eq!(rows[0][..3], ["evolutionary", "4", "2"], "{table}");
    assert!(!table.contains("random needs"), "{table}");
    let search = dir.path().join("search");
    let mut dbs: Vec<String> = std::fs::read_dir(&search)
        .expect("search dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".db"))
        .collect();
    dbs.sort();
    assert_eq!(dbs, ["evolutionary-4.db"]);
    // The job ran with seed 4, the seed stream a `--seeds 4` run's fourth job has.
    let db = scaletune_database::Database::open(&search.join("evolutionary-4.db")).expect("opens");
    let jobs: Vec<(u64, String)> = db.jobs().expect("jobs").into_iter().map(|j| (j.seed, j.strategy)).collect();
    assert_eq!(jobs, [(4, "evolutionary".to_string())]);
}

/// A vector length no runner accepts is refused before any trial runs,
/// rather than failing every candidate.
#[test]
fn search_efficiency_refuses_a_vector_length_qemu_cannot_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().to_str().expect("utf-8").to_string();
    let on = ["--target", "neoverse-v1", "--vl", "100"];
    let o = scaletune(&search_args(&out_dir, "3", "matmul:M=8,N=8,K=4", &on));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    expect_test::expect![[r#"
        error: tuning matmul:M=8,N=8,K=4 (random seed 1): runner qemu cannot run target `neoverse-v1` at VL 100 (scalable targets run at powers of two from 128 to 2048 bits on AArch64, 1024 on RISC-V)
    "#]]
    .assert_eq(&String::from_utf8_lossy(&o.stderr));
}

/// Two benches in one output directory would time each other's kernels and
/// remove each other's databases: the second is refused at once.
#[test]
fn a_second_bench_in_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().to_str().expect("utf-8").to_string();
    let lock = std::fs::File::create(dir.path().join(".scaletune-bench.lock")).expect("creates");
    lock.lock().expect("locks");
    for extra in [&[][..], &["--search-efficiency"][..]] {
        let mut args = vec!["bench", "--quick", "--out", &out_dir];
        args.extend_from_slice(extra);
        let o = scaletune(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).replace(&out_dir, "<out>");
        expect_test::expect![[r#"
            error: another `scaletune bench` is running in <out> (it holds <out>/.scaletune-bench.lock); wait for it to finish or pass another --out
        "#]]
        .assert_eq(&err);
    }
    assert_eq!(std::fs::read_dir(dir.path()).expect("lists").count(), 1, "nothing written");
    drop(lock);
}
