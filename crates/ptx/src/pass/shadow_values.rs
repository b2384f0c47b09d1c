//! Shadow instrumentation, part 2: **higher-precision shadow values** (issue 21, analysis 2).
//! Every f64 register carries a double-word (f64x2) shadow and every f32 register an f64
//! shadow; the instrumented kernel propagates them through arithmetic, conversions, moves and
//! memory with mantissa's double-word arithmetic (`crates/gpu/cuda/mantissa_shadow_values.cuh`,
//! `mantissa_gpu::runtime::SHADOW_VALUES`, built on the CUDA twin `mantissa.cuh`), and measures
//! per site how far each result is from its shadow.
//!
//! **Sites** are [`super::shadow`]'s, with the same indices and [`Site`] addresses (its
//! `sites` enumeration is reused), so the command merges the two reports by index. This pass
//! instruments the original program, never one another shadow pass rewrote.
//!
//! **Propagation.** At `add sub mul fma/mad div rcp sqrt rsqrt` (f32 and f64, `.approx` forms
//! included: the shadow is the exact operation) and float-to-float `cvt` (rounding to an integral
//! value too), the runtime's `mantissa_sv_<op>_<type>` ([`site_function`]) computes the result's
//! shadow from the operands' shadows: in double-word for an f64 result, as the exact operation
//! rounded once to a double for an f32 one (its shadow is one f64).
//!
//! **Cost.** Nothing is called per execution: after the merge, [`inline_runtime`]
//! ([`crate::pass::inline`]) replaces every call of the per-execution runtime functions by
//! their bodies, so the runtime stays one CUDA header on `mantissa.cuh`'s twin arithmetic and
//! ptxas sees straight-line code. **Outside loops** (a site, load or re-seed point that runs at
//! most once per call of its function) each execution goes to the global record at once, through
//! the runtime's [`once`] forms: the lanes executing the site together combine their
//! measurements (ballots, shuffles, `redux.sync`) and one lane adds each word with one atomic,
//! with no per-thread state (a straight-line kernel such as options needs no `.local` array, no
//! zeroing and no flush). **Inside loops** statistics accumulate per thread in a record of the
//! function's `.local` array (`ld.local`/`st.local` at constant offsets, which cannot alias the program's
//! memory; zeroed at entry by `mantissa_sv_zero`), [`THREAD_RECORD_BYTES`] each: what every
//! execution updates (the two sums, the executions, the two maxima as the high words of their
//! doubles rounded up, the site's flags) is its first 32 bytes, one `v2.f64` and one `v4.u32`
//! load and store; the counts of rare events follow and are touched only when they happen, and
//! the measured counts are derived at the flush (executions less the zero and non-finite ones).
//! Per execution that is 4 local accesses of 16 bytes instead of 14 of 8 (the cost measured in
//! docs/BENCHMARKS.md was the local traffic, not the arithmetic). Only loop instructions have a
//! slot in the array; [`SLOTS_GLOBAL`] maps slots to global records. The records are
//! flushed once per exit (`mantissa_sv_flush`, before every `ret`/`exit`, under its guard):
//! warp peers combine each word by shuffles and one lane adds it with one atomic into one of
//! [`COPIES`] copies of the record chosen by its SM, which [`ValuesReport::decode`] sums. A
//! `.local` array rather than registers for the hottest sites (as `pass::shadow` does for the
//! demotion error): a record's hot part is seven values, too many to keep in registers for many
//! sites. `mov`, `neg`, `abs`, `selp`,
//! `min`/`max` (the shadow of the operand chosen) are a few inline PTX instructions on the
//! shadow registers. Immediates and loads of kernel parameters and `.const` memory are inputs:
//! their shadow is the value. **Re-seeding** (shadow := value, counted as `reseeded`): at the
//! sites that cannot propagate (the approximate functions `sin cos ex2 lg2 tanh` as one unit,
//! conversions from integers, `cvt.sat`), and at every other definition of a float register, each
//! a [`ReseedPoint`] with its own record: loads from local memory, from global memory outside
//! the registered buffers or shared memory outside the shadow area (counted per execution), device-function parameters, bits
//! moved from integer registers, call results, atomics, anything else.
//!
//! **Memory.** Each registered buffer (the spec's floating-point buffers) has a shadow buffer
//! of twice its bytes holding per element the DIFFERENCE shadow − value (f64x2 for an f64
//! element, f64 for an f32), zero-filled before the run (zero: shadow = value, so inputs need
//! no initialisation). [`TABLE_GLOBAL`] maps addresses to shadows ([`table_bytes`]; written by
//! the host after the restore). Global and generic `ld`/`st` of f32/f64 (`.v2`/`.v4` too) read
//! and write the differences; other stores and atomics to global or generic memory zero the
//! differences they cover (the shadow of what they write is its value). **Shared memory**: a
//! kernel whose float loads or stores touch its static `.shared` variables gets a shadow area
//! in shared memory (`shared.rs`) with the same layout rule (2 bytes of difference per byte,
//! relative to the lowest variable), zeroed by the CTA at entry (then `bar.sync 0`, before any
//! of the kernel's code); `ld.shared`/`st.shared` of f32/f64 (`.v2`/`.v4` too) read and write
//! it through the runtime's `_shared` functions, other shared stores and atomics zero it.
//! Re-seeding stays where the pass cannot keep it right: dynamic (`extern`) shared memory,
//! shared memory in device functions, kernels whose shared memory something else may write
//! (a device function it calls, a generic pointer from `cvta.shared`, `cp.async` and other
//! unmodelled writers) or whose static shared memory with the area would exceed 48 KiB (a note
//! says which). Generic loads and stores through a `cvta.shared` pointer are not looked up in
//! the area (the table lookup fails: loads re-seed), hence the fallback above.
//!
//! **ptxas's contraction.** A mul→add pair ptxas may fuse into one FMA
//! ([`super::shadow`]'s `fusible_pairs` rule: such sites are the ones it leaves unmeasured) must
//! keep its bits, so the instrumentation never reads the product register: the mul's site
//! computes the product's shadow from its operands' shadows (executions only, [`how::NO_VALUE`]),
//! the add's shadow is the double-word sum of the product's and the addend's shadows (together
//! the shadow FMA of the pair), and every site or store reading the product passes no operand
//! values ([`how::NO_LOCAL`]: no local error, no cancellation there). A store of the product
//! zeroes its difference.
//!
//! **What is measured, per site** (14 little-endian words per record, [`Word`]):
//! - executions (counted per thread in 32 bits with a carry: 2^56 per function activation);
//! - the **local error** `|x − r| / |x|`: `r` the result, `x` the exact operation on the operand
//!   VALUES in double-word (exact for add, sub, mul while the product stays normal, and for
//!   conversions; within 3u² relative for fma and div, 25/8 u² for sqrt, about 13u² for rcp
//!   and rsqrt, u = 2^-53); computed as `ddiv_rn(|dw_sub_base(x, r).hi|, |x.hi|)`, so the
//!   measured error is within a relative 2^-51 of the true one plus an absolute 4u² (≈ 2^-104).
//!   Division, reciprocal and square root with operands and result in [2^-900, 2^901) take
//!   their error from the remainder instead, which one FMA computes exactly for a faithful
//!   result: `|a − r·b| / |a|`, `|1 − r·a|`, and `|a − r²| / (a + r² + (a − r²)/2)` for
//!   `sqrt(a)` (within a relative 2^-50), with no second double-word division or square root;
//!   the **maximum is reported as an upper bound within a relative 2^-20** (the thread records
//!   keep the high word of each maximum, rounded up); sums are exact sums of the measurements;
//!   `x = 0` and non-finite executions are counted apart ([`ErrorStats`]'s `zero_reference`,
//!   `non_finite`);
//! - the **accumulated error** `|r − s| / |s|` of the result against its shadow `s`, computed
//!   the same way. The shadow itself carries the double-word rounding of every operation since
//!   the value was last seeded: about `n·4u²` relative after `n` operations without cancellation
//!   (each double-word op's bound: add 3u², mul 4u², div 9.8u², sqrt 25/8 u²), so an
//!   accumulated error above ~2^-100 is the program's, not the shadow's; digits = −log10(error);
//! - **cancellations**: an add/sub/fma whose result lost ≥ 10 bits against its largest addend
//!   (exponents by value; 64 when the result is 0) while some operand carried accumulated error;
//!   count and most bits lost;
//! - **re-seeds**.

