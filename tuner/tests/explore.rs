//! `scaletune explore`: summaries, determinism, checked samples, written traces.

mod common;
use common::{scaletune, stdout};

fn summary_line<'a>(report: &'a str, title: &str) -> &'a str {
    report.lines().find(|l| l.trim_start().starts_with(title)).unwrap_or("")
}

#[test]
fn matmul_on_neoverse_v1_covers_every_tile_kind_tail_and_vector_kind_deterministically() {
    let args = ["explore", "matmul:M=256,N=256,K=256", "--target", "neoverse-v1", "--samples", "200", "--seed", "1"];
    let a = scaletune(&args);
    let b = scaletune(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "same seed, same output");
    let r = stdout(&a);
    let tiles = summary_line(&r, "vectorized tiles:");
    for k in ["fixed", "scalable", "mixed"] {
        assert!(tiles.contains(k), "{tiles}");
    }
    let tails = summary_line(&r, "sampled tails:");
    for t in ["predicate", "peel", "scalar"] {
        assert!(tails.contains(t), "{tails}");
    }
    let kinds = summary_line(&r, "vector kinds:");
    for k in ["sve ", "sve-vla", "neon"] {
        assert!(kinds.contains(k), "{kinds}");
    }
    assert!(r.contains("rules applied: vector-kind, multi-level-tiling"), "{r}");
    assert!(r.contains("sample_mixed_tile"), "{r}");
    assert!(r.contains("space size:"), "{r}");
    let other = scaletune(&[
        "explore",
        "matmul:M=256,N=256,K=256",
        "--target",
        "neoverse-v1",
        "--samples",
        "200",
        "--seed",
        "2",
    ]);
    assert_ne!(a.stdout, other.stdout, "another seed, other samples");
}

#[test]
fn host_has_fixed_widths_only() {
    let o = scaletune(&["explore", "matmul:M=32,N=48,K=16", "--target", "host", "--samples", "40", "--check"]);
    let r = stdout(&o);
    assert!(o.status.success(), "{r}");
    let tiles = summary_line(&r, "vectorized tiles:");
    assert!(tiles.contains("fixed") && !tiles.contains("scalable") && !tiles.contains("mixed"), "{tiles}");
    // Vectors divide these extents: nothing is scalable, and the only
    // mixed tilings are the register tiles of any size (no vscale): up to
    // 8 rows in the multi-level tilings, and in the micro-kernels as many
    // rows as the register file holds beside the strip, at most 14, in two
    // levels or, in the order with blocks of rows outermost, three. With
    // AVX2 (16 registers of 8 columns) strips of 1, 2 and 4 registers give
    // 14, 6 and 2 rows; with AVX-512 (32 registers of 16 columns) the 48
    // columns take strips of 1 and 2 registers, both of 14 rows.
    assert!(!r.contains("sample_scalable_tile"), "{r}");
    let avx512 = r.lines().next().is_some_and(|l| l.contains("fixed 512-bit vectors"));
    let rows: &[i64] = if avx512 { &[14] } else { &[14, 6, 2] };
    let mut register_tiles = vec!["n=4, max_innermost_fixed=8, max_innermost_vscale=0)".to_string()];
    for n in [2, 3] {
        register_tiles.extend(rows.iter().map(|r| format!("n={n}, max_innermost_fixed={r}, max_innermost_vscale=0)")));
    }
    let mixed: Vec<&str> = r.lines().filter(|l| l.contains("sample_mixed_tile")).collect();
    assert!(!mixed.is_empty() && mixed.iter().all(|l| register_tiles.iter().any(|t| l.contains(t.as_str()))), "{r}");
    for t in &register_tiles {
        assert!(mixed.iter().any(|l| l.contains(t.as_str())), "{t}: {r}");
    }
    assert!(r.contains("40 passed, 0 failed"), "{r}");
    // Perfect tilings leave no tail; the copy loops of write and read reuse
    // round up to whole vectors, so their tails are sampled.
    let tails = summary_line(&r, "sampled tails:");
    assert!(["peel", "predicate", "scalar"].iter().all(|k| tails.contains(k)), "{tails}");
}

