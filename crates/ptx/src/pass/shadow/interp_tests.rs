//! The instrumented demotion code itself, run in the interpreter and checked against the CPU
//! oracle: the per-thread accumulation, the rare-case atomics, guards, loops and the flush at
//! every exit. The interpreter has no calls, so each flush call is replaced by what the
//! runtime's contract says it adds (`mantissa_shadow.cuh`: COUNT += count, SUM += sum,
//! MAX = max(MAX, max)) as plain atomics under the call's guard; sites past the accumulation cap
//! call the runtime per execution and are not covered here: the pass is run with every site
//! accumulated, in registers or in the `.local` array. The runtime itself (its per-execution
//! function, warp reductions and flush, inlined) runs in the interpreter in
//! `tests/it/shadow_interp.rs`, and on the GPU in `tests/shadow_gpu.rs`.

use super::oracle::expected;
use super::oracle_tests::{known_module, launch_args};
use super::*;
use crate::interp::{self, Launch, Memory};
use crate::model::{Imm, Operand, RegDecl, RegName, SrcLine, Statement};
use crate::op::OpKind;
use crate::rewrite::instruction;
use crate::test_support::parse_clean;

use super::oracle_tests::known::{self, Case, Param};

/// The register holding a flushed maximum's bits for `red.max.u64`.
const MAX_BITS: &str = "%interp_max_bits";

/// `m` with every call block of `function` replaced by `code(guard, arguments)`.
fn calls_replaced(
    m: &Module,
    function: &str,
    code: impl Fn(&[Operand]) -> Vec<Statement>,
) -> Module {
    let mut out = m.clone();
    for f in out.functions_mut() {
        let Some(body) = f.body.as_mut() else {
            continue;
        };
        let old = std::mem::take(body);
        let mut new = vec![Statement::Reg(RegDecl {
            ty: ".b64".into(),
            names: vec![RegName::Single(MAX_BITS.into())],
            line: SrcLine(0),
        })];
        let mut k = 0;
        while k < old.len() {
            let end = old[k..]
                .iter()
                .position(|s| matches!(s, Statement::BlockEnd(_)))
                .map(|e| k + e);
            let call = match (&old[k], end) {
                (Statement::BlockStart(_), Some(end)) => old[k..end].iter().find_map(|s| match s {
                    Statement::Inst(i)
                        if i.decode().is_call()
                            && i.operands.first() == Some(&Operand::Symbol(function.into())) =>
                    {
                        Some((i.guard.clone(), end))
                    }
                    _ => None,
                }),
                _ => None,
            };
            let Some((guard, end)) = call else {
                new.push(old[k].clone());
                k += 1;
                continue;
            };
            let args: Vec<Operand> = old[k..end]
                .iter()
                .filter_map(|s| match s {
                    Statement::Inst(i) if matches!(i.decode().kind, OpKind::Store(_)) => {
                        i.operands.get(1).cloned()
                    }
                    _ => None,
                })
                .collect();
            let mut replaced = code(&args);
            for s in &mut replaced {
                if let Statement::Inst(i) = s {
                    i.guard = guard.clone();
                }
            }
            new.extend(replaced);
            k = end + 1;
        }
        *body = new;
    }
    out
}

/// Word `w` of site `args[0]`'s record, copy 0.
fn word_of(args: &[Operand], w: Word) -> Operand {
    let Some(Operand::Imm(Imm::Int { value: site, .. })) = args.first() else {
        panic!("a runtime call without its site: {args:?}");
    };
    Operand::Addr {
        base: SHADOW_GLOBAL.into(),
        offset: 8 * (i64::from(WORDS_PER_SITE) * i64::from(COPIES) * *site as i64 + w as i64),
    }
}

