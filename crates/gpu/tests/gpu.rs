//! GPU tests of the public API. Each skips (printing why) without a GPU, and fails under
//! `MANTISSA_REQUIRE_GPU=1`. They share one probed `Gpu` (one CUDA context per process anyway), so
//! none of them may poison the context with a faulting kernel.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{
    BuildRequest, CompileCache, DType, DeviceBuffer, FlagSet, FrontEnd, Gpu, GpuError, HostData,
    ImageKind, KernelArg, LaunchDims, ReportOptions, Source, Target, TimingOptions,
};
use std::io::Write;
use std::time::Duration;

/// Shows a line in the test output even when the harness captures `println!`.
fn show(line: impl AsRef<str>) {
    let _ = writeln!(std::io::stderr(), "{}", line.as_ref());
}

const SAXPY: &str = r#"extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

const TYPES: &str = r#"extern "C" __global__ void types(double* d, int* i, unsigned* u, unsigned long long* w, float* f,
                                           float fs, double ds, int is, unsigned us, unsigned long long ws) {
    d[0] = ds + (double)fs; i[0] = is; u[0] = us; w[0] = ws; f[0] = fs * 2.0f;
}"#;

const SPIN: &str = r#"extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    // Bounded even if the timer were frozen: a test must never leave a kernel running forever.
    for (unsigned long long i = 0; i < (1ull << 30); ++i) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
}"#;

const MANGLED: &str = "__global__ void scale(float* x) { x[0] *= 2.0f; }";

/// A templated kernel, launched by name expression.
const TEMPLATED: &str = "template <typename T> __global__ void scale_by(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}";

/// The wider element types: i64, u8, and f16/bf16 buffers (negated by their sign bit) plus a
/// half passed by value as a 2-byte struct (NVRTC has no cuda_fp16.h without the toolkit).
const WIDE: &str = r#"struct __align__(2) half_bits { unsigned short bits; };
extern "C" __global__ void wide(long long* l, unsigned char* b, unsigned short* h, unsigned short* bf,
                                long long ls, unsigned char bs, half_bits hv) {
    l[0] = l[0] * 2 + ls; b[0] = b[0] + bs;
    h[0] ^= 0x8000; bf[0] ^= 0x8000; h[1] = hv.bits;
}"#;

fn templated_source() -> Source {
    Source::new("templated.cu", TEMPLATED)
        .with_name_expression("scale_by<double>")
        .with_name_expression("scale_by<float>")
}

/// Needs only NVRTC: the kernels the GPU tests use compile, so a GPU run cannot fail on a typo.
#[test]
fn test_kernels_compile() {
    let Some(c) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let t = Target::Cubin(mantissa_gpu::Arch::new(9, 0));
    for (name, src) in [
        ("saxpy.cu", SAXPY),
        ("types.cu", TYPES),
        ("spin.cu", SPIN),
        ("mangled.cu", MANGLED),
        ("wide.cu", WIDE),
    ] {
        let out = c
            .compile(&Source::new(name, src), FlagSet::DEFAULT, t)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.cubin.is_some(), "{name}");
    }
    let out = c
        .compile(&templated_source(), FlagSet::STRICT, t)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.lowered_names.len(), 2);
}

/// Templated kernels launch by their name expressions.
#[test]
fn launch_by_name_expression() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let module = gpu
        .build(&templated_source(), FlagSet::STRICT)
        .unwrap_or_else(|e| panic!("{e}"));
    let lowered = module.lowered_name("scale_by<double>").unwrap().to_string();
    assert!(lowered.starts_with("_Z8scale_byId"), "{lowered}");
    let xd = gpu
        .upload("xd", &HostData::from(vec![1.5f64, -2.0, 3.0]))
        .unwrap();
    let xf = gpu
        .upload("xf", &HostData::from(vec![0.25f32, 8.0]))
        .unwrap();
    let scale = |kernel: &str, x: &DeviceBuffer, a: KernelArg, n: i32| {
        let args = [KernelArg::from(x), a, KernelArg::from(n)];
        gpu.launch_sync(&module, kernel, LaunchDims::linear(n as u64, 32), &args)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"))
    };
    scale("scale_by<double>", &xd, KernelArg::from(2.0f64), 3);
    // The lowered name itself launches the same kernel.
    scale(&lowered, &xd, KernelArg::from(0.5f64), 3);
    scale("scale_by<float>", &xf, KernelArg::from(4.0f32), 2);
    assert_eq!(
        gpu.download(&xd).unwrap(),
        HostData::from(vec![1.5f64, -2.0, 3.0])
    );
    assert_eq!(
        gpu.download(&xf).unwrap(),
        HostData::from(vec![1.0f32, 32.0])
    );
    // The float instance refuses double arguments, by its expression's signature.
    let err = gpu
        .launch(
            &module,
            "scale_by<float>",
            LaunchDims::linear(2, 32),
            &[
                KernelArg::from(&xf),
                KernelArg::from(4.0f64),
                KernelArg::from(2i32),
            ],
        )
        .unwrap_err();
    assert!(matches!(err, GpuError::BadArguments { .. }), "{err}");
}

