//! Workload files: TOML structure, parameter overrides and location-aware errors.

use super::error::WorkloadError;
use super::Workload;
use crate::text::line_col;
use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

/// A shape entry, range bound or axis extent: an integer or an expression over parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum SizeItem {
    Int(i64),
    Expr(String),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TensorSpec {
    pub dtype: Spanned<String>,
    pub shape: Vec<Spanned<SizeItem>>,
    pub role: Option<Spanned<String>>,
    pub range: Option<Vec<Spanned<SizeItem>>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScalarSpec {
    pub dtype: Spanned<String>,
    pub value: Spanned<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSpec {
    pub name: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub params: IndexMap<String, Spanned<i64>>,
    #[serde(default)]
    pub scalars: IndexMap<String, Spanned<ScalarSpec>>,
    pub tensors: IndexMap<String, Spanned<TensorSpec>>,
    #[serde(default)]
    pub axes: IndexMap<String, Spanned<SizeItem>>,
    pub compute: Spanned<Vec<Spanned<String>>>,
}

/// A parsed workload file, not yet bound to parameter values.
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    /// Workload name.
    pub name: String,
    /// File name used in error messages.
    pub file: String,
    pub(crate) text: String,
    pub(crate) raw: FileSpec,
}

impl WorkloadSpec {
    /// Parses a workload file and checks it by instantiating its defaults.
    /// `default_name` is used when the file has no `name` key.
    pub fn parse(text: &str, file: &str, default_name: &str) -> Result<WorkloadSpec, WorkloadError> {
        let raw: FileSpec = toml::from_str(text).map_err(|e| {
            let off = e.span().map(|s| s.start).unwrap_or(0);
            let (line, col) = line_col(text, off);
            WorkloadError::At { file: file.to_string(), line, col, message: e.message().trim().to_string() }
        })?;
        let name = raw.name.clone().unwrap_or_else(|| default_name.to_string());
        let spec = WorkloadSpec { name, file: file.to_string(), text: text.to_string(), raw };
        spec.instantiate(&[])?;
        Ok(spec)
    }

    /// Reads and parses a workload file from disk.
    pub fn from_file(path: &std::path::Path) -> Result<WorkloadSpec, WorkloadError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| WorkloadError::File { file: file.clone(), message: format!("cannot read: {e}") })?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("workload");
        WorkloadSpec::parse(&text, &file, stem)
    }

    /// Parameter names and default values, in declaration order.
    pub fn params(&self) -> Vec<(String, i64)> {
        self.raw.params.iter().map(|(k, v)| (k.clone(), *v.get_ref())).collect()
    }

    /// The description line.
    pub fn description(&self) -> &str {
        &self.raw.description
    }

    /// Binds parameters (defaults overridden by `overrides`) and checks the statements.
    pub fn instantiate(&self, overrides: &[(String, i64)]) -> Result<Workload, WorkloadError> {
        super::resolve::instantiate(self, overrides)
    }

    /// A located error at a byte offset of the file.
    pub(crate) fn at(&self, offset: usize, message: impl Into<String>) -> WorkloadError {
        let (line, col) = line_col(&self.text, offset);
        WorkloadError::At { file: self.file.clone(), line, col, message: message.into() }
    }
}
