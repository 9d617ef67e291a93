//! `sample_scalable_tile` and `sample_mixed_tile`: tilings whose levels may
//! be multiples of `vscale`.

use super::SampleError;
use crate::caps::VectorCaps;
use crate::expr::Expr;
use crate::trace::TExpr;
use rand::Rng;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::RefCell;
use std::rc::Rc;

/// The factor of one inner tiling level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileChoice {
    /// A constant factor.
    Fixed(i64),
    /// `k * vscale` (k a multiple of the lanes of one granule).
    Scalable(i64),
}

impl TileChoice {
    /// The factor as an index expression.
    pub fn expr(self) -> Expr {
        match self {
            TileChoice::Fixed(c) => Expr::Int(c),
            TileChoice::Scalable(k) => Expr::vscale_times(k),
        }
    }

    /// The factor as written in a trace decision (`4`, `8*vscale`).
    pub fn texpr(self) -> TExpr {
        match self {
            TileChoice::Fixed(c) => TExpr::Int(c),
            TileChoice::Scalable(1) => TExpr::VScale,
            TileChoice::Scalable(k) => TExpr::Mul(Box::new(TExpr::Int(k)), Box::new(TExpr::VScale)),
        }
    }

    /// Reads a decision entry: an integer or `k*vscale`.
    pub fn from_texpr(e: &TExpr) -> Option<TileChoice> {
        match e {
            TExpr::Int(c) => Some(TileChoice::Fixed(*c)),
            TExpr::VScale => Some(TileChoice::Scalable(1)),
            TExpr::Mul(a, b) => match (&**a, &**b) {
                (TExpr::Int(k), TExpr::VScale) | (TExpr::VScale, TExpr::Int(k)) => Some(TileChoice::Scalable(*k)),
                _ => None,
            },
            _ => None,
        }
    }

    /// True for `k * vscale`.
    pub fn is_scalable(self) -> bool {
        matches!(self, TileChoice::Scalable(_))
    }
}

/// Lanes of `dtype_bits`-wide elements in one vscale granule of `caps`.
pub fn lanes_per_granule(caps: &VectorCaps, dtype_bits: u32) -> i64 {
    i64::from(caps.lanes_per_granule(dtype_bits))
}

/// The decisions of a scalable or mixed tiling of `n` levels (the outermost
/// level is always `ceildiv(extent, product of the others)` and not part of
/// the decision).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileDomain {
    /// Number of levels.
    pub n: usize,
    /// Lanes of one granule for the loop's data type.
    pub lanes: i64,
    /// Largest fixed factor of a level.
    pub max_fixed: i64,
    /// Largest multiplier `m` of a scalable level (`m * lanes * vscale`).
    /// In a mixed domain, 0 means no level is scalable (see [`TileDomain::fixed_only`]).
    pub max_vscale: i64,
    /// Mixed: any level may be fixed or scalable (at most one scalable).
    /// Scalable: the innermost is scalable and the others fixed.
    pub mixed: bool,
}

/// A domain's decisions, by kind of tiling (fixed, scalable, mixed), and as a set.
struct Enumerated {
    all: Vec<Vec<TileChoice>>,
    strata: [Vec<usize>; 3],
    set: HashSet<Vec<TileChoice>>,
}

/// Largest fixed factor of a middle level of a scalable tiling.
const SCALABLE_MIDDLE_MAX: i64 = 8;

/// The most decisions a scalable or mixed tiling instruction may enumerate
/// (the shipped rules' four-level tilings have a few thousand).
pub const MAX_TILE_DECISIONS: i64 = 1 << 20;

impl TileDomain {
    /// Refuses domains too large to enumerate: more than
    /// [`MAX_TILE_DECISIONS`] combinations of level choices, or maxima beyond
    /// [`crate::limits::MAX_EXTENT`].
    pub fn check_size(&self) -> Result<(), super::SampleError> {
        use crate::limits::MAX_EXTENT;
        let too_large = || {
            super::SampleError(format!(
                "a tiling of {} levels with max_innermost_fixed={} and max_innermost_vscale={} has more than \
                 {MAX_TILE_DECISIONS} decisions, the limit",
                self.n, self.max_fixed, self.max_vscale
            ))
        };
        if self.max_fixed > MAX_EXTENT || self.max_vscale > MAX_EXTENT || self.n > 64 {
            return Err(too_large());
        }
        let per_level = self.max_fixed.max(1) + i64::from(64 - self.max_vscale.max(1).leading_zeros()) + 1;
        let levels = u32::try_from(self.n.saturating_sub(1)).map_err(|_| too_large())?;
        match per_level.checked_pow(levels) {
            Some(total) if total <= MAX_TILE_DECISIONS => Ok(()),
            _ => Err(too_large()),
        }
    }

