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
    let e = load("matmul:M=8:N=8,K=2").expect_err("colons").to_string();
    assert_eq!(
        e,
        "bad workload reference `matmul:M=8:N=8,K=2`: parameters are separated by `,`, not `:`: `matmul:M=8,N=8,K=2`"
    );
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

const GATHER: &str = r#"name = "pr"
compute = ["X[p] = S[I[p]]"]
[params]
P = 4
Q = 1000
[tensors]
S = { dtype = "f32", shape = ["Q"] }
I = { dtype = "i8", shape = ["P"], range = [0, "Q"] }
X = { dtype = "f32", shape = ["P"], role = "output" }
"#;

#[test]
fn an_index_range_must_fit_the_index_dtype() {
    // The range is half-open: [0, 1000) holds values up to 999.
    let e = err(GATHER);
    assert_eq!(e, "bad.toml:8:48: `range` of `I` is [0, 1000): values up to 999 do not fit i8 (-128..=127)");
    // [0, 128) fits i8 (up to 127); the low end is checked too.
    let w = parse(&GATHER.replace("Q = 1000", "Q = 128")).expect("fits");
    assert_eq!(w.tensor(w.tensor_id("I").expect("I")).range, Some((0, 128)));
    let e = err(&GATHER.replace("range = [0, \"Q\"]", "range = [-129, 0]"));
    assert_eq!(e, "bad.toml:8:45: `range` of `I` is [-129, 0): values down to -129 do not fit i8 (-128..=127)");
    // An i32 range overflowing through a parameter names the values given.
    assert!(load("paged_read:PAGES=2147483648,V=1").is_ok());
    let e = load("paged_read:PAGES=2147483649,V=1").expect_err("beyond i32").to_string();
    assert_eq!(
        e,
        "configs/workloads/paged_read.toml:14:51: `range` of `Ind` is [0, 2147483649): values up to 2147483648 \
         do not fit i32 (-2147483648..=2147483647) with PAGES=2147483649, V=1"
    );
}

const TWO_OUTPUTS: &str = r#"name = "x"
compute = ["Out[i] = X[i]", "Oi[i] = Y[i]"]
[params]
N = 8
[tensors]
X = { dtype = "f32", shape = ["N"] }
Y = { dtype = "i32", shape = ["N"] }
Out = { dtype = "f32", shape = ["N"], role = "output" }
Oi = { dtype = "i32", shape = ["N"], role = "output" }
[axes]
i = 4
"#;

#[test]
fn declared_axis_extents_must_leave_no_output_element_unwritten() {
    let e = err(TWO_OUTPUTS);
    assert_eq!(
        e,
        "bad.toml:11:5: axis `i` has extent 4 but indexes dimension 0 of output `Out`, which has 8 elements: \
         `Out[4]` is never written"
    );
    // An extent equal to the output's dimension is what [axes] is for when
    // an axis indexes dimensions of different sizes.
    let text = TWO_OUTPUTS.replace("X = { dtype = \"f32\", shape = [\"N\"] }", "X = { dtype = \"f32\", shape = [12] }");
    let e = err(&text.replace("i = 4", ""));
    assert!(e.contains("axis `i` indexes dimensions of different sizes"), "{e}");
    let w = parse(&text.replace("i = 4", "i = \"N\"")).expect("whole outputs");
    assert_eq!(w.stmts[0].axes[0].extent, 8);
    // A short axis is fine where another statement writes the rest.
    let text = TWO_OUTPUTS.replace("\"Oi[i] = Y[i]\"", "\"Oi[i] = Y[i]\", \"Out[j] = X[j]\", \"Oi[j] = Y[j]\"");
    let w = parse(&text).expect("written in full");
    assert_eq!(w.stmts.len(), 4);
    // Short extents in two dimensions: the first element left out names its axis.
    let grid = "compute = [\"C[i, j] = A[i, j]\"]\n[tensors]\nA = { dtype = \"f32\", shape = [3, 5] }\n\
                C = { dtype = \"f32\", shape = [3, 5], role = \"output\" }\n[axes]\ni = 3\nj = 2\n";
    assert_eq!(
        err(grid),
        "bad.toml:7:5: axis `j` has extent 2 but indexes dimension 1 of output `C`, which has 5 elements: \
         `C[0, 2]` is never written"
    );
}

