//! Aggregation and ranking on synthetic site statistics whose tables are worked out by hand
//! (dyadic values, so every sum and mean below is exact).

use super::*;
use mantissa_ptx::model::InstId;
use mantissa_ptx::op::ValueType;

/// Demotion samples: (count, sum, max, zero_reference, non_finite).
type D = (u64, f64, f64, u64, u64);
/// Exceptions: [nan, nan_origin, inf, inf_origin, div_by_zero, subnormal].
type E = [u64; 6];

#[allow(clippy::too_many_arguments)]
fn site(
    index: u32,
    function: &str,
    (file, line, ordinal): (&str, u32, u32),
    inlined: &[(&str, u32)],
    opcode: &str,
    value_type: ValueType,
    d: Option<D>,
    e: Option<E>,
) -> SiteResult {
    let shadow_site = ShadowSite {
        index,
        site: Site {
            function: function.into(),
            file: file.into(),
            line,
            ordinal,
            inlined: inlined.iter().map(|(f, l)| (f.to_string(), *l)).collect(),
        },
        inst: InstId(100 + index),
        opcode: opcode.into(),
        value_type,
        demotion: d.is_some(),
        exceptions: e.is_some(),
        instrumented: true,
    };
    let stats = SiteStats {
        demotion: d.map(|(count, sum, max, zero_reference, non_finite)| ErrorStats {
            count,
            sum,
            max,
            zero_reference,
            non_finite,
        }),
        exceptions: e.map(
            |[nan, nan_origin, inf, inf_origin, div_by_zero, subnormal]| ExceptionCounts {
                nan,
                nan_origin,
                inf,
                inf_origin,
                div_by_zero,
                subnormal,
            },
        ),
    };
    SiteResult::new(&shadow_site, &stats)
}

const NONE: E = [0; 6];
const P20: f64 = 1.0 / (1u64 << 20) as f64;

