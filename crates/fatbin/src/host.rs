//! [`host_fatbins`]: every fatbin inside a host executable or shared library, found as the CUDA
//! runtime finds them: the fatbins laid back to back in `.nv_fatbin`, and those the wrappers of
//! `.nvFatBinSegment` point at (the fatbin of each, and a version-2 wrapper's list of prelinked
//! fatbins where it is in the file).
//!
//! A wrapper's pointers are virtual addresses: where the file holds 0 (a linker that leaves
//! the addend of a relative relocation out of the section, as lld does by default), the
//! address is the addend of the `R_*_RELATIVE` relocation of that field.

use crate::bytes::{align8, slice, u32_at, u64_at};
use crate::elf::{Elf, Section};
use crate::error::FatbinError;
use crate::image::{fatbin_image, FATBIN_MAGIC, WRAPPER_LEN, WRAPPER_MAGIC};

/// Section type of relocations with addends.
const SHT_RELA: u32 = 4;
/// Section flag: occupies memory while the program runs.
const SHF_ALLOC: u64 = 2;
/// `e_type` of a relocatable object (no addresses yet: wrappers are not followed there).
const ET_REL: u16 = 1;
/// `R_X86_64_RELATIVE`.
const R_X86_64_RELATIVE: u32 = 8;
/// `R_AARCH64_RELATIVE`.
const R_AARCH64_RELATIVE: u32 = 1027;
/// The most prelinked fatbins one version-2 wrapper is followed to (its list ends at a null).
const MAX_PRELINKED: usize = 1 << 16;

