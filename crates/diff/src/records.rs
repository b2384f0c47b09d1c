//! Records of a diff for the results store (`results.jsonl` through
//! `mantissa_report::ResultsLog`, written by the caller): one record per blamed cause,
//! algorithm `diff`, the site's address and the cause as the input (distinct point keys), and
//! one summary record (input `all`) with the elements differing and explained; one record per
//! blamed line's time cost (input `cost FILE:LINE`, its time the line switched off) and one per
//! build (input `build NAME`, its time, its error against the reference and, when its shadow
//! run was possible, its digits against its own higher-precision shadow as extras).

use crate::analyse::DiffRun;
use crate::cost::Verdict;
use mantissa_ptx::site::Site;
use mantissa_report::{Backend, Record, Status, TimeStats, SCHEMA};

/// The records' algorithm name.
pub const ALGORITHM: &str = "diff";

fn address(site: &Site) -> String {
    let mut s = format!(
        "{} {}:{}#{}",
        site.function, site.file, site.line, site.ordinal
    );
    for (file, line) in site.inlined.iter().rev() {
        s.push_str(&format!(" < {file}:{line}"));
    }
    s
}

/// The records of `run`.
pub fn records(run: &DiffRun) -> Vec<Record> {
    let date = Record::now();
    let record = |input: String, note: String, q: Vec<(&str, f64, &str)>| {
        record_timed(run, &date, input, note, q, None)
    };
    records_with(run, record, &date)
}

/// The harness's timing as the store's.
fn time_stats(t: &mantissa_gpu::Timing) -> TimeStats {
    TimeStats {
        median_ms: t.median_ms,
        min_ms: t.min_ms,
        max_ms: t.max_ms,
        reps: t.samples_ms.len() as u32,
    }
}

/// One record of `run`.
fn record_timed(
    run: &DiffRun,
    date: &str,
    input: String,
    note: String,
    q: Vec<(&str, f64, &str)>,
    time: Option<TimeStats>,
) -> Record {
    let (extra, descriptions) = Record::quantities(&q);
    Record {
        schema: SCHEMA,
        workload: run.spec.clone(),
        algorithm: ALGORITHM.into(),
        input,
        size: 0,
        seed: 0,
        precision: run.against.clone(),
        backend: Backend::Gpu {
            grid: [0; 3],
            block: [0; 3],
        },
        flags: Some(run.flags.clone()),
        device: run.device.clone(),
        device_ordinal: None,
        status: Status::Ok,
        value: None,
        reference: None,
        error: None,
        time,
        extra,
        descriptions,
        note: Some(note),
        build: None,
        version: Record::current_version(),
        git_revision: Record::current_git_revision(),
        date: date.to_string(),
        shard: None,
        unit: None,
    }
}

