//! What an instruction means: [`decode`] reads an [`Instruction`]'s opcode and modifiers once
//! into a typed [`Op`] — kind, value type, rounding, `.ftz`/`.approx`/`.full`/`.sat`, and which
//! operands it writes. This is the one table of opcode meanings in mantissa: the model's
//! [`Instruction::defs`], the def-use graph, the census, units, the demotion pass and the
//! interpreter all read it, so a new opcode is taught here once.
//!
//! Decoding needs no register declarations. What only declarations can tell — whether `mov.b64`
//! moves a double's bits into an integer register — is answered by [`crate::regs::RegTable`]
//! ([`crate::regs::RegTable::reinterprets`]). Opcodes this table does not know decode to
//! [`OpKind::Other`] with their name kept, so an analysis can say which instruction it did not
//! understand rather than guess.
//!
//! No opcode's text is tested anywhere else (`crates/ptx/tests/it/one_decode.rs` scans the
//! workspace for that): code and tests ask [`Op`]'s kind and predicates ([`Op::is_call`],
//! [`Op::is_param_access`], [`Op::transfers_control`], ...), and a question no predicate answers
//! gets one here. Reports name instructions by their full opcode (`fma.rn.f64`); what such a
//! name means is [`decode_name`]. SASS mnemonics (`FFMA`, from nvdisasm) are another IR, with
//! their own small classification in [`crate::sass`].

use crate::model::{InstId, Instruction, Operand, SrcLine};
// The registers an instruction writes and reads follow from its decode; they are extracted
// beside the per-function decode.
pub(crate) use crate::decode::defs_uses;
use serde::Serialize;
use std::fmt;

/// A PTX value type (`.f32`, `.u64`, `.pred`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // The variants are PTX's own type names.
pub enum ValueType {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    TF32,
    F32,
    F64,
    E4M3,
    E5M2,
}

/// Every type with its PTX spelling (without the dot).
const TYPE_NAMES: [(ValueType, &str); 23] = [
    (ValueType::Pred, "pred"),
    (ValueType::B8, "b8"),
    (ValueType::B16, "b16"),
    (ValueType::B32, "b32"),
    (ValueType::B64, "b64"),
    (ValueType::B128, "b128"),
    (ValueType::U8, "u8"),
    (ValueType::U16, "u16"),
    (ValueType::U32, "u32"),
    (ValueType::U64, "u64"),
    (ValueType::S8, "s8"),
    (ValueType::S16, "s16"),
    (ValueType::S32, "s32"),
    (ValueType::S64, "s64"),
    (ValueType::F16, "f16"),
    (ValueType::F16x2, "f16x2"),
    (ValueType::BF16, "bf16"),
    (ValueType::BF16x2, "bf16x2"),
    (ValueType::TF32, "tf32"),
    (ValueType::F32, "f32"),
    (ValueType::F64, "f64"),
    (ValueType::E4M3, "e4m3"),
    (ValueType::E5M2, "e5m2"),
];

impl ValueType {
    /// The type a modifier names (`f32`, without the dot), if it names one.
    pub fn parse(m: &str) -> Option<ValueType> {
        TYPE_NAMES.iter().find(|(_, n)| *n == m).map(|(t, _)| *t)
    }

