//! The correctness harness: link a kernel object with a generated driver, prepare its runs, and judge them against the reference.
//!
//! The harness links and judges; runners execute. [`Harness::build`]
//! prepares everything once per kernel: the deterministic arguments and
//! the reference values and error bounds (computed once per workload and
//! seed, [`expected::expected`]), the input file, the driver source
//! ([`driver_source`]) and the linked executable. [`Harness::prepare`]
//! gives the command of one run at one vector length (natively for the host
//! target, under the target's QEMU user-mode command otherwise); a runner
//! executes it ([`crate::runner::exec`]) and the harness judges what
//! happened into a [`RunCheck`]: a failed run is data, never an `Err` or a
//! panic (a remote agent's run is judged by [`Harness::judge_remote`]).
//! [`crate::check`] builds, runs and judges every requested vector length. With the driver
//! options of [`timing`] (passed through [`RunOptions::driver_args`]), the
//! same run also times the kernel after its checked first call.
//!
//! Work directory layout (a fresh temporary directory, removed when the
//! [`Harness`] is dropped, unless [`CheckRequest::work_dir`] names one to keep):
//! `kernel.o`, `driver.c`, `driver` (the executable), `input.bin` (all
//! argument tensors concatenated, little-endian) and, during a run,
//! `out-VL-N.bin` (the output tensors, removed after reading). QEMU is started
//! with the work directory as its current directory, so a guest core dump
//! (if core limits allow one) lands there too.

mod build;
mod check;
mod driver;
pub mod expected;
mod interpret;
mod link;
mod remote_judge;
pub mod timing;

pub use driver::driver_source;
pub use remote_judge::{ExternalRun, ProcessEnding};
pub use timing::{driver_args as timing_args, parse_timing, TimingError};

use crate::process::{signal_name, Ending, RawRun};
use crate::result::Status;
pub(crate) use build::LinkCache;
use build::{build_executable, write_file, INPUT_FILE};
use driver::EXIT_UNSTABLE_OUTPUTS;
pub use interpret::interpret;
pub use link::LinkExtras;
use scaletune_codegen::target::{Target, TargetError};
use scaletune_codegen::vprog::Program;
use scaletune_space::reference::{Comparison, ReferenceError};
use scaletune_space::workload::{Role, Workload};
use scaletune_space::TensorId;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// How the message of a run judged by the interpreter instead of by its
/// outputs under QEMU begins ([`Harness::with_program`]).
pub const JUDGED_BY_INTERPRETER: &str = "judged by the interpreter:";

/// Everything needed to check one compiled kernel.
#[derive(Clone, Debug)]
pub struct CheckRequest<'a> {
    /// The workload the kernel computes (concrete shapes and scalar values).
    pub workload: &'a Workload,
    /// The target the object was compiled for.
    pub target: &'a Target,
    /// The kernel's relocatable object file.
    pub object: &'a [u8],
    /// The kernel's symbol name (a C identifier).
    pub symbol: &'a str,
    /// Vector lengths in bits to run at; empty means `target.default_vl_bits`.
    pub vl_bits: Vec<u32>,
    /// Seed of the argument contents (see `scaletune_space::data::make_args`).
    pub seed: u64,
    /// Wall-clock limit of one run; the process is killed when it is exceeded.
    pub timeout: Duration,
    /// A directory to build and run in, kept afterwards; `None` uses a
    /// temporary directory removed with the [`Harness`].
    pub work_dir: Option<&'a Path>,
}

