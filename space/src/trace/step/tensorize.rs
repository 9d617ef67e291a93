//! `tensorize`: a loop nest as an SME micro-kernel of ZA outer products.

use super::{Stepped, PLAIN};
use crate::ir::Nest;
use crate::trace::apply::Env;
use crate::trace::{LoopRv, TraceError};

/// `tensorize(loop, intrin="za_fmopa")` or `intrin="za_fmopa_vread"`.
pub(super) fn tensorize(env: &mut Env, nest: &mut Nest, loop_: LoopRv, intrin: &str) -> Result<Stepped, TraceError> {
    let l = env.loop_(loop_)?;
    nest.tensorize(l, intrin).map_err(|e| env.sched(e))?;
    Ok(PLAIN)
}
