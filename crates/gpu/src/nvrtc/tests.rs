use super::*;
use crate::testing::require_nvrtc_or_skip;

#[test]
fn options_per_flag_set_and_target() {
    let t = Target::Cubin(Arch::new(9, 0));
    assert_eq!(
        Compiler::options(FlagSet::DEFAULT, t, &[]),
        ["--gpu-architecture=sm_90", "-lineinfo"]
    );
    assert_eq!(
        Compiler::options(FlagSet::STRICT, t, &["-DN=4".to_string()]),
        [
            "--fmad=false",
            "--prec-div=true",
            "--prec-sqrt=true",
            "--ftz=false",
            "--gpu-architecture=sm_90",
            "-lineinfo",
            "-DN=4"
        ]
    );
    assert_eq!(
        Compiler::options(FlagSet::FAST, Target::Ptx(Arch::new(8, 6)), &[]),
        [
            "--use_fast_math",
            "--gpu-architecture=compute_86",
            "-lineinfo"
        ]
    );
    for set in FlagSet::ALL {
        let opts = Compiler::options(set, t, &[]);
        assert!(opts.iter().any(|o| o == "-lineinfo"), "{set}");
        assert_eq!(
            opts.iter()
                .filter(|o| o.starts_with("--gpu-architecture="))
                .count(),
            1
        );
    }
}

