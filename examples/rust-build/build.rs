//! Replays the tuned kernels of kernels.toml from the tuning database named by SCALETUNE_DB.

fn main() {
    println!("cargo:rerun-if-env-changed=SCALETUNE_DB");
    let db = std::env::var("SCALETUNE_DB").expect("set SCALETUNE_DB to a tuning database");
    scaletune::build::Build::new().db(db).manifest("kernels.toml").compile().expect("replaying the tuned kernels");
}
