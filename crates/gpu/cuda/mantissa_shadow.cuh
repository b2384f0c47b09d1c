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
//   executions, on an out-of-line path that a group of up to 4 sites branches to once and
//   back from), summed with add.rn.f64, maximum by a compare and select (as max.f64 for
//   these non-negative numbers); its executions counted by a counter it shares with the
//   unguarded sites of its basic block. It counts its rare executions by one
//   red.global.add.u64 per thread on the record's words, and mantissa_shadow_flush is called
//   for it before every ret/exit of the function, with its counter's value. A measured
//   f64 instruction outside every loop calls mantissa_shadow_demotion, under its guard, after
//   every execution, and the pass's inline_runtime (mantissa_ptx::pass::shadow::inline_runtime)
//   replaces every such call by the function's body, which it MUST: the body aggregates over
//   the active lanes, which are all at one site only in an inlined copy.
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
