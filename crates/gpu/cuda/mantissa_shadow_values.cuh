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
//   extern "C" mantissa_sv_pair mantissa_sv_arith(unsigned int record, unsigned int how,
//       double a, double ah, double al, double b, double bh, double bl,
//       double c, double ch, double cl, double r)
//     One execution of a site: operands a, b, c (unused ones 0) with their shadows (ah, al)...,
//     its result r. `how` = operation | flags | rounding (MANTISSA_SV_* below). Returns the
//     result's shadow: the operation in double-word on the operands' shadows (for an f32 site,
//     MANTISSA_SV_F32, rounded to one double: (hi, 0)). Records, into `record`:
//       EXECUTIONS += 1;
//       local error (unless MANTISSA_SV_NO_LOCAL): x = the exact operation on the operand VALUES
//         in double-word (exact for add, sub, mul, conversions and roundings to integers; 3u^2
//         fma, 3u^2 div, 25/8u^2 sqrt, u = 2^-53);
//         x or r not finite -> LOCAL_NON_FINITE; x = 0 -> LOCAL_ZERO; else
//         e = |x - r| / |x| as __ddiv_rn(|dw_sub_base(x, r).hi|, |x.hi|) -> LOCAL_COUNT/SUM/MAX;
//       accumulated error (unless MANTISSA_SV_NO_VALUE): s = the returned shadow;
//         r or s not finite -> ACC_NON_FINITE; s = 0 -> ACC_ZERO; else
//         e = |r - s| / |s| as __ddiv_rn(|dw_sub_base(s, r).hi|, |s.hi|) -> ACC_COUNT/SUM/MAX;
//       a cancellation (add, sub, fma with local error measured): the result lost
//         b = E - exponent(r) >= 10 bits, E the largest exponent of the addends' values (a*b
//         rounded, and c, for an fma), 64 when r = 0, AND some operand carried an accumulated
//         error (its shadow differs from its value) -> CANCELLATIONS += 1, CANCEL_MAX_BITS max.
//     MANTISSA_SV_RESEED: shadow := (r, 0) and RESEEDED += 1; nothing else is measured.
//   extern "C" mantissa_sv_pair mantissa_sv_load(unsigned int record, unsigned long long address,
//       double value, unsigned int f32)
//     A float loaded from `address`: its shadow is value + the difference stored for it in the
//     shadow buffer (f64x2 for an f64, f64 for an f32), or (value, 0) when the address is in no
//     registered buffer (RESEEDED += 1). EXECUTIONS += 1.
//   extern "C" void mantissa_sv_store(unsigned long long address, double value, double hi,
//       double lo, unsigned int f32)
//     A float stored to `address`: writes the difference (hi, lo) - value (f32: one double,
//     __dsub_rn(hi, value)) to its shadow, or nothing when the address is in no buffer. A
//     non-finite value or shadow stores a zero difference (the shadow is re-seeded on reload).
//   extern "C" void mantissa_sv_clear(unsigned long long address, unsigned int bytes)
//     A store the pass cannot shadow (an integer store, an atomic): zeroes the differences of
//     `bytes` bytes of data at `address` (shadow := value).
//   extern "C" void mantissa_sv_reseed(unsigned int record)
//     A re-seed point that is not a site (a load from unshadowed memory, bits moved from an
//     integer, a call result...): EXECUTIONS += 1, RESEEDED += 1 (the caller sets shadow := value).
//
// NEEDS FROM THE MODULE IT IS MERGED INTO
//   __mantissa_values: `.global .align 8 .u64 __mantissa_values[14 * N]`: one record of
//     MANTISSA_SV_WORDS 8-byte words per site and re-seed point, in the order of the
//     MANTISSA_SV_W_* indices (mantissa_ptx::pass::shadow_values::Word); counts u64, sums and
//     maxima f64 (CANCEL_MAX_BITS u64). Zero-initialised by the pass.
//   __mantissa_values_table: `.global .align 8 .u64 __mantissa_values_table[1 + 3 * 32]`: word
//     0 the number of buffers n <= 32, then per buffer (device address, bytes, shadow address).
//     The host writes it (Gpu::write_symbol) after the run's restore; the shadow buffer of a
//     buffer of B bytes has 2 B bytes, zero-filled before the run (zero = "shadow = value").
//
// WHAT THE REWRITER PASSES
//   Record indices and `how` as immediates; values and shadows in registers; addresses as u64
//   (global or generic: for device allocations the two are the same number).
//
// INVARIANTS
//   It writes nothing but __mantissa_values and the shadow buffers, and returns its results, so
//   an instrumented kernel computes the same bits as the kernel as written. Its arithmetic is
//   mantissa.cuh's (explicit _rn intrinsics, which no flag set changes) and _rn intrinsics here.
//   Lanes of a warp that record together (__match_any_sync by record) are aggregated first:
//   ballots for counts, shuffles for sums and maxima, then one atomic per changed word from the
//   lowest lane. Sums depend on scheduling (atomicAdd on doubles); counts and maxima are exact.
//   A buffer is read and written with one element type (an f64 buffer by f64 accesses): the
//   difference of an element is found at shadow + 2 (address - base) with the width of the
//   access. Needs sm_70+.
//
// HOW IT IS BUILT
//   As mantissa_shadow.cuh: NVRTC with -rdc=true (mantissa_gpu::runtime), merged by
//   mantissa_ptx::link::merge_runtime; the two globals are `.extern` here, defined by the pass.

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
#define MANTISSA_SV_CANCEL_BITS 10

