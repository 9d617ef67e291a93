//! The `scaletune` subcommands.

pub mod agent;
pub mod bench;
pub mod build;
pub mod check;
pub mod compile;
pub mod db;
pub mod info;
pub mod measure;
pub mod report;
pub mod tune;

/// A failure of the measuring infrastructure, not of the input or the
/// candidate (no agent of the farm answered): the command exits with status 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Infrastructure(pub String);

/// An error and its causes on one line, each cause once: a cause whose text
/// the message before it already contains (an error that quotes its source
/// and also chains it) is not repeated.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string().replace('\n', " ");
        if out.is_empty() {
            out = text;
        } else if !out.contains(text.trim()) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// The exit status of a command's error: 3 for [`Infrastructure`], else 2 (bad input).
pub fn exit_code_of(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.downcast_ref::<Infrastructure>().is_some()) {
        3
    } else {
        2
    }
}
