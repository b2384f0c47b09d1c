//! The spec checked against the program, before anything runs: every launch's kernel exists
//! (C name, `extern "C"` name, mangled name, or name expression), its arguments match the
//! kernel's PTX parameters in count and kind, and every symbol is a `.const` or `.global`
//! variable of the PTX with the size its value has. The result is a [`Plan`]: each launch's
//! entry and how each argument becomes a kernel argument.

use crate::expr::Val;
use crate::spec::{lookup, Arg, ArgSpec, Launch, Spec, SpecError, StepKind};
use half::{bf16, f16};
use mantissa_gpu::{DType, EntryParam, EntrySignature, Scalar};
use mantissa_ptx::symbols::demangle::{demangle, Builtin, CppType};
use std::collections::{BTreeMap, HashMap};

/// How a scalar argument is passed: the kernel parameter's type decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    /// `.f32`
    F32,
    /// `.f64`
    F64,
    /// `.f16`
    F16,
    /// `.bf16`
    BF16,
    /// `.u32`/`.s32`/`.b32` (NVRTC writes `.u32` for `int` too): i32 when negative, else u32.
    Int32,
    /// `.u64`/`.s64`/`.b64`: i64 when negative, else u64.
    Int64,
    /// `.u8`/`.s8`.
    Int8,
}

impl ScalarKind {
    fn of(p: &EntryParam) -> Option<ScalarKind> {
        if p.count > 1 {
            return None;
        }
        Some(match p.ptx_type.as_str() {
            "f32" => ScalarKind::F32,
            "f64" => ScalarKind::F64,
            "f16" => ScalarKind::F16,
            "bf16" => ScalarKind::BF16,
            "u32" | "s32" | "b32" => ScalarKind::Int32,
            "u64" | "s64" | "b64" => ScalarKind::Int64,
            "u8" | "s8" => ScalarKind::Int8,
            _ => return None,
        })
    }

    /// Whether an explicitly typed value of `d` may be passed.
    fn takes(self, d: DType) -> bool {
        matches!(
            (self, d),
            (ScalarKind::F32, DType::F32)
                | (ScalarKind::F64, DType::F64)
                | (ScalarKind::Int32, DType::I32 | DType::U32)
                | (ScalarKind::Int64, DType::I64 | DType::U64)
        )
    }

    /// Converts a value to the parameter's type: floats round to f32/f16 as a C cast would;
    /// integer parameters need integral values in range (the contract: a float to an integer
    /// parameter is an error unless it is integral).
    pub fn convert(self, v: Val) -> Result<Scalar, String> {
        let int = |lo: i128, hi: i128, what: &str| -> Result<i128, String> {
            match v.as_integer() {
                Some(i) if (lo..=hi).contains(&(i as i128)) => Ok(i as i128),
                Some(i) => Err(format!("{i}, out of range for a {what} parameter")),
                None => Err(format!("{v}, not an integer, for a {what} parameter")),
            }
        };
        Ok(match self {
            ScalarKind::F32 => Scalar::F32(v.as_f64() as f32),
            ScalarKind::F64 => Scalar::F64(v.as_f64()),
            ScalarKind::F16 => Scalar::F16(f16::from_f64(v.as_f64())),
            ScalarKind::BF16 => Scalar::BF16(bf16::from_f64(v.as_f64())),
            ScalarKind::Int32 => match int(i32::MIN as i128, u32::MAX as i128, "32-bit integer")? {
                i if i < 0 => Scalar::I32(i as i32),
                i => Scalar::U32(i as u32),
            },
            ScalarKind::Int64 => match int(i64::MIN as i128, u64::MAX as i128, "64-bit integer")? {
                i if i < 0 => Scalar::I64(i as i64),
                i => Scalar::U64(i as u64),
            },
            ScalarKind::Int8 => Scalar::U8(int(-128, 255, "8-bit integer")? as u8),
        })
    }

