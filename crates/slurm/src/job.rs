//! A request ([`JobSpec`]: what the user asked, as parsed) resolved into a [`Job`] (absolute
//! paths, the shards' words, the resources) and written as the three scripts.

use std::path::{Path, PathBuf};

use crate::estimate::{Estimate, JobResources};
use crate::script::{self, ARRAY_FILE, LOGS_DIR, MERGE_FILE, SUBMIT_FILE};
use crate::words::{self, GpuUse, Sharded};
use crate::{SlurmError, Usage};

/// CPUs per task when no thread count is given: this machine's cores, at most this many (a
/// shard should not ask for a whole node by default).
pub const DEFAULT_CPUS_MAX: u32 = 8;

/// What the user asked for, parsed: `mantissa slurm`'s options and the command after `--`.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The command.
    pub command: Sharded,
    /// Its arguments as given (after the command's name).
    pub args: Vec<String>,
    /// Its output directory, as given or defaulted.
    pub out: PathBuf,
    /// Whether it uses a GPU, by its options.
    pub gpu: GpuUse,
    /// A thread count given (`--threads`, in the arguments or before `slurm`).
    pub threads: Option<u32>,
    /// `--shards`.
    pub shards: u32,
    /// `--gpus`.
    pub gpus: Option<u32>,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--time`, in seconds.
    pub time: Option<u64>,
    /// `--mem`, in MiB.
    pub mem: Option<u64>,
    /// `--dir`.
    pub dir: Option<PathBuf>,
    /// `--mantissa`.
    pub mantissa: Option<PathBuf>,
}

impl JobSpec {
    /// GPUs per task, and why: as given, else 1 when the command uses a GPU and 0 otherwise;
    /// 0 for a command that requires one is refused.
    pub fn gpus(&self) -> Result<(u32, String), Usage> {
        match (self.gpus, self.gpu) {
            (Some(0), GpuUse::Required) => Err(Usage::new(format!(
                "mantissa slurm: --gpus 0, but {} as given needs a GPU on every shard",
                self.command.name()
            ))),
            (Some(g), _) => Ok((g, "given".into())),
            (None, GpuUse::Never) => Ok((0, "the command runs on the CPU only".into())),
            (None, _) => Ok((
                1,
                "the command uses a GPU (--gpus 0 runs every shard on the CPU alone)".into(),
            )),
        }
    }

    /// CPUs per task (and every shard's `--threads`), and why.
    pub fn cpus(&self) -> (u32, String) {
        match self.threads {
            Some(t) => (t, "--threads".into()),
            None => {
                let here = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
                (
                    here.min(DEFAULT_CPUS_MAX),
                    format!("this machine's {here} cores, at most {DEFAULT_CPUS_MAX} (choose with --threads)"),
                )
            }
        }
    }
}

/// Everything the scripts say, resolved.
#[derive(Clone, Debug)]
pub struct Job {
    /// The command.
    pub command: Sharded,
    /// Its arguments in every shard, less `--shard`, `--out` and `--resume`.
    pub words: Vec<String>,
    /// Tasks of the array.
    pub shards: u32,
    /// The command's output directory (absolute).
    pub out: PathBuf,
    /// Where the scripts and `logs/` go (absolute).
    pub dir: PathBuf,
    /// The mantissa binary (absolute).
    pub mantissa: PathBuf,
    /// What each task asks for.
    pub resources: JobResources,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// Where the estimate comes from, for the scripts' comments.
    pub model: String,
}

/// The files written, and what the user runs.
#[derive(Clone, Debug)]
pub struct Written {
    /// The array script, the merge script and submit.sh.
    pub files: [PathBuf; 3],
    /// `bash DIR/submit.sh`, quoted for a shell.
    pub command: String,
}

fn absolute(path: &Path, what: &str) -> Result<PathBuf, Usage> {
    std::path::absolute(path)
        .map_err(|e| Usage::new(format!("mantissa slurm: {what} {}: {e}", path.display())))
}

/// A partition or account name as `#SBATCH` carries it: letters, digits and `_ . , -`.
fn slurm_name(name: &Option<String>, option: &str) -> Result<Option<String>, Usage> {
    match name {
        Some(n)
            if n.is_empty()
                || !n
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.,-".contains(c)) =>
        {
            Err(Usage::new(format!(
                "mantissa slurm: {option} {n:?}: expected a Slurm name (letters, digits, _ . , -)"
            )))
        }
        _ => Ok(name.clone()),
    }
}

