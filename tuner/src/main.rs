//! scaletune CLI
fn main() {}
