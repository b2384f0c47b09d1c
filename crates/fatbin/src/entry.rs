//! A fatbin's entries: [`EntryIter`] walks the headers without decompressing anything
//! ([`EntryHeader`], borrowed), [`entries`] decompresses every payload ([`Entry`], owned), and
//! [`ptx_for`] picks and decompresses the one PTX a driver would JIT.

use crate::bytes::{slice, u16_at, u32_at, u64_at};
use crate::decompress::decompress;
use crate::error::FatbinError;
use crate::image::{fatbin_len, Image, ImageKind};

/// Bytes of an entry header's fixed fields; `header_size` says how many follow them.
pub const ENTRY_HEADER_LEN: usize = 64;
/// The only entry header version this crate reads (`0x0101`, every nvcc from 10 to 13).
pub const ENTRY_VERSION: u16 = 0x0101;

/// Entry flag: 64-bit code (`compile_size = 64bit`).
pub const FLAG_64BIT: u64 = 0x1;
/// Entry flag: compiled with debug information (`-G`).
pub const FLAG_DEBUG: u64 = 0x2;
/// Entry flag: built on Linux (`host = linux`).
pub const FLAG_LINUX: u64 = 0x10;
/// Entry flag: the payload is an LZ4 block (`--compress-mode=speed`).
pub const FLAG_LZ4: u64 = 0x2000;
/// Entry flag: the payload is a Zstandard frame (`--compress-mode=default|balance|size`).
pub const FLAG_ZSTD: u64 = 0x8000;
/// Entry flag: an older compression this crate does not decode.
pub const FLAG_OLD_COMPRESSION: u64 = 0x1000;
/// Entry flag: arch-specific code (`sm_90a`): it runs on that exact compute capability only.
pub const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
/// Entry flag: family code (`sm_100f`): it runs on the same major version, same or later minor.
pub const FLAG_FAMILY: u64 = 0x20_0000;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text (kind 1).
    Ptx,
    /// An ELF cubin (kind 2).
    Cubin,
    /// Any other kind, by its number.
    Other(u16),
}

/// Which devices an entry's architecture number admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArchVariant {
    /// `sm_90`/`compute_90`: that compute capability and later (PTX); SASS the same major.
    Plain,
    /// `sm_90a`: exactly that compute capability.
    Specific,
    /// `sm_100f`: the same major version, same or later minor.
    Family,
}

impl ArchVariant {
    /// The suffix of an architecture name: "", "a" or "f".
    pub fn suffix(self) -> &'static str {
        match self {
            ArchVariant::Plain => "",
            ArchVariant::Specific => "a",
            ArchVariant::Family => "f",
        }
    }

    /// Whether code for `entry_arch` with this variant runs on a device of compute capability
    /// `device` (both as `10 * major + minor`) when JIT-compiled from PTX.
    pub fn ptx_runs_on(self, entry_arch: u32, device: u32) -> bool {
        match self {
            ArchVariant::Plain => entry_arch <= device,
            ArchVariant::Specific => entry_arch == device,
            ArchVariant::Family => entry_arch / 10 == device / 10 && entry_arch <= device,
        }
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// As it is.
    None,
    /// A Zstandard frame.
    Zstd,
    /// A raw LZ4 block.
    Lz4,
    /// Compressed some other way (the flags are in the entry).
    Unknown,
}

/// One entry's header, borrowed from the fatbin; its payload is not decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader<'a> {
    /// Where the entry header starts in the fatbin.
    pub offset: usize,
    /// What it holds.
    pub kind: EntryKind,
    /// The architecture, `10 * major + minor` (90 for `sm_90` and `compute_90`).
    pub arch: u32,
    /// Plain, arch-specific (`a`) or family (`f`).
    pub variant: ArchVariant,
    /// PTX: the ISA version (9.0 is `(9, 0)`); cubin: the ELF's code version (`(1, 8)`).
    pub code_version: (u16, u16),
    /// How the payload is stored.
    pub compression: Compression,
    /// The raw flags (`FLAG_*`).
    pub flags: u64,
    /// The identifier (source file name), present in debug builds.
    pub identifier: Option<&'a str>,
    /// The `-Xptxas` options a PTX entry carries (`ptxasOptions` in cuobjdump).
    pub ptxas_options: Option<&'a str>,
    /// The payload as stored (compressed or not, without the alignment padding).
    pub stored: &'a [u8],
    /// The decompressed size the header gives (0 when not compressed).
    pub uncompressed_len: u64,
}

