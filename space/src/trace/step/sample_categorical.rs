//! `sample_categorical`: one of a list of candidates (tails, vector kinds, unroll depths), by probability.

use super::Stepped;
use crate::expr::Expr;
use crate::sample::{check_categorical, sample_categorical};
use crate::trace::apply::Env;
use crate::trace::{Cand, Inst, TraceError, TraceErrorKind, Value};
use rand_chacha::ChaCha8Rng;

/// `t = sample_categorical(candidates=["predicate", "peel"], probs=[0.5, 0.5], decision=1)`.
pub(super) fn step(env: &mut Env, rng: Option<&mut ChaCha8Rng>) -> Result<Stepped, TraceError> {
    let Inst::SampleCategorical { out, candidates, probs, decision } = env.inst else {
        return Err(env.err(TraceErrorKind::WrongKind, "not a sample_categorical instruction".into()));
    };
    let d = match (decision, rng) {
        (Some(d), _) => {
            check_categorical(probs, *d).map_err(|e| env.sample_err(e))?;
            *d
        }
        (None, Some(r)) => sample_categorical(probs, r).map_err(|e| env.sample_err(e))?,
        (None, None) => return Err(env.no_decision()),
    };
    let v = match &candidates[d] {
        Cand::Int(i) => Value::Expr(Expr::Int(*i)),
        Cand::Tail(t) => Value::Tail(*t),
        Cand::Kind(k) => Value::Kind(*k),
    };
    env.bind(*out, v);
    let size = probs.iter().filter(|p| **p > 0.0).count() as u128;
    let mut inst = env.inst.clone();
    if let Inst::SampleCategorical { decision, .. } = &mut inst {
        *decision = Some(d);
    }
    Ok((Some(inst), Some(size)))
}
