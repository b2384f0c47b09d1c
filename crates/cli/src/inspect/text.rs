//! The terminal form of `mantissa inspect`: per kernel, its resources and loops, then its
//! findings ranked by what changes results or costs time, each under its `file:line`, then one
//! summary line for what was folded away (`--all` shows everything in source order).

use super::source::SourceLines;
use super::{demangled, Build, Found, KernelView, Rank, Usage};
use mantissa_ptx::census::{self, SourceLine};
use mantissa_ptx::compare::{call_tree, Highlight, LineBuild, LineReport};
use mantissa_ptx::promotion::source::decimal;

/// How many registers or lines a list shows before `…`.
const LIST_MAX: usize = 6;

/// Prints one kernel.
pub(crate) fn print_kernel(
    v: &KernelView,
    builds: &[&Build],
    resources: &[Usage],
    src: &SourceLines,
    all: bool,
) {
    let r = &v.report;
    match demangled(&r.kernel) {
        plain if plain != r.kernel => println!("kernel {} ({plain})", r.kernel),
        _ => println!("kernel {}", r.kernel),
    }
    if !r.callees.is_empty() {
        println!("  calls {}", r.callees.join(", "));
    }
    let width = builds
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    print_resources(&r.kernel, resources, width);
    print_loops(&r.kernel, builds, src, width);
    let mut lines: Vec<(Option<Rank>, &LineReport)> =
        r.lines.iter().map(|l| (v.rank(l), l)).collect();
    if all {
        lines.retain(|(_, l)| l.at.line != 0 || !l.builds.iter().all(|b| b.ops.is_empty()));
    } else {
        lines.retain(|(rank, l)| rank.is_some() && l.at.line != 0);
        lines.sort_by_key(|(rank, l)| (*rank, l.at));
    }
    for (rank, l) in &lines {
        print_line(v, l, *rank, src, width, all);
    }
    if lines.is_empty() {
        println!("\n  no findings: the flag sets agree beyond .ftz and .rn, and nothing is flagged (--all lists every line)");
    }
    if !all {
        print_effects(v, src);
        print_folded(v, src);
    }
    println!();
}

fn print_resources(kernel: &str, resources: &[Usage], width: usize) {
    for u in resources.iter().filter(|u| u.kernel == kernel) {
        let mut parts = Vec::new();
        if let Some(n) = u.registers {
            parts.push(format!("{n} registers"));
        }
        if let (Some(s), Some(l)) = (u.spill_store_bytes, u.spill_load_bytes) {
            parts.push(format!("spills {s} B stored / {l} B loaded"));
        }
        if let Some(b) = u.local_bytes {
            parts.push(format!("{b} B local"));
        }
        if let Some(n) = &u.note {
            parts.push(n.clone());
        }
        let from = if u.registers.is_some() {
            format!(" (from {})", u.from)
        } else {
            String::new()
        };
        println!("  {:width$}  {}{from}", u.build, parts.join(", "));
    }
}