impl EntryHeader<'_> {
    /// Whether the payload is compressed.
    pub fn compressed(&self) -> bool {
        self.compression != Compression::None
    }

    /// Whether the code is 64-bit.
    pub fn is_64bit(&self) -> bool {
        self.flags & FLAG_64BIT != 0
    }

    /// Whether it was compiled with debug information.
    pub fn debug(&self) -> bool {
        self.flags & FLAG_DEBUG != 0
    }

    /// The architecture's name as cuobjdump prints it (`sm_90`, `sm_90a`, `sm_100f`).
    pub fn arch_name(&self) -> String {
        format!("sm_{}{}", self.arch, self.variant.suffix())
    }

    /// The payload, decompressed; PTX without its trailing NULs; a cubin stored as it is, as
    /// long as its ELF headers say (without the padding to 8 bytes).
    pub fn payload(&self) -> Result<Vec<u8>, FatbinError> {
        let mut out = decompress(self)?;
        match self.kind {
            EntryKind::Ptx => {
                let len = out.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                out.truncate(len);
            }
            EntryKind::Cubin if self.compression == Compression::None => {
                match crate::image::image(&out) {
                    Ok(elf) if elf.kind == ImageKind::Elf => {
                        let len = elf.bytes.len();
                        out.truncate(len);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(out)
    }

    /// The owned entry, payload decompressed.
    pub fn to_entry(&self) -> Result<Entry, FatbinError> {
        Ok(Entry {
            offset: self.offset,
            kind: self.kind,
            arch: self.arch,
            variant: self.variant,
            code_version: self.code_version,
            compressed: self.compressed(),
            compression: self.compression,
            is_64bit: self.is_64bit(),
            debug: self.debug(),
            flags: self.flags,
            identifier: self.identifier.map(str::to_owned),
            ptxas_options: self.ptxas_options.map(str::to_owned),
            payload: self.payload()?,
        })
    }
}

/// One entry of a fatbin, payload decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where its header starts in the fatbin.
    pub offset: usize,
    /// What it holds.
    pub kind: EntryKind,
    /// The architecture, `10 * major + minor` (90 for `sm_90` and `compute_90`).
    pub arch: u32,
    /// Plain, arch-specific (`a`) or family (`f`).
    pub variant: ArchVariant,
    /// PTX: the ISA version; cubin: the ELF's code version.
    pub code_version: (u16, u16),
    /// Whether the payload was stored compressed.
    pub compressed: bool,
    /// How it was stored.
    pub compression: Compression,
    /// 64-bit code.
    pub is_64bit: bool,
    /// Compiled with debug information (`-G`).
    pub debug: bool,
    /// The raw flags (`FLAG_*`).
    pub flags: u64,
    /// The identifier (source file name), where the header has one.
    pub identifier: Option<String>,
    /// The `-Xptxas` options of a PTX entry.
    pub ptxas_options: Option<String>,
    /// The payload, decompressed; PTX: the text without trailing NULs.
    pub payload: Vec<u8>,
}

/// Walks a fatbin's entry headers, checking each, decompressing nothing and allocating nothing.
/// After an error it ends.
#[derive(Debug, Clone)]
pub struct EntryIter<'a> {
    fatbin: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> EntryIter<'a> {
    /// The entries of the fatbin starting `bytes` (which may go on past it).
    pub fn new(bytes: &'a [u8]) -> Result<Self, FatbinError> {
        let len = fatbin_len(bytes, 0)?;
        let fatbin = slice(bytes, 0, len, "fatbin", 0)?;
        let header_size = usize::from(u16_at(bytes, 6, "fatbin header", 0)?);
        Ok(EntryIter {
            fatbin,
            at: header_size,
            end: fatbin.len(),
        })
    }
}

impl<'a> Iterator for EntryIter<'a> {
    type Item = Result<EntryHeader<'a>, FatbinError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        match parse_entry(self.fatbin, self.at) {
            Ok((header, next)) => {
                self.at = next;
                Some(Ok(header))
            }
            Err(e) => {
                self.at = self.end;
                Some(Err(e))
            }
        }
    }
}

