//! Estimated cycles: executions of each kernel block times its llvm-mca cost, with a cache of block costs.
//!
//! The plugin reports blocks as (address, instruction count): the
//! instructions one execution of a translated block runs inside the kernel,
//! contiguous from the address. A translated block ends at every branch but
//! may start anywhere (the kernel's entry block runs on into the first loop
//! body, a block may be split at a page boundary), so blocks are not the
//! compiler's basic blocks; each distinct (address, count) is priced on its
//! own, except that a block ending without a control transfer is priced
//! together with the block it runs into ([`super::fallthrough`]), which
//! keeps the sum exact with respect to the executed instruction stream:
//!
//! ```text
//! est_cycles = Σ_blocks executions(block) × cycles(block)
//! cycles(block) = llvm-mca TotalCycles / Iterations of the block's instructions
//! ```
//!
//! SME instructions, which llvm-mca cannot model, are priced from the
//! target's throughput table instead ([`super::sme`]); their cycles are
//! added to the block's and reported apart as [`Estimate::sme_cycles`].
//!
//! The kernel's blocks include those of its outlined parallel-loop bodies
//! (see [`super::elf`]). Costs are cached per kernel (the SHA-256 of the
//! code and addresses of its functions, the CPU model, features and iterations) in memory and, with
//! [`CycleEstimator::with_disk_cache`], as JSON files, so a kernel measured
//! at several vector lengths or again later runs llvm-mca only on blocks it
//! has not priced yet.

use super::disasm::{disassemble, is_control_transfer, mattr, mca_text, Insn};
use super::elf::{kernel_code, KernelRange};
use super::fallthrough::join_fallthrough;
use super::mca::{BlockCost, McaModel};
use super::plugin::{BlockCount, Counts};
use super::sme::{split_block, SmeCounts};
use super::EmulationError;
use scaletune_codegen::target::Target;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One executed block, priced.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockEstimate {
    /// The block and its executions.
    pub block: BlockCount,
    /// Its cost per execution.
    pub cost: BlockCost,
}

/// The estimate for one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Σ executions × cycles per execution (the figure reported as `est_cycles`).
    pub cycles: f64,
    /// Σ executions × block reciprocal throughput (resource bound only).
    pub rthroughput_cycles: f64,
    /// The part of `cycles` that the target's SME throughput table gives
    /// (0 when the kernel executed no SME instruction).
    pub sme_cycles: f64,
    /// Every block priced, in the plugin's order (a block that runs into
    /// the next without a branch is one block with it, see
    /// [`super::fallthrough`]).
    pub blocks: Vec<BlockEstimate>,
}

/// The cached costs of one kernel under one model.
#[derive(Default, Serialize, Deserialize)]
struct KernelCosts {
    /// (address, instructions) -> cost, or why llvm-mca rejected the block.
    blocks: BTreeMap<String, Result<BlockCost, String>>,
    /// (address, instructions) -> cycles of the block's SME instructions (table-priced part of its cost).
    #[serde(default)]
    sme: BTreeMap<String, f64>,
    /// (address, instructions) of an executed block -> the address of the
    /// instruction after it when it does not end in a control transfer.
    #[serde(default)]
    falls_into: BTreeMap<String, Option<u64>>,
    #[serde(skip)]
    insns: Option<Vec<Insn>>,
}

fn block_key(addr: u64, n: u64) -> String {
    format!("{addr:#x}+{n}")
}

/// Prices plugin counts with llvm-mca; cheap to share between runner slots.
#[derive(Debug, Default)]
pub struct CycleEstimator {
    memory: Mutex<HashMap<String, Arc<Mutex<KernelCosts>>>>,
    disk: Option<PathBuf>,
}

impl std::fmt::Debug for KernelCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCosts").field("blocks", &self.blocks.len()).finish()
    }
}

impl CycleEstimator {
    /// An estimator with an in-memory cache.
    pub fn new() -> CycleEstimator {
        CycleEstimator::default()
    }

    /// The `mca` cache directory of [`scaletune_codegen::tools::cache_dir`].
    pub fn default_dir() -> PathBuf {
        scaletune_codegen::tools::cache_dir("mca")
    }

    /// Also keeps block costs in `dir` (one JSON file per kernel and model).
    pub fn with_disk_cache(mut self, dir: impl Into<PathBuf>) -> CycleEstimator {
        self.disk = Some(dir.into());
        self
    }

