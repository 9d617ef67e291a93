//! Register-blocked micro-kernels in the GotoBLAS loop orders: a strip of
//! result columns, one or more vector registers wide, is computed a few
//! rows at a time over a block of the reduction, with the operand read
//! along the columns packed into a contiguous panel.

use super::analysis::{axis_loops, AxisLoop};
use super::common::{perfect_tile, register_tile, vectorize_unless_exact};
use super::tiling::{packed_operand, vectorize_copy};
use super::State;
use crate::sample::lanes_per_granule;
use crate::trace::{Inst, LoopRv, TExpr};
use crate::workload::AxisKind;

/// Widths of the column strip (`nr`) in vector registers: powers of two,
/// which LLVM splits evenly into registers (a 3-register vector is widened
/// to 4 and shuffled lane by lane).
const COLUMN_REGISTERS: [i64; 3] = [1, 2, 4];
/// Most rows of a register tile (`mr`), whatever the register budget (14
/// rows of 2 registers fill 32: the conv2d kernel of 14 output columns).
const MAX_ROWS: i64 = 14;
/// Largest block of a reduction axis kept inside the micro-kernel (`kc`),
/// unless the whole axis is at most [`MAX_WHOLE_REDUCTION`].
const MAX_REDUCTION_BLOCK: i64 = 512;
/// Longest reduction axis a micro-kernel may also take whole (`kc` = all
/// of it): its accumulators then start at zero in registers and its
/// results are stored once, and a panel of 1024 rows of the widest strip
/// (4 registers of 16 lanes) is 256 KiB, within one core's L2. On matmul
/// 1024^3 on an AVX-512 Xeon (model 167), a 14x32 tile over the whole K
/// ran 3.5 % faster than the best record with `kc` 512 (bench/RESULTS.md).
const MAX_WHOLE_REDUCTION: i64 = 1024;

/// The largest `kc` a reduction axis of `extent` iterations may take.
fn reduction_block_limit(extent: Option<i64>) -> i64 {
    match extent {
        Some(e) if e > MAX_REDUCTION_BLOCK && e <= MAX_WHOLE_REDUCTION => e,
        _ => MAX_REDUCTION_BLOCK,
    }
}
/// Bytes of the operand read along the rows above which the reduction
/// blocks go outermost too ([`Order::ReductionBlocks`]): about what one
/// core's L2 holds. A smaller operand stays in L2 whatever the order, and
/// that order would only load and store the results once per block more
/// (under QEMU, where estimated cycles model no cache, it never wins, and
/// its traces would take trials from the others: one run on matmul
/// 127x255x63, seed 1, needed 174 trials to come within 5 % of the best
/// where the search without them needed 64, in an earlier session).
const ROW_OPERAND_OUTGROWS_L2: i64 = 1 << 20;

/// Which loops of a micro-kernel are outermost: where the column strips sit
/// relative to the blocks of rows and of the reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// `columns / nr, reduction / kc, [pack], rows / mr, ...`: each column
    /// strip sweeps every reduction block, so its results stay in cache
    /// while every row of the other operand streams past (best when that
    /// operand fits in L2).
    Columns,
    /// `rows / mc, reduction / kc, columns / nr, [pack], rows % mc / mr, ...`:
    /// a block of `mc` rows by `kc` of the reduction is read by every column
    /// strip before the next block, so it stays in L2 while the strips pass
    /// (the order of large problems; the row blocks may run in parallel).
    RowBlocks,
    /// `reduction / kc, columns / nr, [pack], rows / mr, ...`: the
    /// reduction blocks outermost, so one block of every row of the other
    /// operand (`M x kc`) is read by every column strip in turn and stays
    /// in L2, where with the columns outer each strip reads all of it, every
    /// block, from further out. Each result tile is loaded and stored once
    /// per reduction block. (matmul 1024^3 on an AVX-512 Xeon, 6 rows of 4
    /// registers, `kc` 512: 14.7 ms against 16.3 ms with the columns outer,
    /// best of six alternated runs each.) The parallel rule stops at the
    /// reduction blocks: only the other spatial axes outside them (a
    /// batch, a convolution's image rows) may run in parallel. Only for
    /// row operands larger than [`ROW_OPERAND_OUTGROWS_L2`].
    ReductionBlocks,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Columns => "columns outer",
            Order::RowBlocks => "row blocks outer",
            Order::ReductionBlocks => "reduction blocks outer",
        }
    }
}

