//! End-to-end tests of `scaletune measure` on this machine: figures, verdicts, exit codes, the artifact cache.

mod common;
use common::{scaletune, text};

#[test]
fn native_measurement_prints_every_repeat_and_reuses_the_artifact() {
    let cache = tempfile::tempdir().expect("temp dir");
    let dir = cache.path().to_str().expect("utf-8 path");
    let args = [
        "measure",
        "matmul:M=37,N=45,K=11",
        "--target",
        "host",
        "--schedule",
        "configs/schedules/matmul_tiled.trace",
        "--repeat",
        "3",
        "--min-repeat-ms",
        "2",
        "--cache-dir",
        dir,
    ];
    let o = scaletune(&args);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("runner native"), "{t}");
    assert!(t.contains("(compiled)"), "{t}");
    assert!(t.contains("3 repeats of >= 1 calls lasting >= 2 ms each"), "{t}");
    let vl_line = t.lines().find(|l| l.trim_start().starts_with("VL ")).expect("a VL line");
    assert!(vl_line.contains(": ok") && vl_line.contains("median ") && vl_line.contains("spread "), "{t}");
    assert!(vl_line.contains("(3 repeats x "), "{t}");
    let repeats = t.lines().find(|l| l.contains("repeats (per call):")).expect("the repeats");
    assert_eq!(repeats.matches(" us").count() + repeats.matches(" ns").count() + repeats.matches(" ms").count(), 3);
    assert!(t.trim_end().ends_with("verdict: ok"), "{t}");

    let o = scaletune(&args);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("(object and executable from the artifact cache)"), "{t}");
}

/// A temporary larger than a thread's stack (the layer norm's differences
/// of 4096 rows of 768, 12 MiB, against the 8 MiB of the main thread that
/// runs the kernel) lives on the heap: the unscheduled kernel runs and
/// checks, where it used to die of SIGSEGV. With its statements computed
/// one row at a time in parallel threads, each thread's copy keeps one
/// row (`lower::compact`), and the kernel checks too.
#[test]
fn a_temporary_larger_than_the_stack_is_allocated_on_the_heap() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fused = dir.path().join("fused.trace");
    std::fs::write(
        &fused,
        "b0 = get_block(\"Y\")\nl1, l2 = get_loops(b0)\nb3 = get_block(\"V\")\ncompute_at(b3, l1)\n\
         b4 = get_block(\"D\")\ncompute_at(b4, l1)\nb5 = get_block(\"Mu\")\ncompute_at(b5, l1)\nparallel(l1)\n",
    )
    .expect("write");
    for schedule in [None, Some(fused.to_str().expect("utf-8"))] {
        let mut args = vec!["measure", "layer_norm:M=4096,N=768", "--target", "host", "--repeat", "1", "--warmup", "0"];
        args.extend(schedule.iter().flat_map(|s| ["--schedule", s]));
        let o = scaletune(&args);
        let t = text(&o);
        assert!(o.status.success(), "{schedule:?}: {t}");
        assert!(t.trim_end().ends_with("verdict: ok"), "{schedule:?}: {t}");
    }
}

#[test]
fn a_schedule_that_does_not_apply_is_bad_input_with_exit_status_2_as_in_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (i, (trace, expect)) in [
        ("b = get_block(\"Y\")\ni = get_loops(b)\nunroll(q)\n", "`q` is not defined"),
        ("b = get_block(\"Z\")\n", "Z"),
        ("b = get_block(\"Y\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[0, 50])\n", "factor"),
        ("b = get_block(\"Y\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[5, 10])\nunroll(i)\n", "i"),
    ]
    .into_iter()
    .enumerate()
    {
        let sched = dir.path().join(format!("bad{i}.trace"));
        std::fs::write(&sched, trace).expect("write");
        let sched = sched.to_str().expect("utf-8");
        let mut messages = Vec::new();
        for command in ["measure", "check"] {
            let o = scaletune(&[command, "scale_add:N=50", "--target", "host", "--schedule", sched]);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{command} {trace:?}: {t}");
            assert!(!t.contains("verdict:") && !t.contains("build: "), "nothing is built or measured: {t}");
            let error = t.lines().find(|l| l.starts_with("error: ")).expect("an error line").to_string();
            assert!(error.contains(sched) && error.contains(expect), "{command} {trace:?}: {t}");
            messages.push(error);
        }
        assert_eq!(messages[0], messages[1], "measure and check name the problem alike");
    }
}

#[test]
fn impossible_requests_are_errors_with_exit_status_2() {
    for (args, expect) in [
        (vec!["--target", "sve-generic", "--runner", "native"], "use --runner qemu"),
        (vec!["--target", "host", "--repeat", "0"], "repeat must be in 1..=1000"),
        (vec!["--target", "host", "--farm", "farm.toml"], "--farm lists remote agents"),
        (vec!["--target", "host", "--vl", "96"], "cannot run at a vector length of 96 bits"),
        (vec!["--target", "sve-generic", "--runner", "qemu", "--vl", "256,128,256"], "error: --vl lists 256 twice\n"),
    ] {
        let mut all = vec!["measure", "scale_add:N=50"];
        all.extend(&args);
        let o = scaletune(&all);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(expect), "{args:?}: {t}");
    }
}

