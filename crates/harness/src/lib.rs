//! The kernel harness of mantissa: run a user's own multi-kernel CUDA program, described by a
//! TOML spec (docs/SPEC.md), under flag sets and precision configurations, and say how its
//! outputs differ from the baseline build and from the user's reference, and how fast it ran.
//!
//! It is not a compiler or a GPU runtime (those are `mantissa-gpu`), not a PTX rewriter
//! (`mantissa-ptx`), and it prints nothing: progress goes through a callback, results come back
//! as values and `mantissa_report::Record`s, and the CLI (`mantissa run`) draws the tables.
//!
//! Where the main types are:
//! - [`Spec`] (in `spec.rs`): a spec file parsed with the position of every value;
//!   [`SpecError`] displays as `FILE:LINE:COL: FIELD: found X; accepted Y`.
//! - [`expr`]: the expression language of sizes, lengths, grids and arguments.
//! - [`config`]: precision configurations ([`Configuration`], [`Demotion`]): which math calls
//!   and f64 instructions run in f32, from `none`, `all` or a JSON file.
//! - [`data`] and [`npy`]: buffer contents (zeros, constants, sequences, seeded random,
//!   `.npy`), symbol bytes in C layout, `.npy` read and write.
//! - [`check`]: every check made before anything runs, without a GPU (`mantissa run --check`).
//! - [`validate`]: the spec checked against the program's PTX (kernel names and signatures,
//!   symbols and their sizes) into a [`validate::Plan`], before anything runs.
//! - [`limits`]: launch shapes and dynamic shared memory against the architecture's limits.
//! - [`memory`]: what a run will allocate, estimated from the spec before anything is.
//! - [`exec`]: a plan's steps run on a [`mantissa_gpu::Gpu`]: launches, copies (ranges on the
//!   device), fills, loops.
//! - [`trial`]: [`TrialRunner`], a spec under one flag set set up once (build, plan, inputs and
//!   baseline on the device) and run per configuration: restored device to device, compared on
//!   the GPU, timed; typed [`TrialError`]s say whether to go on.
//! - [`interp_session`]: a spec as a [`Session`] whose trials run on the PTX interpreter (time
//!   by a cost model): the analyses checked on the CPU, without a GPU.
//! - [`recipe`] and [`pipelines`]: every program an analysis runs besides the configurations,
//!   as a recipe (a base, passes, a runtime, symbols written, globals read back) that the
//!   trial runner makes ([`TrialRunner::make`]); every named pipeline listed in one module.
//! - [`device_compare`]: outputs compared on the GPU, equal to [`compare`]'s result.
//! - [`compare`]: an output against the baseline or a reference: digits, relative error, ulps,
//!   differing elements, NaN handling, tolerance.
//! - [`run`]: [`run_spec`], the entry point: a loop over trials of every (flag set x
//!   [`Configuration`]), recorded.

#![deny(missing_docs)]

pub mod app;
pub mod check;
pub mod compare;
pub mod config;
pub mod data;
pub mod device_compare;
pub mod exec;
pub mod expr;
pub mod hex;
pub mod interp_session;
pub mod interp_steps;
pub mod limits;
pub mod memory;
pub mod npy;
pub mod pipelines;
pub mod recipe;
pub mod run;
pub mod session;
pub mod spec;
pub mod trial;
pub mod validate;

pub use compare::{Comparison, OutputResult};
pub use config::{Configuration, Demotion};
pub use recipe::{Base, Recipe, Variant};
pub use run::{run_spec, ConfigRun, HarnessError, RunEvent, RunRequest, RunResult};
pub use session::Session;
pub use spec::{Spec, SpecError};
pub use trial::{
    BufferAddress, BuildKind, KernelTime, Resources, RunnerOptions, SwitchSummary, TrialError,
    TrialOutcome, TrialRunner, TrialTiming,
};
