//! Fatbins, cubins, host executables and a shared library built by nvcc, read by this crate and
//! checked against independent oracles: `cuobjdump -xptx`/`-xelf` (the extracted PTX and cubins,
//! byte for byte), what `cuobjdump` prints (identifier, ptxas options), and `nvcc -ptx`'s output
//! of the same source, brought to the form `fatbinary` stores (comments and indentation
//! stripped, runs of blanks collapsed: `fatbinary` does that, so the stored PTX is never
//! `nvcc -ptx`'s byte for byte).
//!
//! Everything is built once per process, in parallel (14 nvcc calls, 7 to 13 s on two cores).
//! Without nvcc (or cuobjdump) the tests print why and pass, unless `MANTISSA_REQUIRE_NVCC=1`
//! (CI), as `mantissa_gpu::testing::require_nvcc_or_skip` does; a host executable that cannot be
//! linked (no `libcudart_static.a`, no host compiler) is a skip with nvcc's message, likewise.

use mantissa_fatbin::{
    entries, host_fatbins, image, image_at, ptx_for, Compression, Entry, EntryKind, ImageKind,
    WRAPPER_MAGIC,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SOURCE: &str = include_str!("../fixtures/axpy.cu");
const APP: &str = "#include <cstdio>\n#include \"axpy.cu\"\nint main() {\n  double *x;\n  \
                   if (cudaMalloc(&x, 8) != cudaSuccess) { printf(\"no device\\n\"); return 0; }\n  \
                   axpy<<<1, 1>>>(2.0, x, x, 1);\n  cudaDeviceSynchronize();\n  return 0;\n}\n";
const GENCODE: [&str; 4] = [
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_90,code=compute_90",
];

/// The compression modes nvcc 13 offers, the file each is built into, its extra flags, and the
/// algorithm expected for the PTX and for the cubin entry.
const MODES: [(&str, &[&str], Compression, Compression); 6] = [
    ("default", &[], Compression::Zstd, Compression::None),
    (
        "balance",
        &["--compress-mode=balance"],
        Compression::Zstd,
        Compression::None,
    ),
    (
        "size",
        &["--compress-mode=size"],
        Compression::Zstd,
        Compression::Zstd,
    ),
    (
        "speed",
        &["--compress-mode=speed"],
        Compression::Lz4,
        Compression::None,
    ),
    (
        "none",
        &["--compress-mode=none"],
        Compression::None,
        Compression::None,
    ),
    (
        "all",
        &["-Xfatbin=-compress-all"],
        Compression::Zstd,
        Compression::Zstd,
    ),
];

/// What was built, in `dir`; `link_error` says why host programs could not be linked.
struct Built {
    dir: PathBuf,
    cuobjdump: PathBuf,
    link_error: Option<String>,
}

impl Built {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// Prints why the calling test skips, or fails it where nvcc is required (the convention of
/// `mantissa_gpu::testing::skip_or_fail`, without depending on the GPU crate).
fn skip(reason: &str) {
    let name = std::thread::current().name().unwrap_or("?").to_string();
    if std::env::var("MANTISSA_REQUIRE_NVCC").is_ok_and(|v| v == "1") {
        panic!("{name}: MANTISSA_REQUIRE_NVCC=1 but {reason}");
    }
    let _ = writeln!(std::io::stderr(), "test {name}: skipped: {reason}");
}

/// The artefacts, built on first use; `None` after printing why the test skips.
fn built() -> Option<&'static Built> {
    static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
    match BUILT.get_or_init(build_all) {
        Ok(b) => Some(b),
        Err(reason) => {
            skip(reason);
            None
        }
    }
}

/// `-L` options for the CUDA runtime beside nvcc (`../lib`, `../lib64`), with a `libcudart.so`
/// link made in `dir` where only `libcudart.so.N` is there (the pip wheel ships no unversioned
/// name, so `-cudart shared` cannot find it otherwise).
fn library_options(nvcc: &Path, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Some(root) = nvcc.parent().and_then(Path::parent) else {
        return out;
    };
    for lib in [root.join("lib"), root.join("lib64")] {
        if !lib.is_dir() {
            continue;
        }
        out.push(format!("-L{}", lib.display()));
        if lib.join("libcudart.so").exists() {
            continue;
        }
        let versioned = std::fs::read_dir(&lib).ok().and_then(|entries| {
            entries.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("libcudart.so."))
            })
        });
        if let Some(v) = versioned {
            let link = dir.join("libcudart.so");
            if std::os::unix::fs::symlink(&v, &link).is_ok() {
                out.push(format!("-L{}", dir.display()));
            }
        }
    }
    out
}

