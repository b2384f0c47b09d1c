//! The fatbin crate's integration tests, one module per file, linked into one test binary (`it`):
//! each test binary is linked and started once per `cargo test`, which on a 2-core machine made
//! many small binaries a large part of the test command's time (docs/BENCHMARKS.md, "The test
//! command on a fresh clone"). None of them needs a GPU or changes process-wide state.

mod adversarial;
mod fixtures;
mod nvcc;
