//! Trace errors: where (line, column, instruction) and what went wrong.

use crate::schedule::ErrorKind;
use std::fmt;
use thiserror::Error;

/// The category of a trace failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceErrorKind {
    /// The text does not parse.
    Syntax,
    /// A name used before it is defined.
    UnknownName,
    /// A name bound to the wrong kind of thing (a loop where a block is needed, ...).
    WrongKind,
    /// A schedule primitive refused the instruction.
    Schedule(ErrorKind),
    /// A sampling instruction cannot sample, lacks a decision on replay, or
    /// its decision does not fit the loop it is replayed on.
    Sample,
}

/// A trace that does not parse or does not apply.
#[derive(Debug, Error, Clone, PartialEq)]
pub struct TraceError {
    /// 1-based source line, when the trace came from text.
    pub line: Option<usize>,
    /// 1-based column of a syntax error.
    pub col: Option<usize>,
    /// The instruction, as text.
    pub inst: Option<String>,
    /// What is wrong.
    pub message: String,
    /// The category.
    pub kind: TraceErrorKind,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.col) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: ")?,
            (Some(l), None) => write!(f, "line {l}: ")?,
            _ => {}
        }
        if let Some(i) = &self.inst {
            // A pathological line (megabytes of parentheses) is quoted by its start.
            match i.char_indices().nth(MAX_QUOTED) {
                Some((cut, _)) => write!(f, "`{}...` ({} characters): ", &i[..cut], i.chars().count())?,
                None => write!(f, "`{i}`: ")?,
            }
        }
        f.write_str(&self.message)
    }
}

/// How many characters of an instruction an error message quotes.
const MAX_QUOTED: usize = 160;
