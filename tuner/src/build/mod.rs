//! Build-time replay: the best recorded schedule of each kernel of a manifest, compiled into one static library per target, with a C header and Rust declarations; the API of `build.rs` scripts and of `scaletune build`.
//!
//! ```no_run
//! // build.rs
//! scaletune::build::Build::new()
//!     .db("kernels.db")
//!     .manifest("kernels.toml")
//!     .compile()
//!     .expect("tuned kernels");
//! ```
//!
//! In a build script (the default), [`Build::compile`] writes into
//! `$OUT_DIR` and prints `cargo:rerun-if-changed` for the database and the
//! manifest, `cargo:warning` for each warning, and the link lines of the
//! library of the host target (`host`, or [`Build::link_target`]).
//! Nothing is written until every kernel is compiled; the outputs then
//! replace the old ones whole, so a failed build leaves the output directory
//! as it was.

mod archive;
pub mod emit;
pub mod manifest;
pub mod names;
pub mod select;

use manifest::{KernelSpec, Manifest};
use scaletune_codegen::pipeline::{compile_nest, Options};
use scaletune_database::{Database, DbError};
use select::{Chosen, Stale};
use std::path::{Path, PathBuf};
use std::time::Instant;
use thiserror::Error;

/// Why a build failed.
#[derive(Debug, Error)]
pub enum BuildError {
    /// A file cannot be read.
    #[error("cannot read {path}: {error}")]
    Io {
        /// File.
        path: String,
        /// The error.
        error: std::io::Error,
    },
    /// The manifest is not TOML of the manifest's shape.
    #[error("{file}:{line}: {message}")]
    ManifestSyntax {
        /// File.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A kernel of the manifest is wrong.
    #[error("{file}:{line}: kernel `{kernel}`, field `{field}`: {message}")]
    Manifest {
        /// File.
        file: String,
        /// 1-based line.
        line: usize,
        /// The kernel's name (or `#N` if it has none).
        kernel: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The outputs' prefix is empty.
    #[error("the output prefix is empty{origin}: it names the outputs PREFIX.h, PREFIX.rs and libPREFIX_TARGET.a")]
    EmptyPrefix {
        /// Where it came from: `""`, or ` (the manifest's file stem)`.
        origin: &'static str,
    },
    /// The outputs' prefix, with its characters other than letters and digits
    /// made `_`, is no C identifier.
    #[error(
        "the output prefix `{prefix}`{origin} is not a C identifier: it must start with a letter or `_` (the header's include guard would be `{guard}`)"
    )]
    BadPrefix {
        /// The prefix as given.
        prefix: String,
        /// Where it came from: `""`, or ` (the manifest's file stem)`.
        origin: &'static str,
        /// The include guard it would make.
        guard: String,
    },
    /// A required setting was not given.
    #[error("no {0} given")]
    Unset(&'static str),
    /// The database cannot be read.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A pinned record cannot be used.
    #[error("kernel `{kernel}`: record {record}: {message}")]
    Pinned {
        /// Kernel.
        kernel: String,
        /// The pinned record.
        record: i64,
        /// Why.
        message: String,
    },
    /// No usable record, and the build is strict.
    #[error("kernel `{kernel}`: no usable record of {workload} on {target} in {db}{stale}")]
    NoRecord {
        /// Kernel.
        kernel: String,
        /// Workload reference.
        workload: String,
        /// Target name.
        target: String,
        /// Database file.
        db: String,
        /// The stale records, as text.
        stale: String,
    },
    /// Compiling the chosen schedule failed.
    #[error("kernel `{kernel}`: {message}")]
    Compile {
        /// Kernel.
        kernel: String,
        /// What failed.
        message: String,
    },
    /// The archiver failed.
    #[error("cannot write {file}: {message}")]
    Archive {
        /// The library.
        file: String,
        /// What failed.
        message: String,
    },
    /// An output cannot be written.
    #[error("cannot write {path}: {error}")]
    Output {
        /// The file or directory.
        path: String,
        /// The error.
        error: std::io::Error,
    },
}

/// A build of the kernels of a manifest, configured like `cc::Build`.
#[derive(Clone, Debug)]
pub struct Build {
    db: Option<PathBuf>,
    manifest: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    prefix: Option<String>,
    strict: bool,
    cargo_metadata: bool,
    link_target: String,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

/// One kernel built.
#[derive(Clone, Debug)]
pub struct BuiltKernel {
    /// Its name (C symbol).
    pub name: String,
    /// Its target's name.
    pub target: String,
    /// The record replayed (`None`: the default schedule).
    pub record: Option<i64>,
    /// Records passed over.
    pub stale: Vec<Stale>,
    /// Seconds spent choosing and compiling it.
    pub replay_s: f64,
}

/// What a build wrote.
#[derive(Clone, Debug)]
pub struct Built {
    /// The kernels, in manifest order.
    pub kernels: Vec<BuiltKernel>,
    /// One static library per target, in order of first use: (target name, file).
    pub libraries: Vec<(String, PathBuf)>,
    /// The C header.
    pub header: PathBuf,
    /// The Rust declarations.
    pub rust: PathBuf,
    /// Warnings (kernels built with the default schedule, stale records).
    pub warnings: Vec<String>,
}

impl Built {
    /// The library name to link (`-l`/`rustc-link-lib=static=`) for a target's library.
    pub fn link_name(lib: &Path) -> String {
        let stem = lib.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        stem.strip_prefix("lib").unwrap_or(&stem).to_string()
    }
}

/// `text` with every character that is not an ASCII letter or digit replaced by `_`.
fn identifier(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// The outputs' name: the prefix given, else the manifest's file stem, with
/// its characters other than ASCII letters and digits made `_`; refused when
/// that is empty or starts with a digit (no include guard could be made of it).
fn output_prefix(given: Option<&str>, manifest: &Path) -> Result<String, BuildError> {
    let (raw, origin) = match given {
        Some(p) => (p.to_string(), ""),
        None => (
            manifest.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default(),
            " (the manifest's file stem)",
        ),
    };
    let prefix = identifier(&raw);
    match prefix.chars().next() {
        None => Err(BuildError::EmptyPrefix { origin }),
        Some(c) if c.is_ascii_digit() => {
            Err(BuildError::BadPrefix { prefix: raw, origin, guard: include_guard(&prefix) })
        }
        Some(_) => Ok(prefix),
    }
}

/// The header's include guard of an output prefix.
fn include_guard(prefix: &str) -> String {
    format!("{}_H", prefix.to_ascii_uppercase())
}

/// A compiled kernel, not yet written.
struct Compiled {
    chosen: Chosen,
    object: Vec<u8>,
    built_for_vl: Option<u32>,
    replay_s: f64,
}

impl Build {
    /// A build with nothing set: in a build script, the output directory is
    /// `$OUT_DIR` and cargo metadata is printed.
    pub fn new() -> Build {
        Build {
            db: None,
            manifest: None,
            out_dir: None,
            prefix: None,
            strict: false,
            cargo_metadata: std::env::var_os("OUT_DIR").is_some(),
            link_target: "host".into(),
        }
    }

    /// The tuning database.
    pub fn db(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.db = Some(path.as_ref().to_path_buf());
        self
    }

    /// The kernel manifest.
    pub fn manifest(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.manifest = Some(path.as_ref().to_path_buf());
        self
    }

    /// Where the outputs go (default `$OUT_DIR`).
    pub fn out_dir(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(path.as_ref().to_path_buf());
        self
    }

    /// The outputs' name: `<prefix>.h`, `<prefix>.rs`, `lib<prefix>_<target>.a` (default: the manifest's file stem),
    /// with characters other than ASCII letters and digits made `_`; [`Build::compile`] refuses one
    /// that is then empty or starts with a digit.
    pub fn prefix(&mut self, prefix: &str) -> &mut Build {
        self.prefix = Some(prefix.to_string());
        self
    }

    /// Fail on a kernel with no usable record instead of building its default schedule.
    pub fn strict(&mut self, strict: bool) -> &mut Build {
        self.strict = strict;
        self
    }

    /// Print `cargo:` lines (default: when `$OUT_DIR` is set, as in a build script).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Build {
        self.cargo_metadata = on;
        self
    }

    /// The target whose library cargo links (default `host`).
    pub fn link_target(&mut self, name: &str) -> &mut Build {
        self.link_target = name.to_string();
        self
    }

    /// Chooses, compiles and writes every kernel of the manifest.
    pub fn compile(&self) -> Result<Built, BuildError> {
        let manifest_path = self.manifest.as_deref().ok_or(BuildError::Unset("manifest"))?;
        let db_path = self.db.as_deref().ok_or(BuildError::Unset("database"))?;
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or(BuildError::Unset("output directory"))?,
        };
        if self.cargo_metadata {
            println!("cargo:rerun-if-changed={}", db_path.display());
            println!("cargo:rerun-if-changed={}", manifest_path.display());
        }
        let prefix = output_prefix(self.prefix.as_deref(), manifest_path)?;
        let guard = include_guard(&prefix);
        let manifest = manifest::load(manifest_path)?;
        if let Some(k) = manifest.kernels.iter().find(|k| k.name == guard) {
            return Err(BuildError::Manifest {
                file: manifest.file.clone(),
                line: k.line,
                kernel: k.name.clone(),
                field: "name".into(),
                message: format!(
                    "`{guard}` is the include guard of the header `{prefix}.h`: rename the kernel or choose another prefix"
                ),
            });
        }
        let db = Database::open_existing(db_path)?;
        let mut warnings = Vec::new();
        let mut compiled = Vec::new();
        for k in &manifest.kernels {
            let c = self.compile_kernel(&db, k)?;
            warnings.extend(kernel_warnings(k, &c.chosen, db_path));
            warnings.extend(code_warning(k, &c.chosen));
            compiled.push(c);
        }
        let built = write_outputs(&manifest, &compiled, &prefix, &out_dir, warnings)?;
        if self.cargo_metadata {
            for w in &built.warnings {
                println!("cargo:warning={w}");
            }
            if let Some((_, lib)) = built.libraries.iter().find(|(t, _)| *t == self.link_target) {
                println!("cargo:rustc-link-search=native={}", out_dir.display());
                println!("cargo:rustc-link-lib=static={}", Built::link_name(lib));
            }
        }
        Ok(built)
    }

