//! `mantissa run --check` without a GPU: the program is built by NVRTC and every check a run
//! makes before anything runs is made against its PTX. One test per error kind of
//! docs/SPEC.md's lists; the messages are the ones printed there.

use mantissa_gpu::{Builder, FlagSet, HostData};
use mantissa_harness::check::{check, CheckError, CheckReport};
use mantissa_harness::Spec;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

const KERNEL: &str = include_str!("../fixtures/check/kernel.cu");

/// A fresh directory with the fixture program and a few `.npy` files.
fn workdir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "mantissa-check-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::write(d.join("kernel.cu"), KERNEL).unwrap();
    let npy = |name: &str, data: HostData| {
        mantissa_harness::npy::write(&d.join("data").join(name), &data).unwrap()
    };
    npy("x_f8.npy", HostData::F64(vec![1.0, 2.0, 3.0, 4.0]));
    npy("x_f4.npy", HostData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    npy("y3.npy", HostData::F32(vec![1.0, 2.0, 3.0]));
    d
}

/// Checks the spec `[source]` + `[sizes] n = 4` + buffers x, y (f32, 4) + `body` + an output y,
/// laid out as in docs/SPEC.md's examples (so the line numbers are those printed there).
fn run_check(body: &str) -> Option<Result<CheckReport, String>> {
    mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let d = workdir();
    let p = d.join("t.toml");
    let text = format!("[source]\nfile = \"kernel.cu\"\n[sizes]\nn = 4\n[buffers.x]\ntype = \"f32\"\nlen = 4\n[buffers.y]\ntype = \"f32\"\nlen = 4\n{body}\n[[outputs]]\nbuffer = \"y\"\n");
    std::fs::write(&p, text).unwrap();
    let strip = |e: String| e.replace(&format!("{}/", d.display()), "");
    let spec = match Spec::load(&p) {
        Ok(s) => s,
        Err(e) => return Some(Err(strip(e.to_string()))),
    };
    let result = check(
        &spec,
        &[FlagSet::DEFAULT, FlagSet::FAST],
        &Builder::new(),
        None,
    );
    Some(result.map_err(|e| strip(e.to_string())))
}

fn error(body: &str) -> Option<String> {
    run_check(body).map(|r| r.expect_err("the check should fail"))
}

const SAXPY: &str = "[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\n";

#[test]
fn a_good_spec_checks_under_every_flag_set() {
    let Some(r) = run_check(&format!("[symbols.coef]\ntype = \"f64\"\nvalue = [1.0, 2.0, 3.0]\n[symbols.params]\ntype = \"f64\"\nvalue = [0.0, 0.5, 1.0]\n{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n[[steps]]\nrepeat = 3\ncounter = \"t\"\nsteps = [{{ launch = \"stencil\", grid = 1, block = 4, args = [\"u\", \"v\", \"n\", \"t\"] }}]\n[buffers.u]\ntype = \"f64\"\nlen = 4\n[buffers.v]\ntype = \"f64\"\nlen = 4\n")) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.flag_sets, [FlagSet::DEFAULT, FlagSet::FAST]);
    assert_eq!(
        (r.launches, r.kernels.as_slice()),
        (
            2,
            ["saxpy".to_string(), "_Z7stencilPdS_ii".to_string()].as_slice()
        )
    );
    assert_eq!(
        r.symbols,
        [
            ("coef".to_string(), ".const".to_string(), 24),
            ("_ZN2ns6paramsE".to_string(), ".global".to_string(), 24)
        ]
    );
    assert!(r.front_end.starts_with("NVRTC"), "{}", r.front_end);
    assert_eq!((r.buffers, r.outputs, r.references), (4, 1, 0));
    assert_eq!(
        r.notes,
        ["kernels declared extern \"C\" have no parameter types in their names, so their buffers' element types are not checked: saxpy"]
    );
}

#[test]
fn an_unknown_kernel_lists_the_kernels() {
    let Some(e) = error(SAXPY.replace("saxpy", "saxpi").as_str()) else {
        return;
    };
    assert_eq!(e, "t.toml:12:10: steps[0].launch: found unknown kernel 'saxpi'; accepted a kernel of the program: saxpy, stencil (_Z7stencilPdS_ii)");
}

