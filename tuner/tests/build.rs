//! `scaletune build` and `compile --db` on databases filled through the library: the header and Rust file (snapshots), byte-identical outputs, the choice of record (VL set, pinned, stale), the default schedule and `--strict`, and bad manifests refused with nothing written.

mod common;

use common::{root, scaletune, stdout, text};
use expect_test::{expect, expect_file};
use scaletune::tune::store::{target_definition, workload_definition};
use scaletune_codegen::target::Target;
use scaletune_database::{hash_text, Database, NewRecord};
use std::path::{Path, PathBuf};

/// One record to insert: workload, target, trace file (`None`: the unscheduled nest), runner, VL set, objective and its kind.
struct Rec<'a> {
    workload: &'a str,
    target: &'a str,
    trace: Option<&'a str>,
    runner: &'a str,
    vl_set: &'a str,
    objective: f64,
    kind: &'a str,
}

fn trace_text(name: &str) -> String {
    std::fs::read_to_string(root().join(format!("configs/schedules/{name}.trace"))).expect("reads")
}

/// Inserts a record as a tuning job stores it; returns its id.
fn insert(db: &Database, r: &Rec<'_>, target_def: Option<&str>, trace: Option<String>) -> i64 {
    let w = scaletune::pipeline::load_workload(r.workload).expect("workload");
    let t = Target::load(r.target).expect("target");
    let wrow = db.upsert_workload(&workload_definition(&w)).expect("workload row");
    let trow = db.upsert_target(&t.name, target_def.unwrap_or(&target_definition(&t))).expect("target row");
    let trace = trace.unwrap_or_else(|| r.trace.map(trace_text).unwrap_or_default());
    db.insert_record(&NewRecord {
        job_id: None,
        workload_id: wrow.id,
        target_id: trow.id,
        trial_idx: 0,
        space_trace: String::new(),
        trace_hash: hash_text(&trace),
        trace,
        runner: r.runner.into(),
        vl_set: r.vl_set.into(),
        status: "ok".into(),
        message: String::new(),
        metrics: "[]".into(),
        objective: Some(r.objective),
        objective_kind: r.kind.into(),
        build_s: 0.1,
        run_s: 0.2,
        vector_kind: None,
        predicted: None,
        code: None,
    })
    .expect("inserts")
    .id
}

const MM: &str = "matmul:M=67,N=131,K=29";

/// A database with records of three kernels (and none of a fourth).
fn fill(db: &Database) {
    let qemu = |trace, vl_set, objective| Rec {
        workload: MM,
        target: "neoverse-v1",
        trace,
        runner: "qemu",
        vl_set,
        objective,
        kind: "est_cycles",
    };
    insert(db, &qemu(Some("matmul_tiled_neon"), "256", 2.0e5), None, None);
    insert(db, &qemu(Some("matmul_tiled"), "256", 1.5e5), None, None);
    let sa = |vl_set, objective| Rec {
        workload: "scale_add",
        target: "sve-generic",
        trace: Some("scale_add_predicated"),
        runner: "qemu",
        vl_set,
        objective,
        kind: "instructions",
    };
    insert(db, &sa("512", 900.0), None, None);
    insert(db, &sa("128,256", 4100.0), None, None);
    let axpy = Rec {
        workload: "axpy:N=1000",
        target: "host",
        trace: None,
        runner: "native",
        vl_set: "",
        objective: 2.5e-6,
        kind: "time_s",
    };
    insert(db, &axpy, None, None);
}

const MANIFEST: &str = r#"# four kernels
[[kernel]]
name = "mm"
workload = "matmul:M=67,N=131,K=29"
target = "neoverse-v1"

[[kernel]]
name = "scale_add_vla"
workload = "scale_add"
target = "sve-generic"
vl = [256, 128]

[[kernel]]
name = "axpy_1k"
workload = "axpy:N=1000"
target = "host"

[[kernel]]
name = "gather_rows"
workload = "paged_read"
target = "host"
"#;

