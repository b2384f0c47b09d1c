//! An application as a session of trials: the program run as it is once (the baseline), then
//! once per trial with every module that carries PTX replaced at load time by a pipeline's
//! rewrite of it (JIT-compiled by the driver), each run in a fresh process under the attach
//! library. What a trial is compared on is what the application copied back to the host: the
//! copies of one range of one allocation form a group, and the group's last copy is compared
//! with the baseline's, typed as [`super::trace`] types the buffers. Cost is the application's
//! kernel time, as the library measures it (CUDA events around every launch).
//!
//! This is the application side of a session: the spec side is [`crate::TrialRunner`] behind
//! [`crate::Session`]. Modules without PTX run as they are (and are named in
//! [`AppSession::modules`]); a rewrite the driver refuses, a crash, a hang past the timeout or
//! a non-zero exit is that trial's result, never the session's end.
//!
//! Never: a change to the application's files, or a trial directory reused.

pub use super::analysed::Figure;
use super::events::Event;
use super::trace::program::{self, Op, Program};
use super::trace::{module_ptx, types, ModuleFacts, TraceError};
use super::{AppError, AppRequest, AppRun, Attach, Exit};
use crate::compare::{compare, output_values, Comparison};
use mantissa_gpu::DType;
use mantissa_ptx::pass::{Pipeline, Report};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The application could not be run.
    #[error(transparent)]
    App(#[from] AppError),
    /// Its run could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The baseline did not end well: nothing to compare with.
    #[error("the application as it is ended with {exit}: a baseline must exit with status 0 (its output is in {dir})")]
    Baseline {
        /// How it ended.
        exit: Exit,
        /// Its directory.
        dir: String,
    },
    /// An output or figure of merit the baseline did not print.
    #[error("the application as it is printed nothing that --output/--fom `{0}` matches")]
    NotPrinted(String),
    /// A configuration could not be made for the application's module.
    #[error("{0}")]
    Refused(String),
    /// A file could not be written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// A module the application loaded.
#[derive(Debug)]
pub struct AppModule {
    /// Its key (`mantissa_fatbin::module_key`).
    pub key: String,
    /// Its PTX, parsed; `None` when it has none the device can use.
    pub ptx: Option<mantissa_ptx::Module>,
    /// Its PTX text, as the driver would JIT it.
    pub text: Option<String>,
    /// Why it has no PTX.
    pub why_not: Option<String>,
}

/// One trial: the run, and what the pipeline did to each module.
#[derive(Debug)]
pub struct AppTrial {
    /// The trial's name.
    pub name: String,
    /// The run.
    pub run: AppRun,
    /// Per module replaced: its key and the pipeline's reports.
    pub reports: Vec<(String, Vec<Report>)>,
    /// Modules the pipeline could not rewrite (left as they are), with why.
    pub not_rewritten: Vec<(String, String)>,
    /// Replacements the driver refused: module key, CUresult and its JIT log.
    pub refused: Vec<(String, i64, String)>,
    /// What making the replacement did (a configuration's demotion counts).
    pub notes: Vec<String>,
}

/// The replacements the driver refused in `run`: module key, CUresult and its JIT log.
pub(super) fn refused_loads(run: &AppRun) -> Vec<(String, i64, String)> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::Load {
                module: Some(k),
                replaced: true,
                error: Some(code),
                jit_log,
                ..
            } => Some((k.clone(), *code, jit_log.clone().unwrap_or_default())),
            _ => None,
        })
        .collect()
}

/// A group of copies to the host (one range of one allocation) compared.
#[derive(Debug, Clone)]
pub struct CopyGroup {
    /// How outputs name it: `buf3[0..8]`, or a variable's name (`coef[0..8]`).
    pub name: String,
    /// The allocation's number in the run, and the range's byte offset and size.
    pub buffer: usize,
    /// Bytes into it.
    pub offset: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// The element type it is read as.
    pub dtype: DType,
    /// Copies in the baseline and in the trial.
    pub copies: (usize, usize),
    /// The last copies compared; `None` when the trial made none of this group.
    pub last: Option<Comparison>,
}

