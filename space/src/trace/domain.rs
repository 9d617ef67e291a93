//! How many decisions a sampling instruction has, and whether that number
//! depends on earlier decisions.
//!
//! A perfect tiling of a loop whose extent comes from earlier sampled
//! factors (the parallel rule's fused outer loops, for instance) has a
//! domain that changes with those factors. Counting it at one draw would
//! understate the space; instead the count is taken at a multiple `P` of
//! every extent the loop can have, which bounds it from above: a tiling
//! `(f1, .., fn)` of a divisor `E` of `P` maps one-to-one to the tiling
//! `(f1 * P / E, f2, .., fn)` of `P`, with the same innermost factor.

use super::bindings::Bindings;
use super::rv::{LoopRv, ValueRv};
use super::{Inst, TExpr};
use crate::expr::simplify;
use crate::ids::LoopId;
use crate::ir::Nest;
use crate::sample::{count_perfect, lanes_per_granule};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;
use std::fmt;

/// The number of decisions of one sampling instruction, or of a whole space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Exactly this many.
    Exact(u128),
    /// At most this many (the number depends on earlier decisions).
    AtMost(u128),
    /// Not known: the space could not be drawn from, or the domain depends
    /// on earlier decisions in a way that is not bounded (a perfect tiling
    /// of loops that a non-perfect tiling made).
    Unknown,
}

impl Count {
    /// The number, exact or an upper bound (`None` if unknown).
    pub fn value(self) -> Option<u128> {
        match self {
            Count::Exact(v) | Count::AtMost(v) => Some(v),
            Count::Unknown => None,
        }
    }

    /// True for an exact count.
    pub fn is_exact(self) -> bool {
        matches!(self, Count::Exact(_))
    }

    fn combine(self, other: Count, op: impl Fn(u128, u128) -> u128) -> Count {
        match (self, other) {
            (Count::Unknown, _) | (_, Count::Unknown) => Count::Unknown,
            (Count::Exact(a), Count::Exact(b)) => Count::Exact(op(a, b)),
            (a, b) => Count::AtMost(op(a.value().unwrap_or(0), b.value().unwrap_or(0))),
        }
    }

    /// The count of independent choices made one after the other (saturating).
    pub fn times(self, other: Count) -> Count {
        self.combine(other, u128::saturating_mul)
    }

    /// The count of alternatives (saturating).
    pub fn plus(self, other: Count) -> Count {
        self.combine(other, u128::saturating_add)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Exact(v) => write!(f, "{v}"),
            Count::AtMost(v) => write!(f, "<= {v}"),
            Count::Unknown => f.write_str("unknown"),
        }
    }
}

/// A multiple of every extent a loop can take, as a product over the
/// perfect splits its levels come from: levels of one split multiply to at
/// most that split's extent, so each split counts once, however many of its
/// levels a fuse joins.
type Multiple = Option<BTreeMap<usize, i64>>;

fn product(m: &Multiple) -> Option<i64> {
    m.as_ref()?.values().try_fold(1i64, |a, p| a.checked_mul(*p))
}

/// Which loops have extents that depend on sampled decisions, and a
/// multiple of every extent each can take (when one is known).
#[derive(Default)]
pub(super) struct Provenance {
    /// Results of perfect tilings (their splits divide exactly).
    perfect: HashSet<ValueRv>,
    /// Results of other sampling instructions.
    sampled: HashSet<ValueRv>,
    /// Loops whose extent depends on decisions.
    varying: HashMap<LoopId, Multiple>,
    /// Perfect splits seen so far (group ids).
    splits: usize,
}

/// Loops, by random variable, whose extents depend on decisions.
pub(super) struct Varying {
    outs: Vec<LoopRv>,
    multiple: Multiple,
}

/// A multiple of every extent loop `l` can take, if one is known.
fn extent_multiple(p: &Provenance, nest: &Nest, l: LoopId) -> Option<i64> {
    match p.varying.get(&l) {
        Some(m) => product(m),
        None => simplify(nest.extent(l), nest).as_int(),
    }
}

