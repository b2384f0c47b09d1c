//! The report's tables, built from records alone and rendered as Markdown
//! ([`crate::markdown`]) or HTML ([`crate::html`]).
//!
//! Records are grouped by workload and algorithm. For each group there are
//! - accuracy tables: rows = input class (and size), columns = precisions, cells = absolute
//!   error; one table per backend configuration, except that configurations whose cells are all
//!   equal share one table (serial CPU and CPU threads often do, GPU launch shapes rarely);
//! - time tables, one per size: rows = backend configuration, columns = precisions, cells =
//!   median milliseconds, plus slowdowns relative to f32 as in seed 000, Table 12.
//!
//! Several records in one cell (seeds, or input classes in a time table) show their median and
//! are marked `*` with a footnote; a cell that did not run shows `oor` or `failed`, and a cell
//! with no record `-`.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::record::{Backend, Record, Status};

/// Column order of precisions: narrow to wide, each base type followed by its extensions, then
/// arbitrary precision by bits, then exact. Unknown names go last, alphabetically.
const ORDER: [&str; 8] = [
    "f32", "comp32", "comp32n", "f32x2", "f64", "comp64", "comp64n", "f64x2",
];

/// Sort key of a precision name (see [`ORDER`]).
pub(crate) fn precision_rank(p: &str) -> (u8, u64, String) {
    if let Some(i) = ORDER.iter().position(|&o| o == p) {
        return (0, i as u64, String::new());
    }
    if let Some(bits) = p.strip_prefix("mp").and_then(|b| b.parse::<u64>().ok()) {
        return (1, bits, String::new());
    }
    if p == "exact" {
        return (2, 0, String::new());
    }
    (3, 0, p.to_string())
}

/// A stable small index per precision, so a precision has the same colour in every plot.
pub(crate) fn precision_index(p: &str) -> usize {
    match precision_rank(p) {
        (0, i, _) => i as usize,
        (1, bits, _) => 8 + (bits.max(1).ilog2() as usize).saturating_sub(5),
        (2, _, _) => 15,
        (_, _, name) => 16 + name.bytes().map(usize::from).sum::<usize>() % 7,
    }
}

fn cmp_precision(a: &str, b: &str) -> Ordering {
    precision_rank(a).cmp(&precision_rank(b))
}

/// Compares strings with embedded numbers by value, so `range10` comes after `range9`.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let o = match (x, y) {
            ((true, x), (true, y)) => {
                let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// A backend configuration on one device: what a time-table row is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Config {
    pub backend: Backend,
    pub device: String,
}

impl Config {
    pub fn of(r: &Record) -> Config {
        Config {
            backend: r.backend,
            device: r.device.clone(),
        }
    }
}

impl Ord for Config {
    fn cmp(&self, other: &Self) -> Ordering {
        let key = |b: &Backend| match *b {
            Backend::Cpu { threads } => (0, [threads, 0, 0], [0; 3]),
            Backend::Gpu { grid, block } => (1, grid, block),
            Backend::GpuTiles { tile } => (2, [tile, 0, 0], [0; 3]),
        };
        key(&self.backend)
            .cmp(&key(&other.backend))
            .then_with(|| natural_cmp(&self.device, &other.device))
    }
}

impl PartialOrd for Config {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// How configurations are named: the device is added only where one backend kind ran on
/// several devices, since otherwise it is noise in every row.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Naming {
    cpu_devices: bool,
    gpu_devices: bool,
}

impl Naming {
    pub fn of(records: &[Record]) -> Naming {
        let mut cpu = BTreeSet::new();
        let mut gpu = BTreeSet::new();
        for r in records {
            if r.backend.is_gpu() {
                &mut gpu
            } else {
                &mut cpu
            }
            .insert(r.device.as_str());
        }
        Naming {
            cpu_devices: cpu.len() > 1,
            gpu_devices: gpu.len() > 1,
        }
    }

    /// Whether CPU (`gpu` false) or GPU records came from more than one device.
    pub fn several_devices(&self, gpu: bool) -> bool {
        if gpu {
            self.gpu_devices
        } else {
            self.cpu_devices
        }
    }

    pub fn label(&self, c: &Config) -> String {
        let with_device = if c.backend.is_gpu() {
            self.gpu_devices
        } else {
            self.cpu_devices
        };
        if with_device {
            format!("{} ({})", c.backend, c.device)
        } else {
            c.backend.to_string()
        }
    }
}

/// A problem size for display: powers of two as `2^k`, round decimals as `8e6`. The unit is the
/// workload's (elements, terms, steps), so none is printed.
pub(crate) fn fmt_size(n: u64) -> String {
    if n >= 1024 && n.is_power_of_two() {
        return format!("2^{}", n.ilog2());
    }
    if n >= 10_000 {
        let zeros = n.to_string().len() - n.to_string().trim_end_matches('0').len();
        if zeros >= 3 {
            let mantissa = n / 10u64.pow(zeros as u32);
            return format!("{mantissa}e{zeros}");
        }
    }
    n.to_string()
}

/// An error in three significant digits (`1.23e-4`), exact zero as `0`.
pub(crate) fn fmt_err(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:.2e}")
    }
}

