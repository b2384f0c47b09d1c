//! The text of the three files: the job array (`mantissa-array.sbatch`), the merge
//! (`mantissa-merge.sbatch`) and `submit.sh`, which submits the first and the second as a job
//! that starts once every task of the first has succeeded (`--dependency=afterok`).
//!
//! Shell words are always single-quoted (nothing in them is expanded) except the shard, whose
//! `${SLURM_ARRAY_TASK_ID}` must be; paths on `#SBATCH` lines, which sbatch reads itself rather
//! than a shell, are double-quoted with `%` doubled (Slurm's file-name patterns).

use std::path::Path;

use crate::job::Job;
use crate::limits::{format_mem, format_time};
use crate::Usage;

/// The array script's file name.
pub const ARRAY_FILE: &str = "mantissa-array.sbatch";
/// The merge script's file name.
pub const MERGE_FILE: &str = "mantissa-merge.sbatch";
/// The submitting script's file name.
pub const SUBMIT_FILE: &str = "submit.sh";
/// The directory of the tasks' output, in the scripts' directory.
pub const LOGS_DIR: &str = "logs";
/// The merge job's time limit in seconds: it reads records and writes a report.
pub const MERGE_SECONDS: u64 = 30 * 60;
/// The merge job's memory in MiB.
pub const MERGE_MEM_MIB: u64 = 2048;

/// `word` single-quoted for a POSIX shell: `it's` → `'it'\''s'`.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `path` for an `#SBATCH` line, double-quoted, or the one-line refusal of a path sbatch
/// cannot be given there (not UTF-8; a double quote, a backslash or a line break in it).
pub fn sbatch_path(path: &Path) -> Result<String, Usage> {
    Ok(format!("\"{}\"", checked(path)?))
}

/// The file `pattern` (with Slurm's `%a`, `%j`, …) in `dir` for `--output`: `dir`'s own `%`
/// doubled so that Slurm reads it as itself.
pub fn sbatch_file(dir: &Path, pattern: &str) -> Result<String, Usage> {
    Ok(format!(
        "\"{}/{pattern}\"",
        checked(dir)?.trim_end_matches('/').replace('%', "%%")
    ))
}

fn checked(path: &Path) -> Result<&str, Usage> {
    let text = path.to_str().ok_or_else(|| {
        Usage::new(format!(
            "mantissa slurm: {} is not valid UTF-8, which #SBATCH lines cannot carry",
            path.display()
        ))
    })?;
    if text.contains(['"', '\\', '\n', '\r']) {
        return Err(Usage::new(format!(
            "mantissa slurm: {text:?} has a double quote, backslash or line break, which #SBATCH lines cannot carry: choose another --dir"
        )));
    }
    Ok(text)
}

