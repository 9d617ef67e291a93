//! Replaying a trace on a loop nest.

use super::domain::{Count, Provenance};
use super::{Cand, Inst, SArg, TExpr, Trace};
use crate::expr::{simplify, Expr};
use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Node, Tail};
use crate::sample::{
    check_categorical, count_perfect, lanes_per_granule, perfect_domain_ok, sample_categorical, sample_perfect,
    SampleError, TileChoice, TileDomain,
};
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
    /// A string (a categorical choice).
    Str(String),
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

    fn sample_err(&self, e: SampleError) -> TraceError {
        self.err(TraceErrorKind::Sample, e.0)
    }

    fn string(&self, a: &SArg) -> Result<String, TraceError> {
        match a {
            SArg::Lit(s) => Ok(s.clone()),
            SArg::Rv(n) => match self.get(n)? {
                Rv::Str(s) => Ok(s.clone()),
                Rv::Expr(Expr::Int(v)) => Ok(v.to_string()),
                _ => Err(self.err(TraceErrorKind::WrongKind, format!("`{n}` is not a string"))),
            },
        }
    }

    fn no_decision(&self) -> TraceError {
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
            let (decided, size) = step(&mut env, nest, rng.as_deref_mut())?;
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

/// The extent of a loop as a constant under the nest's vscale domain, if it is one.
fn const_extent(nest: &Nest, l: LoopId) -> Option<i64> {
    let e = simplify(nest.extent(l), nest);
    match nest.caps.fixed_vscale() {
        Some(v) => simplify(&e.with_vscale(i64::from(v)), nest).as_int(),
        None => e.as_int(),
    }
}

/// Binds tile factors (outermost = ceildiv of the extent by the others).
fn bind_tile(env: &mut Env, nest: &Nest, l: LoopId, outs: &[String], inner: &[TileChoice]) {
    let prod = inner.iter().fold(Expr::Int(1), |a, c| a * c.expr());
    let outer = simplify(&nest.extent(l).clone().ceildiv(prod), nest);
    env.vars.insert(outs[0].clone(), Rv::Expr(outer));
    for (o, c) in outs[1..].iter().zip(inner) {
        env.vars.insert(o.clone(), Rv::Expr(simplify(&c.expr(), nest)));
    }
}

fn step(
    env: &mut Env,
    nest: &mut Nest,
    rng: Option<&mut ChaCha8Rng>,
) -> Result<(Option<Inst>, Option<u128>), TraceError> {
    match env.inst {
        Inst::SamplePerfectTile { outs, loop_, n, max_innermost_factor, decision } => {
            let l = env.loop_(loop_)?;
            let Some(extent) = const_extent(nest, l) else {
                return Err(env.err(
                    TraceErrorKind::Sample,
                    format!(
                        "loop `{}` has extent {}, not a constant; use sample_scalable_tile or sample_mixed_tile",
                        nest.loop_name(l),
                        nest.expr_text(nest.extent(l))
                    ),
                ));
            };
            let d = match (decision, rng) {
                (Some(d), _) => {
                    perfect_domain_ok(extent, *n, *max_innermost_factor, d).map_err(|e| env.sample_err(e))?;
                    d.clone()
                }
                (None, Some(r)) => {
                    sample_perfect(extent, *n, *max_innermost_factor, r).map_err(|e| env.sample_err(e))?
                }
                (None, None) => return Err(env.no_decision()),
            };
            for (o, f) in outs.iter().zip(&d) {
                env.vars.insert(o.clone(), Rv::Expr(Expr::Int(*f)));
            }
            let mut inst = env.inst.clone();
            if let Inst::SamplePerfectTile { decision, .. } = &mut inst {
                *decision = Some(d);
            }
            let size = count_perfect(extent, *n, *max_innermost_factor);
            return Ok((Some(inst), Some(size)));
        }
        Inst::SampleScalableTile { outs, loop_, n, decision, .. }
        | Inst::SampleMixedTile { outs, loop_, n, decision, .. } => {
            let l = env.loop_(loop_)?;
            let (max_fixed, max_vscale, mixed) = match env.inst {
                Inst::SampleMixedTile { max_innermost_fixed, max_innermost_vscale, .. } => {
                    (*max_innermost_fixed, *max_innermost_vscale, true)
                }
                Inst::SampleScalableTile { max_innermost_vscale, .. } => (0, *max_innermost_vscale, false),
                _ => unreachable!("matched above"),
            };
            let lanes = lanes_per_granule(&nest.caps, nest.widest_bits(l));
            let domain = TileDomain { n: *n, lanes, max_fixed, max_vscale, mixed };
            let d: Vec<TileChoice> = match (decision, rng) {
                (Some(d), _) => {
                    let choices = d
                        .iter()
                        .map(|e| {
                            TileChoice::from_texpr(e).ok_or_else(|| {
                                env.err(
                                    TraceErrorKind::Sample,
                                    format!("decision entry `{e}` is not `c` or `c*vscale`"),
                                )
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    domain.check(&choices).map_err(|e| env.sample_err(e))?;
                    choices
                }
                (None, Some(r)) => domain.sample(r),
                (None, None) => return Err(env.no_decision()),
            };
            bind_tile(env, nest, l, outs, &d);
            let mut inst = env.inst.clone();
            match &mut inst {
                Inst::SampleScalableTile { decision, .. } | Inst::SampleMixedTile { decision, .. } => {
                    *decision = Some(d.iter().map(|c| c.texpr()).collect());
                }
                _ => unreachable!("matched above"),
            }
            return Ok((Some(inst), Some(domain.size())));
        }
        Inst::SampleCategorical { out, candidates, probs, decision } => {
            let d = match (decision, rng) {
                (Some(d), _) => {
                    check_categorical(probs, *d).map_err(|e| env.sample_err(e))?;
                    *d
                }
                (None, Some(r)) => sample_categorical(probs, r).map_err(|e| env.sample_err(e))?,
                (None, None) => return Err(env.no_decision()),
            };
            let v = match &candidates[d] {
                Cand::Int(i) => Rv::Expr(Expr::Int(*i)),
                Cand::Str(s) => Rv::Str(s.clone()),
            };
            env.vars.insert(out.clone(), v);
            let mut inst = env.inst.clone();
            if let Inst::SampleCategorical { decision, .. } = &mut inst {
                *decision = Some(d);
            }
            let size = probs.iter().filter(|p| **p > 0.0).count() as u128;
            return Ok((Some(inst), Some(size)));
        }
        Inst::UseVectors { kind } => {
            let k = env.string(kind)?;
            nest.use_vectors(&k).map_err(|e| env.sched(e))?;
        }
        _ => {}
    }
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
            let t = env.string(tail)?;
            let tail = Tail::parse(&t).ok_or_else(|| {
                env.err(TraceErrorKind::WrongKind, format!("unknown tail \"{t}\" (predicate, peel, scalar)"))
            })?;
            nest.vectorize(l, tail).map_err(|e| env.sched(e))?;
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
                Rv::Expr(_) | Rv::Str(_) => {
                    return Err(env.err(TraceErrorKind::WrongKind, format!("`{target}` is not a loop or block")))
                }
            };
            let v = env.string(value)?;
            nest.annotate(node, key, &v).map_err(|e| env.sched(e))?;
        }
        Inst::UseVectors { .. }
        | Inst::SamplePerfectTile { .. }
        | Inst::SampleScalableTile { .. }
        | Inst::SampleMixedTile { .. }
        | Inst::SampleCategorical { .. } => {}
    }
    Ok((None, None))
}
