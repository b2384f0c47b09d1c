//! `mantissa tune`: wiring for [`mantissa_tune::flow::tune`] — read a kernel spec, parse the
//! thresholds, show progress on stderr, print the table in the shape of seed 002 Table 4 (or the
//! JSON document), with every trial kept in OUT/results.jsonl as it runs and the chosen
//! configurations saved in OUT/configs/. A shard (`--shard I/N`) runs its share of the searches
//! and leaves its document for `mantissa merge` ([`merge`]), which writes the report.

use crate::run::RunUsage;
use crate::spec_args::{gpus_for, parse_flags, parse_override};
use crate::stop::{self, Keeps};
use anyhow::anyhow;
use anyhow::bail;
use clap::Args;
use mantissa_gpu::{DeviceSelection, FlagSet};
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::Spec;
use mantissa_ptx::fiset::FisetOptions;
use mantissa_report::merge::shard_files;
use mantissa_report::store::manifest_file;
use mantissa_report::store::write_atomically;
use mantissa_report::Shard;
use mantissa_report::{Manifest, Record};
use mantissa_tune::flow::{tune_until, TuneEvent, TuneRequest, TuneRun};
use mantissa_tune::gpu::TimingPolicy;
use mantissa_tune::shard::{document_file, MERGED_FILE};
use mantissa_tune::ErrorThreshold;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The options of `mantissa tune` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct TuneArgs {
    /// The kernel spec (TOML; the format is in docs/SPEC.md); or, instead, an application after
    /// `--` (`mantissa tune -- APP ARGS`).
    #[arg(required_unless_present = "app")]
    pub(crate) spec: Option<PathBuf>,
    /// Error thresholds: correct digits of every output against the f64 program,
    /// comma-separated (1 to 15).
    #[arg(long, default_value = "3", value_name = "LIST", value_parser = parse_digits)]
    digits: Digits,
    /// Use the spec's own tolerance as an error threshold too (element-wise digits are 0
    /// wherever an output element is near zero; a tolerance can be normwise or absolute).
    #[arg(long)]
    pub(crate) tolerance: bool,
    /// Performance thresholds in % of the ideal speed-up (seed 002 Eq. 3), comma-separated
    /// (modes 2 and 3 and the baseline; 0 to 100).
    #[arg(long, default_value = "10", value_name = "LIST", value_parser = parse_speedups)]
    speedup: Speedups,
    /// Modes, comma-separated: 1 (FISets by error, first meeting the digits), 2 (by error,
    /// first meeting both thresholds), 3 (by arithmetic-to-cast ratio, first meeting both).
    #[arg(long, default_value = "1,2,3", value_name = "LIST", value_parser = parse_modes)]
    mode: Modes,
    /// Also run the delta-debugging baseline (Precimonious) over variables, for comparison.
    #[arg(long)]
    baseline: bool,
    /// Also search every subset of FISets (at most 16): the best configuration there is, to
    /// judge the modes by on small programs.
    #[arg(long)]
    exhaustive: bool,
    /// At most this many FISets (φ).
    #[arg(long, default_value_t = 200, value_name = "N")]
    max_fisets: usize,
    /// Timed runs of a configuration's first batch (more are added while a decision is inside
    /// the noise, up to --max-repeats). Default 10; 3 with an application (each is a run of it).
    #[arg(long, value_name = "N")]
    pub(crate) repeats: Option<u32>,
    /// At most this many timed runs per configuration; the f64 and all-f32 references get this
    /// many. Default 80; 10 with an application.
    #[arg(long, value_name = "N")]
    pub(crate) max_repeats: Option<u32>,
    /// The flag set to build the program with.
    #[arg(long, default_value = "default", value_parser = parse_flags)]
    pub(crate) flags: FlagSet,
    /// Replace a [sizes] entry, e.g. `--set n=4096` (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    pub(crate) set: Vec<SizeOverride>,
    /// Output directory: results.jsonl (every trial, as it runs) and configs/ (the chosen
    /// configurations: NAME.json for `mantissa run SPEC --demote`, NAME.txt per source line).
    #[arg(long, default_value = "mantissa-tune", value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Keep OUT/results.jsonl and run only the trials it lacks.
    #[arg(long)]
    pub(crate) resume: bool,
    /// Run only shard I of N (0 ≤ I < N) of the searches: search k (in the order the table
    /// lists them) is shard k mod N's. Trials go to OUT/results.shard-I-of-N.jsonl and the run
    /// to OUT/tune.shard-I-of-N.json; `mantissa merge OUT` joins them and writes the report.
    #[arg(long, value_name = "I/N")]
    pub(crate) shard: Option<Shard>,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// GPUs to run the searches' trials on: `all`, or ordinals like 0,2 (after
    /// CUDA_VISIBLE_DEVICES). Each GPU runs one trial at a time and times it against the f64
    /// and all-f32 programs timed on itself; searches run ahead the trials they may need next
    /// so that no GPU waits. The GPUs must be of one model.
    #[arg(long, value_name = "all|LIST", default_value = "all")]
    devices: DeviceSelection,
    /// With an application: a run still going after this long is killed with what it started.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) trial_timeout: Option<f64>,
    /// With an application: compare trials on a value it prints, NAME=REGEX (the last match,
    /// its first group; repeatable), instead of its copies to the host.
    #[arg(long, value_name = "NAME=REGEX")]
    pub(crate) output: Vec<String>,
    /// With an application: cost a run by a figure of merit it prints (REGEX: the last match,
    /// its first group) instead of its kernel time.
    #[arg(long, value_name = "REGEX")]
    pub(crate) fom: Option<String>,
    /// Whether the --fom figure is better when higher (a rate: zones per second) or lower.
    #[arg(long, value_name = "higher|lower", default_value = "higher", value_parser = ["higher", "lower"])]
    pub(crate) fom_better: String,
    /// An application to tune as it is, after `--`, instead of a spec: its module with the most
    /// launches is demoted at load time, each trial a run of it.
    #[arg(last = true, value_name = "APP ARGS")]
    pub(crate) app: Vec<std::ffi::OsString>,
}

