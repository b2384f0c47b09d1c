//! Every workload of `mantissa study`, in one list. Adding a workload is one module implementing
//! [`Workload`] and one line in [`WORKLOADS`]. Only the entry points (the runner and the CLI)
//! import this module; the workloads and the framework do not.

use crate::study::{Point, StudyError};
use crate::workload::Workload;
use crate::{chains, intensity, linalg, reductions};

/// Every workload, in the order a run takes them by default.
pub static WORKLOADS: [&dyn Workload; 8] = [
    &reductions::SUM,
    &reductions::DOT,
    &reductions::PI,
    &intensity::INTENSITY,
    &linalg::GE,
    &linalg::LU,
    &chains::CHAIN,
    &chains::DOUNDO,
];

/// The workload a command line names (its name or an alias, any case).
pub fn find(name: &str) -> Result<&'static dyn Workload, StudyError> {
    let wanted = name.trim().to_ascii_lowercase();
    WORKLOADS
        .iter()
        .copied()
        .find(|w| w.name() == wanted || w.aliases().contains(&wanted.as_str()))
        .ok_or_else(|| {
            let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
            let (last, rest) = names.split_last().expect("the registry is not empty");
            StudyError::Usage(format!(
                "unknown workload {name:?}: expected {} or {last}",
                rest.join(", ")
            ))
        })
}

/// The workload that made `point` (by the record name it carries).
pub fn of_point(point: &Point) -> Option<&'static dyn Workload> {
    WORKLOADS
        .iter()
        .copied()
        .find(|w| w.record_names().contains(&point.workload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intensity::Intensity;
    use crate::linalg::{LU, MISMATCH_TOLERANCE};
    use crate::study::{CpuTiming, Plan, StudyConfig, StudyPrecision, Suite};
    use crate::workload::descriptions;
    use mantissa_num::precision::Precision;
    use std::collections::{BTreeMap, HashSet};

    #[test]
    fn names_and_record_names_are_unique() {
        let mut names = HashSet::new();
        let mut records = HashSet::new();
        for w in WORKLOADS {
            assert!(names.insert(w.name()), "{w}");
            for a in w.aliases() {
                assert!(names.insert(a), "{a}");
            }
            for r in w.record_names() {
                assert!(records.insert(*r), "{r}");
            }
            assert!(!w.description().is_empty() && !w.description().contains('\n'));
        }
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused_in_one_line() {
        assert_eq!(find("sum").unwrap().name(), "sum");
        assert_eq!(find(" LU ").unwrap().name(), "lu");
        assert_eq!(find("do-undo").unwrap().name(), "doundo");
        let e = find("fft").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown workload \"fft\": expected sum, dot, pi, intensity, ge, lu, chain or doundo"
        );
    }

    #[test]
    fn descriptions_cover_the_quantities_present_and_their_families() {
        let extra: BTreeMap<String, f64> = [
            ("ptx.add.f64", 3.0),
            ("rel_err_mean", 1e-9),
            ("not_a_quantity", 1.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let d = descriptions(&Intensity, &extra);
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            ["ptx.add.f64", "rel_err_mean"]
        );
        assert!(d["ptx.add.f64"].contains("census"));
    }

    #[test]
    fn thresholds_appear_in_the_descriptions() {
        let tolerance = format!("{MISMATCH_TOLERANCE:e}");
        let (_, what) = LU
            .quantities()
            .iter()
            .find(|(name, _)| *name == "mismatches")
            .unwrap();
        assert!(what.contains(&tolerance), "{what} lacks {tolerance}");
        let saturated = format!("{}", crate::intensity::SATURATED);
        let (_, what) = Intensity
            .quantities()
            .iter()
            .find(|(name, _)| *name == "saturated")
            .unwrap();
        assert!(what.contains(&saturated), "{what} lacks {saturated}");
    }

    #[test]
    fn every_quantity_a_cpu_point_reports_is_described() {
        let cfg = StudyConfig {
            workloads: WORKLOADS.to_vec(),
            suite: Suite::Quick,
            cpu: true,
            precisions: vec![StudyPrecision::Real(Precision::F64)],
            classes: None,
            sizes: Some(vec![8]),
            threads: vec![1],
            seed: 1,
        };
        let timing = CpuTiming {
            budget: std::time::Duration::from_millis(1),
            min_reps: 1,
            max_reps: 1,
            stop: Default::default(),
        };
        let mut seen = HashSet::new();
        for point in Plan::cpu(&cfg).points {
            let w = of_point(&point).unwrap();
            if !seen.insert((point.workload, point.algorithm)) {
                continue;
            }
            let m = w.cpu_runner().measure(&point, None, timing);
            let described = descriptions(w, &m.extra);
            let missing: Vec<&String> = m
                .extra
                .keys()
                .filter(|k| !described.contains_key(*k))
                .collect();
            assert!(missing.is_empty(), "{}: {missing:?}", point.workload);
        }
        assert!(seen.len() >= WORKLOADS.len());
    }

    #[test]
    fn gpu_points_carry_the_flag_set_they_are_compiled_with_and_cpu_points_none() {
        let mut cfg = StudyConfig::for_tests(WORKLOADS.to_vec(), Suite::Quick);
        assert!(Plan::cpu(&cfg).points.iter().all(|p| p.flags.is_none()));
        cfg.cpu = false;
        let gpu = Plan::gpu(&cfg, (8, 32), 0).points;
        for p in &gpu {
            let want = match p.workload {
                "doundo" => crate::chains::DivMode::from_name(p.algorithm)
                    .unwrap()
                    .flags(),
                "chain" => crate::chains::CHAIN_FLAGS,
                "intensity" => crate::intensity::FLAGS,
                "ge" | "lu" => crate::linalg::FLAGS,
                _ => crate::gpu_reduce::FLAGS,
            };
            assert_eq!(p.flags, Some(want), "{}", p.key("gpu"));
        }
        // do/undo's div-full is the only point built otherwise.
        assert!(gpu
            .iter()
            .any(|p| p.flags != Some(mantissa_gpu::FlagSet::DEFAULT)));
    }
}
