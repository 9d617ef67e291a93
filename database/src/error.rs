//! Errors of the tuning database.

use thiserror::Error;

/// Why the database could not do what was asked.
#[derive(Debug, Error)]
pub enum DbError {
    /// The file is not an SQLite database, or it is damaged.
    #[error("{file} is not a usable SQLite database ({reason}); it was left untouched")]
    Corrupt {
        /// File.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An SQLite database that is not a scaletune tuning database.
    #[error("{file} is an SQLite database of another application ({reason}); it was left untouched")]
    Foreign {
        /// File.
        file: String,
        /// What gave it away.
        reason: String,
    },
    /// A tuning database of a newer scaletune.
    #[error("{file} has schema version {found}, newer than this scaletune knows ({known}); it was left untouched: use a newer scaletune")]
    Newer {
        /// File.
        file: String,
        /// The file's schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// The file does not exist (commands that only read).
    #[error("{file} does not exist")]
    Missing {
        /// File.
        file: String,
    },
    /// The file is empty (commands that only read): no database yet.
    #[error("{file} is empty: not a tuning database yet (a tuning job makes one); it was left untouched")]
    Empty {
        /// File.
        file: String,
    },
    /// Reading or writing the file failed.
    #[error("{file}: {error}")]
    Io {
        /// File.
        file: String,
        /// The error.
        error: std::io::Error,
    },
    /// An import line that is not a record.
    #[error("import line {line}: {message}")]
    Import {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A job that does not exist.
    #[error("no job {0}")]
    NoJob(i64),
    /// A record that does not exist.
    #[error("no record {0}")]
    NoRecord(i64),
    /// SQLite refused an operation.
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
}

/// SQLite's error is part of the message, not a chained source: its own
/// source (the error code SQLite's message already states) is not printed again.
impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        DbError::Sqlite(e)
    }
}
