//! `mantissa trace`: a spec written from what an application did under the attach library
//! (its `events.jsonl`, the modules it loaded and the bytes of every copy), which `mantissa run`
//! replays to the bit where the host's decisions did not depend on values the replay cannot
//! know.
//!
//! What maps to what:
//! - the module the launches come from → `[source]`, its PTX (the entry the driver would JIT
//!   for the device, `mantissa_fatbin::ptx_for`) written beside the spec; launches from several
//!   modules → their PTX linked into one (`mantissa_ptx::link_modules`), kernels and variables
//!   a later module redefines renamed there;
//! - each device allocation used → `[buffers.bufN]` (N: the allocation's number in the run),
//!   typed by [`types`], initialised from the first copy from the host when that copy fills it;
//! - launches → `launch` steps with the arguments as passed (pointers into buffers by name and
//!   element offset, scalars as numbers where the spec's conversion gives the same bits, else
//!   as bytes); copies from the host after the start, and memsets, → copies from data buffers
//!   (`data/inN.npy`) or fills; device-to-device copies → copies; runs of identical steps →
//!   `repeat` loops;
//! - copies to the host → outputs: the last copy of each range, compared exactly against the
//!   bytes the application read (`data/copiedN.npy`); a buffer written again afterwards is
//!   copied aside at that point so the output is what was read;
//! - copies to `__constant__`/`__device__` variables before the first launch →
//!   `[symbols.NAME]` ([`symbols`]).
//!
//! What a replay cannot follow is said in [`Trace::notes`]: values the host copied back and
//! then passed to later launches (a time step), what else touches a variable, memory no
//! allocation or variable covers. Never: a guess at a loop the events do not show repeating.

pub(crate) mod program;
mod render;
mod symbols;
pub(crate) mod types;

use crate::app::events::Event;
use mantissa_ptx::entry::entry_signatures;
use mantissa_ptx::link_modules::link_modules;
use mantissa_ptx::pointees::pointee_types;
use program::{ArgOut, Op};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Why no spec could be written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The application launched nothing.
    #[error("the application launched no kernel: there is nothing to replay")]
    NoLaunches,
    /// A launch's kernel was not named (its function was not looked up through a load seen).
    #[error("event {seq}: a launch whose kernel the attach library could not name (its module was loaded before the library saw it)")]
    Unnamed {
        /// The event.
        seq: usize,
    },
    /// The application's modules could not be linked into one program.
    #[error("linking the application's {modules} modules into one program: {message}")]
    Link {
        /// How many.
        modules: usize,
        /// Why not.
        message: String,
    },
    /// The module holds no PTX the device could use.
    #[error("module {module} holds no PTX (only SASS): rebuild with PTX beside the SASS, `-gencode arch=compute_XX,code=compute_XX` (or `-arch=sm_XX`, which embeds both)")]
    NoPtx {
        /// The module's key.
        module: String,
    },
    /// A kernel launched is not an entry of the module's PTX.
    #[error("{kernel} is not an entry of the module's PTX")]
    NoEntry {
        /// The kernel.
        kernel: String,
    },
    /// The driver did not say a launch's parameters.
    #[error("event {seq}: the driver did not report the parameters of {kernel}")]
    NoArgs {
        /// The event.
        seq: usize,
        /// The kernel.
        kernel: String,
    },
    /// Arguments and parameters disagree.
    #[error("event {seq}: {kernel} was given {args} arguments for {params} parameters")]
    Arity {
        /// The event.
        seq: usize,
        /// The kernel.
        kernel: String,
        /// Arguments recorded.
        args: usize,
        /// Parameters in the PTX.
        params: usize,
    },
    /// A copy's bytes were not recorded.
    #[error("event {seq}: a copy from the host whose bytes were not recorded (record htod_data)")]
    NoData {
        /// The event.
        seq: usize,
    },
    /// Something trace does not handle yet.
    #[error("event {seq}: {what} is not handled by trace yet")]
    Unsupported {
        /// The event.
        seq: usize,
        /// What it is.
        what: String,
    },
    /// An event that does not make sense.
    #[error("event {seq}: {message}")]
    Event {
        /// The event.
        seq: usize,
        /// What is wrong.
        message: String,
    },
    /// A file of the run could not be read, or the module not understood.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// A spec written from a run.
#[derive(Debug)]
pub struct Trace {
    /// The spec's file name (`NAME.toml`).
    pub spec_name: String,
    /// The spec's text.
    pub spec: String,
    /// Files the spec names, relative to its directory, with their bytes (the PTX, data).
    pub files: Vec<(String, Vec<u8>)>,
    /// What the replay cannot follow, and what was left out, one line each.
    pub notes: Vec<String>,
    /// Launches, steps written (after folding), buffers and outputs.
    pub counts: TraceCounts,
}

