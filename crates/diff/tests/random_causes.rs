//! Causes seeded at random: a generated kernel of L lines, each a multiply-add the front
//! end contracts into an fma; on k lines chosen by a seeded generator the product is inexact
//! (the fma and the CPU's two roundings differ), on the others it is exact (they agree), so exactly
//! the k seeded lines make the default build differ from the strict one. The search must blame
//! exactly those lines, in at most 2·k·log2(L) trials. Without a GPU the trials run in the PTX
//! interpreter (the real passes and search, NVRTC's PTX); on a GPU, `mantissa diff` itself.

use mantissa_diff::search::{search, SetVerdict};
use mantissa_diff::{diff, Against, DiffRequest};
use mantissa_gpu::{Arch, FlagSet, Source, Target};
use mantissa_harness::Spec;
use mantissa_ptx::interp::{run, Arg, Launch, Memory};
use mantissa_ptx::pass::cause::{candidates, switch, Cause};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeSet;
use std::convert::Infallible;

/// The first generated line's number.
const FIRST_LINE: u32 = 6;

/// The kernel source with `l` lines, inexact products on `seeded` (0-based line indices), and
/// the seeded source lines.
fn generate(l: usize, seeded: &BTreeSet<usize>) -> (String, BTreeSet<u32>) {
    let mut s = String::from(
        "// Generated: one multiply-add per line; seeded lines have an inexact product.\n\
         extern \"C\" __global__ void gen(const float* __restrict__ x, float* __restrict__ out, int n)\n\
         {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n",
    );
    // x holds multiples of 2^-12 below 1 (12 significant bits). Each line adds 1.5·2^-31 to a
    // product, which the front end contracts into an fma: rounded once, the small addend moves
    // the result whenever the product's own rounding error brings it near a rounding
    // boundary; rounded twice (the CPU), it often vanishes in the product's rounding. A seeded
    // line's c is inexact (24 bits), so the two differ on many x; the others' c is a small odd
    // integer (a distinct one per line, so no product is shared), whose products are exact:
    // both ways round x·c + 1.5·2^-31 once.
    for j in 0..l {
        let c = if seeded.contains(&j) {
            format!("{:.9}f", 0.1 + 0.013 * j as f64)
        } else {
            format!("{}.0f", 2 * j + 3)
        };
        s.push_str(&format!(
            "    out[{j} * n + i] = x[i] * {c} + 0x1.8p-31f;\n"
        ));
    }
    s.push_str("}\n");
    let lines = seeded.iter().map(|&j| FIRST_LINE + j as u32).collect();
    (s, lines)
}

fn spec_text(l: usize, n: usize) -> String {
    format!(
        "name = \"gen\"\n[source]\nfile = \"gen.cu\"\n[sizes]\nn = {n}\n\
         [buffers.x]\ntype = \"f32\"\nlen = \"n\"\n\
         init = {{ sequence = {{ start = 0.0, step = 0.000244140625 }} }}\n\
         [buffers.out]\ntype = \"f32\"\nlen = \"{l} * n\"\n\
         [[steps]]\nlaunch = \"gen\"\ngrid = \"ceil(n / 128)\"\nblock = 128\nargs = [\"x\", \"out\", \"n\"]\n\
         [[outputs]]\nbuffer = \"out\"\n"
    )
}

fn seeded_lines(rng: &mut Xoshiro256PlusPlus, k: usize, l: usize) -> BTreeSet<usize> {
    sample(rng, l, k).into_iter().collect()
}

/// (k, L) pairs the tests seed.
const CASES: [(usize, usize); 5] = [(1, 64), (1, 16), (2, 32), (3, 64), (4, 128)];

fn bound(k: usize, l: usize) -> usize {
    2 * k * (l as f64).log2() as usize
}

/// Runs `gen` of `m` on n = 512 elements in the interpreter.
fn interpret(m: &mantissa_ptx::Module, l: usize) -> Vec<u32> {
    let n = 512;
    let mut mem = Memory::new();
    let xs: Vec<f32> = (0..n).map(|k| k as f32 / 4096.0).collect();
    let x = mem.f32s(&xs);
    let out = mem.alloc(l * n * 4);
    run(
        m,
        "gen",
        Launch::linear((n / 128) as u32, 128),
        &[Arg::u64(x), Arg::u64(out), Arg::i32(n as i32)],
        &mut mem,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let values = mem.read_f32s(out, l * n).unwrap_or_else(|e| panic!("{e}"));
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn seeded_lines_are_found_in_the_interpreter_within_the_bound() {
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
    for (k, l) in CASES {
        let seeded = seeded_lines(&mut rng, k, l);
        let (source, lines) = generate(l, &seeded);
        let build = |flags| {
            let c = nvrtc
                .compile(
                    &Source::new("gen.cu", source.as_str()),
                    flags,
                    Target::Ptx(Arch::new(9, 0)),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            mantissa_ptx::parse(&c.ptx).module
        };
        let (default, strict) = (build(FlagSet::DEFAULT), build(FlagSet::STRICT));
        let list = candidates(&default, Some(&strict));
        assert_eq!(
            list.len(),
            l,
            "k={k} L={l}: one candidate per line\n{list:#?}"
        );
        assert!(
            list.iter().all(|c| c.cause == Cause::Contraction),
            "{:?}",
            list.iter()
                .map(|c| (c.site.line, c.cause, c.op.clone()))
                .collect::<Vec<_>>()
        );
        let want = interpret(&strict, l);
        let differing = |values: &[u32]| values.iter().zip(&want).filter(|(a, b)| a != b).count();
        let baseline = differing(&interpret(&default, l)) as u64;
        let found = search(l, baseline, |set| {
            let m = switch(&default, &list, set)
                .unwrap_or_else(|e| panic!("{e}"))
                .module;
            Ok::<_, Infallible>(SetVerdict {
                differing: differing(&interpret(&m, l)) as u64,
            })
        });
        let Ok(found) = found;
        let blamed: BTreeSet<u32> = found.minimal.iter().map(|&c| list[c].site.line).collect();
        assert_eq!(blamed, lines, "k={k} L={l}");
        assert_eq!(found.remaining, 0);
        assert!(
            found.tests <= bound(k, l),
            "k={k} L={l}: {} trials",
            found.tests
        );
    }
}

#[test]
fn diff_finds_the_seeded_lines_on_the_gpu_within_the_bound() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
    let dir = std::env::temp_dir().join(format!("mantissa-diff-gen-{}", std::process::id()));
    for (k, l) in CASES {
        let seeded = seeded_lines(&mut rng, k, l);
        let (source, lines) = generate(l, &seeded);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("gen.cu"), source).unwrap_or_else(|e| panic!("{e}"));
        let spec_path = dir.join("gen.toml");
        std::fs::write(&spec_path, spec_text(l, 4096)).unwrap_or_else(|e| panic!("{e}"));
        let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
        let mut request = DiffRequest::new(FlagSet::DEFAULT, Against::Flags(FlagSet::STRICT));
        request.repeats = 0; // The search is what is tested: no timing.
        let run = diff(&gpu, &spec, &request, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let text = mantissa_diff::text::render(&run);
        let blamed: BTreeSet<u32> = run
            .blamed
            .iter()
            .map(|b| run.candidates[b.candidate].site.line)
            .collect();
        assert_eq!(blamed, lines, "k={k} L={l}\n{text}");
        assert_eq!(run.remaining, 0, "{text}");
        assert!(
            run.search_trials <= bound(k, l),
            "k={k} L={l}: {} trials\n{text}",
            run.search_trials
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
