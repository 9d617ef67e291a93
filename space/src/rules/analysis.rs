//! What rules need to know about a block: its axes, reuse and access patterns.

use crate::expr::Expr;
use crate::ids::{BlockId, LoopId};
use crate::ir::{Nest, Node};
use crate::trace::LoopRv;
use crate::workload::AxisKind;

/// One of a block's own loops and the iterator it drives.
#[derive(Clone, Debug)]
pub(crate) struct AxisLoop {
    /// Its random variable in the trace.
    pub rv: LoopRv,
    /// Index of the iterator it drives.
    pub iter: usize,
    /// Spatial or reduction.
    pub kind: AxisKind,
    /// Constant extent, if it is one.
    pub extent: Option<i64>,
}

/// The block's own loops (each driving one iterator), outermost first.
pub(crate) fn axis_loops(nest: &Nest, b: BlockId, own: &[(LoopRv, LoopId)]) -> Vec<AxisLoop> {
    let blk = nest.block(b);
    let mut out = Vec::new();
    for (rv, l) in own {
        let v = nest.loop_(*l).var;
        let Some(k) = blk.bindings.iter().position(|e| e.uses_var(v)) else { continue };
        out.push(AxisLoop { rv: *rv, iter: k, kind: blk.iters[k].kind, extent: nest.extent(*l).as_int() });
    }
    out
}

/// True if iterator `k` of block `b` has no loop of its own worth
/// vectorizing: every loop that encloses only `b` and drives `k` (if any)
/// has extent 1. That is a producer computed at its consumer's loop over the same axis
/// (`compute_at`: softmax's row statements computed one row at a time keep
/// an own row loop of one iteration), where a vector along `k` would hold
/// one lane.
pub(crate) fn single_iteration_axis(nest: &Nest, b: BlockId, k: usize) -> bool {
    let binding = &nest.block(b).bindings[k];
    nest.ancestors(Node::Block(b))
        .into_iter()
        .filter(|l| binding.uses_var(nest.loop_(*l).var) && nest.blocks_in(Node::Loop(*l)).as_slice() == [b])
        .all(|l| nest.extent(l).as_int() == Some(1))
}

/// The iterator that is the last index of the written tensor (the axis along
/// which stores are contiguous).
pub(crate) fn store_axis(nest: &Nest, b: BlockId) -> Option<usize> {
    let blk = nest.block(b);
    match blk.lhs.indices.last()? {
        Expr::Var(v) => blk.iters.iter().position(|it| it.var == *v),
        _ => None,
    }
}

/// Iterators that are the last index of some read (contiguous loads).
pub(crate) fn load_axes(nest: &Nest, b: BlockId) -> Vec<usize> {
    let blk = nest.block(b);
    let mut out = Vec::new();
    let mut last_indices: Vec<Expr> = Vec::new();
    for a in blk.rhs.reads() {
        last_indices.extend(a.indices.last().cloned());
        // Index tensors read inside index expressions (indirect accesses).
        for e in &a.indices {
            collect_load_last_indices(e, &mut last_indices);
        }
    }
    for e in last_indices {
        if let Expr::Var(v) = e {
            if let Some(k) = blk.iters.iter().position(|it| it.var == v) {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
    }
    out
}

fn collect_load_last_indices(e: &Expr, out: &mut Vec<Expr>) {
    if let Expr::Load(_, idx) = e {
        out.extend(idx.last().cloned());
    }
    for c in e.children() {
        collect_load_last_indices(c, out);
    }
}

/// True if vectorizing iterator `k` makes some read a gather: `k` indexes a
/// read in a dimension other than the last, or inside an indirect index.
pub(crate) fn gathers_when_vectorized(nest: &Nest, b: BlockId, k: usize) -> bool {
    let blk = nest.block(b);
    let v = blk.iters[k].var;
    blk.rhs.reads().iter().any(|a| {
        let n = a.indices.len();
        a.indices
            .iter()
            .enumerate()
            .any(|(d, e)| e.uses_var(v) && (d + 1 != n || e.has_load() || !matches!(e, Expr::Var(_))))
    })
}

/// True if some read does not depend on some spatial iterator (data reuse
/// across that iterator: what multi-level tiling exploits).
pub(crate) fn has_reuse(nest: &Nest, b: BlockId) -> bool {
    let blk = nest.block(b);
    let spatial: Vec<_> = blk.iters.iter().filter(|it| it.kind == AxisKind::Spatial).map(|it| it.var).collect();
    blk.rhs.reads().iter().any(|a| spatial.iter().any(|s| !a.indices.iter().any(|e| e.uses_var(*s))))
}

/// True if any vector kind the nest may use is scalable.
pub(crate) fn scalable(nest: &Nest) -> bool {
    nest.caps.scalable || nest.kinds.iter().any(|(_, c)| c.scalable)
}

/// The iterators of rows and columns of a block that SME outer products can
/// compute (`tensorize`): `C[.., i, j] += X * Y` (reduction iterators) or
/// `C[.., i, j] = X * Y` (none), reads of one type (f32, or f16 or bf16
/// converted to f32, into f32; i8 converted to i32 into i32), `i` and `j` spatial
/// and the last two indices of the output.
pub(crate) fn outer_product_axes(nest: &Nest, b: BlockId) -> Option<(usize, usize)> {
    use crate::workload::UpdateOp;
    let blk = nest.block(b);
    let n_reduce = blk.iters.iter().filter(|it| it.kind == AxisKind::Reduce).count();
    let op_fits = matches!((blk.op, n_reduce), (UpdateOp::Add, 1..) | (UpdateOp::Assign, 0));
    let product = crate::schedule::mopa_operands(&blk.rhs, nest.tensor(blk.lhs.tensor).dtype).is_some();
    if !op_fits || !product {
        return None;
    }
    let iter_of = |e: &Expr| match e {
        Expr::Var(v) => blk.iters.iter().position(|it| it.var == *v),
        _ => None,
    };
    let n = blk.lhs.indices.len();
    if n < 2 {
        return None;
    }
    let (rows, cols) = (iter_of(&blk.lhs.indices[n - 2])?, iter_of(&blk.lhs.indices[n - 1])?);
    let spatial = |k: usize| blk.iters[k].kind == AxisKind::Spatial;
    (rows != cols && spatial(rows) && spatial(cols)).then_some((rows, cols))
}