/// The micro-kernel branches of `block`, whose result is contiguous along
/// iterator `vaxis`: one per width `m` of the column strip, in vector
/// registers, and per loop order:
///
/// ```text
/// columns outer:    other spatial axes, columns / nr, reduction / kc,
///                     [pack the operand read along the columns: a kc x nr panel]
///                     rows / mr, reduction % kc, rows % mr (unrolled), nr columns (vectorized)
/// row blocks outer: other spatial axes, rows / mc, reduction / kc, columns / nr,
///                     [pack], rows % mc / mr, reduction % kc, rows % mr (unrolled), nr columns
/// reduction blocks outer: other spatial axes, reduction / kc, columns / nr,
///                     [pack], rows / mr, reduction % kc, rows % mr (unrolled), nr columns
/// ```
///
/// with `kc` a sampled perfect tiling of each reduction axis, `mc` a
/// sampled number of register tiles, and `mr` any number of rows up to what
/// the register file holds: `mr * m` accumulators plus `m` registers of the
/// panel and one broadcast. The rows are the innermost spatial axis other
/// than the columns (`i` of a matmul, the output column of a convolution);
/// a last partial row tile is guarded.
pub(super) fn branches(st: &State, block: &str, vaxis: usize) -> Vec<State> {
    let large = row_operand_bytes(st, block, vaxis).is_some_and(|b| b > ROW_OPERAND_OUTGROWS_L2);
    let orders: &[Order] = if large {
        &[Order::Columns, Order::RowBlocks, Order::ReductionBlocks]
    } else {
        &[Order::Columns, Order::RowBlocks]
    };
    orders
        .iter()
        .flat_map(|&order| COLUMN_REGISTERS.iter().filter_map(move |&m| build(st, block, vaxis, m, order)))
        .collect()
}

/// Bytes of the largest global tensor that `block` reads and does not
/// index by the columns `vaxis` (`A` of `C[i, j] += A[i, k] * B[k, j]`),
/// if its shape is constant.
fn row_operand_bytes(st: &State, block: &str, vaxis: usize) -> Option<i64> {
    let nest = &st.probe;
    let blk = nest.block(nest.find_block(block)?);
    let c = blk.iters[vaxis].var;
    blk.rhs
        .reads()
        .iter()
        .filter(|a| !a.indices.iter().any(|e| e.uses_var(c)))
        .map(|a| nest.tensor(a.tensor))
        .filter(|t| t.scope == crate::ir::Scope::Global)
        .filter_map(|t| {
            let elems = t.shape.iter().try_fold(1i64, |n, e| n.checked_mul(e.as_int()?))?;
            elems.checked_mul(t.dtype.bytes() as i64)
        })
        .max()
}

/// The most vector registers any of the nest's vector kinds has.
fn registers(st: &State) -> i64 {
    st.probe.kinds.iter().map(|(k, _)| i64::from(k.vector_registers())).max().unwrap_or(16)
}

/// Rows of a register tile that fit the register file with `m` column registers.
fn max_rows(registers: i64, m: i64) -> i64 {
    ((registers - m - 1) / m).clamp(1, MAX_ROWS)
}

