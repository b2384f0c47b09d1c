// mantissa_shadow_values.cuh: the device runtime of the shadow-values pass
// (crates/ptx/src/pass/shadow_values.rs). Every f64 value of an instrumented kernel carries a
// double-word (f64x2) shadow and every f32 value an f64 shadow; these functions propagate the
// shadows through arithmetic, conversions and memory, and measure per site the local error of
// the instruction, the accumulated error of its result against its shadow and cancellations.
//
// The shadow arithmetic is mantissa.cuh's double-word arithmetic (the CUDA twin of crates/num,
// bit-identical to the CPU's): mantissa_gpu::runtime::SHADOW_VALUES prepends mantissa.cuh to
// this file, which therefore includes nothing.
//
// PROVIDES (every value argument is a double: f32 values widened exactly by the caller)
//   struct mantissa_sv_pair { double hi, lo; }: a double-word shadow, or (f64 shadow, 0).
//   A thread's RECORD is MANTISSA_SV_THREAD_BYTES bytes (16-aligned) of a .local array of its
//   function (the pass declares it; `acc` is its address in the local state space, read and
//   written with ld.local/st.local): the statistics of one site or re-seed point, accumulated
//   per thread and flushed once at every exit of the function. Its first 32 bytes are what
//   every execution updates (one ld/st.local.v2.f64 and one v4.u32 each way): the two sums
//   (f64), the executions (u32, its carry in FLAGS >> 8), the two maxima as the HIGH WORD of
//   the f64 rounded up (so a reported maximum is an upper bound within a relative 2^-20 of the
//   measured one) and FLAGS (the site's MANTISSA_SV_NO_LOCAL | _NO_VALUE). The u64 counts of
//   rare events (zero references, non-finite, cancellations, re-seeds) follow, touched only
//   when they happen; the measured counts are derived at the flush (executions minus the zero
//   and non-finite ones, 0 under NO_LOCAL / NO_VALUE). MANTISSA_SV_T_* are the offsets.
//   extern "C" mantissa_sv_pair mantissa_sv_<op>_<type>(unsigned long long acc,
//       unsigned int how, double a, double ah, double al, double b, double bh, double bl,
//       double c, double ch, double cl, double r)
//     <op> add sub mul fma div rcp sqrt rsqrt convert round, <type> f64 or f32 (the result's).
//     One execution of a site: operands a, b, c (unused ones 0) with their shadows (ah, al)...,
//     its result r; `how` = flags | rounding (MANTISSA_SV_NO_LOCAL, _NO_VALUE, the rounding of
//     ROUND << MANTISSA_SV_MODE_SHIFT). Returns the result's shadow: for f64, the operation in
//     double-word on the operands' shadows; for f32, the exact operation on the f64 shadows
//     rounded once to a double (hi, 0) (a double-word operand of a conversion: its hi).
//     Records, into the thread's record at `acc`:
//       EXECUTIONS += 1;
//       local error (unless MANTISSA_SV_NO_LOCAL): for div, rcp and sqrt with moderate
//         operands and result (mantissa_sv_remainder): from the remainder, which one FMA gives
//         exactly; otherwise x = the exact operation on the operand
//         VALUES in double-word (exact for add, sub, mul, conversions and roundings to integers;
//         3u^2 fma, 3u^2 div, 25/8u^2 sqrt, u = 2^-53);
//         x or r not finite -> LOCAL_NON_FINITE; x = 0 -> LOCAL_ZERO; else
//         e = |x - r| / |x| as __ddiv_rn(|dw_sub_base(x, r).hi|, |x.hi|) -> LOCAL_COUNT/SUM/MAX;
//       accumulated error (unless MANTISSA_SV_NO_VALUE): s = the returned shadow;
//         r or s not finite -> ACC_NON_FINITE; s = 0 -> ACC_ZERO; else
//         e = |r - s| / |s| as __ddiv_rn(|dw_sub_base(s, r).hi|, |s.hi|) -> ACC_COUNT/SUM/MAX;
//       a cancellation (add, sub, fma with local error measured): the result lost
//         b = E - exponent(r) >= 10 bits, E the largest exponent of the addends' values (a*b
//         rounded, and c, for an fma), 64 when r = 0, AND some operand carried an accumulated
//         error (its shadow differs from its value) -> CANCELLATIONS += 1, CANCEL_MAX_BITS max.
//     Sums are added in the thread's order (__dadd_rn), maxima by fmax.
//   extern "C" mantissa_sv_pair mantissa_sv_<op>_<type>_once(unsigned long long record, ...)
//     The same for a site OUTSIDE every loop of its function, with no thread record: `record` is
//     the global record's index, and the execution is added to it at once, combined over the
//     lanes executing the site together (executions and counts by ballots, sums by shuffles,
//     the maxima, as the high word rounded up like a thread record's, by redux.sync; one lane
//     adds each word with one atomic into copy %smid mod MANTISSA_SV_COPIES; the rare zero and
//     non-finite references one atomic per lane that has one). MUST be inlined into its one
//     call site (mantissa_ptx::pass::inline): its active lanes are then all at that site.
//   extern "C" mantissa_sv_pair mantissa_sv_load(unsigned long long acc,
//       unsigned long long address, double value, unsigned int f32)
//     A float loaded from `address`: its shadow is value + the difference stored for it in the
//     shadow buffer (f64x2 for an f64, f64 for an f32), or (value, 0) when the address is in no
//     registered buffer (RESEEDED += 1). EXECUTIONS += 1.
//   extern "C" mantissa_sv_pair mantissa_sv_load_once(unsigned long long record,
//       unsigned long long address, double value, unsigned int f32)
//     The same outside loops, added at once to global record `record` (as the sites' _once).
//   extern "C" void mantissa_sv_store(unsigned long long address, double value, double hi,
//       double lo, unsigned int f32)
//     A float stored to `address`: writes the difference (hi, lo) - value (f32: one double,
//     __dsub_rn(hi, value)) to its shadow, or nothing when the address is in no buffer. A
//     non-finite value or shadow stores a zero difference (the shadow is re-seeded on reload).
//   extern "C" void mantissa_sv_clear(unsigned long long address, unsigned int bytes)
//     A store the pass cannot shadow (an integer store, an atomic): zeroes the differences of
//     `bytes` bytes of data at `address` (shadow := value).
//   extern "C" mantissa_sv_pair mantissa_sv_load_shared(unsigned long long acc,
//       unsigned int address, unsigned int first, unsigned int end, unsigned int area,
//       double value, unsigned int f32)
//   extern "C" void mantissa_sv_store_shared(unsigned int address, unsigned int first,
//       unsigned int end, unsigned int area, double value, double hi, double lo, unsigned int f32)
//   extern "C" void mantissa_sv_clear_shared(unsigned int address, unsigned int first,
//       unsigned int end, unsigned int area, unsigned int bytes)
//   extern "C" mantissa_sv_pair mantissa_sv_load_shared_once(unsigned long long record, <the rest
//       as mantissa_sv_load_shared>)
//     The same on shared memory (`address` a shared-space address): the kernel's static shared
//     variables span [first, end) (first a multiple of 16) and their differences sit at
//     area + 2 (address - first) in the shadow area, a shared array the pass declares; an
//     address outside [first, end) (dynamic shared memory) is in no buffer.
//   extern "C" void mantissa_sv_zero_shared(unsigned int area, unsigned int bytes)
//     At the top of a kernel with a shadow area (every thread of the CTA calls it): the CTA
//     zeroes the `bytes` bytes (a multiple of 16) at `area`, each thread every (16 * CTA size)th
//     16 bytes, then bar.sync 0.
//   extern "C" void mantissa_sv_reseed(unsigned long long acc)
//     A re-seed (a site that cannot propagate, a load from unshadowed memory, bits moved from an
//     integer, a call result...): EXECUTIONS += 1, RESEEDED += 1 (the caller sets shadow := value).
//   extern "C" void mantissa_sv_reseed_once(unsigned long long record)
//     The same outside loops, added at once to global record `record` (as the sites' _once).
//   extern "C" void mantissa_sv_zero(unsigned long long acc, unsigned int records)
//     Zeroes `records` records at `acc` (at the entry of a function).
//   extern "C" unsigned long long mantissa_sv_word(unsigned long long acc, unsigned int w)
//     Word w (MANTISSA_SV_W_*) of the global record layout for the thread record at `acc`:
//     what mantissa_sv_flush adds (exported for tests that flush without warp operations).
//   extern "C" void mantissa_sv_flush(unsigned long long acc, unsigned int first,
//       unsigned int slots)
//     At an exit of a function: its `slots` thread records (slot k's global record is
//     __mantissa_sv_slots[first + k]) added to __mantissa_values:
//     the lanes flushing together (__match_any_sync on `first`) combine each word (counts
//     added by redux.sync.add when every lane's is below 2^27, else exactly by shuffles; sums
//     added by shuffles; maxima by two redux.sync.max on their words), and the lowest lane adds it with one
//     atomic into copy (its %smid mod MANTISSA_SV_COPIES) of the record. Words zero in every
//     peer are skipped.
//
// NEEDS FROM THE MODULE IT IS MERGED INTO
//   __mantissa_values: `.global .align 8 .u64 __mantissa_values[N * 16 * 14]`: per site and
//     re-seed point, MANTISSA_SV_COPIES copies side by side of its record of MANTISSA_SV_WORDS
//     8-byte words, in the order of the
//     MANTISSA_SV_W_* indices (mantissa_ptx::pass::shadow_values::Word); counts u64, sums and
//     maxima f64 (CANCEL_MAX_BITS u64). Zero-initialised by the pass.
//   __mantissa_values_table: `.global .align 8 .u64 __mantissa_values_table[1 + 3 * 32]`: word
//     0 the number of buffers n <= 32, then per buffer (device address, bytes, shadow address).
//     The host writes it (Gpu::write_symbol) after the run's restore; the shadow buffer of a
//     buffer of B bytes has 2 B bytes, zero-filled before the run (zero = "shadow = value").
//   __mantissa_sv_slots: `.global .align 4 .u32 __mantissa_sv_slots[M] = {...}`: the global
//     record of every thread-record slot, function after function (a function's flush names
//     its first entry). Only sites, loads and re-seed points inside loops have slots.
//
// WHAT THE REWRITER PASSES
//   Record indices and `how` as immediates; values and shadows in registers; addresses as u64
//   (global or generic: for device allocations the two are the same number), shared ones as
//   u32 shared-space addresses (`mov.u32 %r, VAR` and what the kernel adds to it).
//
// INVARIANTS
//   It writes nothing but the thread records given to it, __mantissa_values, the shadow
//   buffers and the shadow areas, and returns its results, so an instrumented kernel computes
//   the same bits as the kernel as written. Its arithmetic is mantissa.cuh's (explicit _rn intrinsics, which no flag
//   set changes) and _rn intrinsics here. Everything but mantissa_sv_zero and mantissa_sv_flush
//   is written to be inlined (mantissa_ptx::pass::inline, after the merge): no local depot;
//   plain loads and stores of the thread's record; warp operations only in the _once forms. A thread's executions
//   of one record count to 2^56 per function activation. Sums over threads depend
//   on scheduling (atomicAdd on doubles); counts and maxima are exact.
//   A buffer is read and written with one element type (an f64 buffer by f64 accesses): the
//   difference of an element is found at shadow + 2 (address - base) with the width of the
//   access. Needs sm_80+ (redux.sync).
//
// HOW IT IS BUILT
//   mantissa_shadow_values_warp.cuh follows this file in the same source (the _once forms and
//   mantissa_sv_flush: the code that combines a warp's lanes; this contract covers it).
//   As mantissa_shadow.cuh: NVRTC with -rdc=true (mantissa_gpu::runtime), merged by
//   mantissa_ptx::link::merge_runtime; the three globals are `.extern` here, defined by the pass.

