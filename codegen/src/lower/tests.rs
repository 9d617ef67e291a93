//! Lowering checked against the workload reference through the interpreter
//! at several vscale values.

use crate::interp::{run, ArgValue, InterpOptions};
use crate::lower::{lower, lower_unverified};
use crate::vprog::{LoopHint, Op, Program, Stmt};
use scaletune_space::data::make_args;
use scaletune_space::ir::Nest;
use scaletune_space::reference::{compare, evaluate};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::{load, Role};
use scaletune_space::VectorCaps;

pub(crate) const MATMUL_EXAMPLE: &str = r#"b = get_block("C")
i, j, k = get_loops(b)
i0, i1 = split(i, factors=[None, 4])
j0, j1 = split(j, factors=[None, 4*vscale])
reorder(i0, j0, k, i1, j1)
unroll(i1)
vectorize(j1, tail="predicate")
"#;

/// Lowers `trace` on `workload` and checks every output at every vscale of
/// `caps` (and that [`lower_unverified`] gives the same program).
pub(crate) fn check(workload: &str, trace: &str, caps: VectorCaps) -> Program {
    let w = load(workload).expect("workload");
    let mut nest = Nest::from_workload(&w, caps.clone());
    parse_trace(trace).expect("parses").apply(&mut nest).unwrap_or_else(|e| panic!("{e}"));
    let prog = lower(&nest, "kernel").unwrap_or_else(|e| panic!("{e}\n{nest}"));
    // What the cost model reads is the very program that is compiled.
    assert_eq!(lower_unverified(&nest, "kernel").expect("lowers"), prog);
    let args = make_args(&w, 5);
    let reference = evaluate(&w, &args).expect("reference");
    for &vs in &caps.vscale_values {
        let mut a: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
        a.extend(w.scalars.iter().map(|s| ArgValue::Scalar(s.value)));
        run(&prog, &mut a, &InterpOptions::new(vs)).unwrap_or_else(|e| panic!("vscale {vs}: {e}\n{nest}\n{prog}"));
        for (k, id) in w.arg_tensors().iter().enumerate() {
            if w.tensor(*id).role != Role::Output {
                continue;
            }
            let got = a[k].as_tensor().expect("tensor");
            let c = compare(&w.tensor(*id).name, got, &reference[id.index()]);
            assert!(c.passed(), "vscale {vs}: {c:?}\n{nest}\n{prog}");
        }
    }
    prog
}

fn sve() -> VectorCaps {
    VectorCaps::scalable(128, 128, 2048)
}

/// Statements of `s`, nested ones included, for which `f` holds.
fn count_in(s: &[Stmt], f: &dyn Fn(&Stmt) -> bool) -> usize {
    s.iter()
        .map(|x| {
            f(x) as usize
                + match x {
                    Stmt::Loop { body, .. } => count_in(body, f),
                    Stmt::If { then_body, else_body, .. } => count_in(then_body, f) + count_in(else_body, f),
                    _ => 0,
                }
        })
        .sum()
}

fn count(p: &Program, f: &dyn Fn(&Stmt) -> bool) -> usize {
    count_in(&p.body, f)
}

fn has_op(p: &Program, f: &dyn Fn(&Op) -> bool) -> bool {
    count(p, &|s| matches!(s, Stmt::Assign { op, .. } if f(op))) > 0
}

#[test]
fn naive_nests_of_every_workload() {
    for w in scaletune_space::workload::shipped_names() {
        let small = match w {
            "matmul" | "matmul_bt" | "matmul_i8" | "matmul_f16" | "matmul_bf16" => format!("{w}:M=5,N=6,K=7"),
            "batch_matmul" => format!("{w}:BS=2,M=3,N=4,K=5"),
            "conv2d_nhwc" => format!("{w}:H=5,WI=6,C=3,F=4"),
            "depthwise_conv2d_nhwc" => format!("{w}:H=5,WI=6,C=3"),
            "paged_read" => format!("{w}:P=9,PAGES=50"),
            _ => w.to_string(),
        };
        check(&small, "", VectorCaps::fixed(128));
    }
}

#[test]
fn matmul_example_with_every_tail() {
    for tail in ["predicate", "peel", "scalar"] {
        let t = MATMUL_EXAMPLE.replace("\"predicate\"", &format!("\"{tail}\""));
        let p = check("matmul:M=67,N=131,K=29", &t, VectorCaps::scalable(128, 128, 2048));
        let masks = has_op(&p, &|o| matches!(o, Op::ActiveLaneMask { .. }));
        assert_eq!(masks, tail != "scalar", "{tail}");
    }
}

