//! Records of an analysis for the results store (`results.jsonl` through
//! `mantissa_report::ResultsLog`, written by the caller): one record per site, algorithm
//! `shadow`, the site's full address as the input (so two sites never share a point key), its
//! value type as the precision, and what was measured as named `extra` quantities; with shadow
//! values, also one record per floating-point output buffer (input `output NAME`, the digits its
//! elements get right against their shadows).

use crate::analyse::ShadowRun;
use crate::lines::{counted_position, SiteResult};
use crate::values::OutputDigits;
use mantissa_ptx::site::Site;
use mantissa_report::{Backend, Record, Status, SCHEMA};

/// The records' algorithm name.
pub const ALGORITHM: &str = "shadow";

/// A site's address with full file paths: `kernel /path/k.cu:42#3`, then `< /path/k.cu:17` per
/// call site, innermost first (as [`Site`]'s display, which shortens paths).
pub fn address(site: &Site) -> String {
    let mut s = format!(
        "{} {}:{}#{}",
        site.function, site.file, site.line, site.ordinal
    );
    for (file, line) in site.inlined.iter().rev() {
        s.push_str(&format!(" < {file}:{line}"));
    }
    s
}

/// The quantities of one site, with what each is.
fn quantities(s: &SiteResult) -> Vec<(&'static str, f64, &'static str)> {
    let (_, line) = counted_position(&s.site);
    let mut q = vec![
        (
            "site",
            f64::from(s.index),
            "the site's index among the module's candidate instructions",
        ),
        (
            "line",
            f64::from(line),
            "the source line the site counts on (the outermost call for inlined code)",
        ),
    ];
    if let Some(d) = &s.demotion {
        q.extend([
            ("demotion.count", d.count as f64, "executions with a finite nonzero f64 result and a finite f32 form"),
            ("demotion.sum", d.sum, "sum of |r32 - r64| / |r64| over those executions (seed 002 Eq. 2; the set error adds these)"),
            ("demotion.max", d.max, "largest |r32 - r64| / |r64|"),
            ("demotion.mean", d.mean, "demotion.sum / demotion.count"),
            ("demotion.zero_reference", d.zero_reference as f64, "executions whose f64 result was 0"),
            ("demotion.non_finite", d.non_finite as f64, "executions whose f64 result or f32 form was not finite"),
        ]);
    }
    if let Some(e) = &s.exceptions {
        q.extend([
            ("exceptions.nan", e.nan as f64, "NaN results"),
            (
                "exceptions.nan_origin",
                e.nan_origin as f64,
                "NaN results from operands none of which was NaN",
            ),
            ("exceptions.inf", e.inf as f64, "infinite results"),
            (
                "exceptions.inf_origin",
                e.inf_origin as f64,
                "infinite results from finite operands",
            ),
            (
                "exceptions.div_by_zero",
                e.div_by_zero as f64,
                "divisions (div, rcp) by zero",
            ),
            (
                "exceptions.subnormal",
                e.subnormal as f64,
                "subnormal results",
            ),
        ]);
    }
    if let Some(v) = &s.values {
        q.extend([
            (
                "values.executions",
                v.executions as f64,
                "executions (shadow-values run)",
            ),
            (
                "values.local.count",
                v.local.count as f64,
                "executions with a measured local error (finite, exact result not 0)",
            ),
            (
                "values.local.max",
                v.local.max,
                "largest local error |x - r| / |x|, x the exact operation on the operand values",
            ),
            ("values.local.mean", v.local.mean, "mean local error"),
            (
                "values.accumulated.count",
                v.accumulated.count as f64,
                "executions with a measured accumulated error (finite, shadow not 0)",
            ),
            (
                "values.accumulated.max",
                v.accumulated.max,
                "largest accumulated error |r - s| / |s| against the double-word shadow s",
            ),
            (
                "values.accumulated.mean",
                v.accumulated.mean,
                "mean accumulated error",
            ),
            (
                "values.digits",
                v.digits.unwrap_or(f64::NAN),
                "correct decimal digits of the worst result: -log10(values.accumulated.max)",
            ),
            (
                "values.cancellations",
                v.cancellations as f64,
                "additions that lost >= 10 bits while an operand carried error",
            ),
            (
                "values.cancel_max_bits",
                v.cancel_max_bits as f64,
                "the most bits one cancellation lost",
            ),
            (
                "values.reseeded",
                v.reseeded as f64,
                "executions whose shadow was re-seeded from the value",
            ),
        ]);
    }
    q
}