    /// A mixed domain with `max_vscale` 0: no level is scalable, and every
    /// inner level, the innermost included, is any factor from 1 to
    /// `max_fixed`. This tiles a loop that is not vectorized (the rows of a
    /// register tile) without requiring factors that divide its extent.
    pub fn fixed_only(&self) -> bool {
        self.mixed && self.max_vscale == 0
    }

    /// Fixed factors of a level: any count of blocks (1, 2, 3, ..) for
    /// levels outside the innermost, powers of two for the innermost (when
    /// fixed, it is the vector of a mixed tiling: a vector length), unless
    /// the domain is [fixed only](TileDomain::fixed_only).
    fn fixed_choices(&self, innermost: bool) -> Vec<i64> {
        if !self.mixed && !innermost {
            return (1..=SCALABLE_MIDDLE_MAX).collect();
        }
        if !innermost || self.fixed_only() {
            return (1..=self.max_fixed.max(1)).collect();
        }
        let mut v = Vec::new();
        let mut f = 1;
        while f <= self.max_fixed.max(1) {
            v.push(f);
            f *= 2;
        }
        v
    }

    /// `m * lanes` for `m` a power of two up to `max_vscale` (vectors of a
    /// power-of-two number of granules: what backends can legalize).
    fn scalable_choices(&self) -> Vec<i64> {
        let mut v = Vec::new();
        if self.fixed_only() {
            return v;
        }
        let mut m = 1;
        while m <= self.max_vscale.max(1) {
            v.push(m * self.lanes);
            m *= 2;
        }
        v
    }

    /// Every decision, inner levels outermost first.
    pub fn all(&self) -> Vec<Vec<TileChoice>> {
        self.enumerated().all.clone()
    }

    /// The decisions, enumerated once per domain and thread.
    fn enumerated(&self) -> Rc<Enumerated> {
        thread_local! {
            static CACHE: RefCell<HashMap<TileDomain, Rc<Enumerated>>> = RefCell::default();
        }
        CACHE.with(|c| {
            c.borrow_mut()
                .entry(self.clone())
                .or_insert_with(|| {
                    let all = self.enumerate();
                    let mut strata: [Vec<usize>; 3] = Default::default();
                    for (i, d) in all.iter().enumerate() {
                        let scalable = d.iter().any(|c| c.is_scalable());
                        let fixed_above_1 = d.iter().any(|c| matches!(c, TileChoice::Fixed(f) if *f > 1));
                        strata[usize::from(scalable) + usize::from(scalable && fixed_above_1)].push(i);
                    }
                    let set = all.iter().cloned().collect();
                    Rc::new(Enumerated { all, strata, set })
                })
                .clone()
        })
    }

    fn enumerate(&self) -> Vec<Vec<TileChoice>> {
        let levels = self.n.saturating_sub(1);
        let mut out: Vec<(Vec<TileChoice>, bool)> = vec![(Vec::new(), false)];
        for l in 0..levels {
            let innermost = l + 1 == levels;
            let mut next = Vec::new();
            for (prefix, has_scalable) in &out {
                let fixed_ok = self.mixed || !innermost;
                let scalable_ok = if self.mixed { !has_scalable } else { innermost };
                if fixed_ok {
                    for f in self.fixed_choices(innermost) {
                        let mut p = prefix.clone();
                        p.push(TileChoice::Fixed(f));
                        next.push((p, *has_scalable));
                    }
                }
                if scalable_ok {
                    for k in self.scalable_choices() {
                        let mut p = prefix.clone();
                        p.push(TileChoice::Scalable(k));
                        next.push((p, true));
                    }
                }
            }
            out = next;
        }
        out.into_iter().map(|(p, _)| p).collect()
    }

    /// Number of decisions.
    pub fn size(&self) -> u128 {
        self.enumerated().all.len() as u128
    }

    /// Draws a decision: first a kind of tiling uniformly among those the
    /// domain has (all levels fixed; scalable with every fixed level 1;
    /// scalable and fixed levels above 1 mixed), then a decision of that
    /// kind uniformly. Drawing uniformly over the whole domain would almost
    /// never give a purely scalable tiling: there are few of them.
    pub fn sample(&self, rng: &mut impl Rng) -> Vec<TileChoice> {
        let e = self.enumerated();
        let present: Vec<&Vec<usize>> = e.strata.iter().filter(|s| !s.is_empty()).collect();
        let stratum = present[rng.gen_range(0..present.len())];
        e.all[stratum[rng.gen_range(0..stratum.len())]].clone()
    }

