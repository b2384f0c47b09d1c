//! The Rust wrappers of the symbols in `symbols/intercepted.txt`: each forwards to the real
//! driver (through [`crate::real::real`]) and, when recording, records around the call. They are
//! `#[no_mangle]` (exported as the driver's names) and re-exported here, where the generated
//! `crate::real::wrappers` table finds them for `cuGetProcAddress`.
//!
//! A wrapper never holds the recorder's lock across the real call, and does nothing but the
//! call when [`crate::recorder`] is `None`.

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod globals;
pub mod launch;
pub mod loads;
pub mod memory;
pub mod proc_address;
pub mod teardown;

pub use globals::*;
pub use launch::*;
pub use loads::*;
pub use memory::*;
pub use proc_address::*;
pub use teardown::*;
