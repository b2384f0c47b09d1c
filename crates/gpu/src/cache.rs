//! The compile cache: NVRTC results kept in memory and on disk, keyed by everything that can change
//! the output (source, its name, every file it includes, name expressions, flag set, target,
//! NVRTC version, extra options).
//!
//! In memory at most [`DEFAULT_MEMORY_CAPACITY`] results are kept (see
//! [`CompileCache::with_memory_capacity`]); past that the least recently used is dropped, so a
//! tuner compiling thousands of variants does not grow without limit. The disk keeps everything.
//!
//! On disk each entry is one file, written to a temporary name in the same directory and renamed,
//! so concurrent writers (several processes compiling the same kernel) never leave a torn file and
//! a reader sees either nothing or a whole entry. The file stores the full key and the source text,
//! and a read checks both, so the 64-bit file-name hash only has to spread names, never to be
//! collision-free: a collision costs a recompile, not a wrong binary. Damaged files read as misses
//! and are overwritten by the next compile.

use crate::flags::FlagSet;
use crate::frontend::FrontEnd;
use crate::includes::Include;
use crate::lock;
use crate::nvrtc::{Compiled, Source, Target};
use crate::version::CudaVersion;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Bump when the file format or the meaning of a key changes: old entries then miss.
/// Version 2: keys cover included files and name expressions; entries keep the source hash and
/// lowered names.
const FORMAT: &str = "mantissa-nvrtc-cache 2";

/// How many results the memory cache keeps by default.
pub const DEFAULT_MEMORY_CAPACITY: usize = 256;

/// FNV-1a, 64-bit, defined once in `mantissa-fatbin` (module keys use it too): file names stay
/// stable across Rust releases and machines (std's `DefaultHasher` promises neither).
pub use mantissa_fatbin::fnv1a64;

pub use mantissa_files::cache_root;

/// Everything that determines NVRTC's output, as one canonical string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    canonical: String,
}

impl CacheKey {
    /// `includes` are the source's resolved includes ([`Source::includes`]); `options` are all
    /// options NVRTC receives (flag set, target, `-lineinfo`, extras); flags and target are also
    /// recorded by name so the key reads well in a cache file.
    pub fn new(
        source: &Source,
        includes: &[Include],
        flags: FlagSet,
        target: Target,
        nvrtc: CudaVersion,
        options: &[String],
    ) -> Self {
        Self::build(source, includes, flags, target, nvrtc, options, None)
    }

    /// A key for another front end's result (nvcc): as [`CacheKey::new`], with a line naming the
    /// front end, its full version and its program (`nvcc 13.0.88 /usr/local/cuda/bin/nvcc`), so
    /// that its entries never answer for NVRTC's or for another nvcc's. NVRTC's keys have no such
    /// line, so they stay what they were.
    pub fn for_front_end(
        front_end: &str,
        source: &Source,
        includes: &[Include],
        flags: FlagSet,
        target: Target,
        version: CudaVersion,
        options: &[String],
    ) -> Self {
        Self::build(
            source,
            includes,
            flags,
            target,
            version,
            options,
            Some(front_end),
        )
    }

    fn build(
        source: &Source,
        includes: &[Include],
        flags: FlagSet,
        target: Target,
        nvrtc: CudaVersion,
        options: &[String],
        front_end: Option<&str>,
    ) -> Self {
        let lines: Vec<String> = includes.iter().map(Include::key_line).collect();
        let mut canonical = format!(
            "{FORMAT}\nsource-fnv1a64={:016x}\nsource-len={}\nsource-name={}\nincludes={}\nname-expressions={}\nflags={}\ntarget={}\nnvrtc={}\noptions={}",
            fnv1a64(source.text.as_bytes()),
            source.text.len(),
            // JSON strings and arrays: unambiguous whatever the name or options contain
            // (["-DA=1 -DB=2"] and ["-DA=1", "-DB=2"] are different keys). Cannot fail.
            serde_json::to_string(&source.name).unwrap_or_default(),
            serde_json::to_string(&lines).unwrap_or_default(),
            serde_json::to_string(&source.name_expressions).unwrap_or_default(),
            flags,
            target,
            nvrtc,
            serde_json::to_string(options).unwrap_or_default(),
        );
        if let Some(front_end) = front_end {
            canonical.push_str("\nfront-end=");
            canonical.push_str(&serde_json::to_string(front_end).unwrap_or_default());
        }
        CacheKey { canonical }
    }

