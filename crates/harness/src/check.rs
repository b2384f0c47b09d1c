//! `mantissa run SPEC --check`: every check a run makes before anything runs, without a GPU.
//!
//! The inputs are checked without being made (so a `.npy` of the wrong dtype or shape, or a
//! value that does not fit its type, is found, and no buffer is allocated), the references
//! read, the launch shapes checked against the architecture's limits ([`crate::limits`]), the
//! memory a run needs estimated ([`crate::memory`]), and the program built under each flag set by
//! NVRTC, nvcc or as ready PTX, for the spec's architecture or [`mantissa_gpu::frontend::DEFAULT_ARCH`].
//! Each build's PTX is then checked as a run checks it ([`crate::validate::plan`]): every
//! launch's kernel exists, its arguments match the kernel's parameters in count, kind and value,
//! and every symbol is a variable of the program with the size its value has. Copies and output
//! views were checked against the buffers' lengths when the spec was read.

use crate::data::{check_inputs, references};
use crate::limits::{check_launches, ArchLimits, MAX_EVALUATIONS};
use crate::memory::{estimate, MemoryNeed};
use crate::run::build_request;
use crate::spec::{Spec, SpecError, StepKind};
use crate::validate::plan;
use mantissa_gpu::frontend::FrontEnd;
use mantissa_gpu::{Arch, BuildError, Builder, FlagSet};

/// What a check found: enough to say in a few lines what was checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The front end that built the baseline, and why (`NVRTC 13.0 (...): device code only`).
    pub front_end: String,
    /// The architecture built for.
    pub arch: Arch,
    /// The flag sets built, baseline first.
    pub flag_sets: Vec<FlagSet>,
    /// Launch steps (setup and program, loops counted once).
    pub launches: usize,
    /// The distinct kernels launched, by PTX name.
    pub kernels: Vec<String>,
    /// Symbols set, with their PTX name, state space and bytes.
    pub symbols: Vec<(String, String, usize)>,
    /// Buffers checked (none is made: `--check` allocates no buffer).
    pub buffers: usize,
    /// What a run would allocate, estimated from the spec.
    pub memory: MemoryNeed,
    /// What a reader should know, each once: ready PTX that flag sets do not change, kernels
    /// whose pointer parameters could not be checked, loops checked in part.
    pub notes: Vec<String>,
    /// Outputs, and how many have a reference.
    pub outputs: usize,
    /// References read.
    pub references: usize,
}

/// Why a check failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The spec is wrong for its inputs or its program: one line with its position (exit 2).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The program did not build under a flag set (one line; the compiler's whole log is in
    /// [`BuildError::log`] and, for compile errors, in the file the message names).
    #[error("{0}")]
    Build(BuildError),
}

impl CheckError {
    /// Whether the check could not build because no compiler is available (no NVRTC, no nvcc
    /// for a file that needs it), as opposed to the program failing to compile.
    pub fn no_compiler(&self) -> bool {
        matches!(
            self,
            CheckError::Build(BuildError::Nvrtc(_) | BuildError::NeedsNvcc { .. })
        )
    }
}