/// Builds every artefact in a fresh directory (nvcc calls in parallel).
fn build_all() -> Result<Built, String> {
    let nvcc = mantissa_ptx::tools::cuda_tool("nvcc").ok_or("no nvcc found")?;
    let cuobjdump = mantissa_ptx::tools::cuda_tool("cuobjdump").ok_or("no cuobjdump found")?;
    // Under cargo's scratch directory for integration tests, replaced by each run.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fatbin-nvcc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(dir.join("axpy.cu"), SOURCE).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("app.cu"), APP).map_err(|e| e.to_string())?;
    let libs = library_options(&nvcc, &dir);
    let mut jobs: Vec<(String, Vec<String>)> = Vec::new();
    let mut job = |out: &str, args: &[&str]| {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["-o".to_string(), out.to_string()]);
        jobs.push((out.to_string(), a));
    };
    job("axpy.ptx", &["-ptx", "-arch=compute_90", "axpy.cu"]);
    job("axpy.cubin", &["-cubin", "-arch=sm_90", "axpy.cu"]);
    for (mode, flags, _, _) in MODES {
        let mut a = vec!["-fatbin"];
        a.extend(GENCODE);
        a.extend(flags.iter().copied());
        a.push("axpy.cu");
        job(&format!("{mode}.fatbin"), &a);
    }
    let multi = [
        "-fatbin",
        "-gencode",
        "arch=compute_75,code=compute_75",
        "-gencode",
        "arch=compute_80,code=compute_80",
        "-gencode",
        "arch=compute_90a,code=[sm_90a,compute_90a]",
        "-gencode",
        "arch=compute_100f,code=compute_100f",
        "-gencode",
        "arch=compute_120,code=sm_120",
        "axpy.cu",
    ];
    job("multi.fatbin", &multi);
    job(
        "sass.fatbin",
        &[
            "-fatbin",
            "-gencode",
            "arch=compute_90,code=sm_90",
            "axpy.cu",
        ],
    );
    let mut debug = vec!["-fatbin", "-G"];
    debug.extend(GENCODE);
    debug.push("axpy.cu");
    job("debug.fatbin", &debug);
    let lib_args: Vec<&str> = libs.iter().map(String::as_str).collect();
    let host = |extra: &[&'static str], src: &'static str| {
        let mut a: Vec<&str> = GENCODE.to_vec();
        a.extend(extra);
        a.extend(&lib_args);
        a.push(src);
        a
    };
    job("app_static", &host(&["-cudart", "static"], "app.cu"));
    job("app_shared", &host(&["-cudart", "shared"], "app.cu"));
    job(
        "libaxpy.so",
        &host(&["-shared", "-Xcompiler", "-fPIC"], "axpy.cu"),
    );
    let results: Vec<(String, Result<(), String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(out, args)| {
                let (nvcc, dir) = (&nvcc, &dir);
                (out.clone(), s.spawn(move || run(nvcc, dir, args)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(o, h)| (o, h.join().unwrap_or_else(|_| Err("panicked".into()))))
            .collect()
    });
    let mut link_error = None;
    for (out, result) in results {
        match (result, out.starts_with("app_") || out.ends_with(".so")) {
            (Ok(()), _) => {}
            (Err(e), true) => link_error = Some(format!("nvcc cannot link {out} here: {e}")),
            (Err(e), false) => return Err(format!("nvcc failed to build {out}: {e}")),
        }
    }
    Ok(Built {
        dir,
        cuobjdump,
        link_error,
    })
}

/// Runs `tool args` in `dir`; `Err` with the last lines of its output when it fails.
fn run(tool: &Path, dir: &Path, args: &[String]) -> Result<(), String> {
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Err(tail.into_iter().rev().collect::<Vec<_>>().join(" / "))
}

/// What `cuobjdump -xptx all` (`what` = "ptx") or `-xelf all` ("elf") extracts from `file`, in
/// the order it lists them.
fn cuobjdump_extract(b: &Built, file: &str, what: &str) -> Vec<Vec<u8>> {
    let dir = b.dir.join(format!("x-{file}-{what}"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(&b.cuobjdump)
        .arg(format!("-x{what}"))
        .arg("all")
        .arg(b.path(file))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "cuobjdump -x{what} {file}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("Extracting"))
        .map(|l| {
            let name = l
                .split(": ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .unwrap();
            std::fs::read(dir.join(name)).unwrap()
        })
        .collect()
}

/// What `cuobjdump` prints for `file`, as text.
fn cuobjdump_text(b: &Built, file: &str) -> String {
    let out = Command::new(&b.cuobjdump)
        .arg(b.path(file))
        .output()
        .unwrap();
    assert!(out.status.success(), "cuobjdump {file}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `nvcc -ptx`'s text as `fatbinary` stores it: comments cut, runs of blanks one space, no
/// indentation.
fn as_stored(ptx: &str) -> String {
    ptx.split('\n')
        .map(|line| {
            let code = line.find("//").map_or(line, |i| &line[..i]);
            code.split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
                + if code.ends_with([' ', '\t']) && !code.trim().is_empty() {
                    " "
                } else {
                    ""
                }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn of_kind(es: &[Entry], kind: EntryKind) -> Vec<&Entry> {
    es.iter().filter(|e| e.kind == kind).collect()
}

#[test]
fn every_compression_mode_gives_cuobjdumps_ptx_and_cubins() {
    let Some(b) = built() else { return };
    let expected_ptx = as_stored(&String::from_utf8(b.read("axpy.ptx")).unwrap());
    for (mode, _, ptx_compression, cubin_compression) in MODES {
        let file = format!("{mode}.fatbin");
        let bytes = b.read(&file);
        let img = image(&bytes).unwrap();
        assert_eq!(
            (img.kind, img.bytes.len()),
            (ImageKind::Fatbin, bytes.len()),
            "{mode}"
        );
        let es = entries(&bytes).unwrap();
        let ptx = of_kind(&es, EntryKind::Ptx);
        let cubins = of_kind(&es, EntryKind::Cubin);
        assert_eq!((ptx.len(), cubins.len()), (1, 1), "{mode}");
        assert_eq!(ptx[0].compression, ptx_compression, "{mode}: PTX");
        assert_eq!(cubins[0].compression, cubin_compression, "{mode}: cubin");
        assert_eq!((ptx[0].arch, cubins[0].arch), (90, 90));
        let extracted = cuobjdump_extract(b, &file, "ptx");
        assert_eq!(
            extracted,
            vec![ptx[0].payload.clone()],
            "{mode}: cuobjdump -xptx"
        );
        assert_eq!(ptx[0].payload, expected_ptx.as_bytes(), "{mode}: nvcc -ptx");
        let extracted = cuobjdump_extract(b, &file, "elf");
        assert_eq!(
            extracted,
            vec![cubins[0].payload.clone()],
            "{mode}: cuobjdump -xelf"
        );
        assert_eq!(
            ptx_for(&img, 90).unwrap().as_deref(),
            Some(expected_ptx.as_str())
        );
    }
}

#[test]
fn ptx_for_picks_the_ptx_the_driver_would_jit() {
    let Some(b) = built() else { return };
    let bytes = b.read("multi.fatbin");
    let es = entries(&bytes).unwrap();
    let ptx: Vec<Vec<u8>> = of_kind(&es, EntryKind::Ptx)
        .iter()
        .map(|e| e.payload.clone())
        .collect();
    assert_eq!(ptx, cuobjdump_extract(b, "multi.fatbin", "ptx"));
    let cubins: Vec<Vec<u8>> = of_kind(&es, EntryKind::Cubin)
        .iter()
        .map(|e| e.payload.clone())
        .collect();
    assert_eq!(cubins, cuobjdump_extract(b, "multi.fatbin", "elf"));
    let img = image(&bytes).unwrap();
    let target = |arch| {
        ptx_for(&img, arch).unwrap().map(|t| {
            let line = t
                .lines()
                .find(|l| l.starts_with(".target"))
                .unwrap()
                .to_string();
            line.trim_start_matches(".target ").to_string()
        })
    };
    assert_eq!(target(70), None);
    assert_eq!(target(75).as_deref(), Some("sm_75"));
    assert_eq!(target(86).as_deref(), Some("sm_80"));
    assert_eq!(target(89).as_deref(), Some("sm_80"));
    assert_eq!(target(90).as_deref(), Some("sm_90a"));
    assert_eq!(target(100).as_deref(), Some("sm_100f"));
    assert_eq!(target(103).as_deref(), Some("sm_100f"));
    assert_eq!(target(120).as_deref(), Some("sm_80"));
}

#[test]
fn a_sass_only_build_has_no_ptx() {
    let Some(b) = built() else { return };
    let bytes = b.read("sass.fatbin");
    let es = entries(&bytes).unwrap();
    assert!(!es.is_empty() && es.iter().all(|e| e.kind == EntryKind::Cubin));
    assert_eq!(ptx_for(&image(&bytes).unwrap(), 90).unwrap(), None);
    assert!(cuobjdump_extract(b, "sass.fatbin", "ptx").is_empty());
}

#[test]
fn a_debug_build_carries_its_identifier_and_ptxas_options() {
    let Some(b) = built() else { return };
    let bytes = b.read("debug.fatbin");
    let es = entries(&bytes).unwrap();
    let text = cuobjdump_text(b, "debug.fatbin");
    let printed = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .collect()
    };
    let identifiers: Vec<String> = es.iter().filter_map(|e| e.identifier.clone()).collect();
    assert_eq!(identifiers, printed("identifier = "));
    let options: Vec<String> = es.iter().filter_map(|e| e.ptxas_options.clone()).collect();
    assert_eq!(options, printed("ptxasOptions = "));
    assert!(es.iter().all(|e| e.debug && e.is_64bit));
    let ptx = of_kind(&es, EntryKind::Ptx);
    assert_eq!(
        vec![ptx[0].payload.clone()],
        cuobjdump_extract(b, "debug.fatbin", "ptx")
    );
}

#[test]
fn image_at_reads_nvccs_output_of_each_kind() {
    let Some(b) = built() else { return };
    let fatbin = b.read("default.fatbin");
    let mut padded = fatbin.clone();
    padded.extend_from_slice(&[0x5A; 256]);
    let img = unsafe { image_at(padded.as_ptr()) }.unwrap();
    assert_eq!((img.kind, img.bytes), (ImageKind::Fatbin, &fatbin[..]));
    let mut wrapper = [0u8; 24];
    wrapper[..4].copy_from_slice(&WRAPPER_MAGIC.to_le_bytes());
    wrapper[4..8].copy_from_slice(&1u32.to_le_bytes());
    wrapper[8..16].copy_from_slice(&(padded.as_ptr() as u64).to_le_bytes());
    let img = unsafe { image_at(wrapper.as_ptr()) }.unwrap();
    assert_eq!((img.kind, img.bytes), (ImageKind::Fatbin, &fatbin[..]));
    let cubin = b.read("axpy.cubin");
    let mut padded = cubin.clone();
    padded.extend_from_slice(&[0x5A; 256]);
    let img = unsafe { image_at(padded.as_ptr()) }.unwrap();
    assert_eq!((img.kind, img.bytes), (ImageKind::Elf, &cubin[..]));
    assert_eq!(ptx_for(&img, 90).unwrap(), None);
    let ptx = b.read("axpy.ptx");
    let mut text = ptx.clone();
    text.extend_from_slice(b"\0\x5A\x5A");
    let img = unsafe { image_at(text.as_ptr()) }.unwrap();
    assert_eq!((img.kind, img.bytes), (ImageKind::Ptx, &ptx[..]));
    assert_eq!(
        ptx_for(&img, 90).unwrap().map(String::into_bytes),
        Some(ptx)
    );
}

/// The in-file range of the section named `name` of the ELF file `elf` (64-bit, little-endian).
fn section(elf: &[u8], name: &str) -> Option<(usize, usize)> {
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([elf[o], elf[o + 1]]));
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) = (u64_at(40), u16_at(58), u16_at(60), u16_at(62));
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 24);
    (0..shnum).find_map(|i| {
        let h = header(i);
        let at = names + u32_at(h);
        let end = at + elf[at..].iter().position(|&c| c == 0)?;
        (&elf[at..end] == name.as_bytes()).then(|| (u64_at(h + 24), u64_at(h + 32)))
    })
}

/// Checks `host_fatbins` on the host binary `file`: the PTX and cubins of its fatbins are
/// cuobjdump's, `ptx_for` gives `nvcc -ptx`'s text, and the same fatbins are found through the
/// wrappers alone (`.nv_fatbin` renamed) and through their relocations (pointers zeroed).
fn check_host_binary(b: &Built, file: &str) {
    let bytes = b.read(file);
    let fatbins = host_fatbins(&bytes).unwrap();
    assert!(!fatbins.is_empty(), "{file}");
    let mut ptx = Vec::new();
    let mut cubins = Vec::new();
    let mut jit = Vec::new();
    for f in &fatbins {
        for e in entries(f).unwrap() {
            match e.kind {
                EntryKind::Ptx => ptx.push(e.payload),
                _ => cubins.push(e.payload),
            }
        }
        jit.extend(ptx_for(&image(f).unwrap(), 90).unwrap());
    }
    assert_eq!(ptx, cuobjdump_extract(b, file, "ptx"), "{file}: PTX");
    assert_eq!(cubins, cuobjdump_extract(b, file, "elf"), "{file}: cubins");
    let expected = as_stored(&String::from_utf8(b.read("axpy.ptx")).unwrap());
    assert_eq!(jit, vec![expected], "{file}: ptx_for");
    let ranges: Vec<(usize, usize)> = fatbins
        .iter()
        .map(|f| (f.as_ptr() as usize - bytes.as_ptr() as usize, f.len()))
        .collect();

    let mut renamed = bytes.clone();
    let (names, _) = section(&bytes, ".shstrtab").unwrap();
    let at = names
        + renamed[names..]
            .windows(11)
            .position(|w| w == b".nv_fatbin\0")
            .unwrap();
    renamed[at + 9] = b'X';
    let (seg, seg_len) = section(&renamed, ".nvFatBinSegment").unwrap();
    let found = |elf: &[u8]| -> Vec<(usize, usize)> {
        let base = elf.as_ptr() as usize;
        host_fatbins(elf)
            .unwrap()
            .iter()
            .map(|f| (f.as_ptr() as usize - base, f.len()))
            .collect()
    };
    assert_eq!(found(&renamed), ranges, "{file}: through the wrappers");
    for w in (seg..seg + seg_len).step_by(24) {
        renamed[w + 8..w + 16].fill(0);
    }
    assert_eq!(found(&renamed), ranges, "{file}: through the relocations");
}

#[test]
fn host_executables_static_and_shared_runtime() {
    let Some(b) = built() else { return };
    if let Some(e) = &b.link_error {
        return skip(e);
    }
    check_host_binary(b, "app_static");
    check_host_binary(b, "app_shared");
}

#[test]
fn a_shared_library() {
    let Some(b) = built() else { return };
    if let Some(e) = &b.link_error {
        return skip(e);
    }
    check_host_binary(b, "libaxpy.so");
}
