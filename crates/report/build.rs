//! Records say which mantissa revision produced them: `MANTISSA_GIT_REVISION` is
//! `git rev-parse --short=12 HEAD`, with `-dirty` when tracked files differ from HEAD, or
//! `unknown` outside a git checkout (a crates.io download, a source tarball) or without git.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let revision = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(head) if !head.is_empty() => {
            // Untracked files do not change what is built from the tracked ones.
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=MANTISSA_GIT_REVISION={revision}");
    // Rerun when HEAD moves (checkout, commit: HEAD or the branch's ref changes) or the index
    // changes (staging, commit). An edit that is not yet staged does not rerun the script, so
    // `-dirty` can lag behind such an edit until the next commit or `git add`.
    if let (Some(git_dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let git_dir = PathBuf::from(git_dir);
        let mut common = PathBuf::from(common);
        if common.is_relative() {
            common = std::env::current_dir().unwrap_or_default().join(common);
        }
        let mut watch = vec![
            git_dir.join("HEAD"),
            git_dir.join("index"),
            common.join("packed-refs"),
        ];
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch.push(common.join(reference));
        }
        // A watched path that does not exist would rerun the script on every build.
        for path in watch.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    } else {
        // Not a checkout: nothing to watch but the script itself.
        println!("cargo:rerun-if-changed=build.rs");
    }
}
