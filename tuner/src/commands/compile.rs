//! `scaletune compile`.

use crate::build::manifest::KernelSpec;
use crate::build::select::choose;
use crate::pipeline::{compile, load_workload, PipelineError, Schedule};
use scaletune_codegen::pipeline::{artifact_file_name, kernel_symbol, Emit as Products, Options};
use scaletune_codegen::target::Target;
use scaletune_database::Database;
use scaletune_space::workload::Workload;
use std::path::{Path, PathBuf};

/// What `compile` can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// Assembly (`.s`).
    Asm,
    /// Optimized LLVM IR (`.ll`).
    Llvm,
    /// Object file (`.o`).
    Obj,
    /// The scheduled loop nest (`.loops`).
    Loops,
    /// The vector program (`.vector`).
    Vector,
}

/// The best record's schedule of `w` on `t` in the database `db` (`None`:
/// the record is of the unscheduled nest); an error if there is none usable.
fn best_schedule(w: &Workload, t: &Target, db: &Path) -> anyhow::Result<Option<Schedule>> {
    let database = Database::open_existing(db)?;
    let spec = KernelSpec {
        name: kernel_symbol(w),
        workload_ref: w.reference(),
        workload: w.clone(),
        target: t.clone(),
        vl: None,
        record: None,
        line: 0,
    };
    let chosen = choose(&database, &spec)?;
    for s in &chosen.stale {
        eprintln!("warning: record {} is stale: {}", s.record, s.reason);
    }
    let Some(r) = chosen.record else {
        anyhow::bail!("no usable record of {} on {} in {}", w.reference(), t.name, db.display());
    };
    eprintln!(
        "using record {} of {} ({}, {} runner, VLs [{}])",
        r.id,
        db.display(),
        super::db::objective_text(&r),
        r.runner,
        r.vl_set
    );
    Ok(chosen.trace.map(|trace| Schedule { trace, file: format!("record {} of {}", r.id, db.display()) }))
}

/// Compiles a workload for a target (with a schedule file, the best record
/// of a tuning database, or neither) and writes the requested outputs into `out`.
/// Returns the files written.
pub fn run(
    workload: &str,
    target: &str,
    schedule: Option<&Path>,
    db: Option<&Path>,
    emit: &[Emit],
    out: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let w = load_workload(workload)?;
    let t = Target::load(target).map_err(PipelineError::from)?;
    let sched = match db {
        Some(db) => best_schedule(&w, &t, db)?,
        None => schedule.map(Schedule::from_file).transpose()?,
    };
    let products = Products { llvm_ir: emit.contains(&Emit::Llvm), asm: emit.contains(&Emit::Asm) };
    let c = compile(&w, &t, sched.as_ref(), &Options { emit: products, ..Options::default() })?;
    std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let mut written = Vec::new();
    for e in emit {
        let (ext, bytes): (&str, Vec<u8>) = match e {
            Emit::Asm => ("s", c.asm.clone().unwrap_or_default().into_bytes()),
            Emit::Llvm => ("ll", c.llvm_ir.clone().unwrap_or_default().into_bytes()),
            Emit::Obj => ("o", c.object.clone()),
            Emit::Loops => ("loops", c.nest.to_string().into_bytes()),
            Emit::Vector => ("vector", c.program.to_string().into_bytes()),
        };
        let path = out.join(artifact_file_name(&c.symbol, ext));
        std::fs::write(&path, bytes).map_err(|err| anyhow::anyhow!("cannot write {}: {err}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
