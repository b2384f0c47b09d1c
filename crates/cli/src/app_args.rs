//! What the commands that run an application as it is (`trace`, `run -- APP`,
//! `shadow -- APP`) check and derive from their arguments alike.

use crate::run::RunUsage;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The program's file name, with anything but letters, digits, `_` and `-` made `_` (it names
/// directories and specs); `app` when there is none.
pub fn stem(program: &OsStr) -> String {
    Path::new(program)
        .file_name()
        .map(|n| {
            n.to_string_lossy().replace(
                |c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-',
                "_",
            )
        })
        .unwrap_or_else(|| "app".into())
}

/// What a command that takes a spec or an application after `--` was given: `Some(spec)`, or
/// `None` for the application; both or neither is a usage error.
pub fn spec_or_app(
    spec: &Option<PathBuf>,
    app: &[std::ffi::OsString],
) -> Result<Option<PathBuf>, RunUsage> {
    match (spec, app.is_empty()) {
        (Some(_), false) => Err(RunUsage(
            "give a spec or an application after `--`, not both".into(),
        )),
        (None, false) => Ok(None),
        (Some(p), true) => Ok(Some(p.clone())),
        (None, true) => Err(RunUsage("give a spec, or an application after `--`".into())),
    }
}

/// `given`, else `default`: a directory that must hold nothing yet (runs are never mixed).
pub fn fresh_dir(given: Option<&Path>, default: String, option: &str) -> anyhow::Result<PathBuf> {
    let dir = given.map_or_else(|| PathBuf::from(default), Path::to_path_buf);
    if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(anyhow::anyhow!(
            "{} holds earlier runs: give another {option}, or remove it",
            dir.display()
        ));
    }
    Ok(dir)
}

/// A time limit in seconds, given as `option`: positive and finite, or a usage error.
pub fn timeout(seconds: Option<f64>, option: &str) -> Result<Option<Duration>, RunUsage> {
    match seconds {
        Some(t) if !(t.is_finite() && t > 0.0) => Err(RunUsage(format!(
            "{option} {t}: give a positive number of seconds"
        ))),
        t => Ok(t.map(Duration::from_secs_f64)),
    }
}

/// Compute capability of GPU 0 as `10 * major + minor`; 1000 (any PTX) without one.
pub fn device_arch() -> u32 {
    let arch = || {
        let gpu = mantissa_gpu::Toolchain::probe().ok()?.open(0).ok()?;
        let cc = gpu.info().compute_capability;
        Some(cc.major * 10 + cc.minor)
    };
    arch().unwrap_or(1000)
}

/// The `--output NAME=REGEX` values, each checked.
pub fn printed_outputs(
    values: &[String],
) -> Result<Vec<mantissa_harness::app::session::PrintedOutput>, RunUsage> {
    values
        .iter()
        .map(|o| mantissa_harness::app::session::PrintedOutput::parse(o).map_err(RunUsage))
        .collect()
}

/// The application `app` run as it is under the attach library, its runs kept in `work`: the
/// session every command that runs an application opens (announced on stderr unless `quiet`).
pub fn start_session(
    app: &[std::ffi::OsString],
    work: &Path,
    timeout: Option<Duration>,
    quiet: bool,
) -> anyhow::Result<mantissa_harness::app::session::AppSession> {
    let attach = mantissa_harness::app::Attach::locate()?;
    let arch = device_arch();
    if !quiet {
        eprintln!("running {} as it is (the baseline) ...", stem(&app[0]));
    }
    Ok(mantissa_harness::app::session::AppSession::start(
        attach,
        app.to_vec(),
        work,
        timeout,
        arch,
    )?)
}

/// The key of the module the analyses work on, or the one line that says the application
/// loaded none with PTX and how to rebuild it.
pub fn target_of(
    session: &mantissa_harness::app::session::AppSession,
    stem: &str,
) -> anyhow::Result<String> {
    session.target_key().map(str::to_string).ok_or_else(|| {
        anyhow::anyhow!("{stem} loaded no module with PTX: rebuild it with PTX beside the SASS (`-gencode arch=compute_XX,code=compute_XX`, or `-arch=sm_XX`)")
    })
}
