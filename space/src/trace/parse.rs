//! Parser for the text form of traces.

use super::apply::{TraceError, TraceErrorKind};
use super::{Cand, Choice, Inst, SArg, TExpr, Trace};
use crate::ir::Tail;
use crate::text::{lex, Cursor, SyntaxError, Tok};

#[derive(Clone, Debug)]
enum Arg {
    Name(String),
    Str(String),
    Float(f64),
    Expr(TExpr),
    List(Vec<(Arg, usize)>),
    None,
}

struct Call {
    outs: Vec<String>,
    name: String,
    pos: Vec<(Arg, usize)>,
    kw: Vec<(String, Arg, usize)>,
    close: usize,
}

/// Parses trace text (one instruction per line; `#` comments and blank lines allowed).
pub fn parse_trace(text: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        let syn = |e: SyntaxError| TraceError::syntax(no, e.offset + 1, line.trim(), e.message);
        let toks = lex(line).map_err(syn)?;
        if toks.len() == 1 {
            continue;
        }
        let mut cur = Cursor::new(toks);
        let call = parse_call(&mut cur).map_err(syn)?;
        let inst = build(&call).map_err(|(off, m)| TraceError::syntax(no, off + 1, line.trim(), m))?;
        trace.insts.push(inst);
        trace.lines.push(no);
    }
    super::check::check_kinds(&trace.insts, &trace.lines)?;
    Ok(trace)
}

fn parse_call(cur: &mut Cursor) -> Result<Call, SyntaxError> {
    let mut outs = Vec::new();
    let (first, _) = cur.ident("an instruction")?;
    let name = if cur.at(",") || cur.at("=") {
        outs.push(first);
        while cur.eat(",") {
            if cur.at("=") {
                break;
            }
            outs.push(cur.ident("a result name")?.0);
        }
        cur.expect("=", "after the result names")?;
        cur.ident("an instruction name")?.0
    } else {
        first
    };
    cur.expect("(", &format!("after `{name}`"))?;
    let mut pos = Vec::new();
    let mut kw = Vec::new();
    if !cur.at(")") {
        loop {
            let off = cur.offset();
            let is_kw = matches!(cur.peek().tok, Tok::Ident(_)) && cur.peek2().tok == Tok::Punct("=");
            if is_kw {
                let (k, _) = cur.ident("a keyword")?;
                cur.bump();
                let voff = cur.offset();
                kw.push((k, parse_arg(cur)?, voff));
            } else {
                if !kw.is_empty() {
                    return Err(SyntaxError::new(off, "positional argument after a keyword argument"));
                }
                pos.push((parse_arg(cur)?, off));
            }
            if cur.at(")") {
                break;
            }
            cur.expect(",", "or `)` between arguments")?;
        }
    }
    let close = cur.offset();
    cur.expect(")", "to close the argument list")?;
    cur.expect_eof("instruction")?;
    Ok(Call { outs, name, pos, kw, close })
}

fn parse_arg(cur: &mut Cursor) -> Result<Arg, SyntaxError> {
    match cur.peek().tok.clone() {
        Tok::Str(s) => {
            cur.bump();
            Ok(Arg::Str(s))
        }
        Tok::Punct("[") => {
            cur.bump();
            let mut items = Vec::new();
            if !cur.at("]") {
                loop {
                    let off = cur.offset();
                    items.push((parse_arg(cur)?, off));
                    if cur.at("]") {
                        break;
                    }
                    cur.expect(",", "or `]` in a list")?;
                }
            }
            cur.expect("]", "to close the list")?;
            Ok(Arg::List(items))
        }
        Tok::Ident(n) if n == "None" => {
            cur.bump();
            Ok(Arg::None)
        }
        Tok::Float(v) => {
            cur.bump();
            Ok(Arg::Float(v))
        }
        _ => match texpr(cur)? {
            TExpr::Rv(n) => Ok(Arg::Name(n)),
            e => Ok(Arg::Expr(e)),
        },
    }
}

fn texpr(cur: &mut Cursor) -> Result<TExpr, SyntaxError> {
    let mut lhs = tterm(cur)?;
    loop {
        if cur.eat("+") {
            lhs = TExpr::Add(Box::new(lhs), Box::new(tterm(cur)?));
        } else if cur.eat("-") {
            lhs = TExpr::Sub(Box::new(lhs), Box::new(tterm(cur)?));
        } else {
            return Ok(lhs);
        }
    }
}

fn tterm(cur: &mut Cursor) -> Result<TExpr, SyntaxError> {
    let mut lhs = tprimary(cur)?;
    while cur.eat("*") {
        lhs = TExpr::Mul(Box::new(lhs), Box::new(tprimary(cur)?));
    }
    Ok(lhs)
}

