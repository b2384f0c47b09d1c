//! Shadow instrumentation, part 1: the **demotion error** of every f64 arithmetic instruction
//! and the **exceptions** (NaN, ±inf, subnormal results, division by zero) of every f32 and f64
//! arithmetic instruction, measured on the GPU over every thread and execution and aggregated
//! per static instruction into one module global, [`SHADOW_GLOBAL`].
//!
//! **Sites.** Every floating-point arithmetic instruction of every function with a body, in
//! module and text order: `add sub mul fma mad div rcp sqrt rsqrt` and the approximate functions
//! (`sin cos ex2 lg2 tanh`) on `.f32`/`.f64`, and conversions to `.f32`/`.f64`, classified by
//! [`crate::op`] only. Site `k` is the `k`-th candidate of the module whatever
//! [`ShadowOptions::only`] instruments, so a caller splitting a kernel over several runs adds up
//! reports site by site. Each is addressed by its [`Site`].
//!
//! **Demotion error** (seed 002 Eq. 2) at f64 `add sub mul fma/mad div rcp sqrt rsqrt`: right
//! after the instruction, under its guard, its f32 form ([`super::demote`]'s plan: the same f32
//! form the demotion pass would write) is evaluated on the operands rounded to f32 (to nearest;
//! the roundings are taken *before* the instruction, so a destination that is also an operand
//! is no problem), widened back exactly, and the runtime records, per execution:
//! - `r64` or `r32` NaN or ±inf (an f32 form that overflowed included): [`ErrorStats::non_finite`];
//! - otherwise `r64 = ±0` (the relative error is undefined): [`ErrorStats::zero_reference`];
//! - otherwise `e = |r32 − r64| / |r64|`, into [`ErrorStats::count`], [`ErrorStats::sum`] and
//!   [`ErrorStats::max`], computed in f64 from `d = |dsub_rn(r32, r64)|` and `a = |r64|`: where
//!   2^-896 ≤ a < 2^1021 without a correctly rounded division (an approximate reciprocal, one
//!   Newton step, one corrected quotient: `instrument/quotient.rs` has the sequence and its
//!   arithmetic), elsewhere as `ddiv_rn(d, a)`. **`e` is the correctly rounded `d/a` except
//!   where `d/a` lies within a relative 2^-79.75 of a midpoint between two doubles** (where it
//!   may be the other neighbour), **and always one of the two doubles around `d/a`**
//!   (faithful; `d/a` itself when that is a double, as 1 for `r32 = 0`). The 2^-79.75 takes the
//!   refined reciprocal within 2^-39.88, as measured on the H200 (docs/BENCHMARKS.md), not a
//!   documented bound; faithfulness holds for any reciprocal within 2^-14. Quotients in the
//!   band are rare but not only by chance: `r64 = 1 − 2^-53` with `r32 = 1` is one (`d/a` lies
//!   2^-106 above a midpoint; with the interpreter's model of the reciprocal `e` is the double
//!   below, the division's the double above). Either way `e` is the exact relative error
//!   within a relative 2^-52 + 2^-79. `e` can exceed 1 (a cancellation the f32
//!   form gets wrong) and, for a subnormal `r64`, overflow to +inf.
//!
//! So `count + zero_reference + non_finite` is the number of executions.
//!
//! *How*: sites inside loops accumulate per thread (the sum added with `add.rn.f64` in
//! execution order, the maximum by a comparison and a select), the
//! [`ACCUMULATED_PER_FUNCTION`] deepest in registers, the others in a per-thread `.local`
//! array (one 16-byte load and store per execution); their executions are counted once per
//! execution of their basic block, by a counter that the block's unguarded sites share (a
//! guarded site has its own), and the record's first word holds executions, so that the
//! measured count is derived ([`ShadowReport::decode`]). After each execution: the f32 form,
//! the reciprocal sequence, two predicated adds, no call and no branch (but a guarded site's
//! jump over its code where the guard is false). An execution is *rare* where `|r64|` is
//! outside the quotient's range (which takes in `r64 = ±0` and non-finite `r64`) or `r32` is
//! not finite: it adds nothing there, and the sites' *groups* (at most 4, cut as the exceptions' are,
//! below) each branch once, where some execution was rare, to an out-of-line rare path (after
//! the function's last instruction, jumping back), which counts a zero reference or a
//! non-finite execution by one `red.global.add.u64`, or divides and accumulates.
//! Before every `ret`/`exit` (under its guard; and at the end of a body that control can run
//! off) the totals are flushed by [`FLUSH_FUNCTION`], one atomic per word per warp. Sites
//! outside loops, which run once per call of their function, call [`DEMOTION_FUNCTION`] per
//! execution, and [`inline_runtime`] puts its body in place of each call (no call ABI, no
//! `match.any`: a warp's active lanes there are all at that site; two `redux.sync` for the
//! maximum, shuffles for the sum, one atomic per word by one lane).
//! Either way the statistics are the ones above: counts and maxima exact, sums in an order that
//! only changes their rounding.
//!
//! **Exceptions** at every site: after the instruction (and only where its guard held), a
//! result that is zero or normal is fine; any other result (NaN, ±inf, subnormal) is classified
//! and counted, per execution. The test is branch-free: the sites of one straight-line *group*
//! (a run of about 8 within a basic block, ended before the block's terminator and before any
//! instruction that redefines a register the group's classification reads: a result, an
//! operand, a guard) fold the exponent fields of their results into one unsigned minimum (two
//! integer instructions per f64 site, four per f32 site), and one comparison and one branch per group go to an
//! out-of-line slow path (after the function's last instruction) when some result had the
//! exponent field of a NaN, an infinity, a subnormal or a zero. The slow path tests each site
//! of the group exactly (`testp.normal`, `setp.eq.or` with zero), counts those that were not
//! fine, and returns; a group with an exact f64 zero result takes it and counts nothing. *Origin*
//! means the result is NaN (±inf) while no operand was NaN (±inf): the first place a NaN or
//! infinity appears; otherwise the result *propagated* one. Division by zero: a `div` whose divisor, or an `rcp`
//! whose operand, is ±0 by its bits (a subnormal divisor of a `.ftz` operation is not counted,
//! though the instruction treats it as zero; the infinite result is). Operands that the
//! instruction overwrites are saved before it. A subnormal result is one the instruction wrote
//! (a `.ftz` instruction writes none).
//!
//! **Left unread**: a product (an unrounded `mul`, or an f32 `div.approx`/`div.full`/
//! `rcp.approx`, which ptxas ends with an `FMUL`) that feeds an unrounded `add`/`sub` may be
//! fused by ptxas into one FMA; those instructions and every reader of the product are not
//! measured (a note says so), since any added read could change what ptxas fuses and so the
//! program's bits.
//!
//! **The global**: per site, [`COPIES`] copies side by side of its record of [`WORDS_PER_SITE`]
//! little-endian 8-byte words (see [`Word`]), counts as u64, the sum and the maximum as f64; the
//! runtime `crates/gpu/cuda/mantissa_shadow.cuh` (`mantissa_gpu::runtime::SHADOW`) aggregates
//! within the warp before one atomic per word into the copy of the warp's SM (fewer warps
//! contend for one address), the inline per-thread atomics go to copy 0, and
//! [`ShadowReport::decode`] combines the copies. The
//! instrumented module calls `mantissa_shadow_demotion`, `mantissa_shadow_flush` and
//! `mantissa_shadow_exception`, which
//! [`crate::link::merge_runtime`] supplies; the instrumented kernels compute the same bits as the
//! kernels as written.