    /// The PTX spelling without the dot (`f32`).
    pub fn name(self) -> &'static str {
        TYPE_NAMES
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("", |(_, n)| n)
    }

    /// Width in bytes (`.pred` counts 1, as a `.reg .pred` or a `.b8` of it does).
    pub fn bytes(self) -> u32 {
        use ValueType::*;
        match self {
            Pred | B8 | U8 | S8 | E4M3 | E5M2 => 1,
            B16 | U16 | S16 | F16 | BF16 => 2,
            B32 | U32 | S32 | F16x2 | BF16x2 | TF32 | F32 => 4,
            B64 | U64 | S64 | F64 => 8,
            B128 => 16,
        }
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }

    /// A floating-point type (packed halves, tf32 and the fp8 formats included).
    pub fn is_float(self) -> bool {
        use ValueType::*;
        matches!(
            self,
            F16 | F16x2 | BF16 | BF16x2 | TF32 | F32 | F64 | E4M3 | E5M2
        )
    }

    /// A signed integer type.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ValueType::S8 | ValueType::S16 | ValueType::S32 | ValueType::S64
        )
    }

    /// An unsigned integer type.
    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            ValueType::U8 | ValueType::U16 | ValueType::U32 | ValueType::U64
        )
    }

    /// An integer type (signed or unsigned; untyped bits are not).
    pub fn is_int(self) -> bool {
        self.is_signed() || self.is_unsigned()
    }

    /// Untyped bits (`.b32`).
    pub fn is_bits(self) -> bool {
        matches!(
            self,
            ValueType::B8 | ValueType::B16 | ValueType::B32 | ValueType::B64 | ValueType::B128
        )
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rounding modifier: the IEEE ones of arithmetic and float results (`.rn` ...) and the
/// round-to-integer ones of `cvt` (`.rni` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// To nearest, ties to even.
    Rn,
    /// To nearest, ties away from zero (`cvt.rna.tf32.f32`).
    Rna,
    /// Toward zero.
    Rz,
    /// Toward minus infinity.
    Rm,
    /// Toward plus infinity.
    Rp,
    /// To the nearest integer, ties to even.
    Rni,
    /// To an integer toward zero.
    Rzi,
    /// To an integer toward minus infinity.
    Rmi,
    /// To an integer toward plus infinity.
    Rpi,
}

impl Rounding {
    fn parse(m: &str) -> Option<Rounding> {
        Some(match m {
            "rn" => Rounding::Rn,
            "rna" => Rounding::Rna,
            "rz" => Rounding::Rz,
            "rm" => Rounding::Rm,
            "rp" => Rounding::Rp,
            "rni" => Rounding::Rni,
            "rzi" => Rounding::Rzi,
            "rmi" => Rounding::Rmi,
            "rpi" => Rounding::Rpi,
            _ => return None,
        })
    }

    /// Whether this rounds to an integral value (`.rni` ...), as `cvt` between floats may.
    pub fn is_integral(self) -> bool {
        matches!(
            self,
            Rounding::Rni | Rounding::Rzi | Rounding::Rmi | Rounding::Rpi
        )
    }
}

/// A state space of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// No space modifier: a generic address.
    Generic,
    /// `.global`
    Global,
    /// `.shared` (any `::cta`/`::cluster` qualifier).
    Shared,
    /// `.local`
    Local,
    /// `.param` (kernel and function parameters).
    Param,
    /// `.const`
    Const,
    /// Texture fetches (`tex`, `tld4`).
    Tex,
    /// Surface accesses (`suld`, `sust`).
    Surf,
}

impl Space {
    /// The space a modifier names (`shared::cta` is shared), if it names one.
    pub fn parse(m: &str) -> Option<Space> {
        Some(match m.split_once("::").map_or(m, |(s, _)| s) {
            "global" => Space::Global,
            "shared" => Space::Shared,
            "local" => Space::Local,
            "param" => Space::Param,
            "const" => Space::Const,
            "tex" => Space::Tex,
            "surf" => Space::Surf,
            _ => return None,
        })
    }

    /// The name reports use (`global`, `generic`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Space::Generic => "generic",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
            Space::Tex => "tex",
            Space::Surf => "surf",
        }
    }

    /// Off the chip (global, local, generic): what arithmetic intensity counts.
    pub fn is_offchip(self) -> bool {
        matches!(self, Space::Global | Space::Local | Space::Generic)
    }
}

/// Arithmetic with one rounding (floats) or none (integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's opcode names.
pub enum Arith {
    Add,
    Sub,
    Mul,
    /// Integer multiply-add (`mad.lo.s32`); the float one is [`OpKind::Fma`].
    Mad,
    Neg,
    Abs,
    Min,
    Max,
    Rem,
    /// Integer division (`div.s32`); the float one is [`OpKind::Div`].
    IntDiv,
}