/// The sizes of a trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Launches replayed.
    pub launches: usize,
    /// Distinct kernels.
    pub kernels: usize,
    /// Buffers of the spec (the application's and the data buffers).
    pub buffers: usize,
    /// Variables set before the run (`[symbols.NAME]`).
    pub symbols: usize,
    /// Outputs.
    pub outputs: usize,
    /// Copies to the host in the run.
    pub copies_back: usize,
}

fn read(path: &Path) -> Result<Vec<u8>, TraceError> {
    std::fs::read(path).map_err(|e| TraceError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The PTX of module `key` as recorded under `dir/modules/`, for a device of compute capability
/// `arch` (`10 * major + minor`).
pub fn module_ptx(dir: &Path, key: &str, arch: u32) -> Result<String, TraceError> {
    let path = ["fatbin", "cubin", "ptx"]
        .iter()
        .map(|ext| dir.join("modules").join(format!("{key}.{ext}")))
        .find(|p| p.is_file())
        .ok_or_else(|| TraceError::File {
            path: dir.join("modules").join(key).display().to_string(),
            message: "the module's image was not saved".into(),
        })?;
    let bytes = read(&path)?;
    let bad = |e: mantissa_fatbin::FatbinError| TraceError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let image = mantissa_fatbin::image(&bytes).map_err(bad)?;
    mantissa_fatbin::ptx_for(&image, arch)
        .map_err(bad)?
        .ok_or_else(|| TraceError::NoPtx {
            module: key.to_string(),
        })
}

/// What a module's PTX says about the memory of a program: its kernels' signatures, the
/// evidence of their buffers' types, and its variables' element types, each keyed by (module
/// key, name).
#[derive(Default)]
pub(crate) struct ModuleFacts {
    pub signatures: program::Signatures,
    pub evidence: HashMap<(String, String), types::KernelEvidence>,
    pub variables: HashMap<(String, String), mantissa_gpu::DType>,
}

impl ModuleFacts {
    /// The facts of module `key` (parsed).
    pub fn of(key: &str, parsed: &mantissa_ptx::Module) -> ModuleFacts {
        let named = |name: &str| (key.to_string(), name.to_string());
        let signatures: program::Signatures = entry_signatures(parsed)
            .into_iter()
            .map(|s| (named(&s.name), s))
            .collect();
        let evidence = parsed
            .functions()
            .filter(|f| signatures.contains_key(&named(&f.name)))
            .map(|f| {
                (
                    named(&f.name),
                    types::KernelEvidence::of(&f.name, pointee_types(f)),
                )
            })
            .collect();
        let variables = mantissa_ptx::symbols::symbols(parsed)
            .into_iter()
            .filter_map(|v| Some((named(&v.name), types::of_value_type(v.element?)?)))
            .collect();
        ModuleFacts {
            signatures,
            evidence,
            variables,
        }
    }

    /// Adds another module's facts.
    pub fn extend(&mut self, other: ModuleFacts) {
        self.signatures.extend(other.signatures);
        self.evidence.extend(other.evidence);
        self.variables.extend(other.variables);
    }
}

/// The spec of the run recorded in `dir` (`events` read from it), named `name`, for a device
/// of compute capability `arch`.
pub fn trace(dir: &Path, events: &[Event], name: &str, arch: u32) -> Result<Trace, TraceError> {
    // The modules launched from, in the order of their first launch.
    let mut keys: Vec<String> = Vec::new();
    for e in events {
        if let Event::Launch {
            module: Some(m),
            error: None,
            ..
        } = e
        {
            if !keys.contains(m) {
                keys.push(m.clone());
            }
        }
    }
    if keys.is_empty() {
        return Err(TraceError::NoLaunches);
    }
    let mut texts = Vec::new();
    let mut parsed = Vec::new();
    let mut facts = ModuleFacts::default();
    for k in &keys {
        let ptx = module_ptx(dir, k, arch)?;
        let m = mantissa_ptx::parse::parse(&ptx).module;
        facts.extend(ModuleFacts::of(k, &m));
        texts.push(ptx);
        parsed.push(m);
    }
    let data = |file: &str| read(&dir.join(file));
    let mut program = program::read(events, true, &facts.signatures, &data)?;
    let types = types::buffer_types(&program, &facts);
    // One program: the module as the application loaded it, or its modules linked into one.
    let (ptx, renamed) = if parsed.len() == 1 {
        (texts.remove(0), vec![HashMap::new()])
    } else {
        let linked = link_modules(&parsed).map_err(|e| TraceError::Link {
            modules: keys.len(),
            message: e.to_string(),
        })?;
        (linked.module.to_string(), linked.renamed)
    };
    let modules: Vec<symbols::TracedModule> = keys
        .iter()
        .zip(&parsed)
        .zip(&renamed)
        .map(|((key, parsed), renamed)| symbols::TracedModule {
            key,
            parsed,
            renamed,
        })
        .collect();
    for op in &mut program.ops {
        if let Op::Launch { module, kernel, .. } = op {
            let new = modules.iter().find(|m| m.key == module.as_str());
            if let Some(n) = new.and_then(|m| m.renamed.get(kernel.as_str())) {
                *kernel = n.clone();
            }
        }
    }
    let variables = symbols::extract(&mut program, &modules, &types);
    let parts = render::parts(&program, &types);
    let mut notes = program.notes.clone();
    notes.extend(variables.notes);
    notes.extend(host_values(&program));
    let source = format!("{name}.ptx");
    let from = match keys.as_slice() {
        [one] => format!("module {one}"),
        several => format!("modules {}, linked into one", several.join(", ")),
    };
    let header = format!(
        "Written by `mantissa trace` from the run in {} ({from}).\n\
         Replays the run's launches, copies and memsets as they happened; the outputs are what\n\
         the application copied back, with its own values as the references.",
        dir.display()
    );
    let spec = render::text(name, &source, &header, &parts, &variables.symbols);
    let mut files = vec![(source, ptx.into_bytes())];
    files.extend(parts.files.iter().cloned());
    files.extend(variables.files);
    let launches: Vec<&String> = program
        .ops
        .iter()
        .filter_map(|o| match o {
            Op::Launch { kernel, .. } => Some(kernel),
            _ => None,
        })
        .collect();
    let kernels = launches
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let counts = TraceCounts {
        launches: launches.len(),
        kernels,
        buffers: parts.buffers.len(),
        symbols: variables.symbols.len(),
        outputs: parts.outputs.len(),
        copies_back: program
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Download { .. }))
            .count(),
    };
    Ok(Trace {
        spec_name: format!("{name}.toml"),
        spec,
        files,
        notes,
        counts,
    })
}

