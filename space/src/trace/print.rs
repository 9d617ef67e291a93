//! Text form of traces.

use super::{Cand, Choice, Inst, SArg, TExpr, Trace};
use std::fmt;

impl fmt::Display for TExpr {
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
            if prec(e) < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match self {
            TExpr::Int(v) => write!(f, "{v}"),
            TExpr::VScale => f.write_str("vscale"),
            TExpr::Rv(n) => f.write_str(n),
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

fn q(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl fmt::Display for SArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SArg::Lit(s) => f.write_str(&q(s)),
            SArg::Rv(n) => f.write_str(n),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Choice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Lit(v) => f.write_str(&q(&v.to_string())),
            Choice::Rv(n) => f.write_str(n),
        }
    }
}

impl fmt::Display for Cand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cand::Int(v) => write!(f, "{v}"),
            Cand::Tail(t) => f.write_str(&q(t.name())),
            Cand::Kind(k) => f.write_str(&q(&k.to_string())),
        }
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    let v: Vec<String> = items.iter().map(|x| x.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// A probability with enough digits to read back exactly.
fn prob(p: f64) -> String {
    let s = format!("{p}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inst::GetBlock { out, name } => write!(f, "{out} = get_block({})", q(name)),
            Inst::GetLoops { outs, block } => write!(f, "{} = get_loops({block})", outs.join(", ")),
            Inst::Split { outs, loop_, factors } => {
                let fs: Vec<String> = factors
                    .iter()
                    .map(|x| x.as_ref().map(|e| e.to_string()).unwrap_or_else(|| "None".into()))
                    .collect();
                write!(f, "{} = split({loop_}, factors=[{}])", outs.join(", "), fs.join(", "))
            }
            Inst::Fuse { out, loops } => write!(f, "{out} = fuse({})", loops.join(", ")),
            Inst::Reorder { loops } => write!(f, "reorder({})", loops.join(", ")),
            Inst::Vectorize { loop_, tail } => write!(f, "vectorize({loop_}, tail={tail})"),
            Inst::Unroll { loop_ } => write!(f, "unroll({loop_})"),
            Inst::Parallel { loop_ } => write!(f, "parallel({loop_})"),
            Inst::CacheRead { out, block, tensor, at, layout } => {
                write!(f, "{out} = cache_read({block}, {}, at={at}", q(tensor))?;
                if let Some(l) = layout {
                    let ls: Vec<String> = l.iter().map(|x| x.to_string()).collect();
                    write!(f, ", layout=[{}]", ls.join(", "))?;
                }
                f.write_str(")")
            }
            Inst::CacheWrite { out, block, at } => write!(f, "{out} = cache_write({block}, at={at})"),
            Inst::ComputeAt { block, loop_ } => write!(f, "compute_at({block}, {loop_})"),
            Inst::DecomposeReduction { out, block, loop_ } => {
                write!(f, "{out} = decompose_reduction({block}, {loop_})")
            }
            Inst::Annotate { target, key, value } => write!(f, "annotate({target}, key={}, value={value})", q(key)),
            Inst::UseVectors { kind } => write!(f, "use_vectors({kind})"),
            Inst::SamplePerfectTile { outs, loop_, n, max_innermost_factor, decision } => {
                write!(
                    f,
                    "{} = sample_perfect_tile({loop_}, n={n}, max_innermost_factor={max_innermost_factor}",
                    outs.join(", ")
                )?;
                if let Some(d) = decision {
                    write!(f, ", decision={}", list(d))?;
                }
                f.write_str(")")
            }
            Inst::SampleScalableTile { outs, loop_, n, max_innermost_vscale, decision } => {
                write!(
                    f,
                    "{} = sample_scalable_tile({loop_}, n={n}, max_innermost_vscale={max_innermost_vscale}",
                    outs.join(", ")
                )?;
                if let Some(d) = decision {
                    write!(f, ", decision={}", list(d))?;
                }
                f.write_str(")")
            }
            Inst::SampleMixedTile { outs, loop_, n, max_innermost_fixed, max_innermost_vscale, decision } => {
                write!(
                    f,
                    "{} = sample_mixed_tile({loop_}, n={n}, max_innermost_fixed={max_innermost_fixed}, max_innermost_vscale={max_innermost_vscale}",
                    outs.join(", ")
                )?;
                if let Some(d) = decision {
                    write!(f, ", decision={}", list(d))?;
                }
                f.write_str(")")
            }
            Inst::SampleCategorical { out, candidates, probs, decision } => {
                let ps: Vec<String> = probs.iter().map(|p| prob(*p)).collect();
                write!(f, "{out} = sample_categorical(candidates={}, probs=[{}]", list(candidates), ps.join(", "))?;
                if let Some(d) = decision {
                    write!(f, ", decision={d}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.insts {
            writeln!(f, "{i}")?;
        }
        Ok(())
    }
}
