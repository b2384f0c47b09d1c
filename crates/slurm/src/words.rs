//! The sharded command and its words: which commands shard, and the argument list every shard
//! runs — the user's, less what the script fixes (`--out`, `--resume`), plus what keeps every
//! shard's plan the same (the thread count, and the CPU-only switch where no GPU is allotted).

use crate::Usage;

/// A command that shards (`--shard I/N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharded {
    /// `mantissa study`: a unit is a point of its plan.
    Study,
    /// `mantissa mathlib`: a unit is a (function, format).
    Mathlib,
    /// `mantissa tune`: a unit is a search.
    Tune,
}

/// Whether a command uses a GPU, as its options say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuUse {
    /// CPU only (`study --backend cpu`, `mathlib --cpu-only`).
    Never,
    /// The GPU when there is one, the CPU alone otherwise (the defaults).
    WhenPresent,
    /// Fails without one (`study --backend gpu`).
    Required,
}

impl Sharded {
    /// Every command that shards, in the order the refusal names them.
    pub const ALL: [Sharded; 3] = [Sharded::Study, Sharded::Mathlib, Sharded::Tune];

    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            Sharded::Study => "study",
            Sharded::Mathlib => "mathlib",
            Sharded::Tune => "tune",
        }
    }

    /// The command named `word`, or the one-line refusal that says which commands shard.
    pub fn parse(word: &str) -> Result<Sharded, Usage> {
        Sharded::ALL
            .into_iter()
            .find(|c| c.name() == word)
            .ok_or_else(|| {
                Usage::new(format!(
                    "mantissa slurm: {word:?} does not shard; the commands that do are {}",
                    Sharded::ALL.map(Sharded::name).join(", ")
                ))
            })
    }

    /// What a unit of its work is, for people.
    pub fn unit(self) -> &'static str {
        match self {
            Sharded::Study => "point",
            Sharded::Mathlib => "function",
            Sharded::Tune => "search",
        }
    }

    /// The option that makes it CPU-only (none for tune, which needs a GPU: its
    /// [`GpuUse::Required`] never lets the shards run without one).
    pub fn cpu_only(self) -> &'static [&'static str] {
        match self {
            Sharded::Study => &["--backend", "cpu"],
            Sharded::Mathlib => &["--cpu-only"],
            Sharded::Tune => &[],
        }
    }

    /// The shard store's file name pattern in the output directory.
    pub fn shard_file(self) -> &'static str {
        match self {
            Sharded::Study | Sharded::Tune => "results.shard-I-of-N.jsonl",
            Sharded::Mathlib => "mathlib.shard-I-of-N.jsonl",
        }
    }
}

/// Whether `words` hold the long option `name`, alone (`--out DIR`) or with `=` (`--out=DIR`).
pub fn has_option(words: &[String], name: &str) -> bool {
    words.iter().any(|w| is_option(w, name))
}

fn is_option(word: &str, name: &str) -> bool {
    word == name
        || word
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('='))
}

/// Refuses, in one line, arguments the script must set itself: `--shard` (each shard's is
/// `${SLURM_ARRAY_TASK_ID}/N`) and a bare `--` (the options appended after it would be read as
/// workload names).
pub fn check(command: Sharded, words: &[String]) -> Result<(), Usage> {
    if has_option(words, "--shard") {
        return Err(Usage::new(format!(
            "mantissa slurm: the {} arguments already have --shard; leave it out, each shard of the job array gets its own (--shard ${{SLURM_ARRAY_TASK_ID}}/N)",
            command.name()
        )));
    }
    if words.iter().any(|w| w == "--") {
        return Err(Usage::new(format!(
            "mantissa slurm: the {} arguments contain a second `--`; give them without it",
            command.name()
        )));
    }
    Ok(())
}

