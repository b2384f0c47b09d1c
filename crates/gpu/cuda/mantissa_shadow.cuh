// mantissa_shadow.cuh: the device runtime of the shadow pass (crates/ptx/src/pass/shadow.rs),
// which measures, per floating-point instruction of a kernel, the demotion error (the relative
// error of its f32 form) and the exceptions (NaN, inf, subnormal results, division by zero).
//
// PROVIDES
//   extern "C" void mantissa_shadow_demotion(unsigned int site, double r64, double r32)
//     One execution of an f64 instruction: r64 its result, r32 the result of its f32 form on the
//     operands rounded to f32, widened exactly. Counts it into the site's record as
//       always                           -> EXECUTIONS += 1
//       r64 or r32 NaN or +-inf          -> NON_FINITE += 1
//       else r64 == +-0                  -> ZERO_REFERENCE += 1
//       else e = |r32 - r64| / |r64|     -> SUM += e, MAX = max(MAX, e)
//     (the measured count is EXECUTIONS - ZERO_REFERENCE - NON_FINITE: ShadowReport::decode)
//     with d = fabs(__dsub_rn(r32, r64)), a = fabs(r64) and e = mantissa_shadow_quotient(d, a):
//     where 2^-896 <= a < 2^1021, an approximate reciprocal refined by one Newton step and one
//     corrected quotient, elsewhere __ddiv_rn(d, a). e is the correctly rounded d / a except
//     where d / a lies within a relative 2^-79.75 of a midpoint between two doubles (then it may
//     be the other neighbour), and always one of the two doubles around d / a (d / a itself
//     when that is a double: 1 for r32 == 0). The bound takes the reciprocal after its Newton
//     step within 2^-39.88, as measured on the H200 (docs/BENCHMARKS.md), not a documented
//     bound; the range takes r32 to be an f32 widened exactly. The arithmetic:
//     mantissa_ptx::pass::shadow::instrument::quotient (crates/ptx/src/pass/shadow/instrument/
//     quotient.rs).
//   extern "C" void mantissa_shadow_demotion_batch(
//       unsigned int s0, .., unsigned int s7,
//       double r64_0, double r32_0, .., double r64_7, double r32_7, unsigned int executed)
//     One execution of a batch of up to 8 f64 instructions outside loops (slot k: site s_k,
//     MANTISSA_SHADOW_NO_SITE = 0xffffffff for an unused slot; r64_k and r32_k as for
//     mantissa_shadow_demotion; bit k of `executed`: this lane executed site k, its guard held;
//     r64_k and r32_k are garbage where the bit is clear and not read; bit 8 + k: site k adds
//     its executions, set by the pass for guarded sites and for the first unguarded one, whose
//     count the batch's other unguarded sites share, as ShadowReport::decode reads them). For
//     every used slot k:
//       EXECUTIONS += the lanes with bit k, measured or not, where bit 8 + k (the measured
//                     count is EXECUTIONS - ZERO_REFERENCE - NON_FINITE: ShadowReport::decode)
//     and for each such lane, classified and computed exactly as mantissa_shadow_demotion:
//       r64 or r32 NaN or +-inf -> NON_FINITE += 1; else r64 == +-0 -> ZERO_REFERENCE += 1
//       (one atomic per lane: rare); else e -> SUM += e, MAX = max(MAX, e) (the atomic only
//       where the warp's maximum is above what a relaxed load of MAX returns).
//     The used slots come first. A whole warp (__activemask() == 0xffffffff) with four sites or
//     more reduces the 8 slots together by a transposed butterfly (xor 16 exchanges 4 slots'
//     (sum, max, count), xor 8 two, xor 4 one, xor 2 and xor 1 the last), after which lane L
//     holds slot (L >> 2) & 7 and the lanes with (L & 3) == 0 add it (one atomic instruction
//     per word for all 8 sites); a partial warp, or fewer sites, reduces site by site over the
//     active lanes. Sums in another order than site by site.
//   extern "C" void mantissa_shadow_flush(unsigned int site, unsigned long long count,
//                                         double sum, double max)
//     One thread's accumulated demotion error of a site, at an exit of its function: count
//     executions of the site (measured or not), the sum of the finite relative errors (added
//     in the thread's order with __dadd_rn) and their maximum (0 when none). Adds
//     EXECUTIONS += count, SUM += sum, MAX = max(MAX, max); a warp whose peers all have
//     count 0 does nothing.
//   extern "C" void mantissa_shadow_exception(unsigned int site, unsigned int flags)
//     One result that is not zero or normal. flags (mantissa_ptx::pass::shadow::flags): 1 NaN
//     result, 2 +-inf result, 4 subnormal result, 8 a division by +-0, 16 some operand NaN,
//     32 some operand +-inf. Counts NAN, NAN_ORIGIN (NaN, no operand NaN), INF, INF_ORIGIN
//     (inf, no operand inf), DIV_BY_ZERO, SUBNORMAL.
//
// NEEDS FROM THE MODULE IT IS MERGED INTO
//   __mantissa_shadow: `.global .align 8 .u64 __mantissa_shadow[N * 16 * 11];`, N greater than
//   every site passed: per site MANTISSA_SHADOW_COPIES copies side by side of its record of
//   MANTISSA_SHADOW_WORDS 8-byte words, in the order of the MANTISSA_SHADOW_* indices below
//   (mantissa_ptx::pass::shadow::Word); a warp adds into the copy of its SM (%smid mod 16),
//   the pass's own per-thread atomics into copy 0, and ShadowReport::decode sums them. The pass adds it,
//   zero-initialised; the host reads it back with Gpu::read_symbol and decodes it with
//   ShadowReport::decode, and zeroes it with Gpu::write_symbol before a run that must start
//   from zero.
//
// WHAT THE REWRITER PASSES
//   The site index as an immediate. A measured f64 instruction inside a loop accumulates per
//   thread (in registers, or in a .local array past mantissa_ptx's ACCUMULATED_PER_FUNCTION):
//   sum and max, the relative error computed inline exactly as mantissa_shadow_demotion does
//   (the same sequence and range; the division, like the rare r64 == +-0 and non-finite
//   executions, on an out-of-line path the code branches to and back from), summed with
//   add.rn.f64, maximum by max.f64; its executions counted by a counter it shares with the
//   unguarded sites of its basic block. It counts its rare executions by one
//   red.global.add.u64 per thread on the record's words, and mantissa_shadow_flush is called
//   for it before every ret/exit of the function, with its counter's value. A measured
//   f64 instruction outside every loop belongs to a batch: up to 8 consecutive such
//   instructions of one basic block (none across a call), each followed by copies of r64 and
//   r32 into registers of its slot (and, where it is guarded, its bit of `executed` set under
//   its guard), the batch's last one by one unguarded call of mantissa_shadow_demotion_batch,
//   before the block's terminator: the lanes that call it are exactly those that passed the
//   batch's instructions. The pass's inline_runtime (mantissa_ptx::pass::shadow::inline_runtime)
//   replaces every such call by the function's body, which it MUST: the body aggregates over
//   the active lanes, which have all passed the same batch only in an inlined copy.
//   (mantissa_shadow_demotion, one site per call under its guard, is the same measurement
//   site by site; the pass no longer calls it.)
//   mantissa_shadow_exception is called only from the out-of-line slow paths: after each
//   floating-point instruction the instrumented code tests for a result that is zero or normal
//   (testp.normal, setp.eq.or) without branching, folds the tests of a straight-line group into
//   one predicate, and branches once per group; the slow path calls this function for each
//   instruction of the group whose result was not, so a clean kernel calls it never.
//
// INVARIANTS
//   It touches no state but __mantissa_shadow and returns nothing, so an instrumented kernel
//   computes the same bits as the kernel as written. Its floating-point arithmetic is spelt with
//   explicit _rn intrinsics and one inline rcp.approx.ftz.f64, which no flag set changes;
//   comparisons, fabs and negation do not round.
//   Lanes of a warp that call it together (possibly from different sites in the flush and the
//   exception slow path: __match_any_sync groups them by site; one site in an inlined
//   mantissa_shadow_demotion) are aggregated first: ballots for counts, shuffles for the sum, two
//   __reduce_max_sync on the words of the maximum, then one lane does one atomic per word that
//   changes (the rare zero-reference and non-finite executions: one atomic per lane). Sums are in an order that
//   depends on scheduling (atomicAdd on doubles), so they may differ from a serial sum within
//   the bound of any summation order; counts and maxima are exact. The maximum is an atomicMax
//   on the bits of a non-negative double (which order as unsigned integers).
//   Needs sm_80+ (__reduce_max_sync; __match_any_sync needs sm_70, atomicAdd on double sm_60).
//
// HOW IT IS BUILT
//   mantissa_gpu::runtime compiles it with NVRTC and -rdc=true (see mantissa_count.cuh: without
//   it NVRTC drops these uncalled functions); __mantissa_shadow becomes an `.extern .global`
//   declaration, resolved by mantissa_ptx::link::merge_runtime against the pass's definition.
//   Everything here is named mantissa_ or __mantissa_ so that merging cannot clash with user names.

