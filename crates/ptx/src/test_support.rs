//! Helpers shared by the unit tests of the rewriting toolkit, the linker and the passes.

use crate::op::{Arith, Op, OpKind, ValueType};
use crate::{parse, Module};
use std::path::PathBuf;

/// Arithmetic, `setp`, `selp` and `mov` on `ty`: the instructions demotion (f64) and promotion
/// (f32) change, which must be left in `ty` only where the pass could not change them.
pub(crate) fn arith_like(op: &Op, ty: ValueType) -> bool {
    use Arith::*;
    op.ty == Some(ty)
        && (matches!(
            op.kind,
            OpKind::Arith(Add | Sub | Mul | Neg | Abs | Min | Max)
                | OpKind::Fma
                | OpKind::Div
                | OpKind::Rcp
                | OpKind::Sqrt
                | OpKind::Rsqrt
                | OpKind::Select
                | OpKind::Move { .. }
        ) || op.is_predicate_compare())
}

/// Parses PTX that must parse completely.
pub(crate) fn parse_clean(what: &str, ptx: &str) -> Module {
    let parsed = parse(ptx);
    assert!(
        parsed.diagnostics.is_empty(),
        "{what}: {:?}",
        parsed.diagnostics
    );
    parsed.module
}

/// ptxas: the crate's own lookup ([`crate::ptxas::find`]), else the one beside nvcc as
/// `mantissa-gpu` finds it (the pip wheel puts both in `nvidia/cu13/bin`). `None` after a skip
/// line when neither is there; a failure under `MANTISSA_REQUIRE_NVCC=1`.
pub(crate) fn ptxas_or_skip() -> Option<PathBuf> {
    if let Some(p) = crate::ptxas::find() {
        return Some(p);
    }
    let nvcc = mantissa_gpu::testing::require_nvcc_or_skip()?;
    let beside = nvcc.path().with_file_name("ptxas");
    if beside.is_file() {
        return Some(beside);
    }
    mantissa_gpu::testing::skip_or_fail(
        mantissa_gpu::testing::nvcc_required(),
        mantissa_gpu::testing::REQUIRE_NVCC_ENV,
        &format!("no ptxas beside {}", nvcc.path().display()),
    );
    None
}

/// Asserts that `module` prints to PTX that parses back to a module printing the same (the
/// model compares instruction ids, which a reparse renumbers in text order) and, where ptxas is
/// found, assembles for sm_90 (the fixtures' target). Returns the printed text.
pub(crate) fn assert_sound(what: &str, module: &Module) -> String {
    let printed = module.to_string();
    let back = parse_clean(what, &printed).to_string();
    assert_eq!(
        back, printed,
        "{what}: the printed module parses to a module that prints differently"
    );
    if let Some(ptxas) = ptxas_or_skip() {
        if let Err(e) = crate::ptxas::assemble_with(&ptxas, &printed, "sm_90") {
            let log = match &e {
                crate::ptxas::PtxasError::Rejected { log } => log.clone(),
                other => other.to_string(),
            };
            panic!("{what}: ptxas refused it: {log}\n{printed}");
        }
    }
    printed
}

/// ptxas and nvdisasm from the toolkit, PATH or the pip wheels; `None` (with the reason
/// printed) when either is missing, unless `MANTISSA_REQUIRE_NVDISASM=1` (set by CI).
pub(crate) fn sass_tools_or_skip() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let found = (
        crate::tools::cuda_tool("ptxas"),
        crate::tools::cuda_tool("nvdisasm"),
    );
    match found {
        (Some(p), Some(d)) => Some((p, d)),
        (p, d) => {
            let missing = if p.is_none() { "ptxas" } else { "nvdisasm" };
            assert!(
                std::env::var("MANTISSA_REQUIRE_NVDISASM").as_deref() != Ok("1"),
                "{missing} not found but MANTISSA_REQUIRE_NVDISASM=1"
            );
            let _ = d;
            eprintln!("skipped: no {missing} (pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-nvdisasm)");
            None
        }
    }
}

/// An exact dyadic number m · 2^e, for tests that check a rounding exactly.
#[derive(Clone, Debug)]
pub(crate) struct Dyadic(pub dashu_int::IBig, pub i32);

impl Dyadic {
    /// A finite double exactly; `+inf` stands for 2^1024 (the value past the largest double).
    pub fn of(x: f64) -> Dyadic {
        use dashu_int::IBig;
        if x == f64::INFINITY {
            return Dyadic(IBig::ONE, 1024);
        }
        assert!(x.is_finite());
        let b = x.to_bits();
        let exp = ((b >> 52) & 0x7ff) as i32;
        let frac = b & ((1 << 52) - 1);
        let (m, e) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), exp - 1075)
        };
        let m = IBig::from(m);
        Dyadic(if x < 0.0 { -m } else { m }, e)
    }

    fn align(&self, e: i32) -> dashu_int::IBig {
        &self.0 << (self.1 - e) as usize
    }

    /// self + o.
    pub fn add(&self, o: &Dyadic) -> Dyadic {
        let e = self.1.min(o.1);
        Dyadic(self.align(e) + o.align(e), e)
    }

    /// −self.
    pub fn neg(&self) -> Dyadic {
        Dyadic(-self.0.clone(), self.1)
    }

    /// self − o.
    pub fn sub(&self, o: &Dyadic) -> Dyadic {
        self.add(&o.neg())
    }

    /// self · o.
    pub fn mul(&self, o: &Dyadic) -> Dyadic {
        Dyadic(&self.0 * &o.0, self.1 + o.1)
    }

    /// self / 2.
    pub fn half(&self) -> Dyadic {
        Dyadic(self.0.clone(), self.1 - 1)
    }

    /// The sign of self − o.
    pub fn cmp(&self, o: &Dyadic) -> std::cmp::Ordering {
        self.sub(o).0.cmp(&dashu_int::IBig::ZERO)
    }

    /// (x + y) / 2 exactly.
    pub fn mid(x: f64, y: f64) -> Dyadic {
        Dyadic::of(x).add(&Dyadic::of(y)).half()
    }
}

/// A tiny seeded generator (xorshift64*), so random test inputs are the same on every run.
/// Tests that draw floats add their own draws through a trait of their own.
pub(crate) struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
