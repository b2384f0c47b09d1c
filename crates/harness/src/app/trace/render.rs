//! Spec text from a traced program: buffers, steps (runs of identical steps folded into
//! `repeat` loops), outputs with the application's own values as references.

use super::program::{ArgOut, At, Op, Program, Rows};
use crate::npy;
use mantissa_gpu::DType;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// One step: its keys and values as TOML text, in order.
pub(super) type Step = Vec<(&'static str, String)>;

/// A step list item: a step, or a run of `count` repeats of a body.
#[derive(Debug, PartialEq)]
pub(super) enum Item {
    One(usize),
    Repeat {
        count: usize,
        start: usize,
        period: usize,
    },
}

/// Folds runs of identical steps (a body of up to `max_period` steps repeated at least twice)
/// into repeats, greedily from the front, the run covering most steps first.
pub(super) fn fold(steps: &[Step], max_period: usize) -> Vec<Item> {
    let n = steps.len();
    let mut items = Vec::new();
    let mut i = 0;
    while i < n {
        let mut best: Option<(usize, usize)> = None; // (count, period)
        for p in 1..=max_period.min((n - i) / 2) {
            let mut k = 1;
            while i + (k + 1) * p <= n && steps[i + k * p..i + (k + 1) * p] == steps[i..i + p] {
                k += 1;
            }
            if k >= 2 && best.is_none_or(|(bk, bp)| k * p > bk * bp) {
                best = Some((k, p));
            }
        }
        match best {
            Some((count, period)) => {
                items.push(Item::Repeat {
                    count,
                    start: i,
                    period,
                });
                i += count * period;
            }
            None => {
                items.push(Item::One(i));
                i += 1;
            }
        }
    }
    items
}

fn inline(step: &Step) -> String {
    let body: Vec<String> = step.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{{ {} }}", body.join(", "))
}

/// A TOML string.
pub(super) fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float as TOML writes it exactly (`{:?}` is the shortest text that reads back to the same
/// f64); `None` for what the spec's numbers cannot carry to the bit (NaN, infinities, -0).
fn float_text(v: f64) -> Option<String> {
    if !v.is_finite() || (v == 0.0 && v.is_sign_negative()) {
        return None;
    }
    let t = format!("{v:?}");
    Some(if t.contains(['.', 'e', 'E']) {
        t
    } else {
        format!("{t}.0")
    })
}

/// A scalar argument: a number where the spec's conversion gives back the same bits, else the
/// bytes.
fn value_text(ptx_type: &str, b: &[u8]) -> String {
    let le8 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let le4 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
    let number = match (ptx_type, b.len()) {
        ("f64", 8) => float_text(f64::from_bits(le8(b))),
        // An f32 written as the f64 it is exactly: read back and rounded to f32, the same bits.
        ("f32", 4) => float_text(f64::from(f32::from_bits(le4(b)))),
        ("s32", 4) => Some((le4(b) as i32).to_string()),
        ("u32" | "b32", 4) => Some(le4(b).to_string()),
        ("s64", 8) => Some((le8(b) as i64).to_string()),
        ("u64" | "b64", 8) if le8(b) <= i64::MAX as u64 => Some(le8(b).to_string()),
        ("u8" | "s8", 1) => Some(b[0].to_string()),
        _ => None,
    };
    number.unwrap_or_else(|| format!("{{ bytes = \"{}\" }}", crate::hex::encode(b)))
}

/// An element's value as a fill takes it, when it is exactly representable there.
fn fill_value(dtype: DType, e: &[u8]) -> Option<String> {
    let le8 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let le4 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
    match dtype {
        DType::F64 => float_text(f64::from_bits(le8(e))),
        DType::F32 => float_text(f64::from(f32::from_bits(le4(e)))),
        DType::I32 => Some((le4(e) as i32).to_string()),
        DType::U32 => Some(le4(e).to_string()),
        DType::I64 => Some((le8(e) as i64).to_string()),
        DType::U64 if le8(e) <= i64::MAX as u64 => Some(le8(e).to_string()),
        DType::U8 => Some(e[0].to_string()),
        _ => None,
    }
}

/// A buffer of the spec.
pub(super) struct BufferOut {
    pub name: String,
    pub dtype: DType,
    pub len: u64,
    /// `init = { npy = ... }`: the file.
    pub npy: Option<String>,
    /// Where it came from (a comment).
    pub about: String,
}

/// An output of the spec.
pub(super) struct OutputOut {
    pub buffer: String,
    /// Elements: offset and count, when not the whole buffer.
    pub view: Option<(u64, u64)>,
    pub reference: Option<String>,
    pub about: String,
}

/// The spec's parts, made from the program.
pub(super) struct Parts {
    pub buffers: Vec<BufferOut>,
    pub steps: Vec<Step>,
    pub step_events: Vec<usize>,
    pub outputs: Vec<OutputOut>,
    pub files: Vec<(String, Vec<u8>)>,
}

struct Maker<'a> {
    types: &'a [DType],
    parts: Parts,
    /// Source buffers of data by content, so a repeated upload is one buffer.
    sources: HashMap<(DType, Vec<u8>), String>,
}

impl Maker<'_> {
    fn name(&self, buf: usize) -> String {
        format!("buf{buf}")
    }

    fn elements(&self, at: At) -> u64 {
        at.offset / self.types[at.buf].size() as u64
    }

    /// A buffer holding `data` (in `dtype`), made once per content.
    fn source(&mut self, dtype: DType, data: &[u8], about: String) -> String {
        if let Some(n) = self.sources.get(&(dtype, data.to_vec())) {
            return n.clone();
        }
        let name = format!("in{}", self.sources.len());
        let file = format!("data/{name}.npy");
        self.parts.files.push((
            file.clone(),
            npy::encode_le(dtype, data).unwrap_or_default(),
        ));
        self.parts.buffers.push(BufferOut {
            name: name.clone(),
            dtype,
            len: (data.len() / dtype.size()) as u64,
            npy: Some(file),
            about,
        });
        self.sources.insert((dtype, data.to_vec()), name.clone());
        name
    }

    fn push(&mut self, seq: usize, step: Step) {
        self.parts.steps.push(step);
        self.parts.step_events.push(seq);
    }

    fn copy_step(&mut self, seq: usize, from: &str, to: &str, src: u64, dst: u64, len: u64) {
        let mut kv = vec![("from", quoted(from)), ("to", quoted(to))];
        if src != 0 {
            kv.push(("src_offset", src.to_string()));
        }
        if dst != 0 {
            kv.push(("dst_offset", dst.to_string()));
        }
        kv.push(("len", len.to_string()));
        let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        self.push(seq, vec![("copy", format!("{{ {} }}", body.join(", ")))]);
    }

    /// Bytes `data` copied from the host to `to` (by `rows`, a 2D copy's): a data buffer and a
    /// copy from it.
    fn upload(&mut self, seq: usize, to: At, data: &[u8], rows: Option<Rows>) {
        let t = self.types[to.buf];
        let src = self.source(t, data, format!("copied from the host at event {seq}"));
        let (dst, name) = (self.elements(to), self.name(to.buf));
        match rows {
            None => self.copy_step(seq, &src, &name, 0, dst, (data.len() / t.size()) as u64),
            Some(r) => self.rows_step(seq, (&src, &name), t, r, (None, Some(dst))),
        }
    }

    /// `bytes` copied to the host from `from` (by `rows`, a 2D copy's): an output, with `data`
    /// as its reference. `later` says the buffer is written after the copy, `whole` that the
    /// copy is all of it.
    fn download(
        &mut self,
        seq: usize,
        from: At,
        bytes: u64,
        data: Option<&[u8]>,
        rows: Option<Rows>,
        (later, whole): (bool, bool),
    ) {
        let t = self.types[from.buf];
        let n = bytes / t.size() as u64;
        let reference = data.map(|d| {
            let file = format!("data/copied{}.npy", self.parts.outputs.len());
            let bytes = npy::encode_le(t, d).unwrap_or_default();
            self.parts.files.push((file.clone(), bytes));
            file
        });
        let about = format!("copied to the host at event {seq}");
        if !later && rows.is_none() {
            let view = (!whole).then(|| (self.elements(from), n));
            self.parts.outputs.push(OutputOut {
                buffer: self.name(from.buf),
                view,
                reference,
                about,
            });
            return;
        }
        // Written again after the copy, or read by rows: the spec keeps a copy of what was read.
        let snap = format!("copied{}", self.parts.outputs.len());
        self.parts.buffers.push(BufferOut {
            name: snap.clone(),
            dtype: t,
            len: n,
            npy: None,
            about: about.clone(),
        });
        let (src, name) = (self.elements(from), self.name(from.buf));
        match rows {
            None => self.copy_step(seq, &name, &snap, src, 0, n),
            Some(r) => self.rows_step(seq, (&name, &snap), t, r, (Some(src), None)),
        }
        self.parts.outputs.push(OutputOut {
            buffer: snap,
            view: None,
            reference,
            about,
        });
    }

    /// A 2D copy between a packed buffer and a pitched one, row by row in a loop: the side given
    /// in `pitched` (source or destination) starts at that element and steps by `rows.pitch`;
    /// the other is packed from element 0.
    fn rows_step(
        &mut self,
        seq: usize,
        (from, to): (&str, &str),
        t: DType,
        rows: Rows,
        pitched: (Option<u64>, Option<u64>),
    ) {
        let e = t.size() as u64;
        let (width, pitch) = (rows.width / e, rows.pitch / e);
        let offset = |start: Option<u64>| match start {
            Some(0) => format!("\"row * {pitch}\""),
            Some(s) => format!("\"{s} + row * {pitch}\""),
            None => format!("\"row * {width}\""),
        };
        let copy = format!(
            "{{ copy = {{ from = {}, to = {}, src_offset = {}, dst_offset = {}, len = {width} }} }}",
            quoted(from),
            quoted(to),
            offset(pitched.0),
            offset(pitched.1)
        );
        self.push(
            seq,
            vec![
                ("repeat", rows.count.to_string()),
                ("counter", quoted("row")),
                ("steps", format!("[{copy}]")),
            ],
        );
    }

    fn arg(&self, a: &ArgOut) -> String {
        match a {
            ArgOut::Pointer(at) if at.offset == 0 => quoted(&self.name(at.buf)),
            ArgOut::Pointer(at) => format!(
                "{{ buffer = {}, offset = {} }}",
                quoted(&self.name(at.buf)),
                self.elements(*at)
            ),
            ArgOut::Value { ptx_type, bytes } => value_text(ptx_type, bytes),
        }
    }
}

