//! Which random variables an instruction uses (with the kinds it expects of them) and which it defines.

use super::rv::{Kind, RvId, Use, ANY, ANY_VALUE};
use super::{Cand, Choice, Inst, SArg, TExpr};

/// The kind of value a candidate of `sample_categorical` is.
pub(super) fn cand_kind(c: &Cand) -> Kind {
    match c {
        Cand::Tail(_) => Kind::Tail,
        Cand::Kind(_) => Kind::Vectors,
        Cand::Int(_) => Kind::Int,
    }
}

fn expr_uses(e: &TExpr, wants: &'static [Kind], out: &mut Vec<Use>) {
    match e {
        TExpr::Rv(v) => out.push(Use::value(*v, wants)),
        TExpr::Add(a, b) | TExpr::Sub(a, b) | TExpr::Mul(a, b) => {
            expr_uses(a, wants, out);
            expr_uses(b, wants, out);
        }
        TExpr::Int(_) | TExpr::VScale => {}
    }
}

fn choice_use<T>(c: &Choice<T>, wants: &'static [Kind], out: &mut Vec<Use>) {
    if let Choice::Rv(v) = c {
        out.push(Use::value(*v, wants));
    }
}

impl Inst {
    /// The random variables this instruction reads, in argument order, each
    /// with the kinds it may hold there.
    pub(super) fn uses(&self) -> Vec<Use> {
        let mut out = Vec::new();
        match self {
            Inst::GetBlock { .. } | Inst::SampleCategorical { .. } => {}
            Inst::GetLoops { block, .. } => out.push(Use::block(*block)),
            Inst::Split { loop_, factors, .. } => {
                out.push(Use::loop_(*loop_));
                for f in factors.iter().flatten() {
                    expr_uses(f, &[Kind::Int], &mut out);
                }
            }
            Inst::Fuse { loops, .. } | Inst::Reorder { loops } => out.extend(loops.iter().map(|l| Use::loop_(*l))),
            Inst::Vectorize { loop_, tail } => {
                out.push(Use::loop_(*loop_));
                choice_use(tail, &[Kind::Tail], &mut out);
            }
            Inst::Unroll { loop_ } | Inst::Parallel { loop_ } | Inst::Tensorize { loop_, .. } => {
                out.push(Use::loop_(*loop_))
            }
            Inst::CacheRead { block, at, .. } | Inst::CacheWrite { block, at, .. } => {
                out.push(Use::block(*block));
                out.push(Use::loop_(*at));
            }
            Inst::ComputeAt { block, loop_ } | Inst::DecomposeReduction { block, loop_, .. } => {
                out.push(Use::block(*block));
                out.push(Use::loop_(*loop_));
            }
            Inst::Annotate { target, value, .. } => {
                out.push(Use { index: target.index(), wants: &[Kind::Loop, Kind::Block] });
                if let SArg::Rv(v) = value {
                    out.push(Use::value(*v, ANY_VALUE));
                }
            }
            Inst::UseVectors { kind } => choice_use(kind, &[Kind::Vectors], &mut out),
            Inst::SamplePerfectTile { loop_, .. } => out.push(Use::loop_(*loop_)),
            Inst::SampleScalableTile { loop_, decision, .. } | Inst::SampleMixedTile { loop_, decision, .. } => {
                out.push(Use::loop_(*loop_));
                // Decision entries are constants; replay refuses anything else.
                for e in decision.iter().flatten() {
                    expr_uses(e, ANY, &mut out);
                }
            }
        }
        out
    }

    /// The random variables this instruction defines, with the kind each holds.
    pub(super) fn defs(&self) -> Vec<(usize, Kind)> {
        let loops = |ls: &[super::LoopRv]| ls.iter().map(|l| (l.index(), Kind::Loop)).collect();
        let values = |vs: &[super::ValueRv]| vs.iter().map(|v| (v.index(), Kind::Int)).collect();
        match self {
            Inst::GetBlock { out, .. }
            | Inst::CacheRead { out, .. }
            | Inst::CacheWrite { out, .. }
            | Inst::DecomposeReduction { out, .. } => vec![(out.index(), Kind::Block)],
            Inst::GetLoops { outs, .. } | Inst::Split { outs, .. } => loops(outs),
            Inst::Fuse { out, .. } => vec![(out.index(), Kind::Loop)],
            Inst::SamplePerfectTile { outs, .. }
            | Inst::SampleScalableTile { outs, .. }
            | Inst::SampleMixedTile { outs, .. } => values(outs),
            Inst::SampleCategorical { out, candidates, .. } => {
                vec![(out.index(), candidates.first().map_or(Kind::Int, cand_kind))]
            }
            Inst::Reorder { .. }
            | Inst::Vectorize { .. }
            | Inst::Unroll { .. }
            | Inst::Parallel { .. }
            | Inst::Tensorize { .. }
            | Inst::ComputeAt { .. }
            | Inst::Annotate { .. }
            | Inst::UseVectors { .. } => Vec::new(),
        }
    }
}
