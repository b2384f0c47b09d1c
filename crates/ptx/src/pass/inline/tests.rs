//! Tests of the inliner: a hand-written kernel calling a two-way `.func` (a branch, two `ret`s,
//! a 16-byte return, a guarded call) runs in the interpreter after inlining and gives what the
//! same computation gives in Rust; nested calls are inlined in rounds; what cannot be inlined is
//! refused with the reason; every inlined module assembles with ptxas.

use super::*;
use crate::interp::{run, Arg, Launch, Memory};
use crate::test_support::{assert_sound, parse_clean};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\n";

/// `(flag == 0 ? 2x : -x, x)`, with a branch and a `ret` on each path.
const TWICE_OR_NEG: &str = r#"
.visible .func  (.param .align 8 .b8 func_retval0[16]) twice_or_neg(
	.param .b64 twice_or_neg_param_0,
	.param .b32 twice_or_neg_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<4>;

	ld.param.f64 	%fd1, [twice_or_neg_param_0];
	ld.param.u32 	%r1, [twice_or_neg_param_1];
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	neg.f64 	%fd2, %fd1;
	st.param.f64 	[func_retval0], %fd2;
	st.param.f64 	[func_retval0+8], %fd1;
	ret;
$L__BB0_2:
	add.rn.f64 	%fd3, %fd1, %fd1;
	st.param.v2.f64 	[func_retval0], {%fd3, %fd1};
	ret;
}
"#;

/// out[t] = first + second, out2[t] = x: first = twice_or_neg(x[t], t & 1), second =
/// twice_or_neg(first, 0).0 for t < 2 (a guarded call), else 0.
const KERNEL: &str = r#"
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1,
	.param .u64 k_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .f64 	%fd<6>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	ld.param.u64 	%rd3, [k_param_2];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd4, %r1, 8;
	add.s64 	%rd5, %rd1, %rd4;
	ld.global.f64 	%fd1, [%rd5];
	and.b32 	%r2, %r1, 1;
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd1;
	.param .b32 param1;
	st.param.b32 	[param1], %r2;
	.param .align 8 .b8 retval0[16];
	call.uni (retval0), twice_or_neg, (param0, param1);
	ld.param.f64 	%fd2, [retval0];
	ld.param.f64 	%fd3, [retval0+8];
	}
	setp.lt.u32 	%p1, %r1, 2;
	mov.f64 	%fd4, 0d0000000000000000;
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd2;
	.param .b32 param1;
	st.param.b32 	[param1], 0;
	.param .align 8 .b8 retval0[16];
	@%p1 call (retval0), twice_or_neg, (param0, param1);
	@%p1 ld.param.f64 	%fd4, [retval0];
	}
	add.rn.f64 	%fd5, %fd2, %fd4;
	add.s64 	%rd6, %rd2, %rd4;
	st.global.f64 	[%rd6], %fd5;
	add.s64 	%rd7, %rd3, %rd4;
	st.global.f64 	[%rd7], %fd3;
	ret;
}
"#;

fn module(funcs: &str, kernel: &str) -> Module {
    parse_clean("inline", &format!("{HEADER}{funcs}{kernel}"))
}

fn reference(t: usize, x: f64) -> (f64, f64) {
    let f = |x: f64, flag: usize| if flag == 0 { 2.0 * x } else { -x };
    let first = f(x, t & 1);
    let second = if t < 2 { f(first, 0) } else { 0.0 };
    (first + second, x)
}

/// Runs kernel `k` of `m` on `x` (one thread per element): (out, out2).
fn go(m: &Module, x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut mem = Memory::new();
    let input = mem.f64s(x);
    let out = mem.f64s(&vec![7.0; x.len()]);
    let out2 = mem.f64s(&vec![7.0; x.len()]);
    let args = [Arg::u64(input), Arg::u64(out), Arg::u64(out2)];
    run(m, "k", Launch::linear(1, x.len() as u32), &args, &mut mem)
        .unwrap_or_else(|e| panic!("{e}"));
    (
        mem.read_f64s(out, x.len()).unwrap(),
        mem.read_f64s(out2, x.len()).unwrap(),
    )
}

