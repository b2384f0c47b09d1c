//! Building a spec's program and the PTX of each configuration: the baseline build under a
//! flag set, the marked builds (math calls as units, some replaced by their f32 functions) and
//! the demotion rewrite and the storage-precision rewrite (buffers kept in f32), with what each
//! rewrite did as notes.

use crate::config::{self, Configuration};
use crate::spec::{FrontEnd, Spec, StepKind};
use crate::trial::TrialError;
use crate::validate::{Plan, PlannedArg};
use mantissa_gpu::{BuildFacts, BuildRequest, Define, FlagSet, FrontEnd as GpuFrontEnd, Gpu};
use mantissa_ptx::pass::demote::DemoteReport;
use mantissa_ptx::pass::store_f32::{StoreReport, StoreRequest};
use std::collections::BTreeMap;

/// A built program: its PTX, and what to load.
pub struct Built {
    /// The PTX (kernel signatures and symbols are read from it).
    pub ptx: String,
    /// Name expressions mapped to lowered names.
    pub lowered: BTreeMap<String, String>,
    /// Build facts for records.
    pub facts: Option<BuildFacts>,
    /// The compilation, for loading its cubin when the PTX is not changed.
    pub compiled: Option<std::sync::Arc<mantissa_gpu::Compiled>>,
    /// Front end in words, with why it was chosen.
    pub front_end: String,
    /// Which front end built it.
    pub kind: GpuFrontEnd,
}

/// The build request of the spec's program under `flags`; `units` marks math calls (see
/// [`mantissa_gpu::BuildRequest::units`]).
pub fn build_request(
    spec: &Spec,
    flags: FlagSet,
    units: Option<Vec<u32>>,
) -> Result<BuildRequest, String> {
    let src = &spec.source;
    let mut request = BuildRequest::new(&src.file);
    request.include_dirs = src.include.clone();
    for (name, value) in &src.define {
        request.defines.push(Define {
            name: name.clone(),
            value: value.clone(),
        });
    }
    request.arch = match &src.arch {
        Some(a) => Some(a.parse().map_err(|e| format!("{e}"))?),
        None => None,
    };
    request.flags = flags;
    request.units = units;
    request.front_end = match src.front_end {
        FrontEnd::Auto => None,
        FrontEnd::Nvrtc => Some(GpuFrontEnd::Nvrtc),
        FrontEnd::Nvcc => Some(GpuFrontEnd::Nvcc),
        FrontEnd::Ptx => Some(GpuFrontEnd::Ptx),
    };
    // Templated kernels are found through NVRTC name expressions.
    for (step, _) in spec.walk() {
        if let crate::spec::StepKind::Launch(l) = &step.kind {
            if l.kernel.contains('<') && !request.name_expressions.contains(&l.kernel) {
                request.name_expressions.push(l.kernel.clone());
            }
        }
    }
    Ok(request)
}

/// Builds the spec's program under `flags` through the front end the spec names or the one
/// chosen for the file (nvcc for host code, NVRTC for device-only code, ready PTX as is).
pub fn build_module(gpu: &Gpu, spec: &Spec, flags: FlagSet) -> Result<Built, String> {
    let request = build_request(spec, flags, None)?;
    let built = gpu
        .builder()
        .build_for(&arch_defaulted(gpu, request), true)
        .map_err(|e| e.to_string())?;
    Ok(Built {
        lowered: built
            .compiled
            .as_ref()
            .map(|c| c.lowered_names.clone())
            .unwrap_or_default(),
        front_end: built.choice.to_string(),
        kind: built.choice.front_end,
        ptx: built.ptx,
        facts: Some(built.facts),
        compiled: built.compiled,
    })
}

/// The request for the device's own architecture unless the spec names one.
fn arch_defaulted(gpu: &Gpu, mut request: BuildRequest) -> BuildRequest {
    if request.arch.is_none() {
        request.arch = Some(gpu.arch());
    }
    request
}

/// The PTX of one configuration, and what was done to make it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// PTX to load, or `None` to load the baseline build as it is (its cubin).
    pub ptx: Option<String>,
    /// What the rewrite did, for the record's note.
    pub notes: Vec<String>,
    /// Spec buffers kept in f32 on the device: narrowed after each restore, widened before
    /// outputs are compared ([`crate::trial::storage`]).
    pub f32_buffers: Vec<String>,
}

