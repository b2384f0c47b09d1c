//! Whether two runs' shadow statistics agree: a run's against the CPU oracle's
//! ([`assert_agree`]), and the shadow values' `_once` forms against thread records
//! ([`assert_same_values`]). Shared by the GPU and interpreter tests here and in crates/shadow.

#![allow(dead_code)] // Each including test uses its part.

// The including test module imports these from mantissa_ptx::pass::{shadow, shadow_values}.
use super::{ErrorStats, ShadowReport, SiteStats, ValueStats};

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
