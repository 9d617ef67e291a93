//! Search efficiency: how many trials each strategy needs to come within 5% of the best schedule any run found.
//!
//! Every run is a cold start: a fresh database per (strategy, seed), so no
//! run profits from another's records. After each trial a run has an
//! incumbent, the job's best candidate then (what it would answer if
//! stopped there; [`crate::tune::task::Task::incumbents`]). A single timing is noisy (on a
//! shared machine a kernel can measure 10 % apart from one minute to the
//! next), so once every run is done all incumbents of all runs are timed
//! again together, in interleaved rounds ([`remeasure`]), and a run's curve
//! is its incumbent's re-measured time after each trial. The goal is 95% of
//! the best performance on any curve, i.e. an objective at most
//! `best / 0.95`, and a run's figure is the first trial at which its curve
//! gets there (none if it never does).

use super::contenders::{self, build_trace, Contender, Kernel};
use super::tuned::{job_config, run_job};
use super::BenchError;
use crate::commands::measure::{runner_target, RunnerKind};
use crate::pipeline::load_workload_to_run;
use crate::search::StrategyKind;
use crate::tune::confirm::ConfirmConfig;
use crate::tune::{setup, JobConfig};
use scaletune_codegen::target::Target;
use scaletune_database::Database;
use scaletune_measure::{ArtifactCache, LlvmBuilder};
use scaletune_space::trace::parse_trace;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

/// The fraction of the best performance a run must reach.
pub const GOAL: f64 = 0.95;

/// One tuning run from a cold start.
#[derive(Clone, Debug)]
pub struct Run {
    /// The strategy.
    pub strategy: StrategyKind,
    /// The job seed.
    pub seed: u64,
    /// The objective (lower is better) of the run's incumbent after each
    /// trial, re-measured when [`remeasure`] ran; `None` until a candidate
    /// passed.
    pub best_so_far: Vec<Option<f64>>,
    /// The incumbent's trace text after each trial (`None` until a candidate passed).
    pub incumbents: Vec<Option<String>>,
}

impl Run {
    /// The best objective on the run's curve.
    pub fn best(&self) -> Option<f64> {
        self.best_so_far.iter().flatten().copied().fold(None, |b, o| Some(b.map_or(o, |b: f64| b.min(o))))
    }

    /// Gives every trial of a batch of `batch` trials but its last the
    /// curve's point at the end of the batch before. A seeded job proposes
    /// the same batches whatever order the farm returns their candidates
    /// in, but numbers its trials in that order: settled, a curve of
    /// deterministic figures (estimated cycles) is the same in every run,
    /// and reaches a value at the end of the batch that got there (the
    /// trials the job needs whatever order the batch finished in).
    pub fn settle_batches(&mut self, batch: usize) {
        fn settle<T: Clone>(points: &mut [Option<T>], batch: usize) {
            let mut before: Option<T> = None;
            for chunk in points.chunks_mut(batch.max(1)) {
                let (last, rest) = chunk.split_last_mut().expect("chunks are not empty");
                rest.fill(before.clone());
                before.clone_from(last);
            }
        }
        settle(&mut self.best_so_far, batch);
        settle(&mut self.incumbents, batch);
    }

    /// The first trial (1-based) whose best objective is at most `goal`.
    pub fn trials_to(&self, goal: f64) -> Option<usize> {
        self.best_so_far.iter().position(|b| b.is_some_and(|b| b <= goal)).map(|i| i + 1)
    }
}

/// The best-so-far curve of a sequence of trial objectives (`None`: failed).
pub fn curve(objectives: impl IntoIterator<Item = Option<f64>>) -> Vec<Option<f64>> {
    let mut best: Option<f64> = None;
    objectives
        .into_iter()
        .map(|o| {
            if let Some(o) = o.filter(|o| o.is_finite()) {
                best = Some(best.map_or(o, |b| b.min(o)));
            }
            best
        })
        .collect()
}

/// Where the runs of a search-efficiency bench measure.
pub struct On {
    /// The target's name.
    pub target: String,
    /// The target as its runner builds for it.
    pub target_def: Target,
    /// Native on a target the host runs, else QEMU.
    pub runner: RunnerKind,
    /// Vector lengths under QEMU (empty: the target's).
    pub vls: Vec<u32>,
}