/// Marked builds of one flag set, by the list of call lines replaced: a configuration file run
/// with several flag sets, or `none` and `all` together, build each at most once.
#[derive(Default)]
pub struct MarkedBuilds {
    builds: BTreeMap<Vec<u32>, Result<String, String>>,
    /// The math calls of the marked build (no call replaced) when it has the baseline's code, or
    /// why it cannot be used; `None` until checked.
    calls: Option<Result<Vec<config::MathCall>, String>>,
}

impl MarkedBuilds {
    fn ptx(
        &mut self,
        gpu: &Gpu,
        spec: &Spec,
        flags: FlagSet,
        lines: &[u32],
    ) -> Result<String, String> {
        self.builds
            .entry(lines.to_vec())
            .or_insert_with(|| {
                let request = build_request(spec, flags, Some(lines.to_vec()))?;
                gpu.builder()
                    .build_for(&arch_defaulted(gpu, request), false)
                    .map(|b| b.ptx)
                    .map_err(|e| format!("marked build: {e}"))
            })
            .clone()
    }

    /// The math calls a configuration can replace, once the marked build is checked against the
    /// baseline's PTX.
    fn calls(
        &mut self,
        gpu: &Gpu,
        spec: &Spec,
        flags: FlagSet,
        baseline: &str,
    ) -> Result<Vec<config::MathCall>, String> {
        if let Some(checked) = &self.calls {
            return checked.clone();
        }
        let checked = self
            .ptx(gpu, spec, flags, &[])
            .and_then(|marked| marked_calls(baseline, &marked));
        self.calls = Some(checked.clone());
        checked
    }
}

/// The math calls of `marked` when it has the same instructions as `plain` (the marking header
/// must not change the code), or why it cannot stand in for `plain`.
fn marked_calls(plain: &str, marked: &str) -> Result<Vec<config::MathCall>, String> {
    let marked = mantissa_ptx::parse(marked).module;
    if mantissa_ptx::demote::same_code(&mantissa_ptx::parse(plain).module, &marked) {
        Ok(config::math_calls(&marked))
    } else {
        Err("the build with math calls marked differs from the program as written".into())
    }
}

