//! A builder that hands out harnesses built beforehand, so that the farm (the one scheduler) also measures candidates that are built already.

use super::{BuildError, Builder};
use crate::candidate::Candidate;
use crate::runner::Built;
use std::collections::HashMap;
use std::sync::Mutex;

/// Hands each candidate the [`Built`] given for its id (once): re-measuring
/// a batch, measuring an artifact on whichever runner is free, or running
/// hand-written kernels, through the same [`crate::Farm`] as everything else.
#[derive(Debug, Default)]
pub struct Prebuilt {
    built: Mutex<HashMap<u64, Built>>,
}

impl Prebuilt {
    /// The harnesses, each for the candidate id it names ([`Built::candidate`]).
    pub fn new(built: impl IntoIterator<Item = Built>) -> Prebuilt {
        Prebuilt { built: Mutex::new(built.into_iter().map(|b| (b.candidate, b)).collect()) }
    }

    /// How many harnesses have not been handed out yet.
    pub fn remaining(&self) -> usize {
        self.built.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Builder for Prebuilt {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        built.remove(&c.id).ok_or_else(|| BuildError::Other(format!("no prebuilt harness for candidate {}", c.id)))
    }
}
