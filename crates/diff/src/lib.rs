//! `mantissa diff`: which source lines, and which causes on them, make a GPU program's outputs
//! differ from a CPU reference or from another build of the program (issue 22).
//!
//! It is not the rewriting (`mantissa_ptx::pass::cause` lists the causes per site and switches
//! them) and not a runner: every test runs through the harness's one
//! [`mantissa_harness::TrialRunner`]. It prints nothing: progress goes through a callback,
//! results come back as a [`DiffRun`], rendered as text ([`text::render`]), JSON (the run
//! serialised) and records ([`records::records`]) for the results store, which the caller
//! writes.
//!
//! Where things are:
//! - [`analyse`]: the flow — baseline (twice), reference, candidates, search, effects.
//! - [`search`]: the search for a minimal set of causes (adaptive binary splitting over a test
//!   function; pure, tested on simulated programs).
//! - [`sass`]: where the SASS confirms a blamed contraction.
//! - [`cost`]: the time of the program with each blamed line's causes switched off.
//! - [`builds`] and [`save`]: seed 003's four builds, measured, and saved runnable;
//!   [`digits`]: each build's digits against its own higher-precision shadow (`mantissa
//!   shadow`'s values analysis).
//! - [`mathfn`]: the math functions the kernels call, and where CUDA's and the CPU's differ.
//! - [`session`]: the same search on a program reached only through a session (an
//!   application as it is), against its every cause switched.
//! - [`text`] and [`records`]: the report per source line, and its records.

#![deny(missing_docs)]

pub mod analyse;
pub mod builds;
pub mod cost;
pub mod digits;
pub mod mathfn;
pub mod records;
pub mod sass;
pub mod save;
pub mod search;
pub mod session;
pub mod text;

pub use analyse::{check_references, diff, Against, DiffError, DiffEvent, DiffRequest, DiffRun};
