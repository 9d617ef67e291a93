//! Parser for compute statements: `C[i, j] += A[i, k] * B[k, j]`.

use super::UpdateOp;
use crate::expr::{parse_expr, Expr, NameResolver};
use crate::ids::{TensorId, VarId};
use crate::text::{lex, Cursor, SyntaxError, Tok};
use crate::DType;

/// An untyped value expression with source offsets (relative to the statement text).
#[derive(Clone, Debug)]
pub(crate) enum Raw {
    Num(f64, usize),
    Scalar(usize, usize),
    Read(TensorId, Vec<Expr>, usize),
    Bin(super::BinOp, Box<Raw>, Box<Raw>, usize),
    Un(super::UnFn, Box<Raw>, usize),
    Cast(DType, Box<Raw>, usize),
}

impl Raw {
    pub fn offset(&self) -> usize {
        match self {
            Raw::Num(_, o) | Raw::Scalar(_, o) | Raw::Read(_, _, o) => *o,
            Raw::Bin(_, _, _, o) | Raw::Un(_, _, o) | Raw::Cast(_, _, o) => *o,
        }
    }
}

/// A parsed statement before typing.
#[derive(Clone, Debug)]
pub(crate) struct RawStmt {
    pub lhs_tensor: TensorId,
    pub lhs_indices: Vec<Expr>,
    pub lhs_offset: usize,
    pub op: UpdateOp,
    pub rhs: Raw,
    /// Axis names with the offset of their first occurrence; axis n is VarId(n).
    pub axes: Vec<(String, usize)>,
}

/// Names visible in a statement.
pub(crate) struct Scope<'a> {
    pub params: &'a [(String, i64)],
    pub tensors: &'a [(String, DType, bool)],
    pub scalars: &'a [(String, DType)],
    pub axes: Vec<(String, usize)>,
    /// When set, names resolve only to these variables (no new axes are created).
    pub known_vars: Option<&'a [(String, VarId)]>,
}

impl NameResolver for Scope<'_> {
    fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError> {
        if let Some(known) = self.known_vars {
            return known
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| Expr::Var(*v))
                .ok_or_else(|| SyntaxError::new(offset, format!("unknown variable `{name}`")));
        }
        if let Some((_, v)) = self.params.iter().find(|(n, _)| n == name) {
            return Ok(Expr::Int(*v));
        }
        if self.tensors.iter().any(|(n, _, _)| n == name) {
            return Err(SyntaxError::new(offset, format!("tensor `{name}` used as an index needs `[...]`")));
        }
        if self.scalars.iter().any(|(n, _)| n == name) {
            return Err(SyntaxError::new(offset, format!("scalar `{name}` cannot be used in an index")));
        }
        if DType::parse(name).is_some() || is_function(name) {
            return Err(SyntaxError::new(offset, format!("`{name}` cannot be used in an index")));
        }
        let pos = match self.axes.iter().position(|(n, _)| n == name) {
            Some(p) => p,
            None => {
                self.axes.push((name.to_string(), offset));
                self.axes.len() - 1
            }
        };
        Ok(Expr::Var(VarId(pos as u32)))
    }

    fn tensor(&mut self, name: &str, offset: usize) -> Result<TensorId, SyntaxError> {
        match self.tensors.iter().position(|(n, _, _)| n == name) {
            Some(i) if self.tensors[i].2 => Ok(TensorId(i as u32)),
            Some(_) => {
                Err(SyntaxError::new(offset, format!("tensor `{name}` is used as an index but has no integer `range`")))
            }
            None => Err(SyntaxError::new(offset, format!("unknown tensor `{name}`"))),
        }
    }
}

fn is_function(name: &str) -> bool {
    matches!(name, "exp" | "cos" | "sqrt" | "abs" | "neg" | "max" | "min")
}

/// Parses one statement.
pub(crate) fn parse_statement(text: &str, scope: &mut Scope) -> Result<RawStmt, SyntaxError> {
    let toks = lex(text)?;
    // A number beyond f64 reads as infinity; `inf` is how to write that.
    if let Some(t) = toks.iter().find(|t| matches!(t.tok, Tok::Float(v) if !v.is_finite())) {
        return Err(SyntaxError::new(
            t.start,
            format!(
                "number `{}` is not finite in f64 (largest finite value {:?})",
                text.get(t.start..t.end).unwrap_or_default(),
                f64::MAX
            ),
        ));
    }
    let mut cur = Cursor::new(toks);
    let lhs_offset = cur.offset();
    let (name, off) = cur.ident("a tensor name at the start of the statement")?;
    let lhs_tensor = scope.tensor_any(&name, off)?;
    cur.expect("[", &format!("after `{name}` (the left-hand side is an element `{name}[...]`)"))?;
    let lhs_indices = index_list(&mut cur, scope)?;
    let op = match &cur.peek().tok {
        Tok::Punct("=") => UpdateOp::Assign,
        Tok::Punct("+=") => UpdateOp::Add,
        Tok::Punct("max=") => UpdateOp::Max,
        Tok::Punct("min=") => UpdateOp::Min,
        _ => return Err(cur.error("expected `=`, `+=`, `max=` or `min=`")),
    };
    cur.bump();
    let rhs = value(&mut cur, scope)?;
    cur.expect_eof("statement")?;
    Ok(RawStmt { lhs_tensor, lhs_indices, lhs_offset, op, rhs, axes: scope.axes.clone() })
}

impl Scope<'_> {
    fn tensor_any(&self, name: &str, offset: usize) -> Result<TensorId, SyntaxError> {
        self.tensors
            .iter()
            .position(|(n, _, _)| n == name)
            .map(|i| TensorId(i as u32))
            .ok_or_else(|| SyntaxError::new(offset, format!("unknown tensor `{name}`")))
    }
}