#ifndef MANTISSA_CUH
#error "mantissa_shadow_values.cuh needs mantissa.cuh before it (mantissa_gpu::runtime prepends it)"
#endif

#define MANTISSA_SV_WORDS 14
#define MANTISSA_SV_W_EXECUTIONS 0
#define MANTISSA_SV_W_LOCAL_COUNT 1
#define MANTISSA_SV_W_LOCAL_SUM 2
#define MANTISSA_SV_W_LOCAL_MAX 3
#define MANTISSA_SV_W_LOCAL_ZERO 4
#define MANTISSA_SV_W_LOCAL_NON_FINITE 5
#define MANTISSA_SV_W_ACC_COUNT 6
#define MANTISSA_SV_W_ACC_SUM 7
#define MANTISSA_SV_W_ACC_MAX 8
#define MANTISSA_SV_W_ACC_ZERO 9
#define MANTISSA_SV_W_ACC_NON_FINITE 10
#define MANTISSA_SV_W_CANCELLATIONS 11
#define MANTISSA_SV_W_CANCEL_MAX_BITS 12
#define MANTISSA_SV_W_RESEEDED 13

// A thread record (.local): byte offsets of its hot part, u64 word indices of its rare part.
#define MANTISSA_SV_THREAD_BYTES 96
#define MANTISSA_SV_T_SUMS 0          // f64 local sum, f64 accumulated sum
#define MANTISSA_SV_T_COUNTS 16       // u32 executions, local max hi, acc max hi, flags
#define MANTISSA_SV_T_LOCAL_ZERO 4    // u64 word indices from here on
#define MANTISSA_SV_T_LOCAL_NON_FINITE 5
#define MANTISSA_SV_T_ACC_ZERO 6
#define MANTISSA_SV_T_ACC_NON_FINITE 7
#define MANTISSA_SV_T_CANCELLATIONS 8
#define MANTISSA_SV_T_CANCEL_MAX_BITS 9
#define MANTISSA_SV_T_RESEEDED 10
#define MANTISSA_SV_T_WORDS 12

