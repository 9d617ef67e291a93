//! Checking a kernel's vector program in the interpreter: the same inputs, reference and judgement as a compiled run, at a chosen vscale.

use super::check::check_tensors;
use super::{RunCheck, Status};
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::vprog::Program;
use scaletune_space::reference::RefTensor;
use scaletune_space::workload::{Role, Workload};
use scaletune_space::TensorData;
use std::time::{Duration, Instant};

/// Interprets `program` (the lowered kernel of `workload`) at `vscale` on
/// `args` (from `scaletune_space::data::make_args`) and judges its outputs
/// against `reference` exactly as [`super::Harness`] judges a compiled run:
/// `ok`, `wrong_result` naming the first wrong element, or `run_error` when
/// the interpreter refuses the program (an out-of-bounds lane, a read of
/// uninitialized scratch memory, ...). `RunCheck::vl_bits` holds `vscale`,
/// `emulated` is true and `wall_time` is the interpretation time.
pub fn interpret(
    workload: &Workload,
    program: &Program,
    args: &[TensorData],
    reference: &[RefTensor],
    vscale: u32,
) -> RunCheck {
    let start = Instant::now();
    let mut result = RunCheck {
        vl_bits: vscale,
        status: Status::RunError,
        comparisons: Vec::new(),
        max_abs_err: f64::NAN,
        message: String::new(),
        emulated: true,
        wall_time: Duration::ZERO,
    };
    let mut values: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
    values.extend(workload.scalars.iter().map(|s| ArgValue::Scalar(s.value)));
    let ran = run(program, &mut values, &InterpOptions::new(vscale));
    result.wall_time = start.elapsed();
    if let Err(e) = ran {
        result.message = format!("vscale {vscale}: {e}");
        return result;
    }
    let mut outputs = Vec::new();
    for (k, id) in workload.arg_tensors().into_iter().enumerate() {
        if workload.tensor(id).role != Role::Output {
            continue;
        }
        match values.get(k).and_then(ArgValue::as_tensor) {
            Some(t) => outputs.push((id, t.clone())),
            None => {
                result.message = format!("vscale {vscale}: output `{}` is not a tensor", workload.tensor(id).name);
                return result;
            }
        }
    }
    let c = check_tensors(workload, &outputs, reference);
    result.comparisons = c.comparisons;
    result.max_abs_err = c.max_abs_err;
    if c.failures.is_empty() {
        result.status = Status::Ok;
    } else {
        result.status = Status::WrongResult;
        result.message = format!("vscale {vscale}: {}", c.failures.join("; "));
    }
    result
}