fn tprimary(cur: &mut Cursor) -> Result<TExpr, SyntaxError> {
    match cur.peek().tok.clone() {
        Tok::Int(v) => {
            cur.bump();
            Ok(TExpr::Int(v))
        }
        Tok::Punct("-") => {
            cur.bump();
            match tprimary(cur)? {
                TExpr::Int(v) => Ok(TExpr::Int(-v)),
                e => Ok(TExpr::Sub(Box::new(TExpr::Int(0)), Box::new(e))),
            }
        }
        Tok::Punct("(") => {
            cur.bump();
            let e = texpr(cur)?;
            cur.expect(")", "to close `(`")?;
            Ok(e)
        }
        Tok::Ident(n) => {
            cur.bump();
            Ok(if n == "vscale" { TExpr::VScale } else { TExpr::Rv(n) })
        }
        _ => Err(cur.error("expected a name, string, number, list or None")),
    }
}

type BuildResult<T> = Result<T, (usize, String)>;

impl Call {
    fn outs(&self, n: Option<usize>) -> BuildResult<()> {
        match n {
            Some(0) if !self.outs.is_empty() => Err((0, format!("`{}` has no results to assign", self.name))),
            Some(k) if k > 0 && self.outs.len() != k => {
                Err((0, format!("`{}` produces {k} result(s), {} named", self.name, self.outs.len())))
            }
            None if self.outs.is_empty() => {
                Err((0, format!("`{}` needs result names (`a, b = {}(...)`)", self.name, self.name)))
            }
            _ => Ok(()),
        }
    }

    fn npos(&self, n: usize) -> BuildResult<()> {
        if self.pos.len() != n {
            let off = self.pos.get(n).map(|p| p.1).unwrap_or(self.close);
            return Err((off, format!("`{}` takes {n} positional argument(s), found {}", self.name, self.pos.len())));
        }
        Ok(())
    }

    fn name_at(&self, i: usize, what: &str) -> BuildResult<String> {
        match self.pos.get(i) {
            Some((Arg::Name(n), _)) => Ok(n.clone()),
            Some((_, off)) => Err((*off, format!("expected {what} name"))),
            None => Err((self.close, format!("missing {what}"))),
        }
    }

    fn str_at(&self, i: usize, what: &str) -> BuildResult<String> {
        match self.pos.get(i) {
            Some((Arg::Str(s), _)) => Ok(s.clone()),
            Some((_, off)) => Err((*off, format!("expected {what} as a \"string\""))),
            None => Err((self.close, format!("missing {what}"))),
        }
    }

    fn kw(&self, key: &str) -> Option<(&Arg, usize)> {
        self.kw.iter().find(|(k, _, _)| k == key).map(|(_, a, o)| (a, *o))
    }

    fn only_kws(&self, allowed: &[&str]) -> BuildResult<()> {
        for (k, _, off) in &self.kw {
            if !allowed.contains(&k.as_str()) {
                return Err((*off, format!("`{}` has no argument `{k}`", self.name)));
            }
        }
        Ok(())
    }

    fn kw_name(&self, key: &str) -> BuildResult<String> {
        match self.kw(key) {
            Some((Arg::Name(n), _)) => Ok(n.clone()),
            Some((_, off)) => Err((off, format!("`{key}` must be a loop name"))),
            None => Err((self.close, format!("`{}` needs `{key}=`", self.name))),
        }
    }

    fn kw_str(&self, key: &str) -> BuildResult<Option<String>> {
        match self.kw(key) {
            Some((Arg::Str(s), _)) => Ok(Some(s.clone())),
            Some((_, off)) => Err((off, format!("`{key}` must be a \"string\""))),
            None => Ok(None),
        }
    }

    /// A string literal or a name, for keyword `key` (or `default`).
    fn kw_sarg(&self, key: &str) -> BuildResult<Option<SArg>> {
        match self.kw(key) {
            Some((Arg::Str(s), _)) => Ok(Some(SArg::Lit(s.clone()))),
            Some((Arg::Name(n), _)) => Ok(Some(SArg::Rv(n.clone()))),
            Some((_, off)) => Err((off, format!("`{key}` must be a \"string\" or a name"))),
            None => Ok(None),
        }
    }

    /// A non-negative integer keyword.
    fn kw_int(&self, key: &str) -> BuildResult<Option<i64>> {
        match self.kw(key) {
            Some((Arg::Expr(TExpr::Int(v)), _)) => Ok(Some(*v)),
            Some((_, off)) => Err((off, format!("`{key}` must be an integer"))),
            None => Ok(None),
        }
    }