#[test]
fn matmul_example_on_fixed_and_rvv_caps() {
    check("matmul:M=67,N=131,K=29", MATMUL_EXAMPLE, VectorCaps::fixed(512));
    check("matmul:M=67,N=131,K=29", MATMUL_EXAMPLE, VectorCaps::scalable(64, 128, 1024));
}

#[test]
fn sum_cos_vectorized_reduction_accumulates_in_a_register() {
    let t = r#"b = get_block("S")
i, = get_loops(b)
i0, i1 = split(i, factors=[None, 4*vscale])
vectorize(i1, tail="predicate")
"#;
    let p = check("sum_cos:N=500", t, sve());
    // One horizontal reduction, after the loop.
    assert_eq!(count(&p, &|s| matches!(s, Stmt::Assign { op: Op::Reduce(..), .. })), 1);
    for tail in ["peel", "scalar"] {
        check("sum_cos:N=500", &t.replace("\"predicate\"", &format!("\"{tail}\"")), sve());
    }
}

#[test]
fn paged_read_gathers_or_loads_rows() {
    let gather = r#"b = get_block("X")
p, v = get_loops(b)
p0, p1 = split(p, factors=[None, 4*vscale])
reorder(p0, v, p1)
vectorize(p1)
"#;
    let prog = check("paged_read", gather, sve());
    assert!(has_op(&prog, &|o| matches!(o, Op::Gather { .. })));
    let rows = r#"b = get_block("X")
p, v = get_loops(b)
vectorize(v)
"#;
    let prog = check("paged_read", rows, sve());
    assert!(!has_op(&prog, &|o| matches!(o, Op::Gather { .. })));
    assert!(has_op(&prog, &|o| matches!(o, Op::VLoad { .. })));
}

#[test]
fn matmul_bt_with_gathered_and_contiguous_dimensions() {
    let gathered = r#"b = get_block("C")
i, j, k = get_loops(b)
j0, j1 = split(j, factors=[None, 4*vscale])
reorder(i, j0, k, j1)
vectorize(j1)
"#;
    let p = check("matmul_bt:M=7,N=19,K=11", gathered, sve());
    assert!(has_op(&p, &|o| matches!(o, Op::Gather { .. })));
    let contiguous = r#"b = get_block("C")
i, j, k = get_loops(b)
k0, k1 = split(k, factors=[None, 4*vscale])
vectorize(k1, tail="peel")
"#;
    let p = check("matmul_bt:M=7,N=19,K=11", contiguous, sve());
    assert!(!has_op(&p, &|o| matches!(o, Op::Gather { .. })));
}

#[test]
fn caches_decompose_and_softmax() {
    let t = format!(
        "{MATMUL_EXAMPLE}w = cache_write(b, at=j0)\np = cache_read(b, \"B\", at=j0, layout=[1, 0])\ni2, j2, k2, i3, j3 = get_loops(b)\ninit = decompose_reduction(b, k2)\n"
    );
    check("matmul:M=13,N=21,K=9", &t, sve());
    let s = r#"y = get_block("Y")
i, j = get_loops(y)
j0, j1 = split(j, factors=[None, 4*vscale])
vectorize(j1, tail="peel")
s = get_block("S")
compute_at(s, i)
e = get_block("E")
compute_at(e, i)
m = get_block("Mx")
compute_at(m, i)
"#;
    check("softmax_rows:M=5,N=37", s, sve());
}

#[test]
fn fused_vector_loop_uses_gathers_and_integer_and_half_types() {
    let t = r#"b = get_block("Y")
j, i = get_loops(b)
f = fuse(j, i)
f0, f1 = split(f, factors=[None, 2*vscale])
vectorize(f1)
"#;
    check("transpose:M=7,N=5", t, sve());
    let m = "b = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1)\n";
    check("matmul_i8:M=5,N=19,K=7", m, sve());
    check("matmul_f16:M=5,N=19,K=7", m, sve());
    check("matmul_bf16:M=5,N=19,K=7", m, sve());
    check("conv2d_nhwc:H=6,WI=6,C=3,F=5", "b = get_block(\"Out\")\nn, oh, ow, f, r, s, c = get_loops(b)\nf0, f1 = split(f, factors=[None, 4*vscale])\nreorder(n, oh, ow, f0, r, s, c, f1)\nvectorize(f1, tail=\"scalar\")\n", sve());
}