/// Errors that prevent checking at all (a failed *run* is a [`RunCheck`] instead).
#[derive(Debug, Error)]
pub enum HarnessError {
    /// A requested vector length the target cannot run at.
    #[error("{0}")]
    BadVectorLength(TargetError),
    /// The request asks for something the kernel ABI or the driver cannot do.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The reference evaluation of the workload failed.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// Compiling the driver or linking it with the kernel failed.
    #[error("building the harness failed ({status}): {command}\n{stderr}")]
    Build {
        /// The compiler command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error.
        stderr: String,
    },
    /// A tool (the compiler) could not be started.
    #[error("cannot run `{command}`: {error}")]
    Tool {
        /// The command line.
        command: String,
        /// Why it could not start (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
    /// A file-system operation failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
}

/// The outcome of running a kernel at one vector length.
#[derive(Clone, Debug)]
pub struct RunCheck {
    /// The vector length requested, in bits.
    pub vl_bits: u32,
    /// How the run ended: `ok`, `wrong_result`, `run_error` (nonzero exit,
    /// a signal named in the message, a write outside the outputs, a process
    /// that could not start, or a vector length other than the one
    /// requested) or `timeout` (the run was killed).
    pub status: Status,
    /// One comparison per output tensor (empty unless the run produced outputs).
    pub comparisons: Vec<Comparison>,
    /// Largest absolute error over all outputs (NaN if nothing was compared;
    /// infinite if some element is NaN where a number was expected).
    pub max_abs_err: f64,
    /// A human-readable account: the first mismatch, the signal, stderr, ...
    pub message: String,
    /// True if the run was under QEMU.
    pub emulated: bool,
    /// Wall time of the process (meaningless for performance under QEMU).
    pub wall_time: Duration,
}

impl RunCheck {
    /// True if the status is [`Status::Ok`].
    pub fn passed(&self) -> bool {
        self.status == Status::Ok
    }
}

/// Extra arguments and limits for one run (see [`Harness::prepare`]).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Inserted between the QEMU command and the executable (ignored natively).
    pub qemu_args: Vec<String>,
    /// Appended after the driver's input and output paths.
    pub driver_args: Vec<String>,
    /// Overrides the harness's timeout for this run.
    pub timeout: Option<Duration>,
    /// Environment variables set for the run (QEMU user mode passes them on to the guest).
    pub env: Vec<(String, String)>,
}

/// What a run printed.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    /// Standard output of the driver (or of QEMU).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// One run of a harness's driver, ready for a runner to execute (see
/// [`Harness::prepare`] and [`crate::runner::exec`]).
#[derive(Debug)]
pub struct PreparedRun {
    command: Command,
    vl_bits: u32,
    output: PathBuf,
    how: String,
    timeout: Duration,
    emulated: bool,
}

/// What judging a run needs once its command has been taken to execute.
#[derive(Debug)]
pub(crate) struct PendingRun {
    vl_bits: u32,
    output: PathBuf,
    how: String,
    timeout: Duration,
    /// Run under QEMU.
    emulated: bool,
}

impl PreparedRun {
    /// The command to execute, its timeout, and what judging it needs.
    pub(crate) fn split(self) -> (Command, Duration, PendingRun) {
        let pending = PendingRun {
            vl_bits: self.vl_bits,
            output: self.output,
            how: self.how,
            timeout: self.timeout,
            emulated: self.emulated,
        };
        (self.command, self.timeout, pending)
    }

    /// The vector length of the run.
    pub fn vl_bits(&self) -> u32 {
        self.vl_bits
    }
}

/// The directory a harness lives in.
#[derive(Debug)]
enum WorkDir {
    /// Removed on drop (and on interrupt).
    Temp(crate::cleanup::ScratchDir),
    /// Given by the caller and kept.
    Kept(PathBuf),
}

impl WorkDir {
    fn path(&self) -> &Path {
        match self {
            WorkDir::Temp(t) => t.path(),
            WorkDir::Kept(p) => p,
        }
    }
}

/// A built driver executable plus the data to check it, reusable for several vector lengths.
#[derive(Debug)]
pub struct Harness {
    workload: Workload,
    target: Target,
    vl_bits: Vec<u32>,
    seed: u64,
    timeout: Duration,
    dir: WorkDir,
    executable: PathBuf,
    input: PathBuf,
    outputs: Vec<TensorId>,
    expected: std::sync::Arc<expected::Expected>,
    n_runs: AtomicU64,
    executable_from_cache: bool,
    link: LinkExtras,
    /// The kernel's vector program, where a run under a QEMU with a known
    /// defect in what the kernel uses is judged by interpreting it
    /// ([`Harness::with_program`]).
    program: Option<Arc<Program>>,
}

impl Harness {
    /// Validates the request, computes the reference, writes the input file
    /// and builds the executable.
    pub fn build(req: &CheckRequest) -> Result<Harness, HarnessError> {
        Harness::build_linking(req, None, &LinkExtras::default())
    }

    /// Like [`Harness::build`] for a kernel object that needs more libraries
    /// than the target's (a foreign kernel, e.g. one calling OpenBLAS):
    /// `link` is linked after the target's `libs`, and kept with the harness
    /// so that a runner linking it again for another vector length does too.
    pub fn build_with_link(req: &CheckRequest, link: &LinkExtras) -> Result<Harness, HarnessError> {
        link.validate()?;
        Harness::build_linking(req, None, link)
    }

    /// Like [`Harness::build`], taking the executable from the artifact cache
    /// when it holds it, and storing it there after linking otherwise.
    pub(crate) fn build_cached(req: &CheckRequest, cache: LinkCache<'_>) -> Result<Harness, HarnessError> {
        Harness::build_linking(req, Some(cache), &LinkExtras::default())
    }

