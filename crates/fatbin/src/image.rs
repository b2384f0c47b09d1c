//! What a driver load call was handed: [`kind_of`] tells it by its first bytes, [`image`] (a
//! slice, bounds-checked) and [`image_at`] (a bare pointer, as the driver gets it) find its
//! length from its own headers and check it.

use crate::bytes::{head_word, slice, u16_at, u32_at, u64_at};
use crate::elf::{Elf, EHDR64, ELF_MAGIC};
use crate::entry::EntryIter;
use crate::error::FatbinError;

/// The fatbin header's magic (`fatBinaryHeader::magic`).
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The fatbin wrapper's magic (`__fatBinC_Wrapper_t::magic`), as the CUDA runtime registers it.
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// Bytes of a fatbin header.
pub const FATBIN_HEADER_LEN: usize = 16;
/// Bytes of a fatbin wrapper (64-bit: magic, version, fatbin pointer, prelinked-fatbin list).
pub const WRAPPER_LEN: usize = 24;
/// The largest image this crate accepts (16 GiB): a larger size field is garbage, refused
/// before anything is sliced or allocated.
pub const MAX_IMAGE: u64 = 1 << 34;

/// What kind of image a load call was handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// A fatbin: header (magic `0xBA55ED50`) and entries.
    Fatbin,
    /// A fatbin wrapper (magic `0x466243B1`): a version and a pointer to a fatbin.
    FatbinWrapper,
    /// An ELF cubin.
    Elf,
    /// PTX text, terminated by a NUL.
    Ptx,
}

/// An image and its exact bytes. For a wrapper, the fatbin it points at (kind [`ImageKind::Fatbin`]);
/// for PTX, the text without its terminating NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image<'a> {
    /// What the bytes are.
    pub kind: ImageKind,
    /// The image's bytes, exactly as long as its headers say.
    pub bytes: &'a [u8],
}

/// What a driver load call (`cuModuleLoadData`, `cuModuleLoadFatBinary`, `cuLibraryLoadData`,
/// ...) was handed, told by its first bytes. `None`: not an image this crate knows.
///
/// Four bytes tell a fatbin, a wrapper and an ELF file. Anything else is PTX when it is text
/// (no control bytes but white space) whose first thing after white space and comments is
/// `.version` (the PTX ISA requires it first), or could still be where `head` ends first.
pub fn kind_of(head: &[u8]) -> Option<ImageKind> {
    if head.len() >= 4 {
        match head_word(head) {
            FATBIN_MAGIC => return Some(ImageKind::Fatbin),
            WRAPPER_MAGIC => return Some(ImageKind::FatbinWrapper),
            ELF_MAGIC => return Some(ImageKind::Elf),
            _ => {}
        }
    }
    looks_like_ptx(head).then_some(ImageKind::Ptx)
}

/// See [`kind_of`]: text whose first directive is, or may still be, `.version`.
fn looks_like_ptx(head: &[u8]) -> bool {
    let (text, terminated) = match head.iter().position(|&b| b == 0) {
        Some(n) => (&head[..n], true),
        None => (head, false),
    };
    if text.is_empty()
        || text
            .iter()
            .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) || b == 0x7f)
    {
        return false;
    }
    let rest = skip_space_and_comments(text);
    const VERSION: &[u8] = b".version";
    if rest.is_empty() {
        // Only white space and comments so far: PTX if the text may go on past `head`.
        return !terminated;
    }
    rest.starts_with(VERSION) || (!terminated && VERSION.starts_with(rest))
}

/// `text` after its leading white space, `//` and `/* */` comments (an unclosed comment takes
/// the rest).
fn skip_space_and_comments(mut text: &[u8]) -> &[u8] {
    loop {
        let before = text.len();
        while let [b, rest @ ..] = text {
            if !b.is_ascii_whitespace() && *b != 0x0b {
                break;
            }
            text = rest;
        }
        if let Some(rest) = text.strip_prefix(b"//") {
            let nl = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |n| n + 1);
            text = &rest[nl..];
        } else if let Some(rest) = text.strip_prefix(b"/*") {
            let end = rest
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |n| n + 2);
            text = &rest[end..];
        }
        if text.len() == before {
            return text;
        }
    }
}

/// The length of the fatbin whose header starts `bytes` (the header's sizes, checked against
/// [`MAX_IMAGE`], not against `bytes`' length beyond the header).
pub(crate) fn fatbin_len(bytes: &[u8], offset: usize) -> Result<u64, FatbinError> {
    const W: &str = "fatbin header";
    let magic = u32_at(bytes, 0, W, offset)?;
    if magic != FATBIN_MAGIC {
        return Err(FatbinError::BadMagic {
            what: "fatbin",
            offset,
            found: magic,
        });
    }
    let version = u16_at(bytes, 4, W, offset)?;
    if version != 1 {
        return Err(FatbinError::UnsupportedVersion {
            what: W,
            offset,
            version: u32::from(version),
        });
    }
    let header_size = u16_at(bytes, 6, W, offset)?;
    if usize::from(header_size) < FATBIN_HEADER_LEN {
        return Err(FatbinError::BadField {
            what: "fatbin header size",
            offset,
            value: u64::from(header_size),
        });
    }
    let fat_size = u64_at(bytes, 8, W, offset)?;
    let len = fat_size
        .checked_add(u64::from(header_size))
        .filter(|&l| l <= MAX_IMAGE)
        .ok_or(FatbinError::TooLarge {
            what: "fatbin",
            offset,
            size: fat_size,
        })?;
    Ok(len)
}