pub(crate) mod instrument;
#[cfg(test)]
mod interp_tests;
pub mod oracle;
#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
mod quotient_tests;
#[cfg(test)]
mod tests;

use super::{Outcome, Pass, PassError, Report};
use crate::model::{InstId, Module};
use crate::op::ValueType;
use crate::rewrite::RewriteError;
use crate::site::Site;
use serde::Serialize;

#[cfg(test)]
use instrument::instrument_with;
pub use instrument::{instrument, ACCUMULATED_PER_FUNCTION};

/// The name of the per-site statistics array; `mantissa_shadow.cuh` declares it `extern`.
pub const SHADOW_GLOBAL: &str = "__mantissa_shadow";
/// The runtime function the demotion error calls at sites outside loops, `(site: u32, r64: f64,
/// r32 widened: f64)`; [`inline_runtime`] must inline it (its body aggregates the active lanes,
/// which are all at one site only in an inlined copy).
pub const DEMOTION_FUNCTION: &str = "mantissa_shadow_demotion";
/// The runtime function that adds one thread's accumulated demotion error of a site to the
/// global, at every exit of the function: `(site: u32, count: u64, sum: f64, max: f64)`.
pub const FLUSH_FUNCTION: &str = "mantissa_shadow_flush";
/// The runtime function the exception slow path calls: `(site: u32, flags: u32)` ([`flags`]).
pub const EXCEPTION_FUNCTION: &str = "mantissa_shadow_exception";

