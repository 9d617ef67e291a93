//! `split`, `fuse` and `reorder`: loop transformations.

use super::{Stepped, PLAIN};
use crate::ir::Nest;
use crate::trace::apply::Env;
use crate::trace::{LoopRv, TExpr, TraceError, Value};

/// `a, b = split(loop, factors=[None, 4*vscale])`.
pub(super) fn split(
    env: &mut Env,
    nest: &mut Nest,
    outs: &[LoopRv],
    loop_: LoopRv,
    factors: &[Option<TExpr>],
) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    let fs = factors.iter().map(|f| f.as_ref().map(|e| env.expr(e)).transpose()).collect::<Result<Vec<_>, _>>()?;
    let loops = nest.split(l, &fs).map_err(|e| env.sched(e))?;
    for (o, l) in outs.iter().zip(loops) {
        env.bind(*o, Value::Loop(l));
    }
    Ok(PLAIN)
}

/// `f = fuse(a, b)`.
pub(super) fn fuse(env: &mut Env, nest: &mut Nest, out: LoopRv, loops: &[LoopRv]) -> Result<Stepped, TraceError> {
    let ls = loops.iter().map(|n| env.loop_(*n)).collect::<Result<Vec<_>, _>>()?;
    let f = nest.fuse(&ls).map_err(|e| env.sched(e))?;
    env.bind(out, Value::Loop(f));
    Ok(PLAIN)
}

/// `reorder(a, b, c)`.
pub(super) fn reorder(env: &mut Env, nest: &mut Nest, loops: &[LoopRv]) -> Result<Stepped, TraceError> {
    let ls = loops.iter().map(|n| env.loop_(*n)).collect::<Result<Vec<_>, _>>()?;
    nest.reorder(&ls).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}
