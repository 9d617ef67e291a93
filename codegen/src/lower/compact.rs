//! Temporaries of statements computed one row at a time keep one row: a dimension that every iteration of their common loops fixes is dropped.
//!
//! A workload's `temp` tensor (softmax's exponentials `E[i, j]`, layer
//! norm's differences `D[i, j]`) is allocated whole. Once its producer is
//! computed at its consumer's row loop (`compute_at`), each iteration of
//! that loop writes and reads one row only, and no other iteration reads
//! it: the rest of the buffer only spreads the row's traffic over memory
//! (64 MiB of exponentials for a softmax of 16384 rows of 1024, where one
//! row of 4 KiB stays in L1). This pass, run on the scheduled nest before
//! lowering, gives such a dimension an extent of 1 and index 0 in every
//! access.
//!
//! A dimension `d` of temp `t` is dropped when, with `L` the loops that
//! enclose every block reading or writing `t`:
//! - every access's index in `d` is the same expression `e` of the loop
//!   variables (the loops of one iteration left out, as they are 0);
//! - `e` uses only variables of `L`, each of a constant extent, linearly
//!   with constant coefficients, and every loop of `L` with more than one
//!   iteration;
//! - `e` takes a different value in each iteration of `L` (its coefficients
//!   are those of a mixed-radix number).
//!
//! Then each iteration of `L` touches its own slice of `t` in `d`, so no
//! value flows through `t` between iterations, and one slice serves them
//! all in turn. A parallel loop of `L` gets its private copy of the slice
//! from the outliner (the buffer is used inside the loop only). Temps read
//! inside an index expression (indirectly) are left alone.

use scaletune_space::expr::{linear_in, simplify, Expr};
use scaletune_space::ids::{BlockId, LoopId, TensorId, VarId};
use scaletune_space::ir::{Loops, Nest, Node, Scope};
use scaletune_space::workload::{Access, Role};

/// Drops the dimensions of the nest's temporaries that every iteration of
/// their common loops fixes (see the module documentation); returns the
/// number of dimensions dropped.
pub(crate) fn compact_temps(nest: &mut Nest) -> usize {
    let mut dropped = 0;
    for i in 0..nest.tensors.len() {
        let t = TensorId(i as u32);
        let info = nest.tensor(t);
        if info.role != Role::Temp || info.scope != Scope::Global || read_indirectly(nest, t) {
            continue;
        }
        let Some((users, common)) = users_and_common_loops(nest, t) else { continue };
        for d in 0..nest.tensor(t).shape.len() {
            if nest.tensor(t).shape[d].as_int() != Some(1) && fixed_per_iteration(nest, t, d, &users, &common) {
                drop_dimension(nest, t, d, &users);
                dropped += 1;
            }
        }
    }
    dropped
}

/// True if some index expression anywhere loads `t`.
fn read_indirectly(nest: &Nest, t: TensorId) -> bool {
    let loads_t = |e: &Expr| e.any(&|x| matches!(x, Expr::Load(u, _) if *u == t));
    nest.all_blocks().into_iter().any(|b| {
        let blk = nest.block(b);
        blk.lhs.indices.iter().any(loads_t)
            || blk.rhs.any_index(&loads_t)
            || blk.bindings.iter().any(loads_t)
            || blk.predicates.iter().any(|p| loads_t(&p.lhs) || loads_t(&p.rhs))
    })
}

/// The blocks that read or write `t`, and the loops enclosing all of them
/// (outermost first); `None` if no block uses `t`.
fn users_and_common_loops(nest: &Nest, t: TensorId) -> Option<(Vec<BlockId>, Loops)> {
    let users: Vec<BlockId> = nest
        .all_blocks()
        .into_iter()
        .filter(|b| {
            let blk = nest.block(*b);
            blk.lhs.tensor == t || blk.rhs.reads().iter().any(|a| a.tensor == t)
        })
        .collect();
    let mut common = nest.ancestors(Node::Block(*users.first()?));
    for b in &users[1..] {
        let anc = nest.ancestors(Node::Block(*b));
        let shared = common.iter().zip(&anc).take_while(|(a, b)| a == b).count();
        common.truncate(shared);
    }
    Some((users, common))
}

/// Every index of `t` in dimension `d` in the blocks `users`, in loop variables.
fn indices_in(nest: &Nest, t: TensorId, d: usize, users: &[BlockId]) -> Vec<Expr> {
    let mut out = Vec::new();
    for &b in users {
        let blk = nest.block(b);
        let accesses = std::iter::once(&blk.lhs).chain(blk.rhs.reads()).filter(|a| a.tensor == t);
        out.extend(accesses.map(|a: &Access| nest.bind(b, &a.indices[d])));
    }
    out
}

