// compare.cuh: one element of crates/harness/src/compare.rs's `compare`, decided on the GPU
// (crates/harness/src/device_compare.rs) and, compiled as host C++, on the CPU by the test that
// checks it against compare.rs element by element.
//
// compare.rs measures a differing finite pair exactly (big floats): the absolute error |v - r|
// rounded once, the relative error |v - r| / |r| rounded to 128 bits and then to f64, the
// distance in ulps of the output's format at r rounded once, and seed 002's correct decimal
// digits (the leading decimal digits v shares with r). Here every one of them is decided with
// doubles alone, and when doubles cannot decide it the element is UNDECIDED: its index and values
// go back to the host, which measures it with compare.rs itself. Nothing is ever approximated:
//
// - abs: |RN(v - r)| is the correctly rounded |v - r| (IEEE subtraction; +inf when it overflows,
//   as the big-float rounding does).
// - ulps: |v - r| * 2^-k is never subnormal (|v - r| >= 2^-54 |r| for distinct doubles), so it is
//   RN(v - r) scaled by 2^-k, exactly; when v - r overflows, (v/2 - r/2) scaled by 2^(1-k).
// - rel: (v - r) as TwoSum's s + e, exact; both words and |r| scaled to [1, 2); the quotient as
//   q1 + q2 with an exact FMA remainder, within 2^-103 of the true one (compare.rs's 128-bit
//   roundings move it by 2^-126 more). It rounds to the same double as compare.rs's unless it lies
//   within 2^-99 of a rounding boundary (a midpoint between doubles): then UNDECIDED.
// - digits: d digits agree when no multiple of 10^(E+1-d) lies in (min(|v|,|r|), max(|v|,|r|)],
//   E = floor(log10 |r|) (compare.rs's `correct_digits`, whose binary search relies on the same
//   monotonicity). That needs floor(x / 10^t) exactly: for |t| <= 22, 10^|t| is a double, and
//   x * 10^|t| (TwoProd) or x / 10^t (an exact FMA remainder) give it exactly; beyond, 10^-t is a
//   double-double from the host's table (tab, 2^-105 relative), the product is within 2^-103,
//   and a value within 2^-96 relative (+2^-50) of an integer is UNDECIDED.
//
// Built with --fmad=false so that no a*b+c is contracted: every FMA here is written as fma().

#ifndef MANTISSA_COMPARE_CUH
#define MANTISSA_COMPARE_CUH

#if defined(__CUDACC__)
#define MC_HD __host__ __device__
#else
#define MC_HD
#endif

typedef unsigned long long mc_u64;
typedef long long mc_i64;

// Element types, numbered as crates/harness/src/device_compare.rs `dtype_code` numbers them.
#define MC_F64 0
#define MC_F32 1
#define MC_F16 2
#define MC_BF16 3
#define MC_I32 4
#define MC_I64 5
#define MC_U8 6
#define MC_U32 7
#define MC_U64 8

// What one element contributes (McPair::kind).
#define MC_SAME 0       // bits equal, or both NaN: no error
#define MC_FINITE 1     // a finite pair that differs in its bits: measured
#define MC_NONFINITE 2  // NaN or an infinity against something else
#define MC_UNDECIDED 3  // a finite pair doubles cannot decide: the host measures it
// Digits of an exact match (compare.rs: +inf).
#define MC_DIGITS_INF 1000
// floor(x / 10^t) results are below 2^62; these say "not decided" and "at least 2^60".
#define MC_FAIL 0xffffffffffffffffull
#define MC_BIG 0xfffffffffffffffeull
// The powers-of-ten table: 10^q = (tab[3i] + tab[3i+1]) * 2^tab[3i+2], i = q - MC_Q_MIN.
#define MC_Q_MIN (-400)
#define MC_Q_MAX 400

MC_HD inline mc_u64 mc_bits(double x) {
#ifdef __CUDA_ARCH__
    return (mc_u64)__double_as_longlong(x);
#else
    mc_u64 b;
    memcpy(&b, &x, 8);
    return b;
#endif
}

MC_HD inline double mc_from_bits(mc_u64 b) {
#ifdef __CUDA_ARCH__
    return __longlong_as_double((mc_i64)b);
#else
    double x;
    memcpy(&x, &b, 8);
    return x;
#endif
}

