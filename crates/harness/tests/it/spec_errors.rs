//! Spec parsing and checking on the CPU: a good spec reads back typed, and every error kind of
//! the contract reads as one line with its exact FILE:LINE:COL.

use mantissa_gpu::{DType, HostData};
use mantissa_harness::data::materialize;
use mantissa_harness::expr::Val;
use mantissa_harness::spec::{
    FrontEnd, Init, Random, Reduce, SizeOverride, StepKind, Tolerance, View,
};
use mantissa_harness::validate::plan;
use mantissa_harness::Spec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory holding `kernel.cu`, `k.ptx`, `include/` and `data/u0_f4.npy` (3 x f32).
fn workdir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "mantissa-spec-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(d.join("include")).unwrap();
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::write(d.join("kernel.cu"), "// kernels\n").unwrap();
    std::fs::write(d.join("k.ptx"), PTX).unwrap();
    mantissa_harness::npy::write(
        &d.join("data/u0_f4.npy"),
        &HostData::F32(vec![1.0, 2.0, 3.0]),
    )
    .unwrap();
    mantissa_harness::npy::write(&d.join("data/u0.npy"), &HostData::F64(vec![1.0, 2.0, 3.0]))
        .unwrap();
    d
}

fn parse(text: &str) -> Result<Spec, String> {
    let d = workdir();
    let p = d.join("t.toml");
    std::fs::write(&p, text).unwrap();
    Spec::load(&p).map_err(|e| e.to_string().replace(&format!("{}/", d.display()), ""))
}

fn parse_set(text: &str, set: &[&str]) -> Result<Spec, String> {
    let d = workdir();
    let p = d.join("t.toml");
    std::fs::write(&p, text).unwrap();
    let overrides: Vec<SizeOverride> = set.iter().map(|s| s.parse().unwrap()).collect();
    Spec::load_with(&p, &overrides)
        .map_err(|e| e.to_string().replace(&format!("{}/", d.display()), ""))
}

fn err(text: &str) -> String {
    parse(text).expect_err("the spec should be refused")
}

const HEAD: &str = "[source]\nfile = \"kernel.cu\"\n";
const TAIL: &str = "\n[[outputs]]\nbuffer = \"u\"\n";

const GOOD: &str = r#"name = "heat"
[source]
file = "kernel.cu"
front_end = "nvrtc"
include = ["include"]
define = { BLOCK = 16, USE_HALO = "1", NDEBUG = true, OFF = false }
arch = "sm_90"

[sizes]
nx = 16
ny = 8
n = "nx * ny"
steps = 3
dt = 0.1
r = "dt / (0.5 * 0.5)"

[buffers.u]
type = "f64"
len = "n"
init = { random = "uniform", min = 0.0, max = 1.0, seed = 7 }

[buffers.u_prev]
type = "f64"
len = "n"

[buffers.flux]
type = "f32"
len = 4
init = { sequence = { start = 0.0, step = 0.5 } }

[symbols.coef]
type = "f64"
value = [0.25, 0.5, 0.25]

[symbols.params]
fields = ["f64", "f64", "i32"]
value = [[1.0, 2.0, 3]]

[[steps]]
launch = "init"
grid = "ceil(n / 256)"
block = 256
args = ["u", "n", 0.5, "dt", { f32 = 0.25 }]

[[steps]]
repeat = "steps"
counter = "t"
steps = [
  { copy = { from = "u", to = "u_prev" } },
  { fill = { buffer = "flux", value = 0.0 } },
  { launch = "stencil", grid = ["ceil(nx/16)", "ceil(ny/16)"], block = [16, 16], args = ["u_prev", "u", "nx", "ny", "r"] },
  { repeat = 4, counter = "stage", steps = [ { launch = "rk_stage", grid = 64, block = 256, args = ["u", "stage + t"] } ] },
]

[[outputs]]
buffer = "u"
tolerance = { digits = 6 }

[[outputs]]
buffer = "flux"
reduce = "sum"
tolerance = { rel = 1e-8 }
"#;

