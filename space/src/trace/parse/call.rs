//! The syntax of one trace line: `outs = name(positional, key=value)`, with names not yet resolved.

use crate::text::{Cursor, SyntaxError, Tok};

/// An argument as written: a bare name, a string, a number, an integer
/// expression, a list or `None`.
#[derive(Clone, Debug)]
pub(super) enum Arg {
    Name(String),
    Str(String),
    Float(f64),
    Expr(SynExpr),
    List(Vec<(Arg, usize)>),
    None,
}

/// An integer expression as written (names not yet resolved).
#[derive(Clone, Debug)]
pub(super) enum SynExpr {
    Int(i64),
    VScale,
    Name(String),
    Add(Box<SynExpr>, Box<SynExpr>),
    Sub(Box<SynExpr>, Box<SynExpr>),
    Mul(Box<SynExpr>, Box<SynExpr>),
}

/// A string-valued argument as written: a literal or a name.
pub(super) enum StrArg {
    Lit(String),
    Name(String),
}

/// One instruction line: result names, instruction name, positional and
/// keyword arguments (with their byte offsets) and the offset of `)`.
pub(super) struct Call {
    pub(super) outs: Vec<String>,
    pub(super) name: String,
    pub(super) pos: Vec<(Arg, usize)>,
    pub(super) kw: Vec<(String, Arg, usize)>,
    pub(super) close: usize,
}

/// Parses one instruction line.
pub(super) fn parse_call(cur: &mut Cursor) -> Result<Call, SyntaxError> {
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
    cur.nest(parse_arg_here)
}

fn parse_arg_here(cur: &mut Cursor) -> Result<Arg, SyntaxError> {
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
            SynExpr::Name(n) => Ok(Arg::Name(n)),
            e => Ok(Arg::Expr(e)),
        },
    }
}

fn texpr(cur: &mut Cursor) -> Result<SynExpr, SyntaxError> {
    let mut lhs = tterm(cur)?;
    loop {
        if cur.eat("+") {
            lhs = SynExpr::Add(Box::new(lhs), Box::new(tterm(cur)?));
        } else if cur.eat("-") {
            lhs = SynExpr::Sub(Box::new(lhs), Box::new(tterm(cur)?));
        } else {
            return Ok(lhs);
        }
    }
}

fn tterm(cur: &mut Cursor) -> Result<SynExpr, SyntaxError> {
    let mut lhs = tprimary(cur)?;
    while cur.eat("*") {
        lhs = SynExpr::Mul(Box::new(lhs), Box::new(tprimary(cur)?));
    }
    Ok(lhs)
}

fn tprimary(cur: &mut Cursor) -> Result<SynExpr, SyntaxError> {
    cur.nest(tprimary_here)
}