extern __device__ unsigned long long __mantissa_values[];
extern __device__ unsigned long long __mantissa_values_table[];

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

// The lanes calling together with the same record, and whether this lane speaks for them.
struct mantissa_sv_peers {
    unsigned int mask;
    bool leader;
    unsigned long long *record;
};

static __device__ __forceinline__ mantissa_sv_peers mantissa_sv_group(unsigned int record)
{
    mantissa_sv_peers g;
    g.mask = __match_any_sync(__activemask(), record);
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    g.leader = lane == (unsigned int)(__ffs(g.mask) - 1);
    g.record = &__mantissa_values[(unsigned long long)record * MANTISSA_SV_WORDS];
    return g;
}

// Word `w` += the number of peers with `counted`.
static __device__ __forceinline__ void mantissa_sv_count(const mantissa_sv_peers &g, int w, bool counted)
{
    unsigned int n = __popc(__ballot_sync(g.mask, counted));
    if (g.leader && n != 0) {
        atomicAdd(&g.record[w], (unsigned long long)n);
    }
}

// Words w, w+1, w+2 (count, sum, max) take the peers' `e` where `measured` (e >= 0, finite).
static __device__ void mantissa_sv_error(const mantissa_sv_peers &g, int w, bool measured, double e)
{
    unsigned int lanes = __ballot_sync(g.mask, measured);
    if (lanes == 0) {
        return;
    }
    double x = measured ? e : 0.0;
    double sum = 0.0;
    double max = 0.0;
    for (unsigned int rest = g.mask; rest != 0; rest &= rest - 1) {
        double v = mantissa_sv_shfl(g.mask, x, __ffs(rest) - 1);
        sum = __dadd_rn(sum, v);
        max = fmax(max, v);
    }
    if (g.leader) {
        atomicAdd(&g.record[w], (unsigned long long)__popc(lanes));
        atomicAdd((double *)&g.record[w + 1], sum);
        atomicMax(&g.record[w + 2], (unsigned long long)__double_as_longlong(max));
    }
}