/// The records of `run`, the untimed ones made by `record`.
fn records_with(
    run: &DiffRun,
    record: impl Fn(String, String, Vec<(&str, f64, &str)>) -> Record,
    date: &str,
) -> Vec<Record> {
    let mut out: Vec<Record> = run
        .blamed
        .iter()
        .map(|b| {
            let c = &run.candidates[b.candidate];
            record(
                format!("{} {}", address(&c.site), c.cause.name()),
                c.op.clone(),
                vec![
                    ("line", f64::from(c.site.line), "the source line"),
                    (
                        "changed",
                        b.alone.changed as f64,
                        "output elements this cause alone changes",
                    ),
                    (
                        "fixes",
                        b.alone.fixes as f64,
                        "differing elements this cause alone makes equal to the reference",
                    ),
                    (
                        "max_ulps",
                        b.alone.max_ulps,
                        "largest change, in ulps of the output's type",
                    ),
                    (
                        "max_rel",
                        b.alone.max_rel,
                        "largest change relative to the value as written",
                    ),
                ],
            )
        })
        .collect();
    out.push(record(
        "all".into(),
        format!("{} causes blamed", run.blamed.len()),
        vec![
            (
                "differing",
                run.differing as f64,
                "elements differing from the reference as written",
            ),
            (
                "remaining",
                run.remaining as f64,
                "elements still differing with the minimal set switched",
            ),
            (
                "search_trials",
                run.search_trials as f64,
                "trials of the search",
            ),
            (
                "candidates",
                run.candidates.len() as f64,
                "candidate causes listed",
            ),
        ],
    ));
    out.extend(math_records(run, &record));
    for c in &run.costs {
        let causes: Vec<&str> = c
            .candidates
            .iter()
            .map(|&k| run.candidates[k].cause.name())
            .collect();
        out.push(record_timed(
            run,
            date,
            format!("cost {}:{}", c.file, c.line),
            format!(
                "{} switched off: {}",
                causes.join("+"),
                c.switched_off.describe()
            ),
            vec![
                ("line", f64::from(c.line), "the source line"),
                (
                    "ratio",
                    c.switched_off.ratio,
                    "median time with the line's causes switched off over the median as written",
                ),
                (
                    "beyond_noise",
                    f64::from(u8::from(c.switched_off.verdict != Verdict::Noise)),
                    "1 when the difference is beyond the measured spread",
                ),
            ],
            Some(time_stats(&c.switched_off.time)),
        ));
    }
    for b in &run.builds {
        let differing: u64 = b.errors.iter().map(|e| e.differing).sum();
        let max_ulps = b.errors.iter().map(|e| e.max_ulps).fold(0.0, f64::max);
        let max_rel = b.errors.iter().map(|e| e.max_rel).fold(0.0, f64::max);
        let (shadow_min, shadow_median) = crate::digits::worst(&b.errors);
        let mut shadow = Vec::new();
        if let Some(d) = shadow_min {
            shadow.push((
                "shadow_min_digits",
                d,
                "fewest digits right of any output element against the build's own \
                 higher-precision shadow",
            ));
        }
        if let Some(d) = shadow_median {
            shadow.push((
                "shadow_median_digits",
                d,
                "median digits against the shadow, of the output with the fewest",
            ));
        }
        let note = match &b.shadow_unavailable {
            Some(why) => format!(
                "{} ({}); no digits against the shadow: {why}",
                b.how, b.flags
            ),
            None => format!("{} ({})", b.how, b.flags),
        };
        out.push(record_timed(
            run,
            date,
            format!("build {}", b.name),
            note,
            vec![
                (
                    "switched",
                    b.switched.len() as f64,
                    "candidate causes switched",
                ),
                (
                    "differing",
                    differing as f64,
                    "output elements differing from the reference",
                ),
                (
                    "max_ulps",
                    max_ulps,
                    "largest error, in ulps of the output's type",
                ),
                ("max_rel", max_rel, "largest relative error"),
                (
                    "ratio",
                    b.time.ratio,
                    "median time over the median of the program as written",
                ),
                (
                    "within_tolerance",
                    f64::from(u8::from(b.within_tolerance)),
                    "1 when every output is within the spec's tolerance of the reference",
                ),
            ]
            .into_iter()
            .chain(shadow)
            .collect(),
            Some(time_stats(&b.time.time)),
        ));
    }
    out
}

