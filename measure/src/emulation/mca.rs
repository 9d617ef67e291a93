//! llvm-mca-19 on many instruction blocks at once: one code region per block, JSON output.
//!
//! All blocks go into one input, each between `# LLVM-MCA-BEGIN bN` and
//! `# LLVM-MCA-END bN`, simulated with `-iterations=N` (100 by default) for
//! the target's `-mcpu` model; only the summary view is requested, as JSON.
//! A block's cost per execution is the simulated `TotalCycles / Iterations`
//! (the steady state of the block run back to back, so loop-carried
//! dependencies count, as they do when the block is a loop body); its
//! `Block RThroughput` (the resource bound, dependencies ignored) is kept too.
//!
//! llvm-mca stops at the first instruction it cannot parse or has no
//! scheduling information for (SME instructions have none in LLVM 19's
//! models). Then every block is run on its own, so that only the blocks that
//! hold such an instruction are reported as unsupported, with llvm-mca's message.

use super::{run_tool, EmulationError};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::process::Command;

/// The default number of iterations llvm-mca simulates per block.
pub const DEFAULT_ITERATIONS: u32 = 100;

/// An llvm-mca machine model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct McaModel {
    /// Target triple (`-mtriple`).
    pub triple: String,
    /// CPU model (`-mcpu`).
    pub cpu: String,
    /// Features (`-mattr`), if any.
    pub mattr: Option<String>,
    /// Simulated iterations per block.
    pub iterations: u32,
}

/// What llvm-mca says one execution of a block costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockCost {
    /// Simulated cycles per iteration (`TotalCycles / Iterations`).
    pub cycles: f64,
    /// The block's reciprocal throughput (resource pressure only).
    pub rthroughput: f64,
}

#[derive(Deserialize)]
struct McaJson {
    #[serde(rename = "CodeRegions")]
    code_regions: Vec<McaRegion>,
}

#[derive(Deserialize)]
struct McaRegion {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "SummaryView")]
    summary: McaSummary,
}

#[derive(Deserialize)]
struct McaSummary {
    #[serde(rename = "BlockRThroughput")]
    block_rthroughput: f64,
    #[serde(rename = "Iterations")]
    iterations: f64,
    #[serde(rename = "TotalCycles")]
    total_cycles: f64,
}

impl McaModel {
    /// A model with [`DEFAULT_ITERATIONS`].
    pub fn new(triple: &str, cpu: &str, mattr: Option<String>) -> McaModel {
        McaModel { triple: triple.to_string(), cpu: cpu.to_string(), mattr, iterations: DEFAULT_ITERATIONS }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(scaletune_codegen::tools::llvm_mca());
        cmd.arg(format!("-mtriple={}", self.triple)).arg(format!("-mcpu={}", self.cpu));
        if let Some(m) = &self.mattr {
            cmd.arg(format!("-mattr={m}"));
        }
        cmd.arg(format!("-iterations={}", self.iterations)).args(["-json", "-all-views=false", "-summary-view", "-"]);
        cmd
    }

    /// Costs of `blocks` (each a list of instructions in llvm-mca syntax), in
    /// order. A block llvm-mca rejects is an `Err` with its message; a tool
    /// that cannot run at all is the outer `Err`.
    pub fn block_costs(&self, blocks: &[Vec<String>]) -> Result<Vec<Result<BlockCost, String>>, EmulationError> {
        if blocks.is_empty() {
            return Ok(Vec::new());
        }
        let indices: Vec<usize> = (0..blocks.len()).collect();
        match self.run(blocks, &indices) {
            Ok(costs) => Ok(costs.into_iter().map(Ok).collect()),
            Err(EmulationError::ToolFailed { .. }) if blocks.len() > 1 => {
                let mut out = Vec::with_capacity(blocks.len());
                for i in 0..blocks.len() {
                    out.push(match self.run(blocks, &[i]) {
                        Ok(mut c) => Ok(c.remove(0)),
                        Err(EmulationError::ToolFailed { stderr, .. }) => Err(first_error(&stderr)),
                        Err(e) => return Err(e),
                    });
                }
                Ok(out)
            }
            Err(EmulationError::ToolFailed { stderr, .. }) => Ok(vec![Err(first_error(&stderr))]),
            Err(e) => Err(e),
        }
    }

    /// One llvm-mca run over the chosen blocks.
    fn run(&self, blocks: &[Vec<String>], which: &[usize]) -> Result<Vec<BlockCost>, EmulationError> {
        let mut input = String::new();
        for &i in which {
            let _ = writeln!(input, "# LLVM-MCA-BEGIN b{i}");
            for line in &blocks[i] {
                let _ = writeln!(input, "{line}");
            }
            let _ = writeln!(input, "# LLVM-MCA-END b{i}");
        }
        let out = run_tool(self.command(), Some(&input))?;
        let json: McaJson =
            serde_json::from_str(&out).map_err(|e| EmulationError::NoEstimate(format!("llvm-mca's JSON: {e}")))?;
        let mut costs = Vec::with_capacity(which.len());
        for &i in which {
            let name = format!("b{i}");
            let r = json
                .code_regions
                .iter()
                .find(|r| r.name == name)
                .ok_or_else(|| EmulationError::NoEstimate(format!("llvm-mca reported no region {name}")))?;
            let s = &r.summary;
            if s.iterations <= 0.0 {
                return Err(EmulationError::NoEstimate(format!("llvm-mca simulated no iteration of {name}")));
            }
            costs.push(BlockCost { cycles: s.total_cycles / s.iterations, rthroughput: s.block_rthroughput });
        }
        Ok(costs)
    }
}

/// The first `error:` line of llvm-mca's stderr, with the instruction it names if any.
fn first_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let Some(i) = lines.iter().position(|l| l.contains("error:")) else {
        return format!("llvm-mca failed: {}", stderr.trim());
    };
    let mut msg = lines[i].trim().to_string();
    if let Some(note) = lines[i + 1..].iter().find(|l| l.trim_start().starts_with("note: instruction:")) {
        let insn = note.trim_start().trim_start_matches("note: instruction:").trim();
        msg = format!("{msg} ({insn})");
    } else if let Some(src) = lines.get(i + 1) {
        if !src.trim().is_empty() && !src.contains("error:") {
            msg = format!("{msg} ({})", src.trim());
        }
    }
    format!("llvm-mca: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_error_names_the_instruction() {
        let stderr = "error: unable to resolve scheduling class for write variant., use -skip-unsupported-instructions=lack-sched to ignore these on the input.\nnote: instruction: \tfmopa\tza0.s, p0/m, p1/m, z0.s, z1.s\n";
        let m = first_error(stderr);
        assert!(m.starts_with("llvm-mca: error: unable to resolve scheduling class"), "{m}");
        assert!(m.ends_with("(fmopa\tza0.s, p0/m, p1/m, z0.s, z1.s)"), "{m}");
        let stderr = "<stdin>:3:1: error: unrecognized instruction mnemonic\nfoo x1\n^\n";
        assert_eq!(first_error(stderr), "llvm-mca: <stdin>:3:1: error: unrecognized instruction mnemonic (foo x1)");
    }
}
