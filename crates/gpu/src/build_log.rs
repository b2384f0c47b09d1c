//! A failed compile's whole log, kept: [`logged`] writes the compiler's log (NVRTC's or nvcc's)
//! to a file under the cache directory and wraps the error so that its one line says where the
//! log is ([`BuildError::Logged`]), with a hint when the log shows host code that no longer
//! compiles with the current toolkit.
//!
//! CUDA 13 removed the `cudaThread*` functions (deprecated since CUDA 4) and several
//! `cudaDeviceProp` members; programs that still use them fail in their host code, which mantissa
//! compiles (nvcc parses the whole file) but never runs. Each has a `-D` that makes the file
//! compile again ([`removed_api_defines`]): a function becomes its `cudaDevice*` successor, a
//! member becomes `major` (an `int` member that still exists). The member's value is then wrong,
//! which does not matter here: only the kernels run. Checked with the pip wheel's nvcc 13.0 in
//! this module's tests.

use crate::cache::{atomic_write, cache_root, fnv1a64};
use crate::error::BuildError;
use crate::frontend::Define;
use std::path::PathBuf;

/// Runtime functions CUDA 13 removed, with the successor that has the same signature.
const REMOVED_FUNCTIONS: [(&str, &str); 6] = [
    ("cudaThreadSynchronize", "cudaDeviceSynchronize"),
    ("cudaThreadExit", "cudaDeviceReset"),
    ("cudaThreadGetLimit", "cudaDeviceGetLimit"),
    ("cudaThreadSetLimit", "cudaDeviceSetLimit"),
    ("cudaThreadGetCacheConfig", "cudaDeviceGetCacheConfig"),
    ("cudaThreadSetCacheConfig", "cudaDeviceSetCacheConfig"),
];

/// `int` members of `cudaDeviceProp` CUDA 13 removed (their values come from
/// `cudaDeviceGetAttribute` now).
const REMOVED_MEMBERS: [&str; 8] = [
    "clockRate",
    "memoryClockRate",
    "kernelExecTimeoutEnabled",
    "computeMode",
    "deviceOverlap",
    "maxTexture1DLinear",
    "singleToDoublePrecisionPerfRatio",
    "cooperativeMultiDeviceLaunch",
];

/// The member a removed one is replaced with: it exists in every CUDA version and is an `int`.
const STAND_IN_MEMBER: &str = "major";

/// The `-D` definitions that make host code using APIs CUDA 13 removed compile again, for each
/// such API the compiler's `log` complains about (`identifier "cudaThreadSynchronize" is
/// undefined`, `class "cudaDeviceProp" has no member "clockRate"`), in the log's order.
pub fn removed_api_defines(log: &str) -> Vec<Define> {
    let mut out: Vec<Define> = Vec::new();
    for line in log.lines() {
        let define = if let Some(name) = quoted_after(line, "identifier \"", "\" is undefined") {
            REMOVED_FUNCTIONS
                .iter()
                .find(|(old, _)| *old == name)
                .map(|(old, new)| (old.to_string(), new.to_string()))
        } else if let Some(name) = quoted_after(line, "has no member \"", "\"") {
            (line.contains("cudaDeviceProp") && REMOVED_MEMBERS.contains(&name))
                .then(|| (name.to_string(), STAND_IN_MEMBER.to_string()))
        } else {
            None
        };
        if let Some((name, value)) = define {
            push_once(&mut out, name, value);
        }
    }
    out
}

/// Adds `-D name=value` to `out` unless `name` is defined there already.
fn push_once(out: &mut Vec<Define>, name: String, value: String) {
    if !out.iter().any(|d| d.name == name) {
        out.push(Define {
            name,
            value: Some(value),
        });
    }
}

