//! The key under which samples of a task share one lowering: the trace text without the decisions of its unrolling budgets, with the budgets as the lowering folds them.
//!
//! About one in seven of the samples a job lowers builds a program another
//! sample already built, mostly mutants that differ from their parent in
//! an `unroll_max_step` budget that unrolls the same loops (see
//! `scaletune_codegen::lower::Prepared`). Such samples' traces differ only
//! in that decision, which the trace uses nowhere but in its `annotate`
//! line; their nests then differ only in the annotation, and once the
//! lowering has folded the budgets, not at all.

use scaletune_codegen::lower::Prepared;
use scaletune_space::design::text_key;

/// The annotation key of an unrolling budget, as a trace prints it.
const BUDGET_KEY: &str = "key=\"unroll_max_step\", value=";

/// The key of a sample of trace text `text` whose nest was prepared as
/// `prepared`: equal for two samples of a task only if their prepared
/// nests are equal (up to 128-bit hash collisions), so that they lower to
/// one program. The text goes in without the line of each budget decision
/// (`unroll46 = sample_categorical(...)`) that the text uses only in an
/// `unroll_max_step` annotation; the budgets go in as folded.
pub(super) fn lowering_key(text: &str, prepared: &Prepared) -> u128 {
    // Byte ranges of the decision lines left out, in order.
    let mut skipped: Vec<(usize, usize)> = Vec::new();
    for (at, _) in text.match_indices(BUDGET_KEY) {
        let value = at + BUDGET_KEY.len();
        let Some(len) = text[value..].find(')') else { continue };
        let name = &text[value..value + len];
        if name.is_empty() || !name.bytes().all(is_word) {
            continue;
        }
        let uses: Vec<usize> =
            text.match_indices(name).map(|(i, _)| i).filter(|&i| whole_word(text, i, name.len())).collect();
        // The annotation and the definition, and nothing else.
        let [a, b] = uses[..] else { continue };
        let definition = if a == value { b } else { a };
        let at_line_start = definition == 0 || text.as_bytes()[definition - 1] == b'\n';
        if at_line_start && text[definition + name.len()..].starts_with(" = sample_categorical(") {
            let end = text[definition..].find('\n').map_or(text.len(), |n| definition + n + 1);
            skipped.push((definition, end));
        }
    }
    skipped.sort_unstable();
    let mut kept = String::with_capacity(text.len() + 16);
    let mut from = 0;
    for (start, end) in skipped {
        kept.push_str(&text[from..start]);
        from = end;
    }
    kept.push_str(&text[from..]);
    kept.push_str("\nbudgets:");
    for b in prepared.unroll_budgets() {
        kept.push(' ');
        kept.push_str(b);
    }
    text_key(&kept)
}

/// A byte of an identifier.
fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the `len` bytes of `text` at `at` are a whole word.
fn whole_word(text: &str, at: usize, len: usize) -> bool {
    let b = text.as_bytes();
    !(at > 0 && is_word(b[at - 1])) && !b.get(at + len).is_some_and(|c| is_word(*c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_whole_word_is_a_use() {
        let t = "x = unroll460 + unroll4\nunroll46 = 1\n";
        let at: Vec<bool> = t.match_indices("unroll46").map(|(i, _)| whole_word(t, i, 8)).collect();
        assert_eq!(at, vec![false, true]);
    }
}
