//! Tests of the simplifier and provers against concrete evaluation.

use super::*;
use crate::ids::{TensorId, VarId};
use crate::text::{lex, Cursor, SyntaxError};
use proptest::prelude::*;

/// Variables `a`..`h` with the given extents (as text, may use vscale).
struct Ctx {
    names: Vec<&'static str>,
    extents: Vec<Expr>,
    vscales: Vec<u32>,
}

impl RangeCtx for Ctx {
    fn var_extent(&self, v: VarId) -> Option<Expr> {
        self.extents.get(v.index()).cloned()
    }
    fn tensor_range(&self, _: TensorId) -> Option<(i64, i64)> {
        Some((0, 100))
    }
    fn vscales(&self) -> &[u32] {
        &self.vscales
    }
}

struct Names<'a>(&'a [&'static str]);
impl NameResolver for Names<'_> {
    fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError> {
        self.0
            .iter()
            .position(|n| *n == name)
            .map(|i| Expr::Var(VarId(i as u32)))
            .ok_or_else(|| SyntaxError::new(offset, format!("unknown {name}")))
    }
    fn tensor(&mut self, _: &str, _: usize) -> Result<TensorId, SyntaxError> {
        Ok(TensorId(0))
    }
}

fn parse(names: &[&'static str], s: &str) -> Expr {
    let mut cur = Cursor::new(lex(s).expect("lex"));
    let e = parse_expr(&mut cur, &mut Names(names)).expect("parse");
    cur.expect_eof("expression").expect("eof");
    e
}

fn ctx(vars: &[(&'static str, &str)], vscales: &[u32]) -> Ctx {
    let names: Vec<&'static str> = vars.iter().map(|v| v.0).collect();
    let extents = vars.iter().map(|v| parse(&[], v.1)).collect();
    Ctx { names, extents, vscales: vscales.to_vec() }
}

fn show(c: &Ctx, e: &Expr) -> String {
    let names = c.names.clone();
    e.display(&move |v: VarId| names[v.index()].to_string(), &|_| "T".to_string()).to_string()
}

fn simp(c: &Ctx, s: &str) -> String {
    show(c, &simplify(&parse(&c.names, s), c))
}

const SVE: [u32; 5] = [1, 2, 4, 8, 16];

#[test]
fn canonical_order_and_printing() {
    let c = ctx(&[("i0", "17"), ("i1", "4"), ("j0", "ceildiv(131, 4*vscale)"), ("j1", "4*vscale")], &SVE);
    assert_eq!(simp(&c, "i1 + 4*i0"), "i0*4 + i1");
    assert_eq!(simp(&c, "j1 + j0*(4*vscale)"), "j0*4*vscale + j1");
    assert_eq!(simp(&c, "(i0 + 1)*4 - 4"), "i0*4");
    assert_eq!(simp(&c, "ceildiv(131, vscale*4)"), "ceildiv(131, 4*vscale)");
    assert_eq!(simp(&c, "2 - i1 - i0"), "0 - i0 - i1 + 2");
}

#[test]
fn floordiv_and_floormod_of_split_indices() {
    let c = ctx(&[("i0", "17"), ("i1", "4"), ("j0", "ceildiv(131, 4*vscale)"), ("j1", "4*vscale")], &SVE);
    assert_eq!(simp(&c, "floordiv(i0*4 + i1, 4)"), "i0");
    assert_eq!(simp(&c, "floormod(i0*4 + i1, 4)"), "i1");
    assert_eq!(simp(&c, "floordiv(j0*4*vscale + j1, 4*vscale)"), "j0");
    assert_eq!(simp(&c, "floormod(j0*4*vscale + j1, 4*vscale)"), "j1");
    assert_eq!(simp(&c, "floordiv(i0*8 + i1, 4)"), "i0*2");
    // i1 + 2 may reach 5 >= 4: not provable.
    assert_eq!(simp(&c, "floordiv(i0*4 + i1 + 2, 4)"), "i0 + floordiv(i1 + 2, 4)");
    assert_eq!(simp(&c, "ceildiv(i0*4 + i1 + 1, 4)"), "i0 + 1");
    // A constant remainder over a constant divisor folds in the first pass
    // (found by `simplify_preserves_value`: the second pass used to fold it).
    assert_eq!(simp(&c, "ceildiv(max(0, 5) - 4*i0, 2)"), "0 - i0*2 + 3");
    assert_eq!(simp(&c, "floordiv(i0*4 + 7, 2)"), "i0*2 + 3");
    assert_eq!(simp(&c, "floormod(i0*4 + 7, 2)"), "1");
}

#[test]
fn proofs_hold_for_every_vscale() {
    let c = ctx(&[("i0", "17"), ("i1", "4"), ("j0", "ceildiv(131, 4*vscale)"), ("j1", "4*vscale")], &SVE);
    let p = |s: &str| parse(&c.names, s);
    assert!(prove_lt(&p("i0*4 + i1"), &p("68"), &c));
    assert!(!prove_lt(&p("i0*4 + i1"), &p("67"), &c));
    assert!(prove_lt(&p("j1"), &p("4*vscale"), &c));
    assert!(!prove_lt(&p("j0*4*vscale + j1"), &p("131"), &c));
    // 128 is a multiple of 4*vscale only up to vscale 16 ... 4*16 = 64 divides 128: provable with extent ceildiv(128, 4vs).
    let d = ctx(&[("j0", "ceildiv(128, 4*vscale)"), ("j1", "4*vscale")], &SVE);
    assert!(prove_lt(&parse(&d.names, "j0*4*vscale + j1"), &Expr::Int(128), &d));
    let e = ctx(&[("j0", "ceildiv(128, 4*vscale)"), ("j1", "4*vscale")], &[1, 2, 4, 8, 16, 32, 64]);
    assert!(!prove_lt(&parse(&e.names, "j0*4*vscale + j1"), &Expr::Int(128), &e));
}

#[test]
fn linear_decomposition() {
    let c = ctx(&[("i", "10"), ("j", "4*vscale"), ("k", "8")], &SVE);
    let e = parse(&c.names, "(i*8 + j)*3 + k");
    let lin = linear_in(&e, VarId(1), &c).expect("linear");
    assert_eq!(lin.const_coeff(), Some(3));
    assert_eq!(show(&c, &lin.rest), "i*24 + k");
    assert!(linear_in(&parse(&c.names, "floordiv(j, 2)"), VarId(1), &c).is_none());
    assert!(linear_in(&parse(&c.names, "j*j"), VarId(1), &c).is_none());
    assert!(linear_in(&parse(&c.names, "T[j] + 1"), VarId(1), &c).is_none());
    let lin = linear_in(&parse(&c.names, "T[i] * 8 + j"), VarId(1), &c).expect("linear");
    assert_eq!(lin.const_coeff(), Some(1));
}

#[test]
fn substitution_shares_the_subtrees_it_leaves_alone() {
    let c = ctx(&[("a", "7"), ("b", "4"), ("c", "8")], &SVE);
    let e = parse(&c.names, "(a*4 + b)*floordiv(c, 2) + min(a, c)");
    let (a, b) = (VarId(0), VarId(1));
    let replaced = e.substitute(&|v| (v == b).then_some(Expr::Int(3)));
    assert_eq!(show(&c, &replaced), show(&c, &parse(&c.names, "(a*4 + 3)*floordiv(c, 2) + min(a, c)")));
    let (Expr::Add(old_l, old_r), Expr::Add(new_l, new_r)) = (&e, &replaced) else { panic!("sums") };
    let (Expr::Mul(old_sum, old_div), Expr::Mul(new_sum, new_div)) = (&**old_l, &**new_l) else { panic!("products") };
    // Untouched operands are the same nodes, not copies; the changed path is new.
    assert!(Arc::ptr_eq(old_r, new_r) && Arc::ptr_eq(old_div, new_div));
    assert!(!Arc::ptr_eq(old_sum, new_sum));
    // Nothing replaced: the very same tree.
    let same = e.substitute(&|v| (v == VarId(7)).then_some(Expr::Int(0)));
    let Expr::Add(same_l, same_r) = &same else { panic!("a sum") };
    assert!(Arc::ptr_eq(old_l, same_l) && Arc::ptr_eq(old_r, same_r));
    // Every occurrence, left to right, repeats included.
    let mut seen = Vec::new();
    e.for_each_var(&mut |v| seen.push(v));
    assert_eq!(seen, [a, b, VarId(2), a, VarId(2)]);
    assert_eq!(e.vars().as_slice(), [a, b, VarId(2)]);
    assert!(e.uses_var(b) && !replaced.uses_var(b) && !e.uses_vscale());
}

#[test]
fn polynomial_terms_stay_sorted_and_cancel() {
    use super::poly::{Atom, Mono, Poly};
    let (a, b) = (Atom::Var(VarId(0)), Atom::Var(VarId(1)));
    let mut p = Poly::constant(5);
    p.add_term(Mono::from_vec(vec![b.clone()]), 2);
    p.add_term(Mono::from_vec(vec![a.clone(), b.clone()]), 1);
    p.add_term(Mono::from_vec(vec![a.clone()]), 3);
    let monos: Vec<&Mono> = p.terms.iter().map(|(m, _)| m).collect();
    let mut sorted = monos.clone();
    sorted.sort();
    assert_eq!(monos, sorted, "terms in monomial order");
    assert_eq!(p.terms.get(&Mono::from_vec(vec![a.clone()])), Some(&3));
    // A coefficient that reaches 0 removes its term; the constant alone is a constant.
    p.add_term(Mono::from_vec(vec![a.clone()]), -3);
    p.add_term(Mono::from_vec(vec![b.clone()]), -2);
    p.add_term(Mono::from_vec(vec![a, b]), -1);
    assert_eq!((p.terms.len(), p.as_const()), (1, Some(5)));
    assert!(p.sub(&Poly::constant(5)).terms.is_empty());
}

fn arb_expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        (0i64..20).prop_map(|v| v.to_string()),
        prop::sample::select(vec!["a", "b", "c", "vscale"]).prop_map(|s| s.to_string()),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = arb_expr(depth - 1);
    prop_oneof![
        leaf,
        (sub.clone(), sub.clone()).prop_map(|(x, y)| format!("({x} + {y})")),
        (sub.clone(), sub.clone()).prop_map(|(x, y)| format!("({x} - {y})")),
        (sub.clone(), sub.clone()).prop_map(|(x, y)| format!("({x} * {y})")),
        (sub.clone(), 1i64..9).prop_map(|(x, d)| format!("floordiv({x}, {d})")),
        (sub.clone(), 1i64..9).prop_map(|(x, d)| format!("floormod({x}, {d})")),
        (sub.clone(), 1i64..5).prop_map(|(x, d)| format!("floordiv({x}, {d}*vscale)")),
        (sub.clone(), 1i64..9).prop_map(|(x, d)| format!("ceildiv({x}, {d})")),
        (sub.clone(), sub.clone()).prop_map(|(x, y)| format!("min({x}, {y})")),
        (sub.clone(), sub).prop_map(|(x, y)| format!("max({x}, {y})")),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Simplification preserves the value for every assignment and vscale,
    /// and the computed bounds contain the value.
    #[test]
    fn simplify_preserves_value(src in arb_expr(3), a in 0i64..7, b in 0i64..4, vi in 0usize..3) {
        let c = ctx(&[("a", "7"), ("b", "4"), ("c", "2*vscale")], &[1, 2, 4]);
        let vscale = [1i64, 2, 4][vi];
        let cv = (a + b) % (2 * vscale);
        let e = parse(&c.names, &src);
        let s = simplify(&e, &c);
        let vals = [a, b, cv];
        let env = |v: VarId| Some(vals[v.index()]);
        let none = |_: TensorId, _: &[i64]| None;
        let orig = eval(&e, &env, vscale, &none);
        let simp = eval(&s, &env, vscale, &none);
        if let Ok(o) = orig {
            prop_assert_eq!(Ok(o), simp.clone(), "{} => {}", src, show(&c, &s));
            if let Some((lo, hi)) = bounds(&s, &c, vscale) {
                prop_assert!(lo <= o && o <= hi, "{} in [{}, {}]", o, lo, hi);
            }
        }
        // Idempotent.
        prop_assert_eq!(simplify(&s, &c), s);
    }
}

proptest! {
    /// Adding two polynomials (a merge of their sorted terms) gives what
    /// adding the second's terms one by one gives, cancellations included.
    #[test]
    fn polynomial_sum_is_termwise(xs in proptest::collection::vec((0usize..6, -3i64..4), 0..8),
                                  ys in proptest::collection::vec((0usize..6, -3i64..4), 0..8)) {
        use super::poly::{Atom, Mono, Poly};
        let monos: Vec<Mono> = vec![
            Mono::new(),
            Mono::from_vec(vec![Atom::Var(VarId(0))]),
            Mono::from_vec(vec![Atom::Var(VarId(1))]),
            Mono::from_vec(vec![Atom::VScale]),
            Mono::from_vec(vec![Atom::Var(VarId(0)), Atom::Var(VarId(1))]),
            Mono::from_vec(vec![Atom::Var(VarId(0)), Atom::VScale]),
        ];
        let build = |ts: &[(usize, i64)]| {
            let mut p = Poly::default();
            for (m, c) in ts {
                p.add_term(monos[*m].clone(), *c);
            }
            p
        };
        let (a, b) = (build(&xs), build(&ys));
        let mut termwise = a.clone();
        for (m, c) in &b.terms {
            termwise.add_term(m.clone(), *c);
        }
        prop_assert_eq!(a.add(&b), termwise);
    }
}

/// Remembered results depend on the context's answers, also when a
/// division inside a larger expression was remembered on its own first:
/// `floordiv(a, 8)` is 0 when `a` ranges over 8 values, not over 16.
#[test]
fn remembered_divisions_are_reused_only_under_the_same_ranges() {
    let narrow = ctx(&[("a", "8"), ("b", "4")], &[1]);
    let wide = ctx(&[("a", "16"), ("b", "4")], &[1]);
    let wider_b = ctx(&[("a", "8"), ("b", "5")], &[1]);
    // The division alone, then inside sums (a hit on the remembered division).
    assert_eq!(simp(&narrow, "floordiv(a, 8)"), "0");
    assert_eq!(simp(&narrow, "b + floordiv(a, 8)"), "b");
    assert_eq!(simp(&narrow, "b*8 + floordiv(a, 8) + floormod(a, 8)"), "a + b*8");
    // The same expressions where `a` ranges further: nothing reused wrongly.
    assert_eq!(simp(&wide, "b + floordiv(a, 8)"), "b + floordiv(a, 8)");
    assert_eq!(simp(&wide, "b*8 + floordiv(a, 8) + floormod(a, 8)"), "b*8 + floordiv(a, 8) + floormod(a, 8)");
    assert_eq!(simp(&wide, "floordiv(a, 8)"), "floordiv(a, 8)");
    // A range the division never asked about changes nothing.
    assert_eq!(simp(&wider_b, "b + floordiv(a, 8)"), "b");
    // And back: the narrow results again.
    assert_eq!(simp(&narrow, "b + floordiv(a, 8)"), "b");
    assert_eq!(simp(&narrow, "floordiv(a, 8)"), "0");
}
