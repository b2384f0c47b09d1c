//! GPU tests of the study on several devices (skip with a printed reason without a GPU; fail
//! under MANTISSA_REQUIRE_GPU=1). The machines these run on have one GPU, so concurrency is
//! exercised with two handles on GPU 0 (timings then mean nothing; values must not change).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use mantissa_gpu::testing::require_toolchain_or_skip;
use mantissa_gpu::{DeviceSelection, Gpu, Toolchain};
use mantissa_report::{read_records, Record, ResultsLog};
use mantissa_study::inputs::InputClass;
use mantissa_study::registry::find;
use mantissa_study::runner::{self, full_device};
use mantissa_study::study::{Plan, RunSummary, StudyConfig, StudyPrecision, Suite};
use mantissa_study::NoProgress;

/// A small GPU plan: sums and dots in a few precisions and flag sets, two sizes.
fn plan(gpu: &Gpu) -> Plan {
    let cfg = StudyConfig {
        workloads: vec![find("sum").unwrap(), find("dot").unwrap()],
        suite: Suite::Quick,
        cpu: false,
        precisions: StudyPrecision::parse_list("f32,f64,f64x2").unwrap(),
        classes: Some(vec![InputClass::range(3)]),
        sizes: Some(vec![1000, 1 << 16]),
        threads: vec![1],
        seed: 7,
    };
    let plan = Plan::gpu(&cfg, full_device(gpu), 0);
    assert!(plan.points.len() >= 8, "{} points", plan.points.len());
    plan
}

type Run = fn(
    &Plan,
    &[Gpu],
    Suite,
    &mut ResultsLog,
    &dyn mantissa_study::Progress,
    &AtomicBool,
) -> Result<RunSummary, mantissa_study::study::StudyError>;

/// Runs `plan` on `devices` into a fresh directory; the summary and the records.
fn run_on(plan: &Plan, devices: &[Gpu], dir: &Path, run: Run) -> (RunSummary, Vec<Record>) {
    let stop = AtomicBool::new(false);
    let mut log = ResultsLog::open(dir, false).unwrap();
    let summary = run(plan, devices, Suite::Quick, &mut log, &NoProgress, &stop)
        .unwrap_or_else(|e| panic!("{e}"));
    let path = log.path().to_path_buf();
    drop(log);
    (summary, read_records(&path).unwrap().0)
}

/// What must not depend on the devices: the point, and every measured value.
fn values(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            format!(
                "{} {:?} {:?} {:?} {:?} {:?}",
                r.key(),
                r.status,
                r.value.map(f64::to_bits),
                r.reference.map(f64::to_bits),
                r.error.as_ref().map(|e| e.abs.to_bits()),
                r.note
            )
        })
        .collect()
}

fn toolchain() -> Option<Toolchain> {
    require_toolchain_or_skip()
}

#[test]
fn devices_zero_and_all_record_what_one_gpu_records() {
    let Some(toolchain) = toolchain() else {
        return;
    };
    let one = Gpu::open(&toolchain, 0).unwrap();
    let plan = plan(&one);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (_, before) = run_on(
        &plan,
        std::slice::from_ref(&one),
        dirs[0].path(),
        runner::run_gpus,
    );
    assert_eq!(before.len(), plan.points.len());
    assert!(
        before.iter().all(|r| r.device_ordinal.is_none()),
        "one run on GPU 0 writes records as before"
    );
    drop(one);
    for (dir, selection) in dirs[1..].iter().zip(["0", "all"]) {
        let selection: DeviceSelection = selection.parse().unwrap();
        let gpus = selection.open(&toolchain).unwrap();
        let (summary, records) = run_on(&plan, &gpus, dir.path(), runner::run_gpus);
        assert_eq!(summary.measured, plan.points.len(), "--devices {selection}");
        assert_eq!(
            values(&records),
            values(&before),
            "--devices {selection}: other values or order"
        );
        let pool = summary.pool.expect("a GPU run says where its time went");
        assert_eq!(pool.workers.len(), gpus.len());
        assert_eq!(
            pool.workers.iter().map(|w| w.units).sum::<usize>(),
            plan.points.len()
        );
    }
}

#[test]
fn two_handles_on_one_gpu_record_the_one_device_values_in_plan_order() {
    let Some(toolchain) = toolchain() else {
        return;
    };
    let one = Gpu::open(&toolchain, 0).unwrap();
    let plan = plan(&one);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, single) = run_on(
        &plan,
        std::slice::from_ref(&one),
        a.path(),
        runner::run_gpus,
    );
    let twice = vec![one, Gpu::open(&toolchain, 0).unwrap()];
    // The check that guards timings refuses the same GPU twice...
    let stop = AtomicBool::new(false);
    let mut log = ResultsLog::open(b.path(), false).unwrap();
    let refused = runner::run_gpus(&plan, &twice, Suite::Quick, &mut log, &NoProgress, &stop)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("GPU 0 is given twice"), "{refused}");
    drop(log);
    // ...so the test goes around it.
    let (summary, pooled) = run_on(
        &plan,
        &twice,
        b.path(),
        runner::run_gpus_sharing_devices_for_tests,
    );
    assert_eq!(summary.measured, plan.points.len());
    assert_eq!(values(&pooled), values(&single), "values or order changed");
    assert!(
        pooled.iter().all(|r| r.device_ordinal == Some(0)),
        "several handles: every record names its GPU"
    );
    let pool = summary.pool.unwrap();
    assert_eq!(pool.workers.len(), 2);
    assert_eq!(
        pool.workers.iter().map(|w| w.units).sum::<usize>(),
        plan.points.len()
    );
    eprintln!(
        "two handles on GPU 0: units {:?}, busy {:?}, wall {:?}",
        pool.workers.iter().map(|w| w.units).collect::<Vec<_>>(),
        pool.workers.iter().map(|w| w.busy).collect::<Vec<_>>(),
        pool.wall
    );

    // A resumed pooled run measures nothing again.
    let stop = AtomicBool::new(false);
    let mut log = ResultsLog::open(b.path(), true).unwrap();
    let again = runner::run_gpus_sharing_devices_for_tests(
        &plan,
        &twice,
        Suite::Quick,
        &mut log,
        &NoProgress,
        &stop,
    )
    .unwrap();
    assert_eq!((again.measured, again.skipped_done), (0, plan.points.len()));
}