fn fixture() -> Vec<SiteResult> {
    use ValueType::{F32, F64};
    vec![
        site(
            0,
            "k",
            ("k.cu", 10, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((4, 0.5, 0.25, 0, 0)),
            Some(NONE),
        ),
        site(
            1,
            "k",
            ("k.cu", 10, 1),
            &[],
            "mul.rn.f64",
            F64,
            Some((4, 0.125, 0.0625, 1, 0)),
            Some(NONE),
        ),
        site(
            2,
            "k",
            ("k.cu", 12, 0),
            &[],
            "div.rn.f64",
            F64,
            Some((2, P20, P20, 0, 2)),
            Some([2, 2, 0, 0, 2, 0]),
        ),
        site(
            3,
            "k",
            ("k.cu", 14, 0),
            &[],
            "add.f32",
            F32,
            None,
            Some([2, 0, 0, 0, 0, 0]),
        ),
        site(
            4,
            "k",
            ("/usr/include/math.hpp", 300, 0),
            &[("k.cu", 16), ("/usr/include/math.hpp", 290)],
            "sqrt.rn.f64",
            F64,
            Some((4, P20, P20 / 4.0, 0, 0)),
            Some(NONE),
        ),
        site(
            5,
            "k",
            ("k.cu", 16, 0),
            &[],
            "mul.rn.f64",
            F64,
            Some((4, P20 / 2.0, P20 / 2.0, 0, 0)),
            Some([0, 0, 0, 0, 0, 3]),
        ),
        site(
            6,
            "g",
            ("k.cu", 30, 0),
            &[],
            "fma.rn.f64",
            F64,
            Some((1, 1.0, 1.0, 0, 0)),
            Some(NONE),
        ),
    ]
}

/// (file, line, sites, opcodes, inlined, demotion, exceptions) of each line, in rank order.
type Row = (
    String,
    u32,
    Vec<u32>,
    Vec<String>,
    u32,
    Option<Demotion>,
    Option<Exceptions>,
);

fn rows(f: &FunctionSummary) -> Vec<Row> {
    f.lines
        .iter()
        .map(|l| {
            (
                l.file.clone(),
                l.line,
                l.sites.clone(),
                l.opcodes.clone(),
                l.inlined,
                l.demotion,
                l.exceptions,
            )
        })
        .collect()
}

fn dem(
    count: u64,
    sum: f64,
    max: f64,
    mean: f64,
    zero_reference: u64,
    non_finite: u64,
) -> Demotion {
    Demotion {
        count,
        sum,
        max,
        mean,
        zero_reference,
        non_finite,
    }
}

fn exc([nan, nan_origin, inf, inf_origin, div_by_zero, subnormal]: E) -> Exceptions {
    Exceptions {
        nan,
        nan_origin,
        inf,
        inf_origin,
        div_by_zero,
        subnormal,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn lines_combine_their_sites_and_rank_origins_first_then_demotion_error() {
    let summary = summarise(&fixture());
    assert_eq!(
        summary
            .iter()
            .map(|f| f.function.as_str())
            .collect::<Vec<_>>(),
        ["k", "g"],
        "functions in the order of their first site"
    );
    let k = &summary[0];
    let expected: Vec<Row> = vec![
        // The NaN origin outranks every demotion error.
        (
            "k.cu".into(),
            12,
            vec![2],
            strings(&["div.rn.f64"]),
            0,
            Some(dem(2, P20, P20, P20 / 2.0, 0, 2)),
            Some(exc([2, 2, 0, 0, 2, 0])),
        ),
        // Largest max next: 0.25 over 8 samples, sum 0.625, mean 0.625 / 8.
        (
            "k.cu".into(),
            10,
            vec![0, 1],
            strings(&["add.rn.f64", "mul.rn.f64"]),
            0,
            Some(dem(8, 0.625, 0.25, 0.078125, 1, 0)),
            Some(exc(NONE)),
        ),
        // The header's sqrt counts on the user's line 16 (the outermost call), beside its mul.
        (
            "k.cu".into(),
            16,
            vec![4, 5],
            strings(&["sqrt.rn.f64", "mul.rn.f64"]),
            1,
            Some(dem(8, 1.5 * P20, P20 / 2.0, 1.5 * P20 / 8.0, 0, 0)),
            Some(exc([0, 0, 0, 0, 0, 3])),
        ),
        // An f32 line has no demotion error: last.
        (
            "k.cu".into(),
            14,
            vec![3],
            strings(&["add.f32"]),
            0,
            None,
            Some(exc([2, 0, 0, 0, 0, 0])),
        ),
    ];
    assert_eq!(rows(k), expected);
    assert_eq!(
        k.demotion,
        Some(dem(
            18,
            0.625 + 2.5 * P20,
            0.25,
            (0.625 + 2.5 * P20) / 18.0,
            1,
            2
        ))
    );
    assert_eq!(k.exceptions, Some(exc([4, 2, 0, 0, 2, 3])));
    assert_eq!(
        rows(&summary[1]),
        vec![(
            "k.cu".into(),
            30,
            vec![6],
            strings(&["fma.rn.f64"]),
            0,
            Some(dem(1, 1.0, 1.0, 1.0, 0, 0)),
            Some(exc(NONE)),
        )]
    );
}

#[test]
fn exception_roles() {
    let origin = exc([2, 2, 0, 0, 2, 0]);
    assert_eq!((origin.origins(), origin.propagated()), (2, 0));
    assert!(origin.is_source() && origin.any());
    let propagated = exc([3, 1, 4, 0, 0, 0]);
    assert_eq!((propagated.origins(), propagated.propagated()), (1, 6));
    let subnormal = exc([0, 0, 0, 0, 0, 1]);
    assert!(subnormal.is_source());
    assert!(!exc(NONE).any() && !exc(NONE).is_source());
}

#[test]
fn ties_fall_to_the_mean_then_the_sum_then_first_seen_order() {
    use ValueType::F64;
    let sites = vec![
        site(
            0,
            "k",
            ("k.cu", 1, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((4, 1.0, 0.5, 0, 0)),
            None,
        ),
        site(
            1,
            "k",
            ("k.cu", 2, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((2, 1.0, 0.5, 0, 0)),
            None,
        ),
        site(
            2,
            "k",
            ("k.cu", 3, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((4, 2.0, 0.5, 0, 0)),
            None,
        ),
        site(
            3,
            "k",
            ("k.cu", 4, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((8, 4.0, 0.5, 0, 0)),
            None,
        ),
        site(
            4,
            "k",
            ("k.cu", 5, 0),
            &[],
            "add.rn.f64",
            F64,
            Some((8, 4.0, 0.5, 0, 0)),
            None,
        ),
    ];
    let order: Vec<u32> = summarise(&sites)[0].lines.iter().map(|l| l.line).collect();
    // Means: 0.25, 0.5, 0.5, 0.5, 0.5; among the 0.5s the sums 1, 2, 4, 4; lines 4 and 5 tie.
    assert_eq!(order, [4, 5, 3, 2, 1]);
}

#[test]
fn merging_nothing_keeps_none_and_the_mean_of_no_sample_is_zero() {
    let d = dem(0, 0.0, 0.0, 0.0, 3, 1);
    let m = d.merge(&dem(0, 0.0, 0.0, 0.0, 1, 0));
    assert_eq!(m, dem(0, 0.0, 0.0, 0.0, 4, 1));
    use ValueType::F32;
    let only_f32 = vec![site(
        0,
        "k",
        ("k.cu", 1, 0),
        &[],
        "add.f32",
        F32,
        None,
        None,
    )];
    let s = summarise(&only_f32);
    assert_eq!((s[0].demotion, s[0].exceptions), (None, None));
}
