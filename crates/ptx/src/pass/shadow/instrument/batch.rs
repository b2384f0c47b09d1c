//! The demotion error of sites outside every loop, measured in *batches*: consecutive such sites
//! of one basic block of the original function (at most [`BATCH_SITES`], in instruction order)
//! call [`BATCH_FUNCTION`] once, after the last of them, instead of one runtime call per site.
//!
//! Why: the runtime aggregates each call over the warp before its atomics (ballots, redux,
//! shuffle levels), about a hundred SASS instructions per site and warp when done site by
//! site (options' kernel, 334 straight-line sites, ran 62 times slower instrumented). A batch
//! pays one transposed butterfly for eight sites (`mantissa_shadow.cuh`).
//!
//! What each site adds to the code right after it (and its f32 form, which
//! [`super::demotion::measure`] writes): copies of its result and of its widened f32 form into
//! registers of its batch slot (the site's destination, or the shared scratch register of the
//! f32 form, may be written again before the batch's call), under the site's guard (elsewhere
//! they hold garbage the runtime does not read); where the site is guarded, its bit of the
//! batch's `executed` word set under the guard. A batch without a guarded site passes its
//! `executed` word as an immediate (every slot's bit), which ptxas folds once inlined.
//!
//! Every unguarded site of a batch runs exactly as often as the batch's first unguarded one,
//! so only that one adds its executions (bits 8-15 of `executed` say which slots add them);
//! the report names the others ([`Batches::shared_executions`]), and
//! `ShadowReport::decode` reads their executions from it: one atomic per batch where there
//! were eight, and atomics bound a kernel of straight-line sites.
//!
//! Why one block, and why the call right after the last site: every lane that executed a site
//! of the batch must execute the call, exactly once, and every lane executing the call must
//! have passed every site of the batch. Within a basic block control passes every instruction
//! in order (a block ends at every label, branch, `ret`, `exit`), and the call comes before the
//! block's terminator, since it follows a site. A batch also ends at a `call` of the program
//! (the callee might not return: `exit`). The runtime reads which lanes executed a guarded site
//! from `executed`, and falls back to a reduction per site when the warp is not whole.