impl Provenance {
    /// The count of a sampling instruction whose draw (at the current
    /// decisions) had `size` choices. `vars` are the bindings after it ran.
    pub(super) fn count(&self, inst: &Inst, size: u128, vars: &Bindings, nest: &Nest) -> Count {
        match inst {
            Inst::SamplePerfectTile { loop_, n, max_innermost_factor, .. } => {
                let Some(l) = vars.loop_(*loop_) else { return Count::Exact(size) };
                if !self.varying.contains_key(&l) {
                    return Count::Exact(size);
                }
                match (extent_multiple(self, nest, l), n) {
                    (_, 1) => Count::AtMost(1),
                    (Some(p), _) => Count::AtMost(count_perfect(p, *n, *max_innermost_factor).max(size)),
                    (None, _) => Count::Unknown,
                }
            }
            // The domain depends only on the lanes of a granule, which may
            // change with the sampled vector kind.
            Inst::SampleMixedTile { loop_, .. } | Inst::SampleScalableTile { loop_, .. } => {
                let Some(l) = vars.loop_(*loop_) else { return Count::Exact(size) };
                let bits = nest.widest_bits(l);
                let lanes = lanes_per_granule(&nest.caps, bits);
                if nest.kinds.iter().all(|(_, c)| lanes_per_granule(c, bits) == lanes) {
                    Count::Exact(size)
                } else {
                    Count::Unknown
                }
            }
            _ => Count::Exact(size),
        }
    }

    /// Records what a sampling instruction produced, and, for a split or
    /// fuse that makes loops whose extents depend on decisions, which of its
    /// results vary (with a multiple of their extents). Runs before the
    /// instruction is applied, while its input loops still exist.
    pub(super) fn before(&mut self, inst: &Inst, vars: &Bindings, nest: &Nest) -> Option<Varying> {
        match inst {
            Inst::SamplePerfectTile { outs, .. } => self.perfect.extend(outs.iter().copied()),
            Inst::SampleMixedTile { outs, .. } | Inst::SampleScalableTile { outs, .. } => {
                self.sampled.extend(outs.iter().copied())
            }
            Inst::SampleCategorical { out, .. } => {
                self.sampled.insert(*out);
            }
            Inst::Split { outs, loop_, factors } => {
                let l = vars.loop_(*loop_)?;
                let uses_decision = factors.iter().flatten().any(|f| self.uses(f)) || self.varying.contains_key(&l);
                if !uses_decision {
                    return None;
                }
                let all_perfect = factors.iter().all(|f| matches!(f, Some(TExpr::Rv(n)) if self.perfect.contains(n)));
                let multiple = match (all_perfect, extent_multiple(self, nest, l)) {
                    (true, Some(p)) => {
                        self.splits += 1;
                        Some(BTreeMap::from([(self.splits, p)]))
                    }
                    _ => None,
                };
                return Some(Varying { outs: outs.clone(), multiple });
            }
            Inst::Fuse { out, loops } => {
                let ls: Vec<LoopId> = loops.iter().filter_map(|n| vars.loop_(*n)).collect();
                if !ls.iter().any(|l| self.varying.contains_key(l)) {
                    return None;
                }
                // Loops that do not vary are groups of their own.
                let mut multiple: Multiple = Some(BTreeMap::new());
                for l in ls {
                    let part: Multiple = match self.varying.get(&l) {
                        Some(m) => m.clone(),
                        None => simplify(nest.extent(l), nest).as_int().map(|e| {
                            self.splits += 1;
                            BTreeMap::from([(self.splits, e)])
                        }),
                    };
                    multiple = match (multiple, part) {
                        (Some(mut a), Some(b)) => {
                            a.extend(b);
                            Some(a)
                        }
                        _ => None,
                    };
                }
                return Some(Varying { outs: vec![*out], multiple });
            }
            _ => {}
        }
        None
    }

    /// Marks the loops a split or fuse made as varying (`vars`: the bindings after it).
    pub(super) fn after(&mut self, v: Varying, vars: &Bindings) {
        for o in &v.outs {
            if let Some(l) = vars.loop_(*o) {
                self.varying.insert(l, v.multiple.clone());
            }
        }
    }

    fn uses(&self, e: &TExpr) -> bool {
        match e {
            TExpr::Rv(n) => self.perfect.contains(n) || self.sampled.contains(n),
            TExpr::Int(_) | TExpr::VScale => false,
            TExpr::Add(a, b) | TExpr::Sub(a, b) | TExpr::Mul(a, b) => self.uses(a) || self.uses(b),
        }
    }
}
