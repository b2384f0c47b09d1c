//! Module helpers shared by the GPU tests of passes with a merged runtime.

use mantissa_gpu::Arch;
use mantissa_ptx::{parse, Item, Module};

/// `ptx` parsed, with no diagnostics (a test fixture must parse cleanly).
pub fn parse_clean(what: &str, ptx: &str) -> Module {
    let parsed = parse(ptx);
    assert!(
        parsed.diagnostics.is_empty(),
        "{what}: {:?}",
        parsed.diagnostics
    );
    parsed.module
}

/// The architecture of a module's `.target` (a runtime must not be newer than the code it joins).
pub fn target_arch(m: &Module) -> Arch {
    m.items
        .iter()
        .find_map(|i| match i {
            Item::Target(words) => words.iter().find_map(|w| w.parse::<Arch>().ok()),
            _ => None,
        })
        .expect("the module names an sm_ target")
}
