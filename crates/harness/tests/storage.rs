//! Storage precision (buffers kept in f32) in the harness: which kernel parameters a
//! configuration's buffers map to, and the refusals, on the CPU; on the GPU (skipped without
//! one), a trial with `x` kept in f32 compares with the f64 baseline to about 7 digits, not
//! bit-identically, and the program as written is still bit-identical afterwards.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::FlagSet;
use mantissa_harness::config::Selection;
use mantissa_harness::data::materialize;
use mantissa_harness::trial::build::storage_requests;
use mantissa_harness::validate::plan;
use mantissa_harness::{
    Configuration, Demotion, RunnerOptions, Spec, TrialError, TrialRunner, TrialTiming,
};
use mantissa_ptx::pass::store_f32::StoreRequest;
use std::collections::BTreeMap;
use std::path::PathBuf;

const AXPY_CU: &str = include_str!("fixtures/storage/axpy.cu");
const AXPY_TOML: &str = include_str!("fixtures/storage/axpy.toml");

/// The kernels' signatures as NVRTC writes them (the plan reads only these).
const SIGNATURES: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry axpy(.param .f64 axpy_param_0, .param .u64 axpy_param_1, .param .u64 axpy_param_2, .param .u32 axpy_param_3)
{
	ret;
}
.visible .entry twice(.param .u64 twice_param_0, .param .u64 twice_param_1, .param .u32 twice_param_2)
{
	ret;
}
"#;

