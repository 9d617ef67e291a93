//! Memoized canonicalization: a result is reused for the same expression when the range context answers every question the first computation asked of it the same way.
//!
//! Schedule replay and lowering simplify the same index expressions over
//! and over (every split or fuse rewrites every binding of a block, and a
//! search replays thousands of traces that share most of their
//! instructions). The simplifier is a pure function of the expression and
//! of the context's answers (variable extents, integer tensor ranges, the
//! vscale values), so each entry records the questions its computation
//! asked and their answers, and a lookup asks them again: a hit is exactly
//! the result a fresh computation would give, whatever the context.
//!
//! The tables are per thread (no locking) and bounded: a table that grows
//! past [`MAX_ENTRIES`] expressions is emptied. An expression is hashed
//! once per call, and the table keeps the hash with it: neither adding an
//! entry nor growing the table walks an expression tree again.

use super::bounds::RangeCtx;
use super::Expr;
use crate::ids::{TensorId, VarId};
use hashbrown::HashTable;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::thread::LocalKey;

/// Distinct expressions a table holds before it is emptied.
const MAX_ENTRIES: usize = 1 << 16;

/// Results kept per expression (for different contexts); the oldest goes first.
const MAX_PER_EXPR: usize = 8;

/// The questions a computation asked of its context, with the answers.
#[derive(Default)]
struct Answers {
    extents: Vec<(VarId, Option<Expr>)>,
    ranges: Vec<(TensorId, Option<(i64, i64)>)>,
}

impl Answers {
    /// True if `ctx` gives the same answers.
    fn hold_in(&self, ctx: &dyn RangeCtx) -> bool {
        self.extents.iter().all(|(v, x)| ctx.var_extent_is(*v, x.as_ref()))
            && self.ranges.iter().all(|(t, r)| ctx.tensor_range(*t) == *r)
    }
}

/// One remembered result and what it depended on.
struct Entry<T> {
    vscales: Vec<u32>,
    answers: Answers,
    value: T,
}

/// An expression, its hash and its results; several when contexts differ.
type Slot<T> = (u64, Expr, Vec<Entry<T>>);

/// Results per expression, found by the expression's hash.
pub(super) struct Table<T>(HashTable<Slot<T>>);

impl<T> Default for Table<T> {
    fn default() -> Table<T> {
        Table(HashTable::new())
    }
}

/// The hash a table files `e` under.
fn hash_of(e: &Expr) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    e.hash(&mut h);
    h.finish()
}

/// A context that forwards to another and records what was asked.
struct Recorder<'a> {
    inner: &'a dyn RangeCtx,
    answers: RefCell<Answers>,
}

impl RangeCtx for Recorder<'_> {
    fn var_extent(&self, v: VarId) -> Option<Expr> {
        let x = self.inner.var_extent(v);
        let mut a = self.answers.borrow_mut();
        if !a.extents.iter().any(|(w, _)| *w == v) {
            a.extents.push((v, x.clone()));
        }
        x
    }
    fn tensor_range(&self, t: TensorId) -> Option<(i64, i64)> {
        let r = self.inner.tensor_range(t);
        let mut a = self.answers.borrow_mut();
        if !a.ranges.iter().any(|(u, _)| *u == t) {
            a.ranges.push((t, r));
        }
        r
    }
    fn vscales(&self) -> &[u32] {
        self.inner.vscales()
    }
}

/// `compute(e, ctx)`, or the result remembered in `table` for `e` under the
/// same answers from `ctx`. `compute` must depend on nothing but `e` and
/// what it asks of the context it is given.
pub(super) fn cached<T: Clone + 'static>(
    table: &'static LocalKey<RefCell<Table<T>>>,
    e: &Expr,
    ctx: &dyn RangeCtx,
    compute: impl FnOnce(&Expr, &dyn RangeCtx) -> T,
) -> T {
    // Leaves are cheaper to compute than to look up.
    if matches!(e, Expr::Int(_) | Expr::Var(_) | Expr::VScale) {
        return compute(e, ctx);
    }
    let hash = hash_of(e);
    let same = |(h, x, _): &Slot<T>| *h == hash && x == e;
    let found = table.with(|t| {
        let t = t.borrow();
        let (_, _, entries) = t.0.find(hash, same)?;
        entries.iter().find(|en| en.vscales == ctx.vscales() && en.answers.hold_in(ctx)).map(|en| en.value.clone())
    });
    if let Some(v) = found {
        return v;
    }
    let recorder = Recorder { inner: ctx, answers: RefCell::new(Answers::default()) };
    let value = compute(e, &recorder);
    let entry = Entry { vscales: ctx.vscales().to_vec(), answers: recorder.answers.into_inner(), value: value.clone() };
    table.with(|t| {
        let mut t = t.borrow_mut();
        if t.0.len() >= MAX_ENTRIES {
            t.0.clear();
        }
        match t.0.find_mut(hash, same) {
            Some((_, _, entries)) => {
                if entries.len() >= MAX_PER_EXPR {
                    entries.remove(0);
                }
                entries.push(entry);
            }
            None => {
                t.0.insert_unique(hash, (hash, e.clone(), vec![entry]), |(h, _, _)| *h);
            }
        }
    });
    value
}
