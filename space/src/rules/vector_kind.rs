//! Vector kind: NEON / SVE at the known VL / length-agnostic SVE, RVV
//! fixed-VLEN / length-agnostic, AVX2 / AVX-512.

use super::{State, WorkloadRule};
use crate::trace::{Cand, Choice, Inst};

/// Samples which of the target's vector kinds to generate.
pub struct VectorKind;

impl WorkloadRule for VectorKind {
    fn name(&self) -> &'static str {
        "vector-kind"
    }

    fn apply(&self, st: &State) -> Option<Vec<State>> {
        let kinds: Vec<Cand> = st.probe.kinds.iter().map(|(k, _)| Cand::Kind(*k)).collect();
        if kinds.len() < 2 {
            return None;
        }
        let mut s = st.clone();
        let p = 1.0 / kinds.len() as f64;
        let ok = s
            .sample_categorical("kind", kinds, vec![p; st.probe.kinds.len()])
            .is_some_and(|k| s.push(Inst::UseVectors { kind: Choice::Rv(k) }));
        ok.then(|| vec![s.mark(self.name())])
    }
}
