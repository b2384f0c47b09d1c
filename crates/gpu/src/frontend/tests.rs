use super::*;
use crate::cache::tests::scratch_dir;
use crate::error::NvccUnavailable;
use crate::testing::{require_nvcc_or_skip, require_nvrtc_or_skip};
use std::path::Path;

const APP: &str = include_str!("../../tests/fixtures/host_app/app.cu");
const APP_LOCAL: &str = include_str!("../../tests/fixtures/host_app/local.h");

/// The fixture program in a scratch directory (so that its quoted include resolves).
fn app_dir(tag: &str) -> PathBuf {
    let dir = scratch_dir(tag);
    std::fs::write(dir.join("app.cu"), APP).unwrap();
    std::fs::write(dir.join("local.h"), APP_LOCAL).unwrap();
    dir
}

/// A device-only file: everything that looks like host code is in comments or strings.
const DEVICE_ONLY: &str = r#"// Launch with kernel<<<grid, block>>>(...) from int main() { cudaMalloc(...) }
/* int main(int argc, char** argv) {
     cudaMemcpy(...); k<<<1, 1>>>();
   } */
#include "local.h"
__device__ const char* banner = "int main() { k<<<1,1>>>(); } // not a comment";
__device__ int domain(int x) { return x; }
__device__ int maintain(int x) { return x + 1; }
extern "C" __global__ void k(double* y, int n) {
  int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;   // cudaFree is not called here
  if (i < n) y[i] = SCALE * domain(i) + maintain(i) + (y[i] < 2 ? 1 : 0) + (i >> 2);
}
"#;