#[test]
fn an_inlined_call_computes_what_the_call_did() {
    let m = module(TWICE_OR_NEG, KERNEL);
    let out = inline(&m, &["twice_or_neg"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.report.inlined, [("twice_or_neg".to_string(), 2usize)]);
    assert_eq!(out.report.removed, ["twice_or_neg"]);
    assert!(out.module.function("twice_or_neg").is_none());
    let calls = out
        .module
        .functions()
        .flat_map(|f| f.instructions())
        .filter(|i| {
            let op = i.decode();
            op.is_call() || i.space() == "param" && !matches!(op.kind, OpKind::Load(_))
        })
        .count();
    assert_eq!(calls, 0, "{}", out.module);
    let x = [1.5, -2.25, 3.0e-300, 7.0, -0.0, 1e300];
    let (got, got2) = go(&out.module, &x);
    for (t, &v) in x.iter().enumerate() {
        let (want, want2) = reference(t, v);
        assert_eq!(got[t].to_bits(), want.to_bits(), "thread {t}");
        assert_eq!(got2[t].to_bits(), want2.to_bits(), "thread {t}");
    }
    // Instruction ids stay unique and the kernel's own instructions keep theirs.
    let ids: Vec<InstId> = out
        .module
        .functions()
        .flat_map(|f| f.instructions())
        .map(|i| i.id)
        .collect();
    let unique: HashSet<InstId> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len());
    let kernel_ids = |m: &Module| -> HashSet<InstId> {
        m.function("k")
            .unwrap()
            .instructions()
            .map(|i| i.id)
            .collect()
    };
    let kept = kernel_ids(&m)
        .into_iter()
        .filter(|id| kernel_ids(&out.module).contains(id))
        .count();
    let original_non_param = m
        .function("k")
        .unwrap()
        .instructions()
        .filter(|i| {
            !i.decode().is_call()
                && !i.to_string().contains("[param")
                && !i.to_string().contains("retval0")
        })
        .count();
    assert_eq!(kept, original_non_param);
    assert_sound("inlined", &out.module);
}

/// A chosen function that calls another chosen one: both inlined, in two rounds.
#[test]
fn nested_calls_are_inlined_and_recursion_is_refused() {
    let outer = r#"
.visible .func  (.param .align 8 .b8 func_retval0[16]) outer(
	.param .b64 outer_param_0,
	.param .b32 outer_param_1
)
{
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<4>;

	ld.param.f64 	%fd1, [outer_param_0];
	ld.param.u32 	%r1, [outer_param_1];
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd1;
	.param .b32 param1;
	st.param.b32 	[param1], %r1;
	.param .align 8 .b8 retval0[16];
	call.uni (retval0), twice_or_neg, (param0, param1);
	ld.param.f64 	%fd2, [retval0];
	ld.param.f64 	%fd3, [retval0+8];
	}
	st.param.f64 	[func_retval0], %fd2;
	st.param.f64 	[func_retval0+8], %fd3;
	ret;
}
"#;
    let kernel = KERNEL.replace("twice_or_neg,", "outer,");
    let m = module(&format!("{TWICE_OR_NEG}{outer}"), &kernel);
    let out = inline(&m, &["outer", "twice_or_neg"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.report.inlined,
        [
            ("outer".to_string(), 2usize),
            ("twice_or_neg".to_string(), 2)
        ]
    );
    assert_eq!(out.report.removed.len(), 2);
    let x = [3.5, -1.0, 0.25];
    let (got, _) = go(&out.module, &x);
    for (t, &v) in x.iter().enumerate() {
        assert_eq!(got[t].to_bits(), reference(t, v).0.to_bits(), "thread {t}");
    }
    assert_sound("nested", &out.module);

    // Only `outer` chosen: its copies still call twice_or_neg, which stays.
    let out = inline(&m, &["outer"]).unwrap();
    assert!(out.module.function("twice_or_neg").is_some());
    assert_sound("outer only", &out.module);

    let selfish = outer.replace("twice_or_neg,", "outer,");
    let m = module(&format!("{TWICE_OR_NEG}{selfish}"), &kernel);
    assert_eq!(
        inline(&m, &["outer"]).unwrap_err(),
        InlineError::Recursive("outer".into())
    );
}

#[test]
fn what_cannot_be_inlined_is_refused_with_the_reason() {
    let m = module(TWICE_OR_NEG, KERNEL);
    assert_eq!(
        inline(&m, &["nowhere"]).unwrap_err(),
        InlineError::NoBody("nowhere".into())
    );
    let depot = TWICE_OR_NEG.replace(
        "\t.reg .pred 	%p<2>;",
        "\t.local .align 8 .b8 \t__local_depot0[16];\n\t.reg .pred 	%p<2>;",
    );
    let m = module(&depot, KERNEL);
    let e = inline(&m, &["twice_or_neg"]).unwrap_err();
    assert!(
        matches!(e, InlineError::Storage { ref name, .. } if name == "__local_depot0"),
        "{e}"
    );
    assert!(e.to_string().contains("local depot"), "{e}");
    let address = TWICE_OR_NEG.replace(
        "\tsetp.eq.s32",
        "\t.reg .b64 %rdx;\n\tmov.u64 %rdx, twice_or_neg_param_0;\n\tsetp.eq.s32",
    );
    let m = module(&address, KERNEL);
    let e = inline(&m, &["twice_or_neg"]).unwrap_err();
    assert!(e.to_string().contains("address"), "{e}");
}