#[test]
fn target_names_and_serde() {
    assert_eq!(Target::Cubin(Arch::new(9, 0)).to_string(), "sm_90");
    assert_eq!(Target::Ptx(Arch::new(9, 0)).to_string(), "compute_90");
    let json = serde_json::to_string(&Target::Cubin(Arch::new(9, 0))).unwrap();
    assert_eq!(json, r#"{"kind":"cubin","arch":{"major":9,"minor":0}}"#);
    assert_eq!(
        serde_json::from_str::<Target>(&json).unwrap(),
        Target::Cubin(Arch::new(9, 0))
    );
}

#[test]
fn floating_point_options_outside_flag_sets_are_refused() {
    for bad in [
        "--fmad=false",
        "-use_fast_math",
        "--gpu-architecture=sm_80",
        "-arch=sm_80",
        "--ftz=true",
    ] {
        let src = Source::new("k.cu", "").with_option(bad);
        let err = check_extra_options(&src).unwrap_err().to_string();
        assert!(
            err.contains(bad) && err.contains("choose a flag set"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }
    let ok = Source::new("k.cu", "")
        .with_option("-DN=4")
        .with_option("--std=c++17");
    assert!(check_extra_options(&ok).is_ok());
}

#[test]
fn builtins_failure_says_what_to_do() {
    let d = nvrtc_failure_detail(
            nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE,
            "nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.",
        );
    assert!(
        d.contains("LD_LIBRARY_PATH") && d.contains("failed to open"),
        "{d}"
    );
    assert!(!d.contains('\n'));
}

// ---- The tests below need libnvrtc; they skip (with a printed reason) where it is absent.

/// Exercises contraction, division and square root, each on its own line.
const ARITH: &str = r#"extern "C" __global__ void arith(float* out, const float* a, const float* b, const float* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[3 * i + 0] = a[i] * b[i] + c[i];
    out[3 * i + 1] = a[i] / b[i];
    out[3 * i + 2] = sqrtf(c[i]);
}
"#;

fn compile_ptx(c: &Compiler, flags: FlagSet) -> String {
    let src = Source::new("arith.cu", ARITH);
    c.compile(&src, flags, Target::Cubin(Arch::new(9, 0)))
        .unwrap_or_else(|e| panic!("{e}"))
        .ptx
        .clone()
}

fn has(ptx: &str, needle: &str) -> bool {
    ptx.lines().any(|l| l.trim_start().starts_with(needle))
}

#[test]
fn nvrtc_flag_sets_change_the_ptx_as_documented() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let default = compile_ptx(&c, FlagSet::DEFAULT);
    assert!(has(&default, "fma.rn.f32"), "{default}");
    assert!(has(&default, "div.rn.f32"));
    assert!(has(&default, "sqrt.rn.f32"));

    for set in [FlagSet::STRICT, FlagSet::NOFMA] {
        let ptx = compile_ptx(&c, set);
        assert!(!has(&ptx, "fma."), "{set}: {ptx}");
        assert!(has(&ptx, "mul.rn.f32") && has(&ptx, "add.rn.f32"), "{set}");
        assert!(has(&ptx, "div.rn.f32"), "{set}");
    }

    let fast = compile_ptx(&c, FlagSet::FAST);
    assert!(has(&fast, "div.approx") || has(&fast, "div.full"), "{fast}");
    assert!(has(&fast, "sqrt.approx"), "{fast}");
    assert!(fast.contains(".ftz.f32"), "{fast}");

    let ftz = compile_ptx(&c, FlagSet::FTZ);
    assert!(
        has(&ftz, "fma.rn.ftz.f32") && has(&ftz, "div.rn.ftz.f32"),
        "{ftz}"
    );

    let approx_div = compile_ptx(&c, FlagSet::APPROX_DIV);
    assert!(
        has(&approx_div, "div.full.f32") || has(&approx_div, "div.approx.f32"),
        "{approx_div}"
    );
    assert!(has(&approx_div, "sqrt.rn.f32"));

    let approx_sqrt = compile_ptx(&c, FlagSet::APPROX_SQRT);
    assert!(has(&approx_sqrt, "sqrt.approx.f32"), "{approx_sqrt}");
    assert!(has(&approx_sqrt, "div.rn.f32"));
}

#[test]
fn nvrtc_cubin_and_ptx_from_one_compile() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let src = Source::new("arith.cu", ARITH);
    let cubin = c
        .compile(&src, FlagSet::DEFAULT, Target::Cubin(Arch::new(9, 0)))
        .unwrap();
    let bin = cubin.cubin.as_ref().expect("cubin for an sm_ target");
    assert_eq!(&bin[..4], b"\x7fELF", "cubin is an ELF image");
    assert!(cubin.ptx.contains(".target sm_90"));
    assert!(cubin.ptx.contains(".loc"), "-lineinfo keeps source lines");
    assert!(
        cubin.ptx.contains("arith.cu"),
        "the source name is in the line info"
    );

    let ptx_only = c
        .compile(&src, FlagSet::DEFAULT, Target::Ptx(Arch::new(9, 0)))
        .unwrap();
    assert_eq!(ptx_only.cubin, None);
    assert!(ptx_only.ptx.contains(".entry arith("));
    assert!(crate::version::PtxIsa::of_ptx(&ptx_only.ptx).is_some());
}

#[test]
fn nvrtc_compile_error_names_source_and_line() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let src = Source::new(
        "broken.cu",
        "extern \"C\" __global__ void k(float* x) {\n  x[0] = y;\n}\n",
    );
    let err = c
        .compile(&src, FlagSet::STRICT, Target::Cubin(Arch::new(9, 0)))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("cannot compile broken.cu (flag set strict, sm_90): broken.cu(2): error"),
        "{msg}"
    );
    assert!(msg.contains("\"y\""), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(err.log().unwrap().contains("broken.cu(2)"));
}

#[test]
fn nvrtc_unsupported_arch_is_refused_before_compiling() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let err = c
        .compile(
            &Source::new("k.cu", ARITH),
            FlagSet::DEFAULT,
            Target::Cubin(Arch::new(9, 9)),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot compile for sm_99") && err.contains("sm_90"),
        "{err}"
    );
}

/// Whether the PTX holds the f32 constant `v`, as a float immediate or as the integer bits
/// NVRTC stores a folded constant with.
fn has_f32(ptx: &str, v: f32) -> bool {
    let bits = v.to_bits();
    ptx.contains(&format!("0f{bits:08X}")) || ptx.contains(&format!(" {bits};"))
}

