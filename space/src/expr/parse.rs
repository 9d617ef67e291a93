//! Parser for index expressions in the text forms.

use super::Expr;
use crate::ids::TensorId;
use crate::text::{Cursor, SyntaxError, Tok};

/// Resolves names met while parsing an index expression.
pub trait NameResolver {
    /// The expression a plain name stands for (a variable, a parameter value, ...).
    fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError>;
    /// The integer tensor a name followed by `[` refers to.
    fn tensor(&mut self, name: &str, offset: usize) -> Result<TensorId, SyntaxError> {
        Err(SyntaxError::new(offset, format!("`{name}` is not an integer tensor")))
    }
}

/// Parses `a + b*c - floordiv(d, 4*vscale) ...`. `/` means floordiv and `%` floormod.
pub fn parse_expr(cur: &mut Cursor, names: &mut dyn NameResolver) -> Result<Expr, SyntaxError> {
    let mut lhs = parse_term(cur, names)?;
    loop {
        if cur.eat("+") {
            lhs = lhs + parse_term(cur, names)?;
        } else if cur.eat("-") {
            lhs = lhs - parse_term(cur, names)?;
        } else {
            return Ok(lhs);
        }
    }
}

fn parse_term(cur: &mut Cursor, names: &mut dyn NameResolver) -> Result<Expr, SyntaxError> {
    let mut lhs = parse_unary(cur, names)?;
    loop {
        if cur.eat("*") {
            lhs = lhs * parse_unary(cur, names)?;
        } else if cur.eat("/") {
            lhs = lhs.floordiv(parse_unary(cur, names)?);
        } else if cur.eat("%") {
            lhs = lhs.floormod(parse_unary(cur, names)?);
        } else {
            return Ok(lhs);
        }
    }
}

fn parse_unary(cur: &mut Cursor, names: &mut dyn NameResolver) -> Result<Expr, SyntaxError> {
    cur.nest(|cur| {
        if cur.eat("-") {
            return Ok(match parse_unary(cur, names)? {
                Expr::Int(v) => Expr::Int(-v),
                e => Expr::Int(0) - e,
            });
        }
        parse_primary(cur, names)
    })
}

fn parse_primary(cur: &mut Cursor, names: &mut dyn NameResolver) -> Result<Expr, SyntaxError> {
    let off = cur.offset();
    match cur.peek().tok.clone() {
        Tok::Int(v) => {
            cur.bump();
            Ok(Expr::Int(v))
        }
        Tok::Punct("(") => {
            cur.bump();
            let e = parse_expr(cur, names)?;
            cur.expect(")", "to close `(`")?;
            Ok(e)
        }
        Tok::Ident(name) => {
            cur.bump();
            let func = matches!(name.as_str(), "floordiv" | "floormod" | "ceildiv" | "min" | "max");
            if func && cur.at("(") {
                cur.bump();
                let a = parse_expr(cur, names)?;
                cur.expect(",", &format!("between the arguments of {name}"))?;
                let b = parse_expr(cur, names)?;
                cur.expect(")", &format!("after the arguments of {name}"))?;
                return Ok(match name.as_str() {
                    "floordiv" => a.floordiv(b),
                    "floormod" => a.floormod(b),
                    "ceildiv" => a.ceildiv(b),
                    "min" => a.min(b),
                    _ => a.max(b),
                });
            }
            if name == "vscale" {
                return Ok(Expr::VScale);
            }
            if cur.at("[") {
                let t = names.tensor(&name, off)?;
                cur.bump();
                let mut idx = Vec::new();
                loop {
                    idx.push(parse_expr(cur, names)?);
                    if cur.eat("]") {
                        break;
                    }
                    cur.expect(",", "or `]` in a tensor index")?;
                }
                return Ok(Expr::Load(t, idx));
            }
            names.name(&name, off)
        }
        _ => Err(cur.error("expected an integer expression")),
    }
}
