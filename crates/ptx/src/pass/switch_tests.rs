//! CPU tests of the switched build: with every switch off it computes what the program as
//! written computes, with a mask what the static demotion of the same instructions computes
//! (both bit for bit, in the interpreter, on every fixture kernel the interpreter can run), and
//! every switched module assembles with ptxas.

use super::*;
use crate::demote::{demote, DemoteSet};
use crate::interp::{run, Arg, InterpError, Launch, Memory};
use crate::op::{decode_name, Arith, Cmp, OpKind, ValueType};
use crate::pass::demote::tests::{all_fixtures, module};
use crate::test_support::{assert_sound, parse_clean, Rng};

/// Bytes of every pointer argument's buffer.
const BUFFER: usize = 4096;

/// Runs `kernel` of `m` on 2 blocks of 3 threads: every pointer parameter gets its own buffer
/// of doubles in [0.5, 2.5) (distinct per buffer and element, so f32 rounding shows), integer
/// parameters 3, floating ones 1.3; `mask` is written into the switch array first. Returns the
/// buffers' bytes afterwards.
fn outputs(
    m: &Module,
    kernel: &str,
    mask: Option<(&str, &[u8])>,
) -> Result<Vec<Vec<u8>>, InterpError> {
    let f = m
        .functions()
        .find(|f| f.name == kernel)
        .unwrap_or_else(|| panic!("no {kernel}"));
    let mut mem = Memory::new();
    let mut buffers = Vec::new();
    let args: Vec<Arg> = f
        .params
        .iter()
        .enumerate()
        .map(|(p, param)| {
            let ty = param
                .attrs
                .iter()
                .filter_map(|a| ValueType::parse(a.trim_start_matches('.')))
                .next_back();
            if !param.dims.is_empty() {
                return Arg(vec![0; crate::entry::EntryParam::of(param).bytes]);
            }
            match ty {
                Some(ValueType::U64 | ValueType::B64 | ValueType::S64) => {
                    let values: Vec<f64> = (0..BUFFER / 8)
                        .map(|k| 0.5 + ((k * 7919 + p * 104_729) % 1000) as f64 / 499.0 + 1e-9)
                        .collect();
                    let a = mem.f64s(&values);
                    buffers.push(a);
                    Arg::u64(a)
                }
                Some(ValueType::F64) => Arg::f64(1.3),
                Some(ValueType::F32) => Arg::f32(1.3),
                _ => Arg::i32(3),
            }
        })
        .collect();
    if let Some((global, bytes)) = mask {
        let at = mem.symbol(m, global)?;
        mem.write(at, bytes)?;
    }
    run(m, kernel, Launch::linear(2, 3), &args, &mut mem)?;
    buffers
        .iter()
        .map(|&a| mem.read(a, BUFFER).map(<[u8]>::to_vec))
        .collect()
}

/// (fixture, kernel) pairs the interpreter runs as written.
fn runnable() -> Vec<(&'static str, Module, String)> {
    let mut out = Vec::new();
    let mut fixtures = all_fixtures();
    // A loop with a guarded def, a load into a demoted register and a selp join.
    fixtures.push(("loop", crate::pass::demote::tests::LOOP2));
    fixtures.push(("pair", PAIR));
    for (name, text) in fixtures {
        let m = module(text);
        let kernels: Vec<String> = m.kernels().map(|f| f.name.clone()).collect();
        for k in kernels {
            match outputs(&m, &k, None) {
                Ok(_) => out.push((name, m.clone(), k)),
                Err(e) => eprintln!("{name} {k}: not run by the interpreter: {e}"),
            }
        }
    }
    out
}

