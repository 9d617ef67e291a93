//! Parser for the text form of traces: each line's syntax (`call.rs`), its
//! names resolved to typed random variables (`scope.rs`), the instruction
//! built and checked (`build.rs`), then the kinds of all names checked.

mod build;
mod call;
mod scope;

use super::{Trace, TraceError};
use crate::text::{lex, Cursor, SyntaxError};
use call::parse_call;
use scope::Scope;

/// Parses trace text (one instruction per line; `#` comments and blank lines allowed).
pub fn parse_trace(text: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut scope = Scope::default();
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        let syn = |e: SyntaxError| TraceError::syntax(no, e.offset + 1, line.trim(), e.message);
        let toks = lex(line).map_err(syn)?;
        if toks.len() == 1 {
            continue;
        }
        let mut cur = Cursor::new(toks);
        let call = parse_call(&mut cur).map_err(syn)?;
        let inst =
            build::build(&call, &mut scope).map_err(|(off, m)| TraceError::syntax(no, off + 1, line.trim(), m))?;
        trace.insts.push(inst);
        trace.lines.push(no);
    }
    trace.names = std::sync::Arc::new(scope.into_names());
    super::check::check_kinds(&trace)?;
    Ok(trace)
}