#define MANTISSA_SHADOW_WORDS 11
#define MANTISSA_SHADOW_COPIES 16  // copies of each site's record; a warp adds into its SM's
#define MANTISSA_SHADOW_EXECUTIONS 0
#define MANTISSA_SHADOW_SUM 1
#define MANTISSA_SHADOW_MAX 2
#define MANTISSA_SHADOW_ZERO_REFERENCE 3
#define MANTISSA_SHADOW_NON_FINITE 4
#define MANTISSA_SHADOW_NAN 5
#define MANTISSA_SHADOW_NAN_ORIGIN 6
#define MANTISSA_SHADOW_INF 7
#define MANTISSA_SHADOW_INF_ORIGIN 8
#define MANTISSA_SHADOW_DIV_BY_ZERO 9
#define MANTISSA_SHADOW_SUBNORMAL 10

#define MANTISSA_SHADOW_FLAG_NAN 1u
#define MANTISSA_SHADOW_FLAG_INF 2u
#define MANTISSA_SHADOW_FLAG_SUBNORMAL 4u
#define MANTISSA_SHADOW_FLAG_DIV_BY_ZERO 8u
#define MANTISSA_SHADOW_FLAG_OPERAND_NAN 16u
#define MANTISSA_SHADOW_FLAG_OPERAND_INF 32u