mod emit;
mod instrument;
#[cfg(test)]
mod interp_tests;
mod records;
mod shared;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;

use super::shadow::ErrorStats;
use super::{Outcome, Pass, PassError, Report};
use crate::model::{Function, FunctionKind, InstId, Module, Param, SrcLine};
use crate::op::ValueType;
use crate::rewrite::RewriteError;
use crate::site::Site;
use serde::Serialize;

pub use instrument::{instrument, instrument_with};

/// The per-record statistics array; the runtime declares it `extern`.
pub const VALUES_GLOBAL: &str = "__mantissa_values";
/// The buffer table: word 0 the number of buffers, then (address, bytes, shadow address) each.
pub const TABLE_GLOBAL: &str = "__mantissa_values_table";
/// The global record of every thread-record slot (u32), function after function; a function's
/// flush names its first entry.
pub const SLOTS_GLOBAL: &str = "__mantissa_sv_slots";
/// Buffers the table holds at most.
pub const MAX_BUFFERS: usize = 32;
/// 8-byte words per record (per copy).
pub const WORDS_PER_RECORD: u32 = 14;
/// Bytes of a thread's record in a function's `.local` array (16-aligned): the hot part every
/// execution updates (sums, executions, the maxima's high words, flags) in 32 bytes, then the
/// counts of rare events (the runtime's `MANTISSA_SV_T_*`).
pub const THREAD_RECORD_BYTES: u32 = 96;

