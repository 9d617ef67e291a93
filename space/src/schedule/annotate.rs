//! `annotate`: a key and value attached to a loop, from the keys lowering understands.
//!
//! The one key a trace may set is [`UNROLL_MAX_STEP`] (the rules' unroll
//! depth); [`TENSORIZE_KEY`](super::TENSORIZE_KEY) is set by the `tensorize`
//! primitive only. A key lowering does not read, or a value it would read as
//! something else, is refused rather than ignored.

use super::{ErrorKind, Result, ScheduleError, TENSORIZE_KEY};
use crate::ir::{Nest, Node};
use thiserror::Error;

/// The unroll budget of a loop nest (a non-negative integer; 0, or no
/// annotation, disables auto-unrolling): lowering asks LLVM to unroll fully
/// each serial loop inside the annotated loop (itself included) whose block
/// executions fit the budget, the innermost annotation counting.
pub const UNROLL_MAX_STEP: &str = "unroll_max_step";

/// The keys `annotate` sets.
pub const ANNOTATION_KEYS: &[&str] = &[UNROLL_MAX_STEP];

/// Why `annotate` refuses a key or value.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AnnotationError {
    /// A key nothing reads.
    #[error("unknown annotation key `{key}` (known: {})", ANNOTATION_KEYS.join(", "))]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// The key of the `tensorize` primitive.
    #[error("the annotation key `{TENSORIZE_KEY}` is set by the `tensorize` primitive only")]
    Tensorize,
    /// A value that is not a non-negative integer, for a key that takes one.
    #[error("`{key}` must be a non-negative integer, not `{value}`")]
    NotCount {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
    },
    /// An integer beyond `i64`, for a key that takes a count.
    #[error("`{key}` must be at most {}, not `{value}`", i64::MAX)]
    TooLarge {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
    },
}

/// Checks that `annotate` sets `key` (the key alone, before its value is known).
pub fn check_annotation_key(key: &str) -> std::result::Result<&'static str, AnnotationError> {
    if key == TENSORIZE_KEY {
        return Err(AnnotationError::Tensorize);
    }
    ANNOTATION_KEYS
        .iter()
        .copied()
        .find(|k| *k == key)
        .ok_or_else(|| AnnotationError::UnknownKey { key: key.to_string() })
}

/// Checks a key and the value `annotate` would attach with it.
pub fn check_annotation(key: &str, value: &str) -> std::result::Result<(), AnnotationError> {
    match check_annotation_key(key)? {
        UNROLL_MAX_STEP => count(UNROLL_MAX_STEP, value),
        // A key added to `ANNOTATION_KEYS` gets its check of values here.
        _ => Ok(()),
    }
}

/// A count in decimal digits (no sign, no spaces), as lowering parses it.
fn count(key: &'static str, value: &str) -> std::result::Result<(), AnnotationError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AnnotationError::NotCount { key, value: value.to_string() });
    }
    if value.parse::<i64>().is_err() {
        return Err(AnnotationError::TooLarge { key, value: value.to_string() });
    }
    Ok(())
}

impl Nest {
    /// Attaches `key = value` to a loop: a key of [`ANNOTATION_KEYS`] with a
    /// value it takes ([`check_annotation`]). Lowering reads loop annotations
    /// only, so a block is refused.
    pub fn annotate(&mut self, target: Node, key: &str, value: &str) -> Result<()> {
        const PRIM: &str = "annotate";
        let err = |m: String| ScheduleError::new(PRIM, ErrorKind::Annotation, m);
        check_annotation(key, value).map_err(|e| err(e.to_string()))?;
        match target {
            Node::Loop(l) => {
                self.check_loop(PRIM, l)?;
                self.loop_mut(l).annotations.insert(key.to_string(), value.to_string());
            }
            Node::Block(b) => {
                self.check_block(PRIM, b)?;
                return Err(err(format!("`{key}` annotates a loop, not block `{}`", self.block(b).name)));
            }
        }
        Ok(())
    }
}
