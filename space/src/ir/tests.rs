//! Tests of the nest queries against their definitions.

use crate::caps::VectorCaps;
use crate::design::DesignSpace;
use crate::expr::{simplify, Expr};
use crate::ir::Nest;
use crate::sample::task_rng;
use crate::workload::load;

/// The flat offset by its definition: `sum(index[d] * stride[d])` with
/// `stride[d]` the product of the shape's later dimensions, simplified.
fn flat_by_definition(nest: &Nest, t: crate::ids::TensorId, indices: &[Expr]) -> Expr {
    let strides = nest.strides(t);
    let mut acc = Expr::Int(0);
    for (i, s) in indices.iter().zip(strides) {
        acc = acc + i.clone() * s;
    }
    simplify(&acc, nest)
}

/// Every access of every block of sampled schedules (local caches with
/// vscale in their shapes among them) flattens to the expression the
/// definition gives, for fixed-length and scalable targets.
#[test]
fn flat_index_is_the_sum_of_indices_times_strides() {
    let mut checked = 0;
    for workload in ["matmul:M=64,N=48,K=40", "conv2d_nhwc", "batch_matmul", "layer_norm"] {
        for caps in [VectorCaps::fixed(512), VectorCaps::sve_any()] {
            let w = load(workload).expect("workload loads");
            let space = DesignSpace::generate(&Nest::from_workload(&w, caps));
            let mut rng = task_rng(3, 0);
            for _ in 0..12 {
                let Ok(sample) = space.sample(&mut rng) else { continue };
                let nest = &sample.nest;
                for b in nest.all_blocks() {
                    let blk = nest.block(b);
                    let accesses = std::iter::once(&blk.lhs).chain(blk.rhs.reads());
                    for a in accesses {
                        let bound: Vec<Expr> = a.indices.iter().map(|e| nest.bind(b, e)).collect();
                        assert_eq!(
                            nest.flat_index(a.tensor, &bound),
                            flat_by_definition(nest, a.tensor, &bound),
                            "{workload}, block {}, tensor {}\n{}",
                            blk.name,
                            nest.tensor(a.tensor).name,
                            sample.trace
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 500, "only {checked} accesses checked");
}