#[test]
fn a_complete_spec_reads_back_typed() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.name, "heat");
    assert_eq!(s.source.front_end, FrontEnd::Nvrtc);
    let opts = s.source.options();
    assert!(
        opts[0].starts_with("-I") && opts[0].ends_with("include"),
        "{opts:?}"
    );
    assert_eq!(&opts[1..], ["-DBLOCK=16", "-DUSE_HALO=1", "-DNDEBUG"]);
    assert_eq!(s.source.arch.as_deref(), Some("sm_90"));
    assert_eq!(s.sizes[2], ("n".to_string(), Val::Int(128)));
    assert_eq!(s.sizes[5].1, Val::Float(0.1 / 0.25));
    assert_eq!(s.buffers.len(), 3);
    assert_eq!((s.buffers[0].dtype, s.buffers[0].len), (DType::F64, 128));
    assert_eq!(
        s.buffers[0].init,
        Init::Random {
            dist: Random::Uniform { min: 0.0, max: 1.0 },
            seed: 7
        }
    );
    assert_eq!(s.buffers[1].init, Init::Zeros);
    assert_eq!(s.seeds(), vec![("u".to_string(), 7)]);
    assert_eq!(s.steps.len(), 2);
    let StepKind::Repeat { counter, steps, .. } = &s.steps[1].kind else {
        panic!()
    };
    assert_eq!(counter.as_deref(), Some("t"));
    assert_eq!(steps[2].describe(), "steps[1].steps[2] (launch stencil)");
    assert_eq!(s.walk().len(), 7);
    assert_eq!(s.outputs[1].reduce, Some(Reduce::Sum));
    assert_eq!(s.outputs[1].name(), "flux.sum");
    assert_eq!(s.outputs[0].tolerance, Some(Tolerance::Digits(6.0)));
    let inputs = materialize(&s).unwrap();
    assert_eq!(inputs.buffers[2].1, HostData::F32(vec![0.0, 0.5, 1.0, 1.5]));
    assert_eq!(inputs.symbols[0].1.len(), 24);
    assert_eq!(inputs.symbols[1].1.len(), 24);
}

#[test]
fn name_defaults_to_the_file_stem() {
    let s = parse(&format!("{HEAD}[buffers.u]\ntype = \"f32\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\n{TAIL}")).unwrap();
    assert_eq!(s.name, "t");
}

#[test]
fn unknown_keys_list_the_accepted_ones() {
    assert_eq!(
        err("[source]\nfile = \"kernel.cu\"\nflags = \"-O3\"\n"),
        "t.toml:3:1: source.flags: found unknown key 'flags'; accepted the keys file, front_end, include, define, arch"
    );
    assert_eq!(
        err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlength = 4\n")),
        "t.toml:5:1: buffers.u.length: found unknown key 'length'; accepted the keys type, len, init"
    );
    assert_eq!(
        err("nmae = \"x\"\n"),
        "t.toml:1:1: nmae: found unknown key 'nmae'; accepted the keys name, source, sizes, buffers, symbols, setup, steps, outputs"
    );
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nthreads = 4\n{TAIL}"));
    assert_eq!(e, "t.toml:10:1: steps[0].threads: found unknown key 'threads'; accepted the keys launch, grid, block, shared, args");
}

#[test]
fn wrong_types() {
    assert_eq!(
        err(&format!("{HEAD}[buffers.u]\ntype = \"f128\"\nlen = 4\n")),
        "t.toml:4:8: buffers.u.type: found the string \"f128\"; accepted f32, f64, f16, bf16, i32, i64, u8, u32, u64"
    );
    assert_eq!(
        err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = true\n")),
        "t.toml:5:7: buffers.u.len: found the boolean true; accepted an integer, a float, or an expression string"
    );
    assert_eq!(
        err(&format!(
            "{HEAD}[sizes]\nn = 3.5\n[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n"
        )),
        "t.toml:7:7: buffers.u.len: found n = 3.5; accepted a non-negative integer"
    );
    assert_eq!(
        err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\ninit = {{ random = \"gauss\" }}\n")),
        "t.toml:6:19: buffers.u.init.random: found the string \"gauss\"; accepted \"uniform\", \"normal\", \"log-uniform\""
    );
    assert_eq!(
        err("[source]\nfile = \"kernel.cu\"\nfront_end = \"clang\"\n"),
        "t.toml:3:13: source.front_end: found the string \"clang\"; accepted auto, nvrtc, nvcc, ptx"
    );
    assert_eq!(
        err("[source]\nfile = \"missing.cu\"\n"),
        "t.toml:2:8: source.file: found \"missing.cu\", which does not exist (missing.cu); accepted an existing path, relative to the spec's directory"
    );
    assert!(
        err("[source\n").starts_with("t.toml:1:8: (toml): found a TOML syntax error"),
        "{}",
        err("[source\n")
    );
}

