//! Polynomial normal form used by the simplifier.
//!
//! A [`Poly`] is a sum of integer-coefficient monomials; a monomial is a
//! sorted product of atoms (variables, `vscale`, and opaque sub-expressions
//! such as an unsimplifiable `floordiv`).

use super::Expr;
use crate::ids::VarId;
use smallvec::{smallvec, SmallVec};
use std::sync::Arc;

/// A factor of a monomial.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A variable.
    Var(VarId),
    /// `vscale`.
    VScale,
    /// A canonical non-polynomial expression (floordiv, min, load, ...).
    Opaque(Arc<Expr>),
}

/// A product of atoms (sorted; repeats mean powers). Empty is the constant 1.
/// Index monomials have one or two factors, kept inline.
pub type Mono = SmallVec<[Atom; 2]>;

/// The terms of a polynomial: monomial -> non-zero coefficient, ordered by
/// monomial. A sorted vector rather than a tree: index polynomials have a
/// handful of terms, and are built, combined and dropped by the million
/// while a search replays and lowers candidates.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Terms(SmallVec<[(Mono, i64); 4]>);

impl Terms {
    /// The (monomial, coefficient) pairs in monomial order.
    pub fn iter(&self) -> impl Iterator<Item = (&Mono, &i64)> + '_ {
        self.into_iter()
    }

    /// The number of terms.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no term (the polynomial 0).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The coefficient of `m`, if it has a term.
    pub fn get(&self, m: &Mono) -> Option<&i64> {
        self.0.binary_search_by(|(k, _)| k.cmp(m)).ok().map(|i| &self.0[i].1)
    }
}

impl<'a> IntoIterator for &'a Terms {
    type Item = (&'a Mono, &'a i64);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (Mono, i64)>, fn(&'a (Mono, i64)) -> (&'a Mono, &'a i64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(m, c)| (m, c))
    }
}

/// A polynomial: monomial -> non-zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Poly {
    /// Terms with non-zero coefficients.
    pub terms: Terms,
    /// Set when a coefficient overflowed 64 bits: the terms are then
    /// meaningless, so the polynomial can be neither bounded nor printed back
    /// (the simplifier keeps such an expression as it was written).
    pub overflow: bool,
}

