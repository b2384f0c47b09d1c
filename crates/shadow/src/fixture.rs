//! A synthetic analysis for the report tests: kernel `seed` of `/src/shadow.cu` with a
//! cancellation (line 20, relative error 1 everywhere), a NaN origin by division by zero
//! (line 22), its propagation (line 24) and a small error (line 26); kernel `copy` has no site.

use crate::analyse::{Overhead, PartRun, ShadowRun};
use crate::analyses::Analyses;
use crate::lines::{summarise, Demotion, Exceptions, SiteResult};
use mantissa_ptx::op::ValueType;
use mantissa_ptx::site::Site;

fn result(
    index: u32,
    line: u32,
    opcode: &str,
    d: Option<Demotion>,
    e: Option<Exceptions>,
) -> SiteResult {
    SiteResult {
        index,
        site: Site {
            function: "seed".into(),
            file: "/src/shadow.cu".into(),
            line,
            ordinal: 0,
            inlined: vec![],
        },
        opcode: opcode.into(),
        value_type: match mantissa_ptx::op::decode_name(opcode).ty {
            Some(ValueType::F32) => "f32",
            _ => "f64",
        }
        .into(),
        demotion: d,
        exceptions: e,
        values: None,
    }
}

fn d(count: u64, sum: f64, max: f64) -> Demotion {
    Demotion {
        count,
        sum,
        max,
        mean: if count == 0 { 0.0 } else { sum / count as f64 },
        zero_reference: 0,
        non_finite: 0,
    }
}

pub fn run() -> ShadowRun {
    let nan = Exceptions {
        nan: 32,
        nan_origin: 32,
        div_by_zero: 32,
        ..Exceptions::default()
    };
    let propagated = Exceptions {
        nan: 32,
        ..Exceptions::default()
    };
    let sites = vec![
        result(
            0,
            20,
            "sub.rn.f64",
            Some(d(64, 64.0, 1.0)),
            Some(Exceptions::default()),
        ),
        result(
            1,
            22,
            "div.rn.f64",
            Some(Demotion {
                non_finite: 32,
                ..d(0, 0.0, 0.0)
            }),
            Some(nan),
        ),
        result(
            2,
            24,
            "add.rn.f64",
            Some(Demotion {
                non_finite: 32,
                ..d(32, 0.0, 0.0)
            }),
            Some(propagated),
        ),
        result(
            3,
            26,
            "mul.rn.f64",
            Some(d(64, 0.5, 0.03125)),
            Some(Exceptions::default()),
        ),
    ];
    let mut functions = summarise(&sites);
    functions[0].lines[0].source = Some("y = 0.0 / z;".into());
    ShadowRun {
        spec: "shadow".into(),
        flags: "default".into(),
        analyses: Analyses {
            shadow: false,
            ..Analyses::default()
        },
        kernels: vec!["seed".into(), "copy".into()],
        sites,
        functions,
        runs: vec![PartRun {
            analyses: "demotion,exceptions".into(),
            sites: 0..4,
            time_ms: Some(3.0),
        }],
        notes: vec![],
        reseeds: vec![],
        outputs: vec![],
        timing: Some(Overhead {
            original_ms: 1.5,
            instrumented_ms: 3.0,
            ratio: 2.0,
        }),
        resources: Vec::new(),
        device: "test".into(),
        contraction: Default::default(),
        first_launch: None,
        build: None,
    }
}
