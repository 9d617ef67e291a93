//! Fuzzing on the stable toolchain: grammar-aware input generators and a
//! time-bounded proptest driver (feature `fuzzing`).
//!
//! A fuzz target is a function that must never panic on any input (errors
//! are fine). [`run`] feeds it generated inputs: a short smoke run of
//! [`SMOKE_CASES`] cases by default (what `cargo test` does in CI), or,
//! when `FUZZ_SECS` is set, batches with fresh seeds until that many
//! seconds have passed (`make fuzz`). A failure is shrunk by proptest and
//! reported with its seed; every crasher becomes a regression test.
//!
//! The generators follow the grammars of the inputs (workload files, traces,
//! loop-nest text, target files, JSON requests) and then mutate the text
//! (deleting, repeating or replacing spans with hostile tokens), so that
//! most inputs get past the first syntax check.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::time::{Duration, Instant};

/// Cases of a smoke run (no `FUZZ_SECS`).
pub const SMOKE_CASES: u32 = 48;

/// Cases per batch of a timed run.
const BATCH_CASES: u32 = 256;

/// Integers that break arithmetic: zero, negatives, the limit and one past
/// it, powers of two near 32 and 64 bits, the extremes of `i64`.
pub const HOSTILE_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    7,
    128,
    1 << 20,
    (1 << 31) - 1,
    1 << 32,
    crate::limits::MAX_EXTENT,
    crate::limits::MAX_EXTENT + 1,
    1 << 62,
    i64::MAX,
    i64::MIN,
];

/// Runs `target` on inputs drawn from `strategy` (see the module docs);
/// panics with the shrunk failing input.
pub fn run<S, F>(name: &str, strategy: S, target: F)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
    F: Fn(S::Value) -> Result<(), TestCaseError>,
{
    let secs: Option<u64> = std::env::var("FUZZ_SECS").ok().and_then(|s| s.trim().parse().ok());
    let (deadline, cases) = match secs {
        Some(s) => (Some(Instant::now() + Duration::from_secs(s)), BATCH_CASES),
        None => (None, SMOKE_CASES),
    };
    let mut seed: u64 = match deadline {
        // A timed run explores: a new seed each time.
        Some(_) => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        }
        None => 0x5ca1_e7e5,
    };
    let mut total: u64 = 0;
    loop {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let config = Config { cases, failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
        if let Err(e) = runner.run(&strategy, &target) {
            panic!("fuzz target `{name}` failed (seed {seed:#x}, after {total} earlier cases): {e}");
        }
        total += u64::from(cases);
        match deadline {
            Some(d) if Instant::now() < d => seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1),
            _ => break,
        }
    }
    if secs.is_some() {
        eprintln!("fuzz target `{name}`: {total} cases, no failure");
    }
}

/// A hostile or ordinary integer, as text.
pub fn int_text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(HOSTILE_INTS).prop_map(|v| v.to_string()),
        2 => (1i64..300).prop_map(|v| v.to_string()),
        1 => Just("99999999999999999999999".to_string()),
    ]
    .boxed()
}

/// Integer expressions over the given names: sums, products, divisions,
/// parentheses, unary minus, `vscale`.
pub fn int_expr(names: &'static [&'static str]) -> BoxedStrategy<String> {
    let leaf = prop_oneof![int_text(), prop::sample::select(names).prop_map(str::to_string)];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(&["+", "-", "*", "/", "%"][..]), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("-{a}")),
        ]
    })
    .boxed()
}

/// Mutations of a text: delete, repeat or replace a span with a hostile
/// token, or nest it in many parentheses.
pub fn mutate(text: String) -> BoxedStrategy<String> {
    let len = text.len().max(1);
    let tokens = prop::sample::select(
        &[
            "",
            "(",
            ")",
            "[",
            "]",
            ",",
            "=",
            "\"",
            "\n",
            "None",
            "vscale",
            "9223372036854775807",
            "-9223372036854775808",
            "1099511627777",
            "0",
            "-1",
            "\u{0}",
            "é",
            "#",
        ][..],
    );
    (0..len, 0..len, tokens, 0usize..4)
        .prop_map(move |(a, b, tok, how)| {
            let (mut a, mut b) = (a.min(b), a.max(b));
            while !text.is_char_boundary(a) {
                a -= 1;
            }
            while !text.is_char_boundary(b) {
                b -= 1;
            }
            let (pre, mid, post) = (&text[..a], &text[a..b], &text[b..]);
            match how {
                0 => format!("{pre}{post}"),
                1 => format!("{pre}{mid}{mid}{post}"),
                2 => format!("{pre}{tok}{post}"),
                _ => format!("{pre}{}{mid}{}{post}", "(".repeat(300), ")".repeat(300)),
            }
        })
        .boxed()
}

