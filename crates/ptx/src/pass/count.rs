//! The counting pass: how often each instruction runs, per thread summed over a launch, counted
//! into a module global `__mantissa_counts[n]` (u64, one slot per *site*, i.e. per counted
//! instruction) and reported per site (index → function, [`InstId`], source position).
//!
//! Every instruction of every function with a body is counted, or only the floating-point ones
//! ([`census::classify`]: arithmetic, sign operations, conversions). Each site gets, right before
//! it and under its guard and `.loc` ([`Guarding::Keep`]), one of two counters:
//! - [`Counter::RuntimeCall`]: `call mantissa_count_hit, (site)`, a function of the device runtime
//!   `crates/gpu/cuda/mantissa_count.cuh`. The pass declares it (`.extern .func`) and
//!   [`crate::link::merge_runtime`] supplies it; the rewritten module alone does not load.
//! - [`Counter::InlineAtomic`]: `red.global.add.u64 [__mantissa_counts+8*site], 1;`, which loads
//!   as is.
//!
//! The counter carries the site's guard (for a call, the `call` does; its argument store cannot be
//! predicated), so a guarded instruction counts only where its guard is true (a guarded branch counts the
//! times it is taken), an instruction runs its counter once per executing thread, and counts
//! include the counted instructions of device functions whichever kernel called them. The
//! counters change no register or memory the kernel uses, so its results are bit-identical.

use crate::census;
use crate::model::*;
use crate::rewrite::{self, call, instruction, int, Guarding, RewriteError, Rewriter};
use serde::Serialize;
use std::collections::HashMap;

/// The counter array's name; `mantissa_count.cuh` declares it `extern` under this name.
pub const COUNTS_GLOBAL: &str = "__mantissa_counts";
/// The runtime function a [`Counter::RuntimeCall`] site calls.
pub const HIT_FUNCTION: &str = "mantissa_count_hit";

/// Which instructions are sites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    /// Every instruction.
    Every,
    /// The floating-point ones ([`census::classify`] says what they are).
    FloatingPoint,
}

/// How a site counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    /// A call of the runtime's `mantissa_count_hit(site)`: merge the runtime before loading.
    RuntimeCall,
    /// An inline `red.global.add.u64`: no runtime needed.
    InlineAtomic,
}

/// What to count and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CountOptions {
    /// Which instructions are sites.
    pub which: Which,
    /// How a site counts.
    pub counter: Counter,
}

/// A source position: a `.file`'s path and a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourcePos {
    /// The path of the `.file` the `.loc` names (its number if the module lacks that `.file`).
    pub file: String,
    /// The 1-based line.
    pub line: u32,
}

/// One counted instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// Its slot in the counter array.
    pub index: u32,
    /// The function it is in.
    pub function: String,
    /// Whether that function is a kernel (`.entry`).
    pub kernel: bool,
    /// The instruction's id, unchanged by the pass.
    pub inst: InstId,
    /// Its full opcode (`fma.rn.f64`), for reading reports.
    pub opcode: String,
    /// Whether it has a guard (so counts only where the guard is true).
    pub guarded: bool,
    /// Its `.loc` position, when it has one.
    pub loc: Option<SourcePos>,
    /// For inlined code, the call site's position (`inlined_at`).
    pub inlined_at: Option<SourcePos>,
}

/// What the pass did: the counter array and its sites, in index order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CountReport {
    /// The counter array's name ([`COUNTS_GLOBAL`]).
    pub global: String,
    /// Its length (the number of sites, at least 1: PTX has no empty arrays).
    pub slots: u64,
    /// How sites count.
    pub options: CountOptions,
    /// Site `k` counts into slot `k`.
    pub sites: Vec<Site>,
}

impl CountReport {
    /// The site of instruction `inst`, if it was counted.
    pub fn site_of(&self, inst: InstId) -> Option<&Site> {
        self.sites.iter().find(|s| s.inst == inst)
    }

