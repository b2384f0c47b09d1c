//! A kernel spec as a [`Session`] whose trials run on the PTX interpreter
//! ([`mantissa_ptx::interp`], through [`crate::interp_steps`]): what lets an analysis that
//! reaches its program only through the one [`Session`] trait (shadow, diff, tune) be checked
//! on the CPU, in CI, without a GPU. The program is the spec's PTX, built by the caller (NVRTC
//! needs no GPU); the baseline is that PTX run once by [`InterpSession::new`], at sizes the
//! interpreter can afford (`--set`).
//!
//! A trial runs the spec's setup and steps over fresh buffers made from the spec's inputs
//! (nothing carries over from one trial to the next), with every call of the module inlined
//! (the interpreter runs no calls) and a register read before any write given
//! [`interp::UNDEFINED_BITS`] (NVRTC-compiled runtimes do that on paths whose value is
//! discarded). Its outputs are compared with the baseline's ([`crate::compare::compare`]) and
//! with the spec's references; a variant's symbols are written before the first launch and its
//! globals read after the last.
//!
//! **Time is a cost model**, since the interpreter has no clock: each launch costs the
//! instructions its threads executed ([`interp::Run::counts`]), each f64 floating-point
//! arithmetic instruction ([`mantissa_ptx::op::Op::counts_as_arithmetic`] of type f64) counted
//! twice and every other instruction once; a run costs the sum over the launches of its steps
//! (the setup's launches excluded, as a GPU trial's timing excludes them). The cost is reported
//! in **model ms**: one weighted instruction is 10⁻⁶ model ms. It is deterministic, so a timed
//! trial's samples are that one cost repeated (`repeats` of them, no run repeated) and a
//! speed-up is exact: what an analysis decides on it can be tested. It says nothing of a GPU's
//! time (memory, occupancy and latency are not in it).
//!
//! Never: a GPU call, a build (the PTX is given; [`Base::Built`] is refused), the shadow-values
//! run ([`Session::run_shadowed`]), the switched build ([`Session::enable_switching`]), f32
//! storage of buffers or math calls named by a marked build (refused, as an application's
//! session refuses them), kernel resources (empty lists), dynamic shared memory, or ptxas's
//! contractions. The interpreter runs the PTX as written (a `mul` and an `add` stay two
//! roundings where ptxas may fuse them), so the baseline is the as-built PTX so run, and
//! [`Base::Pinned`] is the as-built module with a note: pinning writes ptxas's decisions into
//! the PTX so that a rewrite computes the bits the *GPU* computes, which on this device would
//! be other bits than the baseline's (relax.cu's loop: ptxas fuses four products that NVVM left
//! unfused, and one element of 64 moves).

use crate::compare::{compare, output_values, OutputResult};
use crate::config::{instructions_only, Configuration};
use crate::data::{materialize, references, Inputs};
use crate::interp_steps::run_steps;
use crate::recipe::{Base, BaseModule, Recipe, Variant};
use crate::spec::Spec;
use crate::trial::build::demote_instructions;
use crate::trial::shadowed::ShadowedRun;
use crate::trial::variant::make_variant;
use crate::trial::{
    BuildKind, GlobalBytes, KernelTime, Resources, TrialError, TrialOutcome, TrialTiming,
};
use crate::validate::{plan, Plan};
use crate::Session;
use mantissa_gpu::{Arch, BuildFacts, DType, HostData, LaunchDims, Timing};
use mantissa_ptx::interp::{self, Memory};
use mantissa_ptx::op::ValueType;
use mantissa_ptx::Module;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Model ms per weighted instruction (see the module docs).
const MS_PER_INSTRUCTION: f64 = 1e-6;

