//! The register file: one slot per vprog register with its resolved kind and
//! lane count, an "assigned" flag per register, and typed accessors.

use super::value::{Class, Kind, Slot};
use super::InterpError;
use crate::vprog::{Program, Reg};
use std::mem;

/// Vectors wider than this many lanes are rejected as invalid.
const MAX_LANES: usize = 1 << 20;

/// Registers of one run, with types resolved at a fixed vscale.
pub(crate) struct RegFile {
    slots: Vec<Slot>,
    assigned: Vec<bool>,
    kinds: Vec<Kind>,
    /// Lane count of vector registers at the run's vscale; `None` for scalars.
    lanes: Vec<Option<usize>>,
}

fn mismatch(r: Reg, want: &str) -> InterpError {
    InterpError::Internal(format!("register {r} does not hold {want}"))
}

impl RegFile {
    /// Resolves the types of all registers of `prog` at `vscale`.
    pub(crate) fn new(prog: &Program, vscale: u32) -> Result<RegFile, InterpError> {
        let n = prog.regs.len();
        let mut rf = RegFile {
            slots: Vec::with_capacity(n),
            assigned: vec![false; n],
            kinds: Vec::with_capacity(n),
            lanes: Vec::with_capacity(n),
        };
        for (i, ty) in prog.regs.iter().enumerate() {
            let kind = Kind::of(ty.elem);
            let lanes = ty.lanes.map(|l| l.count(vscale));
            if lanes.is_some_and(|n| n == 0 || n > MAX_LANES) {
                return Err(InterpError::InvalidProgram(format!(
                    "register %{i} has type {ty}: {} lanes at vscale {vscale}",
                    lanes.unwrap_or_default()
                )));
            }
            rf.slots.push(Slot::empty(kind, lanes.is_some()));
            rf.kinds.push(kind);
            rf.lanes.push(lanes);
        }
        Ok(rf)
    }

    /// The element kind of a register.
    #[inline(always)]
    pub(crate) fn kind(&self, r: Reg) -> Kind {
        self.kinds[r.0 as usize]
    }

    /// The lane count of a vector register, `None` for a scalar.
    #[inline(always)]
    pub(crate) fn lanes(&self, r: Reg) -> Option<usize> {
        self.lanes[r.0 as usize]
    }

    /// Marks a register as never assigned (used for loop variables after their loop).
    pub(crate) fn unassign(&mut self, r: Reg) {
        self.assigned[r.0 as usize] = false;
    }

    #[inline(always)]
    fn slot(&self, r: Reg) -> Result<&Slot, InterpError> {
        let i = r.0 as usize;
        if !self.assigned[i] {
            return Err(InterpError::Unassigned(r));
        }
        Ok(&self.slots[i])
    }

    /// Checks that a register has been assigned.
    pub(crate) fn check_assigned(&self, r: Reg) -> Result<(), InterpError> {
        self.slot(r).map(|_| ())
    }

    /// A scalar float register.
    #[inline(always)]
    pub(crate) fn f(&self, r: Reg) -> Result<f64, InterpError> {
        match self.slot(r)? {
            Slot::F(v) => Ok(*v),
            _ => Err(mismatch(r, "a scalar float")),
        }
    }

    /// A scalar integer register.
    #[inline(always)]
    pub(crate) fn i(&self, r: Reg) -> Result<i64, InterpError> {
        match self.slot(r)? {
            Slot::I(v) => Ok(*v),
            _ => Err(mismatch(r, "a scalar integer")),
        }
    }

    /// A scalar bool register.
    #[inline(always)]
    pub(crate) fn b(&self, r: Reg) -> Result<bool, InterpError> {
        match self.slot(r)? {
            Slot::B(v) => Ok(*v),
            _ => Err(mismatch(r, "a scalar bool")),
        }
    }

    /// A float vector register.
    #[inline(always)]
    pub(crate) fn vf(&self, r: Reg) -> Result<&[f64], InterpError> {
        match self.slot(r)? {
            Slot::VF(v) => Ok(v),
            _ => Err(mismatch(r, "a float vector")),
        }
    }

