//! The schema and its migrations: version `n` is reached by running migration `n - 1` on version `n - 1`.
//!
//! Migrations run in one `IMMEDIATE` transaction that reads `user_version`
//! inside it (the write lock is taken before the version is read), so two
//! processes opening a new file at once cannot both create the tables: the
//! second waits, then finds the schema current.

/// `PRAGMA application_id` of a scaletune tuning database ("STDB").
pub const APPLICATION_ID: i32 = 0x5354_4442;

/// Migrations in order; the schema version is how many have run.
pub const MIGRATIONS: &[&str] = &[
    // 1: workloads, targets, jobs, records.
    "CREATE TABLE workloads (
        id INTEGER PRIMARY KEY,
        definition TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE
    );
    CREATE TABLE targets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        definition TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE
    );
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        arguments TEXT NOT NULL,
        seed INTEGER NOT NULL,
        strategy TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
        started_at TEXT NOT NULL,
        ended_at TEXT,
        stop_reason TEXT,
        state TEXT
    );
    CREATE TABLE records (
        id INTEGER PRIMARY KEY,
        job_id INTEGER REFERENCES jobs(id),
        workload_id INTEGER NOT NULL REFERENCES workloads(id),
        target_id INTEGER NOT NULL REFERENCES targets(id),
        trial_idx INTEGER NOT NULL,
        space_trace TEXT NOT NULL,
        trace TEXT NOT NULL,
        trace_hash TEXT NOT NULL,
        runner TEXT NOT NULL,
        vl_set TEXT NOT NULL,
        status TEXT NOT NULL,
        message TEXT NOT NULL,
        metrics TEXT NOT NULL,
        objective REAL,
        objective_kind TEXT NOT NULL,
        build_s REAL NOT NULL,
        run_s REAL NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (workload_id, target_id, trace_hash, vl_set, runner)
    );
    CREATE INDEX records_best ON records (workload_id, target_id, status, objective);
    CREATE INDEX records_job ON records (job_id, trial_idx);
    CREATE INDEX records_target ON records (target_id);",
    // 2: what reports need: each record's vector kind and the cost model's
    // prediction, each workload's floating-point operations, and baselines
    // (reference implementations and the default schedule) per task.
    "ALTER TABLE records ADD COLUMN vector_kind TEXT;
    ALTER TABLE records ADD COLUMN predicted REAL;
    ALTER TABLE workloads ADD COLUMN flops REAL;
    CREATE TABLE baselines (
        id INTEGER PRIMARY KEY,
        workload_id INTEGER NOT NULL REFERENCES workloads(id),
        target_id INTEGER NOT NULL REFERENCES targets(id),
        name TEXT NOT NULL,
        runner TEXT NOT NULL,
        vl_set TEXT NOT NULL,
        objective REAL,
        objective_kind TEXT NOT NULL,
        metrics TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (workload_id, target_id, name, runner, vl_set)
    );",
    // 3: re-measurements of records (a job's top candidates timed again at
    // its end, so one lucky or unlucky run does not decide the winner):
    // every one kept as JSON, and the median of all of them with the first.
    "ALTER TABLE records ADD COLUMN remeasured TEXT;
    ALTER TABLE records ADD COLUMN confirmed REAL;
    DROP INDEX records_best;
    CREATE INDEX records_best ON records (workload_id, target_id, status, objective, confirmed);",
    // 4: the identity of the code each record measured (the hash of its
    // kernel objects), and the earlier measurements of a record whose
    // candidate was measured again on other code, as JSON.
    "ALTER TABLE records ADD COLUMN code TEXT;
    ALTER TABLE records ADD COLUMN superseded TEXT;",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