fn tprimary_here(cur: &mut Cursor) -> Result<SynExpr, SyntaxError> {
    match cur.peek().tok.clone() {
        Tok::Int(v) => {
            cur.bump();
            Ok(SynExpr::Int(v))
        }
        Tok::Punct("-") => {
            cur.bump();
            match tprimary(cur)? {
                SynExpr::Int(v) => Ok(SynExpr::Int(-v)),
                e => Ok(SynExpr::Sub(Box::new(SynExpr::Int(0)), Box::new(e))),
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
            Ok(if n == "vscale" { SynExpr::VScale } else { SynExpr::Name(n) })
        }
        _ => Err(cur.error("expected a name, string, number, list or None")),
    }
}

/// A result of building an instruction: an error is a byte offset and a message.
pub(super) type BuildResult<T> = Result<T, (usize, String)>;

impl Call {
    pub(super) fn outs(&self, n: Option<usize>) -> BuildResult<()> {
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

    pub(super) fn npos(&self, n: usize) -> BuildResult<()> {
        if self.pos.len() != n {
            let off = self.pos.get(n).map(|p| p.1).unwrap_or(self.close);
            return Err((off, format!("`{}` takes {n} positional argument(s), found {}", self.name, self.pos.len())));
        }
        Ok(())
    }

    pub(super) fn name_at(&self, i: usize, what: &str) -> BuildResult<String> {
        match self.pos.get(i) {
            Some((Arg::Name(n), _)) => Ok(n.clone()),
            Some((_, off)) => Err((*off, format!("expected {what} name"))),
            None => Err((self.close, format!("missing {what}"))),
        }
    }

    pub(super) fn str_at(&self, i: usize, what: &str) -> BuildResult<String> {
        match self.pos.get(i) {
            Some((Arg::Str(s), _)) => Ok(s.clone()),
            Some((_, off)) => Err((*off, format!("expected {what} as a \"string\""))),
            None => Err((self.close, format!("missing {what}"))),
        }
    }

    pub(super) fn kw(&self, key: &str) -> Option<(&Arg, usize)> {
        self.kw.iter().find(|(k, _, _)| k == key).map(|(_, a, o)| (a, *o))
    }

    pub(super) fn only_kws(&self, allowed: &[&str]) -> BuildResult<()> {
        for (k, _, off) in &self.kw {
            if !allowed.contains(&k.as_str()) {
                return Err((*off, format!("`{}` has no argument `{k}`", self.name)));
            }
        }
        Ok(())
    }

    pub(super) fn kw_name(&self, key: &str) -> BuildResult<String> {
        match self.kw(key) {
            Some((Arg::Name(n), _)) => Ok(n.clone()),
            Some((_, off)) => Err((off, format!("`{key}` must be a loop name"))),
            None => Err((self.close, format!("`{}` needs `{key}=`", self.name))),
        }
    }

    pub(super) fn kw_str(&self, key: &str) -> BuildResult<Option<String>> {
        match self.kw(key) {
            Some((Arg::Str(s), _)) => Ok(Some(s.clone())),
            Some((_, off)) => Err((off, format!("`{key}` must be a \"string\""))),
            None => Ok(None),
        }
    }

    /// A string literal or a name, for keyword `key`.
    pub(super) fn kw_sarg(&self, key: &str) -> BuildResult<Option<StrArg>> {
        match self.kw(key) {
            Some((Arg::Str(s), _)) => Ok(Some(StrArg::Lit(s.clone()))),
            Some((Arg::Name(n), _)) => Ok(Some(StrArg::Name(n.clone()))),
            Some((_, off)) => Err((off, format!("`{key}` must be a \"string\" or a name"))),
            None => Ok(None),
        }
    }

    /// A non-negative integer keyword.
    pub(super) fn kw_int(&self, key: &str) -> BuildResult<Option<i64>> {
        match self.kw(key) {
            Some((Arg::Expr(SynExpr::Int(v)), _)) => Ok(Some(*v)),
            Some((_, off)) => Err((off, format!("`{key}` must be an integer"))),
            None => Ok(None),
        }
    }

    /// An optional integer keyword that must be at least `min`.
    pub(super) fn kw_int_at_least(&self, key: &str, min: i64) -> BuildResult<Option<i64>> {
        match (self.kw_int(key)?, self.kw(key)) {
            (Some(v), Some((_, off))) if v < min => Err((off, format!("`{key}` must be at least {min}, not {v}"))),
            (v, _) => Ok(v),
        }
    }

    /// A required integer keyword that must be at least `min`.
    pub(super) fn req_int_at_least(&self, key: &str, min: i64) -> BuildResult<i64> {
        self.kw_int_at_least(key, min)?.ok_or((self.close, format!("`{}` needs `{key}=`", self.name)))
    }

    /// An optional list keyword, each item converted by `f`.
    pub(super) fn kw_list<T>(
        &self,
        key: &str,
        f: &dyn Fn(&Arg, usize) -> BuildResult<T>,
    ) -> BuildResult<Option<Vec<T>>> {
        match self.kw(key) {
            Some((Arg::List(items), _)) => {
                Ok(Some(items.iter().map(|(a, o)| f(a, *o)).collect::<BuildResult<Vec<T>>>()?))
            }
            Some((_, off)) => Err((off, format!("`{key}` must be a list"))),
            None => Ok(None),
        }
    }

    pub(super) fn names(&self) -> BuildResult<Vec<String>> {
        (0..self.pos.len()).map(|i| self.name_at(i, "a loop")).collect()
    }
}
