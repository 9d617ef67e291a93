//! Interpreter memory: parameter tensors borrowed from the caller, local
//! buffers allocated per run with an initialization bitmap, and bounds-,
//! initialization- and read-only-checked element access.

use super::value::{f64_to_f16, round_float, Kind, Scalar};
use super::{ArgValue, InterpError};
use crate::vprog::{BufId, BufKind, Buffer, Elem, Param, Program, Reg};
use scaletune_space::data::bf16_from_f64;
use scaletune_space::TensorData;

/// Local buffers larger than this many elements are rejected as invalid.
const MAX_LOCAL_ELEMS: usize = 1 << 27;

enum Storage<'a> {
    /// A parameter tensor, assumed fully initialized.
    Param(&'a mut TensorData),
    /// A local buffer; bit `i` of `init` is set once element `i` is written.
    Local { data: TensorData, init: Vec<u64> },
    /// A parameter buffer not (yet) bound to an argument.
    Unbound,
}

struct BufMem<'a> {
    name: String,
    read_only: bool,
    storage: Storage<'a>,
}

/// All buffers of one run, indexed by `BufId`.
pub(crate) struct Memory<'a> {
    bufs: Vec<BufMem<'a>>,
}

/// The length polynomial of a local buffer evaluated at `vscale`, checked.
fn local_len(buf: &Buffer, coeffs: &[i64], vscale: u32) -> Result<usize, InterpError> {
    let mut total: i64 = 0;
    let mut pow: i64 = 1;
    let overflow = || InterpError::InvalidProgram(format!("length of local buffer `{}` overflows", buf.name));
    for (p, &c) in coeffs.iter().enumerate() {
        if p > 0 {
            pow = pow.checked_mul(i64::from(vscale)).ok_or_else(overflow)?;
        }
        total = c.checked_mul(pow).and_then(|t| t.checked_add(total)).ok_or_else(overflow)?;
    }
    if total < 0 || total as u64 > MAX_LOCAL_ELEMS as u64 {
        return Err(InterpError::InvalidProgram(format!(
            "local buffer `{}` has length {total} at vscale {vscale}",
            buf.name
        )));
    }
    Ok(total as usize)
}

/// Converts a scalar argument to the kind of its parameter register.
fn scalar_arg(name: &str, kind: Kind, v: f64) -> Result<Scalar, InterpError> {
    let (lo, hi) = match kind {
        Kind::F16 | Kind::BF16 | Kind::F32 | Kind::F64 => return Ok(Scalar::F(round_float(kind, v))),
        Kind::I8 => (f64::from(i8::MIN), f64::from(i8::MAX)),
        Kind::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        Kind::Index => (-(2f64.powi(63)), 2f64.powi(63) - 1024.0),
        Kind::Bool => return Err(InterpError::ArgMismatch(format!("scalar parameter `{name}` is a bool"))),
    };
    if v.fract() != 0.0 || !(lo..=hi).contains(&v) {
        return Err(InterpError::ArgMismatch(format!("scalar parameter `{name}` of kind {kind:?} cannot hold {v}")));
    }
    Ok(Scalar::I(v as i64))
}

fn out_of_bounds(name: &str, index: i64, len: usize) -> InterpError {
    InterpError::OutOfBounds { buffer: name.to_string(), index, len }
}

/// Loads the active lanes at `idx` from `v` (checking bounds and, for locals,
/// initialization); inactive lanes read nothing and yield zero.
#[inline(always)]
fn load_lanes<T: Copy, U: Default>(
    name: &str,
    v: &[T],
    init: Option<&[u64]>,
    idx: &[i64],
    active: &[bool],
    out: &mut Vec<U>,
    conv: impl Fn(T) -> U,
) -> Result<(), InterpError> {
    for (&index, &on) in idx.iter().zip(active) {
        if !on {
            out.push(U::default());
            continue;
        }
        if index < 0 || index as u64 >= v.len() as u64 {
            return Err(out_of_bounds(name, index, v.len()));
        }
        let i = index as usize;
        if let Some(init) = init {
            if (init[i / 64] >> (i % 64)) & 1 == 0 {
                return Err(InterpError::UninitRead { buffer: name.to_string(), index: i });
            }
        }
        out.push(conv(v[i]));
    }
    Ok(())
}