/// Copies of each site's record in the global: a warp adds into copy `%smid mod COPIES`.
pub const COPIES: u32 = 16;

/// 8-byte words of the global per site.
pub const WORDS_PER_SITE: u32 = 11;

/// The words of one site's record, in order (the runtime's `MANTISSA_SHADOW_*` indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Word {
    /// Demotion: executions of the site (u64), measured or not: the count of those with a
    /// finite relative error is this less [`Word::ZeroReference`] and [`Word::NonFinite`]
    /// ([`ShadowReport::decode`]), so that a loop's sites can share one execution counter.
    Executions = 0,
    /// Demotion: the sum of those errors (f64).
    Sum = 1,
    /// Demotion: their maximum (f64, 0 before any).
    Max = 2,
    /// Demotion: executions with `r64 = ±0` (u64).
    ZeroReference = 3,
    /// Demotion: executions with a NaN or infinite `r64` or `r32` (u64).
    NonFinite = 4,
    /// Exceptions: NaN results (u64).
    Nan = 5,
    /// Exceptions: NaN results from no NaN operand (u64).
    NanOrigin = 6,
    /// Exceptions: ±inf results (u64).
    Inf = 7,
    /// Exceptions: ±inf results from no infinite operand (u64).
    InfOrigin = 8,
    /// Exceptions: divisions (div, rcp) by ±0 (u64).
    DivByZero = 9,
    /// Exceptions: subnormal results (u64).
    Subnormal = 10,
}

/// The bits of the `flags` argument of [`EXCEPTION_FUNCTION`], as the instrumented slow path
/// computes them and `mantissa_shadow.cuh` reads them.
pub mod flags {
    /// The result is NaN.
    pub const NAN: u32 = 1;
    /// The result is ±inf.
    pub const INF: u32 = 2;
    /// The result is subnormal.
    pub const SUBNORMAL: u32 = 4;
    /// A division (div, rcp) by ±0.
    pub const DIV_BY_ZERO: u32 = 8;
    /// Some floating-point operand is NaN.
    pub const OPERAND_NAN: u32 = 16;
    /// Some floating-point operand is ±inf.
    pub const OPERAND_INF: u32 = 32;
}

/// What to measure, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShadowOptions {
    /// Measure the demotion error at f64 arithmetic sites.
    pub demotion: bool,
    /// Count exceptions at every site.
    pub exceptions: bool,
    /// Instrument only the sites with these indices (every site when `None`): a kernel that
    /// exceeds resources once instrumented is measured over several runs.
    pub only: Option<std::ops::Range<u32>>,
}

impl ShadowOptions {
    /// Both analyses, every site.
    pub fn all() -> ShadowOptions {
        ShadowOptions {
            demotion: true,
            exceptions: true,
            only: None,
        }
    }
}

/// One candidate instruction (see the module docs), in index order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShadowSite {
    /// Its record in the global: words `WORDS_PER_SITE * index ..`.
    pub index: u32,
    /// Its address: function, file, line, ordinal, inlined chain.
    pub site: Site,
    /// Its id in the module given to [`instrument`] (kept in the instrumented one).
    pub inst: InstId,
    /// Its full opcode (`fma.rn.f64`).
    pub opcode: String,
    /// The type of its result: F32 or F64.
    pub value_type: ValueType,
    /// The demotion error is measured here (requested, f64 arithmetic, an f32 form exists).
    pub demotion: bool,
    /// Exceptions are counted here (requested).
    pub exceptions: bool,
    /// Inside [`ShadowOptions::only`]: the code was inserted in this run.
    pub instrumented: bool,
}

/// What [`instrument`] did: the global, its layout, and every site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShadowReport {
    /// The statistics array's name ([`SHADOW_GLOBAL`]).
    pub global: String,
    /// 8-byte words per site ([`WORDS_PER_SITE`]).
    pub words_per_site: u32,
    /// The options it ran with.
    pub options: ShadowOptions,
    /// Every candidate, instrumented or not, in index order.
    pub sites: Vec<ShadowSite>,
    /// What a user should know: f64 instructions without an f32 form, sites outside `only`.
    pub notes: Vec<String>,
}