/// Milliseconds in four significant digits, fixed-point where that stays short.
pub(crate) fn fmt_ms(x: f64) -> String {
    if !x.is_finite() {
        return fmt_err(x);
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

/// Median by total order (NaN sorts last), mean of the middle pair for even counts.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// The records that fall into one table cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cell<'a> {
    pub records: Vec<&'a Record>,
}

/// What a cell shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shown {
    Value(f64),
    /// It ran but the record has no such measurement.
    NotMeasured,
    OutOfResources,
    Failed,
}

impl Cell<'_> {
    fn shown(&self, metric: impl Fn(&Record) -> Option<f64>) -> Option<Shown> {
        if self.records.is_empty() {
            return None;
        }
        let ok: Vec<&Record> = self
            .records
            .iter()
            .copied()
            .filter(|r| r.status == Status::Ok)
            .collect();
        if ok.is_empty() {
            return Some(
                if self
                    .records
                    .iter()
                    .any(|r| r.status == Status::OutOfResources)
                {
                    Shown::OutOfResources
                } else {
                    Shown::Failed
                },
            );
        }
        let values: Vec<f64> = ok.iter().filter_map(|r| metric(r)).collect();
        Some(median(&values).map_or(Shown::NotMeasured, Shown::Value))
    }

    /// Median absolute error of the records that ran.
    pub fn error(&self) -> Option<Shown> {
        self.shown(|r| r.error.as_ref().map(|e| e.abs))
    }

    /// Median of the records' median times.
    pub fn time(&self) -> Option<Shown> {
        self.shown(|r| r.time.as_ref().map(|t| t.median_ms))
    }

    /// The fastest and the slowest repetition over the records that ran and were timed.
    pub fn time_range(&self) -> Option<(f64, f64)> {
        let times = self
            .records
            .iter()
            .filter(|r| r.status == Status::Ok)
            .filter_map(|r| r.time.as_ref())
            .filter(|t| t.min_ms.is_finite() && t.max_ms.is_finite() && t.min_ms > 0.0);
        times.fold(None, |acc, t| {
            let (lo, hi) = acc.unwrap_or((f64::INFINITY, 0.0));
            Some((lo.min(t.min_ms), hi.max(t.max_ms)))
        })
    }

    /// A record whose result is not finite, to say why a point is missing from a plot.
    pub fn non_finite_result(&self) -> Option<f64> {
        self.records
            .iter()
            .filter_map(|r| r.value)
            .find(|v| !v.is_finite())
    }

    /// The most records that ran for one configuration. A merged accuracy table holds several
    /// configurations per cell with equal results: that is not a median over seeds.
    fn per_config(&self) -> usize {
        let mut counts: HashMap<Config, usize> = HashMap::new();
        for r in self.records.iter().filter(|r| r.status == Status::Ok) {
            *counts.entry(Config::of(r)).or_default() += 1;
        }
        counts.into_values().max().unwrap_or(0)
    }

    fn several(&self) -> bool {
        self.per_config() > 1
    }
}

fn shown_text(s: Option<Shown>, fmt: fn(f64) -> String) -> String {
    match s {
        None => "-".into(),
        Some(Shown::Value(x)) => fmt(x),
        Some(Shown::NotMeasured) => "n/a".into(),
        Some(Shown::OutOfResources) => "oor".into(),
        Some(Shown::Failed) => "failed".into(),
    }
}

/// A rendered-neutral table: both Markdown and HTML are drawn from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Leading columns that hold text (left-aligned); the rest are numbers.
    pub text_columns: usize,
    /// Footnotes printed under the table.
    pub notes: Vec<String>,
}

/// A row of an accuracy table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowKey {
    pub input: String,
    pub size: u64,
}

/// One accuracy table: the configurations it stands for and its cells.
#[derive(Debug, Clone)]
pub(crate) struct Accuracy<'a> {
    pub configs: Vec<Config>,
    pub rows: Vec<RowKey>,
    pub precisions: Vec<String>,
    pub cells: HashMap<(usize, usize), Cell<'a>>,
}

/// One time table: rows are configurations.
#[derive(Debug, Clone)]
pub(crate) struct Timing<'a> {
    pub size: u64,
    pub configs: Vec<Config>,
    pub precisions: Vec<String>,
    pub cells: HashMap<(usize, usize), Cell<'a>>,
}

/// Everything measured for one workload and algorithm.
#[derive(Debug, Clone)]
pub(crate) struct Group<'a> {
    pub workload: String,
    pub algorithm: String,
    pub accuracy: Vec<Accuracy<'a>>,
    pub timing: Vec<Timing<'a>>,
    pub records: Vec<&'a Record>,
}

impl Group<'_> {
    pub fn title(&self) -> String {
        format!("{} / {}", self.workload, self.algorithm)
    }
}