fn build(st: &State, block: &str, vaxis: usize, m: i64, order: Order) -> Option<State> {
    let mut s = st.clone();
    let (brv, bid) = s.get_block(block)?;
    let own = s.own_loops(brv, bid);
    let axes = axis_loops(&s.probe, bid, &own);
    let spatial = |a: &&AxisLoop| a.kind == AxisKind::Spatial;
    let col = axes.iter().find(|a| a.iter == vaxis && a.kind == AxisKind::Spatial)?.clone();
    let rows = axes.iter().filter(spatial).rfind(|a| a.iter != vaxis && a.extent.is_some_and(|e| e > 1))?.clone();
    let others: Vec<LoopRv> =
        axes.iter().filter(spatial).filter(|a| a.iter != vaxis && a.iter != rows.iter).map(|a| a.rv).collect();
    let reductions: Vec<AxisLoop> = axes.iter().filter(|a| a.kind == AxisKind::Reduce).cloned().collect();
    if reductions.is_empty() {
        return None;
    }
    // Columns: a strip of m registers (m * lanes * vscale), the tail left to the tail strategy.
    let (_, col_loop) = own.iter().find(|(rv, _)| *rv == col.rv)?;
    let lanes = lanes_per_granule(&s.probe.caps, s.probe.widest_bits(*col_loop));
    let min_vscale = i64::from(*s.probe.caps.vscale_values.first()?);
    if m > 1 && col.extent.is_some_and(|e| e < m * lanes * min_vscale) {
        return None;
    }
    let columns = s.new_loops("l", 2);
    // A constant on fixed-length targets (the outer loops keep constant
    // extents, which the parallel rule needs); `vscale` multiples otherwise.
    let width = match s.probe.caps.fixed_vscale() {
        Some(v) => TExpr::Int(m * lanes * i64::from(v)),
        None => TExpr::Mul(Box::new(TExpr::Int(m * lanes)), Box::new(TExpr::VScale)),
    };
    let exact = match (&width, col.extent) {
        (TExpr::Int(w), Some(e)) => e % w == 0,
        _ => false,
    };
    if !s.push(Inst::Split { outs: columns.clone(), loop_: col.rv, factors: vec![None, Some(width)] }) {
        return None;
    }
    let levels = match order {
        Order::Columns | Order::ReductionBlocks => 2,
        Order::RowBlocks => 3,
    };
    let row_levels = register_tile(&mut s, &rows, levels, max_rows(registers(st), m), true)?;
    let mut outer_k = Vec::new();
    let mut inner_k = Vec::new();
    for r in &reductions {
        let levels = perfect_tile(&mut s, r, 2, reduction_block_limit(r.extent))?;
        outer_k.push(levels[0]);
        inner_k.push(levels[1]);
    }
    let (mr, tiles) = (row_levels[levels - 1], row_levels[levels - 2]);
    let mut loops = others;
    match order {
        Order::Columns => {
            loops.push(columns[0]);
            loops.extend(&outer_k);
        }
        Order::ReductionBlocks => {
            loops.extend(&outer_k);
            loops.push(columns[0]);
        }
        Order::RowBlocks => {
            loops.push(row_levels[0]);
            loops.extend(&outer_k);
            loops.push(columns[0]);
        }
    }
    loops.push(tiles);
    loops.extend(&inner_k);
    loops.extend([mr, columns[1]]);
    if !s.push(Inst::Reorder { loops }) || !s.push(Inst::Unroll { loop_: mr }) {
        return None;
    }
    // Strips that divide the columns leave no tail to choose a strategy for.
    if !vectorize_unless_exact(&mut s, columns[1], exact) {
        return None;
    }
    if let Some(tensor) = packed_operand(&s, block, vaxis) {
        let (brv, bid) = s.get_block(block)?;
        let loops = s.get_loops(brv, bid);
        // The loop just outside rows / mr (the last reduction block, or the
        // column strip), before the inner reduction loops, mr and nr.
        let (at, _) = *loops.get(loops.len().checked_sub(4 + inner_k.len())?)?;
        let pack = s.new_block("pack");
        if !s.push(Inst::CacheRead { out: pack, block: brv, tensor, at, layout: None }) {
            return None;
        }
        // The panel is nr columns wide whatever the decisions.
        vectorize_copy(&mut s, pack, true);
    }
    let width = if m == 1 { "1 vector".to_string() } else { format!("{m} vectors") };
    Some(s.mark("micro-kernel").choose(block, "micro-kernel columns", &width).choose(
        block,
        "micro-kernel order",
        order.name(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::VectorCaps;
    use crate::design::DesignSpace;
    use crate::ir::Nest;
    use crate::workload::load;

    /// The micro-kernel design traces of a workload on 256-bit fixed vectors.
    fn micro_kernels(reference: &str) -> Vec<String> {
        let w = load(reference).expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(256)));
        space
            .traces
            .iter()
            .filter(|t| t.rules.iter().any(|r| r == "micro-kernel"))
            .map(|t| t.trace.to_string())
            .collect()
    }

    /// The `max_innermost_factor` of each micro-kernel's reduction tiling.
    fn reduction_limits(reference: &str) -> Vec<String> {
        micro_kernels(reference)
            .iter()
            .flat_map(|t| {
                t.lines().filter(|l| l.contains("sample_perfect_tile(l4,")).map(str::to_string).collect::<Vec<_>>()
            })
            .map(|l| l.split("max_innermost_factor=").nth(1).unwrap_or_default().trim_end_matches(')').to_string())
            .collect()
    }

    #[test]
    fn a_reduction_of_at_most_1024_may_be_taken_whole_and_a_longer_one_in_blocks_of_512() {
        // Every micro-kernel of each shape (6 of them) bounds its `kc` alike.
        assert_eq!(reduction_limits("matmul:M=64,N=64,K=1024"), vec!["1024"; 6]);
        assert_eq!(reduction_limits("matmul:M=64,N=64,K=768"), vec!["768"; 6]);
        assert_eq!(reduction_limits("matmul:M=64,N=64,K=512"), vec!["512"; 6]);
        assert_eq!(reduction_limits("matmul:M=64,N=64,K=2048"), vec!["512"; 6]);
        assert_eq!(reduction_block_limit(Some(1025)), 512);
        assert_eq!(reduction_block_limit(None), 512);
    }

    #[test]
    fn a_matmul_gets_one_micro_kernel_per_strip_width_and_loop_order() {
        let traces = micro_kernels("matmul:M=512,N=512,K=512");
        assert_eq!(traces.len(), 6);
        // Two registers of columns: at most 6 rows on 16 registers; the
        // strip divides 512 (no tail to sample), and so does the panel.
        expect_test::expect![[r#"
            b1 = get_block("C")
            l2, l3, l4 = get_loops(b1)
            l5, l6 = split(l3, factors=[None, 16])
            t7, t8 = sample_mixed_tile(l2, n=2, max_innermost_fixed=6, max_innermost_vscale=0)
            l9, l10 = split(l2, factors=[t7, t8])
            t11, t12 = sample_perfect_tile(l4, n=2, max_innermost_factor=512)
            l13, l14 = split(l4, factors=[t11, t12])
            reorder(l5, l13, l9, l14, l10, l6)
            unroll(l10)
            vectorize(l6, tail="predicate")
            b15 = get_block("C")
            l16, l17, l18, l19, l20, l21 = get_loops(b15)
            pack22 = cache_read(b15, "B", at=l17)
            l23, l24, l25, l26 = get_loops(pack22)
            l27, l28 = split(l26, factors=[None, 4*vscale])
            vectorize(l28, tail="predicate")
            b29 = get_block("B_local")
            l30, l31, l32, l33, l34 = get_loops(b29)
            t35, t36 = sample_perfect_tile(l30, n=2, max_innermost_factor=8192)
            l37, l38 = split(l30, factors=[t35, t36])
            parallel(l37)
            b39 = get_block("B_local")
            l40, l41, l42, l43, l44, l45 = get_loops(b39)
            unroll46 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25])
            annotate(l40, key="unroll_max_step", value=unroll46)
        "#]]
        .assert_eq(&traces[1]);
        // Row blocks outer: blocks of register tiles of rows and blocks of
        // the reduction, then the column strips, each packing its panel.
        expect_test::expect![[r#"
            b1 = get_block("C")
            l2, l3, l4 = get_loops(b1)
            l5, l6 = split(l3, factors=[None, 16])
            t7, t8, t9 = sample_mixed_tile(l2, n=3, max_innermost_fixed=6, max_innermost_vscale=0)
            l10, l11, l12 = split(l2, factors=[t7, t8, t9])
            t13, t14 = sample_perfect_tile(l4, n=2, max_innermost_factor=512)
            l15, l16 = split(l4, factors=[t13, t14])
            reorder(l10, l15, l5, l11, l16, l12, l6)
            unroll(l12)
            vectorize(l6, tail="predicate")
            b17 = get_block("C")
            l18, l19, l20, l21, l22, l23, l24 = get_loops(b17)
            pack25 = cache_read(b17, "B", at=l20)
            l26, l27, l28, l29, l30 = get_loops(pack25)
            l31, l32 = split(l30, factors=[None, 4*vscale])
            vectorize(l32, tail="predicate")
            b33 = get_block("B_local")
            l34, l35, l36, l37, l38, l39 = get_loops(b33)
            t40, t41 = sample_perfect_tile(l34, n=2, max_innermost_factor=8192)
            l42, l43 = split(l34, factors=[t40, t41])
            parallel(l42)
            b44 = get_block("B_local")
            l45, l46, l47, l48, l49, l50, l51 = get_loops(b44)
            unroll52 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25])
            annotate(l45, key="unroll_max_step", value=unroll52)
        "#]]
        .assert_eq(&traces[4]);
    }

    #[test]
    fn a_row_operand_larger_than_l2_also_gets_the_reduction_blocks_outermost() {
        // A of 512x512 f32 is 1 MiB: two orders; 513 rows: three.
        assert_eq!(micro_kernels("matmul:M=513,N=512,K=512").len(), 9);
        let traces = micro_kernels("matmul:M=1024,N=1024,K=1024");
        assert_eq!(traces.len(), 9);
        // Each block of the reduction is read by every column strip in
        // turn; no spatial loop outside it to parallelize.
        expect_test::expect![[r#"
            b1 = get_block("C")
            l2, l3, l4 = get_loops(b1)
            l5, l6 = split(l3, factors=[None, 16])
            t7, t8 = sample_mixed_tile(l2, n=2, max_innermost_fixed=6, max_innermost_vscale=0)
            l9, l10 = split(l2, factors=[t7, t8])
            t11, t12 = sample_perfect_tile(l4, n=2, max_innermost_factor=1024)
            l13, l14 = split(l4, factors=[t11, t12])
            reorder(l13, l5, l9, l14, l10, l6)
            unroll(l10)
            vectorize(l6, tail="predicate")
            b15 = get_block("C")
            l16, l17, l18, l19, l20, l21 = get_loops(b15)
            pack22 = cache_read(b15, "B", at=l17)
            l23, l24, l25, l26 = get_loops(pack22)
            l27, l28 = split(l26, factors=[None, 4*vscale])
            vectorize(l28, tail="predicate")
            b29 = get_block("B_local")
            l30, l31, l32, l33, l34 = get_loops(b29)
            unroll35 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25])
            annotate(l30, key="unroll_max_step", value=unroll35)
        "#]]
        .assert_eq(&traces[7]);
    }

    #[test]
    fn narrow_results_get_only_the_strips_that_fit() {
        // 12 columns: one 8-lane register (with a tail); two would not fit.
        // One kernel per loop order.
        let traces = micro_kernels("matmul:M=9,N=12,K=5");
        assert_eq!(traces.len(), 2);
        expect_test::expect![[r#"
            b1 = get_block("C")
            l2, l3, l4 = get_loops(b1)
            l5, l6 = split(l3, factors=[None, 8])
            t7, t8 = sample_perfect_tile(l2, n=2, max_innermost_factor=14)
            l9, l10 = split(l2, factors=[t7, t8])
            t11, t12 = sample_perfect_tile(l4, n=2, max_innermost_factor=512)
            l13, l14 = split(l4, factors=[t11, t12])
            reorder(l5, l13, l9, l14, l10, l6)
            unroll(l10)
            tail15 = sample_categorical(candidates=["predicate", "peel", "scalar"], probs=[0.2, 0.5, 0.3])
            vectorize(l6, tail=tail15)
            b16 = get_block("C")
            l17, l18, l19, l20, l21, l22 = get_loops(b16)
            pack23 = cache_read(b16, "B", at=l18)
            l24, l25, l26, l27 = get_loops(pack23)
            l28, l29 = split(l27, factors=[None, 4*vscale])
            vectorize(l29, tail="predicate")
            b30 = get_block("B_local")
            l31, l32, l33, l34, l35 = get_loops(b30)
            t36, t37 = sample_perfect_tile(l31, n=2, max_innermost_factor=40)
            l38, l39 = split(l31, factors=[t36, t37])
            parallel(l38)
            b40 = get_block("B_local")
            l41, l42, l43, l44, l45, l46 = get_loops(b40)
            unroll47 = sample_categorical(candidates=[0, 4, 16, 64], probs=[0.25, 0.25, 0.25, 0.25])
            annotate(l41, key="unroll_max_step", value=unroll47)
        "#]]
        .assert_eq(&traces[0]);
    }

    #[test]
    fn the_register_budget_leaves_room_for_the_panel_and_a_broadcast() {
        // AVX2: 16 registers.
        assert_eq!([1, 2, 3, 4].map(|m| max_rows(16, m)), [14, 6, 4, 2]);
        // 32 registers (AVX-512, NEON, SVE).
        assert_eq!([1, 2, 3, 4].map(|m| max_rows(32, m)), [14, 14, 9, 6]);
        assert_eq!(max_rows(4, 4), 1);
    }
}