#[test]
fn host_code_is_found_in_realistic_files() {
    let dir = app_dir("host-app");
    let app = dir.join("app.cu").display().to_string();
    let found = find_host_code(&app, APP, &[]).unwrap();
    assert_eq!(found.what, "<stdio.h>");
    assert!(found.header);
    assert_eq!(found.to_string(), "the file includes <stdio.h> at line 4");

    // Without the host header, the launch and main are found, in text order.
    let no_headers = APP
        .replace("#include <stdio.h>", "")
        .replace("#include <math.h>", "");
    let found = find_host_code(&app, &no_headers, &[]).unwrap();
    assert_eq!(found.what, "main");
    assert_eq!(
        found.to_string(),
        "the file has host code (main at line 36)"
    );
    let no_main = no_headers.replace("int main(int argc, char** argv)", "void run()");
    let found = find_host_code(&app, &no_main, &[]).unwrap();
    assert_eq!(found.what, "cudaMalloc");
    let launch_only = "__global__ void k() {}\nvoid run() { k<<<1, 1>>>(); }\n";
    let found = find_host_code("l.cu", launch_only, &[]).unwrap();
    assert_eq!(
        found.to_string(),
        "the file has host code (a <<<...>>> launch at line 2)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn comments_strings_and_longer_names_are_not_host_code() {
    let dir = app_dir("device-only");
    let file = dir.join("k.cu");
    std::fs::write(&file, DEVICE_ONLY).unwrap();
    let name = file.display().to_string();
    assert_eq!(find_host_code(&name, DEVICE_ONLY, &[]), None);
    // Line numbers survive comment stripping.
    let stripped = strip_comments(DEVICE_ONLY);
    assert_eq!(stripped.lines().count(), DEVICE_ONLY.lines().count());
    assert!(!stripped.contains("cudaMemcpy") && stripped.contains("\"int main()"));

    // Host code in a local header counts, and is named there.
    std::fs::write(
        dir.join("local.h"),
        "#define BLOCK_SIZE 128\nvoid helper() { cudaDeviceSynchronize(); }\n",
    )
    .unwrap();
    let found = find_host_code(&name, DEVICE_ONLY, &[]).unwrap();
    assert_eq!(
        found.to_string(),
        "the file has host code (cudaDeviceSynchronize at line 2 of local.h)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn system_headers_go_to_nvcc_unless_an_include_dir_has_them() {
    let text = "#include <cuda_fp16.h>\n__global__ void k(__half* x) {}\n";
    let found = find_host_code("h.cu", text, &[]).unwrap();
    assert_eq!(
        found.to_string(),
        "the file includes <cuda_fp16.h> at line 1"
    );
    let dir = scratch_dir("fp16-dir");
    std::fs::write(dir.join("cuda_fp16.h"), "struct __half {};\n").unwrap();
    assert_eq!(
        find_host_code("h.cu", text, std::slice::from_ref(&dir)),
        None
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn request(file: &str, text: &str) -> BuildRequest {
    BuildRequest::new(file).with_text(text)
}

#[test]
fn the_choice_follows_the_file_and_refuses_mismatches() {
    let b = Builder::new()
        .with_nvrtc(Err(NvrtcUnavailable::NotFound { looked: vec![] }))
        .with_nvcc(Err(NvccUnavailable::NotFound { looked: vec![] }));
    let ptx = ".version 9.0\n.target sm_90\n.address_size 64\n";
    let choose = |r: &BuildRequest| b.choose(r, r.text.as_deref().unwrap());
    assert_eq!(
        choose(&request("k.ptx", ptx)).unwrap(),
        (FrontEnd::Ptx, Reason::PtxFile)
    );
    assert_eq!(
        choose(&request("k.cu", "__global__ void k() {}\n")).unwrap(),
        (FrontEnd::Nvrtc, Reason::DeviceOnly)
    );
    assert_eq!(choose(&request("app.cu", APP)).unwrap().0, FrontEnd::Nvcc);
    let mut asked = request("app.cu", APP);
    asked.front_end = Some(FrontEnd::Nvrtc);
    assert_eq!(choose(&asked).unwrap(), (FrontEnd::Nvrtc, Reason::Asked));

    let errors = [
        (
            Some(FrontEnd::Nvrtc),
            "k.ptx",
            ptx,
            None,
            "it is PTX, which is read as is: use --front-end auto or ptx",
        ),
        (
            Some(FrontEnd::Ptx),
            "k.cu",
            "__global__ void k() {}",
            None,
            "it has no .version directive",
        ),
        (
            None,
            "k.ptx",
            ptx,
            Some(vec![3]),
            "math-unit marking needs a compile",
        ),
    ];
    for (front_end, file, text, units, expect) in errors {
        let mut r = request(file, text);
        r.front_end = front_end;
        r.units = units;
        let msg = choose(&r).unwrap_err().to_string();
        assert!(msg.contains(expect), "{msg}");
        assert!(msg.contains(file) && !msg.contains('\n'), "{msg}");
    }
}

#[test]
fn needing_nvcc_without_one_says_what_to_install_and_how_by_hand() {
    let b = Builder::new().with_nvcc(Err(NvccUnavailable::NotFound {
        looked: vec!["/usr/local/cuda/bin/nvcc".into()],
    }));
    let err = b.build(&request("src/app.cu", APP)).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(
        msg.starts_with(
            "src/app.cu needs nvcc (the file includes <stdio.h> at line 4), but no nvcc found"
        ),
        "{msg}"
    );
    assert!(msg.contains(crate::nvcc::NVCC_PIP_INSTALL), "{msg}");
    assert!(msg.contains("set CUDA_HOME"), "{msg}");
    assert!(
            msg.ends_with("or make the PTX by hand (`nvcc -ptx -lineinfo -arch=sm_90 src/app.cu -o src/app.ptx`) and give mantissa the .ptx"),
            "{msg}"
        );
}

#[test]
fn defines_are_names_with_optional_values() {
    assert_eq!("TILE=16".parse::<Define>().unwrap().option(), "-DTILE=16");
    assert_eq!("NDEBUG".parse::<Define>().unwrap().option(), "-DNDEBUG");
    assert_eq!("EMPTY=".parse::<Define>().unwrap().option(), "-DEMPTY=");
    for bad in ["", "=3", "1X=2", "A B=1", "A-B"] {
        let msg = bad.parse::<Define>().unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("bad define '{bad}': write NAME or NAME=VALUE")),
            "{msg}"
        );
    }
    assert_eq!("NVCC".parse::<FrontEnd>(), Ok(FrontEnd::Nvcc));
    assert!("gcc"
        .parse::<FrontEnd>()
        .unwrap_err()
        .to_string()
        .contains("auto, nvrtc, nvcc, ptx"));
}

#[test]
fn ready_ptx_is_read_as_is_with_a_note_about_flag_sets() {
    let ptx = "//\n// Generated\n.version 8.7\n.target sm_89\n.address_size 64\n";
    let mut r = request("k.ptx", ptx);
    r.flags = FlagSet::STRICT;
    let built = Builder::new().build(&r).unwrap();
    assert_eq!(built.ptx, ptx);
    assert_eq!(
        built.choice.to_string(),
        "ready PTX .version 8.7: the file is PTX, read as is"
    );
    let f = &built.facts;
    assert_eq!(
        (f.front_end.as_str(), f.front_end_version.as_str()),
        ("ptx", "8.7")
    );
    assert_eq!((f.flags.as_str(), f.arch.as_str()), ("unknown", "sm_89"));
    assert!(
        f.notes[0].contains("flag sets, -D and -I cannot change it"),
        "{:?}",
        f.notes
    );
    assert_eq!(f.notes[1], "flag set strict was asked for and not applied");
    let json = serde_json::to_value(f).unwrap();
    assert_eq!(json["reason"], "the file is PTX, read as is");
    assert!(
        json.get("compiler").is_none(),
        "absent fields are left out: {json}"
    );
}

#[test]
fn choices_say_front_end_program_and_reason() {
    let c = FrontEndChoice {
        front_end: FrontEnd::Nvcc,
        version: Some("13.0".into()),
        program: Some("/usr/local/cuda/bin/nvcc".into()),
        reason: Reason::HostCode(HostCode {
            what: "main".into(),
            header: false,
            file: None,
            line: 88,
        }),
    };
    assert_eq!(
        c.to_string(),
        "nvcc 13.0 (/usr/local/cuda/bin/nvcc): the file has host code (main at line 88)"
    );
}

/// The instructions of PTX: without line info, comments, DWARF sections and blank lines.
pub(crate) fn instructions(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_section = false;
    for line in ptx.lines() {
        let t = line.trim();
        if in_section {
            in_section = t != "}";
            continue;
        }
        if t.starts_with(".section") {
            in_section = !t.ends_with('}');
            continue;
        }
        if t.is_empty() || t.starts_with("//") || t.starts_with(".loc") || t.starts_with(".file") {
            continue;
        }
        out.push(t.to_string());
    }
    out
}

/// A kernel with math calls on known lines (3 and 4) for the marking tests.
const UNITS_SRC: &str = "extern \"C\" __global__ void units(const double* x, double* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  double a = exp(x[i]);\n  double b = log1p(x[i]) * SCALE;\n  if (i < n) y[i] = a + b;\n}\n";

fn units_request(dir: &Path, front_end: FrontEnd, units: Option<Vec<u32>>) -> BuildRequest {
    let file = dir.join("units.cu");
    std::fs::write(&file, UNITS_SRC).unwrap();
    let mut r = BuildRequest::new(file);
    r.defines.push("SCALE=2.0".parse().unwrap());
    r.front_end = Some(front_end);
    r.units = units;
    r
}

fn check_marking(front_end: FrontEnd, builder: &Builder) {
    let dir = scratch_dir(&format!("units-{front_end}"));
    let plain = builder
        .build(&units_request(&dir, front_end, None))
        .unwrap();
    let marked = builder
        .build(&units_request(&dir, front_end, Some(vec![])))
        .unwrap();
    assert_eq!(
        instructions(&plain.ptx),
        instructions(&marked.ptx),
        "{front_end}: marking must not change the instructions"
    );
    assert!(
        marked
            .facts
            .options
            .iter()
            .any(|o| o.contains(UNITS_HEADER_NAME)),
        "{:?}",
        marked.facts.options
    );
    let demoted = builder
        .build(&units_request(&dir, front_end, Some(vec![3])))
        .unwrap();
    assert_ne!(
        instructions(&plain.ptx),
        instructions(&demoted.ptx),
        "{front_end}: line 3 demoted"
    );
    assert!(
        demoted.ptx.contains("cvt.rn.f32.f64"),
        "{front_end}: {}",
        demoted.ptx
    );
    assert_ne!(
        demoted.facts.source_hash, marked.facts.source_hash,
        "the demoted lines are in the hash"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nvrtc_marked_build_has_the_same_instructions() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    check_marking(FrontEnd::Nvrtc, &Builder::new().with_nvrtc(Ok(c)));
}

#[test]
fn nvcc_marked_build_has_the_same_instructions() {
    let Some(n) = require_nvcc_or_skip() else {
        return;
    };
    let b = Builder::new().with_nvcc(Ok(Nvcc::at(n.path(), n.origin())
        .unwrap()
        .with_cache(crate::CompileCache::in_memory())));
    check_marking(FrontEnd::Nvcc, &b);
}

/// A device-only program with a local header found through `-I` and a `-D` value.
fn device_only_dir(tag: &str) -> (PathBuf, BuildRequest) {
    let dir = scratch_dir(tag);
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("inc/local.h"), APP_LOCAL).unwrap();
    let file = dir.join("k.cu");
    std::fs::write(&file, DEVICE_ONLY).unwrap();
    let mut r = BuildRequest::new(file);
    r.include_dirs.push(dir.join("inc"));
    r.defines.push("SCALE=0.5".parse().unwrap());
    (dir, r)
}

#[test]
fn nvrtc_builds_with_include_dirs_and_defines() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    let (dir, r) = device_only_dir("nvrtc-i-d");
    let b = Builder::new().with_nvrtc(Ok(c.clone()));
    let built = b.build(&r).unwrap();
    assert_eq!(built.choice.front_end, FrontEnd::Nvrtc);
    assert_eq!(built.choice.reason, Reason::DeviceOnly);
    assert!(
        built
            .choice
            .to_string()
            .starts_with(&format!("NVRTC {} (", c.version())),
        "{}",
        built.choice
    );
    assert!(built.ptx.contains(".entry k("), "{}", built.ptx);
    assert!(
        built.ptx.contains("0d3FE0000000000000"),
        "SCALE=0.5 reached the code: {}",
        built.ptx
    );
    assert!(built
        .facts
        .options
        .contains(&format!("-I{}", dir.join("inc").display())));
    assert!(built.facts.options.contains(&"-DSCALE=0.5".to_string()));
    assert_eq!(built.facts.front_end, "nvrtc");
    assert_eq!(
        built.facts.compiler.as_deref(),
        Some(c.library().path.display().to_string().as_str())
    );

    // A host header under NVRTC (asked for explicitly) says to use nvcc.
    let mut host = request("app.cu", APP);
    host.front_end = Some(FrontEnd::Nvrtc);
    let msg = b.build(&host).unwrap_err().to_string();
    assert!(
        msg.starts_with("NVRTC cannot compile app.cu: it cannot open <stdio.h>"),
        "{msg}"
    );
    assert!(
        msg.contains(crate::nvcc::NVCC_PIP_INSTALL)
            && msg.contains("nvcc -ptx -lineinfo -arch=sm_90 app.cu -o app.ptx"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    // A missing local header is NVRTC's own error (add -I), not a call for nvcc.
    let mut local = request("k.cu", "#include \"nowhere.h\"\n__global__ void k() {}\n");
    local.front_end = Some(FrontEnd::Nvrtc);
    let err = b.build(&local).unwrap_err();
    assert!(matches!(err.inner(), BuildError::Compile(_)), "{err}");
    // The whole log is kept in a file the message names.
    let log_file = err.log_file().expect("a log file");
    assert!(
        err.to_string()
            .ends_with(&format!("; whole log: {}", log_file.display())),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(log_file).ok().as_deref(), err.log());
    assert!(err.to_string().contains("nowhere.h"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_headers_are_read_from_the_log_for_angle_includes_only() {
    let log = "app.cu(4): catastrophic error: could not open source file \"stdio.h\" (no directories in search list)\n";
    assert_eq!(
        missing_header(log, "#include <stdio.h>\n"),
        Some("stdio.h".into())
    );
    assert_eq!(missing_header(log, "#include \"stdio.h\"\n"), None);
    assert_eq!(
        missing_header("error: expected a ;", "#include <stdio.h>"),
        None
    );
}

fn nvcc_builder() -> Option<Builder> {
    let n = require_nvcc_or_skip()?;
    let nvcc = Nvcc::at(n.path(), n.origin())
        .unwrap()
        .with_cache(crate::CompileCache::in_memory());
    Some(Builder::new().with_nvcc(Ok(nvcc)))
}

#[test]
fn nvcc_compiles_the_realistic_program() {
    let Some(b) = nvcc_builder() else { return };
    let dir = app_dir("nvcc-app");
    let r = BuildRequest::new(dir.join("app.cu"));
    let built = b.build(&r).unwrap();
    let nvcc = b.nvcc().unwrap();
    assert_eq!(
        built.choice.to_string(),
        format!(
            "nvcc {} ({}): the file includes <stdio.h> at line 4",
            nvcc.version(),
            nvcc.path().display()
        )
    );
    let module = mantissa_ptx::parse(&built.ptx).module;
    let kernels: Vec<&str> = module.kernels().map(|k| k.name.as_str()).collect();
    assert_eq!(
        kernels,
        [
            "poly",
            "smooth",
            "_Z4axpyIfEvT_PKS0_PS0_i",
            "_Z4axpyIdEvT_PKS0_PS0_i"
        ]
    );
    let symbols = crate::symbols_of_ptx(&built.ptx);
    let sizes: Vec<(&str, &str, Option<u64>)> = symbols
        .iter()
        .map(|s| (s.name.as_str(), s.space.as_str(), s.bytes))
        .collect();
    assert_eq!(
        sizes,
        [("coef", "const", Some(32)), ("params", "global", Some(24))]
    );
    assert!(built.ptx.contains(".loc"), "-lineinfo");
    let f = &built.facts;
    assert_eq!(f.front_end, "nvcc");
    assert_eq!(f.front_end_version, nvcc.release());
    assert_eq!(f.arch, "sm_90");
    assert_eq!(&f.options[..3], ["-ptx", "-arch=sm_90", "-lineinfo"]);
    assert_eq!(
        f.compiler.as_deref(),
        Some(nvcc.path().display().to_string().as_str())
    );
    // The local header is part of the hash: changing it rebuilds.
    let (_, hit) = nvcc
        .compile_traced(
            &r.nvcc_source(APP).unwrap(),
            FlagSet::DEFAULT,
            Arch::new(9, 0),
        )
        .unwrap();
    assert_eq!(hit, Some(CacheHit::Memory));
    std::fs::write(dir.join("local.h"), APP_LOCAL.replace("128", "256")).unwrap();
    let rebuilt = b.build(&r).unwrap();
    assert_eq!(rebuilt.cache_hit, None);
    assert_ne!(rebuilt.facts.source_hash, f.source_hash);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nvcc_builds_with_include_dirs_and_defines() {
    let Some(b) = nvcc_builder() else { return };
    let (dir, mut r) = device_only_dir("nvcc-i-d");
    r.front_end = Some(FrontEnd::Nvcc);
    let built = b.build(&r).unwrap();
    assert_eq!(built.choice.reason, Reason::Asked);
    assert!(
        built.ptx.contains("0d3FE0000000000000"),
        "SCALE=0.5 reached the code: {}",
        built.ptx
    );
    assert!(built.facts.options.contains(&"-DSCALE=0.5".to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Contraction, division and square root, each on its own line (as NVRTC's flag-set test).
const ARITH: &str = "extern \"C\" __global__ void arith(float* out, const float* a, const float* b, const float* c) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    out[3 * i + 0] = a[i] * b[i] + c[i];\n    out[3 * i + 1] = a[i] / b[i];\n    out[3 * i + 2] = sqrtf(c[i]);\n}\n";

#[test]
fn nvcc_flag_sets_change_the_ptx_as_documented() {
    let Some(b) = nvcc_builder() else { return };
    let dir = scratch_dir("nvcc-flags");
    std::fs::write(dir.join("arith.cu"), ARITH).unwrap();
    let ptx = |flags: FlagSet| {
        let mut r = BuildRequest::new(dir.join("arith.cu"));
        r.flags = flags;
        r.front_end = Some(FrontEnd::Nvcc);
        let built = b.build(&r).unwrap_or_else(|e| panic!("{e}"));
        for o in flags.nvcc_options() {
            assert!(
                built.facts.options.iter().any(|x| x == o),
                "{flags}: {o} not passed"
            );
        }
        built.ptx
    };
    let has = |ptx: &str, needle: &str| ptx.lines().any(|l| l.trim_start().starts_with(needle));
    let default = ptx(FlagSet::DEFAULT);
    assert!(
        has(&default, "fma.rn.f32") && has(&default, "div.rn.f32") && has(&default, "sqrt.rn.f32"),
        "{default}"
    );
    for set in [FlagSet::STRICT, FlagSet::NOFMA] {
        let p = ptx(set);
        assert!(
            !has(&p, "fma.") && has(&p, "mul.rn.f32") && has(&p, "div.rn.f32"),
            "{set}: {p}"
        );
    }
    let fast = ptx(FlagSet::FAST);
    assert!(
        has(&fast, "sqrt.approx") && fast.contains(".ftz.f32"),
        "{fast}"
    );
    let ftz = ptx(FlagSet::FTZ);
    assert!(
        has(&ftz, "fma.rn.ftz.f32") && has(&ftz, "div.rn.ftz.f32"),
        "{ftz}"
    );
    let approx_div = ptx(FlagSet::APPROX_DIV);
    assert!(
        has(&approx_div, "div.full.f32") || has(&approx_div, "div.approx.f32"),
        "{approx_div}"
    );
    assert!(has(&ptx(FlagSet::APPROX_SQRT), "sqrt.approx.f32"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A host helper without host headers: the scan sees device code only, NVRTC refuses the helper
/// and advises its `-default-device`, which mantissa does not offer.
const HOST_HELPER: &str = "void check(int code)\n{\n    if (code != 0) {\n        throw code;\n    }\n}\n\n__global__ void twice(float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * y[i];\n}\n";

#[test]
fn a_host_helper_nvrtc_refuses_moves_to_nvcc() {
    let (Some(c), Some(n)) = (require_nvrtc_or_skip(), require_nvcc_or_skip()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-fe-helper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("helper.cu");
    std::fs::write(&file, HOST_HELPER).unwrap();
    let b = Builder::new()
        .with_nvrtc(Ok(c))
        .with_nvcc(Ok(Nvcc::at(n.path(), n.origin())
            .unwrap()
            .with_cache(crate::CompileCache::in_memory())));
    let built = b.build(&BuildRequest::new(&file)).unwrap();
    assert_eq!(built.choice.front_end, FrontEnd::Nvcc);
    let why = built.choice.reason.to_string();
    assert!(
        why.starts_with("NVRTC refused host code (A function without execution space annotations")
            && why.ends_with("so nvcc, which compiles host code, built it"),
        "{why}"
    );
    assert!(built.ptx.contains(".entry"), "{}", built.ptx);
    // Asked for NVRTC by name, the refusal stands.
    let mut r = BuildRequest::new(&file);
    r.front_end = Some(FrontEnd::Nvrtc);
    assert!(b.build(&r).is_err());
}
