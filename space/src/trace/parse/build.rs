//! Building an instruction from a parsed line: argument checks, names resolved to typed random variables.

use super::call::{Arg, BuildResult, Call, StrArg, SynExpr};
use super::scope::Scope;
use crate::ir::Tail;
use crate::schedule::{check_annotation, check_annotation_key};
use crate::trace::{Cand, Choice, Inst, SArg, TraceError, TraceErrorKind};

/// Builds the instruction a line calls, resolving its names in `sc`
/// (arguments first, then the results it defines).
pub(super) fn build(c: &Call, sc: &mut Scope) -> BuildResult<Inst> {
    let out1 = || c.outs.first().cloned().unwrap_or_default();
    Ok(match c.name.as_str() {
        "get_block" => {
            c.outs(Some(1))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let name = c.str_at(0, "a block name")?;
            Inst::GetBlock { out: sc.def_block(&out1()), name }
        }
        "get_loops" => {
            c.outs(None)?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let block = sc.block(&c.name_at(0, "a block")?);
            Inst::GetLoops { outs: sc.def_loops(&c.outs), block }
        }
        "split" => {
            c.outs(None)?;
            c.npos(1)?;
            c.only_kws(&["factors"])?;
            let factors = match c.kw("factors") {
                Some((Arg::List(items), _)) => items
                    .iter()
                    .map(|(a, off)| match a {
                        Arg::None => Ok(None),
                        Arg::Expr(e) => Ok(Some(e.clone())),
                        Arg::Name(n) => Ok(Some(SynExpr::Name(n.clone()))),
                        _ => Err((*off, "a factor must be an integer expression or None".to_string())),
                    })
                    .collect::<BuildResult<Vec<_>>>()?,
                Some((_, off)) => return Err((off, "`factors` must be a list".into())),
                None => return Err((c.close, "`split` needs `factors=[...]`".into())),
            };
            if factors.len() != c.outs.len() {
                return Err((0, format!("`split` with {} factors produces {} loops, {} named", factors.len(), factors.len(), c.outs.len())));
            }
            let loop_ = sc.loop_(&c.name_at(0, "a loop")?);
            let factors = factors.iter().map(|f| f.as_ref().map(|e| sc.expr(e))).collect();
            Inst::Split { outs: sc.def_loops(&c.outs), loop_, factors }
        }
        "fuse" => {
            c.outs(Some(1))?;
            c.only_kws(&[])?;
            let loops = c.names()?.iter().map(|n| sc.loop_(n)).collect();
            Inst::Fuse { out: sc.def_loop(&out1()), loops }
        }
        "reorder" => {
            c.outs(Some(0))?;
            c.only_kws(&[])?;
            Inst::Reorder { loops: c.names()?.iter().map(|n| sc.loop_(n)).collect() }
        }
        "vectorize" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&["tail"])?;
            let tail = match c.kw_sarg("tail")? {
                None => Choice::Lit(Tail::Predicate),
                Some(StrArg::Lit(t)) => match Tail::parse(&t) {
                    Some(tail) => Choice::Lit(tail),
                    None => {
                        let off = c.kw("tail").map(|k| k.1).unwrap_or(0);
                        return Err((off, format!("unknown tail \"{t}\" (predicate, peel, scalar)")));
                    }
                },
                Some(StrArg::Name(n)) => Choice::Rv(sc.value(&n)),
            };
            Inst::Vectorize { loop_: sc.loop_(&c.name_at(0, "a loop")?), tail }
        }
        "unroll" | "parallel" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let loop_ = sc.loop_(&c.name_at(0, "a loop")?);
            if c.name == "unroll" {
                Inst::Unroll { loop_ }
            } else {
                Inst::Parallel { loop_ }
            }
        }
        "tensorize" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&["intrin"])?;
            let intrin = match c.kw_sarg("intrin")? {
                Some(StrArg::Lit(s)) => s,
                Some(StrArg::Name(_)) => {
                    let off = c.kw("intrin").map(|k| k.1).unwrap_or(0);
                    return Err((off, "`intrin` must be a string".into()));
                }
                None => return Err((c.close, "tensorize needs intrin=\"za_fmopa\"".into())),
            };
            Inst::Tensorize { loop_: sc.loop_(&c.name_at(0, "a loop")?), intrin }
        }
        "cache_read" => {
            c.outs(Some(1))?;
            c.npos(2)?;
            c.only_kws(&["at", "layout"])?;
            let layout = match c.kw("layout") {
                None => None,
                Some((Arg::List(items), _)) => Some(
                    items
                        .iter()
                        .map(|(a, off)| match a {
                            Arg::Expr(SynExpr::Int(v)) if *v >= 0 => Ok(*v as usize),
                            _ => Err((*off, "layout entries must be dimension numbers".to_string())),
                        })
                        .collect::<BuildResult<Vec<_>>>()?,
                ),
                Some((_, off)) => return Err((off, "`layout` must be a list".into())),
            };
            let block = c.name_at(0, "a block")?;
            let tensor = c.str_at(1, "a tensor name")?;
            let at = c.kw_name("at")?;
            let (block, at) = (sc.block(&block), sc.loop_(&at));
            Inst::CacheRead { out: sc.def_block(&out1()), block, tensor, at, layout }
        }
        "cache_write" => {
            c.outs(Some(1))?;
            c.npos(1)?;
            c.only_kws(&["at"])?;
            let block = c.name_at(0, "a block")?;
            let at = c.kw_name("at")?;
            let (block, at) = (sc.block(&block), sc.loop_(&at));
            Inst::CacheWrite { out: sc.def_block(&out1()), block, at }
        }
        "compute_at" => {
            c.outs(Some(0))?;
            c.npos(2)?;
            c.only_kws(&[])?;
            let block = c.name_at(0, "a block")?;
            let loop_ = c.name_at(1, "a loop")?;
            Inst::ComputeAt { block: sc.block(&block), loop_: sc.loop_(&loop_) }
        }
        "decompose_reduction" => {
            c.outs(Some(1))?;
            c.npos(2)?;
            c.only_kws(&[])?;
            let block = c.name_at(0, "a block")?;
            let loop_ = c.name_at(1, "a loop")?;
            let (block, loop_) = (sc.block(&block), sc.loop_(&loop_));
            Inst::DecomposeReduction { out: sc.def_block(&out1()), block, loop_ }
        }
        "annotate" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&["key", "value"])?;
            let key = c.kw_str("key")?.ok_or((c.close, "`annotate` needs `key=\"...\"`".to_string()))?;
            let at = |k: &str| c.kw(k).map_or(c.close, |a| a.1);
            check_annotation_key(&key).map_err(|e| (at("key"), e.to_string()))?;
            // An integer literal is the string of its digits (printed as `"16"`).
            let value = match c.kw("value") {
                Some((Arg::Expr(SynExpr::Int(v)), _)) => StrArg::Lit(v.to_string()),
                Some((Arg::Str(_) | Arg::Name(_), _)) | None => c
                    .kw_sarg("value")?
                    .ok_or((c.close, "`annotate` needs `value=\"...\"` or `value=N`".to_string()))?,
                Some((_, off)) => return Err((off, "`value` must be a \"string\", an integer or a name".into())),
            };
            if let StrArg::Lit(v) = &value {
                check_annotation(&key, v).map_err(|e| (at("value"), e.to_string()))?;
            }
            let target = sc.target(&c.name_at(0, "a loop or block")?);
            let value = match value {
                StrArg::Lit(s) => SArg::Lit(s),
                StrArg::Name(n) => SArg::Rv(sc.value(&n)),
            };
            Inst::Annotate { target, key, value }
        }
        "use_vectors" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let kind = match &c.pos[0] {
                (Arg::Str(s), off) => Choice::Lit(s.parse().map_err(|e: crate::kind::UnknownKind| (*off, e.to_string()))?),
                (Arg::Name(n), _) => Choice::Rv(sc.value(n)),
                (_, off) => return Err((*off, "expected a vector kind as a \"string\" or a name".into())),
            };
            Inst::UseVectors { kind }
        }
        "sample_perfect_tile" => {
            c.outs(None)?;
            c.npos(1)?;
            c.only_kws(&["n", "max_innermost_factor", "decision"])?;
            let n = c.req_int_at_least("n", 1)? as usize;
            let int_item = |a: &Arg, off: usize| match a {
                Arg::Expr(SynExpr::Int(v)) => Ok(*v),
                _ => Err((off, "decision entries must be integers".to_string())),
            };
            let decision = c.kw_list("decision", &int_item)?;
            check_arity(c, n, decision.as_ref().map(|d| d.len()), n)?;
            let loop_ = c.name_at(0, "a loop")?;
            let max_innermost_factor = c.req_int_at_least("max_innermost_factor", 1)?;
            let loop_ = sc.loop_(&loop_);
            Inst::SamplePerfectTile { outs: sc.def_values(&c.outs), loop_, n, max_innermost_factor, decision }
        }
        "sample_scalable_tile" | "sample_mixed_tile" => {
            c.outs(None)?;
            c.npos(1)?;
            let mixed = c.name == "sample_mixed_tile";
            if mixed {
                c.only_kws(&["n", "max_innermost_fixed", "max_innermost_vscale", "decision"])?;
            } else {
                c.only_kws(&["n", "max_innermost_vscale", "decision"])?;
            }
            let n = c.req_int_at_least("n", 1)? as usize;
            let factor_item = |a: &Arg, off: usize| match a {
                Arg::Expr(e) => Ok(e.clone()),
                _ => Err((off, "decision entries must be integer expressions like 4 or 8*vscale".to_string())),
            };
            let decision = c.kw_list("decision", &factor_item)?;
            check_arity(c, n, decision.as_ref().map(|d| d.len()), n.saturating_sub(1))?;
            let loop_ = c.name_at(0, "a loop")?;
            let max_innermost_vscale = c.req_int_at_least("max_innermost_vscale", 0)?;
            let max_innermost_fixed = if mixed { c.req_int_at_least("max_innermost_fixed", 0)? } else { 0 };
            let loop_ = sc.loop_(&loop_);
            let decision = decision.map(|d| d.iter().map(|e| sc.expr(e)).collect());
            let outs = sc.def_values(&c.outs);
            if mixed {
                Inst::SampleMixedTile { outs, loop_, n, max_innermost_fixed, max_innermost_vscale, decision }
            } else {
                Inst::SampleScalableTile { outs, loop_, n, max_innermost_vscale, decision }
            }
        }
        "sample_categorical" => {
            c.outs(Some(1))?;
            c.npos(0)?;
            c.only_kws(&["candidates", "probs", "decision"])?;
            let cand_item = |a: &Arg, off: usize| match a {
                Arg::Expr(SynExpr::Int(v)) => Ok(Cand::Int(*v)),
                Arg::Str(s) => Cand::from_name(s).ok_or_else(|| {
                    (off, format!("unknown candidate \"{s}\" (a tail strategy, a vector kind, or an integer)"))
                }),
                _ => Err((off, "candidates must be integers, tail strategies or vector kinds".to_string())),
            };
            let prob_item = |a: &Arg, off: usize| match a {
                Arg::Float(v) => Ok(*v),
                Arg::Expr(SynExpr::Int(v)) => Ok(*v as f64),
                _ => Err((off, "probabilities must be numbers".to_string())),
            };
            let candidates = c.kw_list("candidates", &cand_item)?.ok_or((c.close, "`sample_categorical` needs `candidates=[...]`".to_string()))?;
            let probs = c.kw_list("probs", &prob_item)?.ok_or((c.close, "`sample_categorical` needs `probs=[...]`".to_string()))?;
            if candidates.is_empty() || probs.len() != candidates.len() {
                return Err((c.close, format!("{} candidates but {} probabilities", candidates.len(), probs.len())));
            }
            let decision = c.kw_int_at_least("decision", 0)?.map(|d| d as usize);
            Inst::SampleCategorical { out: sc.def_value(&out1()), candidates, probs, decision }
        }
        other => {
            return Err((
                0,
                format!("unknown instruction `{other}` (get_block, get_loops, split, fuse, reorder, vectorize, unroll, parallel, cache_read, cache_write, compute_at, decompose_reduction, annotate, tensorize, use_vectors, sample_perfect_tile, sample_scalable_tile, sample_mixed_tile, sample_categorical)"),
            ))
        }
    })
}

/// A tiling instruction names `n` results and, once decided, `want` decision entries.
fn check_arity(c: &Call, n: usize, got: Option<usize>, want: usize) -> BuildResult<()> {
    if n < 2 {
        return Err((c.close, format!("`{}` needs n >= 2", c.name)));
    }
    if c.outs.len() != n {
        return Err((0, format!("`{}` with n={n} produces {n} factors, {} named", c.name, c.outs.len())));
    }
    if let Some(g) = got {
        if g != want {
            return Err((c.close, format!("`{}` with n={n} needs {want} decision entries, found {g}", c.name)));
        }
    }
    Ok(())
}

impl TraceError {
    /// A syntax error at a line and column of trace text.
    pub(crate) fn syntax(line: usize, col: usize, text: &str, message: String) -> TraceError {
        TraceError {
            line: Some(line),
            col: Some(col),
            inst: Some(text.to_string()),
            message,
            kind: TraceErrorKind::Syntax,
        }
    }
}
