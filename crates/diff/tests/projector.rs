//! The projector example (examples/diff/projector): without a GPU, its CPU reference is checked
//! against the program itself (NVRTC's PTX with every cause switched, run in the PTX
//! interpreter, equals the reference bit for bit); on a GPU, `mantissa diff` must name exactly
//! the seeded causes on their lines and nothing else, and refuse bad input in one line.

mod support;

use mantissa_diff::{diff, Against, DiffError, DiffRequest, DiffRun};
use mantissa_gpu::{Arch, FlagSet, Source, Target};
use mantissa_harness::Spec;
use mantissa_ptx::interp::{run, Arg, Launch, Memory};
use mantissa_ptx::pass::cause::{candidates, switch, Cause};
use std::collections::BTreeSet;
use support::*;

#[test]
fn the_x86_replica_matches_known_casts() {
    assert_eq!(x86_u32(-1.0), 0xFFFF_FFFF);
    assert_eq!(x86_u32(-0.5), 0);
    assert_eq!(x86_u32(4294967296.0), 0);
    assert_eq!(x86_u32(f32::NAN), 0);
    assert_eq!(x86_u32(3e9), 3_000_000_000);
    assert_eq!(x86_u32(-2049.7), 0u32.wrapping_sub(2049));
    assert_eq!(x86_u32(1e20), 0);
}

#[cfg(target_arch = "x86_64")]
#[test]
#[allow(unused_unsafe)] // The intrinsic is safe from Rust 1.87 on; MSRV 1.85 needs the block.
fn the_x86_replica_is_the_x86_instruction() {
    use std::arch::x86_64::{_mm_cvttss_si64, _mm_set_ss};
    let mut x = 1.0e-3f32;
    let mut values = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
    ];
    while x < 1e30 {
        values.extend([x, -x, x + 0.5, -x - 0.5]);
        x *= 1.37;
    }
    for v in values {
        // SAFETY: SSE is part of x86-64; the intrinsic reads only its argument.
        let wide = unsafe { _mm_cvttss_si64(_mm_set_ss(v)) }.to_le_bytes();
        let want = u32::from_le_bytes([wide[0], wide[1], wide[2], wide[3]]);
        assert_eq!(x86_u32(v), want, "x = {v:e}");
    }
}