#[test]
fn the_argument_count_must_be_the_parameters() {
    let Some(e) = error(&format!("{SAXPY}args = [\"x\", 2.0, \"y\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:15:19: steps[0].args: found 3 arguments; accepted 4 arguments, the parameters of saxpy (.u64, .f32, .u64, .u32)");
}

#[test]
fn a_buffer_for_a_scalar_parameter_is_refused() {
    let Some(e) = error(&format!("{SAXPY}args = [\"x\", \"y\", \"y\", \"n\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:15:14: steps[0].args[1]: found buffer 'y' for parameter 2 (.f32); accepted a scalar for .f32 (a buffer needs a .u64/.b64 pointer parameter)");
    // A buffer for the `int n`: the issue's example.
    let Some(e) = error(&format!("{SAXPY}args = [\"x\", 2.0, \"y\", \"x\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:15:24: steps[0].args[3]: found buffer 'x' for parameter 4 (.u32); accepted a scalar for .u32 (a buffer needs a .u64/.b64 pointer parameter)");
}

#[test]
fn a_non_integer_for_an_integer_parameter_is_refused() {
    let Some(e) = error(&format!("{SAXPY}args = [\"x\", 2.0, \"y\", 2.5]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:15:24: steps[0].args[3]: found 2.5 = 2.5, not an integer, for a 32-bit integer parameter; accepted a value of the parameter's type (.u32; integers must be integral and in range)");
}

#[test]
fn an_explicit_type_must_be_the_parameters() {
    let Some(e) = error(&format!(
        "{SAXPY}args = [\"x\", {{ f64 = 2.0 }}, \"y\", 4]\n"
    )) else {
        return;
    };
    assert_eq!(e, "t.toml:15:14: steps[0].args[1]: found an explicit f64 for parameter 2 (.f32); accepted a value of the parameter's type (.f32)");
}

#[test]
fn a_symbol_must_have_its_size_in_the_ptx() {
    let Some(e) = error(&format!("[symbols.coef]\ntype = \"f32\"\nvalue = [1.0, 2.0, 3.0]\n{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:13:9: symbols.coef.value: found 12 bytes of values; accepted 24 bytes, the size of .const coef in the PTX");
}

#[test]
fn a_symbol_must_exist_in_the_ptx() {
    let Some(e) = error(&format!("[symbols.table]\ntype = \"f64\"\nvalue = [1.0]\n{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:11:1: symbols.table: found no variable 'table' in the PTX; accepted a __constant__ or __device__ variable of the program: coef (.const, 24 bytes), _ZN2ns6paramsE (.global, 24 bytes)");
}

/// The issue's third example: an f64 `.npy` for an f32 buffer, found before any build.
#[test]
fn an_npy_of_another_dtype_is_refused() {
    let Some(e) = error(&format!("[buffers.z]\ntype = \"f32\"\nlen = 4\ninit = {{ npy = \"data/x_f8.npy\" }}\n{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n")) else {
        return;
    };
    assert_eq!(e, "t.toml:14:8: buffers.z.init: found data/x_f8.npy: dtype <f8, expected <f4 (f32); accepted 4 values of f32");
}

#[test]
fn a_reference_must_have_the_compared_length() {
    let body = format!("{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n[[outputs]]\nbuffer = \"x\"\nreference = \"data/y3.npy\"");
    let Some(e) = error(&body) else {
        return;
    };
    assert_eq!(e, "t.toml:18:13: outputs.x.reference: found data/y3.npy: 3 elements of f32; accepted 4 elements of f32 or f64");
    // Three values are right for a view of three elements.
    let body = format!("{SAXPY}args = [\"x\", 2.0, \"y\", \"n\"]\n[[outputs]]\nbuffer = \"x\"\noffset = 1\nreference = \"data/y3.npy\"");
    let Some(r) = run_check(&body) else {
        return;
    };
    assert_eq!(r.unwrap().references, 1);
}

/// A program that does not compile is a build error (exit 1 in the CLI), with the log in a file.
#[test]
fn a_compile_error_names_the_log_file() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let d = workdir();
    std::fs::write(
        d.join("kernel.cu"),
        "__global__ void k(double* u) { u[0] = undefined_thing; }\n",
    )
    .unwrap();
    let p = d.join("t.toml");
    std::fs::write(&p, "[source]\nfile = \"kernel.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\n").unwrap();
    let spec = Spec::load(&p).unwrap();
    let e = check(&spec, &[], &Builder::new(), None).unwrap_err();
    let CheckError::Build(b) = &e else {
        panic!("{e}")
    };
    assert!(!e.no_compiler());
    assert!(
        e.to_string()
            .contains("identifier \"undefined_thing\" is undefined"),
        "{e}"
    );
    let log = std::fs::read_to_string(b.log_file().expect("a log file")).unwrap();
    assert!(log.contains("undefined_thing"), "{log}");
}

/// A saxpy launch with `shape` for its grid, block and shared lines.
fn shaped(shape: &str) -> String {
    format!("[[steps]]\nlaunch = \"saxpy\"\n{shape}\nargs = [\"x\", 2.0, \"y\", \"n\"]\n")
}

/// Launch shapes and dynamic shared memory against sm_90's limits (the check's default
/// architecture), one line each: the issue's eight values that used to pass.
#[test]
fn launch_shapes_are_checked_against_the_architecture() {
    let guide = "CUDA C Programming Guide, compute capability 9.0";
    let cases = [
        ("grid = -1\nblock = 4", format!("t.toml:13:8: steps[0].grid: found -1 (negative); accepted an integer from 1 to 2147483647 (the largest grid x dimension, {guide})")),
        ("grid = \"1/0\"\nblock = 4", "t.toml:13:10: steps[0].grid: found 1 / 0; accepted a nonzero divisor".to_string()),
        ("grid = 2.5\nblock = 4", format!("t.toml:13:8: steps[0].grid: found 2.5 (not an integer); accepted an integer from 1 to 2147483647 (the largest grid x dimension, {guide})")),
        ("grid = 5e9\nblock = 4", format!("t.toml:13:8: steps[0].grid: found 5000000000.0; accepted an integer from 1 to 2147483647 (the largest grid x dimension, {guide})")),
        ("grid = 1\nblock = 2048", format!("t.toml:14:9: steps[0].block: found 2048; accepted an integer from 1 to 1024 (the largest block x dimension, {guide})")),
        ("grid = 1\nblock = [64, 32]", format!("t.toml:14:10: steps[0].block: found a block of 64 x 32 x 1 = 2048 threads; accepted at most 1024 threads per block ({guide})")),
        ("grid = 1\nblock = 2.5", format!("t.toml:14:9: steps[0].block: found 2.5 (not an integer); accepted an integer from 1 to 1024 (the largest block x dimension, {guide})")),
        ("grid = [1, 1, 70000]\nblock = 4", format!("t.toml:13:15: steps[0].grid[2]: found 70000; accepted an integer from 1 to 65535 (the largest grid z dimension, {guide})")),
        ("grid = 1\nblock = [1, 1, 128]", format!("t.toml:14:16: steps[0].block[2]: found 128; accepted an integer from 1 to 64 (the largest block z dimension, {guide})")),
        ("grid = 1\nblock = 4\nshared = -4", format!("t.toml:15:10: steps[0].shared: found -4 (negative); accepted 0 to 232448 bytes (227 KiB: dynamic shared memory per block after opting in, {guide}; without opting in 48 KiB, and the launch opts in above that)")),
        ("grid = 1\nblock = 4\nshared = 1e6", format!("t.toml:15:10: steps[0].shared: found 1000000.0; accepted 0 to 232448 bytes (227 KiB: dynamic shared memory per block after opting in, {guide}; without opting in 48 KiB, and the launch opts in above that)")),
    ];
    for (shape, want) in cases {
        let Some(e) = error(&shaped(shape)) else {
            return;
        };
        assert_eq!(e, want, "{shape}");
    }
    // The limits themselves pass.
    let Some(r) = run_check(&shaped(
        "grid = [2147483647, 65535, 65535]\nblock = [1024, 1, 1]\nshared = 232448",
    )) else {
        return;
    };
    r.unwrap();
}

/// A shape that uses a loop counter is checked at each iteration, naming it.
#[test]
fn launch_shapes_that_use_a_loop_counter_are_checked_per_iteration() {
    let body = "[[steps]]\nrepeat = 3\ncounter = \"t\"\nsteps = [{ launch = \"saxpy\", grid = \"2 - t\", block = 4, args = [\"x\", 2.0, \"y\", \"n\"] }]\n";
    let Some(e) = error(body) else {
        return;
    };
    assert_eq!(e, "t.toml:14:37: steps[0].steps[0].grid: found 2 - t = 0 at steps[0].steps[0] (launch saxpy), iteration t=2; accepted an integer from 1 to 2147483647 (the largest grid x dimension, CUDA C Programming Guide, compute capability 9.0)");
    let body = "[[steps]]\nrepeat = 3\ncounter = \"t\"\nsteps = [{ launch = \"saxpy\", grid = 1, block = 4, shared = \"t * 150000\", args = [\"x\", 2.0, \"y\", \"n\"] }]\n";
    let Some(e) = error(body) else {
        return;
    };
    assert!(e.contains(": found t * 150000 = 300000 at steps[0].steps[0] (launch saxpy), iteration t=2; accepted 0 to 232448 bytes"), "{e}");
}

/// The issue's `pressure(const double*, float*, int)` given an f32 buffer: a mangled entry's
/// parameter types are read from its name and each buffer's element type checked against them.
#[test]
fn a_buffer_of_another_type_than_the_mangled_parameter_is_refused() {
    let Some(e) = error(
        "[[steps]]\nlaunch = \"stencil\"\ngrid = 1\nblock = 4\nargs = [\"x\", \"y\", 4, 0]\n",
    ) else {
        return;
    };
    assert_eq!(e, "t.toml:15:9: steps[0].args[0]: found buffer 'x' (f32) for parameter 1 (double*) of stencil(double*, double*, int, int); accepted a buffer of f64, the type the parameter points to");
}

/// A spec may name a template instance as it is written in C++ (`scale<float>`), and a wrong
/// instance is told the ones that exist.
#[test]
fn template_instances_resolve_by_their_cpp_name() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let d = workdir();
    std::fs::write(
        d.join("kernel.cu"),
        "template <typename T> __global__ void scale(T* u, T a) { u[threadIdx.x] *= a; }\ntemplate __global__ void scale<float>(float*, float);\n",
    )
    .unwrap();
    let p = d.join("t.toml");
    let spec = |kernel: &str| {
        format!("[source]\nfile = \"kernel.cu\"\n[buffers.u]\ntype = \"f32\"\nlen = 4\n[[steps]]\nlaunch = \"{kernel}\"\ngrid = 1\nblock = 4\nargs = [\"u\", 2.0]\n[[outputs]]\nbuffer = \"u\"\n")
    };
    std::fs::write(&p, spec("scale<float>")).unwrap();
    let r = check(&Spec::load(&p).unwrap(), &[], &Builder::new(), None).unwrap();
    assert_eq!(r.kernels, ["_Z5scaleIfEvPT_S0_"]);
    // NVRTC instantiates what a name expression names, so `scale<double>` exists, for f64.
    std::fs::write(&p, spec("scale<double>")).unwrap();
    let e = check(&Spec::load(&p).unwrap(), &[], &Builder::new(), None).unwrap_err();
    assert!(e.to_string().ends_with("steps[0].args[0]: found buffer 'u' (f32) for parameter 1 (double*) of scale<double>(double*, double); accepted a buffer of f64, the type the parameter points to"), "{e}");
    // Ready PTX has only the instances it has.
    std::fs::write(d.join("k.ptx"), ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry _Z5scaleIfEvPT_S0_(.param .u64 u, .param .f32 a)\n{\n\tret;\n}\n").unwrap();
    std::fs::write(&p, spec("scale<double>").replace("kernel.cu", "k.ptx")).unwrap();
    let e = check(&Spec::load(&p).unwrap(), &[], &Builder::new(), None).unwrap_err();
    assert!(e.to_string().ends_with("steps[0].launch: found unknown kernel 'scale<double>'; accepted an instantiated kernel: did you mean 'scale<float>'"), "{e}");
    std::fs::write(&p, spec("scale<float>").replace("kernel.cu", "k.ptx")).unwrap();
    check(&Spec::load(&p).unwrap(), &[], &Builder::new(), None).unwrap();
}

/// A `.ptx` source under several flag sets says once that they do not change it.
#[test]
fn ready_ptx_under_several_flag_sets_says_so_once() {
    let d = workdir();
    std::fs::write(d.join("k.ptx"), ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 u)\n{\n\tret;\n}\n").unwrap();
    let p = d.join("t.toml");
    std::fs::write(&p, "[source]\nfile = \"k.ptx\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\n").unwrap();
    let r = check(
        &Spec::load(&p).unwrap(),
        &[FlagSet::FAST, FlagSet::DEFAULT],
        &Builder::new(),
        None,
    )
    .unwrap();
    assert_eq!(r.notes, ["ready PTX is read as is: flag sets (fast) do not change it, so every flag set runs the same code", "kernels declared extern \"C\" have no parameter types in their names, so their buffers' element types are not checked: k"]);
}

/// A configuration written for another build (sites that no longer exist, another kernel) is
/// refused in one line; one written for this build checks.
#[test]
fn a_stale_demote_configuration_is_refused() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let d = workdir();
    let p = d.join("t.toml");
    std::fs::write(&p, "[source]\nfile = \"kernel.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 4\n[buffers.v]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"stencil\"\ngrid = 1\nblock = 4\nargs = [\"u\", \"v\", 4, 0]\n[[outputs]]\nbuffer = \"v\"\n").unwrap();
    let spec = Spec::load(&p).unwrap();
    let fresh = mantissa_harness::run::full_configuration(&spec).unwrap();
    let checked = mantissa_harness::check::check_configuration(&spec, &fresh).unwrap();
    assert!(checked.starts_with("everything: "), "{checked}");
    let stale: mantissa_harness::Demotion = serde_json::from_str(r#"{"name": "old", "instructions": [{"function": "_Z3oldPd", "file": "old.cu", "line": 7, "ordinal": 0}], "math": [{"function": "exp", "line": 99}], "buffers": ["w"]}"#).unwrap();
    let e = mantissa_harness::check::check_configuration(&spec, &stale).unwrap_err();
    assert_eq!(e, "--demote old: written for another build: 1 of 1 instruction sites name no instruction of this build (first: _Z3oldPd old.cu:7#0), 1 of 1 math calls are not in it (first: exp at line 99), buffer 'w' is not a buffer of the spec; write a configuration for this build with --write-config");
}
