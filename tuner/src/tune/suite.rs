//! Suites: several workloads tuned as one job (`tune --suite configs/suites/NAME.toml`), each with a weight.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A suite file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Suite name.
    pub name: String,
    /// What the suite stands for.
    #[serde(default)]
    pub description: String,
    /// The tasks.
    #[serde(rename = "task")]
    pub tasks: Vec<SuiteTask>,
}

/// One workload of a suite.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteTask {
    /// Workload reference (`NAME:P=V,...` or a file).
    pub workload: String,
    /// Share of the trials the scheduler aims to give it (default 1): how
    /// much its time matters, e.g. how often the model runs it.
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

/// A suite that cannot be used.
#[derive(Debug, Error)]
pub enum SuiteError {
    /// The file cannot be read.
    #[error("cannot read suite {file}: {error}")]
    Io {
        /// File.
        file: String,
        /// Why.
        error: std::io::Error,
    },
    /// No shipped suite has this name (and it is not a path).
    #[error("unknown suite `{name}` (shipped: {known}; or give a path to a suite file)")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Shipped suite names.
        known: String,
    },
    /// The file is not a suite.
    #[error("suite {file}: {message}")]
    Bad {
        /// File.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// The shipped suites (`configs/suites/NAME.toml`), built into the binary
/// as the shipped workloads are, so an installed `scaletune` has them.
const SHIPPED: &[(&str, &str)] =
    &[("transformer_layer", include_str!("../../../configs/suites/transformer_layer.toml"))];

/// A suite argument that names a file (it has an extension or a directory), not a shipped suite.
fn is_path(name: &str) -> bool {
    let p = Path::new(name);
    p.extension().is_some() || p.components().count() > 1
}

impl Suite {
    /// Reads a shipped suite by name (`transformer_layer`) or a suite file by path.
    pub fn load(name: &str) -> Result<Suite, SuiteError> {
        if !is_path(name) {
            let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name) else {
                let known: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
                return Err(SuiteError::Unknown { name: name.to_string(), known: known.join(", ") });
            };
            return Suite::parse(text, &format!("<embedded {name}>"));
        }
        let path = PathBuf::from(name);
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|error| SuiteError::Io { file: file.clone(), error })?;
        Suite::parse(&text, &file)
    }

    /// Parses suite text.
    pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteError> {
        let suite: Suite =
            toml::from_str(text).map_err(|e| SuiteError::Bad { file: file.into(), message: e.to_string() })?;
        if suite.tasks.is_empty() {
            return Err(SuiteError::Bad { file: file.into(), message: "no [[task]]".into() });
        }
        if let Some(t) = suite.tasks.iter().find(|t| !(t.weight.is_finite() && t.weight > 0.0)) {
            return Err(SuiteError::Bad {
                file: file.into(),
                message: format!("task `{}`: the weight must be a positive number", t.workload),
            });
        }
        Ok(suite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_space::workload::WorkloadRef;

    #[test]
    fn shipped_suites_load_and_every_workload_resolves() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/suites");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("suites dir") {
            let path = entry.expect("entry").path();
            let suite = Suite::load(path.to_str().expect("utf-8")).expect("loads");
            for t in &suite.tasks {
                WorkloadRef::parse(&t.workload)
                    .and_then(|r| r.load())
                    .unwrap_or_else(|e| panic!("{}: {e}", t.workload));
            }
            n += 1;
        }
        assert_eq!(n, SHIPPED.len(), "every file of configs/suites is shipped in the binary");
        for (name, _) in SHIPPED {
            let file = dir.join(format!("{name}.toml"));
            let on_disk = Suite::load(file.to_str().expect("utf-8")).expect("loads");
            assert_eq!(Suite::load(name).expect("by name").tasks.len(), on_disk.tasks.len());
        }
    }

    #[test]
    fn bad_suites_are_refused_with_the_reason() {
        let e = Suite::parse("name = \"x\"\n[[task]]\nworkload = \"matmul\"\nweight = 0\n", "s.toml").unwrap_err();
        assert_eq!(e.to_string(), "suite s.toml: task `matmul`: the weight must be a positive number");
        let e = Suite::parse("name = \"x\"\ntask = []\n", "s.toml").unwrap_err();
        assert_eq!(e.to_string(), "suite s.toml: no [[task]]");
        let e = Suite::load("no_such_suite").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown suite `no_such_suite` (shipped: transformer_layer; or give a path to a suite file)"
        );
    }
}
