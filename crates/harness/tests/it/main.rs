//! The harness's CPU-only integration tests, one module per file, linked into one test binary
//! (`it`): each test binary is linked and started once per `cargo test`, which on a 2-core machine
//! made many small binaries a large part of the test command's time (docs/BENCHMARKS.md, "The
//! test command on a fresh clone"). The GPU tests (`gpu_*.rs`, `examples.rs`, `storage.rs`) stay
//! binaries of their own, selected by name by scripts/gpu-tests.sh and the GPU staging. None of
//! these modules changes the process's environment, working directory or signal handlers.

mod app;
mod check;
mod spec_doc;
mod spec_errors;
