//! CPU tests of shared-memory shadows: the hand-written `shared.ptx` gets one shadow area in
//! the kernel that stages floats through static shared memory, its shared loads, stores and
//! atomics go through it, dynamic shared memory re-seeds, a kernel without shared memory gets
//! nothing of it, and the fallbacks (48 KiB, a generic pointer to shared memory) say why.

use super::shared::STATIC_LIMIT;
use super::tests::{after_in, calls_in};
use super::*;
use crate::model::{Item, Statement};
use crate::test_support::parse_clean;

pub(super) const SHARED: &str = include_str!("../../../tests/fixtures/shadow_values/shared.ptx");

/// The function-scope shared variables of `f` in `m`: (name, bytes).
fn shared_vars(m: &Module, f: &str) -> Vec<(String, Option<u64>)> {
    m.functions()
        .find(|x| x.name == f && x.body.is_some())
        .into_iter()
        .flat_map(|x| x.body.iter().flatten())
        .filter_map(|s| match s {
            Statement::Var(v) if v.space() == ".shared" => Some((v.name.clone(), v.dims[0])),
            _ => None,
        })
        .collect()
}

/// The module-scope variables' names.
fn module_vars(m: &Module) -> Vec<String> {
    m.items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) if v.space() == ".shared" => Some(v.name.clone()),
            _ => None,
        })
        .collect()
}

fn reseeds_of<'r>(r: &'r ValuesReport, f: &str) -> Vec<(&'r str, &'r str, bool)> {
    r.reseeds
        .iter()
        .filter(|x| x.site.function == f)
        .map(|x| (x.opcode.as_str(), x.reason.as_str(), x.conditional))
        .collect()
}

const GLOBAL: &str = "a global load: re-seeds where the address is in no registered buffer";
const SHARED_LOAD: &str =
    "a shared load: re-seeds where the address is in dynamic shared memory (not shadowed)";

#[test]
fn shared_memory_goes_through_the_kernel_shadow_area() {
    let m = parse_clean("shared", SHARED);
    let out = instrument(&m).unwrap();
    // One area, the last shared variable before the kernel: twice (256 + 7) + (64 + 3) + 15 bytes, rounded up
    // to 16.
    assert_eq!(
        shared_vars(&out.module, "staged"),
        [("_ZZ6stagedE5small".to_string(), Some(64))]
    );
    let kernel = out
        .module
        .items
        .iter()
        .position(|i| matches!(i, Item::Function(f) if f.name == "staged" && f.body.is_some()))
        .unwrap();
    let last_shared = out.module.items[..kernel]
        .iter()
        .rev()
        .find_map(|i| match i {
            Item::Var(v) if v.space() == ".shared" => Some(v),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (last_shared.name.as_str(), last_shared.dims.as_slice()),
        ("__mantissa_sv_shared", &[Some(704)][..])
    );
    assert_eq!(
        reseeds_of(&out.report, "staged"),
        [
            ("ld.global.f64", GLOBAL, true),
            ("ld.global.f64", GLOBAL, true),
            ("ld.shared.f64", SHARED_LOAD, true),
            ("ld.shared.v2.f32", SHARED_LOAD, true),
            (
                "ld.shared.f64",
                "a load from dynamic shared memory (not shadowed)",
                false
            ),
        ]
    );
    assert!(out.report.notes.iter().all(|n| !n.contains("shared")));
    let calls = |text: &str| calls_in(&after_in(&out.module, &m, "staged", text));
    assert_eq!(calls("st.shared.f64"), [STORE_SHARED_FUNCTION]);
    assert_eq!(calls("st.shared.f32"), [STORE_SHARED_FUNCTION]);
    assert_eq!(calls("st.shared.u32"), [CLEAR_SHARED_FUNCTION]);
    assert_eq!(calls("atom.shared.add.u32"), [CLEAR_SHARED_FUNCTION]);
    assert_eq!(
        calls("ld.shared.v2.f32"),
        [once(LOAD_SHARED_FUNCTION), once(LOAD_SHARED_FUNCTION)]
    );
    assert_eq!(calls("[_ZZ6stagedE4tile]"), [once(LOAD_SHARED_FUNCTION)]);
    assert_eq!(calls("[dyn+8]"), [once(RESEED_FUNCTION)]);
    // The entry: both variables located, the area zeroed (with its barrier) before any of the
    // kernel's own instructions.
    let body: Vec<String> = out
        .module
        .functions()
        .find(|f| f.name == "staged" && f.body.is_some())
        .unwrap()
        .instructions()
        .map(|i| i.to_string())
        .collect();
    let first_own = body
        .iter()
        .position(|i| i.contains("[staged_param_0]"))
        .unwrap();
    let entry = &body[..first_own];
    for var in [
        "_ZZ6stagedE4tile;",
        "_ZZ6stagedE5small;",
        "__mantissa_sv_shared;",
    ] {
        assert!(
            entry
                .iter()
                .any(|i| i.starts_with("mov.u32") && i.ends_with(var)),
            "{var}: {entry:?}"
        );
    }
    assert!(entry
        .iter()
        .any(|i| i.contains(&format!("{ZERO_SHARED_FUNCTION},"))));
}

#[test]
fn a_kernel_without_shared_memory_gets_nothing_of_it() {
    let m = parse_clean("shared", SHARED);
    let out = instrument(&m).unwrap().module;
    assert!(shared_vars(&out, "plain").is_empty());
    let shared_calls = [
        LOAD_SHARED_FUNCTION,
        STORE_SHARED_FUNCTION,
        CLEAR_SHARED_FUNCTION,
        ZERO_SHARED_FUNCTION,
    ];
    let plain = out
        .functions()
        .find(|f| f.name == "plain" && f.body.is_some())
        .unwrap();
    for i in plain.instructions() {
        let text = i.to_string();
        assert!(
            !shared_calls.iter().any(|c| text.contains(c)),
            "plain: {text}"
        );
        assert_ne!(i.space(), "shared", "plain: {text}");
    }
    // No module-scope variable is added for shared memory either.
    let before: Vec<&str> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => Some(v.name.as_str()),
            _ => None,
        })
        .collect();
    let mut added: Vec<&str> = out
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) if !before.contains(&v.name.as_str()) => Some(v.name.as_str()),
            _ => None,
        })
        .collect();
    added.sort();
    assert_eq!(
        added,
        [
            "__mantissa_sv_shared",
            SLOTS_GLOBAL,
            VALUES_GLOBAL,
            TABLE_GLOBAL
        ]
    );
}

