//! The architecture's rule "one IR": what a PTX opcode means is decided in
//! `crates/ptx/src/op.rs` only; every analysis, pass and test reads the typed decode
//! (`mantissa_ptx::op::decode`, `Op`'s predicates). A test of an opcode's text anywhere else
//! (`i.opcode == "call"`, `opcode.starts_with("ld")`, a `match` on `opcode.as_str()`) is a
//! second, silent table of meanings: a change to the decode would not reach it.
//!
//! This test reads the workspace's sources (`crates/*/src/**/*.rs` and `crates/*/tests/**/*.rs`)
//! and fails naming `file:line` of each such test outside `op.rs`. It is a text scan, so it
//! knows the forms written in this workspace; writing an opcode (`opcode: "mov".into()`),
//! printing one, or collecting report text is not a test and is not flagged. SASS mnemonics
//! (`FFMA`, from nvdisasm) are another IR, classified in `crates/ptx/src/sass.rs`; code reading
//! them names them `mnemonic`, never `opcode`.

use std::path::{Path, PathBuf};

/// Files allowed to test opcode text: the decode itself, and this scanner (whose patterns are
/// the forms it looks for).
const ALLOWED: [&str; 2] = ["crates/ptx/src/op.rs", "crates/ptx/tests/it/one_decode.rs"];

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line: without a `//` comment (doc comments name opcodes freely).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// Whether `code` (with `prev`, the code of the line before, for `match`/`matches!` split by
/// rustfmt) tests an opcode's text; the pattern found, if so.
fn opcode_test(code: &str, prev: &str) -> Option<&'static str> {
    const DIRECT: [&str; 10] = [
        "opcode ==",
        "opcode !=",
        "opcode() ==",
        "opcode() !=",
        "opcode.starts_with(",
        "opcode.ends_with(",
        "opcode.contains(",
        "opcode.strip_prefix(",
        "matches!(opcode",
        "match opcode",
    ];
    if let Some(p) = DIRECT.iter().find(|p| code.contains(**p)) {
        return Some(p);
    }
    // `"call" == i.opcode`: an opcode on the right of a comparison.
    for op in ["== ", "!= "] {
        let mut rest = code;
        while let Some(at) = rest.find(op) {
            rest = &rest[at + op.len()..];
            let operand = rest.split([' ', ')', ';', ',']).next().unwrap_or("");
            if operand.contains("opcode") {
                return Some("== …opcode");
            }
        }
    }
    if code.contains("opcode.as_str()") {
        if code.contains(".contains(&") {
            return Some(".contains(&…opcode.as_str())");
        }
        let scrutinee = |c: &str| c.contains("matches!(") || c.contains("match ");
        if scrutinee(code) || scrutinee(prev) {
            return Some("match …opcode.as_str()");
        }
    }
    for mac in ["assert_eq!(", "assert_ne!("] {
        let Some(at) = code.find(mac) else { continue };
        let args = arguments(&code[at + mac.len()..]);
        let opcode = |a: &str| {
            let a = a.trim();
            a.ends_with("opcode") || a.ends_with("opcode()")
        };
        let literal = |a: &str| a.trim_start().starts_with('"');
        if let [a, b, ..] = args.as_slice() {
            if opcode(a) && literal(b) || literal(a) && opcode(b) {
                return Some("assert_eq!(…opcode, \"…\")");
            }
        }
    }
    None
}

/// The arguments of a call whose `(` has just been read, split at the commas outside brackets
/// and string literals (as far as the line goes).
fn arguments(rest: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0);
    for (k, c) in rest.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                out.push(&rest[start..k]);
                return out;
            }
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&rest[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&rest[start..]);
    out
}

/// `file:line: pattern: text` of every opcode-text test in the workspace outside [`ALLOWED`].
fn findings(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let Ok(crates) = std::fs::read_dir(root.join("crates")) else {
        panic!("no crates/ under {}", root.display());
    };
    let mut crates: Vec<PathBuf> = crates.flatten().map(|e| e.path()).collect();
    crates.sort();
    for c in crates {
        rust_files(&c.join("src"), &mut files);
        rust_files(&c.join("tests"), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        if ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let mut prev = "";
        for (n, line) in text.lines().enumerate() {
            let c = code(line);
            if let Some(p) = opcode_test(c, prev) {
                out.push(format!("{rel}:{}: {p}: {}", n + 1, line.trim()));
            }
            if !c.trim().is_empty() {
                prev = c;
            }
        }
    }
    out
}

#[test]
fn no_opcode_text_is_tested_outside_the_decode() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let found = findings(&root);
    assert!(
        found.is_empty(),
        "{} opcode-text tests outside crates/ptx/src/op.rs (decide what an opcode means with \
         mantissa_ptx::op::decode and Op's predicates; add a predicate to op.rs if none fits):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_scanner_knows_the_forms() {
    let flagged = [
        ("if i.opcode == \"call\" {", ""),
        ("i.opcode != \"ld\"", ""),
        ("x.full_opcode() == \"mul.f32\"", ""),
        ("s.opcode.starts_with(\"ld.shared\")", ""),
        ("match i.opcode.as_str() {", ""),
        ("    i.opcode.as_str(),", "matches!("),
        ("ARITH_LIKE.contains(&i.opcode.as_str())", ""),
        ("matches!(opcode, \"bra\" | \"ret\")", ""),
        ("if \"call\" == i.opcode {", ""),
        ("assert_eq!(inst.opcode, \"cvt\");", ""),
        ("assert_ne!(\"call\", c.opcode, \"{c}\");", ""),
        ("assert_eq!(red.full_opcode(), \"red.global.add.u64\");", ""),
    ];
    for (line, prev) in flagged {
        assert!(opcode_test(code(line), prev).is_some(), "{line}");
    }
    let clean = [
        ("opcode: \"mov\".into(),", ""),
        ("i.opcode = \"bra\".into();", ""),
        ("format!(\"{}\", s.opcode)", ""),
        (".map(|s| (s.opcode.as_str(), s.site.line))", ""),
        ("if !l.opcodes.contains(&s.opcode) {", ""),
        ("assert_eq!(site.opcode, inst.full_opcode());", ""),
        (
            "assert_eq!(inst.full_opcode(), site.opcode, \"{what}\");",
            "",
        ),
        ("assert_eq!(site[\"opcode\"], \"div.rn.f64\");", ""),
        ("// i.opcode == \"call\" in a comment", ""),
    ];
    for (line, prev) in clean {
        assert_eq!(opcode_test(code(line), prev), None, "{line}");
    }
}
