//! Tests of the reference evaluator: hand-computed results, error bounds, and the compiled evaluation against the plain one.

use super::*;
use crate::data::make_args;
use crate::workload::load;
use crate::DType;

#[test]
fn matmul_matches_hand_computation() {
    let w = load("matmul:M=3,N=4,K=5").expect("loads");
    let args = make_args(&w, 7);
    let r = evaluate(&w, &args).expect("evaluates");
    let (a, b) = (&args[0], &args[1]);
    let c = &r[2];
    for i in 0..3 {
        for j in 0..4 {
            let want: f64 = (0..5).map(|k| a.get(i * 5 + k) * b.get(k * 4 + j)).sum();
            assert!((c.values[i * 4 + j] - want).abs() < 1e-12);
            assert!(c.errors[i * 4 + j] > 0.0 && c.errors[i * 4 + j] < 1e-5);
        }
    }
    // An f32 computation of the same sums passes; a perturbed one fails.
    let mut got = TensorData::zeros(DType::F32, 12);
    for i in 0..3 {
        for j in 0..4 {
            let mut s = 0f32;
            for k in (0..5).rev() {
                s += a.get(i * 5 + k) as f32 * b.get(k * 4 + j) as f32;
            }
            got.set(i * 4 + j, f64::from(s));
        }
    }
    assert!(compare("C", &got, c).passed());
    got.set(5, got.get(5) + 1e-3);
    let cmp = compare("C", &got, c);
    assert_eq!(cmp.mismatches, 1);
    assert_eq!(cmp.first_mismatch.map(|m| m.0), Some(5));
}

#[test]
fn inputs_are_deterministic_and_outputs_poisoned() {
    let w = load("paged_read:P=50").expect("loads");
    let a = make_args(&w, 1);
    let bytes = |v: &[TensorData]| v.iter().map(|t| t.to_le_bytes()).collect::<Vec<_>>();
    assert!(bytes(&a) == bytes(&make_args(&w, 1)));
    assert!(bytes(&a) != bytes(&make_args(&w, 2)));
    let ind = &a[1];
    assert!((0..ind.len()).all(|i| (0.0..8192.0).contains(&ind.get(i))));
    assert!(a[2].get(0).is_nan());
    let r = evaluate(&w, &a).expect("evaluates");
    let x = &r[2];
    let row = ind.get(3) as usize;
    assert_eq!(x.values[3 * 8 + 5], a[0].get(row * 8 + 5));
}

#[test]
fn softmax_rows_sum_to_one_and_i8_is_exact() {
    let w = load("softmax_rows:M=4,N=10").expect("loads");
    let r = evaluate(&w, &make_args(&w, 3)).expect("evaluates");
    let y = &r[w.tensor_id("Y").expect("Y").index()];
    let s: f64 = y.values[0..10].iter().sum();
    assert!((s - 1.0).abs() < 1e-12);
    let w = load("matmul_i8:M=2,N=2,K=3").expect("loads");
    let args = make_args(&w, 3);
    let r = evaluate(&w, &args).expect("evaluates");
    let want: f64 = (0..3).map(|k| args[0].get(k) * args[1].get(k * 2)).sum();
    assert_eq!(r[2].values[0], want);
    assert_eq!(r[2].errors[0], 0.0);
}

/// A product rounded into the subnormal range is within the bound for
/// both f32 and f64; a flushed-to-zero f32 result (FTZ/DAZ) is not.
#[test]
fn subnormal_products_are_within_the_bound_and_flushed_zeros_are_not() {
    for (dtype, s) in [("f32", 1e-39), ("f64", 1e-310)] {
        let text = format!(
            "compute = [\"Y[i] = s * X[i]\"]\n[scalars]\ns = {{ dtype = \"{dtype}\", value = {s:e} }}\n[tensors]\nX = {{ dtype = \"{dtype}\", shape = [64] }}\nY = {{ dtype = \"{dtype}\", shape = [64], role = \"output\" }}\n"
        );
        let w = crate::workload::WorkloadSpec::parse(&text, "t.toml", "t")
            .and_then(|sp| sp.instantiate(&[]))
            .expect("parses");
        let args = make_args(&w, 4);
        let r = evaluate(&w, &args).expect("evaluates");
        let d = w.tensors[1].dtype;
        let mut got = TensorData::zeros(d, 64);
        for i in 0..64 {
            let x = args[0].get(i);
            let y = if d == DType::F32 { f64::from(s as f32 * x as f32) } else { s * x };
            assert!(y == 0.0 || y.abs() < if d == DType::F32 { 1.2e-38 } else { 2.3e-308 }, "{y} is subnormal");
            got.set(i, y);
        }
        assert!(compare("Y", &got, &r[1]).passed(), "{dtype}: {:?}", compare("Y", &got, &r[1]));
        if d == DType::F32 {
            // (For f64, `compare`'s absolute floor of 1e-300 covers subnormals.)
            let flushed = TensorData::zeros(d, 64);
            let c = compare("Y", &flushed, &r[1]);
            assert!(c.mismatches > 60, "{dtype}: {c:?}");
        }
    }
}

/// Bit-for-bit equality of two evaluations (values, bounds, NaN payloads).
fn same_bits(a: &[RefTensor], b: &[RefTensor]) -> bool {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| bits(&x.values) == bits(&y.values) && bits(&x.errors) == bits(&y.errors))
}

/// The plain walk (every index by the expression evaluator, one thread)
/// and the compiled one, alone and shared among 1 to 5 threads.
fn every_mode(w: &Workload, args: &[TensorData]) -> Vec<(String, Result<Vec<RefTensor>, ReferenceError>)> {
    let mut out = vec![("plain".to_string(), evaluate_in(w, args, Mode::Plain))];
    for threads in 1..=5 {
        let mode = Mode::Fast { threads, parallel_from: 1 };
        out.push((format!("{threads} threads"), evaluate_in(w, args, mode)));
    }
    out.push(("evaluate".to_string(), evaluate(w, args)));
    out
}