/// One record per math function the kernels call (input `math FUNCTION FORMAT`): the lines
/// calling it, and where a differing input was found, the input and both results.
fn math_records(
    run: &DiffRun,
    record: &impl Fn(String, String, Vec<(&str, f64, &str)>) -> Record,
) -> Vec<Record> {
    crate::mathfn::by_function(&run.math.calls)
        .into_iter()
        .map(|((function, format), lines)| {
            let check = run
                .math
                .checks
                .iter()
                .find(|c| c.function == function && c.format == format);
            let first_line = run
                .math
                .calls
                .iter()
                .find(|c| c.function == function && c.format == format)
                .map_or(0, |c| c.line);
            let mut q = vec![(
                "line",
                f64::from(first_line),
                "the first source line calling it",
            )];
            let mut note = format!("called at {}", lines.join(", "));
            if let Some(c) = check {
                note = format!("{note}; {}", c.describe());
                if let Some(d) = &c.differing {
                    q.push(("x", d.args[0], "the input where CUDA and the CPU differ"));
                    if let Some(&y) = d.args.get(1) {
                        q.push(("y", y, "its second argument"));
                    }
                    q.extend([
                        ("cuda", d.cuda, "CUDA's result there"),
                        ("cpu", d.cpu, "the CPU's (Rust std) result there"),
                        (
                            "apart_ulps",
                            d.apart_ulps,
                            "how far apart the two are, in ulps of the CPU's result",
                        ),
                        (
                            "cuda_ulps",
                            d.cuda_ulps,
                            "CUDA's error in ulps of the exact value",
                        ),
                        (
                            "cpu_ulps",
                            d.cpu_ulps,
                            "the CPU's error in ulps of the exact value",
                        ),
                    ]);
                }
            }
            record(format!("math {function} {}", format.name()), note, q)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn one_record_per_blamed_cause_and_a_summary_with_distinct_keys() {
        let run = crate::text::tests::run();
        let recs = records(&run);
        assert_eq!(recs.len(), 3);
        let keys: HashSet<String> = recs.iter().map(Record::key).collect();
        assert_eq!(keys.len(), 3);
        assert_eq!(recs[0].input, "project /src/projector.cu:40#0 float_to_int");
        assert_eq!(recs[0].extra["fixes"], 300.0);
        assert_eq!(recs[2].extra["remaining"], 10.0);
    }

    #[test]
    fn build_records_carry_the_digits_against_the_shadow_or_why_not() {
        use crate::builds::{Build, OutputError, ShadowDigits};
        use crate::cost::Relative;
        let t = mantissa_gpu::Timing::from_samples(vec![1.0, 1.1, 0.9], 2, 1)
            .unwrap_or_else(|| panic!("samples"));
        let build = |name: &str, shadow: Option<ShadowDigits>, why: Option<&str>| Build {
            name: name.into(),
            how: "h".into(),
            flags: "default".into(),
            switched: Vec::new(),
            changes: Vec::new(),
            time: Relative::of(t.clone(), &t),
            errors: vec![OutputError {
                name: "proj".into(),
                within_tolerance: true,
                differing: 0,
                max_ulps: 0.0,
                max_rel: 0.0,
                digits: f64::INFINITY,
                shadow,
            }],
            within_tolerance: true,
            shadow_unavailable: why.map(str::to_string),
            ptx: String::new(),
        };
        let mut run = crate::text::tests::run();
        let digits = ShadowDigits {
            min: Some(6.5),
            median: Some(7.25),
            finite: 10,
            elements: 10,
        };
        run.builds = vec![
            build("naive", Some(digits), None),
            build("fastest", None, Some("too many registers")),
        ];
        let recs = records(&run);
        let of = |name: &str| {
            recs.iter()
                .find(|r| r.input == format!("build {name}"))
                .unwrap_or_else(|| panic!("{name}"))
        };
        assert_eq!(of("naive").extra["shadow_min_digits"], 6.5);
        assert_eq!(of("naive").extra["shadow_median_digits"], 7.25);
        assert!(!of("fastest").extra.contains_key("shadow_min_digits"));
        assert!(of("fastest")
            .note
            .as_deref()
            .is_some_and(|n| n.ends_with("no digits against the shadow: too many registers")));
    }

    #[test]
    fn one_record_per_math_function_with_the_differing_input() {
        let mut run = crate::text::tests::run();
        run.math = crate::mathfn::tests::sample();
        let recs = records(&run);
        let math: Vec<&Record> = recs
            .iter()
            .filter(|r| r.input.starts_with("math "))
            .collect();
        assert_eq!(math.len(), 2);
        assert_eq!(math[0].input, "math sinf f32");
        assert_eq!(math[0].extra["x"], 9.0);
        assert_eq!(math[0].extra["cuda"], 0.75);
        assert_eq!(math[0].extra["apart_ulps"], 1.0);
        assert_eq!(math[0].extra["line"], 5.0);
        assert!(math[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("--check sinf 0x1.2p+3")));
        assert_eq!(math[1].input, "math j0f f32");
        assert!(!math[1].extra.contains_key("x"));
        let keys: HashSet<String> = recs.iter().map(Record::key).collect();
        assert_eq!(keys.len(), recs.len());
    }
}