/// A spec's program whose trials run on the PTX interpreter (see the module docs).
pub struct InterpSession {
    spec: Spec,
    ptx: String,
    plan: Plan,
    inputs: Inputs,
    /// Per output (spec order), the user's reference values, when given.
    references: Vec<Option<Vec<f64>>>,
    /// The baseline's run: its output buffers, per kernel costs and first launch.
    base_run: Ran,
    /// Per output (spec order), the baseline's values as compared.
    base_values: Vec<Vec<f64>>,
    baseline: TrialOutcome,
    /// Launches the setup steps make (not costed).
    setup_launches: usize,
    bases: Vec<(Base, Arc<BaseModule>)>,
    runtimes: Vec<(&'static str, String)>,
    /// The last checked run's output buffers; none before the first trial (the baseline's).
    last_outputs: Option<Vec<(String, HostData)>>,
}

/// One kernel's modelled cost in a run of the steps.
#[derive(Debug, Clone, PartialEq)]
struct KernelCost {
    entry: String,
    /// Weighted instructions over its launches.
    cost: u64,
    launches: u64,
}

/// What one run of the spec's steps left.
#[derive(Debug, Clone)]
struct Ran {
    /// Each output buffer (once per buffer, spec order).
    buffers: Vec<(String, HostData)>,
    /// The globals read back.
    globals: GlobalBytes,
    /// Per kernel, in order of first launch (the setup's launches not counted).
    kernels: Vec<KernelCost>,
    first_launch: Option<LaunchDims>,
}

impl Ran {
    /// The whole run's cost, model ms.
    fn ms(&self) -> f64 {
        self.kernels.iter().map(|k| k.cost as f64).sum::<f64>() * MS_PER_INSTRUCTION
    }
}

impl InterpSession {
    /// The session of `spec` whose program is `ptx` (the spec's CUDA built for an `sm_`
    /// target): the spec planned against it, its inputs made, and the baseline run once.
    /// Kernels are found by the names the PTX gives them (a C++ kernel by its base name); a
    /// template's instance, which needs NVRTC's lowered names, is not.
    pub fn new(spec: &Spec, ptx: String) -> Result<InterpSession, TrialError> {
        let inputs = materialize(spec)?;
        let references = references(spec)?;
        let plan = plan(spec, &ptx, &BTreeMap::new(), &inputs.symbols)?;
        let module = mantissa_ptx::parse(&ptx).module;
        let setup_launches = count_setup_launches(spec, &plan, &inputs, &module)?;
        let mut session = InterpSession {
            spec: spec.clone(),
            plan,
            inputs,
            references,
            base_run: Ran {
                buffers: Vec::new(),
                globals: Vec::new(),
                kernels: Vec::new(),
                first_launch: None,
            },
            base_values: Vec::new(),
            baseline: outcome_shell(),
            setup_launches,
            bases: Vec::new(),
            runtimes: Vec::new(),
            last_outputs: None,
            ptx,
        };
        let ran = session.run(&module, &[], &[])?;
        session.base_values = spec
            .outputs
            .iter()
            .map(|o| session.values_of(&ran, o))
            .collect();
        session.base_run = ran;
        session.baseline = session.outcome(&session.base_run, TrialTiming::AccuracyOnly);
        Ok(session)
    }