/// The instruction counts one `measure --runner qemu` line reports per VL.
fn instructions_per_vl(t: &str) -> Vec<(u32, u64)> {
    t.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("VL")?;
            let (vl, rest) = rest.trim_start().split_once(':')?;
            let n = rest.split("instructions ").nth(1)?.split(',').next()?;
            Some((vl.trim().parse().ok()?, n.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn qemu_instruction_counts_fall_with_the_vl_for_scalable_code_and_stay_flat_for_neon() {
    let run = |schedule: &str| {
        let o = measure_on_neoverse_v1_under_qemu("matmul:M=64,N=64,K=64", schedule);
        let t = text(&o);
        assert!(o.status.success(), "{schedule}: {t}");
        assert!(t.contains("emulation time") && t.contains("not kernel time"), "{t}");
        assert!(t.contains("estimated cycles") && t.trim_end().ends_with("verdict: ok"), "{t}");
        let counts = instructions_per_vl(&t);
        assert_eq!(counts.iter().map(|c| c.0).collect::<Vec<_>>(), [128, 256, 512], "{t}");
        counts.into_iter().map(|c| c.1).collect::<Vec<u64>>()
    };
    let vla = run("configs/schedules/matmul_tiled_vla.trace");
    assert!(vla[0] > vla[1] && vla[1] > vla[2], "scalable: {vla:?}");
    // Twice the lanes: close to half the instructions.
    assert!((vla[0] as f64 / vla[1] as f64) > 1.6, "scalable: {vla:?}");
    let neon = run("configs/schedules/matmul_tiled_neon.trace");
    assert!(neon.iter().all(|&n| n == neon[0]), "NEON: {neon:?}");
}

#[test]
fn the_qemu_runner_emulates_the_host_and_refuses_impossible_vls() {
    let o = scaletune(&[
        "measure",
        "matmul:M=16,N=24,K=8",
        "--target",
        "host",
        "--runner",
        "qemu",
        "--schedule",
        "configs/schedules/matmul_tiled.trace",
        "--no-cache",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("[qemu-host]") && t.contains("instructions "), "{t}");
    let o = scaletune(&["measure", "scale_add:N=50", "--target", "sve-generic", "--runner", "qemu", "--vl", "384"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("cannot run target `sve-generic` at VL 384") && t.contains("powers of two"), "{t}");
    let o = scaletune(&["measure", "scale_add:N=50", "--target", "host", "--runner", "remote"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--runner remote needs --farm"), "{t}");
}

/// `measure WORKLOAD` on `neoverse-v1` under QEMU at VL 128, 256 and 512, without the artifact cache.
fn measure_on_neoverse_v1_under_qemu(workload: &str, schedule: &str) -> std::process::Output {
    scaletune(&[
        "measure",
        workload,
        "--target",
        "neoverse-v1",
        "--runner",
        "qemu",
        "--vl",
        "128,256,512",
        "--schedule",
        schedule,
        "--no-cache",
    ])
}

/// The VL lines of a `measure` report: (VL, status word, the VL its object was built for).
fn vl_lines(t: &str) -> Vec<(u32, String, Option<u32>)> {
    t.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("VL ")?;
            let (vl, rest) = rest.trim_start().split_once(':')?;
            let status = rest.split_whitespace().next()?.to_string();
            let built = rest.split("(object built for VL ").nth(1).and_then(|s| s.trim_end_matches(')').parse().ok());
            Some((vl.trim().parse().ok()?, status, built))
        })
        .collect()
}

#[test]
fn a_fixed_length_schedule_is_built_for_each_vl_it_is_measured_at() {
    // matmul_tiled on a 256-bit Neoverse V1 is fixed-length SVE: one object per VL.
    let o = measure_on_neoverse_v1_under_qemu("matmul:M=96,N=96,K=96", "configs/schedules/matmul_tiled.trace");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let ok = |vl: u32, built: Option<u32>| (vl, "ok".to_string(), built);
    assert_eq!(vl_lines(&t), [ok(128, Some(128)), ok(256, Some(256)), ok(512, Some(512))], "{t}");
    assert!(t.trim_end().ends_with("verdict: ok"), "{t}");
    // A length-agnostic schedule is one object, run at every VL.
    let o = measure_on_neoverse_v1_under_qemu("matmul:M=96,N=96,K=96", "configs/schedules/matmul_tiled_vla.trace");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(vl_lines(&t), [ok(128, None), ok(256, None), ok(512, None)], "{t}");
}
