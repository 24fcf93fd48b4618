//! The `atl` binary.
fn main() {}
