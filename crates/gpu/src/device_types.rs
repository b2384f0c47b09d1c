//! How each precision exists on the device: one table ([`DeviceType::ALL`], a row per precision
//! with a CUDA twin) of its word type, words and bytes per value, CUDA type, the twin header's
//! function prefix, constructor and field names; the Rust side of the same types
//! ([`DeviceWords`]: a value as 1 or 2 base-format [`Word`]s, laid out like its CUDA type in
//! `mantissa.cuh`); and [`visit_device_type`], the one place a precision becomes a type
//! parameter `T: DeviceWords` (as `Precision::visit` does for `T: Real` on the CPU).
//!
//! [`words_of`] and [`values_of`] convert whole slices to and from the words a kernel reads.

use mantissa_num::precision::Precision;
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64, Real};

use crate::error::GpuError;
use crate::launch::{DType, HostData};

/// One precision on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceType {
    /// The precision.
    pub precision: Precision,
    /// Its name (design.md "Names"), which is also the header's type name for the pair types.
    pub name: &'static str,
    /// The base-format word its buffers hold (f32 or f64).
    pub word: DType,
    /// Words per value: 1 for the base formats, 2 for the pair types.
    pub words: usize,
    /// The CUDA type of one value.
    pub cuda_type: &'static str,
    /// Prefix of the header's functions for this type (`mantissa::f64x2_`), `None` for the
    /// native types (which use the CUDA operators, so the flag set applies to them as it would
    /// to user code).
    pub functions: Option<&'static str>,
    /// The header's constructor of a value from its two words, `None` for the base formats.
    pub make: Option<&'static str>,
    /// The C++ field names of a pair type (leading word first); `None` for the base formats.
    pub fields: Option<(&'static str, &'static str)>,
}

impl DeviceType {
    /// Every precision with a CUDA twin, in `Precision::NATIVE`'s order.
    pub const ALL: [DeviceType; 8] = [
        DeviceType::native(Precision::F32, "f32", DType::F32, "float"),
        DeviceType::native(Precision::F64, "f64", DType::F64, "double"),
        DeviceType::pair(
            Precision::F32x2,
            "f32x2",
            DType::F32,
            "mantissa::f32x2",
            "mantissa::f32x2_",
            DW,
        ),
        DeviceType::pair(
            Precision::F64x2,
            "f64x2",
            DType::F64,
            "mantissa::f64x2",
            "mantissa::f64x2_",
            DW,
        ),
        DeviceType::pair(
            Precision::Comp32,
            "comp32",
            DType::F32,
            "mantissa::comp32",
            "mantissa::comp32_",
            COMP,
        ),
        DeviceType::pair(
            Precision::Comp64,
            "comp64",
            DType::F64,
            "mantissa::comp64",
            "mantissa::comp64_",
            COMP,
        ),
        DeviceType::pair(
            Precision::Comp32n,
            "comp32n",
            DType::F32,
            "mantissa::comp32n",
            "mantissa::comp32n_",
            COMPN,
        ),
        DeviceType::pair(
            Precision::Comp64n,
            "comp64n",
            DType::F64,
            "mantissa::comp64n",
            "mantissa::comp64n_",
            COMPN,
        ),
    ];

    const fn native(
        precision: Precision,
        name: &'static str,
        word: DType,
        cuda: &'static str,
    ) -> Self {
        DeviceType {
            precision,
            name,
            word,
            words: 1,
            cuda_type: cuda,
            functions: None,
            make: None,
            fields: None,
        }
    }

    const fn pair(
        precision: Precision,
        name: &'static str,
        word: DType,
        cuda_type: &'static str,
        functions: &'static str,
        family: PairFamily,
    ) -> Self {
        DeviceType {
            precision,
            name,
            word,
            words: 2,
            cuda_type,
            functions: Some(functions),
            make: Some(family.make),
            fields: Some(family.fields),
        }
    }