fn index_list(cur: &mut Cursor, scope: &mut Scope) -> Result<Vec<Expr>, SyntaxError> {
    let mut idx = Vec::new();
    loop {
        idx.push(parse_expr(cur, scope)?);
        if cur.eat("]") {
            return Ok(idx);
        }
        cur.expect(",", "or `]` after an index")?;
    }
}

fn value(cur: &mut Cursor, scope: &mut Scope) -> Result<Raw, SyntaxError> {
    let mut lhs = term(cur, scope)?;
    loop {
        let off = cur.offset();
        let op = if cur.eat("+") {
            super::BinOp::Add
        } else if cur.eat("-") {
            super::BinOp::Sub
        } else {
            return Ok(lhs);
        };
        let rhs = term(cur, scope)?;
        lhs = Raw::Bin(op, Box::new(lhs), Box::new(rhs), off);
    }
}

fn term(cur: &mut Cursor, scope: &mut Scope) -> Result<Raw, SyntaxError> {
    let mut lhs = unary(cur, scope)?;
    loop {
        let off = cur.offset();
        let op = if cur.eat("*") {
            super::BinOp::Mul
        } else if cur.eat("/") {
            super::BinOp::Div
        } else {
            return Ok(lhs);
        };
        let rhs = unary(cur, scope)?;
        lhs = Raw::Bin(op, Box::new(lhs), Box::new(rhs), off);
    }
}

fn unary(cur: &mut Cursor, scope: &mut Scope) -> Result<Raw, SyntaxError> {
    cur.nest(|cur| {
        let off = cur.offset();
        if cur.eat("-") {
            return Ok(match unary(cur, scope)? {
                Raw::Num(v, _) => Raw::Num(-v, off),
                x => Raw::Un(super::UnFn::Neg, Box::new(x), off),
            });
        }
        primary(cur, scope)
    })
}

fn primary(cur: &mut Cursor, scope: &mut Scope) -> Result<Raw, SyntaxError> {
    let off = cur.offset();
    match cur.peek().tok.clone() {
        Tok::Int(v) => {
            cur.bump();
            Ok(Raw::Num(v as f64, off))
        }
        Tok::Float(v) => {
            cur.bump();
            Ok(Raw::Num(v, off))
        }
        Tok::Punct("(") => {
            cur.bump();
            let v = value(cur, scope)?;
            cur.expect(")", "to close `(`")?;
            Ok(v)
        }
        Tok::Ident(name) => {
            cur.bump();
            if cur.at("(") {
                return call(cur, scope, &name, off);
            }
            if cur.at("[") {
                let t = scope.tensor_any(&name, off)?;
                cur.bump();
                let idx = index_list(cur, scope)?;
                return Ok(Raw::Read(t, idx, off));
            }
            if let Some(i) = scope.scalars.iter().position(|(n, _)| *n == name) {
                return Ok(Raw::Scalar(i, off));
            }
            if let Some((_, v)) = scope.params.iter().find(|(n, _)| *n == name) {
                return Ok(Raw::Num(*v as f64, off));
            }
            if scope.tensors.iter().any(|(n, _, _)| *n == name) {
                return Err(SyntaxError::new(off, format!("tensor `{name}` needs an index `{name}[...]`")));
            }
            if name == "inf" {
                // Infinity, as the loop-nest text prints the neutral element
                // of `max=` (`-inf`) and `min=` (`inf`) reductions.
                return Ok(Raw::Num(f64::INFINITY, off));
            }
            Err(SyntaxError::new(off, format!("unknown name `{name}` (not a tensor, scalar or parameter)")))
        }
        _ => Err(cur.error("expected a value (number, tensor element, scalar or function call)")),
    }
}

fn call(cur: &mut Cursor, scope: &mut Scope, name: &str, off: usize) -> Result<Raw, SyntaxError> {
    cur.expect("(", "")?;
    let mut args = Vec::new();
    if !cur.at(")") {
        loop {
            args.push(value(cur, scope)?);
            if cur.at(")") {
                break;
            }
            cur.expect(",", "or `)` in the argument list")?;
        }
    }
    cur.expect(")", &format!("to close the call of `{name}`"))?;
    let arity = |n: usize| -> Result<(), SyntaxError> {
        if args.len() == n {
            Ok(())
        } else {
            Err(SyntaxError::new(off, format!("`{name}` takes {n} argument(s), found {}", args.len())))
        }
    };
    if let Some(d) = DType::parse(name) {
        arity(1)?;
        return Ok(Raw::Cast(d, Box::new(args.remove(0)), off));
    }
    let un = match name {
        "exp" => Some(super::UnFn::Exp),
        "cos" => Some(super::UnFn::Cos),
        "sqrt" => Some(super::UnFn::Sqrt),
        "abs" => Some(super::UnFn::Abs),
        "neg" => Some(super::UnFn::Neg),
        _ => None,
    };
    if let Some(u) = un {
        arity(1)?;
        return Ok(Raw::Un(u, Box::new(args.remove(0)), off));
    }
    let bin = match name {
        "max" => super::BinOp::Max,
        "min" => super::BinOp::Min,
        _ => {
            return Err(SyntaxError::new(
                off,
                format!("unknown function `{name}` (known: exp, cos, sqrt, abs, neg, max, min, and casts f32(...), i32(...), ...)"),
            ))
        }
    };
    arity(2)?;
    let b = args.pop().expect("arity checked");
    let a = args.pop().expect("arity checked");
    Ok(Raw::Bin(bin, Box::new(a), Box::new(b), off))
}