// `how`: the operation in bits 0-3, flags above it, an integral rounding mode in bits 8-9.
#define MANTISSA_SV_ADD 0u
#define MANTISSA_SV_SUB 1u
#define MANTISSA_SV_MUL 2u
#define MANTISSA_SV_FMA 3u
#define MANTISSA_SV_DIV 4u
#define MANTISSA_SV_RCP 5u
#define MANTISSA_SV_SQRT 6u
#define MANTISSA_SV_RSQRT 7u
#define MANTISSA_SV_CONVERT 8u   // a float-to-float conversion: the exact result is a itself
#define MANTISSA_SV_ROUND 9u     // cvt.rXi between floats: round to an integral value
#define MANTISSA_SV_RESEED 10u   // a site whose shadow cannot be propagated
#define MANTISSA_SV_OP_MASK 15u
#define MANTISSA_SV_F32 16u       // the site's result is an f32 (its shadow one double)
#define MANTISSA_SV_NO_LOCAL 32u  // operand values not passed: no local error, no cancellation
#define MANTISSA_SV_NO_VALUE 64u  // the result not passed: no accumulated error
#define MANTISSA_SV_MODE_SHIFT 8u // ROUND: 0 rni, 1 rzi, 2 rmi, 3 rpi

#define MANTISSA_SV_MAX_BUFFERS 32
#define MANTISSA_SV_COPIES 16  // copies of __mantissa_values that warps flush into
#define MANTISSA_SV_CANCEL_BITS 10

extern __device__ unsigned long long __mantissa_values[];
extern __device__ unsigned long long __mantissa_values_table[];
extern __device__ unsigned int __mantissa_sv_slots[];

struct mantissa_sv_pair {
    double hi;
    double lo;
};

static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_make(double hi, double lo)
{
    mantissa_sv_pair p;
    p.hi = hi;
    p.lo = lo;
    return p;
}

static __device__ __forceinline__ bool mantissa_sv_finite(double x)
{
    return fabs(x) <= 1.7976931348623157e308;  // false for NaN and +-inf
}

// A double from lane `from` of `mask`, as two 32-bit shuffles in inline PTX: NVRTC spells
// __shfl_sync with a predicate output, an operand form mantissa_ptx keeps verbatim and the
// merge refuses.
static __device__ __forceinline__ double mantissa_sv_shfl(unsigned int mask, double x, unsigned int from)
{
    int hi = __double2hiint(x);
    int lo = __double2loint(x);
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, %2;" : "+r"(hi) : "r"(from), "r"(mask));
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, %2;" : "+r"(lo) : "r"(from), "r"(mask));
    return __hiloint2double(hi, lo);
}

// |x - r| / |x| for an exact value x (double-word) and a double r; `ok` false when undefined
// (`zero`: x = 0; otherwise something not finite).
static __device__ __forceinline__ double mantissa_sv_relative(
    mantissa::f64x2 x, double r, bool &ok, bool &zero)
{
    zero = false;
    ok = false;
    if (!mantissa_sv_finite(x.hi) || !mantissa_sv_finite(r)) {
        return 0.0;
    }
    if (x.hi == 0.0) {
        zero = true;
        return 0.0;
    }
    ok = true;
    // x.hi == r (a correctly rounded add, sub or mul; a value equal to its shadow's high word):
    // dw_sub_base(x, r) is (x.lo, 0), so skip it; a zero difference needs no division.
    double d = x.hi == r ? x.lo : mantissa::dw_sub_base(x, r).hi;
    return d == 0.0 ? 0.0 : __ddiv_rn(fabs(d), fabs(x.hi));
}

// x rounded to an integral value in `mode` (0 rni, 1 rzi, 2 rmi, 3 rpi), one double.
static __device__ __forceinline__ double mantissa_sv_round1(double x, unsigned int mode)
{
    switch (mode) {
    case 0: return rint(x);
    case 1: return trunc(x);
    case 2: return floor(x);
    default: return ceil(x);
    }
}