    fn build_linking(
        req: &CheckRequest,
        cache: Option<LinkCache<'_>>,
        link: &LinkExtras,
    ) -> Result<Harness, HarnessError> {
        let vl_bits = if req.vl_bits.is_empty() { req.target.default_vl_bits.clone() } else { req.vl_bits.clone() };
        for &vl in &vl_bits {
            req.target.vscale_for_vl(vl).map_err(HarnessError::BadVectorLength)?;
        }
        if matches!(&req.target.qemu, Some(q) if q.is_empty()) {
            return Err(HarnessError::Unsupported(format!("target `{}` has an empty qemu command", req.target.name)));
        }
        let source = driver_source(req.workload, req.symbol)?;
        let expected = expected::expected(req.workload, req.seed)?;
        let dir = match req.work_dir {
            Some(p) => {
                std::fs::create_dir_all(p)
                    .map_err(|source| HarnessError::Io { what: format!("creating {}", p.display()), error: source })?;
                // Absolute, because the driver runs with the work dir as its current directory.
                let abs = std::fs::canonicalize(p)
                    .map_err(|source| HarnessError::Io { what: format!("resolving {}", p.display()), error: source })?;
                WorkDir::Kept(abs)
            }
            None => {
                WorkDir::Temp(crate::cleanup::ScratchDir::new("scaletune-harness-").map_err(|source| {
                    HarnessError::Io { what: "creating a temporary directory".into(), error: source }
                })?)
            }
        };
        let input = dir.path().join(INPUT_FILE);
        let input_bytes: Vec<u8> = expected.args.iter().flat_map(|t| t.to_le_bytes()).collect();
        write_file(&input, &input_bytes)?;
        let (executable, executable_from_cache) =
            build_executable(dir.path(), req.target, req.object, &source, cache, link)?;
        let outputs =
            req.workload.arg_tensors().into_iter().filter(|id| req.workload.tensor(*id).role == Role::Output).collect();
        Ok(Harness {
            workload: req.workload.clone(),
            target: req.target.clone(),
            vl_bits,
            seed: req.seed,
            timeout: req.timeout,
            dir,
            executable,
            input,
            outputs,
            expected,
            n_runs: AtomicU64::new(0),
            executable_from_cache,
            link: link.clone(),
            program: None,
        })
    }

    /// Keeps `program`, the vector program the kernel object was compiled
    /// from, for the runs it cannot be judged by without it: where the
    /// kernel uses an instruction the target's QEMU is known (probed) to
    /// compute wrong, a run whose outputs are wrong under QEMU is judged by
    /// interpreting `program` at the run's vector length instead (its
    /// counts stay QEMU's). Only the 32-bit `smopa` has such a defect
    /// ([`crate::emulation::defects`]).
    pub fn with_program(mut self, program: Arc<Program>) -> Harness {
        self.program = Some(program);
        self
    }

    /// The program given to [`Harness::with_program`].
    pub fn program(&self) -> Option<&Arc<Program>> {
        self.program.as_ref()
    }

    /// True if the executable came from the artifact cache instead of being linked.
    pub fn executable_from_cache(&self) -> bool {
        self.executable_from_cache
    }

    /// What is linked besides the target's libraries (empty for scaletune's own kernels).
    pub fn link_extras(&self) -> &LinkExtras {
        &self.link
    }

    /// The target the kernel was compiled for.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The workload the kernel computes.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The seed the inputs (and so the reference) were made from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The timeout of one run unless [`RunOptions::timeout`] overrides it.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The vector lengths of the request (or the target's defaults).
    pub fn vl_bits(&self) -> &[u32] {
        &self.vl_bits
    }

