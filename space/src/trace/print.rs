//! Text form of traces: random variables printed by their names.

use super::rv::{name_in, RvId};
use super::{Cand, Choice, Inst, SArg, TExpr, Trace};
use std::fmt;

/// A part of a trace (an instruction, an expression) with the name table
/// its random variables index, to print it as trace text.
#[derive(Clone, Copy, Debug)]
pub struct Named<'a, T> {
    value: &'a T,
    names: &'a [String],
}

impl<'a, T> Named<'a, T> {
    fn with<U>(&self, value: &'a U) -> Named<'a, U> {
        Named { value, names: self.names }
    }

    fn name(&self, rv: impl RvId) -> &'a str {
        name_in(self.names, rv.index())
    }

    /// The names of `rvs`, separated by commas.
    fn join<'b, R: RvId>(&'b self, rvs: &'b [R]) -> Commas<impl Iterator<Item = &'a str> + Clone + 'b> {
        Commas(rvs.iter().map(|r| self.name(*r)))
    }
}

/// Items separated by `, `, written straight to the formatter (a trace is
/// printed for every candidate a search proposes, so no intermediate strings).
#[derive(Clone)]
struct Commas<I>(I);

impl<I: Iterator + Clone> fmt::Display for Commas<I>
where
    I::Item: fmt::Display,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, x) in self.0.clone().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{x}")?;
        }
        Ok(())
    }
}

/// A string literal: quoted, with `\` and `"` escaped.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        let mut rest = self.0;
        while let Some(at) = rest.find(['\\', '"']) {
            f.write_str(&rest[..at])?;
            f.write_str(if rest.as_bytes()[at] == b'\\' { "\\\\" } else { "\\\"" })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)?;
        f.write_str("\"")
    }
}

impl TExpr {
    /// The expression as trace text, its random variables named from `names`.
    pub fn named<'a>(&'a self, names: &'a [String]) -> Named<'a, TExpr> {
        Named { value: self, names }
    }
}

impl Inst {
    /// The instruction as trace text, its random variables named from `names`.
    pub fn named<'a>(&'a self, names: &'a [String]) -> Named<'a, Inst> {
        Named { value: self, names }
    }
}

impl fmt::Display for Named<'_, TExpr> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn prec(e: &TExpr) -> u8 {
            match e {
                TExpr::Add(..) | TExpr::Sub(..) => 1,
                TExpr::Mul(..) => 2,
                TExpr::Int(v) if *v < 0 => 1,
                _ => 3,
            }
        }
        let wrap = |e: &TExpr, min: u8, f: &mut fmt::Formatter<'_>| {
            let text = self.with(e);
            if prec(e) < min {
                write!(f, "({text})")
            } else {
                write!(f, "{text}")
            }
        };
        match self.value {
            TExpr::Int(v) => write!(f, "{v}"),
            TExpr::VScale => f.write_str("vscale"),
            TExpr::Rv(n) => f.write_str(self.name(*n)),
            TExpr::Add(a, b) => {
                wrap(a, 1, f)?;
                f.write_str(" + ")?;
                wrap(b, 2, f)
            }
            TExpr::Sub(a, b) => {
                wrap(a, 1, f)?;
                f.write_str(" - ")?;
                wrap(b, 2, f)
            }
            TExpr::Mul(a, b) => {
                wrap(a, 2, f)?;
                f.write_str("*")?;
                wrap(b, 3, f)
            }
        }
    }
}

fn q(s: &str) -> Quoted<'_> {
    Quoted(s)
}

impl fmt::Display for Named<'_, SArg> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            SArg::Lit(s) => write!(f, "{}", q(s)),
            SArg::Rv(n) => f.write_str(self.name(*n)),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Named<'_, Choice<T>> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Choice::Lit(v) => write!(f, "{}", q(&v.to_string())),
            Choice::Rv(n) => f.write_str(self.name(*n)),
        }
    }
}

impl fmt::Display for Cand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cand::Int(v) => write!(f, "{v}"),
            Cand::Tail(t) => write!(f, "{}", q(t.name())),
            Cand::Kind(k) => write!(f, "{}", q(&k.to_string())),
        }
    }
}

/// `[a, b, ...]`.
struct List<'a, T>(&'a [T]);

impl<T: fmt::Display> fmt::Display for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", Commas(self.0.iter()))
    }
}

fn list<T: fmt::Display>(items: &[T]) -> List<'_, T> {
    List(items)
}

/// A probability with enough digits to read back exactly, always with a
/// decimal point: `f64`'s `Display` never writes an exponent, and writes a
/// point exactly for the finite values with a fraction, so the others get
/// `.0` after it.
struct Prob(f64);

impl fmt::Display for Prob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        if p.is_finite() && p.fract() != 0.0 {
            write!(f, "{p}")
        } else {
            write!(f, "{p}.0")
        }
    }
}