    /// Runs the spec's setup and steps on `module` (calls inlined), `writes` made before the
    /// first launch, the globals `read_back` read after the last.
    fn run(
        &self,
        module: &Module,
        writes: &[(String, Vec<u8>)],
        read_back: &[String],
    ) -> Result<Ran, TrialError> {
        let module = mantissa_ptx::pass::inline::inline_every_call(module)
            .map_err(|e| TrialError::Refused(format!("inlining every call: {e}")))?
            .module;
        let doubled = f64_arithmetic(&module);
        let options = interp::Options {
            undefined_reads: Some(interp::UNDEFINED_BITS),
            steps: 1 << 32,
            ..interp::Options::default()
        };
        let mut launches = 0usize;
        let mut kernels: Vec<KernelCost> = Vec::new();
        let mut first_launch = None;
        let mut launch =
            |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
                if launches == 0 {
                    for (name, bytes) in writes {
                        let at = mem.symbol(&module, name).map_err(|e| e.to_string())?;
                        mem.write(at, bytes).map_err(|e| e.to_string())?;
                    }
                }
                let done = interp::run_with(&module, entry, l, args, mem, &options)
                    .map_err(|e| e.to_string())?;
                launches += 1;
                if launches <= self.setup_launches {
                    return Ok(());
                }
                first_launch.get_or_insert_with(|| {
                    let (g, b) = (l.grid, l.block);
                    LaunchDims::new((g[0], g[1], g[2]), (b[0], b[1], b[2]))
                });
                let cost = done
                    .counts
                    .iter()
                    .map(|(id, n)| if doubled.contains(id) { 2 * n } else { *n })
                    .sum::<u64>();
                match kernels.iter_mut().find(|k| k.entry == entry) {
                    Some(k) => {
                        k.cost += cost;
                        k.launches += 1;
                    }
                    None => kernels.push(KernelCost {
                        entry: entry.to_string(),
                        cost,
                        launches: 1,
                    }),
                }
                Ok(())
            };
        let mut run = run_steps(&self.spec, &self.plan, &self.inputs, &module, &mut launch)
            .map_err(|message| TrialError::KernelFault {
                step: "the PTX interpreter".into(),
                iteration: String::new(),
                message,
                context_lost: false,
            })?;
        let mut buffers: Vec<(String, HostData)> = Vec::new();
        for o in &self.spec.outputs {
            if buffers.iter().any(|(n, _)| *n == o.buffer) {
                continue;
            }
            let dtype = self.spec.buffer(&o.buffer).map_or(DType::F64, |b| b.dtype);
            let bytes = run.buffer_bytes(&o.buffer).ok_or_else(|| {
                TrialError::Failed(format!("no output buffer '{}' after the run", o.buffer))
            })?;
            buffers.push((
                o.buffer.clone(),
                crate::npy::host_data_le(dtype, &bytes[..bytes.len() - bytes.len() % dtype.size()])
                    .expect("whole elements"),
            ));
        }
        let symbols = mantissa_ptx::symbols::symbols(&module);
        let mut globals = Vec::with_capacity(read_back.len());
        for name in read_back {
            let unread = |why: String| {
                TrialError::Failed(format!("the global {name} was not read back: {why}"))
            };
            let size = symbols
                .iter()
                .find(|v| v.name == *name)
                .and_then(|v| v.bytes)
                .ok_or_else(|| unread("no module variable of a known size".into()))?;
            let at = run
                .memory
                .symbol(&module, name)
                .map_err(|e| unread(e.to_string()))?;
            let bytes = run
                .memory
                .read(at, size as usize)
                .map_err(|e| unread(e.to_string()))?;
            globals.push((name.clone(), bytes.to_vec()));
        }
        Ok(Ran {
            buffers,
            globals,
            kernels,
            first_launch,
        })
    }

    /// Output `o`'s values in `ran`, as compared (its view, its reduction).
    fn values_of(&self, ran: &Ran, o: &crate::spec::OutputSpec) -> Vec<f64> {
        ran.buffers
            .iter()
            .find(|(n, _)| *n == o.buffer)
            .map_or_else(Vec::new, |(_, d)| {
                output_values(d, o.view.as_ref(), o.reduce)
            })
    }

