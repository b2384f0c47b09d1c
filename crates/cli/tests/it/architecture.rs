//! docs/ARCHITECTURE.md is a code map, and a map is only worth reading while it is true. These
//! tests hold it to the code where the code can say: every workspace crate has a section, each
//! section's `Depends on:` line and the dependency graph name exactly the crate's `mantissa-*`
//! `[dependencies]`, every crate root denies missing docs, and the map stays short enough to be
//! read (300 lines). The rest of the map (what a crate owns, its invariants) is prose that review
//! keeps true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The map may not grow past this many lines: past it, it is a specification again.
const MAX_LINES: usize = 300;

/// The checkout's root: where Cargo.toml and docs/ are. `CARGO_MANIFEST_DIR` at run time (set by
/// `cargo test`), else as it was at build time; `None` where neither exists, e.g. when this test
/// binary was copied alone to another machine.
fn repo_root() -> Option<PathBuf> {
    [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ]
    .into_iter()
    .flatten()
    .map(|crate_dir| crate_dir.join("../.."))
    .find(|root| root.join("Cargo.toml").is_file() && root.join("docs/ARCHITECTURE.md").is_file())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The strings of the workspace's `members = [...]` array (`crates/files`, ...), which may span
/// several lines.
fn members(workspace_manifest: &str) -> Vec<String> {
    let start = workspace_manifest
        .find("members")
        .expect("the workspace manifest has members");
    let rest = &workspace_manifest[start..];
    let open = rest.find('[').expect("members is an array");
    let close = rest.find(']').expect("members is a closed array");
    rest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The `mantissa-*` names of a crate manifest's `[dependencies]` table (`mantissa-x.workspace =
/// true`, `mantissa-x = { ... }` or a `[dependencies.mantissa-x]` table). Dev-dependencies are
/// left out: they are what the tests use, not what the crate is built on.
fn mantissa_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut table = String::new();
    let mut deps = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            table = header.trim_end_matches(']').trim().to_string();
            if let Some(name) = table.strip_prefix("dependencies.") {
                if name.starts_with("mantissa-") {
                    deps.insert(name.to_string());
                }
            }
            continue;
        }
        if table == "dependencies" && line.starts_with("mantissa-") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            deps.insert(name);
        }
    }
    deps
}

/// The map's section of each crate, by its path (`crates/files`): the text under a heading
/// ``### `crates/NAME` `` up to the next heading.
fn crate_sections(map: &str) -> BTreeMap<String, String> {
    let mut sections = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in map.lines() {
        if line.starts_with('#') {
            sections.extend(current.take());
            if let Some(path) = line
                .strip_prefix("### `")
                .and_then(|rest| rest.strip_suffix('`'))
                .filter(|path| path.starts_with("crates/"))
            {
                current = Some((path.to_string(), String::new()));
            }
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    sections.extend(current);
    sections
}

/// The crates a section's `Depends on:` line names (it may wrap onto the lines after it, up to
/// the blank line): `Depends on: no mantissa crate.` names none. `Err` says what is wrong with
/// the line.
fn stated_dependencies(section: &str) -> Result<BTreeSet<String>, String> {
    let start = section.find("Depends on:").ok_or("no `Depends on:` line")?;
    let line = section[start..].split("\n\n").next().unwrap_or_default();
    let names: BTreeSet<String> = line
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    match (names.is_empty(), line.contains("no mantissa crate")) {
        (true, true) => Ok(names),
        (false, false) => Ok(names),
        (true, false) => Err(format!(
            "`{line}` names no crate: write `Depends on: no mantissa crate.`"
        )),
        (false, true) => Err(format!("`{line}` both names crates and says none")),
    }
}

/// The lines of the fenced block under `## Crate dependency graph`: `short name → a, b` (or
/// `→ nothing`), as `mantissa-*` names.
fn graph(map: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section = map
        .split("## Crate dependency graph")
        .nth(1)
        .expect("the map has a section `## Crate dependency graph`");
    let block = section
        .split("```")
        .nth(1)
        .expect("the graph is a fenced block");
    let full = |short: &str| format!("mantissa-{}", short.trim());
    block
        .lines()
        .skip(1) // the fence's info string (`text`)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (from, to) = l
                .split_once('→')
                .unwrap_or_else(|| panic!("graph line without →: {l}"));
            let to = to.trim();
            let deps = if to == "nothing" {
                BTreeSet::new()
            } else {
                to.split(',').map(full).collect()
            };
            (full(from), deps)
        })
        .collect()
}

/// Each workspace crate: its package name (`mantissa-` and its directory's name, which every
/// crate of this workspace follows) and its directory.
fn workspace(root: &Path) -> Vec<(String, PathBuf)> {
    members(&read(&root.join("Cargo.toml")))
        .into_iter()
        .map(|m| {
            let dir = root.join(&m);
            let manifest = read(&dir.join("Cargo.toml"));
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))
                .map(|n| n.trim_matches('"').to_string())
                .unwrap_or_else(|| panic!("{m}/Cargo.toml has no package name"));
            (name, dir)
        })
        .collect()
}

