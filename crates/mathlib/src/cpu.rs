//! STUB (replaced by the CPU-libraries work): the contract's signatures only.
use crate::format::Format;
use crate::functions::Function;
use serde::{Deserialize, Serialize};

/// A CPU library.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuLibrary {
    /// Rust std.
    Std,
    /// libm crate.
    Libm,
}
impl CpuLibrary {
    /// All.
    pub const ALL: [CpuLibrary; 2] = [CpuLibrary::Std, CpuLibrary::Libm];
    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            CpuLibrary::Std => "std",
            CpuLibrary::Libm => "libm",
        }
    }
    /// Describe.
    pub fn describe(self) -> String {
        self.name().into()
    }
    /// Eval.
    pub fn eval(self, f: Function, format: Format, x: f64, y: f64) -> Option<f64> {
        let _ = (f, format, x, y);
        None
    }
    /// Has.
    pub fn has(self, f: Function, format: Format) -> bool {
        self.eval(f, format, 1.0, 1.0).is_some()
    }
}
