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

/// The whole path on the CPU: the application recorded through the real attach library, traced,
/// and the spec replayed on the PTX interpreter (a launch of the fake driver runs nothing, and
/// neither does the kernel: the buffer comes back as the application read it).
#[test]
fn a_traced_run_replays_on_the_interpreter_to_what_the_application_read() {
    use mantissa_harness::app::trace::trace;
    use mantissa_ptx::interp::{self, Memory};
    let (attach, _) = setup();
    let mut req = request("traced", &["3"], None);
    req.record = ["launches", "copies", "htod_data", "dtoh_data"]
        .map(String::from)
        .to_vec();
    let run = attach.run(&req).unwrap();
    assert_eq!(run.exit, Exit::Code(0), "{}", run.stderr());
    let t = trace(&run.dir, &run.events, "host_app", 90).unwrap();
    assert_eq!(
        (t.counts.launches, t.counts.kernels, t.counts.outputs),
        (3, 1, 1)
    );
    assert!(
        t.spec
            .contains("repeat = 3\nsteps = [\n  { launch = \"k_8_8\""),
        "{}",
        t.spec
    );
    let path = t.write(&scratch().join("traced-spec")).unwrap();
    let spec = mantissa_harness::Spec::load(&path).unwrap_or_else(|e| panic!("{e}\n{}", t.spec));
    let inputs = mantissa_harness::data::materialize(&spec).unwrap();
    let ptx = std::fs::read_to_string(path.with_extension("ptx")).unwrap();
    let plan = mantissa_harness::validate::plan(&spec, &ptx, &Default::default(), &inputs.symbols)
        .unwrap_or_else(|e| panic!("{e}\n{}", t.spec));
    let module = mantissa_ptx::parse::parse(&ptx).module;
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        interp::run_with(&module, entry, l, args, mem, &interp::Options::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let replay =
        mantissa_harness::interp_steps::run_steps(&spec, &plan, &inputs, &module, &mut launch)
            .unwrap();
    let got = replay.buffer_bytes(&spec.outputs[0].buffer).unwrap();
    let want: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(got, want);
}

/// A session of the application: the baseline, then a trial with its module replaced by a
/// pipeline's rewrite (demotion of every f64 instruction: none in this kernel), compared on what
/// it copied back.
#[test]
fn a_trial_replaces_the_module_and_is_compared_on_what_was_copied_back() {
    use mantissa_harness::app::session::AppSession;
    use mantissa_ptx::pass::demote::DemoteSet;
    let (attach, app) = setup();
    let work = scratch().join("session");
    let _ = std::fs::remove_dir_all(&work);
    let mut session = AppSession::start(
        attach.clone(),
        vec![app.clone().into_os_string(), "2".into()],
        &work,
        None,
        90,
    )
    .unwrap();
    assert_eq!(session.modules().len(), 1);
    assert!(session.modules()[0].ptx.is_some());
    let pipeline = mantissa_harness::pipelines::demotion(DemoteSet::all());
    let trial = session.run_pipeline("all", &pipeline).unwrap();
    assert_eq!(trial.run.exit, Exit::Code(0), "{}", trial.run.stderr());
    assert!(trial.refused.is_empty() && trial.not_rewritten.is_empty());
    assert_eq!(trial.reports.len(), 1);
    assert!(
        trial
            .run
            .events
            .iter()
            .any(|e| matches!(e, Event::Load { replaced: true, .. })),
        "{:?}",
        trial.run.events
    );
    let c = session.compare(&trial.run).unwrap();
    assert_eq!(c.diverged, None);
    assert_eq!(c.groups.len(), 1);
    let g = &c.groups[0];
    // `k_8_8` is extern "C" and touches no memory: nothing says what the buffer holds, so it
    // is compared as bytes.
    assert_eq!(
        (g.dtype, g.bytes, g.copies),
        (mantissa_gpu::DType::U8, 32, (1, 1))
    );
    assert_eq!(g.last.as_ref().unwrap().differing, 0);
    session_trials_as_an_analysis_asks(&mut session);
    // A baseline that fails is the session's end, in one line.
    let _ = std::fs::remove_dir_all(scratch().join("session-crash"));
    let e = AppSession::start(
        attach.clone(),
        vec![app.clone().into_os_string(), "1".into(), "crash".into()],
        &scratch().join("session-crash"),
        None,
        90,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("a baseline must exit with status 0"), "{e}");
}

/// What tune and diff ask of the application's session ([`mantissa_harness::Session`]): a
/// configuration's trial, timed by repeated runs; its outputs; what its kernels use (the fake
/// driver answers 16 + the name's length registers, 8 local bytes).
fn session_trials_as_an_analysis_asks(session: &mut mantissa_harness::app::session::AppSession) {
    use mantissa_harness::{Configuration, Demotion, Session, TrialTiming};
    let all = Configuration::Demote(Demotion::all());
    let timing = TrialTiming::Timed {
        warmup: 0,
        repeats: 2,
    };
    let o = Session::trial(session, &all, timing).unwrap();
    assert_eq!(o.outputs.len(), 1);
    assert_eq!(o.outputs[0].vs_baseline.differing, 0);
    let t = o.timing.expect("each run's kernel time is a sample");
    assert_eq!(t.samples_ms.len(), 2, "{t:?}");
    let outputs = Session::outputs(session).unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].0, "buf0[0..32]");
    let base = Session::baseline_resources(session).unwrap();
    assert_eq!(base.len(), 1);
    assert_eq!(base[0].0, "k_8_8");
    assert_eq!((base[0].1.registers, base[0].1.local_bytes), (21, 8));
    // The configuration's resources come from the trial's own run: no further run.
    let before = std::fs::read_dir(session.baseline.dir.parent().unwrap())
        .unwrap()
        .count();
    let mixed = Session::configuration_resources(session, &all).unwrap();
    assert_eq!(mixed, base);
    let after = std::fs::read_dir(session.baseline.dir.parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(before, after, "no run to learn resources already known");
    // An application's session refuses what needs a spec, in one line.
    let mut kept = Demotion::all();
    kept.buffers = vec!["x".into()];
    let e = Session::trial(
        session,
        &Configuration::Demote(kept),
        TrialTiming::AccuracyOnly,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("allocations are its own"), "{e}");
}