    /// `ran` as a trial: every output against the baseline's and its reference, timed by the
    /// model as `timing` asks.
    fn outcome(&self, ran: &Ran, timing: TrialTiming) -> TrialOutcome {
        let outputs = self
            .spec
            .outputs
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let dtype = self.spec.buffer(&o.buffer).map_or(DType::F64, |b| b.dtype);
                let values = self.values_of(ran, o);
                let vs_baseline = compare(dtype, &values, &self.base_values[i]);
                let vs_reference = self.references[i].as_ref().map(|r| {
                    let r = match o.reduce {
                        Some(_) => &r[..r.len().min(1)],
                        None => &r[..],
                    };
                    compare(dtype, &values, r)
                });
                let met = o
                    .tolerance
                    .map(|t| vs_reference.as_ref().unwrap_or(&vs_baseline).meets(&t));
                OutputResult {
                    name: o.name(),
                    value: o.reduce.and(values.first().copied()),
                    vs_baseline,
                    vs_reference,
                    tolerance: o.tolerance,
                    met,
                }
            })
            .collect();
        let timing = match timing {
            TrialTiming::Timed { warmup, repeats } if repeats > 0 => {
                Timing::from_samples(vec![ran.ms(); repeats as usize], warmup, 1)
            }
            _ => None,
        };
        TrialOutcome {
            outputs,
            timing,
            first_launch: ran.first_launch,
            ..outcome_shell()
        }
    }

    /// `configuration` made and run (the baseline's run for [`Configuration::AsWritten`]: the
    /// interpreter is deterministic), with the configuration's notes.
    fn configured_run(
        &mut self,
        configuration: &Configuration,
    ) -> Result<(Ran, Vec<String>), TrialError> {
        match configuration {
            Configuration::AsWritten => Ok((self.base_run.clone(), Vec::new())),
            Configuration::Demote(_) => {
                let recipe = Recipe::new(
                    &configuration.name(),
                    Base::Configured(configuration.clone()),
                );
                let variant = self.make(recipe)?;
                let module = mantissa_ptx::parse(&variant.ptx).module;
                let ran = self.run(&module, &variant.writes, &variant.read_back)?;
                Ok((ran, variant.notes))
            }
        }
    }

    /// The runtime `header` compiled by NVRTC for the PTX's target, once.
    fn runtime_ptx(
        &mut self,
        header: &'static mantissa_gpu::runtime::RuntimeHeader,
    ) -> Result<String, TrialError> {
        let arch = Session::target_arch(self);
        crate::trial::variant::probed_runtime(&mut self.runtimes, header, arch)
    }
}

/// A trial outcome with nothing in it yet.
fn outcome_shell() -> TrialOutcome {
    TrialOutcome {
        outputs: Vec::new(),
        timing: None,
        notes: Vec::new(),
        first_launch: None,
        downloaded: Vec::new(),
        build: BuildKind::Static,
    }
}

/// The launches `spec`'s setup steps make on `module` (walked with no launch run).
fn count_setup_launches(
    spec: &Spec,
    plan: &Plan,
    inputs: &Inputs,
    module: &Module,
) -> Result<usize, TrialError> {
    let setup_only = Spec {
        steps: Vec::new(),
        ..spec.clone()
    };
    let mut n = 0usize;
    let mut count = |_: &str, _: interp::Launch, _: &[interp::Arg], _: &mut Memory| {
        n += 1;
        Ok(())
    };
    run_steps(&setup_only, plan, inputs, module, &mut count).map_err(|e| {
        TrialError::Failed(format!(
            "walking the setup steps without their launches: {e}"
        ))
    })?;
    Ok(n)
}

/// The instructions of `module` the cost model counts twice: f64 floating-point arithmetic.
fn f64_arithmetic(module: &Module) -> HashSet<mantissa_ptx::model::InstId> {
    module
        .functions()
        .flat_map(|f| f.instructions())
        .filter(|i| {
            let op = i.decode();
            op.counts_as_arithmetic() && op.ty == Some(ValueType::F64)
        })
        .map(|i| i.id)
        .collect()
}

impl Session for InterpSession {
    fn device_name(&self) -> String {
        "the PTX interpreter".into()
    }

    fn build_facts(&self) -> Option<&BuildFacts> {
        None
    }

    fn as_built_ptx(&self) -> &str {
        &self.ptx
    }