/// Special functions the hardware approximates (`sin.approx.f32`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's opcode names.
pub enum MathFn {
    Sin,
    Cos,
    Ex2,
    Lg2,
    Tanh,
}

/// A comparison of `setp`/`set`, as PTX spells it (`lt`; `ltu` is true on unordered too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's comparison names.
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

impl Cmp {
    fn parse(m: &str) -> Option<Cmp> {
        use Cmp::*;
        Some(match m {
            "eq" => Eq,
            "ne" => Ne,
            "lt" => Lt,
            "le" => Le,
            "gt" => Gt,
            "ge" => Ge,
            "lo" => Lo,
            "ls" => Ls,
            "hi" => Hi,
            "hs" => Hs,
            "equ" => Equ,
            "neu" => Neu,
            "ltu" => Ltu,
            "leu" => Leu,
            "gtu" => Gtu,
            "geu" => Geu,
            "num" => Num,
            "nan" => Nan,
            _ => return None,
        })
    }
}

/// How `setp` combines its comparison with a third predicate operand (`setp.lt.and.f32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// Bit operations. [`BitOp::Testp`] and [`BitOp::Copysign`] read a float's bits as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's opcode names.
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Shf,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Bfind,
    /// `bfind.shiftamt`: the left shift that brings the bit `bfind` finds to the top.
    BfindShiftAmount,
    Prmt,
    Lop3,
    Testp,
    Copysign,
}

/// Control flow and synchronisation: no data result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// `bra`: a direct branch (conditional when guarded).
    Bra,
    /// `brx.idx`: an indirect branch to one of a list of labels.
    Brx,
    /// `ret`
    Ret,
    /// `exit`
    Exit,
    /// `trap`
    Trap,
    /// `bar`, `barrier`: a block-wide barrier.
    Barrier,
    /// `membar`, `fence`: memory ordering.
    Fence,
}

impl Control {
    /// Whether control never falls through to the next instruction when this runs.
    pub fn ends_flow(self) -> bool {
        matches!(self, Control::Ret | Control::Exit | Control::Trap)
    }
}

/// Warp-collective operations: the lanes named by a member mask (the last operand; `activemask`
/// has none) meet at one instruction and exchange values. PTX requires every non-exited lane of
/// the mask to execute the same instruction with the same mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Warp {
    /// `shfl.sync.{up,down,bfly,idx}.b32 d, a, b, c, membermask`: `a` of the lane that `b`
    /// selects (clamped by `c`), or the lane's own `a` where that lane is out of range.
    Shuffle(Shuffle),
    /// `vote.sync.{all,any,uni,ballot}`: a predicate of every lane combined.
    Vote(Vote),
    /// `redux.sync.{add,min,max,and,or,xor}.{u32,s32,b32} d, a, membermask`.
    Reduce(Reduce),
    /// `activemask.b32 d`: the lanes executing it together.
    ActiveMask,
    /// `bar.warp.sync membermask`: the lanes wait for each other.
    Sync,
    /// `match.{any,all}.sync.{b32,b64}`: the lanes holding the same value.
    Match {
        /// `.all` (every lane the same value) rather than `.any`.
        all: bool,
    },
}

/// How `shfl.sync` picks its source lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's mode names.
pub enum Shuffle {
    Up,
    Down,
    Bfly,
    Idx,
}

/// What `vote.sync` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's mode names.
pub enum Vote {
    All,
    Any,
    Uni,
    Ballot,
}