extern __device__ unsigned long long __mantissa_shadow[];

static __device__ __forceinline__ unsigned int mantissa_shadow_lane()
{
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// A double from lane `from` (`xor`: lane ^ `from`) of `mask`. Written as inline PTX rather than
// __shfl_sync: NVRTC spells that one with a predicate output (`shfl.sync.idx.b32 %r1|%p1, ...`),
// an operand form mantissa_ptx's parser keeps verbatim, which the merge refuses.
static __device__ __forceinline__ double mantissa_shadow_shfl(
    unsigned int mask, double x, unsigned int from, bool xor_lane)
{
    int hi = __double2hiint(x);
    int lo = __double2loint(x);
    if (xor_lane) {
        asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 31, %2;" : "+r"(hi) : "r"(from), "r"(mask));
        asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 31, %2;" : "+r"(lo) : "r"(from), "r"(mask));
    } else {
        asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, %2;" : "+r"(hi) : "r"(from), "r"(mask));
        asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, %2;" : "+r"(lo) : "r"(from), "r"(mask));
    }
    return __hiloint2double(hi, lo);
}

// Adds the lanes' `n` over `peers` into word `w` of the record, from the lowest lane only.
static __device__ __forceinline__ void mantissa_shadow_add(
    unsigned long long *record, int w, unsigned int peers, bool leader, bool counted)
{
    unsigned int n = __popc(__ballot_sync(peers, counted));
    if (leader && n != 0) {
        atomicAdd(&record[w], (unsigned long long)n);
    }
}

// Site `site`'s record in the copy of this warp's SM (the host sums the copies): warps of
// different SMs add into different addresses, so fewer atomics wait on one another.
static __device__ __forceinline__ unsigned long long *mantissa_shadow_record(unsigned int site)
{
    unsigned int sm;
    asm("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long copy = sm % MANTISSA_SHADOW_COPIES;
    return &__mantissa_shadow[((unsigned long long)site * MANTISSA_SHADOW_COPIES + copy) * MANTISSA_SHADOW_WORDS];
}

static __device__ __forceinline__ bool mantissa_shadow_finite(double x)
{
    return fabs(x) <= 1.7976931348623157e308;  // false for NaN and +-inf
}

// The demotion error's quotient d / a (see PROVIDES), written as the loop sites' inline code
// is (mantissa_ptx's pass/shadow/instrument/quotient.rs): the range on a's high word, 127 << 20
// (2^-896) on, 2044 << 20 (2^1021) excluded, where the reciprocal is neither flushed nor the
// quotient out of the normal range for any f32 r32; d == 0 gives +0 either way.
static __device__ __forceinline__ double mantissa_shadow_quotient(double d, double a)
{
    unsigned int offset = (unsigned int)__double2hiint(a) - 0x07f00000u;
    if (offset >= 0x77d00000u) {
        return __ddiv_rn(d, a);
    }
    double y;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(a));
    y = __fma_rn(y, __fma_rn(-a, y, 1.0), y);
    double q = __dmul_rn(d, y);
    return __fma_rn(__fma_rn(-q, a, d), y, q);
}

// One execution's demotion error over the lanes `peers` (all at one site): the counts, sum and
// maximum of the lanes' relative errors added into the site's record by the lowest peer.
static __device__ __forceinline__ void mantissa_shadow_demotion_over(
    unsigned int peers, unsigned int site, double r64, double r32)
{
    unsigned int lane = mantissa_shadow_lane();
    bool leader = lane == (unsigned int)(__ffs(peers) - 1);
    unsigned long long *record = mantissa_shadow_record(site);

    bool non_finite = !mantissa_shadow_finite(r64) || !mantissa_shadow_finite(r32);
    bool zero_reference = !non_finite && r64 == 0.0;
    bool measured = !non_finite && !zero_reference;
    double e = measured ? mantissa_shadow_quotient(fabs(__dsub_rn(r32, r64)), fabs(r64)) : 0.0;

    // Rare: one atomic per lane that has one, rather than a ballot per kind on every execution.
    if (non_finite) {
        atomicAdd(&record[MANTISSA_SHADOW_NON_FINITE], 1ull);
    }
    if (zero_reference) {
        atomicAdd(&record[MANTISSA_SHADOW_ZERO_REFERENCE], 1ull);
    }
    if (leader) {
        atomicAdd(&record[MANTISSA_SHADOW_EXECUTIONS], (unsigned long long)__popc(peers));
    }
    if (__ballot_sync(peers, measured) == 0) {
        return;
    }
    // The maximum: e >= 0, so its bits order as an unsigned integer: the largest high word over
    // the peers, then the largest low word among the lanes holding that high word (0 for lanes
    // not measured: e = 0 changes nothing).
    unsigned int hi = (unsigned int)__double2hiint(e);
    unsigned int lo = (unsigned int)__double2loint(e);
    unsigned int max_hi = __reduce_max_sync(peers, hi);
    unsigned int max_lo = __reduce_max_sync(peers, hi == max_hi ? lo : 0u);
    // The sum over the peers.
    double sum = e;
    if (peers == 0xffffffffu) {
        for (unsigned int d = 16; d > 0; d >>= 1) {
            sum = __dadd_rn(sum, mantissa_shadow_shfl(peers, sum, d, true));
        }
    } else {
        sum = 0.0;
        for (unsigned int rest = peers; rest != 0; rest &= rest - 1) {
            sum = __dadd_rn(sum, mantissa_shadow_shfl(peers, e, __ffs(rest) - 1, false));
        }
    }
    if (leader) {
        atomicAdd((double *)&record[MANTISSA_SHADOW_SUM], sum);
        atomicMax(&record[MANTISSA_SHADOW_MAX],
                  ((unsigned long long)max_hi << 32) | (unsigned long long)max_lo);
    }
}

extern "C" __device__ __noinline__ void mantissa_shadow_demotion(
    unsigned int site, double r64, double r32)
{
    // Inlined into its one call site (see WHAT THE REWRITER PASSES): every lane executing this
    // copy is at the same site, so the active lanes are the peers.
    mantissa_shadow_demotion_over(__activemask(), site, r64, r32);
}

// A u64 from lane `from` of `mask`, through the double shuffle (bits kept).
static __device__ __forceinline__ unsigned long long mantissa_shadow_shfl_u64(
    unsigned int mask, unsigned long long x, unsigned int from, bool xor_lane)
{
    return (unsigned long long)__double_as_longlong(
        mantissa_shadow_shfl(mask, __longlong_as_double((long long)x), from, xor_lane));
}

extern "C" __device__ __noinline__ void mantissa_shadow_flush(
    unsigned int site, unsigned long long count, double sum, double max)
{
    unsigned int active = __activemask();
    unsigned int peers = __match_any_sync(active, site);
    if (__ballot_sync(peers, count != 0) == 0) {
        return;  // no peer executed the site (sum and max are 0 too)
    }
    bool leader = mantissa_shadow_lane() == (unsigned int)(__ffs(peers) - 1);
    unsigned long long *record = mantissa_shadow_record(site);
    // Lanes that measured nothing hold sum 0 and max 0: neither changes the totals.
    unsigned long long total = 0;
    double sums = 0.0;
    double maxima = 0.0;
    if (peers == 0xffffffffu) {
        total = count;
        sums = sum;
        maxima = max;
        for (unsigned int d = 16; d > 0; d >>= 1) {
            total += mantissa_shadow_shfl_u64(peers, total, d, true);
            sums = __dadd_rn(sums, mantissa_shadow_shfl(peers, sums, d, true));
            maxima = fmax(maxima, mantissa_shadow_shfl(peers, maxima, d, true));
        }
    } else {
        for (unsigned int rest = peers; rest != 0; rest &= rest - 1) {
            unsigned int from = __ffs(rest) - 1;
            total += mantissa_shadow_shfl_u64(peers, count, from, false);
            sums = __dadd_rn(sums, mantissa_shadow_shfl(peers, sum, from, false));
            maxima = fmax(maxima, mantissa_shadow_shfl(peers, max, from, false));
        }
    }
    if (leader) {
        atomicAdd(&record[MANTISSA_SHADOW_EXECUTIONS], total);
        atomicAdd((double *)&record[MANTISSA_SHADOW_SUM], sums);
        atomicMax(&record[MANTISSA_SHADOW_MAX], (unsigned long long)__double_as_longlong(maxima));
    }
}

extern "C" __device__ __noinline__ void mantissa_shadow_exception(
    unsigned int site, unsigned int flags)
{
    unsigned int active = __activemask();
    unsigned int peers = __match_any_sync(active, site);
    bool leader = mantissa_shadow_lane() == (unsigned int)(__ffs(peers) - 1);
    unsigned long long *record = mantissa_shadow_record(site);

    bool nan = (flags & MANTISSA_SHADOW_FLAG_NAN) != 0;
    bool inf = (flags & MANTISSA_SHADOW_FLAG_INF) != 0;
    mantissa_shadow_add(record, MANTISSA_SHADOW_NAN, peers, leader, nan);
    mantissa_shadow_add(record, MANTISSA_SHADOW_NAN_ORIGIN, peers, leader,
                        nan && (flags & MANTISSA_SHADOW_FLAG_OPERAND_NAN) == 0);
    mantissa_shadow_add(record, MANTISSA_SHADOW_INF, peers, leader, inf);
    mantissa_shadow_add(record, MANTISSA_SHADOW_INF_ORIGIN, peers, leader,
                        inf && (flags & MANTISSA_SHADOW_FLAG_OPERAND_INF) == 0);
    mantissa_shadow_add(record, MANTISSA_SHADOW_DIV_BY_ZERO, peers, leader,
                        (flags & MANTISSA_SHADOW_FLAG_DIV_BY_ZERO) != 0);
    mantissa_shadow_add(record, MANTISSA_SHADOW_SUBNORMAL, peers, leader,
                        (flags & MANTISSA_SHADOW_FLAG_SUBNORMAL) != 0);
}

// ---- Batches of straight-line sites (mantissa_shadow_demotion_batch) ----

#define MANTISSA_SHADOW_BATCH 8                  // sites per batch call at most
#define MANTISSA_SHADOW_NO_SITE 0xffffffffu      // an unused slot's site index

// What one lane, then a group of lanes, adds to one site's record: the sum of the relative
// errors, their maximum (the bits of a non-negative double, which order as unsigned) and the
// executions.
struct mantissa_shadow_part {
    double sum;
    unsigned long long max;
    unsigned int count;
};

static __device__ __forceinline__ mantissa_shadow_part mantissa_shadow_part_add(
    mantissa_shadow_part a, mantissa_shadow_part b)
{
    mantissa_shadow_part r;
    r.sum = __dadd_rn(a.sum, b.sum);
    r.max = a.max > b.max ? a.max : b.max;
    r.count = a.count + b.count;
    return r;
}

// `p` from lane ^ `d` of the full warp: the sum (2 shfl.b32), the maximum (2) and the count (1).
static __device__ __forceinline__ mantissa_shadow_part mantissa_shadow_part_bfly(
    mantissa_shadow_part p, unsigned int d)
{
    mantissa_shadow_part r;
    r.sum = mantissa_shadow_shfl(0xffffffffu, p.sum, d, true);
    r.max = mantissa_shadow_shfl_u64(0xffffffffu, p.max, d, true);
    unsigned int c = p.count;
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 31, %2;" : "+r"(c) : "r"(d), "r"(0xffffffffu));
    r.count = c;
    return r;
}

// Slot `k` of eight values (k need not be a constant: a chain of selects, no array in memory,
// so that the inliner gets a body without a local depot).
template <typename T>
static __device__ __forceinline__ T mantissa_shadow_pick(
    unsigned int k, T x0, T x1, T x2, T x3, T x4, T x5, T x6, T x7)
{
    T r = x0;
    r = k == 1 ? x1 : r;
    r = k == 2 ? x2 : r;
    r = k == 3 ? x3 : r;
    r = k == 4 ? x4 : r;
    r = k == 5 ? x5 : r;
    r = k == 6 ? x6 : r;
    r = k == 7 ? x7 : r;
    return r;
}

// One lane's part at one site of a batch: nothing where it did not execute the site; else one
// execution, and the relative error exactly as mantissa_shadow_demotion_over computes it, or
// (rare) one atomic on NON_FINITE or ZERO_REFERENCE and no error.
static __device__ __forceinline__ mantissa_shadow_part mantissa_shadow_batch_part(
    unsigned int site, double r64, double r32, bool executed)
{
    mantissa_shadow_part p;
    p.sum = 0.0;
    p.max = 0;
    p.count = executed ? 1u : 0u;
    if (!executed) {
        return p;
    }
    bool non_finite = !mantissa_shadow_finite(r64) || !mantissa_shadow_finite(r32);
    if (non_finite || r64 == 0.0) {
        unsigned long long *record = mantissa_shadow_record(site);
        atomicAdd(&record[non_finite ? MANTISSA_SHADOW_NON_FINITE : MANTISSA_SHADOW_ZERO_REFERENCE],
                  1ull);
        return p;
    }
    double e = mantissa_shadow_quotient(fabs(__dsub_rn(r32, r64)), fabs(r64));
    p.sum = e;
    p.max = (unsigned long long)__double_as_longlong(e);
    return p;
}

// The group's totals of one site into its record, by one lane: a site nobody executed (or an
// unused slot) touches nothing; its executions only where `counts` (the batch's other
// unguarded sites share its first one's: ShadowReport::decode); a zero sum is not added, and
// a maximum not above the record's is not either. The record's maximum only grows, so any
// value a relaxed load returns is at most the current one: skipping on it is exact, and a
// load costs the L2 less than an atomic, which serializes with every other warp's on the
// same word (atomics, not arithmetic, bound a kernel of straight-line sites).
static __device__ __forceinline__ void mantissa_shadow_batch_add(
    unsigned int site, mantissa_shadow_part t, bool counts)
{
    if (site == MANTISSA_SHADOW_NO_SITE || t.count == 0) {
        return;
    }
    unsigned long long *record = mantissa_shadow_record(site);
    if (counts) {
        atomicAdd(&record[MANTISSA_SHADOW_EXECUTIONS], (unsigned long long)t.count);
    }
    if (t.sum != 0.0) {
        atomicAdd((double *)&record[MANTISSA_SHADOW_SUM], t.sum);
    }
    if (t.max != 0) {
        unsigned long long seen;
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
                     : "=l"(seen)
                     : "l"(&record[MANTISSA_SHADOW_MAX])
                     : "memory");
        if (t.max > seen) {
            atomicMax(&record[MANTISSA_SHADOW_MAX], t.max);
        }
    }
}