/// i64, u8, f16 and bf16 buffers and scalars round-trip and reach the kernel.
#[test]
fn wide_types_upload_launch_and_download() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    use half::{bf16, f16};
    let module = gpu
        .build(&Source::new("wide.cu", WIDE), FlagSet::DEFAULT)
        .unwrap_or_else(|e| panic!("{e}"));
    let l = gpu
        .upload("l", &HostData::from(vec![-(1i64 << 40)]))
        .unwrap();
    let b = gpu.upload("b", &HostData::from(vec![200u8])).unwrap();
    let h = gpu
        .upload("h", &HostData::from(vec![f16::from_f32(1.5), f16::ZERO]))
        .unwrap();
    let bf = gpu
        .upload("bf", &HostData::from(vec![bf16::from_f32(-0.75)]))
        .unwrap();
    let args = [
        KernelArg::from(&l),
        KernelArg::from(&b),
        KernelArg::from(&h),
        KernelArg::from(&bf),
        KernelArg::from(-5i64),
        KernelArg::from(55u8),
        KernelArg::from(f16::from_f32(-2.0)),
    ];
    gpu.launch_sync(
        &module,
        "wide",
        LaunchDims::new((1, 1, 1), (1, 1, 1)),
        &args,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        gpu.download(&l).unwrap(),
        HostData::from(vec![-(1i64 << 41) - 5])
    );
    assert_eq!(gpu.download(&b).unwrap(), HostData::from(vec![255u8]));
    assert_eq!(
        gpu.download(&h).unwrap(),
        HostData::from(vec![f16::from_f32(-1.5), f16::from_f32(-2.0)])
    );
    assert_eq!(
        gpu.download(&bf).unwrap(),
        HostData::from(vec![bf16::from_f32(0.75)])
    );
    let zeros = gpu.alloc_zeros("z", DType::BF16, 4).unwrap();
    assert_eq!(zeros.bytes(), 8);
    assert_eq!(
        gpu.download(&zeros).unwrap(),
        HostData::from(vec![bf16::ZERO; 4])
    );
}

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    // Seeded, non-trivial values (never zeros: they hide unwritten outputs).
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let x = (0..n).map(|_| next()).collect();
    let y = (0..n).map(|_| next()).collect();
    (x, y)
}

#[test]
fn probe_reports_the_device() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let i = gpu.info();
    show(format!(
        "GPU: {} sm_{} {} SMs, L2 {} B, driver {}, NVRTC {}",
        i.name,
        i.compute_capability.number(),
        i.sm_count,
        i.l2_bytes,
        i.driver,
        i.nvrtc
    ));
    for n in gpu.notes() {
        show(format!("note: {n}"));
    }
    assert!(!i.name.is_empty());
    assert!(i.sm_count > 0 && i.l2_bytes > 0 && i.total_memory_bytes > 0);
    assert!(i.compute_capability.major >= 7);
    assert!(mantissa_gpu::device_count().unwrap() >= 1);
}

