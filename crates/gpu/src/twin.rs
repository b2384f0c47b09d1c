//! The CUDA twin of `mantissa-num`: `cuda/mantissa.cuh`, one header-only file with the same
//! error-free transforms, double-word (`f32x2`, `f64x2`) and composite (`comp32`, `comp64`,
//! `comp32n`, `comp64n`) operations, written so that a GPU computes the same bits as the Rust code.
//!
//! The header spells every floating-point operation as an explicit round-to-nearest intrinsic
//! (`__fadd_rn`, `__fmaf_rn`, `__ddiv_rn`, ...), which NVVM and ptxas neither contract nor
//! approximate under any flag set; negation, absolute value and classification work on bits. Its
//! opening comment lists each operation's algorithm and bound and the special-value rules (the
//! same as `dw.rs` and `comp.rs`), and says what `--ftz=true` (part of `--use_fast_math`) changes:
//! f32 subnormals are flushed, f64 is never affected.
//!
//! Use it by prepending [`HEADER`] to a kernel's source (it needs no includes, so NVRTC compiles
//! it as is); everything is in `namespace mantissa`. [`TwinOp`] names each operation the header
//! defines and [`elementwise_source`] writes one element-wise test kernel per operation, all with
//! the parameters `(W* out, const W* a, const W* b, const int* k, int n)`: `W` is the word type
//! (`float` or `double`), `a`, `b` and `out` hold `2n` words (pair `i` at `2i`, `2i + 1`, the
//! layout of a `#[repr(C)]` `DoubleWord`), `k` holds `n` ints. The bit-identity tests
//! (`tests/twin`) run every operation through these kernels.

use crate::device_types::DeviceType;
use crate::launch::DType;
use crate::nvrtc::Source;
use std::fmt::Write;

/// The header's text, to prepend to a kernel source.
pub const HEADER: &str = include_str!("../cuda/mantissa.cuh");

/// A number type of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TwinType {
    /// The base formats, for the error-free transforms.
    F32,
    F64,
    F32x2,
    F64x2,
    Comp32,
    Comp64,
    Comp32n,
    Comp64n,
}

impl TwinType {
    pub const ALL: [TwinType; 8] = [
        TwinType::F32,
        TwinType::F64,
        TwinType::F32x2,
        TwinType::F64x2,
        TwinType::Comp32,
        TwinType::Comp64,
        TwinType::Comp32n,
        TwinType::Comp64n,
    ];

    /// Its row of the device-type table, which holds every name and size below.
    pub fn device_type(self) -> &'static DeviceType {
        // `TwinType::ALL` and `DeviceType::ALL` list the same types in the same order (tested).
        &DeviceType::ALL[self as usize]
    }

    /// The precision name (design.md "Names"), which is also the header's type and function
    /// prefix for the pair types.
    pub fn name(self) -> &'static str {
        self.device_type().name
    }

    /// The word type of its buffers.
    pub fn word(self) -> DType {
        self.device_type().word
    }

    fn c_word(self) -> &'static str {
        self.device_type().word_cuda()
    }

    /// The C++ field names of a pair type; `None` for the base formats.
    fn fields(self) -> Option<(&'static str, &'static str)> {
        self.device_type().fields
    }

    /// Every operation the header defines for this type, with the shape its test kernel uses.
    pub fn ops(self) -> &'static [(&'static str, Shape)] {
        use Shape::*;
        match self {
            TwinType::F32 | TwinType::F64 => &[
                ("two_sum", Words),
                ("fast_two_sum", Words),
                ("two_diff", Words),
                ("two_prod", Words),
                ("two_prod_dekker", Words),
                ("split", Word),
            ],
            TwinType::F32x2 | TwinType::F64x2 => &[
                ("from_sum", Words),
                ("from_product", Words),
                ("add", Pairs),
                ("sub", Pairs),
                ("add_sloppy", Pairs),
                ("add_fast", Pairs),
                ("add_base", PairWord),
                ("sub_base", PairWord),
                ("mul", Pairs),
                ("mul_seed", Pairs),
                ("mul_fast", Pairs),
                ("mul_base", PairWord),
                ("div", Pairs),
                ("div_dw2", Pairs),
                ("div_seed", Pairs),
                ("div_base", PairWord),
                ("sqrt", Pair),
                ("neg", Pair),
                ("abs", Pair),
                ("scale2", PairInt),
            ],
            TwinType::Comp32 | TwinType::Comp64 => &[
                ("add", Pairs),
                ("sub", Pairs),
                ("mul", Pairs),
                ("div", Pairs),
                ("sqrt", Pair),
                ("abs", Pair),
                ("neg", Pair),
                ("normalized", Pair),
                ("collapse", PairToWord),
            ],
            TwinType::Comp32n | TwinType::Comp64n => &[
                ("add", Pairs),
                ("sub", Pairs),
                ("mul", Pairs),
                ("div", Pairs),
                ("sqrt", Pair),
                ("abs", Pair),
                ("neg", Pair),
            ],
        }
    }
}