#[test]
fn unknown_names() {
    assert_eq!(
        err(&format!("{HEAD}[sizes]\nnx = 4\nn = \"nx * ny\"\n")),
        "t.toml:5:11: sizes.n: found unknown name 'ny'; accepted sizes defined above it: nx"
    );
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\", \"v\"]\n{TAIL}"));
    assert_eq!(e, "t.toml:10:15: steps[0].args[1]: found unknown name 'v'; accepted buffers, sizes and loop counters: none; buffers: u");
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\ncopy = {{ from = \"u\", to = \"w\" }}\n{TAIL}"));
    assert_eq!(
        e,
        "t.toml:7:27: steps[0].copy.to: found the string \"w\"; accepted a buffer: u"
    );
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\n\n[[outputs]]\nbuffer = \"v\"\n"));
    assert_eq!(
        e,
        "t.toml:12:10: outputs[0].buffer: found the string \"v\"; accepted a buffer: u (a __device__ variable cannot be an output yet: copy it into a buffer in a kernel)"
    );
    // A counter is in scope inside its loop only.
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nrepeat = 2\ncounter = \"t\"\nsteps = [{{ launch = \"k\", grid = 1, block = 1, args = [\"t\"] }}]\n[[steps]]\nlaunch = \"k\"\ngrid = \"t + 1\"\nblock = 1\n{TAIL}"));
    assert_eq!(e, "t.toml:12:9: steps[1].grid: found unknown name 't'; accepted sizes and loop counters: none");
}

#[test]
fn expression_errors_point_inside_the_string() {
    assert_eq!(
        err(&format!("{HEAD}[sizes]\nn = \"4 * (2 + \"\n")),
        "t.toml:4:15: sizes.n: found the end of the expression; accepted a number, a name, '(' or '-'"
    );
    assert_eq!(
        err(&format!("{HEAD}[sizes]\nn = \"4 $ 2\"\n")),
        "t.toml:4:8: sizes.n: found '$'; accepted numbers, names, + - * / %, parentheses and function calls"
    );
    assert_eq!(
        err(&format!("{HEAD}[sizes]\nn = \"cbrt(8)\"\n")),
        "t.toml:4:6: sizes.n: found function 'cbrt'; accepted ceil(x), floor(x), min(a, b), max(a, b), sqrt(x), log2(x), pow(a, b)"
    );
}

#[test]
fn copies_between_types_are_refused() {
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[buffers.v]\ntype = \"f32\"\nlen = 4\n[[steps]]\ncopy = {{ from = \"u\", to = \"v\" }}\n{TAIL}"));
    assert_eq!(e, "t.toml:10:8: steps[0].copy.to: found a copy from u (f64) to v (f32); accepted buffers of the same type");
}

