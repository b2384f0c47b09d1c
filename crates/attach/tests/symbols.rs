//! The shim exports exactly the generated symbol list (`symbols/driver-13.0.txt`), functions
//! all, and every intercepted name is on it. Read from the built library's dynamic symbol table.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

fn names(file: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("symbols")
        .join(file);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize
}
fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// The defined, global function symbols of an ELF64 little-endian shared library's `.dynsym`.
fn exported_functions(elf: &[u8]) -> BTreeSet<String> {
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(elf[4], 2, "ELF64");
    let (shoff, shentsize, shnum) = (u64_at(elf, 0x28), u16_at(elf, 0x3a), u16_at(elf, 0x3c));
    let section = |i: usize| &elf[shoff + i * shentsize..shoff + (i + 1) * shentsize];
    let dynsym = (0..shnum)
        .map(section)
        .find(|s| u32_at(s, 4) == 11) // SHT_DYNSYM
        .expect("a .dynsym section");
    let strtab = section(u32_at(dynsym, 40));
    let (strings, symbols) = (u64_at(strtab, 24), u64_at(dynsym, 24));
    let (size, entsize) = (u64_at(dynsym, 32), u64_at(dynsym, 56));
    let mut out = BTreeSet::new();
    for i in 1..size / entsize {
        let sym = &elf[symbols + i * entsize..symbols + (i + 1) * entsize];
        let (info, shndx) = (sym[4], u16_at(sym, 6));
        let (bind, kind) = (info >> 4, info & 15);
        // Defined (section index not 0), global or weak.
        if shndx == 0 || (bind != 1 && bind != 2) {
            continue;
        }
        let name_at = strings + u32_at(sym, 0);
        let end = elf[name_at..].iter().position(|&b| b == 0).unwrap();
        let name = String::from_utf8(elf[name_at..name_at + end].to_vec()).unwrap();
        assert_eq!(kind, 2, "{name} is exported but not a function (STT_FUNC)");
        out.insert(name);
    }
    out
}

#[test]
fn the_shim_exports_exactly_the_generated_list() {
    let elf = std::fs::read(support::shim_path()).unwrap();
    let exported = exported_functions(&elf);
    let listed = names("driver-13.0.txt");
    let missing: Vec<_> = listed.difference(&exported).collect();
    let extra: Vec<_> = exported.difference(&listed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    assert!(listed.len() > 600, "the CUDA 13.0 list has some 640 names");
}

#[test]
fn every_intercepted_name_is_a_driver_symbol() {
    let listed = names("driver-13.0.txt");
    let intercepted = names("intercepted.txt");
    let unknown: Vec<_> = intercepted.difference(&listed).collect();
    assert!(unknown.is_empty(), "{unknown:?}");
    for name in [
        "cuGetProcAddress_v2",
        "cuLaunchKernel_ptsz",
        "cuMemcpyHtoD_v2",
        "cuLibraryLoadData",
    ] {
        assert!(intercepted.contains(name), "{name}");
    }
}