    /// Converts an explicitly typed value (`{ f32 = 0.25 }`).
    pub fn convert_typed(d: DType, v: Val) -> Result<Scalar, String> {
        match d {
            DType::F32 => ScalarKind::F32.convert(v),
            DType::F64 => ScalarKind::F64.convert(v),
            DType::I32 => match v.as_integer().and_then(|i| i32::try_from(i).ok()) {
                Some(i) => Ok(Scalar::I32(i)),
                None => Err(format!("{v}, not an i32")),
            },
            DType::U32 => match v.as_integer().and_then(|i| u32::try_from(i).ok()) {
                Some(i) => Ok(Scalar::U32(i)),
                None => Err(format!("{v}, not a u32")),
            },
            DType::I64 => v
                .as_integer()
                .map(Scalar::I64)
                .ok_or_else(|| format!("{v}, not an i64")),
            DType::U64 => match v.as_integer().and_then(|i| u64::try_from(i).ok()) {
                Some(i) => Ok(Scalar::U64(i)),
                None => Err(format!("{v}, not a u64")),
            },
            _ => Err(format!("an explicit {d}")),
        }
    }
}

/// How one argument becomes a kernel argument.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedArg {
    /// The buffer's device pointer (plus the argument's offset, for a pointer into it).
    Buffer(String),
    /// The argument's bytes as they are (as many as the parameter has).
    Bytes,
    /// A scalar of the parameter's type (the spec's argument has the expression).
    Scalar(ScalarKind),
    /// An explicitly typed scalar.
    Typed(DType),
}

/// A launch resolved against the PTX.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedLaunch {
    /// The entry's name in the PTX (mangled for C++ kernels): what is launched.
    pub entry: String,
    /// Its parameters.
    pub params: Vec<EntryParam>,
    /// One per argument, in order.
    pub args: Vec<PlannedArg>,
}

/// A symbol resolved against the PTX.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSymbol {
    /// The spec's name.
    pub name: String,
    /// The variable's name in the PTX.
    pub ptx_name: String,
    /// Its state space (`.const` or `.global`).
    pub space: String,
    /// Its size in bytes.
    pub bytes: usize,
}

/// A spec resolved against one build's PTX.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// By step path (`steps[1].steps[2]`).
    pub launches: HashMap<String, ResolvedLaunch>,
    /// In spec order.
    pub symbols: Vec<ResolvedSymbol>,
}

/// The name of an Itanium-mangled name without its parameter types
/// ([`mantissa_ptx::symbols::demangled_base`]).
pub use mantissa_ptx::symbols::demangled_base;

/// Finds the entry a spec's kernel name means ([`mantissa_ptx::symbols::resolve_kernel_name`],
/// which `inspect --kernel` shares). Errors are (found, accepted).
pub fn resolve_kernel<'e>(
    name: &str,
    entries: &'e [EntrySignature],
    lowered: &BTreeMap<String, String>,
) -> Result<&'e EntrySignature, (String, String)> {
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    mantissa_ptx::symbols::resolve_kernel_name(name, &names, lowered)
        .map(|i| &entries[i])
        .map_err(|e| (e.found, e.accepted))
}

/// Module-scope `.const` and `.global` variables the PTX defines (`.extern` ones are another
/// module's): name, space (`.const`/`.global`), bytes (`None` when a dimension is unsized), as
/// [`mantissa_ptx::symbols::symbols`] reads them.
pub fn module_variables(ptx: &str) -> Vec<(String, String, Option<usize>)> {
    mantissa_ptx::symbols::symbols(&mantissa_ptx::parse(ptx).module)
        .into_iter()
        .map(|v| {
            (
                v.name,
                format!(".{}", v.space.name()),
                v.bytes.and_then(|b| usize::try_from(b).ok()),
            )
        })
        .collect()
}

