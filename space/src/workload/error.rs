//! Errors of the workload language.

use thiserror::Error;

/// A problem with a workload file or reference, rendered on one line.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WorkloadError {
    /// A located problem in a workload file.
    #[error("{file}:{line}:{col}: {message}")]
    At {
        /// File name (or `<embedded NAME>`).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What is wrong.
        message: String,
    },
    /// A problem without a position in a file.
    #[error("{file}: {message}")]
    File {
        /// File name.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// No shipped workload and no file has this name.
    #[error("unknown workload `{name}` (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Shipped workload names.
        known: String,
    },
    /// A malformed `NAME:P=V,...` reference or parameter override.
    #[error("bad workload reference `{reference}`: {message}")]
    BadReference {
        /// The reference as given.
        reference: String,
        /// What is wrong.
        message: String,
    },
}
