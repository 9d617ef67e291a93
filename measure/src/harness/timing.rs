//! The driver's timing mode: its command-line options, its C helpers, and the parser of its timing report.
//!
//! A [`TimingProtocol`] becomes driver options with [`driver_args`] (pass
//! them as `RunOptions::driver_args`):
//!
//! ```text
//! --warmup W --number N --repeat R --min-repeat-ms M [--flush-cache] [--pin-core C]
//! ```
//!
//! After its correctness call the driver makes `W` untimed calls, then, if
//! `M > 0`, times `N` calls and raises `N` once (doubling while a repeat is
//! too short to extrapolate from, then scaling with a 5 % margin from the
//! fastest of three timings, so one preemption cannot stop it early) so that
//! one repeat lasts at least `M` ms, and finally times `R` repeats of `N`
//! calls each with `CLOCK_MONOTONIC`. With `--flush-cache` it writes a buffer
//! of `max(64 MiB, 2 x L3)` before every repeat (so only the first call of
//! each repeat starts with cold caches); with `--pin-core` it pins
//! itself to that CPU before reading its inputs.
//!
//! Around each repeat the driver also reads how long the process's threads
//! were runnable but waiting for a CPU (their run-queue delay, from
//! `/proc/self/task/*/schedstat`). A repeat that waited longer than
//! [`MAX_WAIT_SHARE`] of its time shared its core with another task (a
//! build, another job, anything else on the machine) and is timed again
//! after a pause (1 ms before the first retry, doubling, for the first 8),
//! up to `R` times in all; after that, disturbed repeats are kept and their
//! wait reported with them. The report, printed on stdout once all repeats
//! are done (no I/O between repeats):
//!
//! ```text
//! scaletune-timing: number=N repeat=R
//! scaletune-timing: repeat_s=1.234567890e-06 waited_s=0.000000000e+00   (R lines, seconds per call)
//! scaletune-timing: discarded=K      (repeats timed again)
//! scaletune-timing: end
//! ```
//!
//! Where the system does not report waits, the `waited_s` fields are left
//! out; reports of drivers built before waits were measured (no `waited_s`,
//! no `discarded` line) still read.
//!
//! [`parse_timing`] turns that report into a [`Timing`].

use crate::protocol::TimingProtocol;
use crate::result::Timing;
#[cfg(doc)]
use crate::result::MAX_WAIT_SHARE;
use thiserror::Error;

/// The prefix of every line of the driver's timing report.
pub const TIMING_PREFIX: &str = "scaletune-timing: ";

/// Most repeats one run may ask for (each is a line of the captured stdout).
pub const MAX_REPEAT: u32 = 1000;

/// Most calls per repeat the driver will calibrate to.
pub const MAX_NUMBER: u32 = 1_000_000_000;

/// A timing protocol the driver cannot follow, or a timing report that cannot be read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TimingError {
    /// The protocol is out of range (no repeats, zero calls, too many repeats).
    #[error("bad timing protocol: {0}")]
    BadProtocol(String),
    /// The driver's report is missing, truncated or malformed.
    #[error("bad timing report: {0}")]
    BadReport(String),
}

/// Checks that the driver can follow `p`.
pub fn check_protocol(p: &TimingProtocol) -> Result<(), TimingError> {
    if p.repeat == 0 || p.repeat > MAX_REPEAT {
        return Err(TimingError::BadProtocol(format!("repeat must be in 1..={MAX_REPEAT}, not {}", p.repeat)));
    }
    if p.number == 0 || p.number > MAX_NUMBER {
        return Err(TimingError::BadProtocol(format!("number must be in 1..={MAX_NUMBER}, not {}", p.number)));
    }
    if p.warmup > MAX_NUMBER || p.min_repeat_ms > 3_600_000 {
        return Err(TimingError::BadProtocol("warmup or min_repeat_ms is absurdly large".into()));
    }
    Ok(())
}

