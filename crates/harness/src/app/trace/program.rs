//! The application's device program as the events show it: allocations as buffers (an address
//! freed and allocated again is a new buffer), and launches, copies and memsets in call order,
//! every pointer resolved to a buffer and a byte offset into it.

use super::TraceError;
use crate::app::events::{Event, Ptr};
use mantissa_gpu::EntrySignature;
use std::collections::{BTreeMap, HashMap};

/// A device allocation, or a module's variable whose address the application looked up.
#[derive(Debug, Clone)]
pub(crate) struct Alloc {
    pub bytes: u64,
    /// `device`, `managed`, `async`, `pool`, `pitch`; `symbol` for a variable.
    pub kind: String,
    /// The variable, for a variable.
    pub symbol: Option<Variable>,
}

/// A module's variable whose address the application looked up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Variable {
    /// The module's key, when its load was seen.
    pub module: Option<String>,
    /// Its PTX name.
    pub name: String,
    /// Its address in the run.
    pub address: u64,
}

impl Alloc {
    /// How messages and outputs name bytes `offset..offset + bytes` of allocation `buf`:
    /// `buf3[0..8]`, or the variable's name for a variable (`coef[0..8]`).
    pub fn place(&self, buf: usize, offset: u64, bytes: u64) -> String {
        let end = offset + bytes;
        match &self.symbol {
            Some(v) => format!("{}[{offset}..{end}]", v.name),
            None => format!("buf{buf}[{offset}..{end}]"),
        }
    }
}

/// A pointer resolved: the buffer (an index of [`Program::allocs`]) and bytes into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct At {
    pub buf: usize,
    pub offset: u64,
}

/// A launch argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgOut {
    /// A pointer into a buffer.
    Pointer(At),
    /// A value of the parameter's PTX type, its bytes as passed.
    Value { ptx_type: String, bytes: Vec<u8> },
}

/// One operation of the program, in call order.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Launch {
        seq: usize,
        /// The module's key.
        module: String,
        kernel: String,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u64,
        args: Vec<ArgOut>,
    },
    /// A copy from the host: the bytes written (a 2D copy's rows one after another, written
    /// from `to` by `rows`).
    Upload {
        seq: usize,
        to: At,
        data: Vec<u8>,
        rows: Option<Rows>,
    },
    /// A copy to the host: the bytes read, when recorded (a 2D copy's rows, read from `from`
    /// by `rows`, one after another).
    Download {
        seq: usize,
        from: At,
        bytes: u64,
        data: Option<Vec<u8>>,
        rows: Option<Rows>,
    },
    DeviceCopy {
        seq: usize,
        from: At,
        to: At,
        bytes: u64,
    },
    /// `count` elements of `pattern` (1, 2 or 4 bytes) written from `to`.
    Memset {
        seq: usize,
        to: At,
        pattern: Vec<u8>,
        count: u64,
    },
}

impl Op {
    /// The buffers the operation may write (every buffer a launch is given, conservatively).
    pub fn writes(&self) -> Vec<usize> {
        match self {
            Op::Launch { args, .. } => args
                .iter()
                .filter_map(|a| match a {
                    ArgOut::Pointer(at) => Some(at.buf),
                    ArgOut::Value { .. } => None,
                })
                .collect(),
            Op::Upload { to, .. } | Op::DeviceCopy { to, .. } | Op::Memset { to, .. } => {
                vec![to.buf]
            }
            Op::Download { .. } => Vec::new(),
        }
    }
}

/// A 2D copy's rows on the device side: `count` rows of `width` bytes, `pitch` bytes apart
/// (never a packed copy, which is one range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    pub count: u64,
    pub width: u64,
    pub pitch: u64,
}

impl Rows {
    /// The rows of shaped copy `e` (event `seq`) on its device side; `None` when they are packed
    /// (one range). A 3D copy of several slices, and one between two device sides or with an
    /// array, are not followed.
    fn of(seq: usize, e: &Event) -> Result<Option<Rows>, TraceError> {
        let Event::Copy {
            dir,
            shape,
            width: Some(width),
            height: Some(count),
            depth,
            src_pitch,
            dst_pitch,
            ..
        } = e
        else {
            return Err(TraceError::Event {
                seq,
                message: "a shaped copy without its width and height".into(),
            });
        };
        let unsupported = |what: String| Err(TraceError::Unsupported { seq, what });
        if depth.unwrap_or(1) != 1 {
            return unsupported(format!("a 3d copy of {} slices", depth.unwrap_or(1)));
        }
        let pitch = match dir.as_str() {
            "htod" => dst_pitch,
            "dtoh" => src_pitch,
            _ => {
                let shape = shape.as_deref().unwrap_or("2d");
                return unsupported(format!("a {shape} copy ({dir})"));
            }
        };
        let pitch = pitch.unwrap_or(*width);
        Ok((pitch != *width && *count > 1).then_some(Rows {
            count: *count,
            width: *width,
            pitch,
        }))
    }