/// The projector built by NVRTC under `flags` (PTX for sm_90), when NVRTC is installed.
fn build(flags: FlagSet) -> Option<mantissa_ptx::Module> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let compiled = nvrtc
        .compile(
            &Source::new("projector.cu", SOURCE),
            flags,
            Target::Ptx(Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    Some(mantissa_ptx::parse(&compiled.ptx).module)
}

/// Runs the projector's kernel of `m` in the interpreter on `vol`.
fn interpret(m: &mantissa_ptx::Module, vol: &[f32]) -> (Vec<f32>, Vec<u32>) {
    let mut mem = Memory::new();
    let v = mem.f32s(vol);
    let proj = mem.alloc(M * 4);
    let bins = mem.alloc(M * 4);
    let args = [
        Arg::u64(v),
        Arg::u64(proj),
        Arg::u64(bins),
        Arg::f32(X0),
        Arg::f32(DIST),
        Arg::f32(BIAS),
        Arg::i32(NX as i32),
        Arg::i32(M as i32),
        Arg::i32(STEPS as i32),
    ];
    run(
        m,
        "project",
        Launch::linear((M / 128) as u32, 128),
        &args,
        &mut mem,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = mem.read_f32s(proj, M).unwrap_or_else(|e| panic!("{e}"));
    let raw = mem.read(bins, M * 4).unwrap_or_else(|e| panic!("{e}"));
    let b = raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (p, b)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// (line, cause) of every candidate of the NVRTC build under `flags`, and whether switching
/// all of them computes the CPU reference in the interpreter.
#[test]
fn every_cause_switched_computes_the_cpu_reference_in_the_interpreter() {
    let (Some(default), Some(strict), Some(approx)) = (
        build(FlagSet::DEFAULT),
        build(FlagSet::STRICT),
        build("approx-div".parse().unwrap_or_else(|e| panic!("{e}"))),
    ) else {
        return;
    };
    let dir = scratch("interp");
    let (_, vol) = write_example(&dir);
    let (want_proj, want_bins) = reference(&vol);
    // The seeded causes, and only candidates on their lines or harmless ones, are listed.
    let list = candidates(&approx, Some(&strict));
    let seeded: BTreeSet<(u32, Cause)> = list
        .iter()
        .filter(|c| c.cause != Cause::FloatToInt || c.site.line == CAST_LINE)
        .map(|c| (c.site.line, c.cause))
        .collect();
    assert_eq!(
        seeded,
        BTreeSet::from([
            (DIVISION_LINE, Cause::Approximate),
            (CONTRACTION_LINE, Cause::Contraction),
            (CAST_LINE, Cause::FloatToInt),
        ]),
        "{list:#?}"
    );
    let all: Vec<usize> = (0..list.len()).filter(|&k| list[k].switchable()).collect();
    let switched = switch(&approx, &list, &all)
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    let (proj, bins) = interpret(&switched, &vol);
    assert_eq!(bits(&proj), bits(&want_proj), "proj");
    assert_eq!(bins, want_bins, "bins");
    // As written (default flags: the fma and the saturating cast), both outputs differ; the
    // strict build differs only in the cast.
    let (proj, bins) = interpret(&default, &vol);
    assert_ne!(bits(&proj), bits(&want_proj));
    assert_ne!(bins, want_bins);
    let (proj, bins) = interpret(&strict, &vol);
    assert_eq!(bits(&proj), bits(&want_proj), "strict proj is the CPU's");
    assert!(bins.iter().zip(&want_bins).any(|(a, b)| a != b));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The projector computed in f64 from its f32 inputs (as the most-accurate build's promoted
/// PTX orders it: the slope divided in f64, the position an fma, each step's `vol + x` added to
/// the sum), each output rounded once.
fn in_f64(vol: &[f32]) -> (Vec<f32>, Vec<u32>) {
    let (x0, dist, bias) = (f64::from(X0), f64::from(DIST), f64::from(BIAS));
    let mut proj = Vec::with_capacity(M);
    let mut bins = Vec::with_capacity(M);
    for i in 0..M as i32 {
        let slope = f64::from(2 * i - M as i32) / dist;
        let mut sum = 0.0f64;
        for k in 0..STEPS {
            let x = slope.mul_add(k as f64, x0);
            let cell = (x.trunc() as i32).clamp(0, NX as i32 - 1) as usize;
            sum += x + f64::from(vol[cell]);
        }
        proj.push(sum as f32);
        // cvt.rzi.u32.f64 saturates (NaN → 0), as Rust's `as` does.
        bins.push((sum - bias) as u32);
    }
    (proj, bins)
}

/// The most-accurate build of the approx-div PTX: the approximate division made `.rn`, then
/// every f32 instruction of the kernel promoted, so it computes the projector in f64 and
/// rounds each output once, bit for bit in the interpreter; its change list names the
/// promotions per line; it assembles. (Its digits against the shadow are the GPU test's.)
#[test]
fn the_most_accurate_build_computes_in_f64_and_rounds_once() {
    use mantissa_diff::builds::{ieee_switches, line_changes, most_accurate, ChangeKind};
    let (Some(strict), Some(approx)) = (
        build(FlagSet::STRICT),
        build("approx-div".parse().unwrap_or_else(|e| panic!("{e}"))),
    ) else {
        return;
    };
    let dir = scratch("accurate");
    let (_, vol) = write_example(&dir);
    let list = candidates(&approx, Some(&strict));
    let ieee = ieee_switches(&list);
    let kinds: Vec<(u32, Cause)> = ieee
        .iter()
        .map(|&k| (list[k].site.line, list[k].cause))
        .collect();
    assert_eq!(kinds, [(DIVISION_LINE, Cause::Approximate)]);
    let run = most_accurate(&approx, &list, &ieee).unwrap_or_else(|e| panic!("{e}"));
    let ptx = run.module.to_string();
    // No f32 arithmetic is left: the kernel has no special function or library code.
    for op in [
        "add.f32",
        "fma.rn.f32",
        "div.",
        "cvt.rzi.s32.f32",
        "cvt.rzi.u32.f32",
    ] {
        let f32_form = ptx.lines().any(|l| l.contains(op) && !l.contains(".f64"));
        assert!(!f32_form, "{op}\n{ptx}");
    }
    assert!(
        ptx.contains("div.rn.f64") && ptx.contains("fma.rn.f64"),
        "{ptx}"
    );
    if let Some(ptxas) = mantissa_ptx::ptxas::find() {
        if let Err(e) = mantissa_ptx::ptxas::assemble_with(&ptxas, &ptx, "sm_90") {
            panic!("ptxas: {e}\n{ptx}");
        }
    }
    let (proj, bins) = interpret(&run.module, &vol);
    let (want_proj, want_bins) = in_f64(&vol);
    assert_eq!(bits(&proj), bits(&want_proj), "proj");
    assert_eq!(bins, want_bins, "bins");
    // Never farther from the f64 projection than the same IEEE switches left in f32 (the
    // interpreter does not run the approximate division of the build as written).
    let ieee_f32 = switch(&approx, &list, &ieee)
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    let (naive, _) = interpret(&ieee_f32, &vol);
    let exact = |i: usize| {
        let slope = f64::from(2 * i as i32 - M as i32) / f64::from(DIST);
        (0..STEPS).fold(0.0f64, |s, k| {
            let x = slope.mul_add(k as f64, f64::from(X0));
            s + x + f64::from(vol[(x.trunc() as i32).clamp(0, NX as i32 - 1) as usize])
        })
    };
    let worse = (0..M)
        .filter(|&i| (f64::from(proj[i]) - exact(i)).abs() > (f64::from(naive[i]) - exact(i)).abs())
        .count();
    assert_eq!(worse, 0);
    assert!(bits(&proj) != bits(&naive));
    // The change list: the division switched, then every line's promotions and the loads and
    // parameters converted into f64 for them.
    let changes = line_changes(&list, &run.reports);
    let per_line: BTreeSet<(u32, &str)> = changes.iter().map(|c| (c.line, c.kind.name())).collect();
    let promoted_lines: BTreeSet<u32> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Promoted)
        .map(|c| c.line)
        .collect();
    for line in [DIVISION_LINE, CONTRACTION_LINE, CAST_LINE, 18, 20] {
        assert!(promoted_lines.contains(&line), "{line}: {per_line:?}");
    }
    assert!(
        per_line.contains(&(DIVISION_LINE, "approximate")),
        "{per_line:?}"
    );
    assert!(per_line.contains(&(20, "to_f64")), "{per_line:?}");
    let division = changes
        .iter()
        .filter(|c| c.line == DIVISION_LINE)
        .map(|c| c.after.as_str())
        .collect::<Vec<_>>();
    assert!(
        division.iter().any(|a| a.starts_with("div.rn.f64")),
        "{division:?}"
    );
    // The saved listing names them.
    let t = mantissa_gpu::Timing::from_samples(vec![1.0, 1.1, 0.9], 2, 1)
        .unwrap_or_else(|| panic!("samples"));
    let saved = mantissa_diff::builds::changes_text(&mantissa_diff::builds::Build {
        name: "most-accurate".into(),
        how: "h".into(),
        flags: "approx-div".into(),
        switched: ieee.clone(),
        changes: changes.clone(),
        time: mantissa_diff::cost::Relative::of(t.clone(), &t),
        errors: Vec::new(),
        within_tolerance: false,
        shadow_unavailable: None,
        ptx: ptx.clone(),
    });
    assert!(saved.contains("projector.cu:17\n  promoted"), "{saved}");
    assert!(saved.contains("-> fma.rn.f64"), "{saved}");
    let sorted = changes
        .windows(2)
        .all(|w| (&w[0].file, w[0].line) <= (&w[1].file, w[1].line));
    assert!(sorted);
    let _ = std::fs::remove_dir_all(&dir);
}

/// (line, cause) of every blamed cause.
fn blamed(run: &DiffRun) -> BTreeSet<(u32, Cause)> {
    run.blamed
        .iter()
        .map(|b| {
            let c = &run.candidates[b.candidate];
            (c.site.line, c.cause)
        })
        .collect()
}

#[test]
fn diff_names_exactly_the_seeded_causes_on_their_lines() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("gpu-seeded");
    let (spec_path, _) = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let request = DiffRequest::new(
        "approx-div".parse().unwrap_or_else(|e| panic!("{e}")),
        Against::Reference,
    );
    let run = diff(&gpu, &spec, &request, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        blamed(&run),
        BTreeSet::from([
            (DIVISION_LINE, Cause::Approximate),
            (CONTRACTION_LINE, Cause::Contraction),
            (CAST_LINE, Cause::FloatToInt),
        ]),
        "{}",
        mantissa_diff::text::render(&run)
    );
    assert_eq!(run.remaining, 0, "{}", mantissa_diff::text::render(&run));
    assert!(run.differing > 0);
    // Each needed cause changes the outputs on its own (whether it alone also fixes an element
    // depends on the others: an element the division spoils is usually spoiled by the fma too).
    for b in &run.blamed {
        assert!(b.alone.changed > 0, "{b:?}");
    }
    let fixes: u64 = run.blamed.iter().map(|b| b.alone.fixes).sum();
    assert!(fixes > 0, "{}", mantissa_diff::text::render(&run));
    // Every blamed line is timed switched off, against the program as written.
    let naive = run.naive_time.as_ref().unwrap_or_else(|| panic!("timed"));
    assert_eq!(
        naive.samples_ms.len(),
        DiffRequest::DEFAULT_REPEATS as usize
    );
    let timed: BTreeSet<u32> = run.costs.iter().map(|c| c.line).collect();
    assert_eq!(
        timed,
        BTreeSet::from([DIVISION_LINE, CONTRACTION_LINE, CAST_LINE])
    );
    for c in &run.costs {
        let t = &c.switched_off;
        assert!((t.ratio - t.time.median_ms / naive.median_ms).abs() < 1e-12);
    }
    println!("{}", mantissa_diff::text::render(&run));
    // Against the strict build (default flags as written), only the contraction differs.
    let strict = DiffRequest::new(FlagSet::DEFAULT, Against::Flags(FlagSet::STRICT));
    let run = diff(&gpu, &spec, &strict, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        blamed(&run),
        BTreeSet::from([(CONTRACTION_LINE, Cause::Contraction)]),
        "{}",
        mantissa_diff::text::render(&run)
    );
    assert_eq!(run.remaining, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The error's text is one line and contains `part`.
fn one_line(e: &DiffError, part: &str) {
    let text = e.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(part), "{text}");
}

#[test]
fn bad_input_is_refused_in_one_line() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("gpu-bad");
    let (spec_path, _) = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    // The same build on both sides: nothing to explain.
    let same = DiffRequest::new(FlagSet::DEFAULT, Against::Flags(FlagSet::DEFAULT));
    let e = diff(&gpu, &spec, &same, &mut |_| {}).err();
    let e = e.unwrap_or_else(|| panic!("a build against itself has no difference"));
    assert!(matches!(e, DiffError::NoDifference { .. }) && e.is_usage());
    one_line(&e, "no difference to explain");
    // A reference of the wrong length.
    mantissa_harness::npy::write(
        &dir.join("proj.npy"),
        &mantissa_gpu::HostData::F32(vec![0.0; M - 1]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let reference = DiffRequest::new(FlagSet::DEFAULT, Against::Reference);
    let e = diff(&gpu, &spec, &reference, &mut |_| {}).err();
    let e = e.unwrap_or_else(|| panic!("a short reference is refused"));
    assert!(e.is_usage(), "{e}");
    one_line(&e, "4095 elements of f32");
    // Two runs of one build that differ: the kernel writes the global timer.
    std::fs::write(
        dir.join("projector.cu"),
        "extern \"C\" __global__ void project(const float* vol, float* proj, unsigned* bins,\n\
         float x0, float dist, float bias, int nx, int m, int steps)\n{\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= m) return;\n\
         unsigned long long t;\n asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n\
         proj[i] = (float)(t & 0xffffff);\n bins[i] = (unsigned)t;\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (spec_path, _) = write_example_keeping_source(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let e = diff(&gpu, &spec, &reference, &mut |_| {}).err();
    let e = e.unwrap_or_else(|| panic!("a timer-dependent program is refused"));
    assert!(matches!(e, DiffError::Nondeterministic(_)), "{e}");
    one_line(&e, "not deterministic");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The spec and references in `dir`, leaving the source file there as it is.
fn write_example_keeping_source(dir: &std::path::Path) -> (std::path::PathBuf, Vec<f32>) {
    let source = std::fs::read_to_string(dir.join("projector.cu")).unwrap_or_default();
    let out = write_example(dir);
    std::fs::write(dir.join("projector.cu"), source).unwrap_or_else(|e| panic!("{e}"));
    out
}

/// Writes the example's reference files (proj.npy, bins.npy) beside its spec, so that
/// `mantissa diff examples/diff/projector/projector.toml` has its CPU reference.
#[test]
#[ignore = "writes into examples/diff/projector; run by hand"]
fn write_reference() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/diff/projector");
    write_example(&dir);
}
