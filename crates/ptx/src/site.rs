//! One address for an instruction, shared by everything that names instructions to a user or
//! keeps them in a file: demotion configurations, shadow-value reports, CPU/GPU difference
//! causes. A [`Site`] is the function, the source file and line of the instruction's `.loc`,
//! the chain of call sites it was inlined through, and its ordinal among *all* instructions of
//! that function with the same file, line and chain, in text order.
//!
//! Why this survives a rebuild of the same source: it names nothing the compiler numbers
//! (instruction ids, registers, `.file` indices, labels), and the ordinal counts only
//! instructions of the same line and chain, so a change elsewhere in the source does not move
//! it. Why it counts every instruction rather than the ones a pass can touch: eligibility
//! differs per pass (and per build: a marked build's units), so an ordinal among eligible
//! instructions would name different instructions for different passes. Eligibility is a filter
//! each pass applies to sites.
//!
//! **The inlined chain.** A PTX `.loc` names one level of inlining (`inlined_at F L C`); the
//! levels above it are where that call site itself was, which is the most recent `.loc` at
//! `F L C` before it (NVVM emits the call site's own `.loc` just before entering the inlined
//! code). So the chain of a `.loc` is the chain of that call site's `.loc` plus the call site,
//! outermost first. Instructions before any `.loc` have an empty file and line 0.

use crate::model::{Function, InstId, Module, Statement};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// The address of one instruction (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Site {
    /// The kernel (`.entry`) or device function (`.func`) whose body holds it, as the PTX
    /// names it (mangled for C++).
    pub function: String,
    /// The source file of its `.loc`, as the `.file` directive spells it ("" without a `.loc`).
    pub file: String,
    /// The source line of its `.loc` (0 without one).
    pub line: u32,
    /// Its position among the function's instructions with the same file, line and chain.
    pub ordinal: u32,
    /// The call sites (file, line) it was inlined through, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<(String, u32)>,
}

fn short(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl fmt::Display for Site {
    /// `kernel file.cu:42#3`, then `< file.cu:17` per call site, innermost first; files by
    /// their last path component.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}:{}#{}",
            self.function,
            short(&self.file),
            self.line,
            self.ordinal
        )?;
        for (file, line) in self.inlined.iter().rev() {
            write!(f, " < {}:{line}", short(file))?;
        }
        Ok(())
    }
}

/// Every instruction of a module with its site, both ways.
#[derive(Debug, Clone, Default)]
pub struct SiteIndex {
    sites: Vec<(InstId, Site)>,
    by_inst: HashMap<InstId, usize>,
    by_site: HashMap<Site, usize>,
}

impl SiteIndex {
    /// The site of instruction `id`.
    pub fn site(&self, id: InstId) -> Option<&Site> {
        self.by_inst.get(&id).map(|&k| &self.sites[k].1)
    }

    /// The instruction at `site`. A site whose file is not in the module is also looked up by
    /// the file's last path component when exactly one file of the function's sites has it (the
    /// same source built from another directory).
    pub fn inst(&self, site: &Site) -> Option<InstId> {
        if let Some(&k) = self.by_site.get(site) {
            return Some(self.sites[k].0);
        }
        let want = short(&site.file);
        let mut files: Vec<&str> = self
            .sites
            .iter()
            .filter(|(_, s)| s.function == site.function && short(&s.file) == want)
            .map(|(_, s)| s.file.as_str())
            .collect();
        files.sort_unstable();
        files.dedup();
        let [file] = files[..] else { return None };
        if file == site.file {
            return None;
        }
        let mut again = site.clone();
        again.file = file.to_string();
        again.inlined = site
            .inlined
            .iter()
            .map(|(f, l)| {
                let f = if short(f) == want { file } else { f.as_str() };
                (f.to_string(), *l)
            })
            .collect();
        self.by_site.get(&again).map(|&k| self.sites[k].0)
    }

    /// Every (instruction, site), in module and text order.
    pub fn iter(&self) -> impl Iterator<Item = &(InstId, Site)> {
        self.sites.iter()
    }

    /// How many instructions.
    pub fn len(&self) -> usize {
        self.sites.len()
    }

    /// Whether the module has no instructions.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }
}

