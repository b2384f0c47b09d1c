//! FISets on small kernels whose answers are worked out by hand (each test says how), the
//! equality of the cast count with the conversions demote inserts, and the profile of the shipped
//! examples (compiled by NVRTC; skipped without it).

use super::*;
use crate::demote::{demote, DemoteSet};
use crate::test_support::parse_clean;

/// A kernel with one pointer parameter and the body given; `.file 1 "f.cu"` for `.loc 1 N 0`.
fn kernel(body: &str) -> Module {
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"f.cu\"\n\
         .visible .entry k(.param .u64 k_param_0)\n{{\n.reg .pred %p<9>;\n\
         .reg .b32 %r<9>;\n.reg .b64 %rd<9>;\n.reg .f32 %f<9>;\n.reg .f64 %fd<40>;\n\
         ld.param.u64 %rd1, [k_param_0];\n{body}\nret;\n}}\n"
    );
    parse_clean("fiset test", &text)
}

fn only_function(m: &Module) -> &Function {
    m.functions()
        .find(|f| f.body.is_some())
        .unwrap_or_else(|| panic!("no function"))
}

/// The id of the instruction whose text (blanks collapsed) starts with `text` (unique in the tests' kernels).
fn id_of(m: &Module, text: &str) -> InstId {
    let found: Vec<InstId> = only_function(m)
        .instructions()
        .filter(|i| {
            let printed = i.to_string();
            printed
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .starts_with(text)
        })
        .map(|i| i.id)
        .collect();
    assert_eq!(found.len(), 1, "{text}: {found:?}");
    found[0]
}

fn site_lines(s: &Fiset) -> Vec<u32> {
    s.sites.iter().map(|s| s.line).collect()
}

/// Conversions that demoting `set` inserts, counted in the output: instructions with fresh ids
/// (demote numbers what it adds from the input's `next_inst_id`), each checked to be a cvt.
fn inserted_cvts(m: &Module, set: &DemoteSet) -> usize {
    let out = demote(m, set).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.report.refused.is_empty(), "{:?}", out.report.refused);
    let fresh: Vec<&Instruction> = out
        .module
        .functions()
        .flat_map(|f| f.instructions())
        .filter(|i| i.id.0 >= m.next_inst_id)
        .collect();
    for i in &fresh {
        let op = crate::op::decode(i);
        assert!(
            matches!(op.kind, crate::op::OpKind::Convert { .. }),
            "demote inserted {i}, not a conversion"
        );
    }
    fresh.len()
}

/// The seed's Fig. 2: two loads, then mul, add (of a constant), mul, sub (of a constant), stored.
/// Only the loaded values enter (2 conversions) and only the last result leaves (1).
const FIG2: &str = "ld.global.f64 %fd1, [%rd1];\n\
    ld.global.f64 %fd2, [%rd1+8];\n\
    .loc 1 30 0\n\
    mul.f64 %fd3, %fd1, %fd2;\n\
    .loc 1 31 0\n\
    add.f64 %fd4, %fd3, 0d3FF0000000000000;\n\
    .loc 1 32 0\n\
    mul.f64 %fd5, %fd4, %fd4;\n\
    .loc 1 33 0\n\
    sub.f64 %fd6, %fd5, 0d4000000000000000;\n\
    st.global.f64 [%rd1+16], %fd6;";

#[test]
fn fig2_chain_reaches_four_thirds_at_the_last_step() {
    let m = kernel(FIG2);
    let f = only_function(&m);
    // From the first mul: {mul} converts a, b in and its result out (1/3); with add, a, b in
    // and add's result out (2/3); with the second mul 3/3, not > 1; with sub 4/3.
    let g = growth_from(&m, f, id_of(&m, "mul.f64 %fd3"));
    assert_eq!(g.steps, [(1, 3), (2, 3), (3, 3), (4, 3)]);
    assert_eq!(g.best, Some(4));
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1, "{report:#?}");
    let s = &report.sets[0];
    assert_eq!((s.arithmetic, s.casts), (4, 3));
    assert_eq!(s.r_ac, 4.0 / 3.0);
    assert_eq!(site_lines(s), [30, 31, 32, 33]);
    assert_eq!(
        s.lines,
        (30..=33)
            .map(|l| ("f.cu".to_string(), l))
            .collect::<Vec<_>>()
    );
    assert_eq!(s.function, "k");
    assert_eq!(
        report.profiles,
        [FunctionProfile {
            function: "k".into(),
            fisets: 1,
            mean_r_ac: Some(4.0 / 3.0),
            discarded_by_loops: 0,
            f64_arithmetic: 4,
        }]
    );
    assert!(report.notes.is_empty());
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(s.sites.clone())), 3);
}