extern "C" __device__ __noinline__ void mantissa_shadow_demotion_batch(
    unsigned int s0, unsigned int s1, unsigned int s2, unsigned int s3,
    unsigned int s4, unsigned int s5, unsigned int s6, unsigned int s7,
    double r64_0, double r32_0, double r64_1, double r32_1,
    double r64_2, double r32_2, double r64_3, double r32_3,
    double r64_4, double r32_4, double r64_5, double r32_5,
    double r64_6, double r32_6, double r64_7, double r32_7,
    unsigned int executed)
{
    // Inlined into its one call site (see WHAT THE REWRITER PASSES): every lane executing this
    // copy passed the same sites, and executed those its bits say.
    mantissa_shadow_part v[MANTISSA_SHADOW_BATCH];
    v[0] = mantissa_shadow_batch_part(s0, r64_0, r32_0, (executed & 1u) != 0);
    v[1] = mantissa_shadow_batch_part(s1, r64_1, r32_1, (executed & 2u) != 0);
    v[2] = mantissa_shadow_batch_part(s2, r64_2, r32_2, (executed & 4u) != 0);
    v[3] = mantissa_shadow_batch_part(s3, r64_3, r32_3, (executed & 8u) != 0);
    v[4] = mantissa_shadow_batch_part(s4, r64_4, r32_4, (executed & 16u) != 0);
    v[5] = mantissa_shadow_batch_part(s5, r64_5, r32_5, (executed & 32u) != 0);
    v[6] = mantissa_shadow_batch_part(s6, r64_6, r32_6, (executed & 64u) != 0);
    v[7] = mantissa_shadow_batch_part(s7, r64_7, r32_7, (executed & 128u) != 0);

    unsigned int active = __activemask();
    unsigned int lane = mantissa_shadow_lane();
    // The butterfly pays 45 shuffles whatever the number of sites; site by site costs about
    // 13 warp operations each: below four sites (the used slots come first) the loop is cheaper.
    if (active == 0xffffffffu && s3 != MANTISSA_SHADOW_NO_SITE) {
        // The transposed butterfly: at xor 16 each lane keeps the half of the eight sites its
        // lane bit 4 selects (adding its partner's values of that half, and giving it the other
        // half), at xor 8 a half of those by bit 3, at xor 4 one by bit 2; xor 2 and xor 1 add
        // the last over the four lanes that hold the same site. Lane L ends with the warp's
        // totals of site (L >> 2) & 7: 45 shuffles for eight sites, not 8 * 10 and 16 redux.
        bool upper = (lane & 16u) != 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            mantissa_shadow_part keep = upper ? v[4 + i] : v[i];
            mantissa_shadow_part give = upper ? v[i] : v[4 + i];
            v[i] = mantissa_shadow_part_add(keep, mantissa_shadow_part_bfly(give, 16));
        }
        upper = (lane & 8u) != 0;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            mantissa_shadow_part keep = upper ? v[2 + i] : v[i];
            mantissa_shadow_part give = upper ? v[i] : v[2 + i];
            v[i] = mantissa_shadow_part_add(keep, mantissa_shadow_part_bfly(give, 8));
        }
        upper = (lane & 4u) != 0;
        {
            mantissa_shadow_part keep = upper ? v[1] : v[0];
            mantissa_shadow_part give = upper ? v[0] : v[1];
            v[0] = mantissa_shadow_part_add(keep, mantissa_shadow_part_bfly(give, 4));
        }
        v[0] = mantissa_shadow_part_add(v[0], mantissa_shadow_part_bfly(v[0], 2));
        v[0] = mantissa_shadow_part_add(v[0], mantissa_shadow_part_bfly(v[0], 1));
        if ((lane & 3u) == 0) {
            unsigned int k = (lane >> 2) & 7u;
            mantissa_shadow_batch_add(mantissa_shadow_pick(k, s0, s1, s2, s3, s4, s5, s6, s7),
                                      v[0], ((executed >> (8u + k)) & 1u) != 0);
        }
        return;
    }
    // A partial warp, or fewer than four sites: site by site over the active lanes, as
    // mantissa_shadow_demotion_over reduces (a ballot for the count, two redux for the
    // maximum, shuffles for the sum), the lowest active lane adding; up to the first unused
    // slot (the used ones come first).
    bool leader = lane == (unsigned int)(__ffs(active) - 1);
