//! The state rules work on: a design-space trace and its probe nest.

use crate::ir::Nest;
use crate::sample::task_rng;
use crate::trace::{Bindings, Inst, Trace};

/// A design-space trace under construction.
#[derive(Clone, Debug)]
pub struct State {
    /// The design-space trace (sampling instructions undecided).
    pub trace: Trace,
    /// The nest after the trace, with probe decisions.
    pub probe: Nest,
    /// What the trace's random variables are bound to in the probe run.
    pub env: Bindings,
    /// Rules that changed this state, in order.
    pub rules: Vec<String>,
    /// The structural options this branch took, in order.
    pub choices: Vec<Choice>,
}

/// A structural option a rule took when it branched (which axis to
/// vectorize, whether to reuse a tile, ...): the part of a design-space
/// trace that is not a decision of one of its sampling instructions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Choice {
    /// What the option is about: a block name, or `*` for the whole nest.
    pub scope: String,
    /// The option (`gather strategy`, `write reuse`, ...).
    pub key: String,
    /// The value taken (`gather`, `contiguous rows`, `cache_write`, `none`, ...).
    pub value: String,
}

impl State {
    /// The empty design space of a nest.
    pub fn new(nest: Nest) -> State {
        State { trace: Trace::default(), probe: nest, env: Bindings::default(), rules: Vec::new(), choices: Vec::new() }
    }

    /// Appends an instruction, applying it to the probe (sampling with a
    /// fixed RNG). Fails, leaving the state unusable (the instruction is not
    /// appended and the bindings are dropped), if it does not apply.
    pub fn push(&mut self, inst: Inst) -> bool {
        let at = self.trace.insts.len();
        self.trace.insts.push(inst);
        let mut rng = task_rng(0x5ca1e, at as u64);
        match self.trace.draw_from(at, &mut self.probe, std::mem::take(&mut self.env), &mut rng) {
            Ok(env) => {
                self.env = env;
                true
            }
            Err(_) => {
                self.trace.insts.truncate(at);
                false
            }
        }
    }

    /// Applies instructions to a copy; `None` if any of them fails.
    pub fn with(&self, insts: Vec<Inst>) -> Option<State> {
        let mut s = self.clone();
        for i in insts {
            if !s.push(i) {
                return None;
            }
        }
        Some(s)
    }

    /// Records that a rule changed this state.
    pub fn mark(mut self, rule: &str) -> State {
        if self.rules.last().map(|r| r.as_str()) != Some(rule) {
            self.rules.push(rule.to_string());
        }
        self
    }

    /// Records the structural option this branch took.
    pub fn choose(mut self, scope: &str, key: &str, value: &str) -> State {
        self.choices.push(Choice { scope: scope.to_string(), key: key.to_string(), value: value.to_string() });
        self
    }
}
