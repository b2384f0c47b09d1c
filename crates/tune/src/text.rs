//! `mantissa tune` as text: the references, the units and the kernel profile, the table in the
//! shape of seed 002 Table 4, and what each search chose.

use crate::chosen::Choice;
use crate::evaluate::Trial;
use crate::flow::{SearchEntry, TuneRun};
use crate::unit::TuneUnit;
use std::fmt::Write;

/// One trial in a progress line: `0-2: 5.3 digits, 41.2% ±0.8 of the ideal (1.234 ms)`.
pub fn trial_line(config: &str, t: &Trial) -> String {
    if let Some(why) = &t.failed {
        return format!("{config}: failed: {why}");
    }
    let digits = if t.digits.is_infinite() {
        "identical".to_string()
    } else {
        format!("{:.1} digits", t.digits)
    };
    match (t.speedup_pct, t.noise_pct, t.time_ms) {
        (Some(s), Some(n), Some(ms)) => {
            format!("{config}: {digits}, {s:.1}% ±{n:.1} of the ideal ({ms:.4} ms)")
        }
        (None, _, Some(ms)) => format!("{config}: {digits} ({ms:.4} ms)"),
        _ => format!("{config}: {digits}"),
    }
}

/// The units of `config` by name, the first three and a count when there are more.
pub(crate) fn names(units: &[TuneUnit], config: &crate::unit::Config) -> String {
    let n: Vec<&str> = config.iter().map(|&u| units[u].name.as_str()).collect();
    if n.len() > 4 {
        format!("{} and {} more", n[..3].join(" + "), n.len() - 3)
    } else {
        n.join(" + ")
    }
}

/// The whole report.
pub fn render(run: &TuneRun) -> String {
    let mut o = String::new();
    let r = &run.references;
    let _ = writeln!(o, "{} ({}, {} flags)", run.spec, run.device, run.flags);
    let _ = writeln!(
        o,
        "f64 program {:.4} ms ±{:.4}, all-f32 program {:.4} ms ±{:.4} ({:.2}× faster, {} digits)",
        r.t64.median_ms,
        r.t64.noise_ms,
        r.t32.median_ms,
        r.t32.noise_ms,
        r.t64.median_ms / r.t32.median_ms,
        if r.digits32.is_infinite() {
            "identical".to_string()
        } else {
            format!("{:.1}", r.digits32)
        }
    );
    let _ = writeln!(
        o,
        "{} FISets, {} variables, {} math calls, {} buffers that can be kept in f32; demotion error measured at {} of the FISets' and variables' {} instructions",
        run.fisets.len() - run.shared,
        run.variables.len() - run.shared,
        run.math,
        run.buffers,
        run.coverage.measured,
        run.coverage.sites
    );
    if !run.profile.is_empty() {
        let _ = writeln!(o, "\nkernel profile (seed 002 Table 3):");
        let _ = writeln!(
            o,
            "  {:<40} {:>7} {:>6} {:>9} {:>14} {:>12}",
            "kernel", "time", "FISets", "mean r_ac", "registers f64", "mixed"
        );
        for p in &run.profile {
            let reg = |r: Option<u32>, l: Option<u32>| match (r, l) {
                (Some(r), Some(l)) if l > 0 => format!("{r} (+{l} B local)"),
                (Some(r), _) => r.to_string(),
                _ => "?".into(),
            };
            let _ = writeln!(
                o,
                "  {:<40} {:>7} {:>6} {:>9} {:>14} {:>12}",
                p.fisets.function,
                p.share.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s)),
                p.fisets.fisets,
                p.fisets.mean_r_ac.map_or("–".into(), |m| format!("{m:.2}")),
                reg(p.registers_f64, p.local_f64),
                reg(p.registers_mixed, p.local_mixed)
            );
        }
    }
    let _ = writeln!(o);
    o.push_str(&crate::table::text(
        &run.searches
            .iter()
            .map(|s| s.search.clone())
            .collect::<Vec<_>>(),
    ));
    let _ = writeln!(o, "\nchosen configurations:");
    for choice in crate::chosen::group(run) {
        chosen(&mut o, &choice);
    }
    let _ = writeln!(
        o,
        "\n{} trials ran on the device{}",
        run.device_trials,
        if run.resumed > 0 {
            format!(" ({} records resumed)", run.resumed)
        } else {
            String::new()
        }
    );
    for n in &run.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// What one search did beside its choice: `3 trials (+2 run ahead, not needed), first met at
/// trial 2`.
fn trials_text(s: &SearchEntry) -> String {
    let first = s
        .search
        .first_met_at
        .map_or(String::new(), |k| format!(", first met at trial {k}"));
    // Run ahead on a GPU that was free (several GPUs) and then not needed by the search.
    let ahead = match s.search.unused_ahead {
        0 => String::new(),
        n => format!(" (+{n} run ahead, not needed)"),
    };
    format!("{} trials{ahead}{first}", s.search.trials)
}