#[derive(Clone)]
struct Digits(Vec<f64>);
#[derive(Clone)]
struct Speedups(Vec<f64>);
#[derive(Clone)]
struct Modes(Vec<u8>);

fn list<T: std::str::FromStr>(
    s: &str,
    what: &str,
    ok: impl Fn(&T) -> bool,
    range: &str,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let v: T = part
            .trim()
            .parse()
            .map_err(|_| format!("{what} `{}` is not a number ({range})", part.trim()))?;
        if !ok(&v) {
            return Err(format!(
                "{what} `{}` is out of range ({range})",
                part.trim()
            ));
        }
        out.push(v);
    }
    Ok(out)
}

fn parse_digits(s: &str) -> Result<Digits, String> {
    list(s, "digits", |d: &f64| (1.0..=15.0).contains(d), "1 to 15").map(Digits)
}

fn parse_speedups(s: &str) -> Result<Speedups, String> {
    list(
        s,
        "speed-up",
        |p: &f64| (0.0..=100.0).contains(p),
        "0 to 100 % of the ideal",
    )
    .map(Speedups)
}

/// The numbers `--mode` takes are those of the tune crate's strategy registry, so that a mode
/// added there is accepted here.
fn parse_modes(s: &str) -> Result<Modes, String> {
    let numbers = mantissa_tune::strategy::mode_numbers();
    list(s, "mode", |m: &u8| numbers.contains(m), &spoken(&numbers)).map(Modes)
}

/// `1, 2 or 3`.
fn spoken(numbers: &[u8]) -> String {
    let words: Vec<String> = numbers.iter().map(u8::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.concat(),
    }
}

/// The request `args` make, checked as far as it can be without a GPU (a shard that would have
/// no search is refused).
pub(crate) fn request(args: &TuneArgs) -> anyhow::Result<TuneRequest> {
    let app = !args.app.is_empty();
    let repeats = args.repeats.unwrap_or(if app { 3 } else { 10 });
    let max_repeats = args
        .max_repeats
        .unwrap_or(if app { 10 } else { 80 }.max(repeats));
    if repeats == 0 || max_repeats < repeats {
        return Err(RunUsage(format!(
            "--repeats {repeats} --max-repeats {max_repeats}: need 1 ≤ repeats ≤ max-repeats"
        ))
        .into());
    }
    let mut errors: Vec<ErrorThreshold> = args
        .digits
        .0
        .iter()
        .map(|&d| ErrorThreshold::Digits(d))
        .collect();
    if args.tolerance {
        errors.push(ErrorThreshold::SpecTolerance);
    }
    let request = TuneRequest {
        flags: args.flags,
        errors,
        speedups: args.speedup.0.clone(),
        modes: args.mode.0.clone(),
        baseline: args.baseline,
        exhaustive: args.exhaustive,
        fiset: FisetOptions {
            max_sets: args.max_fisets,
        },
        // An application's runs are processes of their own: a warm-up run warms nothing the
        // next one uses.
        policy: TimingPolicy {
            warmup: if app { 0 } else { 2 },
            repeats,
            max_repeats,
        },
        out: Some(args.out.clone()),
        resume: args.resume,
        shard: args.shard,
    };
    let searches = searches(&request);
    if let Some(shard) = args.shard.filter(|s| s.count() as usize > searches) {
        return Err(RunUsage(format!(
            "--shard {shard}: this run has {searches} searches, so some of {} shards would have none; give at most {searches} shards",
            shard.count()
        ))
        .into());
    }
    Ok(request)
}

