//! Tests of workload parsing, typing, extent inference and error messages.

use super::*;

fn parse(text: &str) -> Result<Workload, WorkloadError> {
    WorkloadSpec::parse(text, "test.toml", "test").map(|s| s.instantiate(&[]).expect("instantiates"))
}

fn err(text: &str) -> String {
    WorkloadSpec::parse(text, "bad.toml", "bad").expect_err("must fail").to_string()
}

const MATMUL: &str = r#"
description = "mm"
compute = ["C[i, j] += A[i, k] * B[k, j]"]
[params]
M = 3
N = 5
K = 7
[tensors]
A = { dtype = "f32", shape = ["M", "K"] }
B = { dtype = "f32", shape = ["K", "N"] }
C = { dtype = "f32", shape = ["M", "N"], role = "output" }
"#;

#[test]
fn every_shipped_workload_loads() {
    for name in shipped_names() {
        let w = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!w.stmts.is_empty(), "{name}");
        assert!(w.tensors.iter().any(|t| t.role == Role::Output), "{name}");
    }
}

#[test]
fn matmul_axes_and_kinds() {
    let w = parse(MATMUL).expect("parses");
    let s = &w.stmts[0];
    assert_eq!(s.name, "C");
    let axes: Vec<(&str, i64, AxisKind)> = s.axes.iter().map(|a| (a.name.as_str(), a.extent, a.kind)).collect();
    assert_eq!(axes, vec![("i", 3, AxisKind::Spatial), ("j", 5, AxisKind::Spatial), ("k", 7, AxisKind::Reduce)]);
    assert_eq!(s.op, UpdateOp::Add);
    assert_eq!(w.reference(), "test:M=3,N=5,K=7");
}

#[test]
fn overrides_and_references() {
    let w = load("matmul:M=67,N=131,K=29").expect("loads");
    assert_eq!(w.tensors[0].shape, vec![67, 29]);
    assert_eq!(w.stmts[0].axes[2].extent, 29);
    let e = load("matmul:Q=3").expect_err("unknown param").to_string();
    assert!(e.contains("has no parameter `Q`"), "{e}");
    let e = load("matmul:M=x").expect_err("bad value").to_string();
    assert!(e.contains("not an integer"), "{e}");
    let e = load("nosuch").expect_err("unknown").to_string();
    assert!(e.starts_with("unknown workload `nosuch`"), "{e}");
    let e = load("matmul:K=4,K=8").expect_err("duplicate").to_string();
    assert_eq!(e, "bad workload reference `matmul:K=4,K=8`: parameter `K` is given twice");
}

#[test]
fn an_override_below_one_is_named_as_given_not_at_the_files_default() {
    let e = load("matmul:N=8,M=0").expect_err("zero rows").to_string();
    assert_eq!(e, "bad workload reference `matmul:M=0`: parameter `M` must be at least 1, got 0");
    let e = load("conv2d_nhwc:H=2").expect_err("input smaller than the filter").to_string();
    assert_eq!(e, "configs/workloads/conv2d_nhwc.toml:18:38: dimension of `Out` must be at least 1, got 0 with H=2");
}

#[test]
fn conv_extents_come_from_the_filter() {
    let w = load("conv2d_nhwc:H=10,WI=9,S=2").expect("loads");
    let out = &w.tensors[w.tensor_id("Out").expect("Out").index()];
    assert_eq!(out.shape, vec![1, 4, 4, 32]);
    let s = &w.stmts[0];
    let names: Vec<&str> = s.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, vec!["n", "oh", "ow", "f", "r", "s", "c"]);
}

#[test]
fn indirect_indices_and_casts() {
    let w = load("paged_read").expect("loads");
    let ind = w.tensor_id("Ind").expect("Ind");
    assert_eq!(w.tensor(ind).range, Some((0, 8192)));
    let w = load("matmul_i8").expect("loads");
    assert_eq!(w.stmts[0].rhs.dtype(), DType::I32);
    for name in ["matmul_f16", "matmul_bf16"] {
        let w = load(name).expect("loads");
        assert_eq!(w.stmts[0].rhs.dtype(), DType::F32, "{name}");
    }
    assert_eq!(load("matmul_bf16").expect("loads").tensors[0].dtype, DType::BF16);
}

#[test]
fn softmax_has_four_blocks_in_order() {
    let w = load("softmax_rows").expect("loads");
    let names: Vec<&str> = w.stmts.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["Mx", "E", "S", "Y"]);
    assert_eq!(w.stmts[0].op, UpdateOp::Max);
    assert_eq!(w.arg_tensors().len(), 2);
}

fn with_stmt(stmt: &str) -> String {
    MATMUL.replace("C[i, j] += A[i, k] * B[k, j]", stmt)
}