/// Copies of the statistics per record: a warp flushes into copy `%smid mod COPIES` of each
/// record (fewer atomics on one address); [`ValuesReport::decode`] combines them.
pub const COPIES: u32 = 16;

/// The operations of the runtime's site functions (`mantissa_sv_<op>_<type>`), by [`how`] code.
const SITE_OPERATIONS: [&str; 10] = [
    "add", "sub", "mul", "fma", "div", "rcp", "sqrt", "rsqrt", "convert", "round",
];

/// The runtime's site function of operation `how_code` ([`how`]'s operation codes) with a
/// result of type f32 or f64: `(acc, how, a, ah, al, b, bh, bl, c, ch, cl, r) -> shadow`.
pub fn site_function(how_code: u32, f32: bool) -> String {
    let op = SITE_OPERATIONS[(how_code & 15) as usize % SITE_OPERATIONS.len()];
    format!("mantissa_sv_{op}_{}", if f32 { "f32" } else { "f64" })
}

/// A float load: `(acc, address, value, f32) -> shadow`.
pub const LOAD_FUNCTION: &str = "mantissa_sv_load";
/// A float store: `(address, value, hi, lo, f32)`.
pub const STORE_FUNCTION: &str = "mantissa_sv_store";
/// A store the pass cannot shadow: `(address, bytes)`.
pub const CLEAR_FUNCTION: &str = "mantissa_sv_clear";
/// A float load from shared memory: `(acc, address, first, end, area, value, f32) -> shadow`
/// (`first..end` the kernel's static shared variables, `area` its shadow area).
pub const LOAD_SHARED_FUNCTION: &str = "mantissa_sv_load_shared";
/// A float store to shared memory: `(address, first, end, area, value, hi, lo, f32)`.
pub const STORE_SHARED_FUNCTION: &str = "mantissa_sv_store_shared";
/// Another store or atomic to shared memory: `(address, first, end, area, bytes)`.
pub const CLEAR_SHARED_FUNCTION: &str = "mantissa_sv_clear_shared";
/// A kernel's shadow area zeroed by its CTA at entry, then `bar.sync 0`: `(area, bytes)`.
pub const ZERO_SHARED_FUNCTION: &str = "mantissa_sv_zero_shared";
/// A re-seed's execution: `(acc)`.
pub const RESEED_FUNCTION: &str = "mantissa_sv_reseed";
/// A function's thread records zeroed at its entry: `(acc, records)`.
pub const ZERO_FUNCTION: &str = "mantissa_sv_zero";
/// Word `w` ([`Word`]) of the global record layout for the thread record at `acc`: what the
/// flush adds; `(acc, w)`, returns a `.b64`. Called by tests that flush without warp operations.
pub const WORD_FUNCTION: &str = "mantissa_sv_word";
/// A function's thread records added to the global at an exit: `(acc, first, slots)`, slot
/// `k`'s record being entry `first + k` of [`SLOTS_GLOBAL`].
pub const FLUSH_FUNCTION: &str = "mantissa_sv_flush";