#[test]
fn constant_indices_must_write_every_output_element() {
    let text = "compute = [\"Y[0] = X[0]\", \"Y[2] = X[1]\"]\n[tensors]\nX = { dtype = \"f32\", shape = [2] }\n\
                Y = { dtype = \"f32\", shape = [3], role = \"output\" }\n";
    assert_eq!(err(text), "bad.toml:4:5: output tensor `Y` is not written everywhere: no statement writes `Y[1]`");
    let w = parse(&text.replace("\"Y[2] = X[1]\"", "\"Y[2] = X[1]\", \"Y[1] = X[0]\"")).expect("every element");
    assert_eq!(w.stmts.len(), 3);
}

#[test]
fn an_axis_in_axes_must_be_an_axis_of_a_statement() {
    let e = err(&format!("{MATMUL}[axes]\nk = 7\nq = 4\n"));
    assert_eq!(e, "bad.toml:14:5: axis `q` in [axes] is not an axis of any statement");
    // A parameter's name is not an axis either.
    let e = err(&format!("{MATMUL}[axes]\nK = 7\n"));
    assert_eq!(e, "bad.toml:13:5: axis `K` in [axes] is not an axis of any statement");
    // A reduction axis may be declared shorter: only part of it is summed.
    let w = parse(&format!("{MATMUL}[axes]\nk = 4\n")).expect("a partial sum");
    assert_eq!(w.stmts[0].axes[2].extent, 4);
}

#[test]
fn float_constants_must_be_finite_in_their_dtype() {
    let scalar = |dtype: &str, value: &str| {
        format!(
            "compute = [\"Y[i] = X[i] * a\"]\n[scalars]\na = {{ dtype = \"{dtype}\", value = {value} }}\n[tensors]\n\
             X = {{ dtype = \"{dtype}\", shape = [4] }}\nY = {{ dtype = \"{dtype}\", shape = [4], role = \"output\" }}\n"
        )
    };
    assert_eq!(
        err(&scalar("f32", "1e300")),
        "bad.toml:3:30: scalar `a` has value 1e300, which is not finite in f32 (largest finite value 3.4028235e38)"
    );
    assert_eq!(parse(&scalar("f32", "3.4028235e38")).expect("f32::MAX").scalars[0].value as f32, f32::MAX);
    assert_eq!(parse(&scalar("f64", "1e300")).expect("fits f64").scalars[0].value, 1e300);
    assert_eq!(
        err(&scalar("f64", "inf")),
        "bad.toml:3:30: scalar `a` has value inf, which is not finite in f64 (largest finite value 1.7976931348623157e308)"
    );
    assert_eq!(
        err(&scalar("f64", "nan")),
        "bad.toml:3:30: scalar `a` has value NaN, which is not finite in f64 (largest finite value 1.7976931348623157e308)"
    );
    let stmt = |s: &str, dtype: &str| {
        format!(
            "compute = [\"{s}\"]\n[tensors]\nX = {{ dtype = \"{dtype}\", shape = [4] }}\n\
             Y = {{ dtype = \"{dtype}\", shape = [4], role = \"output\" }}\n"
        )
    };
    assert_eq!(
        err(&stmt("Y[i] = X[i] * 1e400", "f64")),
        "bad.toml:1:27: number `1e400` is not finite in f64 (largest finite value 1.7976931348623157e308)"
    );
    assert_eq!(
        err(&stmt("Y[i] = X[i] * -1e300", "f32")),
        "bad.toml:1:27: constant -1e300 is not finite in f32 (largest finite value 3.4028235e38)"
    );
    // f16 and bf16 values round to their dtype: 65519 is 65504, 65520 overflows.
    let w = parse(&stmt("Y[i] = 65519.0", "f16")).expect("rounds to f16::MAX");
    assert_eq!(w.stmts[0].rhs, Value::Const(65519.0, DType::F16));
    assert_eq!(
        err(&stmt("Y[i] = 65520.0", "f16")),
        "bad.toml:1:20: constant 65520.0 is not finite in f16 (largest finite value 65504.0)"
    );
    assert_eq!(
        err(&stmt("Y[i] = 3.4e38", "bf16")),
        "bad.toml:1:20: constant 3.4e38 is not finite in bf16 (largest finite value 3.3895314e38)"
    );
    // `inf` is infinite on purpose.
    assert!(parse(&stmt("Y[i] = min(X[i], inf)", "f32")).is_ok());
    // Integer constants must fit their integer dtype.
    assert!(parse(&stmt("Y[i] = -128", "i8")).is_ok());
    assert_eq!(err(&stmt("Y[i] = 300", "i8")), "bad.toml:1:20: constant 300 does not fit i8 (-128..=127)");
    assert_eq!(
        err(&stmt("Y[i] = X[i] + 3000000000", "i32")),
        "bad.toml:1:27: constant 3000000000 does not fit i32 (-2147483648..=2147483647)"
    );
}
