//! Traces: a schedule as a list of instructions.
//!
//! A trace's results (blocks, loops, sampled values) are random variables
//! with typed ids ([`LoopRv`], [`BlockRv`], [`ValueRv`]) that later
//! instructions refer to; the names a user wrote live once, in the trace's
//! name table ([`Trace::names`], indexed by id). A trace serializes to JSON
//! (for the database) and to a readable text form, one instruction per
//! line, that a user can write by hand:
//!
//! ```text
//! b = get_block("C")
//! i, j, k = get_loops(b)
//! i0, i1 = split(i, factors=[None, 4])
//! j0, j1 = split(j, factors=[None, 4*vscale])
//! reorder(i0, j0, k, i1, j1)
//! unroll(i1)
//! vectorize(j1, tail="predicate")
//! ```

mod apply;
mod bindings;
mod check;
mod domain;
mod error;
mod inst;
mod parse;
mod print;
mod rv;
mod step;
mod uses;

#[cfg(test)]
mod tests;

pub use crate::sample::SampleError;
pub use bindings::{Bindings, Value};
pub use domain::Count;
pub use error::{TraceError, TraceErrorKind};
pub use inst::{Cand, Choice, Inst, SArg, TExpr};
pub use parse::parse_trace;
pub use print::Named;
pub use rv::{BlockRv, LoopOrBlock, LoopRv, RvId, ValueRv};

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A schedule: instructions in order, and the names of their random variables.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The instructions.
    pub insts: Vec<Inst>,
    /// The name of each random variable, indexed by its id: shared by the
    /// traces cloned from one another (a search drafts thousands of
    /// mutants of a trace, and they all keep its names).
    pub names: Arc<Vec<String>>,
    /// Source line of each instruction when parsed from text (for messages).
    #[serde(skip)]
    pub lines: Vec<usize>,
}

impl Trace {
    /// JSON form (what the database stores).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("traces always serialize")
    }

    /// Parses the JSON form; every random-variable id must be in the name table.
    pub fn from_json(s: &str) -> Result<Trace, serde_json::Error> {
        let t: Trace = serde_json::from_str(s)?;
        for (i, inst) in t.insts.iter().enumerate() {
            let mut ids = inst.uses().into_iter().map(|u| u.index).chain(inst.defs().into_iter().map(|d| d.0));
            if let Some(id) = ids.find(|id| *id >= t.names.len()) {
                return Err(serde::de::Error::custom(format!(
                    "instruction {i} (`{}`) refers to random variable {id}, but only {} are named",
                    inst.name(),
                    t.names.len()
                )));
            }
        }
        Ok(t)
    }

    /// The name of a random variable.
    pub fn name(&self, rv: impl RvId) -> &str {
        rv::name_in(&self.names, rv.index())
    }

    /// Instruction `i` in its text form.
    pub fn inst_text(&self, i: usize) -> String {
        self.insts[i].named(&self.names).to_string()
    }

    /// A new random variable holding a loop, named `name`.
    pub fn new_loop(&mut self, name: impl Into<String>) -> LoopRv {
        LoopRv(self.new_id(name.into()))
    }

    /// A new random variable holding a block, named `name`.
    pub fn new_block(&mut self, name: impl Into<String>) -> BlockRv {
        BlockRv(self.new_id(name.into()))
    }

    /// A new random variable holding a sampled value, named `name`.
    pub fn new_value(&mut self, name: impl Into<String>) -> ValueRv {
        ValueRv(self.new_id(name.into()))
    }

    fn new_id(&mut self, name: String) -> u32 {
        Arc::make_mut(&mut self.names).push(name);
        u32::try_from(self.names.len() - 1).expect("fewer than 2^32 random variables")
    }

    /// True if instruction `i` of this trace and instruction `j` of `other`
    /// are the same, random-variable names included.
    pub fn same_inst(&self, i: usize, other: &Trace, j: usize) -> bool {
        let (a, b) = (&self.insts[i], &other.insts[j]);
        a == b
            && a.uses()
                .into_iter()
                .map(|u| u.index)
                .chain(a.defs().into_iter().map(|d| d.0))
                .all(|id| self.names.get(id) == other.names.get(id))
    }

    /// The same trace with every sampling decision removed (a design space).
    pub fn without_decisions(&self) -> Trace {
        let mut t = self.clone();
        for i in &mut t.insts {
            i.clear_decision();
        }
        t
    }

    /// True if some sampling instruction has no decision.
    pub fn has_undecided(&self) -> bool {
        self.insts.iter().any(|i| i.undecided())
    }
}