    /// Checks a recorded decision.
    pub fn check(&self, d: &[TileChoice]) -> Result<(), SampleError> {
        if d.len() + 1 != self.n {
            return Err(SampleError(format!("decision has {} entries, expected {}", d.len(), self.n - 1)));
        }
        if self.enumerated().set.contains(d) {
            return Ok(());
        }
        let shown: Vec<String> = d.iter().map(|c| c.texpr().named(&[]).to_string()).collect();
        Err(SampleError(format!(
            "decision [{}] is not in the domain ({} lanes per granule, fixed factors up to {}, vscale multipliers up to {})",
            shown.join(", "),
            self.lanes,
            self.max_fixed,
            self.max_vscale
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_have_the_documented_shape() {
        let s = TileDomain { n: 2, lanes: 4, max_fixed: 0, max_vscale: 4, mixed: false };
        assert_eq!(s.size(), 3);
        assert!(s.all().iter().all(|d| d[0].is_scalable()));
        let s3 = TileDomain { n: 3, lanes: 4, max_fixed: 0, max_vscale: 2, mixed: false };
        assert_eq!(s3.size(), 8 * 2);
        assert!(s3.all().contains(&vec![TileChoice::Fixed(3), TileChoice::Scalable(8)]));
        let m = TileDomain { n: 3, lanes: 4, max_fixed: 8, max_vscale: 2, mixed: true };
        // Middle level: 1..=8 fixed or scalable (m = 1, 2); innermost: 1, 2, 4, 8 fixed or scalable.
        // All fixed 8 * 4, scalable middle 2 * 4, scalable innermost 8 * 2.
        assert_eq!(m.size(), 32 + 8 + 16);
        assert!(m.check(&[TileChoice::Fixed(3), TileChoice::Fixed(4)]).is_ok());
        assert!(m.check(&[TileChoice::Fixed(4), TileChoice::Fixed(3)]).is_err(), "a fixed vector of 3 lanes");
        assert!(m.all().iter().all(|d| d.iter().filter(|c| c.is_scalable()).count() <= 1));
        assert!(m.check(&[TileChoice::Fixed(4), TileChoice::Scalable(8)]).is_ok());
        assert!(m.check(&[TileChoice::Fixed(4), TileChoice::Scalable(12)]).is_err());
        assert_eq!(TileChoice::from_texpr(&TileChoice::Scalable(8).texpr()), Some(TileChoice::Scalable(8)));
    }

    #[test]
    fn a_mixed_domain_without_vscale_is_every_fixed_tiling_up_to_the_maximum() {
        let f = TileDomain { n: 3, lanes: 4, max_fixed: 8, max_vscale: 0, mixed: true };
        assert!(f.fixed_only());
        // Middle and innermost levels: 1..=8 each, nothing scalable.
        assert_eq!(f.size(), 64);
        assert!(f.all().iter().all(|d| d.iter().all(|c| !c.is_scalable())));
        assert!(f.check(&[TileChoice::Fixed(2), TileChoice::Fixed(6)]).is_ok(), "a register tile of 6 rows");
        assert!(f.check(&[TileChoice::Fixed(1), TileChoice::Fixed(9)]).is_err());
        assert!(f.check(&[TileChoice::Fixed(1), TileChoice::Scalable(4)]).is_err());
        let mut rng = crate::sample::task_rng(7, 0);
        let drawn: HashSet<Vec<TileChoice>> = (0..2000).map(|_| f.sample(&mut rng)).collect();
        assert_eq!(drawn.len(), 64, "every decision is drawn");
    }

    #[test]
    fn draws_give_each_kind_of_tiling_a_fair_share() {
        // 2,528 decisions, only 9 of them purely scalable.
        let m = TileDomain { n: 4, lanes: 4, max_fixed: 16, max_vscale: 4, mixed: true };
        assert_eq!(m.size(), 16 * 16 * 5 + 3 * 16 * 5 + 16 * 3 * 5 + 16 * 16 * 3);
        assert_eq!(
            m.all().iter().filter(|d| d.iter().all(|c| c.is_scalable() || *c == TileChoice::Fixed(1))).count(),
            1 + 9
        );
        let mut rng = crate::sample::task_rng(1, 0);
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            let d = m.sample(&mut rng);
            assert!(m.check(&d).is_ok());
            let scalable = d.iter().any(|c| c.is_scalable());
            let fixed = d.iter().any(|c| matches!(c, TileChoice::Fixed(f) if *f > 1));
            counts[usize::from(scalable) + usize::from(scalable && fixed)] += 1;
        }
        assert!(counts.iter().all(|c| (850..1150).contains(c)), "{counts:?}");
        // A purely scalable domain has a single kind.
        let s = TileDomain { n: 2, lanes: 4, max_fixed: 0, max_vscale: 4, mixed: false };
        assert!((0..50).all(|_| s.sample(&mut rng)[0].is_scalable()));
    }
}
