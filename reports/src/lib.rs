//! scaletune-reports: the HTML report of the tuning database, with every chart also written as a PNG beside it.
//!
//! ```text
//! Database ─data::load (Filter)─▶ groups (workload x target x runner x VLs x objective kind)
//!          ─Report::sections─▶ tables + charts::Chart ─▶ SVG in index.html, NAME.png beside it
//! ```
//!
//! The same database gives a byte-identical report: no clock, every
//! collection ordered. Emulated figures are labelled on every chart and
//! table. Depends on the database only; the tuner's formats (job arguments,
//! per-VL metrics) are read as JSON values.

pub mod charts;
pub mod data;
pub mod font;
pub mod html;

use charts::{Body, Chart};
use data::{Group, Series};
use scaletune_database::{Database, DbError};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a report could not be made.
#[derive(Debug, Error)]
pub enum ReportError {
    /// Nothing to report.
    #[error("nothing to report: {0}")]
    Empty(String),
    /// The job filter names no job.
    #[error("no job {0} in the database")]
    NoJob(i64),
    /// Reading the database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The chart font could not be loaded.
    #[error("charts need a font: {0}")]
    Font(String),
    /// Drawing a chart failed.
    #[error("drawing a chart failed: {0}")]
    Draw(String),
    /// Writing the output failed.
    #[error("cannot write {path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

/// Which records a report covers (all when every field is `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// A workload reference (`matmul:M=64,N=64,K=64`) or name (`matmul`: every shape).
    pub workload: Option<String>,
    /// A target name.
    pub target: Option<String>,
    /// A job id.
    pub job: Option<i64>,
}

impl Filter {
    /// The filter as command-line options (`every record` when empty).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(w) = &self.workload {
            parts.push(format!("--workload {w}"));
        }
        if let Some(t) = &self.target {
            parts.push(format!("--target {t}"));
        }
        if let Some(j) = self.job {
            parts.push(format!("--job {j}"));
        }
        if parts.is_empty() {
            "every record".into()
        } else {
            parts.join(" ")
        }
    }
}

/// One thing in a section: a chart with its caption, or a note.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A chart.
    Figure {
        /// The chart.
        chart: Chart,
        /// Caption under it.
        caption: String,
        /// Emulated figures.
        emulated: bool,
    },
    /// A sentence (why a chart is absent).
    Note(String),
    /// Ready HTML (tables).
    Html(String),
}

/// A section of the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Anchor id.
    pub id: &'static str,
    /// Heading.
    pub heading: &'static str,
    /// Its contents.
    pub items: Vec<Item>,
}

/// A report of the records a filter selects.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The database file's name (not its path: copies give the same report).
    pub database: String,
    /// The filter.
    pub filter: Filter,
    /// Records grouped by what makes their objectives comparable.
    pub groups: Vec<Group>,
    /// Each job's strategy.
    pub strategies: BTreeMap<i64, String>,
}

impl Report {
    /// Reads what `filter` selects; an error when the database has no
    /// records or none match.
    pub fn from_db(db: &Database, filter: &Filter) -> Result<Report, ReportError> {
        let (groups, strategies) = data::load(db, filter)?;
        let database =
            db.path().file_name().map_or_else(|| db.path().display().to_string(), |n| n.to_string_lossy().into());
        Ok(Report { database, filter: filter.clone(), groups, strategies })
    }