/// Grammar-generated text, and mutations of it.
pub fn with_mutations(grammar: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![2 => grammar.clone(), 3 => grammar.prop_flat_map(mutate)].boxed()
}

const AXES: &[&str] = &["i", "j", "k"];
const PARAMS: &[&str] = &["M", "N", "K"];

fn index_expr() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(AXES).prop_map(str::to_string),
        1 => int_expr(AXES),
    ]
    .boxed()
}

fn access(tensor: &'static str) -> BoxedStrategy<String> {
    prop::collection::vec(index_expr(), 0..4).prop_map(move |idx| format!("{tensor}[{}]", idx.join(", "))).boxed()
}

fn value_expr() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => prop::sample::select(&["A", "B", "T"][..]).prop_flat_map(access),
        1 => int_text(),
        1 => Just("s".to_string()),
        1 => Just("inf".to_string()),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(&["+", "-", "*", "/"][..]), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            (prop::sample::select(&["exp", "cos", "sqrt", "abs", "neg", "f32", "i32", "f64"][..]), inner.clone())
                .prop_map(|(f, a)| format!("{f}({a})")),
            (prop::sample::select(&["max", "min"][..]), inner.clone(), inner.clone())
                .prop_map(|(f, a, b)| format!("{f}({a}, {b})")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
    .boxed()
}

fn statement() -> BoxedStrategy<String> {
    (
        prop::sample::select(&["C", "T", "A"][..]).prop_flat_map(access),
        prop::sample::select(&["=", "+=", "max=", "min="][..]),
        value_expr(),
    )
        .prop_map(|(lhs, op, rhs)| format!("{lhs} {op} {rhs}"))
        .boxed()
}

fn shape() -> BoxedStrategy<String> {
    let item = prop_oneof![
        3 => prop::sample::select(PARAMS).prop_map(|p| format!("\"{p}\"")),
        1 => int_text(),
        1 => int_expr(PARAMS).prop_map(|e| format!("\"{e}\"")),
    ];
    prop::collection::vec(item, 0..4).prop_map(|v| format!("[{}]", v.join(", "))).boxed()
}

/// Workload files: parameters, scalars, tensors, axes and statements.
pub fn workload_text() -> BoxedStrategy<String> {
    let params = prop::collection::vec((prop::sample::select(PARAMS), int_text()), 0..4);
    let dtype = prop::sample::select(&["f32", "f64", "f16", "bf16", "i8", "i32", "u7"][..]);
    let tensors = prop::collection::vec(
        (
            prop::sample::select(&["A", "B", "C", "T"][..]),
            dtype,
            shape(),
            prop::sample::select(&["", "input", "output", "temp", "other"][..]),
        ),
        0..5,
    );
    let axes = prop::collection::vec((prop::sample::select(AXES), int_expr(PARAMS)), 0..2);
    let stmts = prop::collection::vec(statement(), 0..3);
    (params, tensors, axes, stmts)
        .prop_map(|(params, tensors, axes, stmts)| {
            let mut t = String::from("name = \"fuzz\"\n");
            let quoted: Vec<String> = stmts.iter().map(|s| format!("{s:?}")).collect();
            t.push_str(&format!("compute = [{}]\n[params]\n", quoted.join(", ")));
            for (p, v) in params {
                t.push_str(&format!("{p} = {v}\n"));
            }
            t.push_str("[scalars]\ns = { dtype = \"f32\", value = 1.5 }\n[tensors]\n");
            for (name, dtype, shape, role) in tensors {
                let role = if role.is_empty() { String::new() } else { format!(", role = \"{role}\"") };
                t.push_str(&format!("{name} = {{ dtype = \"{dtype}\", shape = {shape}{role} }}\n"));
            }
            t.push_str("[axes]\n");
            for (a, e) in axes {
                t.push_str(&format!("{a} = \"{e}\"\n"));
            }
            t
        })
        .boxed()
}

