//! `mantissa tune`: performance-driven mixed-precision tuning of a user's CUDA program (issue 23,
//! seed 002 "GPUMixer"), with the delta-debugging search of Precimonious beside it as the
//! baseline, so that every claim is a comparison on the same program.
//!
//! The crate is split the way Kernel Tuner splits strategies from runners:
//! - [`unit`](mod@unit): what a configuration is made of — [`Unit`]s (FISets, variables, buffers), each a
//!   set of PTX sites or a buffer kept in f32 — and a [`Config`], a set of unit indices.
//! - [`evaluate`]: the one question a search asks, [`Evaluate::trial`]: run this configuration,
//!   how many digits does it keep and how much faster is it. The GPU evaluator answers it
//!   through the harness's trial runner; tests answer it with simulated programs.
//! - [`strategy`]: the searches (modes 1–3 over FISets, delta debugging over variables, the
//!   exhaustive search of small cases). They know nothing of GPUs, PTX or files.
//! - [`table`]: searches laid out as seed 002's Table 4 (plain text and Markdown).
//!
//! Nothing here prints: progress goes through callbacks, results come back as values.

#![deny(missing_docs)]

pub mod evaluate;
pub mod strategy;
pub mod table;
pub mod unit;

pub use evaluate::{ErrorThreshold, Evaluate, Need, Thresholds, Trial};
pub use strategy::{Mode, Search, SearchError};
pub use unit::{Config, Unit, UnitKind};
