//! Buffer and symbol contents: every `init` form made into [`HostData`], symbol values laid out
//! as the bytes of the variable (C layout), and conversions of host data to f64 for comparison.
//!
//! Random values are drawn in f64 from xoshiro256++ seeded with the spec's seed (the workspace's
//! generator) and rounded once to the buffer's type, so an f32 buffer and an f64 buffer with the
//! same seed hold the same numbers up to that rounding. Integer buffers draw integers uniformly
//! in [min, max].

use crate::expr::Val;
use crate::npy;
use crate::spec::{
    BufferSpec, Init, Random, Spec, SpecError, SymbolLayout, SymbolSpec, SymbolValue,
};
use half::{bf16, f16};
use mantissa_gpu::{DType, HostData};
use rand::{Rng, SeedableRng};
use rand_distr::Distribution;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Every buffer's initial contents and every symbol's bytes, made before anything runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// Buffer name and contents, in spec order.
    pub buffers: Vec<(String, HostData)>,
    /// Symbol name and the bytes to write, in spec order.
    pub symbols: Vec<(String, Vec<u8>)>,
}

/// Makes every buffer's contents and every symbol's bytes; `.npy` problems are spec errors at
/// the `npy` key (`data/u0.npy: dtype <f4, expected <f8 (f64)`).
pub fn materialize(spec: &Spec) -> Result<Inputs, SpecError> {
    let mut buffers = Vec::new();
    for b in &spec.buffers {
        let data = buffer_data(b).map_err(|e| {
            spec.error(
                b.init_loc,
                format!("buffers.{}.init", b.name),
                e,
                format!("{} values of {}", b.len, b.dtype),
            )
        })?;
        buffers.push((b.name.clone(), data));
    }
    let symbols = symbols_of(spec)?;
    Ok(Inputs { buffers, symbols })
}

/// Every output's reference values (`reference = "ref.npy"`), as f64, in spec order (`None`
/// where an output has none). A reference holds the output's type or f64, and as many values as
/// are compared: the buffer's length, its view's, or 1 for a reduced output.
pub fn references(spec: &Spec) -> Result<Vec<Option<Vec<f64>>>, SpecError> {
    let mut out = Vec::new();
    for o in &spec.outputs {
        let Some((path, written)) = &o.reference else {
            out.push(None);
            continue;
        };
        let (dtype, len) = spec
            .buffer(&o.buffer)
            .map_or((DType::F64, 0), |b| (b.dtype, b.len));
        let field = format!("outputs.{}.reference", o.name());
        let want = o.compared_len(len);
        // A reference holds the output's type or f64: named once when they are the same.
        let types = match dtype {
            DType::F64 => "f64".to_string(),
            other => format!("{other} or f64"),
        };
        let data = npy::read_any(path).map_err(|e| {
            spec.error(
                o.reference_loc,
                &field,
                format!("{written}: {e}"),
                format!("a .npy of {want} values of {types}"),
            )
        })?;
        if data.len() != want || !(data.dtype() == dtype || data.dtype() == DType::F64) {
            return Err(spec.error(
                o.reference_loc,
                field,
                format!("{written}: {} elements of {}", data.len(), data.dtype()),
                format!("{want} elements of {types}"),
            ));
        }
        out.push(Some(to_f64(&data)));
    }
    Ok(out)
}

/// Every symbol's name and bytes, in spec order.
fn symbols_of(spec: &Spec) -> Result<Vec<(String, Vec<u8>)>, SpecError> {
    let mut symbols = Vec::new();
    for s in &spec.symbols {
        let bytes = symbol_bytes(s).map_err(|(found, accepted)| {
            spec.error(
                s.value_loc,
                format!("symbols.{}.value", s.name),
                found,
                accepted,
            )
        })?;
        symbols.push((s.name.clone(), bytes));
    }
    Ok(symbols)
}

