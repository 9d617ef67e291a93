//! Mutating tile sizes: move a factor between levels, or flip a level
//! between fixed and scalable.

use super::Mutator;
use crate::ir::Nest;
use crate::sample::{lanes_per_granule, TileChoice, TileDomain};
use crate::trace::{Bindings, Inst, TExpr, Trace};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Changes one tiling decision: for perfect tiles, moves a prime factor of
/// one level to another level (the product stays the extent); for scalable
/// and mixed tiles, picks a decision that differs in exactly one level (a
/// different factor, or a level flipped between fixed and scalable).
pub struct MutateTileSize;

fn smallest_prime_factor(x: i64) -> Option<i64> {
    (2..=x).find(|p| x % p == 0)
}

/// True if the tiling at `i` feeds a split whose outer loop is made `parallel`.
pub(crate) fn feeds_parallel(trace: &Trace, i: usize) -> bool {
    let Inst::SamplePerfectTile { outs, .. } = &trace.insts[i] else { return false };
    trace.insts[i + 1..].iter().any(|x| match x {
        Inst::Split { outs: louts, factors, .. } => {
            factors.iter().any(|f| matches!(f, Some(TExpr::Rv(n)) if outs.contains(n)))
                && trace.insts.iter().any(|y| matches!(y, Inst::Parallel { loop_ } if Some(loop_) == louts.first()))
        }
        _ => false,
    })
}

fn tilings(trace: &Trace, parallel: bool) -> Vec<usize> {
    (0..trace.insts.len())
        .filter(|i| {
            matches!(
                trace.insts[*i],
                Inst::SamplePerfectTile { decision: Some(_), .. }
                    | Inst::SampleScalableTile { decision: Some(_), .. }
                    | Inst::SampleMixedTile { decision: Some(_), .. }
            ) && feeds_parallel(trace, *i) == parallel
        })
        .collect()
}

/// Changes the number of chunks of a parallel loop (the tiling that splits
/// off its parallel part), like [`MutateTileSize`].
pub struct MutateParallel;

impl Mutator for MutateParallel {
    fn name(&self) -> &'static str {
        "parallel-extent"
    }

    fn candidates(&self, trace: &Trace) -> Vec<usize> {
        tilings(trace, true)
    }

    fn redecide(&self, trace: &Trace, i: usize, before: &(Nest, Bindings), rng: &mut ChaCha8Rng) -> Option<Inst> {
        MutateTileSize.redecide(trace, i, before, rng)
    }
}

impl Mutator for MutateTileSize {
    fn name(&self) -> &'static str {
        "tile-size"
    }

    fn candidates(&self, trace: &Trace) -> Vec<usize> {
        tilings(trace, false)
    }

    fn redecide(&self, trace: &Trace, i: usize, before: &(Nest, Bindings), rng: &mut ChaCha8Rng) -> Option<Inst> {
        let mut inst = trace.insts[i].clone();
        match &mut inst {
            Inst::SamplePerfectTile { decision: Some(d), max_innermost_factor, .. } => {
                let from: Vec<usize> = (0..d.len()).filter(|k| d[*k] > 1).collect();
                if from.is_empty() || d.len() < 2 {
                    return None;
                }
                let a = from[rng.gen_range(0..from.len())];
                let mut b = rng.gen_range(0..d.len() - 1);
                if b >= a {
                    b += 1;
                }
                let p = smallest_prime_factor(d[a])?;
                d[a] /= p;
                d[b] *= p;
                if d.last().copied().unwrap_or(1) > *max_innermost_factor {
                    return None;
                }
                Some(inst)
            }
            Inst::SampleScalableTile { loop_, n, decision: Some(d), max_innermost_vscale, .. }
            | Inst::SampleMixedTile { loop_, n, decision: Some(d), max_innermost_vscale, .. } => {
                let (probe, env) = before;
                let l = env.loop_(*loop_)?;
                let lanes = lanes_per_granule(&probe.caps, probe.widest_bits(l));
                let (max_fixed, mixed) = match &trace.insts[i] {
                    Inst::SampleMixedTile { max_innermost_fixed, .. } => (*max_innermost_fixed, true),
                    _ => (0, false),
                };
                let domain = TileDomain { n: *n, lanes, max_fixed, max_vscale: *max_innermost_vscale, mixed };
                let cur: Vec<TileChoice> = d.iter().filter_map(TileChoice::from_texpr).collect();
                let near: Vec<Vec<TileChoice>> = domain
                    .all()
                    .into_iter()
                    .filter(|x| x.iter().zip(&cur).filter(|(p, q)| p != q).count() == 1)
                    .collect();
                if near.is_empty() {
                    return None;
                }
                let pick = &near[rng.gen_range(0..near.len())];
                *d = pick.iter().map(|c| c.texpr()).collect();
                Some(inst)
            }
            _ => None,
        }
    }
}
