//! `sample_scalable_tile` and `sample_mixed_tile`: tilings whose levels may be multiples of vscale, outermost by ceildiv.

use super::Stepped;
use crate::expr::{simplify, Expr};
use crate::ids::LoopId;
use crate::ir::Nest;
use crate::sample::{lanes_per_granule, TileChoice, TileDomain};
use crate::trace::apply::Env;
use crate::trace::{Inst, TraceError, TraceErrorKind, Value, ValueRv};
use rand_chacha::ChaCha8Rng;

/// Binds tile factors (outermost = ceildiv of the extent by the others).
fn bind_tile(env: &mut Env, nest: &Nest, l: LoopId, outs: &[ValueRv], inner: &[TileChoice]) {
    let prod = inner.iter().fold(Expr::Int(1), |a, c| a * c.expr());
    let outer = simplify(&nest.extent(l).clone().ceildiv(prod), nest);
    env.bind(outs[0], Value::Expr(outer));
    for (o, c) in outs[1..].iter().zip(inner) {
        env.bind(*o, Value::Expr(simplify(&c.expr(), nest)));
    }
}

/// Samples (or checks the recorded decision of) either tiling instruction.
pub(super) fn step(env: &mut Env, nest: &mut Nest, rng: Option<&mut ChaCha8Rng>) -> Result<Stepped, TraceError> {
    let (outs, loop_, n, decision, max_fixed, max_vscale, mixed) = match env.inst {
        Inst::SampleMixedTile { outs, loop_, n, decision, max_innermost_fixed, max_innermost_vscale } => {
            (outs, loop_, *n, decision, *max_innermost_fixed, *max_innermost_vscale, true)
        }
        Inst::SampleScalableTile { outs, loop_, n, decision, max_innermost_vscale } => {
            (outs, loop_, *n, decision, 0, *max_innermost_vscale, false)
        }
        _ => return Err(env.err(TraceErrorKind::WrongKind, "not a scalable or mixed tiling instruction".into())),
    };
    let l = env.loop_(*loop_)?;
    let lanes = lanes_per_granule(&nest.caps, nest.widest_bits(l));
    let domain = TileDomain { n, lanes, max_fixed, max_vscale, mixed };
    domain.check_size().map_err(|e| env.sample_err(e))?;
    let d: Vec<TileChoice> = match (decision, rng) {
        (Some(d), _) => {
            let choices = d
                .iter()
                .map(|e| {
                    TileChoice::from_texpr(e).ok_or_else(|| {
                        let e = e.named(env.names);
                        env.err(TraceErrorKind::Sample, format!("decision entry `{e}` is not `c` or `c*vscale`"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            domain.check(&choices).map_err(|e| env.sample_err(e))?;
            choices
        }
        (None, Some(r)) => domain.sample(r),
        (None, None) => return Err(env.no_decision()),
    };
    bind_tile(env, nest, l, outs, &d);
    let mut inst = env.inst.clone();
    if let Inst::SampleScalableTile { decision, .. } | Inst::SampleMixedTile { decision, .. } = &mut inst {
        *decision = Some(d.iter().map(|c| c.texpr()).collect());
    }
    Ok((Some(inst), Some(domain.size())))
}
