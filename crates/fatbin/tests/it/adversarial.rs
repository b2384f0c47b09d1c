//! Bad input is an error value with a one-line `Display`, never a panic: truncated headers,
//! sizes pointing past the end, zero entries, unknown entry kinds and versions, corrupt
//! compressed payloads, wrappers pointing at garbage, and (proptest) random bytes, mutations and
//! truncations of the committed fixtures (see `fixtures.rs` for how they were built).

use mantissa_fatbin::{
    entries, host_fatbins, image, kind_of, ptx_for, EntryIter, EntryKind, FatbinError, ImageKind,
    FLAG_OLD_COMPRESSION, WRAPPER_MAGIC,
};
use proptest::prelude::*;

const ZSTD: &[u8] = include_bytes!("../fixtures/axpy_zstd.fatbin");
const LZ4: &[u8] = include_bytes!("../fixtures/axpy_lz4.fatbin");
/// Where the fixtures' two entry headers start (PTX, then the cubin).
const PTX_ENTRY: usize = 0x10;

/// The cubin entry's offset in `fatbin`.
fn cubin_entry(fatbin: &[u8]) -> usize {
    EntryIter::new(fatbin)
        .unwrap()
        .map(Result::unwrap)
        .find(|e| e.kind == EntryKind::Cubin)
        .unwrap()
        .offset
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Every reader on `bytes`: none may panic; every error is one line. Returns `image`'s result.
fn read_all(bytes: &[u8]) -> Result<usize, FatbinError> {
    let one_line = |e: &FatbinError| {
        let text = e.to_string();
        assert!(!text.contains('\n') && !text.is_empty(), "{text:?}");
    };
    let _ = kind_of(bytes);
    if let Err(e) = entries(bytes) {
        one_line(&e);
    }
    if let Err(e) = host_fatbins(bytes) {
        one_line(&e);
    }
    match image(bytes) {
        Ok(img) => {
            for arch in [75, 90, 100] {
                if let Err(e) = ptx_for(&img, arch) {
                    one_line(&e);
                }
            }
            Ok(img.bytes.len())
        }
        Err(e) => {
            one_line(&e);
            Err(e)
        }
    }
}

#[test]
fn every_truncation_is_an_error() {
    for fatbin in [ZSTD, LZ4] {
        for len in 0..fatbin.len() {
            assert!(read_all(&fatbin[..len]).is_err(), "prefix of {len} bytes");
            assert!(entries(&fatbin[..len]).is_err(), "prefix of {len} bytes");
        }
        assert_eq!(read_all(fatbin), Ok(fatbin.len()));
    }
}

#[test]
fn sizes_past_the_end_are_errors() {
    let mut b = ZSTD.to_vec();
    put_u64(&mut b, 8, u64::MAX - 8);
    assert!(matches!(image(&b), Err(FatbinError::TooLarge { .. })));
    let mut b = ZSTD.to_vec();
    put_u64(&mut b, 8, (ZSTD.len() + 8) as u64);
    assert!(matches!(image(&b), Err(FatbinError::Truncated { .. })));
    // The entry's padded size, its header size, its stored size.
    let mut b = ZSTD.to_vec();
    put_u64(&mut b, PTX_ENTRY + 8, 1 << 40);
    let e = image(&b).unwrap_err();
    assert!(
        matches!(e, FatbinError::OutOfBounds { offset: 0x10, .. }),
        "{e}"
    );
    let mut b = ZSTD.to_vec();
    put_u32(&mut b, PTX_ENTRY + 4, 8);
    assert!(matches!(image(&b), Err(FatbinError::BadField { .. })));
    let mut b = ZSTD.to_vec();
    put_u32(&mut b, PTX_ENTRY + 4, u32::MAX);
    assert!(matches!(image(&b), Err(FatbinError::OutOfBounds { .. })));
    let mut b = ZSTD.to_vec();
    put_u32(&mut b, PTX_ENTRY + 16, 100_000);
    assert!(matches!(image(&b), Err(FatbinError::OutOfBounds { .. })));
    // A fatbin whose entries do not fill it exactly: the last "entry" is truncated.
    let mut b = ZSTD.to_vec();
    b.extend_from_slice(&[0; 24]);
    let body = (b.len() - 16) as u64;
    put_u64(&mut b, 8, body);
    assert!(matches!(image(&b), Err(FatbinError::Truncated { .. })));
    // The header's own size below 16.
    let mut b = ZSTD.to_vec();
    put_u16(&mut b, 6, 4);
    assert!(matches!(image(&b), Err(FatbinError::BadField { .. })));
}

#[test]
fn zero_entries_is_an_empty_fatbin() {
    let mut b = ZSTD[..16].to_vec();
    put_u64(&mut b, 8, 0);
    let img = image(&b).unwrap();
    assert_eq!((img.kind, img.bytes.len()), (ImageKind::Fatbin, 16));
    assert!(entries(&b).unwrap().is_empty());
    assert_eq!(ptx_for(&img, 90).unwrap(), None);
}

#[test]
fn unknown_kinds_and_versions() {
    let mut b = ZSTD.to_vec();
    put_u16(&mut b, PTX_ENTRY, 7);
    let es = entries(&b).unwrap();
    assert_eq!(es[0].kind, EntryKind::Other(7));
    assert_eq!(ptx_for(&image(&b).unwrap(), 90).unwrap(), None);
    let mut b = ZSTD.to_vec();
    put_u16(&mut b, PTX_ENTRY + 2, 0x0202);
    assert!(matches!(
        entries(&b),
        Err(FatbinError::UnsupportedVersion { .. })
    ));
    let mut b = ZSTD.to_vec();
    put_u16(&mut b, 4, 2);
    assert!(matches!(
        image(&b),
        Err(FatbinError::UnsupportedVersion { .. })
    ));
    // An older compression flag this crate does not decode: the headers read, the payload not.
    let mut b = ZSTD.to_vec();
    put_u64(&mut b, PTX_ENTRY + 40, 0x11 | FLAG_OLD_COMPRESSION);
    assert!(image(&b).is_ok());
    let e = entries(&b).unwrap_err();
    assert!(
        matches!(e, FatbinError::UnknownCompression { offset: 0x10, .. }),
        "{e}"
    );
}

#[test]
fn corrupt_compressed_payloads_are_errors() {
    for fatbin in [ZSTD, LZ4] {
        let cubin = cubin_entry(fatbin);
        let header_size = u32::from_le_bytes(fatbin[cubin + 4..cubin + 8].try_into().unwrap());
        let data = cubin + header_size as usize;
        // A wrong decompressed size.
        let mut b = fatbin.to_vec();
        put_u64(&mut b, cubin + 56, 3975);
        assert!(matches!(entries(&b), Err(FatbinError::Decompress { .. })));
        let mut b = fatbin.to_vec();
        put_u64(&mut b, cubin + 56, 1 << 33);
        assert!(entries(&b).is_err());
        // The payload's first bytes garbled; the payload cut short.
        let mut b = fatbin.to_vec();
        b[data..data + 8].fill(0xFF);
        assert!(matches!(entries(&b), Err(FatbinError::Decompress { .. })));
        let mut b = fatbin.to_vec();
        let stored = u32::from_le_bytes(b[cubin + 16..cubin + 20].try_into().unwrap());
        put_u32(&mut b, cubin + 16, stored / 2);
        assert!(matches!(entries(&b), Err(FatbinError::Decompress { .. })));
    }
}

#[test]
fn wrappers_pointing_at_garbage_are_errors() {
    let mut w = vec![0u8; 64];
    w[..4].copy_from_slice(&WRAPPER_MAGIC.to_le_bytes());
    put_u32(&mut w, 4, 1);
    let inside = w.as_ptr() as u64 + 32;
    put_u64(&mut w, 8, inside);
    w[32..40].copy_from_slice(b"garbage!");
    assert!(matches!(image(&w), Err(FatbinError::WrapperTarget { .. })));
    put_u64(&mut w, 8, 0);
    assert!(matches!(image(&w), Err(FatbinError::WrapperTarget { .. })));
    put_u64(&mut w, 8, u64::MAX);
    assert!(matches!(image(&w), Err(FatbinError::WrapperTarget { .. })));
    put_u32(&mut w, 4, 3);
    assert!(matches!(
        image(&w),
        Err(FatbinError::UnsupportedVersion { .. })
    ));
    assert!(image(&w[..12]).is_err());
}

#[test]
fn elf_headers_that_lie_are_errors() {
    let cubin = entries(ZSTD).unwrap().remove(1).payload;
    assert_eq!(image(&cubin).unwrap().bytes.len(), cubin.len());
    for len in [4, 16, 63, 64, cubin.len() - 1] {
        assert!(read_all(&cubin[..len]).is_err(), "{len}");
    }
    let mut b = cubin.clone();
    put_u64(&mut b, 40, u64::MAX - 100);
    assert!(read_all(&b).is_err());
    let mut b = cubin.clone();
    put_u16(&mut b, 58, 8);
    assert!(read_all(&b).is_err());
    let mut b = cubin.clone();
    b[5] = 2;
    assert!(matches!(
        image(&b),
        Err(FatbinError::UnsupportedVersion { .. })
    ));
}

#[test]
fn host_fatbins_of_non_cuda_and_non_elf_files() {
    // This test's own executable: an ELF file without fatbins.
    let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert_eq!(host_fatbins(&me).unwrap(), Vec::<&[u8]>::new());
    assert!(matches!(
        host_fatbins(ZSTD),
        Err(FatbinError::BadMagic { .. })
    ));
    assert!(host_fatbins(b"").is_err());
    assert!(host_fatbins(&me[..100]).is_err());
}

fn mutated(base: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(at, v) in edits {
        let i = at % b.len();
        b[i] = v;
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read_all(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_fatbin_header_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..600),
        header_size in prop_oneof![Just(16u16), any::<u16>()],
    ) {
        let mut b = ZSTD[..16].to_vec();
        put_u16(&mut b, 6, header_size);
        put_u64(&mut b, 8, body.len() as u64);
        b.extend_from_slice(&body);
        let _ = read_all(&b);
    }

    #[test]
    fn mutated_fatbins_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        lz4 in any::<bool>(),
    ) {
        let _ = read_all(&mutated(if lz4 { LZ4 } else { ZSTD }, &edits));
    }

    #[test]
    fn mutated_headers_never_panic(
        edits in proptest::collection::vec((0usize..0x60, any::<u8>()), 1..6),
        lz4 in any::<bool>(),
    ) {
        let _ = read_all(&mutated(if lz4 { LZ4 } else { ZSTD }, &edits));
    }

    #[test]
    fn truncated_fatbins_are_errors(len in 0usize..2152, lz4 in any::<bool>()) {
        let f = if lz4 { LZ4 } else { ZSTD };
        let len = len % f.len();
        prop_assert!(read_all(&f[..len]).is_err());
    }

    #[test]
    fn mutated_cubins_never_panic(
        edits in proptest::collection::vec((0usize..0x100, any::<u8>()), 1..6),
    ) {
        static CUBIN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let cubin = CUBIN.get_or_init(|| entries(ZSTD).unwrap().remove(1).payload);
        let _ = read_all(&mutated(cubin, &edits));
    }
}
