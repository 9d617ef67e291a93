//! `sample_perfect_tile`: factors whose product is a loop's constant extent.

use super::Stepped;
use crate::expr::{simplify, Expr};
use crate::ids::LoopId;
use crate::ir::Nest;
use crate::sample::{count_perfect, perfect_domain_ok, repair_perfect, sample_perfect};
use crate::trace::apply::Env;
use crate::trace::{Inst, TraceError, TraceErrorKind, Value};
use rand_chacha::ChaCha8Rng;

/// The most levels of a tiling instruction.
pub(crate) const MAX_TILE_LEVELS: usize = 64;

/// The extent of a loop as a constant under the nest's vscale domain, if it is one.
fn const_extent(nest: &Nest, l: LoopId) -> Option<i64> {
    let e = simplify(nest.extent(l), nest);
    match nest.caps.fixed_vscale() {
        Some(v) => simplify(&e.with_vscale(i64::from(v)), nest).as_int(),
        None => e.as_int(),
    }
}

/// `a, b = sample_perfect_tile(loop, n=2, max_innermost_factor=16, decision=[8, 16])`.
pub(super) fn step(env: &mut Env, nest: &mut Nest, rng: Option<&mut ChaCha8Rng>) -> Result<Stepped, TraceError> {
    let Inst::SamplePerfectTile { outs, loop_, n, max_innermost_factor, decision } = env.inst else {
        return Err(env.err(TraceErrorKind::WrongKind, "not a sample_perfect_tile instruction".into()));
    };
    let l = env.loop_(*loop_)?;
    // Each level is a loop: more levels than the nesting bound of the
    // parsers is never a schedule (and would recurse that deep).
    if *n > MAX_TILE_LEVELS {
        return Err(env.err(TraceErrorKind::Sample, format!("n={n} levels, beyond the limit of {MAX_TILE_LEVELS}")));
    }
    let Some(extent) = const_extent(nest, l) else {
        return Err(env.err(
            TraceErrorKind::Sample,
            format!(
                "loop `{}` has extent {}, not a constant; use sample_scalable_tile or sample_mixed_tile",
                nest.loop_name(l),
                nest.expr_text(nest.extent(l))
            ),
        ));
    };
    let d = match (decision, rng) {
        (Some(d), _) => match perfect_domain_ok(extent, *n, *max_innermost_factor, d) {
            Ok(()) => d.clone(),
            // Only a changed extent is repaired: any other fault stays one.
            Err(e) => {
                let moved = d.iter().try_fold(1i64, |a, f| a.checked_mul(*f)) != Some(extent);
                match (env.repair && moved).then(|| repair_perfect(extent, *n, *max_innermost_factor, d)).flatten() {
                    Some(r) => r,
                    None => return Err(env.sample_err(e)),
                }
            }
        },
        (None, Some(r)) => sample_perfect(extent, *n, *max_innermost_factor, r).map_err(|e| env.sample_err(e))?,
        (None, None) => return Err(env.no_decision()),
    };
    for (o, f) in outs.iter().zip(&d) {
        env.bind(*o, Value::Expr(Expr::Int(*f)));
    }
    let size = count_perfect(extent, *n, *max_innermost_factor);
    let mut inst = env.inst.clone();
    if let Inst::SamplePerfectTile { decision, .. } = &mut inst {
        *decision = Some(d);
    }
    Ok((Some(inst), Some(size)))
}
