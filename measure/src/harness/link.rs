//! Extra inputs of the harness's link step: the libraries a foreign kernel object (a baseline such as an OpenBLAS wrapper) needs.

use super::HarnessError;
use std::path::PathBuf;

/// Libraries and search directories linked after the target's own `libs`
/// (see [`super::Harness::build_with_link`]). Empty for kernels scaletune
/// compiles, which need only the target's libraries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinkExtras {
    /// Directories searched for libraries (`-L DIR`), in order.
    pub search_dirs: Vec<PathBuf>,
    /// Library names, linked as `-lNAME` in order (`openblas` for `-lopenblas`).
    pub libraries: Vec<String>,
}

impl LinkExtras {
    /// Links the named libraries, e.g. `LinkExtras::libraries(["openblas"])`.
    pub fn libraries<I, S>(names: I) -> LinkExtras
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        LinkExtras { search_dirs: Vec::new(), libraries: names.into_iter().map(Into::into).collect() }
    }

    /// True if nothing is added to the link.
    pub fn is_empty(&self) -> bool {
        self.search_dirs.is_empty() && self.libraries.is_empty()
    }

    /// Refuses library names a linker would read as something else (empty,
    /// starting with `-`, holding whitespace or a path separator).
    pub fn validate(&self) -> Result<(), HarnessError> {
        for name in &self.libraries {
            let bad = name.is_empty()
                || name.starts_with('-')
                || name.chars().any(|c| c.is_whitespace() || c == '/' || c == '\0');
            if bad {
                return Err(HarnessError::Unsupported(format!(
                    "`{name}` is not a library name (give `openblas` to link -lopenblas)"
                )));
            }
        }
        if let Some(d) = self.search_dirs.iter().find(|d| d.as_os_str().is_empty()) {
            return Err(HarnessError::Unsupported(format!("empty library search directory {d:?}")));
        }
        Ok(())
    }

    /// The linker arguments: every `-L DIR`, then every `-lNAME`.
    pub(crate) fn args(&self) -> Vec<String> {
        let dirs = self.search_dirs.iter().map(|d| format!("-L{}", d.display()));
        dirs.chain(self.libraries.iter().map(|l| format!("-l{l}"))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_put_search_directories_first() {
        let extras =
            LinkExtras { search_dirs: vec![PathBuf::from("/opt/lib")], ..LinkExtras::libraries(["openblas", "m"]) };
        assert_eq!(extras.args(), vec!["-L/opt/lib", "-lopenblas", "-lm"]);
        assert!(LinkExtras::default().args().is_empty());
        assert!(LinkExtras::default().is_empty());
    }

    #[test]
    fn names_a_linker_would_misread_are_refused() {
        for bad in ["", "-lopenblas", "open blas", "lib/openblas"] {
            let err = LinkExtras::libraries([bad]).validate().expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!("unsupported: `{bad}` is not a library name (give `openblas` to link -lopenblas)")
            );
        }
        assert!(LinkExtras::libraries(["openblas"]).validate().is_ok());
    }
}
