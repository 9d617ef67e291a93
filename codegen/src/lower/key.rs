//! The lowering's inputs folded where they cannot change the program it emits: nests that differ only in such inputs become one nest.
//!
//! A search scores thousands of nests a second, and about one in seven
//! lowers to a program another nest of the same job already lowered to:
//! mostly nests that differ in an `unroll_max_step` budget that unrolls
//! the same loops (64 and 16 where every loop under the annotation has
//! fewer than 16 steps or more than 64). [`fold_unroll_budgets`] rewrites
//! each budget to one that unrolls the same loops, so such nests become
//! equal once prepared, and [`Prepared::unroll_budgets`] lists the folded
//! values for a caller that tells such nests apart by everything else
//! (the search: by their traces without the budgets' decisions).

use super::ctx::Prepared;
use super::walk::subtree_steps;
use scaletune_space::ir::Node;
use scaletune_space::limits::MAX_UNROLLED_COPIES;

/// The annotation whose value is a loop's unrolling budget.
pub(super) const UNROLL_MAX_STEP: &str = "unroll_max_step";

/// Rewrites every `unroll_max_step` budget to the one that unrolls the
/// same loops and is the largest step count among the loops it covers that
/// fit it (at least 1; 0 for a budget that unrolls nothing by itself: none
/// set, not positive, or not a number).
///
/// A serial loop `l` is unrolled under budget `B` when its steps `s`
/// satisfy `s <= min(B, MAX_UNROLLED_COPIES)` (`Lowerer::auto_unroll`).
/// With `B'` the largest such `s` among every loop under the annotation
/// (a superset of the loops that read it), `1 <= B' <= min(B, MAX)`, so
/// each `s` fits `B'` exactly when it fits `B`. The SME micro-kernel
/// compares its own step count with the budget (`za_unroll`): budgets of
/// nests with SME are left as they are.
pub(super) fn fold_unroll_budgets(p: &mut Prepared) {
    if p.nest.caps.has_sme {
        return;
    }
    for a in p.nest.all_loops() {
        let Some(text) = p.nest.loop_(a).annotations.get(UNROLL_MAX_STEP) else { continue };
        let budget = text.parse::<i64>().unwrap_or(0);
        let folded = if budget <= 0 {
            0
        } else {
            let cap = budget.min(MAX_UNROLLED_COPIES);
            p.nest
                .loops_in(Node::Loop(a))
                .into_iter()
                .filter_map(|l| subtree_steps(&p.nest, p.vscale_const, Node::Loop(l)))
                .filter(|s| *s <= cap)
                .max()
                .unwrap_or(1)
                .max(1)
        };
        let folded = folded.to_string();
        if *text != folded {
            p.nest.loop_mut(a).annotations.insert(UNROLL_MAX_STEP.to_string(), folded);
        }
    }
}

