// mantissa_units.cuh: marks every call of a double-precision math function as one unit.
//
// Pre-included (NVRTC and nvcc --pre-include) by mantissa when it builds a user's CUDA
// file for a precision configuration. Each call `exp(x)` becomes `__mantissa_unit_exp<__LINE__>(x)`,
// a force-inlined forwarder: the generated code is the same as the original's (mantissa checks
// that, instruction by instruction, before it uses a marked build), but with -lineinfo every
// instruction of the inlined function carries `.loc ..., function_name <this forwarder>,
// inlined_at <call site>`, so the PTX rewriter can treat the call as one unit.
//
// A unit whose call line is listed in MANTISSA_DEMOTE_LINES (a comma-separated list of source
// lines, written by mantissa into a generated header before this one: nvcc splits -D values at commas) calls the single-precision function instead, converting its double
// arguments to float and its result back: "replaced as a whole by the f32 function".
#pragma once

#ifndef MANTISSA_DEMOTE_LINES
#define MANTISSA_DEMOTE_LINES
#endif

__host__ __device__ __forceinline__ constexpr bool __mantissa_line_demoted(int line) {
  constexpr int lines[] = {0, MANTISSA_DEMOTE_LINES};
  for (int k = 1; k < int(sizeof(lines) / sizeof(lines[0])); ++k)
    if (lines[k] == line) return true;
  return false;
}

// Enumerators, not `static constexpr bool` members: NVRTC emits those members as module-scope
// .global variables (three extra symbols in the marked build's PTX); enumerators have no storage.
template <class T> struct __mantissa_is_double { enum : bool { value = false }; };
template <> struct __mantissa_is_double<double> { enum : bool { value = true }; };

template <class... A> struct __mantissa_any_double { enum : bool { value = false }; };
template <class H, class... A> struct __mantissa_any_double<H, A...> {
  enum : bool { value = __mantissa_is_double<H>::value || __mantissa_any_double<A...>::value };
};

// Only double arguments narrow; an int argument (ldexp's exponent) passes through.
__host__ __device__ __forceinline__ float __mantissa_to_float(double x) { return (float)x; }
template <class T> __host__ __device__ __forceinline__ T __mantissa_to_float(T x) { return x; }

#define MANTISSA_UNIT(F)                                                                          \
  template <int L, class... A>                                                                    \
  __host__ __device__ __forceinline__ auto __mantissa_unit_##F(A... a) -> decltype(F(a...)) {     \
    if constexpr (__mantissa_line_demoted(L) && __mantissa_any_double<A...>::value)               \
      return (decltype(F(a...)))F##f(__mantissa_to_float(a)...);                                  \
    else                                                                                          \
      return F(a...);                                                                             \
  }

// The functions marked: every double function of CUDA's math API that compiles to a sequence of
// instructions (not sqrt, fma, fabs, floor, ...: one instruction each, demoted like any other)
// and takes no pointer (sincos, frexp, modf and remquo are left alone).
MANTISSA_UNIT(acos)
MANTISSA_UNIT(acosh)
MANTISSA_UNIT(asin)
MANTISSA_UNIT(asinh)
MANTISSA_UNIT(atan)
MANTISSA_UNIT(atan2)
MANTISSA_UNIT(atanh)
MANTISSA_UNIT(cbrt)
MANTISSA_UNIT(cos)
MANTISSA_UNIT(cosh)
MANTISSA_UNIT(cospi)
MANTISSA_UNIT(erf)
MANTISSA_UNIT(erfc)
MANTISSA_UNIT(erfcinv)
MANTISSA_UNIT(erfcx)
MANTISSA_UNIT(erfinv)
MANTISSA_UNIT(exp)
MANTISSA_UNIT(exp10)
MANTISSA_UNIT(exp2)
MANTISSA_UNIT(expm1)
MANTISSA_UNIT(fdim)
MANTISSA_UNIT(fmod)
MANTISSA_UNIT(hypot)
MANTISSA_UNIT(lgamma)
MANTISSA_UNIT(log)
MANTISSA_UNIT(log10)
MANTISSA_UNIT(log1p)
MANTISSA_UNIT(log2)
MANTISSA_UNIT(logb)
MANTISSA_UNIT(pow)
MANTISSA_UNIT(rcbrt)
MANTISSA_UNIT(remainder)
MANTISSA_UNIT(rhypot)
MANTISSA_UNIT(rsqrt)
MANTISSA_UNIT(sin)
MANTISSA_UNIT(sinh)
MANTISSA_UNIT(sinpi)
MANTISSA_UNIT(tan)
MANTISSA_UNIT(tanh)
MANTISSA_UNIT(tgamma)
MANTISSA_UNIT(normcdf)
MANTISSA_UNIT(normcdfinv)
MANTISSA_UNIT(j0)
MANTISSA_UNIT(j1)
MANTISSA_UNIT(y0)
MANTISSA_UNIT(y1)
MANTISSA_UNIT(ldexp)
MANTISSA_UNIT(scalbn)
MANTISSA_UNIT(round)