#[test]
fn unroll_max_step_hints_small_inner_loops() {
    let t = "b = get_block(\"C\")\ni, j, k = get_loops(b)\nannotate(i, key=\"unroll_max_step\", value=\"16\")\n";
    let p = check("matmul:M=3,N=4,K=5", t, VectorCaps::fixed(128));
    let hints: Vec<LoopHint> = {
        fn walk(s: &[Stmt], out: &mut Vec<LoopHint>) {
            for x in s {
                if let Stmt::Loop { hint, body, .. } = x {
                    out.push(*hint);
                    walk(body, out);
                }
            }
        }
        let mut v = Vec::new();
        walk(&p.body, &mut v);
        v
    };
    // k (5 steps) is unrolled; j (4 x 5 = 20 steps) and i are not.
    assert!(hints.contains(&LoopHint::Unroll(5)), "{hints:?}");
    assert!(!hints.contains(&LoopHint::Unroll(4)), "{hints:?}");
}

/// Ifs in `body` and the statements nested in it.
fn ifs_in(body: &[Stmt]) -> usize {
    count_in(body, &|s| matches!(s, Stmt::If { .. }))
}

#[test]
fn a_register_tile_that_rounds_up_is_guarded_only_in_its_last_tile() {
    // 27 rows in tiles of 6: four full tiles and one of 3 rows. The loop
    // over tiles is split at 4; the full part has no guard at all (neither
    // around the register tile's loads and stores nor in its reduction loop).
    let trace = r#"b = get_block("C")
i, j, k = get_loops(b)
i0, i1 = split(i, factors=[None, 6])
j0, j1 = split(j, factors=[None, 4])
reorder(i0, j0, k, i1, j1)
unroll(i1)
vectorize(j1, tail="peel")
"#;
    let prog = check("matmul:M=27,N=16,K=7", trace, VectorCaps::fixed(128));
    let loops: Vec<&Stmt> = prog.body.iter().filter(|s| matches!(s, Stmt::Loop { .. })).collect();
    assert_eq!(loops.len(), 2, "the tile loop split in two\n{prog}");
    let bodies: Vec<&Vec<Stmt>> = loops
        .iter()
        .map(|s| match s {
            Stmt::Loop { body, .. } => body,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(ifs_in(bodies[0]), 0, "full tiles are not guarded\n{prog}");
    // The last tile: one guard per row of the tile around each of its
    // initialization, load into a register, update and store.
    assert_eq!(ifs_in(bodies[1]), 4 * 6, "{prog}");
    // Scalable vectors: the same split, checked at every vscale.
    let trace = trace.replace("factors=[None, 4]", "factors=[None, 4*vscale]");
    check("matmul:M=27,N=20,K=7", &trace, sve());
}

#[test]
fn a_block_of_register_tiles_that_rounds_up_twice_is_guarded_only_in_its_last_tiles() {
    // Rows in register tiles of 4, the tiles in blocks of 3 (12 rows): each
    // row has two guards, its own (`i0*4 + i1 < M`) and its tile's
    // (`i00*3 + i01 < ceildiv(M, 4)`), which every row of the tile shares.
    // The loop over a block's tiles is split where either begins to fail, so
    // the full tiles are guarded by neither, in their reduction loop least
    // of all.
    let trace = r#"b = get_block("C")
i, j, k = get_loops(b)
i0, i1 = split(i, factors=[None, 4])
i00, i01 = split(i0, factors=[None, 3])
j0, j1 = split(j, factors=[None, 4])
reorder(i00, j0, i01, k, i1, j1)
unroll(i1)
vectorize(j1, tail="peel")
"#;
    for m in [24, 36] {
        // Whole blocks of whole tiles: nothing to guard.
        let prog = check(&format!("matmul:M={m},N=16,K=7"), trace, VectorCaps::fixed(128));
        assert_eq!(ifs_in(&prog.body), 0, "M={m}\n{prog}");
    }
    for m in [29, 13, 22, 5] {
        let prog = check(&format!("matmul:M={m},N=16,K=7"), trace, VectorCaps::fixed(128));
        // i00 { j0 { i01 in [0, split) ; i01 in [split, 3) } }
        let inner = |s: &Stmt| -> Vec<Stmt> {
            match s {
                Stmt::Loop { body, .. } => body.clone(),
                _ => Vec::new(),
            }
        };
        let outer: Vec<&Stmt> = prog.body.iter().filter(|s| matches!(s, Stmt::Loop { .. })).collect();
        assert_eq!(outer.len(), 1, "M={m}\n{prog}");
        let columns: Vec<Stmt> = inner(outer[0]).into_iter().filter(|s| matches!(s, Stmt::Loop { .. })).collect();
        assert_eq!(columns.len(), 1, "M={m}\n{prog}");
        let tiles: Vec<Stmt> = inner(&columns[0]).into_iter().filter(|s| matches!(s, Stmt::Loop { .. })).collect();
        assert_eq!(tiles.len(), 2, "the loop over a block's tiles split in two, M={m}\n{prog}");
        assert_eq!(ifs_in(&inner(&tiles[0])), 0, "full tiles are not guarded, M={m}\n{prog}");
        assert!(ifs_in(&inner(&tiles[1])) > 0, "M={m}\n{prog}");
    }
    // Scalable vectors: the same split, checked at every vscale.
    let trace = trace.replace("factors=[None, 4]\nreorder", "factors=[None, 4*vscale]\nreorder");
    check("matmul:M=29,N=20,K=7", &trace, sve());
}

#[test]
fn guards_of_unrolled_loops_inside_a_vector_loop_stay_lane_masks() {
    // The unrolled loop's condition uses the (outer) vector loop's variable:
    // it is a lane mask, not a guard that a scalar loop could be split on.
    let trace = r#"b = get_block("Y")
i = get_loops(b)
i0, i1 = split(i, factors=[None, 2])
i00, i01 = split(i0, factors=[None, 2])
unroll(i1)
vectorize(i00, tail="predicate")
"#;
    check("scale_add:N=37", trace, sve());
}

#[test]
fn a_reduction_block_of_the_whole_reduction_initializes_each_register_tile() {
    // k0 runs once: each tile of 6 rows is zeroed just before its k1 loop,
    // inside the loop over the tiles, and no pass over the strip comes
    // before them; a last partial tile (13 rows) and a K of one block.
    let trace = r#"b = get_block("C")
i, j, k = get_loops(b)
j0, j1 = split(j, factors=[None, 4*vscale])
i0, i1 = split(i, factors=[None, 6])
k0, k1 = split(k, factors=[None, 17])
reorder(j0, k0, i0, k1, i1, j1)
unroll(i1)
vectorize(j1, tail="predicate")
"#;
    let prog = check("matmul:M=13,N=21,K=17", trace, sve());
    // Loops enclosing each vector store of the zeros: the stores of a
    // splat made outside every loop (the tiles' write-backs store
    // accumulators, made inside them).
    fn zero_store_depths(p: &Program) -> Vec<usize> {
        fn walk(splats: &[crate::vprog::Reg], s: &[Stmt], depth: usize, out: &mut Vec<usize>) {
            for x in s {
                match x {
                    Stmt::VStore { value, .. } if splats.contains(value) => out.push(depth),
                    Stmt::Loop { body, .. } => walk(splats, body, depth + 1, out),
                    Stmt::If { then_body, else_body, .. } => {
                        walk(splats, then_body, depth, out);
                        walk(splats, else_body, depth, out);
                    }
                    _ => {}
                }
            }
        }
        let splats: Vec<crate::vprog::Reg> = p
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Assign { dst, op: Op::Splat(..) } => Some(*dst),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        walk(&splats, &p.body, 0, &mut out);
        out
    }
    // Under j0, k0 (one iteration) and the loop over row tiles, beside k1.
    let depths = zero_store_depths(&prog);
    assert!(!depths.is_empty() && depths.iter().all(|&d| d == 3), "{depths:?}\n{prog}");
    // Two blocks of the reduction: the zeros go before k0, under j0 and
    // the init's own loop over rows, as before.
    let two = trace.replace("factors=[None, 17]", "factors=[None, 9]");
    let prog = check("matmul:M=13,N=21,K=18", &two, sve());
    let depths = zero_store_depths(&prog);
    assert!(!depths.is_empty() && depths.iter().all(|&d| d == 2), "{depths:?}\n{prog}");
    check("matmul:M=13,N=21,K=18", &two, VectorCaps::fixed(256));
}
