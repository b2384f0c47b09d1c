//! The shadow example without a GPU (needs NVRTC; skips without it, fails under
//! `MANTISSA_REQUIRE_NVRTC=1`):
//! - its PTX, instrumented and merged with the shadow runtime compiled for its `.target`, is
//!   one module that ptxas assembles (when ptxas is installed): what `analyse` loads;
//! - the CPU oracle (`mantissa_ptx::pass::shadow::oracle`: the original kernels run in the PTX
//!   interpreter on the spec's own inputs) gives, through this crate's per-line aggregation,
//!   exactly what the GPU test `gpu_shadow.rs` asserts: the NaN starts on the `nan-origin` line
//!   and propagates to the `nan-propagated` line and nowhere else; the cancellation line's
//!   demotion error is 1 in all n threads and the largest; the clean kernel has no exception.

use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{runtime, Arch, Builder, FlagSet, HostData};
use mantissa_harness::data::materialize;
use mantissa_harness::run::build_request;
use mantissa_harness::Spec;
use mantissa_ptx::interp::{Arg, Launch, Memory};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::pass::shadow::{instrument, oracle, ShadowOptions};
use mantissa_shadow::lines::{summarise, Exceptions, SiteResult};
use std::path::Path;

const SHADOW_CU: &str = include_str!("../../../examples/shadow/shadow.cu");

fn marked(name: &str) -> u32 {
    let tag = format!("// LINE:{name}");
    SHADOW_CU
        .lines()
        .position(|l| l.trim_end().ends_with(&tag))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("no {tag}"))
}

fn f64s(inputs: &[(String, HostData)], name: &str) -> Vec<f64> {
    match &inputs.iter().find(|(n, _)| n == name).unwrap().1 {
        HostData::F64(v) => v.clone(),
        other => panic!("{name}: {:?}", other.dtype()),
    }
}

#[test]
fn the_example_instruments_merges_and_its_oracle_gives_the_seeded_lines() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    let spec = Spec::load(Path::new("../../examples/shadow/shadow.toml")).unwrap();
    let mut request = build_request(&spec, FlagSet::DEFAULT, None).unwrap();
    request.arch = Some(Arch::new(9, 0));
    let built = Builder::new()
        .build(&request)
        .unwrap_or_else(|e| panic!("{e}"));
    let module = mantissa_ptx::parse(&built.ptx).module;
    let options = ShadowOptions {
        demotion: true,
        exceptions: true,
        only: None,
    };
    let instrumented = instrument(&module, &options).unwrap();
    let rt = runtime::compile(&nvrtc, &runtime::SHADOW, Arch::new(9, 0)).unwrap();
    let merged = mantissa_ptx::pass::shadow::inline_runtime(
        &merge_runtime(&instrumented.module, &rt).unwrap(),
    )
    .unwrap()
    .to_string();
    if mantissa_ptx::ptxas::find().is_some() {
        mantissa_ptx::ptxas::assemble(&merged, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    }

    let n = 4096usize;
    let inputs = materialize(&spec).unwrap().buffers;
    let (x, z) = (f64s(&inputs, "x"), f64s(&inputs, "z"));
    assert_eq!((x.len(), z.len()), (n, n));
    let mut memory = Memory::new();
    let (xa, za) = (memory.f64s(&x), memory.f64s(&z));
    let (ya, wa, va) = (
        memory.f64s(&vec![0.0; n]),
        memory.f64s(&vec![0.0; n]),
        memory.f64s(&vec![0.0; n]),
    );
    let launch = Launch::linear(n as u32 / 256, 256);
    let seeded = oracle::expected(
        &module,
        "seeded",
        launch,
        &[
            Arg::i32(n as i32),
            Arg::u64(xa),
            Arg::u64(za),
            Arg::u64(ya),
            Arg::u64(wa),
        ],
        &mut memory,
        &options,
    )
    .unwrap();
    let clean = oracle::expected(
        &module,
        "clean",
        launch,
        &[Arg::i32(n as i32), Arg::u64(xa), Arg::u64(va)],
        &mut memory,
        &options,
    )
    .unwrap();
    // One run launches both kernels: the per-site statistics of the two launches add up (each
    // site is in one kernel, so only one of them has counts at it).
    let results: Vec<SiteResult> = instrumented
        .report
        .sites
        .iter()
        .filter(|s| s.demotion || s.exceptions)
        .map(|s| {
            let k = s.index as usize;
            let in_seeded = s.site.function == "seeded";
            SiteResult::new(s, if in_seeded { &seeded[k] } else { &clean[k] })
        })
        .collect();
    let functions = summarise(&results);
    assert_eq!(
        functions
            .iter()
            .map(|f| f.function.as_str())
            .collect::<Vec<_>>(),
        ["seeded", "clean"]
    );
    let lines: Vec<_> = functions.iter().flat_map(|f| &f.lines).collect();
    let with_exceptions: Vec<(u32, Exceptions)> = lines
        .iter()
        .filter_map(|l| l.exceptions.filter(Exceptions::any).map(|e| (l.line, e)))
        .collect();
    assert_eq!(
        with_exceptions,
        vec![
            (
                marked("nan-origin"),
                Exceptions {
                    nan: 1,
                    nan_origin: 1,
                    div_by_zero: 1,
                    ..Exceptions::default()
                }
            ),
            (
                marked("nan-propagated"),
                Exceptions {
                    nan: 1,
                    ..Exceptions::default()
                }
            ),
        ],
        "ranked: the origin first"
    );
    let cancel = lines
        .iter()
        .find(|l| l.line == marked("cancel"))
        .and_then(|l| l.demotion)
        .unwrap();
    assert_eq!(
        (
            cancel.count,
            cancel.sum,
            cancel.max,
            cancel.zero_reference,
            cancel.non_finite
        ),
        (n as u64, n as f64, 1.0, 0, 0)
    );
    for l in lines.iter().filter(|l| l.line != marked("cancel")) {
        if let Some(d) = l.demotion {
            assert!(d.max < 1e-6, "{}:{}: {d:?}", l.function, l.line);
        }
    }
    assert_eq!(functions[1].exceptions, Some(Exceptions::default()));
}