    /// The llvm-mca model of a target, if it has one.
    pub fn model(target: &Target) -> Option<McaModel> {
        target.mca_cpu.as_ref().map(|cpu| McaModel::new(&target.triple, cpu, mattr(target)))
    }

    /// Estimates the cycles of the counted run of the kernel `range` in the
    /// executable `exe` (whose bytes are `exe_bytes`) on `target`'s model.
    pub fn estimate(
        &self,
        exe: &Path,
        exe_bytes: &[u8],
        range: &KernelRange,
        counts: &Counts,
        target: &Target,
    ) -> Result<Estimate, EmulationError> {
        let model = CycleEstimator::model(target).ok_or_else(|| {
            EmulationError::NoEstimate(format!("target `{}` has no llvm-mca model (mca_cpu)", target.name))
        })?;
        let table = target
            .sme
            .as_ref()
            .map(|s| format!("{} {} {}", s.mopa_per_cycle, s.za_load_per_cycle, s.za_store_per_cycle));
        let key = cache_key(&kernel_code(exe, exe_bytes, range)?, &model, table.as_deref().unwrap_or(""));
        let entry = {
            let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            let disk = self.disk.as_deref();
            Arc::clone(memory.entry(key.clone()).or_insert_with(|| Arc::new(Mutex::new(load(disk, &key)))))
        };
        let mut guard = entry.lock().unwrap_or_else(|p| p.into_inner());
        let costs = &mut *guard;
        let unknown: Vec<BlockCount> = counts
            .blocks
            .iter()
            .filter(|b| !costs.falls_into.contains_key(&block_key(b.addr, b.n_insns)))
            .copied()
            .collect();
        if !unknown.is_empty() {
            if costs.insns.is_none() {
                costs.insns = Some(disassemble(exe, range, target)?);
            }
            let insns = costs.insns.as_deref().unwrap_or_default();
            for b in &unknown {
                let next = falls_into(insns, b, target);
                costs.falls_into.insert(block_key(b.addr, b.n_insns), next);
            }
        }
        let blocks = join_fallthrough(&counts.blocks, |b| {
            costs.falls_into.get(&block_key(b.addr, b.n_insns)).copied().flatten()
        });
        let mut missing: Vec<BlockCount> = Vec::new();
        for b in &blocks {
            if !costs.blocks.contains_key(&block_key(b.addr, b.n_insns)) && !missing.contains(b) {
                missing.push(*b);
            }
        }
        if !missing.is_empty() {
            if costs.insns.is_none() {
                costs.insns = Some(disassemble(exe, range, target)?);
            }
            let insns = costs.insns.as_deref().unwrap_or_default();
            let texts: Vec<Vec<String>> =
                missing.iter().map(|b| block_text(insns, b, range, target)).collect::<Result<_, EmulationError>>()?;
            let split: Vec<(Vec<String>, SmeCounts)> = texts.iter().map(|t| split_block(t)).collect();
            // llvm-mca prices what is left of each block (a block of SME
            // instructions only costs nothing there).
            let priced_rest = model
                .block_costs(&split.iter().map(|(r, _)| r.clone()).filter(|r| !r.is_empty()).collect::<Vec<_>>())?;
            let mut priced_rest = priced_rest.into_iter();
            for (b, (rest, sme)) in missing.iter().zip(&split) {
                let mut cost = if rest.is_empty() {
                    Ok(BlockCost { cycles: 0.0, rthroughput: 0.0 })
                } else {
                    priced_rest.next().unwrap_or_else(|| Err("llvm-mca priced too few blocks".into()))
                };
                let mut sme_cycles = 0.0;
                if !sme.is_empty() {
                    match &target.sme {
                        Some(t) => {
                            sme_cycles = sme.cycles(t);
                            if let Ok(c) = &mut cost {
                                c.cycles += sme_cycles;
                                c.rthroughput += sme_cycles;
                            }
                        }
                        None => {
                            cost = Err(format!(
                                "SME instructions, which llvm-mca has no model of, and target `{}` has no [sme] throughput table",
                                target.name
                            ))
                        }
                    }
                }
                costs.blocks.insert(block_key(b.addr, b.n_insns), cost);
                costs.sme.insert(block_key(b.addr, b.n_insns), sme_cycles);
            }
        }
        if !missing.is_empty() || !unknown.is_empty() {
            save(self.disk.as_deref(), &key, costs);
        }
        let mut est = Estimate {
            cycles: 0.0,
            rthroughput_cycles: 0.0,
            sme_cycles: 0.0,
            blocks: Vec::with_capacity(blocks.len()),
        };
        for b in &blocks {
            match costs.blocks.get(&block_key(b.addr, b.n_insns)) {
                Some(Ok(cost)) => {
                    est.cycles += b.executions as f64 * cost.cycles;
                    est.rthroughput_cycles += b.executions as f64 * cost.rthroughput;
                    let sme = costs.sme.get(&block_key(b.addr, b.n_insns)).copied().unwrap_or(0.0);
                    est.sme_cycles += b.executions as f64 * sme;
                    est.blocks.push(BlockEstimate { block: *b, cost: *cost });
                }
                Some(Err(why)) => {
                    return Err(EmulationError::NoEstimate(format!(
                        "the block at {:#x} ({} instructions, executed {} times) cannot be modelled: {why}",
                        b.addr, b.n_insns, b.executions
                    )))
                }
                None => return Err(EmulationError::NoEstimate(format!("no cost for the block at {:#x}", b.addr))),
            }
        }
        Ok(est)
    }
}