#[test]
fn samples_of_several_workloads_pass_the_interpreter_check() {
    // The workloads on both scalable targets (small shapes: the
    // interpreter is the cost), plus the options each workload's rules offer.
    let cases: [(&str, &[&str]); 5] = [
        ("matmul:M=20,N=37,K=12", &["write reuse: cache_write", "write reuse: none", "read reuse: pack"]),
        ("conv2d_nhwc:H=6,WI=7,C=4,F=9", &["write reuse: cache_write", "read reuse: none"]),
        ("paged_read:P=13,PAGES=64", &["gather strategy: contiguous rows", "gather strategy: gather"]),
        ("softmax_rows:M=3,N=29", &["statement fusion: at the consumer's outer loop", "reduction: spatial vectors"]),
        ("sum_cos:N=77", &["reduction: vector accumulator"]),
    ];
    for (w, options) in cases {
        for t in ["sve-generic", "rvv"] {
            let o = scaletune(&["explore", w, "--target", t, "--samples", "40", "--seed", "3", "--check"]);
            let r = stdout(&o);
            assert!(o.status.success(), "{w} on {t}: {r}");
            assert!(r.contains("40 passed, 0 failed"), "{w} on {t}: {r}");
            // Scalable targets: fixed, purely scalable and mixed vector tiles, every tail.
            let tiles = summary_line(&r, "vectorized tiles:");
            assert!(["fixed", "scalable", "mixed"].iter().all(|k| tiles.contains(k)), "{w} on {t}: {tiles}");
            let tails = summary_line(&r, "sampled tails:");
            assert!(["peel", "predicate", "scalar"].iter().all(|k| tails.contains(k)), "{w} on {t}: {tails}");
            let kinds = summary_line(&r, "vector kinds:");
            let expected: &[&str] = if t == "rvv" { &["rvv-vla", "rvv-128"] } else { &["sve-vla", "neon"] };
            assert!(expected.iter().all(|k| kinds.contains(k)), "{w} on {t}: {kinds}");
            for opt in options {
                let (key, value) = opt.split_once(": ").expect("key: value");
                let line = summary_line(&r, &format!("{key}:"));
                assert!(line.contains(value), "{w} on {t}: {opt}: {line}");
            }
        }
    }
}

#[test]
fn space_sizes_say_whether_they_are_exact() {
    // No parallel loop (a reduction to one element): every domain is independent.
    let o = scaletune(&["explore", "sum_cos:N=77", "--target", "neon", "--samples", "1"]);
    let r = stdout(&o);
    assert!(o.status.success(), "{r}");
    assert!(summary_line(&r, "space size:").ends_with("decision combinations in all (exact)"), "{r}");
    // The parallel rule's chunk count depends on the outer tile sizes: a bound, marked per instruction.
    let o = scaletune(&["explore", "scale_add:N=1000", "--target", "neon", "--samples", "1"]);
    let r = stdout(&o);
    assert!(summary_line(&r, "space size:").starts_with("space size: <= "), "{r}");
    assert!(r.lines().any(|l| l.trim_start().starts_with("<= ") && l.contains("sample_perfect_tile")), "{r}");
}

#[test]
fn sme_targets_sample_sme_candidates_among_the_others_and_they_pass_under_qemu() {
    for (target, others) in [("sme", ["sve-vla", "neon"].as_slice()), ("apple-m4", ["neon"].as_slice())] {
        let o = scaletune(&[
            "explore",
            "matmul:M=37,N=45,K=9",
            "--target",
            target,
            "--samples",
            "12",
            "--seed",
            "3",
            "--check",
            "--qemu",
        ]);
        let r = stdout(&o);
        assert!(o.status.success() && r.contains("12 passed, 0 failed"), "{r}");
        assert!(summary_line(&r, "rules applied:").contains("sme-tensorize"), "{r}");
        assert!(r.contains("options: workload: vector kind = sme"), "{r}");
        let kinds = summary_line(&r, "vector kinds:");
        for k in others.iter().chain(&["sme"]) {
            assert!(kinds.contains(k), "{target}: {kinds}");
        }
    }
}

/// The widening f16, bf16 and i8 matmuls and conv2d_nhwc (im2col-style
/// pack) get the SME branch on `sme`, and every sample, SME or not, passes
/// under QEMU (`matmul_i8`'s `smopa` kernels by the interpreter where this
/// QEMU computes `smopa` wrong, see `tests/cli.rs`).
#[test]
fn sme_candidates_of_f16_matmuls_and_convolutions_pass_under_qemu() {
    let workloads = [
        "matmul_f16:M=19,N=21,K=7",
        "matmul_bf16:M=19,N=21,K=7",
        "matmul_i8:M=19,N=21,K=7",
        "conv2d_nhwc:H=6,WI=11,C=3,F=7",
    ];
    for w in workloads {
        let o = scaletune(&["explore", w, "--target", "sme", "--samples", "8", "--seed", "2", "--check", "--qemu"]);
        let r = stdout(&o);
        assert!(o.status.success() && r.contains("8 passed, 0 failed"), "{r}");
        assert!(summary_line(&r, "rules applied:").contains("sme-tensorize"), "{w}: {r}");
        assert!(summary_line(&r, "vector kinds:").contains("sme"), "{w}: {r}");
    }
}

#[test]
fn compiled_samples_pass_under_qemu() {
    let o = scaletune(&["explore", "scale_add:N=123", "--target", "sve-generic", "--samples", "4", "--qemu"]);
    let r = stdout(&o);
    assert!(o.status.success() && r.contains("4 passed, 0 failed"), "{r}");
}

#[test]
fn written_traces_replay_with_compile_and_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().display().to_string();
    let o = scaletune(&["explore", "paged_read:P=21", "--target", "sve-generic", "--samples", "3", "--out", &out]);
    assert!(o.status.success(), "{}", stdout(&o));
    let first = dir.path().join("sample_000.trace");
    let text = std::fs::read_to_string(&first).expect("trace written");
    assert!(text.contains("decision="), "{text}");
    let o =
        scaletune(&["check", "paged_read:P=21", "--target", "sve-generic", "--schedule", &first.display().to_string()]);
    assert!(o.status.success(), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
}