// hi + lo rounded to an integral value in `mode`, as a double-word. A non-integral hi decides
// alone (|lo| <= ulp(hi)/2 < its distance to an integer), except for a tie of rni, which lo
// breaks; an integral hi adds the rounding of lo (rzi rounds toward zero of hi + lo).
static __device__ mantissa::f64x2 mantissa_sv_round(mantissa::f64x2 x, unsigned int mode)
{
    double h = mantissa_sv_round1(x.hi, mode);
    if (!mantissa_sv_finite(x.hi)) {
        return mantissa::dw_from_base(h);
    }
    if (h != x.hi) {
        if (mode == 0 && fabs(__dsub_rn(h, x.hi)) == 0.5 && x.lo != 0.0) {
            h = x.lo > 0.0 ? ceil(x.hi) : floor(x.hi);
        }
        return mantissa::dw_from_base(h);
    }
    if (mode == 1) {
        mode = x.hi > 0.0 || (x.hi == 0.0 && x.lo > 0.0) ? 2u : 3u;
    }
    return mantissa::dw_from_sum(x.hi, mantissa_sv_round1(x.lo, mode));
}

// The exact result of the operation on the operand values, in double-word.
static __device__ mantissa::f64x2 mantissa_sv_exact(
    unsigned int op, unsigned int mode, double a, double b, double c)
{
    using namespace mantissa;
    switch (op) {
    case MANTISSA_SV_ADD: return dw_from_sum(a, b);
    case MANTISSA_SV_SUB: return dw_from_sum(a, flip_sign(b));
    case MANTISSA_SV_MUL: return dw_from_product(a, b);
    case MANTISSA_SV_FMA: return dw_add(dw_from_product(a, b), dw_from_base(c));
    case MANTISSA_SV_DIV: return dw_div_base(dw_from_base(a), b);
    case MANTISSA_SV_RCP: return dw_div_base(dw_from_base(1.0), a);
    case MANTISSA_SV_SQRT: return dw_sqrt(dw_from_base(a));
    case MANTISSA_SV_RSQRT: return dw_div(dw_from_base(1.0), dw_sqrt(dw_from_base(a)));
    case MANTISSA_SV_ROUND: return dw_from_base(mantissa_sv_round1(a, mode));  // exact
    default: return dw_from_base(a);  // CONVERT: the exact result is the operand
    }
}

// The operation on the shadows.
static __device__ mantissa::f64x2 mantissa_sv_shadow(
    unsigned int op, unsigned int mode, mantissa::f64x2 a, mantissa::f64x2 b, mantissa::f64x2 c)
{
    using namespace mantissa;
    switch (op) {
    case MANTISSA_SV_ADD: return dw_add(a, b);
    case MANTISSA_SV_SUB: return dw_sub(a, b);
    case MANTISSA_SV_MUL: return dw_mul(a, b);
    case MANTISSA_SV_FMA: return dw_add(dw_mul(a, b), c);
    case MANTISSA_SV_DIV: return dw_div(a, b);
    case MANTISSA_SV_RCP: return dw_div(dw_from_base(1.0), a);
    case MANTISSA_SV_SQRT: return dw_sqrt(a);
    case MANTISSA_SV_RSQRT: return dw_div(dw_from_base(1.0), dw_sqrt(a));
    case MANTISSA_SV_ROUND: return mantissa_sv_round(a, mode);
    default: return a;  // CONVERT
    }
}

// Whether |x| is in [2^-900, 2^901): far from underflow and overflow (an integer test of the
// exponent field).
static __device__ __forceinline__ bool mantissa_sv_moderate(double x)
{
    unsigned int e = ((unsigned int)__double2hiint(x) >> 20) & 0x7ffu;
    return e - 123u < 1801u;
}

// The local error of a division, reciprocal or square root from its remainder, which one FMA
// computes exactly for a faithful result r (and for f32 values widened to double: the product
// is exact and the difference exact by Sterbenz): a/b: |a - r b| / |a|; 1/a: |1 - r a|;
// sqrt(a): |a - r^2| / (x (x + r)), x = sqrt(a), with x (x + r) = a + r^2 + (a - r^2)/2 up to
// a relative (x - r)^2 / x^2. Returns false (the caller takes the double-word path) for any
// operand or result outside mantissa_sv_moderate, zero or not finite.
template <unsigned int OP>
static __device__ __forceinline__ bool mantissa_sv_remainder(double a, double b, double r, double &e)
{
    if (OP == MANTISSA_SV_DIV) {
        if (!(mantissa_sv_moderate(a) && mantissa_sv_moderate(b) && mantissa_sv_moderate(r))) {
            return false;
        }
        e = __ddiv_rn(fabs(__fma_rn(-r, b, a)), fabs(a));
        return true;
    }
    if (OP == MANTISSA_SV_RCP) {
        if (!(mantissa_sv_moderate(a) && mantissa_sv_moderate(r))) {
            return false;
        }
        e = fabs(__fma_rn(-r, a, 1.0));
        return true;
    }
    if (OP == MANTISSA_SV_SQRT) {
        if (!(mantissa_sv_moderate(a) && mantissa_sv_moderate(r) && a > 0.0)) {
            return false;
        }
        double rem = __fma_rn(-r, r, a);
        e = __ddiv_rn(fabs(rem), __fma_rn(0.5, rem, __fma_rn(r, r, a)));
        return true;
    }
    return false;
}

// Whether a value differs from its shadow (carries accumulated error).
static __device__ __forceinline__ bool mantissa_sv_carries(double v, double h, double l)
{
    return v != h || l != 0.0;
}

