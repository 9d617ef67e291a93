//! Replaying a trace on a loop nest.

use super::bindings::{Bindings, Value};
use super::domain::{Count, Provenance};
use super::error::{TraceError, TraceErrorKind};
use super::rv::{name_in, BlockRv, LoopOrBlock, LoopRv, RvId};
use super::{Choice, Inst, SArg, TExpr, Trace};
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Node, Tail};
use crate::kind::VectorKind;
use crate::sample::SampleError;
use crate::schedule::{ErrorKind, ScheduleError};
use rand_chacha::ChaCha8Rng;

/// The instructions a run decided (by index), the final bindings, and the
/// number of decisions of each sampling instruction (by instruction index).
type RunOutcome = (Vec<(usize, Inst)>, Bindings, Vec<(usize, Count)>);

/// The replay state one instruction sees: the bindings so far, the trace's
/// names, its source line and itself.
pub(super) struct Env<'a> {
    pub(super) vars: Bindings,
    pub(super) names: &'a [String],
    pub(super) line: Option<usize>,
    pub(super) inst: &'a Inst,
    /// Adjust a recorded perfect tiling whose loop's extent changed
    /// ([`Trace::apply_repairing_from`]) instead of refusing it.
    pub(super) repair: bool,
}

impl Env<'_> {
    pub(super) fn err(&self, kind: TraceErrorKind, message: String) -> TraceError {
        let inst = self.inst.named(self.names).to_string();
        TraceError { line: self.line, col: None, inst: Some(inst), message, kind }
    }

    /// The name of a random variable (for messages).
    pub(super) fn name(&self, rv: impl RvId) -> &str {
        name_in(self.names, rv.index())
    }

    pub(super) fn get(&self, rv: impl RvId) -> Result<&Value, TraceError> {
        self.vars
            .get(rv)
            .ok_or_else(|| self.err(TraceErrorKind::UnknownName, format!("`{}` is not defined", self.name(rv))))
    }

    fn wrong(&self, rv: impl RvId, what: &str) -> TraceError {
        self.err(TraceErrorKind::WrongKind, format!("`{}` is not {what}", self.name(rv)))
    }

    pub(super) fn loop_(&self, rv: LoopRv) -> Result<LoopId, TraceError> {
        match self.get(rv)? {
            Value::Loop(l) => Ok(*l),
            _ => Err(self.wrong(rv, "a loop")),
        }
    }

    pub(super) fn block(&self, rv: BlockRv) -> Result<BlockId, TraceError> {
        match self.get(rv)? {
            Value::Block(b) => Ok(*b),
            _ => Err(self.wrong(rv, "a block")),
        }
    }

    pub(super) fn node(&self, target: LoopOrBlock) -> Result<Node, TraceError> {
        match (target, self.get(target)?) {
            (LoopOrBlock::Loop(_), Value::Loop(l)) => Ok(Node::Loop(*l)),
            (LoopOrBlock::Block(_), Value::Block(b)) => Ok(Node::Block(*b)),
            (LoopOrBlock::Loop(_), _) => Err(self.wrong(target, "a loop")),
            (LoopOrBlock::Block(_), _) => Err(self.wrong(target, "a block")),
        }
    }

    pub(super) fn expr(&self, e: &TExpr) -> Result<Expr, TraceError> {
        Ok(match e {
            TExpr::Int(v) => Expr::Int(*v),
            TExpr::VScale => Expr::VScale,
            TExpr::Rv(n) => match self.get(*n)? {
                Value::Expr(x) => x.clone(),
                _ => return Err(self.wrong(*n, "an integer")),
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
            SArg::Rv(n) => match self.get(*n)? {
                Value::Tail(t) => Ok(t.name().to_string()),
                Value::Kind(k) => Ok(k.to_string()),
                Value::Expr(Expr::Int(v)) => Ok(v.to_string()),
                _ => Err(self.wrong(*n, "a value")),
            },
        }
    }

    pub(super) fn tail(&self, a: &Choice<Tail>) -> Result<Tail, TraceError> {
        match a {
            Choice::Lit(t) => Ok(*t),
            Choice::Rv(n) => match self.get(*n)? {
                Value::Tail(t) => Ok(*t),
                _ => Err(self.wrong(*n, "a tail strategy")),
            },
        }
    }

    pub(super) fn kind(&self, a: &Choice<VectorKind>) -> Result<VectorKind, TraceError> {
        match a {
            Choice::Lit(k) => Ok(*k),
            Choice::Rv(n) => match self.get(*n)? {
                Value::Kind(k) => Ok(*k),
                _ => Err(self.wrong(*n, "a vector kind")),
            },
        }
    }

    /// Binds a result of the instruction.
    pub(super) fn bind(&mut self, rv: impl RvId, v: Value) {
        self.vars.bind(rv, v);
    }

    pub(super) fn no_decision(&self) -> TraceError {
        self.err(
            TraceErrorKind::Sample,
            "has no decision; replaying needs every decision (sample the design space first)".to_string(),
        )
    }
}

impl Trace {
    /// Applies every instruction to `nest` and returns the bindings of its
    /// random variables. On error the nest holds the effect of the
    /// instructions before the failing one.
    pub fn apply(&self, nest: &mut Nest) -> Result<Bindings, TraceError> {
        self.apply_from(0, nest, Bindings::default())
    }

    /// Applies the instructions from index `start` on, continuing from the
    /// bindings `env` of the instructions before it (applied to `nest` earlier).
    pub fn apply_from(&self, start: usize, nest: &mut Nest, env: Bindings) -> Result<Bindings, TraceError> {
        self.run(start, nest, env, None).map(|(_, vars, _)| vars)
    }

    /// Like [`Trace::apply_from`], except that a recorded perfect tiling
    /// that no longer multiplies to its loop's extent gets the nearest
    /// decision that does ([`crate::sample::repair_perfect`]) instead of
    /// failing: a mutant whose tile sizes move a factor into or out of a
    /// loop that is later fused and split (the parallel rule's chunks) still
    /// replays. Returns the instructions whose decisions changed (by index),
    /// and the bindings.
    pub fn apply_repairing_from(
        &self,
        start: usize,
        nest: &mut Nest,
        env: Bindings,
    ) -> Result<(Vec<(usize, Inst)>, Bindings), TraceError> {
        let (decided, vars, _) = self.run_with(start, nest, env, None, true)?;
        let changed = decided.into_iter().filter(|(i, inst)| *inst != self.insts[*i]).collect();
        Ok((changed, vars))
    }

    /// Applies the trace from the start, drawing every missing decision
    /// from `rng` and giving a recorded perfect tiling that no longer
    /// multiplies to its loop's extent the nearest decision that does (as
    /// [`Trace::apply_repairing_from`]): the trace with every decision
    /// made, which replays to the same nest without the RNG. For decisions
    /// taken from a schedule of another shape ([`crate::design::DesignSpace::adopt`]).
    pub fn sample_repairing(&self, nest: &mut Nest, rng: &mut ChaCha8Rng) -> Result<Trace, TraceError> {
        let (decided, _, _) = self.run_with(0, nest, Bindings::default(), Some(rng), true)?;
        let mut trace = self.clone();
        for (i, inst) in decided {
            trace.insts[i] = inst;
        }
        Ok(trace)
    }

    /// Applies the trace, drawing every missing decision from `rng` (recorded
    /// decisions are replayed and checked). Returns the trace with all
    /// decisions filled in, which replays to the same nest without the RNG.
    pub fn sample(&self, nest: &mut Nest, rng: &mut ChaCha8Rng) -> Result<(Trace, Bindings), TraceError> {
        self.sample_from(0, nest, Bindings::default(), rng)
    }

    /// Like [`Trace::sample`] for the instructions from index `start` on,
    /// continuing from the bindings `env` of the instructions before it.
    pub fn sample_from(
        &self,
        start: usize,
        nest: &mut Nest,
        env: Bindings,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Trace, Bindings), TraceError> {
        let (decided, vars, _) = self.run(start, nest, env, Some(rng))?;
        let mut out = self.clone();
        for (i, inst) in decided {
            out.insts[i] = inst;
        }
        Ok((out, vars))
    }

    /// Like [`Trace::sample_from`], returning only the bindings.
    pub fn draw_from(
        &self,
        start: usize,
        nest: &mut Nest,
        env: Bindings,
        rng: &mut ChaCha8Rng,
    ) -> Result<Bindings, TraceError> {
        self.run(start, nest, env, Some(rng)).map(|(_, vars, _)| vars)
    }

    fn run(
        &self,
        start: usize,
        nest: &mut Nest,
        env: Bindings,
        rng: Option<&mut ChaCha8Rng>,
    ) -> Result<RunOutcome, TraceError> {
        self.run_with(start, nest, env, rng, false)
    }

    /// [`Trace::run`], repairing perfect tilings if `repair`.
    fn run_with(
        &self,
        start: usize,
        nest: &mut Nest,
        env: Bindings,
        mut rng: Option<&mut ChaCha8Rng>,
        repair: bool,
    ) -> Result<RunOutcome, TraceError> {
        let mut vars = env;
        let mut sizes = Vec::new();
        let mut prov = Provenance::default();
        let mut out = Vec::new();
        // The nest passed `check_limits` since its last change of size.
        let mut within_limits = false;
        for (i, inst) in self.insts.iter().enumerate().skip(start) {
            let varying = prov.before(inst, &vars, nest);
            let mut env = Env { vars, names: &self.names, line: self.lines.get(i).copied(), inst, repair };
            let (decided, size) = super::step::step(&mut env, nest, rng.as_deref_mut())?;
            if let Some(d) = decided {
                out.push((i, d));
            }
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
                // Every size the instruction made (extents, iteration counts,
                // unrolled copies) within the limits, else the trace is refused.
                // Marking a loop vectorized or parallel, or annotating, changes
                // none of them: after a check that passed, nothing to check.
                let marks = matches!(inst, Inst::Vectorize { .. } | Inst::Parallel { .. } | Inst::Annotate { .. });
                if !(marks && within_limits) {
                    nest.check_limits()
                        .map_err(|e| env.err(TraceErrorKind::Schedule(ErrorKind::Limit), e.to_string()))?;
                    within_limits = true;
                }
            }
            vars = env.vars;
        }
        Ok((out, vars, sizes))
    }

    /// The number of possible decisions of each sampling instruction (by
    /// instruction index), found by sampling the trace with `rng`: exact
    /// where it does not depend on earlier decisions, else an upper bound.
    pub fn domain_sizes(&self, nest: &mut Nest, rng: &mut ChaCha8Rng) -> Result<Vec<(usize, Count)>, TraceError> {
        self.run(0, nest, Bindings::default(), Some(rng)).map(|(_, _, sizes)| sizes)
    }
}