fn sorted_precisions<'a>(records: impl Iterator<Item = &'a Record>) -> Vec<String> {
    let mut p: Vec<String> = records
        .map(|r| r.precision.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    p.sort_by(|a, b| cmp_precision(a, b));
    p
}

/// Groups records into workloads and their tables.
pub(crate) fn groups(records: &[Record]) -> Vec<Group<'_>> {
    // Workloads in the order they were first measured (the study runs its main experiment,
    // the sums, first), and within a workload its algorithms likewise.
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in records {
        let k = (r.workload.as_str(), r.algorithm.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let workloads: Vec<&str> = keys.iter().map(|k| k.0).collect();
    keys.sort_by_key(|k| workloads.iter().position(|w| *w == k.0));
    keys.into_iter()
        .map(|(w, a)| {
            let mine: Vec<&Record> = records
                .iter()
                .filter(|r| r.workload == w && r.algorithm == a)
                .collect();
            Group {
                workload: w.to_string(),
                algorithm: a.to_string(),
                accuracy: accuracy_tables(&mine),
                timing: timing_tables(&mine),
                records: mine,
            }
        })
        .collect()
}

fn accuracy_tables<'a>(records: &[&'a Record]) -> Vec<Accuracy<'a>> {
    let precisions = sorted_precisions(records.iter().copied());
    let configs: BTreeSet<Config> = records.iter().map(|r| Config::of(r)).collect();
    let mut tables: Vec<Accuracy<'a>> = Vec::new();
    let mut signatures: Vec<Vec<String>> = Vec::new();
    for config in configs {
        let mine: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| Config::of(r) == config)
            .collect();
        let mut rows: Vec<RowKey> = mine
            .iter()
            .map(|r| RowKey {
                input: r.input.clone(),
                size: r.size,
            })
            .collect::<std::collections::HashSet<_>>()
            .into_iter()
            .collect();
        rows.sort_by(|a, b| natural_cmp(&a.input, &b.input).then(a.size.cmp(&b.size)));
        let mut cells: HashMap<(usize, usize), Cell> = HashMap::new();
        for r in &mine {
            let (Some(row), Some(col)) = (
                rows.iter()
                    .position(|k| k.input == r.input && k.size == r.size),
                precisions.iter().position(|p| *p == r.precision),
            ) else {
                continue;
            };
            cells.entry((row, col)).or_default().records.push(r);
        }
        // Tables whose cells print the same merge; compare what is printed, since that is
        // what a reader would see twice.
        let mut signature: Vec<String> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            for (j, p) in precisions.iter().enumerate() {
                let c = cells.get(&(i, j));
                let text = shown_text(c.and_then(Cell::error), fmt_err);
                let n = c.map_or(0, |c| c.records.len());
                signature.push(format!("{}|{}|{p}|{text}|{n}", row.input, row.size));
            }
        }
        if let Some(k) = signatures.iter().position(|s| *s == signature) {
            tables[k].configs.push(config);
            // Keep every record so plots and footnotes see them all; the cells print the same.
            for (key, cell) in cells {
                tables[k]
                    .cells
                    .entry(key)
                    .or_default()
                    .records
                    .extend(cell.records);
            }
            continue;
        }
        signatures.push(signature);
        tables.push(Accuracy {
            configs: vec![config],
            rows,
            precisions: precisions.clone(),
            cells,
        });
    }
    // Drop columns a table never uses (a GPU table without mp precisions, say).
    for t in &mut tables {
        let used: Vec<usize> = (0..t.precisions.len())
            .filter(|&j| (0..t.rows.len()).any(|i| t.cells.contains_key(&(i, j))))
            .collect();
        let mut cells = HashMap::new();
        for (new_j, &j) in used.iter().enumerate() {
            for i in 0..t.rows.len() {
                if let Some(c) = t.cells.remove(&(i, j)) {
                    cells.insert((i, new_j), c);
                }
            }
        }
        t.precisions = used.iter().map(|&j| t.precisions[j].clone()).collect();
        t.cells = cells;
    }
    tables
}

fn timing_tables<'a>(records: &[&'a Record]) -> Vec<Timing<'a>> {
    let sizes: BTreeSet<u64> = records.iter().map(|r| r.size).collect();
    sizes
        .into_iter()
        .filter_map(|size| {
            let mine: Vec<&Record> = records.iter().copied().filter(|r| r.size == size).collect();
            // A table of nothing but dashes helps nobody: only sizes where something was timed
            // or failed to run.
            if !mine
                .iter()
                .any(|r| r.time.is_some() || r.status != Status::Ok)
            {
                return None;
            }
            let precisions = sorted_precisions(mine.iter().copied());
            let configs: Vec<Config> = mine
                .iter()
                .map(|r| Config::of(r))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let mut cells: HashMap<(usize, usize), Cell> = HashMap::new();
            for r in mine {
                let (Some(i), Some(j)) = (
                    configs.iter().position(|c| *c == Config::of(r)),
                    precisions.iter().position(|p| *p == r.precision),
                ) else {
                    continue;
                };
                cells.entry((i, j)).or_default().records.push(r);
            }
            Some(Timing {
                size,
                configs,
                precisions,
                cells,
            })
        })
        .collect()
}

/// Whether every cell that ran holds several records: then marking each one is noise, and one
/// footnote says it for the whole table.
fn all_several(cells: &[&Cell]) -> bool {
    let ran: Vec<&&Cell> = cells.iter().filter(|c| c.per_config() > 0).collect();
    !ran.is_empty() && ran.iter().all(|c| c.several())
}

