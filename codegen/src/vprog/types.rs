//! Types, registers, operations and statements of the vector program.

use scaletune_space::DType;
use std::fmt;

/// Element type of a register: a data dtype, the 64-bit index type, or a boolean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Elem {
    /// A data element type.
    Data(DType),
    /// Signed 64-bit integer used for loop variables, indices and offsets.
    Index,
    /// A boolean (scalar condition, or one lane of a mask).
    Bool,
}

impl Elem {
    /// Shorthand for `Elem::Data(DType::F32)`.
    pub const F32: Elem = Elem::Data(DType::F32);
    /// Shorthand for `Elem::Data(DType::F64)`.
    pub const F64: Elem = Elem::Data(DType::F64);
    /// Shorthand for `Elem::Data(DType::I32)`.
    pub const I32: Elem = Elem::Data(DType::I32);

    /// True for floating-point data elements.
    pub fn is_float(self) -> bool {
        matches!(self, Elem::Data(d) if d.is_float())
    }

    /// True for integer elements (data integers and the index type).
    pub fn is_int(self) -> bool {
        matches!(self, Elem::Index) || matches!(self, Elem::Data(d) if !d.is_float())
    }

    /// Width in bits (bool is 1).
    pub fn bits(self) -> u32 {
        match self {
            Elem::Data(d) => d.bits(),
            Elem::Index => 64,
            Elem::Bool => 1,
        }
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Data(d) => write!(f, "{d}"),
            Elem::Index => f.write_str("idx"),
            Elem::Bool => f.write_str("bool"),
        }
    }
}

/// The number of lanes of a vector: `min` lanes, times vscale if `scalable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lanes {
    /// Lanes per unit of vscale (scalable) or the exact lane count (fixed).
    pub min: u32,
    /// True for `<vscale x min x T>`.
    pub scalable: bool,
}

impl Lanes {
    /// A fixed lane count.
    pub fn fixed(n: u32) -> Lanes {
        Lanes { min: n, scalable: false }
    }

    /// A scalable lane count `n * vscale`.
    pub fn scalable(n: u32) -> Lanes {
        Lanes { min: n, scalable: true }
    }

    /// `n` times as many lanes, scalable or not as `self`.
    pub fn times(self, n: u32) -> Lanes {
        Lanes { min: self.min * n, scalable: self.scalable }
    }

    /// The concrete lane count at a given vscale.
    pub fn count(self, vscale: u32) -> usize {
        if self.scalable {
            self.min as usize * vscale as usize
        } else {
            self.min as usize
        }
    }
}

impl fmt::Display for Lanes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scalable {
            write!(f, "vscale x {}", self.min)
        } else {
            write!(f, "{}", self.min)
        }
    }
}

/// The type of a register: a scalar or a vector of `lanes` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ty {
    /// Element type.
    pub elem: Elem,
    /// `None` for a scalar.
    pub lanes: Option<Lanes>,
}

impl Ty {
    /// A scalar type.
    pub fn scalar(elem: Elem) -> Ty {
        Ty { elem, lanes: None }
    }

    /// A vector type.
    pub fn vector(elem: Elem, lanes: Lanes) -> Ty {
        Ty { elem, lanes: Some(lanes) }
    }

    /// The scalar index type.
    pub fn index() -> Ty {
        Ty::scalar(Elem::Index)
    }

    /// The scalar boolean type.
    pub fn bool() -> Ty {
        Ty::scalar(Elem::Bool)
    }

    /// A mask of `lanes` booleans.
    pub fn mask(lanes: Lanes) -> Ty {
        Ty::vector(Elem::Bool, lanes)
    }

    /// The same shape with another element type.
    pub fn with_elem(self, elem: Elem) -> Ty {
        Ty { elem, lanes: self.lanes }
    }

    /// True for vectors.
    pub fn is_vector(self) -> bool {
        self.lanes.is_some()
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lanes {
            None => write!(f, "{}", self.elem),
            Some(l) => write!(f, "<{} x {}>", l, self.elem),
        }
    }
}

