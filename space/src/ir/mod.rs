//! The loop-nest IR: blocks (one computation each) inside a tree of loops.
//!
//! Loop extents are expressions in constants and `vscale` only (every loop
//! is rectangular); anything irregular — the tail of a split that does not
//! divide, a region that overhangs a tensor — is a block *predicate*. A block
//! keeps its statement in terms of its own iteration variables and *binds*
//! each of them to an expression over the enclosing loop variables, so loop
//! transformations only rewrite bindings and predicates.
//!
//! Ids are typed indices into arenas; transformations never reuse an id
//! (removed loops and blocks stay in the arena marked dead).

mod build;
mod exec;
mod parse;
mod print;
mod query;
mod verify;

#[cfg(test)]
mod tests;

pub use exec::ExecError;
pub use parse::{parse_nest, NestParseError};
pub use verify::VerifyError;

use crate::caps::VectorCaps;
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId, TensorId, VarId};
use crate::kind::VectorKind;
use crate::workload::{Access, AxisKind, Role, ScalarParam, UpdateOp, Value};
use crate::DType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Loops or blocks a query holds inline before it allocates: the nests the
/// search schedules have a few dozen nodes, and lowering and replay ask for
/// a node's ancestors or a loop's blocks by the hundred thousand.
pub const INLINE_NODES: usize = 16;

/// Loops a query returns (outermost or pre-order first).
pub type Loops = smallvec::SmallVec<[LoopId; INLINE_NODES]>;

/// Blocks a query returns (pre-order).
pub type Blocks = smallvec::SmallVec<[BlockId; INLINE_NODES]>;

/// A child of a loop body (or of the root sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Node {
    /// A loop.
    Loop(LoopId),
    /// A block.
    Block(BlockId),
}

/// How a vectorized loop with a partial last vector is lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tail {
    /// Every iteration masked with an active-lane mask (`whilelo`).
    Predicate,
    /// Unmasked full vectors, then one masked remainder iteration.
    Peel,
    /// Unmasked full vectors, then a scalar remainder loop.
    Scalar,
}

impl Tail {
    /// All strategies.
    pub const ALL: [Tail; 3] = [Tail::Predicate, Tail::Peel, Tail::Scalar];

    /// The keyword in trace text.
    pub fn name(self) -> &'static str {
        match self {
            Tail::Predicate => "predicate",
            Tail::Peel => "peel",
            Tail::Scalar => "scalar",
        }
    }

    /// Parses a keyword.
    pub fn parse(s: &str) -> Option<Tail> {
        Tail::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl std::fmt::Display for Tail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a loop does with its iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LoopKind {
    /// A plain sequential loop.
    Serial,
    /// Fully unrolled at lowering.
    Unroll,
    /// Executed as one vector operation of `extent` lanes.
    Vectorize(Tail),
    /// Iterations distributed over threads.
    Parallel,
}

/// A variable's name and range (`0..extent`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarInfo {
    /// Unique name within the nest.
    pub name: std::sync::Arc<str>,
    /// The variable ranges over `0..extent` (constants and vscale only).
    pub extent: Expr,
}

/// A loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Loop {
    /// The loop variable (its extent is the loop's extent).
    pub var: VarId,
    /// Serial, unrolled, vectorized or parallel.
    pub kind: LoopKind,
    /// Free-form annotations.
    pub annotations: BTreeMap<String, String>,
    /// Children in execution order.
    pub body: Vec<Node>,
    /// Enclosing loop, `None` at the root.
    pub parent: Option<LoopId>,
    /// False once removed by a transformation.
    pub alive: bool,
}

/// A block iteration variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterVar {
    /// The variable (its extent is the iteration extent).
    pub var: VarId,
    /// Spatial or reduction.
    pub kind: AxisKind,
}

/// `lhs < rhs`, over loop variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pred {
    /// Left side.
    pub lhs: Expr,
    /// Right side (exclusive bound).
    pub rhs: Expr,
}

/// One computation: `lhs op= rhs` for every point of its iteration space
/// where all predicates hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Unique name.
    pub name: String,
    /// Iteration variables.
    pub iters: Vec<IterVar>,
    /// One expression over loop variables per iteration variable.
    pub bindings: Vec<Expr>,
    /// Conditions over loop variables under which the block executes.
    pub predicates: Vec<Pred>,
    /// The element written (over iteration variables, and for local caches
    /// also enclosing loop variables).
    pub lhs: Access,
    /// Combination with the previous value.
    pub op: UpdateOp,
    /// The value (over iteration variables and enclosing loop variables).
    pub rhs: Value,
    /// If true, `lhs` is set to the op's neutral element before the first
    /// iteration of the reduction (when every reduction variable is 0).
    pub init: bool,
    /// Enclosing loop, `None` at the root.
    pub parent: Option<LoopId>,
    /// Free-form annotations.
    pub annotations: BTreeMap<String, String>,
    /// False once removed.
    pub alive: bool,
}

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// A workload tensor (kernel argument, or a temp when the role is `Temp`).
    Global,
    /// A scratch buffer created by a cache primitive.
    Local,
}

/// A tensor of the nest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    /// Unique name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Row-major shape (constants and vscale).
    pub shape: Vec<Expr>,
    /// Role in the workload (locals are `Temp`).
    pub role: Role,
    /// Global or local.
    pub scope: Scope,
    /// For index tensors: the half-open value range.
    pub range: Option<(i64, i64)>,
}