// The operation on f64 shadows of f32 values: one double, the exact operation rounded once
// (the f64 shadow of an f32 needs no double-word).
static __device__ __forceinline__ double mantissa_sv_shadow32(
    unsigned int op, unsigned int mode, mantissa::f64x2 a, mantissa::f64x2 b, mantissa::f64x2 c)
{
    switch (op) {
    case MANTISSA_SV_ADD: return __dadd_rn(a.hi, b.hi);
    case MANTISSA_SV_SUB: return __dsub_rn(a.hi, b.hi);
    case MANTISSA_SV_MUL: return __dmul_rn(a.hi, b.hi);
    case MANTISSA_SV_FMA: return __fma_rn(a.hi, b.hi, c.hi);
    case MANTISSA_SV_DIV: return __ddiv_rn(a.hi, b.hi);
    case MANTISSA_SV_RCP: return __drcp_rn(a.hi);
    case MANTISSA_SV_SQRT: return __dsqrt_rn(a.hi);
    case MANTISSA_SV_RSQRT: return __ddiv_rn(1.0, __dsqrt_rn(a.hi));
    case MANTISSA_SV_ROUND: return mantissa_sv_round(a, mode).hi;
    default: return a.hi;  // CONVERT: a double-word operand's nearest double
    }
}

// Word w of the thread record at local-space address `at`, read and written with ld.local and
// st.local: C++ has no pointer to local memory, and through a generic pointer ptxas would
// neither know the space nor that the user's global accesses cannot alias the record. Both
// volatile with a memory clobber, so that NVVM keeps their order.
static __device__ __forceinline__ unsigned long long mantissa_sv_get(unsigned long long at, int w)
{
    unsigned long long v;
    asm volatile("ld.local.u64 %0, [%1];" : "=l"(v) : "l"(at + 8ull * w) : "memory");
    return v;
}

static __device__ __forceinline__ void mantissa_sv_put(unsigned long long at, int w, unsigned long long v)
{
    asm volatile("st.local.u64 [%0], %1;" ::"l"(at + 8ull * w), "l"(v) : "memory");
}

static __device__ __forceinline__ void mantissa_sv_bump(unsigned long long at, int w)
{
    mantissa_sv_put(at, w, mantissa_sv_get(at, w) + 1);
}

// The high word of a non-negative double, rounded up: max over these words is the high word
// of an upper bound of the maximum within a relative 2^-20.
static __device__ __forceinline__ unsigned int mantissa_sv_high_up(double e)
{
    unsigned long long x = (unsigned long long)__double_as_longlong(e);
    return (unsigned int)(x >> 32) + ((unsigned int)x != 0u ? 1u : 0u);
}

// The hot part of a thread record: sums, executions (low word), maxima's high words, flags.
struct mantissa_sv_hot {
    double local_sum, acc_sum;
    unsigned int executions, local_max, acc_max, flags;
};

static __device__ __forceinline__ mantissa_sv_hot mantissa_sv_get_hot(unsigned long long at)
{
    mantissa_sv_hot h;
    asm volatile("ld.local.v2.f64 {%0, %1}, [%2];"
                 : "=d"(h.local_sum), "=d"(h.acc_sum)
                 : "l"(at + MANTISSA_SV_T_SUMS)
                 : "memory");
    asm volatile("ld.local.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(h.executions), "=r"(h.local_max), "=r"(h.acc_max), "=r"(h.flags)
                 : "l"(at + MANTISSA_SV_T_COUNTS)
                 : "memory");
    return h;
}

static __device__ __forceinline__ void mantissa_sv_put_counts(unsigned long long at, const mantissa_sv_hot &h)
{
    asm volatile("st.local.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at + MANTISSA_SV_T_COUNTS),
                 "r"(h.executions), "r"(h.local_max), "r"(h.acc_max), "r"(h.flags)
                 : "memory");
}

// One more execution of the record (the carry of the u32 count goes to the flags' high bits).
static __device__ __forceinline__ void mantissa_sv_count(mantissa_sv_hot &h, unsigned int flags)
{
    h.flags |= flags;
    h.executions += 1u;
    if (h.executions == 0u) {
        h.flags += 256u;
    }
}

// One execution of a site: its two measurements (e counted when its `ok`) into the hot part.
static __device__ __forceinline__ void mantissa_sv_tally(
    unsigned long long at, unsigned int flags, bool lok, double le, bool aok, double ae)
{
    mantissa_sv_hot h = mantissa_sv_get_hot(at);
    h.local_sum = __dadd_rn(h.local_sum, lok ? le : 0.0);
    h.acc_sum = __dadd_rn(h.acc_sum, aok ? ae : 0.0);
    h.local_max = max(h.local_max, mantissa_sv_high_up(lok ? le : 0.0));
    h.acc_max = max(h.acc_max, mantissa_sv_high_up(aok ? ae : 0.0));
    mantissa_sv_count(h, flags);
    asm volatile("st.local.v2.f64 [%0], {%1, %2};" ::"l"(at + MANTISSA_SV_T_SUMS), "d"(h.local_sum),
                 "d"(h.acc_sum)
                 : "memory");
    mantissa_sv_put_counts(at, h);
}

// An execution without measurements (a load, a re-seed point).
static __device__ __forceinline__ void mantissa_sv_tally_execution(unsigned long long at)
{
    mantissa_sv_hot h = mantissa_sv_get_hot(at);
    mantissa_sv_count(h, MANTISSA_SV_NO_LOCAL | MANTISSA_SV_NO_VALUE);
    mantissa_sv_put_counts(at, h);
}

// What one execution of a site measured: the result's shadow, the two errors (each counted when
// its `ok`; otherwise `zero` tells a zero reference from a non-finite one) and the bits a
// cancellation lost (0: none).
struct mantissa_sv_measured {
    mantissa::f64x2 s;
    double le, ae;
    bool local, value, lok, lzero, aok, azero;
    unsigned int lost;
};

