//! The LLVM builder, its artifact cache and the builder pool.

mod common;

use common::{scale_add_traces, target, trace, workload};
use scaletune_codegen::target::Target;
use scaletune_measure::builder::{BuildError, Builder, BuilderPool};
use scaletune_measure::{ArtifactCache, Built, Candidate, LlvmBuilder, NativeRunner, Status, TimingProtocol};
use std::sync::Arc;

fn quick() -> TimingProtocol {
    TimingProtocol {
        warmup: 1,
        number: 1,
        repeat: 3,
        min_repeat_ms: 1,
        flush_cache: false,
        pin_core: None,
        threads: None,
    }
}

#[test]
fn the_second_build_of_a_candidate_is_a_cache_hit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ArtifactCache::new(dir.path()).expect("cache");
    let builder = LlvmBuilder::new().with_cache(cache.clone());
    let (w, t) = (workload("scale_add:N=203"), target("host"));
    let c = Candidate::new(7, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[1].clone());

    let first = builder.build(&c).unwrap_or_else(|e| panic!("build: {e}"));
    assert_eq!(first.candidate, 7);
    assert_eq!(first.artifact.len(), 64);
    assert!(cache.path_of(&first.artifact).is_file());
    let stats = builder.stats();
    assert_eq!((stats.compiled, stats.cache_hits, stats.executable_hits), (1, 0, 0));
    assert!(!first.harness.executable_from_cache());

    // Same workload, target and trace under another id: LLVM and the link are skipped.
    let again = Candidate { id: 8, ..c.clone() };
    let second = builder.build(&again).unwrap_or_else(|e| panic!("build: {e}"));
    assert_eq!(second.artifact, first.artifact);
    let stats = builder.stats();
    assert_eq!((stats.compiled, stats.cache_hits, stats.executable_hits), (1, 1, 1));
    assert!(second.harness.executable_from_cache());
    let exe = |b: &Built| std::fs::read(b.harness.executable()).expect("executable");
    assert_eq!(exe(&second), exe(&first), "the executable linked the first time");
    // A fresh builder (another process, say) on the same directory hits too.
    let other = LlvmBuilder::new().with_cache(cache.clone());
    other.build(&c).unwrap_or_else(|e| panic!("build: {e}"));
    assert_eq!((other.stats().compiled, other.stats().cache_hits, other.stats().executable_hits), (0, 1, 1));

    // A spoiled executable entry is linked again, not run.
    let exe_entries: Vec<_> =
        walk(cache.dir()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "exe")).collect();
    assert_eq!(exe_entries.len(), 1, "{exe_entries:?}");
    std::fs::write(&exe_entries[0], b"junk").expect("spoil the entry");
    let relinked = builder.build(&again).unwrap_or_else(|e| panic!("build: {e}"));
    assert!(!relinked.harness.executable_from_cache());

    // A different trace is a different artifact.
    let different = Candidate { trace: scale_add_traces()[2].clone(), ..c.clone() };
    assert_ne!(builder.build(&different).expect("builds").artifact, first.artifact);

    // And the cached object and executable are the right kernel.
    let vl = t.default_vl_bits[0];
    for built in [&first, &second, &relinked] {
        let m = NativeRunner::new(quick()).measure(built, vl);
        assert_eq!(m.status, Status::Ok, "{}", m.message);
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn every_stage_failure_is_a_build_error() {
    let builder = LlvmBuilder::new();
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let bad_trace = Candidate::new(1, Arc::clone(&w), Arc::clone(&t), trace("b = get_block(\"Nope\")\n"));
    let e = builder.build(&bad_trace).expect_err("unknown block");
    assert!(matches!(e, BuildError::Schedule(_)), "{e}");
    assert!(e.to_string().starts_with("schedule: "), "{e}");
    assert!(e.to_string().contains("Nope"), "{e}");

    // A target whose compiler cannot be started fails at link time.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/targets/host.toml");
    let text = std::fs::read_to_string(path).expect("host.toml");
    let text = text.replace("cc = [\"clang-19\"", "cc = [\"/nonexistent/scaletune-cc\"");
    let broken = Arc::new(Target::from_toml(&text, "broken-host").expect("parses"));
    let no_cc = Candidate::new(2, w, broken, scale_add_traces()[0].clone());
    let e = builder.build(&no_cc).expect_err("no compiler");
    assert!(matches!(e, BuildError::Link(_)), "{e}");
    assert!(e.to_string().contains("/nonexistent/scaletune-cc"), "{e}");
    assert_eq!(builder.stats().failed, 2);
}

struct Panicking;

impl Builder for Panicking {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        panic!("builder bug on candidate {}", c.id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_builds_in_parallel_and_catches_panics() {
    let (w, t) = (workload("scale_add:N=100"), target("host"));
    let pool = BuilderPool::new(Arc::new(LlvmBuilder::new()), 2);
    let candidates: Vec<Candidate> = scale_add_traces()
        .into_iter()
        .enumerate()
        .map(|(i, tr)| Candidate::new(i as u64, Arc::clone(&w), Arc::clone(&t), tr))
        .collect();
    let n = candidates.len();
    let mut rx = pool.spawn(candidates);
    let mut ids = Vec::new();
    while let Some(o) = rx.recv().await {
        let (id, build_s) = (o.candidate.id, o.build_s);
        assert_eq!(o.builds.len(), 1, "one object for length-agnostic code");
        let built = o.result().unwrap_or_else(|e| panic!("candidate {id}: {e}"));
        assert_eq!(built.candidate, id);
        assert!(build_s > 0.0);
        ids.push(id);
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());

    let panicking = BuilderPool::new(Arc::new(Panicking), 1);
    let o = panicking.build_one(Candidate::new(3, w, t, scale_add_traces()[0].clone())).await;
    let e = o.result().expect_err("panics");
    assert!(matches!(e, BuildError::Panic { .. }), "{e}");
    assert!(e.to_string().contains("builder bug on candidate 3"), "{e}");
}

/// The code identity a tuning database keeps with each record: the same
/// from every compile of a candidate (cached or not, in any builder), other
/// for other code, per vector length for fixed-length scalable code, and
/// what the farm reports with the candidate's measurement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidates_code_identity_is_its_objects_and_the_farm_reports_it() {
    let (w, host) = (workload("scale_add:N=203"), target("host"));
    let c = Candidate::new(0, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[1].clone());
    let code = LlvmBuilder::new().code(&c).expect("builds");
    assert_eq!(code.len(), 64);
    // LLVM writes the same object again: compiled anew, and through a cache.
    assert_eq!(LlvmBuilder::new().code(&c).expect("builds"), code);
    let dir = tempfile::tempdir().expect("temp dir");
    let cached = LlvmBuilder::new().with_cache(ArtifactCache::new(dir.path()).expect("cache"));
    assert_eq!(cached.code(&c).expect("builds"), code);
    assert_eq!(cached.code(&c).expect("builds"), code);
    assert_eq!(cached.stats().cache_hits, 1);
    // The built harness and the farm's measurement carry it.
    assert_eq!(LlvmBuilder::new().build(&c).expect("builds").code, code);
    let other = Candidate::new(1, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[2].clone());
    let farm = scaletune_measure::Farm::new(
        Arc::new(LlvmBuilder::new()),
        1,
        vec![Arc::new(NativeRunner::new(quick())) as Arc<dyn scaletune_measure::Runner>],
    );
    let report = farm.measure(vec![c.clone(), other.clone()]).await;
    assert_eq!(report.get(0).expect("0").code, code);
    let other_code = LlvmBuilder::new().code(&other).expect("builds");
    assert_ne!(other_code, code, "a peeled tail is other code than a predicated one");
    assert_eq!(report.get(1).expect("1").code, other_code);

    // Fixed-length SVE measured at two lengths: one object per length, both in the identity.
    let sve = target("neoverse-v1");
    let vls = trace(
        "use_vectors(\"sve\")\nb = get_block(\"Y\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"predicate\")\n",
    );
    let at = |bits: &[u32]| {
        let c = Candidate::new(2, Arc::clone(&w), Arc::clone(&sve), vls.clone()).with_vl_bits(bits.to_vec());
        LlvmBuilder::new().code(&c).expect("builds")
    };
    let (one, two) = (at(&[128]), at(&[128, 256]));
    assert_ne!(one, two);
    assert_eq!(two, at(&[256, 128]), "in vector-length order");

    // No object, no identity: the build's error.
    let bad = Candidate::new(3, w, host, trace("b = get_block(\"Nope\")\n"));
    assert!(matches!(LlvmBuilder::new().code(&bad), Err(BuildError::Schedule(_))));
    assert_eq!(report.measurements.len(), 2);
}
