//! The text form of a loop nest (`--emit loops`); [`super::parse_nest`] reads it back.

use super::*;
use crate::workload::{access_text, value_text, Names};
use std::fmt::{self, Write};

impl Nest {
    /// Displays an expression with this nest's variable and tensor names.
    pub fn expr_text(&self, e: &Expr) -> String {
        let var = |v: VarId| self.var(v).name.to_string();
        let tensor = |t: TensorId| self.tensor(t).name.clone();
        e.display(&var, &tensor).to_string()
    }

    fn names_text<R>(&self, f: impl FnOnce(&Names) -> R) -> R {
        let var = |v: VarId| self.var(v).name.to_string();
        let tensor = |t: TensorId| self.tensor(t).name.clone();
        let scalar = |i: usize| self.scalars[i].name.clone();
        f(&Names { var: &var, tensor: &tensor, scalar: &scalar })
    }

    /// The statement of a block as text, e.g. `C[vi, vj] += (A[vi, vk] * B[vk, vj])`.
    pub fn stmt_text(&self, b: BlockId) -> String {
        let blk = self.block(b);
        self.names_text(|n| format!("{} {} {}", access_text(&blk.lhs, n), blk.op.symbol(), value_text(&blk.rhs, n)))
    }

    /// A loop's header, e.g. `for j1 in 4*vscale vectorize(predicate)`.
    pub fn loop_header(&self, l: LoopId) -> String {
        let lp = self.loop_(l);
        let mut s = format!("for {} in {}", self.loop_name(l), self.expr_text(self.extent(l)));
        match lp.kind {
            LoopKind::Serial => {}
            LoopKind::Unroll => s.push_str(" unroll"),
            LoopKind::Parallel => s.push_str(" parallel"),
            LoopKind::Vectorize(t) => {
                let _ = write!(s, " vectorize({})", t.name());
            }
        }
        for (k, v) in &lp.annotations {
            let _ = write!(s, " @{k}={v:?}");
        }
        s
    }

    /// A block's header, e.g. `block C[vi: 67 = i, vk: 29 reduce = k] where ... init`.
    pub fn block_header(&self, b: BlockId) -> String {
        let blk = self.block(b);
        let iters: Vec<String> = blk
            .iters
            .iter()
            .zip(&blk.bindings)
            .map(|(it, e)| {
                let red = if it.kind == AxisKind::Reduce { " reduce" } else { "" };
                format!(
                    "{}: {}{red} = {}",
                    self.var(it.var).name,
                    self.expr_text(&self.var(it.var).extent),
                    self.expr_text(e)
                )
            })
            .collect();
        let mut s = format!("block {}[{}]", blk.name, iters.join(", "));
        if !blk.predicates.is_empty() {
            let ps: Vec<String> = blk
                .predicates
                .iter()
                .map(|p| format!("{} < {}", self.expr_text(&p.lhs), self.expr_text(&p.rhs)))
                .collect();
            let _ = write!(s, " where {}", ps.join(", "));
        }
        if blk.init {
            s.push_str(" init");
        }
        for (k, v) in &blk.annotations {
            let _ = write!(s, " @{k}={v:?}");
        }
        s
    }

    fn write_node(&self, n: Node, depth: usize, out: &mut String) {
        let ind = "  ".repeat(depth);
        match n {
            Node::Loop(l) => {
                let _ = writeln!(out, "{ind}{}:", self.loop_header(l));
                for c in &self.loop_(l).body {
                    self.write_node(*c, depth + 1, out);
                }
            }
            Node::Block(b) => {
                let _ = writeln!(out, "{ind}{}:", self.block_header(b));
                let _ = writeln!(out, "{ind}  {}", self.stmt_text(b));
            }
        }
    }

    /// The caps line of the text form.
    pub fn caps_text(&self) -> String {
        let c = &self.caps;
        let vs: Vec<String> = c.vscale_values.iter().map(|v| v.to_string()).collect();
        let mut s = format!(
            "caps {} granule {} vscale [{}]",
            if c.scalable { "scalable" } else { "fixed" },
            c.granule_bits,
            vs.join(", ")
        );
        if c.has_gather {
            s.push_str(" gather");
        }
        if c.has_sme {
            s.push_str(" sme");
        }
        if !c.half_vectors {
            s.push_str(" no_f16_vectors");
        }
        s
    }
}

impl fmt::Display for Nest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let _ = writeln!(out, "nest {}", self.name);
        let _ = writeln!(out, "{}", self.caps_text());
        for t in &self.tensors {
            let shape: Vec<String> = t.shape.iter().map(|e| self.expr_text(e)).collect();
            let role = match (t.scope, t.role) {
                (Scope::Local, _) => "local",
                (_, Role::Input) => "input",
                (_, Role::Output) => "output",
                (_, Role::Temp) => "temp",
            };
            let _ = write!(out, "tensor {}: {}[{}] {role}", t.name, t.dtype, shape.join(", "));
            if let Some((lo, hi)) = t.range {
                let _ = write!(out, " range [{lo}, {hi}]");
            }
            out.push('\n');
        }
        for s in &self.scalars {
            let _ = writeln!(out, "scalar {}: {} = {:?}", s.name, s.dtype, s.value);
        }
        for n in &self.root {
            self.write_node(*n, 0, &mut out);
        }
        f.write_str(&out)
    }
}
