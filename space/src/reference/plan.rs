//! A statement's tensor accesses compiled once, so that locating an element costs a few multiply-adds instead of a walk of each index expression.
//!
//! Most indices are affine in the statement's axes (`i`, `2*oh + kh`,
//! `k - 1`). Such an index becomes a constant plus one coefficient per
//! axis, but only when every subexpression provably fits in `i64` for every
//! point the statement visits (each axis `v` in `0 .. extent(v)`, an
//! extent below 1 taken as 1): then the plain evaluator could not have
//! overflowed either, and both give the same integer. Anything else
//! (division, `min`/`max`, loads of index tensors, products of two axes,
//! indices that could overflow, variables that are not axes) keeps the
//! plain evaluation ([`crate::expr::eval`]) and therefore its exact errors.

use crate::expr::Expr;
use crate::ids::TensorId;
use crate::workload::Access;

/// One index of an access.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Index {
    /// `constant + sum(coefficient * point[axis])`; cannot overflow.
    Affine {
        /// The constant term.
        constant: i64,
        /// `(axis, coefficient)` pairs, coefficients non-zero.
        terms: Vec<(usize, i64)>,
    },
    /// Evaluated by the plain evaluator.
    General,
}

impl Index {
    /// The index at `point`, if it is affine.
    #[inline]
    pub(super) fn affine_at(&self, point: &[i64]) -> Option<i64> {
        match self {
            Index::Affine { constant, terms } => {
                Some(terms.iter().fold(*constant, |acc, &(axis, coef)| acc + coef * point[axis]))
            }
            Index::General => None,
        }
    }
}

/// A compiled access: what [`super::Eval`] needs to locate an element.
#[derive(Debug)]
pub(super) struct AccessPlan<'a> {
    /// The tensor read or written.
    pub(super) tensor: TensorId,
    /// The index expressions, one per dimension (for the plain evaluation).
    pub(super) exprs: &'a [Expr],
    /// One compiled index per dimension.
    pub(super) dims: Vec<Index>,
    /// Row-major strides of the tensor.
    pub(super) strides: Vec<i64>,
    /// The flat offset as one affine form, when every index is affine and
    /// provably within its dimension at every point (no bounds to check).
    pub(super) flat: Option<Index>,
}

impl<'a> AccessPlan<'a> {
    /// Compiles `access` for a statement whose axes have `extents`;
    /// `general` keeps every index on the plain evaluator (the tests'
    /// baseline).
    pub(super) fn new(access: &'a Access, shape: &[i64], extents: &[i64], general: bool) -> AccessPlan<'a> {
        let dims = access.indices.iter().map(|e| if general { Index::General } else { compile(e, extents) }).collect();
        let strides = super::strides(shape);
        let flat = if general { None } else { flatten(&access.indices, shape, &strides, extents) };
        AccessPlan { tensor: access.tensor, exprs: &access.indices, dims, strides, flat }
    }
}

/// `sum(stride[d] * index[d])` as one affine form, if every index is
/// affine with a range inside its dimension, and no partial sum can
/// overflow.
fn flatten(indices: &[Expr], shape: &[i64], strides: &[i64], extents: &[i64]) -> Option<Index> {
    let mut total = Affine::constant(0);
    for ((e, &size), &stride) in indices.iter().zip(shape).zip(strides) {
        let a = affine(e, extents)?;
        if a.lo < 0 || a.hi >= i128::from(size) {
            return None;
        }
        total = total.add(a.scale(i128::from(stride))?, 1)?;
    }
    total.into_index(extents)
}

/// An affine form with the range of values it takes over the statement's
/// points, in `i128` so that the ranges of `i64` operands cannot overflow.
struct Affine {
    constant: i128,
    terms: Vec<(usize, i128)>,
    lo: i128,
    hi: i128,
}

impl Affine {
    fn constant(v: i128) -> Affine {
        Affine { constant: v, terms: Vec::new(), lo: v, hi: v }
    }

    /// `Some(self)` if its range fits in `i64`.
    fn checked(self) -> Option<Affine> {
        let fits = |v: i128| i64::try_from(v).is_ok();
        (fits(self.lo) && fits(self.hi)).then_some(self)
    }

    fn add(mut self, other: Affine, sign: i128) -> Option<Affine> {
        self.constant += sign * other.constant;
        for (axis, coef) in other.terms {
            match self.terms.iter_mut().find(|(a, _)| *a == axis) {
                Some((_, c)) => *c += sign * coef,
                None => self.terms.push((axis, sign * coef)),
            }
        }
        self.terms.retain(|(_, c)| *c != 0);
        let (lo, hi) =
            if sign > 0 { (self.lo + other.lo, self.hi + other.hi) } else { (self.lo - other.hi, self.hi - other.lo) };
        Affine { lo, hi, ..self }.checked()
    }

    /// The form as an [`Index`], if evaluating it cannot overflow: every
    /// partial sum lies within the sum of the magnitudes of its parts,
    /// which must fit in `i64` too.
    fn into_index(self, extents: &[i64]) -> Option<Index> {
        let magnitude = self.constant.abs()
            + self.terms.iter().map(|&(axis, c)| c.abs() * i128::from(extents[axis].max(1) - 1)).sum::<i128>();
        i64::try_from(magnitude).ok()?;
        let terms = self.terms.into_iter().map(|(axis, c)| (axis, c as i64)).collect();
        Some(Index::Affine { constant: self.constant as i64, terms })
    }

