// mantissa.cuh: the CUDA twin of mantissa-num (crates/num): error-free transforms, double-word
// (f32x2, f64x2) and composite (comp32, comp64, comp32n, comp64n) arithmetic, computing the same
// bits as the Rust code for every input, NaN payloads aside (tests: crates/gpu/tests/twin).
//
// Header-only and include-free, so NVRTC compiles it prepended to a kernel (Rust:
// mantissa_gpu::twin::HEADER). Everything lives in namespace `mantissa`.
//
// ---------------------------------------------------------------------------------------------
// WHY IT IS BIT-IDENTICAL
// Every floating-point operation is an explicit round-to-nearest intrinsic (__fadd_rn, __fsub_rn,
// __fmul_rn, __fmaf_rn, __fdiv_rn, __fsqrt_rn and the __d*_rn doubles). NVVM turns them into PTX
// add.rn / sub.rn / mul.rn / fma.rn / div.rn / sqrt.rn (1/y may become rcp.rn, also IEEE), and
// PTX instructions with an explicit rounding modifier are never contracted into FMAs nor replaced
// by approximations, by NVVM or by ptxas, whatever --fmad, --prec-div, --prec-sqrt or
// --use_fast_math say. So each algorithm below runs exactly the operations of its Rust
// counterpart, in the same order, each rounded once, and FMAs appear exactly where the Rust code
// calls mul_add.
// Negation and absolute value flip or clear the sign bit (as Rust's Neg and abs do), and
// classification (is_nan, is_finite, sign, exponent) reads bits, so none of them depends on
// flags. Comparisons (==, <, ...) are ordinary float comparisons, as in the Rust code.
//
// THE ONE FLAG THAT CHANGES RESULTS: --ftz=true (implied by --use_fast_math). It turns every f32
// instruction above, and every f32 comparison, into its .ftz form, which flushes subnormal f32
// operands and results to zero of the same sign. f64 has no .ftz and is never affected. So
// under ftz an f32-based op (f32x2, comp32, comp32n, the f32 EFTs) differs from the Rust code
// only for inputs where some f32 operand or result along the way is subnormal; on those it equals
// the Rust algorithm run over an f32 whose arithmetic and comparisons flush the same way (the
// tests run exactly that model; PTX does not say whether a result that rounds up to 2^-126 from
// below counts as subnormal, so they accept either reading, consistently). Bit operations never
// flush.
//
// ---------------------------------------------------------------------------------------------
// TYPES (each `{ hi, lo }` / `{ value, error }` in this order, layout-compatible with the Rust
// #[repr(C)] DoubleWord<F>; Rust's Comp<F> is not repr(C), so move comp words one by one)
//   f32x2, f64x2      double-word: hi + lo with hi = RN(hi + lo)            (dw<F>)
//   comp32, comp64    composite value + error, seed 000 Table 4             (comp<F>)
//   comp32n, comp64n  composite with TwoSum-normalised operands             (compn<F>)
//
// ERROR-FREE TRANSFORMS (float and double overloads; results through references)
//   two_sum(a, b, s, e)          Knuth's TwoSum, 6 flops, s + e = a + b exactly
//   fast_two_sum(a, b, s, e)     Dekker's FastTwoSum, 3 flops, exact if exponent(a) >= exponent(b)
//   two_diff(a, b, s, e)         TwoDiff, 6 flops, s + e = a - b exactly
//   two_prod(a, b, p, e)         TwoProd with one FMA, exact while a*b >= 2^(emin+p) and finite
//   split(a, hi, lo)             Veltkamp's split (splitter 2^ceil(p/2) + 1)
//   two_prod_dekker(a, b, p, e)  Dekker's FMA-free TwoProd, 17 flops
//
// DOUBLE-WORD (T = f32x2 or f64x2, F = float or double; u = 2^-p, 2^-24 or 2^-53)
//   T_from_base(x), T_from_sum(a, b) (TwoSum), T_from_product(a, b) (TwoProd)
//   T_add(x, y)        AccurateDWPlusDW, JMP17 Alg. 6                    3u^2 + 13u^3
//   T_sub(x, y)        T_add(x, -y)                                       3u^2 + 13u^3
//   T_add_fast(x, y)   T_add without the special-value rule (QD's semantics) 3u^2 + 13u^3
//   T_add_sloppy(x, y) SloppyDWPlusDW, JMP17 Alg. 5                      none under cancellation
//   T_add_base(x, f)   DWPlusFP, JMP17 Alg. 4                            2u^2
//   T_sub_base(x, f)   T_add_base(x, -f)                                  2u^2
//   T_mul(x, y)        DWTimesDW3, JMP17 Alg. 12                         4u^2 (MR22 Thm 2.8)
//   T_mul_seed(x, y)   seed 001 Alg. 8 (three FMAs into the TwoProd error) none published
//   T_mul_fast(x, y)   7 flops, no special-value rule (dw.rs mul_fast)       6u^2 + 17u^3
//   T_mul_base(x, f)   DWTimesFP3, JMP17 Alg. 9                          2u^2
//   T_div(x, y)        DWDivDW3, JMP17 Alg. 18, with rescaling            9.8u^2
//   T_div_dw2(x, y)    DWDivDW2, JMP17 Alg. 17 (DWTimesFP1 inside)        15u^2 + 56u^3
//   T_div_seed(x, y)   seed 001 Alg. 9 (DoubleFloats.jl)                  none published
//   T_div_base(x, f)   DWDivFP3, JMP17 Alg. 15                           3u^2
//   T_sqrt(x)          SQRTDWtoDW, LLMPR23 Alg. 8, with scaling          25/8 u^2
//   T_neg(x), T_abs(x) exact (sign bits)
//   T_scale2(x, k)     x * 2^k word by word, then FastTwoSum; exact while both words stay normal
// Operators: + - * / on (T, T) and (T, F), unary -.
//
// Range and special values (as dw.rs): the bounds hold while the result and every intermediate
// stay normal (|result| >= 2^(emin+p)). Every result goes through dw_finish (two selects): a
// non-zero high word stands, with its low word if finite and with +0 if infinite (an infinity
// can only come from the double-word result overflowing); a zero high word is replaced by b,
// low word kept, and a NaN one by (b, +0), b the "base result", the same operation in the base
// format on the high words.
// So a zero takes the sign IEEE gives (-0 + -0 = -0, -0 * 1 = -0, x - x = +0), and x + NaN = NaN,
// inf - inf = NaN, x / 0 = +-inf, 0 / 0 = NaN, x / inf = 0.
// T_div rescales a divisor whose high word lies outside [2^(emin/2), 2^(emax/2)] (exponent below
// emin/2 or above emax/2): both operands go to [1, 2) by exact powers of two, DWDivDW3 runs there,
// and the quotient is scaled back once. T_sqrt returns the base square root for hi <= 0, NaN and
// +inf, and scales an input with exponent below emin + 2p by 2^(4p), taking the root of that and
// scaling it by 2^(-2p).
//
// COMPOSITE (C = comp32 / comp64; seed 000 Table 4, weaknesses kept, see comp.rs)
//   C_add(x, y)   value = xv + yv; t = value - xv;
//                 error = (((xv - (value - t)) + (yv - t)) + xe) + ye
//   C_sub(x, y)   C_add(x, -y)
//   C_mul(x, y)   value = xv * yv; error = ((xv * ye) + (xe * yv)) + (xe * ye)   (no FMA)
//   C_div(x, y)   (xv / yv, 0) if xv or yv is not finite or yv == 0; else t = 1 / yv;
//                 s = t * xv; diff = xv - s * yv; value = s + t * diff; error = t * diff
//   C_sqrt(x)     mantissa's addition (not in the thesis): scale by an even power of two,
//                 TwoSum re-split, one Newton step with an exact TwoProd residual, scale back
//   C_abs(x)      by the sign of value + error; exact zero gives (+0, +0)
//   C_neg(x), C_normalized(x) (TwoSum re-split), C_collapse(x) (value + error, one rounding)
// Each ends with comp_finish: non-finite value -> (value, 0); finite value with a non-finite
// error -> (value + error, 0).
//   Cn_add, Cn_sub, Cn_mul, Cn_div (Cn = comp32n / comp64n): C_op(C_normalized(x), C_normalized(y))
//   Cn_sqrt, Cn_abs, Cn_neg: C's on the stored pair
//
// JMP17: Joldes, Muller, Popescu, ACM TOMS 44(2), 2017. MR22: Muller, Rideau, ACM TOMS 48(1),
// 2022. LLMPR23: Lefevre, Louvet, Muller, Picot, Rideau, ACM TOMS 49(1), 2023. Seeds 000/001:
// the project's source documents (see crates/num).
// ---------------------------------------------------------------------------------------------

