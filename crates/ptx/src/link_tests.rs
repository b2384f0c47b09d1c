//! Tests of the runtime merge: each rule of the module docs on a case whose answer is known, and
//! ptxas on every merged module that should load.

use super::*;
use crate::rewrite::add_global;
use crate::test_support::{assert_sound, parse_clean};

const LOOP_SUM: &str = include_str!("../tests/fixtures/loop_sum.default.ptx");
const HAND_WRITTEN: &str = include_str!("../tests/fixtures/hand_written.ptx");

/// NVRTC 13.0.88's PTX (`--gpu-architecture=compute_90 -rdc=true -lineinfo`, comments removed)
/// of:
/// ```cuda
/// extern __device__ unsigned long long __mantissa_counts[];
/// extern "C" __device__ __noinline__ void mantissa_count_hit(unsigned int idx)
/// { atomicAdd(&__mantissa_counts[idx], 1ULL); }
/// static __device__ __noinline__ void helper_internal(unsigned int idx)
/// { atomicAdd(&__mantissa_counts[idx], 2ULL); }
/// extern "C" __device__ __noinline__ void mantissa_count_hit2(unsigned int idx)
/// { helper_internal(idx); }
/// ```
/// plus a runtime global of its own, `mantissa_test_state`.
const RUNTIME: &str = "\
.version 9.0
.target sm_90
.address_size 64

.extern .global .align 8 .b8 __mantissa_counts[];
.visible .global .align 4 .u32 mantissa_test_state;

.visible .func mantissa_count_hit(
	.param .b32 mantissa_count_hit_param_0
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;
	.loc	1 2 0


	ld.param.u32 	%r1, [mantissa_count_hit_param_0];
	.loc	1 4 5
	mul.wide.u32 	%rd1, %r1, 8;
	mov.u64 	%rd2, __mantissa_counts;
	add.s64 	%rd3, %rd2, %rd1;
	atom.global.add.u64 	%rd4, [%rd3], 1;
	.loc	1 5 1
	ret;

}
.func _ZN35_INTERNAL_00000000_5_rt_cu_67db0f3a15helper_internalEj(
	.param .b32 _ZN35_INTERNAL_00000000_5_rt_cu_67db0f3a15helper_internalEj_param_0
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;
	.loc	1 6 0


	ld.param.u32 	%r1, [_ZN35_INTERNAL_00000000_5_rt_cu_67db0f3a15helper_internalEj_param_0];
	.loc	1 6 37
	mul.wide.u32 	%rd1, %r1, 8;
	mov.u64 	%rd2, __mantissa_counts;
	add.s64 	%rd3, %rd2, %rd1;
	atom.global.add.u64 	%rd4, [%rd3], 2;
	ret;

}
.visible .func mantissa_count_hit2(
	.param .b32 mantissa_count_hit2_param_0
)
{
	.reg .b32 	%r<2>;
	.loc	1 7 0


	ld.param.u32 	%r1, [mantissa_count_hit2_param_0];
	.loc	1 9 5
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r1;
	call.uni 
	_ZN35_INTERNAL_00000000_5_rt_cu_67db0f3a15helper_internalEj, 
	(
	param0
	);
	} // callseq 0
	.loc	1 10 1
	ret;

}

	.file	1 \"/tmp/rt.cu\"
";

/// `loop_sum` with the counter array (added as a pass adds it) and a prototype of the runtime
/// function, called once before the kernel's first instruction.
fn user_calling_the_runtime() -> Module {
    let mut m = parse_clean("loop_sum", LOOP_SUM);
    add_global(&mut m, "u64", 8, "__mantissa_counts", 4);
    let proto = parse_clean(
        "prototype",
        ".version 9.0\n.target sm_90\n.address_size 64\n\
         .extern .func mantissa_count_hit(\n\t.param .b32 p\n);\n",
    );
    let proto = proto.functions().next().unwrap().clone();
    let at = crate::rewrite::first_function(&m);
    m.items.insert(at, Item::Function(proto));
    let first = m
        .function("loop_sum")
        .unwrap()
        .instructions()
        .next()
        .unwrap()
        .id;
    let mut rw = crate::rewrite::Rewriter::new(&m, "loop_sum").unwrap();
    rw.insert_before(
        first,
        crate::rewrite::call("mantissa_count_hit", &[("b32", crate::rewrite::int(3))]),
        crate::rewrite::Guarding::Keep,
    )
    .unwrap();
    rw.apply(&mut m).unwrap();
    m
}

