//! An application simulated on the PTX interpreter (its device), recorded as the attach library
//! records, traced, and the spec replayed on the interpreter: every output must equal, bit for
//! bit, what the application read back.

use super::*;
use crate::app::events;
use crate::data::materialize;
use crate::interp_steps::run_steps;
use crate::run::build_request;
use crate::spec::Spec;
use crate::validate::plan;
use mantissa_gpu::{Builder, FlagSet};
use mantissa_ptx::interp::{self, Memory};

/// `scale` (C++: its name says `double*`) and `mean_of` (extern "C": only its loads and
/// stores say `double`).
const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry _Z5scalePddi(.param .u64 _Z5scalePddi_param_0, .param .f64 _Z5scalePddi_param_1, .param .u32 _Z5scalePddi_param_2)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    .reg .f64 %fd<4>;
    ld.param.u64 %rd1, [_Z5scalePddi_param_0];
    ld.param.f64 %fd1, [_Z5scalePddi_param_1];
    ld.param.u32 %r1, [_Z5scalePddi_param_2];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra $L__done;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 8;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f64 %fd2, [%rd4];
    mul.rn.f64 %fd3, %fd2, %fd1;
    st.global.f64 [%rd4], %fd3;
$L__done:
    ret;
}

.visible .entry mean_of(.param .u64 mean_of_param_0, .param .u64 mean_of_param_1, .param .u32 mean_of_param_2)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<7>;
    .reg .f64 %fd<5>;
    ld.param.u64 %rd1, [mean_of_param_0];
    ld.param.u64 %rd2, [mean_of_param_1];
    ld.param.u32 %r1, [mean_of_param_2];
    mov.u32 %r2, %tid.x;
    setp.ne.s32 %p1, %r2, 0;
    @%p1 bra $L__end;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.f64 %fd1, 0d0000000000000000;
    mov.u32 %r3, 0;
$L__loop:
    setp.ge.s32 %p2, %r3, %r1;
    @%p2 bra $L__store;
    mul.wide.s32 %rd5, %r3, 8;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f64 %fd2, [%rd6];
    add.rn.f64 %fd1, %fd1, %fd2;
    add.s32 %r3, %r3, 1;
    bra $L__loop;
$L__store:
    cvt.rn.f64.s32 %fd3, %r1;
    div.rn.f64 %fd4, %fd1, %fd3;
    st.global.f64 [%rd4], %fd4;
$L__end:
    ret;
}
"#;

