//! The initial (unscheduled) loop nest of a workload.

use super::*;
use crate::workload::Workload;

impl Nest {
    /// One loop per axis (spatial axes outermost, in left-hand-side order) and
    /// one block per statement, in statement order. Reductions keep their
    /// initialization inside the block (`init`).
    pub fn from_workload(w: &Workload, caps: VectorCaps) -> Nest {
        let mut nest = Nest {
            name: w.name.clone(),
            tensors: w
                .tensors
                .iter()
                .map(|t| TensorInfo {
                    name: t.name.clone(),
                    dtype: t.dtype,
                    shape: t.shape.iter().map(|d| Expr::Int(*d)).collect(),
                    role: t.role,
                    scope: Scope::Global,
                    range: t.range,
                })
                .collect(),
            scalars: w.scalars.clone(),
            vars: Vec::new(),
            loops: Vec::new(),
            blocks: Vec::new(),
            root: Vec::new(),
            caps,
            kinds: Vec::new(),
            transformed: false,
        };
        for s in &w.stmts {
            let mut loop_vars = Vec::new();
            let mut iters = Vec::new();
            for a in &s.axes {
                loop_vars.push(nest.new_var(&a.name, Expr::Int(a.extent)));
            }
            for a in &s.axes {
                let v = nest.new_var(&format!("v{}", a.name), Expr::Int(a.extent));
                iters.push(IterVar { var: v, kind: a.kind });
            }
            let to_iter = |e: &Expr| e.substitute(&|v: VarId| Some(Expr::Var(iters[v.index()].var)));
            let lhs = Access { tensor: s.lhs.tensor, indices: s.lhs.indices.iter().map(to_iter).collect() };
            let rhs = s.rhs.map_indices(&to_iter);
            let name = nest.unique_block_name(&s.name);
            let block = nest.add_block(Block {
                name,
                iters: iters.clone(),
                bindings: loop_vars.iter().map(|v| Expr::Var(*v)).collect(),
                predicates: Vec::new(),
                lhs,
                op: s.op,
                rhs,
                init: s.op != UpdateOp::Assign,
                parent: None,
                annotations: BTreeMap::new(),
                alive: true,
            });
            // Build the loop chain inside out.
            let mut child = Node::Block(block);
            for v in loop_vars.iter().rev() {
                let l = nest.add_loop(*v, LoopKind::Serial, vec![child], None);
                nest.set_parent(child, Some(l));
                child = Node::Loop(l);
            }
            nest.root.push(child);
        }
        // Every block starts simplified (`oh*1 + r` as `oh + r`): schedule
        // primitives re-simplify only the expressions they rewrite.
        for b in nest.all_blocks() {
            nest.simplify_block(b);
        }
        nest
    }
}