    /// The directory holding the executable and its input.
    pub fn work_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The linked driver executable.
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// Everything one run of the driver at `vl_bits` needs, for a runner to
    /// execute: the command (natively, or under the target's QEMU command
    /// with `opts.qemu_args`), where the driver writes its outputs, and the
    /// timeout. A vector length the target cannot run at, or a target with
    /// an empty QEMU command, is the run's verdict already (`Err`).
    pub fn prepare(&self, vl_bits: u32, opts: &RunOptions) -> Result<PreparedRun, RunCheck> {
        let mut refused = RunCheck {
            vl_bits,
            status: Status::RunError,
            comparisons: Vec::new(),
            max_abs_err: f64::NAN,
            message: String::new(),
            emulated: !self.target.is_native(),
            wall_time: Duration::ZERO,
        };
        if let Err(e) = self.target.vscale_for_vl(vl_bits) {
            refused.message = e.to_string();
            return Err(refused);
        }
        let run_idx = self.n_runs.fetch_add(1, Ordering::Relaxed);
        let output = self.dir.path().join(format!("out-{vl_bits}-{run_idx}.bin"));
        let _ = std::fs::remove_file(&output);
        let emulated = self.target.qemu_command(vl_bits).is_some();
        let (mut command, how) = match self.target.qemu_command(vl_bits) {
            Some(words) => match words.split_first() {
                Some((qemu, qemu_args)) => {
                    let mut cmd = Command::new(qemu);
                    cmd.args(qemu_args).args(&opts.qemu_args).arg(&self.executable);
                    (cmd, format!("under {} at VL {vl_bits}", build::command_line(&words)))
                }
                None => {
                    refused.message = format!("target `{}` has an empty qemu command", self.target.name);
                    return Err(refused);
                }
            },
            None => (Command::new(&self.executable), format!("natively at VL {vl_bits}")),
        };
        command.arg(&self.input).arg(&output).args(&opts.driver_args).current_dir(self.dir.path());
        command.envs(opts.env.iter().map(|(k, v)| (k, v)));
        let timeout = opts.timeout.unwrap_or(self.timeout);
        Ok(PreparedRun { command, vl_bits, output, how, timeout, emulated })
    }

    /// Judges a finished run of `prepared` (see [`Harness::prepare`]): the
    /// verdict, and what the run printed.
    pub(crate) fn judge_run(&self, prepared: &PendingRun, raw: &RawRun) -> (RunCheck, RunOutput) {
        let mut result = RunCheck {
            vl_bits: prepared.vl_bits,
            status: Status::RunError,
            comparisons: Vec::new(),
            max_abs_err: f64::NAN,
            message: String::new(),
            emulated: !self.target.is_native(),
            wall_time: raw.wall_time,
        };
        self.judge(raw, &prepared.output, &prepared.how, prepared.timeout, &mut result);
        let _ = std::fs::remove_file(&prepared.output);
        if result.status == Status::WrongResult && prepared.emulated {
            self.judge_past_qemu_defects(&mut result);
        }
        (result, RunOutput { stdout: raw.stdout.clone(), stderr: raw.stderr.clone() })
    }

    /// Judges a run whose outputs QEMU got wrong by interpreting the
    /// kernel's program instead, where the kernel uses an instruction this
    /// QEMU is probed to compute wrong ([`Harness::with_program`]); leaves
    /// `result` alone otherwise, or when the probe cannot tell.
    fn judge_past_qemu_defects(&self, result: &mut RunCheck) {
        let Some(program) = self.program.as_deref().filter(|p| p.uses_integer_outer_products()) else { return };
        let vl_bits = result.vl_bits;
        match crate::emulation::defects::smopa_i32_is_wrong(&self.target, vl_bits) {
            Ok(true) => {}
            Ok(false) => return,
            Err(why) => {
                result.message.push_str(&format!("; whether this QEMU computes `smopa` right is unknown: {why}"));
                return;
            }
        }
        let Ok(vscale) = self.target.vscale_for_vl(vl_bits) else { return };
        let mut by_interpreter =
            interpret(&self.workload, program, &self.expected.args, &self.expected.reference, vscale);
        let qemu_said = std::mem::take(&mut result.message);
        let verdict = match by_interpreter.status {
            Status::Ok => format!(
                "the interpreter's run of the kernel's program at vscale {vscale} matches the reference (max abs \
                 error {:.3e})",
                by_interpreter.max_abs_err
            ),
            _ => format!("the interpreter's run of the kernel's program fails too: {}", by_interpreter.message),
        };
        result.status = by_interpreter.status;
        result.comparisons = std::mem::take(&mut by_interpreter.comparisons);
        result.max_abs_err = by_interpreter.max_abs_err;
        result.message = format!(
            "{JUDGED_BY_INTERPRETER} this QEMU computes the 32-bit `smopa` wrong (QEMU issue 2083, probed), and \
             the kernel uses it; {verdict}. QEMU's outputs: {qemu_said}"
        );
    }

