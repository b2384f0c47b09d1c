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
pub(crate) mod tests;
