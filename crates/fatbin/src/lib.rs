//! CUDA fatbins, cubins and PTX images as a driver load call is handed them: which kind
//! ([`kind_of`]), how long ([`image`], [`image_at`]), which entries ([`entries`]), the PTX a
//! device would JIT ([`ptx_for`]), the fatbins inside a host binary ([`host_fatbins`]), and the
//! key a module is known by ([`module_key`]). Std and two pure-Rust decompressors only; no
//! panics on bad input (every error a [`FatbinError`] with a one-line `Display`), no global
//! state. It is linked into the `libcuda.so.1` shim loaded into users' applications.
//!
//! # What a fatbin is, as far as this crate reads it
//!
//! All fields are little-endian.
//!
//! - **Fatbin header** (16 bytes): magic `0xBA55ED50` (u32), version 1 (u16), header size 16
//!   (u16), size of the entries that follow (u64). The fatbin is header size + that size long.
//! - **Entries**, back to back after the header, each a header then its payload:
//!   - 0x00 kind (u16: 1 PTX, 2 ELF cubin), 0x02 header version `0x0101` (u16),
//!     0x04 header size (u32; 64 bytes of fixed fields, more follow: 80 for PTX, 112 for
//!     sm_100+ cubins, more with an identifier),
//!   - 0x08 padded payload size (u64; the payload rounded up to 8; the next entry starts at
//!     header + header size + padded size),
//!   - 0x10 stored payload size (u32; 0 when stored uncompressed, the padded size then holding
//!     the payload), 0x14 offset in the header of an (offset, length) pair placing the ptxas
//!     options of a PTX entry (u32),
//!   - 0x18 code version (u32: major << 16 | minor; PTX ISA 9.0, cubin ELF version 1.8),
//!     0x1C architecture (u32, 90 for sm_90 and compute_90),
//!   - 0x20 identifier offset and 0x24 length in the header (u32 each; the source file name, in
//!     `-G` builds),
//!   - 0x28 flags (u64): 0x1 64-bit, 0x2 debug, 0x10 Linux, 0x2000 LZ4, 0x8000 Zstandard,
//!     0x10_0000 arch-specific (`sm_90a`), 0x20_0000 family (`sm_100f`),
//!   - 0x38 decompressed size (u64).
//! - **Compression** (nvcc 13.0.88's `fatbinary`): `--compress-mode=default` (the default),
//!   `balance` and `size` write Zstandard frames, `speed` a raw LZ4 block (no frame); `none`
//!   and `-no-compress` store as is. By default only PTX (and `-G` images) is compressed;
//!   `-Xfatbin=-compress-all` and `--compress-mode=size` compress cubins too. A decompressed PTX
//!   payload ends in a NUL. `fatbinary` strips comments and indentation from the PTX it stores
//!   (collapsing runs of blanks), so the stored text is not `nvcc -ptx`'s byte for byte.
//! - **Fatbin wrapper** (`__fatBinC_Wrapper_t`, 24 bytes, in a host binary's
//!   `.nvFatBinSegment`, and what the runtime passes to `__cudaRegisterFatBinary`): magic
//!   `0x466243B1` (u32), version 1 or 2 (u32), pointer to the fatbin (u64), and for version 2
//!   a pointer to a null-terminated list of prelinked fatbins (u64).
//! - **Host binaries** keep fatbins back to back (8-aligned) in the `.nv_fatbin` section.
//!
//! Sources checked: the pip wheels' `nvcc` 13.0.88, `fatbinary` and `cuobjdump` 13.2 (every
//! field above was seen in fatbins they build and compared with what cuobjdump prints);
//! ZLUDA's `FatbinHeader`, `FatbinFileHeader` and `FatbincWrapper` (its dark-API types and
//! `zluda_trace`, which name the same fields and flags); a reverse-engineered format note in
//! GrigoryEvko/nvopen-tools (`fatbin/FORMAT_SPECIFICATION.md`) for the padded-size walk and
//! the longer sm_100+ headers.

#![deny(missing_docs)]

mod bytes;
mod decompress;
mod elf;
mod entry;
mod error;
mod host;
mod image;

pub use entry::{
    entries, ptx_entry_for, ptx_for, ArchVariant, Compression, Entry, EntryHeader, EntryIter,
    EntryKind, ENTRY_HEADER_LEN, ENTRY_VERSION, FLAG_64BIT, FLAG_ARCH_SPECIFIC, FLAG_DEBUG,
    FLAG_FAMILY, FLAG_LINUX, FLAG_LZ4, FLAG_OLD_COMPRESSION, FLAG_ZSTD,
};
pub use error::FatbinError;
pub use host::host_fatbins;
pub use image::{
    image, image_at, kind_of, Image, ImageKind, FATBIN_HEADER_LEN, FATBIN_MAGIC, MAX_IMAGE,
    WRAPPER_LEN, WRAPPER_MAGIC,
};

/// FNV-1a, 64-bit: a tiny hash whose value is fixed by its definition, so keys and file names
/// stay stable across Rust releases, machines and processes (std's `DefaultHasher` promises
/// none of these).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The key a module is known by across processes: [`fnv1a64`] of the image's bytes (as
/// [`image`] or [`image_at`] delimit them), 16 lowercase hex digits.
pub fn module_key(image_bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(image_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(module_key(b"a"), "af63dc4c8601ec8c");
    }
}
