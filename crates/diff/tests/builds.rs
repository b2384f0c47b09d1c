//! Seed 003's four builds of the projector example (examples/diff/projector) and bad input.
//! Without a GPU: the saved files (a spec that loads, reading the PTX, with paths that work
//! from the directory) and the references refused in one line before anything runs. On a GPU:
//! the four builds made, each what its definition says (most-accurate computing in f64, its
//! digits against its own shadow no fewer than the naive build's), and each saved spec, run
//! through the harness, computes what the diff measured for it.

mod support;

use mantissa_diff::builds::{Build, ChangeKind, NAMES};
use mantissa_diff::cost::Relative;
use mantissa_diff::{check_references, diff, Against, DiffError, DiffRequest};
use mantissa_gpu::{HostData, Timing};
use mantissa_harness::spec::FrontEnd;
use mantissa_harness::{npy, RunnerOptions, Spec, TrialRunner, TrialTiming};
use mantissa_ptx::pass::cause::Cause;
use std::collections::BTreeSet;
use support::*;

/// The error's text is one line and contains `part`.
fn one_line(e: &DiffError, part: &str) {
    let text = e.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(part), "{text}");
}

#[test]
fn references_of_the_wrong_length_or_type_are_refused_in_one_line_without_a_gpu() {
    let dir = scratch("refs");
    let (spec_path, _) = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    check_references(&spec).unwrap_or_else(|e| panic!("{e}"));
    // An integer reference for the f32 output.
    npy::write(&dir.join("proj.npy"), &HostData::U32(vec![0; M])).unwrap_or_else(|e| panic!("{e}"));
    let e = check_references(&spec).err();
    let e = e.unwrap_or_else(|| panic!("a u32 reference of an f32 output is refused"));
    assert!(e.is_usage());
    one_line(&e, "4096 elements of u32");
    // A reference with one element too many.
    npy::write(&dir.join("proj.npy"), &HostData::F32(vec![0.0; M + 1]))
        .unwrap_or_else(|e| panic!("{e}"));
    let e = check_references(&spec).err();
    let e = e.unwrap_or_else(|| panic!("a long reference is refused"));
    one_line(&e, "4097 elements of f32");
    // f64 references of the right length are accepted (rounded to the output's type).
    npy::write(&dir.join("proj.npy"), &HostData::F64(vec![0.0; M]))
        .unwrap_or_else(|e| panic!("{e}"));
    check_references(&spec).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn timing() -> Timing {
    Timing::from_samples(vec![1.0, 1.1, 0.9], 2, 1).unwrap_or_else(|| panic!("samples"))
}

#[test]
fn a_saved_build_is_a_spec_that_reads_its_ptx_from_anywhere() {
    let dir = scratch("save");
    let (spec_path, _) = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let build = Build {
        name: "naive".into(),
        how: "as written".into(),
        flags: "default".into(),
        switched: Vec::new(),
        changes: Vec::new(),
        time: Relative::of(timing(), &timing()),
        errors: Vec::new(),
        within_tolerance: false,
        shadow_unavailable: None,
        ptx: "// the PTX\n".into(),
    };
    let out = dir.join("elsewhere").join("builds");
    let files = mantissa_diff::save::save(&out, &spec, &[build]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(files.len(), 3);
    let saved = Spec::load(&out.join("naive.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(saved.source.front_end, FrontEnd::Ptx);
    assert_eq!(saved.source.file, out.join("naive.ptx"));
    assert_eq!(saved.name, "projector-naive");
    // Its references are the user's files, found from the other directory.
    let refs = mantissa_harness::data::references(&saved).unwrap_or_else(|e| panic!("{e}"));
    let mine = mantissa_harness::data::references(&spec).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refs, mine);
    let changes = std::fs::read_to_string(out.join("naive.changes.txt")).unwrap_or_default();
    assert!(changes.contains("(no instruction changed)"), "{changes}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn by_name<'r>(builds: &'r [Build], name: &str) -> &'r Build {
    builds
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no {name} build"))
}

#[test]
fn the_four_builds_are_what_they_say_and_their_saved_specs_compute_what_was_measured() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("gpu-builds");
    let (spec_path, _) = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let mut request = DiffRequest::new(
        "approx-div".parse().unwrap_or_else(|e| panic!("{e}")),
        Against::Reference,
    );
    request.builds = true;
    let run = diff(&gpu, &spec, &request, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let text = mantissa_diff::text::render(&run);
    println!("{text}");
    let names: Vec<&str> = run.builds.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, NAMES, "{text}");
    let differing = |b: &Build| b.errors.iter().map(|e| e.differing).sum::<u64>();
    // naive: the program as written, as far from the reference as the diff found it.
    let naive = by_name(&run.builds, "naive");
    assert!(naive.switched.is_empty() && naive.changes.is_empty());
    assert_eq!(differing(naive), run.differing, "{text}");
    // cpu-matching: the minimal set, equal to the reference.
    let cpu = by_name(&run.builds, "cpu-matching");
    let minimal: BTreeSet<usize> = run.blamed.iter().map(|b| b.candidate).collect();
    assert_eq!(
        cpu.switched.iter().copied().collect::<BTreeSet<_>>(),
        minimal
    );
    assert_eq!(differing(cpu), run.remaining, "{text}");
    assert!(cpu.within_tolerance, "{text}");
    let lines: BTreeSet<u32> = cpu.changes.iter().map(|c| c.line).collect();
    assert_eq!(
        lines,
        BTreeSet::from([DIVISION_LINE, CONTRACTION_LINE, CAST_LINE])
    );
    // fastest: within tolerance and no slower, by median, than any of the four that is.
    let fastest = by_name(&run.builds, "fastest");
    assert!(fastest.within_tolerance, "{text}");
    for b in run.builds.iter().filter(|b| b.within_tolerance) {
        assert!(
            fastest.time.time.median_ms <= b.time.time.median_ms,
            "{}\n{text}",
            b.name
        );
    }
    // most-accurate: only the approximate division switched (no ftz under approx-div), then
    // the f32 arithmetic promoted to f64, the contraction kept as an fma (in f64).
    let accurate = by_name(&run.builds, "most-accurate");
    let switched: Vec<_> = accurate
        .changes
        .iter()
        .filter(|c| matches!(c.kind, ChangeKind::Switched(_)))
        .collect();
    assert!(!switched.is_empty());
    for c in switched {
        assert_eq!(
            (c.line, c.kind),
            (DIVISION_LINE, ChangeKind::Switched(Cause::Approximate)),
            "{c:?}"
        );
        assert!(c.after.starts_with("div.rn"), "{c:?}");
    }
    let promoted: BTreeSet<u32> = accurate
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Promoted)
        .map(|c| c.line)
        .collect();
    for line in [DIVISION_LINE, CONTRACTION_LINE, CAST_LINE] {
        assert!(promoted.contains(&line), "{line}: {promoted:?}");
    }
    assert!(accurate.ptx.contains("fma.rn.f64") && !accurate.ptx.contains("fma.rn.f32"));
    assert!(accurate.how.contains("promoted"), "{}", accurate.how);
    // Each build's digits against its own higher-precision shadow: the naive build's are
    // finite, and the most-accurate build's are no fewer than the naive build's on every
    // floating-point output (min and median); the integer output has none.
    for b in [naive, accurate] {
        assert_eq!(b.shadow_unavailable, None, "{}\n{text}", b.name);
    }
    for (n, a) in naive.errors.iter().zip(&accurate.errors) {
        match (n.shadow, a.shadow) {
            (Some(n), Some(a)) => {
                let (nmin, nmed) = (n.min.unwrap_or(f64::NAN), n.median.unwrap_or(f64::NAN));
                assert!(nmin.is_finite() && nmed.is_finite(), "{n:?}\n{text}");
                assert!(a.min.is_some_and(|m| m >= nmin), "{a:?} vs {n:?}\n{text}");
                assert!(
                    a.median.is_some_and(|m| m >= nmed),
                    "{a:?} vs {n:?}\n{text}"
                );
            }
            (None, None) => assert_eq!(n.name, "bins", "{text}"),
            other => panic!("{}: {other:?}\n{text}", n.name),
        }
    }
    assert!(naive.errors.iter().any(|e| e.shadow.is_some()), "{text}");
    // Each saved spec, run through the harness as `mantissa run` runs it, computes what the
    // diff measured for its build.
    let out = dir.join("builds");
    mantissa_diff::save::save(&out, &spec, &run.builds).unwrap_or_else(|e| panic!("{e}"));
    for b in &run.builds {
        let saved = Spec::load(&out.join(format!("{}.toml", b.name)))
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        let opts = RunnerOptions {
            baseline_timing: TrialTiming::AccuracyOnly,
            download_outputs: true,
            ..RunnerOptions::default()
        };
        let runner = TrialRunner::new(&gpu, &saved, mantissa_gpu::FlagSet::DEFAULT, opts)
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        let refs = mantissa_harness::data::references(&saved).unwrap_or_else(|e| panic!("{e}"));
        let mut saved_differing = 0;
        for (o, r) in saved.outputs.iter().zip(refs) {
            let data = runner
                .baseline()
                .downloaded
                .iter()
                .find(|(n, _)| *n == o.buffer)
                .map(|(_, d)| d)
                .unwrap_or_else(|| panic!("{} not downloaded", o.buffer));
            let values = mantissa_harness::compare::output_values(data, None, None);
            let dtype = saved
                .buffer(&o.buffer)
                .map_or(mantissa_gpu::DType::F64, |b| b.dtype);
            let r = r.unwrap_or_default();
            saved_differing += mantissa_harness::compare::compare(dtype, &values, &r).differing;
        }
        assert_eq!(saved_differing as u64, differing(b), "{}\n{text}", b.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