fn names(m: &Module) -> Vec<String> {
    m.items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => Some(format!("var {}", v.name)),
            Item::Function(f) if f.body.is_none() => Some(format!("decl {}", f.name)),
            Item::Function(f) => Some(format!("fn {}", f.name)),
            Item::File { index, path, .. } => Some(format!("file {index} {path}")),
            _ => None,
        })
        .collect()
}

#[test]
fn a_runtime_merges_into_one_module_that_assembles() {
    let user = user_calling_the_runtime();
    let merged = merge_runtime(&user, RUNTIME).unwrap_or_else(|e| panic!("{e}"));
    assert_sound("merged", &merged);
    // Order: user's globals, runtime's globals and functions, user's functions, files (the
    // runtime's renumbered after the user's one file). The user's prototype and the runtime's
    // extern are both resolved, so neither remains.
    let expected = [
        "var __mantissa_counts".to_string(),
        "var mantissa_test_state".into(),
        "fn mantissa_count_hit".into(),
        "fn _ZN35_INTERNAL_00000000_5_rt_cu_67db0f3a15helper_internalEj".into(),
        "fn mantissa_count_hit2".into(),
        "fn loop_sum".into(),
        format!("file 1 {}", user.files()[0].1),
        "file 2 /tmp/rt.cu".into(),
    ];
    assert_eq!(names(&merged), expected);
    // The user's code is untouched: same statements, same ids, same `.loc`s.
    assert_eq!(merged.function("loop_sum"), user.function("loop_sum"));
    // The runtime's `.loc`s now name file 2; its ids follow the user's.
    for f in merged.functions().filter(|f| f.name != "loop_sum") {
        for s in f.body.iter().flatten() {
            if let Statement::Loc(l) = s {
                assert_eq!(l.file, 2, "{}", f.name);
            }
        }
        for i in f.instructions() {
            assert!(i.id.0 >= user.next_inst_id && i.id.0 < merged.next_inst_id);
        }
    }
    let runtime_insts: u32 = merged
        .functions()
        .filter(|f| f.name != "loop_sum")
        .map(|f| f.instructions().count() as u32)
        .sum();
    assert_eq!(merged.next_inst_id, user.next_inst_id + runtime_insts);
    assert_eq!(merged.kernels().count(), 1);
}

#[test]
fn the_version_is_the_newer_of_the_two() {
    let version = |m: &Module| {
        m.items.iter().find_map(|i| match i {
            Item::Version(v) => Some(v.clone()),
            _ => None,
        })
    };
    let plain_runtime = RUNTIME.replace(".extern .global .align 8 .b8 __mantissa_counts[];", "");
    let plain_runtime = plain_runtime.replace("__mantissa_counts", "mantissa_test_state");
    // hand_written is .version 8.5: the runtime's 9.0 wins.
    let old = parse_clean("hand_written", HAND_WRITTEN);
    let merged = merge_runtime(&old, &plain_runtime).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(version(&merged).as_deref(), Some("9.0"));
    assert_sound("8.5 + 9.0", &merged);
    // A newer user module keeps its own.
    let new = parse_clean(
        "loop_sum 9.1",
        &LOOP_SUM.replace(".version 9.0", ".version 9.1"),
    );
    let merged = merge_runtime(&new, &plain_runtime).unwrap();
    assert_eq!(version(&merged).as_deref(), Some("9.1"));
    // Numbers, not strings: 8.10 is newer than 8.9.
    let a = parse_clean("8.9", &LOOP_SUM.replace(".version 9.0", ".version 8.9"));
    let merged =
        merge_runtime(&a, &plain_runtime.replace(".version 9.0", ".version 8.10")).unwrap();
    assert_eq!(version(&merged).as_deref(), Some("8.10"));
    let bad =
        merge_runtime(&a, &plain_runtime.replace(".version 9.0", ".version nine")).unwrap_err();
    assert!(
        matches!(
            bad,
            LinkError::RuntimeUnparsed { .. } | LinkError::BadVersion { .. }
        ),
        "{bad}"
    );
}