    fn target_arch(&self) -> Option<Arch> {
        mantissa_ptx::symbols::header(&self.ptx)
            .sm()
            .map(|n| Arch::new(n / 10, n % 10))
    }

    fn baseline(&self) -> &TrialOutcome {
        &self.baseline
    }

    fn base_module(&mut self, base: &Base) -> Result<Arc<BaseModule>, TrialError> {
        if let Some((_, m)) = self.bases.iter().find(|(b, _)| b == base) {
            return Ok(m.clone());
        }
        let as_built = || BaseModule {
            module: mantissa_ptx::parse(&self.ptx).module,
            pinning: None,
            notes: Vec::new(),
            text: Some(self.ptx.clone()),
        };
        let made = match base {
            Base::AsBuilt | Base::Configured(Configuration::AsWritten) => as_built(),
            // Pinning writes ptxas's contractions into the PTX, so that a rewrite computes the
            // device's bits; this device runs the PTX as written, which is those bits already.
            Base::Pinned => BaseModule {
                notes: vec![PINNED_NOTE.into()],
                ..as_built()
            },
            Base::Configured(Configuration::Demote(d)) => {
                let plain = self.base_module(&Base::AsBuilt)?;
                let only = instructions_only(d, BUFFERS_REFUSED, MATH_REFUSED)?;
                let (module, notes) = demote_instructions(&plain.module, &only)?;
                BaseModule {
                    module,
                    pinning: None,
                    notes,
                    text: None,
                }
            }
            Base::Built(flags) => {
                return Err(TrialError::Refused(format!(
                    "the interpreter runs the PTX it was given: built with {} is not available",
                    flags.name()
                )))
            }
        };
        let made = Arc::new(made);
        self.bases.push((base.clone(), made.clone()));
        Ok(made)
    }

    fn make(&mut self, recipe: Recipe) -> Result<Variant, TrialError> {
        let base = self.base_module(&recipe.base)?;
        make_variant(&base, recipe, &mut |header| self.runtime_ptx(header))
    }

    fn run_variant(
        &mut self,
        variant: &Variant,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        let module = mantissa_ptx::parse(&variant.ptx).module;
        let ran = self.run(&module, &variant.writes, &variant.read_back)?;
        let outcome = self.outcome(&ran, timing);
        self.last_outputs = Some(ran.buffers);
        Ok((outcome, ran.globals))
    }

    fn trial(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<TrialOutcome, TrialError> {
        let (ran, notes) = self.configured_run(configuration)?;
        let mut outcome = self.outcome(&ran, timing);
        outcome.notes = notes;
        self.last_outputs = Some(ran.buffers);
        Ok(outcome)
    }

    /// Each kernel's modelled cost in `configuration` (one run: every run costs the same, so it
    /// is the median of any number), its launches per run of the steps and its share.
    fn kernel_times(
        &mut self,
        configuration: &Configuration,
        _runs: u32,
    ) -> Result<Vec<KernelTime>, TrialError> {
        let (ran, _) = self.configured_run(configuration)?;
        let total: u64 = ran.kernels.iter().map(|k| k.cost).sum();
        Ok(ran
            .kernels
            .iter()
            .map(|k| KernelTime {
                kernel: k.entry.clone(),
                launches: k.launches,
                median_ms: k.cost as f64 * MS_PER_INSTRUCTION,
                share: if total > 0 {
                    k.cost as f64 / total as f64
                } else {
                    0.0
                },
            })
            .collect())
    }

    /// Not modelled: empty.
    fn configuration_resources(
        &mut self,
        _configuration: &Configuration,
    ) -> Result<Resources, TrialError> {
        Ok(Vec::new())
    }

    fn enable_switching(&mut self, _universe: &Configuration) -> Result<(), TrialError> {
        Err(TrialError::Refused(
            "the PTX interpreter runs each configuration's own rewrite (no switched build)".into(),
        ))
    }

    fn run_shadowed(&mut self, _variant: &Variant) -> Result<ShadowedRun, TrialError> {
        Err(TrialError::Refused(
            "shadow values need a shadow beside every device buffer, which the PTX interpreter's \
             session does not make: use the demotion and exceptions analyses"
                .into(),
        ))
    }

    fn outputs(&self) -> Result<Vec<(String, HostData)>, TrialError> {
        Ok(self
            .last_outputs
            .clone()
            .unwrap_or_else(|| self.base_run.buffers.clone()))
    }

    /// Not modelled: empty.
    fn baseline_resources(&self) -> Result<Resources, TrialError> {
        Ok(Vec::new())
    }

    /// Not modelled: empty.
    fn variant_resources(&mut self, _variant: &Variant) -> Result<Resources, TrialError> {
        Ok(Vec::new())
    }
}

/// What [`Base::Pinned`] says of itself.
const PINNED_NOTE: &str = "contraction not pinned: the PTX interpreter runs the PTX as written, without ptxas's contractions, so the program as built is what a rewrite must reproduce";

/// Why the interpreter's session keeps no buffer in f32.
const BUFFERS_REFUSED: &str =
    "need the GPU trial runner's conversion kernels, which the PTX interpreter's session does not run";

/// Why it demotes no math call by name.
const MATH_REFUSED: &str = "math calls are named by a spec's marked build, which the PTX interpreter's session is not given; the f64 instructions of inlined math functions are demoted as instructions";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Demotion;