    /// The page's sections in order, charts described but not drawn.
    pub fn sections(&self) -> Vec<Section> {
        let mut curves = Vec::new();
        let mut cands = Vec::new();
        let mut predicted = Vec::new();
        for (i, g) in self.groups.iter().enumerate() {
            let n = i + 1;
            let tag = if g.emulated() { " [emulated]" } else { "" };
            let y = html::unit(&g.objective_kind, g.emulated());
            let lines = data::tuning_curves(g, &self.strategies);
            curves.push(if lines.is_empty() {
                Item::Note(format!("{}: no candidate ran correctly yet.", g.label()))
            } else {
                Item::Figure {
                    chart: Chart {
                        stem: format!("curve-{n}"),
                        title: format!("Best so far: {}{tag}", g.label()),
                        x_label: "trial".into(),
                        y_label: y.clone(),
                        body: Body::Xy { lines, dots: vec![], crosses: vec![], diagonal: false },
                    },
                    caption: format!("Tuning curve of {}: the best objective so far against the trial, one line per job and strategy.", g.label()),
                    emulated: g.emulated(),
                }
            });
            let (dots, crosses) = data::candidates(g);
            cands.push(Item::Figure {
                chart: Chart {
                    stem: format!("candidates-{n}"),
                    title: format!("Every candidate: {}{tag}", g.label()),
                    x_label: "trial".into(),
                    y_label: y.clone(),
                    body: Body::Xy { lines: vec![], dots, crosses, diagonal: false },
                },
                caption: format!(
                    "Every candidate of {}: objective against trial, coloured by vector kind; failures are crosses along the top, by status.",
                    g.label()
                ),
                emulated: g.emulated(),
            });
            let pairs = data::predicted_vs_measured(g);
            if !pairs.is_empty() {
                predicted.push(Item::Figure {
                    chart: Chart {
                        stem: format!("predicted-{n}"),
                        title: format!("Cost model: {}{tag}", g.label()),
                        x_label: format!("measured: {y}"),
                        y_label: "predicted".into(),
                        body: Body::Xy {
                            lines: vec![],
                            dots: vec![Series {
                                name: "candidates".into(),
                                points: pairs.iter().map(|(p, m)| (*m, *p)).collect(),
                            }],
                            crosses: vec![],
                            diagonal: true,
                        },
                    },
                    caption: format!(
                        "The cost model's predicted objective at proposal time against the measured one, {}.",
                        g.label()
                    ),
                    emulated: g.emulated(),
                });
            }
        }
        if predicted.is_empty() {
            predicted.push(Item::Note("No candidate in scope has a prediction (the cost model trains once a job has measured enough candidates).".into()));
        }
        vec![
            Section {
                id: "leaderboard",
                heading: "Leaderboard",
                items: vec![Item::Html(html::leaderboard(&self.groups))],
            },
            Section { id: "curves", heading: "Tuning curves", items: curves },
            Section { id: "candidates", heading: "Every candidate", items: cands },
            Section { id: "scaling", heading: "Vector-length scaling", items: self.scaling() },
            Section { id: "failures", heading: "Failures by status", items: self.failures() },
            Section { id: "cost-model", heading: "Predicted vs. measured", items: predicted },
        ]
    }

    fn scaling(&self) -> Vec<Item> {
        let mut by: BTreeMap<(&str, &str, &str, &str), Vec<&Group>> = BTreeMap::new();
        for g in &self.groups {
            by.entry((&g.workload, &g.target, &g.runner, &g.objective_kind)).or_default().push(g);
        }
        let mut items = Vec::new();
        for (j, ((w, t, r, kind), gs)) in by.into_iter().enumerate() {
            let lines = data::vl_scaling(&gs);
            let emulated = gs.iter().any(|g| g.emulated());
            if lines.is_empty() {
                items.push(Item::Note(format!(
                    "{w} on {t} ({r}): no vector candidate ran correctly with per-VL figures."
                )));
                continue;
            }
            let tag = if emulated { " [emulated]" } else { "" };
            items.push(Item::Figure {
                chart: Chart {
                    stem: format!("scaling-{}", j + 1),
                    title: format!("Vector-length scaling: {w} on {t} ({r}){tag}"),
                    x_label: "vector length (bits)".into(),
                    y_label: html::unit(kind, emulated),
                    body: Body::Xy { lines, dots: vec![], crosses: vec![], diagonal: false },
                },
                caption: format!(
                    "{w} on {t} ({r}): at every vector length measured, the best length-agnostic schedule (SVE-VLA, RVV-VLA) and the best fixed-length one."
                ),
                emulated,
            });
        }
        items
    }

