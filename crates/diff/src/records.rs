//! Records of a diff for the results store (`results.jsonl` through
//! `mantissa_report::ResultsLog`, written by the caller): one record per blamed cause,
//! algorithm `diff`, the site's address and the cause as the input (distinct point keys), and
//! one summary record (input `all`) with the elements differing and explained.

use crate::analyse::DiffRun;
use mantissa_ptx::site::Site;
use mantissa_report::{Backend, Record, Status, SCHEMA};

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
            status: Status::Ok,
            value: None,
            reference: None,
            error: None,
            time: None,
            extra,
            descriptions,
            note: Some(note),
            build: None,
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: date.clone(),
        }
    };
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
    out
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
}