// Word w = max(word, the peers' `bits` where `counted`), by shuffles (no sm_80 reductions).
static __device__ void mantissa_sv_max_bits(const mantissa_sv_peers &g, int w, bool counted, unsigned int bits)
{
    double x = counted ? (double)bits : 0.0;
    double max = 0.0;
    for (unsigned int rest = g.mask; rest != 0; rest &= rest - 1) {
        max = fmax(max, mantissa_sv_shfl(g.mask, x, __ffs(rest) - 1));
    }
    if (g.leader && max != 0.0) {
        atomicMax(&g.record[w], (unsigned long long)max);
    }
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
    mantissa::f64x2 d = mantissa::dw_sub_base(x, r);
    return __ddiv_rn(fabs(d.hi), fabs(x.hi));
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

// Whether a value differs from its shadow (carries accumulated error).
static __device__ __forceinline__ bool mantissa_sv_carries(double v, double h, double l)
{
    return v != h || l != 0.0;
}

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_arith(
    unsigned int record, unsigned int how, double a, double ah, double al, double b, double bh,
    double bl, double c, double ch, double cl, double r)
{
    using namespace mantissa;
    mantissa_sv_peers g = mantissa_sv_group(record);
    unsigned int op = how & MANTISSA_SV_OP_MASK;
    bool reseed = op == MANTISSA_SV_RESEED;
    mantissa_sv_count(g, MANTISSA_SV_W_EXECUTIONS, true);
    mantissa_sv_count(g, MANTISSA_SV_W_RESEEDED, reseed);
    if (__ballot_sync(g.mask, !reseed) == 0) {
        return mantissa_sv_make(r, 0.0);
    }

    f64x2 s = reseed ? dw_from_base(r)
                     : mantissa_sv_shadow(op, (how >> MANTISSA_SV_MODE_SHIFT) & 3u, dw_make(ah, al),
                                          dw_make(bh, bl), dw_make(ch, cl));
    if ((how & MANTISSA_SV_F32) != 0) {
        s = dw_from_base(s.hi);  // the f64 shadow of an f32: hi is RN(hi + lo)
    }

    bool local = !reseed && (how & MANTISSA_SV_NO_LOCAL) == 0;
    bool ok = false, zero = false;
    double e = 0.0;
    if (local) {
        unsigned int mode = (how >> MANTISSA_SV_MODE_SHIFT) & 3u;
        e = mantissa_sv_relative(mantissa_sv_exact(op, mode, a, b, c), r, ok, zero);
    }
    mantissa_sv_count(g, MANTISSA_SV_W_LOCAL_ZERO, local && zero);
    mantissa_sv_count(g, MANTISSA_SV_W_LOCAL_NON_FINITE, local && !ok && !zero);
    mantissa_sv_error(g, MANTISSA_SV_W_LOCAL_COUNT, local && ok, e);

    bool value = !reseed && (how & MANTISSA_SV_NO_VALUE) == 0;
    bool acc_ok = false, acc_zero = false;
    double acc = 0.0;
    if (value) {
        acc = mantissa_sv_relative(s, r, acc_ok, acc_zero);
    }
    mantissa_sv_count(g, MANTISSA_SV_W_ACC_ZERO, value && acc_zero);
    mantissa_sv_count(g, MANTISSA_SV_W_ACC_NON_FINITE, value && !acc_ok && !acc_zero);
    mantissa_sv_error(g, MANTISSA_SV_W_ACC_COUNT, value && acc_ok, acc);

    // Cancellation: the bits the sum lost against its largest addend, by value.
    bool sum_op = op == MANTISSA_SV_ADD || op == MANTISSA_SV_SUB || op == MANTISSA_SV_FMA;
    unsigned int lost = 0;
    if (local && sum_op && mantissa_sv_finite(r)) {
        double x = op == MANTISSA_SV_FMA ? __dmul_rn(a, b) : a;
        double y = op == MANTISSA_SV_FMA ? c : b;
        int ex = 0, ey = 0, er = 0;
        bool hx = exponent(x, ex), hy = exponent(y, ey);
        int big = hx && hy ? max(ex, ey) : (hx ? ex : ey);
        bool carried = mantissa_sv_carries(a, ah, al) || mantissa_sv_carries(b, bh, bl)
                       || (op == MANTISSA_SV_FMA && mantissa_sv_carries(c, ch, cl));
        if ((hx || hy) && carried) {
            int bits = exponent(r, er) ? big - er : 64;
            lost = bits >= MANTISSA_SV_CANCEL_BITS ? (unsigned int)min(bits, 64) : 0u;
        }
    }
    mantissa_sv_count(g, MANTISSA_SV_W_CANCELLATIONS, lost != 0);
    mantissa_sv_max_bits(g, MANTISSA_SV_W_CANCEL_MAX_BITS, lost != 0, lost);
    return mantissa_sv_make(s.hi, s.lo);
}

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

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_load(
    unsigned int record, unsigned long long address, double value, unsigned int f32)
{
    mantissa_sv_peers g = mantissa_sv_group(record);
    unsigned long long at = mantissa_sv_address(address, f32 ? 4u : 8u);
    mantissa_sv_count(g, MANTISSA_SV_W_EXECUTIONS, true);
    mantissa_sv_count(g, MANTISSA_SV_W_RESEEDED, at == 0);
    if (at == 0) {
        return mantissa_sv_make(value, 0.0);
    }
    const double *diff = (const double *)at;
    if (f32) {
        return mantissa_sv_make(__dadd_rn(value, diff[0]), 0.0);
    }
    mantissa::f64x2 s = mantissa::dw_add_base(mantissa::dw_make(diff[0], diff[1]), value);
    return mantissa_sv_make(s.hi, s.lo);
}

extern "C" __device__ __noinline__ void mantissa_sv_store(
    unsigned long long address, double value, double hi, double lo, unsigned int f32)
{
    unsigned long long at = mantissa_sv_address(address, f32 ? 4u : 8u);
    if (at == 0) {
        return;
    }
    double *diff = (double *)at;
    bool finite = mantissa_sv_finite(value) && mantissa_sv_finite(hi) && mantissa_sv_finite(lo);
    if (f32) {
        diff[0] = finite ? __dsub_rn(hi, value) : 0.0;
        return;
    }
    mantissa::f64x2 d = finite ? mantissa::dw_sub_base(mantissa::dw_make(hi, lo), value)
                               : mantissa::dw_from_base(0.0);
    diff[0] = d.hi;
    diff[1] = d.lo;
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

extern "C" __device__ __noinline__ void mantissa_sv_reseed(unsigned int record)
{
    mantissa_sv_peers g = mantissa_sv_group(record);
    mantissa_sv_count(g, MANTISSA_SV_W_EXECUTIONS, true);
    mantissa_sv_count(g, MANTISSA_SV_W_RESEEDED, true);
}
