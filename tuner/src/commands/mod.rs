//! The `scaletune` subcommands.

pub mod agent;
pub mod bench;
pub mod build;
pub mod check;
pub mod compile;
pub mod db;
pub mod db_records;
pub mod info;
pub mod measure;
pub mod report;
pub mod tune;

/// The variable that moves (`SCALETUNE_MACHINE_LOCK=DIR`) or turns off
/// (`off`) the lock that keeps this process's builds out of other scaletune
/// processes' timed runs ([`scaletune_measure::MachineLock`]).
pub const MACHINE_LOCK_VAR: &str = "SCALETUNE_MACHINE_LOCK";

/// The machine lock of [`MACHINE_LOCK_VAR`] (by default this user's,
/// [`scaletune_measure::MachineLock::default_dir`]); `None` when turned
/// off, or, with a warning, when the lock directory cannot be used.
pub fn machine_lock() -> Option<std::sync::Arc<scaletune_measure::MachineLock>> {
    let dir = machine_lock_dir(std::env::var_os(MACHINE_LOCK_VAR))?;
    match scaletune_measure::MachineLock::open(&dir) {
        Ok(lock) => Some(std::sync::Arc::new(lock)),
        Err(e) => {
            tracing::warn!(
                "{e}; timed runs are not kept apart from other scaletune processes (set {MACHINE_LOCK_VAR})"
            );
            None
        }
    }
}

/// The lock directory [`MACHINE_LOCK_VAR`]'s value asks for: `None` for
/// `off`, the default directory when unset or empty.
fn machine_lock_dir(var: Option<std::ffi::OsString>) -> Option<std::path::PathBuf> {
    match var {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(std::path::PathBuf::from(v)),
        _ => Some(scaletune_measure::MachineLock::default_dir()),
    }
}

/// `farm` with the [`machine_lock`], if any.
pub fn lock_machine(farm: scaletune_measure::Farm) -> scaletune_measure::Farm {
    match machine_lock() {
        Some(lock) => farm.with_machine_lock(lock),
        None => farm,
    }
}

/// A failure of the measuring infrastructure, not of the input or the
/// candidate (no agent of the farm answered): the command exits with status 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Infrastructure(pub String);

/// An error and its causes on one line, each cause once: a cause whose text
/// the message before it already contains (an error that quotes its source
/// and also chains it) is not repeated.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string().replace('\n', " ");
        if out.is_empty() {
            out = text;
        } else if !out.contains(text.trim()) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// The exit status of a command's error: 3 for [`Infrastructure`], else 2 (bad input).
pub fn exit_code_of(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.downcast_ref::<Infrastructure>().is_some()) {
        3
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::path::PathBuf;

    #[test]
    fn the_machine_lock_variable_moves_or_turns_off_the_lock() {
        let default = Some(scaletune_measure::MachineLock::default_dir());
        assert_eq!(machine_lock_dir(None), default);
        assert_eq!(machine_lock_dir(Some(OsString::new())), default);
        assert_eq!(machine_lock_dir(Some("off".into())), None);
        assert_eq!(machine_lock_dir(Some("/srv/locks".into())), Some(PathBuf::from("/srv/locks")));
    }
}
