//! The code digest of a vector program: what LLVM reads of it hashed, without the unroll hints LLVM makes no use of.

use scaletune_codegen::vprog::{Const, LoopHint, Op, Program, Stmt};
use scaletune_space::caps::VectorCaps;
use std::hash::{Hash, Hasher};

/// Loops of at most this many iterations, of constant bounds, are unrolled
/// fully by LLVM whether a hint asks for it or not: the digest leaves out
/// a full-unroll hint on them. (Measured on matmul 127x255x63 on
/// neoverse-v1 at VLs 128, 256 and 512, 988 candidates of six tuning
/// runs: of the 226 pairs of programs that differ only in full-unroll
/// hints on loops of 2, 3 or 4 iterations, all built the same assembly;
/// of the 101 pairs with such a hint on a 7-iteration loop, 69 built
/// other assembly.)
pub const UNROLLED_ANYWAY: i64 = 4;

/// The digest of a candidate's vector program and its nest's vector
/// capabilities: LLVM reads the program and the target with the schedule's
/// vector kind ([`scaletune_codegen::pipeline::compile_nest`]), so equal
/// programs of equal kinds build the same code, and so do programs that
/// differ only in full-unroll hints on loops LLVM unrolls anyway
/// ([`UNROLLED_ANYWAY`]). A fixed hash: the same in every process.
pub fn code_digest(prog: &Program, caps: &VectorCaps) -> u64 {
    let consts = constants(prog);
    let mut h = rustc_hash::FxHasher::default();
    prog.name.hash(&mut h);
    prog.regs.hash(&mut h);
    prog.buffers.hash(&mut h);
    prog.params.hash(&mut h);
    hash_body(&prog.body, &consts, &mut h);
    caps.hash(&mut h);
    h.finish()
}

/// The integer constant each register holds, where it is assigned one
/// constant once and nothing else.
fn constants(prog: &Program) -> Vec<Option<i64>> {
    fn walk(body: &[Stmt], out: &mut [Option<Option<i64>>]) {
        for s in body {
            match s {
                Stmt::Assign { dst, op } => {
                    let slot = &mut out[dst.0 as usize];
                    *slot = match (slot.is_none(), op) {
                        (true, Op::Const(Const::Int(x, _))) => Some(Some(*x)),
                        _ => Some(None),
                    };
                }
                Stmt::Loop { var, body, .. } => {
                    out[var.0 as usize] = Some(None);
                    walk(body, out);
                }
                Stmt::If { then_body, else_body, .. } => {
                    walk(then_body, out);
                    walk(else_body, out);
                }
                _ => {}
            }
        }
    }
    let mut out = vec![None; prog.regs.len()];
    walk(&prog.body, &mut out);
    out.into_iter().map(Option::flatten).collect()
}

/// Hashes `body` statement by statement, a full-unroll hint on a loop of
/// 2 to [`UNROLLED_ANYWAY`] iterations as no hint.
fn hash_body(body: &[Stmt], consts: &[Option<i64>], h: &mut impl Hasher) {
    body.len().hash(h);
    for s in body {
        match s {
            Stmt::Loop { var, start, end, body, hint } => {
                0xF0u8.hash(h);
                (var, start, end).hash(h);
                let trip = consts[end.0 as usize].zip(consts[start.0 as usize]).map(|(e, s)| e - s);
                let idle = matches!((hint, trip), (LoopHint::Unroll(k), Some(t)) if (2..=UNROLLED_ANYWAY).contains(&t) && i64::from(*k) >= t);
                if idle { LoopHint::None } else { *hint }.hash(h);
                hash_body(body, consts, h);
            }
            Stmt::If { cond, then_body, else_body } => {
                0xF1u8.hash(h);
                cond.hash(h);
                hash_body(then_body, consts, h);
                hash_body(else_body, consts, h);
            }
            other => other.hash(h),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_codegen::pipeline::{compile, lower_nest_unverified, schedule, Emit, Options};
    use scaletune_codegen::target::Target;
    use scaletune_space::trace::parse_trace;
    use scaletune_space::workload::WorkloadRef;

    /// The program, digest and assembly of a scalar matmul 2x7x4 on `host` with `annotations`.
    fn built(annotations: &str) -> (Program, u64, String) {
        let w = WorkloadRef::parse("matmul:M=2,N=7,K=4").expect("ref").load().expect("loads");
        let t = Target::load("host").expect("target");
        let trace =
            parse_trace(&format!("b = get_block(\"C\")\ni, j, k = get_loops(b)\n{annotations}")).expect("parses");
        let nest = schedule(&w, Some(&trace), &t, None).expect("schedules");
        let prog = lower_nest_unverified(&w, &nest).expect("lowers");
        let digest = code_digest(&prog, &nest.caps);
        let opts = Options { emit: Emit { llvm_ir: false, asm: true }, ..Options::default() };
        let asm = compile(&w, Some(&trace), &t, &opts).expect("compiles").asm.expect("asm asked for");
        (prog, digest, asm)
    }

    #[test]
    fn full_unroll_hints_on_loops_llvm_unrolls_anyway_are_left_out() {
        let (plain, d_plain, asm_plain) = built("");
        // The 4-iteration k loop fully unrolled: another program, the same code.
        let (k4, d_k4, asm_k4) = built("annotate(k, key=\"unroll_max_step\", value=\"16\")\n");
        assert_ne!(plain, k4, "the hint is in the program");
        assert_eq!(asm_plain, asm_k4, "LLVM unrolled the loop unasked");
        assert_eq!(d_plain, d_k4);
        // The 7-iteration j loop too: LLVM need not unroll that one by
        // itself (in this tiny kernel it does), so the hint counts.
        let (j7, d_j7, _) = built("annotate(j, key=\"unroll_max_step\", value=\"64\")\n");
        assert_ne!(j7, k4);
        assert_ne!(d_j7, d_plain);
    }
}
