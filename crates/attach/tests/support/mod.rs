//! The tests' part of the CUDA runtime: a fake driver (`tests/fake_driver.c`, compiled here),
//! the built shim (`libmantissa_attach.so`, which `cargo test` builds beside the test binaries
//! because the library is also a cdylib), and child processes: the shim reads its environment
//! once, when loaded, so each scenario runs in a fresh process (this test binary, re-run with
//! `CHILD_ENV` naming the scenario) that dlopens the shim and calls it as the runtime would.

#![allow(dead_code)]

use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Names the scenario a child process runs.
pub const CHILD_ENV: &str = "MANTISSA_ATTACH_TEST_CHILD";

/// The built shim.
pub fn shim_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    let candidates = [
        deps.join("libmantissa_attach.so"),
        deps.parent().unwrap_or(deps).join("libmantissa_attach.so"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "libmantissa_attach.so is not beside the test binary ({}): build it with \
                 `cargo build -p mantissa-attach`",
                deps.display()
            )
        })
}

/// The fake driver, compiled once per test process under cargo's scratch directory for
/// integration tests (replaced at each run).
pub fn fake_driver() -> &'static Path {
    static FAKE: OnceLock<PathBuf> = OnceLock::new();
    FAKE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("attach-fake-driver");
        std::fs::create_dir_all(&dir).expect("cargo's scratch directory is writable");
        let out = dir.join("libfakecuda.so");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_driver.c");
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
            .arg(&out)
            .arg(&source)
            .arg("-ldl")
            .status()
            .expect("cc (the C compiler Rust links with) runs");
        assert!(status.success(), "cc could not build {}", source.display());
        out
    })
}

/// One scenario's directories: the attach directory, the replacement directory, the fake's log.
pub struct Run {
    /// Kept until the run is dropped.
    pub root: tempfile::TempDir,
}

impl Run {
    /// Fresh, empty directories.
    pub fn new() -> Run {
        let root = tempfile::tempdir().expect("a temporary directory");
        for d in ["attach", "replace", "cwd"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        Run { root }
    }

    /// `MANTISSA_ATTACH_DIR`.
    pub fn attach(&self) -> PathBuf {
        self.root.path().join("attach")
    }

    /// `MANTISSA_REPLACE_DIR`.
    pub fn replace(&self) -> PathBuf {
        self.root.path().join("replace")
    }

    /// The fake's log.
    pub fn fake_log(&self) -> PathBuf {
        self.root.path().join("fake.log")
    }

    /// The fake's log, read.
    pub fn fake_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.fake_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The `n`-th image (from 1) the fake was handed.
    pub fn fake_load(&self, n: usize) -> Vec<u8> {
        let path = format!("{}.load{n}", self.fake_log().display());
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// `events.jsonl`, parsed.
    pub fn events(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.attach().join("events.jsonl"))
            .expect("events.jsonl was written");
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// Runs `scenario` in a child process with the shim's environment (`record` false: no
    /// `MANTISSA_ATTACH_DIR`), plus `env`; panics with its output unless it succeeds.
    pub fn child(&self, scenario: &str, record: bool, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["child", "--exact", "--nocapture", "--test-threads=1"])
            .current_dir(self.root.path().join("cwd"))
            .env(CHILD_ENV, scenario)
            .env("MANTISSA_REAL_LIBCUDA", fake_driver())
            .env("FAKE_CUDA_LOG", self.fake_log())
            .env("MANTISSA_SHIM", shim_path())
            .env_remove("MANTISSA_ATTACH_DIR")
            .env_remove("MANTISSA_ATTACH_RECORD")
            .env_remove("MANTISSA_REPLACE_DIR");
        if record {
            cmd.env("MANTISSA_ATTACH_DIR", self.attach());
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("the test binary re-runs");
        assert!(
            out.status.success(),
            "scenario {scenario} failed:\n--- stdout\n{}\n--- stderr\n{}\n--- fake log\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.fake_lines().join("\n")
        );
        out
    }
}

/// An opened library (the shim or the fake driver) in a child.
pub struct Lib(*mut c_void);

impl Lib {
    /// Opens `path` (RTLD_LOCAL, as the runtime opens libcuda).
    pub fn open(path: &Path) -> Lib {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "dlopen {} failed", path.display());
        Lib(h)
    }

    /// The shim, as the child's environment names it.
    pub fn shim() -> Lib {
        Lib::open(Path::new(&std::env::var("MANTISSA_SHIM").unwrap()))
    }

    /// The fake driver (already loaded by the shim: the same handle).
    pub fn fake() -> Lib {
        Lib::open(Path::new(&std::env::var("MANTISSA_REAL_LIBCUDA").unwrap()))
    }

    /// A symbol's address (null when absent).
    pub fn address(&self, name: &str) -> *mut c_void {
        let c = CString::new(name).unwrap();
        unsafe { libc::dlsym(self.0, c.as_ptr()) }
    }

    /// A symbol as the function type `F`.
    ///
    /// # Safety
    /// `F` matches the symbol's C declaration.
    pub unsafe fn get<F: Copy>(&self, name: &str) -> F {
        let p = self.address(name);
        assert!(!p.is_null(), "{name} is not exported");
        unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
    }
}

/// A small PTX module whose entries are named as the fake reads parameters (`k_8_4_4`).
pub fn ptx(marker: &str) -> String {
    format!(
        "//{marker}\n.version 8.0\n.target sm_90\n.address_size 64\n\n\
         .visible .entry axpy_8_4_4(.param .u64 p, .param .f32 a, .param .u32 n)\n{{\n\tret;\n}}\n"
    )
}

/// The key of `bytes`, as the shim names modules.
pub fn key(bytes: &[u8]) -> String {
    mantissa_fatbin::module_key(bytes)
}
