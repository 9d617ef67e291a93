//! `compute_at`: move a producer under a loop of its consumers.

use super::region::Span;
use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{prove_lt, simplify, Expr};
use crate::ids::{BlockId, LoopId};
use crate::ir::{LoopKind, Nest, Node, Pred};
use crate::workload::AxisKind;

const PRIM: &str = "compute_at";

impl Nest {
    /// Moves block `b` (alone in its loop nest) to the start of loop `l`'s
    /// body, computing for each iteration of `l` only the part of its output
    /// that the consumers under `l` read. Every consumer must be under `l`.
    pub fn compute_at(&mut self, b: BlockId, l: LoopId) -> Result<()> {
        let mut trial = self.clone();
        trial.compute_at_unchecked(b, l)?;
        trial.verify().map_err(|e| {
            ScheduleError::new(
                PRIM,
                ErrorKind::Structure,
                format!("block `{}` would use variables outside their loops ({e})", self.block(b).name),
            )
        })?;
        *self = trial;
        Ok(())
    }

    fn compute_at_unchecked(&mut self, b: BlockId, l: LoopId) -> Result<()> {
        self.check_block(PRIM, b)?;
        self.check_loop(PRIM, l)?;
        self.check_outside_vector(PRIM, l)?;
        let bname = self.block(b).name.clone();
        let lname = self.loop_name(l).to_string();
        let structure = |m: String| ScheduleError::new(PRIM, ErrorKind::Structure, m);
        let anc = self.ancestors(Node::Block(b));
        if anc.contains(&l) {
            return Err(structure(format!("block `{bname}` is already inside `{lname}`")));
        }
        // The producer's own nest: the outermost ancestor (or the block) not enclosing `l`.
        let l_anc = self.ancestors(Node::Loop(l));
        let top = anc.iter().find(|a| !l_anc.contains(a) && **a != l).map(|a| Node::Loop(*a)).unwrap_or(Node::Block(b));
        if self.blocks_in(top).as_slice() != [b] {
            return Err(structure(format!("block `{bname}` shares its loops with other blocks")));
        }
        // The producer must come before the consumer loop in their common body.
        let parent = self.parent_of(top);
        let branch = l_anc.iter().find(|a| self.loop_(**a).parent == parent).copied().unwrap_or(l);
        if self.loop_(branch).parent != parent || self.position(top) > self.position(Node::Loop(branch)) {
            return Err(structure(format!("block `{bname}` must come before loop `{lname}`")));
        }
        let t = self.block(b).lhs.tensor;
        let tname = self.tensor(t).name.clone();
        for other in self.all_blocks() {
            if other == b {
                continue;
            }
            if self.block(other).lhs.tensor == t {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Dependence,
                    format!("`{tname}` is also written by block `{}`", self.block(other).name),
                ));
            }
            if self.block_reads(other, t) && !self.encloses(l, Node::Block(other)) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Dependence,
                    format!("block `{}` reads `{tname}` outside `{lname}`", self.block(other).name),
                ));
            }
        }
        let consumers: Vec<BlockId> =
            self.blocks_in(Node::Loop(l)).into_iter().filter(|c| self.block_reads(*c, t)).collect();
        if consumers.is_empty() {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Dependence,
                format!("no block under `{lname}` reads `{tname}`"),
            ));
        }
        // Needed region per dimension: identical over all reads, else the whole dimension.
        let shape = self.tensor(t).shape.clone();
        let mut spans: Vec<Option<Span>> = vec![None; shape.len()];
        let mut whole = vec![false; shape.len()];
        for c in &consumers {
            let anc_c = self.ancestors(Node::Block(*c));
            let pos = anc_c.iter().position(|x| *x == l).expect("l encloses c");
            let inner = anc_c[pos + 1..].to_vec();
            let reads: Vec<_> = self.block(*c).rhs.reads().into_iter().filter(|a| a.tensor == t).cloned().collect();
            if reads.is_empty() {
                // Indirect use as an index: needs everything.
                whole.iter_mut().for_each(|w| *w = true);
            }
            for a in reads {
                for (d, idx) in a.indices.iter().enumerate() {
                    let e = self.bind(*c, idx);
                    match self.span(&e, &inner) {
                        Some(s) => match &spans[d] {
                            None => spans[d] = Some(s),
                            Some(p) if *p == s => {}
                            Some(_) => whole[d] = true,
                        },
                        None => whole[d] = true,
                    }
                }
            }
        }
        let spans: Vec<Span> = spans
            .into_iter()
            .zip(&whole)
            .zip(&shape)
            .map(|((s, w), ext)| match (s, w) {
                (Some(s), false) => s,
                _ => Span { offset: Expr::Int(0), extent: ext.clone(), dense: true },
            })
            .collect();

        // New loops: spatial iterators (in left-hand-side order) then reductions.
        let blk = self.block(b).clone();
        let old_names: Vec<String> = blk.bindings.iter().map(|e| self.expr_text(e)).collect();
        let mut bindings = vec![Expr::Int(0); blk.iters.len()];
        let mut predicates = Vec::new();
        let mut loop_vars = Vec::new();
        let mut done = vec![false; blk.iters.len()];
        for (d, idx) in blk.lhs.indices.iter().enumerate() {
            let Expr::Var(iv) = idx else { continue };
            let Some(k) = blk.iters.iter().position(|it| it.var == *iv) else { continue };
            let base = sanitize(&old_names[k]);
            let v = self.new_var(&base, spans[d].extent.clone());
            loop_vars.push(v);
            bindings[k] = simplify(&(spans[d].offset.clone() + Expr::Var(v)), self);
            let ext = self.var(*iv).extent.clone();
            if !prove_lt(&bindings[k], &ext, self) {
                predicates.push(Pred { lhs: bindings[k].clone(), rhs: ext });
            }
            done[k] = true;
        }
        for (k, it) in blk.iters.iter().enumerate() {
            if done[k] {
                continue;
            }
            if it.kind == AxisKind::Spatial {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Region,
                    format!(
                        "spatial iterator `{}` of block `{bname}` is not a plain index of `{tname}`",
                        self.var(it.var).name
                    ),
                ));
            }
            let base = sanitize(&old_names[k]);
            let v = self.new_var(&base, self.var(it.var).extent.clone());
            loop_vars.push(v);
            bindings[k] = Expr::Var(v);
        }
        // Old predicates: those bounding an iterator are replaced by the new
        // ones; others are carried over when they use the old loops only as
        // plain bindings of iterators.
        let old_loop_vars: Vec<_> = self.loops_in(top).iter().map(|x| self.loop_(*x).var).collect();
        for p in &blk.predicates {
            let bounds_iter =
                blk.iters.iter().zip(&blk.bindings).any(|(it, e)| *e == p.lhs && self.var(it.var).extent == p.rhs);
            if bounds_iter {
                continue;
            }
            let mut ok = true;
            let sub = |x: &Expr| {
                x.substitute(&|v| {
                    if !old_loop_vars.contains(&v) {
                        return None;
                    }
                    blk.bindings.iter().position(|e| *e == Expr::Var(v)).map(|k| bindings[k].clone())
                })
            };
            let q = Pred { lhs: sub(&p.lhs), rhs: sub(&p.rhs) };
            if q.lhs.vars().iter().chain(q.rhs.vars().iter()).any(|v| old_loop_vars.contains(v)) {
                ok = false;
            }
            if !ok {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Region,
                    format!(
                        "block `{bname}` has the condition `{} < {}`, which cannot be carried to its new loops",
                        self.expr_text(&p.lhs),
                        self.expr_text(&p.rhs)
                    ),
                ));
            }
            predicates.push(q);
        }
        // Remove the old nest and build the new one.
        self.detach(top);
        for x in self.loops_in(top) {
            self.loop_mut(x).alive = false;
        }
        let mut child = Node::Block(b);
        for v in loop_vars.iter().rev() {
            let nl = self.add_loop(*v, LoopKind::Serial, vec![child], None);
            self.set_parent(child, Some(nl));
            child = Node::Loop(nl);
        }
        {
            let m = self.block_mut(b);
            m.bindings = bindings;
            m.predicates = predicates;
        }
        self.attach(child, Some(l), 0);
        self.simplify_block(b);
        Ok(())
    }
}

/// A loop name from a printed binding (`i0*4 + i1` is not a name; fall back to `ax`).
fn sanitize(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
    {
        s.to_string()
    } else {
        "ax".to_string()
    }
}
