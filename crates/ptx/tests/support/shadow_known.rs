//! The shadow pass's known cases (`fixtures/shadow/known.cu`), shared by the CPU oracle's tests
//! (`src/pass/shadow/oracle_tests.rs`) and the GPU test (`tests/shadow_gpu.rs`): the kernels'
//! arguments, and statistics per source line.

#![allow(dead_code)] // Each including test uses its part.

// The including test module imports these from mantissa_ptx::pass::shadow.
use super::{ErrorStats, ExceptionCounts, ShadowReport, SiteStats};

/// The CUDA source of the known cases.
pub const KNOWN: &str = include_str!("../fixtures/shadow/known.cu");
/// Its name, as NVRTC is told and `.file` then says.
pub const KNOWN_NAME: &str = "known.cu";

/// The cases the GPU test launches (and the oracle's tests run), each on a few blocks.
pub fn gpu_cases() -> [Case; 5] {
    [
        one_plus_x(4, 64),
        one_plus_x_varied(3, 96),
        serial_sum(),
        square_plus(2, 64),
        exceptions(2, 64),
    ]
}

/// The 1-based line of `known.cu` that ends with `// @marker`.
pub fn line_of(marker: &str) -> u32 {
    let tag = format!("// @{marker}");
    let found: Vec<u32> = KNOWN
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&tag))
        .map(|(k, _)| k as u32 + 1)
        .collect();
    assert_eq!(found.len(), 1, "marker {marker} in known.cu");
    found[0]
}

/// One kernel argument.
#[derive(Debug, Clone)]
pub enum Param {
    /// An input array of doubles.
    F64s(Vec<f64>),
    /// An input array of floats.
    F32s(Vec<f32>),
    /// A zeroed output array of this many doubles.
    OutF64(usize),
    /// A zeroed output array of this many floats.
    OutF32(usize),
    /// An int.
    Int(i32),
}

/// One launch of a known kernel.
#[derive(Debug, Clone)]
pub struct Case {
    /// The kernel (extern "C": its PTX name).
    pub kernel: &'static str,
    /// Blocks and threads per block, in x.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Its arguments.
    pub params: Vec<Param>,
}

/// `v` repeated for `n` threads.
fn each(n: usize, v: f64) -> Vec<f64> {
    vec![v; n]
}

/// `(1 + x) − 1` for x = 2^-30 on `n` threads.
pub fn one_plus_x(blocks: u32, threads: u32) -> Case {
    let n = (blocks * threads) as usize;
    Case {
        kernel: "one_plus_x",
        blocks,
        threads,
        params: vec![
            Param::F64s(each(n, 2f64.powi(-30))),
            Param::OutF64(n),
            Param::Int(n as i32),
        ],
    }
}

/// `(1 + x) − 1` for x varying per thread (so lanes of a warp have different errors), on
/// `blocks * threads − 17` threads (so the last warp is partly idle).
pub fn one_plus_x_varied(blocks: u32, threads: u32) -> Case {
    let n = (blocks * threads) as usize - 17;
    let x = (0..n)
        .map(|i| (i as f64 * 0.37).sin() * 2f64.powi(-(i as i32 % 40)))
        .collect();
    Case {
        kernel: "one_plus_x",
        blocks,
        threads,
        params: vec![Param::F64s(x), Param::OutF64(n), Param::Int(n as i32)],
    }
}

/// The serial sum of [1, 2^-30, −1, −2^-30] (exact sum 0).
pub fn serial_sum() -> Case {
    let t = 2f64.powi(-30);
    Case {
        kernel: "serial_sum",
        blocks: 1,
        threads: 32,
        params: vec![
            Param::F64s(vec![1.0, t, -1.0, -t]),
            Param::OutF64(1),
            Param::Int(4),
        ],
    }
}

