//! How values of each precision travel to and from the GPU: [`DeviceWords`] (a value as 1 or 2
//! base-format words, laid out like its CUDA type in `mantissa.cuh`) and [`Word`] (f32 or f64).
//! Shared by the GPU experiments ([`crate::gpu_ops`], [`crate::gpu_reduce`], [`crate::intensity`],
//! [`crate::linalg`], [`crate::chains`]); [`words_of`] and [`values_of`] convert whole slices.

use mantissa_gpu::{DType, GpuError, HostData};
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64, Real};

/// A type whose values travel to the GPU as an array of base-format words (1 or 2 per value),
/// laid out like the matching CUDA type of `mantissa.cuh`.
pub trait DeviceWords: Real + Copy {
    type Word: Word;
    /// The CUDA type of one value.
    const CUDA_TYPE: &'static str;
    /// Prefix of the header's functions for this type, `None` for the native types (which use
    /// the CUDA operators, so the flag set applies to them as it would to user code).
    const FUNCTIONS: Option<&'static str>;
    fn push_words(&self, out: &mut Vec<Self::Word>);
    fn from_words(w: &[Self::Word]) -> Self;
    fn words() -> usize;
    /// `self + x` for an f64 input `x`, the step of a sum over f64 data accumulated in this
    /// precision: `self + from_f64(x)` in general, and for f64x2 DWPlusFP (`add_base`, what a
    /// double-double sum of f64 data does, 10 flops instead of AccurateDWPlusDW's 20). The
    /// kernels' `add_f64` (`gpu_reduce`) is the CUDA twin of this.
    fn add_f64(self, x: f64) -> Self {
        self + Self::from_f64(x)
    }
}

/// A base-format word: f32 or f64.
pub trait Word: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    const CUDA: &'static str;
    fn host(v: Vec<Self>) -> HostData;
    fn unhost(h: HostData) -> Option<Vec<Self>>;
    fn bits(self) -> u64;
    fn is_nan(self) -> bool;
}

impl Word for f32 {
    const DTYPE: DType = DType::F32;
    const CUDA: &'static str = "float";
    fn host(v: Vec<Self>) -> HostData {
        HostData::F32(v)
    }
    fn unhost(h: HostData) -> Option<Vec<Self>> {
        match h {
            HostData::F32(v) => Some(v),
            _ => None,
        }
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Word for f64 {
    const DTYPE: DType = DType::F64;
    const CUDA: &'static str = "double";
    fn host(v: Vec<Self>) -> HostData {
        HostData::F64(v)
    }
    fn unhost(h: HostData) -> Option<Vec<Self>> {
        match h {
            HostData::F64(v) => Some(v),
            _ => None,
        }
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

macro_rules! native_words {
    ($t:ty, $cuda:literal) => {
        impl DeviceWords for $t {
            type Word = $t;
            const CUDA_TYPE: &'static str = $cuda;
            const FUNCTIONS: Option<&'static str> = None;
            fn push_words(&self, out: &mut Vec<$t>) {
                out.push(*self);
            }
            fn from_words(w: &[$t]) -> Self {
                w[0]
            }
            fn words() -> usize {
                1
            }
        }
    };
}
native_words!(f32, "float");
native_words!(f64, "double");

macro_rules! pair_words {
    ($t:ty, $w:ty, $cuda:literal, $prefix:literal, $a:ident, $b:ident, $make:expr) => {
        pair_words!($t, $w, $cuda, $prefix, $a, $b, $make, {});
    };
    ($t:ty, $w:ty, $cuda:literal, $prefix:literal, $a:ident, $b:ident, $make:expr, {$($extra:item)*}) => {
        impl DeviceWords for $t {
            $($extra)*
            type Word = $w;
            const CUDA_TYPE: &'static str = $cuda;
            const FUNCTIONS: Option<&'static str> = Some($prefix);
            fn push_words(&self, out: &mut Vec<$w>) {
                out.push(self.$a);
                out.push(self.$b);
            }
            fn from_words(w: &[$w]) -> Self {
                $make(w[0], w[1])
            }
            fn words() -> usize {
                2
            }
        }
    };
}
pair_words!(
    f32x2,
    f32,
    "mantissa::f32x2",
    "mantissa::f32x2_",
    hi,
    lo,
    f32x2::from_parts
);
pair_words!(
    f64x2,
    f64,
    "mantissa::f64x2",
    "mantissa::f64x2_",
    hi,
    lo,
    f64x2::from_parts,
    {
        fn add_f64(self, x: f64) -> Self {
            self.add_base(x)
        }
    }
);
pair_words!(
    Comp32,
    f32,
    "mantissa::comp32",
    "mantissa::comp32_",
    value,
    error,
    Comp32::new
);
pair_words!(
    Comp64,
    f64,
    "mantissa::comp64",
    "mantissa::comp64_",
    value,
    error,
    Comp64::new
);
pair_words!(
    CompNorm32,
    f32,
    "mantissa::comp32n",
    "mantissa::comp32n_",
    value,
    error,
    CompNorm32::new
);
pair_words!(
    CompNorm64,
    f64,
    "mantissa::comp64n",
    "mantissa::comp64n_",
    value,
    error,
    CompNorm64::new
);

/// The values of `xs` as base-format words, ready to upload. Device buffers hold at least one
/// element, so an empty slice becomes one zero (a launch over n = 0 reads nothing).
pub fn words_of<T: DeviceWords>(xs: &[T]) -> HostData {
    let mut w = Vec::with_capacity(xs.len().max(1) * T::words());
    for x in xs {
        x.push_words(&mut w);
    }
    if w.is_empty() {
        T::zero().push_words(&mut w);
    }
    T::Word::host(w)
}

/// The first `count` values of a downloaded buffer of `T`'s words; `what` names the buffer in
/// the error when it is shorter or of another word type.
pub fn values_of<T: DeviceWords>(
    data: HostData,
    count: usize,
    what: &str,
) -> Result<Vec<T>, GpuError> {
    let words = T::Word::unhost(data).unwrap_or_default();
    if words.len() < count * T::words() {
        return Err(GpuError::BadBuffer {
            what: what.to_string(),
            problem: format!(
                "{} words read, {} expected",
                words.len(),
                count * T::words()
            ),
        });
    }
    Ok(words
        .chunks(T::words())
        .take(count)
        .map(T::from_words)
        .collect())
}