/// What `redux.sync` computes over the lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's operation names.
pub enum Reduce {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// The warp-collective operation an instruction is, if it is one.
fn warp_op(opcode: &str, mods: &[String]) -> Option<Warp> {
    let has = |m: &str| mods.iter().any(|x| x == m);
    Some(match opcode {
        "shfl" => Warp::Shuffle(match () {
            _ if has("up") => Shuffle::Up,
            _ if has("down") => Shuffle::Down,
            _ if has("bfly") => Shuffle::Bfly,
            _ if has("idx") => Shuffle::Idx,
            _ => return None,
        }),
        "vote" => Warp::Vote(match () {
            _ if has("all") => Vote::All,
            _ if has("any") => Vote::Any,
            _ if has("uni") => Vote::Uni,
            _ if has("ballot") => Vote::Ballot,
            _ => return None,
        }),
        "redux" => Warp::Reduce(match () {
            _ if has("add") => Reduce::Add,
            _ if has("min") => Reduce::Min,
            _ if has("max") => Reduce::Max,
            _ if has("and") => Reduce::And,
            _ if has("or") => Reduce::Or,
            _ if has("xor") => Reduce::Xor,
            _ => return None,
        }),
        "activemask" => Warp::ActiveMask,
        "bar" | "barrier" if has("warp") => Warp::Sync,
        "match" => Warp::Match { all: has("all") },
        _ => return None,
    })
}

/// The read-modify-write of `atom`/`red`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // PTX's operation names.
pub enum AtomicOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

/// Which part of an integer product `mul`/`mad` keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// `.lo`: the low half (the type's width).
    Lo,
    /// `.hi`: the high half.
    Hi,
    /// `.wide`: the whole product, twice the type's width.
    Wide,
}

/// What kind of operation an instruction is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "op", content = "of")]
pub enum OpKind {
    /// Add, subtract, multiply, negate, ... on integers or floats.
    Arith(Arith),
    /// `fma`, and `mad` on floats: a product and a sum rounded once.
    Fma,
    /// Float division (`div.rn`, `div.full`, `div.approx`).
    Div,
    /// Reciprocal.
    Rcp,
    /// Square root.
    Sqrt,
    /// Reciprocal square root (always approximate).
    Rsqrt,
    /// A hardware-approximated special function.
    Approx(MathFn),
    /// `setp`/`set`: a comparison writing a predicate (or a value).
    Compare(Cmp),
    /// `selp`: one of two values chosen by a predicate.
    Select,
    /// `cvt`: a conversion between types.
    Convert {
        /// The source type.
        from: ValueType,
        /// The destination type.
        to: ValueType,
    },
    /// `mov`; `reinterpret` when it packs or unpacks a vector of registers (`mov.b64 %rd1,
    /// {%r1, %r2}`): the bits are regrouped, not converted. Whether a plain `mov.b64` moves a
    /// double's bits into an integer register needs the declarations
    /// ([`crate::regs::RegTable::reinterprets`]).
    Move {
        /// Bits regrouped between registers of other widths.
        reinterpret: bool,
    },
    /// Bit operations.
    Bits(BitOp),
    /// Loads (`ld`, `ldu`, texture and surface reads).
    Load(Space),
    /// Stores.
    Store(Space),
    /// Atomics that return the old value.
    Atom(Space),
    /// Reductions to memory (atomics without a result).
    Red(Space),
    /// A call of another function.
    Call,
    /// Branches, returns, barriers, fences.
    Control(Control),
    /// `cvta`: address conversion between a state space and generic.
    Cvta,
    /// A warp-collective operation (`shfl`, `vote`, `redux`, `activemask`, `bar.warp`, `match`).
    Warp(Warp),
    /// Anything else, by its opcode.
    Other(String),
}

/// Which operands an instruction writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Writes {
    /// No register (stores, branches, barriers).
    Nothing,
    /// The first operand (a register, a vector of registers, or `%p|%q` pairs as written).
    First,
    /// A call's return list, when it has one.
    CallReturns,
}

