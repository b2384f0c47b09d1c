//! The `--json` form of `mantissa inspect`: everything the text shows and more (every line,
//! the census), with stable field names documented in docs/COMMANDS.md.

use super::source::SourceLines;
use super::{Build, KernelView, Usage};
use mantissa_gpu::{Arch, BuildFacts};
use mantissa_ptx::census;
use mantissa_ptx::compare::call_tree;
use serde_json::{json, Value};

/// What the JSON is made of.
pub(crate) struct Inputs<'a> {
    pub(crate) file_name: &'a str,
    pub(crate) choice: &'a str,
    pub(crate) facts: &'a [(String, BuildFacts)],
    pub(crate) arch: Arch,
    pub(crate) shown: &'a [&'a Build],
    pub(crate) views: &'a [KernelView],
    pub(crate) resources: &'a [Usage],
    pub(crate) source: &'a SourceLines,
    pub(crate) sass_note: Option<&'a str>,
}

/// Prints the JSON document.
pub(crate) fn print(i: &Inputs) -> anyhow::Result<()> {
    let mut kernels = Vec::new();
    for v in i.views {
        let k = &v.report.kernel;
        let census: serde_json::Map<String, Value> = i
            .shown
            .iter()
            .map(|b| {
                let c: Vec<_> = call_tree(&b.module, k)
                    .into_iter()
                    .map(census::function_census)
                    .collect();
                Ok((b.name.clone(), serde_json::to_value(c)?))
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let lines: Vec<Value> = v
            .report
            .lines
            .iter()
            .map(|l| {
                let mut x = serde_json::to_value(l)?;
                x["text"] = json!(i.source.text(l.at));
                x["file"] = json!(i.source.file_label(l.at.file));
                x["label"] = json!(i.source.label(l.at));
                x["rank"] = serde_json::to_value(v.rank(l))?;
                x["significant"] = json!(l.significant());
                x["reference_sass"] = json!(v.reference_sass.get(&l.at));
                Ok(x)
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let promotions: Vec<Value> = v
            .promotions
            .iter()
            .map(|f| {
                let mut x = serde_json::to_value(&f.promotion)?;
                x["build"] = json!(v.promotion_build);
                x["accidental"] = json!(f.promotion.accidental());
                x["label"] = json!(i.source.label(f.promotion.at));
                x["text"] = json!(i.source.text(f.promotion.at));
                x["culprits"] = serde_json::to_value(&f.culprits)?;
                x["fix"] = json!(f.fix);
                Ok(x)
            })
            .collect::<Result<_, serde_json::Error>>()?;
        kernels.push(json!({
            "kernel": k,
            "callees": v.report.callees,
            "resources": i.resources.iter().filter(|r| &r.kernel == k).collect::<Vec<_>>(),
            "promotions": promotions,
            "lines": lines,
            "census": census,
        }));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "file": i.file_name,
            "front_end": i.choice,
            "builds": i.facts
                .iter()
                .map(|(name, f)| Ok(json!({"name": name, "facts": serde_json::to_value(f)?})))
                .collect::<Result<Vec<_>, serde_json::Error>>()?,
            "arch": i.arch.sm(),
            "flag_sets": i.shown.iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
            "sass": match i.sass_note {
                None => json!({"checked": true}),
                Some(n) => json!({"checked": false, "note": n}),
            },
            "kernels": kernels,
        }))?
    );
    Ok(())
}
