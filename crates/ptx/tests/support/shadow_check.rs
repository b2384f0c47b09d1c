//! What the shadow pass's GPU test (`tests/shadow_gpu.rs`) and its interpreter twin
//! (`tests/shadow_interp.rs`) both check: the CPU oracle's statistics of a known case, and
//! whether a run's statistics agree with them.

#![allow(dead_code)] // Each including test uses its part.

// The including test module imports these.
use super::known::{Case, Param};
use super::{interp, oracle, ErrorStats, Launch, Memory, Module, ShadowOptions};
use super::{ShadowReport, SiteStats, ValueStats};

/// `case`'s arguments in the interpreter's `mem`: inputs uploaded, outputs zeroed.
pub fn interp_args(mem: &mut Memory, case: &Case) -> Vec<interp::Arg> {
    case.params
        .iter()
        .map(|p| match p {
            Param::F64s(v) => interp::Arg::u64(mem.f64s(v)),
            Param::F32s(v) => interp::Arg::u64(mem.f32s(v)),
            Param::OutF64(n) => interp::Arg::u64(mem.alloc(8 * n)),
            Param::OutF32(n) => interp::Arg::u64(mem.alloc(4 * n)),
            Param::Int(k) => interp::Arg::i32(*k),
        })
        .collect()
}

/// What the oracle says for `case` on the original module.
pub fn oracle_of(m: &Module, case: &Case, options: &ShadowOptions) -> Vec<SiteStats> {
    let mut mem = Memory::new();
    let args = interp_args(&mut mem, case);
    let launch = Launch::linear(case.blocks, case.threads);
    oracle::expected(m, case.kernel, launch, &args, &mut mem, options)
        .unwrap_or_else(|e| panic!("{}: oracle: {e}", case.kernel))
}

/// Counts and maxima exactly; sums within the reordering bound of `count` non-negative terms
/// (`count · 2^-52 · sum`, generous for first order).
pub fn assert_agree(what: &str, report: &ShadowReport, got: &[SiteStats], cpu: &[SiteStats]) {
    assert_eq!(got.len(), cpu.len(), "{what}");
    for ((s, g), c) in report.sites.iter().zip(got).zip(cpu) {
        let at = format!("{what}: site {} {} ({})", s.index, s.site, s.opcode);
        assert_eq!(g.exceptions, c.exceptions, "{at}: exceptions");
        match (g.demotion, c.demotion) {
            (Some(g), Some(c)) => {
                let exact =
                    |x: ErrorStats| (x.count, x.max.to_bits(), x.zero_reference, x.non_finite);
                assert_eq!(
                    exact(g),
                    exact(c),
                    "{at}: demotion {g:?} vs the oracle's {c:?}"
                );
                let bound = g.count as f64 * f64::EPSILON * c.sum;
                assert!(
                    g.sum == c.sum || (g.sum - c.sum).abs() <= bound,
                    "{at}: sum {} vs the oracle's {} (bound {bound})",
                    g.sum,
                    c.sum
                );
            }
            (g, c) => assert_eq!(g, c, "{at}: demotion"),
        }
    }
}

/// Every count and maximum equal; sums within a relative 1e-12 (their order is the device's).
pub fn assert_same_values(what: &str, once: &[ValueStats], records: &[ValueStats]) {
    assert_eq!(once.len(), records.len(), "{what}");
    let close = |a: f64, b: f64| a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
    for (k, (a, b)) in once.iter().zip(records).enumerate() {
        let exact = |s: &ValueStats| {
            (
                s.executions,
                (s.local.count, s.local.max.to_bits()),
                (s.local.zero_reference, s.local.non_finite),
                (s.accumulated.count, s.accumulated.max.to_bits()),
                (s.accumulated.zero_reference, s.accumulated.non_finite),
                (s.cancellations, s.cancel_max_bits, s.reseeded),
            )
        };
        assert_eq!(exact(a), exact(b), "{what}: record {k}");
        assert!(
            close(a.local.sum, b.local.sum) && close(a.accumulated.sum, b.accumulated.sum),
            "{what}: record {k}: sums {a:?} against {b:?}"
        );
    }
}