/// Launch arguments whose bytes the host had read back from the device earlier: the places
/// where the application's own decisions come from device results.
fn host_values(p: &program::Program) -> Vec<String> {
    let mut seen: HashMap<Vec<u8>, (usize, usize)> = HashMap::new(); // chunk -> (buffer, event)
    let mut uses: BTreeMap<(String, usize), (usize, usize, Option<(usize, usize)>)> =
        BTreeMap::new();
    let mut back_before_launch = 0;
    let mut launched_after = false;
    for op in p.ops.iter().rev() {
        match op {
            Op::Launch { .. } => launched_after = true,
            Op::Download { .. } if launched_after => back_before_launch += 1,
            _ => {}
        }
    }
    for op in &p.ops {
        match op {
            Op::Download {
                seq,
                from,
                data: Some(d),
                ..
            } => {
                for w in [4usize, 8] {
                    for c in d.chunks_exact(w).filter(|c| c.iter().any(|&b| b != 0)) {
                        seen.insert(c.to_vec(), (from.buf, *seq));
                    }
                }
            }
            Op::Launch { kernel, args, .. } => {
                for (k, a) in args.iter().enumerate() {
                    let ArgOut::Value { bytes, .. } = a else {
                        continue;
                    };
                    let e = uses.entry((kernel.clone(), k)).or_insert((0, 0, None));
                    e.1 += 1;
                    if let Some(&src) = seen.get(bytes) {
                        e.0 += 1;
                        e.2.get_or_insert(src);
                    }
                }
            }
            _ => {}
        }
    }
    let mut notes = Vec::new();
    if back_before_launch > 0 {
        notes.push(format!(
            "{back_before_launch} copies to the host came before later launches: where the host \
             decided from them (how many steps, which kernel, a size), the spec repeats this \
             run's decisions, and a changed program (another precision) may have decided otherwise"
        ));
    }
    for ((kernel, k), (hits, total, first)) in uses {
        if let (true, Some((buf, seq))) = (hits > 0, first) {
            notes.push(format!(
                "{kernel} parameter {k}: {hits} of {total} launches took a value the host had \
                 copied back (first from buf{buf} at event {seq}); the spec passes this run's values"
            ));
        }
    }
    notes
}

impl Trace {
    /// Writes the spec and its files under `out` (created if missing); returns the spec's path.
    /// Files are written whole and atomically; an existing file that is not a regular file is
    /// refused, not replaced.
    pub fn write(&self, out: &Path) -> Result<PathBuf, TraceError> {
        let fail = |path: &Path, e: mantissa_files::WriteError| TraceError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        mantissa_files::ensure_dir(out).map_err(|e| fail(out, e))?;
        for (rel, bytes) in &self.files {
            let path = out.join(rel);
            if let Some(parent) = path.parent() {
                mantissa_files::ensure_dir(parent).map_err(|e| fail(parent, e))?;
            }
            mantissa_files::write_file(&path, bytes).map_err(|e| fail(&path, e))?;
        }
        let spec = out.join(&self.spec_name);
        mantissa_files::write_file(&spec, self.spec.as_bytes()).map_err(|e| fail(&spec, e))?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests;
