//! Shared lexer and cursor for the small text languages of scaletune: compute
//! statements, trace text and the loop-nest text form.

mod cursor;
mod lexer;

pub use cursor::Cursor;
pub use lexer::{lex, Tok, Token};

use thiserror::Error;

/// A syntax error at a byte offset of the parsed text.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{message}")]
pub struct SyntaxError {
    /// Byte offset into the text.
    pub offset: usize,
    /// What was expected or found.
    pub message: String,
}

impl SyntaxError {
    /// A new error at `offset`.
    pub fn new(offset: usize, message: impl Into<String>) -> SyntaxError {
        SyntaxError { offset, message: message.into() }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}
