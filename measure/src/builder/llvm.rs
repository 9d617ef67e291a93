//! The LLVM builder: schedule replay, lowering, LLVM and linking in this process, with the artifact cache (objects and executables).
//!
//! LLVM runs in-process: `scaletune_codegen::llvm::compile` creates its own
//! context per call (so builder threads never share one) and rejects up front
//! the vector types its backends would abort on. Panics anywhere in the
//! build are caught and become [`BuildError::Panic`]. An LLVM `abort()` cannot
//! be caught in-process; none is known for programs that pass codegen's
//! checks, so no compiler subprocess is used (if one is ever found, the fix
//! belongs in codegen's up-front checks).

use super::cache::{artifact_key_at_vl, ArtifactCache};
use super::code::{code_identity, object_code};
use super::{panic_message, BuildError, Builder, VlBuild};
use crate::candidate::Candidate;
use crate::harness::{CheckRequest, Harness, LinkCache};
use crate::runner::Built;
use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::pipeline::{self, kernel_symbol, Emit, ObjectPlan, Options};
use scaletune_codegen::vprog::Program;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
        self.object_at(c, None)
    }

    /// Like [`LlvmBuilder::object`], with fixed-length kinds specialized to
    /// `specialize_vl` bits (`scaletune_codegen::pipeline::Options::vl_bits`).
    pub fn object_at(&self, c: &Candidate, specialize_vl: Option<u32>) -> Result<(String, Vec<u8>), BuildError> {
        let key = artifact_key_at_vl(&c.workload, &c.target, &c.trace, &self.options, specialize_vl);
        if let Some(object) = self.cache.as_ref().and_then(|cache| cache.get(&key)) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((key, object));
        }
        let object = self.compile(c, specialize_vl)?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(cache) = &self.cache {
            // A cache that cannot be written only costs time later.
            if let Err(e) = cache.put(&key, &object) {
                tracing::warn!("cannot store artifact {key} in {}: {e}", cache.dir().display());
            }
        }
        Ok((key, object))
    }

    /// The identity of the code `c` builds now ([`code_identity`] of its
    /// objects, compiled or taken from the cache, as [`Builder::build_all`]
    /// makes them; nothing is linked): what a tuning database compares with
    /// a record's to tell whether the record measured this code. An error
    /// only if no object builds (as a farm's `build_error`).
    pub fn code(&self, c: &Candidate) -> Result<String, BuildError> {
        let mut objects = Vec::new();
        let mut first_error = None;
        for plan in pipeline::vl_builds(&c.workload, Some(&c.trace), &c.target, &c.vls()) {
            match self.object_at(c, plan.specialize) {
                Ok((_, object)) => objects.push((plan.built_for_vl, object_code(&object))),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (objects.is_empty(), first_error) {
            (true, Some(e)) => Err(e),
            _ => Ok(code_identity(&objects)),
        }
    }

    /// The one compile pipeline (object only), with panics caught.
    fn compile(&self, c: &Candidate, specialize_vl: Option<u32>) -> Result<Vec<u8>, BuildError> {
        let opts = Options { llvm: self.options.clone(), emit: Emit::OBJECT, vl_bits: specialize_vl, symbol: None };
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

    /// Builds the object of `plan` and links its harness, for a target that
    /// runs at the plan's vector lengths (the candidate's, moved to the
    /// plan's vector length when the object is specialized to it).
    fn build_plan(&self, c: &Candidate, plan: &ObjectPlan) -> Result<Built, BuildError> {
        let start = Instant::now();
        let target = match plan.specialize {
            Some(vl) => pipeline::target_at_vl(&c.target, vl)?,
            None => (*c.target).clone(),
        };
        let (artifact, object) = self.object_at(c, plan.specialize)?;
        let symbol = kernel_symbol(&c.workload);
        // A vector length the target cannot run at fails that run, not the build.
        let vl_bits = plan.vl_bits.iter().copied().filter(|&vl| target.vscale_for_vl(vl).is_ok()).collect();
        let req = CheckRequest {
            workload: &c.workload,
            target: &target,
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
        let harness = match program_past_qemu_defects(c, plan.specialize) {
            Some(program) => harness.with_program(program),
            None => harness,
        };
        let mut built = Built::new(c.id, artifact, harness, start.elapsed().as_secs_f64());
        built.code = object_code(&object);
        built.built_for_vl = plan.built_for_vl;
        Ok(built)
    }

    fn counted(&self, r: Result<Built, BuildError>) -> Result<Built, BuildError> {
        if r.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}

/// The vector program of `c` (specialized to `specialize` bits), for a
/// harness whose runs under a QEMU with a known defect in what the program
/// uses are judged by the interpreter ([`Harness::with_program`]): only on
/// SME targets that run under QEMU, and only a program with integer outer
/// products (`smopa`); `None` otherwise. Lowering again costs about a
/// millisecond, against the tens an LLVM compile takes.
fn program_past_qemu_defects(c: &Candidate, specialize: Option<u32>) -> Option<Arc<Program>> {
    if !(c.target.sme.is_some() && c.target.qemu.is_some()) {
        return None;
    }
    let lower = || {
        let nest = pipeline::schedule(&c.workload, Some(&c.trace), &c.target, specialize).ok()?;
        pipeline::lower_nest(&c.workload, &nest).ok()
    };
    // A panic here is the compile's to report: it lowers the same nest.
    let program = catch_unwind(AssertUnwindSafe(lower)).ok().flatten()?;
    program.uses_integer_outer_products().then(|| Arc::new(program))
}

impl Default for LlvmBuilder {
    fn default() -> Self {
        LlvmBuilder::new()
    }
}

impl Builder for LlvmBuilder {
    /// One object for every vector length of the candidate.
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        let plan = ObjectPlan { specialize: None, built_for_vl: None, vl_bits: c.vls() };
        self.counted(self.build_plan(c, &plan))
    }

    /// One object per vector length for a fixed-length scalable kind (each
    /// compiled for its length), else one for all (see `pipeline::vl_builds`).
    fn build_all(&self, c: &Candidate) -> Vec<VlBuild> {
        pipeline::vl_builds(&c.workload, Some(&c.trace), &c.target, &c.vls())
            .into_iter()
            .map(|plan| VlBuild { result: self.counted(self.build_plan(c, &plan)), vl_bits: plan.vl_bits })
            .collect()
    }
}