#ifndef MANTISSA_CUH
#define MANTISSA_CUH

namespace mantissa {

#define MANTISSA_FN __device__ __forceinline__

// ---- Base formats ---------------------------------------------------------------------------

// Correctly rounded operations, one overload per format. Nothing else does arithmetic.
MANTISSA_FN float add_rn(float a, float b) { return __fadd_rn(a, b); }
MANTISSA_FN float sub_rn(float a, float b) { return __fsub_rn(a, b); }
MANTISSA_FN float mul_rn(float a, float b) { return __fmul_rn(a, b); }
MANTISSA_FN float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
MANTISSA_FN float div_rn(float a, float b) { return __fdiv_rn(a, b); }
MANTISSA_FN float sqrt_rn(float a) { return __fsqrt_rn(a); }
MANTISSA_FN double add_rn(double a, double b) { return __dadd_rn(a, b); }
MANTISSA_FN double sub_rn(double a, double b) { return __dsub_rn(a, b); }
MANTISSA_FN double mul_rn(double a, double b) { return __dmul_rn(a, b); }
MANTISSA_FN double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
MANTISSA_FN double div_rn(double a, double b) { return __ddiv_rn(a, b); }
MANTISSA_FN double sqrt_rn(double a) { return __dsqrt_rn(a); }

// The constants of base.rs's Base impls, and bit casts.
template <typename F> struct base;

template <> struct base<float> {
    typedef unsigned int bits;
    static constexpr int DIGITS = 24;    // p
    static constexpr int MIN_EXP = -126; // exponent of the smallest normal
    static constexpr int MAX_EXP = 127;  // exponent of the largest finite
    static constexpr int MANT = 23;      // stored fraction bits
    static constexpr bits SIGN = 0x80000000u;
    static constexpr bits EXP_MASK = 0x7f800000u;
    static constexpr bits NAN_BITS = 0x7fc00000u; // Rust's f32::NAN
    static constexpr float SPLITTER = 4097.0f;    // 2^12 + 1
    static MANTISSA_FN bits to_bits(float x) { return __float_as_uint(x); }
    static MANTISSA_FN float from_bits(bits b) { return __uint_as_float(b); }
    static MANTISSA_FN int leading_zeros(bits b) { return __clz((int)b); }
};

template <> struct base<double> {
    typedef unsigned long long bits;
    static constexpr int DIGITS = 53;
    static constexpr int MIN_EXP = -1022;
    static constexpr int MAX_EXP = 1023;
    static constexpr int MANT = 52;
    static constexpr bits SIGN = 0x8000000000000000ull;
    static constexpr bits EXP_MASK = 0x7ff0000000000000ull;
    static constexpr bits NAN_BITS = 0x7ff8000000000000ull; // Rust's f64::NAN
    static constexpr double SPLITTER = 134217729.0;         // 2^27 + 1
    static MANTISSA_FN bits to_bits(double x) { return (bits)__double_as_longlong(x); }
    static MANTISSA_FN double from_bits(bits b) { return __longlong_as_double((long long)b); }
    static MANTISSA_FN int leading_zeros(bits b) { return __clzll((long long)b); }
    // Normal (exponent field neither 0 nor 0x7ff), from the high half in two instructions:
    // adding 1 to the field wraps 0x7ff to 0 (the carry goes to the sign bit, masked off) and
    // makes 0 into 1, so the field plus one has a bit above its lowest exactly when x is normal.
    static MANTISSA_FN bool is_normal_hi(double x) {
        return (((unsigned)__double2hiint(x) + 0x00100000u) & 0x7fe00000u) != 0u;
    }
};

// Classification and sign operations on bits: exact under every flag set, like Rust's.
template <typename F> MANTISSA_FN bool is_nan(F x) {
    return (base<F>::to_bits(x) & ~base<F>::SIGN) > base<F>::EXP_MASK;
}
template <typename F> MANTISSA_FN bool is_finite(F x) {
    return (base<F>::to_bits(x) & base<F>::EXP_MASK) != base<F>::EXP_MASK;
}
template <typename F> MANTISSA_FN bool is_sign_negative(F x) {
    return (base<F>::to_bits(x) & base<F>::SIGN) != 0;
}
template <typename F> MANTISSA_FN F flip_sign(F x) {
    return base<F>::from_bits(base<F>::to_bits(x) ^ base<F>::SIGN);
}
template <typename F> MANTISSA_FN F clear_sign(F x) {
    return base<F>::from_bits(base<F>::to_bits(x) & ~base<F>::SIGN);
}
template <typename F> MANTISSA_FN F nan() { return base<F>::from_bits(base<F>::NAN_BITS); }
template <typename F> MANTISSA_FN F inf() { return base<F>::from_bits(base<F>::EXP_MASK); }

// base.rs `exponent`: e with x = m 2^e, 1 <= |m| < 2 (the leading bit's exponent for
// subnormals). Returns false (Rust: None) for zeros, infinities and NaN.
template <typename F> MANTISSA_FN bool exponent(F x, int& e) {
    typedef base<F> B;
    typename B::bits b = B::to_bits(x) & ~B::SIGN;
    if (b == 0 || !is_finite(x)) return false;
    int biased = (int)(b >> B::MANT);
    if (biased != 0) {
        e = biased + B::MIN_EXP - 1;
    } else {
        int lead = (int)(8 * sizeof(F)) - 1 - B::leading_zeros(b);
        e = B::MIN_EXP - B::MANT + lead;
    }
    return true;
}

// base.rs pow2_f32/pow2_f64: 2^k from bits, exact for emin - p + 1 <= k <= emax; 0 below, +inf
// above.
template <typename F> MANTISSA_FN F pow2(int k) {
    typedef base<F> B;
    typedef typename B::bits bits;
    if (k > B::MAX_EXP) return inf<F>();
    if (k < B::MIN_EXP - B::MANT) return F(0);
    if (k >= B::MIN_EXP) return B::from_bits((bits)(k - B::MIN_EXP + 1) << B::MANT);
    return B::from_bits((bits)1 << (k - B::MIN_EXP + B::MANT));
}

// base.rs `scale2`: x 2^k as two products, so that 2^k itself never over- or underflows for |k|
// up to 2 emax; exact whenever the result is normal.
template <typename F> MANTISSA_FN F scale2(F x, int k) {
    int half = k / 2; // truncating, as Rust's i32 division
    return mul_rn(mul_rn(x, pow2<F>(half)), pow2<F>(k - half));
}

// ---- Error-free transforms (eft.rs) ----------------------------------------------------------

// Knuth's TwoSum (no precondition): s + e = a + b exactly.
template <typename F> MANTISSA_FN void two_sum(F a, F b, F& s, F& e) {
    s = add_rn(a, b);
    F bb = sub_rn(s, a);
    F aa = sub_rn(s, bb);
    e = add_rn(sub_rn(a, aa), sub_rn(b, bb));
}

// Dekker's FastTwoSum: exact when the exponent of a is at least that of b.
template <typename F> MANTISSA_FN void fast_two_sum(F a, F b, F& s, F& e) {
    s = add_rn(a, b);
    F z = sub_rn(s, a);
    e = sub_rn(b, z);
}

// TwoDiff (seed 001 Alg. 5): s + e = a - b exactly.
template <typename F> MANTISSA_FN void two_diff(F a, F b, F& s, F& e) {
    s = sub_rn(a, b);
    F bb = sub_rn(s, a);
    F aa = sub_rn(s, bb);
    e = sub_rn(sub_rn(a, aa), add_rn(b, bb));
}

// -x, exactly. For f32 a bit flip: neg.f32 would take .ftz under --ftz=true and flush a
// subnormal. f64 has no .ftz, so there -x is the same exact negation, and ptxas folds it into
// the operand of the instruction that uses it (H200, compute-bound f64x2 mul: 1.17 -> 1.27
// T/s against the bit flip, an integer instruction on the critical path).
MANTISSA_FN float neg_exact(float x) { return flip_sign(x); }
MANTISSA_FN double neg_exact(double x) { return -x; }

// TwoProd with an FMA: p + e = a b exactly while a b >= 2^(emin+p) and finite.
template <typename F> MANTISSA_FN void two_prod(F a, F b, F& p, F& e) {
    p = mul_rn(a, b);
    e = fma_rn(a, b, neg_exact(p));
}

// Veltkamp's split: hi + lo = a, each half in floor(p/2) bits; valid while SPLITTER a is finite.
template <typename F> MANTISSA_FN void split(F a, F& hi, F& lo) {
    F c = mul_rn(base<F>::SPLITTER, a);
    hi = sub_rn(c, sub_rn(c, a));
    lo = sub_rn(a, hi);
}

// Dekker's TwoProd without FMA: e = al bl - (((p - ah bh) - al bh) - ah bl).
template <typename F> MANTISSA_FN void two_prod_dekker(F a, F b, F& p, F& e) {
    p = mul_rn(a, b);
    F ah, al, bh, bl;
    split(a, ah, al);
    split(b, bh, bl);
    e = sub_rn(mul_rn(al, bl),
               sub_rn(sub_rn(sub_rn(p, mul_rn(ah, bh)), mul_rn(al, bh)), mul_rn(ah, bl)));
}

// ---- Double-word (dw.rs) ---------------------------------------------------------------------

template <typename F> struct dw {
    F hi;
    F lo;
};
typedef dw<float> f32x2;
typedef dw<double> f64x2;

template <typename F> MANTISSA_FN dw<F> dw_make(F hi, F lo) {
    dw<F> r;
    r.hi = hi;
    r.lo = lo;
    return r;
}
template <typename F> MANTISSA_FN dw<F> dw_from_base(F x) { return dw_make(x, F(0)); }

// dw.rs `finish`, every operation's result assembly, as two selects: a non-zero high word stands
// (a finite one with its low word, an infinity with low word 0); a zero or NaN high word is
// replaced by the base result (the same operation in the base format on the high words).
template <typename F> MANTISSA_FN dw<F> dw_finish_rule(F hi, F lo, F base_result) {
    // The tests of dw.rs (`hi < 0 || hi > 0`, `|hi| < inf`) made on the bits: integer compares
    // run on the ALU pipe, leaving the FP64 pipe to the arithmetic, and no flag can flush them.
    typedef base<F> B;
    typename B::bits m = B::to_bits(hi) & ~B::SIGN;
    bool nonzero_number = m != 0 && m <= B::EXP_MASK; // neither ±0 nor NaN
    bool finite = m < B::EXP_MASK;
    return dw_make(nonzero_number ? hi : base_result, finite ? lo : F(0));
}

template <typename F> MANTISSA_FN dw<F> dw_finish(F hi, F lo, F base_result) {
    // The common case first, with one 32-bit test: a normal high word (exponent field neither
    // all zeros nor all ones) is returned as computed, which is what the full rule gives it.
    // Measured on an H200 (8 chains per thread, compute-bound): f64x2 add 662 -> 702 Gop/s,
    // mul 960 -> 1166 Gop/s against always evaluating the rule; the two-instruction form of
    // the test in base<double>::is_normal_hi then gave add 701 -> 732, mul (seed) 1206 -> 1283.
    return base<F>::is_normal_hi(hi) ? dw_make(hi, lo) : dw_finish_rule(hi, lo, base_result);
}

// For f32x2 the rule alone is faster (H200: the early test cost add 1096 -> 989 Gop/s, mul
// 1509 -> 1161), since its FP32 arithmetic leaves fewer issue slots free.
template <> MANTISSA_FN dw<float> dw_finish<float>(float hi, float lo, float base_result) {
    return dw_finish_rule(hi, lo, base_result);
}

// dw.rs `special`: `finish` for a high word known not to be a regular value.
template <typename F> MANTISSA_FN dw<F> dw_special(F hi, F base_result) {
    return dw_finish(hi, F(0), base_result);
}

template <typename F> MANTISSA_FN dw<F> dw_from_sum(F a, F b) {
    F hi, lo;
    two_sum(a, b, hi, lo);
    return dw_finish(hi, lo, add_rn(a, b));
}

template <typename F> MANTISSA_FN dw<F> dw_from_product(F a, F b) {
    F hi, lo;
    two_prod(a, b, hi, lo);
    return dw_finish(hi, lo, hi);
}

template <typename F> MANTISSA_FN dw<F> dw_neg(dw<F> x) { return dw_make(flip_sign(x.hi), flip_sign(x.lo)); }

template <typename F> MANTISSA_FN dw<F> dw_abs(dw<F> x) {
    return is_sign_negative(x.hi) ? dw_neg(x) : x;
}

// dw.rs add_fast: AccurateDWPlusDW (JMP17 Alg. 6) without dw_finish (no special-value rule),
// 20 flops, 3u^2 + 13u^3.
template <typename F> MANTISSA_FN dw<F> dw_add_fast(dw<F> x, dw<F> y) {
    F sh, sl, th, tl, vh, vl, zh, zl;
    two_sum(x.hi, y.hi, sh, sl);
    two_sum(x.lo, y.lo, th, tl);
    F c = add_rn(sl, th);
    fast_two_sum(sh, c, vh, vl);
    F w = add_rn(tl, vl);
    fast_two_sum(vh, w, zh, zl);
    return dw_make(zh, zl);
}

// AccurateDWPlusDW with the rule. The base result is two_sum's first word inside dw_add_fast;
// NVVM merges the two (the PTX has 20 instructions either way).
template <typename F> MANTISSA_FN dw<F> dw_add(dw<F> x, dw<F> y) {
    dw<F> z = dw_add_fast(x, y);
    return dw_finish(z.hi, z.lo, add_rn(x.hi, y.hi));
}

template <typename F> MANTISSA_FN dw<F> dw_sub(dw<F> x, dw<F> y) { return dw_add(x, dw_neg(y)); }

// SloppyDWPlusDW (JMP17 Alg. 5), 11 flops; unbounded relative error under cancellation.
template <typename F> MANTISSA_FN dw<F> dw_add_sloppy(dw<F> x, dw<F> y) {
    F sh, sl, zh, zl;
    two_sum(x.hi, y.hi, sh, sl);
    F v = add_rn(x.lo, y.lo);
    F w = add_rn(sl, v);
    fast_two_sum(sh, w, zh, zl);
    return dw_finish(zh, zl, sh);
}

// DWPlusFP (JMP17 Alg. 4), 10 flops, 2u^2.
template <typename F> MANTISSA_FN dw<F> dw_add_base(dw<F> x, F y) {
    F sh, sl, zh, zl;
    two_sum(x.hi, y, sh, sl);
    F v = add_rn(x.lo, sl);
    fast_two_sum(sh, v, zh, zl);
    return dw_finish(zh, zl, sh);
}

template <typename F> MANTISSA_FN dw<F> dw_sub_base(dw<F> x, F y) { return dw_add_base(x, flip_sign(y)); }

// DWTimesDW3 (JMP17 Alg. 12), 4u^2 (MR22 Thm 2.8).
template <typename F> MANTISSA_FN dw<F> dw_mul(dw<F> x, dw<F> y) {
    F ch, cl1, zh, zl;
    two_prod(x.hi, y.hi, ch, cl1);
    F tl0 = mul_rn(x.lo, y.lo);
    F tl1 = fma_rn(x.hi, y.lo, tl0);
    F cl2 = fma_rn(x.lo, y.hi, tl1);
    F cl3 = add_rn(cl1, cl2);
    fast_two_sum(ch, cl3, zh, zl);
    return dw_finish(zh, zl, ch);
}

// dw.rs mul_fast: TwoProd, both cross products into its error by one FMA each, FastTwoSum;
// 7 flops, no special-value rule, 6u^2 + 17u^3 (derived in dw.rs).
template <typename F> MANTISSA_FN dw<F> dw_mul_fast(dw<F> x, dw<F> y) {
    F ch, cl1, zh, zl;
    two_prod(x.hi, y.hi, ch, cl1);
    F s = fma_rn(x.lo, y.hi, cl1);
    s = fma_rn(x.hi, y.lo, s);
    fast_two_sum(ch, s, zh, zl);
    return dw_make(zh, zl);
}

// Seed 001 Alg. 8: DWTimesDW3 with the low-order terms folded into three FMAs.
template <typename F> MANTISSA_FN dw<F> dw_mul_seed(dw<F> x, dw<F> y) {
    F ch, cl1, zh, zl;
    two_prod(x.hi, y.hi, ch, cl1);
    F s = fma_rn(x.lo, y.lo, cl1);
    s = fma_rn(x.hi, y.lo, s);
    s = fma_rn(x.lo, y.hi, s);
    fast_two_sum(ch, s, zh, zl);
    return dw_finish(zh, zl, ch);
}

// DWTimesFP3 (JMP17 Alg. 9), 2u^2.
template <typename F> MANTISSA_FN dw<F> dw_mul_base(dw<F> x, F y) {
    F ch, cl1, zh, zl;
    two_prod(x.hi, y, ch, cl1);
    F cl3 = fma_rn(x.lo, y, cl1);
    fast_two_sum(ch, cl3, zh, zl);
    return dw_finish(zh, zl, ch);
}

// DWTimesFP1 (JMP17 Alg. 7), 1.5u^2 + 4u^3; used inside DWDivDW2.
template <typename F> MANTISSA_FN dw<F> dw_mul_base_fp1(dw<F> x, F y) {
    F ch, cl1, th, tl1, zh, zl;
    two_prod(x.hi, y, ch, cl1);
    F cl2 = mul_rn(x.lo, y);
    fast_two_sum(ch, cl2, th, tl1);
    F tl2 = add_rn(tl1, cl1);
    fast_two_sum(th, tl2, zh, zl);
    return dw_finish(zh, zl, ch);
}

// dw.rs DoubleWord::scale2: both words times 2^k, re-normalised by FastTwoSum (a low word
// rounded onto the subnormal grid can break hi == RN(hi + lo) at a tie).
template <typename F> MANTISSA_FN dw<F> dw_scale2(dw<F> x, int k) {
    F hi = scale2(x.hi, k);
    F lo = scale2(x.lo, k);
    if (is_finite(hi)) {
        F h, l;
        fast_two_sum(hi, lo, h, l);
        return dw_make(h, l);
    }
    return dw_from_base(hi);
}

// DWDivDW3 without rescaling: one reciprocal, a Newton correction of 1/y in double-word, then
// DWTimesDW3.
template <typename F> MANTISSA_FN dw<F> dw_div_dw3_unscaled(dw<F> x, dw<F> y) {
    F th = div_rn(F(1), y.hi);
    F rh = fma_rn(flip_sign(y.hi), th, F(1));
    F rl = flip_sign(mul_rn(y.lo, th));
    F eh, el;
    fast_two_sum(rh, rl, eh, el);
    dw<F> d = dw_mul_base(dw_make(eh, el), th);
    dw<F> m = dw_add_base(d, th);
    dw<F> z = dw_mul(x, m);
    if (is_finite(z.hi)) return z; // zeros included: mul gave them the sign of x m, that of x/y
    return dw_special(z.hi, div_rn(x.hi, y.hi));
}

// Both operands to [1, 2) by exact powers of two, DWDivDW3, one scaling back.
template <typename F> MANTISSA_FN dw<F> dw_div_rescaled(dw<F> x, dw<F> y) {
    int ky = 0, kx = 0;
    exponent(y.hi, ky);
    exponent(x.hi, kx);
    return dw_scale2(dw_div_dw3_unscaled(dw_scale2(x, -kx), dw_scale2(y, -ky)), kx - ky);
}

// dw.rs divisor_scale != 0: the divisor's exponent lies outside [emin/2, emax/2].
template <typename F> MANTISSA_FN bool dw_divisor_needs_scaling(F yh) {
    int e;
    return exponent(yh, e) && (e < base<F>::MIN_EXP / 2 || e > base<F>::MAX_EXP / 2);
}

// DWDivDW3 (JMP17 Alg. 18), 9.8u^2, with the rescaling of extreme divisors.
template <typename F> MANTISSA_FN dw<F> dw_div(dw<F> x, dw<F> y) {
    if (!dw_divisor_needs_scaling(y.hi)) return dw_div_dw3_unscaled(x, y);
    return dw_div_rescaled(x, y);
}

// DWDivDW2 (JMP17 Alg. 17), two base divisions, 15u^2 + 56u^3.
template <typename F> MANTISSA_FN dw<F> dw_div_dw2(dw<F> x, dw<F> y) {
    F th = div_rn(x.hi, y.hi);
    dw<F> r = dw_mul_base_fp1(y, th);
    F pih = sub_rn(x.hi, r.hi);
    F dl = sub_rn(x.lo, r.lo);
    F d = add_rn(pih, dl);
    F tl = div_rn(d, y.hi);
    F zh, zl;
    fast_two_sum(th, tl, zh, zl);
    return dw_finish(zh, zl, th);
}

// Seed 001 Alg. 9 (DoubleFloats.jl's fast division).
template <typename F> MANTISSA_FN dw<F> dw_div_seed(dw<F> x, dw<F> y) {
    F sh = div_rn(x.hi, y.hi);
    F th, tl, zh, zl;
    two_prod(sh, y.hi, th, tl);
    F v = add_rn(sub_rn(x.hi, th), sub_rn(x.lo, tl));
    F sl = div_rn(fma_rn(flip_sign(sh), y.lo, v), y.hi);
    fast_two_sum(sh, sl, zh, zl);
    return dw_finish(zh, zl, sh);
}

// DWDivFP3 (JMP17 Alg. 15), 3u^2.
template <typename F> MANTISSA_FN dw<F> dw_div_base(dw<F> x, F y) {
    F th = div_rn(x.hi, y);
    F ph, pl, zh, zl;
    two_prod(th, y, ph, pl);
    F dh = sub_rn(x.hi, ph);
    F dt = sub_rn(dh, pl);
    F d = add_rn(dt, x.lo);
    F tl = div_rn(d, y);
    fast_two_sum(th, tl, zh, zl);
    return dw_finish(zh, zl, th);
}

template <typename F> MANTISSA_FN dw<F> dw_sqrt_normal(dw<F> x) {
    F sh = sqrt_rn(x.hi);
    F r1 = fma_rn(flip_sign(sh), sh, x.hi);
    F r2 = add_rn(x.lo, r1);
    F sl = div_rn(r2, mul_rn(F(2), sh));
    F zh, zl;
    fast_two_sum(sh, sl, zh, zl);
    return dw_finish(zh, zl, sh);
}

// SQRTDWtoDW (LLMPR23 Alg. 8), 25/8 u^2; tiny inputs scaled by 2^(4p) first.
template <typename F> MANTISSA_FN dw<F> dw_sqrt(dw<F> x) {
    F sh = sqrt_rn(x.hi);
    if (x.hi <= F(0) || is_nan(x.hi) || !is_finite(sh)) return dw_from_base(sh);
    int e;
    if (exponent(x.hi, e) && e < base<F>::MIN_EXP + 2 * base<F>::DIGITS) {
        const int k = 2 * base<F>::DIGITS;
        return dw_scale2(dw_sqrt_normal(dw_scale2(x, 2 * k)), -k);
    }
    return dw_sqrt_normal(x);
}

// ---- Composite (comp.rs) ---------------------------------------------------------------------

template <typename F> struct comp {
    F value;
    F error;
};
typedef comp<float> comp32;
typedef comp<double> comp64;

// The same pair, every operand TwoSum-normalised before each Table 4 operation.
template <typename F> struct compn {
    F value;
    F error;
};
typedef compn<float> comp32n;
typedef compn<double> comp64n;

template <typename F> MANTISSA_FN comp<F> comp_make(F value, F error) {
    comp<F> r;
    r.value = value;
    r.error = error;
    return r;
}
template <typename F> MANTISSA_FN compn<F> compn_make(F value, F error) {
    compn<F> r;
    r.value = value;
    r.error = error;
    return r;
}
template <typename F> MANTISSA_FN comp<F> comp_from_base(F x) { return comp_make(x, F(0)); }
template <typename F> MANTISSA_FN comp<F> comp_of(compn<F> x) { return comp_make(x.value, x.error); }
template <typename F> MANTISSA_FN compn<F> compn_of(comp<F> x) { return compn_make(x.value, x.error); }

template <typename F> MANTISSA_FN comp<F> comp_finish(F value, F error) {
    if (!is_finite(value)) return comp_from_base(value);
    if (!is_finite(error)) return comp_from_base(add_rn(value, error));
    return comp_make(value, error);
}

template <typename F> MANTISSA_FN F comp_collapse(comp<F> x) { return add_rn(x.value, x.error); }

template <typename F> MANTISSA_FN comp<F> comp_neg(comp<F> x) {
    return comp_make(flip_sign(x.value), flip_sign(x.error));
}

// TwoSum re-split; unchanged when a part is not finite or the rounded sum overflows.
template <typename F> MANTISSA_FN comp<F> comp_normalized(comp<F> x) {
    if (!is_finite(x.value) || !is_finite(x.error)) return x;
    F s, e;
    two_sum(x.value, x.error, s, e);
    if (is_finite(s)) return comp_make(s, e);
    return x;
}

// Table 4 addition (last term read as + y.error).
template <typename F> MANTISSA_FN comp<F> comp_add(comp<F> x, comp<F> y) {
    F value = add_rn(x.value, y.value);
    F t = sub_rn(value, x.value);
    F error = add_rn(
        add_rn(add_rn(sub_rn(x.value, sub_rn(value, t)), sub_rn(y.value, t)), x.error), y.error);
    return comp_finish(value, error);
}

template <typename F> MANTISSA_FN comp<F> comp_sub(comp<F> x, comp<F> y) {
    return comp_add(x, comp_neg(y));
}

// Table 4 multiplication, products rounded separately (no FMA).
template <typename F> MANTISSA_FN comp<F> comp_mul(comp<F> x, comp<F> y) {
    F value = mul_rn(x.value, y.value);
    F error = add_rn(add_rn(mul_rn(x.value, y.error), mul_rn(x.error, y.value)),
                     mul_rn(x.error, y.error));
    return comp_finish(value, error);
}

// Table 4 division, with IEEE results for non-finite operands and zero divisors.
template <typename F> MANTISSA_FN comp<F> comp_div(comp<F> x, comp<F> y) {
    if (!is_finite(x.value) || !is_finite(y.value) || y.value == F(0))
        return comp_from_base(div_rn(x.value, y.value));
    F t = div_rn(F(1), y.value);
    F s = mul_rn(t, x.value);
    F diff = sub_rn(x.value, mul_rn(s, y.value));
    F value = add_rn(s, mul_rn(t, diff));
    F error = mul_rn(t, diff);
    return comp_finish(value, error);
}

// Square root (mantissa's, not the thesis's): see comp.rs `Comp::sqrt`.
template <typename F> MANTISSA_FN comp<F> comp_sqrt(comp<F> x) {
    F v = x.value, e = x.error;
    if (is_nan(v) || is_nan(e)) return comp_from_base(nan<F>());
    if (v == F(0) && e == F(0)) return comp_from_base(v);
    if (!is_finite(v) || !is_finite(e)) {
        F c = comp_collapse(x);
        return comp_from_base(c > F(0) ? c : nan<F>());
    }
    F lead = clear_sign(v) >= clear_sign(e) ? v : e;
    int le = 0;
    exponent(lead, le);
    int k = le < 0 ? (le - 1) / 2 : le / 2; // Rust's div_euclid(2): floor(le / 2)
    comp<F> n = comp_normalized(comp_make(scale2(v, -2 * k), scale2(e, -2 * k)));
    F h = n.value, l = n.error;
    if (h == F(0)) return comp_from_base(F(0));
    if (h < F(0)) return comp_from_base(nan<F>());
    F s = sqrt_rn(h);
    F p, pe, r, re;
    two_prod(s, s, p, pe);
    F d = add_rn(sub_rn(sub_rn(h, p), pe), l);
    F c = div_rn(d, add_rn(s, s));
    fast_two_sum(s, c, r, re);
    return comp_finish(scale2(r, k), scale2(re, k));
}

// Absolute value (mantissa's): by the sign of the collapsed sum; an exact zero gives (+0, +0).
template <typename F> MANTISSA_FN comp<F> comp_abs(comp<F> x) {
    F s = comp_collapse(x);
    if (s < F(0)) return comp_neg(x);
    if (s > F(0)) return x;
    if (s == F(0)) return comp_make(F(0), F(0));
    return x;
}

template <typename F> MANTISSA_FN compn<F> compn_add(compn<F> x, compn<F> y) {
    return compn_of(comp_add(comp_normalized(comp_of(x)), comp_normalized(comp_of(y))));
}
template <typename F> MANTISSA_FN compn<F> compn_sub(compn<F> x, compn<F> y) {
    return compn_of(comp_sub(comp_normalized(comp_of(x)), comp_normalized(comp_of(y))));
}
template <typename F> MANTISSA_FN compn<F> compn_mul(compn<F> x, compn<F> y) {
    return compn_of(comp_mul(comp_normalized(comp_of(x)), comp_normalized(comp_of(y))));
}
template <typename F> MANTISSA_FN compn<F> compn_div(compn<F> x, compn<F> y) {
    return compn_of(comp_div(comp_normalized(comp_of(x)), comp_normalized(comp_of(y))));
}
template <typename F> MANTISSA_FN compn<F> compn_neg(compn<F> x) { return compn_of(comp_neg(comp_of(x))); }
template <typename F> MANTISSA_FN compn<F> compn_sqrt(compn<F> x) { return compn_of(comp_sqrt(comp_of(x))); }
template <typename F> MANTISSA_FN compn<F> compn_abs(compn<F> x) { return compn_of(comp_abs(comp_of(x))); }

// ---- Named functions per type (what kernels call) ---------------------------------------------

#define MANTISSA_DW_NAMES(T, F)                                                                  \
    MANTISSA_FN T T##_from_base(F x) { return dw_from_base(x); }                                 \
    MANTISSA_FN T T##_from_sum(F a, F b) { return dw_from_sum(a, b); }                           \
    MANTISSA_FN T T##_from_product(F a, F b) { return dw_from_product(a, b); }                   \
    MANTISSA_FN T T##_add(T x, T y) { return dw_add(x, y); }                                     \
    MANTISSA_FN T T##_sub(T x, T y) { return dw_sub(x, y); }                                     \
    MANTISSA_FN T T##_add_sloppy(T x, T y) { return dw_add_sloppy(x, y); }                       \
    MANTISSA_FN T T##_add_fast(T x, T y) { return dw_add_fast(x, y); }                           \
    MANTISSA_FN T T##_add_base(T x, F y) { return dw_add_base(x, y); }                           \
    MANTISSA_FN T T##_sub_base(T x, F y) { return dw_sub_base(x, y); }                           \
    MANTISSA_FN T T##_mul(T x, T y) { return dw_mul(x, y); }                                     \
    MANTISSA_FN T T##_mul_seed(T x, T y) { return dw_mul_seed(x, y); }                           \
    MANTISSA_FN T T##_mul_fast(T x, T y) { return dw_mul_fast(x, y); }                           \
    MANTISSA_FN T T##_mul_base(T x, F y) { return dw_mul_base(x, y); }                           \
    MANTISSA_FN T T##_div(T x, T y) { return dw_div(x, y); }                                     \
    MANTISSA_FN T T##_div_dw2(T x, T y) { return dw_div_dw2(x, y); }                             \
    MANTISSA_FN T T##_div_seed(T x, T y) { return dw_div_seed(x, y); }                           \
    MANTISSA_FN T T##_div_base(T x, F y) { return dw_div_base(x, y); }                           \
    MANTISSA_FN T T##_sqrt(T x) { return dw_sqrt(x); }                                           \
    MANTISSA_FN T T##_neg(T x) { return dw_neg(x); }                                             \
    MANTISSA_FN T T##_abs(T x) { return dw_abs(x); }                                             \
    MANTISSA_FN T T##_scale2(T x, int k) { return dw_scale2(x, k); }

MANTISSA_DW_NAMES(f32x2, float)
MANTISSA_DW_NAMES(f64x2, double)
#undef MANTISSA_DW_NAMES

#define MANTISSA_COMP_NAMES(C, N, F)                                                             \
    MANTISSA_FN C C##_from_base(F x) { return comp_from_base(x); }                               \
    MANTISSA_FN C C##_add(C x, C y) { return comp_add(x, y); }                                   \
    MANTISSA_FN C C##_sub(C x, C y) { return comp_sub(x, y); }                                   \
    MANTISSA_FN C C##_mul(C x, C y) { return comp_mul(x, y); }                                   \
    MANTISSA_FN C C##_div(C x, C y) { return comp_div(x, y); }                                   \
    MANTISSA_FN C C##_sqrt(C x) { return comp_sqrt(x); }                                         \
    MANTISSA_FN C C##_abs(C x) { return comp_abs(x); }                                           \
    MANTISSA_FN C C##_neg(C x) { return comp_neg(x); }                                           \
    MANTISSA_FN C C##_normalized(C x) { return comp_normalized(x); }                             \
    MANTISSA_FN F C##_collapse(C x) { return comp_collapse(x); }                                 \
    MANTISSA_FN N N##_add(N x, N y) { return compn_add(x, y); }                                  \
    MANTISSA_FN N N##_sub(N x, N y) { return compn_sub(x, y); }                                  \
    MANTISSA_FN N N##_mul(N x, N y) { return compn_mul(x, y); }                                  \
    MANTISSA_FN N N##_div(N x, N y) { return compn_div(x, y); }                                  \
    MANTISSA_FN N N##_sqrt(N x) { return compn_sqrt(x); }                                        \
    MANTISSA_FN N N##_abs(N x) { return compn_abs(x); }                                          \
    MANTISSA_FN N N##_neg(N x) { return compn_neg(x); }

MANTISSA_COMP_NAMES(comp32, comp32n, float)
MANTISSA_COMP_NAMES(comp64, comp64n, double)
#undef MANTISSA_COMP_NAMES

// ---- Operators ---------------------------------------------------------------------------------

template <typename F> MANTISSA_FN dw<F> operator+(dw<F> x, dw<F> y) { return dw_add(x, y); }
template <typename F> MANTISSA_FN dw<F> operator-(dw<F> x, dw<F> y) { return dw_sub(x, y); }
template <typename F> MANTISSA_FN dw<F> operator*(dw<F> x, dw<F> y) { return dw_mul(x, y); }
template <typename F> MANTISSA_FN dw<F> operator/(dw<F> x, dw<F> y) { return dw_div(x, y); }
template <typename F> MANTISSA_FN dw<F> operator+(dw<F> x, F y) { return dw_add_base(x, y); }
template <typename F> MANTISSA_FN dw<F> operator-(dw<F> x, F y) { return dw_sub_base(x, y); }
template <typename F> MANTISSA_FN dw<F> operator*(dw<F> x, F y) { return dw_mul_base(x, y); }
template <typename F> MANTISSA_FN dw<F> operator/(dw<F> x, F y) { return dw_div_base(x, y); }
template <typename F> MANTISSA_FN dw<F> operator-(dw<F> x) { return dw_neg(x); }

template <typename F> MANTISSA_FN comp<F> operator+(comp<F> x, comp<F> y) { return comp_add(x, y); }
template <typename F> MANTISSA_FN comp<F> operator-(comp<F> x, comp<F> y) { return comp_sub(x, y); }
template <typename F> MANTISSA_FN comp<F> operator*(comp<F> x, comp<F> y) { return comp_mul(x, y); }
template <typename F> MANTISSA_FN comp<F> operator/(comp<F> x, comp<F> y) { return comp_div(x, y); }
template <typename F> MANTISSA_FN comp<F> operator-(comp<F> x) { return comp_neg(x); }

template <typename F> MANTISSA_FN compn<F> operator+(compn<F> x, compn<F> y) { return compn_add(x, y); }
template <typename F> MANTISSA_FN compn<F> operator-(compn<F> x, compn<F> y) { return compn_sub(x, y); }
template <typename F> MANTISSA_FN compn<F> operator*(compn<F> x, compn<F> y) { return compn_mul(x, y); }
template <typename F> MANTISSA_FN compn<F> operator/(compn<F> x, compn<F> y) { return compn_div(x, y); }
template <typename F> MANTISSA_FN compn<F> operator-(compn<F> x) { return compn_neg(x); }

#undef MANTISSA_FN

} // namespace mantissa

#endif // MANTISSA_CUH