    /// Bytes from the first row's start to the last row's end.
    pub fn span(&self) -> u64 {
        (self.count - 1) * self.pitch + self.width
    }
}

/// The whole program.
#[derive(Debug, Default)]
pub(crate) struct Program {
    pub allocs: Vec<Alloc>,
    pub ops: Vec<Op>,
    /// What could not be followed, one line each (not fatal: the spec is written with them said).
    pub notes: Vec<String>,
}

/// Live allocations by start address.
#[derive(Default)]
struct Live {
    by_start: BTreeMap<u64, usize>,
}

impl Live {
    fn resolve(&self, allocs: &[Alloc], ptr: u64, bytes: u64) -> Option<At> {
        let (&start, &buf) = self.by_start.range(..=ptr).next_back()?;
        let offset = ptr - start;
        (offset + bytes <= allocs[buf].bytes).then_some(At { buf, offset })
    }
}

/// Kernel signatures by (module key, entry name).
pub(crate) type Signatures = HashMap<(String, String), EntrySignature>;

/// Reads the program from `events`, its launches typed by `signatures`. `strict` (a trace):
/// every launch must be of a kernel `signatures` knows and every copy from the host must have its
/// bytes; otherwise (a session, which compares what comes back) launches of modules without PTX
/// are left out. `data` reads a copy's recorded bytes (`data/<n>.bin`).
pub(crate) fn read(
    events: &[Event],
    strict: bool,
    signatures: &Signatures,
    data: &dyn Fn(&str) -> Result<Vec<u8>, TraceError>,
) -> Result<Program, TraceError> {
    let mut p = Program::default();
    let mut live = Live::default();
    for (seq, e) in events.iter().enumerate() {
        match e {
            Event::Alloc { ptr, bytes, kind } if kind != "host" => {
                live.by_start.insert(ptr.0, p.allocs.len());
                p.allocs.push(Alloc {
                    bytes: *bytes,
                    kind: kind.clone(),
                    symbol: None,
                });
            }
            Event::Global {
                module,
                symbol,
                ptr,
                bytes,
            } => {
                let known = live
                    .by_start
                    .get(&ptr.0)
                    .is_some_and(|&b| p.allocs[b].symbol.as_ref().map(|v| &v.name) == Some(symbol));
                match bytes {
                    _ if known => {}
                    Some(bytes) => {
                        live.by_start.insert(ptr.0, p.allocs.len());
                        p.allocs.push(Alloc {
                            bytes: *bytes,
                            kind: "symbol".into(),
                            symbol: Some(Variable {
                                module: module.clone(),
                                name: symbol.clone(),
                                address: ptr.0,
                            }),
                        });
                    }
                    None => p.notes.push(format!(
                        "event {seq}: the address of {symbol} was looked up without its size: \
                         copies to it are not followed"
                    )),
                }
            }
            Event::Free { ptr } => {
                live.by_start.remove(&ptr.0);
            }
            Event::Launch {
                module: m,
                kernel,
                grid,
                block,
                shared,
                args,
                error,
            } => {
                if error.is_some() {
                    p.notes.push(format!(
                        "event {seq}: a launch of {} failed in the application (CUresult {}); not replayed",
                        kernel.as_deref().unwrap_or("an unknown kernel"),
                        error.unwrap_or(0)
                    ));
                    continue;
                }
                let kernel = kernel.clone().ok_or(TraceError::Unnamed { seq })?;
                let module = m.clone().ok_or(TraceError::Unnamed { seq })?;
                let Some(sig) = signatures.get(&(module.clone(), kernel.clone())) else {
                    if strict {
                        return Err(TraceError::NoEntry { kernel });
                    }
                    // A module without PTX: its launches run as they are, their pointers unknown.
                    continue;
                };
                let args = args.as_ref().ok_or_else(|| TraceError::NoArgs {
                    seq,
                    kernel: kernel.clone(),
                })?;
                let args = launch_args(seq, &kernel, sig, args, &p.allocs, &live, &mut p.notes)?;
                p.ops.push(Op::Launch {
                    seq,
                    module,
                    kernel,
                    grid: *grid,
                    block: *block,
                    shared: *shared,
                    args,
                });
            }
            Event::Copy {
                dir,
                dst,
                src,
                bytes,
                data: file,
                shape,
                error,
                ..
            } => {
                if error.is_some() || *bytes == 0 {
                    continue;
                }
                let rows = shape
                    .as_ref()
                    .map(|_| Rows::of(seq, e))
                    .transpose()?
                    .flatten();
                let span = rows.map_or(*bytes, |r| r.span());
                let resolve = |ptr: Ptr| live.resolve(&p.allocs, ptr.0, span);
                let unseen = |side: &str, ptr: Ptr| {
                    format!(
                        "event {seq}: a {dir} copy of {bytes} bytes {side} {:#x}, which is no allocation seen \
                         (a __device__ or __constant__ variable, or host-mapped memory): not replayed",
                        ptr.0
                    )
                };
                let op = match dir.as_str() {
                    "htod" => {
                        let Some(to) = resolve(*dst) else {
                            p.notes.push(unseen("to", *dst));
                            continue;
                        };
                        let data = match file.as_deref() {
                            Some(f) => data(f)?,
                            // A session compares what comes back; what went in is not kept.
                            None if !strict => Vec::new(),
                            None => return Err(TraceError::NoData { seq }),
                        };
                        Op::Upload {
                            seq,
                            to,
                            data,
                            rows,
                        }
                    }
                    "dtoh" => {
                        let Some(from) = resolve(*src) else {
                            p.notes.push(unseen("from", *src));
                            continue;
                        };
                        Op::Download {
                            seq,
                            from,
                            bytes: *bytes,
                            data: file.as_deref().map(data).transpose()?,
                            rows,
                        }
                    }
                    "dtod" => match (resolve(*src), resolve(*dst)) {
                        (Some(from), Some(to)) => Op::DeviceCopy {
                            seq,
                            from,
                            to,
                            bytes: *bytes,
                        },
                        _ => {
                            p.notes.push(unseen("between", *src));
                            continue;
                        }
                    },
                    other => {
                        return Err(TraceError::Unsupported {
                            seq,
                            what: format!("a copy of kind '{other}' (arrays)"),
                        })
                    }
                };
                p.ops.push(op);
            }
            Event::Memset {
                dst,
                value,
                width,
                count,
            } => {
                let bytes = u64::from(*width) * count;
                let Some(to) = live.resolve(&p.allocs, dst.0, bytes) else {
                    p.notes.push(format!(
                        "event {seq}: a memset of {bytes} bytes at {:#x}, which is no allocation seen: not replayed",
                        dst.0
                    ));
                    continue;
                };
                let pattern = value.to_le_bytes()[..*width as usize].to_vec();
                p.ops.push(Op::Memset {
                    seq,
                    to,
                    pattern,
                    count: *count,
                });
            }
            _ => {}
        }
    }
    Ok(p)
}