struct Setup {
    _dir: tempfile::TempDir,
    db: PathBuf,
    manifest: PathBuf,
    dir: PathBuf,
}

fn setup(manifest: &str) -> Setup {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let db = dir.join("tuning.db");
    fill(&Database::open(&db).expect("opens"));
    let m = dir.join("kernels.toml");
    std::fs::write(&m, manifest).expect("writes");
    Setup { _dir: tmp, db, manifest: m, dir }
}

fn build(s: &Setup, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args =
        vec!["build", "--db", s.db.to_str().expect("utf-8"), "--manifest", s.manifest.to_str().expect("utf-8")];
    args.extend(["--out-dir", out.to_str().expect("utf-8")]);
    args.extend_from_slice(extra);
    scaletune(&args)
}

/// `build` with `extra` options, refused as bad input with nothing
/// written: its error, the manifest's path shown as `kernels.toml`.
fn refused(s: &Setup, extra: &[&str]) -> String {
    let out = s.dir.join("never");
    let o = build(s, &out, extra);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!out.exists(), "a refused build wrote {}", out.display());
    String::from_utf8_lossy(&o.stderr).replace(s.manifest.to_str().expect("utf-8"), "kernels.toml")
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.expect("entry").file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn the_best_records_become_libraries_a_header_and_rust_declarations_byte_for_byte_alike() {
    let s = setup(MANIFEST);
    let (a, b) = (s.dir.join("a"), s.dir.join("b"));
    let first = build(&s, &a, &[]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(build(&s, &b, &[]).status.success());
    assert_eq!(
        files(&a),
        ["kernels.h", "kernels.rs", "libkernels_host.a", "libkernels_neoverse_v1.a", "libkernels_sve_generic.a"]
    );
    for f in files(&a) {
        assert_eq!(std::fs::read(a.join(&f)).expect("reads"), std::fs::read(b.join(&f)).expect("reads"), "{f} differs");
    }
    let err = String::from_utf8_lossy(&first.stderr).replace(s.db.to_str().expect("utf-8"), "DB");
    expect![[r#"
        warning: kernel `gather_rows`: no usable record of paged_read:P=100,PAGES=8192,V=8 on host in DB; built with the default schedule
    "#]]
    .assert_eq(&err);
    let printed = stdout(&first);
    let chosen: Vec<&str> = printed.lines().take(4).map(|l| l.split(", replayed").next().unwrap_or(l)).collect();
    assert_eq!(
        chosen,
        [
            "mm (neoverse-v1): record 2",
            "scale_add_vla (sve-generic): record 4",
            "axpy_1k (host): record 5",
            "gather_rows (host): the default schedule"
        ]
    );
    expect_file!["snapshots/build_kernels.h"].assert_eq(&std::fs::read_to_string(a.join("kernels.h")).expect("reads"));
    expect_file!["snapshots/build_kernels.rs"]
        .assert_eq(&std::fs::read_to_string(a.join("kernels.rs")).expect("reads"));
    // Each library holds its target's kernels, under the manifest's names.
    let ar = std::process::Command::new("llvm-ar-19").arg("t").arg(a.join("libkernels_host.a")).output().expect("runs");
    assert_eq!(stdout(&ar), "axpy_1k.o\ngather_rows.o\n");
    let nm = std::process::Command::new("llvm-nm-19")
        .arg("--defined-only")
        .arg(a.join("libkernels_neoverse_v1.a"))
        .output()
        .expect("runs");
    assert!(stdout(&nm).lines().any(|l| l.ends_with(" T mm")), "{}", stdout(&nm));
}

/// A record that measured other code than this build makes from its trace
/// (an older scaletune's) is still replayed, with a warning; one of the
/// code this build makes is not warned about.
#[test]
fn a_record_of_other_code_than_this_build_makes_is_replayed_with_a_warning() {
    let s = setup(MANIFEST);
    let db = Database::open(&s.db).expect("opens");
    let mm = db.record(2).expect("reads").expect("record 2");
    let candidate = scaletune_measure::Candidate::new(
        0,
        std::sync::Arc::new(scaletune::pipeline::load_workload(MM).expect("workload")),
        std::sync::Arc::new(Target::load("neoverse-v1").expect("target")),
        scaletune_space::trace::parse_trace(&mm.trace).expect("parses"),
    )
    .with_vl_bits(vec![256]);
    let now = scaletune_measure::LlvmBuilder::new().code(&candidate).expect("builds");
    db.replace_record(&NewRecord { code: Some(now), ..mm.data.clone() }).expect("replaces");
    let axpy = db.record(5).expect("reads").expect("record 5");
    db.replace_record(&NewRecord { code: Some("old-code".into()), ..axpy.data.clone() }).expect("replaces");
    drop(db);
    let o = build(&s, &s.dir.join("out"), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).replace(s.db.to_str().expect("utf-8"), "DB");
    expect![[r#"
        warning: kernel `axpy_1k`: record 5 measured other code than this scaletune builds from its trace, so its figure may not hold: tune axpy:N=1000 on host again to measure it anew
        warning: kernel `gather_rows`: no usable record of paged_read:P=100,PAGES=8192,V=8 on host in DB; built with the default schedule
    "#]]
    .assert_eq(&err);
    assert!(stdout(&o).starts_with("mm (neoverse-v1): record 2,"), "{}", stdout(&o));
}

#[test]
fn strict_refuses_a_kernel_without_a_record_and_writes_nothing() {
    let s = setup(MANIFEST);
    let out = s.dir.join("out");
    let o = build(&s, &out, &["--strict"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).replace(s.db.to_str().expect("utf-8"), "DB");
    expect![[r#"
        error: kernel `gather_rows`: no usable record of paged_read:P=100,PAGES=8192,V=8 on host in DB
    "#]]
    .assert_eq(&err);
    assert_eq!(files(&out), Vec::<String>::new());
}

#[test]
fn records_of_other_definitions_or_unreplayable_traces_are_stale_with_the_reason() {
    let s = setup(
        "[[kernel]]\nname = \"mm\"\nworkload = \"matmul:M=67,N=131,K=29\"\ntarget = \"neoverse-v1\"\n\n\
         [[kernel]]\nname = \"old_cpu\"\nworkload = \"scale_add\"\ntarget = \"neoverse-v2\"\n",
    );
    let db = Database::open(&s.db).expect("opens");
    // The best record of mm no longer replays (a block the workload does not have).
    let broken = Rec {
        workload: MM,
        target: "neoverse-v1",
        trace: None,
        runner: "qemu",
        vl_set: "256",
        objective: 10.0,
        kind: "est_cycles",
    };
    let bad = insert(&db, &broken, None, Some("b = get_block(\"Z\")\n".into()));
    // scale_add on a Neoverse V2 measured when the target had another CPU.
    let v2 = Target::load("neoverse-v2").expect("target");
    let old_def = target_definition(&v2).replace("cpu = neoverse-v2", "cpu = neoverse-n2");
    let rec = Rec {
        workload: "scale_add",
        target: "neoverse-v2",
        trace: None,
        runner: "qemu",
        vl_set: "128",
        objective: 1.0,
        kind: "instructions",
    };
    let old = insert(&db, &rec, Some(&old_def), None);
    drop(db);
    let o = build(&s, &s.dir.join("out"), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).replace(s.db.to_str().expect("utf-8"), "DB");
    assert_eq!((bad, old), (6, 7));
    expect![[r#"
        warning: kernel `mm`: record 6 is stale: its trace no longer replays (schedule: line 1: `b = get_block("Z")`: get_block: no block named `Z` (blocks: C))
        warning: kernel `old_cpu`: record 7 is stale: target `neoverse-v2` was defined differently: cpu = neoverse-n2 (recorded) vs cpu = neoverse-v2 (now)
        warning: kernel `old_cpu`: no usable record of scale_add:N=1000 on neoverse-v2 in DB; built with the default schedule
    "#]]
    .assert_eq(&err);
    assert!(stdout(&o).starts_with("mm (neoverse-v1): record 2,"), "{}", stdout(&o));
}

#[test]
fn a_pinned_record_is_used_and_one_of_another_kernel_is_an_error_naming_both() {
    let s = setup(
        "[[kernel]]\nname = \"mm\"\nworkload = \"matmul:M=67,N=131,K=29\"\ntarget = \"neoverse-v1\"\nrecord = 1\n",
    );
    let o = build(&s, &s.dir.join("out"), &["--strict"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).starts_with("mm (neoverse-v1): record 1,"), "{}", stdout(&o));
    std::fs::write(
        &s.manifest,
        "[[kernel]]\nname = \"mm\"\nworkload = \"matmul:M=67,N=131,K=29\"\ntarget = \"neoverse-v1\"\nrecord = 3\n",
    )
    .expect("writes");
    let o = build(&s, &s.dir.join("out2"), &[]);
    assert_eq!(o.status.code(), Some(2));
    expect![[r#"
        error: kernel `mm`: record 3: it is a record of scale_add:N=1000 on sve-generic, not of matmul:M=67,N=131,K=29 on neoverse-v1
    "#]]
    .assert_eq(&String::from_utf8_lossy(&o.stderr));
    assert!(!s.dir.join("out2").exists());
}

#[test]
fn bad_manifests_name_the_line_kernel_and_field() {
    let s = setup(MANIFEST);
    let cases = [
        "[[kernel]]\nname = \"a\"\nworkload = \"axpy\"\ntarget = \"host\"\nrecrod = 3\n",
        "[[kernel]]\nname = \"a\"\nworkload = \"axpy\"\ntarget = \"host\"\n\n[[kernel]]\nname = \"a\"\nworkload = \"axpy\"\ntarget = \"host\"\n",
        "[[kernel]]\nname = \"2fast\"\nworkload = \"axpy\"\ntarget = \"host\"\n",
        "[[kernel]]\nname = \"k\"\nworkload = \"axpy\"\ntarget = \"cray-1\"\n",
        "[[kernel]]\nname = \"k\"\nworkload = \"axpi\"\ntarget = \"host\"\n",
        "[[kernel]]\nname = \"k\"\nworkload = \"axpy\"\ntarget = \"neoverse-v1\"\nvl = [384]\n",
        "[[kernel]]\nworkload = \"axpy\"\ntarget = \"host\"\n",
        "[[kernel]\nname = \"k\"\n",
        "kernels = []\n",
    ];
    let mut shown = String::new();
    for manifest in cases {
        std::fs::write(&s.manifest, manifest).expect("writes");
        let out = s.dir.join("never");
        let o = build(&s, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(!out.exists());
        shown
            .push_str(&String::from_utf8_lossy(&o.stderr).replace(s.manifest.to_str().expect("utf-8"), "kernels.toml"));
    }
    expect![[r#"
        error: kernels.toml:5: kernel `a`, field `recrod`: unknown key (expected name, workload, target, vl, record)
        error: kernels.toml:7: kernel `a`, field `name`: duplicate kernel name (first at line 1)
        error: kernels.toml:2: kernel `2fast`, field `name`: `2fast` is not a C identifier
        error: kernels.toml:4: kernel `k`, field `target`: unknown target `cray-1` (known: host, neon, neoverse-v1, neoverse-v2, a64fx, sve-generic, rvv, sme, apple-m4)
        error: kernels.toml:3: kernel `k`, field `workload`: unknown workload `axpi` (known: scale_add, axpy, daxpy, sum_cos, row_sum, softmax_rows, layer_norm, matmul, matmul_bt, batch_matmul, outer_product, paged_read, transpose, conv2d_nhwc, depthwise_conv2d_nhwc, matmul_i8, matmul_f16, matmul_bf16)
        error: kernels.toml:5: kernel `k`, field `vl`: target `neoverse-v1` cannot run at a vector length of 384 bits (powers of two from 256 to 256)
        error: kernels.toml:1: kernel `#1`, field `name`: missing
        error: kernels.toml:1: invalid table header expected `.`, `]]`
        error: kernels.toml:1: unknown field `kernels`, expected `kernel`
    "#]].assert_eq(&shown);
}

#[test]
fn a_missing_or_corrupt_database_is_refused() {
    let s = setup(MANIFEST);
    let missing = s.dir.join("missing.db");
    let o = scaletune(&[
        "build",
        "--db",
        missing.to_str().expect("utf-8"),
        "--manifest",
        s.manifest.to_str().expect("utf-8"),
        "--out-dir",
        s.dir.join("o").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("missing.db does not exist"), "{}", text(&o));
    std::fs::write(&s.db, "not a database: just text long enough to fill an SQLite header of one hundred bytes, and then some more words to be sure").expect("writes");
    let o = build(&s, &s.dir.join("o"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("is not a usable SQLite database (no SQLite header)"), "{}", text(&o));
    assert!(!s.dir.join("o").exists());
}

/// `scaletune compile` of [`MM`] on neoverse-v1 with the best record of `db`, emitting `emit` into `out`.
fn compile_mm_from_db(db: &str, emit: &str, out: &Path) -> std::process::Output {
    let out = out.to_str().expect("utf-8");
    scaletune(&["compile", MM, "--target", "neoverse-v1", "--db", db, "--emit", emit, "-o", out])
}

#[test]
fn compile_with_a_database_builds_the_best_record() {
    let s = setup(MANIFEST);
    let (from_db, from_file) = (s.dir.join("db"), s.dir.join("file"));
    let o = compile_mm_from_db(s.db.to_str().expect("utf-8"), "obj,loops", &from_db);
    assert!(o.status.success(), "{}", text(&o));
    let used = String::from_utf8_lossy(&o.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .replace(s.db.to_str().expect("utf-8"), "DB");
    assert_eq!(used, "using record 2 of DB (150.0 k est_cycles (emulated), qemu runner, VLs [256])", "{}", text(&o));
    let sched = root().join("configs/schedules/matmul_tiled.trace");
    let o = scaletune(&[
        "compile",
        MM,
        "--target",
        "neoverse-v1",
        "--schedule",
        sched.to_str().expect("utf-8"),
        "--emit",
        "obj,loops",
        "-o",
        from_file.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["scaletune_matmul.o", "scaletune_matmul.loops"] {
        assert_eq!(
            std::fs::read(from_db.join(f)).expect("reads"),
            std::fs::read(from_file.join(f)).expect("reads"),
            "{f}"
        );
    }
    let o = scaletune(&[
        "compile",
        "paged_read",
        "--target",
        "host",
        "--db",
        s.db.to_str().expect("utf-8"),
        "-o",
        s.dir.join("x").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no usable record of paged_read"), "{}", text(&o));
}

/// Where the unscheduled nest measured faster than every schedule, `db
/// top` ranks it first and says so, `db best` answers with an empty
/// schedule (which `check --schedule` takes as the unscheduled nest), and
/// `compile --db` builds it: the three agree.
#[test]
fn an_unbeaten_unscheduled_nest_is_the_best_for_db_top_db_best_and_compile() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("t.db");
    let db = Database::open(&path).expect("opens");
    let rec = |trace, objective| Rec {
        workload: MM,
        target: "neoverse-v1",
        trace,
        runner: "qemu",
        vl_set: "256",
        objective,
        kind: "est_cycles",
    };
    insert(&db, &rec(Some("matmul_tiled"), 1.5e5), None, None);
    insert(&db, &rec(None, 1.2e5), None, None);
    insert(&db, &rec(Some("matmul_tiled_neon"), 2.0e5), None, None);
    drop(db);
    let dbs = path.to_str().expect("utf-8");
    let top = scaletune(&["db", "top", MM, "--target", "neoverse-v1", "--db", dbs]);
    assert!(top.status.success(), "{}", text(&top));
    expect![[r#"
        record      2     120.0 k est_cycles (emulated)  runner qemu VLs [256]  job -  (unscheduled nest)
        record      1     150.0 k est_cycles (emulated)  runner qemu VLs [256]  job -
        record      3     200.0 k est_cycles (emulated)  runner qemu VLs [256]  job -
    "#]]
    .assert_eq(&stdout(&top));
    let best = scaletune(&["db", "best", MM, "--target", "neoverse-v1", "--db", dbs]);
    assert!(best.status.success(), "{}", text(&best));
    expect![[r#"
        # record 2: 120.0 k est_cycles (emulated) (qemu runner, VLs [256])
        # the unscheduled loop nest: no measured schedule beat it
    "#]]
    .assert_eq(&stdout(&best));
    let file = tmp.path().join("best.trace");
    std::fs::write(&file, stdout(&best)).expect("writes");
    let check = scaletune(&["check", MM, "--target", "neoverse-v1", "--schedule", file.to_str().expect("utf-8")]);
    assert!(check.status.success(), "{}", text(&check));
    let out = tmp.path().join("out");
    let o = compile_mm_from_db(dbs, "loops", &out);
    assert!(text(&o).contains("using record 2 of"), "{}", text(&o));
}

/// A workload whose tensors and scalar are named with C and Rust keywords
/// (`fn`, `type`, `self`, `bool`, `int`, `match`), a macro GCC and Clang
/// predefine (`linux`), and `fn_`, the name `fn` would get.
const KEYWORD_WORKLOAD: &str = r#"name = "kw"
compute = ["int[i] = fn[i] * type[i] + fn_[i] * self[i] + bool[i] * linux[i] * match"]
[params]
N = 8
[tensors]
fn = { dtype = "f32", shape = ["N"] }
type = { dtype = "f32", shape = ["N"] }
fn_ = { dtype = "f32", shape = ["N"] }
self = { dtype = "f32", shape = ["N"] }
bool = { dtype = "f32", shape = ["N"] }
linux = { dtype = "f32", shape = ["N"] }
int = { dtype = "f32", shape = ["N"], role = "output" }
[scalars]
match = { dtype = "f32", value = 2.0 }
"#;

/// Runs `cmd` with `args`; panics with its output unless it succeeds.
fn succeeds(cmd: &str, args: &[&str]) {
    let o = std::process::Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(o.status.success(), "{cmd} {args:?}: {}", text(&o));
}

/// Tensors named with keywords become parameters of other names in the
/// header and the Rust file alike (a trailing `_`, one more where that
/// name is taken), the comments say which tensor each is, and both files
/// compile: the header as C11, C23 and C++ with clang and as GNU C with gcc,
/// the declarations under `include!` in Rust 2021 and 2024.
#[test]
fn tensors_named_with_keywords_become_parameters_that_compile_in_c_and_rust() {
    let s = setup("[[kernel]]\nname = \"k\"\nworkload = \"kw.toml\"\ntarget = \"host\"\n");
    std::fs::write(s.dir.join("kw.toml"), KEYWORD_WORKLOAD).expect("writes");
    let out = s.dir.join("out");
    let o = build(&s, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).replace(s.db.to_str().expect("utf-8"), "DB"),
        "warning: kernel `k`: no usable record of kw:N=8 on host in DB; built with the default schedule\n"
    );
    let header = std::fs::read_to_string(out.join("kernels.h")).expect("reads");
    assert_eq!(
        header,
        "/* Generated by `scaletune build` from kernels.toml; do not edit. */
#ifndef KERNELS_H
#define KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern \"C\" {
#endif

/*
 * k: kw:N=8 on host in libkernels_host.a
 *   fn__ (tensor `fn`): f32[8] input
 *   type_ (tensor `type`): f32[8] input
 *   fn_: f32[8] input
 *   self_ (tensor `self`): f32[8] input
 *   bool_ (tensor `bool`): f32[8] input
 *   linux_ (tensor `linux`): f32[8] input
 *   int_ (tensor `int`): f32[8] output
 *   match_ (scalar `match`): f32 scalar (the workload's value: 2)
 * schedule: default schedule (the unscheduled loop nest): no usable record in the database
 */
void k(const float *fn__, const float *type_, const float *fn_, const float *self_, const float *bool_, const float *linux_, float *int_, float match_);

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_H */
"
    );
    let rust = std::fs::read_to_string(out.join("kernels.rs")).expect("reads");
    assert_eq!(
        rust,
        "// Generated by `scaletune build` from kernels.toml; do not edit.
#[allow(non_snake_case, dead_code)]
unsafe extern \"C\" {
    /// `k`: kw:N=8 on host in libkernels_host.a
    ///
    /// - `fn__` (tensor `fn`): f32[8] input
    /// - `type_` (tensor `type`): f32[8] input
    /// - `fn_`: f32[8] input
    /// - `self_` (tensor `self`): f32[8] input
    /// - `bool_` (tensor `bool`): f32[8] input
    /// - `linux_` (tensor `linux`): f32[8] input
    /// - `int_` (tensor `int`): f32[8] output
    /// - `match_` (scalar `match`): f32 scalar (the workload's value: 2)
    ///
    /// Schedule: default schedule (the unscheduled loop nest): no usable record in the database
    pub fn k(fn__: *const f32, type_: *const f32, fn_: *const f32, self_: *const f32, bool_: *const f32, linux_: *const f32, int_: *mut f32, match_: f32);
}
"
    );
    let h = out.join("kernels.h");
    let h = h.to_str().expect("utf-8");
    let strict = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic"];
    for (cc, lang) in [
        ("clang-19", ["-x", "c", "-std=c11"]),
        ("clang-19", ["-x", "c", "-std=c23"]),
        ("clang-19", ["-x", "c++", "-std=c++17"]),
        ("gcc", ["-x", "c", "-std=gnu17"]),
    ] {
        succeeds(cc, &[&strict[..], &lang[..], &[h]].concat());
    }
    let lib = s.dir.join("lib.rs");
    std::fs::write(&lib, format!("include!({:?});\n", out.join("kernels.rs"))).expect("writes");
    for edition in ["2021", "2024"] {
        let meta = s.dir.join(format!("lib{edition}.rmeta"));
        succeeds(
            "rustc",
            &[
                "--edition",
                edition,
                "--crate-type",
                "lib",
                "--crate-name",
                "kernels",
                "--emit",
                &format!("metadata={}", meta.display()),
                "-D",
                "warnings",
                lib.to_str().expect("utf-8"),
            ],
        );
    }
}

/// A kernel is its symbol in C and its declaration in Rust: a name that is
/// a keyword of either (strict or reserved), `_`, or a name the header
/// defines is refused, naming the file, line, kernel and field.
#[test]
fn kernel_names_that_are_rust_or_c_keywords_are_refused() {
    let s = setup(MANIFEST);
    let mut shown = Vec::new();
    for name in [
        "fn", "type", "match", "self", "Self", "crate", "async", "await", "dyn", "gen", "try", "_", "bool", "_Bool",
        "int8_t", "class", "new",
    ] {
        std::fs::write(&s.manifest, format!("[[kernel]]\nname = \"{name}\"\nworkload = \"axpy\"\ntarget = \"host\"\n"))
            .expect("writes");
        shown.push(refused(&s, &[]));
    }
    assert_eq!(
        shown,
        [
            "error: kernels.toml:2: kernel `fn`, field `name`: `fn` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `type`, field `name`: `type` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `match`, field `name`: `match` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `self`, field `name`: `self` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `Self`, field `name`: `Self` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `crate`, field `name`: `crate` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `async`, field `name`: `async` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `await`, field `name`: `await` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `dyn`, field `name`: `dyn` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `gen`, field `name`: `gen` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `try`, field `name`: `try` is a Rust keyword\n",
            "error: kernels.toml:2: kernel `_`, field `name`: `_` is not a Rust identifier\n",
            "error: kernels.toml:2: kernel `bool`, field `name`: `bool` is a C keyword\n",
            "error: kernels.toml:2: kernel `_Bool`, field `name`: `_Bool` is a C keyword\n",
            "error: kernels.toml:2: kernel `int8_t`, field `name`: `int8_t` is defined by <stdint.h>, which the header includes, or predefined by C compilers\n",
            "error: kernels.toml:2: kernel `class`, field `name`: `class` is a C++ keyword (the header declares the kernels for C++ too)\n",
            "error: kernels.toml:2: kernel `new`, field `name`: `new` is a C++ keyword (the header declares the kernels for C++ too)\n",
        ]
    );
}

/// The outputs' prefix names the files and the include guard: empty, or
/// (its characters other than letters and digits made `_`) starting with a
/// digit, it is refused before anything is built or written; a kernel named
/// like the guard is refused too.
#[test]
fn a_prefix_that_makes_no_c_identifier_is_refused_and_nothing_is_written() {
    let s = setup("[[kernel]]\nname = \"axpy_1k\"\nworkload = \"axpy:N=1000\"\ntarget = \"host\"\n");
    let mut shown = Vec::new();
    for prefix in ["", "9lives", "3 d"] {
        shown.push(refused(&s, &["--prefix", prefix]));
    }
    // The default prefix, the manifest's file stem.
    let digits = s.dir.join("2kernels.toml");
    std::fs::copy(&s.manifest, &digits).expect("copies");
    let out = s.dir.join("never");
    let o = scaletune(&[
        "build",
        "--db",
        s.db.to_str().expect("utf-8"),
        "--manifest",
        digits.to_str().expect("utf-8"),
        "--out-dir",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!out.exists());
    shown.push(String::from_utf8_lossy(&o.stderr).to_string());
    std::fs::write(&s.manifest, "[[kernel]]\nname = \"KERNELS_H\"\nworkload = \"axpy\"\ntarget = \"host\"\n")
        .expect("writes");
    shown.push(refused(&s, &[]));
    assert_eq!(
        shown,
        [
            "error: the output prefix is empty: it names the outputs PREFIX.h, PREFIX.rs and libPREFIX_TARGET.a\n",
            "error: the output prefix `9lives` is not a C identifier: it must start with a letter or `_` (the header's include guard would be `9LIVES_H`)\n",
            "error: the output prefix `3 d` is not a C identifier: it must start with a letter or `_` (the header's include guard would be `3_D_H`)\n",
            "error: the output prefix `2kernels` (the manifest's file stem) is not a C identifier: it must start with a letter or `_` (the header's include guard would be `2KERNELS_H`)\n",
            "error: kernels.toml:1: kernel `KERNELS_H`, field `name`: `KERNELS_H` is the include guard of the header `kernels.h`: rename the kernel or choose another prefix\n",
        ]
    );
    // A prefix that maps to an identifier names every output.
    std::fs::write(&s.manifest, "[[kernel]]\nname = \"axpy_1k\"\nworkload = \"axpy:N=1000\"\ntarget = \"host\"\n")
        .expect("writes");
    let out = s.dir.join("out");
    let o = build(&s, &out, &["--prefix", "my kernels"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(files(&out), ["libmy_kernels_host.a", "my_kernels.h", "my_kernels.rs"]);
    let header = std::fs::read_to_string(out.join("my_kernels.h")).expect("reads");
    assert_eq!(header.lines().nth(1), Some("#ifndef MY_KERNELS_H"));
}
