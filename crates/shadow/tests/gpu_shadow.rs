//! GPU tests of `mantissa shadow` (skip without a GPU; fail under `MANTISSA_REQUIRE_GPU=1`):
//! - the example `examples/shadow` reports exactly its seeded lines: the NaN starts on the
//!   `nan-origin` line (0/0 in thread 0: one NaN origin, one division by zero), propagates to the
//!   `nan-propagated` line (one NaN, no origin), and no other line of either kernel has an
//!   exception; the largest demotion error is the cancellation line's, exactly 1 in each of the
//!   n threads (its f32 form computes 1e8 − 1e8 = 0 where double keeps x);
//! - every shipped example spec (`examples/kernels/*/*.toml`, f64 and f32 programs; they need
//!   nvcc) runs instrumented with outputs bit-identical to the program as written (`analyse`
//!   refuses anything else), with every site measured.
//!
//! What each run found is printed, so a GPU run's log shows it.

use mantissa_gpu::testing::{require_gpu_or_skip, require_nvcc_or_skip};
use mantissa_gpu::FlagSet;
use mantissa_harness::Spec;
use mantissa_shadow::lines::{Exceptions, LineSummary};
use mantissa_shadow::text::{render, Shown};
use mantissa_shadow::{analyse, Analyses, ShadowRequest, ShadowRun};
use std::path::{Path, PathBuf};

/// The example's source, for its LINE markers.
const SHADOW_CU: &str = include_str!("../../../examples/shadow/shadow.cu");

/// Tests run in the crate's directory (cargo, and the GPU machine's runner).
fn examples() -> PathBuf {
    Path::new("../../examples").to_path_buf()
}

/// The line of `// LINE:name` in shadow.cu.
fn marked(name: &str) -> u32 {
    let tag = format!("// LINE:{name}");
    let found: Vec<u32> = SHADOW_CU
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&tag))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(found.len(), 1, "one {tag} in shadow.cu");
    found[0]
}

fn analysed(spec: &Path, analyses: Analyses) -> ShadowRun {
    let Some(gpu) = require_gpu_or_skip() else {
        unreachable!("callers check for a GPU first")
    };
    let spec = Spec::load(spec).unwrap_or_else(|e| panic!("{e}"));
    let request = ShadowRequest {
        flags: FlagSet::DEFAULT,
        analyses,
        time: false,
    };
    let run = analyse(&gpu, &spec, &request, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    println!("{}", render(&run, Shown::All));
    run
}

fn lines(run: &ShadowRun) -> Vec<&LineSummary> {
    run.functions.iter().flat_map(|f| &f.lines).collect()
}

#[test]
fn the_shadow_example_reports_exactly_its_seeded_lines() {
    if require_gpu_or_skip().is_none() {
        return;
    }
    let n = 4096u64;
    let run = analysed(&examples().join("shadow/shadow.toml"), Analyses::default());
    assert_eq!(run.kernels, ["seeded", "clean"]);
    // One run of the demotion-and-exceptions build (no split), one of the shadow-values build.
    let analyses: Vec<&str> = run.runs.iter().map(|r| r.analyses.as_str()).collect();
    assert_eq!(
        analyses,
        ["demotion,exceptions", "shadow"],
        "no split: {:?}",
        run.notes
    );
    let (origin, propagated, cancel) = (
        marked("nan-origin"),
        marked("nan-propagated"),
        marked("cancel"),
    );

    // Exceptions: exactly the two seeded lines, with exact counts.
    let mut with_exceptions: Vec<(String, u32, Exceptions)> = lines(&run)
        .into_iter()
        .filter_map(|l| {
            l.exceptions
                .filter(Exceptions::any)
                .map(|e| (l.function.clone(), l.line, e))
        })
        .collect();
    with_exceptions.sort_by_key(|(_, line, _)| *line);
    assert_eq!(
        with_exceptions,
        vec![
            (
                "seeded".to_string(),
                origin,
                Exceptions {
                    nan: 1,
                    nan_origin: 1,
                    div_by_zero: 1,
                    ..Exceptions::default()
                }
            ),
            (
                "seeded".to_string(),
                propagated,
                Exceptions {
                    nan: 1,
                    ..Exceptions::default()
                }
            ),
        ]
    );
    // The origin line ranks first in its kernel; the clean kernel has no exception at all.
    assert_eq!(run.functions[0].lines[0].line, origin);
    let clean = run
        .functions
        .iter()
        .find(|f| f.function == "clean")
        .expect("the clean kernel has sites");
    assert_eq!(clean.exceptions, Some(Exceptions::default()));

    // Demotion: the cancellation line has the largest error, 1 in every thread.
    let worst = lines(&run)
        .into_iter()
        .filter(|l| l.demotion.is_some())
        .max_by(|a, b| {
            let (a, b) = (a.demotion.unwrap(), b.demotion.unwrap());
            a.max.total_cmp(&b.max)
        })
        .unwrap();
    assert_eq!((worst.function.as_str(), worst.line), ("seeded", cancel));
    let d = worst.demotion.unwrap();
    assert_eq!((d.count, d.sum, d.max, d.mean), (n, n as f64, 1.0, 1.0));
    assert_eq!((d.zero_reference, d.non_finite), (0, 0));
    // Every other demotion error is far below it (the absorption line's is about 1e-8).
    for l in lines(&run).into_iter().filter(|l| l.line != cancel) {
        if let Some(d) = l.demotion {
            assert!(d.max < 1e-6, "{}:{}: {d:?}", l.function, l.line);
        }
    }
}

#[test]
fn exceptions_alone_find_the_same_lines_and_measure_no_demotion() {
    if require_gpu_or_skip().is_none() {
        return;
    }
    let only = Analyses {
        demotion: false,
        shadow: false,
        exceptions: true,
    };
    let run = analysed(&examples().join("shadow/shadow.toml"), only);
    assert!(run.sites.iter().all(|s| s.demotion.is_none()));
    let mut seeded: Vec<u32> = lines(&run)
        .into_iter()
        .filter(|l| l.exceptions.is_some_and(|e| e.any()))
        .map(|l| l.line)
        .collect();
    seeded.sort();
    assert_eq!(seeded, [marked("nan-origin"), marked("nan-propagated")]);
}

#[test]
fn every_shipped_example_runs_instrumented_with_bit_identical_outputs() {
    if require_gpu_or_skip().is_none() || require_nvcc_or_skip().is_none() {
        return;
    }
    let mut specs: Vec<PathBuf> = std::fs::read_dir(examples().join("kernels"))
        .unwrap()
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_dir())
        .flat_map(|dir| {
            std::fs::read_dir(dir)
                .unwrap()
                .filter_map(|f| f.ok().map(|f| f.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .collect::<Vec<_>>()
        })
        .collect();
    specs.sort();
    assert!(specs.len() >= 10, "the examples: {specs:?}");
    for spec in &specs {
        // `analyse` fails with ChangedOutputs unless every output is bit-identical.
        let run = analysed(spec, Analyses::default());
        assert!(!run.sites.is_empty(), "{}: no site", spec.display());
        assert!(!run.runs.is_empty(), "{}: not run", spec.display());
        let covered: u32 = run.runs.iter().map(|r| r.sites.end - r.sites.start).sum();
        assert!(
            covered as usize >= run.sites.len(),
            "{}: every site instrumented in some run",
            spec.display()
        );
    }
}
