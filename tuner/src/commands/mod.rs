//! The `scaletune` subcommands.

pub mod agent;
pub mod check;
pub mod compile;
pub mod info;
pub mod measure;
