//! What a trace's random variables are bound to when it is replayed on a nest.

use super::rv::{BlockRv, LoopRv, RvId, ValueRv};
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId};
use crate::ir::Tail;
use crate::kind::VectorKind;

/// The value of a random variable after replay.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A block.
    Block(BlockId),
    /// A loop.
    Loop(LoopId),
    /// An integer expression.
    Expr(Expr),
    /// A tail strategy (a categorical choice).
    Tail(Tail),
    /// A vector kind (a categorical choice).
    Kind(VectorKind),
}

/// The values of a trace's random variables, by id (unbound until the
/// instruction that defines one has run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bindings {
    values: Vec<Option<Value>>,
}

impl Bindings {
    /// The value of random variable `rv`, if it is bound.
    pub fn get(&self, rv: impl RvId) -> Option<&Value> {
        self.values.get(rv.index())?.as_ref()
    }

    /// The loop `rv` holds, if it is bound to one.
    pub fn loop_(&self, rv: LoopRv) -> Option<LoopId> {
        match self.get(rv)? {
            Value::Loop(l) => Some(*l),
            _ => None,
        }
    }

    /// The block `rv` holds, if it is bound to one.
    pub fn block(&self, rv: BlockRv) -> Option<BlockId> {
        match self.get(rv)? {
            Value::Block(b) => Some(*b),
            _ => None,
        }
    }

    /// The sampled value `rv` holds, if it is bound.
    pub fn value(&self, rv: ValueRv) -> Option<&Value> {
        self.get(rv)
    }

    /// Binds `rv` to `v`.
    pub(super) fn bind(&mut self, rv: impl RvId, v: Value) {
        let i = rv.index();
        if self.values.len() <= i {
            self.values.resize(i + 1, None);
        }
        self.values[i] = Some(v);
    }
}