// One execution of a site whose operation is OP (F32: its result is an f32): the result's
// shadow and the measurements of mantissa_sv_<op>_<type> in the header, recorded nowhere.
template <unsigned int OP, bool F32>
static __device__ __forceinline__ mantissa_sv_measured mantissa_sv_measure(
    unsigned int how, double a, double ah, double al, double b, double bh, double bl, double c,
    double ch, double cl, double r)
{
    using namespace mantissa;
    mantissa_sv_measured m;
    unsigned int mode = (how >> MANTISSA_SV_MODE_SHIFT) & 3u;
    m.s = F32 ? dw_from_base(mantissa_sv_shadow32(OP, mode, dw_make(ah, al), dw_make(bh, bl),
                                                  dw_make(ch, cl)))
              : mantissa_sv_shadow(OP, mode, dw_make(ah, al), dw_make(bh, bl), dw_make(ch, cl));
    m.local = (how & MANTISSA_SV_NO_LOCAL) == 0;
    m.value = (how & MANTISSA_SV_NO_VALUE) == 0;
    m.lok = m.lzero = m.aok = m.azero = false;
    m.le = m.ae = 0.0;
    m.lost = 0u;
    if (m.local) {
        m.lok = mantissa_sv_remainder<OP>(a, b, r, m.le);
        if (!m.lok) {
            m.le = mantissa_sv_relative(mantissa_sv_exact(OP, mode, a, b, c), r, m.lok, m.lzero);
        }
    }
    if (m.value) {
        m.ae = mantissa_sv_relative(m.s, r, m.aok, m.azero);
    }
    // Cancellation: the bits the sum lost against its largest addend, by value.
    if (OP == MANTISSA_SV_ADD || OP == MANTISSA_SV_SUB || OP == MANTISSA_SV_FMA) {
        if (m.local && mantissa_sv_finite(r)) {
            double x = OP == MANTISSA_SV_FMA ? __dmul_rn(a, b) : a;
            double y = OP == MANTISSA_SV_FMA ? c : b;
            int ex = 0, ey = 0, er = 0;
            bool hx = exponent(x, ex), hy = exponent(y, ey);
            int big = hx && hy ? max(ex, ey) : (hx ? ex : ey);
            bool carried = mantissa_sv_carries(a, ah, al) || mantissa_sv_carries(b, bh, bl)
                           || (OP == MANTISSA_SV_FMA && mantissa_sv_carries(c, ch, cl));
            if ((hx || hy) && carried) {
                int bits = exponent(r, er) ? big - er : 64;
                if (bits >= MANTISSA_SV_CANCEL_BITS) {
                    m.lost = (unsigned int)min(bits, 64);
                }
            }
        }
    }
    return m;
}

// One execution of a site into the thread's record at `acc`; returns the result's shadow. See
// mantissa_sv_<op>_<type> in the header.
template <unsigned int OP, bool F32>
static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_site(
    unsigned long long acc, unsigned int how, double a, double ah, double al, double b,
    double bh, double bl, double c, double ch, double cl, double r)
{
    mantissa_sv_measured m = mantissa_sv_measure<OP, F32>(how, a, ah, al, b, bh, bl, c, ch, cl, r);
    mantissa_sv_tally(acc, how & (MANTISSA_SV_NO_LOCAL | MANTISSA_SV_NO_VALUE), m.lok, m.le, m.aok, m.ae);
    if (m.local && !m.lok) {
        mantissa_sv_bump(acc, m.lzero ? MANTISSA_SV_T_LOCAL_ZERO : MANTISSA_SV_T_LOCAL_NON_FINITE);
    }
    if (m.value && !m.aok) {
        mantissa_sv_bump(acc, m.azero ? MANTISSA_SV_T_ACC_ZERO : MANTISSA_SV_T_ACC_NON_FINITE);
    }
    if (m.lost != 0u) {
        mantissa_sv_bump(acc, MANTISSA_SV_T_CANCELLATIONS);
        mantissa_sv_put(acc, MANTISSA_SV_T_CANCEL_MAX_BITS,
                        max(mantissa_sv_get(acc, MANTISSA_SV_T_CANCEL_MAX_BITS),
                            (unsigned long long)m.lost));
    }
    return mantissa_sv_make(m.s.hi, m.s.lo);
}

// Every site function, as X(name, OP, F32): defined here, and in their _once forms in
// mantissa_shadow_values_warp.cuh.
#define MANTISSA_SV_SITES(X)                                                                     \
    X(mantissa_sv_add_f64, MANTISSA_SV_ADD, false)                                               \
    X(mantissa_sv_sub_f64, MANTISSA_SV_SUB, false)                                               \
    X(mantissa_sv_mul_f64, MANTISSA_SV_MUL, false)                                               \
    X(mantissa_sv_fma_f64, MANTISSA_SV_FMA, false)                                               \
    X(mantissa_sv_div_f64, MANTISSA_SV_DIV, false)                                               \
    X(mantissa_sv_rcp_f64, MANTISSA_SV_RCP, false)                                               \
    X(mantissa_sv_sqrt_f64, MANTISSA_SV_SQRT, false)                                             \
    X(mantissa_sv_rsqrt_f64, MANTISSA_SV_RSQRT, false)                                           \
    X(mantissa_sv_convert_f64, MANTISSA_SV_CONVERT, false)                                       \
    X(mantissa_sv_round_f64, MANTISSA_SV_ROUND, false)                                           \
    X(mantissa_sv_add_f32, MANTISSA_SV_ADD, true)                                                \
    X(mantissa_sv_sub_f32, MANTISSA_SV_SUB, true)                                                \
    X(mantissa_sv_mul_f32, MANTISSA_SV_MUL, true)                                                \
    X(mantissa_sv_fma_f32, MANTISSA_SV_FMA, true)                                                \
    X(mantissa_sv_div_f32, MANTISSA_SV_DIV, true)                                                \
    X(mantissa_sv_rcp_f32, MANTISSA_SV_RCP, true)                                                \
    X(mantissa_sv_sqrt_f32, MANTISSA_SV_SQRT, true)                                              \
    X(mantissa_sv_rsqrt_f32, MANTISSA_SV_RSQRT, true)                                            \
    X(mantissa_sv_convert_f32, MANTISSA_SV_CONVERT, true)                                        \
    X(mantissa_sv_round_f32, MANTISSA_SV_ROUND, true)