impl fmt::Display for Named<'_, Inst> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Inst::GetBlock { out, name } => write!(f, "{} = get_block({})", self.name(*out), q(name)),
            Inst::GetLoops { outs, block } => write!(f, "{} = get_loops({})", self.join(outs), self.name(*block)),
            Inst::Split { outs, loop_, factors } => {
                let fs = Commas(factors.iter().map(|x| FactorText(x.as_ref().map(|e| self.with(e)))));
                write!(f, "{} = split({}, factors=[{fs}])", self.join(outs), self.name(*loop_))
            }
            Inst::Fuse { out, loops } => write!(f, "{} = fuse({})", self.name(*out), self.join(loops)),
            Inst::Reorder { loops } => write!(f, "reorder({})", self.join(loops)),
            Inst::Vectorize { loop_, tail } => {
                write!(f, "vectorize({}, tail={})", self.name(*loop_), self.with(tail))
            }
            Inst::Unroll { loop_ } => write!(f, "unroll({})", self.name(*loop_)),
            Inst::Parallel { loop_ } => write!(f, "parallel({})", self.name(*loop_)),
            Inst::Tensorize { loop_, intrin } => write!(f, "tensorize({}, intrin={})", self.name(*loop_), q(intrin)),
            Inst::CacheRead { out, block, tensor, at, layout } => {
                let (out, block, at) = (self.name(*out), self.name(*block), self.name(*at));
                write!(f, "{out} = cache_read({block}, {}, at={at}", q(tensor))?;
                if let Some(l) = layout {
                    write!(f, ", layout={}", list(l))?;
                }
                f.write_str(")")
            }
            Inst::CacheWrite { out, block, at } => {
                write!(f, "{} = cache_write({}, at={})", self.name(*out), self.name(*block), self.name(*at))
            }
            Inst::ComputeAt { block, loop_ } => {
                write!(f, "compute_at({}, {})", self.name(*block), self.name(*loop_))
            }
            Inst::DecomposeReduction { out, block, loop_ } => {
                let (out, block, loop_) = (self.name(*out), self.name(*block), self.name(*loop_));
                write!(f, "{out} = decompose_reduction({block}, {loop_})")
            }
            Inst::Annotate { target, key, value } => {
                write!(f, "annotate({}, key={}, value={})", self.name(*target), q(key), self.with(value))
            }
            Inst::UseVectors { kind } => write!(f, "use_vectors({})", self.with(kind)),
            Inst::SamplePerfectTile { outs, loop_, n, max_innermost_factor, decision } => {
                write!(
                    f,
                    "{} = sample_perfect_tile({}, n={n}, max_innermost_factor={max_innermost_factor}",
                    self.join(outs),
                    self.name(*loop_)
                )?;
                if let Some(d) = decision {
                    write!(f, ", decision={}", list(d))?;
                }
                f.write_str(")")
            }
            Inst::SampleScalableTile { outs, loop_, n, max_innermost_vscale, decision } => {
                write!(
                    f,
                    "{} = sample_scalable_tile({}, n={n}, max_innermost_vscale={max_innermost_vscale}",
                    self.join(outs),
                    self.name(*loop_)
                )?;
                self.factors(f, decision.as_deref())
            }
            Inst::SampleMixedTile { outs, loop_, n, max_innermost_fixed, max_innermost_vscale, decision } => {
                write!(
                    f,
                    "{} = sample_mixed_tile({}, n={n}, max_innermost_fixed={max_innermost_fixed}, max_innermost_vscale={max_innermost_vscale}",
                    self.join(outs),
                    self.name(*loop_)
                )?;
                self.factors(f, decision.as_deref())
            }
            Inst::SampleCategorical { out, candidates, probs, decision } => {
                let ps = Commas(probs.iter().map(|p| Prob(*p)));
                let out = self.name(*out);
                write!(f, "{out} = sample_categorical(candidates={}, probs=[{ps}]", list(candidates))?;
                if let Some(d) = decision {
                    write!(f, ", decision={d}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl Named<'_, Inst> {
    /// The decision of a scalable or mixed tiling (if any) and the closing parenthesis.
    fn factors(&self, f: &mut fmt::Formatter<'_>, decision: Option<&[TExpr]>) -> fmt::Result {
        if let Some(d) = decision {
            write!(f, ", decision=[{}]", Commas(d.iter().map(|e| self.with(e))))?;
        }
        f.write_str(")")
    }
}

/// A split factor: an expression, or `None` for the one inferred.
struct FactorText<'a>(Option<Named<'a, TExpr>>);

impl fmt::Display for FactorText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(e) => write!(f, "{e}"),
            None => f.write_str("None"),
        }
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.insts {
            writeln!(f, "{}", i.named(&self.names))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Prob;
    use proptest::prelude::*;

    /// The definition: `Display`'s text, with `.0` added when it has no
    /// decimal point or exponent.
    fn reference(p: f64) -> String {
        let s = format!("{p}");
        if s.contains('.') || s.contains('e') {
            s
        } else {
            format!("{s}.0")
        }
    }

    #[test]
    fn probabilities_print_with_a_decimal_point() {
        for p in [0.0, -0.0, 1.0, 0.5, 0.1, 1e-300, 1e300, 3.0e15, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(Prob(p).to_string(), reference(p), "{p:?}");
        }
        assert_eq!(Prob(0.25).to_string(), "0.25");
        assert_eq!(Prob(1.0).to_string(), "1.0");
    }

    proptest! {
        #[test]
        fn any_probability_prints_as_the_definition_says(p in proptest::num::f64::ANY) {
            prop_assert_eq!(Prob(p).to_string(), reference(p));
        }
    }
}