/// Stores the active lanes of `values` at `idx` into `v`, in lane order.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn store_lanes<T, U: Copy>(
    name: &str,
    read_only: bool,
    v: &mut [T],
    mut init: Option<&mut Vec<u64>>,
    idx: &[i64],
    active: &[bool],
    values: &[U],
    conv: impl Fn(U) -> T,
) -> Result<(), InterpError> {
    for ((&index, &on), &x) in idx.iter().zip(active).zip(values) {
        if !on {
            continue;
        }
        if index < 0 || index as u64 >= v.len() as u64 {
            return Err(out_of_bounds(name, index, v.len()));
        }
        let i = index as usize;
        if read_only {
            return Err(InterpError::ReadOnlyWrite { buffer: name.to_string(), index: i });
        }
        if let Some(init) = init.as_deref_mut() {
            init[i / 64] |= 1 << (i % 64);
        }
        v[i] = conv(x);
    }
    Ok(())
}

impl<'a> Memory<'a> {
    /// Binds `args` to the parameters of `prog` and allocates local buffers.
    /// Returns the memory and the initial values of scalar parameter registers.
    pub(crate) fn bind(
        prog: &Program,
        args: &'a mut [ArgValue],
        vscale: u32,
    ) -> Result<(Memory<'a>, Vec<(Reg, Scalar)>), InterpError> {
        if args.len() != prog.params.len() {
            return Err(InterpError::ArgMismatch(format!(
                "kernel `{}` takes {} arguments, got {}",
                prog.name,
                prog.params.len(),
                args.len()
            )));
        }
        let mut bufs = Vec::with_capacity(prog.buffers.len());
        for buf in &prog.buffers {
            let storage = match &buf.kind {
                BufKind::Param => Storage::Unbound,
                BufKind::Local { len } => {
                    let n = local_len(buf, len, vscale)?;
                    Storage::Local { data: TensorData::zeros(buf.dtype, n), init: vec![0; n.div_ceil(64)] }
                }
            };
            bufs.push(BufMem { name: buf.name.clone(), read_only: buf.read_only, storage });
        }
        let mut scalars = Vec::new();
        for (pos, (param, arg)) in prog.params.iter().zip(args.iter_mut()).enumerate() {
            match param {
                Param::Tensor(b) => {
                    let buf = prog.buffers.get(b.0 as usize).ok_or_else(|| {
                        InterpError::InvalidProgram(format!("parameter {pos} names missing buffer {}", b.0))
                    })?;
                    let slot = &mut bufs[b.0 as usize];
                    if !matches!(slot.storage, Storage::Unbound) {
                        return Err(InterpError::InvalidProgram(format!(
                            "buffer `{}` is a local or is passed twice",
                            buf.name
                        )));
                    }
                    let ArgValue::Tensor(t) = arg else {
                        return Err(InterpError::ArgMismatch(format!(
                            "argument {pos} (`{}`) must be a tensor, got a scalar",
                            buf.name
                        )));
                    };
                    if t.dtype() != buf.dtype || t.len() != buf.len {
                        return Err(InterpError::ArgMismatch(format!(
                            "argument {pos} (`{}`) must be {} x {}, got {} x {}",
                            buf.name,
                            buf.len,
                            buf.dtype,
                            t.len(),
                            t.dtype()
                        )));
                    }
                    slot.storage = Storage::Param(t);
                }
                Param::Scalar { name, reg } => {
                    let ty = prog.regs.get(reg.0 as usize).ok_or_else(|| {
                        InterpError::InvalidProgram(format!("scalar parameter `{name}` names missing register {reg}"))
                    })?;
                    if ty.is_vector() || !matches!(ty.elem, Elem::Data(_)) {
                        return Err(InterpError::InvalidProgram(format!("scalar parameter `{name}` has type {ty}")));
                    }
                    let ArgValue::Scalar(v) = arg else {
                        return Err(InterpError::ArgMismatch(format!(
                            "argument {pos} (`{name}`) must be a scalar, got a tensor"
                        )));
                    };
                    scalars.push((*reg, scalar_arg(name, Kind::of(ty.elem), *v)?));
                }
            }
        }
        if let Some(b) = bufs.iter().find(|b| matches!(b.storage, Storage::Unbound)) {
            return Err(InterpError::InvalidProgram(format!(
                "parameter buffer `{}` is not in the parameter list",
                b.name
            )));
        }
        Ok((Memory { bufs }, scalars))
    }

