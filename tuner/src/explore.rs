//! `scaletune explore`: print a design space, sample it, and check samples.

use scaletune_codegen::pipeline::{initial_nest, lower_nest};
use scaletune_codegen::target::Target;
use scaletune_measure::harness::interpret;
use scaletune_measure::{Candidate, CheckRunner, Farm, LlvmBuilder, Runner, Status};
use scaletune_space::design::{categorical_choices, sampled_choices, tile_kinds, DesignSpace, Sample};
use scaletune_space::ir::Nest;
use scaletune_space::reference::RefTensor;
use scaletune_space::rules::Choice;
use scaletune_space::sample::task_rng;
use scaletune_space::trace::Count;
use scaletune_space::workload::Workload;
use scaletune_space::TensorData;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

/// Options of `explore`.
#[derive(Clone, Debug)]
pub struct ExploreArgs {
    /// Number of samples.
    pub samples: usize,
    /// Job seed.
    pub seed: u64,
    /// Check every sample in the interpreter.
    pub check: bool,
    /// Also build and run every sample under QEMU (or natively) at the target's VLs.
    pub qemu: bool,
    /// Worker threads for checking.
    pub threads: usize,
}

/// The result of `explore`: the report and the samples.
pub struct Exploration {
    /// Human-readable report (byte-identical for the same inputs).
    pub report: String,
    /// The samples, in draw order.
    pub samples: Vec<Sample>,
    /// Number of failed checks.
    pub failed: usize,
}

/// The vscale values a sample is interpreted at: 1, 2 and 4 where its
/// vector kind allows them (its single value on fixed-length kinds).
pub fn check_vscales(nest: &Nest) -> Vec<u32> {
    let dom = &nest.caps.vscale_values;
    let picked: Vec<u32> = [1u32, 2, 4].into_iter().filter(|v| dom.contains(v)).collect();
    if picked.is_empty() {
        dom.first().copied().into_iter().collect()
    } else {
        picked
    }
}

/// Lowers a scheduled nest and interprets it at each vscale, judging every
/// output as a compiled run is judged ([`scaletune_measure::harness::interpret`]).
/// Returns a description of the first failure.
pub fn interpret_and_compare(
    w: &Workload,
    nest: &Nest,
    args: &[TensorData],
    reference: &[RefTensor],
    vscales: &[u32],
) -> Result<(), String> {
    let prog = lower_nest(w, nest).map_err(|e| e.to_string())?;
    for &vs in vscales {
        let r = interpret(w, &prog, args, reference, vs);
        if !r.passed() {
            return Err(r.message);
        }
    }
    Ok(())
}

/// The vector lengths a sample is compiled and run at: the target's
/// defaults its vector kind can run at (the one length of a fixed-length
/// kind), or the first default if none can.
pub fn run_vls(target: &Target, nest: &Nest) -> Vec<u32> {
    let vls: Vec<u32> = target
        .default_vl_bits
        .iter()
        .copied()
        .filter(|vl| !nest.caps.scalable || nest.caps.vscale_values.contains(&(vl / nest.caps.granule_bits)))
        .collect();
    if vls.is_empty() {
        target.default_vl_bits.iter().take(1).copied().collect()
    } else {
        vls
    }
}

/// Builds the samples with LLVM and runs each at [`run_vls`] through the
/// farm (LLVM builder, check runner). One result per sample, in order.
fn build_and_run_all(
    w: &Workload,
    target: &Target,
    samples: &[&Sample],
    seed: u64,
    threads: usize,
    rt: &Handle,
) -> Vec<Result<(), String>> {
    let (w_arc, t_arc) = (Arc::new(w.clone()), Arc::new(target.clone()));
    let candidates: Vec<Candidate> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Candidate::new(i as u64, Arc::clone(&w_arc), Arc::clone(&t_arc), (*s.trace).clone())
                .with_vl_bits(run_vls(target, &s.nest))
                .with_timeout(Duration::from_secs(120))
        })
        .collect();
    let runner: Arc<dyn Runner> = Arc::new(CheckRunner::new().with_slots(threads));
    let farm =
        crate::commands::lock_machine(Farm::new(Arc::new(LlvmBuilder::new().with_seed(seed)), threads, vec![runner]));
    let report = rt.block_on(farm.measure(candidates));
    let mut results = vec![Err("not measured".to_string()); samples.len()];
    for m in report.measurements {
        let verdict = if m.status == Status::Ok {
            Ok(())
        } else if let Some(r) = m.runs.iter().find(|r| r.status != Status::Ok) {
            Err(format!("VL {}: {}", r.vl_bits, r.message))
        } else {
            Err(m.message.clone())
        };
        if let Some(slot) = results.get_mut(m.candidate as usize) {
            *slot = verdict;
        }
    }
    results
}

/// `scope: key = value` for each option (scope omitted for the whole nest).
fn choice_list(choices: &[Choice]) -> String {
    let parts: Vec<String> = choices
        .iter()
        .map(|c| {
            if c.scope == "*" {
                format!("{} = {}", c.key, c.value)
            } else {
                format!("{}: {} = {}", c.scope, c.key, c.value)
            }
        })
        .collect();
    parts.join("; ")
}

fn count_line(out: &mut String, title: &str, counts: &BTreeMap<String, usize>) {
    let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(out, "  {title:<22} {}", if parts.is_empty() { "-".to_string() } else { parts.join(", ") });
}

