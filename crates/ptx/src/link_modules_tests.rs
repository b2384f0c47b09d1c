//! Tests of linking an application's modules: each rule of the module docs on a case whose
//! answer is known, the linked module's kernels run on the interpreter against each module run
//! on its own, and ptxas on the linked module where it is installed.

use super::*;
use crate::interp::{self, Arg, Launch, Memory};
use crate::test_support::{assert_sound, parse_clean};

/// A translation unit: `step` multiplies by `coef` through a helper, `scale`; a string for
/// `printf` and its `vprintf` declaration, as nvcc writes them.
const FIRST: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.const .align 8 .f64 coef = 0d4000000000000000;
.global .align 1 .b8 $str[3] = {104, 105, 0};

.func  (.param .b64 func_retval0) scale(
	.param .b64 scale_param_0
)
{
	.reg .f64 	%fd<4>;
	ld.param.f64 	%fd1, [scale_param_0];
	ld.const.f64 	%fd2, [coef];
	mul.rn.f64 	%fd3, %fd1, %fd2;
	st.param.f64 	[func_retval0], %fd3;
	ret;
}

.visible .entry step(
	.param .u64 step_param_0
)
{
	.reg .b64 	%rd<3>;
	.reg .f64 	%fd<3>;
	ld.param.u64 	%rd1, [step_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.f64 	%fd1, [%rd2];
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd1;
	.param .b64 retval0;
	call.uni (retval0), scale, (param0);
	ld.param.f64 	%fd2, [retval0];
	}
	st.global.f64 	[%rd2], %fd2;
	ret;
}
"#;

/// Another translation unit defining the same names differently (`scale` adds `coef`, which is
/// 0.5 here, and its own `step`), plus `other`, which stores `$str`'s first byte; it names
/// `coef` in a local of its own in `shadowed`, which must stay that local.
const SECOND: &str = r#"
.version 8.5
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.const .align 8 .f64 coef = 0d3FE0000000000000;
.global .align 1 .b8 $str[4] = {121, 111, 117, 0};

.func  (.param .b64 func_retval0) scale(
	.param .b64 scale_param_0
)
{
	.reg .f64 	%fd<4>;
	ld.param.f64 	%fd1, [scale_param_0];
	ld.const.f64 	%fd2, [coef];
	add.rn.f64 	%fd3, %fd1, %fd2;
	st.param.f64 	[func_retval0], %fd3;
	ret;
}

.visible .entry step(
	.param .u64 step_param_0
)
{
	.reg .b64 	%rd<3>;
	.reg .f64 	%fd<3>;
	ld.param.u64 	%rd1, [step_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.f64 	%fd1, [%rd2];
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd1;
	.param .b64 retval0;
	call.uni (retval0), scale, (param0);
	ld.param.f64 	%fd2, [retval0];
	}
	st.global.f64 	[%rd2], %fd2;
	ret;
}