impl On {
    /// `target` with the runner that runs it: native where the host can,
    /// else QEMU at `vls` (estimated cycles, a figure free of timing noise).
    pub fn new(target: &str, vls: &[u32]) -> anyhow::Result<On> {
        // No runner given: native where the host runs the target, else QEMU
        // (which runs any VL the target's granule divides: the runner checks).
        let (target_def, runner, _) = runner_target(target, None, &[])?;
        if runner == RunnerKind::Native && !vls.is_empty() {
            anyhow::bail!("--vl applies under QEMU; `{target}` runs natively at its own vector length");
        }
        Ok(On { target: target.to_string(), target_def, runner, vls: vls.to_vec() })
    }
}

/// Runs `trials` trials of `reference` on `on` (one thread) for each
/// strategy and seed, each into its own database under `dir`.
pub fn run(
    reference: &str,
    on: &On,
    trials: usize,
    seeds: &[u64],
    strategies: &[StrategyKind],
    dir: &Path,
    rt: &Handle,
) -> Result<Vec<Run>, BenchError> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::Io(format!("creating {}: {e}", dir.display())))?;
    let tune_err = |e: anyhow::Error| BenchError::Tune {
        workload: reference.to_string(),
        message: crate::commands::error_text(&e),
    };
    let mut runs = Vec::new();
    for &strategy in strategies {
        for &seed in seeds {
            let path = dir.join(format!("{}-{seed}.db", strategy.name()));
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| BenchError::Io(format!("removing {}: {e}", path.display())))?;
            }
            let db = Database::open(&path)?;
            // Only the trials count here: no re-measuring at the end.
            let confirm = ConfirmConfig { top: 0, ..ConfirmConfig::default() };
            let cfg =
                JobConfig { seed, strategy, confirm, ..job_config(reference, &on.target, on.runner, &on.vls, trials) };
            let mut s = setup(&cfg, &on.target_def, &db).map_err(tune_err)?;
            let label = format!("{reference} ({} seed {seed})", strategy.name());
            let (job, _) = run_job(&db, &cfg, &on.target_def, &mut s, &label, rt)?;
            // The job's own answer after each trial: its best candidate then
            // (ranked by the medians of the candidates it re-checked).
            let history: Vec<_> = db.job_history(job)?.into_iter().filter(|r| r.trial_idx >= 0).collect();
            let by_id: std::collections::HashMap<i64, &scaletune_database::Record> =
                history.iter().map(|r| (r.id, r)).collect();
            let answer: Vec<Option<&scaletune_database::Record>> = s
                .tasks
                .first()
                .map(|t| t.incumbents.iter().map(|i| i.and_then(|id| by_id.get(&id).copied())).collect())
                .unwrap_or_default();
            let mut run = Run {
                strategy,
                seed,
                best_so_far: answer.iter().map(|r| r.and_then(|r| r.best_objective())).collect(),
                incumbents: answer.iter().map(|r| r.map(|r| r.trace.clone())).collect(),
            };
            if on.runner == RunnerKind::Qemu {
                run.settle_batches(cfg.batch);
            }
            runs.push(run);
        }
    }
    Ok(runs)
}

/// What [`remeasure`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Remeasured {
    /// Distinct incumbents (trace texts).
    pub candidates: usize,
    /// Distinct codes among them, each timed once ([`code_groups`]).
    pub codes: usize,
    /// Interleaved rounds.
    pub rounds: u32,
    /// Incumbents whose every re-run failed (their curves keep the first measurement).
    pub failed: usize,
}