#define MANTISSA_SV_SITE(name, OP, F32)                                                          \
    extern "C" __device__ __noinline__ mantissa_sv_pair name(                                    \
        unsigned long long acc, unsigned int how, double a, double ah, double al, double b,      \
        double bh, double bl, double c, double ch, double cl, double r)                          \
    {                                                                                            \
        return mantissa_sv_site<OP, F32>(acc, how, a, ah, al, b, bh, bl, c, ch, cl, r);          \
    }
MANTISSA_SV_SITES(MANTISSA_SV_SITE)

// The shadow address of `bytes` bytes of data at `address`, 0 when they are in no buffer.
static __device__ unsigned long long mantissa_sv_address(unsigned long long address, unsigned int bytes)
{
    unsigned long long n = __mantissa_values_table[0];
    n = n < MANTISSA_SV_MAX_BUFFERS ? n : MANTISSA_SV_MAX_BUFFERS;
    for (unsigned long long k = 0; k < n; ++k) {
        unsigned long long base = __mantissa_values_table[1 + 3 * k];
        unsigned long long size = __mantissa_values_table[2 + 3 * k];
        unsigned long long shadow = __mantissa_values_table[3 + 3 * k];
        if (address >= base && address - base + bytes <= size) {
            return shadow + 2 * (address - base);
        }
    }
    return 0;
}

// The shadow of a loaded value from its stored difference (d1 unused for an f32).
static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_from_difference(
    double value, double d0, double d1, unsigned int f32)
{
    if (f32) {
        return mantissa_sv_make(__dadd_rn(value, d0), 0.0);
    }
    mantissa::f64x2 s = mantissa::dw_add_base(mantissa::dw_make(d0, d1), value);
    return mantissa_sv_make(s.hi, s.lo);
}

// The difference (shadow - value) to store for a value and its shadow: zero when either is not
// finite (the shadow is re-seeded on reload); an f32's is one double (d.lo 0).
static __device__ __forceinline__ mantissa::f64x2 mantissa_sv_difference(
    double value, double hi, double lo, unsigned int f32)
{
    bool finite = mantissa_sv_finite(value) && mantissa_sv_finite(hi) && mantissa_sv_finite(lo);
    if (!finite) {
        return mantissa::dw_from_base(0.0);
    }
    if (f32) {
        return mantissa::dw_from_base(__dsub_rn(hi, value));
    }
    return mantissa::dw_sub_base(mantissa::dw_make(hi, lo), value);
}

// A float loaded from global or generic memory: its shadow, and whether it was re-seeded (the
// address in no registered buffer).
static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_loaded(
    unsigned long long address, double value, unsigned int f32, bool &reseeded)
{
    unsigned long long at = mantissa_sv_address(address, f32 ? 4u : 8u);
    reseeded = at == 0;
    if (reseeded) {
        return mantissa_sv_make(value, 0.0);
    }
    const double *diff = (const double *)at;
    return mantissa_sv_from_difference(value, diff[0], f32 ? 0.0 : diff[1], f32);
}

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_load(
    unsigned long long acc, unsigned long long address, double value, unsigned int f32)
{
    bool reseeded;
    mantissa_sv_pair p = mantissa_sv_loaded(address, value, f32, reseeded);
    mantissa_sv_tally_execution(acc);
    if (reseeded) {
        mantissa_sv_bump(acc, MANTISSA_SV_T_RESEEDED);
    }
    return p;
}

extern "C" __device__ __noinline__ void mantissa_sv_store(
    unsigned long long address, double value, double hi, double lo, unsigned int f32)
{
    unsigned long long at = mantissa_sv_address(address, f32 ? 4u : 8u);
    if (at == 0) {
        return;
    }
    double *diff = (double *)at;
    mantissa::f64x2 d = mantissa_sv_difference(value, hi, lo, f32);
    diff[0] = d.hi;
    if (!f32) {
        diff[1] = d.lo;
    }
}

// Shared memory: addresses in the shared state space (32 bits), read and written by ld.shared
// and st.shared in inline PTX (C++ has no shared-space pointer from a number).
#define MANTISSA_SV_NOWHERE 0xffffffffu

// The shadow-area address of `bytes` bytes of shared data at `address`, MANTISSA_SV_NOWHERE
// outside the static variables [first, end).
static __device__ __forceinline__ unsigned int mantissa_sv_shared_address(
    unsigned int address, unsigned int bytes, unsigned int first, unsigned int end, unsigned int area)
{
    if (address >= first && address - first <= end - first && end - address >= bytes) {
        return area + 2u * (address - first);
    }
    return MANTISSA_SV_NOWHERE;
}

static __device__ __forceinline__ double mantissa_sv_ld_shared(unsigned int at)
{
    double v;
    asm volatile("ld.shared.f64 %0, [%1];" : "=d"(v) : "r"(at) : "memory");
    return v;
}

static __device__ __forceinline__ void mantissa_sv_st_shared(unsigned int at, double v)
{
    asm volatile("st.shared.f64 [%0], %1;" ::"r"(at), "d"(v) : "memory");
}

// A float loaded from shared memory: its shadow, and whether it was re-seeded (the address
// outside the static variables).
static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_loaded_shared(
    unsigned int address, unsigned int first, unsigned int end, unsigned int area, double value,
    unsigned int f32, bool &reseeded)
{
    unsigned int at = mantissa_sv_shared_address(address, f32 ? 4u : 8u, first, end, area);
    reseeded = at == MANTISSA_SV_NOWHERE;
    if (reseeded) {
        return mantissa_sv_make(value, 0.0);
    }
    double d1 = f32 ? 0.0 : mantissa_sv_ld_shared(at + 8u);
    return mantissa_sv_from_difference(value, mantissa_sv_ld_shared(at), d1, f32);
}

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_load_shared(
    unsigned long long acc, unsigned int address, unsigned int first, unsigned int end,
    unsigned int area, double value, unsigned int f32)
{
    bool reseeded;
    mantissa_sv_pair p = mantissa_sv_loaded_shared(address, first, end, area, value, f32, reseeded);
    mantissa_sv_tally_execution(acc);
    if (reseeded) {
        mantissa_sv_bump(acc, MANTISSA_SV_T_RESEEDED);
    }
    return p;
}