impl Prepared {
    /// The `unroll_max_step` budget of every annotated loop, as folded
    /// ([`fold_unroll_budgets`]), loops in pre-order: two prepared nests
    /// that differ only in their budgets emit one program when these are
    /// equal.
    pub fn unroll_budgets(&self) -> Vec<&str> {
        let nest = &self.nest;
        nest.all_loops()
            .into_iter()
            .filter_map(|l| nest.loop_(l).annotations.get(UNROLL_MAX_STEP).map(String::as_str))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{initial_nest, schedule};
    use crate::target::Target;
    use scaletune_space::design::DesignSpace;
    use scaletune_space::ids::LoopId;
    use scaletune_space::ir::Nest;
    use scaletune_space::sample::task_rng;
    use scaletune_space::trace::parse_trace;
    use scaletune_space::workload::load;

    /// Every budget the tests set: unrolling nothing, some loops, all.
    const BUDGETS: &[&str] = &["0", "1", "3", "4", "5", "16", "20", "64", "1000", "5000", "-2", "many"];

    /// `nest` with every `unroll_max_step` annotation set to `budget`.
    fn with_budget(nest: &Nest, annotated: &[LoopId], budget: &str) -> Nest {
        let mut n = nest.clone();
        for &l in annotated {
            n.loop_mut(l).annotations.insert(UNROLL_MAX_STEP.to_string(), budget.to_string());
        }
        n
    }

    fn emitted(p: Prepared) -> Result<crate::vprog::Program, String> {
        p.emit().map_err(|e| e.to_string())
    }

    /// Folding never changes the program: sampled nests of several
    /// workloads and targets, each with its budgets set to each of
    /// [`BUDGETS`], emit the same program folded as unfolded; and some
    /// positive budgets of one nest fold to one nest.
    #[test]
    fn a_folded_nest_emits_the_unfolded_program() {
        let mut folds = 0;
        for target in ["host", "neon", "neoverse-v1", "rvv", "sme"] {
            let t = Target::load(target).expect("target");
            for workload in ["matmul:M=9,N=21,K=6", "conv2d_nhwc:H=5,WI=6,C=3,F=9", "softmax_rows:M=3,N=21"] {
                let w = load(workload).expect("loads");
                let space = DesignSpace::generate(&initial_nest(&w, &t));
                for seed in 0..6 {
                    let s = space.sample(&mut task_rng(seed, 0)).expect("samples");
                    let annotated: Vec<LoopId> = s
                        .nest
                        .all_loops()
                        .into_iter()
                        .filter(|l| s.nest.loop_(*l).annotations.contains_key(UNROLL_MAX_STEP))
                        .collect();
                    let mut nests: Vec<Nest> = Vec::new();
                    for budget in BUDGETS {
                        let n = with_budget(&s.nest, &annotated, budget);
                        let unfolded = Prepared::unfolded(&n, "k").map(emitted);
                        let folded = Prepared::new(&n, "k").map(|p| (p.nest.clone(), emitted(p)));
                        match (unfolded, folded) {
                            (Ok(u), Ok((nest, f))) => {
                                assert_eq!(f, u, "{target} {workload} budget {budget}:\n{}", s.text());
                                if budget.parse::<i64>().is_ok_and(|b| b > 0) && !nests.contains(&nest) {
                                    nests.push(nest);
                                }
                            }
                            (Err(_), Err(_)) => {}
                            (u, f) => {
                                panic!("{target} {workload} budget {budget}: {:?} against {:?}", u.err(), f.err())
                            }
                        }
                    }
                    let positive = BUDGETS.iter().filter(|b| b.parse::<i64>().is_ok_and(|b| b > 0)).count();
                    if !annotated.is_empty() && nests.len() < positive {
                        folds += 1;
                    }
                }
            }
        }
        assert!(folds > 0, "no budgets folded");
    }

    /// The budgets of `matmul` 3x4x5 over `i` fold to the largest step
    /// count they fit among `i` (72 steps), `j` (24: for each column the
    /// init the lowering splits off and 5 updates) and `k` (5): each value
    /// names the loops it unrolls.
    #[test]
    fn a_budget_folds_to_the_largest_step_count_it_fits() {
        let w = load("matmul:M=3,N=4,K=5").expect("loads");
        let t = Target::load("neon").expect("target");
        let folded: Vec<String> = ["0", "4", "5", "16", "20", "59", "64", "2000", "-1", "x"]
            .iter()
            .map(|b| {
                let text = format!("b = get_block(\"C\")\ni, j, k = get_loops(b)\nannotate(i, key=\"unroll_max_step\", value=\"{b}\")\n");
                let trace = parse_trace(&text).expect("parses");
                let nest = schedule(&w, Some(&trace), &t, None).expect("schedules");
                let p = Prepared::new(&nest, "k").expect("prepares");
                format!("{b} -> {}", p.unroll_budgets().join(", "))
            })
            .collect();
        expect_test::expect![[r#"
            0 -> 0
            4 -> 1
            5 -> 5
            16 -> 5
            20 -> 5
            59 -> 24
            64 -> 24
            2000 -> 72
            -1 -> 0
            x -> 0"#]]
        .assert_eq(&folded.join("\n"));
    }
}