/// Times every distinct incumbent of `runs` again, all together in
/// `rounds` interleaved rounds with the runs' own timing protocol, and
/// replaces each curve point by its incumbent's median over the rounds.
/// Incumbents that build the same kernel code (runs from different seeds
/// often end on traces that differ only in a decision the code does not
/// depend on) are timed once and share that figure: timed apart, one
/// object measured 76.5, 77.2 and 82.3 GFLOPS on a noisy Zen 3, and two
/// runs that had found the best code were counted as never reaching it.
pub fn remeasure(reference: &str, on: &On, runs: &mut [Run], rounds: u32) -> Result<Remeasured, BenchError> {
    let workload = Arc::new(load_workload_to_run(reference).map_err(|e| BenchError::Unsupported(e.to_string()))?);
    let target_def = Arc::new(on.target_def.clone());
    let cfg = job_config(reference, &on.target, on.runner, &[], 1);
    let vl = target_def.default_vl_bits.first().copied().unwrap_or(128);
    let builder = LlvmBuilder::new()
        .with_cache(ArtifactCache::new(ArtifactCache::default_dir()).map_err(|e| BenchError::Io(e.to_string()))?);
    // Distinct incumbents in a fixed order (trace text), so a rerun times them in the same order.
    let mut distinct: BTreeMap<String, Option<f64>> = BTreeMap::new();
    for r in runs.iter() {
        for t in r.incumbents.iter().flatten() {
            distinct.insert(t.clone(), None);
        }
    }
    let timeout = Duration::from_secs(cfg.timeout_s);
    let mut cs = Vec::new();
    for text in distinct.keys() {
        let trace = parse_trace(text)
            .map_err(|e| BenchError::Unsupported(format!("an incumbent's trace does not parse: {e}")))?;
        cs.push(build_trace(&builder, Kernel::Tuned, &workload, &target_def, trace, &[vl], timeout));
    }
    let groups = code_groups(&cs.iter().map(Contender::code_identity).collect::<Vec<_>>());
    // One contender per code, in the order of the first trace that builds it.
    let mut timed_at: Vec<Option<usize>> = vec![None; cs.len()];
    let mut timed: Vec<Contender> = Vec::new();
    for (i, c) in cs.into_iter().enumerate() {
        if groups[i] == i {
            timed_at[i] = Some(timed.len());
            timed.push(c);
        }
    }
    let alone = super::timing_alone();
    let times = contenders::time_interleaved(&timed, vl, &cfg.protocol, rounds);
    drop(alone);
    let medians: Vec<Option<f64>> = times.iter().map(|ms| contenders::median_time(ms)).collect();
    let failed = medians.iter().filter(|m| m.is_none()).count();
    for (i, (_, slot)) in distinct.iter_mut().enumerate() {
        *slot = timed_at[groups[i]].and_then(|k| medians[k]);
    }
    for r in runs.iter_mut() {
        for (point, inc) in r.best_so_far.iter_mut().zip(&r.incumbents) {
            if let Some(t) = inc.as_ref().and_then(|t| distinct.get(t).copied().flatten()) {
                *point = Some(t);
            }
        }
    }
    Ok(Remeasured { candidates: distinct.len(), codes: timed.len(), rounds, failed })
}

/// For each of a list of contenders by the identity of the code they build
/// (`None`: unknown, such as a failed build), the index of the first one
/// that builds the same code: its own index if none before it does. A
/// contender of unknown code is a group of its own.
pub fn code_groups(codes: &[Option<String>]) -> Vec<usize> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    codes
        .iter()
        .enumerate()
        .map(|(i, code)| match code {
            Some(c) => *first.entry(c.as_str()).or_insert(i),
            None => i,
        })
        .collect()
}

/// What a run's objective is, for the table.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// Seconds, shown as GFLOPS where the workload's flops are known.
    Seconds {
        /// The workload's floating-point operations.
        flops: Option<f64>,
    },
    /// Estimated cycles (QEMU): the same candidate always gets the same figure.
    Cycles,
}

