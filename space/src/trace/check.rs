//! The kinds of a trace's names: each result is a block, a loop, an integer or a sampled choice, and each argument must be the kind its instruction expects; checked when text is parsed.

use super::{Cand, Choice, Inst, SArg, TExpr, TraceError, TraceErrorKind};
use std::collections::HashMap;

/// What a name of a trace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Block,
    Loop,
    Int,
    Tail,
    Vectors,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Block => "a block",
            Kind::Loop => "a loop",
            Kind::Int => "an integer",
            Kind::Tail => "a tail strategy",
            Kind::Vectors => "a vector kind",
        }
    }
}

/// Names defined so far, and the instruction being checked.
struct Names<'a> {
    kinds: HashMap<&'a str, Kind>,
    inst: &'a Inst,
    line: Option<usize>,
}

impl<'a> Names<'a> {
    /// `name` must be one of `want` if it is defined by the trace (names
    /// defined elsewhere, or not at all, are left for replay to report).
    fn expect(&self, name: &str, want: &[Kind]) -> Result<(), TraceError> {
        match self.kinds.get(name) {
            Some(k) if !want.contains(k) => {
                let wanted: Vec<&str> = want.iter().map(|w| w.noun()).collect();
                Err(TraceError {
                    line: self.line,
                    col: None,
                    inst: Some(self.inst.to_string()),
                    message: format!("`{name}` is {}, not {}", k.noun(), wanted.join(" or ")),
                    kind: TraceErrorKind::WrongKind,
                })
            }
            _ => Ok(()),
        }
    }

    fn expr(&self, e: &TExpr) -> Result<(), TraceError> {
        match e {
            TExpr::Rv(n) => self.expect(n, &[Kind::Int]),
            TExpr::Add(a, b) | TExpr::Sub(a, b) | TExpr::Mul(a, b) => {
                self.expr(a)?;
                self.expr(b)
            }
            TExpr::Int(_) | TExpr::VScale => Ok(()),
        }
    }

    fn define(&mut self, names: impl IntoIterator<Item = &'a String>, kind: Kind) {
        for n in names {
            self.kinds.insert(n.as_str(), kind);
        }
    }
}

/// Checks that every argument names a result of the kind its instruction
/// expects (a loop where a block is needed is an error naming the line).
pub(super) fn check_kinds(insts: &[Inst], lines: &[usize]) -> Result<(), TraceError> {
    let mut names = Names { kinds: HashMap::new(), inst: &Inst::Reorder { loops: Vec::new() }, line: None };
    let loops = &[Kind::Loop];
    let blocks = &[Kind::Block];
    for (i, inst) in insts.iter().enumerate() {
        names.inst = inst;
        names.line = lines.get(i).copied();
        match inst {
            Inst::GetBlock { out, .. } => names.define([out], Kind::Block),
            Inst::GetLoops { outs, block } => {
                names.expect(block, blocks)?;
                names.define(outs, Kind::Loop);
            }
            Inst::Split { outs, loop_, factors } => {
                names.expect(loop_, loops)?;
                for f in factors.iter().flatten() {
                    names.expr(f)?;
                }
                names.define(outs, Kind::Loop);
            }
            Inst::Fuse { out, loops: ls } => {
                for l in ls {
                    names.expect(l, loops)?;
                }
                names.define([out], Kind::Loop);
            }
            Inst::Reorder { loops: ls } => {
                for l in ls {
                    names.expect(l, loops)?;
                }
            }
            Inst::Vectorize { loop_, tail } => {
                names.expect(loop_, loops)?;
                if let Choice::Rv(n) = tail {
                    names.expect(n, &[Kind::Tail])?;
                }
            }
            Inst::Unroll { loop_ } | Inst::Parallel { loop_ } => names.expect(loop_, loops)?,
            Inst::CacheRead { out, block, at, .. } | Inst::CacheWrite { out, block, at } => {
                names.expect(block, blocks)?;
                names.expect(at, loops)?;
                names.define([out], Kind::Block);
            }
            Inst::ComputeAt { block, loop_ } => {
                names.expect(block, blocks)?;
                names.expect(loop_, loops)?;
            }
            Inst::DecomposeReduction { out, block, loop_ } => {
                names.expect(block, blocks)?;
                names.expect(loop_, loops)?;
                names.define([out], Kind::Block);
            }
            Inst::Annotate { target, value, .. } => {
                names.expect(target, &[Kind::Loop, Kind::Block])?;
                if let SArg::Rv(n) = value {
                    names.expect(n, &[Kind::Int, Kind::Tail, Kind::Vectors])?;
                }
            }
            Inst::UseVectors { kind } => {
                if let Choice::Rv(n) = kind {
                    names.expect(n, &[Kind::Vectors])?;
                }
            }
            Inst::SamplePerfectTile { outs, loop_, .. }
            | Inst::SampleScalableTile { outs, loop_, .. }
            | Inst::SampleMixedTile { outs, loop_, .. } => {
                names.expect(loop_, loops)?;
                names.define(outs, Kind::Int);
            }
            Inst::SampleCategorical { out, candidates, .. } => {
                let kind_of = |c: &Cand| match c {
                    Cand::Tail(_) => Kind::Tail,
                    Cand::Kind(_) => Kind::Vectors,
                    Cand::Int(_) => Kind::Int,
                };
                let kind = candidates.first().map_or(Kind::Int, kind_of);
                if let Some(other) = candidates.iter().map(kind_of).find(|k| *k != kind) {
                    return Err(TraceError {
                        line: names.line,
                        col: None,
                        inst: Some(inst.to_string()),
                        message: format!("candidates mix {} and {}", kind.noun(), other.noun()),
                        kind: TraceErrorKind::WrongKind,
                    });
                }
                names.define([out], kind);
            }
        }
    }
    Ok(())
}