impl Job {
    /// Resolves `spec` with its `estimate` (made for the GPUs [`JobSpec::gpus`] decided).
    pub fn new(spec: &JobSpec, estimate: &Estimate) -> Result<Job, Usage> {
        if spec.shards == 0 {
            return Err(Usage::new("mantissa slurm: --shards 0: give at least 1"));
        }
        if spec.command == Sharded::Tune && spec.time.is_none() {
            return Err(Usage::new(
                "mantissa slurm: tune needs --time D-HH:MM:SS per shard: how many trials a tuning run makes is found only by running it, so its time cannot be estimated",
            ));
        }
        if spec.command == Sharded::Tune && spec.shards as usize > estimate.units() {
            return Err(Usage::new(format!(
                "mantissa slurm: --shards {}: this tuning run has {} searches, so some shards would have none; give at most {}",
                spec.shards,
                estimate.units(),
                estimate.units()
            )));
        }
        if estimate.units() == 0 {
            return Err(Usage::new(format!(
                "mantissa slurm: mantissa {} plans no {} with these arguments: nothing to run",
                spec.command.name(),
                estimate.unit
            )));
        }
        words::check(spec.command, &spec.args)?;
        let (gpus, gpus_why) = spec.gpus()?;
        let (cpus, cpus_why) = spec.cpus();
        let out = absolute(&spec.out, "--out")?;
        let dir = match &spec.dir {
            Some(d) => absolute(d, "--dir")?,
            None => out.clone(),
        };
        let mantissa = match &spec.mantissa {
            Some(m) => absolute(m, "--mantissa")?,
            None => std::env::current_exe().map_err(|e| {
                Usage::new(format!(
                    "mantissa slurm: cannot tell where this mantissa binary is ({e}): give --mantissa PATH"
                ))
            })?,
        };
        let job = Job {
            command: spec.command,
            words: words::shard_words(spec.command, &spec.args, cpus, spec.gpu, gpus),
            shards: spec.shards,
            out,
            dir,
            mantissa,
            resources: JobResources::new(
                estimate,
                spec.time,
                spec.mem,
                (gpus, &gpus_why),
                (cpus, &cpus_why),
            ),
            partition: slurm_name(&spec.partition, "--partition")?,
            account: slurm_name(&spec.account, "--account")?,
            model: estimate.model.clone(),
        };
        // A directory the #SBATCH lines cannot carry is refused here, before anything is written.
        script::array(&job)?;
        Ok(job)
    }