    /// The canonical text of the key.
    pub fn as_str(&self) -> &str {
        &self.canonical
    }

    /// The entry's file name inside the cache directory.
    pub fn file_name(&self) -> String {
        format!("{:016x}.nvrtc", fnv1a64(self.canonical.as_bytes()))
    }
}

/// Where a compile came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheHit {
    /// This process compiled or read it before.
    Memory,
    /// Read from the cache directory.
    Disk,
}

/// Counters for tests and `--verbose` output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from memory.
    pub memory_hits: u64,
    /// Lookups answered from disk.
    pub disk_hits: u64,
    /// Lookups answered by neither (a compile follows).
    pub misses: u64,
    /// Results dropped from memory to stay within its capacity.
    pub evictions: u64,
    /// Entries written to disk.
    pub disk_writes: u64,
    /// Entries that could not be written to disk.
    pub disk_write_failures: u64,
    /// The last failed write, e.g. a read-only cache directory. Writing is best effort: a cache
    /// that cannot be written slows the next run, it never fails this one.
    pub last_write_error: Option<String>,
}

/// The memory + disk cache of NVRTC results.
#[derive(Debug)]
pub struct CompileCache {
    dir: Option<PathBuf>,
    memory: Mutex<Memory>,
    stats: Mutex<CacheStats>,
}

/// The in-memory results, bounded, least recently used dropped first.
#[derive(Debug)]
struct Memory {
    entries: HashMap<CacheKey, MemoryEntry>,
    capacity: usize,
    /// Counts uses; an entry's `last_used` is the count at its last use.
    clock: u64,
}

#[derive(Debug)]
struct MemoryEntry {
    source_text: String,
    compiled: Arc<Compiled>,
    last_used: u64,
}

impl Memory {
    fn get(&mut self, key: &CacheKey, source_text: &str) -> Option<Arc<Compiled>> {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        if entry.source_text != source_text {
            return None;
        }
        entry.last_used = self.clock;
        Some(entry.compiled.clone())
    }

    /// Inserts, then drops least recently used entries past the capacity; returns how many.
    fn insert(&mut self, key: &CacheKey, source_text: &str, compiled: Arc<Compiled>) -> u64 {
        self.clock += 1;
        let entry = MemoryEntry {
            source_text: source_text.to_string(),
            compiled,
            last_used: self.clock,
        };
        self.entries.insert(key.clone(), entry);
        self.shrink()
    }

    fn shrink(&mut self) -> u64 {
        let mut evicted = 0;
        while self.entries.len() > self.capacity {
            // A linear scan: the capacity is hundreds, and a scan costs far less than a compile.
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            self.entries.remove(&oldest);
            evicted += 1;
        }
        evicted
    }
}

/// What a cache file records before the blobs.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    key: String,
    source_name: String,
    flags: FlagSet,
    target: Target,
    nvrtc: CudaVersion,
    /// Entries written before nvcc results were cached are NVRTC's.
    #[serde(default)]
    front_end: FrontEnd,
    options: Vec<String>,
    source_hash: String,
    lowered_names: BTreeMap<String, String>,
    source_len: usize,
    ptx_len: usize,
    cubin_len: Option<usize>,
    log_len: usize,
}

