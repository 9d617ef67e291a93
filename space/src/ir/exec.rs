//! A direct executor of loop nests (scalar, f64), used to check schedule
//! primitives against the workload reference without going through lowering.

use super::*;
use crate::expr::eval;
use crate::workload::{BinOp, UnFn};
use thiserror::Error;

/// Failure while executing a nest.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("executing nest: {0}")]
pub struct ExecError(pub String);

struct Exec<'a> {
    nest: &'a Nest,
    vscale: i64,
    mem: Vec<Vec<f64>>,
    strides: Vec<Vec<i64>>,
    shapes: Vec<Vec<i64>>,
    env: Vec<Option<i64>>,
}

impl Nest {
    /// Runs the nest at `vscale` on `tensors` (one `Vec<f64>` per tensor of
    /// the workload, locals excluded; outputs are overwritten) and returns the
    /// final contents of every workload tensor.
    pub fn execute(&self, vscale: u32, tensors: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, ExecError> {
        let vscale = i64::from(vscale);
        let mut shapes = Vec::new();
        for t in &self.tensors {
            let mut s = Vec::new();
            for d in &t.shape {
                let v = eval(&d.with_vscale(vscale), &|_| None, vscale, &|_, _| None)
                    .map_err(|e| ExecError(format!("shape of {}: {e}", t.name)))?;
                s.push(v);
            }
            shapes.push(s);
        }
        let strides: Vec<Vec<i64>> = shapes
            .iter()
            .map(|s| {
                let mut st = vec![1i64; s.len()];
                for d in (0..s.len().saturating_sub(1)).rev() {
                    st[d] = st[d + 1] * s[d + 1];
                }
                st
            })
            .collect();
        let mut mem: Vec<Vec<f64>> =
            shapes.iter().map(|s| vec![f64::NAN; s.iter().product::<i64>() as usize]).collect();
        for (i, t) in tensors.iter().enumerate() {
            if i < mem.len() {
                mem[i] = t.clone();
            }
        }
        let mut ex = Exec { nest: self, vscale, mem, strides, shapes, env: vec![None; self.vars.len()] };
        for n in &self.root {
            ex.node(*n)?;
        }
        let n_global = self.tensors.iter().filter(|t| t.scope == Scope::Global).count();
        ex.mem.truncate(n_global);
        Ok(ex.mem)
    }
}

impl Exec<'_> {
    fn ev(&self, e: &Expr) -> Result<i64, ExecError> {
        let var = |v: VarId| self.env[v.index()];
        let load = |t: TensorId, idx: &[i64]| {
            let off: i64 = idx.iter().zip(&self.strides[t.index()]).map(|(a, b)| a * b).sum();
            self.mem[t.index()].get(off as usize).map(|x| *x as i64)
        };
        eval(e, &var, self.vscale, &load).map_err(|e| ExecError(e.to_string()))
    }

    fn offset(&self, a: &Access) -> Result<usize, ExecError> {
        let t = a.tensor.index();
        let mut off = 0i64;
        for (d, e) in a.indices.iter().enumerate() {
            let x = self.ev(e)?;
            if x < 0 || x >= self.shapes[t][d] {
                return Err(ExecError(format!(
                    "index {x} out of bounds for dimension {d} of `{}` ({})",
                    self.nest.tensor(a.tensor).name,
                    self.shapes[t][d]
                )));
            }
            off += x * self.strides[t][d];
        }
        Ok(off as usize)
    }

    fn node(&mut self, n: Node) -> Result<(), ExecError> {
        match n {
            Node::Loop(l) => {
                let lp = self.nest.loop_(l);
                let ext = self.ev(&self.nest.extent(l).clone())?;
                for i in 0..ext {
                    self.env[lp.var.index()] = Some(i);
                    for c in &lp.body {
                        self.node(*c)?;
                    }
                }
                self.env[lp.var.index()] = None;
                Ok(())
            }
            Node::Block(b) => self.block(b),
        }
    }

    fn block(&mut self, b: BlockId) -> Result<(), ExecError> {
        let blk = self.nest.block(b);
        for p in &blk.predicates {
            if self.ev(&p.lhs)? >= self.ev(&p.rhs)? {
                return Ok(());
            }
        }
        let mut first_reduction = true;
        for (it, e) in blk.iters.iter().zip(&blk.bindings) {
            let v = self.ev(e)?;
            let ext = self.ev(&self.nest.var(it.var).extent)?;
            if v < 0 || v >= ext {
                return Err(ExecError(format!(
                    "block `{}`: iterator `{}` = {v} outside 0..{ext}",
                    blk.name,
                    self.nest.var(it.var).name
                )));
            }
            if it.kind == AxisKind::Reduce && v != 0 {
                first_reduction = false;
            }
            self.env[it.var.index()] = Some(v);
        }
        let off = self.offset(&blk.lhs)?;
        let t = blk.lhs.tensor.index();
        if blk.init && first_reduction {
            let d = self.nest.tensor(blk.lhs.tensor).dtype;
            self.mem[t][off] = blk.op.neutral(d).unwrap_or(0.0);
        }
        let x = self.value(&blk.rhs)?;
        let old = self.mem[t][off];
        self.mem[t][off] = match blk.op {
            UpdateOp::Assign => x,
            UpdateOp::Add => old + x,
            UpdateOp::Max => old.max(x),
            UpdateOp::Min => old.min(x),
        };
        for it in &blk.iters {
            self.env[it.var.index()] = None;
        }
        Ok(())
    }

    fn value(&self, v: &Value) -> Result<f64, ExecError> {
        Ok(match v {
            Value::Const(c, _) => *c,
            Value::Scalar(i, _) => self.nest.scalars[*i].value,
            Value::Read(a, _) => {
                let x = self.mem[a.tensor.index()][self.offset(a)?];
                if x.is_nan() && self.nest.tensor(a.tensor).scope == Scope::Local {
                    return Err(ExecError(format!(
                        "read of an unwritten element of `{}`",
                        self.nest.tensor(a.tensor).name
                    )));
                }
                x
            }
            Value::Cast(d, a) => {
                let x = self.value(a)?;
                if d.is_float() {
                    x
                } else if a.dtype().is_float() {
                    crate::reference::saturate(x, *d)
                } else {
                    x.trunc()
                }
            }
            Value::Un(u, a) => {
                let x = self.value(a)?;
                match u {
                    UnFn::Neg => -x,
                    UnFn::Abs => x.abs(),
                    UnFn::Sqrt => x.sqrt(),
                    UnFn::Exp => x.exp(),
                    UnFn::Cos => x.cos(),
                }
            }
            Value::Bin(op, a, b) => {
                let (x, y) = (self.value(a)?, self.value(b)?);
                match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    BinOp::Max => x.max(y),
                    BinOp::Min => x.min(y),
                }
            }
        })
    }
}
