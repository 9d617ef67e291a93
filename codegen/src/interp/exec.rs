//! The statement executor: the machine state of one run, step counting,
//! loops, conditionals and stores.

use super::memory::Memory;
use super::regs::RegFile;
use super::value::{Class, Scalar};
use super::{ArgValue, InterpError, InterpOptions, InterpStats};
use crate::vprog::{BufId, Program, Reg, Stmt};
use std::mem::take;

/// The state of one run.
pub(crate) struct Machine<'a> {
    pub(super) vscale: u32,
    pub(super) rf: RegFile,
    pub(super) mem: Memory<'a>,
    /// Scratch vectors swapped with destination registers (no per-op allocation).
    pub(super) sf: Vec<f64>,
    pub(super) si: Vec<i64>,
    pub(super) sb: Vec<bool>,
    /// Second scratch vectors, for operations that need two at once.
    pub(super) si2: Vec<i64>,
    pub(super) sb2: Vec<bool>,
    pub(super) stats: InterpStats,
    /// The ZA array as four f32 tiles of `L x L` elements (`L = 4*vscale`),
    /// row-major, tile after tile; allocated by the first ZA statement.
    pub(super) za: Vec<f64>,
    max_steps: u64,
}

type R = Result<(), InterpError>;

impl<'a> Machine<'a> {
    /// Binds arguments, allocates locals and resolves register types.
    pub(crate) fn new(
        prog: &Program,
        args: &'a mut [ArgValue],
        opts: &InterpOptions,
    ) -> Result<Machine<'a>, InterpError> {
        let (mem, scalars) = Memory::bind(prog, args, opts.vscale)?;
        let mut rf = RegFile::new(prog, opts.vscale)?;
        for (reg, value) in scalars {
            match value {
                Scalar::F(v) => rf.set_f(reg, v)?,
                Scalar::I(v) => rf.set_i(reg, v)?,
            }
        }
        Ok(Machine {
            vscale: opts.vscale,
            rf,
            mem,
            sf: Vec::new(),
            si: Vec::new(),
            sb: Vec::new(),
            si2: Vec::new(),
            sb2: Vec::new(),
            stats: InterpStats::default(),
            za: Vec::new(),
            max_steps: opts.max_steps.unwrap_or(u64::MAX),
        })
    }

    /// The statistics gathered so far.
    pub(crate) fn into_stats(self) -> InterpStats {
        self.stats
    }

    #[inline]
    fn step(&mut self) -> R {
        self.stats.steps += 1;
        if self.stats.steps > self.max_steps {
            return Err(InterpError::StepLimit { limit: self.max_steps });
        }
        Ok(())
    }

    /// Executes a list of statements.
    pub(crate) fn body(&mut self, stmts: &[Stmt]) -> R {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R {
        self.step()?;
        match s {
            Stmt::Assign { dst, op } => {
                self.stats.ops += 1;
                self.assign(*dst, op)
            }
            Stmt::Store { buf, index, value } => {
                self.stats.ops += 1;
                self.stats.stores += 1;
                self.stats.elements_stored += 1;
                let index = self.rf.i(*index)?;
                match self.rf.class(*value) {
                    Class::Float => {
                        let x = self.rf.f(*value)?;
                        self.mem.write_f(*buf, index, x)
                    }
                    Class::Int => {
                        let x = self.rf.i(*value)?;
                        self.mem.write_i(*buf, index, x)
                    }
                    Class::Bool => Err(InterpError::Internal("store of a bool".into())),
                }
            }
            Stmt::VStore { buf, base, value, mask } => {
                let base = self.rf.i(*base)?;
                let n = self.vector_lanes(*value)?;
                let mut idx = take(&mut self.si);
                idx.clear();
                idx.extend((0..n as i64).map(|i| base.saturating_add(i)));
                self.vector_store(*buf, idx, *value, *mask)
            }
            Stmt::Scatter { buf, indices, value, mask } => {
                let mut idx = take(&mut self.si);
                idx.clear();
                idx.extend_from_slice(self.rf.vi(*indices)?);
                self.vector_store(*buf, idx, *value, *mask)
            }
            Stmt::Loop { var, start, end, body, .. } => {
                let (start, end) = (self.rf.i(*start)?, self.rf.i(*end)?);
                let mut i = start;
                while i < end {
                    self.step()?;
                    self.stats.loop_iterations += 1;
                    self.rf.set_i(*var, i)?;
                    self.body(body)?;
                    i += 1;
                }
                // The loop variable only exists inside its loop.
                self.rf.unassign(*var);
                Ok(())
            }
            Stmt::If { cond, then_body, else_body } => {
                if self.rf.b(*cond)? {
                    self.body(then_body)
                } else {
                    self.body(else_body)
                }
            }
            Stmt::ZaZero { tile } => self.za_zero(*tile),
            Stmt::ZaLoad { tile, row, buf, base, mask } => self.za_load(*tile, *row, *buf, *base, *mask),
            Stmt::ZaStore { tile, row, buf, base, mask } => self.za_store(*tile, *row, *buf, *base, *mask),
            Stmt::Mopa { tile, a, b, a_mask, b_mask } => self.mopa(*tile, *a, *b, *a_mask, *b_mask),
        }
    }

    /// Stores the active lanes of the vector `value` at `idx` (in lane order).
    fn vector_store(&mut self, buf: BufId, idx: Vec<i64>, value: Reg, mask: Option<Reg>) -> R {
        self.stats.ops += 1;
        self.stats.vector_ops += 1;
        self.stats.stores += 1;
        let n = self.vector_lanes(value)?;
        if idx.len() != n {
            return Err(InterpError::Internal("store indices and value differ in lanes".into()));
        }
        let active = self.active_mask(mask, n)?;
        self.stats.elements_stored += active.iter().filter(|&&on| on).count() as u64;
        match self.rf.class(value) {
            Class::Float => self.mem.store_lanes_f(buf, &idx, &active, self.rf.vf(value)?)?,
            Class::Int => self.mem.store_lanes_i(buf, &idx, &active, self.rf.vi(value)?)?,
            Class::Bool => return Err(InterpError::Internal("store of a mask".into())),
        }
        self.si = idx;
        self.sb = active;
        Ok(())
    }

    fn vector_lanes(&self, r: Reg) -> Result<usize, InterpError> {
        self.rf.lanes(r).ok_or_else(|| InterpError::Internal(format!("{r} is not a vector")))
    }

    /// The active lanes of an optional mask as an owned scratch vector
    /// (return it to `self.sb` when done).
    pub(super) fn active_mask(&mut self, mask: Option<Reg>, n: usize) -> Result<Vec<bool>, InterpError> {
        let mut active = take(&mut self.sb);
        active.clear();
        match self.rf.mask(mask, n)? {
            Some(m) => active.extend_from_slice(m),
            None => active.resize(n, true),
        }
        Ok(active)
    }
}

/// Lane `l` of a vector, or an internal error if the vector is too short.
#[inline]
pub(super) fn lane_of<T: Copy>(v: &[T], l: usize) -> Result<T, InterpError> {
    v.get(l).copied().ok_or_else(|| InterpError::Internal(format!("lane {l} of a {}-lane vector", v.len())))
}
