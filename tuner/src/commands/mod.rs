//! The `scaletune` subcommands.

pub mod agent;
pub mod bench;
pub mod build;
pub mod check;
pub mod compile;
pub mod db;
pub mod info;
pub mod measure;
pub mod report;
pub mod tune;