    /// `y[i] = (3 x[i] + 1) x[i] / scale` in f64, `scale` a module global (3.0).
    const PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64

.global .align 8 .f64 scale = 0d4008000000000000;

.visible .entry poly(
	.param .u32 poly_param_0,
	.param .u64 poly_param_1,
	.param .u64 poly_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;
	.reg .f64 	%fd<7>;

	ld.param.u32 	%r1, [poly_param_0];
	ld.param.u64 	%rd1, [poly_param_1];
	ld.param.u64 	%rd2, [poly_param_2];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.s32 	%rd4, %r5, 8;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f64 	%fd1, [%rd5];
	mul.f64 	%fd2, %fd1, 0d4008000000000000;
	add.f64 	%fd3, %fd2, 0d3FF0000000000000;
	mul.f64 	%fd4, %fd3, %fd1;
	ld.global.f64 	%fd5, [scale];
	div.rn.f64 	%fd6, %fd4, %fd5;
	cvta.to.global.u64 	%rd6, %rd2;
	add.s64 	%rd7, %rd6, %rd4;
	st.global.f64 	[%rd7], %fd6;
$L__BB0_2:
	ret;
}
"#;

    /// One launch over 64 elements, after a setup launch that the model does not cost.
    const SPEC: &str = r#"
name = "poly"
[source]
file = "poly.ptx"
front_end = "ptx"
[sizes]
n = 64
[buffers.x]
type = "f64"
len = "n"
init = { random = "uniform", min = 0.5, max = 1.0, seed = 3 }
[buffers.y]
type = "f64"
len = "n"
[[setup]]
launch = "poly"
grid = 2
block = 32
args = ["n", "x", "y"]
[[steps]]
launch = "poly"
grid = "n / 32"
block = 32
args = ["n", "x", "y"]
[[outputs]]
buffer = "y"
"#;

