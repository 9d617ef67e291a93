//! `scaletune report`: the HTML report of the tuning database (index.html with inline charts, a PNG per chart).

use anyhow::Context;
use scaletune_database::Database;
use scaletune_reports::{Filter, Report};
use std::path::{Path, PathBuf};

/// Options of `report`.
#[derive(Clone, Debug, clap::Args)]
pub struct ReportArgs {
    /// Tuning database [default: $SCALETUNE_DB, else ./scaletune.db].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Output directory (index.html and the charts' PNG files).
    #[arg(long)]
    pub out: PathBuf,
    /// Only this workload (a reference such as `matmul:M=64,N=64,K=64`, or a name for every shape).
    #[arg(long)]
    pub workload: Option<String>,
    /// Only this target.
    #[arg(long)]
    pub target: Option<String>,
    /// Only this job's records.
    #[arg(long)]
    pub job: Option<i64>,
}

/// Writes the report of `db` selected by `filter` into `out`; returns the files written.
pub fn write(db: &Database, filter: &Filter, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let report = Report::from_db(db, filter)?;
    report.write(out).with_context(|| format!("report into {}", out.display()))
}

/// Runs `report`: prints the page's path and how many charts were written.
pub fn run(args: &ReportArgs) -> anyhow::Result<String> {
    if let Some(w) = args.workload.as_deref().filter(|w| w.contains(':')) {
        // A shape's parameters are checked (a bare name matches every shape).
        crate::pipeline::load_workload(w)?;
    }
    let path = args.db.clone().unwrap_or_else(scaletune_database::default_path);
    let db = Database::open_existing(&path)?;
    let filter = Filter { workload: args.workload.clone(), target: args.target.clone(), job: args.job };
    let files = write(&db, &filter, &args.out)?;
    Ok(format!("wrote {} ({} charts as PNG beside it)\n", files[0].display(), files.len() - 1))
}