#[test]
fn nvrtc_changed_header_is_a_new_key_never_a_stale_cubin() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let dir = crate::cache::tests::scratch_dir("nvrtc-header");
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    let write_header = |value: &str| {
        std::fs::write(
            dir.join("inc/scale.h"),
            format!("#include \"twice.h\"\n#define SCALE {value}f\n"),
        )
        .unwrap();
    };
    std::fs::write(dir.join("inc/twice.h"), "#define TWICE(x) (2.0f * (x))\n").unwrap();
    write_header("3.5");
    // -D and --include-path / -I as the source's own options.
    let src = Source::new(
            "scaled.cu",
            "#include <scale.h>\nextern \"C\" __global__ void scaled(float* x) { x[0] = TWICE(SCALE) + OFFSET; }\n",
        )
        .with_option(format!("--include-path={}", dir.join("inc").display()))
        .with_option("-DOFFSET=0.25f");
    let compiler = Compiler {
        version: c.version(),
        archs: c.supported_archs().to_vec(),
        library: c.library().clone(),
        cache: CompileCache::new(Some(dir.join("cache"))),
    };
    let t = Target::Cubin(Arch::new(9, 0));
    // 2 * 3.5 + 0.25 = 7.25, then 2 * 4.5 + 0.25 = 9.25, folded to constants.
    let (first, hit) = compiler.compile_traced(&src, FlagSet::DEFAULT, t).unwrap();
    assert_eq!(hit, None);
    assert!(has_f32(&first.ptx, 7.25), "{}", first.ptx);
    let (_, hit) = compiler.compile_traced(&src, FlagSet::DEFAULT, t).unwrap();
    assert_eq!(hit, Some(CacheHit::Memory));

    write_header("4.5");
    let (second, hit) = compiler.compile_traced(&src, FlagSet::DEFAULT, t).unwrap();
    assert_eq!(hit, None, "a changed header must recompile");
    assert!(has_f32(&second.ptx, 9.25), "{}", second.ptx);
    assert_ne!(second.cubin, first.cubin);
    assert_ne!(second.source_hash, first.source_hash);

    // The nested header counts too; -I spells the same directory.
    let src_i = Source::new("scaled.cu", src.text.clone())
        .with_option(format!("-I{}", dir.join("inc").display()))
        .with_option("-DOFFSET=0.25f");
    let before = compiler.compile(&src_i, FlagSet::DEFAULT, t).unwrap();
    std::fs::write(dir.join("inc/twice.h"), "#define TWICE(x) (3.0f * (x))\n").unwrap();
    let after = compiler.compile(&src_i, FlagSet::DEFAULT, t).unwrap();
    assert!(has_f32(&after.ptx, 13.75), "{}", after.ptx);
    assert_ne!(after.source_hash, before.source_hash);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nvrtc_headers_in_memory_are_compiled_and_hashed() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let text = "#include \"value.h\"\nextern \"C\" __global__ void v(float* x) { x[0] = VALUE; }\n";
    let one = Source::new("v.cu", text).with_header("value.h", "#define VALUE 1.5f\n");
    let two = Source::new("v.cu", text).with_header("value.h", "#define VALUE 2.5f\n");
    let t = Target::Ptx(Arch::new(9, 0));
    let a = c.compile(&one, FlagSet::STRICT, t).unwrap();
    let b = c.compile(&two, FlagSet::STRICT, t).unwrap();
    assert!(has_f32(&a.ptx, 1.5) && has_f32(&b.ptx, 2.5));
    assert_ne!(a.source_hash, b.source_hash);
    // The hash does not depend on where files lie, only on contents.
    assert_eq!(a.source_hash, source_hash(text, &one.includes()));
}

