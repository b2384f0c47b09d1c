//! The units a tuning configuration is made of, and configurations as sets of them.
//!
//! Named [`TuneUnit`] and [`TuneUnitKind`] apart from `mantissa_ptx::units::Unit`, which is
//! something else: one math call's instructions, which the PTX rewriter must leave alone. A
//! tuning unit is what a configuration demotes as a whole (a math call among them).

use mantissa_harness::config::MathCall;
use mantissa_ptx::site::Site;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What kind of thing a unit demotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TuneUnitKind {
    /// A FISet (seed 002 §4.2): f64 arithmetic whose inputs and outputs cross few conversions.
    Fiset,
    /// A variable (the delta-debugging baseline's unit): a web of f64 registers joined by moves,
    /// with the instructions that write it.
    Variable,
    /// A buffer kept in f32 on the device (storage precision).
    Buffer,
    /// Calls of a double math function on one source line, replaced by the f32 function
    /// (`exp` → `expf`, at source level by `mantissa_units.cuh`).
    Math,
}

/// One unit: the instructions (sites) it demotes, or the buffer it stores in f32, and what the
/// static and shadow analyses say of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneUnit {
    /// Its kind.
    pub kind: TuneUnitKind,
    /// How reports name it: `fiset 3`, `variable %fd12`, `buffer pos`.
    pub name: String,
    /// The f64 instructions it demotes (empty for a buffer).
    pub sites: Vec<Site>,
    /// The spec buffers it keeps in f32 (empty for instruction units).
    pub buffers: Vec<String>,
    /// The math calls it replaces by their f32 functions (empty but for math units).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub math: Vec<MathCall>,
    /// Σ over its instructions of the demotion error the shadow analysis measured (seed 002's
    /// FISet_error); `None` when not measured.
    #[serde(with = "crate::doc::opt_float")]
    pub error: Option<f64>,
    /// Its arithmetic-to-cast ratio r_ac (FISets only; +inf without casts).
    #[serde(with = "crate::doc::opt_float")]
    pub r_ac: Option<f64>,
    /// The source lines its instructions come from, `(file, line)`, sorted, deduplicated.
    pub lines: Vec<(String, u32)>,
}

/// A configuration: the indices (into the search's unit list) of the units demoted.
pub type Config = BTreeSet<usize>;
