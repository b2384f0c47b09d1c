//! Launch dimensions and dynamic shared memory checked against the architecture's limits before
//! anything runs: threads per block, each block and grid dimension, and dynamic shared memory
//! per block. Constant expressions are checked once; an expression that uses a loop counter is
//! checked at each evaluation, naming the step and the iteration (the same values a run
//! computes). The limits are the open device's own when a GPU is open
//! ([`ArchLimits::of_device`]), else the table of the CUDA C Programming Guide for the build's
//! target architecture ([`ArchLimits::for_arch`]).

use crate::exec::{repeat, Counters};
use crate::expr::Val;
use crate::spec::{lookup, Launch, Quantity, Spec, SpecError, Step, StepKind};
use mantissa_gpu::{Arch, DeviceInfo};

/// Launches evaluated at most per check: a loop of a million launches whose shape uses its
/// counter is checked for its first iterations only (and the report says so).
pub const MAX_EVALUATIONS: usize = 1_000_000;

/// What a launch may ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchLimits {
    /// Threads per block.
    pub threads_per_block: u32,
    /// Block dimensions x, y, z.
    pub block: [u32; 3],
    /// Grid dimensions x, y, z.
    pub grid: [u32; 3],
    /// Dynamic shared memory per block a kernel may have after opting in (the launch opts in
    /// above the default 48 KiB), bytes.
    pub shared_optin: u32,
    /// Where the numbers come from, for messages.
    pub source: String,
}

/// Dynamic shared memory a block may have without opting in, on every architecture.
pub const SHARED_DEFAULT: u32 = 48 * 1024;

impl ArchLimits {
    /// The limits of compute capability `arch`, from the CUDA C Programming Guide's table of
    /// technical specifications per compute capability (the same for every architecture
    /// mantissa builds for, except shared memory per block).
    pub fn for_arch(arch: Arch) -> ArchLimits {
        let kib = match (arch.major, arch.minor) {
            (7, 0) | (7, 2) => 96,
            (7, 5) => 64,
            (8, 0) | (8, 7) => 163,
            (8, _) => 99,
            (9, _) | (10, _) | (11, _) => 227,
            (12, _) => 99,
            _ => 48,
        };
        ArchLimits {
            threads_per_block: 1024,
            block: [1024, 1024, 64],
            grid: [i32::MAX as u32, 65535, 65535],
            shared_optin: kib * 1024,
            source: format!(
                "CUDA C Programming Guide, compute capability {}.{}",
                arch.major, arch.minor
            ),
        }
    }

    /// The limits the open device reports.
    pub fn of_device(info: &DeviceInfo) -> ArchLimits {
        let (b, g) = (info.max_block_dims, info.max_grid_dims);
        ArchLimits {
            threads_per_block: info.max_threads_per_block,
            block: [b.0, b.1, b.2],
            grid: [g.0, g.1, g.2],
            shared_optin: info.max_shared_per_block_optin.max(SHARED_DEFAULT),
            source: format!("the device, {}", info.name),
        }
    }
}

/// Checks every launch of `spec` (setup, then steps) against `limits`. Returns how many launch
/// shapes were evaluated and whether loops were cut at [`MAX_EVALUATIONS`].
pub fn check_launches(spec: &Spec, limits: &ArchLimits) -> Result<(usize, bool), SpecError> {
    let mut w = Walk {
        spec,
        limits,
        evaluations: 0,
        cut: false,
    };
    let mut c = Counters::default();
    w.steps(&spec.setup, &mut c)?;
    w.steps(&spec.steps, &mut c)?;
    Ok((w.evaluations, w.cut))
}

struct Walk<'a> {
    spec: &'a Spec,
    limits: &'a ArchLimits,
    evaluations: usize,
    cut: bool,
}

