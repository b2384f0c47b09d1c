//! One of the shipped example programs as NVRTC can compile it: the counting pass's tests run
//! it end to end (CPU: ptxas; GPU: launched, counted, compared with the program as written).

/// `examples/kernels/gauss/gauss.cu`: a `main()` with host headers (nvcc's), and four kernels.
pub const GAUSS: &str = include_str!("../../../../examples/kernels/gauss/gauss.cu");

/// The device part of an example: the file without its `#include <...>` lines (host headers
/// NVRTC cannot open; the kernels use none of them) and without everything from its host random
/// generator on (`main` and its helpers). What is left is the file's own kernels, unchanged.
pub fn device_code(cu: &str) -> String {
    let end = cu
        .find("static unsigned long long rng_state")
        .expect("the examples start their host part with the rng state");
    cu[..end]
        .lines()
        .filter(|l| !l.starts_with("#include <"))
        .map(|l| format!("{l}\n"))
        .collect()
}
