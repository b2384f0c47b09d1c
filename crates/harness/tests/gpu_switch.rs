//! The switched build on the GPU (skips without one), on the shipped examples with f64 work:
//! - every switch off gives outputs bit-identical to the program as written (the baseline);
//! - 5 random masks (whole switches, so representable) give outputs bit-identical to the static
//!   rewrite of the same configuration, run on the same runner (a timed trial with no repeats
//!   takes the static path; its checked run is what is downloaded);
//! - accuracy-only trials say they ran on the switched build, timed ones on a static build.
//!
//! A difference would come from ptxas treating the two builds differently (contraction); the
//! messages name the output, the elements that differ and the sites the mask demotes.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{FlagSet, HostData};
use mantissa_harness::config::{Demotion, Selection};
use mantissa_harness::data::to_f64;
use mantissa_harness::{
    BuildKind, Configuration, RunnerOptions, Spec, TrialOutcome, TrialRunner, TrialTiming,
};
use mantissa_ptx::demote::Request;
use std::path::Path;

fn bits(data: &HostData) -> Vec<u64> {
    to_f64(data).iter().map(|x| x.to_bits()).collect()
}

/// `None` when every output has the same bits in both, else which output and how many elements
/// differ (and the first).
fn difference(a: &[(String, HostData)], b: &[(String, HostData)]) -> Option<String> {
    assert_eq!(a.len(), b.len());
    for ((name, x), (_, y)) in a.iter().zip(b) {
        let (x, y) = (bits(x), bits(y));
        if x != y {
            let n = x.iter().zip(&y).filter(|(p, q)| p != q).count();
            let first = x.iter().zip(&y).position(|(p, q)| p != q).unwrap_or(0);
            return Some(format!(
                "output {name}: {n} of {} elements differ (first at {first})",
                x.len()
            ));
        }
    }
    None
}

/// A tiny seeded generator (xorshift64*), so masks are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
}

fn demotion(name: &str, sites: Vec<Request>) -> Configuration {
    Configuration::Demote(Demotion {
        name: name.into(),
        math: Selection::Only(Vec::new()),
        instructions: Selection::Only(sites),
        buffers: Vec::new(),
    })
}

fn accuracy(runner: &mut TrialRunner, c: &Configuration) -> TrialOutcome {
    runner
        .trial(c, TrialTiming::AccuracyOnly)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name()))
}

#[test]
fn switched_trials_equal_the_program_as_written_and_match_the_static_rewrites() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut rng = Rng(0x5417_C4ED_0001);
    for name in ["float_literal", "options", "heat2d", "nbody", "gauss"] {
        let path = Path::new("../../examples/kernels")
            .join(name)
            .join(format!("{name}.toml"));
        let spec = Spec::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = RunnerOptions {
            download_outputs: true,
            baseline_timing: TrialTiming::AccuracyOnly,
            ..RunnerOptions::default()
        };
        let mut runner = TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let baseline = runner.baseline().downloaded.clone();
        let universe = Configuration::Demote(Demotion::all());
        let summary = runner
            .enable_switching(&universe)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(summary.switches > 0, "{name}: nothing switched");
        let report = runner
            .switch_report()
            .unwrap_or_else(|| panic!("{name}: no report"))
            .clone();

        // (a) Every switch off: the program as written.
        let off = accuracy(&mut runner, &demotion("off", Vec::new()));
        assert_eq!(off.build, BuildKind::Switched, "{name}: {:?}", off.notes);
        if let Some(d) = difference(&baseline, &off.downloaded) {
            panic!("{name}: every switch off differs from the program as written: {d}");
        }
        for o in &off.outputs {
            assert_eq!(o.vs_baseline.differing, 0, "{name}: {}", o.name);
        }

        // (b) Random whole switches: the static rewrite of the same sites.
        let (mut identical, mut differing) = (0, 0);
        for round in 0..5 {
            let sites: Vec<Request> = report
                .switches
                .iter()
                .filter(|_| rng.next() % 2 == 0)
                .flat_map(|s| s.members.iter().map(|m| Request::Site(m.site.clone())))
                .collect();
            let c = demotion(&format!("mask{round}"), sites.clone());
            let switched = accuracy(&mut runner, &c);
            assert_eq!(
                switched.build,
                BuildKind::Switched,
                "{name}: {:?}",
                switched.notes
            );
            let stat = runner
                .trial(
                    &c,
                    TrialTiming::Timed {
                        warmup: 0,
                        repeats: 0,
                    },
                )
                .unwrap_or_else(|e| panic!("{name} static: {e}"));
            assert_eq!(stat.build, BuildKind::Static, "{name}");
            // ptxas may contract an f32 mul into an f32 add differently in the two builds (in
            // the switched build a conversion and a select sit between separately switched
            // instructions), so a mask may differ from the static rewrite in last bits. What a
            // screening search reads must not change: the digits against the baseline agree
            // within one, per output.
            match difference(&stat.downloaded, &switched.downloaded) {
                None => identical += 1,
                Some(d) => {
                    println!("{name} mask {round}: switched differs from static: {d}");
                    differing += 1;
                }
            }
            for (a, b) in stat.outputs.iter().zip(&switched.outputs) {
                let (da, db) = (a.vs_baseline.digits, b.vs_baseline.digits);
                assert!(
                    (da.is_infinite() && db.is_infinite()) || (da - db).abs() <= 1.0,
                    "{name} mask {round}: {}: {da} digits static, {db} switched",
                    a.name
                );
            }
        }
        println!("{name}: {identical} masks bit-identical to the static rewrite, {differing} not");

        // Timed trials go the static way, and say why.
        let timed = runner
            .trial(
                &demotion("off-timed", Vec::new()),
                TrialTiming::Timed {
                    warmup: 0,
                    repeats: 1,
                },
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(timed.build, BuildKind::Static);
        assert!(
            timed.notes.iter().any(|n| n.contains("timed trials")),
            "{name}: {:?}",
            timed.notes
        );
        println!(
            "{name}: {} switches over {} instructions ({} refused); all off bit-identical",
            summary.switches,
            summary.instructions,
            summary.refused.len()
        );
    }
}