fn dims(d: &[u32; 3]) -> String {
    format!("[{}, {}, {}]", d[0], d[1], d[2])
}

/// The spec's parts (see the module docs).
pub(super) fn parts(p: &Program, types: &[DType]) -> Parts {
    let mut m = Maker {
        types,
        parts: Parts {
            buffers: Vec::new(),
            steps: Vec::new(),
            step_events: Vec::new(),
            outputs: Vec::new(),
            files: Vec::new(),
        },
        sources: HashMap::new(),
    };
    // Which buffers appear, and the first operation touching each.
    let mut first: BTreeMap<usize, usize> = BTreeMap::new();
    let touch = |op: &Op| -> Vec<usize> {
        let mut v = op.writes();
        match op {
            Op::Download { from, .. } | Op::DeviceCopy { from, .. } => v.push(from.buf),
            _ => {}
        }
        v
    };
    for (i, op) in p.ops.iter().enumerate() {
        for b in touch(op) {
            first.entry(b).or_insert(i);
        }
    }
    // The last copy back of each range, and whether its buffer is written after it.
    let mut last: HashMap<(usize, u64, u64), usize> = HashMap::new();
    for (i, op) in p.ops.iter().enumerate() {
        if let Op::Download { from, bytes, .. } = op {
            last.insert((from.buf, from.offset, *bytes), i);
        }
    }
    let mut written_after: HashMap<usize, bool> = HashMap::new();
    for &i in last.values() {
        let Op::Download { from, .. } = &p.ops[i] else {
            continue;
        };
        let later = p.ops[i + 1..]
            .iter()
            .any(|op| op.writes().contains(&from.buf));
        written_after.insert(i, later);
    }
    let mut inits: BTreeMap<usize, String> = BTreeMap::new();
    for (i, op) in p.ops.iter().enumerate() {
        let seq = op_seq(op);
        match op {
            Op::Upload { to, data, rows, .. } => {
                let whole =
                    rows.is_none() && to.offset == 0 && data.len() as u64 == p.allocs[to.buf].bytes;
                if whole && first.get(&to.buf) == Some(&i) {
                    let file = format!("data/{}.npy", m.name(to.buf));
                    let bytes = npy::encode_le(types[to.buf], data).unwrap_or_default();
                    m.parts.files.push((file.clone(), bytes));
                    inits.insert(to.buf, file);
                    continue;
                }
                m.upload(seq, *to, data, *rows);
            }
            Op::Memset {
                to, pattern, count, ..
            } => {
                let t = types[to.buf];
                let bytes: Vec<u8> = pattern.repeat(*count as usize);
                let whole = to.offset == 0 && bytes.len() as u64 == p.allocs[to.buf].bytes;
                let uniform = t.size() % pattern.len() == 0;
                let element = pattern.repeat(t.size() / pattern.len().max(1));
                match fill_value(t, &element).filter(|_| whole && uniform) {
                    Some(v) => {
                        let b = quoted(&m.name(to.buf));
                        m.push(
                            seq,
                            vec![("fill", format!("{{ buffer = {b}, value = {v} }}"))],
                        );
                    }
                    None => {
                        let src = m.source(t, &bytes, format!("set by a memset at event {seq}"));
                        let (dst, name) = (m.elements(*to), m.name(to.buf));
                        m.copy_step(seq, &src, &name, 0, dst, (bytes.len() / t.size()) as u64);
                    }
                }
            }
            Op::DeviceCopy {
                from, to, bytes, ..
            } => {
                let n = bytes / types[to.buf].size() as u64;
                let (f, t) = (m.name(from.buf), m.name(to.buf));
                let (src, dst) = (m.elements(*from), m.elements(*to));
                m.copy_step(seq, &f, &t, src, dst, n);
            }
            Op::Launch {
                kernel,
                grid,
                block,
                shared,
                args,
                ..
            } => {
                let mut step = vec![
                    ("launch", quoted(kernel)),
                    ("grid", dims(grid)),
                    ("block", dims(block)),
                ];
                if *shared != 0 {
                    step.push(("shared", shared.to_string()));
                }
                let a: Vec<String> = args.iter().map(|a| m.arg(a)).collect();
                step.push(("args", format!("[{}]", a.join(", "))));
                m.push(seq, step);
            }
            Op::Download {
                from,
                bytes,
                data,
                rows,
                ..
            } => {
                if let Some(&later) = written_after.get(&i) {
                    let whole = from.offset == 0 && *bytes == p.allocs[from.buf].bytes;
                    m.download(seq, *from, *bytes, data.as_deref(), *rows, (later, whole));
                }
            }
        }
    }
    let mut app_buffers: Vec<BufferOut> = first
        .keys()
        .map(|&b| BufferOut {
            name: m.name(b),
            dtype: types[b],
            len: p.allocs[b].bytes / types[b].size() as u64,
            npy: inits.get(&b).cloned(),
            about: format!(
                "{} allocation #{b}, {} bytes",
                p.allocs[b].kind, p.allocs[b].bytes
            ),
        })
        .collect();
    app_buffers.append(&mut m.parts.buffers);
    m.parts.buffers = app_buffers;
    m.parts
}

