//! The report of a diff as text: the outputs, then one row per blamed cause in source-line
//! order (what it changes alone, how many differing elements it alone fixes, by how much), then
//! what remains unexplained and the listed-only candidates that may explain it.

use crate::analyse::DiffRun;
use std::fmt::Write;

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The text report.
pub fn render(run: &DiffRun) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mantissa diff: {} ({}) against {} on {}",
        run.spec, run.flags, run.against, run.device
    );
    for o in &run.outputs {
        let _ = writeln!(
            s,
            "  {}: {} elements, {} differ as written, {} with the causes below switched",
            o.name, o.elements, o.differing, o.remaining
        );
    }
    let _ = writeln!(s);
    if run.blamed.is_empty() {
        let _ = writeln!(s, "no switchable cause changes the difference");
    } else {
        let _ = writeln!(
            s,
            "{:<28} {:<14} {:<22} {:>9} {:>9} {:>10} {:>10}  sass",
            "line", "cause", "instruction", "changes", "fixes", "max ulps", "max rel"
        );
        let mut rows: Vec<_> = run.blamed.iter().collect();
        rows.sort_by(|a, b| {
            let (x, y) = (&run.candidates[a.candidate], &run.candidates[b.candidate]);
            (&x.site.file, x.site.line, &x.site).cmp(&(&y.site.file, y.site.line, &y.site))
        });
        for b in rows {
            let c = &run.candidates[b.candidate];
            let file = c.site.file.rsplit(['/', '\\']).next().unwrap_or("");
            let _ = writeln!(
                s,
                "{:<28} {:<14} {:<22} {:>9} {:>9} {:>10} {:>10.2e}  {}",
                format!(
                    "{file}:{} {}",
                    c.site.line,
                    short_function(&c.site.function)
                ),
                c.cause.name(),
                c.op,
                b.alone.changed,
                b.alone.fixes,
                b.alone.max_ulps,
                b.alone.max_rel,
                b.sass.word()
            );
        }
        let _ = writeln!(
            s,
            "(changes: output elements the cause alone changes; fixes: differing elements it \
             alone makes equal; sass: FMA where the line's SASS has a fused multiply-add, \
             inferred without a disassembler)"
        );
    }
    costs(&mut s, run);
    let explained = run.differing - run.remaining;
    let _ = writeln!(
        s,
        "\nexplained: {explained} of {} differing elements ({:.1}%) in {} trials (+{} to measure each cause alone)",
        run.differing,
        percent(explained, run.differing),
        run.search_trials,
        run.effect_trials
    );
    if run.remaining == 0 {
        let _ = writeln!(s, "unexplained: none");
    } else {
        let _ = writeln!(s, "unexplained: {} elements", run.remaining);
        let listed: Vec<_> = run.listed_only().collect();
        if listed.is_empty() {
            let _ = writeln!(s, "  no listed cause is left to blame");
        } else {
            let _ = writeln!(s, "  listed, not switched (may explain them):");
            for c in listed {
                let _ = writeln!(s, "    {}: {} ({})", c.site, c.cause.name(), c.detail);
            }
        }
    }
    math(&mut s, run);
    builds(&mut s, run);
    for n in run.notes.iter().chain(&run.math.notes) {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The math functions the kernels call: with an input where CUDA and the CPU differ for each,
/// when differences remain unexplained; as a listing otherwise.
fn math(s: &mut String, run: &DiffRun) {
    let m = &run.math;
    if m.calls.is_empty() {
        return;
    }
    if m.checks.is_empty() {
        let listed: Vec<String> = crate::mathfn::by_function(&m.calls)
            .into_iter()
            .map(|((function, _), lines)| format!("{function} ({})", lines.join(", ")))
            .collect();
        let _ = writeln!(s, "math functions called: {}", listed.join(", "));
        return;
    }
    let build = m
        .checks
        .iter()
        .find_map(|c| c.cuda_build.as_deref())
        .unwrap_or("default");
    let _ = writeln!(
        s,
        "  math functions called, each where CUDA ({build} build) and the CPU (Rust std) differ \
         (CUDA's and the CPU's libraries round differently: no switch makes them agree):"
    );
    for c in &m.checks {
        let _ = writeln!(s, "    {}: {}", c.lines.join(", "), c.describe());
    }
}

/// A timing as `0.0123 ms (0.0120–0.0131)`: the median and the spread of the repetitions.
fn time(t: &mantissa_gpu::Timing) -> String {
    format!("{:.4} ms ({:.4}–{:.4})", t.median_ms, t.min_ms, t.max_ms)
}

/// The time cost of each blamed line.
fn costs(s: &mut String, run: &DiffRun) {
    let Some(naive) = &run.naive_time else {
        return;
    };
    let _ = writeln!(
        s,
        "\ntime with each blamed line's causes switched off (medians of {} repetitions; as written: {})",
        naive.samples_ms.len(),
        time(naive)
    );
    for c in &run.costs {
        let file = c.file.rsplit(['/', '\\']).next().unwrap_or("");
        let causes: Vec<&str> = c
            .candidates
            .iter()
            .map(|&k| run.candidates[k].cause.name())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let _ = writeln!(
            s,
            "  {:<20} {:<26} {:<34} {}",
            format!("{file}:{}", c.line),
            causes.join("+"),
            time(&c.switched_off.time),
            c.switched_off.describe()
        );
    }
}

/// The four builds' table.
fn builds(s: &mut String, run: &DiffRun) {
    if run.builds.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n{:<14} {:<12} {:>8} {:<34} {:<22} {:>9} {:>10} {:>10}  {:<9}  vs shadow",
        "build",
        "flags",
        "switched",
        "time",
        "vs as written",
        "differ",
        "max ulps",
        "max rel",
        "tolerance"
    );
    for b in &run.builds {
        let differ: u64 = b.errors.iter().map(|e| e.differing).sum();
        let ulps = b.errors.iter().map(|e| e.max_ulps).fold(0.0, f64::max);
        let rel = b.errors.iter().map(|e| e.max_rel).fold(0.0, f64::max);
        let _ = writeln!(
            s,
            "{:<14} {:<12} {:>8} {:<34} {:<22} {:>9} {:>10} {:>10.2e}  {:<9}  {}",
            b.name,
            b.flags,
            b.switched.len(),
            time(&b.time.time),
            if b.name == crate::builds::NAMES[0] {
                "-".to_string()
            } else {
                b.time.describe()
            },
            differ,
            ulps,
            rel,
            if b.within_tolerance {
                "within"
            } else {
                "outside"
            },
            against_shadow(b)
        );
    }
    for b in &run.builds {
        if let Some(why) = &b.shadow_unavailable {
            let _ = writeln!(s, "  {}: no digits against the shadow: {why}", b.name);
        }
    }
    let _ = writeln!(
        s,
        "(vs shadow: digits right against the same build's higher-precision shadow values, \
         minimum/median over each floating-point output's elements)"
    );
    let _ = writeln!(
        s,
        "(differ, max ulps, max rel: against the {}; each build: {})",
        run.against,
        run.builds
            .iter()
            .map(|b| format!("{}: {}", b.name, b.how))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

/// A build's digits against its shadow: `min/median` per floating-point output (named when
/// there are several), `-` without a shadow run.
fn against_shadow(b: &crate::builds::Build) -> String {
    let with: Vec<(&str, &crate::builds::ShadowDigits)> = b
        .errors
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.shadow.as_ref()?)))
        .collect();
    let d = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    match with.as_slice() {
        [] => "-".into(),
        [(_, s)] => format!("{}/{}", d(s.min), d(s.median)),
        many => many
            .iter()
            .map(|(name, s)| format!("{name} {}/{}", d(s.min), d(s.median)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A kernel name short enough for a column (mangled C++ names are long).
fn short_function(name: &str) -> &str {
    if name.len() <= 12 {
        name
    } else {
        ""
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analyse::{Blamed, Effect, OutputDiff};
    use mantissa_ptx::pass::cause::{Candidate, Cause};
    use mantissa_ptx::site::Site;

    pub(crate) fn run() -> DiffRun {
        let cand = |line, ordinal, cause, op: &str, not: Option<&str>| Candidate {
            site: Site {
                function: "project".into(),
                file: "/src/projector.cu".into(),
                line,
                ordinal,
                inlined: Vec::new(),
            },
            inst: mantissa_ptx::InstId(line),
            cause,
            op: op.into(),
            detail: "d".into(),
            not_switchable: not.map(str::to_string),
        };
        DiffRun {
            spec: "projector".into(),
            flags: "default".into(),
            against: "reference".into(),
            device: "NVIDIA H200".into(),
            outputs: vec![OutputDiff {
                name: "absorb".into(),
                elements: 4096,
                differing: 1000,
                remaining: 10,
            }],
            candidates: vec![
                cand(40, 0, Cause::FloatToInt, "cvt.rzi.u32.f32", None),
                cand(31, 2, Cause::Contraction, "fma.rn.f32", None),
                cand(33, 0, Cause::MathFunction, "ex2.approx.f32", Some("listed")),
            ],
            blamed: vec![
                Blamed {
                    candidate: 0,
                    alone: Effect {
                        changed: 300,
                        fixes: 300,
                        max_ulps: 1e9,
                        max_rel: 1.0,
                    },
                    sass: crate::sass::SassCheck::NotApplicable,
                },
                Blamed {
                    candidate: 1,
                    alone: Effect {
                        changed: 700,
                        fixes: 690,
                        max_ulps: 2.0,
                        max_rel: 2.4e-7,
                    },
                    sass: crate::sass::SassCheck::Confirmed,
                },
            ],
            differing: 1000,
            remaining: 10,
            search_trials: 5,
            effect_trials: 3,
            fell_back: false,
            naive_time: None,
            costs: vec![],
            builds: vec![],
            math: Default::default(),
            notes: vec![],
        }
    }

    #[test]
    fn rows_in_line_order_with_the_share_explained_and_what_remains() {
        let text = render(&run());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("mantissa diff: projector (default) against reference"));
        let rows: Vec<&&str> = lines
            .iter()
            .filter(|l| l.starts_with("projector.cu:"))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(rows[0].starts_with("projector.cu:31") && rows[0].contains("contraction"));
        assert!(
            rows[0].ends_with("  FMA") && rows[1].ends_with("  -"),
            "{text}"
        );
        assert!(rows[1].starts_with("projector.cu:40") && rows[1].contains("float_to_int"));
        assert!(text.contains("explained: 990 of 1000 differing elements (99.0%) in 5 trials"));
        assert!(text.contains("unexplained: 10 elements"));
        assert!(text.contains("project projector.cu:33#0: math_function"));
    }

    #[test]
    fn math_functions_are_named_with_a_differing_input_or_listed() {
        let mut r = run();
        r.math = crate::mathfn::tests::sample();
        let text = render(&r);
        let after = text
            .split_once("unexplained: 10 elements")
            .map_or("", |p| p.1);
        assert!(
            after.contains(
                "    k.cu:5, k.cu:9: sinf: CUDA 0x1.8p-1 vs CPU 0x1.800002p-1 at x = 0x1.2p+3"
            ),
            "{text}"
        );
        assert!(
            after.contains("check: mantissa mathlib --check sinf 0x1.2p+3\n"),
            "{text}"
        );
        assert!(after.contains("    k.cu:7: j0f: mathlib does not know it: no check available"));
        // Everything explained: nothing was checked, the functions are listed.
        r.math.checks.clear();
        let text = render(&r);
        assert!(
            text.contains("math functions called: sinf (k.cu:5, k.cu:9), j0f (k.cu:7)\n"),
            "{text}"
        );
    }
}

#[cfg(test)]
mod timed_tests {
    use super::*;
    use crate::builds::{Build, OutputError, ShadowDigits};
    use crate::cost::{LineCost, Relative};
    use mantissa_gpu::Timing;

    fn t(samples: &[f64]) -> Timing {
        Timing::from_samples(samples.to_vec(), 2, 1).unwrap_or_else(|| panic!("samples"))
    }

    #[test]
    fn costs_say_noise_and_the_four_builds_are_one_row_each() {
        let mut run = super::tests::run();
        let naive = t(&[1.0, 1.1, 0.9]);
        run.naive_time = Some(naive.clone());
        run.costs = vec![
            LineCost {
                file: "/src/projector.cu".into(),
                line: 31,
                candidates: vec![1],
                switched_off: Relative::of(t(&[1.05, 0.95, 1.0]), &naive),
                within_tolerance: false,
            },
            LineCost {
                file: "/src/projector.cu".into(),
                line: 40,
                candidates: vec![0],
                switched_off: Relative::of(t(&[2.0, 2.1, 1.9]), &naive),
                within_tolerance: false,
            },
        ];
        run.builds = crate::builds::NAMES
            .iter()
            .map(|name| Build {
                name: name.to_string(),
                how: "h".into(),
                flags: "default".into(),
                switched: vec![0],
                changes: vec![],
                time: Relative::of(naive.clone(), &naive),
                errors: vec![OutputError {
                    name: "absorb".into(),
                    within_tolerance: true,
                    differing: 0,
                    max_ulps: 0.0,
                    max_rel: 0.0,
                    digits: f64::INFINITY,
                    shadow: (*name != "fastest").then_some(ShadowDigits {
                        min: Some(6.31),
                        median: Some(7.0),
                        finite: 4096,
                        elements: 4096,
                    }),
                }],
                within_tolerance: true,
                shadow_unavailable: (*name == "fastest")
                    .then(|| "the instrumented program exceeds the launch's resources".into()),
                ptx: String::new(),
            })
            .collect();
        let text = render(&run);
        let timed = text
            .split_once("time with each blamed line")
            .map_or("", |(_, after)| after);
        let line = |p: &str| {
            timed
                .lines()
                .find(|l| l.trim_start().starts_with(p))
                .unwrap_or_else(|| panic!("{p}: {text}"))
                .to_string()
        };
        assert!(
            line("projector.cu:31 ").ends_with("1.00× (within noise)"),
            "{text}"
        );
        assert!(line("projector.cu:40 ").ends_with("2.00× slower"), "{text}");
        for name in crate::builds::NAMES {
            let want = if name == "fastest" {
                "within     -"
            } else {
                "within     6.3/7.0"
            };
            assert!(line(&format!("{name} ")).ends_with(want), "{text}");
        }
        assert!(
            text.contains("  fastest: no digits against the shadow: the instrumented program"),
            "{text}"
        );
    }
}