/// A trial against the baseline.
#[derive(Debug, Clone)]
pub struct AppComparison {
    /// Every group of the baseline, in the order of their first copy.
    pub groups: Vec<CopyGroup>,
    /// Where the sequence of copies first differs (a different group or size at copy N), if it
    /// does.
    pub diverged: Option<String>,
    /// Kernel time in ms (the sum over kernels), baseline and trial, when measured.
    pub kernel_ms: (Option<f64>, Option<f64>),
}

/// The application, its baseline, and its trials.
pub struct AppSession {
    attach: Attach,
    command: Vec<OsString>,
    work: PathBuf,
    timeout: Option<Duration>,
    /// The run as it is.
    pub baseline: AppRun,
    pub(super) modules: Vec<AppModule>,
    program: Program,
    types: Vec<DType>,
    trials: usize,
    /// What the analyses ([`crate::Session`]) keep: see `analysed.rs`.
    pub(super) analysed: super::analysed::Analysed,
}

const RECORD: [&str; 4] = ["launches", "copies", "dtoh_data", "time"];

fn read_program(run: &AppRun, modules: &[AppModule]) -> Result<(Program, Vec<DType>), TraceError> {
    let mut facts = ModuleFacts::default();
    for m in modules {
        if let Some(parsed) = &m.ptx {
            facts.extend(ModuleFacts::of(&m.key, parsed));
        }
    }
    let data = |file: &str| {
        std::fs::read(run.dir.join(file)).map_err(|e| TraceError::File {
            path: run.dir.join(file).display().to_string(),
            message: e.to_string(),
        })
    };
    let p = program::read(&run.events, false, &facts.signatures, &data)?;
    let t = types::buffer_types(&p, &facts);
    Ok((p, t))
}

