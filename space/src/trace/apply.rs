//! Replaying a trace on a loop nest.

use super::domain::{Count, Provenance};
use super::{Choice, Inst, SArg, TExpr, Trace};
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Tail};
use crate::kind::VectorKind;
use crate::sample::SampleError;
use crate::schedule::{ErrorKind, ScheduleError};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::fmt;
use thiserror::Error;

/// A value bound to a name while replaying a trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Rv {
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

/// The category of a trace failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceErrorKind {
    /// The text does not parse.
    Syntax,
    /// A name used before it is defined.
    UnknownName,
    /// A name bound to the wrong kind of thing (a loop where a block is needed, ...).
    WrongKind,
    /// A schedule primitive refused the instruction.
    Schedule(ErrorKind),
    /// A sampling instruction cannot sample, lacks a decision on replay, or
    /// its decision does not fit the loop it is replayed on.
    Sample,
}

/// A trace that does not parse or does not apply.
#[derive(Debug, Error, Clone, PartialEq)]
pub struct TraceError {
    /// 1-based source line, when the trace came from text.
    pub line: Option<usize>,
    /// 1-based column of a syntax error.
    pub col: Option<usize>,
    /// The instruction, as text.
    pub inst: Option<String>,
    /// What is wrong.
    pub message: String,
    /// The category.
    pub kind: TraceErrorKind,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.col) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: ")?,
            (Some(l), None) => write!(f, "line {l}: ")?,
            _ => {}
        }
        if let Some(i) = &self.inst {
            write!(f, "`{i}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A decided trace, its final bindings, and the number of decisions of each
/// sampling instruction (by instruction index).
type RunOutcome = (Trace, HashMap<String, Rv>, Vec<(usize, Count)>);

/// The replay state one instruction sees: the bindings so far, its source line and itself.
pub(super) struct Env<'a> {
    pub(super) vars: HashMap<String, Rv>,
    pub(super) line: Option<usize>,
    pub(super) inst: &'a Inst,
}

impl Env<'_> {
    pub(super) fn err(&self, kind: TraceErrorKind, message: String) -> TraceError {
        TraceError { line: self.line, col: None, inst: Some(self.inst.to_string()), message, kind }
    }

    pub(super) fn get(&self, name: &str) -> Result<&Rv, TraceError> {
        self.vars.get(name).ok_or_else(|| self.err(TraceErrorKind::UnknownName, format!("`{name}` is not defined")))
    }

    pub(super) fn loop_(&self, name: &str) -> Result<LoopId, TraceError> {
        match self.get(name)? {
            Rv::Loop(l) => Ok(*l),
            _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{name}` is not a loop"))),
        }
    }

    pub(super) fn block(&self, name: &str) -> Result<BlockId, TraceError> {
        match self.get(name)? {
            Rv::Block(b) => Ok(*b),
            _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{name}` is not a block"))),
        }
    }

    pub(super) fn expr(&self, e: &TExpr) -> Result<Expr, TraceError> {
        Ok(match e {
            TExpr::Int(v) => Expr::Int(*v),
            TExpr::VScale => Expr::VScale,
            TExpr::Rv(n) => match self.get(n)? {
                Rv::Expr(x) => x.clone(),
                _ => return Err(self.err(TraceErrorKind::WrongKind, format!("`{n}` is not an integer"))),
            },
            TExpr::Add(a, b) => self.expr(a)? + self.expr(b)?,
            TExpr::Sub(a, b) => self.expr(a)? - self.expr(b)?,
            TExpr::Mul(a, b) => self.expr(a)? * self.expr(b)?,
        })
    }

    pub(super) fn sched(&self, e: ScheduleError) -> TraceError {
        self.err(TraceErrorKind::Schedule(e.kind), e.to_string())
    }

    pub(super) fn sample_err(&self, e: SampleError) -> TraceError {
        self.err(TraceErrorKind::Sample, e.0)
    }

    pub(super) fn string(&self, a: &SArg) -> Result<String, TraceError> {
        match a {
            SArg::Lit(s) => Ok(s.clone()),
            SArg::Rv(n) => match self.get(n)? {
                Rv::Tail(t) => Ok(t.name().to_string()),
                Rv::Kind(k) => Ok(k.to_string()),
                Rv::Expr(Expr::Int(v)) => Ok(v.to_string()),
                _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{n}` is not a value"))),
            },
        }
    }

    pub(super) fn tail(&self, a: &Choice<Tail>) -> Result<Tail, TraceError> {
        match a {
            Choice::Lit(t) => Ok(*t),
            Choice::Rv(n) => match self.get(n)? {
                Rv::Tail(t) => Ok(*t),
                _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{n}` is not a tail strategy"))),
            },
        }
    }

    pub(super) fn kind(&self, a: &Choice<VectorKind>) -> Result<VectorKind, TraceError> {
        match a {
            Choice::Lit(k) => Ok(*k),
            Choice::Rv(n) => match self.get(n)? {
                Rv::Kind(k) => Ok(*k),
                _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{n}` is not a vector kind"))),
            },
        }
    }

    pub(super) fn no_decision(&self) -> TraceError {
        self.err(
            TraceErrorKind::Sample,
            "has no decision; replaying needs every decision (sample the design space first)".to_string(),
        )
    }
}

impl Trace {
    /// Applies every instruction to `nest` and returns the final name bindings.
    /// On error the nest holds the effect of the instructions before the failing one.
    pub fn apply(&self, nest: &mut Nest) -> Result<HashMap<String, Rv>, TraceError> {
        self.apply_with(nest, HashMap::new())
    }

    /// Like [`Trace::apply`], continuing from the bindings of an earlier replay.
    pub fn apply_with(&self, nest: &mut Nest, env: HashMap<String, Rv>) -> Result<HashMap<String, Rv>, TraceError> {
        self.run(nest, env, None).map(|(_, vars, _)| vars)
    }

    /// Applies the trace, drawing every missing decision from `rng` (recorded
    /// decisions are replayed and checked). Returns the trace with all
    /// decisions filled in, which replays to the same nest without the RNG.
    pub fn sample(&self, nest: &mut Nest, rng: &mut ChaCha8Rng) -> Result<(Trace, HashMap<String, Rv>), TraceError> {
        self.run(nest, HashMap::new(), Some(rng)).map(|(t, v, _)| (t, v))
    }

    /// Like [`Trace::sample`], continuing from the bindings of an earlier run.
    pub fn sample_with(
        &self,
        nest: &mut Nest,
        env: HashMap<String, Rv>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Trace, HashMap<String, Rv>), TraceError> {
        self.run(nest, env, Some(rng)).map(|(t, v, _)| (t, v))
    }

    fn run(
        &self,
        nest: &mut Nest,
        env: HashMap<String, Rv>,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> Result<RunOutcome, TraceError> {
        let mut vars = env;
        let mut sizes = Vec::new();
        let mut prov = Provenance::default();
        let mut out = Trace { insts: Vec::with_capacity(self.insts.len()), lines: self.lines.clone() };
        for (i, inst) in self.insts.iter().enumerate() {
            let varying = prov.before(inst, &vars, nest);
            let mut env = Env { vars, line: self.lines.get(i).copied(), inst };
            let (decided, size) = super::step::step(&mut env, nest, rng.as_deref_mut())?;
            out.insts.push(decided.unwrap_or_else(|| inst.clone()));
            if let Some(sz) = size {
                sizes.push((i, prov.count(inst, sz, &env.vars, nest)));
            }
            if let Some(v) = varying {
                prov.after(v, &env.vars);
            }
            if !matches!(inst, Inst::GetBlock { .. } | Inst::GetLoops { .. } | Inst::UseVectors { .. })
                && !inst.is_sampling()
            {
                nest.transformed = true;
            }
            vars = env.vars;
        }
        Ok((out, vars, sizes))
    }

    /// The number of possible decisions of each sampling instruction (by
    /// instruction index), found by sampling the trace with `rng`: exact
    /// where it does not depend on earlier decisions, else an upper bound.
    pub fn domain_sizes(&self, nest: &mut Nest, rng: &mut ChaCha8Rng) -> Result<Vec<(usize, Count)>, TraceError> {
        self.run(nest, HashMap::new(), Some(rng)).map(|(_, _, sizes)| sizes)
    }
}