impl Poly {
    /// The constant polynomial.
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        p.add_term(Mono::new(), c);
        p
    }

    /// A single atom.
    pub fn atom(a: Atom) -> Poly {
        let mut p = Poly::default();
        p.add_term(smallvec![a], 1);
        p
    }

    /// Adds `c * m`.
    pub fn add_term(&mut self, m: Mono, c: i64) {
        if c == 0 {
            return;
        }
        // One search, and the monomial is moved in, not cloned.
        let terms = &mut self.terms.0;
        match terms.binary_search_by(|(k, _)| k.cmp(&m)) {
            Err(at) => terms.insert(at, (m, c)),
            Ok(at) => match terms[at].1.checked_add(c) {
                Some(0) => {
                    terms.remove(at);
                }
                Some(v) => terms[at].1 = v,
                None => self.overflow = true,
            },
        }
    }

    /// `self + other`.
    pub fn add(&self, other: &Poly) -> Poly {
        // A merge of the two sorted term lists. A coefficient that
        // overflows keeps this polynomial's (the result is flagged anyway).
        let (a, b) = (&self.terms.0, &other.terms.0);
        let mut p = Poly { overflow: self.overflow || other.overflow, ..Poly::default() };
        let out = &mut p.terms.0;
        out.reserve(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => {
                    out.push(a[i].clone());
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push(b[j].clone());
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    match a[i].1.checked_add(b[j].1) {
                        Some(0) => {}
                        Some(v) => out.push((a[i].0.clone(), v)),
                        None => {
                            p.overflow = true;
                            out.push(a[i].clone());
                        }
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend(a[i..].iter().cloned());
        out.extend(b[j..].iter().cloned());
        p
    }

    /// `self * k`.
    pub fn scale(&self, k: i64) -> Poly {
        let mut p = Poly { overflow: self.overflow, ..Poly::default() };
        for (m, c) in &self.terms {
            match c.checked_mul(k) {
                Some(v) => p.add_term(m.clone(), v),
                None => p.overflow = true,
            }
        }
        p
    }

    /// `self - other`.
    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.scale(-1))
    }

    /// `self * other`.
    pub fn mul(&self, other: &Poly) -> Poly {
        let mut p = Poly { overflow: self.overflow || other.overflow, ..Poly::default() };
        for (ma, ca) in &self.terms {
            for (mb, cb) in &other.terms {
                let mut m: Mono = ma.iter().chain(mb.iter()).cloned().collect();
                m.sort();
                match ca.checked_mul(*cb) {
                    Some(v) => p.add_term(m, v),
                    None => p.overflow = true,
                }
            }
        }
        p
    }

    /// The constant value if the polynomial has no atoms.
    pub fn as_const(&self) -> Option<i64> {
        if self.overflow {
            return None;
        }
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Mono::new()).copied(),
            _ => None,
        }
    }

    /// The single term `(monomial, coefficient)` if there is exactly one.
    pub fn single_term(&self) -> Option<(&Mono, i64)> {
        if self.terms.len() == 1 && !self.overflow {
            self.terms.iter().next().map(|(m, c)| (m, *c))
        } else {
            None
        }
    }

    /// Splits `self = (c*m) * q + r` where `q` collects every term divisible
    /// by `c*m` and `r` the rest.
    pub fn split_divisible(&self, m: &Mono, c: i64) -> (Poly, Poly) {
        let mut q = Poly { overflow: self.overflow, ..Poly::default() };
        let mut r = Poly { overflow: self.overflow, ..Poly::default() };
        for (mono, coef) in &self.terms {
            let quotient = (coef.checked_rem(c) == Some(0)).then(|| coef.checked_div(c)).flatten();
            match quotient.and_then(|k| remove_factors(mono, m).map(|rest| (rest, k))) {
                Some((rest, k)) => q.add_term(rest, k),
                None => r.add_term(mono.clone(), *coef),
            }
        }
        (q, r)
    }

    /// Converts back to an expression tree in a stable, readable order:
    /// variable terms (`i0*4`, `j0*4*vscale`), then vscale terms, then the constant.
    pub fn to_expr(&self) -> Expr {
        let mut terms: SmallVec<[(&Mono, i64); 8]> = self.terms.iter().map(|(m, c)| (m, *c)).collect();
        terms.sort_by(|(a, _), (b, _)| term_rank(a).cmp(&term_rank(b)).then(a.cmp(b)));
        let mut acc: Option<Expr> = None;
        for (m, c) in terms {
            acc = Some(match acc {
                None if c < 0 && !m.is_empty() => Expr::Sub(Arc::new(Expr::Int(0)), Arc::new(mono_expr(m, -c))),
                None => mono_expr(m, c),
                Some(a) if c < 0 => Expr::Sub(Arc::new(a), Arc::new(mono_expr(m, -c))),
                Some(a) => Expr::Add(Arc::new(a), Arc::new(mono_expr(m, c))),
            });
        }
        acc.unwrap_or(Expr::Int(0))
    }
}

fn term_rank(m: &Mono) -> u8 {
    if m.is_empty() {
        3
    } else if m.iter().all(|a| matches!(a, Atom::VScale)) {
        2
    } else {
        match m[0] {
            Atom::Var(_) => 0,
            _ => 1,
        }
    }
}

/// Removes the factors `m` from `mono` (as multisets); `None` if not contained.
fn remove_factors(mono: &Mono, m: &Mono) -> Option<Mono> {
    let mut rest = mono.clone();
    for a in m {
        let pos = rest.iter().position(|x| x == a)?;
        rest.remove(pos);
    }
    Some(rest)
}

fn atom_expr(a: &Atom) -> Expr {
    match a {
        Atom::Var(v) => Expr::Var(*v),
        Atom::VScale => Expr::VScale,
        Atom::Opaque(e) => (**e).clone(),
    }
}

/// `c * m` printed as `vars*c*vscale*opaques`.
fn mono_expr(m: &Mono, c: i64) -> Expr {
    let vars = m.iter().filter(|a| matches!(a, Atom::Var(_)));
    let opaque = m.iter().filter(|a| matches!(a, Atom::Opaque(_)));
    let constant = (c != 1 || m.is_empty()).then_some(Expr::Int(c));
    let vscales = m.iter().filter(|a| matches!(a, Atom::VScale));
    let mut factors = vars.chain(opaque).map(atom_expr).chain(constant).chain(vscales.map(atom_expr));
    let first = factors.next().unwrap_or(Expr::Int(1));
    factors.fold(first, |a, b| Expr::Mul(Arc::new(a), Arc::new(b)))
}
