//! Accuracy-only trials on a switched build ([`mantissa_ptx::pass::switch`]): one module, made
//! and JIT-compiled once per runner for a *universe* of instructions, in which each switch
//! (one instruction, or a contractible `mul`→`add` group) runs as written or in f32 as a byte
//! of the module global `__mantissa_switch` says. A trial of a configuration the build can
//! represent is then the restore, a write of that global (a [`super::Program`]'s `writes`)
//! and the run: no rewrite, no JIT.
//!
//! What goes the static way instead, with a note saying why: timed trials (the switched
//! build's loads and selects cost time, so a timing would not be the configuration's), the
//! program as written, and configurations the build cannot represent — math calls replaced by
//! their f32 functions (a source-level change), an instruction outside the universe or refused
//! by the pass (a math-function unit, a `mul` that ptxas may fuse into several `add`s), or one
//! member of a contractible pair without the other.
//!
//! The switched build starts from the same PTX as the static rewrite of a configuration without
//! math calls (`build::base_ptx`), so that a mask computes what that rewrite computes.

use super::build::{base_ptx, replaced_math_lines};
use super::{load_error, loaded, TrialError, TrialRunner, TrialTiming};
use crate::config::{Configuration, Demotion};
use mantissa_ptx::pass::switch::SwitchReport;

/// Which build a trial ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildKind {
    /// The configuration's own module (the baseline build, or its static rewrite).
    Static,
    /// The runner's switched build with the configuration's mask written.
    Switched,
}

/// What [`TrialRunner::enable_switching`] built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSummary {
    /// The switch array's name in the module.
    pub global: String,
    /// Switches (bytes of the array).
    pub switches: usize,
    /// Instructions they switch (a contractible pair is two instructions, one switch).
    pub instructions: usize,
    /// Instructions of the universe that do not switch, as `site: reason`: configurations
    /// naming them run statically.
    pub refused: Vec<String>,
    /// Anything else: math calls left to static builds, requests naming nothing.
    pub notes: Vec<String>,
}

/// A trial on the switched build: the mask's symbol write and the trial's notes.
pub(super) struct SwitchedRun {
    pub(super) writes: Vec<(String, Vec<u8>)>,
    pub(super) notes: Vec<String>,
}

/// The runner's switched build.
pub(super) struct SwitchedBuild {
    pub(super) loaded: super::Loaded,
    report: SwitchReport,
}

impl TrialRunner<'_> {
    /// Builds the switched module for `universe` (every instruction the configurations to come
    /// may demote: for a full search, [`Demotion::all`]) once, JIT-compiles it through the JIT
    /// cache and keeps it loaded; from then on [`TrialRunner::trial`] runs every accuracy-only
    /// trial it can represent on it ([`super::TrialOutcome::build`]). Calling it again replaces
    /// the build.
    pub fn enable_switching(
        &mut self,
        universe: &Configuration,
    ) -> Result<SwitchSummary, TrialError> {
        let Configuration::Demote(demotion) = universe else {
            return Err(TrialError::Refused(
                "the program as written has nothing to switch: give a demotion (e.g. all)".into(),
            ));
        };
        // Math calls are a source-level change: the switched build keeps them all f64.
        let without_math = Demotion {
            math: Demotion::none().math,
            ..demotion.clone()
        };
        let (base, mut notes) = base_ptx(
            self.gpu,
            &self.spec,
            self.flags,
            &self.built,
            &without_math,
            &mut self.marked,
        )?;
        if !replaced_math_lines(
            self.gpu,
            &self.spec,
            self.flags,
            &self.built,
            demotion,
            &mut self.marked,
        )
        .is_empty()
        {
            notes.push(
                "math calls are not switched: configurations replacing them build statically"
                    .into(),
            );
        }
        let parsed = mantissa_ptx::parse(&base).module;
        let switched = crate::pipelines::switched(demotion.demote_set())
            .run(&parsed)
            .map_err(|e| TrialError::Refused(format!("switching: {}", e.message)))?;
        let Some(report) = switched.reports[0].details::<SwitchReport>().cloned() else {
            return Err(TrialError::Refused(
                "switching: no report (an internal error)".into(),
            ));
        };
        let ptx = switched.module.to_string();
        let module = self
            .gpu
            .load_jitted(&self.spec.name, &ptx)
            .map_err(|e| load_error(&e))?;
        let symbols = self.spec_symbols();
        let l = loaded(self.gpu, module, &symbols)?;
        let r = report;
        notes.extend(
            r.unmatched
                .iter()
                .map(|u| format!("{u}: names no f64 instruction of this build")),
        );
        let summary = SwitchSummary {
            global: r.global.clone(),
            switches: r.switches.len(),
            instructions: r.switches.iter().map(|s| s.members.len()).sum(),
            refused: r
                .refused
                .iter()
                .map(|x| format!("{}: {}", x.site, x.reason))
                .collect(),
            notes,
        };
        self.switched = Some(SwitchedBuild {
            loaded: l,
            report: r,
        });
        Ok(summary)
    }

    /// What the switched build switches (each switch's instructions and sites, and what was
    /// refused), once [`TrialRunner::enable_switching`] made it.
    pub fn switch_report(&self) -> Option<&SwitchReport> {
        self.switched.as_ref().map(|s| &s.report)
    }

    /// How `configuration` runs under `timing`: on the switched build with these symbol writes,
    /// or statically (`Err`) with the reason as a note (`None` when switching is not enabled or
    /// the configuration is the program as written).
    pub(super) fn switched_writes(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<SwitchedRun, Option<String>> {
        let Configuration::Demote(demotion) = configuration else {
            return Err(None);
        };
        if self.switched.is_none() {
            return Err(None);
        }
        if !demotion.buffers.is_empty() {
            return Err(Some(
                "static build: buffers kept in f32 change the memory layout, which the switched build does not"
                    .into(),
            ));
        }
        if timing != TrialTiming::AccuracyOnly {
            return Err(Some(
                "static build: timed trials do not run on the switched build (its switches cost time)"
                    .into(),
            ));
        }
        let lines = replaced_math_lines(
            self.gpu,
            &self.spec,
            self.flags,
            &self.built,
            demotion,
            &mut self.marked,
        );
        if !lines.is_empty() {
            return Err(Some(
                "static build: math calls in f32 are a source-level change the switched build cannot make"
                    .into(),
            ));
        }
        let Some(sw) = &self.switched else {
            return Err(None);
        };
        let mask = sw.report.mask(&demotion.demote_set()).map_err(|e| {
            Some(format!(
                "static build: not representable by the switched build: {e}"
            ))
        })?;
        let on = mask.iter().filter(|&&b| b != 0).count();
        let note = format!(
            "switched build: {on} of {} switches in f32 (no JIT)",
            sw.report.switches.len()
        );
        Ok(SwitchedRun {
            writes: vec![(sw.report.global.clone(), mask)],
            notes: vec![note],
        })
    }
}
