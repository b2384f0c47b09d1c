//! How long-running experiments report progress without printing: the caller passes an
//! implementation (the CLI draws a progress bar; tests pass [`NoProgress`]).

/// Progress sink. Implementations must be cheap to call from many threads.
pub trait Progress: Sync {
    /// A new phase of `total` units begins.
    fn start(&self, label: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// The current phase is over.
    fn finish(&self);
}

/// Discards progress.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _label: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}