#[test]
fn npy_dtype_and_shape_must_fit() {
    let s = parse(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 3\ninit = {{ npy = \"data/u0_f4.npy\" }}\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\n{TAIL}")).unwrap();
    let e = materialize(&s).unwrap_err().to_string();
    assert!(e.ends_with("t.toml:6:8: buffers.u.init: found data/u0_f4.npy: dtype <f4, expected <f8 (f64); accepted 3 values of f64"), "{e}");
    let s = parse(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\ninit = {{ npy = \"data/u0.npy\" }}\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\n{TAIL}")).unwrap();
    let e = materialize(&s).unwrap_err().to_string();
    assert!(e.ends_with("t.toml:6:8: buffers.u.init: found data/u0.npy: shape (3,) (3 elements), expected 4 elements (4,); accepted 4 values of f64"), "{e}");
    let s = parse(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 3\ninit = {{ npy = \"data/u0.npy\" }}\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\n{TAIL}")).unwrap();
    assert_eq!(
        materialize(&s).unwrap().buffers[0].1,
        HostData::F64(vec![1.0, 2.0, 3.0])
    );
}

#[test]
fn by_value_structs_are_refused_clearly() {
    let e = err(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [{{ struct = [1, 2] }}]\n{TAIL}"));
    assert_eq!(e, "t.toml:10:11: steps[0].args[0].struct: found a by-value struct argument; accepted { bytes = \"HEX\" }: the struct's bytes in memory order");
}

// ---- Checks against the program's PTX

const PTX: &str = r#"//
.version 8.5
.target sm_90
.address_size 64

.const .align 8 .b8 coef[24];
.global .align 8 .b8 _ZN2ns6paramsE[24];

.visible .entry saxpy(
	.param .u64 saxpy_param_0,
	.param .f32 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	ret;
}

.visible .entry _Z7stencilPdS_ii(
	.param .u64 _Z7stencilPdS_ii_param_0,
	.param .u64 _Z7stencilPdS_ii_param_1,
	.param .u32 _Z7stencilPdS_ii_param_2,
	.param .u32 _Z7stencilPdS_ii_param_3
)
{
	ret;
}
"#;

fn check(body: &str) -> Result<mantissa_harness::validate::Plan, String> {
    let s = parse(&format!("{HEAD}[sizes]\nn = 4\n[buffers.x]\ntype = \"f32\"\nlen = 4\n[buffers.y]\ntype = \"f32\"\nlen = 4\n{body}\n[[outputs]]\nbuffer = \"y\"\n"))?;
    let inputs = materialize(&s).map_err(|e| e.to_string())?;
    plan(&s, PTX, &BTreeMap::new(), &inputs.symbols)
        .map_err(|e| e.to_string().replace(&format!("{}/", s.dir.display()), ""))
}

#[test]
fn kernels_resolve_by_c_name_mangled_name_and_demangled_name() {
    // stencil takes double*: f64 buffers (an f32 one is refused: check.rs).
    let p = check("[buffers.u]\ntype = \"f64\"\nlen = 4\n[buffers.v]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\", \"n\"]\n[[steps]]\nlaunch = \"stencil\"\ngrid = 1\nblock = 4\nargs = [\"u\", \"v\", 4, \"n - 1\"]\n[[steps]]\nlaunch = \"_Z7stencilPdS_ii\"\ngrid = 1\nblock = 4\nargs = [\"u\", \"v\", 4, 4]\n").unwrap();
    assert_eq!(p.launches["steps[1]"].entry, "_Z7stencilPdS_ii");
    assert_eq!(p.launches["steps[2]"].entry, "_Z7stencilPdS_ii");
    assert_eq!(p.launches["steps[0]"].entry, "saxpy");
}

#[test]
fn unknown_kernels_list_the_kernels_found() {
    let e = check("[[steps]]\nlaunch = \"saxpi\"\ngrid = 1\nblock = 4\n").unwrap_err();
    assert_eq!(e, "t.toml:12:10: steps[0].launch: found unknown kernel 'saxpi'; accepted a kernel of the program: saxpy, stencil (_Z7stencilPdS_ii)");
}

#[test]
fn argument_count_and_kinds_match_the_signature() {
    let e =
        check("[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\"]\n")
            .unwrap_err();
    assert_eq!(e, "t.toml:15:19: steps[0].args: found 3 arguments; accepted 4 arguments, the parameters of saxpy (.u64, .f32, .u64, .u32)");
    let e = check(
        "[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", \"y\", \"y\", \"n\"]\n",
    )
    .unwrap_err();
    assert_eq!(e, "t.toml:15:14: steps[0].args[1]: found buffer 'y' for parameter 2 (.f32); accepted a scalar for .f32 (a buffer needs a .u64/.b64 pointer parameter)");
    let e = check(
        "[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\", 2.5]\n",
    )
    .unwrap_err();
    assert_eq!(e, "t.toml:15:24: steps[0].args[3]: found 2.5 = 2.5, not an integer, for a 32-bit integer parameter; accepted a value of the parameter's type (.u32; integers must be integral and in range)");
    let e = check("[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", { f64 = 2.0 }, \"y\", 4]\n").unwrap_err();
    assert_eq!(e, "t.toml:15:14: steps[0].args[1]: found an explicit f64 for parameter 2 (.f32); accepted a value of the parameter's type (.f32)");
    check("[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", { f32 = 2.0 }, \"y\", { u32 = 4 }]\n").unwrap();
}

#[test]
fn symbols_must_exist_with_their_size() {
    check("[symbols.coef]\ntype = \"f64\"\nvalue = [1.0, 2.0, 3.0]\n[symbols.params]\nfields = [\"f64\", \"f64\", \"i32\"]\nvalue = [[1.0, 2.0, 3]]\n[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\", \"n\"]\n").unwrap();
    let e = check("[symbols.coef]\ntype = \"float3\"\nvalue = [1.0, 2.0, 3.0]\n[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\", \"n\"]\n").unwrap_err();
    assert_eq!(e, "t.toml:13:9: symbols.coef.value: found 12 bytes of values; accepted 24 bytes, the size of .const coef in the PTX");
    let e = check("[symbols.table]\ntype = \"f64\"\nvalue = [1.0]\n[[steps]]\nlaunch = \"saxpy\"\ngrid = 1\nblock = 4\nargs = [\"x\", 2.0, \"y\", \"n\"]\n").unwrap_err();
    assert_eq!(e, "t.toml:11:1: symbols.table: found no variable 'table' in the PTX; accepted a __constant__ or __device__ variable of the program: coef (.const, 24 bytes), _ZN2ns6paramsE (.global, 24 bytes)");
}

// ---- --set, setup, copies with offsets, output views, exact tolerance

const SIZED: &str = "[source]\nfile = \"kernel.cu\"\n[sizes]\nnx = 4\nny = 2\nn = \"nx * ny\"\nhalf = \"n / 2\"\n[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n[buffers.v]\ntype = \"f64\"\nlen = \"half\"\n[[steps]]\nlaunch = \"k\"\ngrid = \"ceil(n / 4)\"\nblock = 4\nargs = [\"u\", \"n\"]\n[[outputs]]\nbuffer = \"u\"\n";

#[test]
fn set_overrides_a_size_and_everything_that_depends_on_it() {
    let s = parse_set(SIZED, &[]).unwrap();
    assert_eq!(
        (s.buffer("u").unwrap().len, s.buffer("v").unwrap().len),
        (8, 4)
    );
    let s = parse_set(SIZED, &["nx=4096"]).unwrap();
    assert_eq!(
        s.sizes,
        [
            ("nx".to_string(), Val::Int(4096)),
            ("ny".to_string(), Val::Int(2)),
            ("n".to_string(), Val::Int(8192)),
            ("half".to_string(), Val::Int(4096)),
        ]
    );
    assert_eq!(
        (s.buffer("u").unwrap().len, s.buffer("v").unwrap().len),
        (8192, 4096)
    );
    // A derived size may be set too (an expression of the sizes above it), and the last --set
    // of a name wins.
    let s = parse_set(SIZED, &["n=3 * nx", "n=2 * nx"]).unwrap();
    assert_eq!(s.buffer("u").unwrap().len, 8);
    assert_eq!(s.overrides.len(), 2);
    assert_eq!(
        parse_set(SIZED, &["nz=4"]).unwrap_err(),
        "t.toml:3:1: --set nz: found unknown size 'nz'; accepted a size of [sizes]: nx, ny, n, half"
    );
    assert_eq!(
        parse_set(SIZED, &["nx=half"]).unwrap_err(),
        "t.toml:4:1: sizes.nx (--set nx=half): found unknown name 'half'; accepted sizes defined above it: none"
    );
    assert_eq!(
        parse_set(SIZED, &["nx=4 $ 2"]).unwrap_err(),
        "t.toml:4:1: sizes.nx (--set nx=4 $ 2): found '$'; accepted numbers, names, + - * / %, parentheses and function calls"
    );
    // A value that makes a length wrong is reported where the length is written.
    assert_eq!(
        parse_set(SIZED, &["nx=3", "ny=1"]).unwrap_err(),
        "t.toml:13:7: buffers.v.len: found half = 1.5; accepted a non-negative integer"
    );
    assert!(parse_set(
        &format!("{HEAD}[buffers.u]\ntype = \"f32\"\nlen = 4\n"),
        &["n=1"]
    )
    .unwrap_err()
    .ends_with("--set n: found unknown size 'n'; accepted a size of [sizes]; the spec has none"));
    assert!("n"
        .parse::<SizeOverride>()
        .unwrap_err()
        .starts_with("--set n: found no NAME=VALUE"));
    assert!("1n=4".parse::<SizeOverride>().is_err());
}

#[test]
fn setup_steps_parse_like_steps_and_come_first_in_the_walk() {
    let text = format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[setup]]\nlaunch = \"init\"\ngrid = 1\nblock = 4\nargs = [\"u\"]\n[[setup]]\nrepeat = 2\ncounter = \"s\"\nsteps = [{{ launch = \"warm\", grid = 1, block = 4, args = [\"u\", \"s\"] }}]\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\n{TAIL}");
    let s = parse(&text).unwrap();
    assert_eq!(s.setup.len(), 2);
    let paths: Vec<String> = s.walk().iter().map(|(st, _)| st.describe()).collect();
    assert_eq!(
        paths,
        [
            "setup[0] (launch init)",
            "setup[1] (repeat)",
            "setup[1].steps[0] (launch warm)",
            "steps[0] (launch k)"
        ]
    );
    assert_eq!(s.walk()[2].1, ["s"]);
    // Inline `setup = [...]` is the same thing; its errors name setup[i].
    let e = err(&format!("setup = [{{ launch = \"init\", grid = 1 }}]\n{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\n{TAIL}"));
    assert_eq!(e, "t.toml:1:10: setup[0].block: found nothing; accepted block = an integer, expression, or a list of 1 to 3 of them");
}

#[test]
fn copies_with_offsets_are_checked_against_both_buffers() {
    let copy = |c: &str| {
        parse(&format!("{HEAD}[sizes]\nn = 4\n[buffers.u]\ntype = \"f64\"\nlen = 12\n[buffers.v]\ntype = \"f64\"\nlen = 4\n[[steps]]\ncopy = {{ {c} }}\n[[outputs]]\nbuffer = \"u\"\n"))
    };
    let s = copy("from = \"u\", to = \"v\", src_offset = \"2 * n\"").unwrap();
    let StepKind::Copy {
        src_offset,
        dst_offset,
        len,
        ..
    } = &s.steps[0].kind
    else {
        panic!()
    };
    assert_eq!(src_offset.as_ref().map(|q| q.text.as_str()), Some("2 * n"));
    assert!(dst_offset.is_none() && len.is_none());
    assert_eq!(
        copy("from = \"u\", to = \"v\", src_offset = 10, len = \"n\"").unwrap_err(),
        "t.toml:12:55: steps[0].copy.len: found len = 4; accepted an integer from 0 to 2 (what fits in u (12) from element 10 and in v (4) from element 0)"
    );
    assert_eq!(
        copy("from = \"v\", to = \"u\", dst_offset = 13").unwrap_err(),
        "t.toml:12:45: steps[0].copy.dst_offset: found dst_offset = 13; accepted an integer from 0 to 12 (the length of u)"
    );
    assert_eq!(
        copy("from = \"u\", to = \"u\", src_offset = 0, dst_offset = 2, len = 4").unwrap_err(),
        "t.toml:12:61: steps[0].copy.dst_offset: found a copy within u from elements 0..4 to the overlapping 2..6; accepted ranges of one buffer that do not overlap (or a second buffer)"
    );
    // Structure of arrays: variable 0 of u (4 elements each) copied over variable 2.
    copy("from = \"u\", to = \"u\", src_offset = 0, dst_offset = \"2 * n\", len = \"n\"").unwrap();
    // Offsets that use a loop counter are checked when the copy runs.
    parse(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 12\n[[steps]]\nrepeat = 3\ncounter = \"t\"\nsteps = [{{ copy = {{ from = \"u\", to = \"u\", src_offset = 0, dst_offset = \"4 * t\", len = 4 }} }}]\n{TAIL}")).unwrap();
    assert!(copy("from = \"u\", to = \"v\", offset = 1")
        .unwrap_err()
        .contains("accepted the keys from, to, len, src_offset, dst_offset"));
}

#[test]
fn output_views_select_part_of_a_buffer() {
    let out = |o: &str| {
        parse(&format!("{HEAD}[sizes]\nn = 4\n[buffers.state]\ntype = \"f64\"\nlen = 12\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\n[[outputs]]\nbuffer = \"state\"\n{o}\n"))
    };
    // Variable 1 of a structure of arrays: elements 4..8, and its total.
    let s = out("offset = \"n\"\nlen = \"n\"\nreduce = \"sum\"").unwrap();
    let o = &s.outputs[0];
    assert_eq!(
        o.view,
        Some(View {
            offset: 4,
            len: 4,
            stride: 1
        })
    );
    assert_eq!(o.name(), "state[4:8].sum");
    assert_eq!(o.compared_len(12), 1);
    // Variable 2 of an array of structures of 3 variables: 2, 5, 8, 11 (len defaults to what fits).
    let s = out("offset = 2\nstride = 3\nname = \"energy\"").unwrap();
    let v = s.outputs[0].view.unwrap();
    assert_eq!(v.indices().collect::<Vec<_>>(), [2, 5, 8, 11]);
    assert_eq!(
        (v.slice(), s.outputs[0].name()),
        ("[2:12:3]".to_string(), "energy".to_string())
    );
    assert_eq!(s.outputs[0].compared_len(12), 4);
    assert_eq!(v.select(&(0..12).collect::<Vec<i32>>()), [2, 5, 8, 11]);
    assert_eq!(
        out("offset = 2\nstride = 3\nlen = 5").unwrap_err(),
        "t.toml:16:7: outputs[0].len: found len = 5 (elements 2 to 14 in steps of 3); accepted at most 4 elements: state has 12 (0 to 11)"
    );
    assert_eq!(
        out("offset = \"3 * n\"").unwrap_err(),
        "t.toml:14:10: outputs[0].offset: found offset = 12; accepted an element of state: 0 to 11"
    );
    assert_eq!(
        out("stride = 0").unwrap_err(),
        "t.toml:14:10: outputs[0].stride: found 0 = 0; accepted at least 1"
    );
    // Two outputs may not share a name: records tell them apart by it.
    let e = out("[[outputs]]\nbuffer = \"state\"").unwrap_err();
    assert_eq!(e, "t.toml:14:1: outputs[1].name: found the output name 'state', which outputs[0] has; accepted a name no other output has (name = \"...\")");
    out("[[outputs]]\nbuffer = \"state\"\noffset = 4").unwrap();
}

#[test]
fn exact_tolerance_has_two_spellings() {
    let tol = |t: &str| {
        parse(&format!("{HEAD}[buffers.u]\ntype = \"f64\"\nlen = 4\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 4\n[[outputs]]\nbuffer = \"u\"\ntolerance = {{ {t} }}\n"))
            .map(|s| s.outputs[0].tolerance)
    };
    assert_eq!(tol("exact = true"), Ok(Some(Tolerance::Exact)));
    assert_eq!(tol("digits = \"all\""), Ok(Some(Tolerance::Exact)));
    assert_eq!(Tolerance::Exact.to_string(), "exact (all digits)");
    assert_eq!(
        tol("exact = false").unwrap_err(),
        "t.toml:12:23: outputs[0].tolerance.exact: found the boolean false; accepted exact = true (bit-identical); leave the tolerance out for none"
    );
    assert_eq!(
        tol("digits = \"most\"").unwrap_err(),
        "t.toml:12:24: outputs[0].tolerance.digits: found the string \"most\"; accepted a non-negative number, or \"all\" (bit-identical)"
    );
    assert!(tol("exact = true, rel = 1e-6")
        .unwrap_err()
        .ends_with("found 2 keys; accepted exactly one of { digits = 6 }, { rel = 1e-6 }, { abs = 1e-9 }, { exact = true }"));
}
