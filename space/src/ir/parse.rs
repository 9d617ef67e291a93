//! Parser for the text form of loop nests.

use super::*;
use crate::expr::{parse_expr, simplify, NameResolver};
use crate::text::{lex, Cursor, SyntaxError, Tok};
use crate::workload::resolve::{typecheck, Dtypes};
use crate::workload::stmt::{parse_statement, Scope as StmtScope};
use crate::workload::WorkloadError;
use thiserror::Error;

/// A syntax or meaning error in a loop-nest text.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("line {line}, column {col}: {message}")]
pub struct NestParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

struct Vars<'a> {
    known: &'a [(String, VarId)],
}

impl NameResolver for Vars<'_> {
    fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError> {
        self.known
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Expr::Var(*v))
            .ok_or_else(|| SyntaxError::new(offset, format!("unknown variable `{name}`")))
    }
}

struct Line<'a> {
    no: usize,
    indent: usize,
    text: &'a str,
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
    nest: Nest,
}

/// Parses the text form printed by `Nest`'s `Display`.
pub fn parse_nest(text: &str) -> Result<Nest, NestParseError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let spaces = raw.len() - trimmed.len();
        if spaces % 2 != 0 || raw[..spaces].contains('\t') {
            return Err(NestParseError {
                line: i + 1,
                col: 1,
                message: "indentation must be a multiple of two spaces".into(),
            });
        }
        lines.push(Line { no: i + 1, indent: spaces / 2, text: trimmed.trim_end() });
    }
    let nest = Nest {
        name: String::new(),
        tensors: Vec::new(),
        scalars: Vec::new(),
        vars: Vec::new(),
        loops: Vec::new(),
        blocks: Vec::new(),
        root: Vec::new(),
        caps: VectorCaps::sve_any(),
        kinds: Vec::new(),
        transformed: false,
    };
    let mut p = Parser { lines, pos: 0, nest };
    p.header()?;
    let mut scope = Vec::new();
    let root = p.body(0, None, &mut scope)?;
    p.nest.root = root;
    if p.pos < p.lines.len() {
        let l = &p.lines[p.pos];
        return Err(NestParseError { line: l.no, col: 2 * l.indent + 1, message: "unexpected indentation".into() });
    }
    Ok(p.nest)
}