    /// Checks an access and returns the tensor and element position.
    #[inline(always)]
    fn locate(&self, buf: BufId, index: i64) -> Result<(&TensorData, usize), InterpError> {
        let b = &self.bufs[buf.0 as usize];
        let (data, init) = match &b.storage {
            Storage::Param(d) => (&**d, None),
            Storage::Local { data, init } => (data, Some(init)),
            Storage::Unbound => return Err(InterpError::Internal(format!("buffer `{}` is unbound", b.name))),
        };
        let len = data.len();
        if index < 0 || index as u64 >= len as u64 {
            return Err(InterpError::OutOfBounds { buffer: b.name.clone(), index, len });
        }
        let i = index as usize;
        if let Some(init) = init {
            if (init[i / 64] >> (i % 64)) & 1 == 0 {
                return Err(InterpError::UninitRead { buffer: b.name.clone(), index: i });
            }
        }
        Ok((data, i))
    }

    /// Checks a write access (bounds, read-only), marks the element initialized
    /// and returns the tensor and element position.
    #[inline(always)]
    fn locate_mut(&mut self, buf: BufId, index: i64) -> Result<(&mut TensorData, usize), InterpError> {
        let b = &mut self.bufs[buf.0 as usize];
        let len = match &b.storage {
            Storage::Param(d) => d.len(),
            Storage::Local { data, .. } => data.len(),
            Storage::Unbound => return Err(InterpError::Internal(format!("buffer `{}` is unbound", b.name))),
        };
        if index < 0 || index as u64 >= len as u64 {
            return Err(InterpError::OutOfBounds { buffer: b.name.clone(), index, len });
        }
        let i = index as usize;
        if b.read_only {
            return Err(InterpError::ReadOnlyWrite { buffer: b.name.clone(), index: i });
        }
        match &mut b.storage {
            Storage::Param(d) => Ok((&mut **d, i)),
            Storage::Local { data, init } => {
                init[i / 64] |= 1 << (i % 64);
                Ok((data, i))
            }
            Storage::Unbound => Err(InterpError::Internal("unreachable unbound buffer".into())),
        }
    }

    /// Reads a float element.
    #[inline(always)]
    pub(crate) fn read_f(&self, buf: BufId, index: i64) -> Result<f64, InterpError> {
        match self.locate(buf, index)? {
            (TensorData::F32(v), i) => Ok(f64::from(v[i])),
            (TensorData::F64(v), i) => Ok(v[i]),
            (TensorData::F16(v), i) => Ok(v[i].to_f64()),
            (TensorData::BF16(v), i) => Ok(v[i].to_f64()),
            _ => Err(InterpError::Internal("float read of an integer buffer".into())),
        }
    }

    /// Reads an integer element.
    #[inline(always)]
    pub(crate) fn read_i(&self, buf: BufId, index: i64) -> Result<i64, InterpError> {
        match self.locate(buf, index)? {
            (TensorData::I32(v), i) => Ok(i64::from(v[i])),
            (TensorData::I8(v), i) => Ok(i64::from(v[i])),
            _ => Err(InterpError::Internal("integer read of a float buffer".into())),
        }
    }

    /// Writes a float element (already rounded to the buffer's dtype).
    #[inline(always)]
    pub(crate) fn write_f(&mut self, buf: BufId, index: i64, x: f64) -> Result<(), InterpError> {
        match self.locate_mut(buf, index)? {
            (TensorData::F32(v), i) => v[i] = x as f32,
            (TensorData::F64(v), i) => v[i] = x,
            (TensorData::F16(v), i) => v[i] = f64_to_f16(x),
            (TensorData::BF16(v), i) => v[i] = bf16_from_f64(x),
            _ => return Err(InterpError::Internal("float write to an integer buffer".into())),
        }
        Ok(())
    }

    /// Writes an integer element (already wrapped to the buffer's dtype).
    #[inline(always)]
    pub(crate) fn write_i(&mut self, buf: BufId, index: i64, x: i64) -> Result<(), InterpError> {
        match self.locate_mut(buf, index)? {
            (TensorData::I32(v), i) => v[i] = x as i32,
            (TensorData::I8(v), i) => v[i] = x as i8,
            _ => return Err(InterpError::Internal("integer write to a float buffer".into())),
        }
        Ok(())
    }