/// `m` with every flush call block replaced by the atomics it stands for.
fn flushes_as_atomics(m: &Module) -> Module {
    calls_replaced(m, FLUSH_FUNCTION, |args| {
        vec![
            instruction(
                "red",
                &["global", "add", "u64"],
                vec![word_of(args, Word::Executions), args[1].clone()],
            ),
            instruction(
                "red",
                &["global", "add", "f64"],
                vec![word_of(args, Word::Sum), args[2].clone()],
            ),
            instruction(
                "mov",
                &["b64"],
                vec![Operand::Reg(MAX_BITS.into()), args[3].clone()],
            ),
            instruction(
                "red",
                &["global", "max", "u64"],
                vec![word_of(args, Word::Max), Operand::Reg(MAX_BITS.into())],
            ),
        ]
    })
}

/// `m` with every call of the exception runtime replaced by one count in the site's NaN word:
/// the slow path calls it once per execution whose result was not zero or normal.
fn exception_calls_counted(m: &Module) -> Module {
    calls_replaced(m, EXCEPTION_FUNCTION, |args| {
        vec![instruction(
            "red",
            &["global", "add", "u64"],
            vec![word_of(args, Word::Nan), crate::rewrite::int(1)],
        )]
    })
}

/// The statistics of `out` (an instrumented `m`, made runnable by `runnable`) run in the
/// interpreter on `case`, and the oracle's under `options`.
fn run_and_oracle(
    m: &Module,
    case: &Case,
    options: &ShadowOptions,
    out: &Instrumented,
    runnable: &Module,
) -> (Vec<SiteStats>, Vec<SiteStats>) {
    let mut mem = Memory::new();
    let args = launch_args(case, &mut mem);
    let launch = Launch::linear(case.blocks, case.threads);
    let mut oracle_mem = mem.clone();
    let want = expected(m, case.kernel, launch, &args, &mut oracle_mem, options)
        .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
    interp::run(runnable, case.kernel, launch, &args, &mut mem)
        .unwrap_or_else(|e| panic!("{}: {e}\n{runnable}", case.kernel));
    let at = mem
        .symbol(runnable, SHADOW_GLOBAL)
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = mem
        .read(at, out.report.global_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .to_vec();
    let got = out.report.decode(&bytes).unwrap_or_else(|e| panic!("{e}"));
    (got, want)
}

/// The demotion statistics of the instrumented `m` (every site accumulated, in registers up to
/// `registers`, then in the `.local` array) run in the interpreter, and the oracle's.
fn measured_and_expected(
    m: &Module,
    case: &Case,
    registers: usize,
) -> (Vec<SiteStats>, Vec<SiteStats>) {
    let options = ShadowOptions {
        exceptions: false,
        ..ShadowOptions::all()
    };
    let out = instrument_with(m, &options, registers, true).unwrap_or_else(|e| panic!("{e}"));
    let runnable = flushes_as_atomics(&out.module);
    let calls_per_execution = runnable
        .functions()
        .flat_map(|f| f.instructions())
        .any(|i| {
            i.decode().is_call()
                && i.operands.first() == Some(&Operand::Symbol(DEMOTION_FUNCTION.into()))
        });
    assert!(!calls_per_execution, "every site accumulates here");
    run_and_oracle(m, case, &options, &out, &runnable)
}

/// Counts and maxima exact; sums within a relative 1e-12 (per-thread partial sums change the
/// order of additions).
fn assert_same(what: &str, got: &[SiteStats], want: &[SiteStats]) {
    assert_eq!(got.len(), want.len());
    let mut measured = 0;
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (Some(g), Some(w)) = (g.demotion, w.demotion) else {
            assert_eq!(
                g.demotion.is_some(),
                w.demotion.is_some(),
                "{what}: site {k}"
            );
            continue;
        };
        measured += g.count + g.zero_reference + g.non_finite;
        assert_eq!(
            (g.count, g.max.to_bits(), g.zero_reference, g.non_finite),
            (w.count, w.max.to_bits(), w.zero_reference, w.non_finite),
            "{what}: site {k}: {g:?} vs {w:?}"
        );
        let tolerance = 1e-12 * w.sum.abs();
        assert!(
            (g.sum - w.sum).abs() <= tolerance || g.sum == w.sum,
            "{what}: site {k}: sum {} vs {}",
            g.sum,
            w.sum
        );
    }
    assert!(measured > 0, "{what}: nothing measured");
}