#[test]
fn all_switches_off_compute_the_program_as_written_and_masks_the_static_demotion() {
    let mut rng = Rng(0x5417_C4ED);
    let cases = runnable();
    // The interpreter runs the straight-line, loop, call-free kernels: enough to matter.
    assert!(cases.len() >= 8, "only {} kernels ran", cases.len());
    let mut masks_tried = 0;
    for (name, m, kernel) in &cases {
        let s = switch(m, &DemoteSet::all()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = &s.report;
        let want = outputs(m, kernel, None).unwrap_or_else(|e| panic!("{e}"));
        let off = vec![0u8; r.slots()];
        let got = outputs(&s.module, kernel, Some((&r.global, &off)))
            .unwrap_or_else(|e| panic!("{name} {kernel}: {e}"));
        assert!(
            got == want,
            "{name} {kernel}: all switches off differ from the original"
        );
        // Random whole switches of this kernel (and of the functions it calls), then all.
        let ours: Vec<&Switch> = r.switches.iter().collect();
        for round in 0..20 {
            let chosen: Vec<&Switch> = match round {
                0 => ours.clone(),
                _ => ours
                    .iter()
                    .copied()
                    .filter(|_| rng.next() % 2 == 0)
                    .collect(),
            };
            let set = DemoteSet::ids(chosen.iter().flat_map(|s| s.members.iter().map(|m| m.inst)));
            let mask = r.mask(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                mask.iter().filter(|&&b| b == 1).count(),
                chosen.len(),
                "{name}"
            );
            let stat = demote(m, &set).unwrap_or_else(|e| panic!("{e}"));
            let want = outputs(&stat.module, kernel, None)
                .unwrap_or_else(|e| panic!("{name} {kernel} static: {e}"));
            let got = outputs(&s.module, kernel, Some((&r.global, &mask)))
                .unwrap_or_else(|e| panic!("{name} {kernel} switched: {e}"));
            assert!(
                got == want,
                "{name} {kernel} round {round}: switched ≠ static for {} switches",
                chosen.len()
            );
            masks_tried += 1;
        }
    }
    assert!(masks_tried >= 160);
}

#[test]
fn every_switched_fixture_assembles_and_round_trips() {
    for (name, text) in all_fixtures() {
        let m = module(text);
        let s = switch(&m, &DemoteSet::all()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = &s.report;
        // Every eligible instruction has a switch or a reason.
        let eligible = demote::candidates(&m)
            .into_iter()
            .filter(|c| c.selector.is_some())
            .count();
        let switched: usize = r.switches.iter().map(|s| s.members.len()).sum();
        let refused = r.refused.iter().filter(|x| x.eligible).count();
        assert_eq!(switched + refused, eligible, "{name}");
        assert_eq!(
            r.switches.iter().map(|s| s.index).collect::<Vec<_>>(),
            (0..r.switches.len() as u32).collect::<Vec<_>>()
        );
        assert_sound(name, &s.module);
    }
}

const PAIR: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry pair(
	.param .u64 pair_param_0
)
{
	.reg .pred %p<4>;
	.reg .f64 %fd<12>;
	.reg .b64 %rd<3>;

	ld.param.u64 %rd1, [pair_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f64 %fd1, [%rd2];
	ld.global.f64 %fd2, [%rd2+8];
	ld.global.f64 %fd3, [%rd2+16];
	mul.f64 %fd4, %fd1, %fd2;
	add.f64 %fd5, %fd4, %fd3;
	mul.f64 %fd6, %fd1, %fd3;
	sub.f64 %fd7, %fd6, %fd2;
	add.f64 %fd8, %fd6, %fd7;
	mul.rn.f64 %fd9, %fd1, %fd1;
	add.f64 %fd9, %fd9, %fd9;
	setp.gt.f64 %p1, %fd1, %fd2;
	@%p1 add.f64 %fd9, %fd9, 0d3FF0000000000001;
	st.global.f64 [%rd2+24], %fd5;
	st.global.f64 [%rd2+32], %fd8;
	st.global.f64 [%rd2+40], %fd9;
	selp.f64 %fd10, 0d3FF0000000000000, 0d0000000000000000, %p1;
	st.global.f64 [%rd2+48], %fd10;
	ret;
}
"#;

/// Runs the one-buffer kernel `PAIR`-style on one thread with these three inputs.
fn run_one(m: &Module, input: [f64; 3], mask: Option<(&str, &[u8])>) -> Vec<u64> {
    let f = m.kernels().next().unwrap_or_else(|| panic!("no kernel"));
    let mut mem = Memory::new();
    let mut v = input.to_vec();
    v.resize(8, 0.0);
    let a = mem.f64s(&v);
    if let Some((g, bytes)) = mask {
        let at = mem.symbol(m, g).unwrap_or_else(|e| panic!("{e}"));
        mem.write(at, bytes).unwrap_or_else(|e| panic!("{e}"));
    }
    run(m, &f.name, Launch::single(), &[Arg::u64(a)], &mut mem).unwrap_or_else(|e| panic!("{e}"));
    mem.read_f64s(a, 8)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn a_contractible_mul_add_pair_is_one_switch_and_a_shared_mul_is_refused() {
    let m = parse_clean("pair", PAIR);
    let s = switch(&m, &DemoteSet::all()).unwrap_or_else(|e| panic!("{e}"));
    let r = &s.report;
    let opcodes: Vec<Vec<&str>> = r
        .switches
        .iter()
        .map(|s| s.members.iter().map(|m| m.opcode.as_str()).collect())
        .collect();
    // mul %fd4 → add %fd5 is one switch; mul %fd6 has two adds (refused with them); the rounded
    // mul.rn is not contractible and its add reads it twice but alone: two single switches.
    assert_eq!(
        opcodes,
        vec![
            vec!["mul.f64", "add.f64"],
            vec!["mul.rn.f64"],
            vec!["add.f64"],
            vec!["setp.gt.f64"],
            vec!["add.f64"],
            vec!["selp.f64"],
        ]
    );
    let refused: Vec<Option<OpKind>> = r
        .refused
        .iter()
        .map(|x| {
            let f = m.kernels().next().unwrap_or_else(|| panic!("no kernel"));
            f.instructions()
                .find(|i| i.id == x.inst)
                .map(|i| i.decode().kind)
        })
        .collect();
    assert_eq!(
        refused,
        [Arith::Mul, Arith::Sub, Arith::Add].map(|a| Some(OpKind::Arith(a)))
    );
    assert!(r
        .refused
        .iter()
        .all(|x| x.eligible && x.reason.contains("several add/sub")));
    // `all` includes refused eligible instructions: a static build.
    assert!(matches!(
        r.mask(&DemoteSet::all()),
        Err(NotRepresentable::Refused { .. })
    ));
    // Half the pair is not representable; the whole pair is.
    let pair = &r.switches[0];
    let half = DemoteSet::ids([pair.members[0].inst]);
    match r.mask(&half) {
        Err(NotRepresentable::PartOfAGroup { requested, missing }) => {
            assert_eq!(requested, pair.members[0].site.to_string());
            assert_eq!(missing, pair.members[1].site.to_string());
        }
        other => panic!("{other:?}"),
    }
    let whole = DemoteSet::sites(pair.members.iter().map(|m| m.site.clone()));
    assert_eq!(r.mask(&whole), Ok(vec![1, 0, 0, 0, 0, 0]));
    // The f64 path of the pair is the program as written: the mul's result goes to the add only.
    let printed = s.module.to_string();
    let mul = printed
        .find("mul.f64 \t%fd4")
        .or_else(|| printed.find("mul.f64 %fd4"));
    assert!(mul.is_some(), "{printed}");
    let f = s
        .module
        .kernels()
        .next()
        .unwrap_or_else(|| panic!("no kernel"));
    let readers_of_fd4 = f
        .instructions()
        .filter(|i| i.uses().contains(&"%fd4"))
        .map(|i| i.full_opcode())
        .collect::<Vec<_>>();
    assert_eq!(readers_of_fd4, ["add.f64"]);
    // Values: inputs where f32 rounding and fusing both show.
    let input = [1.0 + 2f64.powi(-30), 3.0 - 2f64.powi(-40), 0.1];
    let off = vec![0u8; r.slots()];
    assert_eq!(
        run_one(&s.module, input, Some((&r.global, &off))),
        run_one(&m, input, None)
    );
    for bits in 0..64u32 {
        let chosen: Vec<&Switch> = r
            .switches
            .iter()
            .filter(|s| bits & (1 << s.index) != 0)
            .collect();
        let set = DemoteSet::ids(chosen.iter().flat_map(|s| s.members.iter().map(|m| m.inst)));
        let mask = r.mask(&set).unwrap_or_else(|e| panic!("{e}"));
        let stat = demote(&m, &set).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            run_one(&s.module, input, Some((&r.global, &mask))),
            run_one(&stat.module, input, None),
            "mask {bits:06b}"
        );
    }
    assert_sound("pair", &s.module);
}

/// Whether the first member of `s` is a `kind` on f64 without a rounding modifier, as the report
/// names it.
fn first_is(s: &Switch, kind: OpKind) -> bool {
    let op = decode_name(&s.members[0].opcode);
    op.kind == kind && op.ty == Some(ValueType::F64) && op.rounding.is_none()
}

#[test]
fn predicate_results_switch_under_the_guard_and_in_place_updates_read_the_old_value() {
    let m = parse_clean("pair", PAIR);
    let s = switch(&m, &DemoteSet::all()).unwrap_or_else(|e| panic!("{e}"));
    let r = &s.report;
    let setp = r
        .switches
        .iter()
        .position(|s| first_is(s, OpKind::Compare(Cmp::Gt)));
    let guarded = r
        .switches
        .iter()
        .rposition(|s| first_is(s, OpKind::Arith(Arith::Add)));
    let (Some(setp), Some(guarded)) = (setp, guarded) else {
        panic!("{:?}", r.switches)
    };
    let mask = |on: &[usize]| {
        let mut v = vec![0u8; r.slots()];
        for &k in on {
            v[k] = 1;
        }
        v
    };
    // a = 1 + 2^-30 > b = 1 in f64; in f32 a rounds to 1: not greater. So the setp switch decides
    // whether the guarded add runs, and selp picks 1 or 0.
    let input = [1.0 + 2f64.powi(-30), 1.0, 0.5];
    let plain = run_one(&m, input, None);
    let f64_cmp = run_one(&s.module, input, Some((&r.global, &mask(&[]))));
    let f32_cmp = run_one(&s.module, input, Some((&r.global, &mask(&[setp]))));
    assert_eq!(f64_cmp, plain);
    assert_eq!(f64::from_bits(f64_cmp[6]), 1.0);
    assert_eq!(f64::from_bits(f32_cmp[6]), 0.0);
    // With the guard false, the guarded add's switch changes nothing (it writes only where its
    // guard is true), whichever way it is set.
    let guard_false = run_one(&s.module, input, Some((&r.global, &mask(&[setp, guarded]))));
    assert_eq!(guard_false, f32_cmp);
    // With the guard true, the in-place `add %fd9, %fd9, imm` in f32 reads the old %fd9.
    let in_f32 = run_one(&s.module, input, Some((&r.global, &mask(&[guarded]))));
    let a = input[0];
    let old = a * a + a * a;
    let want = ((old as f32) + (1.0 + f64::EPSILON) as f32) as f64;
    assert_eq!(f64::from_bits(in_f32[5]), want);
}

#[test]
fn units_and_unnamed_requests_are_reported_and_not_representable() {
    let m = module(super::demote::tests::MARKED_NVRTC);
    let s = switch(&m, &DemoteSet::all()).unwrap_or_else(|e| panic!("{e}"));
    let r = &s.report;
    let unit = r
        .refused
        .iter()
        .find(|x| x.reason == UNIT_REASON)
        .unwrap_or_else(|| panic!("no unit refused: {:?}", r.refused));
    assert!(!unit.eligible);
    assert!(matches!(
        r.mask(&DemoteSet::sites([unit.site.clone()])),
        Err(NotRepresentable::Refused { reason, .. }) if reason == UNIT_REASON
    ));
    // Units are not eligible, so `all` (which leaves them to the source-level replacement) is
    // representable when nothing eligible was refused.
    if !r.refused.iter().any(|x| x.eligible) {
        assert_eq!(r.mask(&DemoteSet::all()).map(|v| v.len()), Ok(r.slots()));
    }
    let stranger = Site {
        function: "nowhere".into(),
        file: "x.cu".into(),
        line: 1,
        ordinal: 0,
        inlined: Vec::new(),
    };
    assert!(matches!(
        r.mask(&DemoteSet::sites([stranger.clone()])),
        Err(NotRepresentable::NotACandidate { .. })
    ));
    // A build for part of the eligible instructions cannot stand in for `all`.
    let first = &r.switches[0].members[0];
    let part = switch(&m, &DemoteSet::ids([first.inst])).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.complete && !part.report.complete);
    assert_eq!(part.report.switches.len(), 1);
    assert!(matches!(
        part.report.mask(&DemoteSet::all()),
        Err(NotRepresentable::NotACandidate { .. })
    ));
    assert_eq!(part.report.mask(&DemoteSet::ids([first.inst])), Ok(vec![1]));
    let only = switch(&m, &DemoteSet::sites([stranger])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(only.report.unmatched.len(), 1);
    assert!(only.report.switches.is_empty());
    assert_eq!(only.report.slots(), 1);
    // The empty build still declares its one-byte array and is otherwise the input.
    assert!(crate::demote::same_code(&only.module, &m));
    assert_sound("unit", &only.module);
}

#[test]
fn the_pass_runs_in_a_pipeline() {
    let m = parse_clean("pair", PAIR);
    let run = crate::pass::Pipeline::new()
        .then(SwitchPass {
            set: DemoteSet::all(),
        })
        .run(&m)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        run.reports[0].summary,
        "6 switches over 7 instructions in __mantissa_switch; 3 refused"
    );
    assert!(run.reports[0].details::<SwitchReport>().is_some());
}