#[test]
fn static_shared_memory_over_48_kib_with_its_shadow_is_not_shadowed() {
    let big = SHARED.replace("_ZZ6stagedE4tile[256]", "_ZZ6stagedE4tile[20000]");
    let m = parse_clean("shared big", &big);
    let out = instrument(&m).unwrap();
    // 20000 + 64 bytes, an area of 2 (20007 + 67 + 15) rounded up to 16.
    let note = "shared memory not shadowed in staged: 20064 + 40192 bytes exceeds 48 KiB";
    const { assert!(20064 + 40192 > STATIC_LIMIT) };
    assert!(
        out.report.notes.iter().any(|n| n == note),
        "{:?}",
        out.report.notes
    );
    assert_eq!(module_vars(&out.module), module_vars(&m), "no area added");
    let reasons: Vec<&str> = reseeds_of(&out.report, "staged")
        .into_iter()
        .filter(|(op, _, _)| op.starts_with("ld.shared"))
        .map(|(_, why, conditional)| {
            assert!(!conditional);
            why
        })
        .collect();
    let over = "a load from shared memory (not shadowed: with its shadow over 48 KiB)";
    assert_eq!(reasons, [over, over, over]);
    for text in ["st.shared.f64", "st.shared.u32"] {
        assert!(calls_in(&after_in(&out.module, &m, "staged", text)).is_empty());
    }
}

#[test]
fn a_generic_pointer_to_shared_memory_leaves_it_unshadowed() {
    let generic = SHARED.replace(
        "\tbar.sync \t0;",
        "\tcvta.shared.u64 \t%rd5, %rd3;\n\tbar.sync \t0;",
    );
    assert_ne!(generic, SHARED);
    let m = parse_clean("shared generic", &generic);
    let out = instrument(&m).unwrap();
    assert!(
        out.report.notes.iter().any(|n| n.starts_with(
            "shared memory not shadowed in staged: staged makes a generic pointer to shared memory (cvta.shared.u64)"
        )),
        "{:?}",
        out.report.notes
    );
    assert_eq!(module_vars(&out.module), module_vars(&m), "no area added");
}

#[test]
fn a_device_function_writing_shared_memory_leaves_it_unshadowed() {
    let writer = "
.func writer(
	.param .b32 writer_param_0
)
{
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<2>;

	ld.param.u32 	%r1, [writer_param_0];
	mov.f64 	%fd1, 0d3FF0000000000000;
	st.shared.f64 	[%r1], %fd1;
	ret;
}
";
    let call = "\t{
	.param .b32 param0;
	st.param.b32 	[param0], %r4;
	call.uni 	writer, (param0);
	}
\tbar.sync \t0;";
    let with_writer = SHARED
        .replace(
            ".visible .entry staged(",
            &format!("{writer}\n.visible .entry staged("),
        )
        .replace("\tbar.sync \t0;", call);
    let m = parse_clean("shared writer", &with_writer);
    let out = instrument(&m).unwrap();
    let note = "shared memory not shadowed in staged: the device function writer writes it (st.shared.f64)";
    assert!(
        out.report.notes.iter().any(|n| n == note),
        "{:?}",
        out.report.notes
    );
    assert_eq!(module_vars(&out.module), module_vars(&m), "no area added");
    assert!(reseeds_of(&out.report, "staged")
        .iter()
        .filter(|(op, _, _)| op.starts_with("ld.shared"))
        .all(|(_, _, conditional)| !conditional));
}