/// A kernel launched by name with run-time arguments matches the CPU bit for bit under the flag
/// set's semantics: contracted to one FMA by default, two roundings under `strict`.
#[test]
fn launch_by_name_matches_cpu_per_flag_set() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let n = 100_003usize;
    let (x, y) = inputs(n);
    let a = 1.7f32;
    for (flags, model) in [
        (
            FlagSet::DEFAULT,
            (|a: f32, x: f32, y: f32| a.mul_add(x, y)) as fn(f32, f32, f32) -> f32,
        ),
        (FlagSet::STRICT, |a, x, y| a * x + y),
        (FlagSet::NOFMA, |a, x, y| a * x + y),
    ] {
        let module = gpu
            .build(&Source::new("saxpy.cu", SAXPY), flags)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(module.image(), ImageKind::Cubin, "cubin is preferred");
        let xs = gpu.upload("x", &HostData::from(x.clone())).unwrap();
        let ys = gpu.upload("y", &HostData::from(y.clone())).unwrap();
        let args = [
            KernelArg::from(&ys),
            KernelArg::from(&xs),
            KernelArg::from(a),
            KernelArg::from(n as i32),
        ];
        gpu.launch_sync(&module, "saxpy", LaunchDims::linear(n as u64, 256), &args)
            .unwrap_or_else(|e| panic!("{e}"));
        let HostData::F32(out) = gpu.download(&ys).unwrap() else {
            panic!("type changed")
        };
        let mismatches = (0..n)
            .filter(|&i| out[i].to_bits() != model(a, x[i], y[i]).to_bits())
            .count();
        assert_eq!(
            mismatches, 0,
            "flag set {flags}: {mismatches} of {n} differ from the CPU model"
        );
    }
}

#[test]
fn every_buffer_and_scalar_type_reaches_the_kernel() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let src = TYPES;
    let module = gpu
        .build(&Source::new("types.cu", src), FlagSet::STRICT)
        .unwrap();
    let d = gpu.upload("d", &HostData::from(vec![0.5f64])).unwrap();
    let i = gpu.alloc_zeros("i", DType::I32, 1).unwrap();
    let u = gpu.alloc_zeros("u", DType::U32, 1).unwrap();
    let w = gpu.upload("w", &HostData::from(vec![7u64])).unwrap();
    let f = gpu.alloc_zeros("f", DType::F32, 1).unwrap();
    let args = [
        KernelArg::from(&d),
        KernelArg::from(&i),
        KernelArg::from(&u),
        KernelArg::from(&w),
        KernelArg::from(&f),
        KernelArg::from(1.25f32),
        KernelArg::from(0.25f64),
        KernelArg::from(-42i32),
        KernelArg::from(u32::MAX),
        KernelArg::from(u64::MAX - 1),
    ];
    gpu.launch_sync(
        &module,
        "types",
        LaunchDims::new((1, 1, 1), (1, 1, 1)),
        &args,
    )
    .unwrap();
    assert_eq!(gpu.download(&d).unwrap(), HostData::from(vec![1.5f64]));
    assert_eq!(gpu.download(&i).unwrap(), HostData::from(vec![-42i32]));
    assert_eq!(gpu.download(&u).unwrap(), HostData::from(vec![u32::MAX]));
    assert_eq!(
        gpu.download(&w).unwrap(),
        HostData::from(vec![u64::MAX - 1])
    );
    assert_eq!(gpu.download(&f).unwrap(), HostData::from(vec![2.5f32]));
}

#[test]
fn ptx_text_we_produced_loads_and_runs() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let compiled = gpu
        .compiler()
        .compile(
            &Source::new("saxpy.cu", SAXPY),
            FlagSet::STRICT,
            Target::Ptx(gpu.arch()),
        )
        .unwrap();
    assert!(compiled.cubin.is_none());
    let module = gpu
        .load_ptx("saxpy-ptx", &compiled.ptx)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(module.image(), ImageKind::Ptx);
    let n = 1000;
    let (x, y) = inputs(n);
    let xs = gpu.upload("x", &HostData::from(x.clone())).unwrap();
    let ys = gpu.upload("y", &HostData::from(y.clone())).unwrap();
    let args = [
        KernelArg::from(&ys),
        KernelArg::from(&xs),
        KernelArg::from(2.0f32),
        KernelArg::from(n as i32),
    ];
    gpu.launch_sync(&module, "saxpy", LaunchDims::linear(n as u64, 128), &args)
        .unwrap();
    let HostData::F32(out) = gpu.download(&ys).unwrap() else {
        panic!()
    };
    assert!((0..n).all(|i| out[i] == 2.0 * x[i] + y[i]));
    let res = module.resources("saxpy").unwrap();
    show(format!("saxpy from PTX: {res:?}"));
    assert!(res.registers > 0);
}