/// Checks `spec` as a run would before anything runs, building it under `flag_sets` (the
/// baseline `default` first, added when missing) with `builder`, for `arch` unless the spec
/// names one (`None`: the spec's, else the builder's default). Needs no GPU.
pub fn check(
    spec: &Spec,
    flag_sets: &[FlagSet],
    builder: &Builder,
    arch: Option<Arch>,
) -> Result<CheckReport, CheckError> {
    let symbol_bytes = check_inputs(spec)?;
    let refs = references(spec)?;
    let mut sets = vec![FlagSet::DEFAULT];
    sets.extend(flag_sets.iter().filter(|f| **f != FlagSet::DEFAULT));
    sets.dedup();
    let mut report = CheckReport {
        front_end: String::new(),
        // Set by each build below (the spec's architecture wins over `arch`).
        arch: arch.unwrap_or(mantissa_gpu::frontend::DEFAULT_ARCH),
        flag_sets: sets.clone(),
        launches: 0,
        kernels: Vec::new(),
        symbols: Vec::new(),
        buffers: spec.buffers.len(),
        memory: estimate(spec),
        notes: Vec::new(),
        outputs: spec.outputs.len(),
        references: refs.iter().flatten().count(),
    };
    for flags in sets {
        let mut request = build_request(spec, flags, None).map_err(|e| {
            spec.error(
                spec.source.loc,
                "source.arch",
                e,
                "an architecture such as \"sm_90\"",
            )
        })?;
        if request.arch.is_none() {
            request.arch = arch;
        }
        report.arch = builder.arch_of(&request);
        if flags == FlagSet::DEFAULT {
            // Before any build: the shapes need only the architecture.
            let (_, cut) = check_launches(spec, &ArchLimits::for_arch(report.arch))?;
            if cut {
                report.notes.push(format!("launch shapes that use loop counters were checked for the first {MAX_EVALUATIONS} launches"));
            }
        }
        let built = builder.build(&request).map_err(CheckError::Build)?;
        let lowered = built
            .compiled
            .as_ref()
            .map(|c| c.lowered_names.clone())
            .unwrap_or_default();
        let planned = plan(spec, &built.ptx, &lowered, &symbol_bytes)?;
        if flags == FlagSet::DEFAULT {
            if built.choice.front_end == FrontEnd::Ptx && report.flag_sets.len() > 1 {
                let others: Vec<String> = report.flag_sets[1..].iter().map(|f| f.name()).collect();
                report.notes.push(format!(
                    "ready PTX is read as is: flag sets ({}) do not change it, so every flag set runs the same code",
                    others.join(", ")
                ));
            }
            report.front_end = built.choice.to_string();
            for (step, _) in spec.walk() {
                if let (StepKind::Launch(_), Some(l)) =
                    (&step.kind, planned.launches.get(&step.path))
                {
                    report.launches += 1;
                    if !report.kernels.contains(&l.entry) {
                        report.kernels.push(l.entry.clone());
                    }
                }
            }
            let unchecked: Vec<&str> = report
                .kernels
                .iter()
                .filter(|k| crate::validate::is_extern_c(k))
                .map(String::as_str)
                .collect();
            if !unchecked.is_empty() {
                report.notes.push(format!(
                    "kernels declared extern \"C\" have no parameter types in their names, so their buffers' element types are not checked: {}",
                    unchecked.join(", ")
                ));
            }
            report.symbols = planned
                .symbols
                .iter()
                .map(|s| (s.ptx_name.clone(), s.space.clone(), s.bytes))
                .collect();
        }
    }
    Ok(report)
}

/// Checks a `--demote` configuration against the spec's build, as the rewrite maps it (the same
/// site lookup, [`mantissa_ptx::site::sites`], and selector lookup): every instruction site and
/// selector names an instruction, every math call is one of the build's, every buffer kept in
/// f32 is a buffer of the spec. `Ok` says what it names; `Err` is one line saying what is stale.
/// Builds without a GPU.
pub fn check_configuration(spec: &Spec, d: &crate::config::Demotion) -> Result<String, String> {
    use crate::config::Selection;
    use mantissa_ptx::demote::Request;
    let ptx = crate::trial::build::rewrite_base(spec)?;
    let module = mantissa_ptx::parse(&ptx).module;
    let mut problems = Vec::new();
    let mut named = Vec::new();
    if let Selection::Only(requests) = &d.instructions {
        let sites = mantissa_ptx::site::sites(&module);
        let selectors: Vec<_> = requests
            .iter()
            .filter_map(|r| match r {
                Request::Selector(s) => Some(s.clone()),
                Request::Site(_) => None,
            })
            .collect();
        let by_selector = mantissa_ptx::demote::selector_sites(&module, &selectors);
        let mut missing: Vec<String> = requests
            .iter()
            .filter_map(|r| match r {
                Request::Site(s) => sites.inst(s).is_none().then(|| s.to_string()),
                Request::Selector(_) => None,
            })
            .collect();
        missing.extend(
            selectors
                .iter()
                .zip(&by_selector)
                .filter(|(_, site)| site.is_none())
                .map(|(s, _)| format!("{s:?}")),
        );
        if let Some(first) = missing.first() {
            problems.push(format!(
                "{} of {} instruction sites name no instruction of this build (first: {first})",
                missing.len(),
                requests.len()
            ));
        }
        named.push(format!("{} instruction sites", requests.len()));
    }
    if let Selection::Only(calls) = &d.math {
        let have = crate::config::math_calls(&module);
        let missing: Vec<_> = calls.iter().filter(|c| !have.contains(c)).collect();
        if let Some(first) = missing.first() {
            problems.push(format!(
                "{} of {} math calls are not in it (first: {} at line {})",
                missing.len(),
                calls.len(),
                first.function,
                first.line
            ));
        }
        named.push(format!("{} math calls", calls.len()));
    }
    for b in &d.buffers {
        if spec.buffer(b).is_none() {
            problems.push(format!("buffer '{b}' is not a buffer of the spec"));
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "--demote {}: written for another build: {}; write a configuration for this build with --write-config",
            d.name,
            problems.join(", ")
        ));
    }
    Ok(format!(
        "{}: {}, all in this build",
        d.name,
        named.join(", ")
    ))
}