    fn req_int(&self, key: &str) -> BuildResult<i64> {
        self.kw_int(key)?.ok_or((self.close, format!("`{}` needs `{key}=`", self.name)))
    }

    /// An optional list keyword, each item converted by `f`.
    fn kw_list<T>(&self, key: &str, f: &dyn Fn(&Arg, usize) -> BuildResult<T>) -> BuildResult<Option<Vec<T>>> {
        match self.kw(key) {
            Some((Arg::List(items), _)) => {
                Ok(Some(items.iter().map(|(a, o)| f(a, *o)).collect::<BuildResult<Vec<T>>>()?))
            }
            Some((_, off)) => Err((off, format!("`{key}` must be a list"))),
            None => Ok(None),
        }
    }

    fn names(&self) -> BuildResult<Vec<String>> {
        (0..self.pos.len()).map(|i| self.name_at(i, "a loop")).collect()
    }
}

fn build(c: &Call) -> BuildResult<Inst> {
    let out1 = || c.outs.first().cloned().unwrap_or_default();
    Ok(match c.name.as_str() {
        "get_block" => {
            c.outs(Some(1))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            Inst::GetBlock { out: out1(), name: c.str_at(0, "a block name")? }
        }
        "get_loops" => {
            c.outs(None)?;
            c.npos(1)?;
            c.only_kws(&[])?;
            Inst::GetLoops { outs: c.outs.clone(), block: c.name_at(0, "a block")? }
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
                        Arg::Name(n) => Ok(Some(TExpr::Rv(n.clone()))),
                        _ => Err((*off, "a factor must be an integer expression or None".to_string())),
                    })
                    .collect::<BuildResult<Vec<_>>>()?,
                Some((_, off)) => return Err((off, "`factors` must be a list".into())),
                None => return Err((c.close, "`split` needs `factors=[...]`".into())),
            };
            if factors.len() != c.outs.len() {
                return Err((0, format!("`split` with {} factors produces {} loops, {} named", factors.len(), factors.len(), c.outs.len())));
            }
            Inst::Split { outs: c.outs.clone(), loop_: c.name_at(0, "a loop")?, factors }
        }
        "fuse" => {
            c.outs(Some(1))?;
            c.only_kws(&[])?;
            Inst::Fuse { out: out1(), loops: c.names()? }
        }
        "reorder" => {
            c.outs(Some(0))?;
            c.only_kws(&[])?;
            Inst::Reorder { loops: c.names()? }
        }
        "vectorize" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&["tail"])?;
            let tail = match c.kw_sarg("tail")? {
                None => Choice::Lit(Tail::Predicate),
                Some(SArg::Lit(t)) => match Tail::parse(&t) {
                    Some(tail) => Choice::Lit(tail),
                    None => {
                        let off = c.kw("tail").map(|k| k.1).unwrap_or(0);
                        return Err((off, format!("unknown tail \"{t}\" (predicate, peel, scalar)")));
                    }
                },
                Some(SArg::Rv(n)) => Choice::Rv(n),
            };
            Inst::Vectorize { loop_: c.name_at(0, "a loop")?, tail }
        }
        "unroll" | "parallel" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let loop_ = c.name_at(0, "a loop")?;
            if c.name == "unroll" {
                Inst::Unroll { loop_ }
            } else {
                Inst::Parallel { loop_ }
            }
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
                            Arg::Expr(TExpr::Int(v)) if *v >= 0 => Ok(*v as usize),
                            _ => Err((*off, "layout entries must be dimension numbers".to_string())),
                        })
                        .collect::<BuildResult<Vec<_>>>()?,
                ),
                Some((_, off)) => return Err((off, "`layout` must be a list".into())),
            };
            Inst::CacheRead {
                out: out1(),
                block: c.name_at(0, "a block")?,
                tensor: c.str_at(1, "a tensor name")?,
                at: c.kw_name("at")?,
                layout,
            }
        }
        "cache_write" => {
            c.outs(Some(1))?;
            c.npos(1)?;
            c.only_kws(&["at"])?;
            Inst::CacheWrite { out: out1(), block: c.name_at(0, "a block")?, at: c.kw_name("at")? }
        }
        "compute_at" => {
            c.outs(Some(0))?;
            c.npos(2)?;
            c.only_kws(&[])?;
            Inst::ComputeAt { block: c.name_at(0, "a block")?, loop_: c.name_at(1, "a loop")? }
        }
        "decompose_reduction" => {
            c.outs(Some(1))?;
            c.npos(2)?;
            c.only_kws(&[])?;
            Inst::DecomposeReduction { out: out1(), block: c.name_at(0, "a block")?, loop_: c.name_at(1, "a loop")? }
        }
        "annotate" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&["key", "value"])?;
            let key = c.kw_str("key")?.ok_or((c.close, "`annotate` needs `key=\"...\"`".to_string()))?;
            let value = c.kw_sarg("value")?.ok_or((c.close, "`annotate` needs `value=\"...\"`".to_string()))?;
            Inst::Annotate { target: c.name_at(0, "a loop or block")?, key, value }
        }
        "use_vectors" => {
            c.outs(Some(0))?;
            c.npos(1)?;
            c.only_kws(&[])?;
            let kind = match &c.pos[0] {
                (Arg::Str(s), off) => Choice::Lit(s.parse().map_err(|e: crate::kind::UnknownKind| (*off, e.to_string()))?),
                (Arg::Name(n), _) => Choice::Rv(n.clone()),
                (_, off) => return Err((*off, "expected a vector kind as a \"string\" or a name".into())),
            };
            Inst::UseVectors { kind }
        }
        "sample_perfect_tile" => {
            c.outs(None)?;
            c.npos(1)?;
            c.only_kws(&["n", "max_innermost_factor", "decision"])?;
            let n = c.req_int("n")? as usize;
            let int_item = |a: &Arg, off: usize| match a {
                Arg::Expr(TExpr::Int(v)) => Ok(*v),
                _ => Err((off, "decision entries must be integers".to_string())),
            };
            let decision = c.kw_list("decision", &int_item)?;
            check_arity(c, n, decision.as_ref().map(|d| d.len()), n)?;
            Inst::SamplePerfectTile {
                outs: c.outs.clone(),
                loop_: c.name_at(0, "a loop")?,
                n,
                max_innermost_factor: c.req_int("max_innermost_factor")?,
                decision,
            }
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
            let n = c.req_int("n")? as usize;
            let factor_item = |a: &Arg, off: usize| match a {
                Arg::Expr(e) => Ok(e.clone()),
                _ => Err((off, "decision entries must be integer expressions like 4 or 8*vscale".to_string())),
            };
            let decision = c.kw_list("decision", &factor_item)?;
            check_arity(c, n, decision.as_ref().map(|d| d.len()), n.saturating_sub(1))?;
            let loop_ = c.name_at(0, "a loop")?;
            let max_innermost_vscale = c.req_int("max_innermost_vscale")?;
            if mixed {
                Inst::SampleMixedTile {
                    outs: c.outs.clone(),
                    loop_,
                    n,
                    max_innermost_fixed: c.req_int("max_innermost_fixed")?,
                    max_innermost_vscale,
                    decision,
                }
            } else {
                Inst::SampleScalableTile { outs: c.outs.clone(), loop_, n, max_innermost_vscale, decision }
            }
        }
        "sample_categorical" => {
            c.outs(Some(1))?;
            c.npos(0)?;
            c.only_kws(&["candidates", "probs", "decision"])?;
            let cand_item = |a: &Arg, off: usize| match a {
                Arg::Expr(TExpr::Int(v)) => Ok(Cand::Int(*v)),
                Arg::Str(s) => Cand::from_name(s).ok_or_else(|| {
                    (off, format!("unknown candidate \"{s}\" (a tail strategy, a vector kind, or an integer)"))
                }),
                _ => Err((off, "candidates must be integers, tail strategies or vector kinds".to_string())),
            };
            let prob_item = |a: &Arg, off: usize| match a {
                Arg::Float(v) => Ok(*v),
                Arg::Expr(TExpr::Int(v)) => Ok(*v as f64),
                _ => Err((off, "probabilities must be numbers".to_string())),
            };
            let candidates = c.kw_list("candidates", &cand_item)?.ok_or((c.close, "`sample_categorical` needs `candidates=[...]`".to_string()))?;
            let probs = c.kw_list("probs", &prob_item)?.ok_or((c.close, "`sample_categorical` needs `probs=[...]`".to_string()))?;
            if candidates.is_empty() || probs.len() != candidates.len() {
                return Err((c.close, format!("{} candidates but {} probabilities", candidates.len(), probs.len())));
            }
            let decision = c.kw_int("decision")?.map(|d| d as usize);
            Inst::SampleCategorical { out: out1(), candidates, probs, decision }
        }
        other => {
            return Err((
                0,
                format!("unknown instruction `{other}` (get_block, get_loops, split, fuse, reorder, vectorize, unroll, parallel, cache_read, cache_write, compute_at, decompose_reduction, annotate, use_vectors, sample_perfect_tile, sample_scalable_tile, sample_mixed_tile, sample_categorical)"),
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