/// The demotion error of one site over a run (see the module docs for each count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Executions with a finite relative error.
    pub count: u64,
    /// The sum of their relative errors.
    pub sum: f64,
    /// The largest (0 when `count` is 0).
    pub max: f64,
    /// Executions whose f64 result is ±0.
    pub zero_reference: u64,
    /// Executions whose f64 result or f32 form is NaN or ±inf.
    pub non_finite: u64,
}

impl ErrorStats {
    /// The statistics of two runs together: counts and sums added, the larger maximum.
    pub fn added(&self, o: &ErrorStats) -> ErrorStats {
        ErrorStats {
            count: self.count + o.count,
            sum: self.sum + o.sum,
            max: self.max.max(o.max),
            zero_reference: self.zero_reference + o.zero_reference,
            non_finite: self.non_finite + o.non_finite,
        }
    }

    /// The mean relative error over `count` (0 without any).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
}

/// The exceptions of one site over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExceptionCounts {
    /// NaN results.
    pub nan: u64,
    /// Of those, results from no NaN operand.
    pub nan_origin: u64,
    /// ±inf results.
    pub inf: u64,
    /// Of those, results from no infinite operand.
    pub inf_origin: u64,
    /// Divisions (div, rcp) by ±0.
    pub div_by_zero: u64,
    /// Subnormal results.
    pub subnormal: u64,
}

impl ExceptionCounts {
    /// The counts of two runs together.
    pub fn added(&self, o: &ExceptionCounts) -> ExceptionCounts {
        ExceptionCounts {
            nan: self.nan + o.nan,
            nan_origin: self.nan_origin + o.nan_origin,
            inf: self.inf + o.inf,
            inf_origin: self.inf_origin + o.inf_origin,
            div_by_zero: self.div_by_zero + o.div_by_zero,
            subnormal: self.subnormal + o.subnormal,
        }
    }

    /// Whether nothing was counted.
    pub fn is_clean(&self) -> bool {
        *self == ExceptionCounts::default()
    }
}

/// What one site measured: `None` for an analysis not measured there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SiteStats {
    /// The demotion error, where [`ShadowSite::demotion`] and [`ShadowSite::instrumented`].
    pub demotion: Option<ErrorStats>,
    /// The exceptions, where [`ShadowSite::exceptions`] and [`ShadowSite::instrumented`].
    pub exceptions: Option<ExceptionCounts>,
}

impl SiteStats {
    /// The statistics of two runs together (two launches, say): what the global adds up when
    /// both run on one device ([`ErrorStats::added`], [`ExceptionCounts::added`]).
    pub fn added(&self, o: &SiteStats) -> SiteStats {
        fn both<T: Copy>(a: Option<T>, b: Option<T>, f: impl Fn(&T, &T) -> T) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(f(&a, &b)),
                (a, b) => a.or(b),
            }
        }
        SiteStats {
            demotion: both(self.demotion, o.demotion, ErrorStats::added),
            exceptions: both(self.exceptions, o.exceptions, ExceptionCounts::added),
        }
    }
}

/// Why the pass cannot instrument, or bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShadowError {
    /// The module already has a name the pass needs (instrumented twice, or a user name).
    #[error(
        "the module already has a '{0}': it is instrumented already, or the name is the user's"
    )]
    NameTaken(String),
    /// An edit failed (a bug of this pass: it only makes edits the rewriter accepts).
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
    /// The merged runtime could not be inlined (a bug: the runtime is written for it).
    #[error(transparent)]
    Inline(#[from] crate::pass::inline::InlineError),
    /// Bytes read back that are not the statistics array.
    #[error("{got} bytes read back for a shadow array of {expected} bytes")]
    Bytes {
        /// Bytes given.
        got: usize,
        /// Bytes expected ([`ShadowReport::global_bytes`]).
        expected: usize,
    },
}

