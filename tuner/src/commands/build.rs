//! `scaletune build`: replays the best recorded schedule of every kernel of a manifest into static libraries, a C header and Rust declarations.

use crate::build::Build;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `scaletune build`.
#[derive(Clone, Debug, clap::Args)]
pub struct BuildArgs {
    /// Tuning database [default: $SCALETUNE_DB, else ./scaletune.db].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Kernel manifest (`[[kernel]]` tables: name, workload, target, optional vl and record).
    #[arg(long)]
    pub manifest: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Name of the outputs: PREFIX.h, PREFIX.rs, libPREFIX_TARGET.a [default: the manifest's file stem].
    #[arg(long)]
    pub prefix: Option<String>,
    /// Fail on a kernel with no usable record instead of building its default schedule.
    #[arg(long)]
    pub strict: bool,
}

/// Runs `scaletune build`; returns the report (warnings go to standard error as they are part of it).
pub fn run(args: &BuildArgs) -> anyhow::Result<String> {
    let mut b = Build::new();
    b.db(super::db::db_path(args.db.as_deref())).manifest(&args.manifest).out_dir(&args.out_dir);
    b.strict(args.strict).cargo_metadata(false);
    if let Some(p) = &args.prefix {
        b.prefix(p);
    }
    let built = b.compile()?;
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = String::new();
    for k in &built.kernels {
        let from = k.record.map_or("the default schedule".to_string(), |r| format!("record {r}"));
        let _ = writeln!(out, "{} ({}): {from}, replayed in {:.3} s", k.name, k.target, k.replay_s);
    }
    for (_, lib) in &built.libraries {
        let _ = writeln!(out, "wrote {}", lib.display());
    }
    let _ = writeln!(out, "wrote {}\nwrote {}", built.header.display(), built.rust.display());
    Ok(out)
}