/// The `-D` definitions that make `text` (a source file, and the files it includes) compile
/// again before it is compiled: each removed runtime function it calls, and each removed
/// `cudaDeviceProp` member it reads when it names `cudaDeviceProp`, in text order. Comments do
/// not count. `mantissa inspect` applies them itself: it never runs host code.
pub fn removed_api_workarounds(text: &str) -> Vec<Define> {
    let code = crate::frontend::strip_comments(text);
    let device_prop = code.contains("cudaDeviceProp");
    let mut out: Vec<Define> = Vec::new();
    let bytes = code.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        if !(bytes[k].is_ascii_alphabetic() || bytes[k] == b'_') {
            k += 1;
            continue;
        }
        let start = k;
        while k < bytes.len() && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_') {
            k += 1;
        }
        let id = &code[start..k];
        let before = code[..start].trim_end();
        let member = before.ends_with('.') || before.ends_with("->");
        let define = if let Some((old, new)) = REMOVED_FUNCTIONS.iter().find(|(o, _)| *o == id) {
            Some((old.to_string(), new.to_string()))
        } else if device_prop && member && REMOVED_MEMBERS.contains(&id) {
            Some((id.to_string(), STAND_IN_MEMBER.to_string()))
        } else {
            None
        };
        if let Some((name, value)) = define {
            push_once(&mut out, name, value);
        }
    }
    out
}

/// The hint for a log that shows a texture reference (`texture<float, 1> tex;`), which CUDA
/// 12 removed.
fn texture_reference_hint(log: &str) -> Option<String> {
    log.contains("texture is not a template").then(|| {
        "texture references (texture<T, N> name) were removed in CUDA 12: read through a texture object (cudaTextureObject_t with tex1Dfetch<T>(obj, i)) or load the array directly".to_string()
    })
}

/// The text between `start` and the next `end` in `line`.
fn quoted_after<'a>(line: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &line[line.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

/// The hint for `log`, when it shows APIs CUDA 13 removed (or texture references, which CUDA
/// 12 removed).
pub fn removed_api_hint(log: &str) -> Option<String> {
    let defines = removed_api_defines(log);
    if defines.is_empty() {
        return texture_reference_hint(log);
    }
    let names: Vec<&str> = defines.iter().map(|d| d.name.as_str()).collect();
    let options: Vec<String> = defines.iter().map(Define::option).collect();
    Some(format!(
        "CUDA 13 removed {} from the runtime: compile with {} (a spec's [source] define, or -D); mantissa compiles host code but never runs it, so a stand-in member's value does not matter",
        names.join(", "),
        options.join(" ")
    ))
}

/// Where the log of a failed build of `file` is written: `<cache>/logs/<stem>-<hash>.log`
/// (hash of the log, so the same failure reuses one file), or under the temporary directory
/// when there is no cache directory.
fn log_path(file: &str, log: &str) -> PathBuf {
    let dir = cache_root()
        .unwrap_or_else(|| std::env::temp_dir().join("mantissa"))
        .join("logs");
    let stem = std::path::Path::new(file)
        .file_stem()
        .map_or("build".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}-{:016x}.log", fnv1a64(log.as_bytes())))
}

