//! Versioning for the `peel` and `scalar` tail strategies.
//!
//! For a vector loop `V` the *full condition* says that every lane of the
//! current vector is active: each tail predicate of the blocks under `V`,
//! evaluated at the last lane. It is checked at the innermost enclosing loop
//! `T` whose variable it uses. When it is affine in `T`'s variable, `T` is
//! split into `[0, B)` (full vectors, unmasked) and `[B, extent)` (the tail:
//! masked for `peel`, a scalar loop for `scalar`); otherwise each iteration
//! of `T` branches between the two versions. If no enclosing loop is
//! involved, the branch sits around `V` itself.
//!
//! Unrolled loops get the same treatment for their *guards*: a tiling that
//! rounds up (a register tile of 6 rows over 127) leaves each unrolled
//! instance a condition such as `i2*6 + i3 < 127`. Evaluated at the last
//! instance it says that the whole tile is in bounds; where it is affine
//! in the innermost enclosing loop `T` it uses, `T` is split at the first
//! iteration whose tile is partial, and in the full part the guards are
//! not emitted (in particular not inside the reduction loop of a register
//! tile, where each would be a branch per step). A guard that every instance
//! shares (a split of a split gives each row the tile's own condition,
//! `i00*3 + i01 < 8`, beside its row's) joins them where the same loop's
//! split decides it too, and is not emitted in the full part either.

use rustc_hash::FxHashMap as HashMap;
use scaletune_space::expr::{linear_in, simplify, Expr};
use scaletune_space::ids::LoopId;
use scaletune_space::ir::{LoopKind, Nest, Node, Pred, Tail};

/// How a vector loop is emitted in the current version of its enclosing code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VecMode {
    /// All lanes active: no masks.
    Full,
    /// The tail: masked (`peel`) or scalar (`scalar`).
    Tail,
}

/// Versioning decided at one loop.
#[derive(Clone, Debug)]
pub(crate) struct Versioning {
    /// The vector loops (and unrolled loops with guards) whose modes this
    /// versioning sets.
    pub vloops: Vec<LoopId>,
    /// Conditions that together mean "all lanes active".
    pub conds: Vec<Pred>,
    /// When affine: the first iteration that is not full (`None`: branch per iteration).
    pub bound: Option<Expr>,
}

/// Versioning decisions for the whole nest.
#[derive(Clone, Debug, Default)]
pub(crate) struct TailPlan {
    /// Keyed by the loop `T` whose range is split (or whose body branches).
    pub at_loop: HashMap<LoopId, Versioning>,
    /// Keyed by the vector loop itself when the condition uses no loop variable.
    pub at_vector: HashMap<LoopId, Vec<Pred>>,
    /// Guards of the blocks under an unrolled loop, keyed by that loop: the
    /// predicates that hold for every instance when its mode is
    /// [`VecMode::Full`].
    pub guards: HashMap<LoopId, Vec<Pred>>,
}

impl TailPlan {
    pub fn build(nest: &Nest, vscale_const: Option<i64>) -> TailPlan {
        let mut plan = TailPlan::default();
        for v in nest.all_loops() {
            let LoopKind::Vectorize(tail) = nest.loop_(v).kind else { continue };
            if tail == Tail::Predicate {
                continue;
            }
            let var = nest.loop_(v).var;
            let mut last = nest.extent(v).clone() - 1;
            if let Some(c) = vscale_const {
                last = last.with_vscale(c);
            }
            let mut conds: Vec<Pred> = Vec::new();
            for b in nest.blocks_in(Node::Loop(v)) {
                for p in &nest.block(b).predicates {
                    if !p.lhs.uses_var(var) {
                        continue;
                    }
                    let at_last = p.lhs.substitute(&|x| (x == var).then(|| last.clone()));
                    let q = Pred { lhs: simplify(&at_last, nest), rhs: p.rhs.clone() };
                    if !conds.contains(&q) {
                        conds.push(q);
                    }
                }
            }
            if conds.is_empty() {
                continue;
            }
            let anc = nest.ancestors(Node::Loop(v));
            let t = anc.iter().rev().find(|a| {
                let av = nest.loop_(**a).var;
                conds.iter().any(|c| c.lhs.uses_var(av) || c.rhs.uses_var(av))
            });
            match t {
                None => {
                    plan.at_vector.insert(v, conds);
                }
                Some(t) => {
                    let entry = plan.at_loop.entry(*t).or_insert(Versioning {
                        vloops: Vec::new(),
                        conds: Vec::new(),
                        bound: None,
                    });
                    entry.vloops.push(v);
                    for c in conds {
                        if !entry.conds.contains(&c) {
                            entry.conds.push(c);
                        }
                    }
                }
            }
        }
        plan.add_guards(nest, vscale_const);
        let keys: Vec<LoopId> = plan.at_loop.keys().copied().collect();
        for t in keys {
            let bound = split_bound(nest, t, &plan.at_loop[&t].conds);
            if let Some(e) = plan.at_loop.get_mut(&t) {
                e.bound = bound;
            }
        }
        plan
    }
}