/// PTX newer than the driver: the answer must be the explained status, not a crash.
#[test]
fn ptx_newer_than_the_driver_is_explained() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let compiled = gpu
        .compiler()
        .compile(
            &Source::new("saxpy.cu", SAXPY),
            FlagSet::DEFAULT,
            Target::Ptx(gpu.arch()),
        )
        .unwrap();
    let isa = mantissa_gpu::PtxIsa::of_ptx(&compiled.ptx).unwrap();
    let future = compiled
        .ptx
        .replacen(&format!(".version {isa}"), ".version 99.9", 1);
    let err = gpu.load_ptx("future.ptx", &future).unwrap_err();
    let msg = err.to_string();
    show(format!("PTX .version 99.9 on this driver: {msg}"));
    assert!(!msg.contains('\n'));
    // A driver whose newest PTX ISA is known refuses before the driver is asked.
    if let GpuError::PtxTooNew { ptx, driver, .. } = &err {
        assert_eq!(ptx.to_string(), "99.9");
        assert_eq!(*driver, gpu.info().driver);
        assert!(
            msg.contains("rebuild it with a compiler of CUDA")
                && msg.contains("nvidia-cuda-nvcc==13.0.88")
                && msg.contains("update the NVIDIA driver"),
            "{msg}"
        );
        return;
    }
    let status = err.driver_status().expect("a driver status").code();
    assert!(
        status == 222 || status == 218,
        "expected UNSUPPORTED_PTX_VERSION or INVALID_PTX, got {msg}"
    );
    if status == 222 {
        assert!(
            msg.contains("nvidia-cuda-nvrtc==13.0.88") && msg.contains(".version 99.9"),
            "{msg}"
        );
    }
}

#[test]
fn bad_launches_give_one_line_and_no_panic() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let module = gpu
        .build(&Source::new("saxpy.cu", SAXPY), FlagSet::DEFAULT)
        .unwrap();
    let xs = gpu.alloc_zeros("x", DType::F32, 64).unwrap();
    let ys = gpu.alloc_zeros("y", DType::F32, 64).unwrap();
    let good = [
        KernelArg::from(&ys),
        KernelArg::from(&xs),
        KernelArg::from(1.0f32),
        KernelArg::from(64i32),
    ];
    let one = LaunchDims::new((1, 1, 1), (64, 1, 1));

    let errors = [
        gpu.launch(&module, "sxapy", one, &good).unwrap_err(),
        gpu.launch(&module, "saxpy", one, &good[..3]).unwrap_err(),
        gpu.launch(
            &module,
            "saxpy",
            one,
            &[
                KernelArg::from(&ys),
                KernelArg::from(&xs),
                KernelArg::from(1.0f64),
                KernelArg::from(64i32),
            ],
        )
        .unwrap_err(),
        gpu.launch(
            &module,
            "saxpy",
            LaunchDims::new((1, 1, 1), (2048, 1, 1)),
            &good,
        )
        .unwrap_err(),
        gpu.launch(
            &module,
            "saxpy",
            LaunchDims::new((0, 1, 1), (64, 1, 1)),
            &good,
        )
        .unwrap_err(),
    ];
    for e in &errors {
        let msg = e.to_string();
        show(format!("bad launch: {msg}"));
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.contains("'sxapy'") || msg.contains("'saxpy'"),
            "names the kernel: {msg}"
        );
    }
    assert!(matches!(errors[0], GpuError::KernelNotFound { .. }));
    assert!(errors[0].to_string().contains("entries: saxpy"));
    assert!(matches!(errors[1], GpuError::BadArguments { .. }));
    assert!(matches!(errors[2], GpuError::BadArguments { .. }));
    assert!(matches!(errors[3], GpuError::BadLaunch { .. }));
    assert!(matches!(errors[4], GpuError::BadLaunch { .. }));
    // The context is still healthy.
    gpu.launch_sync(&module, "saxpy", one, &good).unwrap();

    // A C++-mangled kernel: the message lists the mangled name and says what to do.
    let mangled = gpu
        .build(&Source::new("mangled.cu", MANGLED), FlagSet::DEFAULT)
        .unwrap();
    let msg = gpu
        .launch(&mangled, "scale", one, &[KernelArg::from(&xs)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("_Z5scalePf") && msg.contains("extern \"C\""),
        "{msg}"
    );
}