extern "C" __device__ __noinline__ void mantissa_sv_store_shared(
    unsigned int address, unsigned int first, unsigned int end, unsigned int area, double value,
    double hi, double lo, unsigned int f32)
{
    unsigned int at = mantissa_sv_shared_address(address, f32 ? 4u : 8u, first, end, area);
    if (at == MANTISSA_SV_NOWHERE) {
        return;
    }
    mantissa::f64x2 d = mantissa_sv_difference(value, hi, lo, f32);
    mantissa_sv_st_shared(at, d.hi);
    if (!f32) {
        mantissa_sv_st_shared(at + 8u, d.lo);
    }
}

extern "C" __device__ __noinline__ void mantissa_sv_clear_shared(
    unsigned int address, unsigned int first, unsigned int end, unsigned int area, unsigned int bytes)
{
    unsigned int at = mantissa_sv_shared_address(address, bytes, first, end, area);
    if (at == MANTISSA_SV_NOWHERE) {
        return;
    }
    // As mantissa_sv_clear: whole words, so a narrow store clears its element's difference.
    unsigned int stop = (at + 2u * bytes + 7u) & ~7u;
    for (unsigned int p = at & ~7u; p < stop; p += 8u) {
        mantissa_sv_st_shared(p, 0.0);
    }
}

extern "C" __device__ __noinline__ void mantissa_sv_zero_shared(unsigned int area, unsigned int bytes)
{
    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned int n = blockDim.x * blockDim.y * blockDim.z;
    for (unsigned int p = 16u * t; p < bytes; p += 16u * n) {
        mantissa_sv_st_shared(area + p, 0.0);
        mantissa_sv_st_shared(area + p + 8u, 0.0);
    }
    __syncthreads();
}

extern "C" __device__ __noinline__ void mantissa_sv_clear(unsigned long long address, unsigned int bytes)
{
    unsigned long long at = mantissa_sv_address(address, bytes);
    if (at == 0) {
        return;
    }
    // 2 bytes of shadow per byte of data; whole words, so a narrow store clears its element's.
    unsigned long long end = (at + 2ull * bytes + 7ull) & ~7ull;
    for (unsigned long long p = at & ~7ull; p < end; p += 8) {
        *(unsigned long long *)p = 0;
    }
}

extern "C" __device__ __noinline__ void mantissa_sv_reseed(unsigned long long acc)
{
    mantissa_sv_tally_execution(acc);
    mantissa_sv_bump(acc, MANTISSA_SV_T_RESEEDED);
}

extern "C" __device__ __noinline__ void mantissa_sv_zero(unsigned long long acc, unsigned int records)
{
    for (unsigned int k = 0; k < records * (MANTISSA_SV_THREAD_BYTES / 16); ++k) {
        asm volatile("st.local.v2.u64 [%0], {%1, %1};" ::"l"(acc + 16ull * k), "l"(0ull) : "memory");
    }
}

// Word w (MANTISSA_SV_W_*) of the global record layout for the thread record at `at`, whose
// hot part is `h`: the measured counts derived, the maxima's high words widened to doubles.
// Word by word, never into an array: an array here would need a local depot, which the
// inliner refuses.
static __device__ __forceinline__ unsigned long long mantissa_sv_word_of(
    const mantissa_sv_hot &h, unsigned long long at, unsigned int w)
{
    unsigned long long executions = ((unsigned long long)(h.flags >> 8) << 32) | h.executions;
    switch (w) {
    case MANTISSA_SV_W_EXECUTIONS: return executions;
    case MANTISSA_SV_W_LOCAL_COUNT:
        return (h.flags & MANTISSA_SV_NO_LOCAL) != 0
                   ? 0ull
                   : executions - mantissa_sv_get(at, MANTISSA_SV_T_LOCAL_ZERO)
                         - mantissa_sv_get(at, MANTISSA_SV_T_LOCAL_NON_FINITE);
    case MANTISSA_SV_W_LOCAL_SUM: return (unsigned long long)__double_as_longlong(h.local_sum);
    case MANTISSA_SV_W_LOCAL_MAX: return (unsigned long long)h.local_max << 32;
    case MANTISSA_SV_W_LOCAL_ZERO: return mantissa_sv_get(at, MANTISSA_SV_T_LOCAL_ZERO);
    case MANTISSA_SV_W_LOCAL_NON_FINITE: return mantissa_sv_get(at, MANTISSA_SV_T_LOCAL_NON_FINITE);
    case MANTISSA_SV_W_ACC_COUNT:
        return (h.flags & MANTISSA_SV_NO_VALUE) != 0
                   ? 0ull
                   : executions - mantissa_sv_get(at, MANTISSA_SV_T_ACC_ZERO)
                         - mantissa_sv_get(at, MANTISSA_SV_T_ACC_NON_FINITE);
    case MANTISSA_SV_W_ACC_SUM: return (unsigned long long)__double_as_longlong(h.acc_sum);
    case MANTISSA_SV_W_ACC_MAX: return (unsigned long long)h.acc_max << 32;
    case MANTISSA_SV_W_ACC_ZERO: return mantissa_sv_get(at, MANTISSA_SV_T_ACC_ZERO);
    case MANTISSA_SV_W_ACC_NON_FINITE: return mantissa_sv_get(at, MANTISSA_SV_T_ACC_NON_FINITE);
    case MANTISSA_SV_W_CANCELLATIONS: return mantissa_sv_get(at, MANTISSA_SV_T_CANCELLATIONS);
    case MANTISSA_SV_W_CANCEL_MAX_BITS: return mantissa_sv_get(at, MANTISSA_SV_T_CANCEL_MAX_BITS);
    default: return mantissa_sv_get(at, MANTISSA_SV_T_RESEEDED);
    }
}

extern "C" __device__ __noinline__ unsigned long long mantissa_sv_word(unsigned long long acc, unsigned int w)
{
    return mantissa_sv_word_of(mantissa_sv_get_hot(acc), acc, w);
}