/// The application: x = 1 + k/n; three times: the mean of x on the device, read back, and x
/// scaled by it (a value the host took from the device), the upper half of x halved (a pointer
/// into x), and once new values copied over x's first quarter; x read back at the end.
/// Returns its events (as the library writes them) into `dir`, and what it read back last.
fn simulate(dir: &Path) -> (String, Vec<u8>) {
    let module = mantissa_ptx::parse::parse(PTX).module;
    let key = mantissa_fatbin::module_key(PTX.as_bytes());
    std::fs::create_dir_all(dir.join("modules")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("modules").join(format!("{key}.ptx")), PTX).unwrap();
    let n: u32 = 64;
    let mut mem = Memory::new();
    let mut log = vec![format!(
        r#"{{"event":"load","module":"{key}","kind":"ptx","via":"cuModuleLoadData","replaced":false}}"#
    )];
    let mut files = 0;
    let mut save = |bytes: &[u8]| {
        let f = format!("data/{files}.bin");
        std::fs::write(dir.join(&f), bytes).unwrap();
        files += 1;
        f
    };
    let x = mem.alloc(n as usize * 8);
    let out = mem.alloc(8);
    for (p, b) in [(x, n * 8), (out, 8)] {
        log.push(format!(
            r#"{{"event":"alloc","ptr":"{p:#x}","bytes":{b},"kind":"device"}}"#
        ));
    }
    let x0: Vec<u8> = (0..n)
        .flat_map(|k| (1.0 + f64::from(k) / f64::from(n)).to_le_bytes())
        .collect();
    mem.write(x, &x0).unwrap();
    let f = save(&x0);
    log.push(format!(
        r#"{{"event":"copy","dir":"htod","dst":"{x:#x}","src":"0x1000","bytes":{},"data":"{f}"}}"#,
        x0.len()
    ));
    log.push(format!(
        r#"{{"event":"memset","dst":"{out:#x}","value":0,"width":1,"count":8}}"#
    ));
    let options = interp::Options::default();
    let launch = |mem: &mut Memory,
                  log: &mut Vec<String>,
                  kernel: &str,
                  grid: u32,
                  block: u32,
                  args: Vec<Vec<u8>>| {
        let a: Vec<interp::Arg> = args.iter().map(|b| interp::Arg(b.clone())).collect();
        let l = interp::Launch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
        };
        interp::run_with(&module, kernel, l, &a, mem, &options).unwrap();
        let hexes: Vec<String> = args
            .iter()
            .map(|b| format!("\"{}\"", crate::hex::encode(b)))
            .collect();
        log.push(format!(
            r#"{{"event":"launch","module":"{key}","kernel":"{kernel}","grid":[{grid},1,1],"block":[{block},1,1],"shared":0,"stream":"0x0","args":[{}]}}"#,
            hexes.join(",")
        ));
    };
    for iteration in 0..3 {
        launch(
            &mut mem,
            &mut log,
            "mean_of",
            1,
            32,
            vec![
                x.to_le_bytes().to_vec(),
                out.to_le_bytes().to_vec(),
                n.to_le_bytes().to_vec(),
            ],
        );
        let mean = mem.read(out, 8).unwrap().to_vec();
        let f = save(&mean);
        log.push(format!(
            r#"{{"event":"copy","dir":"dtoh","dst":"0x2000","src":"{out:#x}","bytes":8,"data":"{f}"}}"#
        ));
        launch(
            &mut mem,
            &mut log,
            "_Z5scalePddi",
            2,
            32,
            vec![x.to_le_bytes().to_vec(), mean, n.to_le_bytes().to_vec()],
        );
        let half = x + u64::from(n / 2) * 8;
        launch(
            &mut mem,
            &mut log,
            "_Z5scalePddi",
            1,
            32,
            vec![
                half.to_le_bytes().to_vec(),
                0.5f64.to_le_bytes().to_vec(),
                (n / 2).to_le_bytes().to_vec(),
            ],
        );
        if iteration == 1 {
            let fresh: Vec<u8> = (0..n / 4)
                .flat_map(|k| (-f64::from(k)).to_le_bytes())
                .collect();
            mem.write(x, &fresh).unwrap();
            let f = save(&fresh);
            log.push(format!(
                r#"{{"event":"copy","dir":"htod","dst":"{x:#x}","src":"0x3000","bytes":{},"data":"{f}"}}"#,
                fresh.len()
            ));
        }
    }
    let last = mem.read(x, n as usize * 8).unwrap().to_vec();
    let f = save(&last);
    log.push(format!(
        r#"{{"event":"copy","dir":"dtoh","dst":"0x2000","src":"{x:#x}","bytes":{},"data":"{f}"}}"#,
        last.len()
    ));
    log.push(r#"{"event":"end","how":"exit"}"#.to_string());
    std::fs::write(dir.join("events.jsonl"), log.join("\n") + "\n").unwrap();
    (key, last)
}