/// The arguments every shard runs, before `--shard`, `--out` and `--resume` (which the script
/// appends): `words` without `--out` and `--resume`; `--threads threads` unless given; and the
/// CPU-only switch (in place of a `--backend` given) when the command would use a GPU but none
/// is allotted (`gpus` 0), so that no shard plans GPU work another cannot.
pub fn shard_words(
    command: Sharded,
    words: &[String],
    threads: u32,
    gpu: GpuUse,
    gpus: u32,
) -> Vec<String> {
    let force_cpu = gpus == 0 && gpu == GpuUse::WhenPresent;
    // (option, whether it takes a value) the script sets itself.
    let mut dropped = vec![("--out", true), ("--resume", false)];
    if force_cpu && command == Sharded::Study {
        dropped.push(("--backend", true));
    }
    let mut out = Vec::with_capacity(words.len() + 4);
    let mut skip_value = false;
    for w in words {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        match dropped.iter().find(|(name, _)| is_option(w, name)) {
            // `--out DIR`: the value is the next word; `--out=DIR`: this one.
            Some((name, takes_value)) => skip_value = *takes_value && w == name,
            None => out.push(w.clone()),
        }
    }
    if !has_option(words, "--threads") {
        out.extend(["--threads".to_string(), threads.to_string()]);
    }
    if force_cpu {
        out.extend(command.cpu_only().iter().map(|w| w.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_study_mathlib_and_tune_shard_and_the_refusal_names_them() {
        assert_eq!(Sharded::parse("study").unwrap(), Sharded::Study);
        assert_eq!(Sharded::parse("mathlib").unwrap(), Sharded::Mathlib);
        assert_eq!(Sharded::parse("tune").unwrap(), Sharded::Tune);
        let e = Sharded::parse("diff").unwrap_err().to_string();
        assert_eq!(
            e,
            "mantissa slurm: \"diff\" does not shard; the commands that do are study, mathlib, tune"
        );
    }

    #[test]
    fn out_and_resume_are_dropped_and_threads_added_once() {
        let words = w(&[
            "sum", "--out", "x", "--size", "1024", "--resume", "--out=y", "--seed", "3",
        ]);
        assert_eq!(
            shard_words(Sharded::Study, &words, 4, GpuUse::Never, 0),
            w(&["sum", "--size", "1024", "--seed", "3", "--threads", "4"])
        );
        // A thread count in the arguments stays theirs.
        let words = w(&["sum", "--threads=2"]);
        assert_eq!(
            shard_words(Sharded::Study, &words, 4, GpuUse::Never, 0),
            w(&["sum", "--threads=2"])
        );
        // An option that only starts like one is kept.
        let words = w(&["--outline", "--resumed"]);
        assert_eq!(
            shard_words(Sharded::Study, &words, 1, GpuUse::Never, 0)[..2],
            words[..]
        );
    }

    #[test]
    fn no_gpu_allotted_makes_the_shards_cpu_only() {
        let words = w(&["sum"]);
        assert_eq!(
            shard_words(Sharded::Study, &words, 1, GpuUse::WhenPresent, 0),
            w(&["sum", "--threads", "1", "--backend", "cpu"])
        );
        assert_eq!(
            shard_words(Sharded::Mathlib, &[], 1, GpuUse::WhenPresent, 0),
            w(&["--threads", "1", "--cpu-only"])
        );
        // A backend given gives way to the CPU.
        assert_eq!(
            shard_words(
                Sharded::Study,
                &w(&["--backend", "all", "sum", "--backend=all"]),
                1,
                GpuUse::WhenPresent,
                0
            ),
            w(&["sum", "--threads", "1", "--backend", "cpu"])
        );
        // With a GPU, or already CPU-only, nothing is added.
        assert_eq!(
            shard_words(Sharded::Study, &words, 1, GpuUse::WhenPresent, 1),
            w(&["sum", "--threads", "1"])
        );
    }

    #[test]
    fn a_shard_or_a_second_double_dash_is_refused_in_one_line() {
        for bad in [
            &["--shard", "1/4"][..],
            &["--shard=1/4"],
            &["sum", "--", "dot"],
        ] {
            let e = check(Sharded::Study, &w(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with("mantissa slurm: ") && !e.contains('\n'),
                "{e}"
            );
        }
        assert!(check(Sharded::Study, &w(&["sum", "--sharding"])).is_ok());
    }
}
