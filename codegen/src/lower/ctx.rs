//! The lowering context, buffer setup and the entry point.

use super::reduce::AccPlan;
use super::tails::{TailPlan, VecMode};
use super::tiles::TilePlan;
use crate::vprog::{optimize, verify, BufId, BufKind, Buffer, Builder, Lanes, Program, Reg, VerifyError};
use rustc_hash::FxHashMap as HashMap;
use scaletune_space::expr::{eval, simplify, Expr};
use scaletune_space::ids::{BlockId, LoopId, VarId};
use scaletune_space::ir::{Nest, Scope};
use scaletune_space::kind::VectorKind;
use scaletune_space::schedule::vector_lanes;
use scaletune_space::workload::Role;
use std::rc::Rc;
use thiserror::Error;

/// Lowering failed.
#[derive(Debug, Error)]
pub enum LowerError {
    /// The nest uses something the lowering cannot express.
    #[error("cannot lower `{kernel}`: {message}")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// What is unsupported.
        message: String,
    },
    /// The produced vector program is ill-typed (a lowering bug).
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

/// The vector loop currently being emitted.
#[derive(Clone, Debug)]
pub(crate) struct VecCtx {
    pub var: VarId,
    pub lanes: Lanes,
    /// All lanes are known active (the full version of a peeled/scalar tail).
    pub full: bool,
}

/// Loop variables in scope and their registers, by variable number (a
/// lookup per variable of every emitted index expression).
#[derive(Default)]
pub(crate) struct VarRegs(Vec<Option<Reg>>);

impl VarRegs {
    /// The register of `v`, if it is in scope.
    pub fn get(&self, v: &VarId) -> Option<&Reg> {
        self.0.get(v.index()).and_then(Option::as_ref)
    }

    /// True if `v` is in scope.
    pub fn contains_key(&self, v: &VarId) -> bool {
        self.get(v).is_some()
    }

    /// Brings `v` into scope in register `r`.
    pub fn insert(&mut self, v: VarId, r: Reg) {
        if self.0.len() <= v.index() {
            self.0.resize(v.index() + 1, None);
        }
        self.0[v.index()] = Some(r);
    }

    /// Takes `v` out of scope.
    pub fn remove(&mut self, v: &VarId) {
        if let Some(slot) = self.0.get_mut(v.index()) {
            *slot = None;
        }
    }
}

pub(crate) struct Lowerer {
    /// The nest being lowered, unchanged from here on (shared, so that
    /// emitting a block borrows it instead of copying the block).
    pub nest: Rc<Nest>,
    pub b: Builder,
    pub vscale_const: Option<i64>,
    pub bufs: Vec<BufId>,
    pub scalars: Vec<Reg>,
    /// The register holding each loop variable in scope.
    pub vars: VarRegs,
    pub vec: Option<VecCtx>,
    pub tails: TailPlan,
    pub modes: HashMap<LoopId, VecMode>,
    pub accs: AccPlan,
    pub active_accs: HashMap<BlockId, Reg>,
    pub tiles: TilePlan,
    pub active_tiles: HashMap<(BlockId, Vec<i64>), Reg>,
    pub unrolled: HashMap<VarId, i64>,
    /// Tensorized loops whose ZA tiles start at zero.
    pub za_zero_start: rustc_hash::FxHashSet<LoopId>,
    /// Shapes of the accesses of blocks, by access and vector variable (see [`super::access::AccessKey`]).
    pub shapes: HashMap<super::access::AccessKey, Rc<super::access::Shape>>,
}

pub(crate) type Result<T> = std::result::Result<T, LowerError>;

/// Lowers a scheduled nest to a vector program named `kernel`.
///
/// Kernel parameters: one pointer per workload tensor that is an input or
/// output (declaration order), then the scalar arguments. On fixed-length
/// targets (`nest.caps.scalable == false`) vscale is the constant of the caps
/// and every vector is fixed. The program is cleaned up by
/// [`optimize`](crate::vprog::optimize) (invariants out of loops, repeated
/// computations shared); the interpreter and LLVM both get that program.
pub fn lower(nest: &Nest, kernel: &str) -> Result<Program> {
    let mut prog = lower_unoptimized(nest, kernel)?;
    optimize(&mut prog);
    verify(&prog)?;
    Ok(prog)
}

