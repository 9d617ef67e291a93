//! Opening a database: the path policy, the inspection that refuses what is not ours before anything is written, and migration.

use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};
use crate::{Database, DbError};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable naming the default database.
pub const DB_ENV: &str = "SCALETUNE_DB";

/// The database used when no `--db` is given: `$SCALETUNE_DB`, else `./scaletune.db`.
pub fn default_path() -> PathBuf {
    match std::env::var_os(DB_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("scaletune.db"),
    }
}

/// How long a writer waits for another process's write before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The 100-byte SQLite header's magic string.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// True if `bytes` begin as every SQLite database file does (any
/// application's: whether it is a tuning database is [`Database::open`]'s to say).
pub fn has_sqlite_header(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl Database {
    /// Opens the database at `path`, creating it if it does not exist and
    /// migrating it to the current schema. Refuses (leaving the file
    /// untouched) a file that is not SQLite or is damaged, another
    /// application's database and a newer schema.
    pub fn open(path: &Path) -> Result<Database, DbError> {
        if path.is_dir() {
            return Err(DbError::Io {
                file: path.display().to_string(),
                error: std::io::Error::other("a directory, not a database file"),
            });
        }
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        if exists {
            inspect(path)?;
        }
        let conn = Connection::open(path).map_err(|e| why_not_opened(path, e))?;
        let db = Database { conn, path: path.to_path_buf() };
        db.configure()?;
        db.migrate()?;
        Ok(db)
    }

    /// Opens an existing database (for commands that only read or check).
    pub fn open_existing(path: &Path) -> Result<Database, DbError> {
        if !path.exists() {
            return Err(DbError::Missing { file: path.display().to_string() });
        }
        // Reading commands do not make a database of an empty file.
        if path.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
            return Err(DbError::Empty { file: path.display().to_string() });
        }
        Database::open(path)
    }

    fn configure(&self) -> Result<(), DbError> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        // journal_mode answers with the mode in force; a new file switches to
        // WAL. The switch takes the file's lock without SQLite's busy
        // handler, so a process that creates the file while another one does
        // is told "database is locked" at once: wait for it here instead.
        let _: String = wait_while_busy(|| self.conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))?;
        self.conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
        Ok(())
    }

    fn migrate(&self) -> Result<(), DbError> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            // Another process upgraded it since the inspection.
            return Err(DbError::Newer {
                file: self.path.display().to_string(),
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        if version == 0 {
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Runs `f` again while it fails because another connection holds the
/// file's lock, pausing 1 ms, then twice as long each time up to 100 ms,
/// for at most [`BUSY_TIMEOUT`] in all (the wait SQLite's own busy handler
/// gives the statements that use it).
fn wait_while_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            result => return result,
        }
    }
}

/// Checks an existing file without writing to it: its header read as
/// bytes, then [`inspect_once`]. The immutable reader takes no lock, so
/// another process may open the file, commit and close it, checkpointing
/// into the main file, while it reads (a test found it within 400 opens
/// beside a writer that opens, writes and closes in a loop). So a refusal
/// from that reader stands only if the file was at rest: a second
/// inspection, begun at least [`AT_REST`] after the first one's snapshot,
/// refuses it too, and the file's length, modification time and header are
/// the same before and after both (a write within the file system's clock
/// tick of the first snapshot would leave the time as it was; by the second
/// read that tick is past). Otherwise the file is inspected again from its
/// new state, for up to [`INSPECTING`]; a file that never rests that long
/// is refused as the last inspection found it.
/// SQLite's "unable to open database file" says neither why nor which
/// directory: where the file does not exist, the operating system's reason
/// for not creating it (a missing or unwritable directory) is told instead.
fn why_not_opened(path: &Path, e: rusqlite::Error) -> DbError {
    if path.exists() {
        return DbError::Sqlite(e);
    }
    let file = path.display().to_string();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        let error =
            std::io::Error::other(format!("cannot create it: the directory {} does not exist", parent.display()));
        return DbError::Io { file, error };
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Err(os) => DbError::Io { file, error: std::io::Error::new(os.kind(), format!("cannot create it: {os}")) },
        Ok(_) => {
            // Creatable after all: SQLite's own reason stands (and the probe goes).
            let _ = std::fs::remove_file(path);
            DbError::Sqlite(e)
        }
    }
}

fn inspect(path: &Path) -> Result<(), DbError> {
    let deadline = Instant::now() + INSPECTING;
    let mut pause = Duration::from_millis(2);
    // The snapshot of the last refusal whose file did not change across it, and when it was taken.
    let mut quiet: Option<(Snapshot, Instant)> = None;
    loop {
        let taken = Instant::now();
        let before = Snapshot::take(path)?;
        let locked = in_use(path, &before.header);
        let result = inspect_once(path, &before.header, locked);
        let refused = matches!(result, Err(DbError::Corrupt { .. } | DbError::Foreign { .. } | DbError::Newer { .. }));
        // A locked reader's refusal stands: it read one consistent state.
        if !refused || locked || Instant::now() >= deadline {
            return result;
        }
        let unchanged = Snapshot::take(path)? == before && !in_use(path, &before.header);
        match &quiet {
            Some((first, at)) if unchanged && *first == before && taken.duration_since(*at) >= AT_REST => {
                return result;
            }
            Some((first, _)) if unchanged && *first == before => {}
            _ => quiet = unchanged.then_some((before, taken)),
        }
        std::thread::sleep(pause.max(AT_REST.saturating_sub(taken.elapsed())).min(AT_REST));
        pause = (pause * 2).min(AT_REST);
    }
}