/// The form of a per-execution runtime function (a site's, [`LOAD_FUNCTION`],
/// [`LOAD_SHARED_FUNCTION`], [`RESEED_FUNCTION`]) used outside loops: its first argument is the
/// global record's index instead of a thread record's address, and it adds the execution to the
/// global at once, combined over the lanes executing it together (warp operations: it must be
/// inlined into its one call site).
pub fn once(function: &str) -> String {
    format!("{function}_once")
}

/// The per-execution functions that have a [`once`] form.
fn with_once_forms() -> Vec<String> {
    let mut names: Vec<String> = (0..SITE_OPERATIONS.len() as u32)
        .flat_map(|op| [site_function(op, false), site_function(op, true)])
        .collect();
    names.extend([LOAD_FUNCTION, LOAD_SHARED_FUNCTION, RESEED_FUNCTION].map(String::from));
    names
}

/// The runtime functions an instrumented module calls per execution, to be inlined after the
/// merge ([`crate::pass::inline`]): every site function, the load, store, clear and re-seed,
/// their shared-memory forms and the shadow area's zeroing (once per kernel, but inlined so
/// that its barrier is the kernel's own and the interpreter, which has no calls, runs it).
pub fn inlined_functions() -> Vec<String> {
    let mut names = with_once_forms();
    names.extend(with_once_forms().iter().map(|f| once(f)));
    names.extend(
        [
            STORE_FUNCTION,
            CLEAR_FUNCTION,
            STORE_SHARED_FUNCTION,
            CLEAR_SHARED_FUNCTION,
            ZERO_SHARED_FUNCTION,
        ]
        .map(String::from),
    );
    names
}

/// The words of one record, in order (the runtime's `MANTISSA_SV_W_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Word {
    /// Executions (u64).
    Executions = 0,
    /// Local error: executions measured (u64).
    LocalCount = 1,
    /// Local error: their sum (f64).
    LocalSum = 2,
    /// Local error: their maximum (f64).
    LocalMax = 3,
    /// Local error: exact result 0 (u64).
    LocalZero = 4,
    /// Local error: exact result or result not finite (u64).
    LocalNonFinite = 5,
    /// Accumulated error: executions measured (u64).
    AccCount = 6,
    /// Accumulated error: their sum (f64).
    AccSum = 7,
    /// Accumulated error: their maximum (f64).
    AccMax = 8,
    /// Accumulated error: shadow 0 (u64).
    AccZero = 9,
    /// Accumulated error: result or shadow not finite (u64).
    AccNonFinite = 10,
    /// Cancellations (u64).
    Cancellations = 11,
    /// The most bits a cancellation lost (u64).
    CancelMaxBits = 12,
    /// Re-seeds (u64).
    Reseeded = 13,
}

/// The `how` argument of the runtime's arithmetic functions: an operation, flags, a rounding mode.
pub mod how {
    /// Addition.
    pub const ADD: u32 = 0;
    /// Subtraction.
    pub const SUB: u32 = 1;
    /// Multiplication.
    pub const MUL: u32 = 2;
    /// `fma`/`mad`: a·b + c.
    pub const FMA: u32 = 3;
    /// Division.
    pub const DIV: u32 = 4;
    /// Reciprocal.
    pub const RCP: u32 = 5;
    /// Square root.
    pub const SQRT: u32 = 6;
    /// Reciprocal square root.
    pub const RSQRT: u32 = 7;
    /// A float-to-float conversion (the exact result is the operand).
    pub const CONVERT: u32 = 8;
    /// A float-to-float rounding to an integral value (mode in bits 8–9: rni, rzi, rmi, rpi).
    pub const ROUND: u32 = 9;
    /// A site that re-seeds.
    pub const RESEED: u32 = 10;
    /// The result is an f32.
    pub const F32: u32 = 16;
    /// No operand values passed: no local error, no cancellation.
    pub const NO_LOCAL: u32 = 32;
    /// No result passed: no accumulated error.
    pub const NO_VALUE: u32 = 64;
    /// The shift of the rounding mode of [`ROUND`].
    pub const MODE_SHIFT: u32 = 8;
}