/// Words joined by spaces into lines of at most about 96 columns, continued with ` \`.
fn wrapped(words: &[String], indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in words {
        if !line.is_empty() && line.len() + 1 + w.len() > 96 {
            out += &line;
            out += " \\\n";
            line = indent.to_string();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line += w;
    }
    out + &line + "\n"
}

/// `#SBATCH` lines of the options every job of the run shares.
fn shared_lines(job: &Job, log: &str) -> Result<String, Usage> {
    let mut s = String::new();
    s += &format!(
        "#SBATCH --output={}\n",
        sbatch_file(&job.dir.join(LOGS_DIR), log)?
    );
    s += &format!("#SBATCH --chdir={}\n", sbatch_path(&job.dir)?);
    if let Some(p) = &job.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(a) = &job.account {
        s += &format!("#SBATCH --account={a}\n");
    }
    Ok(s)
}

/// `mantissa-array.sbatch`.
pub fn array(job: &Job) -> Result<String, Usage> {
    let n = job.shards;
    let r = &job.resources;
    let mut s = String::from("#!/bin/bash\n");
    s += &format!(
        "# mantissa {} in {n} shards: a Slurm job array written by `mantissa slurm`; submit it with\n\
         # submit.sh beside it, which also queues the merge. Task I runs the units k = I (mod {n}) of\n\
         # the plan into {}; a requeued or re-submitted\n\
         # task continues where it stopped (--resume). Per task, from\n\
         # {}:\n",
        job.command.name(),
        // A line break in the path would end the comment and start a command.
        job.out
            .join(job.command.shard_file().replace('N', &n.to_string()))
            .display()
            .to_string()
            .replace(['\n', '\r'], "?"),
        job.model,
    );
    for line in &r.how {
        s += &format!("#   {line}\n");
    }
    s += &format!("#SBATCH --job-name=mantissa-{}\n", job.command.name());
    s += &format!("#SBATCH --array=0-{}\n", n - 1);
    s += &shared_lines(job, "shard-%a.out")?;
    s += &format!("#SBATCH --time={}\n", format_time(r.seconds));
    s += &format!("#SBATCH --mem={}\n", format_mem(r.mem_mib));
    s += &format!("#SBATCH --cpus-per-task={}\n", r.cpus);
    if r.gpus > 0 {
        s += &format!("#SBATCH --gpus={}\n", r.gpus);
    }
    s += "set -euo pipefail\n";
    let mut words = vec![
        quote(&job.mantissa.to_string_lossy()),
        quote(job.command.name()),
    ];
    words.extend(job.words.iter().map(|w| quote(w)));
    words.push(quote("--shard"));
    words.push(format!("\"${{SLURM_ARRAY_TASK_ID}}/{n}\""));
    words.push(quote("--out"));
    words.push(quote(&job.out.to_string_lossy()));
    words.push(quote("--resume"));
    s += &wrapped(&words, "    ");
    Ok(s)
}

/// `mantissa-merge.sbatch`.
pub fn merge(job: &Job) -> Result<String, Usage> {
    let mut s = String::from("#!/bin/bash\n");
    s += &format!(
        "# The merge of mantissa {}'s {} shards into one store and report, written by `mantissa slurm`;\n\
         # submit.sh queues it to start once every task of the job array has succeeded.\n",
        job.command.name(),
        job.shards
    );
    s += &format!("#SBATCH --job-name=mantissa-{}-merge\n", job.command.name());
    s += &shared_lines(job, "merge.out")?;
    s += &format!("#SBATCH --time={}\n", format_time(MERGE_SECONDS));
    s += &format!("#SBATCH --mem={}\n", format_mem(MERGE_MEM_MIB));
    s += "#SBATCH --cpus-per-task=1\n";
    s += "set -euo pipefail\n";
    let out = quote(&job.out.to_string_lossy());
    let words = [
        quote(&job.mantissa.to_string_lossy()),
        quote("merge"),
        out.clone(),
        quote("--out"),
        out,
    ];
    s += &wrapped(&words, "    ");
    Ok(s)
}

/// `submit.sh`.
pub fn submit(job: &Job) -> String {
    let name = job.command.name();
    let n = job.shards;
    format!(
        r#"#!/usr/bin/env bash
# Submits mantissa {name} in {n} shards as a Slurm job array, and the merge of their results as a
# job that starts once every shard has succeeded. Written by `mantissa slurm`.
set -euo pipefail
cd "$(dirname "$0")"
jid=$(sbatch --parsable {ARRAY_FILE})
jid=${{jid%%;*}}
echo "submitted job array ${{jid}}: {n} shards of mantissa {name} (output in {LOGS_DIR}/shard-I.out)"
mid=$(sbatch --parsable --dependency=afterok:${{jid}} {MERGE_FILE})
mid=${{mid%%;*}}
echo "submitted merge job ${{mid}}: starts when every shard has succeeded (output in {LOGS_DIR}/merge.out)"
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::JobResources;
    use crate::words::Sharded;
    use std::path::PathBuf;

    fn job(words: &[&str], gpus: u32, dir: &str) -> Job {
        Job {
            command: Sharded::Study,
            words: words.iter().map(|s| s.to_string()).collect(),
            shards: 4,
            out: PathBuf::from("/data/my run"),
            dir: PathBuf::from(dir),
            mantissa: PathBuf::from("/opt/mantissa/bin/mantissa"),
            resources: JobResources {
                gpus,
                cpus: 2,
                seconds: 660,
                mem_mib: 1536,
                how: vec!["--time 0-00:11:00: because".into()],
            },
            partition: Some("gpu".into()),
            account: None,
            model: "a model".into(),
        }
    }

    #[test]
    fn the_array_script_has_the_range_resources_and_the_quoted_command() {
        let s = array(&job(
            &["sum", "--size", "2^10", "--threads", "2"],
            0,
            "/data/run",
        ))
        .unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#!/bin/bash");
        for want in [
            "#SBATCH --job-name=mantissa-study",
            "#SBATCH --array=0-3",
            "#SBATCH --output=\"/data/run/logs/shard-%a.out\"",
            "#SBATCH --chdir=\"/data/run\"",
            "#SBATCH --time=0-00:11:00",
            "#SBATCH --mem=1536M",
            "#SBATCH --cpus-per-task=2",
            "#SBATCH --partition=gpu",
            "set -euo pipefail",
            "#   --time 0-00:11:00: because",
        ] {
            assert!(lines.contains(&want), "{want} missing from:\n{s}");
        }
        assert!(!s.contains("--gpus"), "{s}");
        assert!(!s.contains("--account"), "{s}");
        assert!(s.contains("/data/my run/results.shard-I-of-4.jsonl"), "{s}");
        // Every #SBATCH line comes before the first command, or sbatch ignores it.
        let first_command = lines.iter().position(|l| !l.starts_with('#')).unwrap();
        assert!(lines[first_command..]
            .iter()
            .all(|l| !l.starts_with("#SBATCH")));
        let command = lines[first_command + 1..].join("\n");
        assert_eq!(
            command,
            "'/opt/mantissa/bin/mantissa' 'study' 'sum' '--size' '2^10' '--threads' '2' '--shard' \\\n    \"${SLURM_ARRAY_TASK_ID}/4\" '--out' '/data/my run' '--resume'"
        );
    }

    #[test]
    fn gpus_are_asked_for_only_when_given() {
        let s = array(&job(&["sum"], 2, "/d")).unwrap();
        assert!(s.lines().any(|l| l == "#SBATCH --gpus=2"), "{s}");
        let m = merge(&job(&["sum"], 2, "/d")).unwrap();
        assert!(!m.contains("--gpus"), "the merge runs on a CPU: {m}");
    }

    #[test]
    fn odd_arguments_are_quoted_so_a_shell_reads_them_back() {
        let odd = ["it's", "a b", "$HOME", "`x`", "*", "\\", "\"q\"", ""];
        let s = array(&job(&odd, 0, "/d")).unwrap();
        let command = s.lines().skip_while(|l| *l != "set -euo pipefail").skip(1);
        let script = format!(
            "SLURM_ARRAY_TASK_ID=3; printf '%s\\n' {}",
            command
                .collect::<Vec<_>>()
                .join("\n")
                // printf in place of the binary; everything after it is its arguments.
                .replacen("'/opt/mantissa/bin/mantissa'", "", 1)
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        let got: Vec<&str> = std::str::from_utf8(&out.stdout)
            .unwrap()
            .split_terminator('\n')
            .collect();
        let mut want = vec!["study"];
        want.extend(odd);
        want.extend(["--shard", "3/4", "--out", "/data/my run", "--resume"]);
        assert_eq!(got, want);
    }

    #[test]
    fn the_merge_and_the_submission_chain_on_the_array() {
        let m = merge(&job(&["sum"], 0, "/data/run")).unwrap();
        for want in [
            "#SBATCH --job-name=mantissa-study-merge",
            "#SBATCH --output=\"/data/run/logs/merge.out\"",
            "#SBATCH --cpus-per-task=1",
            "#SBATCH --time=0-00:30:00",
            "#SBATCH --mem=2G",
            "'/opt/mantissa/bin/mantissa' 'merge' '/data/my run' '--out' '/data/my run'",
        ] {
            assert!(m.lines().any(|l| l == want), "{want} missing from:\n{m}");
        }
        assert!(!m.contains("--array"), "{m}");
        let s = submit(&job(&["sum"], 0, "/d"));
        assert!(
            s.contains("jid=$(sbatch --parsable mantissa-array.sbatch)"),
            "{s}"
        );
        assert!(
            s.contains("sbatch --parsable --dependency=afterok:${jid} mantissa-merge.sbatch"),
            "{s}"
        );
        assert!(s.starts_with("#!/usr/bin/env bash\n") && s.contains("set -euo pipefail"));
    }

    #[test]
    fn sbatch_paths_double_percent_and_refuse_what_they_cannot_carry() {
        assert_eq!(
            sbatch_file(Path::new("/a b/100%/"), "x-%a.out").unwrap(),
            "\"/a b/100%%/x-%a.out\""
        );
        assert_eq!(sbatch_path(Path::new("/a%b")).unwrap(), "\"/a%b\"");
        for bad in ["/a\"b", "/a\\b", "/a\nb"] {
            let e = sbatch_path(Path::new(bad)).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("--dir"), "{e}");
            assert!(sbatch_file(Path::new(bad), "x").is_err());
        }
    }
}
