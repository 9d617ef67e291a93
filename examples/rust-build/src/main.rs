//! Calls the tuned `axpy` kernel its build script replayed and checks it against a plain loop.

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

const N: usize = 1000;

/// Runs the kernel on `x` and `y`; returns its output.
fn axpy(a: f32, x: &[f32; N], y: &[f32; N]) -> Vec<f32> {
    let mut out = vec![f32::NAN; N];
    // SAFETY: the kernel reads N floats from each input and writes N to the output.
    unsafe { axpy_host(x.as_ptr(), y.as_ptr(), out.as_mut_ptr(), a) };
    out
}

fn main() {
    let x: [f32; N] = std::array::from_fn(|i| (i as f32 * 0.37).sin());
    let y: [f32; N] = std::array::from_fn(|i| (i as f32 * 0.11).cos());
    let a = 0.75;
    let got = axpy(a, &x, &y);
    let wrong = (0..N).filter(|&i| (got[i] - (a * x[i] + y[i])).abs() > 1e-6 * (1.0 + y[i].abs())).count();
    println!("axpy_host: {} of {N} values match the plain loop", N - wrong);
    std::process::exit(i32::from(wrong != 0));
}