.visible .entry other(
	.param .u64 other_param_0
)
{
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<4>;
	.reg .f64 	%fd<2>;
	ld.param.u64 	%rd1, [other_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u64 	%rd3, $str;
	ld.global.u8 	%rs1, [$str];
	cvt.u32.u16 	%r1, %rs1;
	cvt.rn.f64.u32 	%fd1, %r1;
	st.global.f64 	[%rd2], %fd1;
	ret;
}

.visible .entry shadowed(
	.param .u64 shadowed_param_0
)
{
	.local .align 8 .b8 coef[8];
	.reg .b64 	%rd<3>;
	.reg .f64 	%fd<2>;
	ld.param.u64 	%rd1, [shadowed_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.f64 	%fd1, 0d4008000000000000;
	st.local.f64 	[coef], %fd1;
	ld.local.f64 	%fd1, [coef];
	st.global.f64 	[%rd2], %fd1;
	ret;
}
"#;

/// `kernel` of `module` on one thread, given a pointer to one double holding `x`: the double
/// after.
fn run_one(module: &Module, kernel: &str, x: f64) -> f64 {
    // The interpreter runs calls inlined.
    let module = &crate::pass::inline::inline_every_call(module)
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    let mut mem = Memory::new();
    let p = mem.f64s(&[x]);
    interp::run(module, kernel, Launch::single(), &[Arg::u64(p)], &mut mem)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    mem.read_f64s(p, 1).unwrap()[0]
}

#[test]
fn clashing_names_are_renamed_in_the_later_module_and_each_kernel_runs_as_its_own_module_did() {
    let (a, b) = (parse_clean("first", FIRST), parse_clean("second", SECOND));
    let linked = link_modules(&[a.clone(), b.clone()]).unwrap();
    let renamed = &linked.renamed[1];
    let expect = |old: &str, new: &str| {
        assert_eq!(
            renamed.get(old).map(String::as_str),
            Some(new),
            "{renamed:?}"
        )
    };
    expect("coef", "coef_m1");
    expect("scale", "scale_m1");
    expect("step", "step_m1");
    expect("$str", "$str_m1");
    assert!(linked.renamed[0].is_empty());
    assert!(!renamed.contains_key("other") && !renamed.contains_key("vprintf"));
    let text = assert_sound("linked", &linked.module);
    assert_eq!(
        text.matches("vprintf").count(),
        3,
        "one declaration:\n{text}"
    );
    assert!(text.contains(".version 8.5"), "the newest version:\n{text}");
    let m = &linked.module;
    for x in [3.0, -0.75, 1e300] {
        assert_eq!(run_one(m, "step", x), run_one(&a, "step", x));
        assert_eq!(run_one(m, "step_m1", x), run_one(&b, "step", x));
    }
    assert_eq!(run_one(m, "step", 3.0), 6.0);
    assert_eq!(run_one(m, "step_m1", 3.0), 3.5);
    assert_eq!(run_one(m, "other", 0.0), f64::from(b'y'));
    // The local `coef` stays the kernel's own.
    let shadowed = &text[text.find(".entry shadowed").unwrap()..];
    assert!(
        shadowed.contains("[coef]") && !shadowed.contains("coef_m1"),
        "{shadowed}"
    );
}

#[test]
fn line_info_and_instruction_ids_follow_the_earlier_modules() {
    let with_file = |ptx: &str, path: &str| {
        let mut text = ptx.replace(
            "ld.param.u64 \t%rd1, [step_param_0];",
            "\t.loc\t1 7 0\n\tld.param.u64 \t%rd1, [step_param_0];",
        );
        text.push_str(&format!("\t.file\t1 \"{path}\"\n"));
        parse_clean(path, &text)
    };
    let (a, b) = (with_file(FIRST, "a.cu"), with_file(SECOND, "b.cu"));
    let linked = link_modules(&[a.clone(), b]).unwrap();
    let text = assert_sound("linked with lines", &linked.module);
    assert!(
        text.contains(".file\t2 \"b.cu\"") || text.contains(".file 2 \"b.cu\""),
        "{text}"
    );
    let ids: Vec<u32> = linked
        .module
        .functions()
        .flat_map(|f| f.instructions().map(|i| i.id.0).collect::<Vec<_>>())
        .collect();
    let unique: HashSet<u32> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "ids are unique");
    assert!(ids.iter().all(|&i| i < linked.module.next_inst_id));
    // The first module keeps its ids (what reports on it name).
    let first_ids: Vec<u32> = a
        .functions()
        .flat_map(|f| f.instructions().map(|i| i.id.0).collect::<Vec<_>>())
        .collect();
    assert_eq!(&ids[..first_ids.len()], &first_ids[..]);
}

#[test]
fn what_cannot_be_one_program_is_refused_in_one_line() {
    let a = parse_clean("first", FIRST);
    let other_target = parse_clean("sm_80", &FIRST.replace("sm_90", "sm_80"));
    let e = link_modules(&[a.clone(), other_target])
        .unwrap_err()
        .to_string();
    assert!(e.contains("target sm_90 and sm_80"), "{e}");
    // Relocatable device code: a helper one module declares and the other defines.
    let declares = parse_clean(
        "rdc",
        &SECOND.replace(
            ".func  (.param .b64 func_retval0) scale(\n\t.param .b64 scale_param_0\n)\n{",
            ".extern .func  (.param .b64 func_retval0) scale(\n\t.param .b64 scale_param_0\n)\n;\n.func  (.param .b64 func_retval0) scale_unused(\n\t.param .b64 scale_param_0\n)\n{",
        ),
    );
    let e = link_modules(&[a, declares]).unwrap_err().to_string();
    assert!(
        e.contains("'scale' is declared .extern in one module and defined in another"),
        "{e}"
    );
    assert!(link_modules(&[]).unwrap().module.items.is_empty());
}

/// nvcc 13.0's PTX (`-arch=sm_90 -ptx`) of two translation units of one program, each with a
/// `__constant__ double coef` (2 and 0.5) and a `static` helper (which nvcc names per unit):
/// linked, the second's `coef` is renamed, ptxas accepts the module, and each kernel computes
/// what it computes in its own module.
#[test]
fn two_translation_units_built_by_nvcc_link_and_run_as_built() {
    let a = parse_clean("two_a", include_str!("../tests/fixtures/two_a.ptx"));
    let b = parse_clean("two_b", include_str!("../tests/fixtures/two_b.ptx"));
    let linked = link_modules(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(
        linked.renamed[1].get("coef").map(String::as_str),
        Some("coef_m1")
    );
    assert_eq!(linked.renamed[1].len(), 1, "{:?}", linked.renamed[1]);
    assert_sound("two units linked", &linked.module);
    // `kernel(u, 1)` on one thread: u[0] after.
    let run = |module: &Module, kernel: &str, x: f64| {
        let module = &crate::pass::inline::inline_every_call(module)
            .unwrap()
            .module;
        let mut mem = Memory::new();
        let p = mem.f64s(&[x]);
        let args = [Arg::u64(p), Arg::i32(1)];
        interp::run(module, kernel, Launch::single(), &args, &mut mem)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        mem.read_f64s(p, 1).unwrap()[0]
    };
    for (module, kernel) in [(&a, "_Z5firstPdi"), (&b, "_Z6secondPdi")] {
        for x in [3.0, -1.25] {
            assert_eq!(run(&linked.module, kernel, x), run(module, kernel, x));
        }
    }
    assert_eq!(run(&linked.module, "_Z5firstPdi", 3.0), 6.0);
    assert_eq!(run(&linked.module, "_Z6secondPdi", 3.0), 3.5);
}
