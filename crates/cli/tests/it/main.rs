//! The cli's CPU-only integration tests, one module per file, linked into one test binary (`it`):
//! each binary is linked and started once per `cargo test`, and on a 2-core machine linking dozens
//! of them was a large part of the test command's time (docs/BENCHMARKS.md, "The test command on
//! a fresh clone"). Tests that touch a GPU or skip when one is present (`diff.rs`, `run.rs`,
//! `shadow.rs`, `shard.rs`, `tune.rs`) stay binaries of their own beside this directory, so that
//! scripts/gpu-tests.sh and the GPU staging select them by name. None of these modules changes
//! the process's environment, working directory or signal handlers (signals go to child
//! processes), so they can share one process.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod doc_links;
mod guards;
mod inspect;
mod mathlib;
mod signals;
mod slurm;
mod study_output;
mod tune_shard;
mod writes;