/// The PTX a demotion's rewrite starts from: a marked build (math calls are units, the
/// demotion's ones replaced by their f32 functions), or the baseline itself where marking is
/// impossible (ready PTX) or would change the code; with notes on what happened to math calls.
pub(crate) fn base_ptx(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    built: &Built,
    demotion: &config::Demotion,
    marked: &mut MarkedBuilds,
) -> Result<(String, Vec<String>), TrialError> {
    let mut notes = Vec::new();
    let base = if built.kind == GpuFrontEnd::Ptx {
        if !demotion.math_lines(&[]).is_empty() || demotion.math.is_all() {
            notes.push("ready PTX: math calls cannot be marked, so they stay f64 (f64 code that manipulates bits is kept whole)".into());
        }
        built.ptx.clone()
    } else {
        match marked.calls(gpu, spec, flags, &built.ptx) {
            Ok(calls) => {
                let lines = demotion.math_lines(&calls);
                if !lines.is_empty() {
                    notes.push(format!(
                        "math calls in f32: {}",
                        calls
                            .iter()
                            .filter(|c| lines.contains(&c.line))
                            .map(|c| format!("{} (line {})", c.function, c.line))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                marked
                    .ptx(gpu, spec, flags, &lines)
                    .map_err(|message| TrialError::Build { message })?
            }
            Err(why) => {
                notes.push(format!(
                    "{why}: math calls stay f64, and f64 code that manipulates bits is kept whole"
                ));
                built.ptx.clone()
            }
        }
    };
    Ok((base, notes))
}

/// The source lines of the math calls `demotion` replaces in this program: none for ready PTX
/// or where the marked build cannot stand in for the program (the rewrite then keeps them f64).
pub(crate) fn replaced_math_lines(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    built: &Built,
    demotion: &config::Demotion,
    marked: &mut MarkedBuilds,
) -> Vec<u32> {
    if built.kind == GpuFrontEnd::Ptx {
        return Vec::new();
    }
    marked
        .calls(gpu, spec, flags, &built.ptx)
        .map_or(Vec::new(), |calls| demotion.math_lines(&calls))
}

/// The [`store_f32`] requests that keep `buffers` in f32: one per (kernel, pointer parameter)
/// that receives one of them in some launch of `plan` (setup steps included), or why the
/// configuration cannot keep them, in one line: an unknown or non-f64 buffer, a buffer that a
/// copy or fill step touches (those work on the f64 layout), or a kernel parameter that
/// receives a buffer kept in f32 in one launch and an f64 buffer in another (its code can only
/// have one layout).
pub fn storage_requests(
    spec: &Spec,
    plan: &Plan,
    buffers: &[String],
) -> Result<Vec<StoreRequest>, String> {
    for name in buffers {
        let b = spec
            .buffers
            .iter()
            .find(|b| &b.name == name)
            .ok_or_else(|| {
                format!(
                    "buffer '{name}' kept in f32 is not a buffer of the spec; its buffers are: {}",
                    spec.buffers
                        .iter()
                        .map(|b| b.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        if b.dtype != mantissa_gpu::DType::F64 {
            return Err(format!(
                "buffer '{name}' is {}: only f64 buffers can be kept in f32",
                b.dtype
            ));
        }
    }
    let kept = |n: &str| buffers.iter().any(|b| b == n);
    let len_of = |n: &str| spec.buffers.iter().find(|b| b.name == n).map(|b| b.len);
    for (step, _) in spec.walk() {
        match &step.kind {
            // A whole-buffer copy copies the whole allocation, so two buffers both kept in f32
            // (the values in the first half of each) copy correctly; a range counts f64
            // elements, and one side in f64 would reinterpret the other's bytes.
            StepKind::Copy {
                from,
                to,
                len,
                src_offset,
                dst_offset,
            } if kept(from) || kept(to) => {
                let whole = len.is_none()
                    && src_offset.is_none()
                    && dst_offset.is_none()
                    && len_of(from) == len_of(to);
                if !(kept(from) && kept(to)) {
                    let (k, other) = if kept(from) { (from, to) } else { (to, from) };
                    return Err(format!(
                        "buffer '{k}' kept in f32 is copied by {} to or from '{other}', which stays f64: keep both in f32",
                        step.describe()
                    ));
                }
                if !whole {
                    return Err(format!(
                        "buffers '{from}' and '{to}' kept in f32 are copied in part by {}: only whole-buffer copies keep the f32 layout",
                        step.describe()
                    ));
                }
            }
            StepKind::Fill { buffer, .. } if kept(buffer) => {
                return Err(format!(
                    "buffer '{buffer}' kept in f32 is used by {}: a fill writes f64 contents",
                    step.describe()
                ));
            }
            _ => {}
        }
    }
    // Launches in path order, so that messages and requests do not depend on hashing.
    let mut launches: Vec<(&String, &crate::validate::ResolvedLaunch)> =
        plan.launches.iter().collect();
    launches.sort_by(|a, b| a.0.cmp(b.0));
    let mut requests: Vec<StoreRequest> = Vec::new();
    for (path, l) in &launches {
        for (k, arg) in l.args.iter().enumerate() {
            let PlannedArg::Buffer(name) = arg else {
                continue;
            };
            if !kept(name) {
                continue;
            }
            let Some(param) = l.params.get(k) else {
                return Err(format!(
                    "{path}: argument {k} has no parameter (an internal error)"
                ));
            };
            // Every launch of this kernel must pass a kept buffer at this parameter.
            for (other_path, other) in &launches {
                if other.entry != l.entry {
                    continue;
                }
                if let Some(PlannedArg::Buffer(o)) = other.args.get(k) {
                    if !kept(o) {
                        return Err(format!(
                            "kernel {} parameter {} receives '{name}' (kept in f32) at {path} and '{o}' (f64) at {other_path}",
                            l.entry, param.name
                        ));
                    }
                }
            }
            let r = StoreRequest {
                function: l.entry.clone(),
                param: param.name.clone(),
            };
            if !requests.contains(&r) {
                requests.push(r);
            }
        }
    }
    Ok(requests)
}

/// Makes the PTX of `configuration` from the baseline build `built` (see [`crate::config`]);
/// `plan` (the spec resolved against `built`) says which kernel parameters receive the buffers
/// the configuration keeps in f32.
pub fn prepare(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    built: &Built,
    plan: &Plan,
    configuration: &Configuration,
    marked: &mut MarkedBuilds,
) -> Result<Prepared, TrialError> {
    let demotion = match configuration {
        Configuration::AsWritten => {
            return Ok(Prepared {
                ptx: None,
                notes: Vec::new(),
                f32_buffers: Vec::new(),
            })
        }
        Configuration::Demote(d) => d,
    };
    // Refused before any build: a wrong buffer name costs nothing.
    let requests = match demotion.buffers.is_empty() {
        true => Vec::new(),
        false => storage_requests(spec, plan, &demotion.buffers).map_err(TrialError::Refused)?,
    };
    let (base, mut notes) = base_ptx(gpu, spec, flags, built, demotion, marked)?;
    let parsed = mantissa_ptx::parse(&base).module;
    let (mut module, demoted_notes) = demote_instructions(&parsed, demotion)?;
    notes.extend(demoted_notes);
    if !demotion.buffers.is_empty() {
        let run = crate::pipelines::storage(requests)
            .run(&module)
            .map_err(|e| TrialError::Refused(format!("keeping buffers in f32: {e}")))?;
        let Some(report) = run.reports[0].details::<StoreReport>() else {
            return Err(TrialError::Refused(
                "keeping buffers in f32: no report (an internal error)".into(),
            ));
        };
        if let Some(why) = report.refused.first() {
            return Err(TrialError::Refused(format!(
                "buffers {} cannot be kept in f32: {why}",
                demotion.buffers.join(", ")
            )));
        }
        notes.push(format!(
            "buffers in f32: {} ({} loads and {} stores in {} kernel parameters)",
            demotion.buffers.join(", "),
            report.loads(),
            report.stores(),
            report.stored.len()
        ));
        module = run.module;
    }
    Ok(Prepared {
        ptx: Some(module.to_string()),
        notes,
        f32_buffers: demotion.buffers.clone(),
    })
}

/// `module` with the f64 instructions `demotion` names demoted by the PTX rewrite (its math
/// calls and buffers are the caller's), and what the rewrite did, in notes.
pub(crate) fn demote_instructions(
    module: &mantissa_ptx::Module,
    demotion: &config::Demotion,
) -> Result<(mantissa_ptx::Module, Vec<String>), TrialError> {
    let mut notes = Vec::new();
    let demoted = crate::pipelines::demotion(demotion.demote_set())
        .run(module)
        .map_err(|e| TrialError::Refused(format!("demoting: {}", e.message)))?;
    let r = demoted.reports[0]
        .details::<DemoteReport>()
        .ok_or_else(|| TrialError::Refused("demoting: no report (an internal error)".into()))?;
    let (to32, to64) = r
        .functions
        .iter()
        .fold((0, 0), |(a, b), f| (a + f.cvt_to_f32, b + f.cvt_to_f64));
    notes.push(format!(
        "{} f64 instructions in f32, {} conversions in, {} out",
        r.demoted(),
        to32,
        to64
    ));
    if !r.unmatched.is_empty() {
        notes.push(format!(
            "{} selectors name no instruction of this build (first: {})",
            r.unmatched.len(),
            r.unmatched[0]
        ));
    }
    if !r.refused.is_empty() {
        notes.push(format!(
            "{} instructions not demotable (first: {}: {})",
            r.refused.len(),
            r.refused[0].requested,
            r.refused[0].reason
        ));
    }
    notes.extend(r.notes.iter().cloned());
    Ok((demoted.module, notes))
}

/// The configuration naming every math call and every eligible f64 instruction of the spec's
/// program built with the default flags (see [`config::full_configuration`]). Builds only: no
/// GPU is needed (the architecture is the spec's, or the front end's default).
pub fn full_configuration(spec: &Spec) -> Result<config::Demotion, String> {
    Ok(config::full_configuration(&rewrite_base(spec)?))
}

/// The PTX (default flags) that configurations' sites and math calls name: the marked build
/// where it stands in for the program, else the program as built. Builds only: no GPU.
pub fn rewrite_base(spec: &Spec) -> Result<String, String> {
    let builder = mantissa_gpu::Builder::new();
    let plain = builder
        .build(&build_request(spec, FlagSet::DEFAULT, None)?)
        .map_err(|e| e.to_string())?;
    if plain.choice.front_end == GpuFrontEnd::Ptx {
        return Ok(plain.ptx);
    }
    let marked = builder
        .build(&build_request(spec, FlagSet::DEFAULT, Some(Vec::new()))?)
        .map_err(|e| format!("marked build: {e}"))?;
    let usable = marked_calls(&plain.ptx, &marked.ptx).is_ok();
    Ok(if usable { marked.ptx } else { plain.ptx })
}