/// What an element-wise kernel passes to an operation and stores from it. Pairs are read from
/// `a[2i], a[2i+1]` (and `b`), single words from the first word of a pair (`a[2i]`, `b[2i]`),
/// integers from `k[i]`; two result words go to `out[2i], out[2i+1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `op(pair a, pair b) -> pair`.
    Pairs,
    /// `op(pair a, word b) -> pair`.
    PairWord,
    /// `op(pair a) -> pair`.
    Pair,
    /// `op(pair a, int k) -> pair`.
    PairInt,
    /// `op(pair a) -> word`, stored as `(word, +0)`.
    PairToWord,
    /// `op(word a, word b)`: an error-free transform's two words, or a pair built from two words.
    Words,
    /// `op(word a)` giving two words (the split).
    Word,
}

/// One operation of the header on one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TwinOp {
    pub ty: TwinType,
    pub name: &'static str,
    pub shape: Shape,
}

impl TwinOp {
    /// Every operation of every type, in [`TwinType::ALL`] order.
    pub fn all() -> Vec<TwinOp> {
        TwinType::ALL
            .iter()
            .flat_map(|&ty| {
                ty.ops()
                    .iter()
                    .map(move |&(name, shape)| TwinOp { ty, name, shape })
            })
            .collect()
    }

    /// `twin_<type>_<op>`, e.g. `twin_f32x2_div_dw2`.
    pub fn kernel_name(&self) -> String {
        format!("twin_{}_{}", self.ty.name(), self.name)
    }

    /// `f32x2/div_dw2`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.ty.name(), self.name)
    }

    /// The kernel body's statements: read the arguments, call, set `r0` and `r1`.
    fn body(&self) -> String {
        let w = self.ty.c_word();
        let t = self.ty.name();
        let pair = |buf: &str, var: &str| {
            format!("mantissa::{t} {var} = {{{buf}[2 * i], {buf}[2 * i + 1]}};")
        };
        let word = |buf: &str, var: &str| format!("{w} {var} = {buf}[2 * i];");
        let Some((f0, f1)) = self.ty.fields() else {
            // Base formats: the error-free transforms return through references.
            return match self.shape {
                Shape::Word => format!("{} mantissa::{}(x, r0, r1);", word("a", "x"), self.name),
                _ => format!(
                    "{} {} mantissa::{}(x, y, r0, r1);",
                    word("a", "x"),
                    word("b", "y"),
                    self.name
                ),
            };
        };
        let f = format!("mantissa::{t}_{}", self.name);
        let store = format!("r0 = r.{f0}; r1 = r.{f1};");
        match self.shape {
            Shape::Pairs => format!(
                "{} {} mantissa::{t} r = {f}(x, y); {store}",
                pair("a", "x"),
                pair("b", "y")
            ),
            Shape::PairWord => format!(
                "{} {} mantissa::{t} r = {f}(x, y); {store}",
                pair("a", "x"),
                word("b", "y")
            ),
            Shape::Pair => format!("{} mantissa::{t} r = {f}(x); {store}", pair("a", "x")),
            Shape::PairInt => format!(
                "{} int s = k[i]; mantissa::{t} r = {f}(x, s); {store}",
                pair("a", "x")
            ),
            Shape::PairToWord => format!("{} r0 = {f}(x); r1 = {w}(0);", pair("a", "x")),
            Shape::Words => format!(
                "{} {} mantissa::{t} r = {f}(x, y); {store}",
                word("a", "x"),
                word("b", "y")
            ),
            Shape::Word => format!("{} mantissa::{t} r = {f}(x); {store}", word("a", "x")),
        }
    }
}

