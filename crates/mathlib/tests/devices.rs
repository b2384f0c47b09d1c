//! GPU tests of `mantissa mathlib` on several devices (skip with a printed reason without a GPU;
//! fail under MANTISSA_REQUIRE_GPU=1): `--devices 0`, `--devices all` and two handles on GPU 0
//! through the pool (the only concurrency a one-GPU machine has) record what one GPU records,
//! in the same order. Binary32 univariate functions are swept exhaustively, so their figures do
//! not depend on time.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mantissa_gpu::testing::require_toolchain_or_skip;
use mantissa_gpu::{DeviceSelection, Gpu, Toolchain};
use mantissa_mathlib::measure::{Measurement, Plan};
use mantissa_mathlib::records::{open, read};
use mantissa_mathlib::run::{run_plan_on, run_plan_sharing_devices_for_tests, setting, Event};
use mantissa_mathlib::{Format, Function, MathGpu, MathlibError, Variant};
use mantissa_report::Store;

fn plan() -> Plan {
    Plan {
        functions: vec![Function::Exp, Function::Log, Function::Tanh, Function::Sqrt],
        formats: vec![Format::F32],
        variants: vec![Variant::Default, Variant::Fast],
        libraries: Vec::new(),
        budget: Duration::from_millis(100),
        cpu_sample: 64,
        seed: 1,
    }
}

/// A measurement without its time, as JSON: what must not depend on the devices.
fn value(m: &Measurement) -> String {
    let mut m = m.clone();
    m.seconds = 0.0;
    // The sum of errors over 2^32 inputs is added in an order the device's scheduling picks
    // (seen on the H200: ...538.86 and ...538.84 for sqrt under `fast`, on one GPU): compare it
    // to 12 significant digits, everything else exactly.
    m.stats.sum_ulps = format!("{:.11e}", m.stats.sum_ulps).parse().unwrap();
    serde_json::to_string(&m).unwrap()
}

type Run = fn(
    &Plan,
    &[MathGpu],
    Option<&mut Store<mantissa_mathlib::records::Record>>,
    &AtomicBool,
    &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError>;

/// Runs the plan on `gpus` into a fresh directory: the values, in the order the records hold
/// them and in the order the events reported them, and the records' device ordinals.
fn run(tag: &str, gpus: &[MathGpu], run: Run) -> (Vec<String>, Vec<String>, Vec<Option<u32>>) {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "mantissa-mathlib-devices-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let plan = plan();
    let setting = setting(&plan, gpus.first());
    let mut store = open(&dir, false, None, &plan, &setting).unwrap();
    let mut events = Vec::new();
    run(
        &plan,
        gpus,
        Some(&mut store),
        &AtomicBool::new(false),
        &mut |e| {
            if let Event::Measured { measurements, .. } = e {
                events.extend(measurements.iter().map(value));
            }
        },
    )
    .unwrap_or_else(|e| panic!("{tag}: {e}"));
    let path = store.path().to_path_buf();
    drop(store);
    let (records, _) = read(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        records.iter().map(|r| value(&r.measurement)).collect(),
        events,
        records.iter().map(|r| r.device_ordinal).collect(),
    )
}

fn math(gpus: Vec<Gpu>) -> Vec<MathGpu> {
    gpus.into_iter().map(MathGpu::new).collect()
}

fn toolchain() -> Option<Toolchain> {
    require_toolchain_or_skip()
}

#[test]
fn devices_zero_all_and_two_handles_record_what_one_gpu_records() {
    let Some(toolchain) = toolchain() else {
        return;
    };
    let one = math(vec![Gpu::open(&toolchain, 0).unwrap()]);
    let (before, events, ordinals) = run("one", &one, run_plan_on);
    // One column per variant each function has: at least the default build of each.
    assert!(before.len() >= 4, "{} columns", before.len());
    assert_eq!(events, before, "events and records in the same order");
    assert!(ordinals.iter().all(Option::is_none), "{ordinals:?}");
    drop(one);
    for selection in ["0", "all"] {
        let gpus = math(
            selection
                .parse::<DeviceSelection>()
                .unwrap()
                .open(&toolchain)
                .unwrap(),
        );
        let (records, events, _) = run(selection, &gpus, run_plan_on);
        assert_eq!(records, before, "--devices {selection}");
        assert_eq!(events, before, "--devices {selection}: events");
    }
    let twice = math(vec![
        Gpu::open(&toolchain, 0).unwrap(),
        Gpu::open(&toolchain, 0).unwrap(),
    ]);
    let refused =
        run_plan_on(&plan(), &twice, None, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(
        refused.to_string().contains("GPU 0 is given twice"),
        "{refused}"
    );
    let (records, events, ordinals) = run("twice", &twice, run_plan_sharing_devices_for_tests);
    assert_eq!(records, before, "pooled on two handles");
    assert_eq!(events, before, "pooled on two handles: events");
    assert!(ordinals.iter().all(|&o| o == Some(0)), "{ordinals:?}");
}
