//! The [`TuneRun`](crate::flow::TuneRun) document read back (a shard writes its run as JSON
//! and `mantissa merge` reads the shards'): serde helpers for the parts that do not round-trip
//! through JSON by derive.
//!
//! serde_json writes a non-finite f64 as `null`, which reads back as no number at all, and a
//! tuning run has them: the digits of a bit-identical output are +inf, those of a failed trial
//! −inf, a FISet without casts has r_ac +inf. Those fields are written as the record's strings
//! (`"inf"`, `"-inf"`, `"nan"`, [`mantissa_report::record::float`]) so that a merged run says
//! what a whole one says. [`Search`] and [`Trial`] go through mirrors here rather than being
//! annotated where they are defined, so that the strategies stay free of file formats.

use crate::evaluate::{Thresholds, Trial};
use crate::strategy::Search;
use crate::unit::Config;
use mantissa_report::record::float;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An optional f64 that may be non-finite (`#[serde(with = "crate::doc::opt_float")]`).
pub mod opt_float {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct F(#[serde(with = "float")] f64);

    /// `null`, a number, or `"inf"`, `"-inf"`, `"nan"`.
    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        x.map(F).serialize(s)
    }

    /// The inverse of [`serialize`].
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<F>::deserialize(d)?.map(|f| f.0))
    }
}

/// The worst elements of an output, `(index, value, f64 program's value, digits)`, any of them
/// non-finite (`#[serde(with = "crate::doc::worst")]`).
pub mod worst {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct W(
        usize,
        #[serde(with = "float")] f64,
        #[serde(with = "float")] f64,
        #[serde(with = "float")] f64,
    );

    /// Each element as a 4-array, its floats as [`float`] writes them.
    pub fn serialize<S: Serializer>(v: &[(usize, f64, f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        let w: Vec<W> = v.iter().map(|&(i, a, b, d)| W(i, a, b, d)).collect();
        w.serialize(s)
    }

    /// The inverse of [`serialize`].
    #[allow(clippy::type_complexity)]
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(usize, f64, f64, f64)>, D::Error> {
        let w = Vec::<W>::deserialize(d)?;
        Ok(w.into_iter().map(|W(i, a, b, d)| (i, a, b, d)).collect())
    }
}

#[derive(Serialize, Deserialize)]
struct TrialDoc {
    #[serde(with = "float")]
    digits: f64,
    within_tolerance: Option<bool>,
    #[serde(with = "opt_float")]
    speedup_pct: Option<f64>,
    #[serde(with = "opt_float")]
    noise_pct: Option<f64>,
    #[serde(with = "opt_float")]
    time_ms: Option<f64>,
    failed: Option<String>,
}

impl From<Trial> for TrialDoc {
    fn from(t: Trial) -> TrialDoc {
        // Every field named: a field added to Trial fails to compile here until it is carried.
        let Trial {
            digits,
            within_tolerance,
            speedup_pct,
            noise_pct,
            time_ms,
            failed,
        } = t;
        TrialDoc {
            digits,
            within_tolerance,
            speedup_pct,
            noise_pct,
            time_ms,
            failed,
        }
    }
}

impl From<TrialDoc> for Trial {
    fn from(t: TrialDoc) -> Trial {
        Trial {
            digits: t.digits,
            within_tolerance: t.within_tolerance,
            speedup_pct: t.speedup_pct,
            noise_pct: t.noise_pct,
            time_ms: t.time_ms,
            failed: t.failed,
        }
    }
}

/// [`Search`] with its trials' non-finite digits kept (`#[serde(with = "crate::doc::search")]`).
pub mod search {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct SearchDoc {
        strategy: String,
        thresholds: Thresholds,
        chosen: Option<Config>,
        chosen_trial: Option<TrialDoc>,
        trials: usize,
        log: Vec<(Config, TrialDoc)>,
        first_met_at: Option<usize>,
        #[serde(default, skip_serializing_if = "is_zero")]
        unused_ahead: usize,
    }

    fn is_zero(n: &usize) -> bool {
        *n == 0
    }

    /// Writes `s` as derive would, with the trials' floats as [`float`] writes them.
    pub fn serialize<S: Serializer>(s: &Search, ser: S) -> Result<S::Ok, S::Error> {
        let Search {
            strategy,
            thresholds,
            chosen,
            chosen_trial,
            trials,
            log,
            first_met_at,
            unused_ahead,
        } = s.clone();
        SearchDoc {
            strategy,
            thresholds,
            chosen,
            chosen_trial: chosen_trial.map(TrialDoc::from),
            trials,
            log: log.into_iter().map(|(c, t)| (c, t.into())).collect(),
            first_met_at,
            unused_ahead,
        }
        .serialize(ser)
    }

    /// The inverse of [`serialize`].
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Search, D::Error> {
        let s = SearchDoc::deserialize(d)?;
        Ok(Search {
            strategy: s.strategy,
            thresholds: s.thresholds,
            chosen: s.chosen,
            chosen_trial: s.chosen_trial.map(Trial::from),
            trials: s.trials,
            log: s.log.into_iter().map(|(c, t)| (c, t.into())).collect(),
            first_met_at: s.first_met_at,
            unused_ahead: s.unused_ahead,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::flow::TuneRun;

    #[test]
    fn a_run_reads_back_as_written_non_finite_digits_included() {
        let mut run = crate::fixture::run();
        run.references.digits32 = f64::INFINITY;
        run.fisets[0].r_ac = Some(f64::INFINITY);
        run.searches[0].search.log[0].1.failed = Some("out of resources".into());
        run.searches[0].search.log[0].1.digits = f64::NEG_INFINITY;
        run.searches[0].unit = 4;
        run.searches[0].search.unused_ahead = 3;
        run.devices = vec![(0, run.references), (1, run.references)];
        run.shard = Some("1/3".parse().unwrap());
        let text = serde_json::to_string_pretty(&run).unwrap();
        assert!(text.contains(r#""digits": "inf""#), "{text}");
        assert!(text.contains(r#""digits": "-inf""#), "{text}");
        let back: TuneRun = serde_json::from_str(&text).unwrap();
        // Serialising again gives the same text: nothing was lost or changed on the way.
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
        assert_eq!(back.references.digits32, f64::INFINITY);
        assert_eq!(back.fisets[0].r_ac, Some(f64::INFINITY));
        assert_eq!(back.searches[0].search, run.searches[0].search);
        assert_eq!((back.searches[0].unit, back.shard), (4, run.shard));
        // A document written before shards reads as a whole run's, its searches at unit 0.
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("shard");
        old["searches"][0].as_object_mut().unwrap().remove("unit");
        let back: TuneRun = serde_json::from_value(old).unwrap();
        assert_eq!((back.searches[0].unit, back.shard), (0, None));
        let bad = text.replace(r#""units": "fisets""#, r#""units": "buffers""#);
        let e = serde_json::from_str::<TuneRun>(&bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected \"fisets\" or \"variables\""), "{e}");
    }
}