impl TailPlan {
    /// Versions the loop that decides whether an unrolled loop's guards all
    /// hold (see the module comment). A guard is a predicate of a block under
    /// the unrolled loop `U` that increases with `U`'s variable (a positive
    /// constant coefficient) and uses no variable of a loop inside `U` (`U`
    /// itself not inside a vector loop);
    /// the versioning is recorded only where it splits a serial or parallel
    /// loop at an affine bound, so no code is duplicated per iteration.
    fn add_guards(&mut self, nest: &Nest, vscale_const: Option<i64>) {
        for u in nest.all_loops() {
            if nest.loop_(u).kind != LoopKind::Unroll {
                continue;
            }
            let var = nest.loop_(u).var;
            let anc = nest.ancestors(Node::Loop(u));
            // Inside a vector loop, conditions are lane masks of their own.
            if anc.iter().any(|a| matches!(nest.loop_(*a).kind, LoopKind::Vectorize(_))) {
                continue;
            }
            let outer: Vec<_> = anc.iter().map(|a| nest.loop_(*a).var).collect();
            let mut last = nest.extent(u).clone() - 1;
            if let Some(c) = vscale_const {
                last = last.with_vscale(c);
            }
            // Guards that increase with the instance (checked at the last one),
            // and guards every instance shares (`i0*24 + i1 < 205` of a tiling
            // of three levels: the tile of tiles), which hold in the full part
            // only if they bound the split loop too.
            let (mut guards, mut conds) = (Vec::new(), Vec::new());
            let (mut shared, mut shared_conds) = (Vec::new(), Vec::new());
            for b in nest.blocks_in(Node::Loop(u)) {
                for p in &nest.block(b).predicates {
                    let vars_outside =
                        p.lhs.vars().iter().chain(p.rhs.vars().iter()).all(|x| *x == var || outer.contains(x));
                    if !vars_outside || p.rhs.uses_var(var) {
                        continue;
                    }
                    if !p.lhs.uses_var(var) {
                        let q = Pred { lhs: simplify(&p.lhs, nest), rhs: p.rhs.clone() };
                        push_new(&mut shared_conds, q);
                        push_new(&mut shared, p.clone());
                        continue;
                    }
                    let increasing = linear_in(&p.lhs, var, nest).and_then(|l| l.const_coeff()).is_some_and(|a| a > 0);
                    if !increasing {
                        continue;
                    }
                    let at_last = p.lhs.substitute(&|x| (x == var).then(|| last.clone()));
                    push_new(&mut conds, Pred { lhs: simplify(&at_last, nest), rhs: p.rhs.clone() });
                    push_new(&mut guards, p.clone());
                }
            }
            if conds.is_empty() {
                continue;
            }
            // With the shared guards if the loop that decides them all splits at
            // an affine bound; else, as before, the increasing ones alone.
            let with_shared: Vec<Pred> = conds.iter().chain(&shared_conds).cloned().collect();
            let (t, conds) = match (!shared.is_empty()).then(|| self.splittable(nest, &anc, &with_shared)).flatten() {
                Some(t) => {
                    guards.extend(shared);
                    (t, with_shared)
                }
                None => match self.splittable(nest, &anc, &conds) {
                    Some(t) => (t, conds),
                    None => continue,
                },
            };
            let entry =
                self.at_loop.entry(t).or_insert(Versioning { vloops: Vec::new(), conds: Vec::new(), bound: None });
            entry.vloops.push(u);
            for c in conds {
                if !entry.conds.contains(&c) {
                    entry.conds.push(c);
                }
            }
            self.guards.insert(u, guards);
        }
    }

    /// The innermost of `ancestors` (outermost first) whose variable `conds`
    /// use, if it is a serial or parallel loop that splits at an affine
    /// bound where they all begin to fail (together with the conditions
    /// versioned there already).
    fn splittable(&self, nest: &Nest, ancestors: &[LoopId], conds: &[Pred]) -> Option<LoopId> {
        let t = *ancestors.iter().rev().find(|a| {
            let av = nest.loop_(**a).var;
            conds.iter().any(|c| c.lhs.uses_var(av) || c.rhs.uses_var(av))
        })?;
        if !matches!(nest.loop_(t).kind, LoopKind::Serial | LoopKind::Parallel) {
            return None;
        }
        let mut all = self.at_loop.get(&t).map(|v| v.conds.clone()).unwrap_or_default();
        all.extend(conds.iter().cloned());
        split_bound(nest, t, &all).map(|_| t)
    }

    /// True if predicate `p` of a block under the loops `ancestors` is a
    /// guard known to hold in the current version ([`VecMode::Full`] of its
    /// unrolled loop).
    pub(crate) fn guard_holds(&self, modes: &HashMap<LoopId, VecMode>, ancestors: &[LoopId], p: &Pred) -> bool {
        ancestors
            .iter()
            .any(|u| modes.get(u) == Some(&VecMode::Full) && self.guards.get(u).is_some_and(|g| g.contains(p)))
    }
}

/// Appends `x` to `v` unless it is there already.
fn push_new(v: &mut Vec<Pred>, x: Pred) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// `min_i floordiv(rhs_i - rest_i - 1, a_i) + 1`, clamped to `[0, extent]`,
/// when every condition is `a_i * t + rest_i < rhs_i` with constant `a_i > 0`.
fn split_bound(nest: &Nest, t: LoopId, conds: &[Pred]) -> Option<Expr> {
    if nest.loop_(t).kind == LoopKind::Unroll {
        return None;
    }
    let var = nest.loop_(t).var;
    let mut bound: Option<Expr> = None;
    for c in conds {
        if c.rhs.uses_var(var) {
            return None;
        }
        let lin = linear_in(&c.lhs, var, nest)?;
        let a = lin.const_coeff().filter(|a| *a > 0)?;
        let b = (c.rhs.clone() - lin.rest - 1).floordiv(Expr::Int(a)) + 1;
        bound = Some(match bound {
            None => b,
            Some(x) => x.min(b),
        });
    }
    let b = bound?.min(nest.extent(t).clone()).max(Expr::Int(0));
    Some(simplify(&b, nest))
}
