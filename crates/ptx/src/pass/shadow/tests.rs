//! CPU tests of the shadow pass: which instructions are sites, what is inserted, that the
//! instrumented modules (merged with the runtime NVRTC compiles) round-trip and assemble, that
//! the original code is untouched, and that `decode` reads the layout the runtime writes.
//! The oracle's known cases are in `oracle_tests.rs`; the GPU runs in `tests/shadow_gpu.rs`.

use super::*;
use crate::link::merge_runtime;
use crate::test_support::{assert_sound, parse_clean};

const FIXTURES: [(&str, &str); 6] = [
    ("loop_sum", include_str!("../../../tests/fixtures/loop_sum.default.ptx")),
    ("divsqrt fast", include_str!("../../../tests/fixtures/divsqrt.fast.ptx")),
    ("divsqrt strict", include_str!("../../../tests/fixtures/divsqrt.strict.ptx")),
    ("ray_step", include_str!("../../../tests/fixtures/ray_step.default.ptx")),
    ("calls", include_str!("../../../tests/fixtures/calls.default.ptx")),
    ("profile", include_str!("../../../tests/fixtures/count/profile.ptx")),
];

/// The shadow runtime compiled by NVRTC for sm_90, or `None` (skip) without NVRTC.
pub(super) fn shadow_runtime() -> Option<String> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let arch = mantissa_gpu::Arch::new(9, 0);
    Some(
        mantissa_gpu::runtime::compile(&nvrtc, &mantissa_gpu::runtime::SHADOW, arch)
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

#[test]
fn smoke_print() {
    let m = parse_clean("profile", FIXTURES[5].1);
    let out = instrument(&m, &ShadowOptions::all()).unwrap();
    println!("{}", out.module);
    let rt = shadow_runtime().unwrap();
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{e}"));
    assert_sound("profile", &merged);
}