/// One instruction, decoded: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Op {
    /// What it does.
    pub kind: OpKind,
    /// The operation's type: the last type modifier (`fma.rn.f32` is f32, `ld.global.v4.f32` is
    /// f32, `setp.lt.s32` is s32), for `cvt` the destination; `None` without one (`bra`).
    pub ty: Option<ValueType>,
    /// The rounding modifier, if written.
    pub rounding: Option<Rounding>,
    /// `.ftz`: subnormal inputs and results flushed to zero.
    pub ftz: bool,
    /// `.approx`: a hardware approximation.
    pub approx: bool,
    /// `.full`: `div.full.f32`, full-range but not IEEE.
    pub full: bool,
    /// `.sat` (or `.satfinite`): the result clamped.
    pub sat: bool,
    /// `.lo`/`.hi`/`.wide` of an integer `mul`/`mad`.
    pub part: Option<Part>,
    /// How `setp` combines with a third predicate, if it does.
    pub combine: Option<BoolOp>,
    /// `.v2`/`.v4`/`.v8` accesses move this many elements; 1 otherwise.
    pub vector: u32,
    /// What an `atom`/`red` does to memory.
    pub atomic: Option<AtomicOp>,
    /// Which operands it writes.
    pub writes: Writes,
    /// `set` rather than `setp`: the comparison's result is written as a value of the first type
    /// (`set.lt.u32.f32` writes 0 or 0xffffffff), not as a predicate.
    pub value_result: bool,
}

/// Opcodes with no register result besides the ones [`OpKind`] names (stores, branches, ...).
const NO_RESULT: [&str; 9] = [
    "prefetch",
    "prefetchu",
    "brkpt",
    "pmevent",
    "cp",
    "stmatrix",
    "griddepcontrol",
    "nanosleep",
    "discard",
];

