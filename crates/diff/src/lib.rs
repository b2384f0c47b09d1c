//! `mantissa diff`: which source lines, and which causes on them, make a GPU program's outputs
//! differ from a CPU reference or from another build of the program (issue 22).
//!
//! Where things are:
//! - [`search`]: the search for a minimal set of causes (adaptive binary splitting over a test
//!   function; pure, tested on simulated programs).

#![deny(missing_docs)]

pub mod search;