/// The fixture spec with `extra` appended, loaded from a fresh directory.
fn spec(extra: &str) -> Spec {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d: PathBuf = std::env::temp_dir().join(format!(
        "mantissa-storage-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("axpy.cu"), AXPY_CU).unwrap();
    std::fs::write(d.join("axpy.toml"), format!("{AXPY_TOML}\n{extra}")).unwrap();
    Spec::load(&d.join("axpy.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn requests(extra: &str, buffers: &[&str]) -> Result<Vec<StoreRequest>, String> {
    let s = spec(extra);
    let inputs = materialize(&s).unwrap();
    let p = plan(&s, SIGNATURES, &BTreeMap::new(), &inputs.symbols).unwrap();
    let names: Vec<String> = buffers.iter().map(|b| b.to_string()).collect();
    storage_requests(&s, &p, &names)
}

fn req(function: &str, param: &str) -> StoreRequest {
    StoreRequest {
        function: function.into(),
        param: param.into(),
    }
}

#[test]
fn buffers_map_to_every_kernel_parameter_that_receives_them() {
    assert_eq!(requests("", &["x"]).unwrap(), [req("axpy", "axpy_param_1")]);
    // y goes to axpy's third parameter and to twice's first.
    assert_eq!(
        requests("", &["y", "w"]).unwrap(),
        [
            req("axpy", "axpy_param_2"),
            req("twice", "twice_param_0"),
            req("twice", "twice_param_1")
        ]
    );
}

#[test]
fn wrong_buffers_copies_fills_and_shared_parameters_are_refused() {
    let e = requests("", &["q"]).unwrap_err();
    assert!(
        e.starts_with("buffer 'q' kept in f32 is not a buffer of the spec; its buffers are: ")
            && e.contains(", y"),
        "{e}"
    );
    let e = requests("", &["k"]).unwrap_err();
    assert_eq!(e, "buffer 'k' is f32: only f64 buffers can be kept in f32");
    let copy = "[[steps]]\ncopy = { from = \"w\", to = \"x\" }\n";
    let e = requests(copy, &["x"]).unwrap_err();
    assert_eq!(
        e,
        "buffer 'x' kept in f32 is copied by steps[2] (copy w -> x) to or from 'w', which stays f64: keep both in f32"
    );
    // Both kept: a whole-buffer copy keeps the layout; a partial one counts f64 elements.
    assert!(requests(copy, &["x", "w"]).is_ok());
    let part = "[[steps]]\ncopy = { from = \"w\", to = \"x\", len = 2 }\n";
    let e = requests(part, &["x", "w"]).unwrap_err();
    assert_eq!(
        e,
        "buffers 'w' and 'x' kept in f32 are copied in part by steps[2] (copy w -> x): only whole-buffer copies keep the f32 layout"
    );
    // twice reads y in one step and x (kept in f32) in another: one code, two layouts.
    let again = "[[steps]]\nlaunch = \"twice\"\ngrid = \"ceil(n / 128)\"\nblock = 128\nargs = [\"x\", \"w\", \"n\"]\n";
    let e = requests(again, &["x"]).unwrap_err();
    assert_eq!(
        e,
        "kernel twice parameter twice_param_0 receives 'x' (kept in f32) at steps[2] and 'y' (f64) at steps[1]"
    );
    // With both kept, it is one layout again.
    assert_eq!(
        requests(again, &["x", "y"]).unwrap(),
        [
            req("axpy", "axpy_param_1"),
            req("axpy", "axpy_param_2"),
            req("twice", "twice_param_0"),
        ]
    );
}

#[test]
fn configuration_files_read_and_write_buffers() {
    let d: Demotion = serde_json::from_str(r#"{"name": "x32", "buffers": ["x"]}"#).unwrap();
    assert_eq!(d.buffers, ["x"]);
    assert!(!d.is_empty() && matches!(&d.instructions, Selection::Only(v) if v.is_empty()));
    // Skipped when empty: older readers see the files they know.
    let text = serde_json::to_string(&Demotion::none()).unwrap();
    assert!(!text.contains("buffers"), "{text}");
}

#[test]
fn a_buffer_in_f32_gives_seven_digits_and_leaks_nothing() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let s = spec("");
    let opts = RunnerOptions {
        download_outputs: true,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(&gpu, &s, FlagSet::DEFAULT, opts).unwrap();
    let x32 = Configuration::Demote(Demotion {
        name: "x32".into(),
        buffers: vec!["x".into()],
        ..Demotion::none()
    });
    let timed = TrialTiming::Timed {
        warmup: 1,
        repeats: 2,
    };
    let out = runner.trial(&x32, timed).unwrap();
    for o in &out.outputs {
        let c = &o.vs_baseline;
        // x's f32 rounding (2^-24 relative) reaches y through a*x (a < 1, y > 0): at most that.
        assert!(
            c.differing > 0,
            "{}: kept in f32 must change something",
            o.name
        );
        assert!(c.max_rel <= 2f64.powi(-24), "{}: {}", o.name, c.max_rel);
        // 7 digits in the relative sense (2^-24 < 1e-7). `c.digits` counts shared leading
        // decimal digits and can be far lower (0.19999999 against 0.2000001 shares none).
        assert!(-c.max_rel.log10() >= 7.0, "{}: {}", o.name, c.max_rel);
    }
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("buffers in f32: x (1 loads")),
        "{:?}",
        out.notes
    );
    // The program as written after it: bit-identical (nothing left in the f32 layout).
    let again = runner.trial(&Configuration::AsWritten, timed).unwrap();
    for o in &again.outputs {
        assert_eq!(o.vs_baseline.differing, 0, "{}", o.name);
    }
    // A buffer the pass refuses for is refused, and the runner carries on.
    let k32 = Configuration::Demote(Demotion {
        name: "k32".into(),
        buffers: vec!["k".into()],
        ..Demotion::none()
    });
    assert!(matches!(
        runner.trial(&k32, timed),
        Err(TrialError::Refused(_))
    ));
}

#[test]
fn the_conversion_kernels_compile() {
    use mantissa_gpu::{Arch, Source, Target};
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let c = nvrtc
        .compile(
            &Source::new(
                "mantissa_storage.cu",
                mantissa_harness::trial::storage::STORAGE_CU,
            ),
            FlagSet::STRICT,
            Target::Ptx(Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    // The narrowing rounds to nearest, as the rewritten stores do; the widening is exact.
    assert!(c.ptx.contains("cvt.rn.f32.f64"), "{}", c.ptx);
    assert!(c.ptx.contains("cvt.f64.f32"), "{}", c.ptx);
}