/// `a·a + b` for a = 1 + 2^-20, b = −(1 + 2^-19): exactly 2^-40.
pub fn square_plus(blocks: u32, threads: u32) -> Case {
    let n = (blocks * threads) as usize;
    Case {
        kernel: "square_plus",
        blocks,
        threads,
        params: vec![
            Param::F64s(each(n, 1.0 + 2f64.powi(-20))),
            Param::F64s(each(n, -(1.0 + 2f64.powi(-19)))),
            Param::OutF64(n),
            Param::Int(n as i32),
        ],
    }
}

/// The exceptions kernel on `n` threads (`blocks * threads`).
pub fn exceptions(blocks: u32, threads: u32) -> Case {
    let n = (blocks * threads) as usize;
    Case {
        kernel: "exceptions",
        blocks,
        threads,
        params: vec![
            Param::F64s(each(n, 0.0)),
            Param::F64s(each(2 * n, 1e-160)),
            Param::F32s(vec![1e-20; 2 * n]),
            Param::OutF64(3 * n),
            Param::OutF32(n),
            Param::Int(n as i32),
        ],
    }
}

/// Statistics summed over the sites of one source line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LineStats {
    /// Instrumented sites on the line.
    pub sites: usize,
    /// Their demotion errors (counts and sums added, maxima maxed).
    pub demotion: ErrorStats,
    /// Their exceptions, added.
    pub exceptions: ExceptionCounts,
}

/// The statistics of `kernel`'s sites on line `line` of known.cu.
pub fn on_line(report: &ShadowReport, stats: &[SiteStats], kernel: &str, line: u32) -> LineStats {
    let mut out = LineStats::default();
    for (s, st) in report.sites.iter().zip(stats) {
        if s.site.function != kernel || s.site.line != line || !s.site.file.ends_with(KNOWN_NAME) {
            continue;
        }
        out.sites += 1;
        if let Some(d) = st.demotion {
            out.demotion.count += d.count;
            out.demotion.sum += d.sum;
            out.demotion.max = out.demotion.max.max(d.max);
            out.demotion.zero_reference += d.zero_reference;
            out.demotion.non_finite += d.non_finite;
        }
        if let Some(x) = st.exceptions {
            let e = &mut out.exceptions;
            e.nan += x.nan;
            e.nan_origin += x.nan_origin;
            e.inf += x.inf;
            e.inf_origin += x.inf_origin;
            e.div_by_zero += x.div_by_zero;
            e.subnormal += x.subnormal;
        }
    }
    out
}

/// The lines of `kernel` with any exception counted, with their counts.
pub fn exception_lines(
    report: &ShadowReport,
    stats: &[SiteStats],
    kernel: &str,
) -> Vec<(u32, ExceptionCounts)> {
    let mut lines: Vec<u32> = report
        .sites
        .iter()
        .filter(|s| s.site.function == kernel)
        .map(|s| s.site.line)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
        .into_iter()
        .map(|l| (l, on_line(report, stats, kernel, l).exceptions))
        .filter(|(_, x)| *x != ExceptionCounts::default())
        .collect()
}

/// What the exceptions kernel must report on `n` threads: exactly these lines.
pub fn exceptions_expected(n: u64) -> Vec<(u32, ExceptionCounts)> {
    let none = ExceptionCounts::default();
    let mut want = vec![
        (
            line_of("nan"),
            ExceptionCounts {
                nan: n,
                nan_origin: n,
                div_by_zero: n,
                ..none
            },
        ),
        (
            line_of("inf"),
            ExceptionCounts {
                inf: n,
                inf_origin: n,
                div_by_zero: n,
                ..none
            },
        ),
        (
            line_of("subnormal"),
            ExceptionCounts {
                subnormal: n,
                ..none
            },
        ),
        (
            line_of("subnormal_f32"),
            ExceptionCounts {
                subnormal: n,
                ..none
            },
        ),
        (
            line_of("nan_propagated"),
            ExceptionCounts { nan: n, ..none },
        ),
        (
            line_of("inf_propagated"),
            ExceptionCounts { inf: n, ..none },
        ),
    ];
    want.sort_by_key(|w| w.0);
    want
}
