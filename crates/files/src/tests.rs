//! One test per kind of target. The device node and the mounts need root (CI runs as root);
//! where the system refuses them the test says why and checks nothing else.

use super::*;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::process::Command;

/// Runs a system command, returning why it failed (for a skip message) if it did.
fn sh(program: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(program).args(args).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A tmpfs mounted on a fresh directory for the life of the value.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(options: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().to_str().unwrap().to_string();
        sh("mount", &["-t", "tmpfs", "-o", options, "tmpfs", &at])?;
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = sh("umount", &[self.dir.path().to_str().unwrap()]);
    }
}

#[test]
fn a_regular_file_is_replaced_whole_keeping_its_permissions_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfg.json");
    write_file(&path, b"first").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    write_file(&path, b"second").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(names(dir.path()), ["cfg.json"]);
}

#[test]
fn a_device_node_is_refused_and_stays_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("full");
    // /dev/full's numbers: a write would fail with ENOSPC, a rename would replace the node.
    if let Err(why) = sh("mknod", &[node.to_str().unwrap(), "c", "1", "7"]) {
        eprintln!("skipped: no device node to test with ({why}; needs root)");
        return;
    }
    let e = write_file(&node, b"{}").unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{} is a character device, not a file: give a path to a regular file (it is replaced atomically)",
            node.display()
        )
    );
    let e = open_append(&node).unwrap_err().to_string();
    assert!(e.contains("is a character device, not a file"), "{e}");
    assert!(fs::symlink_metadata(&node)
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(names(dir.path()), ["full"]);
}

#[test]
fn a_fifo_is_refused_without_blocking_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    sh("mkfifo", &[fifo.to_str().unwrap()]).expect("mkfifo");
    let e = write_file(&fifo, b"x").unwrap_err().to_string();
    assert!(e.ends_with("is a FIFO (named pipe), not a file: give a path to a regular file (it is replaced atomically)"), "{e}");
    // Opening a FIFO for writing would wait for a reader: refused before the open.
    let e = open_append(&fifo).unwrap_err().to_string();
    assert!(
        e.ends_with("not a file: give a path to a regular file (records are appended to it)"),
        "{e}"
    );
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["pipe"]);
}

#[test]
fn a_directory_is_refused_as_a_file_and_a_file_as_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let e = write_file(dir.path(), b"x").unwrap_err().to_string();
    assert!(
        e.ends_with(
            "is a directory, not a file: give a path to a regular file (it is replaced atomically)"
        ),
        "{e}"
    );
    let file = dir.path().join("out");
    write_file(&file, b"x").unwrap();
    for meant in [file.clone(), file.join("sub")] {
        let e = ensure_dir(&meant).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{} is a regular file, not a directory: give a directory (one that does not exist is created)",
                file.display()
            )
        );
    }
    assert_eq!(fs::read(&file).unwrap(), b"x");
    let fresh = dir.path().join("a/b");
    ensure_dir(&fresh).unwrap();
    ensure_dir(&fresh).unwrap();
    assert!(fresh.is_dir());
}

#[test]
fn a_symlink_to_a_file_replaces_the_file_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    write_file(&link, b"new").unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&real).unwrap(), b"new");
    assert_eq!(names(dir.path()), ["link.json", "real.json"]);
    // A link to a device is refused like the device.
    let to_dir = dir.path().join("to-dir");
    std::os::unix::fs::symlink(dir.path(), &to_dir).unwrap();
    let e = write_file(&to_dir, b"x").unwrap_err().to_string();
    assert!(e.contains("to-dir is a directory, not a file"), "{e}");
}

#[test]
fn a_dangling_symlink_creates_the_file_it_names_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("results")).unwrap();
    let link = dir.path().join("latest.html");
    std::os::unix::fs::symlink("results/report.html", &link).unwrap();
    write_file(&link, b"<html>").unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read(dir.path().join("results/report.html")).unwrap(),
        b"<html>"
    );
    // A link into a directory that does not exist: one line, nothing made.
    let nowhere = dir.path().join("nowhere.html");
    std::os::unix::fs::symlink("missing/report.html", &nowhere).unwrap();
    let e = write_file(&nowhere, b"x").unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("cannot write {}: ", nowhere.display())),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // The same for appending.
    let log = dir.path().join("log.jsonl");
    std::os::unix::fs::symlink("results/log.jsonl", &log).unwrap();
    drop(open_append(&log).unwrap());
    assert!(dir.path().join("results/log.jsonl").is_file());
    assert!(fs::symlink_metadata(&log).unwrap().file_type().is_symlink());
}

#[test]
fn a_read_only_file_system_is_one_line_and_leaves_the_old_file() {
    // Root writes through permission bits, so read-only is a read-only mount.
    let fs_ro = match Tmpfs::mount("size=64k") {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: cannot mount a tmpfs to make read-only ({why}; needs root)");
            return;
        }
    };
    let path = fs_ro.path().join("report.html");
    fs::write(&path, b"old").unwrap();
    let at = fs_ro.path().to_str().unwrap();
    sh("mount", &["-o", "remount,ro", at]).expect("remount read-only");
    let e = write_file(&path, b"new").unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "cannot write {}: {} is on a read-only file system: give a path on a writable one",
            path.display(),
            fs_ro.path().display()
        )
    );
    assert_eq!(fs::read(&path).unwrap(), b"old");
    assert_eq!(names(fs_ro.path()), ["report.html"]);
    let e = ensure_dir(&fs_ro.path().join("plots"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("is on a read-only file system"), "{e}");
}

#[test]
fn a_full_disk_is_one_line_and_leaves_the_old_file_and_no_temporary() {
    let full = match Tmpfs::mount("size=64k") {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: cannot mount a 64 KiB tmpfs to fill ({why}; needs root)");
            return;
        }
    };
    let path = full.path().join("results.csv");
    write_file(&path, b"old").unwrap();
    let e = write_file(&path, &vec![b'x'; 1 << 20])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "cannot write {}: no space left on {}: free space or give another path",
            path.display(),
            full.path().display()
        )
    );
    assert_eq!(fs::read(&path).unwrap(), b"old");
    assert_eq!(names(full.path()), ["results.csv"]);
}

#[test]
fn permission_denied_is_one_line_naming_the_directory() {
    // As root no directory refuses a write, so the classification is checked on the error the
    // system gives a user (EACCES).
    let path = Path::new("/srv/out/report.html");
    let e = write_error(path, io::Error::from_raw_os_error(13));
    assert_eq!(
        e.to_string(),
        "cannot write /srv/out/report.html: permission denied in /srv/out: give a path you may write to"
    );
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    let io: io::Error = e.into();
    assert!(io
        .to_string()
        .starts_with("cannot write /srv/out/report.html"));
}