/// The footnote for cells that show a median: how many records and what they differ in
/// (`seeds 1, 2, 3`, `inputs range1, range2`). `all`: every cell is one, so none is marked.
fn several_note(cells: &[&Cell], what: &str, all: bool) -> Option<String> {
    let several: Vec<&&Cell> = cells.iter().filter(|c| c.several()).collect();
    if several.is_empty() {
        return None;
    }
    let max = several.iter().map(|c| c.per_config()).max().unwrap_or(0);
    let seeds: BTreeSet<u64> = several
        .iter()
        .flat_map(|c| c.records.iter().map(|r| r.seed))
        .collect();
    let mut inputs: Vec<&str> = several
        .iter()
        .flat_map(|c| c.records.iter().map(|r| r.input.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    inputs.sort_by(|a, b| natural_cmp(a, b));
    let mut over = Vec::new();
    if seeds.len() > 1 {
        let s: Vec<String> = seeds.iter().map(u64::to_string).collect();
        over.push(format!("seeds {}", s.join(", ")));
    }
    if inputs.len() > 1 {
        over.push(format!("inputs {}", inputs.join(", ")));
    }
    let over = if over.is_empty() {
        "repeated records".to_string()
    } else {
        over.join("; ")
    };
    // `*:` rather than `* ` so that Markdown does not turn the footnote into a list item.
    let lead = if all {
        format!("Each {what} is")
    } else {
        format!("*: the {what} in cells marked * is")
    };
    Some(format!(
        "{lead} the median of up to {max} records per cell ({over})."
    ))
}

fn failure_notes(cells: &[&Cell], naming: &Naming) -> Vec<String> {
    let mut notes = Vec::new();
    for c in cells {
        for r in &c.records {
            if r.status == Status::Failed {
                let why = r.note.as_deref().unwrap_or("no reason recorded");
                notes.push(format!(
                    "failed: {} {} n={} {}: {why}",
                    r.precision,
                    r.input,
                    fmt_size(r.size),
                    naming.label(&Config::of(r))
                ));
            }
        }
    }
    notes.sort();
    notes.dedup();
    // A whole failed sweep would bury the table; the CSV has every note.
    if notes.len() > 8 {
        let more = notes.len() - 8;
        notes.truncate(8);
        notes.push(format!("… and {more} more failures (see results.csv)"));
    }
    notes
}

impl Accuracy<'_> {
    pub fn sizes(&self) -> BTreeSet<u64> {
        self.rows.iter().map(|r| r.size).collect()
    }

    pub fn configs_label(&self, naming: &Naming) -> String {
        let labels: Vec<String> = self.configs.iter().map(|c| naming.label(c)).collect();
        labels.join(", ")
    }

    pub fn table(&self, naming: &Naming) -> Table {
        let sizes = self.sizes();
        let one_size = sizes.len() == 1;
        let mut title = format!("Absolute error — {}", self.configs_label(naming));
        if let (true, Some(n)) = (one_size, sizes.first()) {
            let _ = write!(title, " (n = {})", fmt_size(*n));
        }
        let cells: Vec<&Cell> = self.cells.values().collect();
        let all = all_several(&cells);
        let mut headers = vec!["input".to_string()];
        if !one_size {
            headers.push("n".into());
        }
        let text_columns = headers.len();
        headers.extend(self.precisions.iter().cloned());
        let mut rows = Vec::new();
        for (i, key) in self.rows.iter().enumerate() {
            let mut row = vec![key.input.clone()];
            if !one_size {
                row.push(fmt_size(key.size));
            }
            for j in 0..self.precisions.len() {
                let cell = self.cells.get(&(i, j));
                let mut text = shown_text(cell.and_then(Cell::error), fmt_err);
                if !all && cell.is_some_and(Cell::several) {
                    text.push('*');
                }
                row.push(text);
            }
            rows.push(row);
        }
        let mut notes: Vec<String> = several_note(&cells, "error", all).into_iter().collect();
        notes.extend(failure_notes(&cells, naming));
        Table {
            title,
            headers,
            rows,
            text_columns,
            notes,
        }
    }
}

/// An `extra` value: whole numbers as integers, others in four significant digits.
fn fmt_extra(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fmt_ms(x)
    }
}

/// Keys of `extra` under this prefix are PTX instruction counts (`ptx.add.f64`).
const PTX_PREFIX: &str = "ptx.";

