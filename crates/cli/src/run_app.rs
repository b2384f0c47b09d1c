//! `mantissa run [--demote all|none] -- APP ARGS`: an application run as it is, then once per
//! configuration with its modules replaced at load time ([`mantissa_harness::app::session`]),
//! compared on what it copied back to the host, timed by its kernel time.

use crate::run::{digits, RunArgs, RunUsage};
use crate::table::{markdown, num};
use anyhow::anyhow;
use mantissa_harness::app::session::{AppComparison, AppTrial, PrintedOutput};
use mantissa_harness::app::AppRun;
use mantissa_harness::app::Exit;
use mantissa_harness::pipelines;
use mantissa_harness::Configuration;
use mantissa_ptx::pass::demote::DemoteSet;
use mantissa_ptx::pass::Pipeline;

/// The options that only mean something with a spec, when given with an application.
fn spec_only(args: &RunArgs) -> Option<&'static str> {
    if args.check {
        Some("--check")
    } else if args.write_config.is_some() {
        Some("--write-config")
    } else if args.save.is_some() {
        Some("--save")
    } else if !args.set.is_empty() {
        Some("--set")
    } else if args.flags.0.len() > 1 {
        Some("--flags")
    } else {
        None
    }
}

/// What a `--demote` value does to an application.
enum Demote {
    /// A pipeline over every module with PTX: `all` demotes every f64 instruction, `none`
    /// replaces each module by its own PTX printed back (which must give the same bits).
    Everywhere(Pipeline),
    /// A configuration file (as `mantissa tune -- APP` saves them): its sites name the target
    /// module's instructions.
    Target(Configuration),
}

fn demote_of(value: &str) -> Result<Demote, RunUsage> {
    match value.trim() {
        "all" => Ok(Demote::Everywhere(pipelines::demotion(DemoteSet::all()))),
        "none" => Ok(Demote::Everywhere(Pipeline::new())),
        file => Configuration::parse(file)
            .map(Demote::Target)
            .map_err(|e| RunUsage(format!("--demote {file}: {e}"))),
    }
}

fn exit_text(trial: &AppTrial) -> Option<String> {
    match trial.run.exit {
        Exit::Code(0) => None,
        e => Some(e.to_string()),
    }
}

fn rows(name: &str, c: &AppComparison, base_ms: Option<f64>) -> Vec<Vec<String>> {
    let speed = match (base_ms, c.kernel_ms.1) {
        (Some(b), Some(t)) if t > 0.0 => format!("{:.2}x", b / t),
        _ => "-".into(),
    };
    c.groups
        .iter()
        .map(|g| {
            let range = format!(
                "buf{}[{}..{}] {}",
                g.buffer,
                g.offset,
                g.offset + g.bytes,
                g.dtype
            );
            let (d, rel, diff) = match &g.last {
                Some(cmp) => (
                    digits(cmp.digits),
                    num(cmp.max_rel),
                    cmp.differing.to_string(),
                ),
                None => ("-".into(), "-".into(), "not copied".into()),
            };
            vec![
                name.to_string(),
                range,
                format!("{}/{}", g.copies.0, g.copies.1),
                d,
                rel,
                diff,
                c.kernel_ms.1.map_or("-".into(), num),
                speed.clone(),
            ]
        })
        .collect()
}

/// One row per `--output`: the value the trial printed against the baseline's.
fn printed_rows(
    name: &str,
    outputs: &[PrintedOutput],
    base: &AppRun,
    trial: &AppRun,
) -> Vec<Vec<String>> {
    outputs
        .iter()
        .map(|o| {
            let (d, rel, diff) = match (o.value(base), o.value(trial)) {
                (Some(b), Some(t)) => {
                    let c =
                        mantissa_harness::compare::compare(mantissa_gpu::DType::F64, &[t], &[b]);
                    (digits(c.digits), num(c.max_rel), c.differing.to_string())
                }
                (None, _) => ("-".into(), "-".into(), "not printed by the baseline".into()),
                (_, None) => ("-".into(), "-".into(), "not printed".into()),
            };
            vec![
                name.to_string(),
                format!("printed {}", o.name),
                "-".into(),
                d,
                rel,
                diff,
                "-".into(),
                "-".into(),
            ]
        })
        .collect()
}

/// One configuration's trial as JSON: each group of copies and each printed output against
/// the baseline's, with the comparison's numbers in full.
fn json_of(
    name: &str,
    c: &AppComparison,
    outputs: &[PrintedOutput],
    base: &AppRun,
    trial: &AppTrial,
) -> serde_json::Value {
    let number = |x: f64| x.is_finite().then_some(x);
    let compared = |cmp: &mantissa_harness::Comparison| {
        serde_json::json!({
            "digits": number(cmp.digits),
            "max_rel": number(cmp.max_rel),
            "differing": cmp.differing,
            "elements": cmp.elements,
        })
    };
    let groups: Vec<_> = c
        .groups
        .iter()
        .map(|g| {
            serde_json::json!({
                "output": format!("buf{}[{}..{}]", g.buffer, g.offset, g.offset + g.bytes),
                "dtype": g.dtype.to_string(),
                "copies": [g.copies.0, g.copies.1],
                "against_baseline": g.last.as_ref().map(compared),
            })
        })
        .collect();
    let printed: Vec<_> = outputs
        .iter()
        .map(|o| {
            serde_json::json!({
                "output": o.name,
                "baseline": o.value(base),
                "value": o.value(&trial.run),
            })
        })
        .collect();
    serde_json::json!({
        "configuration": name,
        "exit": trial.run.exit.to_string(),
        "kernel_ms": c.kernel_ms.1,
        "diverged": c.diverged,
        "copies": groups,
        "printed": printed,
    })
}