/// How long after a refusal's snapshot a second inspection must begin for
/// the refusal to stand (a few ticks of the file system's clock).
const AT_REST: Duration = Duration::from_millis(50);

/// How long a file that keeps changing is inspected again before the
/// immutable reader's refusal stands anyway.
const INSPECTING: Duration = Duration::from_secs(10);

/// What shows whether a file changed: its length, modification time and header.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    header: [u8; 100],
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Snapshot {
    fn take(path: &Path) -> Result<Snapshot, DbError> {
        let file = path.display().to_string();
        let meta = path.metadata().map_err(|error| DbError::Io { file, error })?;
        Ok(Snapshot { header: read_header(path)?, len: meta.len(), modified: meta.modified().ok() })
    }
}

/// The file's first 100 bytes: SQLite's header.
fn read_header(path: &Path) -> Result<[u8; 100], DbError> {
    let file = path.display().to_string();
    let mut header = [0u8; 100];
    let mut f = std::fs::File::open(path).map_err(|error| DbError::Io { file: file.clone(), error })?;
    f.read_exact(&mut header)
        .map_err(|_| DbError::Corrupt { file, reason: "shorter than an SQLite header".to_string() })?;
    Ok(header)
}

/// True if the file whose header is `header` is in WAL mode and another
/// process has it open (its `-wal` and `-shm` files exist).
fn in_use(path: &Path, header: &[u8; 100]) -> bool {
    header[18] == 2 && header[19] == 2 && ["-wal", "-shm"].iter().all(|s| beside(path, s).exists())
}

/// One inspection of a file whose first 100 bytes were `header`: the
/// schema and a quick integrity check through an immutable read-only
/// connection (no lock, no journal), or, `in_use` (a WAL file that another
/// process has open), through a read-only connection that shares its locks.
fn inspect_once(path: &Path, header: &[u8; 100], in_use: bool) -> Result<(), DbError> {
    let file = path.display().to_string();
    let corrupt = |reason: &str| DbError::Corrupt { file: file.clone(), reason: reason.to_string() };
    if &header[..16] != MAGIC {
        return Err(corrupt("no SQLite header"));
    }
    // A file that another process has open in WAL mode (its `-wal` and
    // `-shm` files exist) changes under a reader that takes no lock: its
    // commits reach the main file, header included, by checkpoints (a job's
    // connection checkpoints after about 4 MB of WAL, and when it closes),
    // and such a reader may see pages of two states, which look damaged, or
    // a header older than the schema. Such a file is read through a
    // connection that shares its locks and reads the WAL (it creates no
    // file: both exist); any other through an immutable one, which takes no
    // lock and writes nothing beside a file that may not be ours.
    let conn = reader(path, !in_use).map_err(|e| corrupt(&e.to_string()))?;
    // Everything below from one snapshot (a process creating the file may
    // commit its schema between two statements), and the schema's words
    // from it, not from the header read above: the last process to close
    // the file may have checkpointed it in between, header and tables alike.
    let snapshot = conn.unchecked_transaction().map_err(|e| corrupt(&e.to_string()))?;
    let conn = &*snapshot;
    let pragma = |name: &str| -> Result<i64, DbError> {
        wait_while_busy(|| conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0)))
            .map_err(|e| corrupt(&e.to_string()))
    };
    let application_id = i32::try_from(pragma("application_id")?).map_err(|_| corrupt("application id"))?;
    let user_version = pragma("user_version")?;
    if application_id != 0 && application_id != APPLICATION_ID {
        return Err(DbError::Foreign { file, reason: format!("application id {application_id:#x}") });
    }
    if application_id == APPLICATION_ID && user_version > SCHEMA_VERSION {
        return Err(DbError::Newer { file, found: user_version, known: SCHEMA_VERSION });
    }
    let check: String = wait_while_busy(|| conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0)))
        .map_err(|e| corrupt(&e.to_string()))?;
    if check != "ok" {
        return Err(corrupt(&check));
    }
    if application_id == 0 {
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| corrupt(&e.to_string()))?;
        if !tables.is_empty() {
            return Err(DbError::Foreign { file, reason: format!("tables {}", tables.join(", ")) });
        }
    }
    Ok(())
}

/// A read-only connection to the file at `path`: `immutable`, one that
/// takes no lock and ignores the WAL; otherwise one that shares the file as
/// a reader (waiting, like every statement, while another process holds
/// the lock).
fn reader(path: &Path, immutable: bool) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}{}", uri_path(path), if immutable { "?immutable=1" } else { "" });
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    if !immutable {
        conn.busy_timeout(BUSY_TIMEOUT)?;
    }
    Ok(conn)
}

/// The file SQLite keeps beside `path` with `suffix` (`-wal`, `-shm`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A path as the path part of an SQLite URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}