/// [`lower`] without the verifier, neither of the emitted program nor of
/// the cleaned-up one, for callers that only read the program and lower
/// many candidates: the search's cost model computes features of thousands
/// per second. The program is the one [`lower`] returns when that one is
/// well-typed; a lowering or clean-up bug is still caught when the
/// candidate is compiled, by [`lower`]. The clean-up does not depend on the
/// types being right: it only indexes registers, and every register of an
/// emitted program was allocated by its builder.
pub fn lower_unverified(nest: &Nest, kernel: &str) -> Result<Program> {
    let mut prog = lower_raw(nest, kernel)?;
    optimize(&mut prog);
    Ok(prog)
}

/// Like [`lower`], without the clean-up of [`optimize`]: every index
/// expression is computed where it is used (for tests of that clean-up).
pub fn lower_unoptimized(nest: &Nest, kernel: &str) -> Result<Program> {
    let prog = lower_raw(nest, kernel)?;
    verify(&prog)?;
    Ok(prog)
}

/// The program as emitted, neither cleaned up nor verified.
fn lower_raw(nest: &Nest, kernel: &str) -> Result<Program> {
    // A nest that did not come through a trace (the loop-nest text format)
    // meets the same size and unrolling limits before anything is emitted.
    nest.check_limits().map_err(|e| LowerError::Unsupported { kernel: kernel.to_string(), message: e.to_string() })?;
    let mut nest = nest.clone();
    let za_zero_start = super::za::zero_started(&mut nest);
    nest.decompose_all_inits();
    // Temporaries of rows computed at their row loop keep one row.
    super::compact::compact_temps(&mut nest);
    let vscale_const = nest.caps.fixed_vscale().or_else(|| fixed_length_sve(&nest)).map(i64::from);
    // A vector loop of one fixed lane is a plain loop.
    for l in nest.all_loops() {
        if matches!(nest.loop_(l).kind, scaletune_space::ir::LoopKind::Vectorize(_)) {
            let ext = simplify(nest.extent(l), &nest);
            let ext = match vscale_const {
                Some(v) => simplify(&ext.with_vscale(v), &nest),
                None => ext,
            };
            if ext == Expr::Int(1) {
                nest.loop_mut(l).kind = scaletune_space::ir::LoopKind::Serial;
            }
        }
    }
    let tails = TailPlan::build(&nest, vscale_const);
    let accs = AccPlan::build(&nest);
    let lane_reduced: Vec<BlockId> = accs.vloop.keys().copied().collect();
    let tiles = TilePlan::build(&nest, &tails, &lane_reduced);
    let mut lw = Lowerer {
        b: Builder::new(kernel),
        nest: Rc::new(nest),
        vscale_const,
        bufs: Vec::new(),
        scalars: Vec::new(),
        vars: VarRegs::default(),
        vec: None,
        tails,
        modes: HashMap::default(),
        accs,
        active_accs: HashMap::default(),
        tiles,
        active_tiles: HashMap::default(),
        unrolled: HashMap::default(),
        za_zero_start,
        shapes: HashMap::default(),
    };
    lw.setup_buffers()?;
    let nest = Rc::clone(&lw.nest);
    for &n in &nest.root {
        lw.node(n)?;
    }
    Ok(lw.b.finish())
}

/// SVE compiled for a 128-bit vector length (the `sve` kind specialized to
/// VL 128, `vscale_range(1, 1)`): its vectors are lowered as fixed-length
/// vectors, `4*vscale` f32 lanes being 4, which LLVM emits as NEON (on
/// Neoverse V1 four FMA pipes take NEON and two take SVE). Masked memory
/// operations still use SVE predicates (see `llvm::intrinsics`). At wider
/// vector lengths, and in streaming (SME) code, vectors stay scalable.
fn fixed_length_sve(nest: &Nest) -> Option<u32> {
    let c = &nest.caps;
    let sve = nest.kinds.iter().any(|(k, caps)| *k == VectorKind::Sve && caps == c);
    (sve && c.scalable && !c.has_sme && c.vscale_values == [1]).then_some(1)
}

