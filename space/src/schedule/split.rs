//! `split`: one loop into a chain of loops.

use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{prove_le, prove_lt, simplify, Expr};
use crate::ids::LoopId;
use crate::ir::{LoopKind, Nest, Node, Pred};
use crate::limits::MAX_EXTENT;

const PRIM: &str = "split";

impl Nest {
    /// Splits `l` into `factors.len()` nested loops whose extents are the
    /// factors (outermost first). At most one factor may be `None`; it is
    /// inferred as `ceildiv(extent, product of the others)`. When the product
    /// may exceed the extent, every block under the loop gets the predicate
    /// `original < extent`.
    pub fn split(&mut self, l: LoopId, factors: &[Option<Expr>]) -> Result<Vec<LoopId>> {
        self.check_loop(PRIM, l)?;
        let name = self.loop_name(l).to_string();
        let bad = |m: String| ScheduleError::new(PRIM, ErrorKind::BadFactors, m);
        if self.loop_(l).kind != LoopKind::Serial {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::LoopKind,
                format!("loop `{name}` is {}; split it before changing its kind", self.kind_name(l)),
            ));
        }
        if factors.len() < 2 {
            return Err(bad(format!("splitting `{name}` needs at least two factors")));
        }
        if factors.iter().filter(|f| f.is_none()).count() > 1 {
            return Err(bad(format!("at most one factor of `{name}` may be None")));
        }
        let extent = self.extent(l).clone();
        let mut known = Expr::Int(1);
        let mut given: Vec<Option<Expr>> = Vec::new();
        for f in factors {
            match f {
                None => given.push(None),
                Some(f) => {
                    let f = simplify(f, self);
                    if !f.vars().is_empty() {
                        return Err(bad(format!("factor {} of `{name}` uses a loop variable", self.expr_text(&f))));
                    }
                    // Checked first: a factor that overflows cannot be bounded at all.
                    if self.max_value(&f).is_none_or(|hi| hi > i128::from(MAX_EXTENT)) {
                        return Err(ScheduleError::new(
                            PRIM,
                            ErrorKind::Limit,
                            format!(
                                "factor {} of `{name}` exceeds the limit of {MAX_EXTENT} (2^40)",
                                self.expr_text(&f)
                            ),
                        ));
                    }
                    if !prove_lt(&Expr::Int(0), &f, self) {
                        return Err(bad(format!("factor {} of `{name}` is not positive", self.expr_text(&f))));
                    }
                    known = known * f.clone();
                    given.push(Some(f));
                }
            }
        }
        let known = simplify(&known, self);
        if self.max_value(&known).is_none_or(|hi| hi > i128::from(MAX_EXTENT)) {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Limit,
                format!(
                    "the factors of `{name}` multiply to {}, beyond the limit of {MAX_EXTENT} (2^40)",
                    self.expr_text(&known)
                ),
            ));
        }
        let inferred = simplify(&extent.clone().ceildiv(known.clone()), self);
        let factors: Vec<Expr> = given.into_iter().map(|f| f.unwrap_or_else(|| inferred.clone())).collect();
        let product = simplify(&factors.iter().cloned().fold(Expr::Int(1), |a, b| a * b), self);
        if !prove_le(&extent, &product, self) {
            return Err(bad(format!(
                "factors of `{name}` multiply to {}, which can be less than its extent {}",
                self.expr_text(&product),
                self.expr_text(&extent)
            )));
        }
        let exact = prove_le(&product, &extent, self);

        // Build the chain.
        let parent = self.loop_(l).parent;
        let body = std::mem::take(&mut self.loop_mut(l).body);
        let mut vars = Vec::new();
        for (i, f) in factors.iter().enumerate() {
            let base =
                if name.ends_with(|c: char| c.is_ascii_digit()) { format!("{name}_{i}") } else { format!("{name}{i}") };
            vars.push(self.new_var(&base, f.clone()));
        }
        let mut loops: Vec<LoopId> = Vec::new();
        for v in &vars {
            let id = self.add_loop(*v, LoopKind::Serial, Vec::new(), None);
            loops.push(id);
        }
        for i in 0..loops.len() {
            let lp = loops[i];
            if i + 1 < loops.len() {
                self.loop_mut(lp).body = vec![Node::Loop(loops[i + 1])];
                self.loop_mut(loops[i + 1]).parent = Some(lp);
            }
        }
        let last = *loops.last().expect("at least two loops");
        for c in &body {
            self.set_parent(*c, Some(last));
        }
        self.loop_mut(last).body = body;
        let pos = self.position(Node::Loop(l));
        self.siblings_mut(parent)[pos] = Node::Loop(loops[0]);
        self.loop_mut(loops[0]).parent = parent;
        self.loop_mut(l).alive = false;

        // old = ((v0*f1 + v1)*f2 + v2)...
        let mut expr = Expr::Var(vars[0]);
        for (v, f) in vars.iter().zip(&factors).skip(1) {
            expr = expr * f.clone() + Expr::Var(*v);
        }
        let expr = simplify(&expr, self);
        let old_var = self.loop_(l).var;
        self.replace_var(old_var, &expr);
        if !exact {
            for b in self.blocks_in(Node::Loop(loops[0])) {
                self.block_mut(b).predicates.push(Pred { lhs: expr.clone(), rhs: extent.clone() });
                self.simplify_block(b);
            }
        }
        Ok(loops)
    }
}