impl CompileCache {
    /// A cache in memory (at most [`DEFAULT_MEMORY_CAPACITY`] results) and, when `dir` is
    /// given, on disk in that directory.
    pub fn new(dir: Option<PathBuf>) -> Self {
        CompileCache {
            dir,
            memory: Mutex::new(Memory {
                entries: HashMap::new(),
                capacity: DEFAULT_MEMORY_CAPACITY,
                clock: 0,
            }),
            stats: Mutex::new(CacheStats::default()),
        }
    }

    /// A cache that forgets everything when the process ends.
    pub fn in_memory() -> Self {
        CompileCache::new(None)
    }

    /// The usual cache: `<cache_root>/nvrtc` on disk (see [`cache_root`]).
    pub fn default_location() -> Self {
        CompileCache::new(cache_root().map(|r| r.join("nvrtc")))
    }

    /// Keeps at most `capacity` results in memory (0: none; the disk still serves them).
    pub fn with_memory_capacity(self, capacity: usize) -> Self {
        self.set_memory_capacity(capacity);
        self
    }

    /// Changes the memory capacity, dropping least recently used results past it (counted as
    /// evictions).
    pub fn set_memory_capacity(&self, capacity: usize) {
        let evicted = {
            let mut memory = lock(&self.memory);
            memory.capacity = capacity;
            memory.shrink()
        };
        lock(&self.stats).evictions += evicted;
    }

    /// How many results memory may hold.
    pub fn memory_capacity(&self) -> usize {
        lock(&self.memory).capacity
    }

    /// How many results memory holds now.
    pub fn memory_len(&self) -> usize {
        lock(&self.memory).entries.len()
    }

    /// The cache directory, if the cache has one.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        lock(&self.stats).clone()
    }

    /// The cached result for `key`, if any. `source_text` guards against hash collisions.
    pub fn get(&self, key: &CacheKey, source_text: &str) -> Option<(Arc<Compiled>, CacheHit)> {
        // Bound first: the memory lock is released before the stats lock is taken.
        let from_memory = lock(&self.memory).get(key, source_text);
        if let Some(compiled) = from_memory {
            lock(&self.stats).memory_hits += 1;
            return Some((compiled, CacheHit::Memory));
        }
        let from_disk = self
            .dir
            .as_ref()
            .and_then(|dir| read_entry(&dir.join(key.file_name()), key, source_text));
        let mut stats = lock(&self.stats);
        match from_disk {
            Some(compiled) => {
                stats.disk_hits += 1;
                drop(stats);
                let compiled = Arc::new(compiled);
                let evicted = lock(&self.memory).insert(key, source_text, compiled.clone());
                lock(&self.stats).evictions += evicted;
                Some((compiled, CacheHit::Disk))
            }
            None => {
                stats.misses += 1;
                None
            }
        }
    }

    /// Stores a result in memory and, best effort, on disk.
    pub fn put(&self, key: &CacheKey, source_text: &str, compiled: Arc<Compiled>) {
        let disk = self.dir.as_ref().map(|dir| {
            let bytes = encode_entry(key, source_text, &compiled);
            atomic_write(&dir.join(key.file_name()), &bytes)
        });
        let evicted = lock(&self.memory).insert(key, source_text, compiled);
        let mut stats = lock(&self.stats);
        stats.evictions += evicted;
        match disk {
            Some(Ok(())) => stats.disk_writes += 1,
            Some(Err(e)) => {
                stats.disk_write_failures += 1;
                stats.last_write_error = Some(format!(
                    "cannot write the compile cache in {}: {e}",
                    self.dir.as_deref().unwrap_or(Path::new("?")).display()
                ));
            }
            None => {}
        }
    }
}

