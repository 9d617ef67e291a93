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
//! itself to that CPU before reading its inputs. The report, printed on
//! stdout once all repeats are done (no I/O between repeats):
//!
//! ```text
//! scaletune-timing: number=N repeat=R
//! scaletune-timing: repeat_s=1.234567890e-06     (R lines, seconds per call)
//! scaletune-timing: end
//! ```
//!
//! [`parse_timing`] turns that report into a [`Timing`].

use crate::protocol::TimingProtocol;
use crate::result::Timing;
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
    let mut ended = false;
    for line in stdout.lines() {
        let Some(rest) = line.trim_end().strip_prefix(TIMING_PREFIX) else { continue };
        if ended {
            return Err(bad(format!("line after the end of the report: `{line}`")));
        }
        if rest == "end" {
            ended = true;
        } else if let Some(v) = rest.strip_prefix("repeat_s=") {
            let s: f64 = v.parse().map_err(|_| bad(format!("not a number of seconds: `{line}`")))?;
            if !s.is_finite() || s < 0.0 {
                return Err(bad(format!("impossible time: `{line}`")));
            }
            repeats.push(s);
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
    Ok(Timing::from_repeats(repeats, number))
}

/// C helpers of the timing mode, pasted into the generated driver (every
/// identifier uses the driver's reserved `scaletune_drv_` prefix).
pub(crate) const DRIVER_HELPERS: &str = r#"
#define SCALETUNE_DRV_MAX_COUNT 1000000000L
#define SCALETUNE_DRV_MAX_REPEAT 1000L

struct scaletune_drv_timing {
    long warmup;
    long number;
    long repeat;
    long min_repeat_ms;
    int flush_cache;
    long pin_core;
};

static int scaletune_drv_parse_count(const char *s, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Parses the timing options; 0 on success, -1 (after a message on stderr) on a bad option. */
static int scaletune_drv_parse_timing(int n, char **opts, struct scaletune_drv_timing *t) {
    t->warmup = 0;
    t->number = 1;
    t->repeat = 0;
    t->min_repeat_ms = 0;
    t->flush_cache = 0;
    t->pin_core = -1;
    for (int i = 0; i < n; i++) {
        const char *o = opts[i];
        long *slot = NULL;
        long max = SCALETUNE_DRV_MAX_COUNT;
        if (strcmp(o, "--flush-cache") == 0) {
            t->flush_cache = 1;
            continue;
        } else if (strcmp(o, "--warmup") == 0) {
            slot = &t->warmup;
        } else if (strcmp(o, "--number") == 0) {
            slot = &t->number;
        } else if (strcmp(o, "--repeat") == 0) {
            slot = &t->repeat;
            max = SCALETUNE_DRV_MAX_REPEAT;
        } else if (strcmp(o, "--min-repeat-ms") == 0) {
            slot = &t->min_repeat_ms;
        } else if (strcmp(o, "--pin-core") == 0) {
            slot = &t->pin_core;
            max = 1L << 20;
        } else {
            fprintf(stderr, "scaletune-driver: unknown option `%s`\n", o);
            return -1;
        }
        if (i + 1 >= n || scaletune_drv_parse_count(opts[i + 1], max, slot) != 0) {
            fprintf(stderr, "scaletune-driver: option %s needs a count from 0 to %ld\n", o, max);
            return -1;
        }
        i++;
    }
    if (t->number < 1) {
        fprintf(stderr, "scaletune-driver: --number must be at least 1\n");
        return -1;
    }
    return 0;
}

/* Pins the process to one CPU; 0 on success, -1 (after a message on stderr) on failure. */
static int scaletune_drv_pin(long core) {
#if defined(__linux__)
    cpu_set_t set;
    if (core >= CPU_SETSIZE) {
        fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: beyond CPU_SETSIZE\n", core);
        return -1;
    }
    CPU_ZERO(&set);
    CPU_SET((int)core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: %s\n", core, strerror(errno));
        return -1;
    }
    return 0;
#else
    fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: not supported on this system\n", core);
    return -1;
#endif
}

static int64_t scaletune_drv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* Bytes written to evict the caches: 64 MiB, or twice the L3 if that is larger. */
static size_t scaletune_drv_flush_bytes(void) {
    size_t n = (size_t)64 << 20;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0 && (size_t)llc * 2 > n) {
        n = (size_t)llc * 2;
    }
#endif
    return n;
}

static void scaletune_drv_flush(unsigned char *buf, size_t n, long round) {
    memset(buf, (int)(round & 0x7f) + 1, n);
    /* The buffer escapes and memory is clobbered: the stores cannot be elided. */
    __asm__ volatile("" : : "r"(buf) : "memory");
}

/* Runs `number` calls and returns the elapsed nanoseconds. */
static int64_t scaletune_drv_timed(void (*call)(void), long number) {
    int64_t t0 = scaletune_drv_now_ns();
    for (long c = 0; c < number; c++) {
        call();
    }
    return scaletune_drv_now_ns() - t0;
}

/* Warm-up, calibration and the timed repeats; prints the report. 0 on success, -1 on allocation failure. */
static int scaletune_drv_time_calls(void (*call)(void), const struct scaletune_drv_timing *t) {
    double *repeats = (double *)malloc(sizeof(double) * (size_t)t->repeat);
    unsigned char *flush_buf = NULL;
    size_t flush_bytes = 0;
    if (!repeats) {
        fprintf(stderr, "scaletune-driver: cannot allocate the timing table\n");
        return -1;
    }
    if (t->flush_cache) {
        flush_bytes = scaletune_drv_flush_bytes();
        flush_buf = (unsigned char *)malloc(flush_bytes);
        if (!flush_buf) {
            fprintf(stderr, "scaletune-driver: cannot allocate a %zu-byte cache flush buffer\n", flush_bytes);
            return -1;
        }
    }
    for (long w = 0; w < t->warmup; w++) {
        call();
    }
    long number = t->number;
    if (t->min_repeat_ms > 0) {
        int64_t want_ns = (int64_t)t->min_repeat_ms * 1000000;
        for (;;) {
            int64_t elapsed = scaletune_drv_timed(call, number);
            if (elapsed * 8 >= want_ns) {
                /* Near the target: keep the fastest of three measurements, so
                   that one preemption cannot end the calibration early. */
                for (int again = 0; again < 2; again++) {
                    int64_t e = scaletune_drv_timed(call, number);
                    if (e < elapsed) elapsed = e;
                }
            }
            if (elapsed >= want_ns) {
                break;
            }
            if (elapsed * 8 >= want_ns || number > SCALETUNE_DRV_MAX_COUNT / 2) {
                double scaled = (double)number * (double)want_ns * 1.05 / (double)(elapsed > 0 ? elapsed : 1);
                number = scaled >= (double)SCALETUNE_DRV_MAX_COUNT ? SCALETUNE_DRV_MAX_COUNT : (long)scaled + 1;
                break;
            }
            number *= 2;
        }
    }
    for (long r = 0; r < t->repeat; r++) {
        if (flush_buf) {
            scaletune_drv_flush(flush_buf, flush_bytes, r);
        }
        repeats[r] = (double)scaletune_drv_timed(call, number) * 1e-9 / (double)number;
    }
    printf("scaletune-timing: number=%ld repeat=%ld\n", number, t->repeat);
    for (long r = 0; r < t->repeat; r++) {
        printf("scaletune-timing: repeat_s=%.9e\n", repeats[r]);
    }
    printf("scaletune-timing: end\n");
    fflush(stdout);
    free(flush_buf);
    free(repeats);
    return 0;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(repeat: u32) -> TimingProtocol {
        TimingProtocol { repeat, ..TimingProtocol::default() }
    }

    #[test]
    fn protocol_becomes_driver_options() {
        let p =
            TimingProtocol { warmup: 3, number: 5, repeat: 7, min_repeat_ms: 20, flush_cache: true, pin_core: Some(1) };
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
        ] {
            let e = parse_timing(&text, &p).expect_err(why);
            assert!(e.to_string().contains(why), "{e} / {why}");
        }
    }
}