#[test]
fn overlapping_candidates_are_united_and_recomputed() {
    let m = kernel(FIG2);
    let f = only_function(&m);
    // From sub, walking backwards: {sub} reads mul's result and stores (1/2); + mul 2/2;
    // + add 3/2 (only mul's result enters now); + the first mul 4/3. Best: the first three.
    let g = growth_from(&m, f, id_of(&m, "sub.f64"));
    assert_eq!(g.steps, [(1, 2), (2, 2), (3, 2), (4, 3)]);
    assert_eq!(g.best, Some(3));
    // That candidate {add, mul, sub} (3/2) overlaps the first mul's {mul, add, mul, sub}: one
    // union, whose r_ac is recomputed (4/3), not the best of the two.
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1);
    assert_eq!(report.sets[0].sites.len(), 4);
    assert_eq!(report.sets[0].r_ac, 4.0 / 3.0);
}

#[test]
fn a_store_and_load_break_the_chain() {
    // Each half alone: O = 2, C = 2 (one value in, one out): r_ac = 1, no FISet. Through the
    // store and load there is no edge, so the halves are never joined.
    let broken = "ld.global.f64 %fd1, [%rd1];\n\
        mul.f64 %fd2, %fd1, %fd1;\n\
        mul.f64 %fd3, %fd2, %fd2;\n\
        st.global.f64 [%rd1], %fd3;\n\
        ld.global.f64 %fd4, [%rd1];\n\
        mul.f64 %fd5, %fd4, %fd4;\n\
        mul.f64 %fd6, %fd5, %fd5;\n\
        st.global.f64 [%rd1+8], %fd6;";
    let report = fisets(&kernel(broken), &FisetOptions::default());
    assert!(report.sets.is_empty(), "{report:#?}");
    assert_eq!(report.profiles[0].f64_arithmetic, 4);
    assert_eq!(report.profiles[0].fisets, 0);
    // The same halves joined by a register copy (a member, not arithmetic): O = 4, C = 2.
    let joined = broken.replace(
        "st.global.f64 [%rd1], %fd3;\n\
        ld.global.f64 %fd4, [%rd1];",
        "mov.f64 %fd4, %fd3;",
    );
    let m = kernel(&joined);
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1, "{report:#?}");
    let s = &report.sets[0];
    assert_eq!((s.sites.len(), s.arithmetic, s.casts), (5, 4, 2));
    assert_eq!(s.r_ac, 2.0);
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(s.sites.clone())), 2);
}

#[test]
fn constants_need_no_conversion() {
    // x * 2.0 + 3.0, times 0.5: one value in, one out; the immediates are rounded in place.
    // The seed's count without the constant term would be 5 (2 inputs each + out - links).
    let m = kernel(
        "ld.global.f64 %fd1, [%rd1];\n\
         mul.f64 %fd2, %fd1, 0d4000000000000000;\n\
         add.f64 %fd3, %fd2, 0d4008000000000000;\n\
         mul.f64 %fd4, %fd3, 0d3FE0000000000000;\n\
         st.global.f64 [%rd1], %fd4;",
    );
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1);
    let s = &report.sets[0];
    assert_eq!((s.arithmetic, s.casts, s.r_ac), (3, 2, 1.5));
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(s.sites.clone())), 2);
}