/// A virtual register, an index into [`Program::regs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u32);

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A buffer, an index into [`Program::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufId(pub u32);

/// Where a buffer's memory comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BufKind {
    /// A pointer argument of the kernel (a workload tensor).
    Param,
    /// Scratch memory owned by the kernel, allocated on entry; its length in
    /// elements is the polynomial `sum(len[p] * vscale^p)`.
    Local {
        /// Coefficients of the length polynomial in vscale, lowest power first.
        len: Vec<i64>,
    },
}

/// A memory region holding elements of one dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// Tensor name (for printing and symbol names).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Parameter or local.
    pub kind: BufKind,
    /// Number of elements for parameters (locals use `BufKind::Local::len`).
    pub len: usize,
    /// True if the kernel only reads this buffer.
    pub read_only: bool,
}

impl Buffer {
    /// The length in elements at a given vscale.
    pub fn len_at(&self, vscale: u32) -> usize {
        match &self.kind {
            BufKind::Param => self.len,
            BufKind::Local { len } => {
                let mut total: i64 = 0;
                let mut pow: i64 = 1;
                for c in len {
                    total += c * pow;
                    pow *= i64::from(vscale);
                }
                total.max(0) as usize
            }
        }
    }
}

/// A kernel parameter, in signature order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// A pointer to a tensor's elements.
    Tensor(BufId),
    /// A scalar passed by value, available in a register.
    Scalar {
        /// Parameter name.
        name: String,
        /// The register holding it on entry.
        reg: Reg,
    },
}

/// A scalar constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    /// A floating-point constant of the given dtype (stored as f64).
    Float(f64, DType),
    /// An integer constant of the given element type (data integer or index).
    Int(i64, Elem),
    /// A boolean.
    Bool(bool),
}

/// Consistent with `PartialEq`: `0.0` and `-0.0` are equal and hash alike
/// (NaN equals nothing, so its hash is free).
impl std::hash::Hash for Const {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Const::Float(v, d) => {
                (if *v == 0.0 { 0 } else { v.to_bits() }).hash(h);
                d.hash(h);
            }
            Const::Int(v, e) => {
                v.hash(h);
                e.hash(h);
            }
            Const::Bool(b) => b.hash(h),
        }
    }
}

impl Const {
    /// The element type of the constant.
    pub fn elem(&self) -> Elem {
        match self {
            Const::Float(_, d) => Elem::Data(*d),
            Const::Int(_, e) => *e,
            Const::Bool(_) => Elem::Bool,
        }
    }
}

/// Binary operations; both operands have the same type (scalar or vector).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Addition (wrapping for integers).
    Add,
    /// Subtraction (wrapping for integers).
    Sub,
    /// Multiplication (wrapping for integers).
    Mul,
    /// Floating-point division.
    Div,
    /// Integer division rounding toward negative infinity. A zero divisor and
    /// `MIN / -1` are errors (the interpreter reports them; emitted code
    /// gives an unspecified value without trapping).
    FloorDiv,
    /// Integer remainder with the sign of the divisor (`a - b*floordiv(a,b)`).
    FloorMod,
    /// Minimum (floats: `minnum`, NaN-ignoring).
    Min,
    /// Maximum (floats: `maxnum`, NaN-ignoring).
    Max,
    /// Bitwise and (integers) or logical and (bools).
    And,
    /// Bitwise or (integers) or logical or (bools).
    Or,
    /// Shift left (integers).
    Shl,
    /// Arithmetic shift right (integers).
    Shr,
}

/// Unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Negation.
    Neg,
    /// Absolute value.
    Abs,
    /// Square root (floats).
    Sqrt,
    /// Round toward negative infinity (floats).
    Floor,
    /// Round to nearest, ties to even (floats).
    RoundEven,
    /// Logical not (bools).
    Not,
}

/// Comparisons; the result is a bool of the operands' shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<` (signed for integers, ordered for floats).
    Lt,
    /// `<=`.
    Le,
    /// `==`.
    Eq,
    /// `!=` (unordered for floats: true if an operand is NaN).
    Ne,
}

/// Horizontal reductions of a vector to a scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum of all lanes (any association order).
    Add,
    /// Maximum of all lanes.
    Max,
    /// Minimum of all lanes.
    Min,
}