/// The table of a set of runs: per run its best and trials to [`GOAL`] of
/// the overall best, then per strategy the median, and the ratio of
/// random's median to evolutionary's.
pub fn table(reference: &str, runs: &[Run], unit: Unit, remeasured: Option<&Remeasured>) -> String {
    let mut out = String::new();
    match remeasured {
        Some(r) => {
            let _ = writeln!(
                out,
                "curves: each trial's incumbent, its {} distinct candidates ({} distinct codes, each timed once) re-measured together in {} interleaved rounds{}",
                r.candidates,
                r.codes,
                r.rounds,
                match r.failed {
                    0 => String::new(),
                    1 => " (1 code failed every re-run; its candidates keep their first time)".to_string(),
                    n => format!(" ({n} codes failed every re-run; their candidates keep their first time)"),
                }
            );
        }
        None => {
            let what = match unit {
                Unit::Cycles => "estimated cycles, which do not vary between runs, counted at the end of each batch",
                Unit::Seconds { .. } => "its first measurement",
            };
            let _ = writeln!(out, "curves: each trial's incumbent at {what}");
        }
    }
    let best = runs.iter().filter_map(Run::best).fold(f64::INFINITY, f64::min);
    if !best.is_finite() {
        return format!("search efficiency of {reference}: no run found a passing candidate\n");
    }
    let goal = best / GOAL;
    let shown = |t: f64| match unit {
        Unit::Seconds { flops: Some(f) } => format!("{:.1} GFLOPS", f / t / 1e9),
        Unit::Seconds { flops: None } => format!("{:.3} ms", t * 1e3),
        Unit::Cycles => format!("{t:.0} cycles"),
    };
    let _ = writeln!(out, "search efficiency of {reference}: best of all runs {}; goal {}", shown(best), shown(goal));
    let _ = writeln!(out, "{:<14} {:>5} {:>8} {:>16} {:>14}", "strategy", "seed", "trials", "best", "trials to 95%");
    for r in runs {
        let reached = r.trials_to(goal).map_or("never".to_string(), |t| t.to_string());
        let b = r.best().map_or("-".to_string(), shown);
        let _ = writeln!(
            out,
            "{:<14} {:>5} {:>8} {:>16} {:>14}",
            r.strategy.name(),
            r.seed,
            r.best_so_far.len(),
            b,
            reached
        );
    }
    let median = |s: StrategyKind| -> Option<f64> {
        // A run that never reached the goal counts as one trial past its budget.
        scaletune_measure::stats::median(
            runs.iter()
                .filter(|r| r.strategy == s)
                .map(|r| r.trials_to(goal).unwrap_or(r.best_so_far.len() + 1) as f64)
                .collect(),
        )
    };
    // The most trials a run of the strategy had: a median above it is "never".
    let budget = |s: StrategyKind| runs.iter().filter(|r| r.strategy == s).map(|r| r.best_so_far.len()).max();
    let reached = |s: StrategyKind| median(s).zip(budget(s)).map(|(m, b)| (m, m <= b as f64, b));
    let (r, e) = (reached(StrategyKind::Random), reached(StrategyKind::Evolutionary));
    for (name, m) in [("random", r), ("evolutionary", e)] {
        match m {
            Some((m, true, _)) => {
                let _ = writeln!(out, "median trials to 95% ({name}): {m}");
            }
            Some((_, false, b)) => {
                let _ = writeln!(out, "median trials to 95% ({name}): never within {b}");
            }
            None => {}
        }
    }
    match (r, e) {
        (Some((r, true, _)), Some((e, true, _))) => {
            let _ = writeln!(out, "random needs {:.2}x the trials of evolutionary", r / e);
        }
        (Some((r, false, b)), Some((e, true, _))) => {
            let _ = writeln!(
                out,
                "random needs more than {:.2}x the trials of evolutionary (its median run did not get there in {b})",
                (r - 1.0) / e
            );
        }
        (Some(_), Some((_, false, b))) => {
            let _ = writeln!(out, "no ratio: evolutionary's median run did not get there in {b} trials");
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(strategy: StrategyKind, objectives: &[Option<f64>]) -> Run {
        Run {
            strategy,
            seed: 1,
            best_so_far: curve(objectives.iter().copied()),
            incumbents: vec![None; objectives.len()],
        }
    }

    #[test]
    fn a_re_measured_curve_counts_its_best_point_and_the_first_trial_at_the_goal() {
        // Re-measured, a later incumbent can time slower than an earlier one.
        let r = Run {
            strategy: StrategyKind::Random,
            seed: 1,
            best_so_far: vec![None, Some(2.0), Some(1.0), Some(1.5)],
            incumbents: vec![None, Some("a".into()), Some("b".into()), Some("c".into())],
        };
        assert_eq!(r.best(), Some(1.0));
        assert_eq!(r.trials_to(1.2), Some(3));
    }

    /// Incumbents of one code (the same object built from traces that
    /// differ in a decision the code does not depend on) form one group,
    /// led by the first; unknown code is never grouped.
    #[test]
    fn incumbents_that_build_the_same_code_are_grouped_under_the_first() {
        let codes: Vec<Option<String>> = [Some("x"), Some("y"), None, Some("x"), None, Some("y"), Some("z")]
            .iter()
            .map(|c| c.map(String::from))
            .collect();
        assert_eq!(code_groups(&codes), [0, 1, 2, 0, 4, 1, 6]);
        assert_eq!(code_groups(&[]), Vec::<usize>::new());
    }

    /// A small matmul's trace: `rows` rows of `C` unrolled by 8-lane
    /// vectors, with an `unroll_max_step` budget (decision `budget`) that
    /// no loop of it fits, so the budget changes no code.
    fn budget_trace(budget: usize, rows: i64) -> String {
        format!(
            r#"b1 = get_block("C")
l2, l3, l4 = get_loops(b1)
l5, l6 = split(l3, factors=[None, 8])
l7, l8 = split(l2, factors=[None, {rows}])
reorder(l7, l5, l4, l8, l6)
unroll(l8)
vectorize(l6, tail="predicate")
b9 = get_block("C")
l10, l11, l12, l13, l14 = get_loops(b9)
unroll15 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25], decision={budget})
annotate(l10, key="unroll_max_step", value=unroll15)
"#
        )
    }

    /// The workload [`budget_trace`] schedules.
    const SMALL: &str = "matmul:M=48,N=40,K=24";

    /// The three 512^3 winners of one evaluation's evolutionary runs,
    /// three traces differing only in an `unroll_max_step` budget no loop
    /// fits, build one object; their code identities are equal, so they
    /// are timed once. A different kernel's is not.
    #[test]
    fn traces_differing_in_a_decision_the_code_ignores_have_one_code_identity() {
        let workload = Arc::new(load_workload_to_run(SMALL).expect("workload"));
        let target = Arc::new(Target::load("host").expect("host"));
        let builder = LlvmBuilder::new();
        let vl = target.default_vl_bits.first().copied().unwrap_or(128);
        let build = |budget, rows| {
            let t = parse_trace(&budget_trace(budget, rows)).expect("parses");
            build_trace(&builder, Kernel::Tuned, &workload, &target, t, &[vl], Duration::from_secs(10))
        };
        let codes: Vec<Option<String>> =
            [(0, 4), (1, 4), (0, 3)].into_iter().map(|(b, r)| build(b, r).code_identity()).collect();
        assert!(codes.iter().all(Option::is_some), "{codes:?}");
        assert_eq!(codes[0], codes[1], "the budget changes no code");
        assert_ne!(codes[0], codes[2], "3 rows are other code than 4");
        assert_eq!(code_groups(&codes), [0, 0, 2]);
    }

    /// Re-measured, runs whose incumbents build one code get one figure
    /// (the same median, bit for bit, where timing the object twice would
    /// give two), other code its own; three traces, two codes timed.
    #[test]
    fn incumbents_of_one_code_are_timed_once_and_share_the_figure() {
        let on = On::new("host", &[]).expect("host");
        let mut runs: Vec<Run> = [(0, 4), (1, 4), (0, 3)]
            .into_iter()
            .map(|(budget, rows)| Run {
                strategy: StrategyKind::Evolutionary,
                seed: 1,
                best_so_far: vec![None, Some(1.0)],
                incumbents: vec![None, Some(budget_trace(budget, rows))],
            })
            .collect();
        let done = remeasure(SMALL, &on, &mut runs, 3).expect("re-measures");
        assert_eq!(done, Remeasured { candidates: 3, codes: 2, rounds: 3, failed: 0 });
        let last: Vec<f64> = runs.iter().map(|r| r.best_so_far[1].expect("timed")).collect();
        assert!(last.iter().all(|t| t.is_finite() && *t > 0.0 && *t != 1.0), "{last:?}");
        assert_eq!(last[0].to_bits(), last[1].to_bits(), "one code, one figure: {last:?}");
        assert_eq!(runs[0].best_so_far[0], None, "no incumbent, no figure");
    }

    #[test]
    fn curves_keep_the_best_and_skip_failures() {
        let c = curve([None, Some(3.0), Some(f64::NAN), Some(4.0), None, Some(1.0)]);
        assert_eq!(c, vec![None, Some(3.0), Some(3.0), Some(3.0), Some(3.0), Some(1.0)]);
    }

    #[test]
    fn trials_to_the_goal_count_from_one() {
        let r = run(StrategyKind::Random, &[Some(2.0), Some(1.2), Some(1.0)]);
        assert_eq!(r.trials_to(1.0 / GOAL), Some(3));
        assert_eq!(r.trials_to(1.3), Some(2));
        assert_eq!(r.trials_to(0.5), None);
    }

    #[test]
    fn the_table_compares_medians() {
        let runs = vec![
            run(StrategyKind::Random, &[Some(4.0), Some(2.0), Some(1.5), Some(1.0)]),
            run(StrategyKind::Evolutionary, &[Some(3.0), Some(1.0)]),
        ];
        let t = table(
            "w",
            &runs,
            Unit::Seconds { flops: None },
            Some(&Remeasured { candidates: 3, codes: 2, rounds: 2, failed: 1 }),
        );
        expect_test::expect![[r#"
            curves: each trial's incumbent, its 3 distinct candidates (2 distinct codes, each timed once) re-measured together in 2 interleaved rounds (1 code failed every re-run; its candidates keep their first time)
            search efficiency of w: best of all runs 1000.000 ms; goal 1052.632 ms
            strategy        seed   trials             best  trials to 95%
            random             1        4      1000.000 ms              4
            evolutionary       1        2      1000.000 ms              2
            median trials to 95% (random): 4
            median trials to 95% (evolutionary): 2
            random needs 2.00x the trials of evolutionary
        "#]]
        .assert_eq(&t);
    }

    #[test]
    fn estimated_cycles_are_shown_as_cycles_and_not_re_measured() {
        let runs = vec![
            run(StrategyKind::Random, &[Some(9000.0), Some(5000.0)]),
            run(StrategyKind::Evolutionary, &[Some(5100.0), Some(4000.0)]),
        ];
        expect_test::expect![[r#"
            curves: each trial's incumbent at estimated cycles, which do not vary between runs, counted at the end of each batch
            search efficiency of w: best of all runs 4000 cycles; goal 4211 cycles
            strategy        seed   trials             best  trials to 95%
            random             1        2      5000 cycles          never
            evolutionary       1        2      4000 cycles              2
            median trials to 95% (random): never within 2
            median trials to 95% (evolutionary): 2
            random needs more than 1.00x the trials of evolutionary (its median run did not get there in 2)
        "#]]
        .assert_eq(&table("w", &runs, Unit::Cycles, None));
    }

    #[test]
    fn a_settled_curve_reaches_a_value_at_the_end_of_the_batch_that_got_there() {
        let mut r = run(StrategyKind::Evolutionary, &[None, Some(5.0), Some(4.0), Some(6.0), Some(3.0)]);
        r.incumbents = ["a", "b", "c", "c", "d"].iter().map(|t| Some(t.to_string())).collect();
        r.settle_batches(2);
        assert_eq!(r.best_so_far, [None, Some(5.0), Some(5.0), Some(4.0), Some(3.0)]);
        let inc: Vec<Option<&str>> = r.incumbents.iter().map(Option::as_deref).collect();
        assert_eq!(inc, [None, Some("b"), Some("b"), Some("c"), Some("d")]);
        assert_eq!(r.trials_to(4.0), Some(4), "the end of the batch that got there");
    }

    #[test]
    fn vector_lengths_are_refused_where_the_target_runs_natively() {
        let e = On::new("host", &[256]).err().expect("refused");
        assert_eq!(e.to_string(), "--vl applies under QEMU; `host` runs natively at its own vector length");
        let on = On::new("neoverse-v1", &[128, 256]).expect("emulated");
        assert_eq!((on.runner, on.vls), (RunnerKind::Qemu, vec![128, 256]));
        assert_eq!(On::new("host", &[]).expect("native").runner, RunnerKind::Native);
    }

    #[test]
    fn a_median_run_that_never_gets_there_is_a_bound_not_a_count() {
        let never = [Some(4.0), Some(3.0), Some(2.0)];
        let runs = vec![
            run(StrategyKind::Random, &never),
            run(StrategyKind::Random, &never),
            run(StrategyKind::Random, &[Some(1.0), Some(1.0), Some(1.0)]),
            run(StrategyKind::Evolutionary, &[Some(1.0), Some(1.0), Some(1.0)]),
        ];
        let t = table("w", &runs, Unit::Seconds { flops: None }, None);
        let tail: Vec<&str> = t.lines().skip(7).collect();
        assert_eq!(
            tail,
            [
                "median trials to 95% (random): never within 3",
                "median trials to 95% (evolutionary): 1",
                "random needs more than 3.00x the trials of evolutionary (its median run did not get there in 3)",
            ],
            "{t}"
        );
        let runs = vec![
            run(StrategyKind::Random, &[Some(1.0), Some(1.0), Some(1.0)]),
            run(StrategyKind::Evolutionary, &never),
        ];
        let t = table("w", &runs, Unit::Seconds { flops: None }, None);
        assert!(t.ends_with("no ratio: evolutionary's median run did not get there in 3 trials\n"), "{t}");
    }
}