/// The sites of every instruction of `m`.
pub fn sites(m: &Module) -> SiteIndex {
    let files: HashMap<u32, &str> = m.files().into_iter().collect();
    let mut index = SiteIndex::default();
    for f in m.functions().filter(|f| f.body.is_some()) {
        for (id, site) in function_sites(f, &files) {
            let k = index.sites.len();
            index.by_inst.insert(id, k);
            index.by_site.insert(site.clone(), k);
            index.sites.push((id, site));
        }
    }
    index
}

/// The sites of the instructions of `f`, in text order; `files` maps `.file` indices to paths.
pub fn function_sites(f: &Function, files: &HashMap<u32, &str>) -> Vec<(InstId, Site)> {
    let path = |k: u32| {
        files
            .get(&k)
            .map_or_else(|| k.to_string(), |p| p.to_string())
    };
    // The chain of the most recent `.loc` at each (file, line, column), and at each (file, line)
    // for call sites whose column differs.
    let mut at_col: HashMap<(u32, u32, u32), Vec<(u32, u32)>> = HashMap::new();
    let mut at_line: HashMap<(u32, u32), Vec<(u32, u32)>> = HashMap::new();
    // (file index, line, chain of (file index, line)): what an ordinal counts within.
    type Key = (u32, u32, Vec<(u32, u32)>);
    let mut current: Option<Key> = None;
    let mut ordinals: HashMap<Key, u32> = HashMap::new();
    let mut out = Vec::new();
    for s in f.body.iter().flatten() {
        match s {
            Statement::Loc(l) => {
                let chain = match &l.inlined {
                    None => Vec::new(),
                    Some(i) => {
                        let mut c = at_col
                            .get(&(i.file, i.line, i.col))
                            .or_else(|| at_line.get(&(i.file, i.line)))
                            .cloned()
                            .unwrap_or_default();
                        c.push((i.file, i.line));
                        c
                    }
                };
                at_col.insert((l.file, l.line, l.col), chain.clone());
                at_line.insert((l.file, l.line), chain.clone());
                current = Some((l.file, l.line, chain));
            }
            Statement::Inst(i) => {
                let key = current.clone().unwrap_or((0, 0, Vec::new()));
                let n = ordinals.entry(key.clone()).or_default();
                let (file, line, chain) = key;
                out.push((
                    i.id,
                    Site {
                        function: f.name.clone(),
                        file: if current.is_some() {
                            path(file)
                        } else {
                            String::new()
                        },
                        line,
                        ordinal: *n,
                        inlined: chain.iter().map(|&(f, l)| (path(f), l)).collect(),
                    },
                ));
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const MARKED: &str = include_str!("../tests/fixtures/units/units.nvrtc.marked.ptx");

    #[test]
    fn every_instruction_has_one_site_and_back() {
        let m = parse(MARKED).module;
        let idx = sites(&m);
        let n: usize = m.functions().map(|f| f.instructions().count()).sum();
        assert_eq!(idx.len(), n);
        for (id, s) in idx.iter() {
            assert_eq!(idx.inst(s), Some(*id), "{s}");
            assert_eq!(idx.site(*id), Some(s));
        }
        // Ordinals count every instruction of a (function, file, line, chain) from 0.
        let mut next: HashMap<Site, u32> = HashMap::new();
        for (_, s) in idx.iter() {
            let n = next
                .entry(Site {
                    ordinal: 0,
                    ..s.clone()
                })
                .or_default();
            assert_eq!(s.ordinal, *n, "{s}");
            *n += 1;
        }
    }

    #[test]
    fn inlined_chains_are_outermost_first() {
        let m = parse(MARKED).module;
        let idx = sites(&m);
        let chains: Vec<Vec<(String, u32)>> = idx
            .iter()
            .filter(|(_, s)| s.line == 66)
            .map(|(_, s)| s.inlined.clone())
            .collect();
        let u = "fixtures/k.cu".to_string();
        // exp (the header's line 66) at line 13 directly, and inside the helper (line 6)
        // inlined at lines 19 and 21.
        for want in [
            vec![(u.clone(), 13)],
            vec![(u.clone(), 19), (u.clone(), 6)],
            vec![(u.clone(), 21), (u.clone(), 6)],
        ] {
            assert!(chains.contains(&want), "{want:?} not in chains");
        }
        let s = idx
            .iter()
            .map(|(_, s)| s)
            .find(|s| s.line == 66 && s.inlined.len() == 2 && s.inlined[0].1 == 21)
            .cloned()
            .unwrap_or_else(|| panic!("no site"));
        assert_eq!(
            s.to_string(),
            "units mantissa_units.cuh:66#0 < k.cu:6 < k.cu:21"
        );
        let json = serde_json::to_string(&s).unwrap_or_default();
        assert_eq!(serde_json::from_str::<Site>(&json).ok(), Some(s));
    }

    #[test]
    fn a_site_from_another_directory_is_found_by_file_name() {
        let m = parse(MARKED).module;
        let idx = sites(&m);
        let (id, s) = idx
            .iter()
            .find(|(_, s)| s.line == 12 && s.inlined.is_empty())
            .cloned()
            .unwrap_or_else(|| panic!("no site at line 12"));
        let mut moved = s.clone();
        moved.file = "/elsewhere/k.cu".into();
        assert_eq!(idx.inst(&moved), Some(id));
        moved.file = "/elsewhere/other.cu".into();
        assert_eq!(idx.inst(&moved), None);
    }

    /// The fixture of the rebuild test: a kernel with an inlined helper, and a second kernel.
    const REBUILT: &str = r#"__device__ double helper(double x) {
  return x * 0.5 + 1.0 / x;
}
extern "C" __global__ void site_a(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  double y = x * 3.0 + x * x;
  double z = helper(y) - helper(x);
  out[i] = z / (y + 2.0);
}
extern "C" __global__ void site_b(double* out) {
  out[threadIdx.x] = out[threadIdx.x] * 7.0 + 1.0;
}
"#;

    /// (site, instruction without its registers) of every instruction of `kernel`.
    fn shapes(ptx: &str, kernel: &str) -> Vec<(Site, String)> {
        let m = parse(ptx).module;
        let idx = sites(&m);
        let f = m
            .function(kernel)
            .cloned()
            .unwrap_or_else(|| panic!("no {kernel}"));
        f.instructions()
            .map(|i| {
                let s = idx.site(i.id).cloned().unwrap_or_else(|| panic!("no site"));
                (s, i.full_opcode())
            })
            .collect()
    }

    /// Sites name the same instructions in a rebuild of the same source, and in a rebuild where
    /// another kernel, or another line of the same kernel, changed (NVRTC, sm_90, -lineinfo).
    #[test]
    fn sites_survive_rebuilds_with_nvrtc() {
        use mantissa_gpu::{Arch, FlagSet, Source, Target};
        let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
            return;
        };
        let build = |text: &str| {
            nvrtc
                .compile(
                    &Source::new("sites.cu", text),
                    FlagSet::DEFAULT,
                    Target::Ptx(Arch::new(9, 0)),
                )
                .map(|c| c.ptx.clone())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let first = build(REBUILT);
        let again = build(&format!("{REBUILT}\n"));
        assert_eq!(shapes(&first, "site_a"), shapes(&again, "site_a"));
        assert!(shapes(&first, "site_a").len() > 20);
        // Another kernel changed: site_a's sites are all the same.
        let other = build(&REBUILT.replace("* 7.0 + 1.0", "* 9.0 - 4.0"));
        assert_eq!(shapes(&first, "site_a"), shapes(&other, "site_a"));
        // Line 8 of site_a changed (a constant): every site of another line is the same.
        let line8 = build(&REBUILT.replace("x * 3.0 + x * x", "x * 5.0 + x * x"));
        let off8 = |v: Vec<(Site, String)>| -> Vec<(Site, String)> {
            v.into_iter().filter(|(s, _)| s.line != 8).collect()
        };
        assert_eq!(
            off8(shapes(&first, "site_a")),
            off8(shapes(&line8, "site_a"))
        );
        // The helper's code is addressed through its call sites (line 9, twice).
        let inlined: Vec<Site> = shapes(&first, "site_a")
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| !s.inlined.is_empty())
            .collect();
        // NVRTC writes the source name as a path under the current directory.
        assert!(
            inlined
                .iter()
                .all(|s| s.line == 2 && s.inlined.len() == 1 && s.inlined[0].1 == 9),
            "{inlined:?}"
        );
        assert!(!inlined.is_empty());
    }
}
