//! The application's `__constant__` and `__device__` variables in a trace. The runtime's
//! `cudaMemcpyToSymbol` is a lookup of the variable's address (a `global` event) and a copy to
//! it; what the host wrote to a variable of the traced module before the first launch becomes
//! its `[symbols.NAME]` value: the bytes the PTX initialises it with (or zeros), with every
//! such copy laid over them in order. A spec sets variables before the run only, so anything
//! else touching a variable — a copy to it after the first launch, a copy back from it, a
//! memset, a device-to-device copy, its address passed to a kernel — is taken out of the
//! program and said in a note, never replayed as something else.

use super::program::{ArgOut, Op, Program};
use crate::npy;
use mantissa_gpu::DType;
use mantissa_ptx::model::{Item, Module};
use std::collections::{BTreeMap, HashMap};

/// A variable set before the run.
pub(super) struct SymbolOut {
    /// Its PTX name.
    pub name: String,
    /// The element type its bytes are written as.
    pub dtype: DType,
    /// The `.npy` holding its value (under the spec's directory).
    pub file: String,
    /// Where the value came from (a comment).
    pub about: String,
}

/// A module of the traced program: its key, its PTX, and what linking renamed in it.
pub(super) struct TracedModule<'a> {
    pub key: &'a str,
    pub parsed: &'a Module,
    pub renamed: &'a HashMap<String, String>,
}

/// What [`extract`] found: the variables set, their files, and what could not be followed.
pub(super) struct Extracted {
    pub symbols: Vec<SymbolOut>,
    pub files: Vec<(String, Vec<u8>)>,
    pub notes: Vec<String>,
}

