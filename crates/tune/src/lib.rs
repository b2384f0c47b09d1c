//! `mantissa tune`: performance-driven mixed-precision tuning of a user's CUDA program (issue 23,
//! seed 002 "GPUMixer"), with the delta-debugging search of Precimonious beside it as the
//! baseline, so that every claim is a comparison on the same program.
//!
//! The crate is split the way Kernel Tuner splits strategies from runners:
//! - [`unit`](mod@unit): what a configuration is made of — [`TuneUnit`]s (FISets, variables, math calls, buffers), each a
//!   set of PTX sites, f32 math functions or a buffer kept in f32 — and a [`Config`], a set of unit indices;
//!   [`units`] makes them from the program's PTX and the shadow run's demotion errors.
//! - [`evaluate`]: the one question a search asks, [`Evaluate::trial`]: run this configuration,
//!   how many digits does it keep and how much faster is it. [`gpu`] answers it through the
//!   harness's trial runner, timing with the noise of [`noise`] and keeping every measurement in
//!   [`store`]; tests answer it with simulated programs.
//! - [`strategy`]: the searches (modes 1–3 over FISets, delta debugging over variables, the
//!   exhaustive search of small cases). They know nothing of GPUs, PTX or files. Each implements
//!   [`strategy::Strategy`] and is one entry of [`strategy::STRATEGIES`], the one list the plan,
//!   the flow, the tables and the CLI go through.
//! - [`flow`]: one tuning run from a spec; [`text`], [`table`], [`page`] and [`save`]: what the user
//!   gets, with [`chosen`] grouping the searches that chose one configuration.
//! - [`plan`]: the run's searches in order, numbered — its work units, divided among the shards
//!   of `--shard I/N`; [`shard`]: what makes shards one run, and their documents merged
//!   ([`doc`]: the document's JSON read back).
//!
//! Nothing here prints: progress goes through callbacks, results come back as values.

#![deny(missing_docs)]

pub mod chosen;
pub mod detail;
pub mod doc;
pub mod evaluate;
#[cfg(test)]
mod fixture;
pub mod flow;
pub mod gpu;
pub mod noise;
pub mod page;
pub mod plan;
pub mod save;
pub mod shard;
pub mod store;
pub mod strategy;
pub mod table;
pub mod text;
pub mod unit;
pub mod units;

pub use evaluate::{ErrorThreshold, Evaluate, Need, Thresholds, Trial};
pub use strategy::{Mode, Search, SearchError};
pub use unit::{Config, TuneUnit, TuneUnitKind};