#pragma unroll 1
    for (unsigned int k = 0; k < MANTISSA_SHADOW_BATCH; ++k) {
        unsigned int site = mantissa_shadow_pick(k, s0, s1, s2, s3, s4, s5, s6, s7);
        if (site == MANTISSA_SHADOW_NO_SITE) {
            break;
        }
        unsigned int lanes = __ballot_sync(active, ((executed >> k) & 1u) != 0);
        if (lanes == 0) {
            continue;  // the same for every active lane: they all passed this call
        }
        mantissa_shadow_part p;
        p.sum = mantissa_shadow_pick(k, v[0].sum, v[1].sum, v[2].sum, v[3].sum, v[4].sum,
                                     v[5].sum, v[6].sum, v[7].sum);
        p.max = mantissa_shadow_pick(k, v[0].max, v[1].max, v[2].max, v[3].max, v[4].max,
                                     v[5].max, v[6].max, v[7].max);
        unsigned int hi = (unsigned int)(p.max >> 32);
        unsigned int lo = (unsigned int)p.max;
        unsigned int max_hi = __reduce_max_sync(active, hi);
        unsigned int max_lo = __reduce_max_sync(active, hi == max_hi ? lo : 0u);
        mantissa_shadow_part t;
        t.sum = 0.0;
        for (unsigned int rest = active; rest != 0; rest &= rest - 1) {
            t.sum = __dadd_rn(t.sum, mantissa_shadow_shfl(active, p.sum, __ffs(rest) - 1, false));
        }
        t.max = ((unsigned long long)max_hi << 32) | (unsigned long long)max_lo;
        t.count = __popc(lanes);
        if (leader) {
            mantissa_shadow_batch_add(site, t, ((executed >> (8u + k)) & 1u) != 0);
        }
    }
}