impl AppSession {
    /// Runs `command` as it is under `attach` (the baseline), in `work/baseline`; `arch` picks
    /// each module's PTX as the driver would for the device.
    pub fn start(
        attach: Attach,
        command: Vec<OsString>,
        work: &Path,
        timeout: Option<Duration>,
        arch: u32,
    ) -> Result<AppSession, SessionError> {
        let baseline = attach.run(&AppRequest {
            command: command.clone(),
            dir: work.join("baseline"),
            record: RECORD.map(String::from).to_vec(),
            replace: None,
            timeout,
        })?;
        if baseline.exit != Exit::Code(0) {
            return Err(SessionError::Baseline {
                exit: baseline.exit,
                dir: baseline.dir.display().to_string(),
            });
        }
        let mut keys: Vec<String> = Vec::new();
        for e in &baseline.events {
            if let Event::Load {
                module: Some(k), ..
            } = e
            {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        let modules = keys
            .into_iter()
            .map(|key| match module_ptx(&baseline.dir, &key, arch) {
                Ok(ptx) => AppModule {
                    key,
                    ptx: Some(mantissa_ptx::parse::parse(&ptx).module),
                    text: Some(ptx),
                    why_not: None,
                },
                Err(e) => AppModule {
                    key,
                    ptx: None,
                    text: None,
                    why_not: Some(e.to_string()),
                },
            })
            .collect::<Vec<_>>();
        let (program, types) = read_program(&baseline, &modules)?;
        let analysed = super::analysed::Analysed::new(&program, &modules);
        let mut session = AppSession {
            attach,
            command,
            work: work.to_path_buf(),
            timeout,
            baseline,
            modules,
            program,
            types,
            trials: 0,
            analysed,
        };
        session.analysed.outcome = session.outcome_of(&session.baseline)?;
        Ok(session)
    }

    /// The modules the application loaded, in load order.
    pub fn modules(&self) -> &[AppModule] {
        &self.modules
    }

    /// A fresh trial directory (`work/trial-N`).
    pub(super) fn next_trial_dir(&mut self) -> PathBuf {
        self.trials += 1;
        self.work.join(format!("trial-{}", self.trials))
    }

    /// Runs the application once more, in `dir/run`, with the replacements of `replace` (none:
    /// as it is).
    pub(super) fn run_with(
        &self,
        dir: &Path,
        replace: Option<PathBuf>,
    ) -> Result<AppRun, SessionError> {
        Ok(self.attach.run(&AppRequest {
            command: self.command.clone(),
            dir: dir.join("run"),
            record: RECORD.map(String::from).to_vec(),
            replace,
            timeout: self.timeout,
        })?)
    }

    /// Runs the application with every module that has PTX replaced by `pipeline`'s rewrite of
    /// it (a module the pipeline fails on stays as it is, and is named).
    pub fn run_pipeline(
        &mut self,
        name: &str,
        pipeline: &Pipeline,
    ) -> Result<AppTrial, SessionError> {
        let dir = self.next_trial_dir();
        let replace = dir.join("replace");
        let fail = |path: &Path, e: mantissa_files::WriteError| SessionError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        mantissa_files::ensure_dir(&replace).map_err(|e| fail(&replace, e))?;
        let mut reports = Vec::new();
        let mut not_rewritten = Vec::new();
        for m in &self.modules {
            let Some(parsed) = &m.ptx else { continue };
            match pipeline.run(parsed) {
                Ok(run) => {
                    let path = replace.join(format!("{}.ptx", m.key));
                    mantissa_files::write_file(&path, run.module.to_string().as_bytes())
                        .map_err(|e| fail(&path, e))?;
                    reports.push((m.key.clone(), run.reports));
                }
                Err(e) => not_rewritten.push((m.key.clone(), e.to_string())),
            }
        }
        let run = self.run_with(&dir, Some(replace))?;
        Ok(AppTrial {
            name: name.to_string(),
            refused: refused_loads(&run),
            run,
            reports,
            not_rewritten,
            notes: Vec::new(),
        })
    }

    /// `trial` against the baseline (see the module docs).
    pub fn compare(&self, trial: &AppRun) -> Result<AppComparison, SessionError> {
        let (theirs, _) = read_program(trial, &self.modules)?;
        let base = downloads(&self.program);
        let other = downloads(&theirs);
        let diverged = base
            .iter()
            .zip(&other)
            .position(|(a, b)| a.0 != b.0)
            .map(|i| {
                format!(
                    "copy {i} to the host: the baseline read {:?}, the trial {:?}",
                    base[i].0, other[i].0
                )
            })
            .or_else(|| {
                (base.len() != other.len()).then(|| {
                    format!(
                        "the baseline copied {} times to the host, the trial {}",
                        base.len(),
                        other.len()
                    )
                })
            });
        let mut order: Vec<(usize, u64, u64)> = Vec::new();
        let mut last_base: HashMap<(usize, u64, u64), (usize, &Vec<u8>)> = HashMap::new();
        let mut last_other: HashMap<(usize, u64, u64), (usize, &Vec<u8>)> = HashMap::new();
        for (key, data) in &base {
            if !order.contains(key) {
                order.push(*key);
            }
            let e = last_base.entry(*key).or_insert((0, data));
            *e = (e.0 + 1, data);
        }
        for (key, data) in &other {
            let e = last_other.entry(*key).or_insert((0, data));
            *e = (e.0 + 1, data);
        }
        let groups = order
            .into_iter()
            .map(|key| {
                let dtype = self.types.get(key.0).copied().unwrap_or(DType::U8);
                let (n, a) = last_base[&key];
                let theirs = last_other.get(&key);
                CopyGroup {
                    name: self.program.allocs[key.0].place(key.0, key.1, key.2),
                    buffer: key.0,
                    offset: key.1,
                    bytes: key.2,
                    dtype,
                    copies: (n, theirs.map_or(0, |t| t.0)),
                    last: theirs.and_then(|(_, b)| compare_bytes(dtype, b, a)),
                }
            })
            .collect();
        Ok(AppComparison {
            groups,
            diverged,
            kernel_ms: (kernel_ms(&self.baseline), kernel_ms(trial)),
        })
    }
}

/// The copies to the host with data, in order: (allocation, offset, bytes) and the bytes.
fn downloads(p: &Program) -> Vec<((usize, u64, u64), &Vec<u8>)> {
    p.ops
        .iter()
        .filter_map(|op| match op {
            Op::Download {
                from,
                bytes,
                data: Some(d),
                ..
            } => Some(((from.buf, from.offset, *bytes), d)),
            _ => None,
        })
        .collect()
}

impl AppSession {
    /// `run`'s last copy of each of the baseline's groups, read as its type, named as outputs
    /// are (`buf3[0..8]`, `coef[0..8]`); a group `run` did not copy is left out.
    pub fn last_copies(
        &self,
        run: &AppRun,
    ) -> Result<Vec<(String, mantissa_gpu::HostData)>, SessionError> {
        let c = self.compare(run)?;
        let (theirs, _) = read_program(run, &self.modules)?;
        let copies = downloads(&theirs);
        let mut out = Vec::new();
        for g in &c.groups {
            let last = copies
                .iter()
                .rev()
                .find(|(k, _)| *k == (g.buffer, g.offset, g.bytes))
                .map(|(_, d)| d);
            if let Some(data) = last.and_then(|d| crate::npy::host_data_le(g.dtype, d)) {
                out.push((g.name.clone(), data));
            }
        }
        Ok(out)
    }
}

/// Two copies' bytes compared as `dtype` (`values` against `reference`).
fn compare_bytes(dtype: DType, values: &[u8], reference: &[u8]) -> Option<Comparison> {
    let as_values =
        |b: &[u8]| crate::npy::host_data_le(dtype, b).map(|d| output_values(&d, None, None));
    let (v, r) = (as_values(values)?, as_values(reference)?);
    (v.len() == r.len()).then(|| compare(dtype, &v, &r))
}

/// The run's kernel time: the last total of each kernel, summed.
pub(super) fn kernel_ms(run: &AppRun) -> Option<f64> {
    let mut last: BTreeMap<(Option<String>, Option<String>), f64> = BTreeMap::new();
    for e in &run.events {
        if let Event::KernelTime {
            module, kernel, ms, ..
        } = e
        {
            last.insert((module.clone(), kernel.clone()), *ms);
        }
    }
    (!last.is_empty()).then(|| last.values().sum())
}

/// A value the application prints, named: `--output NAME=REGEX`.
#[derive(Debug, Clone)]
pub struct PrintedOutput {
    /// The name.
    pub name: String,
    pattern: regex::Regex,
}

impl PrintedOutput {
    /// `NAME=REGEX`: the name, and the pattern compiled; one line when it is wrong.
    pub fn parse(arg: &str) -> Result<PrintedOutput, String> {
        let (name, pattern) = arg
            .split_once('=')
            .filter(|(n, p)| !n.trim().is_empty() && !p.is_empty())
            .ok_or_else(|| {
                format!("--output {arg}: give NAME=REGEX (say energy='energy ([-+0-9.eE]+)')")
            })?;
        let pattern = regex::Regex::new(pattern).map_err(|e| {
            format!(
                "--output {arg}: {}",
                e.to_string().lines().last().unwrap_or("not a pattern")
            )
        })?;
        Ok(PrintedOutput {
            name: name.trim().to_string(),
            pattern,
        })
    }

    /// The value in what `run` wrote to its standard output: the last match, its first capture
    /// group when it has one (else the whole match), read as a number; `None` when nothing
    /// matches or the text is no number.
    pub fn value(&self, run: &AppRun) -> Option<f64> {
        let out = run.stdout();
        let m = self.pattern.captures_iter(&out).last()?;
        let text = m.get(1).or_else(|| m.get(0))?.as_str();
        text.trim().parse().ok()
    }
}

#[cfg(test)]
mod printed_tests {
    use super::*;

    #[test]
    fn the_last_match_s_group_is_the_value_and_bad_patterns_are_one_line() {
        let energy = PrintedOutput::parse("energy=energy ([-+0-9.eE]+)").unwrap();
        assert_eq!(energy.name, "energy");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("stdout.txt"),
            "energy 1.5\nsteps 3\nenergy 57.547427395525588\n",
        )
        .unwrap();
        let run = AppRun {
            dir: dir.path().to_path_buf(),
            exit: Exit::Code(0),
            wall: Duration::ZERO,
            events: Vec::new(),
        };
        assert_eq!(energy.value(&run), Some(57.547427395525588));
        let none = PrintedOutput::parse("x=nothing here").unwrap();
        assert_eq!(none.value(&run), None);
        assert!(PrintedOutput::parse("energy")
            .unwrap_err()
            .contains("NAME=REGEX"));
        assert!(PrintedOutput::parse("e=(unclosed")
            .unwrap_err()
            .starts_with("--output e=(unclosed: "));
    }
}