/// A scheduled (or initial) loop nest for one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Nest {
    /// Workload name.
    pub name: String,
    /// Tensors: the workload's first (same ids), then locals.
    pub tensors: Vec<TensorInfo>,
    /// Scalar arguments.
    pub scalars: Vec<ScalarParam>,
    /// All variables ever created.
    pub vars: Vec<VarInfo>,
    /// All loops ever created.
    pub loops: Vec<Loop>,
    /// All blocks ever created.
    pub blocks: Vec<Block>,
    /// Top-level children in execution order.
    pub root: Vec<Node>,
    /// The vector capabilities the nest is scheduled for (vscale domain).
    pub caps: VectorCaps,
    /// The kinds of vectors the target offers, by name (`use_vectors` picks one).
    #[serde(default)]
    pub kinds: Vec<(VectorKind, VectorCaps)>,
    /// True once a trace instruction has transformed the nest.
    #[serde(default)]
    pub transformed: bool,
}

impl Nest {
    /// Offers named vector kinds (from the target) for `use_vectors`.
    pub fn with_kinds(mut self, kinds: Vec<(VectorKind, VectorCaps)>) -> Nest {
        self.kinds = kinds;
        self
    }

    /// Widest element type (in bits) of the tensors the blocks under `l` access.
    pub fn widest_bits(&self, l: LoopId) -> u32 {
        let mut bits = 8;
        for b in self.blocks_in(Node::Loop(l)) {
            let blk = self.block(b);
            bits = bits.max(self.tensor(blk.lhs.tensor).dtype.bits());
            for a in blk.rhs.reads() {
                bits = bits.max(self.tensor(a.tensor).dtype.bits());
            }
        }
        bits
    }

    /// A loop.
    pub fn loop_(&self, l: LoopId) -> &Loop {
        &self.loops[l.index()]
    }

    /// A loop, mutably.
    pub fn loop_mut(&mut self, l: LoopId) -> &mut Loop {
        &mut self.loops[l.index()]
    }

    /// A block.
    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.index()]
    }

    /// A block, mutably.
    pub fn block_mut(&mut self, b: BlockId) -> &mut Block {
        &mut self.blocks[b.index()]
    }

    /// A variable.
    pub fn var(&self, v: VarId) -> &VarInfo {
        &self.vars[v.index()]
    }

    /// A tensor.
    pub fn tensor(&self, t: TensorId) -> &TensorInfo {
        &self.tensors[t.index()]
    }

    /// The extent of a loop.
    pub fn extent(&self, l: LoopId) -> &Expr {
        &self.var(self.loop_(l).var).extent
    }

    /// The name of a loop's variable.
    pub fn loop_name(&self, l: LoopId) -> &str {
        &self.var(self.loop_(l).var).name
    }

    /// Creates a variable with a name unique in the nest (suffixing `_1`, `_2`, ...).
    pub fn new_var(&mut self, base: &str, extent: Expr) -> VarId {
        let name = self.unique_name(base);
        self.vars.push(VarInfo { name: name.into(), extent });
        VarId(self.vars.len() as u32 - 1)
    }

    /// A variable name not yet used in the nest.
    pub fn unique_name(&self, base: &str) -> String {
        let taken = |n: &str| self.vars.iter().any(|v| &*v.name == n);
        if !taken(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}_{i}")).find(|n| !taken(n)).expect("an unused name exists")
    }

    /// A block name not yet used in the nest.
    pub fn unique_block_name(&self, base: &str) -> String {
        let taken = |n: &str| self.blocks.iter().any(|b| b.name == n);
        if !taken(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}_{i}")).find(|n| !taken(n)).expect("an unused name exists")
    }

    /// A tensor name not yet used in the nest.
    pub fn unique_tensor_name(&self, base: &str) -> String {
        let taken = |n: &str| self.tensors.iter().any(|t| t.name == n);
        if !taken(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}_{i}")).find(|n| !taken(n)).expect("an unused name exists")
    }

    /// Adds a loop (not yet attached to a parent body).
    pub fn add_loop(&mut self, var: VarId, kind: LoopKind, body: Vec<Node>, parent: Option<LoopId>) -> LoopId {
        self.loops.push(Loop { var, kind, annotations: BTreeMap::new(), body, parent, alive: true });
        LoopId(self.loops.len() as u32 - 1)
    }

    /// Adds a block (not yet attached to a parent body).
    pub fn add_block(&mut self, block: Block) -> BlockId {
        self.blocks.push(block);
        BlockId(self.blocks.len() as u32 - 1)
    }

    /// Adds a tensor.
    pub fn add_tensor(&mut self, t: TensorInfo) -> TensorId {
        self.tensors.push(t);
        TensorId(self.tensors.len() as u32 - 1)
    }

    /// The body a node lives in: the parent loop's body or the root.
    pub fn siblings_mut(&mut self, parent: Option<LoopId>) -> &mut Vec<Node> {
        match parent {
            Some(p) => &mut self.loops[p.index()].body,
            None => &mut self.root,
        }
    }

    /// The body a node lives in.
    pub fn siblings(&self, parent: Option<LoopId>) -> &Vec<Node> {
        match parent {
            Some(p) => &self.loops[p.index()].body,
            None => &self.root,
        }
    }

    /// The parent of a node.
    pub fn parent_of(&self, n: Node) -> Option<LoopId> {
        match n {
            Node::Loop(l) => self.loop_(l).parent,
            Node::Block(b) => self.block(b).parent,
        }
    }

    /// Sets the parent of a node.
    pub fn set_parent(&mut self, n: Node, parent: Option<LoopId>) {
        match n {
            Node::Loop(l) => self.loop_mut(l).parent = parent,
            Node::Block(b) => self.block_mut(b).parent = parent,
        }
    }
}
