//! The module-scope variables of a PTX module that a host can read and write ([`Symbol`]), as
//! [`Gpu::read_symbol`](crate::Gpu::read_symbol) and
//! [`Gpu::write_symbol`](crate::Gpu::write_symbol) check them.

use serde::{Deserialize, Serialize};

/// A module-scope variable a host can read and write: a `.const` (`__constant__`) or `.global`
/// (`__device__`) variable of the module's PTX.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// Its name (mangled for C++ variables outside `extern "C"`), as the driver looks it up.
    pub name: String,
    /// `const` or `global`.
    pub space: String,
    /// Its size: element bytes times every dimension; `None` when a dimension is open (`[]`) or
    /// the element type is not one PTX sizes.
    pub bytes: Option<u64>,
}

impl std::fmt::Display for Symbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.bytes {
            Some(b) => write!(f, "{} (.{}, {b} bytes)", self.name, self.space),
            None => write!(f, "{} (.{}, size unknown)", self.name, self.space),
        }
    }
}

/// The module-scope `.const`/`.global` variables of PTX text that this module defines (not
/// `.extern` ones: their storage is another module's), in text order, with the sizes
/// `mantissa_ptx::symbols` computes.
pub fn symbols_of_ptx(ptx: &str) -> Vec<Symbol> {
    mantissa_ptx::symbols::symbols(&mantissa_ptx::parse(ptx).module)
        .into_iter()
        .map(|v| Symbol {
            name: v.name,
            space: v.space.name().into(),
            bytes: v.bytes,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_const_and_global_variables_with_their_sizes() {
        let ptx = r#".version 9.0
.target sm_90
.address_size 64
.const .align 8 .b8 coef[32] = {0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 224, 63, 0, 0, 0, 0, 0, 0, 208, 63, 0, 0, 0, 0, 0, 0, 192, 63};
.global .align 8 .b8 params[24];
.visible .global .align 4 .f32 gain = 0f3F800000;
.global .align 8 .f64 grid[4][8];
.const .align 16 .v4 .f32 quad;
.extern .global .align 4 .b8 elsewhere[16];
.global .align 4 .b8 open[];
.shared .align 4 .b8 tile[1024];
.visible .entry k(.param .u64 p)
{
	ret;
}
"#;
        let got: Vec<String> = symbols_of_ptx(ptx).iter().map(|s| s.to_string()).collect();
        assert_eq!(
            got,
            [
                "coef (.const, 32 bytes)",
                "params (.global, 24 bytes)",
                "gain (.global, 4 bytes)",
                "grid (.global, 256 bytes)",
                "quad (.const, 16 bytes)",
                "open (.global, size unknown)",
            ]
        );
    }
}