    /// Writes the scripts into `dir` (created, with `logs/`); submit.sh is made executable.
    pub fn write(&self) -> Result<Written, SlurmError> {
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| SlurmError::Io { path, source }
        };
        let logs = self.dir.join(LOGS_DIR);
        mantissa_files::ensure_dir(&logs)?;
        let files = [
            (ARRAY_FILE, script::array(self)?),
            (MERGE_FILE, script::merge(self)?),
            (SUBMIT_FILE, script::submit(self)),
        ]
        .map(|(name, text)| (self.dir.join(name), text));
        for (path, text) in &files {
            mantissa_files::write_file(path, text.as_bytes())?;
        }
        let submit = &files[2].0;
        make_executable(submit).map_err(io(submit))?;
        Ok(Written {
            command: format!("bash {}", script::quote(&submit.to_string_lossy())),
            files: files.map(|(p, _)| p),
        })
    }

    /// What `mantissa slurm` prints: the files, the estimate and how each figure was arrived
    /// at, and the command that submits.
    pub fn summary(&self, estimate: &Estimate, written: &Written) -> String {
        let n = self.shards;
        let what = [
            format!(
                "the job array: {n} shard{} of mantissa {}, output in {}/",
                if n == 1 { "" } else { "s" },
                self.command.name(),
                self.dir.join(LOGS_DIR).display()
            ),
            format!(
                "the merge into {}, once every shard has succeeded",
                self.out.display()
            ),
            "submits both".to_string(),
        ];
        let width = written
            .files
            .iter()
            .map(|f| f.display().to_string().chars().count())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for (file, what) in written.files.iter().zip(what) {
            let f = file.display().to_string();
            let pad = " ".repeat(width - f.chars().count());
            s += &format!("wrote {f}{pad}  {what}\n");
        }
        let units = estimate.units();
        let idle = estimate.shards.iter().filter(|s| s.units == 0).count();
        s += &format!(
            "{units} {} in {n} shard{} (unit k to shard k mod {n}); per shard, from {}:\n",
            if units == 1 {
                estimate.unit.to_string()
            } else {
                plural(estimate.unit)
            },
            if n == 1 { "" } else { "s" },
            estimate.model
        );
        for line in &self.resources.how {
            s += &format!("  {line}\n");
        }
        if idle > 0 {
            s += &format!(
                "note: {idle} of the {n} shards have no {} to run (more shards than {})\n",
                estimate.unit,
                plural(estimate.unit)
            );
        }
        s += &format!(
            "The binary must be at {} on the nodes, as here. To submit:\n  {}\n",
            self.mantissa.display(),
            written.command
        );
        s
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

/// `points`, `functions`, `searches`: a unit's name in the plural.
fn plural(unit: &str) -> String {
    if unit.ends_with("ch") || unit.ends_with('s') {
        format!("{unit}es")
    } else {
        format!("{unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::ShardLoad;

    fn spec() -> JobSpec {
        JobSpec {
            command: Sharded::Study,
            args: vec!["sum".into(), "--out".into(), "elsewhere".into()],
            out: PathBuf::from("elsewhere"),
            gpu: GpuUse::WhenPresent,
            threads: Some(2),
            shards: 3,
            gpus: None,
            partition: None,
            account: Some("proj-1".into()),
            time: None,
            mem: None,
            dir: None,
            mantissa: Some(PathBuf::from("/opt/mantissa")),
        }
    }

    fn estimate(units: &[usize]) -> Estimate {
        Estimate {
            shards: units
                .iter()
                .map(|&u| ShardLoad {
                    units: u,
                    seconds: 60.0 * u as f64,
                    bytes: 1 << 20,
                })
                .collect(),
            unit: "point",
            model: "the test's model".into(),
        }
    }

    #[test]
    fn a_job_resolves_paths_words_and_resources() {
        let job = Job::new(&spec(), &estimate(&[2, 2, 1])).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(job.out, cwd.join("elsewhere"));
        assert_eq!(job.dir, job.out);
        assert_eq!(job.mantissa, PathBuf::from("/opt/mantissa"));
        assert_eq!(job.words, ["sum", "--threads", "2"]);
        // The largest shard: 120 s × 2 + 10 min = 14 min; a GPU by default.
        assert_eq!(job.resources.seconds, 14 * 60);
        assert_eq!(job.resources.gpus, 1);
        assert_eq!(job.resources.cpus, 2);
        assert_eq!(job.account.as_deref(), Some("proj-1"));
    }

    #[test]
    fn gpus_follow_the_command_unless_given() {
        let mut s = spec();
        assert_eq!(s.gpus().unwrap().0, 1);
        s.gpu = GpuUse::Never;
        assert_eq!(s.gpus().unwrap().0, 0);
        s.gpus = Some(4);
        assert_eq!(s.gpus().unwrap().0, 4);
        s.gpu = GpuUse::Required;
        s.gpus = Some(0);
        let e = s.gpus().unwrap_err().to_string();
        assert!(e.contains("--gpus 0") && !e.contains('\n'), "{e}");
        // Without a thread count, this machine's cores up to the default maximum.
        s.threads = None;
        let (cpus, why) = s.cpus();
        assert!((1..=DEFAULT_CPUS_MAX).contains(&cpus), "{cpus} {why}");
    }

    #[test]
    fn bad_requests_are_one_line() {
        let mut s = spec();
        s.shards = 0;
        let mut bad = vec![Job::new(&s, &estimate(&[1])).unwrap_err()];
        bad.push(Job::new(&spec(), &estimate(&[0, 0, 0])).unwrap_err());
        let mut s = spec();
        s.partition = Some("a b".into());
        bad.push(Job::new(&s, &estimate(&[1])).unwrap_err());
        let mut s = spec();
        s.dir = Some(PathBuf::from("/tmp/say \"hi\""));
        bad.push(Job::new(&s, &estimate(&[1])).unwrap_err());
        let mut s = spec();
        s.args.push("--shard=0/3".into());
        bad.push(Job::new(&s, &estimate(&[1])).unwrap_err());
        for e in bad {
            let e = e.to_string();
            assert!(
                e.starts_with("mantissa slurm: ") && !e.contains('\n'),
                "{e}"
            );
        }
    }

    #[test]
    fn written_files_are_the_scripts_and_submit_is_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = spec();
        s.dir = Some(tmp.path().join("jobs"));
        let job = Job::new(&s, &estimate(&[1, 1, 0])).unwrap();
        let written = job.write().unwrap();
        assert!(tmp.path().join("jobs/logs").is_dir());
        assert_eq!(
            std::fs::read_to_string(&written.files[0]).unwrap(),
            script::array(&job).unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(&written.files[1]).unwrap(),
            script::merge(&job).unwrap()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&written.files[2])
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111);
        }
        let summary = job.summary(&estimate(&[1, 1, 0]), &written);
        assert!(summary.contains(&written.command), "{summary}");
        assert!(
            summary.contains("1 of the 3 shards have no point"),
            "{summary}"
        );
        assert!(written.command.starts_with("bash '"), "{}", written.command);
    }

    #[test]
    fn units_are_named_in_the_plural_as_words_are() {
        assert_eq!(plural("point"), "points");
        assert_eq!(plural("function"), "functions");
        assert_eq!(plural("search"), "searches");
    }
}