/// The quantities of one output buffer's digits.
fn output_quantities(o: &OutputDigits) -> Vec<(&'static str, f64, &'static str)> {
    vec![
        (
            "values.elements",
            o.elements as f64,
            "elements of the output buffer",
        ),
        (
            "values.finite",
            o.finite as f64,
            "elements with a finite value and shadow",
        ),
        (
            "values.min_digits",
            o.min_digits.unwrap_or(f64::NAN),
            "fewest correct decimal digits of an element against its shadow",
        ),
        (
            "values.median_digits",
            o.median_digits.unwrap_or(f64::NAN),
            "median correct decimal digits",
        ),
    ]
}

/// One record per site of `run`, then one per output buffer with shadow values (see the
/// module docs).
pub fn records(run: &ShadowRun) -> Vec<Record> {
    let backend = run.first_launch.map_or(
        Backend::Gpu {
            grid: [0; 3],
            block: [0; 3],
        },
        |d| Backend::Gpu {
            grid: [d.grid.0, d.grid.1, d.grid.2],
            block: [d.block.0, d.block.1, d.block.2],
        },
    );
    let date = Record::now();
    let record = |input: String, precision: String, q: Vec<(&str, f64, &str)>, note: String| {
        let (extra, descriptions) = Record::quantities(&q);
        Record {
            schema: SCHEMA,
            workload: run.spec.clone(),
            algorithm: ALGORITHM.into(),
            input,
            size: 0,
            seed: 0,
            precision,
            backend,
            flags: Some(run.flags.clone()),
            device: run.device.clone(),
            device_ordinal: None,
            status: Status::Ok,
            value: None,
            reference: None,
            error: None,
            time: None,
            extra,
            descriptions,
            note: Some(note),
            build: run.build.clone(),
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: date.clone(),
            shard: None,
            unit: None,
        }
    };
    let sites = run.sites.iter().map(|s| {
        record(
            address(&s.site),
            s.value_type.clone(),
            quantities(s),
            s.opcode.clone(),
        )
    });
    let outputs = run.outputs.iter().map(|o| {
        record(
            format!("output {}", o.buffer),
            o.dtype.clone(),
            output_quantities(o),
            "digits right against the shadow".into(),
        )
    });
    sites.chain(outputs).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::run;
    use std::collections::HashSet;

    #[test]
    fn one_record_per_site_with_distinct_keys_and_the_measured_quantities() {
        let r = run();
        let recs = records(&r);
        assert_eq!(recs.len(), r.sites.len());
        let keys: HashSet<String> = recs.iter().map(Record::key).collect();
        assert_eq!(keys.len(), recs.len(), "every site is its own point");
        let div = &recs[1];
        assert_eq!(
            (
                div.workload.as_str(),
                div.algorithm.as_str(),
                div.precision.as_str()
            ),
            ("shadow", "shadow", "f64")
        );
        assert_eq!(div.input, "seed /src/shadow.cu:22#0");
        assert_eq!(div.note.as_deref(), Some("div.rn.f64"));
        assert_eq!(div.extra["site"], 1.0);
        assert_eq!(div.extra["line"], 22.0);
        assert_eq!(div.extra["exceptions.nan_origin"], 32.0);
        assert_eq!(div.extra["exceptions.div_by_zero"], 32.0);
        assert_eq!(div.extra["demotion.non_finite"], 32.0);
        assert_eq!(recs[0].extra["demotion.max"], 1.0);
        assert_eq!(recs[0].extra["demotion.sum"], 64.0);
        for rec in &recs {
            assert_eq!(
                rec.extra.keys().collect::<Vec<_>>(),
                rec.descriptions.keys().collect::<Vec<_>>(),
                "every quantity is described"
            );
            // Records survive the store's round trip.
            let line = serde_json::to_string(rec).unwrap();
            assert_eq!(&Record::from_json_line(&line).unwrap(), rec);
        }
    }

    #[test]
    fn addresses_keep_full_paths_and_the_inlined_chain_innermost_first() {
        let site = Site {
            function: "k".into(),
            file: "/usr/include/m.hpp".into(),
            line: 300,
            ordinal: 2,
            inlined: vec![("/src/k.cu".into(), 16), ("/usr/include/m.hpp".into(), 290)],
        };
        assert_eq!(
            address(&site),
            "k /usr/include/m.hpp:300#2 < /usr/include/m.hpp:290 < /src/k.cu:16"
        );
    }
}
