//! Data-driven snapshot tests (the workspace's filetests): one case per file in a directory, each checked against a snapshot beside it, every failure reported at once.
//!
//! A case file may open with header lines `# key: value`; the rest is its
//! body. Tests call [`run_dir`] with a function that computes a case's
//! output and asserts it against its snapshot (with `expect_test`'s
//! `expect_file!`, so `UPDATE_EXPECT=1` rewrites the snapshots). A new case
//! is a new file.

use std::path::{Path, PathBuf};

/// A case file: its path, its `# key: value` header lines and its body.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case file.
    pub path: PathBuf,
    /// Header entries in file order.
    pub header: Vec<(String, String)>,
    /// Everything after the header lines.
    pub body: String,
}

impl Case {
    /// Reads and splits a case file.
    pub fn read(path: &Path) -> Case {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let mut header = Vec::new();
        let mut rest = text.as_str();
        while let Some(line) = rest.lines().next() {
            let Some((key, value)) = line.strip_prefix("# ").and_then(|l| l.split_once(": ")) else { break };
            if key.contains(' ') {
                break;
            }
            header.push((key.to_string(), value.trim().to_string()));
            rest = rest.get(line.len() + 1..).unwrap_or("");
        }
        Case { path: path.to_path_buf(), header, body: rest.to_string() }
    }

    /// The value of header `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.header.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of header `key`; panics naming the case if it is missing.
    pub fn require(&self, key: &str) -> &str {
        self.get(key).unwrap_or_else(|| panic!("{}: missing header `# {key}: ...`", self.path.display()))
    }

    /// The snapshot file of this case: the case's path with `.expected` appended.
    pub fn snapshot(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".expected");
        PathBuf::from(name)
    }
}

/// The case files of `dir` with extension `ext`, sorted by name.
pub fn cases(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == ext)).collect();
    files.sort();
    files
}

/// Checks every `*.ext` case of `dir` with `check` (which panics on a
/// mismatch); panics at the end naming every failed case, and if `dir` has
/// no case at all.
pub fn run_dir(dir: &Path, ext: &str, check: impl Fn(&Case)) {
    let files = cases(dir, ext);
    assert!(!files.is_empty(), "no *.{ext} cases in {}", dir.display());
    let mut failed = Vec::new();
    for f in &files {
        let case = Case::read(f);
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&case))) {
            let why = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {}", f.display(), why.lines().next().unwrap_or("")));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed (UPDATE_EXPECT=1 rewrites the snapshots):\n  {}",
        failed.len(),
        files.len(),
        failed.join("\n  ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_split_from_the_body() {
        let dir = std::env::temp_dir().join(format!("scaletune-filetest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("a.case");
        std::fs::write(&p, "# workload: matmul:M=4\n# target: neon\n# a comment, not a header\nbody\n").expect("write");
        let c = Case::read(&p);
        assert_eq!(c.header, [("workload".into(), "matmul:M=4".into()), ("target".into(), "neon".into())]);
        assert_eq!(c.body, "# a comment, not a header\nbody\n");
        assert_eq!(c.get("target"), Some("neon"));
        assert_eq!(c.snapshot(), dir.join("a.case.expected"));
        assert_eq!(cases(&dir, "case"), [p]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