    fn parts(&self, buf: BufId) -> Result<(&str, &TensorData, Option<&[u64]>), InterpError> {
        let b = &self.bufs[buf.0 as usize];
        match &b.storage {
            Storage::Param(d) => Ok((&b.name, &**d, None)),
            Storage::Local { data, init } => Ok((&b.name, data, Some(init))),
            Storage::Unbound => Err(InterpError::Internal(format!("buffer `{}` is unbound", b.name))),
        }
    }

    /// True if buffer `buf` holds integers.
    pub(crate) fn holds_ints(&self, buf: BufId) -> Result<bool, InterpError> {
        Ok(matches!(self.parts(buf)?.1, TensorData::I8(_) | TensorData::I32(_)))
    }

    /// Loads float lanes at `idx` into `out` (inactive lanes yield 0).
    pub(crate) fn load_lanes_f(
        &self,
        buf: BufId,
        idx: &[i64],
        active: &[bool],
        out: &mut Vec<f64>,
    ) -> Result<(), InterpError> {
        match self.parts(buf)? {
            (name, TensorData::F32(v), init) => load_lanes(name, v, init, idx, active, out, f64::from),
            (name, TensorData::F64(v), init) => load_lanes(name, v, init, idx, active, out, |x| x),
            (name, TensorData::F16(v), init) => load_lanes(name, v, init, idx, active, out, |x| x.to_f64()),
            (name, TensorData::BF16(v), init) => load_lanes(name, v, init, idx, active, out, |x| x.to_f64()),
            _ => Err(InterpError::Internal("float load from an integer buffer".into())),
        }
    }

    /// Loads integer lanes at `idx` into `out` (inactive lanes yield 0).
    pub(crate) fn load_lanes_i(
        &self,
        buf: BufId,
        idx: &[i64],
        active: &[bool],
        out: &mut Vec<i64>,
    ) -> Result<(), InterpError> {
        match self.parts(buf)? {
            (name, TensorData::I32(v), init) => load_lanes(name, v, init, idx, active, out, i64::from),
            (name, TensorData::I8(v), init) => load_lanes(name, v, init, idx, active, out, i64::from),
            _ => Err(InterpError::Internal("integer load from a float buffer".into())),
        }
    }

    /// Stores the active float lanes of `values` at `idx`, in lane order.
    pub(crate) fn store_lanes_f(
        &mut self,
        buf: BufId,
        idx: &[i64],
        active: &[bool],
        values: &[f64],
    ) -> Result<(), InterpError> {
        let BufMem { name, read_only, storage } = &mut self.bufs[buf.0 as usize];
        let (data, init) = match storage {
            Storage::Param(d) => (&mut **d, None),
            Storage::Local { data, init } => (data, Some(init)),
            Storage::Unbound => return Err(InterpError::Internal(format!("buffer `{name}` is unbound"))),
        };
        let ro = *read_only;
        match data {
            TensorData::F32(v) => store_lanes(name, ro, v, init, idx, active, values, |x| x as f32),
            TensorData::F64(v) => store_lanes(name, ro, v, init, idx, active, values, |x| x),
            TensorData::F16(v) => store_lanes(name, ro, v, init, idx, active, values, f64_to_f16),
            TensorData::BF16(v) => store_lanes(name, ro, v, init, idx, active, values, bf16_from_f64),
            _ => Err(InterpError::Internal("float store to an integer buffer".into())),
        }
    }

    /// Stores the active integer lanes of `values` at `idx`, in lane order.
    pub(crate) fn store_lanes_i(
        &mut self,
        buf: BufId,
        idx: &[i64],
        active: &[bool],
        values: &[i64],
    ) -> Result<(), InterpError> {
        let BufMem { name, read_only, storage } = &mut self.bufs[buf.0 as usize];
        let (data, init) = match storage {
            Storage::Param(d) => (&mut **d, None),
            Storage::Local { data, init } => (data, Some(init)),
            Storage::Unbound => return Err(InterpError::Internal(format!("buffer `{name}` is unbound"))),
        };
        let ro = *read_only;
        match data {
            TensorData::I32(v) => store_lanes(name, ro, v, init, idx, active, values, |x| x as i32),
            TensorData::I8(v) => store_lanes(name, ro, v, init, idx, active, values, |x| x as i8),
            _ => Err(InterpError::Internal("integer store to a float buffer".into())),
        }
    }
}