#[test]
fn disjoint_regions_are_two_fisets_and_phi_keeps_the_best() {
    // The Fig. 2 chain (4/3), then an independent constant chain (3/2) on other data.
    let body = format!(
        "{FIG2}\n\
         ld.global.f64 %fd11, [%rd1+24];\n\
         .loc 1 40 0\n\
         mul.f64 %fd12, %fd11, 0d4000000000000000;\n\
         add.f64 %fd13, %fd12, 0d4008000000000000;\n\
         mul.f64 %fd14, %fd13, 0d3FE0000000000000;\n\
         st.global.f64 [%rd1+32], %fd14;"
    );
    let m = kernel(&body);
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 2, "{report:#?}");
    assert_eq!(site_lines(&report.sets[0]), [30, 31, 32, 33]);
    assert_eq!(site_lines(&report.sets[1]), [40, 40, 40]);
    assert_eq!(report.profiles[0].fisets, 2);
    let mean = report.profiles[0].mean_r_ac.unwrap_or_default();
    assert!((mean - (4.0 / 3.0 + 1.5) / 2.0).abs() < 1e-12, "{mean}");
    // φ = 1 keeps the 3/2 set and says that one was dropped.
    let report = fisets(&m, &FisetOptions { max_sets: 1 });
    assert_eq!(report.sets.len(), 1);
    assert_eq!(report.sets[0].r_ac, 1.5);
    assert_eq!(report.notes.len(), 1);
    assert!(report.notes[0].contains("1 dropped"), "{:?}", report.notes);
    // Demoting both is the sum of their conversions (they share no register).
    let both: Vec<Site> = fisets(&m, &FisetOptions::default())
        .sets
        .into_iter()
        .flat_map(|s| s.sites)
        .collect();
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(both)), 3 + 2);
}

/// y = x*2, z = y*3, w = z+1 before a loop (depth 0); in the loop, w times a value loaded there,
/// then `tail`, then stored. The loaded value's conversion and the stored result's sit in the
/// loop (depth 1).
fn loop_kernel(tail: &str, stored: &str) -> Module {
    kernel(&format!(
        "ld.global.f64 %fd1, [%rd1];\n\
         mul.f64 %fd2, %fd1, 0d4000000000000000;\n\
         mul.f64 %fd3, %fd2, 0d4008000000000000;\n\
         add.f64 %fd4, %fd3, 0d3FF0000000000000;\n\
         mov.u32 %r1, 0;\n\
         $L_loop:\n\
         ld.global.f64 %fd5, [%rd1+8];\n\
         mul.f64 %fd6, %fd4, %fd5;\n\
         {tail}\n\
         st.global.f64 [%rd1+16], {stored};\n\
         add.s32 %r1, %r1, 1;\n\
         setp.lt.s32 %p1, %r1, 8;\n\
         @%p1 bra $L_loop;"
    ))
}

#[test]
fn a_set_converting_more_in_an_inner_loop_than_it_computes_there_is_discarded() {
    // The union is all four (4/3: x in, the loaded value in, the product out), but the loop
    // holds 2 conversions and 1 arithmetic member of the set, deeper than the set's shallowest
    // arithmetic: discarded.
    let m = loop_kernel("", "%fd6");
    let f = only_function(&m);
    let (o, c) = cost_of(&m, f, &f.instructions().map(|i| i.id).collect::<Vec<_>>());
    assert_eq!((o, c), (4, 3));
    let report = fisets(&m, &FisetOptions::default());
    assert!(report.sets.is_empty(), "{report:#?}");
    assert_eq!(report.profiles[0].discarded_by_loops, 1);
    assert_eq!(report.profiles[0].fisets, 0);
}

#[test]
fn a_set_computing_enough_in_the_loop_is_kept() {
    // Two more products in the loop: 3 arithmetic members there against its 2 conversions.
    let m = loop_kernel(
        "mul.f64 %fd7, %fd6, %fd6;\nmul.f64 %fd8, %fd7, %fd7;",
        "%fd8",
    );
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1, "{report:#?}");
    let s = &report.sets[0];
    assert_eq!((s.arithmetic, s.casts, s.r_ac), (6, 3, 2.0));
    assert_eq!(report.profiles[0].discarded_by_loops, 0);
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(s.sites.clone())), 3);
}

