//! The LLVM builder: schedule replay, lowering, LLVM and linking in this process, with the artifact cache (objects and executables).
//!
//! LLVM runs in-process: `scaletune_codegen::llvm::compile` creates its own
//! context per call (so builder threads never share one) and rejects up front
//! the vector types its backends would abort on. Panics anywhere in the
//! build are caught and become [`BuildError::Panic`]. An LLVM `abort()` cannot
//! be caught in-process; none is known for programs that pass codegen's
//! checks, so no compiler subprocess is used (if one is ever found, the fix
//! belongs in codegen's up-front checks).

use super::cache::{artifact_key, ArtifactCache};
use super::{panic_message, BuildError, Builder};
use crate::candidate::Candidate;
use crate::harness::{CheckRequest, Harness, LinkCache};
use crate::runner::Built;
use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::pipeline::{self, kernel_symbol, Emit, Options};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counters of an [`LlvmBuilder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Objects found in the cache (LLVM skipped).
    pub cache_hits: u64,
    /// Objects compiled with LLVM.
    pub compiled: u64,
    /// Linked executables (driver + kernel) found in the cache (link skipped).
    pub executable_hits: u64,
    /// Builds that failed.
    pub failed: u64,
}

/// Builds candidates in this process with LLVM, caching kernel objects.
#[derive(Debug)]
pub struct LlvmBuilder {
    cache: Option<ArtifactCache>,
    seed: u64,
    options: CompileOptions,
    cache_hits: AtomicU64,
    compiled: AtomicU64,
    executable_hits: AtomicU64,
    failed: AtomicU64,
}

impl LlvmBuilder {
    /// A builder without a cache, input seed 1, `-O3`.
    pub fn new() -> LlvmBuilder {
        LlvmBuilder {
            cache: None,
            seed: 1,
            options: CompileOptions::default(),
            cache_hits: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
            executable_hits: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Reuses and stores kernel objects and linked executables in `cache`.
    pub fn with_cache(mut self, cache: ArtifactCache) -> LlvmBuilder {
        self.cache = Some(cache);
        self
    }

    /// Seed of the generated inputs (see `scaletune_space::data::make_args`).
    pub fn with_seed(mut self, seed: u64) -> LlvmBuilder {
        self.seed = seed;
        self
    }

    /// LLVM options (part of the cache key).
    pub fn with_compile_options(mut self, options: CompileOptions) -> LlvmBuilder {
        self.options = options;
        self
    }

    /// The cache, if any.
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_ref()
    }

    /// Counters so far.
    pub fn stats(&self) -> BuildStats {
        BuildStats {
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            compiled: self.compiled.load(Ordering::Relaxed),
            executable_hits: self.executable_hits.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// The candidate's artifact key and kernel object: from the cache, or
    /// scheduled, lowered and compiled (then stored in the cache).
    pub fn object(&self, c: &Candidate) -> Result<(String, Vec<u8>), BuildError> {
        let key = artifact_key(&c.workload, &c.target, &c.trace, &self.options);
        if let Some(object) = self.cache.as_ref().and_then(|cache| cache.get(&key)) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((key, object));
        }
        let object = self.compile(c)?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(cache) = &self.cache {
            // A cache that cannot be written only costs time later.
            if let Err(e) = cache.put(&key, &object) {
                tracing::warn!("cannot store artifact {key} in {}: {e}", cache.dir().display());
            }
        }
        Ok((key, object))
    }

    /// The one compile pipeline (object only), with panics caught.
    fn compile(&self, c: &Candidate) -> Result<Vec<u8>, BuildError> {
        let opts = Options { llvm: self.options.clone(), emit: Emit::OBJECT, vl_bits: None };
        let run = || -> Result<Vec<u8>, BuildError> {
            Ok(pipeline::compile(&c.workload, Some(&c.trace), &c.target, &opts)?.object)
        };
        catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|payload| {
            Err(BuildError::Panic {
                stage: "scheduling, lowering or LLVM".into(),
                message: panic_message(payload.as_ref()),
            })
        })
    }

    fn build_inner(&self, c: &Candidate) -> Result<Built, BuildError> {
        let start = Instant::now();
        let (artifact, object) = self.object(c)?;
        let symbol = kernel_symbol(&c.workload);
        // A vector length the target cannot run at fails that run, not the build.
        let vl_bits = c.vls().into_iter().filter(|&vl| c.target.vscale_for_vl(vl).is_ok()).collect();
        let req = CheckRequest {
            workload: &c.workload,
            target: &c.target,
            object: &object,
            symbol: &symbol,
            vl_bits,
            seed: self.seed,
            timeout: c.timeout,
            work_dir: None,
        };
        let harness = match &self.cache {
            Some(cache) => Harness::build_cached(&req, LinkCache { cache, object_key: &artifact })?,
            None => Harness::build(&req)?,
        };
        if harness.executable_from_cache() {
            self.executable_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Built { candidate: c.id, artifact, harness, build_s: start.elapsed().as_secs_f64() })
    }
}

impl Default for LlvmBuilder {
    fn default() -> Self {
        LlvmBuilder::new()
    }
}

impl Builder for LlvmBuilder {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        let r = self.build_inner(c);
        if r.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}