/// An operation producing one value.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Op {
    /// Copy of another register (same type).
    Copy(Reg),
    /// A scalar constant.
    Const(Const),
    /// The runtime value of vscale (index type).
    VScale,
    /// Elementwise binary operation.
    Bin(BinOp, Reg, Reg),
    /// Elementwise unary operation.
    Un(UnOp, Reg),
    /// Fused multiply-add `a*b + c` (floats).
    Fma(Reg, Reg, Reg),
    /// Elementwise comparison.
    Cmp(CmpOp, Reg, Reg),
    /// `cond ? a : b`, elementwise (cond a bool of the same shape, or a scalar bool).
    Select(Reg, Reg, Reg),
    /// Numeric conversion to another element type (same shape). Float to int
    /// truncates toward zero and saturates (NaN converts to 0); int to int
    /// sign-extends or truncates.
    Cast(Reg, Elem),
    /// Reinterpret the bits as another element type of the same width.
    Bitcast(Reg, Elem),
    /// A vector with every lane equal to a scalar.
    Splat(Reg, Lanes),
    /// The index vector `0, 1, 2, ...`.
    Step(Lanes),
    /// Mask whose lane `i` is `base + i < bound` (signed, without overflow; scalar index operands).
    ActiveLaneMask {
        /// First element index covered by lane 0.
        base: Reg,
        /// Exclusive upper bound.
        bound: Reg,
        /// Mask width.
        lanes: Lanes,
    },
    /// Scalar load of element `index` of `buf`.
    Load {
        /// Buffer read.
        buf: BufId,
        /// Element index (scalar index type).
        index: Reg,
    },
    /// Contiguous vector load of elements `base .. base+lanes`; masked-off
    /// lanes read nothing and yield zero.
    VLoad {
        /// Buffer read.
        buf: BufId,
        /// Element index of lane 0.
        base: Reg,
        /// Vector width.
        lanes: Lanes,
        /// Optional mask.
        mask: Option<Reg>,
    },
    /// Gather of elements at an index vector; masked-off lanes yield zero.
    Gather {
        /// Buffer read.
        buf: BufId,
        /// Index vector (index elements).
        indices: Reg,
        /// Optional mask.
        mask: Option<Reg>,
    },
    /// Horizontal reduction of all lanes to a scalar.
    Reduce(ReduceOp, Reg),
    /// Extract lane `lane` (a scalar index) of a vector.
    Extract(Reg, Reg),
    /// Two vectors of the same type interleaved lane by lane into one of
    /// twice the lanes: `a[0], b[0], a[1], b[1], ...` (a `zip1`/`zip2` pair).
    Interleave(Reg, Reg),
    /// Vertical slice `slice` (a scalar index below `L`) of the f32 ZA tile
    /// `tile`: element `slice` of every row, as an f32 vector of `L` lanes
    /// (SME `mova`). It reads the ZA state, so it is not pure.
    ZaReadVertical {
        /// Tile number, 0 to 3.
        tile: u8,
        /// Slice (column) number.
        slice: Reg,
    },
}

/// Hints attached to a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LoopHint {
    /// No hint.
    #[default]
    None,
    /// Ask the backend to unroll by this factor.
    Unroll(u32),
    /// Iterations are independent and may run in parallel.
    Parallel,
}

