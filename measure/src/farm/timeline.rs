//! The farm's timeline: when each build and each run started and ended, and what that says about overlap.

use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A builder worker took the candidate.
    BuildStart,
    /// Its build finished (successfully or not).
    BuildEnd,
    /// A runner slot started running some of its vector lengths.
    RunStart,
    /// That run finished.
    RunEnd,
    /// The runner of that run failed (its work went back to the queue).
    RunnerFault,
    /// The candidate's measurement was sent.
    Done,
}

/// One entry of the timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Time since the batch was submitted.
    pub at: Duration,
    /// The candidate.
    pub candidate: u64,
    /// What happened.
    pub kind: EventKind,
    /// The runner slot (index over all runners' slots) of run events.
    pub slot: Option<usize>,
    /// The runner's name, for run events.
    pub runner: Option<String>,
    /// The vector lengths of a run.
    pub vl_bits: Vec<u32>,
}

/// Where events are recorded while a batch runs.
#[derive(Debug)]
pub(crate) struct EventLog {
    start: Instant,
    events: Mutex<Vec<Event>>,
}

impl EventLog {
    pub(crate) fn new() -> EventLog {
        EventLog { start: Instant::now(), events: Mutex::new(Vec::new()) }
    }

    /// Records an event now.
    pub(crate) fn record(&self, candidate: u64, kind: EventKind, slot: Option<(usize, String)>, vl_bits: &[u32]) {
        let (slot, runner) = slot.map_or((None, None), |(s, r)| (Some(s), Some(r)));
        let e = Event { at: self.start.elapsed(), candidate, kind, slot, runner, vl_bits: vl_bits.to_vec() };
        if let Ok(mut events) = self.events.lock() {
            events.push(e);
        }
    }

    /// The events so far.
    pub(crate) fn snapshot(&self) -> Timeline {
        let mut events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        events.sort_by_key(|e| e.at);
        Timeline { events }
    }
}

/// A time interval of one build or one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// The candidate.
    pub candidate: u64,
    /// The runner slot (runs only).
    pub slot: Option<usize>,
    /// Start, since the batch was submitted.
    pub start: Duration,
    /// End.
    pub end: Duration,
}

/// The events of a batch, in time order, with the analyses tests and reports need.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// Every event, sorted by time.
    pub events: Vec<Event>,
}

impl Timeline {
    /// One span per build.
    pub fn builds(&self) -> Vec<Span> {
        self.spans(EventKind::BuildStart, EventKind::BuildEnd)
    }

    /// One span per run (a runner slot executing some vector lengths of a candidate).
    pub fn runs(&self) -> Vec<Span> {
        let mut spans = self.spans(EventKind::RunStart, EventKind::RunEnd);
        spans.extend(self.spans(EventKind::RunStart, EventKind::RunnerFault));
        spans.sort_by_key(|s| s.start);
        spans
    }

    /// Matches each `start` event with the next `end` event of the same candidate and slot.
    fn spans(&self, start: EventKind, end: EventKind) -> Vec<Span> {
        let mut open: HashMap<(u64, Option<usize>), Vec<Duration>> = HashMap::new();
        let mut spans = Vec::new();
        for e in &self.events {
            let key = (e.candidate, e.slot);
            if e.kind == start {
                open.entry(key).or_default().push(e.at);
            } else if e.kind == end {
                if let Some(s) = open.get_mut(&key).and_then(|v| (!v.is_empty()).then(|| v.remove(0))) {
                    spans.push(Span { candidate: e.candidate, slot: e.slot, start: s, end: e.at });
                }
            }
        }
        spans.sort_by_key(|s| s.start);
        spans
    }

    /// The largest number of runs in progress at one instant.
    pub fn max_concurrent_runs(&self) -> usize {
        max_concurrency(&self.runs())
    }

    /// Total time during which at least one build and at least one run were both in progress.
    pub fn build_run_overlap(&self) -> Duration {
        let builds = union(&self.builds());
        let runs = union(&self.runs());
        let mut total = Duration::ZERO;
        for (bs, be) in &builds {
            for (rs, re) in &runs {
                let (s, e) = ((*bs).max(*rs), (*be).min(*re));
                if e > s {
                    total += e - s;
                }
            }
        }
        total
    }

    /// The longest time a run waited to start although its candidate was
    /// built and its runner slot was free: for each run, its start minus the
    /// later of its candidate's build end and the previous run's end on the
    /// same slot. A farm that never idles keeps this near zero.
    pub fn max_dispatch_delay(&self) -> Duration {
        let built: HashMap<u64, Duration> = self.builds().iter().map(|s| (s.candidate, s.end)).collect();
        let mut slot_free: HashMap<Option<usize>, Duration> = HashMap::new();
        let mut worst = Duration::ZERO;
        let mut runs = self.runs();
        runs.sort_by_key(|s| s.start);
        for r in runs {
            let ready = built.get(&r.candidate).copied().unwrap_or(Duration::ZERO);
            let free = slot_free.get(&r.slot).copied().unwrap_or(Duration::ZERO);
            worst = worst.max(r.start.saturating_sub(ready.max(free)));
            slot_free.insert(r.slot, r.end);
        }
        worst
    }

    /// The events of one candidate.
    pub fn of(&self, candidate: u64) -> Vec<&Event> {
        self.events.iter().filter(|e| e.candidate == candidate).collect()
    }
}

/// The largest number of overlapping spans.
fn max_concurrency(spans: &[Span]) -> usize {
    let mut edges: Vec<(Duration, i32)> = spans.iter().flat_map(|s| [(s.start, 1), (s.end, -1)]).collect();
    // Ends before starts at the same instant: touching spans do not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut best) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        best = best.max(now);
    }
    best as usize
}

/// The union of spans as disjoint sorted intervals.
fn union(spans: &[Span]) -> Vec<(Duration, Duration)> {
    let mut v: Vec<(Duration, Duration)> = spans.iter().map(|s| (s.start, s.end)).collect();
    v.sort();
    let mut out: Vec<(Duration, Duration)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ms: u64, candidate: u64, kind: EventKind, slot: Option<usize>) -> Event {
        Event { at: Duration::from_millis(ms), candidate, kind, slot, runner: None, vl_bits: vec![] }
    }

    #[test]
    fn spans_concurrency_overlap_and_delay() {
        use EventKind::*;
        let t = Timeline {
            events: vec![
                ev(0, 1, BuildStart, None),
                ev(10, 1, BuildEnd, None),
                ev(10, 2, BuildStart, None),
                ev(11, 1, RunStart, Some(0)),
                ev(30, 2, BuildEnd, None),
                ev(31, 2, RunStart, Some(1)),
                ev(40, 1, RunEnd, Some(0)),
                ev(50, 2, RunEnd, Some(1)),
            ],
        };
        assert_eq!(t.builds().len(), 2);
        assert_eq!(t.runs().len(), 2);
        assert_eq!(t.max_concurrent_runs(), 2);
        // Build 2 (10..30) overlaps run 1 (11..40) for 19 ms.
        assert_eq!(t.build_run_overlap(), Duration::from_millis(19));
        assert_eq!(t.max_dispatch_delay(), Duration::from_millis(1));
        assert_eq!(t.of(2).len(), 4);
    }
}
