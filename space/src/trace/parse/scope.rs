//! Resolving the names of trace text to typed random variables.

use super::call::SynExpr;
use crate::trace::{BlockRv, LoopOrBlock, LoopRv, TExpr, ValueRv};
use std::collections::HashMap;

/// The names seen so far: each definition makes a new random variable, and
/// a use refers to the latest definition of its name. A name used before
/// any definition gets a random variable no instruction defines, which
/// replay reports as not defined.
#[derive(Default)]
pub(super) struct Scope {
    names: Vec<String>,
    latest: HashMap<String, u32>,
    blocks: Vec<bool>,
}

impl Scope {
    /// The name table, indexed by random-variable id.
    pub(super) fn into_names(self) -> Vec<String> {
        self.names
    }

    fn new_id(&mut self, name: &str, block: bool) -> u32 {
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.blocks.push(block);
        self.latest.insert(name.to_string(), id);
        id
    }

    fn resolve(&mut self, name: &str) -> u32 {
        match self.latest.get(name) {
            Some(id) => *id,
            None => self.new_id(name, false),
        }
    }

    /// A use of `name` where a loop is expected.
    pub(super) fn loop_(&mut self, name: &str) -> LoopRv {
        LoopRv(self.resolve(name))
    }

    /// A use of `name` where a block is expected.
    pub(super) fn block(&mut self, name: &str) -> BlockRv {
        BlockRv(self.resolve(name))
    }

    /// A use of `name` where a sampled value is expected.
    pub(super) fn value(&mut self, name: &str) -> ValueRv {
        ValueRv(self.resolve(name))
    }

    /// A use of `name` where a loop or a block is expected: a block if its
    /// latest definition made one, else a loop.
    pub(super) fn target(&mut self, name: &str) -> LoopOrBlock {
        let id = self.resolve(name);
        if self.blocks.get(id as usize).copied().unwrap_or(false) {
            LoopOrBlock::Block(BlockRv(id))
        } else {
            LoopOrBlock::Loop(LoopRv(id))
        }
    }

    /// An integer expression, its names resolved as sampled values.
    pub(super) fn expr(&mut self, e: &SynExpr) -> TExpr {
        match e {
            SynExpr::Int(v) => TExpr::Int(*v),
            SynExpr::VScale => TExpr::VScale,
            SynExpr::Name(n) => TExpr::Rv(self.value(n)),
            SynExpr::Add(a, b) => TExpr::Add(Box::new(self.expr(a)), Box::new(self.expr(b))),
            SynExpr::Sub(a, b) => TExpr::Sub(Box::new(self.expr(a)), Box::new(self.expr(b))),
            SynExpr::Mul(a, b) => TExpr::Mul(Box::new(self.expr(a)), Box::new(self.expr(b))),
        }
    }

    /// Defines a loop named `name`.
    pub(super) fn def_loop(&mut self, name: &str) -> LoopRv {
        LoopRv(self.new_id(name, false))
    }

    /// Defines loops, one per name.
    pub(super) fn def_loops(&mut self, names: &[String]) -> Vec<LoopRv> {
        names.iter().map(|n| self.def_loop(n)).collect()
    }

    /// Defines a block named `name`.
    pub(super) fn def_block(&mut self, name: &str) -> BlockRv {
        BlockRv(self.new_id(name, true))
    }

    /// Defines a sampled value named `name`.
    pub(super) fn def_value(&mut self, name: &str) -> ValueRv {
        ValueRv(self.new_id(name, false))
    }

    /// Defines sampled values, one per name.
    pub(super) fn def_values(&mut self, names: &[String]) -> Vec<ValueRv> {
        names.iter().map(|n| self.def_value(n)).collect()
    }
}