#[test]
fn compile_errors_and_out_of_memory_are_one_line() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let err = gpu
        .build(
            &Source::new(
                "broken.cu",
                "extern \"C\" __global__ void k() { undefined_thing(); }",
            ),
            FlagSet::FAST,
        )
        .unwrap_err()
        .to_string();
    show(format!("compile error: {err}"));
    assert!(
        err.starts_with("cannot compile broken.cu (flag set fast, sm_")
            && err.contains("broken.cu(1)"),
        "{err}"
    );

    let total = gpu.info().total_memory_bytes;
    // Bigger than the device: refused before asking the driver.
    let e = gpu
        .alloc_zeros("huge", DType::F64, (total / 8 + 1) as usize)
        .unwrap_err();
    assert!(matches!(e, GpuError::OutOfMemory { .. }), "{e}");
    // Nearly the whole device: the driver says no (the context itself holds some memory).
    let e = gpu.alloc_zeros("nearly all", DType::U32, ((total - (4 << 20)) / 4) as usize);
    match e {
        Err(e) => {
            let msg = e.to_string();
            show(format!("out of memory: {msg}"));
            assert!(
                msg.starts_with("cannot allocate ") && msg.contains("out of GPU memory"),
                "{msg}"
            );
        }
        Ok(b) => show(format!(
            "note: allocating {} bytes succeeded; OOM path not exercised",
            b.bytes()
        )),
    }
    let e = gpu
        .alloc_zeros("empty", DType::F32, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("length 0"), "{e}");
    // The context is still healthy.
    gpu.synchronize().unwrap();
}

#[test]
fn timing_with_rotating_inputs() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let module = gpu
        .build(&Source::new("saxpy.cu", SAXPY), FlagSet::DEFAULT)
        .unwrap();
    let n = 1 << 20; // 8 MiB working set (x and y): fits in L2, so it must rotate.
    let (x, y) = inputs(n);
    let sets = gpu.rotation_sets(8 * n as u64);
    assert!(sets > 1, "a working set inside L2 rotates");
    let xs = gpu.upload_copies("x", &HostData::from(x), sets).unwrap();
    let ys = gpu.upload_copies("y", &HostData::from(y), sets).unwrap();
    let arg_sets: Vec<Vec<KernelArg>> = (0..sets)
        .map(|i| {
            vec![
                KernelArg::from(&ys[i]),
                KernelArg::from(&xs[i]),
                KernelArg::from(1.0001f32),
                KernelArg::from(n as i32),
            ]
        })
        .collect();
    let t = gpu
        .time_kernel(
            &module,
            "saxpy",
            LaunchDims::linear(n as u64, 256),
            &arg_sets,
            TimingOptions {
                warmup: 5,
                reps: 30,
            },
        )
        .unwrap();
    show(format!(
        "saxpy 2^20 over {} input sets: median {:.4} ms, min {:.4}, max {:.4} ({:.0} GB/s)",
        t.input_sets,
        t.median_ms,
        t.min_ms,
        t.max_ms,
        12.0 * n as f64 / (t.median_ms * 1e-3) / 1e9
    ));
    assert_eq!(t.samples_ms.len(), 30);
    assert_eq!(t.input_sets, sets);
    assert!(t.min_ms > 0.0 && t.min_ms <= t.median_ms && t.median_ms <= t.max_ms);
}

/// A kernel that outlives the timeout becomes an error, and the GPU is usable once it ends.
#[test]
fn a_long_kernel_times_out_instead_of_hanging() {
    let Some(_) = require_gpu_or_skip() else {
        return;
    };
    // Its own Gpu (own stream), so the shared one's waits are not held up by the spinning kernel.
    let gpu = Gpu::probe_device_with_cache(0, CompileCache::in_memory()).unwrap();
    let src = SPIN;
    let module = gpu
        .build(&Source::new("spin.cu", src), FlagSet::DEFAULT)
        .unwrap();
    gpu.set_sync_timeout(Duration::from_millis(200));
    gpu.launch(
        &module,
        "spin",
        LaunchDims::new((1, 1, 1), (1, 1, 1)),
        &[KernelArg::from(1_500_000_000u64)],
    )
    .unwrap();
    let err = gpu.synchronize().unwrap_err();
    let msg = err.to_string();
    show(format!("timeout: {msg}"));
    assert!(matches!(err, GpuError::Timeout { .. }), "{msg}");
    assert!(msg.contains("'spin'"), "{msg}");
    gpu.set_sync_timeout(Duration::from_secs(30));
    gpu.synchronize().unwrap();
}

