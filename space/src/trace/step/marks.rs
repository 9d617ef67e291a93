//! `vectorize`, `unroll`, `parallel`, `annotate` and `use_vectors`: what a loop becomes, and which vectors the nest uses.

use super::{Stepped, PLAIN};
use crate::ir::{Nest, Node, Tail};
use crate::kind::VectorKind;
use crate::trace::apply::{Env, Rv, TraceError, TraceErrorKind};
use crate::trace::{Choice, SArg};

/// `vectorize(loop, tail="predicate")` (the tail may be a sampled name).
pub(super) fn vectorize(
    env: &mut Env,
    nest: &mut Nest,
    loop_: &str,
    tail: &Choice<Tail>,
) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    let tail = env.tail(tail)?;
    nest.vectorize(l, tail).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `unroll(loop)`.
pub(super) fn unroll(env: &mut Env, nest: &mut Nest, loop_: &str) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    nest.unroll(l).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `parallel(loop)`.
pub(super) fn parallel(env: &mut Env, nest: &mut Nest, loop_: &str) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    nest.parallel(l).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `annotate(target, key="k", value="v")` (the value may be a sampled name).
pub(super) fn annotate(
    env: &mut Env,
    nest: &mut Nest,
    target: &str,
    key: &str,
    value: &SArg,
) -> Result<Stepped, TraceError> {
    let node = match env.get(target)? {
        Rv::Loop(l) => Node::Loop(*l),
        Rv::Block(b) => Node::Block(*b),
        Rv::Expr(_) | Rv::Tail(_) | Rv::Kind(_) => {
            return Err(env.err(TraceErrorKind::WrongKind, format!("`{target}` is not a loop or block")))
        }
    };
    let v = env.string(value)?;
    nest.annotate(node, key, &v).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}

/// `use_vectors("sve-vla")` (the kind may be a sampled name).
pub(super) fn use_vectors(env: &mut Env, nest: &mut Nest, kind: &Choice<VectorKind>) -> Result<Stepped, TraceError> {
    let k = env.kind(kind)?;
    nest.use_vectors(k).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}