    fn compile_kernel(&self, db: &Database, k: &KernelSpec) -> Result<Compiled, BuildError> {
        let start = Instant::now();
        let chosen = select::choose(db, k)?;
        if chosen.record.is_none() && self.strict {
            return Err(BuildError::NoRecord {
                kernel: k.name.clone(),
                workload: k.workload.reference(),
                target: k.target.name.clone(),
                db: db.path().display().to_string(),
                stale: chosen.stale.iter().map(|s| format!("; record {} is stale: {}", s.record, s.reason)).collect(),
            });
        }
        let opts = Options { symbol: Some(k.name.clone()), vl_bits: select::specialize_vl(k), ..Options::default() };
        let c = compile_nest(&k.workload, chosen.nest.clone(), &k.target, &opts)
            .map_err(|e| BuildError::Compile { kernel: k.name.clone(), message: e.to_string() })?;
        Ok(Compiled { object: c.object, built_for_vl: c.built_for_vl, chosen, replay_s: start.elapsed().as_secs_f64() })
    }
}

/// A warning when the chosen record measured other code than this build
/// makes from its trace (a newer scaletune or LLVM compiled it otherwise):
/// its figure, and so the choice, may not hold. The code is compared as a
/// tuning job compares it (the candidate's objects at the record's vector
/// lengths, under the workload's own kernel symbol); a record that did not
/// keep its code is not compared.
fn code_warning(k: &KernelSpec, c: &Chosen) -> Option<String> {
    let r = c.record.as_ref()?;
    let recorded = r.code.as_deref()?;
    let vls: Vec<u32> = r.vl_set.split(',').filter_map(|v| v.parse().ok()).collect();
    let candidate = scaletune_measure::Candidate::new(
        0,
        std::sync::Arc::new(k.workload.clone()),
        std::sync::Arc::new(k.target.clone()),
        c.trace.clone().unwrap_or_default(),
    )
    .with_vl_bits(vls);
    let now = scaletune_measure::LlvmBuilder::new().code(&candidate).ok()?;
    (now != recorded).then(|| {
        format!(
            "kernel `{}`: record {} measured other code than this scaletune builds from its trace, so its figure \
             may not hold: tune {} on {} again to measure it anew",
            k.name,
            r.id,
            k.workload.reference(),
            k.target.name
        )
    })
}

/// The warnings of one kernel: stale records, and the default schedule if no record was usable.
fn kernel_warnings(k: &KernelSpec, c: &Chosen, db: &Path) -> Vec<String> {
    let mut out: Vec<String> =
        c.stale.iter().map(|s| format!("kernel `{}`: record {} is stale: {}", k.name, s.record, s.reason)).collect();
    if c.record.is_none() {
        out.push(format!(
            "kernel `{}`: no usable record of {} on {} in {}; built with the default schedule",
            k.name,
            k.workload.reference(),
            k.target.name,
            db.display()
        ));
    }
    out
}

/// Writes libraries, header and Rust file into a scratch directory inside `out_dir`, then moves them into place.
fn write_outputs(
    manifest: &Manifest,
    compiled: &[Compiled],
    prefix: &str,
    out_dir: &Path,
    warnings: Vec<String>,
) -> Result<Built, BuildError> {
    let out_err = |path: &Path| {
        let path = path.display().to_string();
        move |error| BuildError::Output { path, error }
    };
    if out_dir.exists() && !out_dir.is_dir() {
        let error = std::io::Error::other("a file, not a directory: --out-dir names where the outputs go");
        return Err(out_err(out_dir)(error));
    }
    std::fs::create_dir_all(out_dir).map_err(out_err(out_dir))?;
    let out_dir = std::fs::canonicalize(out_dir).map_err(out_err(out_dir))?;
    let staging =
        tempfile::Builder::new().prefix(".scaletune-build-").tempdir_in(&out_dir).map_err(out_err(&out_dir))?;
    let mut targets: Vec<&str> = Vec::new();
    for k in &manifest.kernels {
        if !targets.contains(&k.target.name.as_str()) {
            targets.push(&k.target.name);
        }
    }
    let lib_file = |t: &str| format!("lib{prefix}_{}.a", identifier(t));
    let mut files: Vec<String> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let objects: Vec<(String, Vec<u8>)> = manifest
            .kernels
            .iter()
            .zip(compiled)
            .filter(|(k, _)| k.target.name == *t)
            .map(|(k, c)| (format!("{}.o", k.name), c.object.clone()))
            .collect();
        let file = lib_file(t);
        archive::write(&staging.path().join(&file), &objects, &staging.path().join(format!("objects{i}")))?;
        files.push(file);
    }
    let entries: Vec<emit::Entry<'_>> = manifest
        .kernels
        .iter()
        .zip(compiled)
        .map(|(k, c)| emit::Entry {
            spec: k,
            record: c.chosen.record.as_ref(),
            library: lib_file(&k.target.name),
            built_for_vl: c.built_for_vl,
        })
        .collect();
    let manifest_name =
        Path::new(&manifest.file).file_name().map_or(manifest.file.clone(), |f| f.to_string_lossy().to_string());
    let guard = include_guard(prefix);
    let texts = [
        (format!("{prefix}.h"), emit::header(&entries, &guard, &manifest_name)),
        (format!("{prefix}.rs"), emit::rust(&entries, &guard, &manifest_name)),
    ];
    for (name, text) in &texts {
        let p = staging.path().join(name);
        std::fs::write(&p, text).map_err(out_err(&p))?;
        files.push(name.clone());
    }
    for f in &files {
        let to = out_dir.join(f);
        std::fs::rename(staging.path().join(f), &to).map_err(out_err(&to))?;
    }
    Ok(Built {
        kernels: manifest
            .kernels
            .iter()
            .zip(compiled)
            .map(|(k, c)| BuiltKernel {
                name: k.name.clone(),
                target: k.target.name.clone(),
                record: c.chosen.record.as_ref().map(|r| r.id),
                stale: c.chosen.stale.clone(),
                replay_s: c.replay_s,
            })
            .collect(),
        libraries: targets.iter().zip(&files).map(|(t, f)| (t.to_string(), out_dir.join(f))).collect(),
        header: out_dir.join(&texts[0].0),
        rust: out_dir.join(&texts[1].0),
        warnings,
    })
}
