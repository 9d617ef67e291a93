//! What a correct kernel must produce: a workload's generated inputs and its reference outputs, computed once per (workload, seed) and kept in memory and on disk.
//!
//! The reference evaluator ([`scaletune_space::reference::evaluate`]) walks
//! the statements in f64 with error bounds; for a 512x512x512 matmul that
//! takes seconds, far longer than building and running a candidate. Every
//! candidate of a workload checks against the same reference, so
//! [`expected`] computes it once per process (concurrent callers wait for
//! the one computation) and stores the output tensors in the `reference`
//! cache ([`scaletune_codegen::tools::cache_dir`]), keyed by the workload's
//! full definition, the input seed and [`BUILD_ID`] (a hash of the sources
//! that define the reference semantics), so later processes read it back in
//! milliseconds. The cache is only a cache: a missing, truncated or foreign
//! file is recomputed and rewritten, never trusted.
//!
//! Only outputs are kept: the reference of every other tensor is empty
//! (nothing judges inputs or temporaries).

use crate::builder::BUILD_ID;
use scaletune_space::data::make_args;
use scaletune_space::reference::{evaluate, RefTensor, ReferenceError};
use scaletune_space::workload::{Role, Workload};
use scaletune_space::TensorData;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The inputs of a check and the reference its outputs are judged against.
#[derive(Debug, PartialEq)]
pub struct Expected {
    /// The kernel's arguments in `arg_tensors` order (outputs poisoned).
    pub args: Vec<TensorData>,
    /// Reference values and error bounds, indexed by `TensorId`; empty for
    /// every tensor that is not an output.
    pub reference: Vec<RefTensor>,
}

/// How many (workload, seed) pairs stay in memory.
const MEMORY_ENTRIES: usize = 8;

/// The in-memory table: one cell per key, so that concurrent callers of
/// the same key compute it once.
type Cell = Arc<OnceLock<Result<Arc<Expected>, ReferenceError>>>;

fn memory() -> &'static Mutex<Vec<(String, Cell)>> {
    static MEMORY: OnceLock<Mutex<Vec<(String, Cell)>>> = OnceLock::new();
    MEMORY.get_or_init(|| Mutex::new(Vec::new()))
}

/// The inputs and reference of `workload` with inputs from `seed`, from
/// memory, from the disk cache, or computed (and then stored in both).
pub fn expected(workload: &Workload, seed: u64) -> Result<Arc<Expected>, ReferenceError> {
    expected_in(workload, seed, Some(&scaletune_codegen::tools::cache_dir("reference")))
}

/// [`expected`] with the disk cache in `dir` (`None`: memory only).
pub fn expected_in(workload: &Workload, seed: u64, dir: Option<&Path>) -> Result<Arc<Expected>, ReferenceError> {
    let key = cache_key(workload, seed);
    let cell = {
        let mut table = memory().lock().unwrap_or_else(|p| p.into_inner());
        match table.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                // Most recently used last.
                let entry = table.remove(i);
                let cell = Arc::clone(&entry.1);
                table.push(entry);
                cell
            }
            None => {
                let cell: Cell = Arc::new(OnceLock::new());
                table.push((key.clone(), Arc::clone(&cell)));
                if table.len() > MEMORY_ENTRIES {
                    table.remove(0);
                }
                cell
            }
        }
    };
    cell.get_or_init(|| compute_or_load(workload, seed, &key, dir)).clone()
}

fn compute_or_load(
    workload: &Workload,
    seed: u64,
    key: &str,
    dir: Option<&Path>,
) -> Result<Arc<Expected>, ReferenceError> {
    let args = make_args(workload, seed);
    let file = dir.map(|d| d.join(format!("{key}.ref")));
    if let Some(reference) = file.as_deref().and_then(|f| read_outputs(workload, f)) {
        return Ok(Arc::new(Expected { args, reference }));
    }
    let mut reference = evaluate(workload, &args)?;
    for (t, r) in workload.tensors.iter().zip(reference.iter_mut()) {
        if t.role != Role::Output {
            *r = RefTensor { values: Vec::new(), errors: Vec::new() };
        }
    }
    if let Some(f) = &file {
        if let Err(e) = write_outputs(workload, &reference, f) {
            tracing::warn!("cannot store the reference in {}: {e}", f.display());
        }
    }
    Ok(Arc::new(Expected { args, reference }))
}

