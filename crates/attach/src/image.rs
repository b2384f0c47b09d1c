//! What a load call was handed, through `mantissa-fatbin`: the image's kind and exact bytes
//! (so its key), from a bare pointer or a file's contents.

use mantissa_fatbin::{Image, ImageKind};
use std::ffi::c_void;
use std::sync::Arc;

/// An image a load call was handed: its key, kind (the `modules/` file's extension) and bytes.
pub struct Seen<'a> {
    /// `mantissa_fatbin::module_key` of `bytes`.
    pub key: Arc<str>,
    /// `fatbin`, `cubin` or `ptx`.
    pub kind: &'static str,
    /// The image's bytes as its headers delimit them.
    pub bytes: &'a [u8],
}

fn seen(image: Image<'_>) -> Seen<'_> {
    let kind = match image.kind {
        ImageKind::Fatbin | ImageKind::FatbinWrapper => "fatbin",
        ImageKind::Elf => "cubin",
        ImageKind::Ptx => "ptx",
    };
    Seen {
        key: mantissa_fatbin::module_key(image.bytes).into(),
        kind,
        bytes: image.bytes,
    }
}

/// The image at `ptr` (a load call's `image`, `fatCubin` or `code` argument).
///
/// # Safety
/// `ptr` is what the application handed the driver: a readable fatbin, fatbin wrapper, ELF or
/// NUL-terminated PTX (the driver reads it the same way); null is refused.
pub unsafe fn at<'a>(ptr: *const c_void) -> Result<Seen<'a>, String> {
    if ptr.is_null() {
        return Err("null image".to_string());
    }
    // SAFETY: per this function's contract.
    unsafe { mantissa_fatbin::image_at(ptr.cast()) }
        .map(seen)
        .map_err(|e| e.to_string())
}

/// The image in a file's bytes (`cuModuleLoad`, `cuLibraryLoadFromFile`).
pub fn of(bytes: &[u8]) -> Result<Seen<'_>, String> {
    mantissa_fatbin::image(bytes)
        .map(seen)
        .map_err(|e| e.to_string())
}