/// Prints the design space, draws samples and optionally checks them.
pub fn explore(w: &Workload, target: &Target, a: &ExploreArgs, rt: &Handle) -> Exploration {
    let nest = initial_nest(w, target);
    let space = DesignSpace::generate(&nest);
    let mut out = String::new();
    let _ = writeln!(out, "design space of {} on {} ({})", w.reference(), target.name, target.vector_summary());
    let _ = writeln!(out, "rules applied: {}", space.rules().join(", "));
    let _ = writeln!(out, "design-space traces: {}", space.traces.len());
    for (k, t) in space.traces.iter().enumerate() {
        let _ = writeln!(out, "trace {k} [{}]: {} decision combinations", t.rules.join(", "), t.size());
        if !t.choices.is_empty() {
            let _ = writeln!(out, "    options: {}", choice_list(&t.choices));
        }
        for (i, size) in &t.domains {
            let _ = writeln!(out, "    {:>10}  {}", size.to_string(), t.trace.inst_text(*i));
        }
    }
    let size = space.size();
    let how = match size {
        Count::Exact(_) => "exact",
        Count::AtMost(_) => "an upper bound: some domains depend on earlier decisions and are counted at their largest",
        Count::Unknown => {
            "not known: a trace could not be drawn from, or a domain depends on earlier decisions in a way that is not bounded"
        }
    };
    let _ = writeln!(out, "space size: {size} decision combinations in all ({how})");

    let mut rng = task_rng(a.seed, 0);
    let mut samples = Vec::new();
    let mut rejected = 0u32;
    let mut failures_to_sample = 0usize;
    for _ in 0..a.samples {
        match space.sample(&mut rng) {
            Ok(s) => {
                rejected += s.rejected;
                samples.push(s);
            }
            Err(_) => failures_to_sample += 1,
        }
    }
    let mut tiles = BTreeMap::new();
    let mut tails = BTreeMap::new();
    let mut kinds = BTreeMap::new();
    for s in &samples {
        for k in tile_kinds(&s.trace) {
            *tiles.entry(k.name().to_string()).or_insert(0) += 1;
        }
        for t in sampled_choices(&s.trace, "tail") {
            *tails.entry(t).or_insert(0) += 1;
        }
        let ks = categorical_choices(&s.trace, "kind");
        let kind = ks
            .first()
            .cloned()
            .unwrap_or_else(|| target.vector_kinds().first().map(|k| k.0.to_string()).unwrap_or_default());
        *kinds.entry(kind).or_insert(0) += 1;
    }
    let _ = writeln!(
        out,
        "samples: {} drawn with seed {}, {} rejected draws{}",
        samples.len(),
        a.seed,
        rejected,
        if failures_to_sample > 0 { format!(", {failures_to_sample} could not be drawn") } else { String::new() }
    );
    count_line(&mut out, "vectorized tiles:", &tiles);
    count_line(&mut out, "sampled tails:", &tails);
    count_line(&mut out, "vector kinds:", &kinds);
    let mut options: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for s in &samples {
        for c in &space.traces[s.space_trace].choices {
            *options.entry(c.key.clone()).or_default().entry(c.value.clone()).or_insert(0) += 1;
        }
    }
    for (key, counts) in &options {
        count_line(&mut out, &format!("{key}:"), counts);
    }

    let mut failed = failures_to_sample;
    if a.check || a.qemu {
        let results = match scaletune_measure::harness::expected::expected(w, a.seed) {
            Ok(e) => check_all(w, target, &samples, &e.args, &e.reference, a, rt),
            Err(e) => vec![Err(e.to_string()); samples.len()],
        };
        let mut failures = Vec::new();
        for (i, r) in results.iter().enumerate() {
            if let Err(e) = r {
                failures.push(format!("  sample {i} (trace {}): {e}", samples[i].space_trace));
            }
        }
        failed += failures.len();
        let used: std::collections::BTreeSet<u32> = samples.iter().flat_map(|s| check_vscales(&s.nest)).collect();
        let used: Vec<String> = used.iter().map(u32::to_string).collect();
        let mut how = format!("interpreter at vscale {}", used.join(", "));
        if a.qemu {
            how.push_str(" and compiled at the target's vector lengths");
        }
        let _ = writeln!(
            out,
            "check ({how}): {} passed, {} failed",
            samples.len() - failures.len(),
            failures.len() + failures_to_sample
        );
        for f in failures.iter().take(20) {
            let _ = writeln!(out, "{f}");
        }
    }
    Exploration { report: out, samples, failed }
}

fn check_all(
    w: &Workload,
    target: &Target,
    samples: &[Sample],
    args: &[TensorData],
    reference: &[RefTensor],
    a: &ExploreArgs,
    rt: &Handle,
) -> Vec<Result<(), String>> {
    let threads = a.threads.max(1);
    let mut results: Vec<Result<(), String>> = vec![Ok(()); samples.len()];
    std::thread::scope(|scope| {
        let chunks: Vec<(usize, &mut [Result<(), String>])> = {
            let size = samples.len().div_ceil(threads).max(1);
            results.chunks_mut(size).enumerate().map(|(i, c)| (i * size, c)).collect()
        };
        for (start, chunk) in chunks {
            scope.spawn(move || {
                for (j, slot) in chunk.iter_mut().enumerate() {
                    let s = &samples[start + j];
                    *slot = interpret_and_compare(w, &s.nest, args, reference, &check_vscales(&s.nest));
                }
            });
        }
    });
    if a.qemu {
        let passed: Vec<usize> = (0..samples.len()).filter(|&i| results[i].is_ok()).collect();
        let to_run: Vec<&Sample> = passed.iter().map(|&i| &samples[i]).collect();
        for (i, r) in passed.into_iter().zip(build_and_run_all(w, target, &to_run, a.seed, threads, rt)) {
            results[i] = r;
        }
    }
    results
}
