//! The documentation stays inside the repository and in step with the binary: every Markdown link
//! of README.md and docs/*.md resolves to a file of the checkout (and, with `#anchor`, to a
//! heading of that file), no link leaves the repository, and docs/COMMANDS.md names every option
//! `mantissa COMMAND --help` lists.
//!
//! Readers of a clone have only the clone: a link to a web page, or to `../something` beside the
//! checkout, is a dead end for them, so both fail here rather than in a reader's browser.

use crate::support;

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The checkout's root: where README.md and docs/ are. `CARGO_MANIFEST_DIR` at run time (set by
/// `cargo test`), else as it was at build time; `None` where neither exists, e.g. when this test
/// binary was copied alone to another machine.
fn repo_root() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    candidates
        .into_iter()
        .flatten()
        .map(|crate_dir| crate_dir.join("../.."))
        .find(|root| root.join("README.md").is_file() && root.join("docs").is_dir())
        .map(|root| {
            root.canonicalize()
                .expect("the checkout's root has a canonical path")
        })
}

/// README.md and every docs/*.md, sorted, as paths relative to the root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("docs/ entries are readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| PathBuf::from("docs").join(p.file_name().unwrap()))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers: a `## heading` or
/// `[x](y)` inside a fence is sample output, not structure.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if m == open => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` without its inline code spans (`` `[a](b)` `` is literal text, not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                // An unmatched backtick is a literal backtick.
                out.push_str(&rest[start..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links `[text](target)` and images of a line, and of a reference
/// definition `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    if let Some(rest) = line.trim_start().strip_prefix('[') {
        if let Some((_, def)) = rest.split_once("]:") {
            if let Some(t) = def.split_whitespace().next() {
                targets.push(t.trim_matches(['<', '>']).to_string());
            }
            return targets;
        }
    }
    let mut rest = line.as_str();
    while let Some(pos) = rest.find("](") {
        let after = &rest[pos + 2..];
        // The target ends at the parenthesis that closes the link, allowing balanced ones inside.
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(['<', '>']).to_string());
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// GitHub's anchor for a heading: the text without Markdown syntax, lower-cased, with everything
/// but letters, digits, spaces, `-` and `_` removed and each space turned into `-`.
fn slug(heading: &str) -> String {
    // A link in a heading contributes its text only.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](").zip(rest[open..].find(')')) {
            Some((mid, close)) if mid < close => {
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..open + mid]);
                rest = &rest[open + close + 1..];
            }
            _ => {
                text.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown file offers: its headings' slugs, a repeated slug numbered `-1`, `-2`, …
/// as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `path` with `.` and `..` resolved lexically (the target need not exist for this), so that a
/// link climbing out of the checkout is recognised even where `..` of the root exists.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// What is wrong with one link target of `doc` (a path relative to `root`), if anything.
fn check_target(root: &Path, doc: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("empty link target".into());
    }
    if target.contains("://") || target.starts_with("mailto:") || target.starts_with("//") {
        return Some(format!(
            "{target} points outside the repository (readers of a clone may not reach it)"
        ));
    }
    let (path_part, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let file = if path_part.is_empty() {
        doc.to_path_buf()
    } else if let Some(abs) = path_part.strip_prefix('/') {
        PathBuf::from(abs)
    } else {
        doc.parent().unwrap_or(Path::new("")).join(path_part)
    };
    let Some(file) = normalize(&file) else {
        return Some(format!("{target} climbs out of the repository"));
    };
    let on_disk = root.join(&file);
    if !on_disk.exists() {
        return Some(format!("{target}: {} does not exist", file.display()));
    }
    if let Some(fragment) = fragment {
        if on_disk.extension().is_none_or(|x| x != "md") {
            return Some(format!(
                "{target}: anchors are checked in Markdown files only"
            ));
        }
        let text = std::fs::read_to_string(&on_disk).expect("a linked Markdown file is readable");
        if !anchors(&text).contains(fragment) {
            return Some(format!(
                "{target}: {} has no heading with anchor #{fragment}",
                file.display()
            ));
        }
    }
    None
}

#[test]
fn every_link_of_the_docs_resolves_inside_the_repository() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (README.md and docs/) beside this test binary");
        return;
    };
    let mut problems = Vec::new();
    let mut links = 0;
    for doc in documents(&root) {
        let text = std::fs::read_to_string(root.join(&doc)).expect("the document is readable");
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                links += 1;
                if let Some(p) = check_target(&root, &doc, &target) {
                    problems.push(format!("{}:{n}: {p}", doc.display()));
                }
            }
            // A path beside the checkout is a dead end in prose too, link or not.
            for code in line.split('`').skip(1).step_by(2) {
                if code.starts_with("../") && check_target(&root, &doc, code).is_some() {
                    problems.push(format!(
                        "{}:{n}: `{code}` names a file outside the repository",
                        doc.display()
                    ));
                }
            }
        }
    }
    assert!(
        links > 10,
        "only {links} links found: the parser no longer sees them"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

/// The option names (`--json`, `--no-html`, …) a `--help` text lists.
fn options_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // `-h, --help` and `--json` open option lines; descriptions mention options too, so
            // only the line's own (first) long option counts.
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            let l = l.strip_prefix("-V, ").unwrap_or(l);
            l.strip_prefix("--").map(|rest| {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                format!("--{name}")
            })
        })
        .filter(|o| o != "--help" && o != "--version")
        .collect()
}