#define acos(...) __mantissa_unit_acos<__LINE__>(__VA_ARGS__)
#define acosh(...) __mantissa_unit_acosh<__LINE__>(__VA_ARGS__)
#define asin(...) __mantissa_unit_asin<__LINE__>(__VA_ARGS__)
#define asinh(...) __mantissa_unit_asinh<__LINE__>(__VA_ARGS__)
#define atan(...) __mantissa_unit_atan<__LINE__>(__VA_ARGS__)
#define atan2(...) __mantissa_unit_atan2<__LINE__>(__VA_ARGS__)
#define atanh(...) __mantissa_unit_atanh<__LINE__>(__VA_ARGS__)
#define cbrt(...) __mantissa_unit_cbrt<__LINE__>(__VA_ARGS__)
#define cos(...) __mantissa_unit_cos<__LINE__>(__VA_ARGS__)
#define cosh(...) __mantissa_unit_cosh<__LINE__>(__VA_ARGS__)
#define cospi(...) __mantissa_unit_cospi<__LINE__>(__VA_ARGS__)
#define erf(...) __mantissa_unit_erf<__LINE__>(__VA_ARGS__)
#define erfc(...) __mantissa_unit_erfc<__LINE__>(__VA_ARGS__)
#define erfcinv(...) __mantissa_unit_erfcinv<__LINE__>(__VA_ARGS__)
#define erfcx(...) __mantissa_unit_erfcx<__LINE__>(__VA_ARGS__)
#define erfinv(...) __mantissa_unit_erfinv<__LINE__>(__VA_ARGS__)
#define exp(...) __mantissa_unit_exp<__LINE__>(__VA_ARGS__)
#define exp10(...) __mantissa_unit_exp10<__LINE__>(__VA_ARGS__)
#define exp2(...) __mantissa_unit_exp2<__LINE__>(__VA_ARGS__)
#define expm1(...) __mantissa_unit_expm1<__LINE__>(__VA_ARGS__)
#define fdim(...) __mantissa_unit_fdim<__LINE__>(__VA_ARGS__)
#define fmod(...) __mantissa_unit_fmod<__LINE__>(__VA_ARGS__)
#define hypot(...) __mantissa_unit_hypot<__LINE__>(__VA_ARGS__)
#define lgamma(...) __mantissa_unit_lgamma<__LINE__>(__VA_ARGS__)
#define log(...) __mantissa_unit_log<__LINE__>(__VA_ARGS__)
#define log10(...) __mantissa_unit_log10<__LINE__>(__VA_ARGS__)
#define log1p(...) __mantissa_unit_log1p<__LINE__>(__VA_ARGS__)
#define log2(...) __mantissa_unit_log2<__LINE__>(__VA_ARGS__)
#define logb(...) __mantissa_unit_logb<__LINE__>(__VA_ARGS__)
#define pow(...) __mantissa_unit_pow<__LINE__>(__VA_ARGS__)
#define rcbrt(...) __mantissa_unit_rcbrt<__LINE__>(__VA_ARGS__)
#define remainder(...) __mantissa_unit_remainder<__LINE__>(__VA_ARGS__)
#define rhypot(...) __mantissa_unit_rhypot<__LINE__>(__VA_ARGS__)
#define rsqrt(...) __mantissa_unit_rsqrt<__LINE__>(__VA_ARGS__)
#define sin(...) __mantissa_unit_sin<__LINE__>(__VA_ARGS__)
#define sinh(...) __mantissa_unit_sinh<__LINE__>(__VA_ARGS__)
#define sinpi(...) __mantissa_unit_sinpi<__LINE__>(__VA_ARGS__)
#define tan(...) __mantissa_unit_tan<__LINE__>(__VA_ARGS__)
#define tanh(...) __mantissa_unit_tanh<__LINE__>(__VA_ARGS__)
#define tgamma(...) __mantissa_unit_tgamma<__LINE__>(__VA_ARGS__)
#define normcdf(...) __mantissa_unit_normcdf<__LINE__>(__VA_ARGS__)
#define normcdfinv(...) __mantissa_unit_normcdfinv<__LINE__>(__VA_ARGS__)
#define j0(...) __mantissa_unit_j0<__LINE__>(__VA_ARGS__)
#define j1(...) __mantissa_unit_j1<__LINE__>(__VA_ARGS__)
#define y0(...) __mantissa_unit_y0<__LINE__>(__VA_ARGS__)
#define y1(...) __mantissa_unit_y1<__LINE__>(__VA_ARGS__)
#define ldexp(...) __mantissa_unit_ldexp<__LINE__>(__VA_ARGS__)
#define scalbn(...) __mantissa_unit_scalbn<__LINE__>(__VA_ARGS__)
#define round(...) __mantissa_unit_round<__LINE__>(__VA_ARGS__)

