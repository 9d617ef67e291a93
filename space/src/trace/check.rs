//! The kinds of a parsed trace's random variables: each result is a block, a loop, an integer or a sampled choice, and each argument must be the kind its instruction expects; checked when text is parsed.
//!
//! An argument's id type already says whether a loop, a block or a sampled
//! value is expected; parsing resolves a name to the id of its latest
//! definition whatever that defined, and this check refuses a name whose
//! definition made the wrong kind (a loop where a block is needed, a tail
//! strategy where an integer is).

use super::rv::{name_in, Kind};
use super::uses::cand_kind;
use super::{Inst, Trace, TraceError, TraceErrorKind};

/// Checks that every argument names a result of the kind its instruction
/// expects (a loop where a block is needed is an error naming the line).
/// Names that no instruction defines are left for replay to report.
pub(super) fn check_kinds(trace: &Trace) -> Result<(), TraceError> {
    let mut kinds: Vec<Option<Kind>> = vec![None; trace.names.len()];
    for (i, inst) in trace.insts.iter().enumerate() {
        let err = |message: String| TraceError {
            line: trace.lines.get(i).copied(),
            col: None,
            inst: Some(trace.inst_text(i)),
            message,
            kind: TraceErrorKind::WrongKind,
        };
        for u in inst.uses() {
            match kinds.get(u.index).copied().flatten() {
                Some(k) if !u.wants.contains(&k) => {
                    let wanted: Vec<&str> = u.wants.iter().map(|w| w.noun()).collect();
                    let name = name_in(&trace.names, u.index);
                    return Err(err(format!("`{name}` is {}, not {}", k.noun(), wanted.join(" or "))));
                }
                _ => {}
            }
        }
        if let Inst::SampleCategorical { candidates, .. } = inst {
            let kind = candidates.first().map_or(Kind::Int, cand_kind);
            if let Some(other) = candidates.iter().map(cand_kind).find(|k| *k != kind) {
                return Err(err(format!("candidates mix {} and {}", kind.noun(), other.noun())));
            }
        }
        for (id, kind) in inst.defs() {
            if let Some(slot) = kinds.get_mut(id) {
                *slot = Some(kind);
            }
        }
    }
    Ok(())
}
