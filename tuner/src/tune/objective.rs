//! The objective a tuning job minimizes: seconds per call on real machines, estimated cycles or instructions under emulation, combined across vector lengths.

use scaletune_measure::{Measurement, Status, VlMeasurement};
use serde::{Deserialize, Serialize};

/// What is minimized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ObjectiveKind {
    /// Median seconds per kernel call (native and remote runners).
    Time,
    /// Estimated cycles (QEMU runner: executed blocks x llvm-mca throughput).
    Cycles,
    /// Dynamic instructions of the kernel (QEMU runner).
    Instructions,
}

impl ObjectiveKind {
    /// The name stored in the database beside the objective's value.
    pub fn name(self) -> &'static str {
        match self {
            ObjectiveKind::Time => "time_s",
            ObjectiveKind::Cycles => "est_cycles",
            ObjectiveKind::Instructions => "instructions",
        }
    }

    /// True for figures of an emulator, not of a real machine.
    pub fn is_emulated(self) -> bool {
        self != ObjectiveKind::Time
    }

    /// The figure of one vector length's run, if it has one.
    pub fn of_run(self, r: &VlMeasurement) -> Option<f64> {
        if r.status != Status::Ok {
            return None;
        }
        let x = match self {
            ObjectiveKind::Time => r.timing.as_ref().map(|t| t.median_s),
            ObjectiveKind::Cycles => r.emulated.as_ref().and_then(|e| e.est_cycles),
            ObjectiveKind::Instructions => r.emulated.as_ref().map(|e| e.instructions as f64),
        }?;
        (x.is_finite() && x > 0.0).then_some(x)
    }
}

/// How the figures of several vector lengths become one number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// The figure.
    pub kind: ObjectiveKind,
    /// Weight of each vector length (bits, weight); a length not listed weighs 1.
    pub vl_weights: Vec<(u32, f64)>,
}

impl Objective {
    /// Plain geometric mean over the vector lengths.
    pub fn new(kind: ObjectiveKind) -> Objective {
        Objective { kind, vl_weights: Vec::new() }
    }

    /// The weight of a vector length.
    pub fn weight(&self, vl_bits: u32) -> f64 {
        self.vl_weights.iter().find(|(v, _)| *v == vl_bits).map_or(1.0, |(_, w)| *w)
    }

    /// The objective of a measurement: the weighted geometric mean of the
    /// figure over its vector lengths (portable performance for
    /// length-agnostic code measured at several lengths); `None` unless the
    /// candidate is ok and every vector length has the figure.
    pub fn value(&self, m: &Measurement) -> Option<f64> {
        if m.status != Status::Ok || m.runs.is_empty() {
            return None;
        }
        let (mut log_sum, mut weights) = (0.0, 0.0);
        for r in &m.runs {
            let x = self.kind.of_run(r)?;
            let w = self.weight(r.vl_bits);
            log_sum += w * x.ln();
            weights += w;
        }
        (weights > 0.0).then(|| (log_sum / weights).exp())
    }
}

/// Parses `--vl-weights 128=1,256=2`.
pub fn parse_vl_weight(s: &str) -> Result<(u32, f64), String> {
    let (vl, w) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected VL=WEIGHT, e.g. 256=2"))?;
    let vl: u32 = vl.trim().parse().map_err(|_| format!("`{s}`: `{vl}` is not a vector length in bits"))?;
    let w: f64 = w.trim().parse().map_err(|_| format!("`{s}`: `{w}` is not a number"))?;
    if !(w.is_finite() && w > 0.0) {
        return Err(format!("`{s}`: a weight must be a positive number"));
    }
    Ok((vl, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_measure::{Emulated, Timing};

    fn emulated_run(vl: u32, cycles: f64) -> VlMeasurement {
        let mut r = VlMeasurement::bare(vl, Status::Ok, "qemu", "");
        r.emulated = Some(Emulated {
            instructions: (cycles * 2.0) as u64,
            est_cycles: Some(cycles),
            est_cycles_note: None,
            process_instructions: 0,
            emulation_wall_s: 1.0,
        });
        r
    }

    #[test]
    fn several_vector_lengths_give_the_weighted_geometric_mean() {
        let m = Measurement::from_runs(0, "a".into(), 0.1, vec![emulated_run(128, 400.0), emulated_run(256, 100.0)]);
        let plain = Objective::new(ObjectiveKind::Cycles).value(&m).expect("ok");
        assert!((plain - 200.0).abs() < 1e-9, "{plain}");
        let instructions = Objective::new(ObjectiveKind::Instructions).value(&m).expect("ok");
        assert!((instructions - 400.0).abs() < 1e-9, "{instructions}");
        let weighted = Objective { kind: ObjectiveKind::Cycles, vl_weights: vec![(256, 3.0)] };
        // (400^1 * 100^3)^(1/4)
        let expect = (400f64.ln() + 3.0 * 100f64.ln()) / 4.0;
        assert!((weighted.value(&m).expect("ok") - expect.exp()).abs() < 1e-9);
    }

    #[test]
    fn a_failed_or_incomplete_measurement_has_no_objective() {
        let failed = Measurement::from_runs(0, "a".into(), 0.1, vec![VlMeasurement::run_error(128, "n", "SIGSEGV")]);
        assert_eq!(Objective::new(ObjectiveKind::Time).value(&failed), None);
        // Timed, but the objective asks for emulated cycles.
        let mut r = VlMeasurement::bare(128, Status::Ok, "native", "");
        r.timing = Some(Timing::from_repeats(vec![2e-3, 1e-3, 3e-3], 1));
        let timed = Measurement::from_runs(0, "a".into(), 0.1, vec![r]);
        assert_eq!(Objective::new(ObjectiveKind::Cycles).value(&timed), None);
        let t = Objective::new(ObjectiveKind::Time).value(&timed).expect("timed");
        assert!((t - 2e-3).abs() < 1e-15, "{t}");
    }

    #[test]
    fn vl_weights_parse_and_refuse_nonsense() {
        assert_eq!(parse_vl_weight("256=2.5"), Ok((256, 2.5)));
        for bad in ["256", "x=1", "256=0", "256=-1", "256=nan"] {
            assert!(parse_vl_weight(bad).is_err(), "{bad}");
        }
    }
}