/// Decodes one instruction (see the module docs).
pub fn decode(inst: &Instruction) -> Op {
    let mods = &inst.modifiers;
    let mut ty = None;
    let mut types: [Option<ValueType>; 2] = [None, None];
    let mut n_types = 0;
    let mut rounding = None;
    let mut space = None;
    let mut cmp = None;
    let mut combine = None;
    let mut part = None;
    let (mut ftz, mut approx, mut full, mut sat) = (false, false, false, false);
    let mut vector = 1;
    for m in mods {
        let m = m.as_str();
        if let Some(t) = ValueType::parse(m) {
            if n_types < 2 {
                types[n_types] = Some(t);
            }
            n_types += 1;
            ty = Some(t);
        } else if let Some(r) = Rounding::parse(m) {
            rounding = Some(r);
        } else if let Some(s) = Space::parse(m) {
            space = Some(s);
        } else if let (Some(c), false) = (Cmp::parse(m), matches!(m, "lo" | "hi")) {
            cmp = Some(c);
        } else {
            match m {
                "ftz" => ftz = true,
                "approx" => approx = true,
                "full" => full = true,
                "sat" | "satfinite" => sat = true,
                // `lo`/`hi` are parts of a product, or unsigned comparisons of `setp`.
                "lo" => {
                    part = Some(Part::Lo);
                    cmp = Some(Cmp::Lo);
                }
                "hi" => {
                    part = Some(Part::Hi);
                    cmp = Some(Cmp::Hi);
                }
                "wide" => part = Some(Part::Wide),
                "and" => combine = Some(BoolOp::And),
                "or" => combine = Some(BoolOp::Or),
                "xor" => combine = Some(BoolOp::Xor),
                _ => {
                    if let Some(n) = m.strip_prefix('v').and_then(|n| n.parse().ok()) {
                        vector = n;
                    }
                }
            }
        }
    }
    let is_float = ty.is_some_and(ValueType::is_float);
    if matches!(inst.opcode.as_str(), "setp" | "set") {
        part = None;
    }
    let space_or = |d: Space| space.unwrap_or(d);
    let kind = if let Some(w) = warp_op(&inst.opcode, mods) {
        OpKind::Warp(w)
    } else {
        match inst.opcode.as_str() {
            "add" => OpKind::Arith(Arith::Add),
            "sub" => OpKind::Arith(Arith::Sub),
            "mul" => OpKind::Arith(Arith::Mul),
            "mad" | "fma" if is_float => OpKind::Fma,
            "mad" => OpKind::Arith(Arith::Mad),
            "neg" => OpKind::Arith(Arith::Neg),
            "abs" => OpKind::Arith(Arith::Abs),
            "min" => OpKind::Arith(Arith::Min),
            "max" => OpKind::Arith(Arith::Max),
            "rem" => OpKind::Arith(Arith::Rem),
            "div" if is_float => OpKind::Div,
            "div" => OpKind::Arith(Arith::IntDiv),
            "rcp" => OpKind::Rcp,
            "sqrt" => OpKind::Sqrt,
            "rsqrt" => OpKind::Rsqrt,
            "sin" => OpKind::Approx(MathFn::Sin),
            "cos" => OpKind::Approx(MathFn::Cos),
            "ex2" => OpKind::Approx(MathFn::Ex2),
            "lg2" => OpKind::Approx(MathFn::Lg2),
            "tanh" => OpKind::Approx(MathFn::Tanh),
            "setp" | "set" => match cmp {
                Some(c) => OpKind::Compare(c),
                None => OpKind::Other(inst.opcode.clone()),
            },
            "selp" => OpKind::Select,
            "cvt" => match (types[0], types[1]) {
                (Some(to), Some(from)) => OpKind::Convert { from, to },
                _ => OpKind::Other(inst.opcode.clone()),
            },
            "mov" => OpKind::Move {
                reinterpret: inst
                    .operands
                    .iter()
                    .take(2)
                    .any(|o| matches!(o, Operand::Vector(_))),
            },
            "and" => OpKind::Bits(BitOp::And),
            "or" => OpKind::Bits(BitOp::Or),
            "xor" => OpKind::Bits(BitOp::Xor),
            "not" => OpKind::Bits(BitOp::Not),
            "cnot" => OpKind::Bits(BitOp::Cnot),
            "shl" => OpKind::Bits(BitOp::Shl),
            "shr" => OpKind::Bits(BitOp::Shr),
            "shf" => OpKind::Bits(BitOp::Shf),
            "popc" => OpKind::Bits(BitOp::Popc),
            "clz" => OpKind::Bits(BitOp::Clz),
            "brev" => OpKind::Bits(BitOp::Brev),
            "bfe" => OpKind::Bits(BitOp::Bfe),
            "bfi" => OpKind::Bits(BitOp::Bfi),
            "bfind" if mods.iter().any(|m| m == "shiftamt") => {
                OpKind::Bits(BitOp::BfindShiftAmount)
            }
            "bfind" => OpKind::Bits(BitOp::Bfind),
            "prmt" => OpKind::Bits(BitOp::Prmt),
            "lop3" => OpKind::Bits(BitOp::Lop3),
            "testp" => OpKind::Bits(BitOp::Testp),
            "copysign" => OpKind::Bits(BitOp::Copysign),
            "ld" | "ldu" => OpKind::Load(space_or(Space::Generic)),
            "tex" | "tld4" => OpKind::Load(Space::Tex),
            "suld" => OpKind::Load(Space::Surf),
            "st" => OpKind::Store(space_or(Space::Generic)),
            "sust" => OpKind::Store(Space::Surf),
            "atom" => OpKind::Atom(space_or(Space::Generic)),
            "red" => OpKind::Red(space_or(Space::Generic)),
            "call" => OpKind::Call,
            "bra" => OpKind::Control(Control::Bra),
            "brx" => OpKind::Control(Control::Brx),
            "ret" => OpKind::Control(Control::Ret),
            "exit" => OpKind::Control(Control::Exit),
            "trap" => OpKind::Control(Control::Trap),
            "bar" | "barrier" => OpKind::Control(Control::Barrier),
            "membar" | "fence" => OpKind::Control(Control::Fence),
            "cvta" => OpKind::Cvta,
            other => OpKind::Other(other.to_string()),
        }
    };
    let writes = match &kind {
        OpKind::Call => Writes::CallReturns,
        OpKind::Store(_) | OpKind::Red(_) | OpKind::Control(_) => Writes::Nothing,
        OpKind::Warp(Warp::Sync) => Writes::Nothing,
        OpKind::Other(name) if NO_RESULT.contains(&name.as_str()) => Writes::Nothing,
        _ => Writes::First,
    };
    let atomic = match kind {
        OpKind::Atom(_) | OpKind::Red(_) => mods.iter().find_map(|m| {
            Some(match m.as_str() {
                "add" => AtomicOp::Add,
                "min" => AtomicOp::Min,
                "max" => AtomicOp::Max,
                "inc" => AtomicOp::Inc,
                "dec" => AtomicOp::Dec,
                "and" => AtomicOp::And,
                "or" => AtomicOp::Or,
                "xor" => AtomicOp::Xor,
                "exch" => AtomicOp::Exch,
                "cas" => AtomicOp::Cas,
                _ => return None,
            })
        }),
        _ => None,
    };
    let value_result = matches!(kind, OpKind::Compare(_)) && inst.opcode == "set";
    Op {
        kind,
        ty,
        rounding,
        ftz,
        approx,
        full,
        sat,
        part,
        combine: if atomic.is_some() { None } else { combine },
        vector,
        atomic,
        writes,
        value_result,
    }
}