    fn scale(mut self, k: i128) -> Option<Affine> {
        self.constant *= k;
        for (_, c) in &mut self.terms {
            *c *= k;
        }
        self.terms.retain(|(_, c)| *c != 0);
        let (a, b) = (self.lo * k, self.hi * k);
        Affine { lo: a.min(b), hi: a.max(b), ..self }.checked()
    }
}

/// The affine form of `e` over the points of a statement with `extents`,
/// if it has one whose every subexpression fits in `i64`.
fn affine(e: &Expr, extents: &[i64]) -> Option<Affine> {
    match e {
        Expr::Int(v) => Some(Affine::constant(i128::from(*v))),
        // The reference runs at vscale 1.
        Expr::VScale => Some(Affine::constant(1)),
        Expr::Var(v) => {
            let top = i128::from(extents.get(v.index())?.max(&1) - 1);
            Some(Affine { constant: 0, terms: vec![(v.index(), 1)], lo: 0, hi: top })
        }
        Expr::Add(a, b) => affine(a, extents)?.add(affine(b, extents)?, 1),
        Expr::Sub(a, b) => affine(a, extents)?.add(affine(b, extents)?, -1),
        Expr::Mul(a, b) => {
            let (a, b) = (affine(a, extents)?, affine(b, extents)?);
            match (a.terms.is_empty(), b.terms.is_empty()) {
                (_, true) => a.scale(b.constant),
                (true, false) => b.scale(a.constant),
                (false, false) => None,
            }
        }
        _ => None,
    }
}

/// Compiles one index expression.
fn compile(e: &Expr, extents: &[i64]) -> Index {
    affine(e, extents).and_then(|a| a.into_index(extents)).unwrap_or(Index::General)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{eval, parse_expr, NameResolver};
    use crate::ids::VarId;
    use crate::text::{lex, Cursor, SyntaxError};

    /// Axes `i`, `j`, `k` as variables 0, 1, 2.
    struct Axes;
    impl NameResolver for Axes {
        fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError> {
            ["i", "j", "k"]
                .iter()
                .position(|n| *n == name)
                .map(|i| Expr::Var(VarId(i as u32)))
                .ok_or_else(|| SyntaxError::new(offset, format!("unknown {name}")))
        }
    }

    fn parse(text: &str) -> Expr {
        let mut cur = Cursor::new(lex(text).expect("lexes"));
        parse_expr(&mut cur, &mut Axes).expect("parses")
    }

    fn affine(constant: i64, terms: &[(usize, i64)]) -> Index {
        Index::Affine { constant, terms: terms.to_vec() }
    }

    #[test]
    fn affine_indices_compile_to_coefficients_and_the_rest_stays_general() {
        let ext = [8, 8, 8];
        let index = |text: &str| compile(&parse(text), &ext);
        assert_eq!(index("2*i + j - 1"), affine(-1, &[(0, 2), (1, 1)]));
        assert_eq!(index("(i + 3) * 4 - i*4"), affine(12, &[]));
        assert_eq!(index("k * vscale"), affine(0, &[(2, 1)]));
        assert_eq!(index("i * j"), Index::General);
        assert_eq!(index("i / 2"), Index::General);
        assert_eq!(index("min(i, j)"), Index::General);
        // An intermediate that may overflow keeps the plain evaluation (and its error).
        assert_eq!(index("i * 4611686018427387904 - i * 4611686018427387904"), Index::General);
        assert_eq!(index("i * 2305843009213693952"), Index::General);
        // ... unless the axis is too short for it to.
        let e = parse("i * 2305843009213693952");
        assert_eq!(compile(&e, &[2, 1, 1]), affine(0, &[(0, 2305843009213693952)]));
        // A variable that is not an axis of the statement.
        assert_eq!(compile(&parse("k + 1"), &[4, 4]), Index::General);
    }

    #[test]
    fn an_affine_index_evaluates_as_the_plain_evaluator_does() {
        let ext = [5, 7, 3];
        for text in ["2*i + j - 1", "3 - (k - i)*2", "(i + j) * (1 + 2) + k*vscale"] {
            let e = parse(text);
            let ix = compile(&e, &ext);
            assert!(matches!(ix, Index::Affine { .. }), "{text}");
            for p in 0..(5 * 7 * 3) {
                let point = [p / 21, (p / 3) % 7, p % 3];
                let plain = eval(&e, &|v| point.get(v.index()).copied(), 1, &|_, _| None).expect("evaluates");
                assert_eq!(ix.affine_at(&point), Some(plain), "{text} at {point:?}");
            }
        }
    }

    #[test]
    fn an_access_within_bounds_flattens_to_one_affine_offset() {
        // B[k, j] of a 6x10 tensor, k over 6 and j over 10 (i is axis 0).
        let (ext, shape) = ([4, 10, 6], [6, 10]);
        let strides = crate::reference::strides(&shape);
        let flat = |texts: [&str; 2]| flatten(&texts.map(parse), &shape, &strides, &ext);
        assert_eq!(flat(["k", "j"]), Some(affine(0, &[(2, 10), (1, 1)])));
        assert_eq!(flat(["5 - k", "9 - j"]), Some(affine(59, &[(2, -10), (1, -1)])));
        // Indices that could leave their dimension are checked one by one.
        assert_eq!(flat(["k + 1", "j"]), None);
        assert_eq!(flat(["k", "j - 1"]), None);
        assert_eq!(flat(["k / 2", "j"]), None);
    }
}
