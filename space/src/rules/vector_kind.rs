//! Vector kind: NEON / SVE at the known VL / length-agnostic SVE, RVV
//! fixed-VLEN / length-agnostic, AVX2 / AVX-512, and SME streaming code.

use super::analysis::outer_product_axes;
use super::{State, WorkloadRule};
use crate::kind::VectorKind as Kind;
use crate::trace::{Cand, Choice, Inst};

/// Samples which of the target's vector kinds to generate. SME streaming
/// code is a branch of its own (`use_vectors("sme")`, the structural option
/// "vector kind"), offered when a block is an outer product that ZA tiles
/// can accumulate: the SME rule then tensorizes it, where the other kinds
/// tile it for vector registers.
pub struct VectorKind;

impl WorkloadRule for VectorKind {
    fn name(&self) -> &'static str {
        "vector-kind"
    }

    fn apply(&self, st: &State) -> Option<Vec<State>> {
        let kinds: Vec<Cand> =
            st.probe.kinds.iter().filter(|(k, _)| *k != Kind::Sme).map(|(k, _)| Cand::Kind(*k)).collect();
        let sme = st.probe.kinds.iter().any(|(k, _)| *k == Kind::Sme)
            && st.probe.all_blocks().iter().any(|b| outer_product_axes(&st.probe, *b).is_some());
        let regular = if kinds.len() >= 2 {
            let mut s = st.clone();
            let n = kinds.len();
            let ok = s
                .sample_categorical("kind", kinds, vec![1.0 / n as f64; n])
                .is_some_and(|k| s.push(Inst::UseVectors { kind: Choice::Rv(k) }));
            ok.then(|| s.mark(self.name()))
        } else if sme {
            Some(st.clone())
        } else {
            return None;
        };
        if !sme {
            return regular.map(|s| vec![s]);
        }
        let mut s = st.clone();
        let streaming = s.push(Inst::UseVectors { kind: Choice::Lit(Kind::Sme) }).then(|| s.mark(self.name()));
        let out: Vec<State> = regular
            .map(|s| s.choose("workload", "vector kind", "vector registers"))
            .into_iter()
            .chain(streaming.map(|s| s.choose("workload", "vector kind", "sme")))
            .collect();
        (!out.is_empty()).then_some(out)
    }
}