impl Group<'_> {
    /// What an `extra` quantity is, for table titles: the description the records give it
    /// (the latest record's, should a re-run have reworded it) and its name, or the name alone.
    fn extra_title(&self, key: &str) -> String {
        match self
            .records
            .iter()
            .rev()
            .find_map(|r| r.descriptions.get(key))
        {
            Some(d) => format!("{d} ({key})"),
            None => key.to_string(),
        }
    }

    /// Tables of the records' further quantities (`Record::extra`): the PTX instruction counts
    /// of each kernel in one table (rows input and size, columns precision; counts depend on the
    /// kernel, not on the launch), and every other quantity in a table of its own with a row per
    /// input, size and configuration.
    pub fn extra_tables(&self, naming: &Naming) -> Vec<Table> {
        let keys: BTreeSet<&str> = self
            .records
            .iter()
            .flat_map(|r| r.extra.keys().map(String::as_str))
            .collect();
        if keys.is_empty() {
            return Vec::new();
        }
        let precisions = sorted_precisions(self.records.iter().copied());
        let mut tables = Vec::new();
        if keys.iter().any(|k| k.starts_with(PTX_PREFIX)) {
            tables.push(self.ptx_table(&precisions));
        }
        // A quantity with one value in every record that has it (an element count, a count of
        // problems that never occurred) is one row of a small table, not a table of repeats.
        let mut constant: Vec<Vec<String>> = Vec::new();
        for key in keys.iter().filter(|k| !k.starts_with(PTX_PREFIX)) {
            let values: BTreeSet<u64> = self
                .records
                .iter()
                .filter_map(|r| r.extra.get(*key))
                .map(|v| v.to_bits())
                .collect();
            let holders = self
                .records
                .iter()
                .filter(|r| r.extra.contains_key(*key))
                .count();
            match values.iter().next() {
                Some(&bits) if values.len() == 1 && holders > 1 => {
                    constant.push(vec![self.extra_title(key), fmt_extra(f64::from_bits(bits))]);
                }
                _ => tables.push(self.extra_table(key, &precisions, naming)),
            }
        }
        if !constant.is_empty() {
            tables.push(Table {
                title: "The same in every record (that measured it)".into(),
                headers: vec!["quantity".into(), "value".into()],
                rows: constant,
                text_columns: 1,
                notes: Vec::new(),
            });
        }
        tables
    }

    fn ptx_table(&self, precisions: &[String]) -> Table {
        let mut rows: Vec<(String, u64)> = self
            .records
            .iter()
            .filter(|r| r.extra.keys().any(|k| k.starts_with(PTX_PREFIX)))
            .map(|r| (r.input.clone(), r.size))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        rows.sort_by(|a, b| natural_cmp(&a.0, &b.0).then(a.1.cmp(&b.1)));
        let one_input = rows.iter().map(|r| &r.0).collect::<BTreeSet<_>>().len() == 1;
        let mut headers: Vec<String> = Vec::new();
        if !one_input {
            headers.push("input".into());
        }
        headers.push("n".into());
        let text_columns = headers.len() + precisions.len();
        headers.extend(precisions.iter().cloned());
        let mut out_rows = Vec::new();
        for (input, size) in &rows {
            let mut row = Vec::new();
            if !one_input {
                row.push(input.clone());
            }
            row.push(fmt_size(*size));
            for p in precisions {
                // Distinct count sets of this kernel (launch shapes share one).
                let texts: BTreeSet<String> = self
                    .records
                    .iter()
                    .filter(|r| &r.input == input && r.size == *size && &r.precision == p)
                    .map(|r| {
                        let mut counts: Vec<(&str, f64)> = r
                            .extra
                            .iter()
                            .filter_map(|(k, v)| k.strip_prefix(PTX_PREFIX).map(|k| (k, *v)))
                            .filter(|(_, v)| *v > 0.0)
                            .collect();
                        counts.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
                        counts
                            .iter()
                            .map(|(k, v)| format!("{k} {}", fmt_extra(*v)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .filter(|t| !t.is_empty())
                    .collect();
                row.push(if texts.is_empty() {
                    "-".into()
                } else {
                    texts.into_iter().collect::<Vec<_>>().join(" / ")
                });
            }
            out_rows.push(row);
        }
        Table {
            title: "PTX floating-point instructions per kernel".into(),
            headers,
            rows: out_rows,
            text_columns,
            notes: Vec::new(),
        }
    }

    fn extra_table(&self, key: &str, precisions: &[String], naming: &Naming) -> Table {
        let mut rows: Vec<(String, u64, Config)> = self
            .records
            .iter()
            .filter(|r| r.extra.contains_key(key))
            .map(|r| (r.input.clone(), r.size, Config::of(r)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        rows.sort_by(|a, b| {
            natural_cmp(&a.0, &b.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        let mut headers = vec!["input".to_string(), "n".into(), "backend".into()];
        let text_columns = headers.len();
        headers.extend(precisions.iter().cloned());
        let mut out_rows = Vec::new();
        for (input, size, config) in &rows {
            let mut row = vec![input.clone(), fmt_size(*size), naming.label(config)];
            for p in precisions {
                let values: Vec<f64> = self
                    .records
                    .iter()
                    .filter(|r| {
                        &r.input == input
                            && r.size == *size
                            && &r.precision == p
                            && Config::of(r) == *config
                    })
                    .filter_map(|r| r.extra.get(key).copied())
                    .collect();
                row.push(median(&values).map_or_else(|| "-".into(), fmt_extra));
            }
            out_rows.push(row);
        }
        Table {
            title: self.extra_title(key),
            headers,
            rows: out_rows,
            text_columns,
            notes: Vec::new(),
        }
    }
}

/// The slowdown columns of seed 000, Table 12: (X − f32) / f32 for these X, where present.
const SLOWDOWN_VS_F32: [&str; 3] = ["f64", "f32x2", "f64x2"];

impl Timing<'_> {
    pub fn table(&self, naming: &Naming) -> Table {
        let title = format!("Time, median ms (n = {})", fmt_size(self.size));
        let cells: Vec<&Cell> = self.cells.values().collect();
        let all = all_several(&cells);
        let mut headers = vec!["backend".to_string()];
        headers.extend(self.precisions.iter().cloned());
        let f32_col = self.precisions.iter().position(|p| p == "f32");
        let slow: Vec<(usize, &str)> = match f32_col {
            Some(_) => SLOWDOWN_VS_F32
                .iter()
                .filter_map(|&p| self.precisions.iter().position(|q| q == p).map(|j| (j, p)))
                .collect(),
            None => Vec::new(),
        };
        headers.extend(slow.iter().map(|(_, p)| format!("({p}−f32)/f32")));
        let mut rows = Vec::new();
        for (i, c) in self.configs.iter().enumerate() {
            let mut row = vec![naming.label(c)];
            for j in 0..self.precisions.len() {
                let cell = self.cells.get(&(i, j));
                let mut text = shown_text(cell.and_then(Cell::time), fmt_ms);
                if !all && cell.is_some_and(Cell::several) {
                    text.push('*');
                }
                row.push(text);
            }
            let time = |j: usize| match self.cells.get(&(i, j)).and_then(Cell::time) {
                Some(Shown::Value(t)) if t.is_finite() => Some(t),
                _ => None,
            };
            for &(j, _) in &slow {
                let text = match (f32_col.and_then(time), time(j)) {
                    (Some(f), Some(x)) if f > 0.0 => format!("{:.2}", (x - f) / f),
                    _ => "-".into(),
                };
                row.push(text);
            }
            rows.push(row);
        }
        let mut notes: Vec<String> = several_note(&cells, "time", all).into_iter().collect();
        notes.extend(failure_notes(&cells, naming));
        Table {
            title,
            headers,
            rows,
            text_columns: 1,
            notes,
        }
    }
}

/// Versions, date range and devices of a set of records, for report headers.
pub(crate) struct Provenance {
    pub versions: Vec<String>,
    pub first: String,
    pub last: String,
    pub devices: Vec<String>,
}

impl Provenance {
    pub fn of(records: &[Record]) -> Provenance {
        let versions: BTreeSet<&str> = records.iter().map(|r| r.version.as_str()).collect();
        let devices: BTreeSet<&str> = records.iter().map(|r| r.device.as_str()).collect();
        // RFC 3339 UTC timestamps order as strings.
        let first = records.iter().map(|r| r.date.as_str()).min().unwrap_or("");
        let last = records.iter().map(|r| r.date.as_str()).max().unwrap_or("");
        Provenance {
            versions: versions.into_iter().map(String::from).collect(),
            first: first.into(),
            last: last.into(),
            devices: devices.into_iter().map(String::from).collect(),
        }
    }

    pub fn dates(&self) -> String {
        if self.first == self.last {
            self.first.clone()
        } else {
            format!("{} – {}", self.first, self.last)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::markdown::markdown;
    use crate::record::{ErrorMetrics, TimeStats};

    /// A record of the summation study; tests change what they need.
    pub fn rec(precision: &str, input: &str, backend: Backend, abs: f64, ms: f64) -> Record {
        Record {
            schema: crate::SCHEMA,
            workload: "sum".into(),
            algorithm: "serial".into(),
            input: input.into(),
            size: 1 << 20,
            seed: 1,
            precision: precision.into(),
            backend,
            device: if backend.is_gpu() {
                "Test GPU"
            } else {
                "Test CPU"
            }
            .into(),
            device_ordinal: None,
            status: Status::Ok,
            value: Some(abs),
            reference: Some(0.0),
            error: Some(ErrorMetrics {
                abs,
                rel: None,
                ulps: None,
                digits: None,
            }),
            time: TimeStats::from_samples(&[ms]),
            flags: None,
            extra: Default::default(),
            descriptions: Default::default(),
            note: None,
            build: None,
            version: "0.1.0".into(),
            git_revision: "0123456789ab".into(),
            date: "2026-11-22T06:00:00Z".into(),
            shard: None,
            unit: None,
        }
    }

    pub const CPU1: Backend = Backend::Cpu { threads: 1 };
    pub const CPU2: Backend = Backend::Cpu { threads: 2 };
    pub const G1: Backend = Backend::gpu(1, 32);
    pub const G64: Backend = Backend::gpu(64, 32);

    /// Seed 000, Table 11/12 in miniature: two ranges, CPU and two GPU shapes, an overflow, an
    /// exact zero, an out-of-resources launch and a point with three seeds.
    pub fn fixture() -> Vec<Record> {
        let mut v = Vec::new();
        for (input, scale) in [("range1", 1.0), ("range5", 1e4)] {
            for b in [CPU1, CPU2, G1, G64] {
                let speed = match b {
                    Backend::Cpu { threads } => 100.0 / f64::from(threads),
                    Backend::Gpu { grid, .. } => 50.0 / f64::from(grid[0]),
                    Backend::GpuTiles { tile } => 10.0 / f64::from(tile),
                };
                // CPU threads sum in the same order here, so their tables merge.
                let gpu = if b.is_gpu() { 0.5 } else { 1.0 };
                v.push(rec("f32", input, b, 1.38e-1 * scale * gpu, speed));
                v.push(rec("f64", input, b, 3.18e-10 * scale * gpu, speed * 1.13));
                v.push(rec("f32x2", input, b, 1.17e-5 * scale * gpu, speed * 1.63));
                v.push(rec("f64x2", input, b, 0.0, speed * 1.94));
            }
        }
        // f32 on range5 overflows on the serial CPU run.
        for r in v.iter_mut() {
            if r.precision == "f32" && r.input == "range5" && r.backend == CPU1 {
                r.value = Some(f64::INFINITY);
                r.error.as_mut().unwrap().abs = f64::INFINITY;
            }
            if r.precision == "f32" && r.input == "range5" && r.backend == CPU2 {
                r.value = Some(f64::INFINITY);
                r.error.as_mut().unwrap().abs = f64::INFINITY;
            }
        }
        // mp256 only on the CPU, three seeds.
        for (seed, e) in [(1, 3e-30), (2, 1e-30), (3, 2e-30)] {
            for b in [CPU1, CPU2] {
                let mut r = rec("mp256", "range1", b, e, 400.0);
                r.seed = seed;
                v.push(r);
            }
        }
        // f64x2 runs out of registers at 64 blocks on range5.
        for r in v.iter_mut() {
            if r.precision == "f64x2" && r.input == "range5" && r.backend == G64 {
                r.status = Status::OutOfResources;
                r.value = None;
                r.error = None;
                r.time = None;
            }
        }
        v
    }

    fn row<'t>(t: &'t Table, first: &str) -> &'t [String] {
        t.rows
            .iter()
            .find(|r| r[0] == first)
            .unwrap_or_else(|| panic!("no row {first} in {t:?}"))
    }

    fn col(t: &Table, header: &str) -> usize {
        t.headers
            .iter()
            .position(|h| h == header)
            .unwrap_or_else(|| panic!("no column {header} in {:?}", t.headers))
    }

    #[test]
    fn precisions_order_narrow_to_wide_then_mp_by_bits_then_exact() {
        let mut p = vec![
            "exact", "mp1024", "mp64", "f64x2", "zz", "f32", "mp256", "comp32n", "f64", "comp32",
            "f32x2", "comp64",
        ];
        p.sort_by(|a, b| cmp_precision(a, b));
        assert_eq!(
            p,
            [
                "f32", "comp32", "comp32n", "f32x2", "f64", "comp64", "f64x2", "mp64", "mp256",
                "mp1024", "exact", "zz"
            ]
        );
    }

    #[test]
    fn natural_order_puts_range10_after_range9() {
        let mut v = vec!["range10", "range9", "range1", "gmp-range2"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["gmp-range2", "range1", "range9", "range10"]);
    }

    #[test]
    fn numbers_format_for_tables() {
        assert_eq!(fmt_err(0.0), "0");
        assert_eq!(fmt_err(1.2345e-4), "1.23e-4");
        assert_eq!(fmt_err(1210.0), "1.21e3");
        assert_eq!(fmt_err(f64::INFINITY), "inf");
        assert_eq!(fmt_err(f64::NAN), "nan");
        assert_eq!(fmt_ms(2.6152), "2.615");
        assert_eq!(fmt_ms(1518.6588), "1519");
        assert_eq!(fmt_ms(2.5e6), "2.500e6");
        assert_eq!(fmt_size(1 << 20), "2^20");
        assert_eq!(fmt_size(8_000_000), "8e6");
        assert_eq!(fmt_size(1000), "1000");
        assert_eq!(fmt_size(12_345), "12345");
        assert_eq!(median(&[3.0, f64::NAN, 1.0]), Some(3.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn accuracy_tables_merge_equal_backends_and_split_different_ones() {
        let records = fixture();
        let gs = groups(&records);
        assert_eq!(gs.len(), 1);
        let naming = Naming::of(&records);
        let titles: Vec<String> = gs[0]
            .accuracy
            .iter()
            .map(|a| a.table(&naming).title)
            .collect();
        assert_eq!(
            titles,
            [
                "Absolute error — cpu×1, cpu×2 (n = 2^20)",
                "Absolute error — gpu 1×32 (n = 2^20)",
                "Absolute error — gpu 64×32 (n = 2^20)"
            ]
        );
        let cpu = gs[0].accuracy[0].table(&naming);
        assert_eq!(
            cpu.headers,
            ["input", "f32", "f32x2", "f64", "f64x2", "mp256"]
        );
        assert_eq!(
            row(&cpu, "range1")[1..],
            ["1.38e-1", "1.17e-5", "3.18e-10", "0", "2.00e-30*"]
        );
        // Non-finite errors print as such; a precision not run for a row is a dash.
        assert_eq!(row(&cpu, "range5")[col(&cpu, "f32")], "inf");
        assert_eq!(row(&cpu, "range5")[col(&cpu, "mp256")], "-");
        assert!(
            cpu.notes[0].contains("median of up to 3 records")
                && cpu.notes[0].contains("seeds 1, 2, 3"),
            "{:?}",
            cpu.notes
        );
        // The GPU tables have no mp256 column, and an out-of-resources launch says so.
        let g64 = gs[0].accuracy[2].table(&naming);
        assert_eq!(g64.headers, ["input", "f32", "f32x2", "f64", "f64x2"]);
        assert_eq!(row(&g64, "range5")[col(&g64, "f64x2")], "oor");
        assert_eq!(row(&g64, "range1")[col(&g64, "f32")], "6.90e-2");
        assert!(g64.notes.is_empty(), "{:?}", g64.notes);
    }

    #[test]
    fn time_table_has_configs_as_rows_and_slowdowns_vs_f32() {
        let records = fixture();
        let naming = Naming::of(&records);
        let t = groups(&records)[0].timing[0].table(&naming);
        assert_eq!(
            t.headers,
            [
                "backend",
                "f32",
                "f32x2",
                "f64",
                "f64x2",
                "mp256",
                "(f64−f32)/f32",
                "(f32x2−f32)/f32",
                "(f64x2−f32)/f32"
            ]
        );
        let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ["cpu×1", "cpu×2", "gpu 1×32", "gpu 64×32"]);
        // Two input classes per cell: the median, marked and explained.
        // Cells are medians over the two input classes, except where one of them did not run.
        assert_eq!(row(&t, "cpu×1")[1], "100.0*");
        assert_eq!(row(&t, "cpu×1")[6..], ["0.13", "0.63", "0.94"]);
        assert!(
            t.notes[0].contains("inputs range1, range5"),
            "{:?}",
            t.notes
        );
        // One input ran out of resources, the other ran: the cell shows the one that ran.
        assert_eq!(row(&t, "gpu 64×32")[col(&t, "f64x2")], "1.516");
        assert_eq!(row(&t, "gpu 64×32")[col(&t, "mp256")], "-");
    }

    #[test]
    fn cells_that_never_ran_show_their_status_and_failures_are_explained() {
        let mut r = rec("f64", "range1", G1, 0.0, 1.0);
        r.status = Status::Failed;
        r.note = Some("launch timed out".into());
        r.error = None;
        r.time = None;
        let mut o = rec("f32", "range1", G1, 0.0, 1.0);
        o.status = Status::OutOfResources;
        let mut nm = rec("f32x2", "range1", G1, 0.0, 1.0);
        nm.error = None;
        let records = vec![r, o, nm];
        let naming = Naming::of(&records);
        let g = &groups(&records)[0];
        let a = g.accuracy[0].table(&naming);
        assert_eq!(a.rows[0][1..], ["oor", "n/a", "failed"]);
        assert_eq!(
            a.notes,
            ["failed: f64 range1 n=2^20 gpu 1×32: launch timed out"]
        );
        let t = g.timing[0].table(&naming);
        // f32 → oor; no slowdown can be computed from it.
        assert_eq!(t.rows[0][1..4], ["oor", "1.000", "failed"]);
        assert_eq!(
            t.headers.last().map(String::as_str),
            Some("(f32x2−f32)/f32")
        );
        assert_eq!(t.rows[0].last().map(String::as_str), Some("-"));
    }

    #[test]
    fn when_every_cell_is_a_median_no_cell_is_marked() {
        let mut records = Vec::new();
        for seed in [1, 2] {
            for p in ["f32", "f64"] {
                let mut r = rec(p, "range1", CPU1, 1e-3 * seed as f64, 2.0 * seed as f64);
                r.seed = seed;
                records.push(r);
            }
        }
        let naming = Naming::of(&records);
        let g = &groups(&records)[0];
        let a = g.accuracy[0].table(&naming);
        assert_eq!(a.rows[0][1..], ["1.50e-3", "1.50e-3"]);
        assert_eq!(
            a.notes,
            ["Each error is the median of up to 2 records per cell (seeds 1, 2)."]
        );
        assert_eq!(g.timing[0].table(&naming).rows[0][1..3], ["3.000", "3.000"]);
    }

    #[test]
    fn several_sizes_get_a_size_column_and_one_time_table_each() {
        let mut records = Vec::new();
        for size in [1024u64, 8_000_000] {
            let mut r = rec("f64", "range1", CPU1, 1e-10, 1.0);
            r.size = size;
            records.push(r);
        }
        let naming = Naming::of(&records);
        let g = &groups(&records)[0];
        let a = g.accuracy[0].table(&naming);
        assert_eq!(a.headers, ["input", "n", "f64"]);
        assert_eq!(
            a.rows,
            [
                ["range1", "2^10", "1.00e-10"],
                ["range1", "8e6", "1.00e-10"]
            ]
        );
        assert_eq!(g.timing.len(), 2);
    }

    #[test]
    fn devices_appear_in_labels_only_when_a_backend_ran_on_several() {
        let mut a = rec("f64", "range1", G1, 0.0, 1.0);
        let mut b = a.clone();
        a.device = "H100".into();
        b.device = "H200".into();
        let records = vec![a, b, rec("f64", "range1", CPU1, 0.0, 1.0)];
        let naming = Naming::of(&records);
        let t = groups(&records)[0].timing[0].table(&naming);
        let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ["cpu×1", "gpu 1×32 (H100)", "gpu 1×32 (H200)"]);
    }

    #[test]
    fn extra_quantities_get_their_own_tables() {
        let tiles = |tile| Backend::GpuTiles { tile };
        let mut v = Vec::new();
        for (p, adds) in [("f64", 1000.0), ("f64x2", 8000.0)] {
            for (tile, pct) in [(8, 4.98), (16, 5.5)] {
                let mut r = rec(p, "range1", tiles(tile), 1e-9, 2.0);
                r.workload = "lu".into();
                r.algorithm = "blocked".into();
                r.extra.insert("ptx.add.f64".into(), adds);
                r.extra.insert("ptx.mul.f64".into(), 16.0);
                r.extra.insert("mismatch_pct".into(), pct);
                // Schema 2: the workload describes its quantities, thresholds included.
                r.descriptions.insert(
                    "mismatch_pct".into(),
                    "% of entries with |L·U − A| > 1e-4 (seed 000 Table 17)".into(),
                );
                v.push(r);
            }
        }
        let md = markdown(&v);
        assert!(
            md.contains("PTX floating-point instructions per kernel"),
            "{md}"
        );
        // One count set per kernel, largest first, shared by both tile sizes.
        assert!(md.contains("add.f64 8000, mul.f64 16"), "{md}");
        let ptx_row = md.lines().find(|l| l.contains("add.f64 1000")).unwrap();
        assert!(
            !ptx_row.contains(" / "),
            "launches of one kernel share its counts: {md}"
        );
        assert!(md.contains("% of entries with |L·U − A| > 1e-4"), "{md}");
        assert!(md.contains("gpu tiles 16×16"), "{md}");
        assert!(md.contains("| 4.980 ") && md.contains("| 5.500 "), "{md}");
        // Records without extras add no such tables.
        assert!(!markdown(&fixture()).contains("PTX floating-point"));
    }
}
