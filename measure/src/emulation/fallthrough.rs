//! Blocks that end without a branch are priced together with the block they run into.
//!
//! QEMU ends a translated block at every branch, but also where the code
//! crosses a page boundary (and after its instruction limit). llvm-mca
//! prices each block as if it ran back to back, the steady state of a loop
//! body. A loop body translated as two blocks, split at a page boundary,
//! would be priced as two loops, each carrying the whole body's
//! loop-carried latency: a loop of seven independent FMA chains, split in
//! two, costs twice its steady state. A block whose last instruction is
//! not a control transfer runs into the block at the next instruction every
//! time, so each of its executions is priced as the two blocks together,
//! and the next block alone only for the executions left over.

use super::plugin::BlockCount;
use std::collections::HashMap;

/// The blocks to price for `blocks`, given what each runs into
/// (`falls_into`: the address of the instruction after the block, for a
/// block that does not end in a control transfer). A block that falls into
/// another executed block is replaced by one block spanning both, with its
/// own executions; the block it runs into keeps the executions no such
/// predecessor accounts for (and goes if none is left). Joins are one
/// level deep: a block that falls into a block that itself falls through
/// is priced alone, so every executed instruction is priced once.
pub(crate) fn join_fallthrough(
    blocks: &[BlockCount],
    falls_into: impl Fn(&BlockCount) -> Option<u64>,
) -> Vec<BlockCount> {
    // The most executed block at each address (QEMU may translate code at
    // one address more than once, with different lengths).
    let mut at: HashMap<u64, usize> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        let e = at.entry(b.addr).or_insert(i);
        if blocks[*e].executions < b.executions {
            *e = i;
        }
    }
    let next: Vec<Option<usize>> = blocks
        .iter()
        .enumerate()
        .map(|(i, a)| falls_into(a).and_then(|addr| at.get(&addr).copied()).filter(|&j| j != i))
        .collect();
    let mut absorbed = vec![0u64; blocks.len()];
    let mut out: Vec<Option<BlockCount>> = Vec::with_capacity(blocks.len());
    for (i, a) in blocks.iter().enumerate() {
        // Joining onto a block that is itself joined to its successor would
        // count that block's instructions twice: such a block is priced alone.
        match next[i].filter(|&j| next[j].is_none()) {
            Some(j) => {
                let b = &blocks[j];
                absorbed[j] = absorbed[j].saturating_add(a.executions);
                out.push(Some(BlockCount {
                    addr: a.addr,
                    n_insns: a.n_insns + b.n_insns,
                    bytes: (b.addr + b.bytes).saturating_sub(a.addr),
                    executions: a.executions,
                }));
            }
            None => out.push(None),
        }
    }
    blocks
        .iter()
        .zip(out)
        .zip(absorbed)
        .filter_map(|((b, joined), taken)| match joined {
            Some(j) => Some(j),
            None => {
                let left = b.executions.saturating_sub(taken);
                (left > 0).then_some(BlockCount { executions: left, ..*b })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(addr: u64, n_insns: u64, executions: u64) -> BlockCount {
        BlockCount { addr, n_insns, bytes: 4 * n_insns, executions }
    }

    fn executed(v: &[BlockCount]) -> u64 {
        v.iter().map(|b| b.n_insns * b.executions).sum()
    }

    #[test]
    fn a_loop_body_split_at_a_page_boundary_is_one_block() {
        // A loop body 0xfe0..0x102c (19 instructions) split at the page
        // boundary 0x1000. The first block runs from the preheader at 0xfc0
        // through the first half of the body, once; the back edge enters
        // at 0xfe0, 62 times; the second half runs 63 times.
        let entry = block(0xfc0, 16, 1);
        let head = block(0xfe0, 8, 62);
        let tail = block(0x1000, 11, 63);
        let falls = |b: &BlockCount| (b.addr != 0x1000).then_some(b.addr + b.bytes);
        let got = join_fallthrough(&[entry, head, tail], falls);
        assert_eq!(got, vec![block(0xfc0, 27, 1), block(0xfe0, 19, 62)]);
        assert_eq!(executed(&got), executed(&[entry, head, tail]));
    }

    #[test]
    fn a_chain_of_fallthroughs_prices_every_instruction_once() {
        let (a, b, c) = (block(0x0, 4, 5), block(0x10, 4, 7), block(0x20, 2, 7));
        let falls = |x: &BlockCount| (x.addr != 0x20).then_some(x.addr + x.bytes);
        let got = join_fallthrough(&[a, b, c], falls);
        assert_eq!(got, vec![a, block(0x10, 6, 7)]);
        assert_eq!(executed(&got), executed(&[a, b, c]));
    }

    #[test]
    fn blocks_ending_in_branches_are_left_alone() {
        let a = block(0xfe0, 8, 10);
        let b = block(0x1000, 11, 30);
        assert_eq!(join_fallthrough(&[a, b], |_| None), vec![a, b]);
        // Falling into code that never ran joins nothing.
        assert_eq!(join_fallthrough(&[a], |b| Some(b.addr + b.bytes)), vec![a]);
    }
}