impl Lowerer {
    pub fn unsupported(&self, message: impl Into<String>) -> LowerError {
        LowerError::Unsupported { kernel: self.b.program().name.clone(), message: message.into() }
    }

    /// The lanes of a vector loop on this target.
    pub fn lanes_of(&self, l: LoopId) -> Result<Lanes> {
        let ext = simplify(self.nest.extent(l), &*self.nest);
        let (c, scalable) = vector_lanes(&ext).ok_or_else(|| {
            self.unsupported(format!(
                "vector loop `{}` has extent {}",
                self.nest.loop_name(l),
                self.nest.expr_text(&ext)
            ))
        })?;
        Ok(match (scalable, self.vscale_const) {
            (true, Some(v)) => Lanes::fixed(c * v as u32),
            (true, None) => Lanes::scalable(c),
            (false, _) => Lanes::fixed(c),
        })
    }

    /// Evaluates a variable-free expression at a given vscale.
    fn eval_at(&self, e: &Expr, vs: i64) -> Option<i64> {
        eval(e, &|_| None, vs, &|_, _| None).ok()
    }

    /// Coefficients (lowest power first) of the element count of a local
    /// buffer as a polynomial in vscale, or its largest value over the
    /// target's vscale domain when it is not a polynomial.
    fn local_len(&self, shape: &[Expr]) -> Result<Vec<i64>> {
        let domain: Vec<i64> = match self.vscale_const {
            Some(v) => vec![v],
            None => self.nest.caps.vscale_values.iter().map(|v| i64::from(*v)).collect(),
        };
        let mut poly = vec![1i64];
        let mut fallback = false;
        for d in shape {
            if !d.vars().is_empty() {
                return Err(self.unsupported("a local buffer's shape depends on loop variables"));
            }
            let (Some(f1), Some(f2)) = (self.eval_at(d, 1), self.eval_at(d, 2)) else {
                fallback = true;
                continue;
            };
            let (b1, a0) = (f2 - f1, 2 * f1 - f2);
            if domain.iter().all(|&v| self.eval_at(d, v) == Some(a0 + b1 * v)) && self.vscale_const.is_none() {
                let mut next = vec![0i64; poly.len() + 1];
                for (p, c) in poly.iter().enumerate() {
                    next[p] += c * a0;
                    next[p + 1] += c * b1;
                }
                poly = next;
            } else {
                fallback = true;
            }
        }
        if fallback || self.vscale_const.is_some() {
            let mut best = 0i64;
            for &v in &domain {
                let mut n = 1i64;
                for d in shape {
                    n *= self.eval_at(d, v).ok_or_else(|| self.unsupported("a local buffer has no size"))?;
                }
                best = best.max(n);
            }
            return Ok(vec![best]);
        }
        while poly.len() > 1 && poly.last() == Some(&0) {
            poly.pop();
        }
        Ok(poly)
    }

    fn setup_buffers(&mut self) -> Result<()> {
        let nest = Rc::clone(&self.nest);
        let tensors = &nest.tensors;
        let mut ids = Vec::new();
        for t in tensors {
            let param = t.scope == Scope::Global && t.role != Role::Temp;
            let kind = if param { BufKind::Param } else { BufKind::Local { len: self.local_len(&t.shape)? } };
            let len = if param {
                t.shape.iter().map(|d| d.as_int().unwrap_or(0)).product::<i64>().max(0) as usize
            } else {
                0
            };
            let id = self.b.add_buffer(Buffer {
                name: t.name.clone(),
                dtype: t.dtype,
                kind,
                len,
                read_only: t.role == Role::Input,
            });
            if param {
                self.b.add_tensor_param(id);
            }
            ids.push(id);
        }
        self.bufs = ids;
        for s in &nest.scalars {
            let r = self.b.add_scalar_param(&s.name, s.dtype);
            self.scalars.push(r);
        }
        Ok(())
    }
}
