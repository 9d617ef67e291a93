//! Replaying a trace on a loop nest.

use super::{Inst, TExpr, Trace};
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Node};
use crate::schedule::{ErrorKind, ScheduleError};
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

struct Env<'a> {
    vars: HashMap<String, Rv>,
    line: Option<usize>,
    inst: &'a Inst,
}

impl Env<'_> {
    fn err(&self, kind: TraceErrorKind, message: String) -> TraceError {
        TraceError { line: self.line, col: None, inst: Some(self.inst.to_string()), message, kind }
    }

    fn get(&self, name: &str) -> Result<&Rv, TraceError> {
        self.vars.get(name).ok_or_else(|| self.err(TraceErrorKind::UnknownName, format!("`{name}` is not defined")))
    }

    fn loop_(&self, name: &str) -> Result<LoopId, TraceError> {
        match self.get(name)? {
            Rv::Loop(l) => Ok(*l),
            _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{name}` is not a loop"))),
        }
    }

    fn block(&self, name: &str) -> Result<BlockId, TraceError> {
        match self.get(name)? {
            Rv::Block(b) => Ok(*b),
            _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{name}` is not a block"))),
        }
    }

    fn expr(&self, e: &TExpr) -> Result<Expr, TraceError> {
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

    fn sched(&self, e: ScheduleError) -> TraceError {
        self.err(TraceErrorKind::Schedule(e.kind), e.to_string())
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
        let mut vars = env;
        for (i, inst) in self.insts.iter().enumerate() {
            let mut env = Env { vars, line: self.lines.get(i).copied(), inst };
            step(&mut env, nest)?;
            vars = env.vars;
        }
        Ok(vars)
    }
}

fn step(env: &mut Env, nest: &mut Nest) -> Result<(), TraceError> {
    match env.inst {
        Inst::GetBlock { out, name } => {
            let b = nest.get_block(name).map_err(|e| env.sched(e))?;
            env.vars.insert(out.clone(), Rv::Block(b));
        }
        Inst::GetLoops { outs, block } => {
            let b = env.block(block)?;
            let loops = nest.get_loops(b).map_err(|e| env.sched(e))?;
            if loops.len() != outs.len() {
                return Err(env.err(
                    TraceErrorKind::WrongKind,
                    format!(
                        "block `{}` has {} loop(s) but {} name(s) are given",
                        nest.block(b).name,
                        loops.len(),
                        outs.len()
                    ),
                ));
            }
            for (o, l) in outs.iter().zip(loops) {
                env.vars.insert(o.clone(), Rv::Loop(l));
            }
        }
        Inst::Split { outs, loop_, factors } => {
            let l = env.loop_(loop_)?;
            let fs =
                factors.iter().map(|f| f.as_ref().map(|e| env.expr(e)).transpose()).collect::<Result<Vec<_>, _>>()?;
            let loops = nest.split(l, &fs).map_err(|e| env.sched(e))?;
            for (o, l) in outs.iter().zip(loops) {
                env.vars.insert(o.clone(), Rv::Loop(l));
            }
        }
        Inst::Fuse { out, loops } => {
            let ls = loops.iter().map(|n| env.loop_(n)).collect::<Result<Vec<_>, _>>()?;
            let f = nest.fuse(&ls).map_err(|e| env.sched(e))?;
            env.vars.insert(out.clone(), Rv::Loop(f));
        }
        Inst::Reorder { loops } => {
            let ls = loops.iter().map(|n| env.loop_(n)).collect::<Result<Vec<_>, _>>()?;
            nest.reorder(&ls).map_err(|e| env.sched(e))?;
        }
        Inst::Vectorize { loop_, tail } => {
            let l = env.loop_(loop_)?;
            nest.vectorize(l, *tail).map_err(|e| env.sched(e))?;
        }
        Inst::Unroll { loop_ } => {
            let l = env.loop_(loop_)?;
            nest.unroll(l).map_err(|e| env.sched(e))?;
        }
        Inst::Parallel { loop_ } => {
            let l = env.loop_(loop_)?;
            nest.parallel(l).map_err(|e| env.sched(e))?;
        }
        Inst::CacheRead { out, block, tensor, at, layout } => {
            let b = env.block(block)?;
            let a = env.loop_(at)?;
            let c = nest.cache_read(b, tensor, a, layout.as_deref()).map_err(|e| env.sched(e))?;
            env.vars.insert(out.clone(), Rv::Block(c));
        }
        Inst::CacheWrite { out, block, at } => {
            let b = env.block(block)?;
            let a = env.loop_(at)?;
            let w = nest.cache_write(b, a).map_err(|e| env.sched(e))?;
            env.vars.insert(out.clone(), Rv::Block(w));
        }
        Inst::ComputeAt { block, loop_ } => {
            let b = env.block(block)?;
            let l = env.loop_(loop_)?;
            nest.compute_at(b, l).map_err(|e| env.sched(e))?;
        }
        Inst::DecomposeReduction { out, block, loop_ } => {
            let b = env.block(block)?;
            let l = env.loop_(loop_)?;
            let i = nest.decompose_reduction(b, l).map_err(|e| env.sched(e))?;
            env.vars.insert(out.clone(), Rv::Block(i));
        }
        Inst::Annotate { target, key, value } => {
            let node = match env.get(target)? {
                Rv::Loop(l) => Node::Loop(*l),
                Rv::Block(b) => Node::Block(*b),
                Rv::Expr(_) => {
                    return Err(env.err(TraceErrorKind::WrongKind, format!("`{target}` is not a loop or block")))
                }
            };
            nest.annotate(node, key, value).map_err(|e| env.sched(e))?;
        }
    }
    Ok(())
}
