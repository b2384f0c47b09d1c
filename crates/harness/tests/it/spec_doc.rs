//! Every example of docs/SPEC.md is read by the code it documents: each TOML block parses as a
//! spec (fragments completed with what they leave out), the configuration JSON as a
//! configuration and the `--json` record as records. Embedded, so the test does not depend on
//! where the tree is.

use mantissa_gpu::HostData;
use mantissa_harness::config::Demotion;
use mantissa_harness::data::materialize;
use mantissa_harness::Spec;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

const DOC: &str = include_str!("../../../../docs/SPEC.md");

/// The fenced blocks of `lang` in the document, in order.
fn blocks(lang: &str) -> Vec<&'static str> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = DOC;
    while let Some(at) = rest.find(&fence) {
        let body = &rest[at + fence.len()..];
        let end = body.find("```").expect("a closed block");
        out.push(&body[..end]);
        rest = &body[end..];
    }
    out
}

/// A directory with every file the examples name.
fn workdir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "mantissa-spec-doc-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    for sub in ["data", "ref", "include", "../common"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    for f in ["heat.cu", "solver.cu", "kernel.cu"] {
        std::fs::write(d.join(f), "// kernels\n").unwrap();
    }
    let npy =
        |name: &str, data: HostData| mantissa_harness::npy::write(&d.join(name), &data).unwrap();
    npy("data/u0.npy", HostData::F64(vec![0.0; 256]));
    npy("data/table.npy", HostData::F32(vec![0.0; 8]));
    npy("ref/u.npy", HostData::F64(vec![0.0; 256]));
    d
}

/// What a fragment leaves out, by section.
const SOURCE: &str = "[source]\nfile = \"kernel.cu\"\n";
const SIZES: &str = "[sizes]\nnx = 16\nny = 16\nn = \"nx * ny\"\nsteps = 3\ndt = 0.1\nr = 0.5\n";
const BUFFERS: &str = "[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n[buffers.u_prev]\ntype = \"f64\"\nlen = \"n\"\n[buffers.energy]\ntype = \"f64\"\nlen = 4\n[buffers.flux]\ntype = \"f64\"\nlen = \"n\"\n[buffers.state]\ntype = \"f64\"\nlen = \"3 * n\"\n";
const STEPS: &str = "[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\n";

/// `fragment` made a whole spec: each section it does not have is added.
fn complete(fragment: &str) -> String {
    let has = |header: &str| fragment.lines().any(|l| l.trim_start().starts_with(header));
    let mut text = String::new();
    // Top-level keys (`steps = [...]`) must come before any table.
    let top_level = fragment.trim_start().starts_with("steps = [");
    if top_level {
        text += fragment;
    }
    if !has("[source]") {
        text += SOURCE;
    }
    if !has("[sizes]") {
        text += SIZES;
    }
    if !has("[buffers.") {
        text += BUFFERS;
    }
    if !top_level {
        text += fragment;
        text += "\n";
    }
    if !has("[[steps]]") && !top_level {
        text += STEPS;
    }
    if !has("[[outputs]]") {
        let first = fragment
            .lines()
            .find_map(|l| l.trim().strip_prefix("[buffers.")?.split(']').next())
            .unwrap_or("u");
        text += &format!("[[outputs]]\nbuffer = \"{first}\"\n");
    }
    text
}

/// The specs one TOML block stands for: itself when it is whole, one per line for lists of
/// alternatives (`init = ...` lines, inline steps in a loop counting `t`), else the fragment
/// completed.
fn specs_of(block: &str) -> Vec<String> {
    let lines: Vec<&str> = block
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    if block.contains("[source]") && block.contains("[[steps]]") {
        vec![block.to_string()]
    } else if lines.iter().all(|l| l.starts_with("init = ")) {
        lines
            .iter()
            .map(|l| complete(&format!("[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n{l}\n")))
            .collect()
    } else if lines.iter().all(|l| l.starts_with("{ ")) {
        lines
            .iter()
            // Inside a loop, so that a step may use its counter `t`.
            .map(|l| {
                complete(&format!(
                    "steps = [{{ repeat = 2, counter = \"t\", steps = [\n{l}\n] }}]\n"
                ))
            })
            .collect()
    } else {
        vec![complete(block)]
    }
}

#[test]
fn every_toml_example_parses() {
    let blocks = blocks("toml");
    assert!(blocks.len() >= 14, "{} TOML blocks", blocks.len());
    let mut specs = 0;
    for (i, block) in blocks.iter().enumerate() {
        for text in specs_of(block) {
            let d = workdir();
            let p = d.join("example.toml");
            std::fs::write(&p, &text).unwrap();
            let spec = Spec::load(&p)
                .unwrap_or_else(|e| panic!("TOML block {i} of SPEC.md:\n{block}\nas\n{text}\n{e}"));
            materialize(&spec).unwrap_or_else(|e| panic!("TOML block {i}: {e}"));
            specs += 1;
            std::fs::remove_dir_all(&d).ok();
        }
    }
    assert!(specs >= 23, "{specs} specs");
}

/// The walkthrough is whole as written, and reads back as described.
#[test]
fn the_walkthrough_reads_back() {
    let toml = blocks("toml")
        .into_iter()
        .find(|b| b.starts_with("# heat.toml"))
        .expect("the walkthrough's spec");
    let d = workdir();
    let p = d.join("heat.toml");
    std::fs::write(&p, toml).unwrap();
    let s = Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (s.name.as_str(), s.steps.len(), s.outputs.len()),
        ("heat", 2, 2)
    );
    assert_eq!(materialize(&s).unwrap().symbols[0].1.len(), 24);
    // The --set example's message is this spec's.
    let e = Spec::load_with(&p, &["nz=4".parse().unwrap()]).unwrap_err();
    let e = e.to_string().replace(&format!("{}/", d.display()), "");
    assert!(DOC.contains(&e), "{e}");
}

/// The nested-loop example is three deep, with the paths messages use.
#[test]
fn the_nested_loop_example_is_three_deep() {
    let block = blocks("toml")
        .into_iter()
        .find(|b| b.contains("[[steps.steps.steps]]"))
        .expect("a [[steps.steps.steps]] example");
    let d = workdir();
    let p = d.join("nested.toml");
    std::fs::write(&p, complete(block)).unwrap();
    let s = Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<String> = s.walk().iter().map(|(st, _)| st.describe()).collect();
    assert_eq!(
        paths,
        [
            "steps[0] (repeat)",
            "steps[0].steps[0] (repeat)",
            "steps[0].steps[0].steps[0] (launch rk_stage)",
            "steps[0].steps[1] (copy u -> u_prev)"
        ]
    );
    assert_eq!(s.walk()[2].1, ["t", "stage"]);
}

#[test]
fn the_json_examples_read_back() {
    let json = blocks("json");
    assert_eq!(json.len(), 2, "a configuration and a record");
    let config: Demotion = serde_json::from_str(json[0]).unwrap();
    assert_eq!(config.name, "fast-pricing");
    let records: Vec<mantissa_report::Record> = serde_json::from_str(json[1]).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].algorithm.as_str(), records[0].input.as_str()),
        ("u", "spec")
    );
    // What the record says must be what the harness writes: the descriptions are its own.
    let run_rs = include_str!("../../src/run.rs");
    for d in records[0].descriptions.values() {
        assert!(run_rs.contains(d.as_str()), "{d}");
    }
}
