// mantissa_count.cuh: the device runtime of the counting pass (crates/ptx/src/pass/count.rs),
// which counts how often each instruction of a kernel runs.
//
// PROVIDES
//   extern "C" void mantissa_count_hit(unsigned int site)
//     Adds 1 to __mantissa_counts[site] with one 64-bit atomic add (relaxed, device scope).
//
// NEEDS FROM THE MODULE IT IS MERGED INTO
//   __mantissa_counts: `.global .align 8 .u64 __mantissa_counts[N];`, N greater than every site
//   index passed. The counting pass adds it, zero-initialised (PTX zero-initialises .global
//   variables without an initialiser); the host reads it back with Gpu::read_symbol, and zeroes it
//   with Gpu::write_symbol before launches whose counts must start from zero.
//
// WHAT THE REWRITER PASSES
//   One .b32 parameter: the site index, an immediate (`st.param.b32 [p], 17;`). The call carries
//   the guard of the instruction it counts, so a guarded instruction counts only where its guard
//   is true.
//
// INVARIANTS
//   It touches no state but __mantissa_counts and returns nothing, so a counted kernel computes
//   the same bits as the kernel as written. It does no floating-point arithmetic (a runtime that
//   does would take it from mantissa.cuh's twin functions, explicit _rn intrinsics that no flag
//   set changes). Its instructions (atom.global.add.u64, call, ret) exist in every PTX ISA and
//   architecture mantissa targets.
//
// HOW IT IS BUILT
//   mantissa_gpu::runtime compiles it with NVRTC and -rdc=true: without relocatable device code
//   NVRTC 13 drops every __device__ function nothing in the file calls, even extern "C"
//   __noinline__ ones. With it, the function is kept as `.visible .func mantissa_count_hit` and
//   the array below becomes an `.extern .global` declaration, resolved by
//   mantissa_ptx::link::merge_runtime against the definition the pass added.
//   Everything here is named mantissa_ or __mantissa_ so that merging cannot clash with user names.

extern __device__ unsigned long long __mantissa_counts[];

extern "C" __device__ __noinline__ void mantissa_count_hit(unsigned int site)
{
    atomicAdd(&__mantissa_counts[site], 1ULL);
}