/// Runs `mantissa run` on an application.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    if let Some(option) = spec_only(args) {
        return Err(RunUsage(format!("{option} applies to a spec, not to an application")).into());
    }
    let demotes: Vec<(String, Demote)> = args
        .demote
        .iter()
        .map(|d| demote_of(d).map(|p| (d.trim().to_string(), p)))
        .collect::<Result<_, _>>()?;
    let outputs = crate::app_args::printed_outputs(&args.output)?;
    let timeout = crate::app_args::timeout(args.trial_timeout, "--trial-timeout")?;
    let stem = crate::app_args::stem(&args.app[0]);
    let work =
        crate::app_args::fresh_dir(args.out.as_deref(), format!("mantissa-run-{stem}"), "--out")?;
    let mut session = crate::app_args::start_session(&args.app, &work, timeout, false)?;
    // With --json, stdout is the document alone.
    let say = |line: String| match args.json {
        true => eprintln!("{line}"),
        false => println!("{line}"),
    };
    let base = session.compare(&session.baseline)?;
    let with_ptx = session.modules().iter().filter(|m| m.ptx.is_some()).count();
    say(format!(
        "{stem}: {} modules loaded ({with_ptx} with PTX); the baseline ran {:.2} s, kernel time {} ms, {} copies to the host in {} groups",
        session.modules().len(),
        session.baseline.wall.as_secs_f64(),
        base.kernel_ms.0.map_or("-".into(), num),
        base.groups.iter().map(|g| g.copies.0).sum::<usize>(),
        base.groups.len()
    ));
    let launched = session
        .baseline
        .events
        .iter()
        .any(|e| matches!(e, mantissa_harness::app::events::Event::Launch { .. }));
    if !launched {
        return Err(anyhow!(
            "{stem} launched no kernel under the attach library (is it a CUDA program, and does it load the driver as libcuda.so.1?): nothing to compare"
        ));
    }
    if base.groups.is_empty() && outputs.is_empty() {
        say(format!(
            "note: {stem} copied nothing back to the host: compare what it prints with --output NAME=REGEX"
        ));
    }
    for m in session.modules().iter().filter(|m| m.ptx.is_none()) {
        say(format!(
            "note: module {} runs as it is: {}",
            m.key,
            m.why_not.as_deref().unwrap_or("no PTX")
        ));
    }
    let mut table = Vec::new();
    let mut document = Vec::new();
    let mut lines = Vec::new();
    for (name, demote) in &demotes {
        eprintln!("running {stem} with --demote {name} ...");
        let trial = match demote {
            Demote::Everywhere(pipeline) => session.run_pipeline(name, pipeline)?,
            Demote::Target(c) => session.run_configuration(c)?,
        };
        for note in &trial.notes {
            lines.push(format!("{name}: {note}"));
        }
        if let Some(exit) = exit_text(&trial) {
            lines.push(format!(
                "{name}: the application ended with {exit} (its output: {})",
                trial.run.dir.display()
            ));
        }
        for (key, code, log) in &trial.refused {
            lines.push(format!(
                "{name}: the driver refused the rewrite of module {key} (CUresult {code}): {}",
                log.lines().next().unwrap_or("")
            ));
        }
        for (key, why) in &trial.not_rewritten {
            lines.push(format!("{name}: module {key} left as it is: {why}"));
        }
        for (key, reports) in &trial.reports {
            for r in reports {
                lines.push(format!("{name}: module {key}: {r}"));
            }
        }
        let c = session.compare(&trial.run)?;
        if let Some(d) = &c.diverged {
            lines.push(format!("{name}: the copies to the host diverge: {d}"));
        }
        table.extend(rows(name, &c, base.kernel_ms.0));
        table.extend(printed_rows(name, &outputs, &session.baseline, &trial.run));
        document.push(json_of(name, &c, &outputs, &session.baseline, &trial));
    }
    if args.json {
        let doc = serde_json::json!({
            "application": stem,
            "baseline_kernel_ms": base.kernel_ms.0,
            "configurations": document,
            "notes": lines,
            "runs": work,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    if !table.is_empty() {
        let headers = [
            "configuration",
            "copied back",
            "copies base/trial",
            "digits vs baseline",
            "max rel err",
            "differing",
            "kernel ms",
            "speed-up",
        ];
        print!("\n{}", markdown(&headers, &table, 3));
    }
    for l in lines {
        println!("{l}");
    }
    println!("runs are in {}", work.display());
    Ok(())
}