/// Decodes an instruction named by its full opcode alone (`fma.rn.f64`, `cvt.rn.f32.f64`), as
/// reports and the census name instructions: what [`decode`] says of an instruction with that
/// opcode and those modifiers. Operands are not part of a name, so a `mov` that packs a vector
/// decodes as a plain move.
pub fn decode_name(full_opcode: &str) -> Op {
    let mut parts = full_opcode.split('.');
    decode(&Instruction {
        id: InstId(0),
        guard: None,
        opcode: parts.next().unwrap_or("").to_string(),
        modifiers: parts.map(str::to_string).collect(),
        operands: Vec::new(),
        line: SrcLine(0),
    })
}

/// Opcodes [`decode`] keeps by name ([`OpKind::Other`]) that touch memory without writing it:
/// `ldmatrix` loads, `isspacep` tests an address, `prefetch`/`prefetchu` warm a cache.
const READ_ONLY_OTHERS: [&str; 4] = ["ldmatrix", "isspacep", "prefetch", "prefetchu"];

impl Op {
    /// Floating-point arithmetic: add/sub/mul/min/max/neg/abs, fma, div, rcp, sqrt, rsqrt and
    /// the approximate functions on a float type (conversions, moves and compares are not).
    pub fn is_float_arith(&self) -> bool {
        self.is_float()
            && matches!(
                self.kind,
                OpKind::Arith(_)
                    | OpKind::Fma
                    | OpKind::Div
                    | OpKind::Rcp
                    | OpKind::Sqrt
                    | OpKind::Rsqrt
                    | OpKind::Approx(_)
            )
    }

    /// Whether the operation's type is a float type.
    pub fn is_float(&self) -> bool {
        self.ty.is_some_and(ValueType::is_float)
    }

    /// Memory or another function is involved: loads, stores, atomics, calls. Dataflow through
    /// registers stops here.
    pub fn is_memory_or_call(&self) -> bool {
        matches!(
            self.kind,
            OpKind::Load(_) | OpKind::Store(_) | OpKind::Atom(_) | OpKind::Red(_) | OpKind::Call
        )
    }

    /// Where a value-tracking analysis (shadow values, precision) must stop following a value:
    /// memory, calls, and instructions that read or rebuild a float's bits as bits (vector
    /// packs/unpacks, `testp`, `copysign`). A plain `mov.b64` between a double and an integer
    /// register is found by [`crate::regs::RegTable::reinterprets`].
    pub fn is_terminal(&self) -> bool {
        self.is_memory_or_call() || self.is_bit_reinterpretation()
    }

