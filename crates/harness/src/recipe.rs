//! Programs as recipes: every program an analysis runs besides the configurations of
//! [`crate::config`] is described by a [`Recipe`] and made by the trial runner
//! ([`crate::TrialRunner::make`]), so that no crate above this one parses PTX, runs a pass or
//! merges a runtime itself.
//!
//! A recipe is a **base** (the program as built, the same with ptxas's contractions pinned, the
//! program built under another flag set, or the PTX a precision configuration runs), a
//! **pipeline** of passes over it, an optional device **runtime** merged into the result and
//! partly inlined, the module **symbols written** after each restore (a table of device
//! addresses, say) and the module **globals read back** after the checked run. The runner
//! parses (and pins) each base once and keeps it; what a pass reports comes back with the made
//! program ([`Variant`]), so that an analysis decodes what it reads back with its pass's own
//! report.
//!
//! The named recipes are listed in [`crate::pipelines`], in one place.

use crate::config::Configuration;
use mantissa_gpu::runtime::RuntimeHeader;
use mantissa_gpu::FlagSet;
use mantissa_ptx::model::Module;
use mantissa_ptx::pass::pin_contraction::PinReport;
use mantissa_ptx::pass::{Pass, Pipeline, Report};
use std::fmt;

/// Where a recipe's program starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Base {
    /// The program as built under the runner's flag set.
    AsBuilt,
    /// As built, with ptxas's contraction decisions written into the PTX
    /// ([`crate::trial::pin`]): a rewrite of it computes the bits of the program as built.
    /// Without ptxas, nvdisasm or an `sm_` target it is the program as built, with a note.
    Pinned,
    /// The program built under another flag set, as written.
    Built(FlagSet),
    /// The PTX that a precision configuration runs (the program as built for
    /// [`Configuration::AsWritten`]).
    Configured(Configuration),
}

impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base::AsBuilt => f.write_str("as built"),
            Base::Pinned => f.write_str("as built, contraction pinned"),
            Base::Built(flags) => write!(f, "built with {}", flags.name()),
            Base::Configured(c) => write!(f, "configuration {}", c.name()),
        }
    }
}

/// A base as the runner keeps it: parsed once, with what pinning did.
#[derive(Debug, Clone)]
pub struct BaseModule {
    /// The module.
    pub module: Module,
    /// What pinning pinned, for [`Base::Pinned`] when it was possible.
    pub pinning: Option<PinReport>,
    /// Why it is not what was asked for (`contraction not pinned: no nvdisasm found`), or what
    /// making it did (a configuration's notes).
    pub notes: Vec<String>,
    /// The PTX text the module was parsed from, when the module is that text unchanged: a
    /// recipe that changes nothing loads the build's own text, not a reprint of it.
    pub(crate) text: Option<String>,
}

/// A device runtime merged into a rewritten module: its CUDA header (compiled for the
/// program's target once per runner) and the runtime functions inlined into the kernels that
/// call them (the rest stay calls).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// The header (`mantissa_gpu::runtime::SHADOW`).
    pub header: &'static RuntimeHeader,
    /// Functions of the runtime to inline where they are called.
    pub inline: Vec<String>,
}

/// What to run (see the module docs).
pub struct Recipe {
    /// The recipe's name in notes and errors (`shadow`, `causes`).
    pub name: String,
    /// Where it starts.
    pub base: Base,
    /// The passes, in order.
    pub pipeline: Pipeline,
    /// The runtime merged after the passes.
    pub runtime: Option<Runtime>,
    /// Module symbols written after every restore, before the setup steps: (PTX name, bytes).
    pub writes: Vec<(String, Vec<u8>)>,
    /// Module globals read back after the checked run, before any repeat.
    pub read_back: Vec<String>,
}

impl Recipe {
    /// `base` as it is: no pass, no runtime, nothing written or read.
    pub fn new(name: &str, base: Base) -> Recipe {
        Recipe {
            name: name.to_string(),
            base,
            pipeline: Pipeline::new(),
            runtime: None,
            writes: Vec::new(),
            read_back: Vec::new(),
        }
    }

    /// This recipe with `pass` appended to its pipeline.
    pub fn then(mut self, pass: impl Pass + 'static) -> Recipe {
        self.pipeline = self.pipeline.then(pass);
        self
    }

    /// This recipe with its pipeline replaced by `pipeline`.
    pub fn with_pipeline(mut self, pipeline: Pipeline) -> Recipe {
        self.pipeline = pipeline;
        self
    }

    /// This recipe with `runtime` merged after its passes.
    pub fn with_runtime(mut self, header: &'static RuntimeHeader, inline: &[&str]) -> Recipe {
        self.runtime = Some(Runtime {
            header,
            inline: inline.iter().map(|s| s.to_string()).collect(),
        });
        self
    }

    /// This recipe writing `bytes` into the module symbol `name` after every restore.
    pub fn writing(mut self, name: &str, bytes: Vec<u8>) -> Recipe {
        self.writes.push((name.to_string(), bytes));
        self
    }

    /// This recipe reading the module global `name` back after its checked run.
    pub fn reading(mut self, name: &str) -> Recipe {
        self.read_back.push(name.to_string());
        self
    }
}

impl fmt::Debug for Recipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Recipe {
    /// `shadow: as built, contraction pinned → shadow + mantissa_shadow.cuh`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.name, self.base, self.pipeline)?;
        if let Some(r) = &self.runtime {
            write!(f, " + {}", r.header.name)?;
        }
        Ok(())
    }
}

/// A recipe made: the PTX the runner loads, what each pass did, and what its trials write and
/// read back.
#[derive(Debug)]
pub struct Variant {
    pub(crate) ptx: String,
    /// The recipe's name.
    pub name: String,
    /// One report per pass, in pipeline order.
    pub reports: Vec<Report>,
    /// What making the base did (pinning not possible, a configuration's rewrite notes).
    pub notes: Vec<String>,
    /// The module after the passes, before the runtime was merged (what sites and kernels
    /// name).
    pub module: Module,
    pub(crate) writes: Vec<(String, Vec<u8>)>,
    pub(crate) read_back: Vec<String>,
}

impl Variant {
    /// The PTX text the runner loads (to save beside a build, or to compare).
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// The first pass report whose details are a `T` (`variant.report::<ShadowReport>()`).
    pub fn report<T: 'static>(&self) -> Option<&T> {
        self.reports.iter().find_map(|r| r.details::<T>())
    }

    /// The symbols its trials write after every restore.
    pub fn writes(&self) -> &[(String, Vec<u8>)] {
        &self.writes
    }

    /// This variant writing `bytes` into `name` after every restore as well (a table of
    /// addresses only known once the runner exists).
    pub fn writing(mut self, name: &str, bytes: Vec<u8>) -> Variant {
        self.writes.push((name.to_string(), bytes));
        self
    }
}