#[test]
fn a_traced_run_replays_to_the_bit_and_says_what_the_host_chose() {
    let tmp = tempfile::tempdir().unwrap();
    let (run_dir, out_dir) = (tmp.path().join("run"), tmp.path().join("spec"));
    let (_, last) = simulate(&run_dir);
    let events = events::read(&run_dir.join("events.jsonl")).unwrap();
    let t = trace(&run_dir, &events, "app", 90).unwrap();
    assert_eq!(t.counts.launches, 9);
    assert_eq!(t.counts.kernels, 2);
    assert_eq!(t.counts.copies_back, 4);
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("_Z5scalePddi parameter 1: 3 of 6 launches")),
        "{:#?}",
        t.notes
    );
    // Typed by the C++ name (scale) and by mean_of's f64 loads and stores.
    assert!(
        t.spec.contains("[buffers.buf0]") && t.spec.contains("type = \"f64\"\nlen = 64"),
        "{}",
        t.spec
    );
    assert!(
        t.spec.contains("[buffers.buf1]") && t.spec.contains("type = \"f64\"\nlen = 1"),
        "{}",
        t.spec
    );
    assert!(
        t.spec.contains("{ buffer = \"buf0\", offset = 32 }"),
        "{}",
        t.spec
    );
    assert!(
        t.spec.contains("fill = { buffer = \"buf1\", value = 0.0 }"),
        "{}",
        t.spec
    );
    let path = t.write(&out_dir).unwrap();
    if std::env::var_os("TRACE_PRINT").is_some() {
        eprintln!("{}\n{:#?}", t.spec, t.notes);
    }

    let spec = Spec::load(&path).unwrap_or_else(|e| panic!("{e}\n{}", t.spec));
    let inputs = materialize(&spec).unwrap();
    let built = Builder::new()
        .build(&build_request(&spec, FlagSet::DEFAULT, None).unwrap())
        .unwrap();
    let plan = plan(&spec, &built.ptx, &Default::default(), &inputs.symbols)
        .unwrap_or_else(|e| panic!("{e}\n{}", t.spec));
    let module = mantissa_ptx::parse::parse(&built.ptx).module;
    let options = interp::Options::default();
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        interp::run_with(&module, entry, l, args, mem, &options)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let run = run_steps(&spec, &plan, &inputs, &module, &mut launch).unwrap();
    assert_eq!(spec.outputs.len(), 2);
    for o in &spec.outputs {
        let got = run.buffer_bytes(&o.buffer).unwrap();
        let (reference, _) = o.reference.as_ref().expect("a reference");
        let want = std::fs::read(reference).unwrap();
        // The .npy's data is its last bytes.
        assert_eq!(
            &want[want.len() - got.len()..],
            &got[..],
            "output {}",
            o.buffer
        );
    }
    let x_out = spec.outputs.iter().find(|o| o.buffer == "buf0").unwrap();
    assert_eq!(run.buffer_bytes(&x_out.buffer).unwrap(), last);
}

#[test]
fn a_module_without_ptx_names_the_flag_that_adds_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("modules")).unwrap();
    // An ELF image: a cubin, no PTX.
    let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1];
    elf.resize(64, 0);
    std::fs::write(tmp.path().join("modules/00000000000000aa.cubin"), &elf).unwrap();
    let events = events::parse(
        r#"{"event":"launch","module":"00000000000000aa","kernel":"k","grid":[1,1,1],"block":[1,1,1],"shared":0,"args":[]}"#,
    )
    .unwrap();
    let e = trace(tmp.path(), &events, "app", 90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("compute_XX,code=compute_XX"), "{e}");
    let none = trace(tmp.path(), &[], "app", 90).unwrap_err().to_string();
    assert!(none.contains("launched no kernel"), "{none}");
}