/// Checks the spec against a build: kernel names and signatures, symbols and their sizes.
/// `symbol_bytes` are the bytes each symbol's value makes (from [`crate::data::materialize`]).
pub fn plan(
    spec: &Spec,
    ptx: &str,
    lowered: &BTreeMap<String, String>,
    symbol_bytes: &[(String, Vec<u8>)],
) -> Result<Plan, SpecError> {
    let entries = mantissa_ptx::entry::entry_signatures_of_ptx(ptx);
    let mut plan = Plan::default();
    for (step, counters) in spec.walk() {
        if let StepKind::Launch(l) = &step.kind {
            let sig =
                resolve_kernel(&l.kernel, &entries, lowered).map_err(|(found, accepted)| {
                    spec.error(
                        l.kernel_loc,
                        format!("{}.launch", step.path),
                        found,
                        accepted,
                    )
                })?;
            let args = plan_args(spec, &step.path, l, sig, &counters)?;
            pointee_types(spec, l, sig)?;
            plan.launches.insert(
                step.path.clone(),
                ResolvedLaunch {
                    entry: sig.name.clone(),
                    params: sig.params.clone(),
                    args,
                },
            );
        }
    }
    let vars = module_variables(ptx);
    for (s, (_, bytes)) in spec.symbols.iter().zip(symbol_bytes) {
        let found = vars.iter().find(|v| v.0 == s.name).or_else(|| {
            vars.iter().find(|v| {
                demangled_base(&v.0)
                    .is_some_and(|d| d == s.name || d.rsplit("::").next() == Some(s.name.as_str()))
            })
        });
        let Some((ptx_name, space, size)) = found else {
            let list = if vars.is_empty() {
                "a __constant__ or __device__ variable of the program; the PTX declares none"
                    .to_string()
            } else {
                format!(
                    "a __constant__ or __device__ variable of the program: {}",
                    vars.iter()
                        .map(|v| format!(
                            "{} ({}, {} bytes)",
                            v.0,
                            v.1,
                            v.2.map_or("?".into(), |b| b.to_string())
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(spec.error(
                s.loc,
                format!("symbols.{}", s.name),
                format!("no variable '{}' in the PTX", s.name),
                list,
            ));
        };
        if *size != Some(bytes.len()) {
            return Err(spec.error(
                s.value_loc,
                format!("symbols.{}.value", s.name),
                format!("{} bytes of values", bytes.len()),
                format!(
                    "{} bytes, the size of {space} {ptx_name} in the PTX",
                    size.map_or("a known number of".into(), |b| b.to_string())
                ),
            ));
        }
        plan.symbols.push(ResolvedSymbol {
            name: s.name.clone(),
            ptx_name: ptx_name.clone(),
            space: space.clone(),
            bytes: bytes.len(),
        });
    }
    Ok(plan)
}

/// The element type a buffer for a parameter of C++ type `t` must have, where the parameter is
/// a pointer to a type a buffer can hold (`const double*` → f64); `None` for anything else
/// (`void*`, a struct), which is not checked.
pub fn pointee_dtype(t: &CppType) -> Option<DType> {
    Some(match t.pointee()? {
        CppType::Builtin(b) => match b {
            Builtin::Float => DType::F32,
            Builtin::Double => DType::F64,
            Builtin::Half => DType::F16,
            Builtin::Int => DType::I32,
            Builtin::UnsignedInt => DType::U32,
            Builtin::Long | Builtin::LongLong => DType::I64,
            Builtin::UnsignedLong | Builtin::UnsignedLongLong => DType::U64,
            Builtin::UnsignedChar | Builtin::Char | Builtin::SignedChar => DType::U8,
            _ => return None,
        },
        CppType::Named(n) if n == "__half" => DType::F16,
        CppType::Named(n) if n == "__nv_bfloat16" => DType::BF16,
        _ => return None,
    })
}

/// A pointer argument's offset into a buffer of `len` elements: an integer from 0 to `len` (one
/// past the end is a pointer C allows).
pub(crate) fn buffer_offset(v: Val, len: usize) -> Result<u64, String> {
    match v {
        Val::Int(i) if i >= 0 && (i as u64) <= len as u64 => Ok(i as u64),
        Val::Float(f) if f.fract() == 0.0 && f >= 0.0 && f <= len as f64 => Ok(f as u64),
        v => Err(format!("{v}")),
    }
}

/// Whether an entry is `extern "C"` (its name carries no parameter types to check against).
pub fn is_extern_c(entry: &str) -> bool {
    demangle(entry).is_none() && demangled_base(entry).is_none()
}

/// Each buffer argument's element type against the pointer parameter's type that the mangled
/// entry name gives (`_Z8pressurePKdPfi`: `const double*`, `float*`, `int`).
fn pointee_types(spec: &Spec, l: &Launch, sig: &EntrySignature) -> Result<(), SpecError> {
    let Some(cpp) = demangle(&sig.name).filter(|d| d.params.len() == l.args.len()) else {
        return Ok(());
    };
    for (i, (a, t)) in l.args.iter().zip(&cpp.params).enumerate() {
        let ArgSpec::Buffer(b) = &a.spec else {
            continue;
        };
        let (Some(want), Some(buf)) = (pointee_dtype(t), spec.buffer(b)) else {
            continue;
        };
        if buf.dtype != want {
            return Err(spec.error(
                a.loc,
                &a.field,
                format!(
                    "buffer '{b}' ({}) for parameter {} ({t}) of {cpp}",
                    buf.dtype,
                    i + 1
                ),
                format!("a buffer of {want}, the type the parameter points to"),
            ));
        }
    }
    Ok(())
}

fn param_list(sig: &EntrySignature) -> String {
    sig.params
        .iter()
        .map(|p| {
            if p.count > 1 {
                format!(".{}[{}]", p.ptx_type, p.count)
            } else {
                format!(".{}", p.ptx_type)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn plan_args(
    spec: &Spec,
    path: &str,
    l: &Launch,
    sig: &EntrySignature,
    counters: &[String],
) -> Result<Vec<PlannedArg>, SpecError> {
    if l.args.len() != sig.params.len() {
        let at = l.args.last().map_or(l.kernel_loc, |a| a.loc);
        return Err(spec.error(
            at,
            format!("{path}.args"),
            format!("{} arguments", l.args.len()),
            format!(
                "{} arguments, the parameters of {} ({})",
                sig.params.len(),
                sig.name,
                param_list(sig)
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, (a, p)) in l.args.iter().zip(&sig.params).enumerate() {
        out.push(plan_arg(spec, a, p, i, counters)?);
    }
    Ok(out)
}

fn plan_arg(
    spec: &Spec,
    a: &Arg,
    p: &EntryParam,
    i: usize,
    counters: &[String],
) -> Result<PlannedArg, SpecError> {
    let pty = if p.count > 1 {
        format!(".{}[{}]", p.ptx_type, p.count)
    } else {
        format!(".{}", p.ptx_type)
    };
    let err = |found: String, accepted: String| spec.error(a.loc, &a.field, found, accepted);
    let pointer = p.count == 1 && matches!(p.ptx_type.as_str(), "u64" | "s64" | "b64");
    let kind = ScalarKind::of(p);
    match &a.spec {
        ArgSpec::Bytes(b) if b.len() == p.bytes => Ok(PlannedArg::Bytes),
        ArgSpec::Bytes(b) => Err(err(
            format!("{} bytes for parameter {} ({pty}, {} bytes)", b.len(), i + 1, p.bytes),
            format!("{} bytes ({} hex digits), the parameter's size", p.bytes, 2 * p.bytes),
        )),
        ArgSpec::BufferAt(b, q) if pointer => {
            if !q.expr.mentions(&counters.iter().map(String::as_str).collect::<Vec<_>>()) {
                let v = q.expr.eval(&|n| lookup(&spec.sizes, n)).map_err(|e| spec.error(q.loc_at(e.offset), &q.field, e.found, e.accepted))?;
                let len = spec.buffer(b).map_or(0, |x| x.len);
                buffer_offset(v, len).map_err(|e| spec.error(q.loc, &q.field, format!("offset {} = {e}", q.text), format!("an element of '{b}' or its end: 0 to {len}")))?;
            }
            Ok(PlannedArg::Buffer(b.clone()))
        }
        ArgSpec::Buffer(b) if pointer => Ok(PlannedArg::Buffer(b.clone())),
        ArgSpec::Buffer(b) | ArgSpec::BufferAt(b, _) => Err(err(
            format!("buffer '{b}' for parameter {} ({pty})", i + 1),
            format!("a scalar for {pty} (a buffer needs a .u64/.b64 pointer parameter)"),
        )),
        // `.ptr` marks a parameter the compiler knows is a pointer: a number there is a mistake.
        _ if p.ptr => Err(err(
            format!("a scalar for parameter {} ({pty} .ptr, a pointer)", i + 1),
            "a buffer name".to_string(),
        )),
        _ if kind.is_none() => Err(err(
            format!("an argument for parameter {} ({pty})", i + 1),
            "buffers, f32/f64/f16/bf16/8-, 32- and 64-bit integer scalars, or { bytes = \"HEX\" } (a struct by value: its bytes in memory order)".to_string(),
        )),
        ArgSpec::Typed(d, q) => {
            let kind = kind.unwrap_or(ScalarKind::F64);
            if !kind.takes(*d) {
                return Err(err(format!("an explicit {d} for parameter {} ({pty})", i + 1), format!("a value of the parameter's type ({pty})")));
            }
            if !q.expr.mentions(&counters.iter().map(String::as_str).collect::<Vec<_>>()) {
                let v = q.expr.eval(&|n| lookup(&spec.sizes, n)).map_err(|e| spec.error(q.loc_at(e.offset), &q.field, e.found, e.accepted))?;
                ScalarKind::convert_typed(*d, v).map_err(|e| err(e, format!("a value that fits {d}")))?;
            }
            Ok(PlannedArg::Typed(*d))
        }
        ArgSpec::Value(q) => {
            let kind = kind.unwrap_or(ScalarKind::F64);
            // Constant arguments are converted now, so that a bad one is an error before the run.
            if !q.expr.mentions(&counters.iter().map(String::as_str).collect::<Vec<_>>()) {
                let v = q.expr.eval(&|n| lookup(&spec.sizes, n)).map_err(|e| spec.error(q.loc_at(e.offset), &q.field, e.found, e.accepted))?;
                kind.convert(v).map_err(|e| err(format!("{} = {e} {}", q.text, if pointer { "(it may be a pointer)" } else { "" }).trim_end().to_string(), format!("a value of the parameter's type ({pty}; integers must be integral and in range)")))?;
            }
            Ok(PlannedArg::Scalar(kind))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_the_contract() {
        assert_eq!(ScalarKind::Int32.convert(Val::Int(5)), Ok(Scalar::U32(5)));
        assert_eq!(ScalarKind::Int32.convert(Val::Int(-5)), Ok(Scalar::I32(-5)));
        assert_eq!(
            ScalarKind::Int32.convert(Val::Float(4.0)),
            Ok(Scalar::U32(4))
        );
        assert!(ScalarKind::Int32
            .convert(Val::Float(4.5))
            .unwrap_err()
            .contains("not an integer"));
        assert!(ScalarKind::Int32
            .convert(Val::Int(1 << 40))
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(ScalarKind::F32.convert(Val::Int(3)), Ok(Scalar::F32(3.0)));
        assert_eq!(
            ScalarKind::F64.convert(Val::Float(0.1)),
            Ok(Scalar::F64(0.1))
        );
        assert_eq!(ScalarKind::Int64.convert(Val::Int(-1)), Ok(Scalar::I64(-1)));
        assert_eq!(
            ScalarKind::convert_typed(DType::F32, Val::Float(0.25)),
            Ok(Scalar::F32(0.25))
        );
        assert!(ScalarKind::convert_typed(DType::U32, Val::Int(-1)).is_err());
    }
}