// std::exp(x) expands to std::__mantissa_unit_exp<L>(x): make that name exist there too.
namespace std {
using ::__mantissa_unit_acos;
using ::__mantissa_unit_acosh;
using ::__mantissa_unit_asin;
using ::__mantissa_unit_asinh;
using ::__mantissa_unit_atan;
using ::__mantissa_unit_atan2;
using ::__mantissa_unit_atanh;
using ::__mantissa_unit_cbrt;
using ::__mantissa_unit_cos;
using ::__mantissa_unit_cosh;
using ::__mantissa_unit_cospi;
using ::__mantissa_unit_erf;
using ::__mantissa_unit_erfc;
using ::__mantissa_unit_erfcinv;
using ::__mantissa_unit_erfcx;
using ::__mantissa_unit_erfinv;
using ::__mantissa_unit_exp;
using ::__mantissa_unit_exp10;
using ::__mantissa_unit_exp2;
using ::__mantissa_unit_expm1;
using ::__mantissa_unit_fdim;
using ::__mantissa_unit_fmod;
using ::__mantissa_unit_hypot;
using ::__mantissa_unit_lgamma;
using ::__mantissa_unit_log;
using ::__mantissa_unit_log10;
using ::__mantissa_unit_log1p;
using ::__mantissa_unit_log2;
using ::__mantissa_unit_logb;
using ::__mantissa_unit_pow;
using ::__mantissa_unit_rcbrt;
using ::__mantissa_unit_remainder;
using ::__mantissa_unit_rhypot;
using ::__mantissa_unit_rsqrt;
using ::__mantissa_unit_sin;
using ::__mantissa_unit_sinh;
using ::__mantissa_unit_sinpi;
using ::__mantissa_unit_tan;
using ::__mantissa_unit_tanh;
using ::__mantissa_unit_tgamma;
using ::__mantissa_unit_normcdf;
using ::__mantissa_unit_normcdfinv;
using ::__mantissa_unit_j0;
using ::__mantissa_unit_j1;
using ::__mantissa_unit_y0;
using ::__mantissa_unit_y1;
using ::__mantissa_unit_ldexp;
using ::__mantissa_unit_scalbn;
using ::__mantissa_unit_round;
}