/// Static arithmetic intensity of each loop, per build: flops per off-chip byte of one pass
/// through the loop's instructions. One row when every build agrees.
fn print_loops(kernel: &str, builds: &[&Build], src: &SourceLines, width: usize) {
    let mut rows: Vec<(String, String)> = Vec::new();
    for b in builds {
        let mut loops = Vec::new();
        for f in call_tree(&b.module, kernel) {
            for l in census::function_census(f).loops {
                let lines: Vec<SourceLine> =
                    l.lines.iter().copied().filter(|s| s.line > 0).collect();
                let span = match (lines.iter().min(), lines.iter().max()) {
                    (Some(a), Some(z)) if a.file == z.file && a.line != z.line => {
                        format!("{}-{}", src.label(*a), z.line)
                    }
                    (Some(a), Some(z)) if a != z => {
                        format!("{} to {}", src.label(*a), src.label(*z))
                    }
                    (Some(a), _) => src.label(*a),
                    _ => "no line info".to_string(),
                };
                let what = match l.intensity {
                    Some(i) => format!(
                        "{} flop / {} B = {i:.2} flop/B",
                        l.counts.flops(),
                        l.counts.offchip_bytes
                    ),
                    None => format!("{} flop, nothing off chip", l.counts.flops()),
                };
                let nest = if l.depth > 1 {
                    format!(" (depth {})", l.depth)
                } else {
                    String::new()
                };
                loops.push(format!("{span}{nest}: {what}"));
            }
        }
        if !loops.is_empty() {
            rows.push((b.name.clone(), loops.join("; ")));
        }
    }
    if rows.is_empty() {
        return;
    }
    if rows.len() == builds.len() && rows.windows(2).all(|w| w[0].1 == w[1].1) {
        let which = if rows.len() > 1 {
            ", every flag set"
        } else {
            ""
        };
        println!("  loops (static arithmetic intensity of one iteration{which}):");
        println!("    {}", rows[0].1);
        return;
    }
    println!("  loops (static arithmetic intensity of one iteration):");
    for (name, loops) in rows {
        println!("    {name:width$}  {loops}");
    }
}

fn ops_text(b: &LineBuild) -> String {
    let ops: Vec<String> = b
        .ops
        .iter()
        .map(|(o, n)| {
            if *n > 1 {
                format!("{o}×{n}")
            } else {
                o.clone()
            }
        })
        .collect();
    if ops.is_empty() {
        "-".to_string()
    } else {
        ops.join(" ")
    }
}