fn encode_entry(key: &CacheKey, source_text: &str, c: &Compiled) -> Vec<u8> {
    let meta = Meta {
        key: key.as_str().to_string(),
        source_name: c.source_name.clone(),
        flags: c.flags,
        target: c.target,
        nvrtc: c.nvrtc,
        front_end: c.front_end,
        options: c.options.clone(),
        source_hash: c.source_hash.clone(),
        lowered_names: c.lowered_names.clone(),
        source_len: source_text.len(),
        ptx_len: c.ptx.len(),
        cubin_len: c.cubin.as_ref().map(Vec::len),
        log_len: c.log.len(),
    };
    // Serialising a struct of strings and numbers cannot fail.
    let meta = serde_json::to_string(&meta).unwrap_or_default();
    let mut out = Vec::with_capacity(
        FORMAT.len()
            + meta.len()
            + source_text.len()
            + c.ptx.len()
            + c.log.len()
            + 2
            + c.cubin.as_ref().map_or(0, Vec::len),
    );
    out.extend_from_slice(FORMAT.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(meta.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(source_text.as_bytes());
    out.extend_from_slice(c.ptx.as_bytes());
    if let Some(cubin) = &c.cubin {
        out.extend_from_slice(cubin);
    }
    out.extend_from_slice(c.log.as_bytes());
    out
}

/// Reads and checks one entry; anything unexpected is a miss.
fn read_entry(path: &Path, key: &CacheKey, source_text: &str) -> Option<Compiled> {
    let bytes = fs::read(path).ok()?;
    decode_entry(&bytes, key, source_text)
}

fn decode_entry(bytes: &[u8], key: &CacheKey, source_text: &str) -> Option<Compiled> {
    let rest = bytes.strip_prefix(FORMAT.as_bytes())?.strip_prefix(b"\n")?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let meta: Meta = serde_json::from_slice(&rest[..nl]).ok()?;
    let mut blobs = &rest[nl + 1..];
    if meta.key != key.as_str() {
        return None;
    }
    let expected = meta.source_len + meta.ptx_len + meta.cubin_len.unwrap_or(0) + meta.log_len;
    if blobs.len() != expected {
        return None;
    }
    let mut take = |n: usize| {
        let (head, tail) = blobs.split_at(n);
        blobs = tail;
        head
    };
    if take(meta.source_len) != source_text.as_bytes() {
        return None;
    }
    let ptx = String::from_utf8(take(meta.ptx_len).to_vec()).ok()?;
    let cubin = meta.cubin_len.map(|n| take(n).to_vec());
    let log = String::from_utf8(take(meta.log_len).to_vec()).ok()?;
    Some(Compiled {
        source_name: meta.source_name,
        flags: meta.flags,
        target: meta.target,
        options: meta.options,
        front_end: meta.front_end,
        nvrtc: meta.nvrtc,
        source_hash: meta.source_hash,
        lowered_names: meta.lowered_names,
        ptx,
        cubin,
        log,
    })
}

/// Writes `bytes` to `path` (making its directory) through the one writer,
/// [`mantissa_files::write_file`]: a temporary file in the same directory and a rename, so that
/// readers and concurrent writers never see a partial file, and never over what is not a regular
/// file.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    mantissa_files::ensure_dir(dir)?;
    Ok(mantissa_files::write_file(path, bytes)?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::version::Arch;

    /// A fresh directory under the system temp dir (no tempfile dependency for one helper).
    pub(crate) fn scratch_dir(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mantissa-gpu-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    const SRC: &str = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }";

    fn key_of(
        name: &str,
        src: &str,
        flags: FlagSet,
        target: Target,
        nvrtc: CudaVersion,
        extra: &[&str],
    ) -> CacheKey {
        let options: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        CacheKey::new(&Source::new(name, src), &[], flags, target, nvrtc, &options)
    }

    fn base() -> CacheKey {
        key_of(
            "k.cu",
            SRC,
            FlagSet::DEFAULT,
            Target::Cubin(Arch::new(9, 0)),
            CudaVersion::new(13, 0),
            &["-lineinfo"],
        )
    }

    fn compiled(tag: &str, cubin: Option<Vec<u8>>) -> Compiled {
        Compiled {
            source_name: "k.cu".into(),
            flags: FlagSet::DEFAULT,
            target: Target::Cubin(Arch::new(9, 0)),
            options: vec!["--gpu-architecture=sm_90".into(), "-lineinfo".into()],
            front_end: FrontEnd::Nvrtc,
            nvrtc: CudaVersion::new(13, 0),
            source_hash: "0123456789abcdef".into(),
            lowered_names: BTreeMap::from([("k<float>".into(), "_Z1kIfEvv".into())]),
            ptx: format!(".version 9.0\n// {tag}\n"),
            cubin,
            log: String::new(),
        }
    }

    #[test]
    fn key_is_stable() {
        // Pinned: if this changes, every user's cache silently misses once. Bump FORMAT instead.
        // The hash values were computed independently (a few lines of Python).
        assert_eq!(
            base().as_str(),
            "mantissa-nvrtc-cache 2\nsource-fnv1a64=ab490d377e718b9c\nsource-len=55\nsource-name=\"k.cu\"\nincludes=[]\nname-expressions=[]\nflags=default\ntarget=sm_90\nnvrtc=13.0\noptions=[\"-lineinfo\"]"
        );
        assert_eq!(base().file_name(), "ef165ade9fa140e9.nvrtc");
    }

    #[test]
    fn key_differs_by_each_component() {
        let b = base();
        let a90 = Target::Cubin(Arch::new(9, 0));
        let v13 = CudaVersion::new(13, 0);
        let variants = [
            key_of(
                "k.cu",
                &SRC.replace("1.0f", "2.0f"),
                FlagSet::DEFAULT,
                a90,
                v13,
                &["-lineinfo"],
            ),
            key_of("other.cu", SRC, FlagSet::DEFAULT, a90, v13, &["-lineinfo"]),
            key_of("k.cu", SRC, FlagSet::STRICT, a90, v13, &["-lineinfo"]),
            key_of(
                "k.cu",
                SRC,
                FlagSet::DEFAULT,
                Target::Cubin(Arch::new(8, 0)),
                v13,
                &["-lineinfo"],
            ),
            key_of(
                "k.cu",
                SRC,
                FlagSet::DEFAULT,
                Target::Ptx(Arch::new(9, 0)),
                v13,
                &["-lineinfo"],
            ),
            key_of(
                "k.cu",
                SRC,
                FlagSet::DEFAULT,
                a90,
                CudaVersion::new(13, 1),
                &["-lineinfo"],
            ),
            key_of(
                "k.cu",
                SRC,
                FlagSet::DEFAULT,
                a90,
                v13,
                &["-lineinfo", "-DN=4"],
            ),
        ];
        let src = Source::new("k.cu", SRC);
        let opts = ["-lineinfo".to_string()];
        let header = |text: &str| {
            crate::includes::resolve(
                "k.cu",
                "#include <h.h>\n",
                &[("h.h".into(), text.into())],
                &[],
            )
        };
        let with_header =
            |text: &str| CacheKey::new(&src, &header(text), FlagSet::DEFAULT, a90, v13, &opts);
        let with_expression = CacheKey::new(
            &src.clone().with_name_expression("k<float>"),
            &[],
            FlagSet::DEFAULT,
            a90,
            v13,
            &opts,
        );
        assert_ne!(with_header("#define A 1"), with_header("#define A 2"));
        let variants: Vec<CacheKey> = variants
            .into_iter()
            .chain([with_header("#define A 1"), with_expression])
            .collect();
        for v in &variants {
            assert_ne!(v, &b);
            assert_ne!(v.file_name(), b.file_name(), "{}", v.as_str());
        }
        // Options are not split on spaces into the same key.
        assert_ne!(
            key_of("k.cu", SRC, FlagSet::DEFAULT, a90, v13, &["-DA=1 -DB=2"]),
            key_of("k.cu", SRC, FlagSet::DEFAULT, a90, v13, &["-DA=1", "-DB=2"])
        );
    }

    #[test]
    fn disk_round_trip_and_second_cache_reads_it() {
        let dir = scratch_dir("roundtrip");
        let key = base();
        let c = Arc::new(compiled(
            "one",
            Some(vec![0x7f, b'E', b'L', b'F', 0, 1, 2, 255]),
        ));
        let cache = CompileCache::new(Some(dir.clone()));
        assert!(cache.get(&key, SRC).is_none());
        cache.put(&key, SRC, c.clone());
        assert_eq!(cache.get(&key, SRC).map(|(_, h)| h), Some(CacheHit::Memory));

        let fresh = CompileCache::new(Some(dir.clone()));
        let (got, hit) = fresh.get(&key, SRC).expect("disk hit");
        assert_eq!(hit, CacheHit::Disk);
        assert_eq!(*got, *c);
        assert_eq!(fresh.get(&key, SRC).map(|(_, h)| h), Some(CacheHit::Memory));
        let s = fresh.stats();
        assert_eq!((s.disk_hits, s.memory_hits, s.misses), (1, 1, 0));

        // PTX-only entries round-trip too.
        let ptx_key = key_of(
            "k.cu",
            SRC,
            FlagSet::DEFAULT,
            Target::Ptx(Arch::new(9, 0)),
            CudaVersion::new(13, 0),
            &[],
        );
        cache.put(&ptx_key, SRC, Arc::new(compiled("ptx", None)));
        let got = CompileCache::new(Some(dir.clone()))
            .get(&ptx_key, SRC)
            .unwrap()
            .0;
        assert_eq!(got.cubin, None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_or_foreign_entries_are_misses() {
        let dir = scratch_dir("damaged");
        let key = base();
        let cache = CompileCache::new(Some(dir.clone()));
        cache.put(&key, SRC, Arc::new(compiled("x", Some(vec![1, 2, 3]))));
        let path = dir.join(key.file_name());
        let good = fs::read(&path).unwrap();

        // Truncated.
        fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(CompileCache::new(Some(dir.clone()))
            .get(&key, SRC)
            .is_none());
        // Garbage.
        fs::write(&path, b"not a cache entry").unwrap();
        assert!(CompileCache::new(Some(dir.clone()))
            .get(&key, SRC)
            .is_none());
        // Same file name, different source text (as after a hash collision).
        fs::write(&path, &good).unwrap();
        assert!(CompileCache::new(Some(dir.clone()))
            .get(&key, "different")
            .is_none());
        assert!(CompileCache::new(Some(dir.clone()))
            .get(&key, SRC)
            .is_some());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_writers_never_leave_a_torn_entry() {
        let dir = scratch_dir("concurrent");
        let key = base();
        // Big enough that a non-atomic write would be observable mid-way.
        let entries: Vec<Arc<Compiled>> = (0..4)
            .map(|i| {
                Arc::new(compiled(
                    &format!("writer {i} {}", "x".repeat(200_000)),
                    Some(vec![i as u8; 300_000]),
                ))
            })
            .collect();
        std::thread::scope(|s| {
            for e in &entries {
                let (dir, key) = (dir.clone(), key.clone());
                s.spawn(move || {
                    for _ in 0..20 {
                        // A fresh cache per put: the disk is the only thing shared, as between processes.
                        CompileCache::new(Some(dir.clone())).put(&key, SRC, e.clone());
                    }
                });
            }
            for _ in 0..2 {
                let (dir, key, entries) = (dir.clone(), key.clone(), &entries);
                s.spawn(move || {
                    for _ in 0..100 {
                        if let Some((got, _)) = CompileCache::new(Some(dir.clone())).get(&key, SRC)
                        {
                            assert!(
                                entries.iter().any(|e| **e == *got),
                                "read a torn or mixed entry"
                            );
                        }
                    }
                });
            }
        });
        let (got, _) = CompileCache::new(Some(dir.clone()))
            .get(&key, SRC)
            .expect("an entry");
        assert!(entries.iter().any(|e| **e == *got));
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unwritable_cache_is_recorded_not_fatal() {
        let dir = scratch_dir("unwritable");
        // A file where the cache directory should be: create_dir_all fails, whoever runs the test.
        let blocked = dir.join("not-a-dir");
        fs::write(&blocked, b"").unwrap();
        let cache = CompileCache::new(Some(blocked.join("nvrtc")));
        let key = base();
        cache.put(&key, SRC, Arc::new(compiled("y", None)));
        let stats = cache.stats();
        assert_eq!(stats.disk_write_failures, 1);
        assert!(stats
            .last_write_error
            .unwrap()
            .starts_with("cannot write the compile cache in "));
        assert!(cache.get(&key, SRC).is_some(), "memory still serves it");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_keeps_the_most_recently_used_within_its_capacity() {
        let cache = CompileCache::in_memory().with_memory_capacity(2);
        assert_eq!(
            CompileCache::in_memory().memory_capacity(),
            DEFAULT_MEMORY_CAPACITY
        );
        let key = |i: u32| {
            key_of(
                "k.cu",
                SRC,
                FlagSet::DEFAULT,
                Target::Cubin(Arch::new(9, 0)),
                CudaVersion::new(13, i),
                &[],
            )
        };
        let hit = |i: u32| cache.get(&key(i), SRC).map(|(c, _)| c.ptx.clone());
        cache.put(&key(0), SRC, Arc::new(compiled("0", None)));
        cache.put(&key(1), SRC, Arc::new(compiled("1", None)));
        assert!(
            hit(0).is_some_and(|p| p.contains("// 0")),
            "0 is now the most recent"
        );
        cache.put(&key(2), SRC, Arc::new(compiled("2", None)));
        assert_eq!(cache.memory_len(), 2);
        assert_eq!(cache.stats().evictions, 1);
        assert!(hit(1).is_none(), "1 was the least recently used");
        assert!(hit(0).is_some() && hit(2).is_some());

        // Shrinking evicts at once; capacity 0 keeps nothing in memory.
        cache.set_memory_capacity(1);
        assert_eq!((cache.memory_len(), cache.stats().evictions), (1, 2));
        assert!(hit(2).is_some(), "the last one used stays");
        cache.set_memory_capacity(0);
        cache.put(&key(3), SRC, Arc::new(compiled("3", None)));
        assert_eq!(cache.memory_len(), 0);
        assert_eq!(cache.stats().evictions, 4);
    }

    #[test]
    fn evicted_entries_are_still_read_from_disk() {
        let dir = scratch_dir("evicted");
        let cache = CompileCache::new(Some(dir.clone())).with_memory_capacity(1);
        let a = base();
        let b = key_of(
            "b.cu",
            SRC,
            FlagSet::DEFAULT,
            Target::Cubin(Arch::new(9, 0)),
            CudaVersion::new(13, 0),
            &[],
        );
        cache.put(&a, SRC, Arc::new(compiled("a", None)));
        cache.put(&b, SRC, Arc::new(compiled("b", None)));
        assert_eq!(cache.get(&a, SRC).map(|(_, h)| h), Some(CacheHit::Disk));
        assert_eq!(cache.get(&a, SRC).map(|(_, h)| h), Some(CacheHit::Memory));
        assert_eq!(cache.stats().evictions, 2, "b went when a came back");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cache_root_follows_the_environment() {
        // Only checks the resolution rule on the current environment, without mutating it
        // (tests run in parallel threads and env mutation would race).
        let root = cache_root();
        if let Some(v) = std::env::var_os("MANTISSA_CACHE").filter(|v| !v.is_empty()) {
            assert_eq!(root, Some(PathBuf::from(v)));
        } else if let Some(root) = root {
            assert!(root.ends_with("mantissa"), "{}", root.display());
        }
    }
}
