// mantissa_shadow_values_warp.cuh: the part of the shadow-values runtime that combines the
// lanes of a warp before adding to the statistics global: the _once forms (sites, loads and
// re-seed points outside loops, added at each execution) and mantissa_sv_flush (the thread
// records of loop instructions, added at each exit). Their contract is
// mantissa_shadow_values.cuh's (PROVIDES, NEEDS, INVARIANTS): mantissa_gpu::runtime::SHADOW_VALUES
// compiles mantissa.cuh, mantissa_shadow_values.cuh and this file as one source, in that order,
// so this file includes nothing and uses their definitions.
//
// WARP OPERATIONS
//   A _once form is inlined into its one call site (mantissa_ptx::pass::inline), so its active
//   lanes (__activemask()) are exactly the lanes at that site: they are the peers, without
//   __match_any_sync. mantissa_sv_flush is called (not inlined) at exits, where lanes of other
//   functions may flush together: __match_any_sync on the function's first slot-table entry
//   picks the peers. Counts combine by ballots or redux.sync.add, sums by shuffles (__dadd_rn,
//   an order the warp's shape fixes), maxima by redux.sync.max on their words; one lane then
//   adds each word with one atomic into copy %smid mod MANTISSA_SV_COPIES of the record.

#ifndef MANTISSA_SV_WORDS
#error "mantissa_shadow_values_warp.cuh needs mantissa_shadow_values.cuh before it (mantissa_gpu::runtime puts it there)"
#endif

// The sum of the peers' doubles (__dadd_rn): butterfly rounds over a full warp, else the
// peers' values one by one from the lowest lane; every peer gets the total.
static __device__ __forceinline__ double mantissa_sv_sum_f64(unsigned int peers, double x)
{
    if (peers == 0xffffffffu) {
        for (unsigned int d = 16; d > 0; d >>= 1) {
            int hi = __double2hiint(x);
            int lo = __double2loint(x);
            asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 31, -1;" : "+r"(hi) : "r"(d));
            asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 31, -1;" : "+r"(lo) : "r"(d));
            x = __dadd_rn(x, __hiloint2double(hi, lo));
        }
        return x;
    }
    double total = 0.0;
    for (unsigned int rest = peers; rest != 0; rest &= rest - 1) {
        total = __dadd_rn(total, mantissa_sv_shfl(peers, x, __ffs(rest) - 1));
    }
    return total;
}

// ---- Sites, loads and re-seed points outside loops: no thread record ----------------------
// Each execution is added to the global record at once, combined over the lanes executing it
// together. Only ever inlined into one site (see the header): the active lanes of an inlined
// copy are all at that site, so they are the peers, with no __match_any_sync.