/// What the map says against what the manifests say, one line per difference.
fn dependency_differences(root: &Path, map: &str) -> Vec<String> {
    let sections = crate_sections(map);
    let mut problems = Vec::new();
    for (member, (_, dir)) in members(&read(&root.join("Cargo.toml")))
        .iter()
        .zip(workspace(root))
    {
        let actual = mantissa_dependencies(&read(&dir.join("Cargo.toml")));
        match sections.get(member).map(|s| stated_dependencies(s)) {
            None => problems.push(format!("{member} has no section ### `{member}`")),
            Some(Err(e)) => problems.push(format!("{member}: {e}")),
            Some(Ok(stated)) if stated != actual => problems.push(format!(
                "{member}: the map says it depends on {stated:?}, its Cargo.toml on {actual:?}"
            )),
            Some(Ok(_)) => {}
        }
    }
    problems
}

#[test]
fn every_workspace_crate_has_a_section_and_its_true_dependencies() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (Cargo.toml and docs/) beside this test binary");
        return;
    };
    let map = read(&root.join("docs/ARCHITECTURE.md"));
    let problems = dependency_differences(&root, &map);
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md is out of step with the manifests:\n{}",
        problems.join("\n")
    );
    // A section for a crate that is no longer a member would be a map of nothing.
    let members: BTreeSet<String> = members(&read(&root.join("Cargo.toml")))
        .into_iter()
        .collect();
    let extra: Vec<String> = crate_sections(&map)
        .into_keys()
        .filter(|s| !members.contains(s))
        .collect();
    assert!(
        extra.is_empty(),
        "sections of no workspace crate: {extra:?}"
    );
}

#[test]
fn the_dependency_graph_is_the_manifests() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (Cargo.toml and docs/) beside this test binary");
        return;
    };
    let drawn = graph(&read(&root.join("docs/ARCHITECTURE.md")));
    let actual: BTreeMap<String, BTreeSet<String>> = workspace(&root)
        .into_iter()
        .map(|(name, dir)| (name, mantissa_dependencies(&read(&dir.join("Cargo.toml")))))
        .collect();
    let mut problems = Vec::new();
    for (name, deps) in &actual {
        match drawn.get(name) {
            None => problems.push(format!("{name} is not in the graph")),
            Some(d) if d != deps => problems.push(format!(
                "{name}: the graph draws {d:?}, its Cargo.toml says {deps:?}"
            )),
            Some(_) => {}
        }
    }
    problems.extend(
        drawn
            .keys()
            .filter(|n| !actual.contains_key(*n))
            .map(|n| format!("{n} is in the graph but not in the workspace")),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_crate_root_denies_missing_docs() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (Cargo.toml and docs/) beside this test binary");
        return;
    };
    let mut missing = Vec::new();
    for (name, dir) in workspace(&root) {
        // A binary-only crate (the cli) has main.rs for its root.
        let lib = dir.join("src/lib.rs");
        let crate_root = if lib.is_file() {
            lib
        } else {
            dir.join("src/main.rs")
        };
        if !read(&crate_root)
            .lines()
            .any(|l| l.trim() == "#![deny(missing_docs)]")
        {
            missing.push(format!("{name} ({})", crate_root.display()));
        }
    }
    assert!(
        missing.is_empty(),
        "no #![deny(missing_docs)] in: {}",
        missing.join(", ")
    );
}

#[test]
fn the_map_stays_a_map() {
    let Some(root) = repo_root() else {
        eprintln!("skipped: no checkout (Cargo.toml and docs/) beside this test binary");
        return;
    };
    let lines = read(&root.join("docs/ARCHITECTURE.md")).lines().count();
    assert!(
        lines <= MAX_LINES,
        "docs/ARCHITECTURE.md has {lines} lines, more than {MAX_LINES}: move detail into the \
         module docs it describes"
    );
}

#[test]
fn the_parsers_read_manifests_and_the_map() {
    let workspace = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/a\",\n  \"crates/b\"]\n";
    assert_eq!(members(workspace), vec!["crates/a", "crates/b"]);

    let manifest = "[package]\nname = \"mantissa-b\"\n\n[dependencies]\n\
                    mantissa-a.workspace = true\nmantissa-c = { path = \"../c\" }\nserde = \"1\"\n\n\
                    [dependencies.mantissa-d]\npath = \"../d\"\n\n\
                    [dev-dependencies]\nmantissa-e.workspace = true\n";
    assert_eq!(
        mantissa_dependencies(manifest),
        BTreeSet::from(["mantissa-a", "mantissa-c", "mantissa-d"].map(String::from))
    );

    let map = "# m\n\n### `crates/a`\nDepends on: no mantissa crate.\n\nowns\n\n\
               ### `crates/b`\nDepends on: `mantissa-a`,\n`mantissa-c`.\n\nowns\n\n## Other\n";
    let sections = crate_sections(map);
    assert_eq!(
        sections.keys().collect::<Vec<_>>(),
        vec!["crates/a", "crates/b"]
    );
    assert_eq!(
        stated_dependencies(&sections["crates/a"]),
        Ok(BTreeSet::new())
    );
    assert_eq!(
        stated_dependencies(&sections["crates/b"]),
        Ok(BTreeSet::from(
            ["mantissa-a", "mantissa-c"].map(String::from)
        ))
    );
    // A line that names nothing and does not say so is an error, not an empty set.
    assert!(stated_dependencies("Depends on: nothing much.\n").is_err());
    assert!(stated_dependencies("no line at all\n").is_err());

    let drawn = graph("## Crate dependency graph\n\n```text\nb → a, c\na → nothing\n```\n");
    assert_eq!(drawn["mantissa-a"], BTreeSet::new());
    assert_eq!(
        drawn["mantissa-b"],
        BTreeSet::from(["mantissa-a", "mantissa-c"].map(String::from))
    );
}
