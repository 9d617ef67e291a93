//! `scaletune workloads` and `scaletune targets`.

use crate::pipeline::{load_workload, PipelineError};
use scaletune_codegen::target::{Target, SHIPPED};
use scaletune_space::workload::{shipped_names, WorkloadRef};
use std::fmt::Write;

/// Lists the shipped workloads, or describes one.
pub fn workloads(name: Option<&str>) -> Result<String, PipelineError> {
    let mut out = String::new();
    match name {
        Some(n) => out.push_str(&load_workload(n)?.summary()),
        None => {
            for n in shipped_names() {
                let spec = WorkloadRef::parse(n)?.spec()?;
                let params: Vec<String> = spec.params().iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(out, "{n:<24} {:<58} {}", spec.description(), params.join(","));
            }
        }
    }
    Ok(out)
}

/// Lists the shipped targets, or describes one.
pub fn targets(name: Option<&str>) -> Result<String, PipelineError> {
    let mut out = String::new();
    match name {
        Some(n) => {
            let t = Target::load(n)?;
            let _ = writeln!(out, "{} — {}", t.name, t.description);
            let _ = writeln!(out, "  triple    {}", t.triple);
            let _ = writeln!(out, "  cpu       {}", t.cpu);
            let _ = writeln!(out, "  features  {}", t.features);
            let _ = writeln!(out, "  vectors   {}", t.vector_summary());
            let kinds: Vec<String> = t.vector_kinds().into_iter().map(|(k, _)| k.to_string()).collect();
            let _ = writeln!(out, "  kinds     {}", kinds.join(", "));
            let vs: Vec<String> = t.caps.vscale_values.iter().map(|v| v.to_string()).collect();
            let _ = writeln!(out, "  vscale    {{{}}}", vs.join(", "));
            let vls: Vec<String> = t.default_vl_bits.iter().map(|v| v.to_string()).collect();
            let _ = writeln!(out, "  check at  VL {} bits", vls.join(", "));
            match &t.qemu {
                Some(q) => {
                    let _ = writeln!(out, "  runs on   {}", q.join(" "));
                }
                None => {
                    let _ = writeln!(out, "  runs on   this machine (native)");
                }
            }
            let _ = writeln!(out, "  compiler  {}", t.cc.join(" "));
            if let Some(m) = &t.mca_cpu {
                let _ = writeln!(out, "  llvm-mca  -mcpu={m}");
            }
        }
        None => {
            for (n, _) in SHIPPED {
                let t = Target::load(n)?;
                let _ = writeln!(out, "{:<12} {:<70} {}", t.name, t.description, t.vector_summary());
            }
        }
    }
    Ok(out)
}