#[test]
fn device_report_measures_and_caches_ceilings() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-gpu-report-{}", std::process::id()));
    let opts = ReportOptions {
        ceilings: true,
        refresh: true,
        cache_dir: Some(dir.clone()),
    };
    let r = gpu.report(&opts).unwrap_or_else(|e| panic!("{e}"));
    show(r.to_string());
    let c = r.ceilings.as_ref().unwrap();
    assert!(!r.ceilings_from_cache);
    assert!(c.copy_gb_s > 100.0, "{c:?}");
    assert!(
        c.fp32_fma_gflop_s > 1000.0 && c.fp64_fma_gflop_s > 10.0,
        "{c:?}"
    );
    assert!(c.slug_factor >= 1.0, "{c:?}");
    if let Some(peak) = r.info.peak_bandwidth_gb_s() {
        // A copy cannot beat the memory's peak (a little slack for clock reporting).
        assert!(
            c.copy_gb_s < 1.1 * peak,
            "{} GB/s measured over a {peak} GB/s peak",
            c.copy_gb_s
        );
    }
    let again = gpu
        .report(&ReportOptions {
            refresh: false,
            ..opts
        })
        .unwrap();
    assert!(again.ceilings_from_cache);
    assert_eq!(again.ceilings, r.ceilings);
    let json = again.to_json();
    assert!(json.contains("\"slug_factor\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `__constant__` table and a `__device__` struct, read by a kernel.
const SYMBOLS: &str = r#"struct Params { double scale; int n; float bias; };
__constant__ double coef[4];
__device__ Params params;
extern "C" __global__ void apply(double* y) {
    int i = threadIdx.x;
    if (i < 4) y[i] = coef[i] * params.scale + params.bias + params.n;
}
"#;

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// `Params` as the device lays it out: f64 at 0, i32 at 8, f32 at 12; 16 bytes.
fn params_bytes(scale: f64, n: i32, bias: f32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(scale.to_ne_bytes());
    b.extend(n.to_ne_bytes());
    b.extend(bias.to_ne_bytes());
    b
}

fn check_symbols(gpu: &Gpu, module: &mantissa_gpu::Module) {
    let listed: Vec<String> = module.symbols().iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed,
        ["coef (.const, 32 bytes)", "params (.global, 16 bytes)"],
        "{listed:?}"
    );
    let coef = [1.5, -2.25, 0.125, 1e-300];
    gpu.write_symbol(module, "coef", &f64_bytes(&coef)).unwrap();
    gpu.write_symbol(module, "params", &params_bytes(2.0, 3, 0.5))
        .unwrap();
    assert_eq!(gpu.read_symbol(module, "coef").unwrap(), f64_bytes(&coef));
    assert_eq!(
        gpu.read_symbol(module, "params").unwrap(),
        params_bytes(2.0, 3, 0.5)
    );
    // The kernel sees what was written.
    let y = gpu.alloc_zeros("y", DType::F64, 4).unwrap();
    gpu.launch_sync(
        module,
        "apply",
        LaunchDims::linear(4, 4),
        &[KernelArg::from(&y)],
    )
    .unwrap();
    let HostData::F64(out) = gpu.download(&y).unwrap() else {
        panic!()
    };
    let want: Vec<f64> = coef.iter().map(|c| c * 2.0 + 0.5 + 3.0).collect();
    assert_eq!(out, want);

    // Wrong sizes and names are one line each, naming the symbol and both sizes.
    let err = gpu
        .write_symbol(module, "coef", &f64_bytes(&coef[..3]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("symbol 'coef'") && err.contains("is 32 bytes, and 24 bytes were given"),
        "{err}"
    );
    let err = gpu.read_symbol(module, "nope").unwrap_err().to_string();
    assert!(
        err.contains("symbol 'nope' is not in module") && err.contains("coef (.const, 32 bytes)"),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

#[test]
fn constant_and_global_symbols_round_trip() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let module = gpu
        .build(&Source::new("symbols.cu", SYMBOLS), FlagSet::DEFAULT)
        .unwrap();
    assert_eq!(module.image(), ImageKind::Cubin);
    check_symbols(&gpu, &module);
    // The same from PTX text (the driver JIT-compiles it).
    let ptx = gpu
        .compiler()
        .compile(
            &Source::new("symbols.cu", SYMBOLS),
            FlagSet::DEFAULT,
            Target::Ptx(gpu.arch()),
        )
        .unwrap();
    let from_ptx = gpu.load_ptx("symbols-ptx", &ptx.ptx).unwrap();
    check_symbols(&gpu, &from_ptx);
}

/// A file with host code goes through nvcc, loads as PTX and runs (when nvcc is found).
#[test]
fn host_code_file_builds_with_nvcc_and_runs() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let Some(_) = mantissa_gpu::testing::require_nvcc_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-gpu-nvcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("symbols_app.cu");
    std::fs::write(
        &file,
        format!("#include <stdio.h>\n{SYMBOLS}int main() {{ printf(\"hi\\n\"); return 0; }}\n"),
    )
    .unwrap();
    let (module, built) = gpu
        .build_file(&BuildRequest::new(&file))
        .unwrap_or_else(|e| panic!("{e}"));
    show(format!("built with {}", built.choice));
    assert_eq!(built.choice.front_end, FrontEnd::Nvcc);
    assert_eq!(built.facts.arch, gpu.arch().sm());
    assert_eq!(module.image(), ImageKind::Ptx);
    check_symbols(&gpu, &module);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two handles on GPU 0 from one toolchain, each moved to its own worker thread (as the pool
/// does with one handle per device): each compiles, launches and downloads there, and gets the
/// CPU's answer; the second compile of the same source is a cache hit of the shared toolchain;
/// the JIT cache is shared too. Pooled work on a one-GPU machine can only be exercised this way.
#[test]
fn handles_from_one_toolchain_work_on_their_own_threads_and_share_the_caches() {
    let Some(toolchain) = mantissa_gpu::testing::require_toolchain_or_skip() else {
        return;
    };
    let devices = mantissa_gpu::DeviceSelection::Ordinals(vec![0])
        .open(&toolchain)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0].ordinal(), 0);
    assert_eq!(devices[0].info().ordinal, 0);
    let all = mantissa_gpu::DeviceSelection::All
        .open(&toolchain)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), toolchain.device_count());
    let beyond = mantissa_gpu::DeviceSelection::Ordinals(vec![toolchain.device_count()])
        .open(&toolchain)
        .unwrap_err();
    assert!(beyond.to_string().contains("was asked for"), "{beyond}");

    // A source of its own, so that other tests' compiles do not count.
    let source = Source::new("pool_saxpy.cu", SAXPY.replace("saxpy", "pool_saxpy"));
    let misses_before = toolchain.compiler().cache().stats().misses;
    let handles = vec![
        Gpu::open(&toolchain, 0).unwrap(),
        Gpu::open(&toolchain, 0).unwrap(),
    ];
    let n = 50_001usize;
    let (x, y) = inputs(n);
    let results: Vec<Vec<f32>> = std::thread::scope(|s| {
        let workers: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(w, gpu)| {
                let (x, y, source) = (&x, &y, &source);
                s.spawn(move || {
                    let module = gpu
                        .build(source, FlagSet::STRICT)
                        .unwrap_or_else(|e| panic!("worker {w}: {e}"));
                    let jitted = gpu
                        .load_jitted("pool_saxpy.ptx", module.ptx().unwrap())
                        .unwrap_or_else(|e| panic!("worker {w}: {e}"));
                    let a = 0.5f32 + w as f32;
                    let xs = gpu.upload("x", &HostData::from(x.clone())).unwrap();
                    let ys = gpu.upload("y", &HostData::from(y.clone())).unwrap();
                    let args = [
                        KernelArg::from(&ys),
                        KernelArg::from(&xs),
                        KernelArg::from(a),
                        KernelArg::from(n as i32),
                    ];
                    for m in [&module, &jitted] {
                        gpu.launch_sync(m, "pool_saxpy", LaunchDims::linear(n as u64, 256), &args)
                            .unwrap_or_else(|e| panic!("worker {w}: {e}"));
                    }
                    let HostData::F32(out) = gpu.download(&ys).unwrap() else {
                        panic!("type changed")
                    };
                    out
                })
            })
            .collect();
        workers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (w, out) in results.iter().enumerate() {
        let a = 0.5f32 + w as f32;
        // Two strict saxpys: y + a·x + a·x, rounded after each operation.
        let wrong = (0..n)
            .filter(|&i| {
                let once = a * x[i] + y[i];
                out[i].to_bits() != (a * x[i] + once).to_bits()
            })
            .count();
        assert_eq!(wrong, 0, "worker {w}: {wrong} of {n} differ from the CPU");
    }
    let misses = toolchain.compiler().cache().stats().misses - misses_before;
    // Both threads may miss at once (then both compile, and the cache keeps one); usually one.
    assert!(
        (1..=2).contains(&misses),
        "{misses} compiles of one source for two handles"
    );
}
