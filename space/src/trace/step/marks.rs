//! `vectorize`, `unroll`, `parallel`, `annotate` and `use_vectors`: what a loop becomes, and which vectors the nest uses.

use super::{Stepped, PLAIN};
use crate::ir::{Nest, Tail};
use crate::kind::VectorKind;
use crate::trace::apply::Env;
use crate::trace::{Choice, LoopOrBlock, LoopRv, SArg, TraceError};

/// `vectorize(loop, tail="predicate")` (the tail may be a sampled value).
pub(super) fn vectorize(
    env: &mut Env,
    nest: &mut Nest,
    loop_: LoopRv,
    tail: &Choice<Tail>,
) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    let tail = env.tail(tail)?;
    nest.vectorize(l, tail).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `unroll(loop)`.
pub(super) fn unroll(env: &mut Env, nest: &mut Nest, loop_: LoopRv) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    nest.unroll(l).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `parallel(loop)`.
pub(super) fn parallel(env: &mut Env, nest: &mut Nest, loop_: LoopRv) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    nest.parallel(l).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `annotate(loop, key="unroll_max_step", value="16")` (the value may be a sampled value).
pub(super) fn annotate(
    env: &mut Env,
    nest: &mut Nest,
    target: LoopOrBlock,
    key: &str,
    value: &SArg,
) -> Result<Stepped, TraceError> {
    let node = env.node(target)?;
    let v = env.string(value)?;
    nest.annotate(node, key, &v).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `use_vectors("sve-vla")` (the kind may be a sampled value).
pub(super) fn use_vectors(env: &mut Env, nest: &mut Nest, kind: &Choice<VectorKind>) -> Result<Stepped, TraceError> {
    let k = env.kind(kind)?;
    nest.use_vectors(k).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}