/// True if dimension `d` of `t` is fixed in each iteration of `common` and
/// different between iterations (the module's conditions).
fn fixed_per_iteration(nest: &Nest, t: TensorId, d: usize, users: &[BlockId], common: &[LoopId]) -> bool {
    // Loops of one iteration count as 0.
    let single: Vec<VarId> = nest
        .all_loops()
        .into_iter()
        .filter(|l| nest.extent(*l).as_int() == Some(1))
        .map(|l| nest.loop_(l).var)
        .collect();
    let zeroed = |e: &Expr| simplify(&e.substitute(&|v| single.contains(&v).then_some(Expr::Int(0))), nest);
    let indices: Vec<Expr> = indices_in(nest, t, d, users).iter().map(zeroed).collect();
    let Some(e) = indices.first() else { return false };
    if indices.iter().any(|x| x != e) {
        return false;
    }
    // e = sum of c_k * v_k over the common loops of more than one
    // iteration, plus a constant.
    let mut rest = e.clone();
    let mut terms: Vec<(i64, i64)> = Vec::new();
    for &l in common {
        let Some(extent) = nest.extent(l).as_int() else { return false };
        if extent == 1 {
            continue;
        }
        let v = nest.loop_(l).var;
        let Some(lin) = linear_in(&rest, v, nest) else { return false };
        match lin.const_coeff() {
            Some(c) if c != 0 => terms.push((c.abs(), extent)),
            _ => return false,
        }
        rest = lin.rest;
    }
    if rest.as_int().is_none() {
        return false;
    }
    // Mixed radix: each coefficient exceeds the span of the smaller terms.
    terms.sort_unstable();
    let mut span: i64 = 0;
    for (c, extent) in terms {
        if c <= span {
            return false;
        }
        span = match c.checked_mul(extent - 1).and_then(|x| x.checked_add(span)) {
            Some(s) => s,
            None => return false,
        };
    }
    true
}

/// Gives dimension `d` of `t` the extent 1 and every access of `t` in
/// `users` the index 0 there.
fn drop_dimension(nest: &mut Nest, t: TensorId, d: usize, users: &[BlockId]) {
    nest.tensors[t.index()].shape[d] = Expr::Int(1);
    let at_zero = |a: &Access| {
        (a.tensor == t).then(|| {
            let mut a = a.clone();
            a.indices[d] = Expr::Int(0);
            a
        })
    };
    for &b in users {
        let blk = nest.block_mut(b);
        if let Some(a) = at_zero(&blk.lhs) {
            blk.lhs = a;
        }
        blk.rhs = blk.rhs.map_reads(&at_zero);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_space::trace::parse_trace;
    use scaletune_space::workload::load;
    use scaletune_space::VectorCaps;

    fn scheduled(reference: &str, trace: &str) -> Nest {
        let w = load(reference).expect("loads");
        let mut nest = Nest::from_workload(&w, VectorCaps::fixed(256));
        parse_trace(trace).expect("parses").apply(&mut nest).expect("applies");
        nest
    }

    fn shapes(nest: &Nest) -> Vec<String> {
        nest.tensors
            .iter()
            .filter(|t| t.role == Role::Temp)
            .map(|t| format!("{}{:?}", t.name, t.shape.iter().map(|e| e.as_int().unwrap_or(-1)).collect::<Vec<_>>()))
            .collect()
    }

    /// The layer norm's row statements computed at the row loop, or, with
    /// `split`, at one of the two loops `split(rows, factors=[3, 4])`
    /// makes (`l3` the outer, `l4` the inner).
    fn fused_at(split: Option<&str>) -> String {
        let (split, at) = match split {
            Some(at) => ("l3, l4 = split(l1, factors=[3, 4])\n", at),
            None => ("", "l1"),
        };
        let mut t = format!("b0 = get_block(\"Y\")\nl1, l2 = get_loops(b0)\n{split}");
        for (i, b) in ["V", "D", "Mu"].iter().enumerate() {
            t.push_str(&format!("b{i}{b} = get_block(\"{b}\")\ncompute_at(b{i}{b}, {at})\n"));
        }
        t
    }

    #[test]
    fn the_temporaries_of_a_row_computed_at_its_row_loop_keep_one_row() {
        let mut nest = scheduled("layer_norm:M=12,N=40", &fused_at(None));
        assert_eq!(compact_temps(&mut nest), 3);
        assert_eq!(shapes(&nest), ["Mu[1]", "D[1, 40]", "V[1]"]);
        nest.verify().expect("still a valid nest");
        // At the inner of two row loops: the row index is 4 * outer +
        // inner, one slice per iteration of both.
        let mut nest = scheduled("layer_norm:M=12,N=40", &fused_at(Some("l4")));
        assert_eq!(compact_temps(&mut nest), 3);
        assert_eq!(shapes(&nest), ["Mu[1]", "D[1, 40]", "V[1]"]);
    }

    #[test]
    fn temporaries_shared_between_iterations_or_loop_nests_keep_their_size() {
        // Separate loop nests: no loop encloses the producer and its consumers.
        let mut nest = scheduled("layer_norm:M=12,N=40", "");
        assert_eq!(compact_temps(&mut nest), 0);
        assert_eq!(shapes(&nest), ["Mu[12]", "D[12, 40]", "V[12]"]);
        // At the outer of two row loops: each iteration holds 4 rows (an
        // own row loop of 4), so no dimension is fixed.
        let mut nest = scheduled("layer_norm:M=12,N=40", &fused_at(Some("l3")));
        assert_eq!(compact_temps(&mut nest), 0);
        assert_eq!(shapes(&nest), ["Mu[12]", "D[12, 40]", "V[12]"]);
    }
}
