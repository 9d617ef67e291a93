//! The state rules work on: a design-space trace and its probe nest.

use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Node};
use crate::sample::task_rng;
use crate::trace::{Inst, Rv, Trace};
use std::collections::HashMap;

/// A design-space trace under construction.
#[derive(Clone, Debug)]
pub struct State {
    /// The design-space trace (sampling instructions undecided).
    pub trace: Trace,
    /// The nest after the trace, with probe decisions.
    pub probe: Nest,
    /// Name bindings of the probe run.
    pub env: HashMap<String, Rv>,
    /// Rules that changed this state, in order.
    pub rules: Vec<String>,
    /// The structural options this branch took, in order.
    pub choices: Vec<Choice>,
    fresh: u32,
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
        State {
            trace: Trace::default(),
            probe: nest,
            env: HashMap::new(),
            rules: Vec::new(),
            choices: Vec::new(),
            fresh: 0,
        }
    }

    /// A fresh result name with the given prefix.
    pub fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// Appends an instruction, applying it to the probe (sampling with a
    /// fixed RNG). Fails, leaving the state unusable, if it does not apply.
    pub fn push(&mut self, inst: Inst) -> bool {
        let t = Trace { insts: vec![inst.clone()], lines: Vec::new() };
        let mut rng = task_rng(0x5ca1e, self.trace.insts.len() as u64);
        match t.sample_with(&mut self.probe, std::mem::take(&mut self.env), &mut rng) {
            Ok((_, env)) => {
                self.env = env;
                self.trace.insts.push(inst);
                true
            }
            Err(_) => false,
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

    /// `b = get_block("NAME")`; returns the result name and the block.
    pub fn get_block(&mut self, name: &str) -> Option<(String, BlockId)> {
        let out = self.name("b");
        if !self.push(Inst::GetBlock { out: out.clone(), name: name.to_string() }) {
            return None;
        }
        match self.env.get(&out) {
            Some(Rv::Block(b)) => Some((out, *b)),
            _ => None,
        }
    }

    /// `l1, l2, ... = get_loops(b)`; returns names and loops, outermost first.
    pub fn get_loops(&mut self, b: &str, block: BlockId) -> Vec<(String, LoopId)> {
        let loops = self.probe.ancestors(Node::Block(block));
        if loops.is_empty() {
            return Vec::new();
        }
        let outs: Vec<String> = loops.iter().map(|_| self.name("l")).collect();
        if !self.push(Inst::GetLoops { outs: outs.clone(), block: b.to_string() }) {
            return Vec::new();
        }
        outs.into_iter().zip(loops).collect()
    }

    /// Loops whose extent may depend on sampled decisions through vscale
    /// (created by splits whose factors come from a scalable or mixed tiling,
    /// or from a fuse of such loops).
    pub fn scalable_derived_loops(&self) -> Vec<LoopId> {
        let mut scalable_rvs: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for inst in &self.trace.insts {
            match inst {
                Inst::SampleMixedTile { outs, .. } | Inst::SampleScalableTile { outs, .. } => {
                    scalable_rvs.extend(outs.iter().cloned())
                }
                Inst::Split { outs, factors, .. } => {
                    let derived = factors
                        .iter()
                        .any(|f| matches!(f, Some(crate::trace::TExpr::Rv(n)) if scalable_rvs.contains(n)));
                    if derived {
                        out.extend(outs.iter().filter_map(|o| match self.env.get(o) {
                            Some(Rv::Loop(l)) => Some(*l),
                            _ => None,
                        }));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The loops the block does not share with other blocks (innermost part
    /// of its ancestors), with their names.
    pub fn own_loops(&mut self, b: &str, block: BlockId) -> Vec<(String, LoopId)> {
        let all = self.get_loops(b, block);
        all.into_iter().filter(|(_, l)| self.probe.blocks_in(Node::Loop(*l)) == vec![block]).collect()
    }
}