fn assert_all_agree(name: &str, w: &Workload, args: &[TensorData]) {
    let all = every_mode(w, args);
    let (_, plain) = &all[0];
    for (mode, got) in &all[1..] {
        match (plain, got) {
            (Ok(p), Ok(g)) => assert!(same_bits(p, g), "{name}: {mode} differs from the plain walk"),
            (p, g) => assert_eq!(p, g, "{name}: {mode}"),
        }
    }
}

/// Every shipped workload (integer index tensors, division-free affine
/// indices, several statements, reductions by `+` and `max`, i8/i32,
/// half types) gives the same values and bounds, to the bit, whichever
/// way it is evaluated; so does a strided convolution.
#[test]
fn the_compiled_and_shared_evaluation_is_the_plain_walk_to_the_bit() {
    let mut names: Vec<String> = crate::workload::shipped_names().iter().map(|n| n.to_string()).collect();
    names.push("conv2d_nhwc:H=9,WI=11,S=2,C=3,F=5".to_string());
    names.push("matmul:M=7,N=1,K=13".to_string());
    for name in &names {
        let w = load(name).expect("loads");
        for seed in [1, 2] {
            let args = make_args(&w, seed);
            assert!(evaluate(&w, &args).is_ok(), "{name} evaluates");
            assert_all_agree(name, &w, &args);
        }
    }
}

fn workload(compute: &str, x_len: usize, y_len: usize) -> Workload {
    let text = format!(
        "compute = [\"{compute}\"]\n[tensors]\nX = {{ dtype = \"f32\", shape = [{x_len}] }}\nY = {{ dtype = \"f32\", shape = [{y_len}], role = \"output\" }}\n"
    );
    crate::workload::WorkloadSpec::parse(&text, "t.toml", "t").and_then(|sp| sp.instantiate(&[])).expect("parses")
}

/// Indices the compiled form leaves to the expression evaluator (division,
/// remainder, `min`, loads of an index tensor) give the same values; an
/// index tensor pointing outside its target gives the same first error
/// (the one met first in point order, though later points fail on other
/// threads too).
#[test]
fn general_indices_and_out_of_bounds_errors_are_those_of_the_plain_walk() {
    for compute in ["Y[i] = X[i / 2] + X[min(i, 5)]", "Y[i] = X[i % 7] * X[39 - i]"] {
        let w = workload(compute, 40, 40);
        assert_all_agree(compute, &w, &make_args(&w, 5));
    }
    let w = load("paged_read:P=100").expect("loads");
    let mut args = make_args(&w, 5);
    for (p, page) in [(60, 9000.0), (80, 8192.0), (99, -1.0)] {
        args[1].set(p, page);
    }
    assert_all_agree("paged_read", &w, &args);
    let err = evaluate_in(&w, &args, Mode::Fast { threads: 4, parallel_from: 1 }).expect_err("reads past Storage");
    assert_eq!(
        err.to_string(),
        "reference: statement `X[p, v] = Storage[Ind[p], v]`: index 9000 out of bounds for dimension 0 of `Storage`"
    );
}

/// Float to integer saturates (NaN gives 0), as the interpreter and the
/// generated code convert; integer narrowing wraps. Floats scaled to about
/// +-3e9 cover both ends of i8 and i32 and values inside.
#[test]
fn float_to_integer_casts_saturate_and_integer_narrowing_wraps() {
    let text = "compute = [\"Q[i] = i8(X[i] * s)\", \"W[i] = i32(X[i] * s)\", \"N[i] = i8(W[i])\"]\n\
        [scalars]\ns = { dtype = \"f32\", value = 3e9 }\n[tensors]\nX = { dtype = \"f32\", shape = [64] }\n\
        Q = { dtype = \"i8\", shape = [64], role = \"output\" }\nW = { dtype = \"i32\", shape = [64], role = \"output\" }\n\
        N = { dtype = \"i8\", shape = [64], role = \"output\" }\n";
    let w =
        crate::workload::WorkloadSpec::parse(text, "t.toml", "t").and_then(|sp| sp.instantiate(&[])).expect("parses");
    let mut args = make_args(&w, 4);
    // Small values too, so some lanes stay in range.
    for i in 0..8 {
        args[0].set(i, [1e-9, -1e-9, 2e-8, -3e-8, 4e-10, 0.0, 5e-7, -0.9][i]);
    }
    let r = evaluate(&w, &args).expect("evaluates");
    let (q, wide, n) = (&r[1], &r[2], &r[3]);
    let (mut saturated, mut inside) = (0, 0);
    for i in 0..64 {
        // The reference computes in f64 (with an error bound), not in f32.
        let x = args[0].get(i) * 3e9;
        let want_q = x.trunc().clamp(-128.0, 127.0);
        let want_w = x.trunc().clamp(f64::from(i32::MIN), f64::from(i32::MAX));
        assert_eq!(q.values[i], want_q, "i8 of {x}");
        assert_eq!(wide.values[i], want_w, "i32 of {x}");
        assert_eq!(n.values[i], f64::from(want_w as i32 as i8), "i8 of the i32 {want_w} wraps");
        if want_q.abs() >= 127.0 {
            saturated += 1;
        } else {
            inside += 1;
        }
    }
    assert!(saturated > 40 && inside >= 4, "{saturated} saturated, {inside} inside");
    assert_eq!(super::saturate(f64::NAN, DType::I32), 0.0);
    assert_eq!(super::saturate(f64::NEG_INFINITY, DType::I8), -128.0);
}
