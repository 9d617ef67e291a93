//! Fuzz targets of the codegen crate on the stable toolchain (see
//! `scaletune_space::fuzz`): target files parse or fail with an error, and a
//! loop nest given as text (mutated from real nests) lowers or fails with an
//! error, never a panic or an unbounded unrolling. A smoke run under `cargo
//! test`; `make fuzz` runs each for `FUZZ_SECS` seconds.

use proptest::prelude::*;
use scaletune_codegen::lower::lower;
use scaletune_codegen::target::Target;
use scaletune_space::fuzz::{self, int_text, mutate};
use scaletune_space::ir::{parse_nest, Nest};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::load;
use scaletune_space::VectorCaps;

const TARGETS: &[&str] = &[
    include_str!("../../configs/targets/neoverse-v1.toml"),
    include_str!("../../configs/targets/sve-generic.toml"),
    include_str!("../../configs/targets/rvv.toml"),
    include_str!("../../configs/targets/neon.toml"),
    include_str!("../../configs/targets/a64fx.toml"),
];

/// A shipped target file with one value replaced by a hostile one, then mutated.
fn target_text() -> BoxedStrategy<String> {
    let keys = prop::sample::select(
        &["granule_bits", "min_vl_bits", "max_vl_bits", "default_vl_bits", "scalable", "gather"][..],
    );
    let value = prop_oneof![
        int_text(),
        int_text().prop_map(|v| format!("[{v}]")),
        Just("[]".to_string()),
        Just("\"x\"".to_string()),
        Just("[128, 99999999999]".to_string()),
    ];
    (prop::sample::select(TARGETS), keys, value)
        .prop_map(|(text, key, value)| {
            text.lines()
                .map(|l| if l.starts_with(&format!("{key} =")) { format!("{key} = {value}") } else { l.to_string() })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .prop_flat_map(|t| prop_oneof![Just(t.clone()), mutate(t)])
        .boxed()
}

#[test]
fn fuzz_target_files() {
    fuzz::run("target files", target_text(), |text| {
        if let Ok(t) = Target::from_toml(&text, "fuzz.toml") {
            for vl in [0, 1, 64, 128, 256, 2048, u32::MAX] {
                let _ = t.vscale_for_vl(vl);
            }
            let _ = t.vector_kinds();
            let _ = t.qemu_command(256);
            let _ = t.vector_summary();
        }
        Ok(())
    });
}

const SCHEDULE: &str = "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"predicate\")\n";

/// Printed nests to mutate: naive and scheduled matmul on SVE and NEON.
fn nest_texts() -> Vec<String> {
    let w = load("matmul:M=9,N=21,K=6").expect("loads");
    let mut out = Vec::new();
    for caps in [VectorCaps::sve_any(), VectorCaps::fixed(128)] {
        let nest = Nest::from_workload(&w, caps);
        out.push(nest.to_string());
        let mut n = nest.clone();
        parse_trace(SCHEDULE).expect("parses").apply(&mut n).expect("applies");
        out.push(n.to_string());
    }
    out
}

#[test]
fn fuzz_loop_nest_text_lowering() {
    let strategy = prop::sample::select(nest_texts())
        .prop_flat_map(|t| prop_oneof![mutate(t.clone()), mutate(t).prop_flat_map(mutate)]);
    fuzz::run("loop-nest text lowering", strategy, |text| {
        if let Ok(nest) = parse_nest(&text) {
            if nest.verify().is_ok() {
                let _ = lower(&nest, "fuzz");
            }
        }
        Ok(())
    });
}

/// A nest given as text with nested unrolled loops is refused before it is
/// lowered (the unrolled copies would be 512 * 512 * 64).
#[test]
fn unrolled_nest_text_beyond_the_bound_is_refused() {
    let w = load("matmul:M=512,N=512,K=64").expect("loads");
    let text = Nest::from_workload(&w, VectorCaps::fixed(128)).to_string();
    let unrolled: String = text
        .lines()
        .map(|l| if l.trim_start().starts_with("for ") { l.replace(':', " unroll:") } else { l.to_string() } + "\n")
        .collect();
    let nest = parse_nest(&unrolled).unwrap_or_else(|e| panic!("{e}\n{unrolled}"));
    let e = lower(&nest, "k").expect_err("refused");
    assert!(e.to_string().contains("beyond the limit of 1024"), "{e}");
}

/// Crashers found by `make fuzz`: a nest given as text whose tensor shapes
/// overflow (one huge dimension, or dimensions whose product is too large)
/// is refused before lowering computes buffer sizes.
#[test]
fn fuzz_crashers_are_errors() {
    let found = "nest matmul\ncaps fixed granule 128 vscale [1]\ntensor A: f32[9, 6] input\ntensor B: f32[6,9223372036854775807] input\ntensor C: f32[9, 21] output\nfor i in 9:\n  for j in 21:\n    for k in 6:\n      block C[vi: 9 = i, vj: 21 = j, vk: 6 reduce = k] init:\n        C[vi, vj] += (A[vi, vk] * B[vk, vj])\n";
    let same_class =
        found.replace("f32[9, 6]", "f32[4294967296, 4294967296]").replace("6,9223372036854775807", "6, 21");
    for text in [found.to_string(), same_class] {
        let nest = parse_nest(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let e = lower(&nest, "k").expect_err("refused");
        assert!(e.to_string().contains("the element count of tensor"), "{e}");
    }
}
