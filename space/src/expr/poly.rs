//! Polynomial normal form used by the simplifier.
//!
//! A [`Poly`] is a sum of integer-coefficient monomials; a monomial is a
//! sorted product of atoms (variables, `vscale`, and opaque sub-expressions
//! such as an unsimplifiable `floordiv`).

use super::Expr;
use crate::ids::VarId;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// A factor of a monomial.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A variable.
    Var(VarId),
    /// `vscale`.
    VScale,
    /// A canonical non-polynomial expression (floordiv, min, load, ...).
    Opaque(Box<Expr>),
}

/// A product of atoms (sorted; repeats mean powers). Empty is the constant 1.
pub type Mono = Vec<Atom>;

/// A polynomial: monomial -> non-zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Poly {
    /// Terms with non-zero coefficients.
    pub terms: BTreeMap<Mono, i64>,
    /// Set when a coefficient overflowed 64 bits: the terms are then
    /// meaningless, so the polynomial can be neither bounded nor printed back
    /// (the simplifier keeps such an expression as it was written).
    pub overflow: bool,
}

impl Poly {
    /// The constant polynomial.
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        p.add_term(Vec::new(), c);
        p
    }

    /// A single atom.
    pub fn atom(a: Atom) -> Poly {
        let mut p = Poly::default();
        p.add_term(vec![a], 1);
        p
    }

    /// Adds `c * m`.
    pub fn add_term(&mut self, m: Mono, c: i64) {
        if c == 0 {
            return;
        }
        // One lookup, and the monomial is moved in, not cloned.
        match self.terms.entry(m) {
            Entry::Vacant(v) => {
                v.insert(c);
            }
            Entry::Occupied(mut o) => match o.get().checked_add(c) {
                Some(0) => {
                    o.remove();
                }
                Some(v) => *o.get_mut() = v,
                None => self.overflow = true,
            },
        }
    }

    /// `self + other`.
    pub fn add(&self, other: &Poly) -> Poly {
        let mut p = self.clone();
        p.overflow |= other.overflow;
        for (m, c) in &other.terms {
            p.add_term(m.clone(), *c);
        }
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
            1 => self.terms.get(&Vec::new()).copied(),
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
        let mut terms: Vec<(&Mono, i64)> = self.terms.iter().map(|(m, c)| (m, *c)).collect();
        terms.sort_by(|(a, _), (b, _)| term_rank(a).cmp(&term_rank(b)).then(a.cmp(b)));
        let mut acc: Option<Expr> = None;
        for (m, c) in terms {
            acc = Some(match acc {
                None if c < 0 && !m.is_empty() => Expr::Sub(Box::new(Expr::Int(0)), Box::new(mono_expr(m, -c))),
                None => mono_expr(m, c),
                Some(a) if c < 0 => Expr::Sub(Box::new(a), Box::new(mono_expr(m, -c))),
                Some(a) => Expr::Add(Box::new(a), Box::new(mono_expr(m, c))),
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
    let mut factors: Vec<Expr> = Vec::new();
    let (vs, rest): (Vec<&Atom>, Vec<&Atom>) = m.iter().partition(|a| matches!(a, Atom::VScale));
    let (vars, opaque): (Vec<&Atom>, Vec<&Atom>) = rest.into_iter().partition(|a| matches!(a, Atom::Var(_)));
    factors.extend(vars.iter().map(|a| atom_expr(a)));
    factors.extend(opaque.iter().map(|a| atom_expr(a)));
    if c != 1 || m.is_empty() {
        factors.push(Expr::Int(c));
    }
    factors.extend(vs.iter().map(|a| atom_expr(a)));
    let mut it = factors.into_iter();
    let first = it.next().unwrap_or(Expr::Int(1));
    it.fold(first, |a, b| Expr::Mul(Box::new(a), Box::new(b)))
}