/// [`HEADER`] followed by one element-wise kernel per operation (see the module docs for their
/// parameters). Kernels are `extern "C"`, so they keep their [`TwinOp::kernel_name`].
pub fn elementwise_source(ops: &[TwinOp]) -> String {
    let mut src = String::with_capacity(HEADER.len() + 600 * ops.len());
    src.push_str(HEADER);
    src.push_str("\n// ---- Element-wise test kernels (mantissa_gpu::twin::elementwise_source)\n");
    for op in ops {
        let w = op.ty.c_word();
        // Writing to a String cannot fail.
        let _ = write!(
            src,
            "\nextern \"C\" __global__ void {name}({w}* __restrict__ out, const {w}* __restrict__ a,\n    \
             const {w}* __restrict__ b, const int* __restrict__ k, int n) {{\n    \
             int i = blockIdx.x * blockDim.x + threadIdx.x;\n    \
             if (i >= n) return;\n    \
             {w} r0, r1;\n    \
             {{ {body} }}\n    \
             out[2 * i] = r0;\n    \
             out[2 * i + 1] = r1;\n}}\n",
            name = op.kernel_name(),
            body = op.body(),
        );
    }
    src
}

/// [`elementwise_source`] as an NVRTC [`Source`] named `twin.cu`.
pub fn elementwise(ops: &[TwinOp]) -> Source {
    Source::new("twin.cu", elementwise_source(ops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_ops_with_unique_kernel_names() {
        let all = TwinOp::all();
        assert_eq!(all.len(), 2 * (6 + 20 + 9 + 7));
        let mut names: Vec<String> = all.iter().map(TwinOp::kernel_name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(names.contains(&"twin_f32x2_div_dw2".to_string()));
        assert!(names.contains(&"twin_comp64n_sqrt".to_string()));
    }

    #[test]
    fn twin_types_are_the_device_types_in_order() {
        let names: Vec<&str> = TwinType::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            ["f32", "f64", "f32x2", "f64x2", "comp32", "comp64", "comp32n", "comp64n"]
        );
        for t in TwinType::ALL {
            assert_eq!(t.device_type().name, t.name());
            assert_eq!(t.fields().is_some(), t.device_type().words == 2);
        }
    }

    #[test]
    fn kernels_call_the_named_functions() {
        let op = |ty, name| {
            *TwinOp::all()
                .iter()
                .find(|o| o.ty == ty && o.name == name)
                .unwrap()
        };
        let src = elementwise_source(&[
            op(TwinType::F64x2, "add_base"),
            op(TwinType::F32, "split"),
            op(TwinType::Comp32, "collapse"),
        ]);
        assert!(src.starts_with(HEADER));
        assert!(src.contains("void twin_f64x2_add_base(double* __restrict__ out"));
        assert!(src.contains(
            "mantissa::f64x2 x = {a[2 * i], a[2 * i + 1]}; double y = b[2 * i]; \
             mantissa::f64x2 r = mantissa::f64x2_add_base(x, y); r0 = r.hi; r1 = r.lo;"
        ));
        assert!(src.contains("float x = a[2 * i]; mantissa::split(x, r0, r1);"));
        assert!(src.contains("r0 = mantissa::comp32_collapse(x); r1 = float(0);"));
    }

    #[test]
    fn header_comment_documents_every_operation() {
        let doc: String = HEADER
            .lines()
            .take_while(|l| l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for op in TwinOp::all() {
            let entry = match op.ty {
                TwinType::F32 | TwinType::F64 => format!("{}(", op.name),
                TwinType::F32x2 | TwinType::F64x2 => format!("T_{}(", op.name),
                TwinType::Comp32 | TwinType::Comp64 => format!("C_{}(", op.name),
                TwinType::Comp32n | TwinType::Comp64n => format!("Cn_{}", op.name),
            };
            assert!(
                doc.contains(&entry),
                "{} is not in the header's table",
                op.label()
            );
        }
    }
}