    /// An integer vector register.
    #[inline(always)]
    pub(crate) fn vi(&self, r: Reg) -> Result<&[i64], InterpError> {
        match self.slot(r)? {
            Slot::VI(v) => Ok(v),
            _ => Err(mismatch(r, "an integer vector")),
        }
    }

    /// A mask register.
    #[inline(always)]
    pub(crate) fn vb(&self, r: Reg) -> Result<&[bool], InterpError> {
        match self.slot(r)? {
            Slot::VB(v) => Ok(v),
            _ => Err(mismatch(r, "a mask")),
        }
    }

    /// An optional mask of `n` lanes.
    #[inline(always)]
    pub(crate) fn mask(&self, m: Option<Reg>, n: usize) -> Result<Option<&[bool]>, InterpError> {
        match m {
            None => Ok(None),
            Some(m) => {
                let v = self.vb(m)?;
                if v.len() != n {
                    return Err(InterpError::Internal(format!("mask {m} has {} lanes, expected {n}", v.len())));
                }
                Ok(Some(v))
            }
        }
    }

    /// Assigns a scalar float (already rounded).
    #[inline(always)]
    pub(crate) fn set_f(&mut self, r: Reg, v: f64) -> Result<(), InterpError> {
        let i = r.0 as usize;
        match self.slots.get_mut(i) {
            Some(Slot::F(x)) => *x = v,
            _ => return Err(mismatch(r, "a scalar float")),
        }
        self.assigned[i] = true;
        Ok(())
    }

    /// Assigns a scalar integer (already wrapped).
    #[inline(always)]
    pub(crate) fn set_i(&mut self, r: Reg, v: i64) -> Result<(), InterpError> {
        let i = r.0 as usize;
        match self.slots.get_mut(i) {
            Some(Slot::I(x)) => *x = v,
            _ => return Err(mismatch(r, "a scalar integer")),
        }
        self.assigned[i] = true;
        Ok(())
    }

    /// Assigns a scalar bool.
    #[inline(always)]
    pub(crate) fn set_b(&mut self, r: Reg, v: bool) -> Result<(), InterpError> {
        let i = r.0 as usize;
        match self.slots.get_mut(i) {
            Some(Slot::B(x)) => *x = v,
            _ => return Err(mismatch(r, "a scalar bool")),
        }
        self.assigned[i] = true;
        Ok(())
    }

    fn check_lanes(&self, r: Reg, n: usize) -> Result<(), InterpError> {
        if self.lanes(r) != Some(n) {
            return Err(InterpError::Internal(format!("vector of {n} lanes assigned to {r}")));
        }
        Ok(())
    }

    /// Moves a float vector into `r` and returns the register's previous
    /// buffer (to be reused as scratch space).
    pub(crate) fn put_vf(&mut self, r: Reg, v: Vec<f64>) -> Result<Vec<f64>, InterpError> {
        self.check_lanes(r, v.len())?;
        let i = r.0 as usize;
        match &mut self.slots[i] {
            Slot::VF(old) => {
                self.assigned[i] = true;
                Ok(mem::replace(old, v))
            }
            _ => Err(mismatch(r, "a float vector")),
        }
    }

    /// Moves an integer vector into `r`; returns the previous buffer.
    pub(crate) fn put_vi(&mut self, r: Reg, v: Vec<i64>) -> Result<Vec<i64>, InterpError> {
        self.check_lanes(r, v.len())?;
        let i = r.0 as usize;
        match &mut self.slots[i] {
            Slot::VI(old) => {
                self.assigned[i] = true;
                Ok(mem::replace(old, v))
            }
            _ => Err(mismatch(r, "an integer vector")),
        }
    }

    /// Moves a mask into `r`; returns the previous buffer.
    pub(crate) fn put_vb(&mut self, r: Reg, v: Vec<bool>) -> Result<Vec<bool>, InterpError> {
        self.check_lanes(r, v.len())?;
        let i = r.0 as usize;
        match &mut self.slots[i] {
            Slot::VB(old) => {
                self.assigned[i] = true;
                Ok(mem::replace(old, v))
            }
            _ => Err(mismatch(r, "a mask")),
        }
    }

    /// The storage class of a register.
    #[inline(always)]
    pub(crate) fn class(&self, r: Reg) -> Class {
        self.kind(r).class()
    }
}