#[test]
fn pointer_offsets_and_bytes_are_checked_against_the_buffer_and_the_parameter() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("app.ptx"), PTX).unwrap();
    let check = |args: &str| -> Result<(), String> {
        let text = format!(
            "[source]\nfile = \"app.ptx\"\n[buffers.x]\ntype = \"f64\"\nlen = 64\n\
             [[steps]]\nlaunch = \"_Z5scalePddi\"\ngrid = 1\nblock = 32\nargs = {args}\n\
             [[outputs]]\nbuffer = \"x\"\n"
        );
        let spec = Spec::parse(&text, &tmp.path().join("t.toml")).map_err(|e| e.to_string())?;
        let inputs = materialize(&spec).map_err(|e| e.to_string())?;
        plan(&spec, PTX, &Default::default(), &inputs.symbols)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    check(r#"[{ buffer = "x", offset = 64 }, { bytes = "000000000000f03f" }, 64]"#).unwrap();
    let beyond = check(r#"[{ buffer = "x", offset = 65 }, 1.0, 64]"#).unwrap_err();
    assert!(
        beyond.contains("an element of 'x' or its end: 0 to 64"),
        "{beyond}"
    );
    let short = check(r#"["x", { bytes = "00" }, 64]"#).unwrap_err();
    assert!(
        short.contains("1 bytes for parameter 2") && short.contains("8 bytes (16 hex digits)"),
        "{short}"
    );
    let odd = check(r#"["x", { bytes = "0" }, 64]"#).unwrap_err();
    assert!(odd.contains("an even number of hex digits"), "{odd}");
    let unknown = check(r#"[{ buffer = "x", at = 3 }, 1.0, 64]"#).unwrap_err();
    assert!(unknown.contains("buffer, offset"), "{unknown}");
}

/// A real run: examples/apps/reactor (nvcc 13.0, static runtime, 1024 cells to t = 5) recorded
/// under the attach library on an H100 (scripts/app-check.sh). Traced here, and the spec
/// replayed on the PTX interpreter: every output must be the bytes the application read back
/// from the GPU (the interpreter computes IEEE f64 as the GPU does), and the notes must say that
/// the time step came back from the device.
#[test]
fn a_real_application_run_traces_and_replays_on_the_interpreter_to_the_gpu_s_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app/reactor-h100.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&fixture)
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar runs");
    assert!(status.success());
    let events = events::read(&tmp.path().join("events.jsonl")).unwrap();
    let t = trace(tmp.path(), &events, "reactor", 90).unwrap();
    assert_eq!(
        (t.counts.launches, t.counts.kernels, t.counts.copies_back),
        (175, 4, 60)
    );
    assert!(
        t.notes.iter().any(|n| n.starts_with("_Z7advanceIdEvPT_PKS0_S0_i parameter 2: 57 of 58 launches took a value the host had copied back")),
        "{:#?}",
        t.notes
    );
    // The first three steps propose the same dt (the bump has not grown yet): one repeat.
    assert!(
        t.spec.contains(
            "repeat = 3\nsteps = [\n  { launch = \"_Z5ratesIdEvPKT_PS0_S3_iS0_S0_S0_S0_S0_\""
        ),
        "{}",
        &t.spec[..3000]
    );
    let out = tmp.path().join("spec");
    let path = t.write(&out).unwrap();
    let spec = Spec::load(&path).unwrap();
    let inputs = materialize(&spec).unwrap();
    let ptx = std::fs::read_to_string(out.join("reactor.ptx")).unwrap();
    let plan = plan(&spec, &ptx, &Default::default(), &inputs.symbols).unwrap();
    let module = mantissa_ptx::parse::parse(&ptx).module;
    let options = interp::Options::default();
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        interp::run_with(&module, entry, l, args, mem, &options)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let run = run_steps(&spec, &plan, &inputs, &module, &mut launch).unwrap();
    assert_eq!(spec.outputs.len(), 3);
    for o in &spec.outputs {
        let got = run.buffer_bytes(&o.buffer).unwrap();
        let (reference, _) = o.reference.as_ref().unwrap();
        let want = std::fs::read(reference).unwrap();
        assert_eq!(
            &want[want.len() - got.len()..],
            &got[..],
            "output {}",
            o.buffer
        );
    }
}

/// The spec at `path` replayed on the PTX interpreter with the program `ptx` (interpreted as
/// the GPU computes IEEE arithmetic).
fn replay(path: &Path, ptx: &str) -> (Spec, crate::interp_steps::InterpRun) {
    let spec = Spec::load(path).unwrap_or_else(|e| panic!("{e}"));
    let inputs = materialize(&spec).unwrap();
    let plan =
        plan(&spec, ptx, &Default::default(), &inputs.symbols).unwrap_or_else(|e| panic!("{e}"));
    let module = mantissa_ptx::parse::parse(ptx).module;
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        interp::run(&module, entry, l, args, mem)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let run = run_steps(&spec, &plan, &inputs, &module, &mut launch).unwrap();
    (spec, run)
}

/// `x[i] = x[i] * coef[0] + coef[1] + bias`: `coef` a `__constant__ double[2]` (declared as
/// bytes, as nvcc declares arrays), `bias` a `__device__ double` initialised to 1.
const VARIABLES_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.const .align 8 .b8 coef[16];
.global .align 8 .f64 bias = 0d3FF0000000000000;

.visible .entry _Z5shiftPdi(.param .u64 _Z5shiftPdi_param_0, .param .u32 _Z5shiftPdi_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    .reg .f64 %fd<8>;
    ld.param.u64 %rd1, [_Z5shiftPdi_param_0];
    ld.param.u32 %r1, [_Z5shiftPdi_param_1];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra $L__done;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 8;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f64 %fd1, [%rd4];
    ld.const.f64 %fd2, [coef];
    ld.const.f64 %fd3, [coef+8];
    ld.global.f64 %fd4, [bias];
    fma.rn.f64 %fd5, %fd1, %fd2, %fd3;
    add.rn.f64 %fd6, %fd5, %fd4;
    st.global.f64 [%rd4], %fd6;
$L__done:
    ret;
}
"#;

/// cudaMemcpyToSymbol as the runtime makes it (a lookup, then a copy), before the first
/// launch — `coef` in two copies, the second into its upper half — and after it; a copy back
/// from `bias` (cudaMemcpyFromSymbol). The spec sets `coef` to what the host wrote before the
/// launch and says what it leaves out; its replay gives the application's bytes.
#[test]
fn variables_written_before_the_first_launch_become_symbols_and_the_rest_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let module = mantissa_ptx::parse::parse(VARIABLES_PTX).module;
    let key = mantissa_fatbin::module_key(VARIABLES_PTX.as_bytes());
    std::fs::create_dir_all(dir.join("modules")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(
        dir.join("modules").join(format!("{key}.ptx")),
        VARIABLES_PTX,
    )
    .unwrap();
    let mut mem = Memory::new();
    let mut log = vec![format!(
        r#"{{"event":"load","module":"{key}","kind":"ptx","via":"cuModuleLoadData","replaced":false}}"#
    )];
    let mut files = 0;
    let mut save = |bytes: &[u8]| {
        let f = format!("data/{files}.bin");
        std::fs::write(dir.join(&f), bytes).unwrap();
        files += 1;
        f
    };
    let n = 32u32;
    let x = mem.alloc(n as usize * 8);
    log.push(format!(
        r#"{{"event":"alloc","ptr":"{x:#x}","bytes":{},"kind":"device"}}"#,
        n * 8
    ));
    let x0: Vec<u8> = (0..n)
        .flat_map(|k| (0.1 * f64::from(k)).to_le_bytes())
        .collect();
    mem.write(x, &x0).unwrap();
    let f = save(&x0);
    log.push(format!(
        r#"{{"event":"copy","dir":"htod","dst":"{x:#x}","src":"0x1000","bytes":256,"data":"{f}"}}"#
    ));
    let (coef, bias) = (
        mem.symbol(&module, "coef").unwrap(),
        mem.symbol(&module, "bias").unwrap(),
    );
    log.push(format!(
        r#"{{"event":"global","module":"{key}","symbol":"coef","ptr":"{coef:#x}","bytes":16}}"#
    ));
    let mut to_symbol = |mem: &mut Memory, log: &mut Vec<String>, at: u64, v: f64| {
        mem.write(at, &v.to_le_bytes()).unwrap();
        let f = save(&v.to_le_bytes());
        log.push(format!(
            r#"{{"event":"copy","dir":"htod","dst":"{at:#x}","src":"0x2000","bytes":8,"data":"{f}"}}"#
        ));
    };
    to_symbol(&mut mem, &mut log, coef, 1.5);
    to_symbol(&mut mem, &mut log, coef + 8, -0.25);
    let args = [x.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()];
    let a: Vec<interp::Arg> = args.iter().map(|b| interp::Arg(b.clone())).collect();
    interp::run(
        &module,
        "_Z5shiftPdi",
        interp::Launch::linear(1, 32),
        &a,
        &mut mem,
    )
    .unwrap();
    let hexes: Vec<String> = args
        .iter()
        .map(|b| format!("\"{}\"", crate::hex::encode(b)))
        .collect();
    log.push(format!(
        r#"{{"event":"launch","module":"{key}","kernel":"_Z5shiftPdi","grid":[1,1,1],"block":[32,1,1],"shared":0,"stream":"0x0","args":[{}]}}"#,
        hexes.join(",")
    ));
    to_symbol(&mut mem, &mut log, coef, 2.0);
    log.push(format!(
        r#"{{"event":"global","module":"{key}","symbol":"bias","ptr":"{bias:#x}","bytes":8}}"#
    ));
    let b = save(mem.read(bias, 8).unwrap());
    log.push(format!(
        r#"{{"event":"copy","dir":"dtoh","dst":"0x3000","src":"{bias:#x}","bytes":8,"data":"{b}"}}"#
    ));
    let last = mem.read(x, 256).unwrap().to_vec();
    let f = save(&last);
    log.push(format!(
        r#"{{"event":"copy","dir":"dtoh","dst":"0x3000","src":"{x:#x}","bytes":256,"data":"{f}"}}"#
    ));
    std::fs::write(dir.join("events.jsonl"), log.join("\n") + "\n").unwrap();

    let events = events::read(&dir.join("events.jsonl")).unwrap();
    let t = trace(&dir, &events, "vars", 90).unwrap();
    assert_eq!(t.counts.symbols, 1, "{}", t.spec);
    assert!(
        t.spec
            .contains("[symbols.coef]  # copied from the host at event 4, 5\ntype = \"u8\""),
        "{}",
        t.spec
    );
    let said = |what: &str| {
        assert!(
            t.notes.iter().any(|n| n.contains(what)),
            "{what}: {:#?}",
            t.notes
        )
    };
    said("a copy of 8 bytes to coef after the first launch");
    said("a copy back from bias");
    assert_eq!(t.counts.outputs, 1);
    let out = tmp.path().join("spec");
    let path = t.write(&out).unwrap();
    let (_, run) = replay(&path, VARIABLES_PTX);
    assert_eq!(run.buffer_bytes("buf0").unwrap(), last);
    // The same spec without the variable replays something else (coef = 0: x = bias).
    let start = t.spec.find("[symbols.coef]").unwrap();
    let end = start + t.spec[start..].find("\n\n").unwrap();
    let without = format!("{}{}", &t.spec[..start], &t.spec[end..]);
    let path = out.join("without.toml");
    std::fs::write(&path, &without).unwrap();
    let (_, run) = replay(&path, VARIABLES_PTX);
    assert_ne!(run.buffer_bytes("buf0").unwrap(), last);
}

/// An application of two translation units: the first (`PTX` with a `coef` of its own that it
/// never uses) and the second (`VARIABLES_PTX` whose kernel is also called `mean_of`). The
/// trace links them into one program, the second's `mean_of` and `coef` renamed, and the
/// replay gives the application's bytes.
#[test]
fn kernels_of_several_modules_are_linked_into_one_program_that_replays_to_the_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let first = PTX.replace(
        ".address_size 64\n",
        ".address_size 64\n\n.global .align 8 .b8 coef[16];\n",
    );
    let second = VARIABLES_PTX.replace("_Z5shiftPdi", "mean_of");
    let (a, b) = (
        mantissa_ptx::parse::parse(&first).module,
        mantissa_ptx::parse::parse(&second).module,
    );
    let (ka, kb) = (
        mantissa_fatbin::module_key(first.as_bytes()),
        mantissa_fatbin::module_key(second.as_bytes()),
    );
    std::fs::create_dir_all(dir.join("modules")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let mut log = Vec::new();
    for (key, text) in [(&ka, &first), (&kb, &second)] {
        std::fs::write(dir.join("modules").join(format!("{key}.ptx")), text).unwrap();
        log.push(format!(
            r#"{{"event":"load","module":"{key}","kind":"ptx","via":"cuModuleLoadData","replaced":false}}"#
        ));
    }
    // One memory for both modules, as one context holds both: `coef` is the second's.
    let mut mem = Memory::new();
    let n = 32u32;
    let x = mem.alloc(n as usize * 8);
    log.push(format!(
        r#"{{"event":"alloc","ptr":"{x:#x}","bytes":{},"kind":"device"}}"#,
        n * 8
    ));
    let x0: Vec<u8> = (0..n)
        .flat_map(|k| (1.0 + f64::from(k)).to_le_bytes())
        .collect();
    mem.write(x, &x0).unwrap();
    std::fs::write(dir.join("data/0.bin"), &x0).unwrap();
    log.push(format!(
        r#"{{"event":"copy","dir":"htod","dst":"{x:#x}","src":"0x1000","bytes":256,"data":"data/0.bin"}}"#
    ));
    let coef = mem.symbol(&b, "coef").unwrap();
    log.push(format!(
        r#"{{"event":"global","module":"{kb}","symbol":"coef","ptr":"{coef:#x}","bytes":16}}"#
    ));
    let c: Vec<u8> = [0.5f64, 0.125]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    mem.write(coef, &c).unwrap();
    std::fs::write(dir.join("data/1.bin"), &c).unwrap();
    log.push(format!(
        r#"{{"event":"copy","dir":"htod","dst":"{coef:#x}","src":"0x2000","bytes":16,"data":"data/1.bin"}}"#
    ));
    let launches: [(&mantissa_ptx::Module, &str, &str, Vec<Vec<u8>>); 2] = [
        (
            &a,
            ka.as_str(),
            "_Z5scalePddi",
            vec![
                x.to_le_bytes().to_vec(),
                3.0f64.to_le_bytes().to_vec(),
                n.to_le_bytes().to_vec(),
            ],
        ),
        (
            &b,
            kb.as_str(),
            "mean_of",
            vec![x.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()],
        ),
    ];
    for (module, key, kernel, args) in &launches {
        let a: Vec<interp::Arg> = args.iter().map(|b| interp::Arg(b.clone())).collect();
        interp::run(module, kernel, interp::Launch::linear(1, 32), &a, &mut mem).unwrap();
        let hexes: Vec<String> = args
            .iter()
            .map(|b| format!("\"{}\"", crate::hex::encode(b)))
            .collect();
        log.push(format!(
            r#"{{"event":"launch","module":"{key}","kernel":"{kernel}","grid":[1,1,1],"block":[32,1,1],"shared":0,"stream":"0x0","args":[{}]}}"#,
            hexes.join(",")
        ));
    }
    let last = mem.read(x, 256).unwrap().to_vec();
    std::fs::write(dir.join("data/2.bin"), &last).unwrap();
    log.push(format!(
        r#"{{"event":"copy","dir":"dtoh","dst":"0x3000","src":"{x:#x}","bytes":256,"data":"data/2.bin"}}"#
    ));
    std::fs::write(dir.join("events.jsonl"), log.join("\n") + "\n").unwrap();

    let events = events::read(&dir.join("events.jsonl")).unwrap();
    let t = trace(&dir, &events, "two", 90).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((t.counts.launches, t.counts.kernels), (2, 2));
    assert!(t.spec.contains("linked into one"), "{}", t.spec);
    assert!(t.spec.contains("launch = \"mean_of_m1\""), "{}", t.spec);
    assert!(t.spec.contains("[symbols.coef_m1]"), "{}", t.spec);
    let out = tmp.path().join("spec");
    let path = t.write(&out).unwrap();
    let ptx = std::fs::read_to_string(out.join("two.ptx")).unwrap();
    let (_, run) = replay(&path, &ptx);
    assert_eq!(run.buffer_bytes("buf0").unwrap(), last);
}

/// cudaMemcpy2D both ways on a pitched allocation (rows of 6 doubles, 10 apart, from row 1 and
/// element 1): the trace copies the rows in a loop, reads them back into a packed copy, and
/// the replay gives the application's bytes for the rows and for the whole allocation.
#[test]
fn pitched_2d_copies_replay_row_by_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let module = mantissa_ptx::parse::parse(PTX).module;
    let key = mantissa_fatbin::module_key(PTX.as_bytes());
    std::fs::create_dir_all(dir.join("modules")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("modules").join(format!("{key}.ptx")), PTX).unwrap();
    let mut mem = Memory::new();
    let (pitch, width, rows) = (80u64, 48u64, 3u64);
    let x = mem.alloc(320);
    let origin = x + pitch + 8;
    let host: Vec<u8> = (0..rows * 6)
        .flat_map(|k| (0.5 + k as f64).to_le_bytes())
        .collect();
    for r in 0..rows {
        let row = &host[(r * width) as usize..((r + 1) * width) as usize];
        mem.write(origin + r * pitch, row).unwrap();
    }
    std::fs::write(dir.join("data/0.bin"), &host).unwrap();
    let args = [
        x.to_le_bytes().to_vec(),
        2.0f64.to_le_bytes().to_vec(),
        40u32.to_le_bytes().to_vec(),
    ];
    let a: Vec<interp::Arg> = args.iter().map(|b| interp::Arg(b.clone())).collect();
    interp::run(
        &module,
        "_Z5scalePddi",
        interp::Launch::linear(2, 32),
        &a,
        &mut mem,
    )
    .unwrap();
    let back: Vec<u8> = (0..rows)
        .flat_map(|r| {
            mem.read(origin + r * pitch, width as usize)
                .unwrap()
                .to_vec()
        })
        .collect();
    std::fs::write(dir.join("data/1.bin"), &back).unwrap();
    let all = mem.read(x, 320).unwrap().to_vec();
    std::fs::write(dir.join("data/2.bin"), &all).unwrap();
    let hexes: Vec<String> = args
        .iter()
        .map(|b| format!("\"{}\"", crate::hex::encode(b)))
        .collect();
    let shape = |dir: &str, dst: u64, src: u64, file: &str| {
        format!(
            r#"{{"event":"copy","dir":"{dir}","dst":"{dst:#x}","src":"{src:#x}","bytes":144,"shape":"2d","width":48,"height":3,"depth":1,"src_pitch":{},"dst_pitch":{},"data":"{file}"}}"#,
            if dir == "htod" { 48 } else { 80 },
            if dir == "htod" { 80 } else { 48 },
        )
    };
    let log = [
        format!(
            r#"{{"event":"load","module":"{key}","kind":"ptx","via":"cuModuleLoadData","replaced":false}}"#
        ),
        format!(r#"{{"event":"alloc","ptr":"{x:#x}","bytes":320,"kind":"pitch"}}"#),
        format!(r#"{{"event":"memset","dst":"{x:#x}","value":0,"width":1,"count":320}}"#),
        shape("htod", origin, 0x1000, "data/0.bin"),
        format!(
            r#"{{"event":"launch","module":"{key}","kernel":"_Z5scalePddi","grid":[2,1,1],"block":[32,1,1],"shared":0,"stream":"0x0","args":[{}]}}"#,
            hexes.join(",")
        ),
        shape("dtoh", 0x2000, origin, "data/1.bin"),
        format!(
            r#"{{"event":"copy","dir":"dtoh","dst":"0x3000","src":"{x:#x}","bytes":320,"data":"data/2.bin"}}"#
        ),
    ];
    std::fs::write(dir.join("events.jsonl"), log.join("\n") + "\n").unwrap();

    let events = events::read(&dir.join("events.jsonl")).unwrap();
    let t = trace(&dir, &events, "pitched", 90).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        t.spec.contains("repeat = 3\ncounter = \"row\"\nsteps = [{ copy = { from = \"in0\", to = \"buf0\", src_offset = \"row * 6\", dst_offset = \"11 + row * 10\", len = 6 } }]"),
        "{}",
        t.spec
    );
    assert_eq!(t.counts.outputs, 2);
    let out = tmp.path().join("spec");
    let path = t.write(&out).unwrap();
    let (spec, run) = replay(&path, PTX);
    for o in &spec.outputs {
        let got = run.buffer_bytes(&o.buffer).unwrap();
        let (reference, _) = o.reference.as_ref().expect("a reference");
        let want = std::fs::read(reference).unwrap();
        assert_eq!(
            &want[want.len() - got.len()..],
            &got[..],
            "output {}",
            o.buffer
        );
    }
    assert_eq!(run.buffer_bytes("buf0").unwrap(), all);
}