    /// The row of `p`; `None` for the precisions without a CUDA twin (mp).
    pub fn of(p: Precision) -> Option<&'static DeviceType> {
        DeviceType::ALL.iter().find(|t| t.precision == p)
    }

    /// Bytes of one word.
    pub fn word_bytes(&self) -> u64 {
        self.word.size() as u64
    }

    /// Bytes of one value.
    pub fn bytes(&self) -> u64 {
        self.words as u64 * self.word_bytes()
    }

    /// The CUDA type of one word (`float`, `double`).
    pub fn word_cuda(&self) -> &'static str {
        match self.word {
            DType::F32 => "float",
            _ => "double",
        }
    }

    /// Runs `visitor` with this type's [`DeviceWords`] type.
    pub fn visit<V: DeviceTypeVisitor>(&self, visitor: V) -> V::Output {
        match self.precision {
            Precision::F32 => visitor.visit::<f32>(),
            Precision::F64 => visitor.visit::<f64>(),
            Precision::F32x2 => visitor.visit::<f32x2>(),
            Precision::F64x2 => visitor.visit::<f64x2>(),
            Precision::Comp32 => visitor.visit::<Comp32>(),
            Precision::Comp64 => visitor.visit::<Comp64>(),
            Precision::Comp32n => visitor.visit::<CompNorm32>(),
            Precision::Comp64n => visitor.visit::<CompNorm64>(),
            // `DeviceType::ALL` has no other precision.
            Precision::Mp(_) => unreachable!("mp has no device type"),
        }
    }
}

/// The header's names shared by a family of pair types.
struct PairFamily {
    make: &'static str,
    fields: (&'static str, &'static str),
}

const DW: PairFamily = PairFamily {
    make: "mantissa::dw_make",
    fields: ("hi", "lo"),
};
const COMP: PairFamily = PairFamily {
    make: "mantissa::comp_make",
    fields: ("value", "error"),
};
const COMPN: PairFamily = PairFamily {
    make: "mantissa::compn_make",
    fields: ("value", "error"),
};

/// Generic code over the device types, run for one precision by [`visit_device_type`].
pub trait DeviceTypeVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `T`, the precision's device type.
    fn visit<T: DeviceWords>(self) -> Self::Output;
}

/// Runs `visitor` with the [`DeviceWords`] type of `p`; `None` when `p` does not run on the
/// device (mp).
pub fn visit_device_type<V: DeviceTypeVisitor>(p: Precision, visitor: V) -> Option<V::Output> {
    DeviceType::of(p).map(|t| t.visit(visitor))
}

/// A type whose values travel to the GPU as an array of base-format words (1 or 2 per value),
/// laid out like the matching CUDA type of `mantissa.cuh`.
pub trait DeviceWords: Real + Copy {
    /// Its base-format word.
    type Word: Word;
    /// Its row of [`DeviceType::ALL`].
    const TYPE: DeviceType;
    /// The CUDA type of one value (from [`DeviceWords::TYPE`]).
    const CUDA_TYPE: &'static str = Self::TYPE.cuda_type;
    /// The header's function prefix (from [`DeviceWords::TYPE`]).
    const FUNCTIONS: Option<&'static str> = Self::TYPE.functions;
    /// Appends its words to `out`.
    fn push_words(&self, out: &mut Vec<Self::Word>);
    /// The value of its words (`w` holds at least [`DeviceWords::words`] of them).
    fn from_words(w: &[Self::Word]) -> Self;
    /// Words per value (from [`DeviceWords::TYPE`]).
    fn words() -> usize {
        Self::TYPE.words
    }
    /// `self + x` for an f64 input `x`, the step of a sum over f64 data accumulated in this
    /// precision: `self + from_f64(x)` in general, and for f64x2 DWPlusFP (`add_base`, what a
    /// double-double sum of f64 data does, 10 flops instead of AccurateDWPlusDW's 20). The
    /// study's GPU sums' `add_f64` is the CUDA twin of this.
    fn add_f64(self, x: f64) -> Self {
        self + Self::from_f64(x)
    }
}