/// A launch's arguments: a 64-bit value that points into a live allocation is that buffer.
fn launch_args(
    seq: usize,
    kernel: &str,
    sig: &EntrySignature,
    args: &[String],
    allocs: &[Alloc],
    live: &Live,
    notes: &mut Vec<String>,
) -> Result<Vec<ArgOut>, TraceError> {
    if args.len() != sig.params.len() {
        return Err(TraceError::Arity {
            seq,
            kernel: kernel.to_string(),
            args: args.len(),
            params: sig.params.len(),
        });
    }
    let mut out = Vec::with_capacity(args.len());
    for (k, (hex, p)) in args.iter().zip(&sig.params).enumerate() {
        let bytes = crate::hex::decode(hex).ok_or_else(|| TraceError::Event {
            seq,
            message: format!("argument {k} '{hex}' is not hex"),
        })?;
        let wide = p.count == 1 && matches!(p.ptx_type.as_str(), "u64" | "s64" | "b64");
        if wide && bytes.len() == 8 {
            let v = u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8]));
            if let Some(at) = live.resolve(allocs, v, 0) {
                out.push(ArgOut::Pointer(at));
                continue;
            }
            if v != 0 && (p.ptr || v > 1 << 40) {
                notes.push(format!(
                    "event {seq}: {kernel} parameter {k} is {v:#x}, which is in no allocation seen: passed as that number"
                ));
            }
        }
        out.push(ArgOut::Value {
            ptx_type: if p.count == 1 {
                p.ptx_type.clone()
            } else {
                String::new()
            },
            bytes,
        });
    }
    Ok(out)
}