/// The entry header at `at` and where the next one starts.
fn parse_entry(fatbin: &[u8], at: usize) -> Result<(EntryHeader<'_>, usize), FatbinError> {
    const W: &str = "entry header";
    let h = slice(fatbin, at, ENTRY_HEADER_LEN as u64, W, at)?;
    let kind = u16_at(h, 0, W, at)?;
    let version = u16_at(h, 2, W, at)?;
    if version != ENTRY_VERSION {
        return Err(FatbinError::UnsupportedVersion {
            what: W,
            offset: at,
            version: u32::from(version),
        });
    }
    let header_size = u64::from(u32_at(h, 4, W, at)?);
    let padded = u64_at(h, 8, W, at)?;
    let payload_size = u64::from(u32_at(h, 16, W, at)?);
    let options_at = u32_at(h, 20, W, at)?;
    let code_version = u32_at(h, 24, W, at)?;
    let arch = u32_at(h, 28, W, at)?;
    let name_at = u32_at(h, 32, W, at)?;
    let name_len = u32_at(h, 36, W, at)?;
    let flags = u64_at(h, 40, W, at)?;
    let uncompressed_len = u64_at(h, 56, W, at)?;
    if header_size < ENTRY_HEADER_LEN as u64 {
        return Err(FatbinError::BadField {
            what: "entry header size",
            offset: at,
            value: header_size,
        });
    }
    let room = (fatbin.len() - at) as u64;
    let total = header_size.checked_add(padded).filter(|&t| t <= room);
    let Some(total) = total else {
        return Err(FatbinError::OutOfBounds {
            what: "entry header size plus payload size",
            offset: at,
            value: header_size.saturating_add(padded),
            limit: room,
        });
    };
    let header = &fatbin[at..at + header_size as usize];
    let compression = compression_of(flags);
    // Stored uncompressed, nvcc 13 leaves `payload_size` 0 and the payload fills the padded size.
    let stored_len = if payload_size == 0 && compression == Compression::None {
        padded
    } else {
        payload_size
    };
    if stored_len > padded {
        return Err(FatbinError::OutOfBounds {
            what: "payload size",
            offset: at,
            value: stored_len,
            limit: padded,
        });
    }
    let data = at + header_size as usize;
    let stored = &fatbin[data..data + stored_len as usize];
    let kind = match kind {
        1 => EntryKind::Ptx,
        2 => EntryKind::Cubin,
        k => EntryKind::Other(k),
    };
    let ptxas_options = if kind == EntryKind::Ptx {
        options(header, options_at)
    } else {
        None
    };
    let entry = EntryHeader {
        offset: at,
        kind,
        arch,
        variant: variant_of(flags),
        code_version: ((code_version >> 16) as u16, code_version as u16),
        compression,
        flags,
        identifier: text_in(header, u64::from(name_at), u64::from(name_len)),
        ptxas_options,
        stored,
        uncompressed_len,
    };
    Ok((entry, at + total as usize))
}

/// The compression the flags name.
fn compression_of(flags: u64) -> Compression {
    match flags & (FLAG_ZSTD | FLAG_LZ4 | FLAG_OLD_COMPRESSION) {
        0 => Compression::None,
        FLAG_ZSTD => Compression::Zstd,
        FLAG_LZ4 => Compression::Lz4,
        _ => Compression::Unknown,
    }
}

/// The architecture variant the flags name (arch-specific wins if both are set).
fn variant_of(flags: u64) -> ArchVariant {
    if flags & FLAG_ARCH_SPECIFIC != 0 {
        ArchVariant::Specific
    } else if flags & FLAG_FAMILY != 0 {
        ArchVariant::Family
    } else {
        ArchVariant::Plain
    }
}

/// `len` bytes of text at `at` inside the entry header, without trailing NULs; `None` when
/// absent, outside the header or not UTF-8.
fn text_in(header: &[u8], at: u64, len: u64) -> Option<&str> {
    if at == 0 || len == 0 {
        return None;
    }
    let bytes = slice(header, usize::try_from(at).ok()?, len, "", 0).ok()?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).ok()
}