/// A base-format word: f32 or f64.
pub trait Word: Copy + Send + Sync + 'static {
    /// Its element type in device buffers.
    const DTYPE: DType;
    /// Its CUDA type.
    const CUDA: &'static str;
    /// A host buffer of these words.
    fn host(v: Vec<Self>) -> HostData;
    /// The words of a host buffer, `None` when it holds another type.
    fn unhost(h: HostData) -> Option<Vec<Self>>;
    /// Its bits, widened.
    fn bits(self) -> u64;
    /// Whether it is a NaN.
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
    ($t:ty, $row:expr) => {
        impl DeviceWords for $t {
            type Word = $t;
            const TYPE: DeviceType = DeviceType::ALL[$row];
            fn push_words(&self, out: &mut Vec<$t>) {
                out.push(*self);
            }
            fn from_words(w: &[$t]) -> Self {
                w[0]
            }
        }
    };
}
native_words!(f32, 0);
native_words!(f64, 1);

macro_rules! pair_words {
    ($t:ty, $w:ty, $row:expr, $a:ident, $b:ident, $make:expr $(, $extra:item)?) => {
        impl DeviceWords for $t {
            type Word = $w;
            const TYPE: DeviceType = DeviceType::ALL[$row];
            fn push_words(&self, out: &mut Vec<$w>) {
                out.push(self.$a);
                out.push(self.$b);
            }
            fn from_words(w: &[$w]) -> Self {
                $make(w[0], w[1])
            }
            $($extra)?
        }
    };
}
pair_words!(f32x2, f32, 2, hi, lo, f32x2::from_parts);
pair_words!(
    f64x2,
    f64,
    3,
    hi,
    lo,
    f64x2::from_parts,
    fn add_f64(self, x: f64) -> Self {
        self.add_base(x)
    }
);
pair_words!(Comp32, f32, 4, value, error, Comp32::new);
pair_words!(Comp64, f64, 5, value, error, Comp64::new);
pair_words!(CompNorm32, f32, 6, value, error, CompNorm32::new);
pair_words!(CompNorm64, f64, 7, value, error, CompNorm64::new);

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that a type's row agrees with its Rust layout and names.
    struct Consistent;

    impl DeviceTypeVisitor for Consistent {
        type Output = (Precision, usize, u64);
        fn visit<T: DeviceWords>(self) -> Self::Output {
            let mut w = Vec::new();
            T::one().push_words(&mut w);
            assert_eq!(w.len(), T::words(), "{}", T::TYPE.name);
            assert_eq!(T::Word::DTYPE, T::TYPE.word, "{}", T::TYPE.name);
            assert_eq!(T::Word::CUDA, T::TYPE.word_cuda(), "{}", T::TYPE.name);
            assert_eq!(T::from_words(&w).to_f64(), 1.0, "{}", T::TYPE.name);
            (T::TYPE.precision, std::mem::size_of::<T>(), T::TYPE.bytes())
        }
    }

    #[test]
    fn every_native_precision_has_one_consistent_row() {
        assert_eq!(
            DeviceType::ALL.map(|t| t.precision),
            Precision::NATIVE,
            "one row per native precision, in order"
        );
        for p in Precision::NATIVE {
            let t = DeviceType::of(p).unwrap();
            assert_eq!(t.name, p.to_string());
            let (visited, rust_bytes, bytes) = visit_device_type(p, Consistent).unwrap();
            assert_eq!(visited, p, "the visitor runs the precision's own type");
            // A value on the device takes what it takes on the host (#[repr(C)] pairs).
            assert_eq!(rust_bytes as u64, bytes, "{p}");
            if let Some(f) = t.functions {
                assert_eq!(f, format!("{}_", t.cuda_type), "{p}");
            }
        }
        assert!(visit_device_type(Precision::Mp(128), Consistent).is_none());
    }

    #[test]
    fn pair_types_take_two_words() {
        let bytes = |p| DeviceType::of(p).unwrap().bytes();
        assert_eq!(bytes(Precision::F32), 4);
        assert_eq!(bytes(Precision::F64), 8);
        assert_eq!(bytes(Precision::F32x2), 8);
        assert_eq!(bytes(Precision::Comp32n), 8);
        assert_eq!(bytes(Precision::F64x2), 16);
        assert_eq!(bytes(Precision::Comp64), 16);
    }
}
