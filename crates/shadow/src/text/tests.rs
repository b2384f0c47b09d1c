//! The text report and the JSON document of a synthetic run, checked whole.

use super::*;
use crate::fixture::run;

#[test]
fn the_text_report_ranks_lines_and_names_origins_and_propagation() {
    let text = render(&run(), Shown::All);
    let expected = "\
kernel seed
  line          max      mean     sum      samples  exceptions                   ops         source
  shadow.cu:22  -        -        -        0 +32n   32 NaN (32 origin), 32 div0  div.rn.f64  y = 0.0 / z;
  shadow.cu:20  1.00e0   1.00e0   6.40e1   64       -                            sub.rn.f64
  shadow.cu:26  3.12e-2  7.81e-3  5.00e-1  64       -                            mul.rn.f64
  shadow.cu:24  0        0        0        32 +32n  32 NaN                       add.rn.f64

nothing measured in: copy (no floating-point instruction, or only ones left unread: see the notes)

exceptions: where they start
  32 NaN (32 origin), 32 div0  shadow.cu:22 (seed): y = 0.0 / z;
propagated to (NaN or inf operands in, NaN or inf out)
  32 NaN  shadow.cu:24 (seed)

shadow (default flags, demotion,exceptions): 4 sites on 4 lines in 1 function; largest demotion error 1.00e0 at shadow.cu:20 (seed); 32 NaN/inf origins; outputs bit-identical to the program as written; 1 run; time 1.500 ms as written, 3.000 ms instrumented (2.0x)
";
    assert_eq!(text, expected, "\n{text}");
    let top = render(&run(), Shown::Top(1));
    assert!(
        top.contains("  ... 3 more lines (--all shows them)\n"),
        "{top}"
    );
    assert!(!top.contains("shadow.cu:26  "), "{top}");
}

#[test]
fn no_exceptions_and_nothing_to_measure_are_one_line_each() {
    let mut r = run();
    r.functions
        .iter_mut()
        .flat_map(|f| &mut f.lines)
        .for_each(|l| {
            l.exceptions = Some(Exceptions::default());
        });
    assert_eq!(exceptions_block(&r), "exceptions: none\n\n");
    r.analyses.exceptions = false;
    assert_eq!(exceptions_block(&r), "");
    let mut empty = run();
    empty.sites.clear();
    empty.functions.clear();
    assert_eq!(
        nothing_to_measure(&empty),
        "shadow: no floating-point instruction for demotion,exceptions to measure in kernels seed, copy"
    );
    assert_eq!(empty.kernels_without_sites(), ["seed", "copy"]);
    assert_eq!(run().kernels_without_sites(), ["copy"]);
}

#[test]
fn the_json_document_has_per_site_and_per_line_data() {
    let v = serde_json::to_value(run()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        // serde_json's map sorts keys.
        [
            "analyses",
            "contraction",
            "device",
            "flags",
            "functions",
            "kernels",
            "notes",
            "outputs",
            "reseeds",
            "resources",
            "runs",
            "sites",
            "spec",
            "timing"
        ]
    );
    let site = &v["sites"][1];
    assert_eq!(site["index"], 1);
    assert_eq!(site["site"]["function"], "seed");
    assert_eq!(site["site"]["line"], 22);
    assert_eq!(site["opcode"], "div.rn.f64");
    assert_eq!(site["value_type"], "f64");
    assert_eq!(site["exceptions"]["nan_origin"], 32);
    assert_eq!(site["demotion"]["non_finite"], 32);
    let line = &v["functions"][0]["lines"][1];
    assert_eq!(line["line"], 20);
    assert_eq!(line["file"], "/src/shadow.cu");
    assert_eq!(line["sites"], serde_json::json!([0]));
    assert_eq!(line["demotion"]["max"], 1.0);
    assert_eq!(line["demotion"]["mean"], 1.0);
    assert_eq!(line["demotion"]["sum"], 64.0);
    assert_eq!(v["functions"][0]["lines"][0]["source"], "y = 0.0 / z;");
    assert_eq!(
        v["analyses"],
        serde_json::json!({"demotion": true, "shadow": false, "exceptions": true})
    );
    assert_eq!(
        v["runs"][0]["sites"],
        serde_json::json!({"start": 0, "end": 4})
    );
    assert_eq!(v["timing"]["ratio"], 2.0);
}

#[test]
fn shadow_values_add_columns_the_outputs_block_and_the_fewest_digits() {
    use crate::lines::{summarise, Demotion};
    use crate::values::{output_digits, Reseed, Values};
    use mantissa_gpu::DType;
    let mut r = run();
    r.analyses.shadow = true;
    let errors = |count: u64, sum: f64, max: f64| Demotion {
        count,
        sum,
        max,
        mean: sum / count as f64,
        zero_reference: 0,
        non_finite: 0,
    };
    r.sites[0].values = Some(Values {
        executions: 64,
        local: errors(64, 0.0, 0.0),
        accumulated: errors(64, 64e-8, 1e-8),
        digits: Some(8.0),
        cancellations: 64,
        cancel_max_bits: 27,
        reseeded: 0,
        treatment: "propagated".into(),
    });
    r.functions = summarise(&r.sites);
    r.outputs = vec![output_digits(
        "y",
        DType::F64,
        &[1.0, 2.0],
        &[1e-8, 0.0],
        &[0.0, 0.0],
    )];
    r.reseeds = vec![Reseed {
        site: r.sites[0].site.clone(),
        opcode: "ld.shared.f64".into(),
        reason: "a load from shared memory (not shadowed)".into(),
        executions: 5,
        reseeded: 5,
    }];
    let text = render(&r, Shown::All);
    let header = text.lines().nth(1).unwrap();
    assert!(
        header
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("exceptions local digits cancel reseeded ops"),
        "{header}"
    );
    let cancel = text.lines().find(|l| l.contains("shadow.cu:20")).unwrap();
    let cells = cancel.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(cells.contains(" 0/0 8.0 64 (27b) 0 sub.rn.f64"), "{cancel}");
    assert!(
        text.contains("  y (f64, 2 elements): min 8.0, median 8.0\n"),
        "{text}"
    );
    assert!(
        text.contains("    [0] 1e0 (shadow 1.00000001e0): 8.0 digits\n"),
        "{text}"
    );
    assert!(
        text.contains("  5 of 5  seed shadow.cu:20#0  ld.shared.f64: a load from shared memory"),
        "{text}"
    );
    assert!(
        text.contains("; fewest correct digits 8.0 at shadow.cu:20 (seed)"),
        "{text}"
    );
}

#[test]
fn registers_are_listed_per_kernel_for_every_build() {
    use crate::analyse::KernelCost;
    let mut r = run();
    let cost = |build: &str, registers: u32, local_bytes: u32| KernelCost {
        kernel: "seed".into(),
        build: build.into(),
        registers,
        local_bytes,
    };
    r.resources = vec![
        cost("as written", 40, 0),
        cost("demotion,exceptions", 56, 0),
        cost("shadow", 255, 96),
    ];
    let text = render(&r, Shown::All);
    assert!(
        text.contains(
            "registers per thread, seed: 40 as written, 56 demotion,exceptions, 255 (+96 B local) shadow\n"
        ),
        "{text}"
    );
    // A kernel with only its as-written figure has nothing to compare: no line.
    r.resources.truncate(1);
    assert!(!render(&r, Shown::All).contains("registers per thread"));
}