/// How many searches (work units) `request`'s whole run has.
fn searches(request: &TuneRequest) -> usize {
    let whole = TuneRequest {
        shard: None,
        ..request.clone()
    };
    mantissa_tune::plan::plans(&whole).len()
}

/// What `mantissa slurm` needs of a tuning run's arguments, checked as `run` checks them
/// without a GPU: its searches (work units) and its output directory.
pub fn for_slurm(args: &TuneArgs) -> anyhow::Result<(usize, PathBuf)> {
    let Some(spec) = &args.spec else {
        return Err(RunUsage("mantissa slurm runs a spec's shards; an application is tuned in one run (mantissa tune -- APP)".into()).into());
    };
    Spec::load_with(spec, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let request = request(args)?;
    Ok((searches(&request), args.out.clone()))
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let Some(spec_path) = crate::app_args::spec_or_app(&args.spec, &args.app)? else {
        return crate::tune_app::run(args);
    };
    if let Some(option) = app_only(&args) {
        return Err(RunUsage(format!("{option} applies to an application (after `--`)")).into());
    }
    let spec = Spec::load_with(&spec_path, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let request = request(&args)?;
    let gpus = gpus_for("tune", &spec_path, &args.devices)?;
    let gpus: Vec<&mantissa_gpu::Gpu> = gpus.iter().collect();
    let quiet = args.json;
    if gpus.len() > 1 && !quiet {
        let list: Vec<String> = gpus.iter().map(|g| g.ordinal().to_string()).collect();
        eprintln!("trials on GPUs {}", list.join(","));
    }
    let stop = stop::install(Keeps::FinishesRunning("trial"));
    let result = tune_until(
        &gpus,
        &spec,
        &request,
        stop,
        &mut show_progress(&spec.name, "building and running", quiet),
    );
    finish(&args, result)
}

/// The options that only mean something with an application, when given with a spec.
fn app_only(args: &TuneArgs) -> Option<&'static str> {
    if args.trial_timeout.is_some() {
        Some("--trial-timeout")
    } else if !args.output.is_empty() {
        Some("--output")
    } else if args.fom.is_some() {
        Some("--fom")
    } else {
        None
    }
}

/// Progress on stderr (nothing when `quiet`): `doing` says what the baseline stage does.
pub(crate) fn show_progress<'a>(
    name: &'a str,
    doing: &'a str,
    quiet: bool,
) -> impl FnMut(TuneEvent) + 'a {
    move |event| {
        if quiet {
            return;
        }
        match event {
            TuneEvent::Baseline => eprintln!("{doing} {name} as written"),
            TuneEvent::Units {
                fisets,
                variables,
                buffers,
                math,
            } => eprintln!(
                "{fisets} FISets, {variables} variables, {math} math calls, {buffers} buffers that can be kept in f32"
            ),
            TuneEvent::Shadow => eprintln!("measuring the demotion error of every f64 instruction"),
            TuneEvent::References => eprintln!("timing the f64 and the all-f32 programs"),
            TuneEvent::Timed(r) => eprintln!(
                "f64 program {:.4} ms ±{:.4}, all-f32 program {:.4} ms ±{:.4} ({:.2}×)",
                r.t64.median_ms,
                r.t64.noise_ms,
                r.t32.median_ms,
                r.t32.noise_ms,
                r.t64.median_ms / r.t32.median_ms
            ),
            TuneEvent::Resumed(n) => eprintln!("resuming: {n} records already in the store"),
            TuneEvent::Search { label } => eprintln!("{label}"),
            TuneEvent::Trial {
                number,
                config,
                trial,
            } => {
                eprintln!(
                    "  trial {number}: {}",
                    mantissa_tune::text::trial_line(&config, &trial)
                )
            }
        }
    }
}