impl Walk<'_> {
    fn steps(&mut self, steps: &[Step], c: &mut Counters) -> Result<(), SpecError> {
        for s in steps {
            match &s.kind {
                StepKind::Launch(l) => {
                    self.evaluations += 1;
                    self.launch(s, l, c)?;
                }
                StepKind::Repeat {
                    count,
                    counter,
                    steps,
                } => {
                    // Nothing depends on the iteration: one pass checks them all.
                    let varies = counter.is_some() && uses_counters(steps, &self.spec.sizes);
                    let n = match self.value(s, count, c)?.as_integer() {
                        Some(n) if n > 0 && varies => n,
                        Some(n) if n > 0 => 1,
                        _ => 0,
                    };
                    let n = u32::try_from(n).unwrap_or(u32::MAX);
                    repeat(c, counter, &s.path, n, |c| {
                        if self.evaluations >= MAX_EVALUATIONS {
                            self.cut = true;
                            return Ok(());
                        }
                        self.steps(steps, c)
                    })?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn value(&self, s: &Step, q: &Quantity, c: &Counters) -> Result<Val, SpecError> {
        let counters = c.values();
        q.expr
            .eval(&|n| lookup(&counters, n).or_else(|| lookup(&self.spec.sizes, n)))
            .map_err(|e| {
                self.spec.error(
                    q.loc_at(e.offset),
                    &q.field,
                    format!("{}{}", e.found, at(s, c)),
                    e.accepted,
                )
            })
    }

    fn launch(&self, s: &Step, l: &Launch, c: &Counters) -> Result<(), SpecError> {
        let lim = self.limits;
        let src = &lim.source;
        let axes = ["x", "y", "z"];
        let mut block = [1u64; 3];
        for (what, qs, max) in [("grid", &l.grid, lim.grid), ("block", &l.block, lim.block)] {
            for (i, q) in qs.iter().enumerate().take(3) {
                let bound = format!(
                    "an integer from 1 to {} (the largest {what} {} dimension, {src})",
                    max[i], axes[i]
                );
                let v = self.integer(s, q, c, 1, u64::from(max[i]), bound)?;
                if what == "block" {
                    block[i] = v;
                }
            }
        }
        let threads: u64 = block.iter().product();
        if threads > u64::from(lim.threads_per_block) {
            let q = &l.block[0];
            let field = q.field.strip_suffix("[0]").unwrap_or(&q.field).to_string();
            return Err(self.spec.error(
                q.loc,
                field,
                format!(
                    "a block of {} = {threads} threads{}",
                    block.map(|b| b.to_string()).join(" x "),
                    at(s, c)
                ),
                format!(
                    "at most {} threads per block ({src})",
                    lim.threads_per_block
                ),
            ));
        }
        let max = lim.shared_optin;
        let bound = format!(
            "0 to {max} bytes ({} KiB: dynamic shared memory per block after opting in, {src}; without opting in {} KiB, and the launch opts in above that)",
            max / 1024,
            SHARED_DEFAULT / 1024
        );
        self.integer(s, &l.shared, c, 0, u64::from(max), bound)?;
        Ok(())
    }

    /// `q` as an integer in `min..=max`, or the one-line error saying which and why.
    fn integer(
        &self,
        s: &Step,
        q: &Quantity,
        c: &Counters,
        min: u64,
        max: u64,
        accepted: String,
    ) -> Result<u64, SpecError> {
        let v = self.value(s, q, c)?;
        let shown = if q.text == v.to_string() {
            q.text.clone()
        } else {
            format!("{} = {v}", q.text)
        };
        let why = match v.as_integer() {
            None if q.text.contains('/') => {
                " (not an integer: `/` divides exactly, write ceil(...) or floor(...))"
            }
            None => " (not an integer)",
            Some(i) if i < 0 => " (negative)",
            Some(_) => "",
        };
        match v.as_integer().and_then(|i| u64::try_from(i).ok()) {
            Some(i) if (min..=max).contains(&i) => Ok(i),
            _ => Err(self.spec.error(
                q.loc,
                &q.field,
                format!("{shown}{why}{}", at(s, c)),
                accepted,
            )),
        }
    }
}

/// ` at steps[1].steps[0] (launch k), iteration t=3` inside a loop; nothing outside.
fn at(s: &Step, c: &Counters) -> String {
    let it = c.describe();
    if it.is_empty() {
        String::new()
    } else {
        format!(" at {}{it}", s.describe())
    }
}

/// Whether a launch shape or a loop count in `steps` could depend on a loop counter (is not a
/// constant of the sizes).
fn uses_counters(steps: &[Step], sizes: &[(String, Val)]) -> bool {
    let varies = |q: &Quantity| q.constant(sizes).is_none();
    steps.iter().any(|s| match &s.kind {
        StepKind::Launch(l) => l.grid.iter().chain(&l.block).chain([&l.shared]).any(varies),
        StepKind::Repeat { count, steps, .. } => varies(count) || uses_counters(steps, sizes),
        _ => false,
    })
}