use super::{reg, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::pass::shadow::{ShadowError, BATCH_FUNCTION, BATCH_SITES};
use crate::rewrite::{call, instruction, int, Rewriter};
use std::collections::HashMap;

/// Scratch register numbers of slot `k` (`+ k`): the site's result, its widened f32 form; and
/// the batch's `executed` word. Shared by every batch of a function: each batch writes them
/// before its call reads them, and nothing reads them after. Far above the numbers the other
/// parts of the instrumentation take.
const R64: usize = 1000;
const R32: usize = 1100;
const EXECUTED: usize = 1200;

/// An unused slot's site index (the runtime's `MANTISSA_SHADOW_NO_SITE`).
pub(crate) const NO_SITE: u32 = u32::MAX;

/// One batch: its sites' site indices and guards, in instruction order.
struct Batch {
    sites: Vec<u32>,
    guards: Vec<Option<Guard>>,
}

impl Batch {
    /// The slots that add their executions to their own record: the guarded ones, and the
    /// first unguarded one, which every unguarded site of the batch executes as often as.
    fn counting(&self) -> i128 {
        let first_unguarded = self.guards.iter().position(Option::is_none);
        (0..self.sites.len())
            .filter(|&k| self.guards[k].is_some() || Some(k) == first_unguarded)
            .map(|k| 1 << k)
            .sum()
    }
}

/// The batches of one function's straight-line demotion sites.
pub(super) struct Batches {
    batches: Vec<Batch>,
    /// Site index → (batch, slot).
    slot: HashMap<u32, (usize, usize)>,
}

impl Batches {
    /// Groups `sites` (instruction index in `d`, site index; the demotion sites of `d` that do
    /// not accumulate) into batches: consecutive sites in instruction order, in one basic block
    /// of `d` with no `call` between them, at most [`BATCH_SITES`] each.
    pub(super) fn new(d: &Decoded, sites: &[(usize, u32)]) -> Batches {
        let mut sites = sites.to_vec();
        sites.sort_by_key(|&(j, _)| j);
        let cfg = Cfg::build(d);
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut previous: Option<usize> = None;
        for (n, &(j, _)) in sites.iter().enumerate() {
            let joins = previous.is_some_and(|p| {
                cfg.block_of[p] == cfg.block_of[j]
                    && !(p + 1..j).any(|x| d.insts[x].opcode == "call")
            }) && groups.last().is_some_and(|g| g.len() < BATCH_SITES);
            match groups.last_mut() {
                Some(g) if joins => g.push(n),
                _ => groups.push(vec![n]),
            }
            previous = Some(j);
        }
        let mut slot = HashMap::new();
        let batches = groups
            .into_iter()
            .enumerate()
            .map(|(b, members)| {
                for (k, &n) in members.iter().enumerate() {
                    slot.insert(sites[n].1, (b, k));
                }
                Batch {
                    sites: members.iter().map(|&n| sites[n].1).collect(),
                    guards: members
                        .iter()
                        .map(|&n| d.insts[sites[n].0].guard.clone())
                        .collect(),
                }
            })
            .collect();
        Batches { batches, slot }
    }

    /// The sites whose executions another site of their batch counts (site → that site):
    /// every unguarded site but the batch's first unguarded one ([`ShadowReport::decode`]
    /// reads them from it).
    ///
    /// [`ShadowReport::decode`]: crate::pass::shadow::ShadowReport::decode
    pub(super) fn shared_executions(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.batches.iter().flat_map(|b| {
            let first = b.guards.iter().position(Option::is_none);
            (0..b.sites.len())
                .filter(move |&k| b.guards[k].is_none() && Some(k) != first)
                .filter_map(move |k| Some((b.sites[k], b.sites[first?])))
        })
    }

    /// The code right after site `index` (inserted ignoring its guard: the guards are set here),
    /// whose result is `r64` and widened f32 form `wide`: its copies into its slot, its
    /// `executed` bit, and after the last site of its batch the batch's call.
    pub(super) fn after_site(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
        index: u32,
        r64: &str,
        wide: &str,
    ) -> Result<Vec<Statement>, ShadowError> {
        // Every site measured without an accumulator was given to `new` (instrument.rs).
        let (b, k) = *self
            .slot
            .get(&index)
            .expect("every straight-line demotion site is in a batch");
        let batch = &self.batches[b];
        let guard = &batch.guards[k];
        let mut code = vec![
            guarded(
                instruction(
                    "mov",
                    &["f64"],
                    vec![reg(&scratch.reg(rw, "f64", R64 + k)?), reg(r64)],
                ),
                guard,
            ),
            guarded(
                instruction(
                    "mov",
                    &["f64"],
                    vec![reg(&scratch.reg(rw, "f64", R32 + k)?), reg(wide)],
                ),
                guard,
            ),
        ];
        // Bits 0-7: the unguarded slots ran (the guarded ones' bits are set below, under their
        // guards); bits 8-15: the slots that add their executions (module docs).
        let unguarded: i128 = (0..batch.sites.len())
            .filter(|&s| batch.guards[s].is_none())
            .map(|s| 1 << s)
            .sum::<i128>()
            | batch.counting() << 8;
        let any_guarded = batch.guards.iter().any(Option::is_some);
        if any_guarded {
            let executed = scratch.reg(rw, "b32", EXECUTED)?;
            if k == 0 {
                // Every lane here passed the batch's first site: the bits of the unguarded
                // sites are known; the guarded ones are set where their guard holds.
                code.push(instruction(
                    "mov",
                    &["b32"],
                    vec![reg(&executed), int(unguarded)],
                ));
            }
            if guard.is_some() {
                code.push(guarded(
                    instruction(
                        "or",
                        &["b32"],
                        vec![reg(&executed), reg(&executed), int(1 << k)],
                    ),
                    guard,
                ));
            }
        }
        if k + 1 == batch.sites.len() {
            let mut args: Vec<(&str, Operand)> = (0..BATCH_SITES)
                .map(|s| {
                    let site = batch.sites.get(s).copied().unwrap_or(NO_SITE);
                    ("b32", int(site.into()))
                })
                .collect();
            for s in 0..BATCH_SITES {
                if s < batch.sites.len() {
                    args.push(("b64", reg(&scratch.reg(rw, "f64", R64 + s)?)));
                    args.push(("b64", reg(&scratch.reg(rw, "f64", R32 + s)?)));
                } else {
                    args.push(("b64", int(0)));
                    args.push(("b64", int(0)));
                }
            }
            args.push((
                "b32",
                if any_guarded {
                    reg(&scratch.reg(rw, "b32", EXECUTED)?)
                } else {
                    int(unguarded)
                },
            ));
            code.extend(call(BATCH_FUNCTION, &args));
        }
        Ok(code)
    }
}

/// `s` under `guard` (none: as it is).
fn guarded(mut s: Statement, guard: &Option<Guard>) -> Statement {
    if let Statement::Inst(i) = &mut s {
        i.guard = guard.clone();
    }
    s
}