    fn failures(&self) -> Vec<Item> {
        let counts = data::failures(&self.groups);
        if counts.is_empty() {
            return vec![Item::Note("Every candidate in scope built, ran and gave correct results.".into())];
        }
        let mut table = String::from("<table class=\"failures\">\n<tr><th>task</th><th>status</th><th>records</th><th>example message</th></tr>\n");
        for g in &self.groups {
            let mut per: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
            for r in g.records.iter().filter(|r| r.status != "ok") {
                per.entry(&r.status).or_insert((0, &r.message)).0 += 1;
            }
            for (status, (n, message)) in per {
                let first_line = message.lines().next().unwrap_or("");
                let _ = writeln!(
                    table,
                    "<tr><td>{}</td><td>{}</td><td class=\"num\">{n}</td><td>{}</td></tr>",
                    html::escape(&g.label()),
                    html::escape(status),
                    html::escape(first_line)
                );
            }
        }
        table.push_str("</table>\n");
        vec![
            Item::Figure {
                chart: Chart {
                    stem: "failures-by-status".into(),
                    title: "Failed candidates by status".into(),
                    x_label: "status".into(),
                    y_label: "records".into(),
                    body: Body::Bars(counts.into_iter().map(|(s, n)| (s, n as f64)).collect()),
                },
                caption: "Candidates that did not run correctly, by status, over every task in scope.".into(),
                emulated: false,
            },
            Item::Html(table),
        ]
    }

    /// The page, with the SVG of each chart given by `svg`.
    fn page(&self, sections: &[Section], svg: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        let records: usize = self.groups.iter().map(|g| g.records.len()).sum();
        let emulated = self.groups.iter().any(Group::emulated);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>scaletune report: {}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>scaletune tuning report</h1>\n<p class=\"scope\">Database {}; {}: {} records in {} task(s).{}</p>\n<nav>",
            html::escape(&self.database),
            html::STYLE,
            html::escape(&self.database),
            html::escape(&self.filter.describe()),
            records,
            self.groups.len(),
            if emulated { " <span class=\"emulated\">Some figures are emulated (QEMU: estimated cycles or instruction counts), not times on real hardware.</span>" } else { "" }
        );
        let links: Vec<String> = sections.iter().map(|s| format!("<a href=\"#{}\">{}</a>", s.id, s.heading)).collect();
        let _ = writeln!(out, "{}</nav>", links.join(" | "));
        for s in sections {
            let _ = writeln!(out, "<section id=\"{}\">\n<h2>{}</h2>", s.id, s.heading);
            for item in &s.items {
                match item {
                    Item::Figure { chart, caption, emulated } => out.push_str(&html::figure(
                        svg.get(&chart.stem).map_or("", String::as_str),
                        &chart.stem,
                        caption,
                        *emulated,
                    )),
                    Item::Note(n) => {
                        let _ = writeln!(out, "<p class=\"note\">{}</p>", html::escape(n));
                    }
                    Item::Html(h) => out.push_str(h),
                }
            }
            out.push_str("</section>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }

    /// Writes `dir/index.html` (self-contained: CSS inline, charts as inline
    /// SVG) and every chart as `dir/NAME.png`. The page is written last,
    /// through a temporary file renamed into place, so a reader never sees
    /// half a page. Returns the files written, the page first.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |error| ReportError::Io { path, error }
        };
        font::ensure()?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let sections = self.sections();
        let mut svg = BTreeMap::new();
        let mut files = Vec::new();
        for s in &sections {
            for item in &s.items {
                if let Item::Figure { chart, .. } = item {
                    let png = dir.join(format!("{}.png", chart.stem));
                    charts::png(chart, &png)?;
                    files.push(png);
                    svg.insert(chart.stem.clone(), charts::svg(chart)?);
                }
            }
        }
        let page = self.page(&sections, &svg);
        let index = dir.join("index.html");
        let tmp = dir.join(".index.html.tmp");
        std::fs::write(&tmp, page).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &index).map_err(io(&index))?;
        files.insert(0, index);
        Ok(files)
    }
}
