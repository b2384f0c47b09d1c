//! Generates the trampolines and the slot table from `symbols/driver-13.0.txt` (every symbol the
//! shim exports) and `symbols/intercepted.txt` (those wrapped in Rust instead of a trampoline).
//!
//! Output (`$OUT_DIR/slots.rs`, included by `src/real.rs`): `SYMBOLS`, every name as a C string,
//! in one order; `slot::NAME`, each name's index there; `SLOTS`, one address per name (the real
//! driver's, filled at load); and for each name not intercepted a naked function `NAME` that
//! jumps through its slot.

use std::fmt::Write as _;
use std::path::Path;

fn names(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("symbols");
    let all = names(&dir.join("driver-13.0.txt"));
    let intercepted = names(&dir.join("intercepted.txt"));
    println!("cargo:rerun-if-changed=symbols/driver-13.0.txt");
    println!("cargo:rerun-if-changed=symbols/intercepted.txt");
    for name in &intercepted {
        assert!(
            all.contains(name),
            "intercepted.txt names {name}, which driver-13.0.txt lacks"
        );
    }
    let mut out = String::new();
    let n = all.len();
    writeln!(out, "/// Every exported symbol, in slot order.").unwrap();
    writeln!(out, "pub static SYMBOLS: [&core::ffi::CStr; {n}] = [").unwrap();
    for name in &all {
        writeln!(out, "    c\"{name}\",").unwrap();
    }
    writeln!(out, "];").unwrap();
    writeln!(out, "/// Each symbol's index in `SYMBOLS` and `SLOTS`.").unwrap();
    writeln!(out, "#[allow(non_upper_case_globals, dead_code)]").unwrap();
    writeln!(out, "pub mod slot {{").unwrap();
    for (i, name) in all.iter().enumerate() {
        writeln!(out, "    /// `{name}`.\n    pub const {name}: usize = {i};").unwrap();
    }
    writeln!(out, "}}").unwrap();
    writeln!(
        out,
        "/// The real driver's address of each symbol (or the not-found stub's), filled at load.\n\
         #[allow(clippy::declare_interior_mutable_const)]\n\
         pub static SLOTS: [core::sync::atomic::AtomicUsize; {n}] = \
         [const {{ core::sync::atomic::AtomicUsize::new(0) }}; {n}];"
    )
    .unwrap();
    writeln!(
        out,
        "/// Whether each symbol is wrapped in Rust (not a trampoline)."
    )
    .unwrap();
    writeln!(out, "pub static INTERCEPTED: [bool; {n}] = [").unwrap();
    for name in &all {
        writeln!(out, "    {},", intercepted.contains(name)).unwrap();
    }
    writeln!(out, "];").unwrap();
    writeln!(
        out,
        "/// (slot, wrapper address) of every intercepted symbol: a missing wrapper is a compile error.\n\
         pub fn wrappers() -> [(usize, usize); {}] {{\n    [",
        intercepted.len()
    )
    .unwrap();
    for name in &intercepted {
        writeln!(
            out,
            "        (slot::{name}, crate::wrap::{name} as *const () as usize),"
        )
        .unwrap();
    }
    writeln!(out, "    ]\n}}").unwrap();
    for (i, name) in all.iter().enumerate() {
        if intercepted.contains(name) {
            continue;
        }
        writeln!(
            out,
            "#[doc(hidden)]\n#[cfg(target_arch = \"x86_64\")]\n#[no_mangle]\n#[unsafe(naked)]\n\
             pub unsafe extern \"C\" fn {name}() {{\n    \
             core::arch::naked_asm!(\"jmp qword ptr [rip + {{slots}} + {{offset}}]\", \
             slots = sym SLOTS, offset = const {off});\n}}",
            off = i * 8
        )
        .unwrap();
    }
    let path = Path::new(&std::env::var("OUT_DIR").unwrap()).join("slots.rs");
    std::fs::write(path, out).unwrap();
}