/// An accumulator: acc = 0 before a loop, acc = acc * acc + x inside (x loaded before the
/// loop), then acc * 0.5 stored after it.
const ACCUMULATOR: &str = "ld.global.f64 %fd1, [%rd1];\n\
    mov.f64 %fd2, 0d0000000000000000;\n\
    mov.u32 %r1, 0;\n\
    $L_loop:\n\
    mul.f64 %fd3, %fd2, %fd2;\n\
    add.f64 %fd2, %fd3, %fd1;\n\
    add.s32 %r1, %r1, 1;\n\
    setp.lt.s32 %p1, %r1, 8;\n\
    @%p1 bra $L_loop;\n\
    mul.f64 %fd5, %fd2, 0d3FE0000000000000;\n\
    st.global.f64 [%rd1], %fd5;";

#[test]
fn conversions_no_deeper_than_the_arithmetic_need_nothing() {
    // Members: the mov, the loop's mul and add, the final mul. C: x in after its load and the
    // final product out, both outside the loop: 2; O = 3. No conversion sits in the loop, so
    // the set is kept whatever the loop's trip count.
    let m = kernel(ACCUMULATOR);
    let f = only_function(&m);
    // The loop's mul alone: %fd2 in after both of its defs (the mov, the add) and its result
    // out: 3 conversions.
    let g = growth_from(&m, f, id_of(&m, "mul.f64 %fd3"));
    assert_eq!(g.steps, [(1, 3), (1, 3), (2, 3), (3, 2)]);
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1, "{report:#?}");
    let s = &report.sets[0];
    assert_eq!(
        (s.sites.len(), s.arithmetic, s.casts, s.r_ac),
        (4, 3, 2, 1.5)
    );
    assert_eq!(report.profiles[0].discarded_by_loops, 0);
    // Without the final mul, the register-level rewrite converts %fd2 after each member def
    // (the mov and the add in the loop) because the store reads it: O = 2, C = 3.
    let stored = ACCUMULATOR
        .replace("mul.f64 %fd5, %fd2, 0d3FE0000000000000;\n", "")
        .replace("[%rd1], %fd5", "[%rd1], %fd2");
    let m = kernel(&stored);
    let f = only_function(&m);
    let all: Vec<InstId> = f.instructions().map(|i| i.id).collect();
    assert_eq!(cost_of(&m, f, &all), (2, 3));
    assert!(fisets(&m, &FisetOptions::default()).sets.is_empty());
}

#[test]
fn an_f32_value_promoted_and_rounded_back_costs_no_conversion() {
    // float x; (double)x * x, rounded back to float: the promotion and the rounding are members
    // (demote turns both into mov.f32), so nothing is converted: C = 0, r_ac infinite, written
    // as the string "inf" in JSON.
    let m = kernel(
        "ld.global.f32 %f1, [%rd1];\n\
         cvt.f64.f32 %fd1, %f1;\n\
         mul.f64 %fd2, %fd1, %fd1;\n\
         cvt.rn.f32.f64 %f2, %fd2;\n\
         st.global.f32 [%rd1], %f2;",
    );
    let report = fisets(&m, &FisetOptions::default());
    assert_eq!(report.sets.len(), 1, "{report:#?}");
    let s = &report.sets[0];
    assert_eq!((s.sites.len(), s.arithmetic, s.casts), (3, 1, 0));
    assert_eq!(s.r_ac, f64::INFINITY);
    assert_eq!(report.profiles[0].mean_r_ac, None);
    let json = serde_json::to_value(s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json["r_ac"], "inf");
    assert_eq!(inserted_cvts(&m, &DemoteSet::sites(s.sites.clone())), 0);
}

