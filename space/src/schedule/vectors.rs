//! `use_vectors`: choose which of the target's vector kinds to generate.

use super::{ErrorKind, Result, ScheduleError};
use crate::ir::Nest;
use crate::kind::VectorKind;

const PRIM: &str = "use_vectors";

impl Nest {
    /// Switches the nest to one of the target's vector kinds (e.g. NEON,
    /// SVE at the known vector length, or length-agnostic SVE). Must come
    /// before any loop transformation, since those depend on the vscale domain.
    pub fn use_vectors(&mut self, kind: VectorKind) -> Result<()> {
        if self.transformed {
            return Err(ScheduleError::new(PRIM, ErrorKind::Structure, "must come before every loop transformation"));
        }
        match self.kinds.iter().find(|(k, _)| *k == kind) {
            Some((_, caps)) => {
                self.caps = caps.clone();
                Ok(())
            }
            None => {
                let known: Vec<String> = self.kinds.iter().map(|(k, _)| k.to_string()).collect();
                Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::LoopKind,
                    format!(
                        "unknown vector kind `{kind}` (this target offers: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ),
                ))
            }
        }
    }
}