/// Workload references `NAME:P=V,...` with hostile values.
pub fn workload_reference() -> BoxedStrategy<String> {
    let names = crate::workload::shipped_names();
    let name = prop::sample::select(names);
    let overrides =
        prop::collection::vec((prop::sample::select(&["M", "N", "K", "H", "C", "Q", ""][..]), int_text()), 0..4);
    (name, overrides)
        .prop_map(|(n, o)| {
            let parts: Vec<String> = o.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if parts.is_empty() {
                n.to_string()
            } else {
                format!("{n}:{}", parts.join(","))
            }
        })
        .boxed()
}

const LOOPS: &[&str] = &["i", "j", "k", "i0", "i1", "j0", "j1", "k0", "k1", "f", "t0", "t1"];

fn factor() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just("None".to_string()),
        2 => int_text(),
        1 => (int_text(), Just("vscale")).prop_map(|(a, v)| format!("{a}*{v}")),
        1 => int_expr(&["vscale", "t0", "t1"]),
    ]
    .boxed()
}

fn instruction() -> BoxedStrategy<String> {
    let lp = || prop::sample::select(LOOPS);
    prop_oneof![
        Just("b = get_block(\"C\")".to_string()),
        Just("i, j, k = get_loops(b)".to_string()),
        (lp(), prop::collection::vec(factor(), 1..4)).prop_map(|(l, f)| {
            let outs: Vec<String> = (0..f.len()).map(|n| format!("{l}{n}")).collect();
            format!("{} = split({l}, factors=[{}])", outs.join(", "), f.join(", "))
        }),
        prop::collection::vec(lp(), 1..5).prop_map(|ls| format!("reorder({})", ls.join(", "))),
        (lp(), lp()).prop_map(|(a, b)| format!("f = fuse({a}, {b})")),
        lp().prop_map(|l| format!("unroll({l})")),
        lp().prop_map(|l| format!("parallel({l})")),
        (lp(), prop::sample::select(&["predicate", "peel", "scalar", "bogus"][..]))
            .prop_map(|(l, t)| format!("vectorize({l}, tail=\"{t}\")")),
        (lp(), int_text()).prop_map(|(l, v)| format!("annotate({l}, key=\"unroll_max_step\", value=\"{v}\")")),
        (lp(), 0usize..6, int_text()).prop_map(|(l, n, m)| {
            let outs: Vec<String> = (0..n).map(|x| format!("t{x}")).collect();
            format!("{} = sample_perfect_tile({l}, n={n}, max_innermost_factor={m})", outs.join(", "))
        }),
        (lp(), 2usize..4, int_text(), prop::collection::vec(factor(), 1..4)).prop_map(|(l, n, m, d)| {
            let outs: Vec<String> = (0..n).map(|x| format!("t{x}")).collect();
            format!(
                "{} = sample_mixed_tile({l}, n={n}, max_innermost_fixed={m}, max_innermost_vscale={m}, decision=[{}])",
                outs.join(", "),
                d.join(", ")
            )
        }),
        Just("cache_write(b, at=i)".to_string()),
        Just("decompose_reduction(b, k)".to_string()),
    ]
    .boxed()
}

/// Traces: instruction lines from the trace grammar, starting like a real
/// schedule (`get_block`, `get_loops`) most of the time.
pub fn trace_text() -> BoxedStrategy<String> {
    (any::<bool>(), prop::collection::vec(instruction(), 0..8))
        .prop_map(|(head, insts)| {
            let mut lines = Vec::new();
            if head {
                lines.push("b = get_block(\"C\")".to_string());
                lines.push("i, j, k = get_loops(b)".to_string());
            }
            lines.extend(insts);
            lines.join("\n") + "\n"
        })
        .boxed()
}