/// Checks every buffer's `init` and makes every symbol's bytes, as [`materialize`] does, without
/// making any buffer (`--check` allocates none: a size of 10^12 is checked, not made). A `.npy`
/// is read, since it exists already.
pub fn check_inputs(spec: &Spec) -> Result<Vec<(String, Vec<u8>)>, SpecError> {
    for b in &spec.buffers {
        check_buffer(b).map_err(|e| {
            spec.error(
                b.init_loc,
                format!("buffers.{}.init", b.name),
                e,
                format!("{} values of {}", b.len, b.dtype),
            )
        })?;
    }
    symbols_of(spec)
}

/// What [`buffer_data`] would refuse, found without making the contents: a constant, or a
/// sequence's ends, that the type cannot hold; an integer range with no integer; a `.npy` of
/// another type or length; a normal distribution's parameters.
pub fn check_buffer(b: &BufferSpec) -> Result<(), String> {
    let n = b.len;
    match &b.init {
        Init::Zeros => Ok(()),
        Init::Constant(c) => from_f64(b.dtype, &[*c]).map(drop),
        Init::Sequence { start, step } => {
            let ends = [
                *start,
                start + step,
                start + n.saturating_sub(1) as f64 * step,
            ];
            from_f64(b.dtype, &ends[..n.min(3)]).map(drop)
        }
        Init::Npy(path, written) => npy::read(path, b.dtype, n)
            .map(drop)
            .map_err(|e| format!("{written}: {e}")),
        Init::Random { dist, .. } => match *dist {
            Random::Uniform { min, max } if is_integer(b.dtype) => {
                let (lo, hi) = (min.ceil(), max.floor());
                if lo > hi {
                    return Err(format!("no integer in [{min}, {max}]"));
                }
                from_f64(b.dtype, &[lo, hi]).map(drop)
            }
            Random::Normal { mean, std } => rand_distr::Normal::new(mean, std)
                .map(drop)
                .map_err(|e| format!("normal({mean}, {std}): {e}")),
            _ => Ok(()),
        },
    }
}

/// A buffer's initial contents.
pub fn buffer_data(b: &BufferSpec) -> Result<HostData, String> {
    let n = b.len;
    let values: Vec<f64> = match &b.init {
        Init::Zeros => return Ok(zeros(b.dtype, n)),
        Init::Constant(c) => vec![*c; n],
        Init::Sequence { start, step } => (0..n).map(|k| start + k as f64 * step).collect(),
        Init::Npy(path, written) => {
            return npy::read(path, b.dtype, n).map_err(|e| format!("{written}: {e}"));
        }
        Init::Random { dist, seed } => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(*seed);
            match *dist {
                Random::Uniform { min, max } if is_integer(b.dtype) => {
                    let (lo, hi) = (min.ceil() as i128, max.floor() as i128);
                    if lo > hi {
                        return Err(format!("no integer in [{min}, {max}]"));
                    }
                    (0..n).map(|_| rng.random_range(lo..=hi) as f64).collect()
                }
                Random::Uniform { min, max } => {
                    (0..n).map(|_| rng.random_range(min..max)).collect()
                }
                Random::Normal { mean, std } => {
                    let d = rand_distr::Normal::new(mean, std)
                        .map_err(|e| format!("normal({mean}, {std}): {e}"))?;
                    (0..n).map(|_| d.sample(&mut rng)).collect()
                }
                Random::LogUniform { min, max } => {
                    let (a, b) = (min.ln(), max.ln());
                    (0..n)
                        .map(|_| rng.random_range(a..b).exp().clamp(min, max))
                        .collect()
                }
            }
        }
    };
    from_f64(b.dtype, &values)
}

fn is_integer(d: DType) -> bool {
    !matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
}

fn zeros(d: DType, n: usize) -> HostData {
    match d {
        DType::F32 => HostData::F32(vec![0.0; n]),
        DType::F64 => HostData::F64(vec![0.0; n]),
        DType::F16 => HostData::F16(vec![f16::ZERO; n]),
        DType::BF16 => HostData::BF16(vec![bf16::ZERO; n]),
        DType::I32 => HostData::I32(vec![0; n]),
        DType::I64 => HostData::I64(vec![0; n]),
        DType::U8 => HostData::U8(vec![0; n]),
        DType::U32 => HostData::U32(vec![0; n]),
        DType::U64 => HostData::U64(vec![0; n]),
    }
}