/// Takes every operation on a variable out of `p` (see the module docs); `modules` are the
/// traced program's, `types` the allocations' element types. A variable keeps its name, or
/// the one linking gave it.
pub(super) fn extract(p: &mut Program, modules: &[TracedModule], types: &[DType]) -> Extracted {
    let mut out = Extracted {
        symbols: Vec::new(),
        files: Vec::new(),
        notes: Vec::new(),
    };
    let first_launch = p
        .ops
        .iter()
        .position(|o| matches!(o, Op::Launch { .. }))
        .unwrap_or(p.ops.len());
    // Variable allocation -> its value so far, and the events that wrote it.
    let mut values: BTreeMap<usize, (Vec<u8>, Vec<usize>)> = BTreeMap::new();
    let name = |buf: usize| {
        p.allocs[buf]
            .symbol
            .as_ref()
            .map(|v| v.name.clone())
            .unwrap_or_default()
    };
    let is_var = |buf: usize| p.allocs[buf].symbol.is_some();
    let mut kept = Vec::with_capacity(p.ops.len());
    for (i, op) in std::mem::take(&mut p.ops).into_iter().enumerate() {
        match &op {
            Op::Upload {
                seq,
                to,
                rows: Some(_),
                ..
            } if is_var(to.buf) => out.notes.push(format!(
                "event {seq}: a 2d copy to {}: not replayed",
                name(to.buf)
            )),
            Op::Upload { seq, to, data, .. } if is_var(to.buf) => {
                let var = p.allocs[to.buf].symbol.as_ref().expect("a variable");
                let traced = modules
                    .iter()
                    .find(|m| var.module.as_deref() == Some(m.key));
                let ours = traced.is_some();
                let initial = traced.and_then(|m| initial_value(m.parsed, &var.name));
                let declared = initial.is_some();
                match initial {
                    Some(Ok(init)) if i < first_launch => {
                        let (bytes, events) =
                            values.entry(to.buf).or_insert_with(|| (init, Vec::new()));
                        let at = to.offset as usize;
                        match bytes.get_mut(at..at + data.len()) {
                            Some(dst) => {
                                dst.copy_from_slice(data);
                                events.push(*seq);
                            }
                            None => out.notes.push(format!(
                                "event {seq}: a copy of {} bytes at byte {at} of {}, which the \
                                 PTX declares with {} bytes: not replayed",
                                data.len(),
                                var.name,
                                bytes.len()
                            )),
                        }
                        continue;
                    }
                    Some(Err(e)) => out.notes.push(format!(
                        "event {seq}: a copy to {}: its initial value in the PTX cannot be read \
                         ({e}): not replayed",
                        var.name
                    )),
                    _ if !ours => out.notes.push(format!(
                        "event {seq}: a copy to {}, a variable of a module no kernel \
                         was launched from: not replayed",
                        var.name
                    )),
                    _ if !declared => out.notes.push(format!(
                        "event {seq}: a copy to {}, which the module's PTX does not declare: \
                         not replayed",
                        var.name
                    )),
                    _ => out.notes.push(format!(
                        "event {seq}: a copy of {} bytes to {} after the first launch: a spec \
                         sets variables before the run only, so the replay keeps the value set \
                         before it",
                        data.len(),
                        var.name
                    )),
                }
            }
            Op::Download { seq, from, .. } if is_var(from.buf) => out.notes.push(format!(
                "event {seq}: a copy back from {}: a spec's outputs are buffers, so it is not \
                 compared",
                name(from.buf)
            )),
            Op::DeviceCopy { seq, from, to, .. } if is_var(from.buf) || is_var(to.buf) => {
                let which = if is_var(from.buf) { from.buf } else { to.buf };
                out.notes.push(format!(
                    "event {seq}: a device-to-device copy with {}: not replayed",
                    name(which)
                ));
            }
            Op::Memset { seq, to, .. } if is_var(to.buf) => out.notes.push(format!(
                "event {seq}: a memset of {}: not replayed",
                name(to.buf)
            )),
            Op::Launch { .. } => {
                let mut op = op;
                if let Op::Launch {
                    seq, kernel, args, ..
                } = &mut op
                {
                    for (k, a) in args.iter_mut().enumerate() {
                        let ArgOut::Pointer(at) = *a else { continue };
                        let Some(var) = &p.allocs[at.buf].symbol else {
                            continue;
                        };
                        out.notes.push(format!(
                            "event {seq}: {kernel} parameter {k} points into {} \
                             (cudaGetSymbolAddress): a spec cannot pass a variable's address, \
                             so the replay passes this run's number, which its device does not map",
                            var.name
                        ));
                        *a = ArgOut::Value {
                            ptx_type: "u64".into(),
                            bytes: (var.address + at.offset).to_le_bytes().to_vec(),
                        };
                    }
                }
                kept.push(op);
            }
            _ => kept.push(op),
        }
    }
    p.ops = kept;
    for (buf, (bytes, events)) in values.into_iter().filter(|(_, v)| !v.1.is_empty()) {
        let var = p.allocs[buf].symbol.as_ref().expect("a variable");
        let name = modules
            .iter()
            .find(|m| var.module.as_deref() == Some(m.key))
            .and_then(|m| m.renamed.get(&var.name))
            .unwrap_or(&var.name);
        let dtype = Some(types[buf])
            .filter(|t| bytes.len() % t.size() == 0)
            .unwrap_or(DType::U8);
        let file = format!("data/{}.npy", file_stem(name));
        out.files.push((
            file.clone(),
            npy::encode_le(dtype, &bytes).unwrap_or_default(),
        ));
        let events: Vec<String> = events.iter().map(usize::to_string).collect();
        out.symbols.push(SymbolOut {
            name: name.clone(),
            dtype,
            file,
            about: format!("copied from the host at event {}", events.join(", ")),
        });
    }
    out
}

/// The bytes `name` starts with in `parsed` (its initialiser, or zeros); `None` when the module
/// does not define it.
fn initial_value(parsed: &Module, name: &str) -> Option<Result<Vec<u8>, String>> {
    parsed.items.iter().find_map(|i| match i {
        Item::Var(v) if v.name == name && !v.attrs.iter().any(|a| a == ".extern") => {
            Some(mantissa_ptx::interp::initial_bytes(v).map_err(|e| e.to_string()))
        }
        _ => None,
    })
}

/// A file name for variable `name`: its characters that are not letters, digits, `_` or `-`
/// written `_` (PTX names may hold `$` and `.`).
fn file_stem(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("symbol_{clean}")
}
