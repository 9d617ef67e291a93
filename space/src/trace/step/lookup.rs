//! `get_block` and `get_loops`: naming blocks and the loops around them.

use super::{Stepped, PLAIN};
use crate::ir::Nest;
use crate::trace::apply::{Env, Rv, TraceError, TraceErrorKind};

/// `out = get_block("NAME")`.
pub(super) fn get_block(env: &mut Env, nest: &mut Nest, out: &str, name: &str) -> Result<Stepped, TraceError> {
    let b = nest.get_block(name).map_err(|e| env.sched(e))?;
    env.vars.insert(out.to_string(), Rv::Block(b));
    Ok(PLAIN)
}

/// `a, b, c = get_loops(block)`: one name per enclosing loop, outermost first.
pub(super) fn get_loops(env: &mut Env, nest: &mut Nest, outs: &[String], block: &str) -> Result<Stepped, TraceError> {
    let b = env.block(block)?;
    let loops = nest.get_loops(b).map_err(|e| env.sched(e))?;
    if loops.len() != outs.len() {
        return Err(env.err(
            TraceErrorKind::WrongKind,
            format!("block `{}` has {} loop(s) but {} name(s) are given", nest.block(b).name, loops.len(), outs.len()),
        ));
    }
    for (o, l) in outs.iter().zip(loops) {
        env.vars.insert(o.clone(), Rv::Loop(l));
    }
    Ok(PLAIN)
}