fn op_seq(op: &Op) -> usize {
    match op {
        Op::Launch { seq, .. }
        | Op::Upload { seq, .. }
        | Op::Download { seq, .. }
        | Op::DeviceCopy { seq, .. }
        | Op::Memset { seq, .. } => *seq,
    }
}

/// The spec's text.
pub(super) fn text(
    name: &str,
    source: &str,
    header: &str,
    parts: &Parts,
    symbols: &[super::symbols::SymbolOut],
) -> String {
    let mut t = String::new();
    for line in header.lines() {
        let _ = writeln!(t, "# {line}");
    }
    let _ = writeln!(
        t,
        "name = {}\n\n[source]\nfile = {}\n",
        quoted(name),
        quoted(source)
    );
    for b in &parts.buffers {
        let _ = writeln!(t, "[buffers.{}]  # {}", b.name, b.about);
        let _ = writeln!(t, "type = \"{}\"\nlen = {}", b.dtype, b.len);
        if let Some(f) = &b.npy {
            let _ = writeln!(t, "init = {{ npy = {} }}", quoted(f));
        }
        t.push('\n');
    }
    for v in symbols {
        let bare = v
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let key = if bare {
            v.name.clone()
        } else {
            quoted(&v.name)
        };
        let _ = writeln!(t, "[symbols.{key}]  # {}", v.about);
        let _ = writeln!(t, "type = \"{}\"\nnpy = {}\n", v.dtype, quoted(&v.file));
    }
    for item in fold(&parts.steps, 32) {
        match item {
            Item::One(i) => {
                let _ = writeln!(t, "[[steps]]  # event {}", parts.step_events[i]);
                for (k, v) in &parts.steps[i] {
                    let _ = writeln!(t, "{k} = {v}");
                }
            }
            Item::Repeat {
                count,
                start,
                period,
            } => {
                let end = start + count * period - 1;
                let _ = writeln!(
                    t,
                    "[[steps]]  # events {} to {}\nrepeat = {count}\nsteps = [",
                    parts.step_events[start], parts.step_events[end]
                );
                for s in &parts.steps[start..start + period] {
                    let _ = writeln!(t, "  {},", inline(s));
                }
                t.push_str("]\n");
            }
        }
        t.push('\n');
    }
    for o in &parts.outputs {
        let _ = writeln!(
            t,
            "[[outputs]]  # {}\nbuffer = {}",
            o.about,
            quoted(&o.buffer)
        );
        if let Some((offset, len)) = o.view {
            let _ = writeln!(t, "offset = {offset}\nlen = {len}");
        }
        t.push_str("tolerance = { exact = true }\n");
        if let Some(r) = &o.reference {
            let _ = writeln!(t, "reference = {}", quoted(r));
        }
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Step {
        vec![("launch", v.to_string())]
    }

    #[test]
    fn runs_fold_into_repeats_and_the_rest_stays() {
        let steps: Vec<Step> = ["a", "b", "c", "b", "c", "b", "c", "d", "d", "e"]
            .iter()
            .map(|v| s(v))
            .collect();
        let items = fold(&steps, 8);
        assert_eq!(
            items,
            vec![
                Item::One(0),
                Item::Repeat {
                    count: 3,
                    start: 1,
                    period: 2
                },
                Item::Repeat {
                    count: 2,
                    start: 7,
                    period: 1
                },
                Item::One(9),
            ]
        );
    }

    #[test]
    fn scalars_are_numbers_only_where_they_read_back_to_the_same_bits() {
        assert_eq!(value_text("f64", &0.1f64.to_le_bytes()), "0.1");
        assert_eq!(value_text("f64", &2.0f64.to_le_bytes()), "2.0");
        assert_eq!(
            value_text("f32", &0.1f32.to_le_bytes()),
            "0.10000000149011612"
        );
        assert_eq!(
            value_text("f64", &(-0.0f64).to_le_bytes()),
            "{ bytes = \"0000000000000080\" }"
        );
        assert_eq!(
            value_text("f64", &f64::NAN.to_le_bytes()),
            "{ bytes = \"000000000000f87f\" }"
        );
        assert_eq!(value_text("s32", &(-3i32).to_le_bytes()), "-3");
        assert_eq!(
            value_text("u64", &u64::MAX.to_le_bytes()),
            "{ bytes = \"ffffffffffffffff\" }"
        );
        assert_eq!(value_text("b8", &[1, 2, 3]), "{ bytes = \"010203\" }");
    }
}
