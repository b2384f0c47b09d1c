//! The little of ELF this crate reads: the file header, the section and program header tables,
//! and from them an image's length (for a cubin handed over as a bare pointer) and a host
//! binary's sections (for [`crate::host_fatbins`]). Little-endian only (cubins, x86-64 and
//! AArch64 hosts); 32- and 64-bit.

use crate::bytes::{slice, u16_at, u32_at, u64_at};
use crate::error::FatbinError;

/// The ELF magic, `\x7fELF`, as a little-endian word.
pub(crate) const ELF_MAGIC: u32 = u32::from_le_bytes(*b"\x7fELF");
/// Bytes of a 64-bit ELF file header (a 32-bit one has 52; both fit in this many).
pub(crate) const EHDR64: usize = 64;
/// Section type of sections that take no room in the file.
const SHT_NOBITS: u32 = 8;

/// The fields of an ELF file header this crate uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Elf {
    pub is64: bool,
    /// `e_type`: 1 relocatable, 2 executable, 3 shared object (or PIE).
    pub etype: u16,
    /// `e_machine`.
    pub machine: u16,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
    pub shoff: u64,
    pub shentsize: u16,
    /// Section count (extended numbering resolved by [`Elf::resolve_shnum`]).
    pub shnum: u64,
    pub shstrndx: u16,
}

/// One section header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section {
    pub name: u32,
    pub kind: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub entsize: u64,
}

impl Section {
    /// Whether the section's bytes are in the file.
    pub fn in_file(&self) -> bool {
        self.kind != SHT_NOBITS && self.kind != 0
    }
}

const WHAT: &str = "ELF header";

impl Elf {
    /// The file header at the start of `bytes` (which holds at least the header).
    pub fn parse(bytes: &[u8]) -> Result<Elf, FatbinError> {
        let magic = u32_at(bytes, 0, WHAT, 0)?;
        if magic != ELF_MAGIC {
            return Err(FatbinError::BadMagic {
                what: "ELF image",
                offset: 0,
                found: magic,
            });
        }
        let ident = slice(bytes, 0, 16, WHAT, 0)?;
        let is64 = match ident[4] {
            1 => false,
            2 => true,
            c => {
                return Err(FatbinError::UnsupportedVersion {
                    what: "ELF class",
                    offset: 0,
                    version: u32::from(c),
                })
            }
        };
        if ident[5] != 1 {
            return Err(FatbinError::UnsupportedVersion {
                what: "ELF byte order (only little-endian is read)",
                offset: 0,
                version: u32::from(ident[5]),
            });
        }
        let etype = u16_at(bytes, 16, WHAT, 0)?;
        let machine = u16_at(bytes, 18, WHAT, 0)?;
        let elf = if is64 {
            Elf {
                is64,
                etype,
                machine,
                phoff: u64_at(bytes, 32, WHAT, 0)?,
                shoff: u64_at(bytes, 40, WHAT, 0)?,
                phentsize: u16_at(bytes, 54, WHAT, 0)?,
                phnum: u16_at(bytes, 56, WHAT, 0)?,
                shentsize: u16_at(bytes, 58, WHAT, 0)?,
                shnum: u64::from(u16_at(bytes, 60, WHAT, 0)?),
                shstrndx: u16_at(bytes, 62, WHAT, 0)?,
            }
        } else {
            Elf {
                is64,
                etype,
                machine,
                phoff: u64::from(u32_at(bytes, 28, WHAT, 0)?),
                shoff: u64::from(u32_at(bytes, 32, WHAT, 0)?),
                phentsize: u16_at(bytes, 42, WHAT, 0)?,
                phnum: u16_at(bytes, 44, WHAT, 0)?,
                shentsize: u16_at(bytes, 46, WHAT, 0)?,
                shnum: u64::from(u16_at(bytes, 48, WHAT, 0)?),
                shstrndx: u16_at(bytes, 50, WHAT, 0)?,
            }
        };
        let (min_sh, min_ph) = if is64 { (64, 56) } else { (40, 32) };
        if elf.shnum > 0 && usize::from(elf.shentsize) < min_sh {
            return Err(bad("section header entry size", elf.shentsize));
        }
        if elf.phnum > 0 && usize::from(elf.phentsize) < min_ph {
            return Err(bad("program header entry size", elf.phentsize));
        }
        Ok(elf)
    }

    /// Bytes of the file header itself.
    pub fn header_len(&self) -> u64 {
        if self.is64 {
            64
        } else {
            52
        }
    }

    /// The end of the section header table, before [`Elf::resolve_shnum`] (section 0 only when
    /// extended numbering is used).
    fn section_table_end(&self) -> Option<u64> {
        let count = if self.shnum == 0 && self.shoff != 0 {
            1
        } else {
            self.shnum
        };
        table_end(self.shoff, count, self.shentsize)
    }

    /// The end of the program header table.
    fn program_table_end(&self) -> Option<u64> {
        table_end(self.phoff, u64::from(self.phnum), self.phentsize)
    }