/// The address of the instruction after block `b` if its last instruction
/// is not a control transfer (it runs into the code there); `None` if it
/// is, or if the block does not match the disassembly (pricing reports that).
fn falls_into(insns: &[Insn], b: &BlockCount, target: &Target) -> Option<u64> {
    let first = insns.binary_search_by_key(&b.addr, |i| i.addr).ok()?;
    let last = first.checked_add(usize::try_from(b.n_insns).ok()?)?;
    let end = insns.get(first..last)?.last()?;
    (!is_control_transfer(&end.text, target.arch)).then(|| insns.get(last).map(|i| i.addr)).flatten()
}

/// The llvm-mca lines of one block, checked against the disassembly.
fn block_text(
    insns: &[Insn],
    b: &BlockCount,
    range: &KernelRange,
    target: &Target,
) -> Result<Vec<String>, EmulationError> {
    let function = range.function_at(b.addr);
    let name = function.map_or(range.symbol.as_str(), |f| f.name.as_str());
    let mismatch = |why: &str| {
        EmulationError::Plugin(format!(
            "the block at {:#x} ({} instructions, {} bytes) does not match the disassembly of `{name}`: {why}",
            b.addr, b.n_insns, b.bytes
        ))
    };
    let function = function.ok_or_else(|| mismatch("outside the kernel's functions"))?;
    let first = insns.binary_search_by_key(&b.addr, |i| i.addr).map_err(|_| mismatch("no instruction there"))?;
    let n = usize::try_from(b.n_insns).map_err(|_| mismatch("too many instructions"))?;
    let last = first.checked_add(n).filter(|&l| l <= insns.len()).ok_or_else(|| mismatch("past the kernel's end"))?;
    // The block's last instruction starts inside its bytes and the next one
    // after them. (QEMU may report fewer bytes for an instruction that
    // crosses a page boundary, so the end need not be an instruction boundary.)
    let end = b.addr + b.bytes;
    let next_addr = insns.get(last).map_or(function.end, |i| i.addr);
    if last == first || insns[last - 1].addr >= end || next_addr < end || end > function.end {
        return Err(mismatch("instruction boundaries differ"));
    }
    Ok(insns[first..last].iter().map(|i| mca_text(&i.text, target.arch)).collect())
}

fn cache_key(code: &[u8], model: &McaModel, sme_table: &str) -> String {
    let mut h = Sha256::new();
    h.update(code);
    h.update(format!(
        "\n{}\n{}\n{}\n{}\n{sme_table}\nmca-cache-4",
        model.triple,
        model.cpu,
        model.mattr.as_deref().unwrap_or(""),
        model.iterations
    ));
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn cache_file(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

/// Cached costs from disk, or none (a missing or unreadable file only costs time).
fn load(dir: Option<&Path>, key: &str) -> KernelCosts {
    dir.and_then(|d| std::fs::read_to_string(cache_file(d, key)).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Writes costs to disk (temporary file + rename); failures only cost time later.
fn save(dir: Option<&Path>, key: &str, costs: &KernelCosts) {
    let Some(dir) = dir else { return };
    let Ok(text) = serde_json::to_string(costs) else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, cache_file(dir, key)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