// Copy (%smid mod MANTISSA_SV_COPIES) of global record `record`, which this warp adds into.
static __device__ __forceinline__ unsigned long long *mantissa_sv_global_copy(unsigned int record)
{
    unsigned int sm;
    asm("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long copy = sm % MANTISSA_SV_COPIES;
    return &__mantissa_values[((unsigned long long)record * MANTISSA_SV_COPIES + copy) * MANTISSA_SV_WORDS];
}

static __device__ __forceinline__ bool mantissa_sv_leads(unsigned int peers)
{
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane == (unsigned int)(__ffs(peers) - 1);
}

// The peers for whom `c` holds, counted into word w by the leader.
static __device__ __forceinline__ void mantissa_sv_once_count(
    unsigned long long *g, int w, unsigned int peers, bool leader, bool c)
{
    unsigned int n = __popc(__ballot_sync(peers, c));
    if (leader && n != 0u) {
        atomicAdd(&g[w], (unsigned long long)n);
    }
}

// A rare event of this lane counted by its own atomic (no vote on every execution).
static __device__ __forceinline__ void mantissa_sv_once_rare(unsigned long long *g, int w, bool c)
{
    if (c) {
        atomicAdd(&g[w], 1ull);
    }
}

// The peers' measurements of one error (e counted where `ok`) into words COUNT, SUM = COUNT + 1
// and MAX = COUNT + 2: the count, the sum and the maximum as the high word rounded up, as a
// thread record keeps it (so both paths report the same maximum).
static __device__ __forceinline__ void mantissa_sv_once_error(
    unsigned long long *g, int count, unsigned int peers, bool leader, bool ok, double e)
{
    unsigned int measured = __ballot_sync(peers, ok);
    if (measured == 0u) {
        return;
    }
    double x = ok ? e : 0.0;
    bool nonzero = __ballot_sync(peers, x != 0.0) != 0u;
    unsigned int top = nonzero ? __reduce_max_sync(peers, mantissa_sv_high_up(x)) : 0u;
    double sum = nonzero ? mantissa_sv_sum_f64(peers, x) : 0.0;
    if (leader) {
        atomicAdd(&g[count], (unsigned long long)__popc(measured));
        if (nonzero) {
            atomicAdd((double *)&g[count + 1], sum);
            atomicMax(&g[count + 2], (unsigned long long)top << 32);
        }
    }
}

// One execution of a site outside loops, added to global record `record`; returns the shadow.
template <unsigned int OP, bool F32>
static __device__ __forceinline__ mantissa_sv_pair mantissa_sv_site_once(
    unsigned long long record, unsigned int how, double a, double ah, double al, double b,
    double bh, double bl, double c, double ch, double cl, double r)
{
    mantissa_sv_measured m = mantissa_sv_measure<OP, F32>(how, a, ah, al, b, bh, bl, c, ch, cl, r);
    unsigned int peers = __activemask();
    bool leader = mantissa_sv_leads(peers);
    unsigned long long *g = mantissa_sv_global_copy((unsigned int)record);
    if (leader) {
        atomicAdd(&g[MANTISSA_SV_W_EXECUTIONS], (unsigned long long)__popc(peers));
    }
    mantissa_sv_once_error(g, MANTISSA_SV_W_LOCAL_COUNT, peers, leader, m.lok, m.le);
    mantissa_sv_once_error(g, MANTISSA_SV_W_ACC_COUNT, peers, leader, m.aok, m.ae);
    mantissa_sv_once_rare(g, MANTISSA_SV_W_LOCAL_ZERO, m.local && !m.lok && m.lzero);
    mantissa_sv_once_rare(g, MANTISSA_SV_W_LOCAL_NON_FINITE, m.local && !m.lok && !m.lzero);
    mantissa_sv_once_rare(g, MANTISSA_SV_W_ACC_ZERO, m.value && !m.aok && m.azero);
    mantissa_sv_once_rare(g, MANTISSA_SV_W_ACC_NON_FINITE, m.value && !m.aok && !m.azero);
    if (OP == MANTISSA_SV_ADD || OP == MANTISSA_SV_SUB || OP == MANTISSA_SV_FMA) {
        if (__ballot_sync(peers, m.lost != 0u) != 0u) {
            mantissa_sv_once_count(g, MANTISSA_SV_W_CANCELLATIONS, peers, leader, m.lost != 0u);
            unsigned int most = __reduce_max_sync(peers, m.lost);
            if (leader) {
                atomicMax(&g[MANTISSA_SV_W_CANCEL_MAX_BITS], (unsigned long long)most);
            }
        }
    }
    return mantissa_sv_make(m.s.hi, m.s.lo);
}

// An execution without measurements outside loops (a load, a re-seed point): the peers counted
// as executions, those with `reseeded` as re-seeds.
static __device__ __forceinline__ void mantissa_sv_execution_once(unsigned long long record, bool reseeded)
{
    unsigned int peers = __activemask();
    bool leader = mantissa_sv_leads(peers);
    unsigned long long *g = mantissa_sv_global_copy((unsigned int)record);
    if (leader) {
        atomicAdd(&g[MANTISSA_SV_W_EXECUTIONS], (unsigned long long)__popc(peers));
    }
    mantissa_sv_once_count(g, MANTISSA_SV_W_RESEEDED, peers, leader, reseeded);
}

#define MANTISSA_SV_SITE_ONCE(name, OP, F32)                                                     \
    extern "C" __device__ __noinline__ mantissa_sv_pair name##_once(                             \
        unsigned long long record, unsigned int how, double a, double ah, double al, double b,   \
        double bh, double bl, double c, double ch, double cl, double r)                          \
    {                                                                                            \
        return mantissa_sv_site_once<OP, F32>(record, how, a, ah, al, b, bh, bl, c, ch, cl, r);  \
    }
MANTISSA_SV_SITES(MANTISSA_SV_SITE_ONCE)

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_load_once(
    unsigned long long record, unsigned long long address, double value, unsigned int f32)
{
    bool reseeded;
    mantissa_sv_pair p = mantissa_sv_loaded(address, value, f32, reseeded);
    mantissa_sv_execution_once(record, reseeded);
    return p;
}

extern "C" __device__ __noinline__ mantissa_sv_pair mantissa_sv_load_shared_once(
    unsigned long long record, unsigned int address, unsigned int first, unsigned int end,
    unsigned int area, double value, unsigned int f32)
{
    bool reseeded;
    mantissa_sv_pair p = mantissa_sv_loaded_shared(address, first, end, area, value, f32, reseeded);
    mantissa_sv_execution_once(record, reseeded);
    return p;
}

extern "C" __device__ __noinline__ void mantissa_sv_reseed_once(unsigned long long record)
{
    mantissa_sv_execution_once(record, true);
}