#[test]
fn the_command_reference_names_every_option_of_every_command() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (README.md and docs/) beside this test binary");
        return;
    };
    let reference =
        std::fs::read_to_string(root.join("docs/COMMANDS.md")).expect("docs/COMMANDS.md exists");
    let help = |args: &[&str]| {
        let out = Command::new(support::mantissa_binary())
            .args(args)
            .arg("--help")
            .output()
            .expect("the mantissa binary runs");
        assert!(out.status.success(), "mantissa {args:?} --help failed");
        String::from_utf8(out.stdout).expect("help is UTF-8")
    };
    let top = help(&[]);
    // The subcommands are the indented names under "Commands:" (clap's layout), `help` aside.
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect();
    assert!(commands.len() >= 5, "found only {commands:?} in the help");
    let mut missing = Vec::new();
    for command in &commands {
        let heading = format!("## `mantissa {command}`");
        if !reference.lines().any(|l| l == heading) {
            missing.push(format!("no section {heading}"));
        }
        for option in options_in_help(&help(&[command])) {
            if !reference.contains(&format!("`{option}")) {
                missing.push(format!("mantissa {command} {option}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/COMMANDS.md lacks: {}",
        missing.join(", ")
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("`mantissa ops --gpu`"), "mantissa-ops---gpu");
    assert_eq!(slug("What `study` writes"), "what-study-writes");
    assert_eq!(
        slug("Precisions and their guarantees"),
        "precisions-and-their-guarantees"
    );
    assert_eq!(slug("Time, median ms (n = 2^11)"), "time-median-ms-n--211");
    assert_eq!(slug("See [the docs](x.md) — now"), "see-the-docs--now");
    let text = "# A\n\n```\n# not a heading\n```\n## A\n### B #\n";
    assert_eq!(
        anchors(text),
        BTreeSet::from(["a".to_string(), "a-1".to_string(), "b".to_string()])
    );
}

#[test]
fn links_in_code_are_not_links_and_targets_end_at_their_parenthesis() {
    assert_eq!(
        link_targets("see [a](docs/A.md#x) and `[b](nope.md)` and [c](f(1).md \"title\")"),
        vec!["docs/A.md#x", "f(1).md"]
    );
    assert_eq!(link_targets("[ref]: <docs/B.md>"), vec!["docs/B.md"]);
    let lines: Vec<&str> = prose_lines("a\n```text\n[x](y)\n```\nb")
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(lines, vec!["a", "b"]);
}

#[test]
fn targets_outside_the_checkout_or_missing_are_reported() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (README.md and docs/) beside this test binary");
        return;
    };
    let readme = Path::new("README.md");
    let docs = Path::new("docs/COMMANDS.md");
    assert_eq!(check_target(&root, readme, "docs/COMMANDS.md"), None);
    assert_eq!(check_target(&root, docs, "../README.md"), None);
    for bad in [
        "../shared/docs/design.md",
        "https://example.org/",
        "docs/NOPE.md",
        "docs/COMMANDS.md#no-such-heading",
    ] {
        assert!(
            check_target(&root, readme, bad).is_some(),
            "{bad} was accepted"
        );
    }
}