    fn session() -> InterpSession {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("poly.ptx"), PTX).unwrap();
        let spec = Spec::parse(SPEC, &dir.path().join("poly.toml")).unwrap();
        InterpSession::new(&spec, PTX.to_string()).unwrap_or_else(|e| panic!("{e}"))
    }

    const TIMED: TrialTiming = TrialTiming::Timed {
        warmup: 1,
        repeats: 3,
    };

    #[test]
    fn as_written_is_the_baseline_and_all_f32_differs_and_costs_less() {
        let mut s = session();
        assert_eq!(s.device_name(), "the PTX interpreter");
        assert_eq!(s.target_arch(), Some(Arch::new(8, 0)));
        let digits = |o: &TrialOutcome| o.outputs[0].vs_baseline.digits;
        let written = s.trial(&Configuration::AsWritten, TIMED).unwrap();
        assert_eq!(digits(&written), f64::INFINITY);
        assert_eq!(written.outputs[0].vs_baseline.differing, 0);
        let t64 = written.timing.clone().expect("timed");
        assert_eq!(t64.samples_ms.len(), 3);
        assert!(t64.samples_ms.iter().all(|&t| t == t64.median_ms));
        // 64 threads past the bounds check, 4 f64 operations each counted twice.
        assert!(t64.median_ms > 64.0 * 8.0 * MS_PER_INSTRUCTION, "{t64:?}");

        let all = Configuration::Demote(Demotion::all());
        let demoted = s.trial(&all, TIMED).unwrap();
        assert!(digits(&demoted) < 10.0, "{:?}", demoted.outputs);
        assert!(demoted.outputs[0].vs_baseline.differing > 0);
        assert!(!demoted.notes.is_empty(), "the rewrite's notes");
        let t32 = demoted.timing.expect("timed").median_ms;
        assert!(t32 < t64.median_ms, "{t32} against {}", t64.median_ms);
        let y = &s.outputs().unwrap()[0];
        assert_eq!(y.0, "y");

        let accuracy = s.trial(&all, TrialTiming::AccuracyOnly).unwrap();
        assert!(accuracy.timing.is_none());
        assert_eq!(accuracy.outputs, demoted.outputs, "deterministic");
    }

    #[test]
    fn kernel_times_cost_the_steps_alone() {
        let mut s = session();
        let times = s.kernel_times(&Configuration::AsWritten, 5).unwrap();
        assert_eq!(times.len(), 1);
        assert_eq!((times[0].kernel.as_str(), times[0].launches), ("poly", 1));
        assert_eq!(times[0].share, 1.0);
        let trial = s.trial(&Configuration::AsWritten, TIMED).unwrap();
        assert_eq!(times[0].median_ms, trial.timing.unwrap().median_ms);
    }

    #[test]
    fn a_variant_writes_its_symbols_and_reads_its_globals_back() {
        let mut s = session();
        let plain = s.make(Recipe::new("plain", Base::AsBuilt)).unwrap();
        assert_eq!(plain.ptx(), PTX, "the build's own text");
        let (o, _) = s.run_variant(&plain, TrialTiming::AccuracyOnly).unwrap();
        assert_eq!(o.outputs[0].vs_baseline.differing, 0);

        let six = 6.0f64.to_le_bytes().to_vec();
        let recipe = Recipe::new("scaled", Base::AsBuilt)
            .writing("scale", six.clone())
            .reading("scale");
        let scaled = s.make(recipe).unwrap();
        let (o, globals) = s.run_variant(&scaled, TrialTiming::AccuracyOnly).unwrap();
        assert_eq!(globals, vec![("scale".to_string(), six)]);
        let c = &o.outputs[0].vs_baseline;
        assert_eq!(c.differing, 64, "every element halved");
        assert_eq!(c.max_rel, 0.5, "{c:?}");
    }

    #[test]
    fn what_the_interpreter_cannot_do_is_refused() {
        let mut s = session();
        let kept = Demotion {
            buffers: vec!["x".into()],
            ..Demotion::all()
        };
        let e = s.trial(&Configuration::Demote(kept), TIMED).unwrap_err();
        assert!(matches!(e, TrialError::Refused(_)), "{e}");
        assert!(s.enable_switching(&Configuration::AsWritten).is_err());
        let e = s
            .base_module(&Base::Built(mantissa_gpu::FlagSet::FAST))
            .unwrap_err();
        assert!(!e.is_fatal(), "{e}");
        assert!(s.baseline_resources().unwrap().is_empty());
    }
}