fn print_line(
    v: &KernelView,
    l: &LineReport,
    rank: Option<Rank>,
    src: &SourceLines,
    width: usize,
    all: bool,
) {
    let text = src.text(l.at).map(|t| format!(" {t}")).unwrap_or_default();
    let inl = if l.inlined_at.is_empty() {
        String::new()
    } else {
        format!(
            " (inlined at {})",
            l.inlined_at
                .iter()
                .map(|s| src.label(*s))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    println!("\n  {}{inl}:{text}", src.label(l.at));
    for f in v.promotions.iter().filter(|f| f.promotion.at == l.at) {
        if f.promotion.accidental() || all {
            print_promotion(f, &v.promotion_build, src);
        }
    }
    for b in &l.builds {
        println!("    {:width$}  {}", b.build, ops_text(b));
        for h in &b.highlights {
            println!("    {:width$}    ! {}", "", h.describe("strict"));
        }
        let contracts = b.highlights.iter().any(|h| {
            matches!(
                h,
                Highlight::Contraction { .. } | Highlight::Contractible { .. }
            )
        });
        if contracts || rank == Some(Rank::Contraction) {
            let strict = Some(b.build.as_str())
                .filter(|name| *name != "strict")
                .and_then(|_| v.reference_sass.get(&l.at));
            if let Some(s) = sass_line(b, contracts, strict) {
                println!("    {:width$}    {s}", "");
            }
        }
    }
}

/// What the SASS says about a contraction line in build `b`.
fn sass_line(
    b: &LineBuild,
    contracts: bool,
    strict: Option<&std::collections::BTreeMap<String, u32>>,
) -> Option<String> {
    let sass = b.sass.as_ref()?;
    let count = |op: &str| sass.get(op).copied().unwrap_or(0);
    let in_strict = |op: &str| strict.map(|s| s.get(op).copied().unwrap_or(0));
    // Fused instructions beyond strict's: a double division or square root is a DFMA
    // sequence under every flag set, so only the excess is the contraction.
    let fused: Vec<String> = ["FFMA", "DFMA"]
        .iter()
        .filter(|op| count(op) > in_strict(op).unwrap_or(0))
        .map(|op| match in_strict(op) {
            Some(n) => format!("{} {op} (strict: {n})", count(op)),
            None => format!("{} {op}", count(op)),
        })
        .collect();
    let arithmetic: Vec<String> = ["FFMA", "FMUL", "FADD", "DFMA", "DMUL", "DADD"]
        .iter()
        .filter(|op| count(op) > 0)
        .map(|op| {
            if count(op) > 1 {
                format!("{op}×{}", count(op))
            } else {
                op.to_string()
            }
        })
        .collect();
    match (contracts, fused.is_empty()) {
        (true, false) => Some(format!("✓ confirmed by SASS: {}", fused.join(", "))),
        (true, true) if strict.is_some() => {
            Some("SASS: no more FFMA/DFMA here than strict (ptxas did not fuse it)".into())
        }
        (true, true) => Some("SASS: no FFMA on this line (ptxas did not fuse it)".into()),
        (false, _) if !arithmetic.is_empty() => Some(format!("SASS: {}", arithmetic.join(" "))),
        _ => None,
    }
}

fn list(items: &[String]) -> String {
    if items.len() > LIST_MAX {
        format!("{}, …", items[..LIST_MAX].join(", "))
    } else {
        items.join(", ")
    }
}

fn print_promotion(f: &Found, build: &str, src: &SourceLines) {
    let p = &f.promotion;
    let mut what = Vec::new();
    if p.promotions > 0 {
        what.push(format!(
            "{} float→double conversion{} ({})",
            p.promotions,
            if p.promotions == 1 { "" } else { "s" },
            list(&p.promoted)
        ));
    }
    if p.from_integers > 0 {
        what.push(format!("{} integer→double", p.from_integers));
    }
    let others: Vec<String> = p
        .lines
        .iter()
        .filter(|l| **l != p.at)
        .map(|l| src.label(*l))
        .collect();
    if what.is_empty() {
        // Its conversions to double are on another line (a value computed in double there and
        // used again here): say where, rather than print nothing.
        what.push(if others.is_empty() {
            "a double value".to_string()
        } else {
            format!("a double value from {}", list(&others))
        });
    }
    let back = match p.to_f32 {
        0 => String::new(),
        1 => ", rounded back to float once".to_string(),
        n => format!(", rounded back to float {n} times"),
    };
    let mut cost = format!(
        "{} f64 instruction{} per execution of this line",
        p.per_execution,
        if p.per_execution == 1 { "" } else { "s" }
    );
    if p.copies > 1 {
        cost.push_str(&format!(
            " (its code appears {}× after unrolling)",
            p.copies
        ));
    }
    if !others.is_empty() || p.f64_instructions != p.per_execution {
        cost.push_str(&format!("; {} in all", p.f64_instructions));
        if !others.is_empty() {
            cost.push_str(&format!(", with {}", list(&others)));
        }
    }
    if p.accidental() {
        println!(
            "    ! accidental double precision ({build}): {}{back}; {cost}",
            what.join(", ")
        );
    } else {
        let why: Vec<String> = p.carried.iter().map(|c| c.describe()).collect();
        println!(
            "    · intentional double ({build}): {}{back}; {cost}; deliberate because {}",
            what.join(", "),
            why.join(", ")
        );
        return;
    }
    if !p.constants.is_empty() {
        let c: Vec<String> = p.constants.iter().map(|c| decimal(*c)).collect();
        println!("      f64 constants: {}", c.join(", "));
    }
    if !f.culprits.is_empty() {
        let label = |l: SourceLine| src.label(l);
        let c: Vec<String> = f.culprits.iter().map(|c| c.describe_at(&label)).collect();
        println!("      from: {}", c.join(", "));
    }
    println!("      fix: {}", f.fix);
}

/// One line per flag set for what it does on every line alike (approximate division, square
/// root and functions, flush-to-zero): the flag set decided it, not the source.
fn print_effects(v: &KernelView, src: &SourceLines) {
    let mut builds: Vec<&str> = v.effects.iter().map(|e| e.build.as_str()).collect();
    builds.dedup();
    let mut first = true;
    for b in builds {
        let order = [
            "approximate division",
            "approximate square root",
            "approximate functions",
            "flush-to-zero",
        ];
        // Flushes on lines that are no finding are said by the `.ftz`/`.rn` summary below.
        let finding = |at: &SourceLine| {
            v.report
                .lines
                .iter()
                .any(|l| l.at == *at && v.rank(l).is_some())
        };
        let mut mine: Vec<_> = v
            .effects
            .iter()
            .filter(|e| e.build == b)
            .filter(|e| e.what != "flush-to-zero" || e.lines.iter().any(finding))
            .collect();
        mine.sort_by_key(|e| order.iter().position(|o| *o == e.what));
        let parts: Vec<String> = mine
            .into_iter()
            .map(|e| {
                let lines: Vec<String> = e.lines.iter().map(|l| src.label(*l)).collect();
                let n = lines.len();
                let count = format!("{n} line{}", if n == 1 { "" } else { "s" });
                match (e.everywhere, e.what) {
                    (true, "approximate division") => {
                        format!("every division approximate ({count}: {})", list(&lines))
                    }
                    (true, "approximate square root") => {
                        format!("every square root approximate ({count}: {})", list(&lines))
                    }
                    // Its lines are those the summary below lists, and the findings above.
                    (_, "flush-to-zero") => {
                        let n = e.lines.iter().filter(|l| finding(l)).count();
                        let s = if n == 1 { "" } else { "s" };
                        format!("flush-to-zero (on {n} line{s} above)")
                    }
                    _ => format!("{} ({count}: {})", e.what, list(&lines)),
                }
            })
            .collect();
        if parts.is_empty() {
            continue;
        }
        if std::mem::take(&mut first) {
            println!();
        }
        println!(
            "  {b} (the flag set, on every line alike): {}",
            parts.join("; ")
        );
    }
}

/// One line per kind of thing left out: lines differing only by `.ftz`/`.rn`, intentional
/// double, code without line info.
fn print_folded(v: &KernelView, src: &SourceLines) {
    let minor: Vec<String> = v
        .report
        .lines
        .iter()
        .filter(|l| l.at.line != 0 && l.notable() && v.rank(l).is_none())
        // A line a flag set approximates is said in its own summary line, not as .ftz/.rn.
        .filter(|l| {
            !v.effects
                .iter()
                .any(|e| e.what != "flush-to-zero" && e.lines.contains(&l.at))
        })
        .map(|l| src.label(l.at))
        .collect();
    let intentional: Vec<String> = v
        .promotions
        .iter()
        .filter(|f| !f.promotion.accidental())
        .map(|f| {
            let why: Vec<String> = f.promotion.carried.iter().map(|c| c.describe()).collect();
            format!("{} ({})", src.label(f.promotion.at), why.join(", "))
        })
        .collect();
    let unlocated: u32 = v
        .report
        .lines
        .iter()
        .filter(|l| l.at.line == 0)
        .flat_map(|l| l.builds.first())
        .flat_map(|b| b.ops.iter().map(|(_, n)| *n))
        .sum();
    if minor.is_empty() && intentional.is_empty() && unlocated == 0 {
        return;
    }
    println!();
    if !minor.is_empty() {
        println!(
            "  also {} line{} differing only by .ftz (fast: subnormals flushed) or .rn (strict's explicit rounding): {} (--all shows them)",
            minor.len(),
            if minor.len() == 1 { "" } else { "s" },
            list(&minor)
        );
    }
    if !intentional.is_empty() {
        println!(
            "  intentional double, not flagged (an f64 value outlives the expression): {}",
            intentional.join("; ")
        );
    }
    if unlocated > 0 {
        println!(
            "  {unlocated} floating-point instruction{} with no line info (library code or a build without -lineinfo; --all shows them)",
            if unlocated == 1 { "" } else { "s" }
        );
    }
}