/// The ptxas options of a PTX entry: `options_at` (header offset 20) places an (offset, length)
/// pair inside the header, which places the text. `Some("")` where the pair says length 0.
fn options(header: &[u8], options_at: u32) -> Option<&str> {
    if options_at == 0 {
        return None;
    }
    let at = usize::try_from(options_at).ok()?;
    let offset = u32_at(header, at, "", 0).ok()?;
    let len = u32_at(header, at.checked_add(4)?, "", 0).ok()?;
    if len == 0 {
        return slice(header, offset as usize, 0, "", 0).ok().map(|_| "");
    }
    text_in(header, u64::from(offset), u64::from(len)).map(str::trim)
}

/// Every entry of the fatbin starting `fatbin`, payloads decompressed, in order.
pub fn entries(fatbin: &[u8]) -> Result<Vec<Entry>, FatbinError> {
    EntryIter::new(fatbin)?
        .map(|h| h.and_then(|h| h.to_entry()))
        .collect()
}

/// The PTX entry a driver would JIT for a device of compute capability `arch` (`10 * major +
/// minor`): of the PTX entries that run there ([`ArchVariant::ptx_runs_on`]), the one of the
/// highest architecture; at a tie, arch-specific before family before plain, then the first.
/// Only the headers are read.
pub fn ptx_entry_for<'a>(
    fatbin: &'a [u8],
    arch: u32,
) -> Result<Option<EntryHeader<'a>>, FatbinError> {
    let rank = |v: ArchVariant| match v {
        ArchVariant::Specific => 2,
        ArchVariant::Family => 1,
        ArchVariant::Plain => 0,
    };
    let mut best: Option<EntryHeader<'a>> = None;
    for h in EntryIter::new(fatbin)? {
        let h = h?;
        if h.kind != EntryKind::Ptx || !h.variant.ptx_runs_on(h.arch, arch) {
            continue;
        }
        let better = best.is_none_or(|b| (h.arch, rank(h.variant)) > (b.arch, rank(b.variant)));
        if better {
            best = Some(h);
        }
    }
    Ok(best)
}

/// The PTX the driver would JIT for a device of compute capability `arch` (the highest PTX
/// arch `<= arch`, see [`ptx_entry_for`]): for PTX, the text; for a fatbin, the chosen entry
/// decompressed; `None` for a cubin or a fatbin without PTX that runs there.
pub fn ptx_for(image: &Image, arch: u32) -> Result<Option<String>, FatbinError> {
    match image.kind {
        ImageKind::Ptx => utf8(image.bytes.to_vec(), 0).map(Some),
        ImageKind::Elf => Ok(None),
        ImageKind::Fatbin => match ptx_entry_for(image.bytes, arch)? {
            Some(h) => utf8(h.payload()?, h.offset).map(Some),
            None => Ok(None),
        },
        ImageKind::FatbinWrapper => {
            let inner = crate::image::image(image.bytes)?;
            if inner.kind == ImageKind::FatbinWrapper {
                return Err(FatbinError::WrapperTarget {
                    offset: 0,
                    address: image.bytes.as_ptr() as u64,
                });
            }
            ptx_for(&inner, arch)
        }
    }
}

/// `bytes` as a `String`, or `NotText` for the entry at `offset`.
fn utf8(bytes: Vec<u8>, offset: usize) -> Result<String, FatbinError> {
    String::from_utf8(bytes).map_err(|e| FatbinError::NotText {
        offset,
        at: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_admit_the_devices_the_driver_runs_them_on() {
        assert!(ArchVariant::Plain.ptx_runs_on(80, 90));
        assert!(!ArchVariant::Plain.ptx_runs_on(100, 90));
        assert!(ArchVariant::Specific.ptx_runs_on(90, 90));
        assert!(!ArchVariant::Specific.ptx_runs_on(90, 100));
        assert!(ArchVariant::Family.ptx_runs_on(100, 103));
        assert!(!ArchVariant::Family.ptx_runs_on(100, 120));
        assert!(!ArchVariant::Family.ptx_runs_on(103, 100));
    }
}
