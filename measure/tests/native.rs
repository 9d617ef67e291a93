//! The native runner and the driver's timing mode, on hand-written C kernels.

mod common;

use common::{crafted_built, scale_add_c, target, workload};
use scaletune_measure::harness::timing::{driver_args, parse_timing};
use scaletune_measure::{NativeRunner, RunOptions, Runner, Status, TimingProtocol};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

fn quick() -> TimingProtocol {
    TimingProtocol {
        warmup: 1,
        number: 1,
        repeat: 5,
        min_repeat_ms: 5,
        flush_cache: false,
        pin_core: None,
        threads: None,
    }
}

/// A fixed thread count reaches the kernel's process as the runtime's
/// variable; without one the variable is not set by the runner.
#[test]
fn the_thread_count_reaches_the_run() {
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let vl = t.default_vl_bits[0];
    // The kernel corrupts its output unless it sees SCALETUNE_NUM_THREADS=3.
    let check = "const char *v = getenv(\"SCALETUNE_NUM_THREADS\"); if (!v || strcmp(v, \"3\") != 0) y[0] += 1.0f;";
    let source = format!("#include <stdlib.h>\n#include <string.h>\n{}", scale_add_c(64, check));
    let built = crafted_built(0, &w, &t, &source, TIMEOUT);
    let three = NativeRunner::new(TimingProtocol { threads: Some(3), ..quick() }).measure(&built, vl);
    assert_eq!(three.status, Status::Ok, "{}", three.message);
    let unset = NativeRunner::new(quick()).measure(&built, vl);
    assert_eq!(unset.status, Status::WrongResult, "{}", unset.message);
}

#[test]
fn timing_follows_the_protocol() {
    let (w, t) = (workload("scale_add:N=4096"), target("host"));
    let built = crafted_built(0, &w, &t, &scale_add_c(4096, ""), TIMEOUT);
    let vl = t.default_vl_bits[0];
    let runner = NativeRunner::new(quick());
    let m = runner.measure(&built, vl);
    assert_eq!(m.status, Status::Ok, "{}", m.message);
    assert_eq!(m.runner, "native");
    assert!(m.max_abs_err.is_finite());
    let timing = m.timing.expect("a timing");
    assert_eq!(timing.repeats_s.len(), 5);
    // 4096 elements take well under a millisecond and well over a nanosecond.
    assert!(timing.median_s > 1e-9 && timing.median_s < 1e-3, "{timing:?}");
    assert!(timing.repeats_s.iter().all(|&s| s > 0.0));
    assert!(timing.spread.is_finite() && timing.spread >= 0.0, "{timing:?}");
    // `number` was raised so that one repeat lasts about 5 ms when calibrated
    // (a wide margin: other tests and builds share this machine's two cores).
    assert!(timing.number > 1, "{timing:?}");
    let repeat_s = timing.median_s * f64::from(timing.number);
    assert!(repeat_s > 0.0005 && repeat_s < 0.5, "a repeat took {repeat_s} s: {timing:?}");
    // Each repeat's wait for a CPU is reported (this is Linux); how long it
    // was depends on what else runs here.
    assert_eq!(timing.waited_s.len(), 5, "{timing:?}");
    assert_retries_kept_no_disturbed_repeat(&timing);
}

/// While the driver had retries left (fewer than one per repeat used), it
/// kept no repeat that waited for a CPU longer than the threshold.
fn assert_retries_kept_no_disturbed_repeat(timing: &scaletune_measure::Timing) {
    assert!(timing.discarded as usize <= timing.repeats_s.len(), "{timing:?}");
    if (timing.discarded as usize) < timing.repeats_s.len() {
        assert!(!timing.disturbed(), "a disturbed repeat kept with retries left: {timing:?}");
    }
}