/// Every fatbin inside a host executable, shared library or object file, in file order, each
/// once, exactly as long as its header says: what `mantissa trace` lists before running.
/// A binary without fatbins gives an empty list.
pub fn host_fatbins(elf_bytes: &[u8]) -> Result<Vec<&[u8]>, FatbinError> {
    let mut elf = Elf::parse(elf_bytes)?;
    let tables = elf.resolve_shnum(elf_bytes)?;
    if tables > elf_bytes.len() as u64 {
        return Err(FatbinError::Truncated {
            what: "ELF header tables",
            offset: 0,
            need: tables,
            have: elf_bytes.len(),
        });
    }
    let sections = (0..elf.shnum)
        .map(|i| elf.section(elf_bytes, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut found: Vec<(usize, usize)> = Vec::new();
    for s in &sections {
        match elf.section_name(elf_bytes, s) {
            Some(b".nv_fatbin") if s.in_file() => walk_section(elf_bytes, s, &mut found)?,
            Some(b".nvFatBinSegment") if s.in_file() && elf.is64 && elf.etype != ET_REL => {
                let host = Host {
                    bytes: elf_bytes,
                    elf: &elf,
                    sections: &sections,
                };
                host.follow_wrappers(s, &mut found)?;
            }
            _ => {}
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(found
        .into_iter()
        .map(|(at, len)| &elf_bytes[at..at + len])
        .collect())
}

/// The in-file bytes of section `s`: (offset, end).
fn extent(bytes: &[u8], s: &Section, what: &'static str) -> Result<(usize, usize), FatbinError> {
    let at = usize::try_from(s.offset).unwrap_or(usize::MAX);
    let limit = bytes.len() as u64;
    let end = s.offset.checked_add(s.size).filter(|&e| e <= limit);
    match end {
        Some(end) if at <= bytes.len() => Ok((at, end as usize)),
        _ => Err(FatbinError::OutOfBounds {
            what,
            offset: at.min(bytes.len()),
            value: s.offset.saturating_add(s.size),
            limit,
        }),
    }
}

/// The fatbins laid back to back in section `s` (each 8-aligned; zero padding between them is
/// skipped a word at a time).
fn walk_section(
    bytes: &[u8],
    s: &Section,
    found: &mut Vec<(usize, usize)>,
) -> Result<(), FatbinError> {
    let (start, end) = extent(bytes, s, ".nv_fatbin section size")?;
    let section = &bytes[..end];
    let mut at = start;
    while at + 16 <= end {
        if u32_at(section, at, ".nv_fatbin", at)? != FATBIN_MAGIC {
            at += 8;
            continue;
        }
        let image = fatbin_image(&section[at..], at)?;
        found.push((at, image.bytes.len()));
        let next = align8((at - start + image.bytes.len()) as u64).unwrap_or(u64::MAX);
        at = start.saturating_add(usize::try_from(next).unwrap_or(usize::MAX));
    }
    Ok(())
}

/// A host binary being searched for the fatbins its wrappers point at.
struct Host<'a> {
    bytes: &'a [u8],
    elf: &'a Elf,
    sections: &'a [Section],
}

impl Host<'_> {
    /// The fatbins the wrappers in section `s` point at.
    fn follow_wrappers(
        &self,
        s: &Section,
        found: &mut Vec<(usize, usize)>,
    ) -> Result<(), FatbinError> {
        let (start, end) = extent(self.bytes, s, ".nvFatBinSegment section size")?;
        let relative = self.relative_relocations(s.addr, s.size)?;
        let mut at = start;
        while at + WRAPPER_LEN <= end {
            let here = at;
            at += WRAPPER_LEN;
            if u32_at(self.bytes, here, "fatbin wrapper", here)? != WRAPPER_MAGIC {
                continue;
            }
            let version = u32_at(self.bytes, here + 4, "fatbin wrapper", here)?;
            let field_addr = s.addr.wrapping_add((here - start) as u64);
            let fatbin = self.pointer(here + 8, field_addr.wrapping_add(8), &relative)?;
            found.push(self.fatbin_at(fatbin, here)?);
            if version == 2 {
                let list = self.pointer(here + 16, field_addr.wrapping_add(16), &relative)?;
                self.follow_list(list, found)?;
            }
        }
        Ok(())
    }

    /// The fatbins of a version-2 wrapper's null-terminated list at virtual address `list`,
    /// where the list is in the file (in `.bss` it is filled at run time, and skipped).
    fn follow_list(&self, list: u64, found: &mut Vec<(usize, usize)>) -> Result<(), FatbinError> {
        let Some(mut at) = self.file_offset(list) else {
            return Ok(());
        };
        let relative = self.relative_relocations(list, (MAX_PRELINKED * 8) as u64)?;
        for i in 0..MAX_PRELINKED {
            let addr = list.wrapping_add(8 * i as u64);
            let p = self.pointer(at, addr, &relative)?;
            if p == 0 {
                break;
            }
            found.push(self.fatbin_at(p, at)?);
            at += 8;
        }
        Ok(())
    }

    /// The fatbin at virtual address `addr` (file offset, length), pointed at from file offset
    /// `from`; `WrapperTarget` where no fatbin is there.
    fn fatbin_at(&self, addr: u64, from: usize) -> Result<(usize, usize), FatbinError> {
        let wrong = || FatbinError::WrapperTarget {
            offset: from,
            address: addr,
        };
        let target = self.file_offset(addr).ok_or_else(wrong)?;
        let image = fatbin_image(&self.bytes[target..], target).map_err(|_| wrong())?;
        Ok((target, image.bytes.len()))
    }

    /// The pointer stored at file offset `at` (virtual address `addr`): the stored value, or
    /// where that is 0, the addend of a relative relocation of `addr`.
    fn pointer(&self, at: usize, addr: u64, relative: &[(u64, u64)]) -> Result<u64, FatbinError> {
        let value = u64_at(self.bytes, at, "fatbin wrapper pointer", at)?;
        if value != 0 {
            return Ok(value);
        }
        Ok(relative
            .binary_search_by_key(&addr, |&(o, _)| o)
            .map_or(0, |i| relative[i].1))
    }

    /// The file offset of virtual address `addr`: inside an allocated section whose bytes are
    /// in the file.
    fn file_offset(&self, addr: u64) -> Option<usize> {
        let s = self.sections.iter().find(|s| {
            s.flags & SHF_ALLOC != 0
                && s.in_file()
                && addr >= s.addr
                && addr - s.addr < s.size
                && s.addr != 0
        })?;
        let at = s.offset.checked_add(addr - s.addr)?;
        usize::try_from(at).ok().filter(|&a| a < self.bytes.len())
    }

    /// The relative relocations (target address, addend) of addresses in `[from, from + len)`,
    /// sorted by address.
    fn relative_relocations(&self, from: u64, len: u64) -> Result<Vec<(u64, u64)>, FatbinError> {
        let kind = match self.elf.machine {
            62 => R_X86_64_RELATIVE,
            183 => R_AARCH64_RELATIVE,
            _ => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == SHT_RELA) {
            let (start, end) = extent(self.bytes, s, "relocation section size")?;
            let step = if s.entsize >= 24 {
                s.entsize as usize
            } else {
                24
            };
            let mut at = start;
            while at + 24 <= end {
                let r = slice(self.bytes, at, 24, "relocation", at)?;
                let offset = u64_at(r, 0, "relocation", at)?;
                let info = u64_at(r, 8, "relocation", at)?;
                if info as u32 == kind && offset.wrapping_sub(from) < len {
                    out.push((offset, u64_at(r, 16, "relocation", at)?));
                }
                at += step;
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}