#[test]
fn nvrtc_name_expressions_lower_to_kernels_in_the_ptx() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let src = Source::new(
        "templ.cu",
        "template <typename T> __global__ void my_kernel(T* x) { x[0] = T(1); }\n",
    )
    .with_name_expression("my_kernel<double>")
    .with_name_expression("my_kernel<float>");
    let compiled = c
        .compile(&src, FlagSet::DEFAULT, Target::Ptx(Arch::new(9, 0)))
        .unwrap();
    let double = compiled.lowered_name("my_kernel<double>").unwrap();
    assert_eq!(double, "_Z9my_kernelIdEvPT_");
    assert!(
        compiled.ptx.contains(&format!(".entry {double}(")),
        "{}",
        compiled.ptx
    );
    let float = compiled.lowered_name("my_kernel<float>").unwrap();
    assert!(compiled.ptx.contains(&format!(".entry {float}(")));
    assert_eq!(compiled.lowered_names.len(), 2);
    assert_eq!(compiled.lowered_name("my_kernel<int>"), None);

    // An expression that names nothing is an error naming it, not a panic.
    let bad = Source::new("templ.cu", src.text.clone()).with_name_expression("no_such<int>");
    let err = c
        .compile(&bad, FlagSet::DEFAULT, Target::Ptx(Arch::new(9, 0)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such"), "{err}");
}

#[test]
fn nvrtc_build_facts_say_how_it_was_built() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let flags: FlagSet = "nofma+ftz".parse().unwrap();
    let src = Source::new("arith.cu", ARITH).with_option("-DUNUSED=1");
    let compiled = c
        .compile(&src, flags, Target::Cubin(Arch::new(9, 0)))
        .unwrap();
    let facts = compiled.build_facts();
    assert_eq!(facts.front_end, "nvrtc");
    assert_eq!(facts.front_end_version, c.version().to_string());
    assert_eq!(facts.flags, "nofma+ftz");
    assert_eq!(
        facts.options,
        [
            "--fmad=false",
            "--ftz=true",
            "--gpu-architecture=sm_90",
            "-lineinfo",
            "-DUNUSED=1"
        ]
    );
    assert_eq!(facts.arch, "sm_90");
    assert_eq!(facts.source_hash, source_hash(ARITH, &[]));
    assert_eq!(facts.source_hash.len(), 16);
    let ptx = &compiled.ptx;
    assert!(
        !ptx.lines().any(|l| l.trim_start().starts_with("fma.")),
        "{ptx}"
    );
    assert!(ptx.contains("div.rn.ftz.f32"), "{ptx}");
}

#[test]
fn nvrtc_results_are_cached_in_memory_and_on_disk() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let dir = crate::cache::tests::scratch_dir("nvrtc-cache");
    let version = c.version();
    let archs = c.supported_archs().to_vec();
    let mk = || Compiler {
        version,
        archs: archs.clone(),
        library: c.library().clone(),
        cache: CompileCache::new(Some(dir.clone())),
    };
    let src = Source::new("arith.cu", ARITH);
    let t = Target::Cubin(Arch::new(9, 0));
    let first = mk();
    let (a, hit) = first.compile_traced(&src, FlagSet::STRICT, t).unwrap();
    assert_eq!(hit, None);
    let (b, hit) = first.compile_traced(&src, FlagSet::STRICT, t).unwrap();
    assert_eq!(hit, Some(CacheHit::Memory));
    assert!(Arc::ptr_eq(&a, &b));
    let (c2, hit) = mk().compile_traced(&src, FlagSet::STRICT, t).unwrap();
    assert_eq!(hit, Some(CacheHit::Disk));
    assert_eq!(*c2, *a);
    // Another flag set is another entry.
    let (_, hit) = first.compile_traced(&src, FlagSet::FAST, t).unwrap();
    assert_eq!(hit, None);
    std::fs::remove_dir_all(&dir).unwrap();
}