/// Checks that `p.pin_core`, if set, is a CPU this process may run on (for
/// runs on this machine, and by an agent for its own CPUs).
pub fn check_pin_core_here(p: &TimingProtocol) -> Result<(), TimingError> {
    use nix::sched::{sched_getaffinity, CpuSet};
    let Some(core) = p.pin_core else { return Ok(()) };
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map_err(|e| TimingError::BadProtocol(format!("cannot read this process's CPUs: {e}")))?;
    let allowed: Vec<usize> = (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect();
    if allowed.contains(&(core as usize)) {
        return Ok(());
    }
    let list = allowed.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    Err(TimingError::BadProtocol(format!("cannot pin to CPU {core}: this process may run on CPUs {list}")))
}

/// The driver options that run `p` after the correctness call.
pub fn driver_args(p: &TimingProtocol) -> Result<Vec<String>, TimingError> {
    check_protocol(p)?;
    let mut args = vec![
        "--warmup".to_string(),
        p.warmup.to_string(),
        "--number".to_string(),
        p.number.to_string(),
        "--repeat".to_string(),
        p.repeat.to_string(),
        "--min-repeat-ms".to_string(),
        p.min_repeat_ms.to_string(),
    ];
    if p.flush_cache {
        args.push("--flush-cache".to_string());
    }
    if let Some(core) = p.pin_core {
        args.push("--pin-core".to_string());
        args.push(core.to_string());
    }
    Ok(args)
}

/// Reads the timing report from the driver's stdout; `p` is the protocol it
/// ran (the number of repeats must match).
pub fn parse_timing(stdout: &str, p: &TimingProtocol) -> Result<Timing, TimingError> {
    let bad = |m: String| TimingError::BadReport(m);
    let mut header: Option<(u32, u32)> = None;
    let mut repeats: Vec<f64> = Vec::new();
    let mut waits: Vec<Option<f64>> = Vec::new();
    let mut discarded: Option<u32> = None;
    let mut ended = false;
    let seconds = |v: &str, line: &str| -> Result<f64, TimingError> {
        let s: f64 = v.parse().map_err(|_| bad(format!("not a number of seconds: `{line}`")))?;
        if !s.is_finite() || s < 0.0 {
            return Err(bad(format!("impossible time: `{line}`")));
        }
        Ok(s)
    };
    for line in stdout.lines() {
        let Some(rest) = line.trim_end().strip_prefix(TIMING_PREFIX) else { continue };
        if ended {
            return Err(bad(format!("line after the end of the report: `{line}`")));
        }
        if rest == "end" {
            ended = true;
        } else if let Some(v) = rest.strip_prefix("repeat_s=") {
            let (time, waited) = match v.split_once(" waited_s=") {
                Some((t, w)) => (t, Some(seconds(w, line)?)),
                None => (v, None),
            };
            repeats.push(seconds(time, line)?);
            waits.push(waited);
        } else if let Some(v) = rest.strip_prefix("discarded=") {
            let k: u32 = v.parse().map_err(|_| bad(format!("not a count: `{line}`")))?;
            if discarded.replace(k).is_some() {
                return Err(bad("two counts of discarded repeats".into()));
            }
        } else if let Some(fields) = rest.strip_prefix("number=") {
            let (number, repeat) = fields
                .split_once(" repeat=")
                .and_then(|(n, r)| Some((n.parse::<u32>().ok()?, r.parse::<u32>().ok()?)))
                .ok_or_else(|| bad(format!("malformed header: `{line}`")))?;
            if header.replace((number, repeat)).is_some() || !repeats.is_empty() {
                return Err(bad("the header is not the first line of the report".into()));
            }
        } else {
            return Err(bad(format!("unknown line: `{line}`")));
        }
    }
    let Some((number, repeat)) = header else {
        return Err(bad("the driver printed no timing report".into()));
    };
    if !ended {
        return Err(bad("the report is truncated (no end line)".into()));
    }
    if repeat != p.repeat || repeats.len() != p.repeat as usize {
        return Err(bad(format!("{} repeats reported, {} requested", repeats.len(), p.repeat)));
    }
    if number < p.number {
        return Err(bad(format!("{number} calls per repeat, fewer than the {} requested", p.number)));
    }
    let discarded = discarded.unwrap_or(0);
    if discarded > repeat {
        return Err(bad(format!("{discarded} repeats discarded, more than the {repeat} retries allowed")));
    }
    let waited: Option<Vec<f64>> = waits.iter().copied().collect();
    let waited = match waited {
        Some(w) => w,
        None if waits.iter().all(Option::is_none) => Vec::new(),
        None => return Err(bad("some repeats report their wait for a CPU and others do not".into())),
    };
    Ok(Timing::from_repeats(repeats, number).with_waits(waited, discarded))
}

/// C helpers of the timing mode, pasted into the generated driver (every
/// identifier uses the driver's reserved `scaletune_drv_` prefix).
pub(crate) const DRIVER_HELPERS: &str = include_str!("driver_timing.c");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::MAX_WAIT_SHARE;

    fn protocol(repeat: u32) -> TimingProtocol {
        TimingProtocol { repeat, ..TimingProtocol::default() }
    }

    #[test]
    fn protocol_becomes_driver_options() {
        let p = TimingProtocol {
            warmup: 3,
            number: 5,
            repeat: 7,
            min_repeat_ms: 20,
            flush_cache: true,
            pin_core: Some(1),
            threads: None,
        };
        let args = driver_args(&p).expect("valid");
        assert_eq!(args.join(" "), "--warmup 3 --number 5 --repeat 7 --min-repeat-ms 20 --flush-cache --pin-core 1");
        assert!(driver_args(&protocol(0)).is_err());
        assert!(driver_args(&protocol(MAX_REPEAT + 1)).is_err());
        assert!(driver_args(&TimingProtocol { number: 0, ..TimingProtocol::default() }).is_err());
    }

    #[test]
    fn report_is_parsed() {
        let out = "scaletune-driver: vl_bits=256\n\
                   scaletune-timing: number=40 repeat=3\n\
                   scaletune-timing: repeat_s=2.000000000e-06\n\
                   scaletune-timing: repeat_s=1.000000000e-06\n\
                   scaletune-timing: repeat_s=3.000000000e-06\n\
                   scaletune-timing: end\n";
        let t = parse_timing(out, &protocol(3)).expect("parses");
        assert_eq!(t.number, 40);
        assert_eq!(t.repeats_s, vec![2e-6, 1e-6, 3e-6]);
        assert_eq!(t.median_s, 2e-6);
        assert!((t.spread - 1.0).abs() < 1e-12, "{}", t.spread);
        // A driver built before waits were measured.
        assert_eq!((t.waited_s.len(), t.discarded, t.worst_wait_share()), (0, 0, None));
    }

    #[test]
    fn waits_for_a_cpu_and_repeats_timed_again_are_parsed() {
        let out = "scaletune-timing: number=40 repeat=3\n\
                   scaletune-timing: repeat_s=2.000000000e-06 waited_s=0.000000000e+00\n\
                   scaletune-timing: repeat_s=1.000000000e-06 waited_s=1.000000000e-08\n\
                   scaletune-timing: repeat_s=3.000000000e-06 waited_s=1.500000000e-06\n\
                   scaletune-timing: discarded=3\n\
                   scaletune-timing: end\n";
        let t = parse_timing(out, &protocol(3)).expect("parses");
        assert_eq!(t.repeats_s, vec![2e-6, 1e-6, 3e-6]);
        assert_eq!(t.waited_s, vec![0.0, 1e-8, 1.5e-6]);
        assert_eq!(t.discarded, 3);
        assert_eq!(t.worst_wait_share(), Some(0.5), "the third repeat waited half its time");
        assert!(t.disturbed(), "out of retries, a disturbed repeat was kept");
        let calm = out.replace("waited_s=1.500000000e-06", "waited_s=3.000000000e-08");
        let t = parse_timing(&calm, &protocol(3)).expect("parses");
        assert!(!t.disturbed(), "1 % is within {MAX_WAIT_SHARE}: {:?}", t.worst_wait_share());
    }

    /// The driver's threshold is the one the rest of the crate reads.
    #[test]
    fn the_driver_times_again_above_the_documented_share() {
        let permille = (MAX_WAIT_SHARE * 1000.0).round() as u32;
        let line = format!("#define SCALETUNE_DRV_MAX_WAIT_PERMILLE {permille}\n");
        assert_eq!(DRIVER_HELPERS.matches(&line).count(), 1, "{line}");
    }

    #[test]
    fn broken_reports_are_errors() {
        let p = protocol(2);
        let header = "scaletune-timing: number=1 repeat=2\n";
        let r = "scaletune-timing: repeat_s=1e-6\n";
        let end = "scaletune-timing: end\n";
        for (text, why) in [
            (String::new(), "no timing report"),
            (format!("{header}{r}{r}"), "truncated"),
            (format!("{header}{r}{end}"), "1 repeats reported, 2 requested"),
            (format!("{header}{r}scaletune-timing: repeat_s=x\n{end}"), "not a number"),
            (format!("{header}{r}scaletune-timing: repeat_s=-1\n{end}"), "impossible"),
            (format!("{r}{header}{r}{end}"), "not the first line"),
            (format!("{header}{r}{r}{end}{r}"), "after the end"),
            (format!("scaletune-timing: number=0 repeat=2\n{r}{r}{end}"), "fewer than"),
            (format!("{header}scaletune-timing: what\n{end}"), "unknown line"),
            (format!("{header}{r}scaletune-timing: repeat_s=1e-6 waited_s=2e-7\n{end}"), "others do not"),
            (format!("{header}{r}scaletune-timing: repeat_s=1e-6 waited_s=-1\n{end}"), "impossible"),
            (format!("{header}{r}{r}scaletune-timing: discarded=3\n{end}"), "more than the 2 retries"),
            (format!("{header}{r}{r}scaletune-timing: discarded=x\n{end}"), "not a count"),
            (
                format!("{header}{r}{r}scaletune-timing: discarded=1\nscaletune-timing: discarded=1\n{end}"),
                "two counts",
            ),
        ] {
            let e = parse_timing(&text, &p).expect_err(why);
            assert!(e.to_string().contains(why), "{e} / {why}");
        }
    }
}