/// The cache key: the workload's whole definition (not only its name and
/// parameters: a changed statement is another reference), the seed and
/// the build identity.
pub fn cache_key(workload: &Workload, seed: u64) -> String {
    let mut h = Sha256::new();
    h.update(BUILD_ID.as_bytes());
    h.update(b"\n");
    h.update(serde_json::to_string(workload).unwrap_or_default().as_bytes());
    h.update(b"\n");
    h.update(seed.to_le_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// File magic and format version.
const MAGIC: &[u8; 8] = b"STREF01\n";

/// Outputs in order: for each output tensor its length, then its values
/// and error bounds as little-endian f64.
fn write_outputs(workload: &Workload, reference: &[RefTensor], file: &PathBuf) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        w.write_all(MAGIC)?;
        for (t, r) in workload.tensors.iter().zip(reference) {
            if t.role != Role::Output {
                continue;
            }
            w.write_all(&(r.values.len() as u64).to_le_bytes())?;
            for x in r.values.iter().chain(&r.errors) {
                w.write_all(&x.to_le_bytes())?;
            }
        }
        w.flush()?;
    }
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// Reads what [`write_outputs`] wrote; `None` for anything that does not
/// fit the workload exactly.
fn read_outputs(workload: &Workload, file: &Path) -> Option<Vec<RefTensor>> {
    let bytes = std::fs::read(file).ok()?;
    let body = bytes.strip_prefix(MAGIC.as_slice())?;
    let mut words = body.chunks_exact(8).map(|c| <[u8; 8]>::try_from(c).ok());
    if body.len() % 8 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(workload.tensors.len());
    for t in &workload.tensors {
        if t.role != Role::Output {
            out.push(RefTensor { values: Vec::new(), errors: Vec::new() });
            continue;
        }
        let n = u64::from_le_bytes(words.next()??);
        if n != t.len() as u64 {
            return None;
        }
        let mut take = || -> Option<Vec<f64>> { (0..n).map(|_| words.next()?.map(f64::from_le_bytes)).collect() };
        let values = take()?;
        let errors = take()?;
        out.push(RefTensor { values, errors });
    }
    words.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_space::workload::WorkloadRef;

    fn workload(reference: &str) -> Workload {
        WorkloadRef::parse(reference).expect("parses").load().expect("loads")
    }

    fn outputs_of(w: &Workload, reference: &[RefTensor]) -> Vec<RefTensor> {
        w.tensors.iter().zip(reference).filter(|(t, _)| t.role == Role::Output).map(|(_, r)| r.clone()).collect()
    }

    #[test]
    fn the_cached_reference_is_the_evaluated_one_and_survives_a_new_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = workload("matmul:M=9,N=7,K=5");
        let fresh = evaluate(&w, &make_args(&w, 3)).expect("evaluates");
        let first = expected_in(&w, 3, Some(dir.path())).expect("computes");
        let bytes = |args: &[TensorData]| args.iter().map(|a| a.to_le_bytes()).collect::<Vec<_>>();
        // (Bytes: outputs are poisoned with NaN, which equals nothing.)
        assert_eq!(bytes(&first.args), bytes(&make_args(&w, 3)));
        assert_eq!(outputs_of(&w, &first.reference), outputs_of(&w, &fresh));
        // The second call of this process is the same value, from memory.
        assert!(Arc::ptr_eq(&first, &expected_in(&w, 3, Some(dir.path())).expect("memory")));
        // A later process reads the file back, bit for bit.
        let file = dir.path().join(format!("{}.ref", cache_key(&w, 3)));
        assert_eq!(read_outputs(&w, &file).as_deref(), Some(first.reference.as_slice()));
    }

    #[test]
    fn another_seed_or_definition_is_another_key() {
        let a = workload("matmul:M=9,N=7,K=5");
        let b = workload("matmul:M=9,N=7,K=6");
        assert_ne!(cache_key(&a, 1), cache_key(&a, 2));
        assert_ne!(cache_key(&a, 1), cache_key(&b, 1));
        let mut changed = a.clone();
        changed.description.push('!');
        assert_ne!(cache_key(&a, 1), cache_key(&changed, 1));
    }

    #[test]
    fn a_damaged_file_is_recomputed_not_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = workload("matmul:M=6,N=5,K=4");
        let key = cache_key(&w, 11);
        let file = dir.path().join(format!("{key}.ref"));
        let good = compute_or_load(&w, 11, &key, Some(dir.path())).expect("computes");
        let bytes = std::fs::read(&file).expect("written");
        for bad in [bytes[..bytes.len() - 8].to_vec(), b"garbage".to_vec(), [bytes.clone(), vec![0; 8]].concat()] {
            std::fs::write(&file, &bad).expect("damage");
            assert_eq!(read_outputs(&w, &file), None);
            let again = compute_or_load(&w, 11, &key, Some(dir.path())).expect("recomputes");
            assert_eq!(again.reference, good.reference);
            assert_eq!(std::fs::read(&file).expect("rewritten"), bytes);
        }
    }
}