// A u64 from lane `from` of `mask` (`xor`: lane ^ from), through the double shuffle (bits kept).
static __device__ __forceinline__ unsigned long long mantissa_sv_shfl_u64(
    unsigned int mask, unsigned long long x, unsigned int from)
{
    return (unsigned long long)__double_as_longlong(
        mantissa_sv_shfl(mask, __longlong_as_double((long long)x), from));
}

// Word kind of a record word: how peers' values combine.
static __device__ __forceinline__ int mantissa_sv_word_kind(int w)
{
    // 0 count (sum of u64), 1 sum (sum of f64), 2 max (of non-negative f64 or u64 bits).
    switch (w) {
    case MANTISSA_SV_W_LOCAL_SUM:
    case MANTISSA_SV_W_ACC_SUM: return 1;
    case MANTISSA_SV_W_LOCAL_MAX:
    case MANTISSA_SV_W_ACC_MAX:
    case MANTISSA_SV_W_CANCEL_MAX_BITS: return 2;
    default: return 0;
    }
}

// The largest of the peers' non-negative doubles or u64s (their bits order as unsigned
// integers): the largest high word, then the largest low word among the lanes holding it; two
// redux.sync instead of five rounds of shuffles.
static __device__ __forceinline__ unsigned long long mantissa_sv_max_u64(
    unsigned int peers, unsigned long long x)
{
    unsigned int hi = (unsigned int)(x >> 32);
    unsigned int top = __reduce_max_sync(peers, hi);
    unsigned int low = __reduce_max_sync(peers, hi == top ? (unsigned int)x : 0u);
    return ((unsigned long long)top << 32) | low;
}

// The peers' u64 counts added. A count below 2^27 on every lane (the common case: a thread's
// executions of one site) sums to below 2^32 over a warp, so one redux.sync.add on the low
// words does; otherwise the peers' words are added one by one, exactly, by shuffles.
static __device__ __forceinline__ unsigned long long mantissa_sv_sum_u64(
    unsigned int peers, unsigned long long x)
{
    if (__ballot_sync(peers, x >= (1ull << 27)) == 0) {
        return __reduce_add_sync(peers, (unsigned int)x);
    }
    unsigned long long total = 0;
    for (unsigned int rest = peers; rest != 0; rest &= rest - 1) {
        total += mantissa_sv_shfl_u64(peers, x, __ffs(rest) - 1);
    }
    return total;
}

// One word of the peers' records combined and added to copy `copy` of the global by the leader.
static __device__ __forceinline__ void mantissa_sv_flush_word(
    unsigned int peers, bool leader, unsigned long long *global, int w, unsigned long long x)
{
    if (__ballot_sync(peers, x != 0) == 0) {
        return;  // every peer's word is 0: nothing to add
    }
    int kind = mantissa_sv_word_kind(w);
    unsigned long long total;
    if (kind == 0) {
        total = mantissa_sv_sum_u64(peers, x);
    } else if (kind == 2) {
        total = mantissa_sv_max_u64(peers, x);
    } else {
        total = (unsigned long long)__double_as_longlong(
            mantissa_sv_sum_f64(peers, __longlong_as_double((long long)x)));
    }
    if (leader && total != 0) {
        if (kind == 0) {
            atomicAdd(&global[w], total);
        } else if (kind == 1) {
            atomicAdd((double *)&global[w], __longlong_as_double((long long)total));
        } else {
            atomicMax(&global[w], total);  // non-negative doubles order as their bits
        }
    }
}

extern "C" __device__ __noinline__ void mantissa_sv_flush(
    unsigned long long acc, unsigned int first, unsigned int slots)
{
    // Lanes flushing the same function's records together (one key per function: its entries).
    unsigned int peers = __match_any_sync(__activemask(), first);
    bool leader = mantissa_sv_leads(peers);
    for (unsigned int k = 0; k < slots; ++k) {
        unsigned int record = __mantissa_sv_slots[first + k];
        unsigned long long mine = acc + (unsigned long long)MANTISSA_SV_THREAD_BYTES * k;
        // Warps on different SMs add into different copies (fewer same-address atomics); the
        // host sums the copies.
        unsigned long long *global = mantissa_sv_global_copy(record);
        mantissa_sv_hot h = mantissa_sv_get_hot(mine);
        if (__ballot_sync(peers, mantissa_sv_word_of(h, mine, MANTISSA_SV_W_EXECUTIONS) != 0) == 0) {
            continue;  // no peer executed it: every word is 0
        }
#pragma unroll
        for (unsigned int w = 0; w < MANTISSA_SV_WORDS; ++w) {
            mantissa_sv_flush_word(peers, leader, global, (int)w, mantissa_sv_word_of(h, mine, w));
        }
    }
}
