//! `get_block` and `get_loops`: naming blocks and the loops around them.

use super::{Stepped, PLAIN};
use crate::ir::Nest;
use crate::trace::apply::Env;
use crate::trace::{BlockRv, LoopRv, TraceError, TraceErrorKind, Value};

/// `out = get_block("NAME")`.
pub(super) fn get_block(env: &mut Env, nest: &mut Nest, out: BlockRv, name: &str) -> Result<Stepped, TraceError> {
    let b = nest.get_block(name).map_err(|e| env.sched(e))?;
    env.bind(out, Value::Block(b));
    Ok(PLAIN)
}

/// `a, b, c = get_loops(block)`: one result per enclosing loop, outermost first.
pub(super) fn get_loops(
    env: &mut Env,
    nest: &mut Nest,
    outs: &[LoopRv],
    block: BlockRv,
) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let loops = nest.get_loops(b).map_err(|e| env.sched(e))?;
    if loops.len() != outs.len() {
        return Err(env.err(
            TraceErrorKind::WrongKind,
            format!("block `{}` has {} loop(s) but {} name(s) are given", nest.block(b).name, loops.len(), outs.len()),
        ));
    }
    for (o, l) in outs.iter().zip(loops) {
        env.bind(*o, Value::Loop(l));
    }
    Ok(PLAIN)
}
