//! `mantissa slurm`: wiring for [`mantissa_slurm`] — parse the options and the command after
//! `--` (with `study`'s, `mathlib`'s and `tune`'s own parsers, so a typo fails here and not on
//! the cluster), let the command's crate estimate its shards, write the scripts and say what was
//! written and how to submit it. Nothing is submitted.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use mantissa_slurm::limits::{parse_mem, parse_time};
use mantissa_slurm::{Estimate, GpuUse, Job, JobSpec, SlurmError, Usage};
use mantissa_study::runner::full_device_of;
use mantissa_study::study::Plan;

use crate::mathlib::MathlibArgs;
use crate::study::StudyArgs;
use crate::tune::TuneArgs;

/// Multiprocessors of the device a study's GPU points are planned for when estimating (an
/// H100's 132): the nodes' GPU is not at hand where `mantissa slurm` runs, and the plan's
/// launch grids, not its point count, depend on it.
const PLANNING_SMS: u32 = 132;

/// The options of `mantissa slurm` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct SlurmArgs {
    /// Shards: tasks of the job array, each running `--shard I/N` of the command.
    #[arg(long, value_name = "N")]
    shards: u32,
    /// GPUs per shard [default: 1 when the command uses a GPU (study without --backend cpu,
    /// mathlib without --cpu-only, tune), else 0].
    #[arg(long, value_name = "G")]
    gpus: Option<u32>,
    /// Slurm partition of every job.
    #[arg(long, value_name = "P")]
    partition: Option<String>,
    /// Slurm account of every job.
    #[arg(long, value_name = "A")]
    account: Option<String>,
    /// Time limit per shard [default: estimated from the work, ×2 + 10 minutes; required for
    /// tune, whose time cannot be estimated].
    #[arg(long, value_name = "D-HH:MM:SS")]
    time: Option<String>,
    /// Memory per shard, like 4G or 1500M [default: estimated from the work; 4G for tune].
    #[arg(long, value_name = "SIZE")]
    mem: Option<String>,
    /// Where the scripts and logs/ go [default: the command's --out].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The mantissa binary the jobs run, as the nodes see it [default: this one].
    #[arg(long, value_name = "PATH")]
    mantissa: Option<PathBuf>,
    /// The command and its arguments, after `--`: `study …`, `mathlib …` or `tune …`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The command after `--`, parsed as `mantissa COMMAND …` would parse it.
#[derive(Parser)]
#[command(name = "mantissa")]
struct ShardedCli {
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    #[command(subcommand)]
    command: ShardedCommand,
}

#[derive(Subcommand)]
enum ShardedCommand {
    Study(StudyArgs),
    Mathlib(MathlibArgs),
    Tune(TuneArgs),
}

fn usage(msg: String) -> anyhow::Error {
    Usage(msg).into()
}

/// Writes the scripts for `args`; `threads` is the global `--threads` given before `slurm`.
pub fn run(args: SlurmArgs, threads: Option<usize>) -> anyhow::Result<()> {
    let (name, rest) = args
        .command
        .split_first()
        .ok_or_else(|| usage("mantissa slurm: give the command after --".into()))?;
    let command = mantissa_slurm::Sharded::parse(name)?;
    mantissa_slurm::words::check(command, rest)?;
    let parsed = ShardedCli::try_parse_from(
        std::iter::once("mantissa").chain(args.command.iter().map(String::as_str)),
    )
    .map_err(|e| {
        let text = e.render().to_string();
        let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        usage(format!(
            "mantissa slurm: the {name} arguments: {}",
            line.trim_start_matches("error: ")
        ))
    })?;
    let time = args
        .time
        .as_deref()
        .map(parse_time)
        .transpose()
        .map_err(|e| usage(format!("mantissa slurm: {e}")))?;
    let mem = args
        .mem
        .as_deref()
        .map(parse_mem)
        .transpose()
        .map_err(|e| usage(format!("mantissa slurm: {e}")))?;
    let given_threads = parsed.threads.map(u32::from).or(threads.map(|t| t as u32));
    let mut spec = JobSpec {
        command,
        args: rest.to_vec(),
        out: PathBuf::new(),
        gpu: GpuUse::Never,
        threads: given_threads,
        shards: args.shards,
        gpus: args.gpus,
        partition: args.partition,
        account: args.account,
        time,
        mem,
        dir: args.dir,
        mantissa: args.mantissa,
    };
    let cpus = spec.cpus().0 as usize;
    let estimate = match &parsed.command {
        ShardedCommand::Study(study) => {
            let (cfg, out, gpu) = crate::study::for_slurm(study, cpus)?;
            (spec.out, spec.gpu) = (out, gpu);
            let mut plans = vec![Plan::cpu(&cfg)];
            if spec.gpus()?.0 > 0 && gpu != GpuUse::Never {
                // GPU units are numbered after the CPU ones, as the study numbers them.
                let first_unit = plans[0].points.len() as u64;
                plans.push(Plan::gpu(&cfg, full_device_of(PLANNING_SMS), first_unit));
            }
            let refs: Vec<&Plan> = plans.iter().collect();
            let mut e = Estimate::study(&refs, cfg.suite, args.shards.max(1));
            if plans.len() > 1 {
                e.model += &format!(
                    "; GPU points planned for a {PLANNING_SMS}-SM device, their host work only"
                );
            }
            e
        }
        ShardedCommand::Mathlib(mathlib) => {
            let (plan, out, gpu) = crate::mathlib::for_slurm(mathlib)?;
            (spec.out, spec.gpu) = (out, gpu);
            let with_gpu = spec.gpus()?.0 > 0 && gpu != GpuUse::Never;
            Estimate::mathlib(&plan, with_gpu, args.shards.max(1))
        }
        ShardedCommand::Tune(tune) => {
            let (searches, out) = crate::tune::for_slurm(tune)?;
            (spec.out, spec.gpu) = (out, GpuUse::Required);
            Estimate::tune(searches, args.shards.max(1))
        }
    };
    let job = Job::new(&spec, &estimate)?;
    let written = job.write().map_err(|e| match e {
        SlurmError::Usage(u) => anyhow::Error::from(u),
        other => other.into(),
    })?;
    print!("{}", job.summary(&estimate, &written));
    Ok(())
}