#[test]
fn targets_must_be_compatible() {
    let user = user_calling_the_runtime();
    let with_target = |t: &str| RUNTIME.replace(".target sm_90", &format!(".target {t}"));
    // Older runtime architecture: fine, and the user's target stays.
    let merged = merge_runtime(&user, &with_target("sm_80")).unwrap();
    assert!(merged.items.contains(&Item::Target(vec!["sm_90".into()])));
    assert_sound("sm_80 runtime", &merged);
    for (runtime, why) in [
        ("sm_100", "newer"),
        ("sm_90a", "architecture-specific"),
        ("sm_80, debug", "target options"),
    ] {
        let err = merge_runtime(&user, &with_target(runtime)).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, LinkError::TargetMismatch { .. }) && msg.contains(why),
            "{runtime}: {msg}"
        );
        assert!(
            msg.contains("compile the runtime for the user's architecture") && !msg.contains('\n')
        );
    }
    // An arch-specific user module takes a plain runtime of its architecture or older.
    let user_a = parse_clean(
        "sm_90a",
        &user.to_string().replace(".target sm_90", ".target sm_90a"),
    );
    let merged = merge_runtime(&user_a, RUNTIME).unwrap();
    assert!(merged.items.contains(&Item::Target(vec!["sm_90a".into()])));
    let err = merge_runtime(
        &user,
        &RUNTIME.replace(".address_size 64", ".address_size 32"),
    );
    assert_eq!(
        err.unwrap_err(),
        LinkError::AddressSize {
            user: 64,
            runtime: 32
        }
    );
    let err = merge_runtime(&user, &RUNTIME.replace(".target sm_90\n", ""));
    assert_eq!(
        err.unwrap_err(),
        LinkError::MissingDirective {
            module: "runtime",
            directive: ".target"
        }
    );
}

#[test]
fn names_clash_or_resolve() {
    let user = user_calling_the_runtime();
    // A runtime function named like the user's kernel, a runtime global like the user's global.
    let err = merge_runtime(&user, &RUNTIME.replace("mantissa_count_hit2", "loop_sum"));
    assert_eq!(err.unwrap_err(), LinkError::Clash("loop_sum".into()));
    let clash = RUNTIME.replace(
        ".visible .global .align 4 .u32 mantissa_test_state;",
        ".visible .global .align 4 .u32 mantissa_test_state;\n.global .align 8 .u64 __mantissa_counts[2];",
    );
    let clash = clash.replace(".extern .global .align 8 .b8 __mantissa_counts[];", "");
    assert_eq!(
        merge_runtime(&user, &clash).unwrap_err(),
        LinkError::Clash("__mantissa_counts".into())
    );
    // The runtime's extern that the user does not define.
    let bare = parse_clean("loop_sum", LOOP_SUM);
    assert_eq!(
        merge_runtime(&bare, RUNTIME).unwrap_err(),
        LinkError::Unresolved("__mantissa_counts".into())
    );
    // A user prototype that disagrees with the definition.
    let wrong = parse_clean(
        "wrong prototype",
        &user.to_string().replace(
            ".extern .func mantissa_count_hit(\n\t.param .b32 p",
            ".extern .func mantissa_count_hit(\n\t.param .b64 p",
        ),
    );
    let err = merge_runtime(&wrong, RUNTIME).unwrap_err();
    assert_eq!(
        err,
        LinkError::SignatureMismatch {
            name: "mantissa_count_hit".into(),
            user: "(.param .b64)".into(),
            runtime: "(.param .b32)".into()
        }
    );
    // A runtime the parser does not fully understand is refused, not half merged.
    let err = merge_runtime(&user, &format!("{RUNTIME}\nwhat is this;\n")).unwrap_err();
    assert!(matches!(err, LinkError::RuntimeUnparsed { .. }), "{err}");
}

/// A user global that the runtime needs but that comes after a function is moved before the
/// runtime, which must see it declared.
#[test]
fn a_late_user_global_moves_before_the_runtime() {
    let mut user = user_calling_the_runtime();
    let k = user
        .items
        .iter()
        .position(|i| matches!(i, Item::Var(v) if v.name == "__mantissa_counts"))
        .unwrap();
    let var = user.items.remove(k);
    user.items.push(var);
    let merged = merge_runtime(&user, RUNTIME).unwrap();
    let order = names(&merged);
    let pos = |s: &str| order.iter().position(|n| n == s).unwrap();
    assert!(
        pos("var __mantissa_counts") < pos("fn mantissa_count_hit"),
        "{order:?}"
    );
    assert_sound("late global", &merged);
}
