//! Snapshot filetests of the generated C driver: one workload per case in `tests/filetests/drivers/`, the driver source as its snapshot; bless with `UPDATE_EXPECT=1`.

use expect_test::expect_file;
use scaletune_measure::driver_source;
use scaletune_space::filetest::run_dir;
use scaletune_space::workload::load;
use std::path::PathBuf;

#[test]
fn generated_drivers() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests/drivers");
    run_dir(&dir, "case", |case| {
        let w = load(case.require("workload")).unwrap_or_else(|e| panic!("{e}"));
        let src = driver_source(&w, case.require("symbol")).unwrap_or_else(|e| panic!("{e}"));
        expect_file![case.snapshot()].assert_eq(&src);
    });
}
