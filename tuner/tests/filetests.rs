//! Snapshot filetests of the command line: the exact output of `scaletune ARGS` (explore, listings, an error), one case per file in `tests/filetests/cli/`; bless with `UPDATE_EXPECT=1`.
//!
//! A case is one header line `# args: ...` (split on whitespace, run in the
//! workspace root); its snapshot holds the exit status, then stdout, then
//! stderr. Outputs that depend on the machine (timings, the host target) do
//! not belong here.

mod common;

use common::scaletune;
use expect_test::expect_file;
use scaletune_space::filetest::run_dir;
use std::path::PathBuf;

#[test]
fn command_line_outputs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests/cli");
    run_dir(&dir, "case", |case| {
        let args: Vec<&str> = case.require("args").split_whitespace().collect();
        let o = scaletune(&args);
        let shown = format!(
            "exit status: {}\n--- stdout\n{}--- stderr\n{}",
            o.status.code().map_or("killed".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        expect_file![case.snapshot()].assert_eq(&shown);
    });
}