/// Inlines the per-execution runtime function ([`DEMOTION_FUNCTION`]) into every site
/// that calls it, in a module [`instrument`] wrote and [`crate::link::merge_runtime`] merged
/// with the runtime: a call per execution would pay the call's ABI at every site of
/// straight-line code. The flush and the exception slow path stay calls (once per exit, and
/// rare).
pub fn inline_runtime(merged: &Module) -> Result<Module, ShadowError> {
    let calls = merged.functions().any(|f| {
        f.body
            .iter()
            .flatten()
            .any(|s| matches!(s, crate::model::Statement::Inst(i) if i.decode().is_call() && i.operands.iter().any(|o| matches!(o, crate::model::Operand::Symbol(n) if n == DEMOTION_FUNCTION))))
    });
    if !calls {
        return Ok(merged.clone());
    }
    Ok(crate::pass::inline::inline(merged, &[DEMOTION_FUNCTION])?.module)
}

impl ShadowReport {
    /// The size of the global in bytes (at least one record: PTX has no empty arrays).
    pub fn global_bytes(&self) -> usize {
        8 * self.words_per_site as usize * COPIES as usize * self.sites.len().max(1)
    }

    /// The statistics per site, from the bytes of the global as read back from the device
    /// (`Gpu::read_symbol` of [`ShadowReport::global`]); one per site, in index order.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<SiteStats>, ShadowError> {
        if bytes.len() != self.global_bytes() {
            return Err(ShadowError::Bytes {
                got: bytes.len(),
                expected: self.global_bytes(),
            });
        }
        let words = self.words_per_site as usize;
        Ok(self
            .sites
            .iter()
            .map(|s| {
                let copies = COPIES as usize;
                let copy_word = |c: usize, w: Word| {
                    let k = 8 * ((s.index as usize * copies + c) * words + w as usize);
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&bytes[k..k + 8]);
                    u64::from_le_bytes(b)
                };
                // Counts add over the copies; the maximum (a non-negative double's bits)
                // is the largest; the sum adds as doubles, in copy order.
                let word = |w: Word| match w {
                    Word::Max => (0..copies).map(|c| copy_word(c, w)).max().unwrap_or(0),
                    _ => (0..copies).map(|c| copy_word(c, w)).sum(),
                };
                let float = |w: Word| match w {
                    Word::Sum => (0..copies).map(|c| f64::from_bits(copy_word(c, w))).sum(),
                    _ => f64::from_bits(word(w)),
                };
                // Every execution is measured, a zero reference or not finite: the runtime
                // counts all three, so the first is never below the other two.
                let measured = word(Word::Executions)
                    .saturating_sub(word(Word::ZeroReference))
                    .saturating_sub(word(Word::NonFinite));
                SiteStats {
                    demotion: (s.demotion && s.instrumented).then(|| ErrorStats {
                        count: measured,
                        sum: float(Word::Sum),
                        max: float(Word::Max),
                        zero_reference: word(Word::ZeroReference),
                        non_finite: word(Word::NonFinite),
                    }),
                    exceptions: (s.exceptions && s.instrumented).then(|| ExceptionCounts {
                        nan: word(Word::Nan),
                        nan_origin: word(Word::NanOrigin),
                        inf: word(Word::Inf),
                        inf_origin: word(Word::InfOrigin),
                        div_by_zero: word(Word::DivByZero),
                        subnormal: word(Word::Subnormal),
                    }),
                }
            })
            .collect())
    }

    /// The site of instruction `inst`, if it is a candidate.
    pub fn site_of(&self, inst: InstId) -> Option<&ShadowSite> {
        self.sites.iter().find(|s| s.inst == inst)
    }
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Instrumented {
    /// The instrumented module; merge the runtime (`mantissa_gpu::runtime::SHADOW`) before
    /// loading it.
    pub module: Module,
    /// Where each record comes from.
    pub report: ShadowReport,
}

/// The pass as a [`Pass`], for pipelines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadow {
    /// What to measure.
    pub options: ShadowOptions,
}

impl Shadow {
    /// The pass with `options`.
    pub fn new(options: ShadowOptions) -> Shadow {
        Shadow { options }
    }
}

impl Pass for Shadow {
    fn name(&self) -> String {
        "shadow".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let out = instrument(module, &self.options).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let r = &out.report;
        let on =
            |f: fn(&ShadowSite) -> bool| r.sites.iter().filter(|s| s.instrumented && f(s)).count();
        let summary = format!(
            "{} sites: demotion error at {}, exceptions at {}",
            r.sites.len(),
            on(|s| s.demotion),
            on(|s| s.exceptions)
        );
        let notes = r.notes.clone();
        Ok(Outcome {
            report: Report::new("shadow", summary, notes, out.report),
            module: out.module,
        })
    }
}
