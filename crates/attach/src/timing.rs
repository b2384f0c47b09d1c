//! Kernel times (`MANTISSA_ATTACH_RECORD=…,time`): a pair of CUDA events recorded around each
//! launch, taken from a per-context pool; the pairs are resolved (`cuEventElapsedTime`) at
//! synchronisations, context teardown and exit, never waited for per launch. Totals per kernel.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A kernel: its module's key and its name (each when known).
pub type Kernel = (Option<Arc<str>>, Option<Arc<str>>);

/// A launch whose events are not yet resolved.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The context the events belong to.
    pub ctx: usize,
    /// Start and end events.
    pub events: (usize, usize),
    /// The kernel's module key and name.
    pub kernel: Kernel,
}

/// Pools, pending launches and totals (inside the recorder's state).
#[derive(Debug, Default)]
pub struct Timing {
    /// Idle events: (context, event).
    pub pool: Vec<(usize, usize)>,
    /// Launches recorded, not yet resolved.
    pub pending: Vec<Pending>,
    /// (module, kernel) → (milliseconds, launches).
    pub totals: BTreeMap<Kernel, (f64, u64)>,
    /// Launches whose time could not be had (an event error).
    pub lost: u64,
}

/// Pending launches beyond which a launch resolves what has finished (without waiting).
pub const RESOLVE_AT: usize = 4096;

impl Timing {
    /// Two idle events of `ctx`, if the pool has them.
    pub fn take_pair(&mut self, ctx: usize) -> Option<(usize, usize)> {
        let mut of_ctx = self.pool.iter().enumerate().filter(|(_, &(c, _))| c == ctx);
        let (first, _) = of_ctx.next()?;
        let (second, _) = of_ctx.next()?;
        // The later index first, so that the earlier one is still where it was.
        let end = self.pool.swap_remove(second).1;
        let start = self.pool.swap_remove(first).1;
        Some((start, end))
    }

    /// The pending launches of `ctx` (all when `ctx` is `None`), taken out.
    pub fn take_pending(&mut self, ctx: Option<usize>) -> Vec<Pending> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| ctx.is_none_or(|c| p.ctx == c));
        self.pending = kept;
        taken
    }

    /// Adds one resolved launch.
    pub fn add(&mut self, kernel: Kernel, ms: f64) {
        let total = self.totals.entry(kernel).or_insert((0.0, 0));
        total.0 += ms;
        total.1 += 1;
    }

    /// Forgets the idle events of `ctx` (destroyed with it); returns them.
    pub fn drop_ctx(&mut self, ctx: usize) -> Vec<usize> {
        let (gone, kept): (Vec<_>, Vec<_>) = self.pool.iter().partition(|&&(c, _)| c == ctx);
        self.pool = kept;
        gone.into_iter().map(|(_, e)| e).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_from_one_context() {
        let mut t = Timing {
            pool: vec![(1, 10), (2, 20), (1, 11)],
            ..Timing::default()
        };
        assert_eq!(t.take_pair(2), None);
        assert_eq!(t.pool.len(), 3, "a context with one idle event keeps it");
        assert_eq!(t.take_pair(1), Some((10, 11)));
        assert_eq!(t.drop_ctx(2), vec![20]);
        assert!(t.pool.is_empty());
    }

    #[test]
    fn totals_add_up() {
        let mut t = Timing::default();
        let k = (Some(Arc::from("m")), Some(Arc::from("k")));
        t.add(k.clone(), 1.5);
        t.add(k.clone(), 2.0);
        assert_eq!(t.totals[&k], (3.5, 2));
    }
}