    /// The end of the header tables: the bytes that must be readable to find the sections.
    pub fn tables_end(&self) -> Result<u64, FatbinError> {
        let sh = self
            .section_table_end()
            .ok_or_else(|| bad("section header table offset", self.shoff))?;
        let ph = self
            .program_table_end()
            .ok_or_else(|| bad("program header table offset", self.phoff))?;
        Ok(self.header_len().max(sh).max(ph))
    }

    /// Reads the real section count from section 0 where the header says 0 (more than 0xff00
    /// sections); the end of the header tables after that.
    pub fn resolve_shnum(&mut self, bytes: &[u8]) -> Result<u64, FatbinError> {
        if self.shnum == 0 && self.shoff != 0 {
            self.shnum = 1;
            let first = self.section(bytes, 0)?;
            self.shnum = first.size;
        }
        self.tables_end()
    }

    /// Section header `i`.
    pub fn section(&self, bytes: &[u8], i: u64) -> Result<Section, FatbinError> {
        const W: &str = "ELF section header";
        let at = i
            .checked_mul(u64::from(self.shentsize))
            .and_then(|o| o.checked_add(self.shoff))
            .and_then(|o| usize::try_from(o).ok())
            .ok_or_else(|| bad("section header table offset", self.shoff))?;
        let len = u64::from(self.shentsize);
        let h = slice(bytes, at, len, W, at)?;
        Ok(if self.is64 {
            Section {
                name: u32_at(h, 0, W, at)?,
                kind: u32_at(h, 4, W, at)?,
                flags: u64_at(h, 8, W, at)?,
                addr: u64_at(h, 16, W, at)?,
                offset: u64_at(h, 24, W, at)?,
                size: u64_at(h, 32, W, at)?,
                entsize: u64_at(h, 56, W, at)?,
            }
        } else {
            Section {
                name: u32_at(h, 0, W, at)?,
                kind: u32_at(h, 4, W, at)?,
                flags: u64::from(u32_at(h, 8, W, at)?),
                addr: u64::from(u32_at(h, 12, W, at)?),
                offset: u64::from(u32_at(h, 16, W, at)?),
                size: u64::from(u32_at(h, 20, W, at)?),
                entsize: u64::from(u32_at(h, 36, W, at)?),
            }
        })
    }

    /// The file extent (offset, size) of program header `i`.
    fn segment_extent(&self, bytes: &[u8], i: u16) -> Result<(u64, u64), FatbinError> {
        const W: &str = "ELF program header";
        let at = u64::from(i)
            .checked_mul(u64::from(self.phentsize))
            .and_then(|o| o.checked_add(self.phoff))
            .and_then(|o| usize::try_from(o).ok())
            .ok_or_else(|| bad("program header table offset", self.phoff))?;
        let h = slice(bytes, at, u64::from(self.phentsize), W, at)?;
        Ok(if self.is64 {
            (u64_at(h, 8, W, at)?, u64_at(h, 32, W, at)?)
        } else {
            (
                u64::from(u32_at(h, 4, W, at)?),
                u64::from(u32_at(h, 16, W, at)?),
            )
        })
    }

    /// The file's length as its headers give it: the furthest end of the header tables, of a
    /// section's bytes and of a segment's file bytes. `bytes` holds at least the tables.
    pub fn file_len(&self, bytes: &[u8]) -> Result<u64, FatbinError> {
        let mut end = self.tables_end()?;
        for i in 0..self.shnum {
            let s = self.section(bytes, i)?;
            if s.in_file() {
                let e = s
                    .offset
                    .checked_add(s.size)
                    .ok_or_else(|| bad("section size", s.size))?;
                end = end.max(e);
            }
        }
        for i in 0..self.phnum {
            let (off, size) = self.segment_extent(bytes, i)?;
            let e = off
                .checked_add(size)
                .ok_or_else(|| bad("segment size", size))?;
            end = end.max(e);
        }
        Ok(end)
    }

    /// The name of section `s`, from the section name table; `None` where it cannot be read.
    pub fn section_name<'a>(&self, bytes: &'a [u8], s: &Section) -> Option<&'a [u8]> {
        let names = self.section(bytes, u64::from(self.shstrndx)).ok()?;
        let start = names.offset.checked_add(u64::from(s.name))?;
        let end = names.offset.checked_add(names.size)?;
        let text = bytes.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)?;
        let nul = text.iter().position(|&b| b == 0)?;
        Some(&text[..nul])
    }
}

/// `offset + count * entsize`, `None` on overflow; `offset` alone when the table is empty.
fn table_end(offset: u64, count: u64, entsize: u16) -> Option<u64> {
    if count == 0 {
        return Some(0);
    }
    count
        .checked_mul(u64::from(entsize))
        .and_then(|n| n.checked_add(offset))
}

/// An impossible field of the ELF header.
fn bad(what: &'static str, value: impl Into<u64>) -> FatbinError {
    FatbinError::BadField {
        what,
        offset: 0,
        value: value.into(),
    }
}
