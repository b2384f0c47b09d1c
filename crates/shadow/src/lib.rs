//! `mantissa shadow`: where a user's CUDA program loses precision and where NaN, infinities and
//! subnormals come from, per instruction and per source line, measured on the program's own
//! inputs by instrumenting its PTX (issue 21; analyses 1, demotion error, 2, higher-precision
//! shadow values, and 3, exceptions).
//!
//! It is not the instrumentation (`mantissa_ptx::pass::shadow` rewrites the PTX,
//! `crates/gpu/cuda/mantissa_shadow.cuh` aggregates on the device) and not a runner: the program
//! runs through the harness's one [`mantissa_harness::TrialRunner`], like any trial. It prints
//! nothing: progress goes through a callback, results come back as values, text
//! ([`text::render`]), JSON (the [`ShadowRun`] serialised) and records ([`records::records`]) for
//! the results store, which the caller writes.
//!
//! Where the main types are:
//! - [`analyse()`] (in `analyse.rs`): the flow — baseline, instrument, merge the runtime, run,
//!   check bit-identity, decode — into a [`ShadowRun`]; [`ShadowError`] says why not.
//! - [`analyses`]: which analyses (`--analysis demotion,shadow,exceptions`).
//! - [`values`]: the shadow-values run and the digits right per output element.
//! - [`lines`]: per-site results gathered per function and source line, ranked.
//! - [`source`]: the source text of those lines.
//! - [`text`] and [`records`]: the report as text and as records; [`page`]: the report page,
//!   the source beside what each line measured.

#![deny(missing_docs)]

pub mod analyse;
pub mod analyses;
#[cfg(test)]
mod fixture;
pub mod lines;
pub mod page;
pub mod records;
pub mod source;
pub mod text;
pub mod values;

pub use analyse::{
    analyse, analyse_on, Contraction, ShadowError, ShadowEvent, ShadowRequest, ShadowRun,
};
pub use analyses::Analyses;