/// A thread that keeps CPU `core` busy until dropped.
struct Hog(Arc<std::sync::atomic::AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Hog {
    fn on(core: usize) -> Hog {
        use std::sync::atomic::Ordering;
        let run = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (started, ready) = std::sync::mpsc::channel();
        let flag = Arc::clone(&run);
        let handle = std::thread::spawn(move || {
            let mut set = nix::sched::CpuSet::new();
            set.set(core).expect("a CPU number");
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("pins the hog");
            started.send(()).expect("the test waits");
            let mut x = 0u64;
            while flag.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        ready.recv().expect("the hog started");
        Hog(run, Some(handle))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

/// A run pinned to a CPU that another thread keeps busy waits for it
/// during every repeat: the driver times each repeat again once (as many
/// retries as repeats), then keeps the disturbed ones and reports their
/// wait, about half of each (the two share the CPU). Each repeat lasts
/// 50 ms or more, many of the scheduler's time slices (a few ms each): a
/// repeat of a few ms (10 ms calibrated while the CPU was shared, run in
/// 2.7 ms when it was not) could fall within one slice of the run and
/// wait for nothing.
#[test]
fn a_run_sharing_its_cpu_times_its_repeats_again_and_reports_the_wait() {
    let (w, t) = (workload("scale_add:N=4096"), target("host"));
    let built = crafted_built(0, &w, &t, &scale_add_c(4096, ""), TIMEOUT);
    let p = TimingProtocol { repeat: 4, min_repeat_ms: 50, pin_core: Some(0), ..quick() };
    let hog = Hog::on(0);
    let m = NativeRunner::new(p).measure(&built, t.default_vl_bits[0]);
    drop(hog);
    assert_eq!(m.status, Status::Ok, "{}", m.message);
    let timing = m.timing.expect("a timing");
    assert_eq!(timing.discarded, 4, "every repeat was timed again: {timing:?}");
    assert_eq!(timing.waited_s.len(), 4);
    assert!(timing.disturbed(), "{timing:?}");
    let least = timing.waited_s.iter().zip(&timing.repeats_s).map(|(w, r)| w / r).fold(1.0, f64::min);
    assert!(least > 0.2, "each kept repeat waited for a fifth of its time or more: {timing:?}");
}

#[test]
fn min_repeat_zero_keeps_number_and_flush_and_pin_work() {
    let (w, t) = (workload("scale_add:N=1000"), target("host"));
    let built = crafted_built(0, &w, &t, &scale_add_c(1000, ""), TIMEOUT);
    let p = TimingProtocol {
        warmup: 0,
        number: 3,
        repeat: 4,
        min_repeat_ms: 0,
        flush_cache: true,
        pin_core: Some(0),
        threads: None,
    };
    let m = NativeRunner::new(p).measure(&built, t.default_vl_bits[0]);
    assert_eq!(m.status, Status::Ok, "{}", m.message);
    let timing = m.timing.expect("a timing");
    assert_eq!((timing.number, timing.repeats_s.len()), (3, 4));
    // With a flushed cache every repeat starts cold; still a sane figure.
    assert!(timing.median_s > 0.0 && timing.median_s < 0.01, "{timing:?}");
}

#[test]
fn pinning_to_a_missing_cpu_is_a_run_error() {
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let built = crafted_built(0, &w, &t, &scale_add_c(64, ""), TIMEOUT);
    let p = TimingProtocol { pin_core: Some(4095), ..quick() };
    let m = NativeRunner::new(p).measure(&built, t.default_vl_bits[0]);
    assert_eq!(m.status, Status::RunError, "{}", m.message);
    assert!(m.message.contains("cannot pin to CPU 4095"), "{}", m.message);
}

#[test]
fn correctness_is_checked_on_the_first_call() {
    let (w, t) = (workload("scale_add:N=256"), target("host"));
    let vl = t.default_vl_bits[0];
    // Wrong only from the second call on: the first call's (correct) outputs
    // are the ones compared, and the changed outputs of the timed calls are a fault.
    let later_wrong = crafted_built(0, &w, &t, &scale_add_c(256, "if (calls > 1) y[7] += 1.0f;"), TIMEOUT);
    let m = NativeRunner::new(quick()).measure(&later_wrong, vl);
    assert_eq!(m.status, Status::RunError, "{}", m.message);
    assert!(m.message.contains("timed calls changed them"), "{}", m.message);
    assert!(m.message.contains("timed calls left output `Y` different"), "{}", m.message);
    // Wrong on the first call only: a wrong result, whatever the later calls do.
    let first_wrong = crafted_built(1, &w, &t, &scale_add_c(256, "if (calls == 1) y[7] += 1.0f;"), TIMEOUT);
    let m = NativeRunner::new(quick()).measure(&first_wrong, vl);
    assert_eq!(m.status, Status::WrongResult, "{}", m.message);
    assert!(m.message.contains("first at flat index 7 = Y[7]"), "{}", m.message);
    assert!(m.timing.is_none());
    // A write outside the outputs during a timed call is caught too.
    let later_oob = crafted_built(2, &w, &t, &scale_add_c(256, "if (calls == 3) y[N] = 0.0f;"), TIMEOUT);
    let m = NativeRunner::new(quick()).measure(&later_oob, vl);
    assert_eq!(m.status, Status::RunError, "{}", m.message);
    assert!(
        m.message.contains("wrote outside tensor `Y` (byte offset 1024, size 1024) in a timed call"),
        "{}",
        m.message
    );
}

#[test]
fn crashes_and_hangs_are_statuses() {
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let vl = t.default_vl_bits[0];
    let segv = crafted_built(0, &w, &t, &scale_add_c(64, "*(volatile float *)(uintptr_t)16 = s;"), TIMEOUT);
    let m = NativeRunner::new(quick()).measure(&segv, vl);
    assert_eq!(m.status, Status::RunError, "{}", m.message);
    assert!(m.message.contains("SIGSEGV"), "{}", m.message);
    // Hangs only in the timed calls: the timeout covers the whole child run.
    let hang = crafted_built(1, &w, &t, &scale_add_c(64, "volatile int spin = calls > 1; while (spin) {}"), TIMEOUT);
    let start = Instant::now();
    let m = NativeRunner::new(quick()).with_timeout(Duration::from_millis(700)).measure(&hang, vl);
    assert_eq!(m.status, Status::Timeout, "{}", m.message);
    assert!(m.message.contains("timed out after 0.7 s"), "{}", m.message);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_runner_accepts_only_native_targets() {
    let runner = NativeRunner::new(quick()).with_slots(2).with_name("native@test");
    let host = target("host");
    assert!(runner.accepts(&host, host.default_vl_bits[0]));
    assert!(!runner.accepts(&host, 4096));
    assert!(!runner.accepts(&target("sve-generic"), 256));
    assert_eq!((runner.slots(), runner.name()), (2, "native@test".to_string()));
    // Given an emulated candidate anyway, it refuses with a message instead of running it.
    let (w, t) = (workload("scale_add:N=16"), target("rvv"));
    let built = crafted_built(0, &w, &t, &scale_add_c(16, ""), TIMEOUT);
    let m = runner.measure(&built, 128);
    assert_eq!(m.status, Status::RunError);
    assert!(m.message.contains("does not run natively"), "{}", m.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_run_reports_every_vector_length() {
    let (w, t) = (workload("scale_add:N=128"), target("host"));
    let built = Arc::new(crafted_built(5, &w, &t, &scale_add_c(128, ""), TIMEOUT));
    let vl = t.default_vl_bits[0];
    let runs = NativeRunner::new(quick()).run(built, &[vl, vl + 128]).await;
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].status, Status::Ok, "{}", runs[0].message);
    assert_eq!(runs[1].status, Status::RunError, "{}", runs[1].message);
    assert!(runs[1].message.contains(&(vl + 128).to_string()), "{}", runs[1].message);
}

#[test]
fn the_timing_mode_works_under_qemu_too() {
    // Emulated time is meaningless, but the protocol must not break the driver there.
    let (w, t) = (workload("scale_add:N=100"), target("rvv"));
    let built = crafted_built(0, &w, &t, &scale_add_c(100, ""), TIMEOUT);
    let p = TimingProtocol {
        warmup: 1,
        number: 2,
        repeat: 3,
        min_repeat_ms: 0,
        flush_cache: false,
        pin_core: None,
        threads: None,
    };
    let opts = RunOptions { driver_args: driver_args(&p).expect("valid"), ..RunOptions::default() };
    let (check, out) = scaletune_measure::run_with(&built.harness, 256, &opts);
    assert_eq!(check.status, Status::Ok, "{}", check.message);
    let timing = parse_timing(&out.stdout, &p).expect("a timing report");
    assert_eq!((timing.number, timing.repeats_s.len()), (2, 3));
}