/// One configuration with the searches that chose it (or the searches that chose nothing):
/// one search on one line as `label: configuration — trial; trials`, several once with the
/// searches listed after it; then where it was saved and its detail, once.
fn chosen(o: &mut String, choice: &Choice<'_>) {
    let s = choice.first();
    let (Some(c), Some(t)) = (choice.config, &s.search.chosen_trial) else {
        let list: Vec<String> = choice
            .searches
            .iter()
            .map(|s| format!("{} ({})", s.label, trials_text(s)))
            .collect();
        let _ = match list.len() {
            1 => writeln!(o, "  {}: none met ({})", s.label, trials_text(s)),
            n => writeln!(o, "  none met by {n} searches:\n      {}", list.join("; ")),
        };
        return;
    };
    let what = format!(
        "{} — {}",
        names(choice.units, c),
        trial_line(&format!("{} units", c.len()), t)
    );
    if choice.searches.len() == 1 {
        let _ = writeln!(o, "  {}: {what}; {}", s.label, trials_text(s));
    } else {
        let list: Vec<String> = choice
            .searches
            .iter()
            .map(|s| format!("{} ({})", s.label, trials_text(s)))
            .collect();
        let _ = writeln!(
            o,
            "  {what}; chosen by {} searches:\n      {}",
            list.len(),
            list.join("; ")
        );
    }
    // Each search saves its choice under its own name: the first file, and how many more.
    let saved: Vec<&std::path::Path> = choice
        .searches
        .iter()
        .filter_map(|s| s.saved.as_deref())
        .collect();
    match saved.len() {
        0 => {}
        1 => {
            let _ = writeln!(o, "      saved: {}", saved[0].display());
        }
        n => {
            let _ = writeln!(
                o,
                "      saved: {} (+{} copies, one per search)",
                saved[0].display(),
                n - 1
            );
        }
    }
    if let Some(d) = &s.detail {
        detail(o, d);
    }
}

fn digits_text(d: f64) -> String {
    if d.is_infinite() {
        "identical".into()
    } else {
        format!("{d:.2}")
    }
}

/// A chosen configuration's digits per output element and its registers.
fn detail(o: &mut String, d: &crate::detail::Detail) {
    for out in &d.outputs {
        let _ = writeln!(
            o,
            "      {}: {} elements, {} identical; digits min {}, median {}; fewer than 3: {}, fewer than 6: {}",
            out.output,
            out.elements,
            out.identical,
            digits_text(out.min),
            digits_text(out.median),
            out.below.get(2).copied().unwrap_or(0),
            out.below.get(5).copied().unwrap_or(0)
        );
        if let Some(&(i, v, r, dg)) = out.worst.first() {
            let _ = writeln!(
                o,
                "        worst: [{i}] {v:e} against {r:e} ({dg:.2} digits)"
            );
        }
    }
    let k: Vec<String> = d
        .kernels
        .iter()
        .map(|k| {
            if k.local_bytes > 0 {
                format!(
                    "{} {} registers, {} B local",
                    k.kernel, k.registers, k.local_bytes
                )
            } else {
                format!("{} {} registers", k.kernel, k.registers)
            }
        })
        .collect();
    if !k.is_empty() {
        let _ = writeln!(o, "      {}", k.join("; "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_line_says_digits_speed_up_and_time_or_why_it_failed() {
        let mut t = crate::fixture::run().searches[0].search.log[1].1.clone();
        assert_eq!(
            trial_line("0", &t),
            "0: 6.5 digits, 40.0% ±1.0 of the ideal (1.0000 ms)"
        );
        t.digits = f64::INFINITY;
        t.speedup_pct = None;
        assert_eq!(trial_line("0-2", &t), "0-2: identical (1.0000 ms)");
        t.failed = Some("out of resources".into());
        assert_eq!(trial_line("1", &t), "1: failed: out of resources");
    }

    #[test]
    fn the_report_has_the_references_the_table_and_each_choice() {
        let text = render(&crate::fixture::run());
        assert!(text.starts_with("k<1> (H200, default flags)\n"), "{text}");
        assert!(text.contains("(2.00× faster, 2.0 digits)"), "{text}");
        assert!(text.contains("40.0% (3)"), "{text}");
        assert!(
            text.contains("mode 2, 3 digits, 10%: fiset 1 (k.cu:3) — 1 units: 6.5 digits, 40.0% ±1.0 of the ideal (1.0000 ms); 3 trials, first met at trial 2"),
            "{text}"
        );
        assert!(text.contains("note: a <note>"), "{text}");
        let mut several = crate::fixture::run();
        several.searches[0].search.unused_ahead = 2;
        let text = render(&several);
        assert!(
            text.contains("; 3 trials (+2 run ahead, not needed), first met at trial 2"),
            "{text}"
        );
    }

    /// 24 searches that chose one FISet print it once, with the searches after it; the one
    /// that chose nothing keeps its line.
    #[test]
    fn searches_with_one_choice_print_it_once() {
        let mut run = crate::fixture::repeated(crate::fixture::run(), 24);
        for (k, s) in run.searches.iter_mut().enumerate() {
            s.saved = Some(format!("out/configs/search-{k}.json").into());
        }
        let text = render(&run);
        assert_eq!(text.matches("solver.cu:").count(), 1, "{text}");
        assert!(
            text.contains("  fiset 1 (solver.cu:100–101, 103–104,"),
            "{text}"
        );
        assert!(
            text.contains("— 1 units: 6.5 digits, 40.0% ±1.0 of the ideal (1.0000 ms); chosen by 24 searches:\n      mode 2, 1 digits, 5% (3 trials, first met at trial 2); mode 2, 1 digits, 10% (3 trials, first met at trial 2);"),
            "{text}"
        );
        assert!(
            text.contains("      saved: out/configs/search-0.json (+23 copies, one per search)\n"),
            "{text}"
        );
        assert!(
            text.contains("  mode 2, 7 digits, 5%: none met (3 trials)\n"),
            "{text}"
        );
        assert_eq!(text.matches("saved:").count(), 1, "{text}");
    }
}