/// An integral value of `v` that fits `lo..=hi`.
fn int_in(v: f64, lo: f64, hi: f64, d: DType) -> Result<f64, String> {
    if v.fract() != 0.0 || !(lo..=hi).contains(&v) {
        return Err(format!(
            "the value {v:?} for a {d} element (integers from {lo} to {hi})"
        ));
    }
    Ok(v)
}

/// `values` rounded to `d` (integers must be integral and in range).
pub fn from_f64(d: DType, values: &[f64]) -> Result<HostData, String> {
    macro_rules! ints {
        ($t:ty, $v:ident) => {
            HostData::$v(
                values
                    .iter()
                    .map(|&x| int_in(x, <$t>::MIN as f64, <$t>::MAX as f64, d).map(|x| x as $t))
                    .collect::<Result<_, _>>()?,
            )
        };
    }
    Ok(match d {
        DType::F32 => HostData::F32(values.iter().map(|&x| x as f32).collect()),
        DType::F64 => HostData::F64(values.to_vec()),
        DType::F16 => HostData::F16(values.iter().map(|&x| f16::from_f64(x)).collect()),
        DType::BF16 => HostData::BF16(values.iter().map(|&x| bf16::from_f64(x)).collect()),
        DType::I32 => ints!(i32, I32),
        DType::I64 => ints!(i64, I64),
        DType::U8 => ints!(u8, U8),
        DType::U32 => ints!(u32, U32),
        DType::U64 => ints!(u64, U64),
    })
}

/// Host data as f64 (exact for every float type and for integers below 2^53).
pub fn to_f64(data: &HostData) -> Vec<f64> {
    match data {
        HostData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        HostData::F64(v) => v.clone(),
        HostData::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
        HostData::BF16(v) => v.iter().map(|x| x.to_f64()).collect(),
        HostData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        HostData::I64(v) => v.iter().map(|&x| x as f64).collect(),
        HostData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
        HostData::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        HostData::U64(v) => v.iter().map(|&x| x as f64).collect(),
    }
}

/// Bytes of one value of element type `d` (little-endian, as the device holds it).
fn value_bytes(d: DType, v: Val) -> Result<Vec<u8>, String> {
    let x = v.as_f64();
    let int = |lo: f64, hi: f64| -> Result<i128, String> {
        match v {
            Val::Int(i) if (lo..=hi).contains(&(i as f64)) => Ok(i as i128),
            _ => int_in(x, lo, hi, d).map(|x| x as i128),
        }
    };
    Ok(match d {
        DType::F32 => (x as f32).to_le_bytes().to_vec(),
        DType::F64 => x.to_le_bytes().to_vec(),
        DType::F16 => f16::from_f64(x).to_bits().to_le_bytes().to_vec(),
        DType::BF16 => bf16::from_f64(x).to_bits().to_le_bytes().to_vec(),
        DType::I32 => (int(i32::MIN as f64, i32::MAX as f64)? as i32)
            .to_le_bytes()
            .to_vec(),
        DType::I64 => (int(i64::MIN as f64, i64::MAX as f64)? as i64)
            .to_le_bytes()
            .to_vec(),
        DType::U8 => vec![int(0.0, 255.0)? as u8],
        DType::U32 => (int(0.0, u32::MAX as f64)? as u32).to_le_bytes().to_vec(),
        DType::U64 => (int(0.0, u64::MAX as f64)? as u64).to_le_bytes().to_vec(),
    })
}

/// A struct's field offsets and size as nvcc lays it out: each field at the next multiple of its
/// own size (natural alignment of scalars), the size rounded up to the largest alignment.
pub fn struct_layout(fields: &[DType]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut at = 0usize;
    let mut align = 1;
    for f in fields {
        let a = f.size();
        at = at.div_ceil(a) * a;
        offsets.push(at);
        at += a;
        align = align.max(a);
    }
    (offsets, at.div_ceil(align) * align)
}