#[test]
fn the_profile_kernel_accumulates_exactly_what_the_oracle_expects() {
    let m = parse_clean(
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    );
    let case = Case {
        kernel: "profile",
        blocks: 2,
        threads: 64,
        params: vec![Param::OutF64(128), Param::Int(5)],
    };
    for registers in [ACCUMULATED_PER_FUNCTION, 1, 0] {
        let (got, want) = measured_and_expected(&m, &case, registers);
        assert_same(&format!("profile, {registers} in registers"), &got, &want);
    }
}

#[test]
fn the_known_kernels_accumulate_exactly_what_the_oracle_expects() {
    for flags in [mantissa_gpu::FlagSet::DEFAULT, mantissa_gpu::FlagSet::NOFMA] {
        let Some(m) = known_module(flags) else {
            return;
        };
        for case in [
            known::one_plus_x(2, 64),
            known::one_plus_x_varied(2, 64),
            known::serial_sum(),
            known::square_plus(2, 64),
            known::exceptions(1, 64),
        ] {
            for registers in [ACCUMULATED_PER_FUNCTION, 0] {
                let (got, want) = measured_and_expected(&m, &case, registers);
                let what = format!("{} {flags}, {registers} in registers", case.kernel);
                assert_same(&what, &got, &want);
            }
        }
    }
}

#[test]
fn a_kernel_that_falls_off_its_end_still_flushes() {
    // No `ret`: control runs past the last instruction; the pass adds the flush and a `ret`.
    let ptx = include_str!("../../../tests/fixtures/count/profile.ptx").replace("\tret;\n", "");
    let m = parse_clean("profile without ret", &ptx);
    let case = Case {
        kernel: "profile",
        blocks: 1,
        threads: 32,
        params: vec![Param::OutF64(32), Param::Int(3)],
    };
    let (got, want) = measured_and_expected(&m, &case, 1);
    assert_same("profile without ret", &got, &want);
}

/// The exception test's fast path (the exponent fields folded per group) and slow path (the
/// exact test, then the runtime) run in the interpreter: the runtime is called exactly once per
/// execution whose result is NaN, ±inf or subnormal, by the oracle's classification, and never
/// for a zero or normal result (the kernels below make zeros: `(1 + x) - 1` of tiny x, and the
/// zero-sum arrays' partial sums).
#[test]
fn the_slow_path_runs_for_exactly_the_executions_the_oracle_counts() {
    let options = ShadowOptions {
        demotion: false,
        ..ShadowOptions::all()
    };
    let check = |what: &str, m: &Module, case: &Case| {
        let out = instrument(m, &options).unwrap_or_else(|e| panic!("{e}"));
        let runnable = exception_calls_counted(&out.module);
        let (got, want) = run_and_oracle(m, case, &options, &out, &runnable);
        let mut exceptional = 0;
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let (Some(g), Some(w)) = (g.exceptions, w.exceptions) else {
                assert_eq!(
                    g.exceptions.is_some(),
                    w.exceptions.is_some(),
                    "{what}: site {k}"
                );
                continue;
            };
            let calls = w.nan + w.inf + w.subnormal;
            exceptional += calls;
            assert_eq!(g.nan, calls, "{what}: site {k}: {w:?}");
        }
        exceptional
    };
    let mut exceptional = 0;
    for flags in [mantissa_gpu::FlagSet::DEFAULT, mantissa_gpu::FlagSet::FTZ] {
        let Some(m) = known_module(flags) else {
            return;
        };
        for case in [
            known::exceptions(2, 64),
            known::one_plus_x(1, 64),
            known::serial_sum(),
            known::square_plus(1, 64),
        ] {
            exceptional += check(&format!("{} {flags}", case.kernel), &m, &case);
        }
    }
    let m = parse_clean(
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    );
    let case = Case {
        kernel: "profile",
        blocks: 1,
        threads: 64,
        params: vec![Param::OutF64(64), Param::Int(5)],
    };
    check("profile", &m, &case);
    assert!(exceptional > 0, "no kernel made an exception");
}
