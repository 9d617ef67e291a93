//! `cache_read`, `cache_write`, `compute_at` and `decompose_reduction`: new blocks and where blocks go.

use super::{Stepped, PLAIN};
use crate::ir::Nest;
use crate::trace::apply::Env;
use crate::trace::{BlockRv, LoopRv, TraceError, Value};

/// `c = cache_read(block, "B", at=loop, layout=[1, 0])`.
pub(super) fn cache_read(
    env: &mut Env,
    nest: &mut Nest,
    out: BlockRv,
    block: BlockRv,
    tensor: &str,
    at: LoopRv,
    layout: Option<&[usize]>,
) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let a = env.loop_(at)?;
    let c = nest.cache_read(b, tensor, a, layout).map_err(|e| env.sched(e))?;
    env.bind(out, Value::Block(c));
    Ok(PLAIN)
}

/// `w = cache_write(block, at=loop)`.
pub(super) fn cache_write(
    env: &mut Env,
    nest: &mut Nest,
    out: BlockRv,
    block: BlockRv,
    at: LoopRv,
) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let a = env.loop_(at)?;
    let w = nest.cache_write(b, a).map_err(|e| env.sched(e))?;
    env.bind(out, Value::Block(w));
    Ok(PLAIN)
}

/// `compute_at(block, loop)`.
pub(super) fn compute_at(env: &mut Env, nest: &mut Nest, block: BlockRv, loop_: LoopRv) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let l = env.loop_(loop_)?;
    nest.compute_at(b, l).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `init = decompose_reduction(block, loop)`.
pub(super) fn decompose_reduction(
    env: &mut Env,
    nest: &mut Nest,
    out: BlockRv,
    block: BlockRv,
    loop_: LoopRv,
) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let l = env.loop_(loop_)?;
    let i = nest.decompose_reduction(b, l).map_err(|e| env.sched(e))?;
    env.bind(out, Value::Block(i));
    Ok(PLAIN)
}