/// `error` with its compiler log written to a file and a hint for removed APIs, when it has a
/// log ([`BuildError::log`]); other errors come back as they are. A log that cannot be written
/// is not an error of the build: the message then says so instead of naming a file.
pub fn logged(error: BuildError, file: &str) -> BuildError {
    let Some(log) = error.log().filter(|l| !l.trim().is_empty()) else {
        return error;
    };
    let log = log.trim_end_matches('\0').to_string();
    let path = log_path(file, &log);
    let log_file = match atomic_write(&path, log.as_bytes()) {
        Ok(()) => Ok(path),
        Err(e) => Err(format!("{}: {e}", path.display())),
    };
    BuildError::Logged {
        hint: removed_api_hint(&log),
        error: Box::new(error),
        log_file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_apis_are_found_in_the_source_before_compiling() {
        let text = "#include <cstdio>\n// cudaThreadExit() is gone\nint main() {\n  cudaDeviceProp p;\n  printf(\"%d\", p.clockRate);\n  cudaThreadSynchronize();\n  int clockRate = 3;\n}\n";
        let got: Vec<String> = removed_api_workarounds(text)
            .iter()
            .map(Define::option)
            .collect();
        assert_eq!(
            got,
            [
                "-DclockRate=major",
                "-DcudaThreadSynchronize=cudaDeviceSynchronize"
            ]
        );
        // A member of the user's own struct is not cudaDeviceProp's.
        assert!(
            removed_api_workarounds("struct S { int clockRate; }; s.clockRate = 1;").is_empty()
        );
    }

    #[test]
    fn texture_references_get_a_hint() {
        let log = "t.cu(1): error: texture is not a template\n  texture<float, 1> tex;\n";
        assert!(removed_api_hint(log).is_some_and(|h| h.contains("removed in CUDA 12")));
    }

    /// nvcc 13.0.88's own log for `fixtures/removed_api/old.cu` (abridged to its error lines).
    const NVCC_LOG: &str = r#"old.cu(7): error: class "cudaDeviceProp" has no member "clockRate"
    printf("%d %d\n", prop.clockRate, prop.memoryClockRate);
                           ^
old.cu(7): error: class "cudaDeviceProp" has no member "memoryClockRate"
old.cu(8): error: identifier "cudaThreadSynchronize" is undefined
old.cu(9): error: identifier "cudaThreadSynchronize" is undefined
old.cu(10): error: identifier "undefined_thing" is undefined
old.cu(11): error: class "Mine" has no member "clockRate"
5 errors detected in the compilation of "old.cu".
"#;

    #[test]
    fn removed_apis_are_read_from_the_log_once_each() {
        let options: Vec<String> = removed_api_defines(NVCC_LOG)
            .iter()
            .map(Define::option)
            .collect();
        assert_eq!(
            options,
            [
                "-DclockRate=major",
                "-DmemoryClockRate=major",
                "-DcudaThreadSynchronize=cudaDeviceSynchronize"
            ],
            "an unknown identifier and another class's member are not CUDA 13's doing"
        );
        let hint = removed_api_hint(NVCC_LOG).unwrap();
        assert!(hint.starts_with("CUDA 13 removed clockRate, memoryClockRate, cudaThreadSynchronize from the runtime: compile with -DclockRate=major -DmemoryClockRate=major -DcudaThreadSynchronize=cudaDeviceSynchronize"), "{hint}");
        assert_eq!(removed_api_hint("k.cu(3): error: expected a \";\""), None);
    }

    #[test]
    fn a_logged_error_names_its_log_file_and_keeps_the_log() {
        let error = BuildError::Nvcc {
            file: "old.cu".into(),
            flags: crate::FlagSet::DEFAULT,
            arch: crate::Arch::new(9, 0),
            status: "exit 1".into(),
            log: NVCC_LOG.into(),
        };
        let e = logged(error, "dir/old.cu");
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        let Some(path) = e.log_file() else {
            panic!("no log file: {msg}")
        };
        assert!(
            msg.contains(&format!("whole log: {}", path.display())),
            "{msg}"
        );
        assert!(msg.contains("; hint: CUDA 13 removed clockRate"), "{msg}");
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("old-"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), NVCC_LOG);
        assert_eq!(e.log(), Some(NVCC_LOG));
        // Errors without a log are left alone.
        let plain = logged(BuildError::BadDefine { given: "1x".into() }, "k.cu");
        assert!(matches!(plain, BuildError::BadDefine { .. }));
    }

    /// The hint's `-D`s make the fixture compile with the nvcc in use (the pip wheel's 13.0 on
    /// CI): the fixture fails as written, with the hint naming exactly its removed APIs.
    #[test]
    fn the_hinted_defines_make_old_host_code_compile_with_nvcc() {
        let Some(_) = crate::testing::require_nvcc_or_skip() else {
            return;
        };
        let dir = crate::cache::tests::scratch_dir("removed-api");
        let file = dir.join("old.cu");
        std::fs::write(&file, include_str!("../tests/fixtures/removed_api/old.cu")).unwrap();
        let builder = crate::Builder::new();
        let mut request = crate::BuildRequest::new(&file);
        request.front_end = Some(crate::FrontEnd::Nvcc);
        let err = builder.build(&request).unwrap_err();
        let defines = removed_api_defines(err.log().unwrap_or(""));
        let options: Vec<String> = defines.iter().map(Define::option).collect();
        assert_eq!(
            options,
            [
                "-DclockRate=major",
                "-DmemoryClockRate=major",
                "-DcudaThreadSynchronize=cudaDeviceSynchronize"
            ],
            "{err}"
        );
        assert!(err.to_string().contains("; hint: CUDA 13 removed"), "{err}");
        request.defines = defines;
        let built = builder.build(&request).unwrap_or_else(|e| panic!("{e}"));
        assert!(built.ptx.contains(".entry _Z5scalePddi"), "{}", built.ptx);
        std::fs::remove_dir_all(&dir).ok();
    }
}