/// Every set the tests can think of for `m`: each FISet, all eligible instructions, every other
/// one, and each prefix of the first function's eligible instructions in text order; for each,
/// the count of `cost_of` must equal the conversions demote inserts.
fn assert_casts_equal_demote(what: &str, m: &Module) {
    let eligible = eligible_ids(m);
    let mut checked = 0;
    for f in m.functions().filter(|f| f.body.is_some()) {
        let members: Vec<InstId> = f
            .instructions()
            .map(|i| i.id)
            .filter(|id| eligible.contains(id))
            .collect();
        if members.is_empty() {
            continue;
        }
        let mut sets: Vec<Vec<InstId>> = vec![
            members.clone(),
            members.iter().copied().step_by(2).collect(),
            members.iter().copied().skip(1).step_by(3).collect(),
        ];
        for n in [1, 2, 3, members.len() / 2] {
            sets.push(members.iter().copied().take(n).collect());
        }
        for set in sets.into_iter().filter(|s| !s.is_empty()) {
            let (_, casts) = cost_of(m, f, &set);
            let inserted = inserted_cvts(m, &DemoteSet::ids(set.clone()));
            assert_eq!(casts, inserted, "{what} {}: {} members", f.name, set.len());
            checked += 1;
        }
    }
    for s in fisets(m, &FisetOptions::default()).sets {
        assert_eq!(
            s.casts,
            inserted_cvts(m, &DemoteSet::sites(s.sites.clone())),
            "{what}: FISet at {}",
            s.sites[0]
        );
        checked += 1;
    }
    assert!(
        checked > 0 || eligible.is_empty(),
        "{what}: nothing checked"
    );
}

#[test]
fn casts_equal_the_conversions_demote_inserts() {
    for (what, m) in [
        ("fig2", kernel(FIG2)),
        ("accumulator", kernel(ACCUMULATOR)),
        ("loop", loop_kernel("", "%fd6")),
        (
            "loop with tail",
            loop_kernel("mul.f64 %fd7, %fd6, %fd6;", "%fd7"),
        ),
    ] {
        assert_casts_equal_demote(what, &m);
    }
    for (name, _) in crate::tests::FIXTURES {
        assert_casts_equal_demote(name, &crate::tests::fixture(name));
    }
}

/// The device code of a shipped example as NVRTC compiles it (host headers and `main` removed;
/// heat2d's own header inlined).
fn example_module(name: &str, cu: &str) -> Option<Module> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let params = include_str!("../../../examples/kernels/heat2d/params.h");
    let end = cu.find("static unsigned long long rng_state")?;
    let device: String = cu[..end]
        .lines()
        .filter(|l| !l.starts_with("#include <"))
        .map(|l| {
            if l.starts_with("#include \"params.h\"") {
                format!("{params}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let compiled = nvrtc
        .compile(
            &mantissa_gpu::Source::new(name, device),
            mantissa_gpu::FlagSet::DEFAULT,
            mantissa_gpu::Target::Ptx(mantissa_gpu::Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    Some(parse_clean(name, &compiled.ptx))
}

#[test]
fn shipped_examples_profile() {
    let examples = [
        (
            "nbody.cu",
            include_str!("../../../examples/kernels/nbody/nbody.cu"),
        ),
        (
            "gauss.cu",
            include_str!("../../../examples/kernels/gauss/gauss.cu"),
        ),
        (
            "heat2d.cu",
            include_str!("../../../examples/kernels/heat2d/heat2d.cu"),
        ),
        (
            "options.cu",
            include_str!("../../../examples/kernels/options/options.cu"),
        ),
        (
            "float_literal.cu",
            include_str!("../../../examples/kernels/float_literal/float_literal.cu"),
        ),
    ];
    for (name, cu) in examples {
        let Some(m) = example_module(name, cu) else {
            return;
        };
        let instructions: usize = m.functions().map(|f| f.instructions().count()).sum();
        let started = std::time::Instant::now();
        let report = fisets(&m, &FisetOptions::default());
        let took = started.elapsed();
        println!("{name}: {instructions} instructions, FISets in {took:?}");
        for p in &report.profiles {
            println!(
                "  {}: {} FISets, mean r_ac {:?}, {} discarded by loops, {} f64 arithmetic",
                p.function, p.fisets, p.mean_r_ac, p.discarded_by_loops, p.f64_arithmetic
            );
        }
        for s in &report.sets {
            println!(
                "    {} sites, O {} C {} r_ac {:.3}, lines {:?}",
                s.sites.len(),
                s.arithmetic,
                s.casts,
                s.r_ac,
                s.lines.iter().map(|l| l.1).collect::<Vec<_>>()
            );
            assert!(s.r_ac > 1.0);
        }
        for n in report.notes {
            println!("  note: {n}");
        }
        let vars = crate::variables::variables(&m);
        println!("  {} variables", vars.len());
        assert_casts_equal_demote(name, &m);
    }
}