    /// Fills status, comparisons and message from a finished run.
    fn judge(&self, raw: &RawRun, output: &Path, how: &str, timeout: Duration, result: &mut RunCheck) {
        let fail = |result: &mut RunCheck, status: Status, what: String| {
            result.status = status;
            result.message = format!("{what} ({how}){}", stderr_excerpt(&raw.stderr));
        };
        // Outputs that the timed calls changed are judged after the first call's outputs.
        let mut unstable = false;
        let failed = !matches!(raw.ending, Ending::Exited(0) | Ending::Exited(EXIT_UNSTABLE_OUTPUTS));
        if failed && !self.target.is_native() && emulator_assertion(&raw.stderr).is_some() {
            let what = "QEMU aborted on an assertion of its own (in stderr): a defect of the emulator, not of the \
                        candidate, which is left unmeasured; measure it on hardware"
                .to_string();
            return fail(result, Status::Unmeasured, what);
        }
        match &raw.ending {
            Ending::Exited(0) => {}
            Ending::Exited(EXIT_UNSTABLE_OUTPUTS) => unstable = true,
            Ending::Exited(code) => {
                return fail(result, Status::RunError, format!("driver exited with status {code}"));
            }
            Ending::Signaled(sig) => {
                return fail(result, Status::RunError, format!("driver killed by {}", signal_name(*sig)));
            }
            Ending::TimedOut => {
                let what = format!("timed out after {:.1} s", timeout.as_secs_f64());
                return fail(result, Status::Timeout, what);
            }
            Ending::Failed(why) => return fail(result, Status::RunError, why.clone()),
            // No fault of the candidate: the run was stopped from outside.
            Ending::Cancelled => return fail(result, Status::Unmeasured, "the run was cancelled".into()),
        }
        if self.target.caps.scalable {
            match check::reported_vl_bits(&raw.stdout) {
                Some(actual) if actual == result.vl_bits => {}
                Some(actual) => {
                    let what = format!("ran at a vector length of {actual} bits, not the {} requested", result.vl_bits);
                    return fail(result, Status::RunError, what);
                }
                None => {
                    let what = "the driver did not report its vector length".to_string();
                    return fail(result, Status::RunError, what);
                }
            }
        }
        let bytes = match std::fs::read(output) {
            Ok(b) => b,
            Err(e) => return fail(result, Status::RunError, format!("cannot read the output file: {e}")),
        };
        match check::check_outputs(&self.workload, &self.outputs, &bytes, &self.expected.reference) {
            Err(why) => fail(result, Status::RunError, why),
            Ok(c) => {
                result.comparisons = c.comparisons;
                result.max_abs_err = c.max_abs_err;
                if c.failures.is_empty() && unstable {
                    let what = "the first call's outputs are right, but the timed calls changed them".to_string();
                    fail(result, Status::RunError, what);
                } else if c.failures.is_empty() {
                    result.status = Status::Ok;
                    let n: usize = self.outputs.iter().map(|id| self.workload.tensor(*id).len()).sum();
                    result.message = format!(
                        "all {n} output elements within bounds (max abs error {:.3e}, {how})",
                        result.max_abs_err
                    );
                } else {
                    result.status = Status::WrongResult;
                    result.message = format!("{} ({how})", c.failures.join("; "));
                }
            }
        }
    }
}

/// `"; stderr: ..."` with the last part of a non-empty stderr, or nothing.
/// The failed assertion of QEMU itself in a run's `stderr`, if QEMU
/// aborted on one: a line such as `qemu-riscv64: ../../target/riscv/
/// translate.c:213: decode_save_opc: Assertion `ctx->insn_start != NULL'
/// failed.` No guest code, however wrong, should make the emulator assert:
/// QEMU 7.2 does on RISC-V code where a float instruction with dynamic
/// rounding follows a vector float-to-integer conversion. A guest's own
/// crash reads differently (`qemu: uncaught target signal 11`).
fn emulator_assertion(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("qemu-") && l.contains(": Assertion `") && l.ends_with("failed."))
}

fn stderr_excerpt(stderr: &str) -> String {
    const KEEP: usize = 2000;
    let s = stderr.trim();
    if s.is_empty() {
        return String::new();
    }
    let start = s.char_indices().rev().nth(KEEP).map_or(0, |(i, _)| i);
    let ellipsis = if start > 0 { "..." } else { "" };
    format!("; stderr: {ellipsis}{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::emulator_assertion;

    /// QEMU's own assertion is found in what the run printed; a guest's
    /// crash, a guest's own assertion and a clean run are not QEMU's.
    #[test]
    fn only_qemus_own_assertions_are_the_emulators_defects() {
        let qemu = "qemu-riscv64: ../../target/riscv/translate.c:213: decode_save_opc: Assertion `ctx->insn_start != NULL' failed.";
        assert_eq!(emulator_assertion(&format!("some output\n{qemu}\n")), Some(qemu));
        for other in [
            "qemu: uncaught target signal 11 (Segmentation fault) - core dumped",
            "driver: driver.c:40: main: Assertion `n > 0' failed.",
            "vl 128\n",
            "",
        ] {
            assert_eq!(emulator_assertion(other), None, "{other}");
        }
    }
}