    /// The counts as read back from the device (`Gpu::read_symbol` of [`CountReport::global`]):
    /// little-endian u64s, one per slot.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<u64>, CountError> {
        if bytes.len() as u64 != 8 * self.slots {
            return Err(CountError::CountBytes {
                got: bytes.len(),
                slots: self.slots,
            });
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Counted {
    /// The module with counters; with [`Counter::RuntimeCall`] merge the runtime before loading.
    pub module: Module,
    /// Where each count comes from.
    pub report: CountReport,
}

/// Why the pass cannot count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// The module already has a name the pass needs (counted twice, or a user name).
    #[error("the module already has a '{0}': it is counted already, or the name is the user's")]
    NameTaken(String),
    /// An edit failed (a bug of this pass: it only makes edits the rewriter accepts).
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
    /// Bytes read back that are not the counter array.
    #[error("{got} bytes read back for a counter array of {slots} u64 slots")]
    CountBytes {
        /// Bytes given.
        got: usize,
        /// Slots expected.
        slots: u64,
    },
}

/// Counts executions per instruction; see the module docs.
pub fn count(module: &Module, options: CountOptions) -> Result<Counted, CountError> {
    for name in [COUNTS_GLOBAL, HIT_FUNCTION] {
        if module.items.iter().any(|i| match i {
            Item::Var(v) => v.name == name,
            Item::Function(f) => f.name == name,
            _ => false,
        }) {
            return Err(CountError::NameTaken(name.to_string()));
        }
    }
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let position = |file: u32, line: u32| SourcePos {
        file: files
            .get(&file)
            .map_or_else(|| file.to_string(), |p| p.to_string()),
        line,
    };
    let mut sites = Vec::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        for (inst, loc) in census::located(f) {
            if options.which == Which::FloatingPoint && census::classify(inst).is_none() {
                continue;
            }
            sites.push(Site {
                index: sites.len() as u32,
                function: f.name.clone(),
                kernel: f.kind == FunctionKind::Entry,
                inst: inst.id,
                opcode: inst.full_opcode(),
                guarded: inst.guard.is_some(),
                loc: loc.map(|l| position(l.file, l.line)),
                inlined_at: loc
                    .and_then(|l| l.inlined.as_ref())
                    .map(|i| position(i.file, i.line)),
            });
        }
    }

    let mut out = module.clone();
    let slots = (sites.len() as u64).max(1);
    let global = rewrite::add_global(&mut out, "u64", 8, COUNTS_GLOBAL, slots);
    if global != COUNTS_GLOBAL {
        // A parameter or local has the name: the runtime could not reach the array by it.
        return Err(CountError::NameTaken(COUNTS_GLOBAL.to_string()));
    }
    if options.counter == Counter::RuntimeCall {
        let at = rewrite::first_function(&out);
        out.items.insert(at, Item::Function(hit_prototype()));
    }
    let mut k = 0;
    while k < sites.len() {
        let function = sites[k].function.clone();
        let mut rw = Rewriter::new(&out, &function)?;
        while k < sites.len() && sites[k].function == function {
            let site = &sites[k];
            let code = match options.counter {
                Counter::RuntimeCall => call(HIT_FUNCTION, &[("b32", int(site.index.into()))]),
                Counter::InlineAtomic => vec![instruction(
                    "red",
                    &["global", "add", "u64"],
                    vec![
                        Operand::Addr {
                            base: global.clone(),
                            offset: 8 * i64::from(site.index),
                        },
                        int(1),
                    ],
                )],
            };
            rw.insert_before(site.inst, code, Guarding::Keep)?;
            k += 1;
        }
        rw.apply(&mut out)?;
    }
    Ok(Counted {
        module: out,
        report: CountReport {
            global,
            slots,
            options,
            sites,
        },
    })
}

/// `.extern .func mantissa_count_hit(.param .b32 mantissa_count_hit_param_0);`, as NVRTC
/// declares the runtime's definition (the merge checks the two agree).
fn hit_prototype() -> Function {
    Function {
        linkage: vec![".extern".into()],
        kind: FunctionKind::Func,
        name: HIT_FUNCTION.into(),
        returns: None,
        params: vec![Param::new(".b32", &format!("{HIT_FUNCTION}_param_0"))],
        directives: Vec::new(),
        body: None,
        line: SrcLine(0),
    }
}

#[cfg(test)]
#[path = "count_tests.rs"]
mod tests;