    /// Reads or writes a float's bits as bits, as far as the instruction alone shows.
    pub fn is_bit_reinterpretation(&self) -> bool {
        match self.kind {
            OpKind::Move { reinterpret } => reinterpret,
            OpKind::Bits(BitOp::Testp | BitOp::Copysign) => self.is_float(),
            _ => false,
        }
    }

    /// The memory access's state space, for loads, stores and atomics.
    pub fn space(&self) -> Option<Space> {
        match self.kind {
            OpKind::Load(s) | OpKind::Store(s) | OpKind::Atom(s) | OpKind::Red(s) => Some(s),
            _ => None,
        }
    }

    /// The control-flow kind, for branches, returns and barriers.
    pub fn control(&self) -> Option<Control> {
        match self.kind {
            OpKind::Control(c) => Some(c),
            _ => None,
        }
    }

    /// Whether control can leave this instruction other than to the next one.
    pub fn is_branch(&self) -> bool {
        matches!(self.control(), Some(Control::Bra | Control::Brx))
    }

    /// A call of another function: the arguments and results cross it through `.param` space.
    pub fn is_call(&self) -> bool {
        self.kind == OpKind::Call
    }

    /// `ld.param`: a function reading its own parameter, or a caller reading a call's result.
    pub fn is_param_load(&self) -> bool {
        self.kind == OpKind::Load(Space::Param)
    }

    /// `st.param`: a caller staging a call's argument, or a function writing its return value.
    pub fn is_param_store(&self) -> bool {
        self.kind == OpKind::Store(Space::Param)
    }

    /// A `.param` load or store ([`Op::is_param_load`], [`Op::is_param_store`]): how a call's
    /// arguments and results are staged around it, which passes move and inline with the call.
    pub fn is_param_access(&self) -> bool {
        self.is_param_load() || self.is_param_store()
    }

    /// `ret` or `exit`: the function (in a kernel, the thread) ends here, so code that must run
    /// at every end (a flush) goes before each of these. `trap` aborts instead.
    pub fn is_return(&self) -> bool {
        matches!(self.control(), Some(Control::Ret | Control::Exit))
    }

    /// Whether the next statement is not this instruction's continuation: a branch, `ret`,
    /// `exit` or `trap` (barriers and fences continue), so code cannot be inserted after it.
    pub fn transfers_control(&self) -> bool {
        self.is_branch() || self.control().is_some_and(Control::ends_flow)
    }

    /// `setp`: a comparison writing a predicate (`set`, which writes a value, is not; see
    /// [`Op::value_result`]).
    pub fn is_predicate_compare(&self) -> bool {
        matches!(self.kind, OpKind::Compare(_)) && !self.value_result
    }

    /// Touches memory without writing it: loads, and the opcodes the decode keeps by name that
    /// read (`ldmatrix`) or only test or warm an address (`isspacep`, `prefetch`). What names a
    /// state space and is none of these nor a store or atomic may write there unseen.
    pub fn reads_memory_only(&self) -> bool {
        match &self.kind {
            OpKind::Load(_) => true,
            OpKind::Other(name) => READ_ONLY_OTHERS.contains(&name.as_str()),
            _ => false,
        }
    }

    /// Floating-point arithmetic as mantissa counts it wherever it counts "FP instructions"
    /// (the census, the study's intensity): [`Op::is_float_arith`] but the sign changes (`abs`,
    /// `neg`), which round nothing; conversions and `copysign` are not arithmetic either.
    pub fn counts_as_arithmetic(&self) -> bool {
        self.is_float_arith() && !matches!(self.kind, OpKind::Arith(Arith::Abs | Arith::Neg))
    }

    /// A correctly rounded IEEE operation, as far as its modifiers say (`div.rn`, `add`, `fma`);
    /// `.approx`, `.full`, `rsqrt` and the special functions are not.
    pub fn is_ieee(&self) -> bool {
        !(self.approx || self.full || matches!(self.kind, OpKind::Rsqrt | OpKind::Approx(_)))
    }
}

#[cfg(test)]
#[path = "op_tests.rs"]
mod tests;