/// How a site's shadow is obtained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "why")]
pub enum Treatment {
    /// Propagated, with the local and accumulated error measured.
    Propagated,
    /// Part of a fusible mul→add pair: propagated without reading the product (see the module
    /// docs); what is measured is said in the reason.
    Fused(String),
    /// Re-seeded from the value, for this reason.
    Reseeded(String),
    /// Not instrumented, for this reason (its result's shadow is re-seeded elsewhere or lost).
    Skipped(String),
}

/// One site (an instruction of [`super::shadow`]'s enumeration), in index order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueSite {
    /// Its record, and its index in [`super::shadow::ShadowReport::sites`].
    pub index: u32,
    /// Its address.
    pub site: Site,
    /// Its id in the module given to [`instrument`].
    pub inst: InstId,
    /// Its full opcode.
    pub opcode: String,
    /// Its result type.
    pub value_type: ValueType,
    /// How its shadow is obtained.
    pub treatment: Treatment,
}

/// A definition of a float register that is not a site and re-seeds its shadow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReseedPoint {
    /// Its record (after every site's).
    pub record: u32,
    /// Its address.
    pub site: Site,
    /// Its id in the module given to [`instrument`].
    pub inst: InstId,
    /// Its full opcode.
    pub opcode: String,
    /// Why the shadow cannot be propagated here.
    pub reason: String,
    /// Re-seeds only where the address is in no registered buffer (global/generic float loads).
    pub conditional: bool,
}

/// What [`instrument`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValuesReport {
    /// The statistics array's name ([`VALUES_GLOBAL`]).
    pub global: String,
    /// The buffer table's name ([`TABLE_GLOBAL`]).
    pub table: String,
    /// 8-byte words per record ([`WORDS_PER_RECORD`]).
    pub words_per_record: u32,
    /// Every site, in index order (records `0..sites.len()`).
    pub sites: Vec<ValueSite>,
    /// Every re-seed point (records from `sites.len()`).
    pub reseeds: Vec<ReseedPoint>,
    /// What a user should know.
    pub notes: Vec<String>,
}

/// One site's or re-seed point's statistics over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ValueStats {
    /// Executions.
    pub executions: u64,
    /// The local error (`zero_reference`: exact result 0).
    pub local: ErrorStats,
    /// The accumulated error against the shadow (`zero_reference`: shadow 0).
    pub accumulated: ErrorStats,
    /// Cancellations.
    pub cancellations: u64,
    /// The most bits one lost (0 without any).
    pub cancel_max_bits: u64,
    /// Re-seeds.
    pub reseeded: u64,
}

impl ValueStats {
    /// The correct decimal digits of the worst result against its shadow: −log10 of the largest
    /// accumulated error (`None` without a measured execution; 17 caps an exact result).
    pub fn worst_digits(&self) -> Option<f64> {
        (self.accumulated.count > 0).then(|| digits(self.accumulated.max))
    }
}

/// Correct decimal digits of a relative error: −log10(e), capped at 17 (e = 0) and floored at 0
/// (+0: an error of exactly 1 gives −log10(1) = −0, which `clamp` keeps and text prints "-0.0").
pub fn digits(relative_error: f64) -> f64 {
    if relative_error.is_nan() {
        0.0
    } else if relative_error <= 1e-17 {
        17.0
    } else {
        (-relative_error.log10()).clamp(0.0, 17.0) + 0.0
    }
}

/// The statistics of a run, decoded: per site (index order) and per re-seed point.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ValuesStats {
    /// One per [`ValuesReport::sites`].
    pub sites: Vec<ValueStats>,
    /// One per [`ValuesReport::reseeds`].
    pub reseeds: Vec<ValueStats>,
}

/// Why the pass cannot instrument, or bytes do not decode, or a table cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    /// The module already has a name the pass needs (instrumented twice, or a user name).
    #[error(
        "the module already has a '{0}': it is instrumented already, or the name is the user's"
    )]
    NameTaken(String),
    /// An edit failed (a bug of this pass).
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
    /// Bytes read back that are not the statistics array.
    #[error("{got} bytes read back for a shadow-values array of {expected} bytes")]
    Bytes {
        /// Bytes given.
        got: usize,
        /// Bytes expected ([`ValuesReport::global_bytes`]).
        expected: usize,
    },
    /// The merged runtime could not be inlined (a runtime built with a local depot, say).
    #[error(transparent)]
    Inline(#[from] crate::pass::inline::InlineError),
    /// More buffers than the table holds.
    #[error("{0} floating-point buffers; the shadow-values table holds at most {MAX_BUFFERS}")]
    TooManyBuffers(usize),
}

