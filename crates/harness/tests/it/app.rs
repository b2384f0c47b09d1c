//! `mantissa_harness::app` on the CPU: a host application (tests/app/host_app.c, compiled here)
//! run under the attach library, which forwards to the attach tests' fake driver
//! (crates/attach/tests/fake_driver.c): what it printed, how it ended, and the events read back
//! into types; a timeout ends a hanging application; a crash is its result; a directory in use
//! is refused. The library must be built (`cargo test --workspace` builds it; alone:
//! `cargo build -p mantissa-attach`).

use mantissa_harness::app::events::Event;
use mantissa_harness::app::{AppRequest, Attach, Exit, LIBRARY};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

mod hex {
    /// `x`'s little-endian bytes in hex, as the library writes a parameter.
    pub fn le(x: u64) -> String {
        x.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("harness-app")
}

/// `source` compiled with cc into the scratch directory (once per process).
fn compiled(source: &str, out: &str, shared: bool) -> PathBuf {
    let dir = scratch();
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(out);
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    if shared {
        cc.args(["-shared", "-fPIC"]);
    }
    let status = cc
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(source))
        .arg("-ldl")
        .status()
        .expect("cc (the C compiler Rust links with) runs");
    assert!(status.success(), "cc could not build {source}");
    out
}

fn setup() -> &'static (Attach, PathBuf) {
    static SETUP: OnceLock<(Attach, PathBuf)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let deps = exe.parent().unwrap();
        let library = [deps.join(LIBRARY), deps.parent().unwrap().join(LIBRARY)]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "{LIBRARY} is not beside {}: `cargo build -p mantissa-attach`",
                    deps.display()
                )
            });
        let driver = compiled("../attach/tests/fake_driver.c", "libfakecuda.so", true);
        let app = compiled("tests/app/host_app.c", "host_app", false);
        (
            Attach {
                library,
                driver: Some(driver),
            },
            app,
        )
    })
}

fn request(name: &str, args: &[&str], timeout: Option<Duration>) -> AppRequest {
    let (_, app) = setup();
    let dir = scratch().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut command = vec![app.clone().into_os_string()];
    command.extend(args.iter().map(Into::into));
    AppRequest {
        command,
        dir,
        record: vec!["launches".into(), "copies".into(), "dtoh_data".into()],
        replace: None,
        timeout,
    }
}

#[test]
fn an_application_runs_as_it_is_and_its_events_read_back_in_order() {
    let (attach, _) = setup();
    let run = attach.run(&request("plain", &["3"], None)).unwrap();
    assert_eq!(run.exit, Exit::Code(0), "{}", run.stderr());
    assert_eq!(run.stdout(), "sum 10.0\n");
    let kinds: Vec<&str> = run
        .events
        .iter()
        .map(|e| match e {
            Event::Load { .. } => "load",
            Event::Alloc { .. } => "alloc",
            Event::Copy { .. } => "copy",
            Event::Launch { .. } => "launch",
            Event::End { .. } => "end",
            _ => "other",
        })
        .filter(|k| *k != "other")
        .collect();
    assert_eq!(
        kinds,
        ["load", "alloc", "copy", "launch", "launch", "launch", "copy", "end", "end"],
        "{:?}",
        run.events
    );
    let Event::Launch {
        kernel,
        grid,
        block,
        args,
        ..
    } = &run
        .events
        .iter()
        .find(|e| matches!(e, Event::Launch { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(kernel.as_deref(), Some("k_8_8"));
    assert_eq!((grid[0], block[0]), (2, 64));
    // The first parameter is the allocation's address, the second the double 0.5, both
    // little-endian: what a trace maps to a buffer and a number.
    let allocated = run.events.iter().find_map(|e| match e {
        Event::Alloc { ptr, .. } => Some(ptr.0),
        _ => None,
    });
    let args = args.as_ref().unwrap();
    assert_eq!(args[0], hex::le(allocated.unwrap()));
    assert_eq!(args[1], "000000000000e03f");
    let back = run.events.iter().find_map(|e| match e {
        Event::Copy { dir, data, .. } if dir == "dtoh" => data.clone(),
        _ => None,
    });
    let bytes = std::fs::read(run.dir.join(back.expect("the copy back's data"))).unwrap();
    let values: Vec<f64> = bytes
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, [1.0, 2.0, 3.0, 4.0]);
    assert!(matches!(run.events.last(), Some(Event::End { how }) if how == "exit"));
}

#[test]
fn a_hanging_application_is_ended_at_the_timeout_and_keeps_what_it_recorded() {
    let (attach, _) = setup();
    let run = attach
        .run(&request(
            "hang",
            &["1", "hang"],
            Some(Duration::from_millis(800)),
        ))
        .unwrap();
    assert_eq!(run.exit, Exit::TimedOut);
    assert!(run.wall < Duration::from_secs(10), "{:?}", run.wall);
    assert_eq!(run.stdout(), "sum 10.0\n");
    // The log was flushed at the copy back, before the hang.
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::Copy { dir, .. } if dir == "dtoh")));
}

#[test]
fn a_crash_is_the_run_s_result() {
    let (attach, _) = setup();
    let run = attach
        .run(&request("crash", &["1", "crash"], None))
        .unwrap();
    assert_eq!(run.exit, Exit::Signal(6), "{}", run.stderr());
    assert!(run.events.iter().any(|e| matches!(e, Event::Launch { .. })));
}

#[test]
fn a_directory_in_use_or_a_missing_program_is_one_line() {
    let (attach, _) = setup();
    let used = request("used", &["1"], None);
    std::fs::create_dir_all(&used.dir).unwrap();
    std::fs::write(used.dir.join("events.jsonl"), "").unwrap();
    let e = attach.run(&used).unwrap_err().to_string();
    assert!(e.contains("not empty") && !e.contains('\n'), "{e}");
    let mut missing = request("missing", &[], None);
    missing.command = vec!["/nonexistent/app".into()];
    let e = attach.run(&missing).unwrap_err().to_string();
    assert!(
        e.starts_with("could not start '/nonexistent/app'") && !e.contains('\n'),
        "{e}"
    );
}