#[test]
fn errors_name_file_line_column_and_problem() {
    // Line 3 holds `compute`; the string starts at column 12.
    let e = err(&with_stmt("C[i, j] += A[i, k] * B[k j]"));
    assert_eq!(e, "bad.toml:3:38: expected `,` or `]` after an index, found `j`");
    let e = err(&with_stmt("C[i, j] += A[i, k] * D[k, j]"));
    assert_eq!(e, "bad.toml:3:34: unknown tensor `D`");
    let e = err(&with_stmt("C[i, j] = A[i, k] * B[k, j]"));
    assert!(e.starts_with("bad.toml:3:13: axes k appear only on the right-hand side"), "{e}");
    let e = err(&with_stmt("C[i, j] += A[i, k] * B[k, j+1]"));
    assert!(e.contains("index 1 of `B` ranges over 1..=5 but the dimension has 5 element(s)"), "{e}");
    let e = err(&with_stmt("C[i, j] += foo(A[i, k])"));
    assert!(e.contains("unknown function `foo`"), "{e}");
    let e = err(&with_stmt("A[i, k] += B[k, i]"));
    assert!(e.contains("writes `A`, which is an input tensor"), "{e}");
    let e = err(&with_stmt("C[i, j] += A[i, k] * B[k, j] + C[i, j]"));
    assert!(e.contains("reads `C`, which it writes"), "{e}");
    let e = err(&MATMUL.replace("dtype = \"f32\", shape = [\"M\", \"K\"]", "dtype = \"f31\", shape = [\"M\", \"K\"]"));
    assert!(e.starts_with("bad.toml:9:15: unknown dtype `f31`"), "{e}");
    let e = err("compute = [\n");
    assert!(e.starts_with("bad.toml:"), "{e}");
    let e = err(&MATMUL.replace("[params]", "[parms]"));
    assert!(e.contains("unknown field `parms`"), "{e}");
    let e = err(&with_stmt("C[i, j] += f32(A[i, k]) * i32(B[k, j])"));
    assert!(e.contains("operands have different types f32 and i32"), "{e}");
    // More indices than dimensions on the right-hand side: an error, not a panic.
    let e = err(&with_stmt("C[i, j] += A[i, k, j] * B[k, j]"));
    assert_eq!(e, "bad.toml:3:24: `A` has 2 dimension(s) but 3 index(es) are given");
}

#[test]
fn integer_arithmetic_needs_widening() {
    let text = MATMUL.replace("\"f32\"", "\"i8\"").replace("C = { dtype = \"i8\"", "C = { dtype = \"i32\"");
    let e = err(&text);
    assert!(e.contains("arithmetic on i8 values is not supported; convert them first with i32(...)"), "{e}");
    let text = MATMUL.replace("\"f32\"", "\"bf16\"");
    let e = err(&text);
    assert!(e.contains("arithmetic on bf16 values is not supported; convert them first with f32(...)"), "{e}");
    // bf16 converts to f32 explicitly; f32 does not narrow to bf16.
    let bf16_a = MATMUL.replace("A = { dtype = \"f32\"", "A = { dtype = \"bf16\"");
    let w = parse(&bf16_a.replace("A[i, k] * B", "f32(A[i, k]) * B")).expect("parses");
    assert_eq!(w.stmts[0].rhs.dtype(), DType::F32);
    let e = err(&MATMUL.replace("C = { dtype = \"f32\"", "C = { dtype = \"bf16\""));
    assert!(e.contains("the value has type f32 but the result is bf16; convert it explicitly with bf16(...)"), "{e}");
    let e = err(&MATMUL.replace("A = { dtype = \"f32\"", "A = { dtype = \"bf17\""));
    assert!(e.contains("unknown dtype `bf17` (f16, bf16, f32, f64, i8, i32)"), "{e}");
}

#[test]
fn infinity_is_a_constant() {
    let w = parse(
        "compute = [\"Y[i] = max(X[i], -inf) + min(X[i], inf)\"]\n[tensors]\nX = { dtype = \"f32\", shape = [4] }\nY = { dtype = \"f32\", shape = [4], role = \"output\" }\n",
    )
    .expect("parses");
    let second_const = |v: &Value| match v {
        Value::Bin(_, _, c) => match **c {
            Value::Const(c, _) => c,
            _ => panic!("{v:?}"),
        },
        _ => panic!("{v:?}"),
    };
    match &w.stmts[0].rhs {
        Value::Bin(BinOp::Add, a, b) => {
            assert_eq!(second_const(a), f64::NEG_INFINITY);
            assert_eq!(second_const(b), f64::INFINITY);
        }
        other => panic!("{other:?}"),
    }
    // A parameter named `inf` still takes precedence.
    let w = parse(
        "compute = [\"Y[i] = X[i] * inf\"]\n[params]\ninf = 3\n[tensors]\nX = { dtype = \"f32\", shape = [4] }\nY = { dtype = \"f32\", shape = [4], role = \"output\" }\n",
    )
    .expect("parses");
    assert_eq!(second_const(&w.stmts[0].rhs), 3.0);
}