/// One registered buffer: its device address and bytes, and its shadow buffer's address (of
/// twice the bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowedBuffer {
    /// The buffer's device address.
    pub address: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// The shadow buffer's device address.
    pub shadow: u64,
}

/// The bytes of [`TABLE_GLOBAL`] for `buffers` (the whole array, unused entries zero).
pub fn table_bytes(buffers: &[ShadowedBuffer]) -> Result<Vec<u8>, ValuesError> {
    if buffers.len() > MAX_BUFFERS {
        return Err(ValuesError::TooManyBuffers(buffers.len()));
    }
    let mut words = vec![0u64; 1 + 3 * MAX_BUFFERS];
    words[0] = buffers.len() as u64;
    for (k, b) in buffers.iter().enumerate() {
        words[1 + 3 * k] = b.address;
        words[2 + 3 * k] = b.bytes;
        words[3 + 3 * k] = b.shadow;
    }
    Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

impl ValuesReport {
    /// Records: sites, then re-seed points (at least one: PTX has no empty arrays).
    pub fn records(&self) -> usize {
        (self.sites.len() + self.reseeds.len()).max(1)
    }

    /// The size of [`ValuesReport::global`] in bytes: [`COPIES`] copies of each record, a
    /// record's copies side by side.
    pub fn global_bytes(&self) -> usize {
        8 * self.words_per_record as usize * COPIES as usize * self.records()
    }

    /// The statistics, from the bytes of the global read back after the run.
    pub fn decode(&self, bytes: &[u8]) -> Result<ValuesStats, ValuesError> {
        if bytes.len() != self.global_bytes() {
            return Err(ValuesError::Bytes {
                got: bytes.len(),
                expected: self.global_bytes(),
            });
        }
        let words = self.words_per_record as usize;
        let copies = COPIES as usize;
        let record = |r: usize| {
            let copy_word = |c: usize, w: Word| {
                let k = 8 * ((r * copies + c) * words + w as usize);
                let mut b = [0u8; 8];
                b.copy_from_slice(&bytes[k..k + 8]);
                u64::from_le_bytes(b)
            };
            // Counts add over the copies, sums add (in copy order), maxima take the largest
            // (non-negative doubles and counts of bits order as their bits).
            let word = |w: Word| match w {
                Word::LocalMax | Word::AccMax | Word::CancelMaxBits => {
                    (0..copies).map(|c| copy_word(c, w)).max().unwrap_or(0)
                }
                _ => (0..copies).map(|c| copy_word(c, w)).sum(),
            };
            let float = |w: Word| {
                let bits = |c: usize| f64::from_bits(copy_word(c, w));
                match w {
                    Word::LocalSum | Word::AccSum => (0..copies).map(bits).sum(),
                    _ => f64::from_bits(word(w)),
                }
            };
            ValueStats {
                executions: word(Word::Executions),
                local: ErrorStats {
                    count: word(Word::LocalCount),
                    sum: float(Word::LocalSum),
                    max: float(Word::LocalMax),
                    zero_reference: word(Word::LocalZero),
                    non_finite: word(Word::LocalNonFinite),
                },
                accumulated: ErrorStats {
                    count: word(Word::AccCount),
                    sum: float(Word::AccSum),
                    max: float(Word::AccMax),
                    zero_reference: word(Word::AccZero),
                    non_finite: word(Word::AccNonFinite),
                },
                cancellations: word(Word::Cancellations),
                cancel_max_bits: word(Word::CancelMaxBits),
                reseeded: word(Word::Reseeded),
            }
        };
        let n = self.sites.len();
        Ok(ValuesStats {
            sites: (0..n).map(record).collect(),
            reseeds: (0..self.reseeds.len()).map(|k| record(n + k)).collect(),
        })
    }
}

/// The runtime's functions as the instrumented module declares them (`.extern .func`, with
/// NVRTC's parameter names; the merge checks the definitions agree).
pub fn runtime_prototypes() -> Vec<Function> {
    let pair = || {
        vec![Param {
            attrs: vec![".param".into(), ".align".into(), "8".into(), ".b8".into()],
            name: "func_retval0".into(),
            dims: vec![Some(16)],
        }]
    };
    let mut site = vec![".b64", ".b32"];
    site.extend([".b64"; 10]);
    let load = [".b64", ".b64", ".b64", ".b32"];
    let load_shared = [".b64", ".b32", ".b32", ".b32", ".b32", ".b64", ".b32"];
    let mut out: Vec<Function> = Vec::new();
    for name in [String::new(), "_once".into()] {
        out.extend(
            (0..SITE_OPERATIONS.len() as u32)
                .flat_map(|op| [site_function(op, false), site_function(op, true)])
                .map(|f| prototype(&format!("{f}{name}"), &site, Some(pair()))),
        );
        out.extend([
            prototype(&format!("{LOAD_FUNCTION}{name}"), &load, Some(pair())),
            prototype(
                &format!("{LOAD_SHARED_FUNCTION}{name}"),
                &load_shared,
                Some(pair()),
            ),
            prototype(&format!("{RESEED_FUNCTION}{name}"), &[".b64"], None),
        ]);
    }
    out.extend([
        prototype(
            STORE_FUNCTION,
            &[".b64", ".b64", ".b64", ".b64", ".b32"],
            None,
        ),
        prototype(CLEAR_FUNCTION, &[".b64", ".b32"], None),
        prototype(
            STORE_SHARED_FUNCTION,
            &[
                ".b32", ".b32", ".b32", ".b32", ".b64", ".b64", ".b64", ".b32",
            ],
            None,
        ),
        prototype(
            CLEAR_SHARED_FUNCTION,
            &[".b32", ".b32", ".b32", ".b32", ".b32"],
            None,
        ),
        prototype(ZERO_SHARED_FUNCTION, &[".b32", ".b32"], None),
        prototype(ZERO_FUNCTION, &[".b64", ".b32"], None),
        prototype(FLUSH_FUNCTION, &[".b64", ".b32", ".b32"], None),
    ]);
    out
}

fn prototype(name: &str, types: &[&str], returns: Option<Vec<Param>>) -> Function {
    Function {
        linkage: vec![".extern".into()],
        kind: FunctionKind::Func,
        name: name.into(),
        returns,
        params: types
            .iter()
            .enumerate()
            .map(|(k, t)| Param::new(t, &format!("{name}_param_{k}")))
            .collect(),
        directives: Vec::new(),
        body: None,
        line: SrcLine(0),
    }
}

/// `merged` (an instrumented module with `mantissa_gpu::runtime::SHADOW_VALUES` merged by
/// [`crate::link::merge_runtime`]) with the runtime's per-execution functions
/// ([`inlined_functions`]) inlined: what is loaded and run.
pub fn inline_runtime(merged: &Module) -> Result<Module, ValuesError> {
    let names = inlined_functions();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    Ok(crate::pass::inline::inline(merged, &names)?.module)
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Instrumented {
    /// The instrumented module; merge `mantissa_gpu::runtime::SHADOW_VALUES` and
    /// [`inline_runtime`] before loading.
    pub module: Module,
    /// Where each record comes from.
    pub report: ValuesReport,
}

/// The pass as a [`Pass`], for pipelines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShadowValues;

impl Pass for ShadowValues {
    fn name(&self) -> String {
        "shadow-values".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let out = instrument(module).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let r = &out.report;
        let count = |f: fn(&Treatment) -> bool| r.sites.iter().filter(|s| f(&s.treatment)).count();
        let summary = format!(
            "{} sites: {} propagated, {} in fusible pairs, {} re-seeded; {} other re-seed points",
            r.sites.len(),
            count(|t| matches!(t, Treatment::Propagated)),
            count(|t| matches!(t, Treatment::Fused(_))),
            count(|t| matches!(t, Treatment::Reseeded(_))),
            r.reseeds.len()
        );
        Ok(Outcome {
            report: Report::new(
                "shadow-values",
                summary,
                r.notes.clone(),
                out.report.clone(),
            ),
            module: out.module,
        })
    }
}