/// A loaded image whose length is known only from its own headers, as a slice: the same rules
/// as [`image_at`], with every read bounds-checked against `bytes`. `bytes` may go on past the
/// image. A wrapper is followed only where its pointer points into `bytes`.
pub fn image(bytes: &[u8]) -> Result<Image<'_>, FatbinError> {
    match kind_of(bytes) {
        Some(ImageKind::Fatbin) => fatbin_image(bytes, 0),
        Some(ImageKind::FatbinWrapper) => {
            let (_, target) = wrapper_fields(bytes, 0)?;
            let base = bytes.as_ptr() as u64;
            let inside = target
                .checked_sub(base)
                .filter(|&d| d < bytes.len() as u64)
                .ok_or(FatbinError::WrapperTarget {
                    offset: 0,
                    address: target,
                })?;
            // `inside < bytes.len()`, so it fits a usize.
            let at = inside as usize;
            let rest = &bytes[at..];
            if kind_of(rest) != Some(ImageKind::Fatbin) {
                return Err(FatbinError::WrapperTarget {
                    offset: 0,
                    address: target,
                });
            }
            fatbin_image(rest, at)
        }
        Some(ImageKind::Elf) => {
            let mut elf = Elf::parse(bytes)?;
            elf.resolve_shnum(bytes)?;
            let len = elf.file_len(bytes)?;
            Ok(Image {
                kind: ImageKind::Elf,
                bytes: slice(bytes, 0, len, "ELF image", 0)?,
            })
        }
        Some(ImageKind::Ptx) => {
            let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            Ok(Image {
                kind: ImageKind::Ptx,
                bytes: &bytes[..len],
            })
        }
        None => Err(FatbinError::BadMagic {
            what: "fatbin, fatbin wrapper, ELF image or PTX text",
            offset: 0,
            found: head_word(bytes),
        }),
    }
}

/// The fatbin starting `bytes` (at `offset` of what the caller was given), its entries walked
/// to check that they fill it exactly.
pub(crate) fn fatbin_image(bytes: &[u8], offset: usize) -> Result<Image<'_>, FatbinError> {
    let len = fatbin_len(bytes, offset)?;
    let fatbin = slice(bytes, 0, len, "fatbin", offset)?;
    for entry in EntryIter::new(fatbin)? {
        entry.map_err(|e| shift(e, offset))?;
    }
    Ok(Image {
        kind: ImageKind::Fatbin,
        bytes: fatbin,
    })
}

/// `e` with its offset moved by `by` (errors found in a sub-slice, reported against the whole).
fn shift(e: FatbinError, by: usize) -> FatbinError {
    use FatbinError::*;
    let add = |o: usize| o.saturating_add(by);
    match e {
        Truncated {
            what,
            offset,
            need,
            have,
        } => Truncated {
            what,
            offset: add(offset),
            need,
            have,
        },
        BadMagic {
            what,
            offset,
            found,
        } => BadMagic {
            what,
            offset: add(offset),
            found,
        },
        UnsupportedVersion {
            what,
            offset,
            version,
        } => UnsupportedVersion {
            what,
            offset: add(offset),
            version,
        },
        OutOfBounds {
            what,
            offset,
            value,
            limit,
        } => OutOfBounds {
            what,
            offset: add(offset),
            value,
            limit,
        },
        BadField {
            what,
            offset,
            value,
        } => BadField {
            what,
            offset: add(offset),
            value,
        },
        other => other,
    }
}

/// The version and fatbin pointer of the wrapper starting `bytes`.
fn wrapper_fields(bytes: &[u8], offset: usize) -> Result<(u32, u64), FatbinError> {
    const W: &str = "fatbin wrapper";
    let version = u32_at(bytes, 4, W, offset)?;
    if !(1..=2).contains(&version) {
        return Err(FatbinError::UnsupportedVersion {
            what: W,
            offset,
            version,
        });
    }
    let target = u64_at(bytes, 8, W, offset)?;
    Ok((version, target))
}

