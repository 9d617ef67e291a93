//! Text form of the vector program (`--emit vector`).

use super::types::*;
use std::fmt::{self, Write};

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {}(", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match p {
                Param::Tensor(b) => {
                    let buf = self.buffer(*b);
                    write!(f, "{}: *{}[{}]", buf.name, buf.dtype, buf.len)?;
                }
                Param::Scalar { name, reg } => write!(f, "{name}: {} = {reg}", self.ty(*reg))?,
            }
        }
        f.write_str(") {\n")?;
        for buf in &self.buffers {
            if let BufKind::Local { len } = &buf.kind {
                writeln!(f, "  local {}: {}[{}]", buf.name, buf.dtype, poly(len))?;
            }
        }
        let mut out = String::new();
        for s in &self.body {
            print_stmt(self, s, 1, &mut out)?;
        }
        f.write_str(&out)?;
        f.write_str("}\n")
    }
}

fn poly(c: &[i64]) -> String {
    let mut parts = Vec::new();
    for (p, &k) in c.iter().enumerate() {
        if k == 0 {
            continue;
        }
        parts.push(match p {
            0 => format!("{k}"),
            1 => format!("{k}*vscale"),
            _ => format!("{k}*vscale^{p}"),
        });
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(" + ")
    }
}

fn buf(p: &Program, b: BufId) -> &str {
    &p.buffer(b).name
}

fn mask(m: &Option<Reg>) -> String {
    m.map(|m| format!(", mask {m}")).unwrap_or_default()
}

fn op_text(p: &Program, op: &Op) -> String {
    match op {
        Op::Copy(r) => format!("{r}"),
        Op::Const(Const::Float(v, d)) => format!("{v:?}:{d}"),
        Op::Const(Const::Int(v, e)) => format!("{v}:{e}"),
        Op::Const(Const::Bool(v)) => format!("{v}"),
        Op::VScale => "vscale".into(),
        Op::Bin(o, a, b) => format!("{} {a}, {b}", format!("{o:?}").to_lowercase()),
        Op::Un(o, a) => format!("{} {a}", format!("{o:?}").to_lowercase()),
        Op::Fma(a, b, c) => format!("fma {a}, {b}, {c}"),
        Op::Cmp(o, a, b) => format!("cmp.{} {a}, {b}", format!("{o:?}").to_lowercase()),
        Op::Select(c, a, b) => format!("select {c}, {a}, {b}"),
        Op::Cast(r, e) => format!("cast {r} to {e}"),
        Op::Bitcast(r, e) => format!("bitcast {r} to {e}"),
        Op::Splat(r, l) => format!("splat {r} x <{l}>"),
        Op::Step(l) => format!("step <{l}>"),
        Op::ActiveLaneMask { base, bound, lanes } => format!("active_lane_mask <{lanes}> {base}, {bound}"),
        Op::Load { buf: b, index } => format!("load {}[{index}]", buf(p, *b)),
        Op::VLoad { buf: b, base, lanes, mask: m } => {
            format!("vload <{lanes}> {}[{base}..]{}", buf(p, *b), mask(m))
        }
        Op::Gather { buf: b, indices, mask: m } => format!("gather {}[{indices}]{}", buf(p, *b), mask(m)),
        Op::Reduce(o, r) => format!("reduce.{} {r}", format!("{o:?}").to_lowercase()),
        Op::Extract(v, i) => format!("extract {v}[{i}]"),
        Op::Interleave(a, b) => format!("interleave {a}, {b}"),
        Op::ZaReadVertical { tile, slice } => format!("za.readv za{tile}.s[.., {slice}]"),
    }
}

fn print_stmt(p: &Program, s: &Stmt, depth: usize, out: &mut String) -> fmt::Result {
    let ind = "  ".repeat(depth);
    match s {
        Stmt::Assign { dst, op } => writeln!(out, "{ind}{dst}: {} = {}", p.ty(*dst), op_text(p, op)),
        Stmt::Store { buf: b, index, value } => writeln!(out, "{ind}store {}[{index}] = {value}", buf(p, *b)),
        Stmt::VStore { buf: b, base, value, mask: m } => {
            writeln!(out, "{ind}vstore {}[{base}..] = {value}{}", buf(p, *b), mask(m))
        }
        Stmt::Scatter { buf: b, indices, value, mask: m } => {
            writeln!(out, "{ind}scatter {}[{indices}] = {value}{}", buf(p, *b), mask(m))
        }
        Stmt::ZaZero { tile } => writeln!(out, "{ind}za.zero za{tile}.s"),
        Stmt::ZaLoad { tile, row, buf: b, base, mask: m } => {
            writeln!(out, "{ind}za.load za{tile}.s[{row}] = {}[{base}..]{}", buf(p, *b), mask(m))
        }
        Stmt::ZaStore { tile, row, buf: b, base, mask: m } => {
            writeln!(out, "{ind}za.store {}[{base}..] = za{tile}.s[{row}]{}", buf(p, *b), mask(m))
        }
        Stmt::Mopa { tile, a, b, a_mask, b_mask } => {
            let m = |x: &Option<Reg>| x.map(|r| format!("{r}")).unwrap_or_else(|| "all".into());
            writeln!(out, "{ind}za.mopa za{tile}.s += {a} (x) {b} rows {} cols {}", m(a_mask), m(b_mask))
        }
        Stmt::Loop { var, start, end, body, hint } => {
            let h = match hint {
                LoopHint::None => String::new(),
                LoopHint::Unroll(n) => format!(" unroll({n})"),
                LoopHint::Parallel => " parallel".into(),
            };
            writeln!(out, "{ind}for {var} in {start}..{end}{h} {{")?;
            for s in body {
                print_stmt(p, s, depth + 1, out)?;
            }
            writeln!(out, "{ind}}}")
        }
        Stmt::If { cond, then_body, else_body } => {
            writeln!(out, "{ind}if {cond} {{")?;
            for s in then_body {
                print_stmt(p, s, depth + 1, out)?;
            }
            if !else_body.is_empty() {
                writeln!(out, "{ind}}} else {{")?;
                for s in else_body {
                    print_stmt(p, s, depth + 1, out)?;
                }
            }
            writeln!(out, "{ind}}}")
        }
    }
}
