//! What several of this crate's test files share: the CUDA tools and the shipped examples.
#![allow(dead_code)] // each test file uses its own part

pub mod memo;

use std::path::{Path, PathBuf};

/// ptxas and nvdisasm, or `None` (skip) without them, unless `MANTISSA_REQUIRE_NVDISASM=1`.
pub fn tools_or_skip() -> Option<(PathBuf, PathBuf)> {
    match (
        mantissa_gpu::cuda_tool("ptxas"),
        mantissa_gpu::cuda_tool("nvdisasm"),
    ) {
        (Some(p), Some(d)) => Some((p, d)),
        _ => {
            assert!(
                std::env::var("MANTISSA_REQUIRE_NVDISASM").as_deref() != Ok("1"),
                "ptxas or nvdisasm not found but MANTISSA_REQUIRE_NVDISASM=1"
            );
            eprintln!("skipped: no ptxas or nvdisasm");
            None
        }
    }
}

/// Every shipped example spec (tests run in the crate's directory).
pub fn example_specs() -> Vec<PathBuf> {
    let root = Path::new("../../examples");
    let tomls = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|f| f.ok().map(|f| f.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect()
    };
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root.join("kernels"))
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_dir())
        .flat_map(|dir| tomls(&dir))
        .collect();
    specs.extend(tomls(&root.join("shadow")));
    specs.extend(tomls(&root.join("diff/projector")));
    specs.sort();
    assert!(specs.len() >= 13, "the examples: {specs:?}");
    specs
}