/// A symbol's bytes; errors as (found, accepted).
pub fn symbol_bytes(s: &SymbolSpec) -> Result<Vec<u8>, (String, String)> {
    match (&s.layout, &s.value) {
        (SymbolLayout::Elements { dtype, .. }, SymbolValue::Npy(path, written)) => {
            let data = npy::read_any(path)
                .map_err(|e| (format!("{written}: {e}"), format!("a .npy of {dtype}")))?;
            if data.dtype() != *dtype {
                let want = npy::descr(*dtype).unwrap_or("bf16");
                return Err((
                    format!(
                        "{written}: dtype {}",
                        npy::descr(data.dtype()).unwrap_or("?")
                    ),
                    format!("{want} ({dtype})"),
                ));
            }
            let mut out = Vec::new();
            for x in to_f64(&data) {
                out.extend(value_bytes(*dtype, Val::Float(x)).map_err(|e| (e, dtype.to_string()))?);
            }
            Ok(out)
        }
        (SymbolLayout::Elements { dtype, .. }, SymbolValue::Literal(rows)) => {
            let mut out = Vec::new();
            for v in rows.iter().flatten() {
                out.extend(value_bytes(*dtype, *v).map_err(|e| (e, format!("{dtype} values")))?);
            }
            Ok(out)
        }
        (SymbolLayout::Struct(fields), SymbolValue::Literal(rows)) => {
            let (offsets, size) = struct_layout(fields);
            let mut out = vec![0u8; size * rows.len()];
            for (r, row) in rows.iter().enumerate() {
                for ((f, off), v) in fields.iter().zip(&offsets).zip(row) {
                    let b = value_bytes(*f, *v).map_err(|e| (e, format!("{f} for that field")))?;
                    out[r * size + off..r * size + off + b.len()].copy_from_slice(&b);
                }
            }
            Ok(out)
        }
        (SymbolLayout::Struct(_), SymbolValue::Npy(..)) => {
            Err(("npy for a struct".into(), "value = [[...]]".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Loc;

    fn buffer(dtype: DType, len: usize, init: Init) -> BufferSpec {
        BufferSpec {
            name: "b".into(),
            dtype,
            len,
            init,
            loc: Loc::default(),
            init_loc: Loc::default(),
        }
    }

    /// An f64 output's reference of the wrong length names f64 once in what it accepts.
    #[test]
    fn a_reference_for_an_f64_output_names_f64_once() {
        let d = std::env::temp_dir().join(format!("mantissa-data-ref-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("k.cu"),
            "extern \"C\" __global__ void k(double* y) {}\n",
        )
        .unwrap();
        npy::write(&d.join("y3.npy"), &HostData::F64(vec![1.0, 2.0, 3.0])).unwrap();
        let toml = "[source]\nfile = \"k.cu\"\n[buffers.y]\ntype = \"f64\"\nlen = 4\n\
                    [[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\nargs = [\"y\"]\n\
                    [[outputs]]\nbuffer = \"y\"\nreference = \"y3.npy\"\n";
        std::fs::write(d.join("t.toml"), toml).unwrap();
        let spec = Spec::load(&d.join("t.toml")).unwrap();
        let e = references(&spec).unwrap_err().to_string();
        assert!(
            e.ends_with("3 elements of f64; accepted 4 elements of f64"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn init_forms() {
        assert_eq!(
            buffer_data(&buffer(DType::F64, 3, Init::Zeros)).unwrap(),
            HostData::F64(vec![0.0; 3])
        );
        assert_eq!(
            buffer_data(&buffer(DType::I32, 2, Init::Constant(-4.0))).unwrap(),
            HostData::I32(vec![-4, -4])
        );
        assert_eq!(
            buffer_data(&buffer(
                DType::F32,
                4,
                Init::Sequence {
                    start: 0.0,
                    step: 0.5
                }
            ))
            .unwrap(),
            HostData::F32(vec![0.0, 0.5, 1.0, 1.5])
        );
        assert!(buffer_data(&buffer(DType::U32, 2, Init::Constant(-1.0)))
            .unwrap_err()
            .contains("integers from 0"));
        assert!(buffer_data(&buffer(DType::I32, 2, Init::Constant(0.5))).is_err());
    }

    #[test]
    fn random_inits_are_seeded_and_in_range() {
        let uni = |seed| {
            buffer_data(&buffer(
                DType::F64,
                1000,
                Init::Random {
                    dist: Random::Uniform {
                        min: -1.0,
                        max: 1.0,
                    },
                    seed,
                },
            ))
            .unwrap()
        };
        assert_eq!(uni(7), uni(7));
        assert_ne!(uni(7), uni(8));
        let v = to_f64(&uni(7));
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = v.iter().sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.1, "{mean}");

        let normal = to_f64(
            &buffer_data(&buffer(
                DType::F64,
                20000,
                Init::Random {
                    dist: Random::Normal {
                        mean: 3.0,
                        std: 2.0,
                    },
                    seed: 1,
                },
            ))
            .unwrap(),
        );
        let m = normal.iter().sum::<f64>() / normal.len() as f64;
        let var = normal.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / normal.len() as f64;
        assert!(
            (m - 3.0).abs() < 0.05 && (var.sqrt() - 2.0).abs() < 0.05,
            "{m} {var}"
        );

        let lu = to_f64(
            &buffer_data(&buffer(
                DType::F32,
                5000,
                Init::Random {
                    dist: Random::LogUniform {
                        min: 1e-3,
                        max: 1e3,
                    },
                    seed: 2,
                },
            ))
            .unwrap(),
        );
        assert!(lu
            .iter()
            .all(|&x| (1e-3 * 0.999..=1e3 * 1.001).contains(&x)));
        let below_one = lu.iter().filter(|&&x| x < 1.0).count();
        assert!(
            (2000..3000).contains(&below_one),
            "half below the geometric mean: {below_one}"
        );

        let ints = buffer_data(&buffer(
            DType::I32,
            500,
            Init::Random {
                dist: Random::Uniform {
                    min: -2.0,
                    max: 2.0,
                },
                seed: 3,
            },
        ))
        .unwrap();
        let HostData::I32(ints) = ints else { panic!() };
        assert!(ints.iter().all(|x| (-2..=2).contains(x)));
        assert!(ints.contains(&-2) && ints.contains(&2));
        // f32 and f64 buffers with one seed hold the same numbers up to rounding.
        let f32s = to_f64(
            &buffer_data(&buffer(
                DType::F32,
                1000,
                Init::Random {
                    dist: Random::Uniform {
                        min: -1.0,
                        max: 1.0,
                    },
                    seed: 7,
                },
            ))
            .unwrap(),
        );
        assert!(f32s.iter().zip(&v).all(|(a, b)| (*a as f32) == (*b as f32)));
    }

    #[test]
    fn struct_layout_follows_c() {
        assert_eq!(
            struct_layout(&[DType::F64, DType::F64, DType::I32]),
            (vec![0, 8, 16], 24)
        );
        assert_eq!(struct_layout(&[DType::I32, DType::F64]), (vec![0, 8], 16));
        assert_eq!(
            struct_layout(&[DType::U8, DType::I32, DType::U8]),
            (vec![0, 4, 8], 12)
        );
        let s = SymbolSpec {
            name: "params".into(),
            layout: SymbolLayout::Struct(vec![DType::F64, DType::F64, DType::I32]),
            value: SymbolValue::Literal(vec![vec![Val::Float(1.0), Val::Float(2.0), Val::Int(3)]]),
            loc: Loc::default(),
            value_loc: Loc::default(),
        };
        let b = symbol_bytes(&s).unwrap();
        assert_eq!(b.len(), 24);
        assert_eq!(&b[0..8], &1.0f64.to_le_bytes());
        assert_eq!(&b[16..20], &3i32.to_le_bytes());
        assert_eq!(&b[20..24], &[0, 0, 0, 0]);
    }
}
