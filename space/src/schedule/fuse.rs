//! `fuse`: a chain of loops into one.

use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{simplify, Expr};
use crate::ids::LoopId;
use crate::ir::{LoopKind, Nest, Node};

const PRIM: &str = "fuse";

impl Nest {
    /// Fuses consecutive loops (each the only child of the previous one) into
    /// one loop whose extent is the product of theirs.
    pub fn fuse(&mut self, loops: &[LoopId]) -> Result<LoopId> {
        if loops.len() < 2 {
            return Err(ScheduleError::new(PRIM, ErrorKind::Structure, "needs at least two loops"));
        }
        for l in loops {
            self.check_loop(PRIM, *l)?;
            if self.loop_(*l).kind != LoopKind::Serial {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::LoopKind,
                    format!("loop `{}` is {}", self.loop_name(*l), self.kind_name(*l)),
                ));
            }
        }
        for w in loops.windows(2) {
            if self.loop_(w[0]).body != vec![Node::Loop(w[1])] {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!(
                        "`{}` is not the only child of `{}`; fuse needs directly nested loops",
                        self.loop_name(w[1]),
                        self.loop_name(w[0])
                    ),
                ));
            }
        }
        let vars: Vec<_> = loops.iter().map(|l| self.loop_(*l).var).collect();
        for b in self.blocks_in(Node::Loop(loops[0])) {
            if self.block(b).op == crate::workload::UpdateOp::Assign {
                continue;
            }
            let red = self.reduction_loop_vars(b);
            let spatial = self.spatial_loop_vars(b);
            if vars.iter().any(|v| red.contains(v)) && vars.iter().any(|v| spatial.contains(v)) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!("fusing would mix spatial and reduction iterators of block `{}`", self.block(b).name),
                ));
            }
        }
        let extents: Vec<Expr> = loops.iter().map(|l| self.extent(*l).clone()).collect();
        let total = simplify(&extents.iter().cloned().fold(Expr::Int(1), |a, b| a * b), self);
        let name: Vec<String> = loops.iter().map(|l| self.loop_name(*l).to_string()).collect();
        let var = self.new_var(&name.join("_"), total);
        let inner = *loops.last().expect("two or more loops");
        let body = std::mem::take(&mut self.loop_mut(inner).body);
        let outer = loops[0];
        let parent = self.loop_(outer).parent;
        let fused = self.add_loop(var, LoopKind::Serial, Vec::new(), parent);
        for c in &body {
            self.set_parent(*c, Some(fused));
        }
        self.loop_mut(fused).body = body;
        let pos = self.position(Node::Loop(outer));
        self.siblings_mut(parent)[pos] = Node::Loop(fused);
        for l in loops {
            self.loop_mut(*l).alive = false;
        }
        // l_k = floormod(floordiv(f, prod_{m>k} e_m), e_k), every k at once.
        let subst: Vec<(crate::ids::VarId, Expr)> = loops
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let inner_prod = extents[k + 1..].iter().cloned().fold(Expr::Int(1), |a, b| a * b);
                let mut e = Expr::Var(var).floordiv(inner_prod);
                if k > 0 {
                    e = e.floormod(extents[k].clone());
                }
                (self.loop_(*l).var, simplify(&e, self))
            })
            .collect();
        self.replace_vars(&subst);
        Ok(fused)
    }
}