/// A structured statement.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Stmt {
    /// `dst = op`.
    Assign {
        /// Destination register.
        dst: Reg,
        /// Operation.
        op: Op,
    },
    /// Scalar store of `value` at element `index`.
    Store {
        /// Buffer written.
        buf: BufId,
        /// Element index.
        index: Reg,
        /// Scalar value.
        value: Reg,
    },
    /// Contiguous vector store at `base`; masked-off lanes write nothing.
    VStore {
        /// Buffer written.
        buf: BufId,
        /// Element index of lane 0.
        base: Reg,
        /// Vector value.
        value: Reg,
        /// Optional mask.
        mask: Option<Reg>,
    },
    /// Scatter of a vector to an index vector; masked-off lanes write nothing.
    /// Lanes with equal indices write in lane order (the last one wins).
    Scatter {
        /// Buffer written.
        buf: BufId,
        /// Index vector.
        indices: Reg,
        /// Vector value.
        value: Reg,
        /// Optional mask.
        mask: Option<Reg>,
    },
    /// `for var in start..end { body }` with step 1 (scalar index registers).
    Loop {
        /// Loop variable register (index type), assigned by the loop.
        var: Reg,
        /// Inclusive start.
        start: Reg,
        /// Exclusive end.
        end: Reg,
        /// Loop body.
        body: Vec<Stmt>,
        /// Backend hint.
        hint: LoopHint,
    },
    /// Sets every element of the f32 ZA tile `za<tile>.s` to zero (SME).
    ZaZero {
        /// Tile number, 0 to 3.
        tile: u8,
    },
    /// Horizontal slice `row` of ZA tile `tile` = `buf[base..base+L]` (`L`
    /// lanes of a streaming f32 vector); masked-off lanes become zero (SME).
    ZaLoad {
        /// Tile number, 0 to 3.
        tile: u8,
        /// Slice (row) number, a scalar index below `L`.
        row: Reg,
        /// Buffer read.
        buf: BufId,
        /// Element index of lane 0.
        base: Reg,
        /// Optional mask (`L` lanes).
        mask: Option<Reg>,
    },
    /// `buf[base..base+L]` = horizontal slice `row` of ZA tile `tile`;
    /// masked-off lanes write nothing (SME).
    ZaStore {
        /// Tile number, 0 to 3.
        tile: u8,
        /// Slice (row) number, a scalar index below `L`.
        row: Reg,
        /// Buffer written.
        buf: BufId,
        /// Element index of lane 0.
        base: Reg,
        /// Optional mask (`L` lanes).
        mask: Option<Reg>,
    },
    /// Outer product and accumulate into tile `tile` of `L x L` 32-bit
    /// elements (SME). With `a`, `b` f32 vectors of `L` lanes (`fmopa`):
    /// `tile[r][c] += a[r] * b[c]` (fused) for every `r` active in `a_mask`
    /// and `c` active in `b_mask`. The widening forms hold `g` consecutive
    /// reduction elements per row and column: f16 or bf16 vectors of `2L`
    /// lanes (`g = 2`, f32 tile, widening `fmopa` / `bfmopa`) or i8 vectors
    /// of `4L` lanes (`g = 4`, i32 tile, `smopa`), `tile[r][c] += sum over
    /// q < g of a[g*r + q] * b[g*c + q]` over the pairs whose lanes are
    /// active in both masks (masks of `g*L` lanes). For bf16 every product,
    /// the pair's sum and the addition round to f32 to odd, and subnormals
    /// flush to zero (BFDotAdd without FEAT_EBF16).
    Mopa {
        /// Tile number, 0 to 3.
        tile: u8,
        /// The column vector (one element per row of the tile).
        a: Reg,
        /// The row vector (one element per column of the tile).
        b: Reg,
        /// Rows taking part.
        a_mask: Option<Reg>,
        /// Columns taking part.
        b_mask: Option<Reg>,
    },
    /// `if cond { then_body } else { else_body }` on a scalar bool.
    If {
        /// Condition register.
        cond: Reg,
        /// Taken when true.
        then_body: Vec<Stmt>,
        /// Taken when false.
        else_body: Vec<Stmt>,
    },
}

/// One kernel function. Equal programs compile to the same code on a
/// target (its [`Hash`] is consistent with `==`: see [`Const`]'s).
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Program {
    /// Symbol name of the kernel.
    pub name: String,
    /// Types of all registers, indexed by `Reg`.
    pub regs: Vec<Ty>,
    /// Buffers, indexed by `BufId`.
    pub buffers: Vec<Buffer>,
    /// Kernel parameters in signature order.
    pub params: Vec<Param>,
    /// Function body.
    pub body: Vec<Stmt>,
}

/// Number of f32 ZA tiles (`za0.s`..`za3.s`).
pub const ZA_TILES: u8 = 4;

impl Program {
    /// True if any statement of the program, at any depth of loops and
    /// branches, satisfies `f`.
    pub fn any_stmt(&self, f: impl Fn(&Stmt) -> bool) -> bool {
        fn any(body: &[Stmt], f: &dyn Fn(&Stmt) -> bool) -> bool {
            body.iter().any(|s| {
                f(s) || match s {
                    Stmt::Loop { body, .. } => any(body, f),
                    Stmt::If { then_body, else_body, .. } => any(then_body, f) || any(else_body, f),
                    _ => false,
                }
            })
        }
        any(&self.body, &f)
    }

    /// True if the program uses the ZA array (SME tiles).
    pub fn uses_za(&self) -> bool {
        self.any_stmt(|s| {
            matches!(s, Stmt::ZaZero { .. } | Stmt::ZaLoad { .. } | Stmt::ZaStore { .. } | Stmt::Mopa { .. })
        })
    }

    /// True if the program accumulates integer outer products into ZA
    /// (`smopa`: i8 quads into 32-bit tiles).
    pub fn uses_integer_outer_products(&self) -> bool {
        self.any_stmt(
            |s| matches!(s, Stmt::Mopa { a, .. } if matches!(self.ty(*a).elem, Elem::Data(d) if !d.is_float())),
        )
    }

    /// The type of a register.
    pub fn ty(&self, r: Reg) -> Ty {
        self.regs[r.0 as usize]
    }

    /// The buffer with the given id.
    pub fn buffer(&self, b: BufId) -> &Buffer {
        &self.buffers[b.0 as usize]
    }
}