MC_HD inline int mc_is_nan(mc_u64 b) { return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
MC_HD inline int mc_is_finite(mc_u64 b) { return (b & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
MC_HD inline double mc_inf() { return mc_from_bits(0x7ff0000000000000ull); }

// e with 2^e <= |x| < 2^(e+1), subnormals included (x finite, nonzero); from the bits, so that
// no library's ilogb is trusted.
MC_HD inline int mc_ilogb(double x) {
    const mc_u64 b = mc_bits(x) & 0x7fffffffffffffffull;
    const int field = (int)(b >> 52);
    if (field != 0) return field - 1023;
    int top = 51;
    while (top > 0 && !((b >> top) & 1ull)) --top;
    return top - 1074;
}

// ---- Values as compare.rs reads them (crates/harness/src/data.rs `to_f64`).
// Integers convert with one rounding to nearest (i64, u64), as `as f64` does. Floats convert
// exactly; a NaN keeps its payload, shifted, with the quiet bit set (x86's cvtss2sd and the half
// crate's conversions), so that "bits differ" means the same here and there.
MC_HD inline double mc_from_narrow(mc_u64 sign, mc_u64 field, mc_u64 frac, int frac_bits, int bias, int field_max) {
    const mc_u64 s = sign << 63;
    if (field == (mc_u64)field_max) {
        if (frac == 0) return mc_from_bits(s | 0x7ff0000000000000ull);
        return mc_from_bits(s | 0x7ff8000000000000ull | (frac << (52 - frac_bits)));
    }
    if (field == 0) {
        // Zero or subnormal: frac * 2^(1 - bias - frac_bits), exact (a small integer times a
        // normal power of two).
        const double m = (double)frac * mc_from_bits((mc_u64)(1023 + 1 - bias - frac_bits) << 52);
        return sign ? -m : m;
    }
    return mc_from_bits(s | ((field - (mc_u64)bias + 1023ull) << 52) | (frac << (52 - frac_bits)));
}

MC_HD inline double mc_load(const void* base, int dtype, mc_u64 i) {
    switch (dtype) {
    case MC_F64: return ((const double*)base)[i];
    case MC_F32: {
        const mc_u64 b = ((const unsigned int*)base)[i];
        return mc_from_narrow(b >> 31, (b >> 23) & 0xff, b & 0x7fffff, 23, 127, 0xff);
    }
    case MC_F16: {
        const mc_u64 b = ((const unsigned short*)base)[i];
        return mc_from_narrow(b >> 15, (b >> 10) & 0x1f, b & 0x3ff, 10, 15, 0x1f);
    }
    case MC_BF16: {
        const mc_u64 b = ((const unsigned short*)base)[i];
        return mc_from_narrow(b >> 15, (b >> 7) & 0xff, b & 0x7f, 7, 127, 0xff);
    }
    case MC_I32: return (double)((const int*)base)[i];
    case MC_I64: return (double)((const mc_i64*)base)[i];
    case MC_U8: return (double)((const unsigned char*)base)[i];
    case MC_U32: return (double)((const unsigned int*)base)[i];
    default: return (double)((const mc_u64*)base)[i];
    }
}

// ---- floor(x * 10^-t) for x > 0, exactly, or MC_FAIL.

// floor(yh + yl) where yh + yl is exact, |yl| <= ulp(yh)/2 and 1/4 <= yh < 2^62.
MC_HD inline mc_u64 mc_floor_exact(double yh, double yl) {
    if (yh < 9007199254740992.0) {
        const double f = floor(yh);
        // A non-integer yh is at least ulp(yh) from every integer, farther than yl reaches.
        if (f != yh) return (mc_u64)f;
        return (mc_u64)yh - (yl < 0.0 ? 1ull : 0ull);
    }
    return (mc_u64)yh + (mc_u64)(mc_i64)floor(yl);
}

// floor(yh + yl) where the true value is within 2^-103 relative of yh + yl, or MC_FAIL when it
// is too close to an integer to tell. The fraction is kept exactly as fh + fl (TwoSum), so the
// distances to the integers below and above carry one rounding each (2^-53 relative), far inside
// the margin yh 2^-96.
MC_HD inline mc_u64 mc_floor_near(double yh, double yl) {
    double f, fh, fl = 0.0;
    if (yh < 9007199254740992.0) {
        f = floor(yh);
        const double a = yh - f; // exact, in [0, 1)
        fh = a + yl;             // in [-1/2, 3/2)
        const double z = fh - a;
        fl = (a - (fh - z)) + (yl - z);
    } else {
        f = floor(yl); // yl - floor(yl) is exact
        fh = yl - f;
    }
    double whole;
    if (fh < 0.0 || (fh == 0.0 && fl < 0.0)) whole = -1.0;
    else if (fh > 1.0 || (fh == 1.0 && fl >= 0.0)) whole = 1.0;
    else whole = 0.0;
    const double below = (fh - whole) + fl;
    const double above = ((whole + 1.0) - fh) - fl;
    const double margin = yh * 0x1p-96;
    if (!(below > margin && above > margin)) return MC_FAIL;
    if (yh < 9007199254740992.0) return (mc_u64)(mc_i64)(f + whole);
    return (mc_u64)yh + (mc_u64)(mc_i64)(f + whole);
}

// floor(x * 10^q): exact when 10^q is a double (0 <= q <= 22), else through the table's
// double-double.
MC_HD inline mc_u64 mc_floor_times(double x, int q, const double* tab) {
    const double* e = tab + 3 * (q - MC_Q_MIN);
    const double mh = e[0], ml = e[1];
    const int kx = mc_ilogb(x), sc = kx + (int)e[2];
    // x * 10^q = xm * (mh + ml) * 2^sc with xm * mh in [1, 4].
    if (sc <= -3) return 0;
    if (sc >= 61) return MC_BIG;
    const double xm = ldexp(x, -kx);
    double ph = xm * mh;
    double pl = fma(xm, mh, -ph);
    const int exact = (ml == 0.0);
    if (!exact) {
        pl = fma(xm, ml, pl);
        const double s = ph + pl;
        pl = pl - (s - ph);
        ph = s;
    }
    const double yh = ldexp(ph, sc), yl = ldexp(pl, sc);
    return exact ? mc_floor_exact(yh, yl) : mc_floor_near(yh, yl);
}

// floor(x / 10^t) for 1 <= t <= 22 (10^t a double), exactly: y = (q1 + rem/pm) 2^sc with the
// division's remainder rem exact by FMA and |rem/pm| <= ulp(q1)/2.
MC_HD inline mc_u64 mc_floor_over(double x, int t, const double* tab) {
    const double* e = tab + 3 * (t - MC_Q_MIN);
    const double pm = e[0];
    const int kx = mc_ilogb(x), sc = kx - (int)e[2];
    if (sc <= -1) return 0; // xm / pm < 2
    if (sc >= 61) return MC_BIG;
    const double xm = ldexp(x, -kx);
    const double q1 = xm / pm;
    const double rem = fma(-q1, pm, xm);
    const double yh = ldexp(q1, sc);
    if (yh < 9007199254740992.0) {
        const double f = floor(yh);
        if (f != yh) return (mc_u64)f;
        return (mc_u64)yh - (rem < 0.0 ? 1ull : 0ull);
    }
    // yh >= 2^53: floor = yh + floor(rem 2^sc / pm), a small number decided the same way.
    const double w = ldexp(rem, sc);
    const double qz = w / pm;
    const double rz = fma(-qz, pm, w);
    const double fz = floor(qz);
    const mc_i64 add = (fz != qz) ? (mc_i64)fz : (mc_i64)qz - (rz < 0.0 ? 1 : 0);
    return (mc_u64)yh + (mc_u64)add;
}

MC_HD inline mc_u64 mc_floor_scaled(double x, int t, const double* tab) {
    if (t <= 0 && t >= -22) return mc_floor_times(x, -t, tab);
    if (t >= 1 && t <= 22) return mc_floor_over(x, t, tab);
    if (-t < MC_Q_MIN || -t > MC_Q_MAX) return MC_FAIL;
    return mc_floor_times(x, -t, tab);
}

// Whether (lo, hi] holds a multiple of 10^t: 1, 0, or -1 for undecided. dlow <= hi - lo.
MC_HD inline int mc_holds(double lo, double hi, double dlow, int t, const double* tab) {
    if (dlow > 0.0) {
        // An interval at least 10^t long holds one.
        const mc_u64 fd = mc_floor_scaled(dlow, t, tab);
        if (fd != MC_FAIL && fd >= 1) return 1;
    }
    const mc_u64 a = mc_floor_scaled(hi, t, tab), b = mc_floor_scaled(lo, t, tab);
    if (a >= MC_BIG || b >= MC_BIG) return -1;
    return a > b ? 1 : 0;
}

// compare.rs `correct_digits` of finite v != r, or -1 for undecided; MC_DIGITS_INF when they are
// at least `below` (a caller that keeps a minimum needs no more: see mc_pair). With E = floor(log10 |r|),
// the digits are E - t* where t* is the largest t whose grid 10^t has a point in the interval
// (0 when t* >= E). Distinct doubles differ by at least 2^-54 relative, so at most 17 digits
// agree and t* >= E - 17.
MC_HD inline int mc_digits(double v, double r, const double* tab, int below) {
    if (below <= 0) return MC_DIGITS_INF;
    if (r == 0.0 || v == 0.0) return 0;
    if ((v < 0.0) != (r < 0.0)) return 0;
    const double a = fabs(v), b = fabs(r);
    const double lo = a < b ? a : b, hi = a < b ? b : a;
    int big_e = (int)floor(mc_ilogb(b) * 0.30102999566398120);
    for (int i = 0;; ++i) {
        if (i == 4) return -1;
        const mc_u64 f = mc_floor_scaled(b, big_e, tab);
        if (f == MC_FAIL) return -1;
        // MC_BIG counts as >= 10: the estimate was too low.
        if (f == 0) big_e -= 1;
        else if (f >= 10) big_e += 1;
        else break;
    }
    // A lower bound of hi - lo: RN(hi - lo), or its predecessor when it rounded up (TwoSum's
    // error says which; hi - lo = dh + err exactly).
    const double dh = hi - lo;
    const double z = dh - hi;
    const double err = (hi - (dh - z)) + (-lo - z);
    const double dlow = (err >= 0.0) ? dh : mc_from_bits(mc_bits(dh) - 1);
    // Holding at t implies holding at t - 1 (a multiple of 10^t is one of 10^(t-1)), so the
    // digits E - t* are below `below` exactly when (lo, hi] holds a multiple of 10^(E-below+1):
    // one test instead of the search, for nearly every element once a minimum is known.
    if (below <= 17 && mc_holds(lo, hi, dlow, big_e - below + 1, tab) == 0) return MC_DIGITS_INF;
    const int g = mc_holds(lo, hi, dlow, big_e, tab);
    if (g < 0) return -1;
    if (g) return 0;
    int tl = big_e - 17, th = big_e;
    while (th - tl > 1) {
        const int mid = tl + (th - tl) / 2;
        const int gm = mc_holds(lo, hi, dlow, mid, tab);
        if (gm < 0) return -1;
        if (gm) tl = mid;
        else th = mid;
    }
    if (tl == big_e - 17 && mc_holds(lo, hi, dlow, tl, tab) != 1) return -1;
    return big_e - tl;
}

// Exponent of the lowest set bit of a finite nonzero x.
MC_HD inline int mc_lsb(double x) {
    const mc_u64 b = mc_bits(x) & 0x7fffffffffffffffull;
    const int field = (int)(b >> 52);
    mc_u64 m = b & 0xfffffffffffffull;
    if (field != 0) m |= 1ull << 52;
    int tz = 0;
    while (!((m >> tz) & 1ull)) ++tz;
    return (field != 0 ? field - 1075 : -1074) + tz;
}

// Near a midpoint, the quotient can still be decided when it is exact: em scaled without loss,
// rem + em and (rem + em) / am exact, so that q1 + q2 is the quotient itself; and both the
// difference s + e and q1 + q2 within 128 bits, so that compare.rs's two 128-bit roundings change
// nothing. Then the double nearest it (ties to even) is RN(q1 + q2), as IEEE addition gives.
MC_HD inline int mc_rel_exact(double s, double e, int kd, double em, double rem, double q1, double q2, double am) {
    if (ldexp(em, kd) != e) return 0;
    const double t = rem + em;
    const double z = t - rem;
    if ((rem - (t - z)) + (em - z) != 0.0) return 0; // TwoSum's error: rem + em rounded

    if (fma(-q2, am, t) != 0.0) return 0;
    if (e != 0.0 && mc_ilogb(s) - mc_lsb(e) > 127) return 0;
    if (q2 != 0.0 && mc_ilogb(q1) - mc_lsb(q2) > 127) return 0;
    return 1;
}

// compare.rs `rel_error` of finite v != r, r != 0, or -1.0 for undecided.
MC_HD inline double mc_rel(double v, double r) {
    double s = v - r, z, e;
    int extra = 0;
    if (!mc_is_finite(mc_bits(s))) {
        // Both are beyond 2^1022 in magnitude: halving is exact.
        const double vh = v * 0.5, rh = r * 0.5;
        s = vh - rh;
        z = s - vh;
        e = (vh - (s - z)) + (-rh - z);
        extra = 1;
    } else {
        z = s - v;
        e = (v - (s - z)) + (-r - z);
    }
    if (s < 0.0) {
        s = -s;
        e = -e;
    }
    const double a = fabs(r);
    const int kd = mc_ilogb(s), ka = mc_ilogb(a);
    const double sm = ldexp(s, -kd), em = ldexp(e, -kd), am = ldexp(a, -ka);
    const double q1 = sm / am;
    const double rem = fma(-q1, am, sm);
    const double q2 = (rem + em) / am;
    const double h = q1 + q2;
    const double l = q2 - (h - q1);
    const double ulp = ldexp(1.0, mc_ilogb(h) - 52);
    const double below = (mc_bits(h) & 0xfffffffffffffull) == 0 ? ulp * 0.5 : ulp;
    const double tol = 0x1p-99;
    if (!(l + tol < ulp * 0.5 && l - tol > -below * 0.5) && !mc_rel_exact(s, e, kd, em, rem, q1, q2, am)) {
        return -1.0;
    }
    return ldexp(h, kd - ka + extra);
}

struct McPair {
    int kind;       // MC_SAME, MC_FINITE, MC_NONFINITE or MC_UNDECIDED
    int differing;  // the bits differ
    int counted;    // counts in the mean relative error's n (decided kinds only)
    int digits;     // MC_FINITE: the digits (MC_DIGITS_INF for an exact match)
    double rel, abs, ulps;
};

// One element: v against r, in a format of precision p and minimum exponent emin (p = 0: an
// integer type, whose ulps are |v - r|). Its digits are computed only when below `below`
// (otherwise MC_DIGITS_INF): a caller keeping the fewest digits passes its current minimum,
// MC_DIGITS_INF for the exact count.
MC_HD inline McPair mc_pair(double v, double r, int p, int emin, const double* tab, int below) {
    McPair o;
    o.kind = MC_SAME;
    o.differing = 0;
    o.counted = 0;
    o.digits = MC_DIGITS_INF;
    o.rel = 0.0;
    o.abs = 0.0;
    o.ulps = 0.0;
    const mc_u64 bv = mc_bits(v), br = mc_bits(r);
    if (bv == br || (mc_is_nan(bv) && mc_is_nan(br))) {
        o.counted = mc_is_finite(bv) && r != 0.0;
        o.differing = bv != br;
        return o;
    }
    o.differing = 1;
    if (!mc_is_finite(bv) || !mc_is_finite(br)) {
        o.kind = MC_NONFINITE;
        o.digits = 0;
        o.rel = mc_inf();
        o.ulps = mc_inf();
        return o;
    }
    o.kind = MC_FINITE;
    o.counted = r != 0.0;
    if (v == r) return o; // +0 against -0: exact
    const double s = v - r;
    o.abs = fabs(s);
    if (p == 0) {
        o.ulps = fabs(s);
    } else {
        int er = emin;
        if (r != 0.0) {
            const int lr = mc_ilogb(r);
            if (lr > er) er = lr;
        }
        const int k = er - p + 1;
        if (mc_is_finite(mc_bits(s))) o.ulps = ldexp(fabs(s), -k);
        else o.ulps = ldexp(fabs(v * 0.5 - r * 0.5), 1 - k);
    }
    if (r == 0.0) {
        o.rel = mc_inf();
    } else {
        o.rel = mc_rel(v, r);
        if (o.rel < 0.0) o.kind = MC_UNDECIDED;
    }
    const int d = mc_digits(v, r, tab, below);
    if (d < 0) o.kind = MC_UNDECIDED;
    else o.digits = d;
    return o;
}

#endif