/// A loaded image whose length is known only from its own headers (a driver call gets a bare
/// pointer): a fatbin by its header's size fields; a fatbin wrapper (as the CUDA runtime
/// registers: version, pointer to the fatbin) followed to its fatbin; an ELF cubin by its
/// section and program header tables; PTX by its terminating NUL. The image is then checked
/// as [`image`] checks it.
///
/// No byte past the image is read: the first four bytes are read one at a time, stopping at a
/// NUL (only PTX can have one there), and every later read stays inside what the headers read
/// so far say the image holds.
///
/// # Safety
/// `ptr` must point at a readable image of one of the four kinds, as a driver load call
/// requires of its caller: a fatbin or ELF file as long as its headers say, a wrapper whose
/// fatbin pointer is null or points at such a fatbin, or NUL-terminated text. The image must
/// stay unchanged and mapped for `'a`. Garbage in a readable image of the right length is an
/// error, never undefined behaviour; headers that claim more bytes than are mapped are not
/// detectable and are undefined behaviour (sizes above [`MAX_IMAGE`] are refused).
pub unsafe fn image_at<'a>(ptr: *const u8) -> Result<Image<'a>, FatbinError> {
    if ptr.is_null() {
        return Err(FatbinError::NullPointer);
    }
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        // SAFETY: the image holds at least these bytes: every magic is four non-NUL bytes, and
        // text ends at its first NUL, where the loop stops.
        head[n] = unsafe { *ptr.add(n) };
        n += 1;
        if head[n - 1] == 0 {
            break;
        }
    }
    let word = if n == 4 { u32::from_le_bytes(head) } else { 0 };
    match word {
        FATBIN_MAGIC => {
            // SAFETY: a fatbin starts with its 16-byte header.
            let header = unsafe { std::slice::from_raw_parts(ptr, FATBIN_HEADER_LEN) };
            let len = fatbin_len(header, 0)?;
            // SAFETY: the caller promises a fatbin as long as its header says; `len` is at
            // most `MAX_IMAGE`, below `isize::MAX`.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len as usize) };
            fatbin_image(bytes, 0)
        }
        WRAPPER_MAGIC => {
            // SAFETY: a wrapper is 24 bytes.
            let wrapper = unsafe { std::slice::from_raw_parts(ptr, WRAPPER_LEN) };
            let (_, target) = wrapper_fields(wrapper, 0)?;
            let wrong = FatbinError::WrapperTarget {
                offset: 0,
                address: target,
            };
            if target == 0 {
                return Err(wrong);
            }
            let target_ptr = target as usize as *const u8;
            // SAFETY: the caller promises the wrapper's pointer is a readable fatbin, which
            // starts with its four-byte magic. Checked before following it, so a wrapper
            // pointing at a wrapper (or itself) is an error, not a recursion.
            let magic = unsafe { target_ptr.cast::<u32>().read_unaligned() };
            if u32::from_le(magic) != FATBIN_MAGIC {
                return Err(wrong);
            }
            // SAFETY: as above.
            unsafe { image_at(target_ptr) }
        }
        ELF_MAGIC => unsafe { elf_at(ptr) },
        _ => {
            // SAFETY: anything else must be NUL-terminated text.
            let with_nul = unsafe { std::ffi::CStr::from_ptr(ptr.cast()) }.to_bytes_with_nul();
            if !looks_like_ptx(with_nul) {
                return Err(FatbinError::BadMagic {
                    what: "fatbin, fatbin wrapper, ELF image or PTX text",
                    offset: 0,
                    found: word,
                });
            }
            Ok(Image {
                kind: ImageKind::Ptx,
                bytes: &with_nul[..with_nul.len() - 1],
            })
        }
    }
}

/// The ELF file at `ptr`, read in three steps: the file header, then the header tables it
/// places, then everything the tables place.
///
/// # Safety
/// As [`image_at`], for an ELF file.
unsafe fn elf_at<'a>(ptr: *const u8) -> Result<Image<'a>, FatbinError> {
    // SAFETY: the ELF identification (16 bytes) is there; its class byte says how long the
    // header is (52 or 64 bytes).
    let ident = unsafe { std::slice::from_raw_parts(ptr, 16) };
    let header_len = if ident[4] == 2 { EHDR64 } else { 52 };
    // SAFETY: as above.
    let header = unsafe { std::slice::from_raw_parts(ptr, header_len) };
    let mut elf = Elf::parse(header)?;
    let too_large = |size| FatbinError::TooLarge {
        what: "ELF image",
        offset: 0,
        size,
    };
    let tables = elf.tables_end()?;
    if tables > MAX_IMAGE {
        return Err(too_large(tables));
    }
    // SAFETY: the header tables are inside the file, which the caller promises is readable.
    let with_tables = unsafe { std::slice::from_raw_parts(ptr, tables as usize) };
    let tables = elf.resolve_shnum(with_tables)?;
    if tables > MAX_IMAGE {
        return Err(too_large(tables));
    }
    // SAFETY: as above, the real section count known.
    let with_tables = unsafe { std::slice::from_raw_parts(ptr, tables as usize) };
    let len = elf.file_len(with_tables)?;
    if len > MAX_IMAGE {
        return Err(too_large(len));
    }
    // SAFETY: the file is as long as its tables say.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len as usize) };
    image(bytes)
}