/// What a run leaves once it ended: a stopped run's resume line, a shard's document, or the
/// whole run's report.
pub(crate) fn finish(
    args: &TuneArgs,
    result: Result<TuneRun, mantissa_tune::flow::TuneError>,
) -> anyhow::Result<()> {
    // Stopped between trials: every trial finished is in the store, and --resume reads them.
    stop::exit_if_stopped(|signal| stopped(signal, &args.out, args.shard));
    let run = match result {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(RunUsage(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    if let Some(shard) = args.shard {
        // The merge writes the report page, from every shard's document.
        let doc = args.out.join(document_file(shard));
        write_document(&doc, &run)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&run)?);
        } else {
            print!("{}", mantissa_tune::text::render(&run));
            eprintln!(
                "shard {shard}: trials in {}, its searches in {}; when every shard is done, `mantissa merge {}` writes the whole report",
                args.out.join(mantissa_report::store::data_file::<mantissa_report::Record>(Some(shard))).display(),
                doc.display(),
                args.out.display()
            );
        }
        return Ok(());
    }
    report(&args.out, &run, args.json)
}

/// What a stopped run says: where its finished trials are and the command that goes on.
fn stopped(signal: stop::Signal, out: &Path, shard: Option<Shard>) -> String {
    format!(
        "stopped by {}: every finished trial is in {}. To finish: {}",
        signal.name(),
        out.join(mantissa_report::store::data_file::<Record>(shard))
            .display(),
        stop::resume_command(std::env::args())
    )
}

/// Writes `run` as JSON to `path`, whole or not at all.
fn write_document(path: &Path, run: &TuneRun) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(run)?;
    text.push('\n');
    write_atomically(path, text.as_bytes())?;
    Ok(())
}

/// What a whole run leaves: the report page in `out`, then the table (or the JSON document).
fn report(out: &Path, run: &TuneRun, json: bool) -> anyhow::Result<()> {
    let page = mantissa_tune::page::write(out, run)
        .map_err(|e| anyhow!("writing the report page in {}: {e}", out.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(run)?);
    } else {
        print!("{}", mantissa_tune::text::render(run));
        eprintln!(
            "trials kept in {}; report page {}",
            out.join("results.jsonl").display(),
            page.display()
        );
    }
    Ok(())
}

/// The documents of the tuning run's shards in `dirs` (each beside its shard's store) joined
/// into the whole run ([`mantissa_tune::shard::merge`]), before anything is written: a shard
/// whose document is missing (its run did not finish), or whose manifest differs from the
/// first's, is refused here in one line. (`mantissa merge` checks the stores themselves.)
pub fn merge_documents(dirs: &[PathBuf]) -> anyhow::Result<TuneRun> {
    let mut shards: Vec<(Shard, PathBuf, Option<Manifest>)> = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in dirs {
        for (shard, path) in shard_files::<Record>(dir)? {
            // The same directory given twice is one directory.
            if seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())) {
                let manifest = Manifest::read(&dir.join(manifest_file::<Record>(Some(shard))))?;
                shards.push((shard, path, manifest));
            }
        }
    }
    let mut runs = Vec::new();
    let mut settings = None;
    for (shard, path, manifest) in &shards {
        let doc = document_path(path, *shard);
        let Ok(text) = std::fs::read_to_string(&doc) else {
            bail!(
                "{} is missing: shard {shard}'s tuning run did not finish; run it again with --resume, then merge again",
                doc.display()
            );
        };
        let Some(manifest) = manifest else {
            bail!("{}: shard {shard}'s store has no manifest, so it cannot be checked against the other shards", path.display());
        };
        let (first_shard, first): &(Shard, Manifest) =
            settings.get_or_insert((*shard, manifest.clone()));
        if let Some((field, a, b)) = first.difference(manifest) {
            bail!("shards {first_shard} and {shard} differ in {field}: {a} vs {b}");
        }
        let run: TuneRun = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{}: not a tuning run's document: {e}", doc.display()))?;
        runs.push(run);
    }
    let Some((_, manifest)) = settings else {
        bail!("no tune shard stores in the directories given");
    };
    let plans = mantissa_tune::shard::plans_of_settings(&manifest.settings)?;
    Ok(mantissa_tune::shard::merge(runs, &plans)?)
}

/// What `mantissa merge` writes of a merged tuning run besides its store: OUT/tune.json, the
/// table and the report page.
pub fn write_merged(out: &Path, run: &TuneRun) -> anyhow::Result<()> {
    write_document(&out.join(MERGED_FILE), run)?;
    report(out, run, false)
}

/// The document beside the shard store file `store`.
fn document_path(store: &Path, shard: Shard) -> PathBuf {
    store
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(document_file(shard))
}