impl Parser<'_> {
    fn err(&self, line: &Line, offset: usize, message: impl Into<String>) -> NestParseError {
        NestParseError { line: line.no, col: 2 * line.indent + offset + 1, message: message.into() }
    }

    fn cursor(&self, line: &Line) -> Result<Cursor, NestParseError> {
        lex(line.text).map(Cursor::new).map_err(|e| self.err(line, e.offset, e.message))
    }

    fn syn(&self, line: &Line, e: SyntaxError) -> NestParseError {
        self.err(line, e.offset, e.message)
    }

    fn header(&mut self) -> Result<(), NestParseError> {
        while self.pos < self.lines.len() {
            let line = &self.lines[self.pos];
            let word = line.text.split_whitespace().next().unwrap_or("");
            if !matches!(word, "nest" | "caps" | "tensor" | "scalar") {
                break;
            }
            if line.indent != 0 {
                return Err(self.err(line, 0, "header lines must not be indented"));
            }
            let mut cur = self.cursor(line)?;
            cur.bump();
            match word {
                "nest" => {
                    let (n, _) = cur.ident("a nest name").map_err(|e| self.syn(line, e))?;
                    self.nest.name = n;
                }
                "caps" => self.nest.caps = self.caps(line, &mut cur)?,
                "tensor" => {
                    let t = self.tensor(line, &mut cur)?;
                    self.nest.tensors.push(t);
                }
                _ => {
                    let s = self.scalar(line, &mut cur)?;
                    self.nest.scalars.push(s);
                }
            }
            cur.expect_eof("line").map_err(|e| self.syn(line, e))?;
            self.pos += 1;
        }
        if self.nest.name.is_empty() {
            let l = self.lines.first().map(|l| l.no).unwrap_or(1);
            return Err(NestParseError { line: l, col: 1, message: "expected `nest NAME` first".into() });
        }
        Ok(())
    }

    fn int(&self, line: &Line, cur: &mut Cursor) -> Result<i64, NestParseError> {
        let neg = cur.eat("-");
        match cur.peek().tok {
            Tok::Int(v) => {
                cur.bump();
                Ok(if neg { -v } else { v })
            }
            _ => Err(self.syn(line, cur.error("expected an integer"))),
        }
    }

    fn caps(&self, line: &Line, cur: &mut Cursor) -> Result<VectorCaps, NestParseError> {
        let (kind, off) = cur.ident("`scalable` or `fixed`").map_err(|e| self.syn(line, e))?;
        let scalable = match kind.as_str() {
            "scalable" => true,
            "fixed" => false,
            _ => return Err(self.err(line, off, "expected `scalable` or `fixed`")),
        };
        self.keyword(line, cur, "granule")?;
        let granule = self.int(line, cur)? as u32;
        self.keyword(line, cur, "vscale")?;
        cur.expect("[", "before the vscale values").map_err(|e| self.syn(line, e))?;
        let mut values = Vec::new();
        loop {
            values.push(self.int(line, cur)? as u32);
            if cur.eat("]") {
                break;
            }
            cur.expect(",", "between vscale values").map_err(|e| self.syn(line, e))?;
        }
        let mut caps = VectorCaps {
            scalable,
            granule_bits: granule,
            vscale_values: values,
            has_sme: false,
            has_gather: false,
            half_vectors: true,
        };
        while let Tok::Ident(w) = cur.peek().tok.clone() {
            match w.as_str() {
                "gather" => caps.has_gather = true,
                "sme" => caps.has_sme = true,
                "no_f16_vectors" => caps.half_vectors = false,
                _ => return Err(self.syn(line, cur.error("expected `gather`, `sme`, `no_f16_vectors` or end of line"))),
            }
            cur.bump();
        }
        Ok(caps)
    }

    fn keyword(&self, line: &Line, cur: &mut Cursor, kw: &str) -> Result<(), NestParseError> {
        match &cur.peek().tok {
            Tok::Ident(w) if w == kw => {
                cur.bump();
                Ok(())
            }
            _ => Err(self.syn(line, cur.error(format!("expected `{kw}`")))),
        }
    }

    fn dtype(&self, line: &Line, cur: &mut Cursor) -> Result<DType, NestParseError> {
        let (d, off) = cur.ident("a dtype").map_err(|e| self.syn(line, e))?;
        DType::parse(&d).ok_or_else(|| self.err(line, off, format!("unknown dtype `{d}`")))
    }

    fn const_expr(&self, line: &Line, cur: &mut Cursor) -> Result<Expr, NestParseError> {
        let e = parse_expr(cur, &mut Vars { known: &[] }).map_err(|e| self.syn(line, e))?;
        Ok(simplify(&e, &self.nest))
    }

    fn tensor(&self, line: &Line, cur: &mut Cursor) -> Result<TensorInfo, NestParseError> {
        let (name, _) = cur.ident("a tensor name").map_err(|e| self.syn(line, e))?;
        cur.expect(":", "after the tensor name").map_err(|e| self.syn(line, e))?;
        let dtype = self.dtype(line, cur)?;
        cur.expect("[", "before the shape").map_err(|e| self.syn(line, e))?;
        let mut shape = Vec::new();
        loop {
            shape.push(self.const_expr(line, cur)?);
            if cur.eat("]") {
                break;
            }
            cur.expect(",", "between dimensions").map_err(|e| self.syn(line, e))?;
        }
        let (role_word, off) = cur.ident("a role").map_err(|e| self.syn(line, e))?;
        let (role, scope) = match role_word.as_str() {
            "input" => (Role::Input, Scope::Global),
            "output" => (Role::Output, Scope::Global),
            "temp" => (Role::Temp, Scope::Global),
            "local" => (Role::Temp, Scope::Local),
            _ => return Err(self.err(line, off, "expected input, output, temp or local")),
        };
        let mut range = None;
        if matches!(&cur.peek().tok, Tok::Ident(w) if w == "range") {
            cur.bump();
            cur.expect("[", "after `range`").map_err(|e| self.syn(line, e))?;
            let lo = self.int(line, cur)?;
            cur.expect(",", "in the range").map_err(|e| self.syn(line, e))?;
            let hi = self.int(line, cur)?;
            cur.expect("]", "after the range").map_err(|e| self.syn(line, e))?;
            range = Some((lo, hi));
        }
        Ok(TensorInfo { name, dtype, shape, role, scope, range })
    }

    fn scalar(&self, line: &Line, cur: &mut Cursor) -> Result<ScalarParam, NestParseError> {
        let (name, _) = cur.ident("a scalar name").map_err(|e| self.syn(line, e))?;
        cur.expect(":", "after the scalar name").map_err(|e| self.syn(line, e))?;
        let dtype = self.dtype(line, cur)?;
        cur.expect("=", "before the value").map_err(|e| self.syn(line, e))?;
        let neg = cur.eat("-");
        let v = match cur.bump().tok {
            Tok::Float(v) => v,
            Tok::Int(v) => v as f64,
            Tok::Ident(w) if w == "inf" => f64::INFINITY,
            Tok::Ident(w) if w == "NaN" => f64::NAN,
            _ => return Err(self.err(line, 0, "expected a number")),
        };
        Ok(ScalarParam { name, dtype, value: if neg { -v } else { v } })
    }

    fn body(
        &mut self,
        indent: usize,
        parent: Option<LoopId>,
        scope: &mut Vec<(String, VarId)>,
    ) -> Result<Vec<Node>, NestParseError> {
        let mut nodes = Vec::new();
        while self.pos < self.lines.len() && self.lines[self.pos].indent == indent {
            let line_no = self.pos;
            let (text, anns) = strip_annotations(self.lines[line_no].text);
            let line = Line { no: self.lines[line_no].no, indent, text: &text };
            let word = line.text.split_whitespace().next().unwrap_or("");
            self.pos += 1;
            match word {
                "for" => {
                    let mut cur = self.cursor(&line)?;
                    cur.bump();
                    let (name, _) = cur.ident("a loop variable").map_err(|e| self.syn(&line, e))?;
                    self.keyword(&line, &mut cur, "in")?;
                    let extent = self.const_expr(&line, &mut cur)?;
                    let kind = match cur.peek().tok.clone() {
                        Tok::Ident(w) if w == "unroll" => {
                            cur.bump();
                            LoopKind::Unroll
                        }
                        Tok::Ident(w) if w == "parallel" => {
                            cur.bump();
                            LoopKind::Parallel
                        }
                        Tok::Ident(w) if w == "vectorize" => {
                            cur.bump();
                            cur.expect("(", "after `vectorize`").map_err(|e| self.syn(&line, e))?;
                            let (t, off) = cur.ident("a tail strategy").map_err(|e| self.syn(&line, e))?;
                            let tail = Tail::parse(&t)
                                .ok_or_else(|| self.err(&line, off, format!("unknown tail strategy `{t}`")))?;
                            cur.expect(")", "after the tail strategy").map_err(|e| self.syn(&line, e))?;
                            LoopKind::Vectorize(tail)
                        }
                        _ => LoopKind::Serial,
                    };
                    cur.expect(":", "at the end of the loop header").map_err(|e| self.syn(&line, e))?;
                    cur.expect_eof("loop header").map_err(|e| self.syn(&line, e))?;
                    let var = self.nest.new_var(&name, extent);
                    let l = self.nest.add_loop(var, kind, Vec::new(), parent);
                    self.nest.loop_mut(l).annotations = anns;
                    scope.push((name, var));
                    let body = self.body(indent + 1, Some(l), scope)?;
                    scope.pop();
                    if body.is_empty() {
                        return Err(self.err(&line, 0, "loop has an empty body"));
                    }
                    self.nest.loop_mut(l).body = body;
                    nodes.push(Node::Loop(l));
                }
                "block" => {
                    let b = self.block(&line, parent, scope, anns)?;
                    nodes.push(Node::Block(b));
                }
                _ => return Err(self.err(&line, 0, "expected `for` or `block`")),
            }
        }
        Ok(nodes)
    }

    fn block(
        &mut self,
        line: &Line,
        parent: Option<LoopId>,
        scope: &[(String, VarId)],
        annotations: BTreeMap<String, String>,
    ) -> Result<BlockId, NestParseError> {
        let mut cur = self.cursor(line)?;
        cur.bump();
        let (name, _) = cur.ident("a block name").map_err(|e| self.syn(line, e))?;
        cur.expect("[", "before the block's iteration variables").map_err(|e| self.syn(line, e))?;
        let mut iters = Vec::new();
        let mut bindings = Vec::new();
        let mut names: Vec<(String, VarId)> = scope.to_vec();
        // A block with no iteration variables (`block S_init[]:`, the init
        // of a reduction into one element) has an empty list.
        let mut more = !cur.eat("]");
        while more {
            let (iname, _) = cur.ident("an iteration variable").map_err(|e| self.syn(line, e))?;
            cur.expect(":", "after the iteration variable").map_err(|e| self.syn(line, e))?;
            let extent = self.const_expr(line, &mut cur)?;
            let kind = if matches!(&cur.peek().tok, Tok::Ident(w) if w == "reduce") {
                cur.bump();
                AxisKind::Reduce
            } else {
                AxisKind::Spatial
            };
            cur.expect("=", "before the binding").map_err(|e| self.syn(line, e))?;
            let binding = parse_expr(&mut cur, &mut Vars { known: scope }).map_err(|e| self.syn(line, e))?;
            let var = self.nest.new_var(&iname, extent);
            iters.push(IterVar { var, kind });
            bindings.push(binding);
            names.push((iname, var));
            more = !cur.eat("]");
            if more {
                cur.expect(",", "or `]` after a binding").map_err(|e| self.syn(line, e))?;
            }
        }
        let mut predicates = Vec::new();
        if matches!(&cur.peek().tok, Tok::Ident(w) if w == "where") {
            cur.bump();
            loop {
                let lhs = parse_expr(&mut cur, &mut Vars { known: scope }).map_err(|e| self.syn(line, e))?;
                cur.expect("<", "in a predicate").map_err(|e| self.syn(line, e))?;
                let rhs = parse_expr(&mut cur, &mut Vars { known: scope }).map_err(|e| self.syn(line, e))?;
                predicates.push(Pred { lhs, rhs });
                if !cur.eat(",") {
                    break;
                }
            }
        }
        let init = matches!(&cur.peek().tok, Tok::Ident(w) if w == "init");
        if init {
            cur.bump();
        }
        cur.expect(":", "at the end of the block header").map_err(|e| self.syn(line, e))?;
        cur.expect_eof("block header").map_err(|e| self.syn(line, e))?;

        // The statement line.
        if self.pos >= self.lines.len() || self.lines[self.pos].indent != line.indent + 1 {
            return Err(self.err(line, 0, "a block header must be followed by its statement, indented"));
        }
        let sline_no = self.lines[self.pos].no;
        let stext = self.lines[self.pos].text.to_string();
        let sline = Line { no: sline_no, indent: line.indent + 1, text: &stext };
        self.pos += 1;
        let tnames: Vec<(String, DType, bool)> =
            self.nest.tensors.iter().map(|t| (t.name.clone(), t.dtype, t.range.is_some())).collect();
        let snames: Vec<(String, DType)> = self.nest.scalars.iter().map(|s| (s.name.clone(), s.dtype)).collect();
        let mut sscope =
            StmtScope { params: &[], tensors: &tnames, scalars: &snames, axes: Vec::new(), known_vars: Some(&names) };
        let raw = parse_statement(&stext, &mut sscope).map_err(|e| self.syn(&sline, e))?;
        let types = Dtypes {
            tensors: self.nest.tensors.iter().map(|t| t.dtype).collect(),
            scalars: self.nest.scalars.iter().map(|s| s.dtype).collect(),
        };
        let lhs_dtype = types.tensors[raw.lhs_tensor.index()];
        let at =
            |off: usize, message: String| WorkloadError::At { file: String::new(), line: sline_no, col: off, message };
        let rhs = typecheck(&raw.rhs, lhs_dtype, &at, &types).map_err(|e| match e {
            WorkloadError::At { col, message, .. } => self.err(&sline, col, message),
            other => self.err(&sline, 0, other.to_string()),
        })?;
        let block = Block {
            name,
            iters,
            bindings,
            predicates,
            lhs: Access { tensor: raw.lhs_tensor, indices: raw.lhs_indices },
            op: raw.op,
            rhs,
            init,
            parent,
            annotations,
            alive: true,
        };
        Ok(self.nest.add_block(block))
    }
}

/// Splits `@key="value"` annotations off a header line (before the final `:`).
fn strip_annotations(text: &str) -> (String, BTreeMap<String, String>) {
    let mut anns = BTreeMap::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" @") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let Some(eq) = tail.find("=\"") else {
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        let key = tail[..eq].to_string();
        let after = &tail[eq + 2..];
        let mut val = String::new();
        let mut end = None;
        let mut chars = after.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        val.push(n);
                    }
                }
                '"' => {
                    end = Some(i + 1);
                    break;
                }
                _ => val.push(c),
            }
        }
        match end {
            Some(e) => {
                anns.insert(key, val);
                rest = &after[e..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    (out, anns)
}
