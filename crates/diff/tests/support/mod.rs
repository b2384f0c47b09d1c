//! The projector example (examples/diff/projector) written into a scratch directory with its
//! CPU reference, computed here the way the CPU original computes it: IEEE f32 operations one
//! at a time (Rust never contracts), IEEE division, and the float→unsigned cast as x86-64 C
//! code performs it.

#![allow(dead_code)] // Each test binary uses its own part of the support.

use mantissa_gpu::HostData;
use mantissa_harness::{data, npy, Spec};
use std::path::{Path, PathBuf};

pub const SOURCE: &str = include_str!("../../../../examples/diff/projector/projector.cu");
pub const SPEC: &str = include_str!("../../../../examples/diff/projector/projector.toml");

/// The projector's parameters, as the spec passes them.
pub const X0: f32 = 32.0;
pub const DIST: f32 = 3000.75;
pub const BIAS: f32 = 2080.0;
pub const NX: usize = 128;
pub const M: usize = 4096;
pub const STEPS: usize = 64;

/// The source lines of the seeded causes (see projector.cu).
pub const DIVISION_LINE: u32 = 14;
pub const CONTRACTION_LINE: u32 = 17;
pub const CAST_LINE: u32 = 24;

/// `(unsigned)x` on x86-64: the 64-bit truncating conversion (`cvttss2si r64`), whose result
/// is 0x8000000000000000 for NaN and for values outside [-2^63, 2^63), then its low 32 bits.
pub fn x86_u32(x: f32) -> u32 {
    let limit = 2f32.powi(63);
    let wide: i64 = if x.is_nan() || x >= limit || x < -limit {
        i64::MIN
    } else {
        // In range: the truncation is exact, so `as` adds nothing of its own here.
        x.trunc() as i64
    };
    let b = wide.to_le_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// `(int)x` on x86-64 for the in-range positions the projector casts.
fn x86_i32(x: f32) -> i32 {
    assert!(x.abs() < 2e9, "the projector's positions stay in range");
    x.trunc() as i32
}

/// The CPU original's outputs (proj, bins) for the volume `vol`.
pub fn reference(vol: &[f32]) -> (Vec<f32>, Vec<u32>) {
    let mut proj = Vec::with_capacity(M);
    let mut bins = Vec::with_capacity(M);
    for i in 0..M as i32 {
        let mut sum = 0.0f32;
        let slope = (2 * i - M as i32) as f32 / DIST;
        for k in 0..STEPS {
            let x = X0 + k as f32 * slope;
            let cell = x86_i32(x).clamp(0, NX as i32 - 1) as usize;
            sum += vol[cell] + x;
        }
        proj.push(sum);
        bins.push(x86_u32(sum - BIAS));
    }
    (proj, bins)
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mantissa-diff-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// The example in `dir` with its reference files; returns the spec's path and the volume.
pub fn write_example(dir: &Path) -> (PathBuf, Vec<f32>) {
    std::fs::write(dir.join("projector.cu"), SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let spec_path = dir.join("projector.toml");
    std::fs::write(&spec_path, SPEC).unwrap_or_else(|e| panic!("{e}"));
    // The spec names its references, which must exist to load it: placeholders until the
    // volume it generates gives the real ones.
    for name in ["proj.npy", "bins.npy"] {
        npy::write(&dir.join(name), &HostData::F32(Vec::new())).unwrap_or_else(|e| panic!("{e}"));
    }
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let vol = match spec.buffer("vol").map(data::buffer_data) {
        Some(Ok(HostData::F32(v))) => v,
        _ => panic!("the spec's vol is an f32 buffer"),
    };
    let (proj, bins) = reference(&vol);
    npy::write(&dir.join("proj.npy"), &HostData::F32(proj)).unwrap_or_else(|e| panic!("{e}"));
    npy::write(&dir.join("bins.npy"), &HostData::U32(bins)).unwrap_or_else(|e| panic!("{e}"));
    (spec_path, vol)
}
