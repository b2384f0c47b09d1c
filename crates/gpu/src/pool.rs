//! [`run_pool`]: independent work units spread over several workers — one thread per device —
//! with the results handed back in unit order.
//!
//! Units are handed out one at a time from a shared counter, so a free worker takes the next
//! unit and a slow unit never holds up the others. Results come back over a channel and are
//! buffered until every earlier unit's result is in, so `emit` sees unit 0, 1, 2, … on the
//! calling thread whichever worker ran what: a results store written from `emit`, and a report
//! made from it, do not depend on the number of devices or their speed.
//!
//! A worker runs one unit at a time, so with one worker per device a timed unit never shares its
//! device. Each worker's state is made by `start` on the worker's own thread: it may borrow its
//! device (per-device runners that keep compiled modules) and need not be `Send`.
//!
//! The generic worker keeps the pool testable without a GPU: the tests here use CPU workers that
//! sleep.

use crate::error::catch;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What one worker did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerSummary {
    /// Units it ran (to the end or to a panic).
    pub units: usize,
    /// Time spent inside `work`, not waiting for units or for `start`.
    pub busy: Duration,
}

/// What a pool run did, per worker: where the time went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolSummary {
    /// One per worker, in the order of the devices given.
    pub workers: Vec<WorkerSummary>,
    /// Units whose results were emitted.
    pub emitted: usize,
    /// The stop flag ended the run before every unit ran.
    pub stopped: bool,
    /// Time from the start of the pool to its end.
    pub wall: Duration,
}

impl PoolSummary {
    /// Busy time summed over workers, divided by workers × wall time: 1 when no worker ever
    /// waited; 0 for an empty run.
    pub fn utilisation(&self) -> f64 {
        let capacity = self.wall.as_secs_f64() * self.workers.len() as f64;
        if capacity <= 0.0 {
            return 0.0;
        }
        self.workers
            .iter()
            .map(|w| w.busy.as_secs_f64())
            .sum::<f64>()
            / capacity
    }
}

impl PoolSummary {
    /// One line for the terminal, each worker named by its device's ordinal:
    /// `pool: GPU 0 12 units busy 3.40 s; GPU 1 11 units busy 3.31 s; 3.52 s wall, 95% busy`.
    /// `scripts/bench-devices.sh` reads these lines.
    pub fn describe(&self, ordinals: &[usize]) -> String {
        let per: Vec<String> = self
            .workers
            .iter()
            .zip(ordinals)
            .map(|(w, o)| {
                format!(
                    "GPU {o} {} units busy {:.2} s",
                    w.units,
                    w.busy.as_secs_f64()
                )
            })
            .collect();
        format!(
            "pool: {}; {:.2} s wall, {:.0}% busy",
            per.join("; "),
            self.wall.as_secs_f64(),
            100.0 * self.utilisation()
        )
    }
}

/// Why a pool run ended early.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PoolError<E> {
    /// `emit` refused a result: no unit was handed out after it, and the results after it were
    /// dropped.
    #[error("{0}")]
    Emit(E),
    /// A unit (or a worker's `start`, `unit: None`) panicked; the results before it were emitted.
    #[error("worker {worker} panicked{}: {message}", unit.map(|u| format!(" on unit {u}")).unwrap_or_else(|| " while starting".into()))]
    Panicked {
        /// The unit it was running.
        unit: Option<usize>,
        /// The worker (its place in the devices given).
        worker: usize,
        /// The panic's message.
        message: String,
    },
    /// No device was given, so no unit could run.
    #[error("no worker to run {units} unit(s) on")]
    NoWorkers {
        /// The units given.
        units: usize,
    },
}

enum Message<R> {
    Done {
        unit: usize,
        result: R,
    },
    Panicked {
        unit: Option<usize>,
        worker: usize,
        message: String,
    },
    Finished {
        worker: usize,
        summary: WorkerSummary,
    },
}

/// Runs `work` on every unit, spread over one worker thread per device, and passes each result to
/// `emit` on the calling thread in unit order.
///
/// - `start(w, device)` makes worker `w`'s state on its thread, before its first unit.
/// - `work(state, i, unit)` runs unit `i`; it is called exactly once per unit that runs.
/// - `emit(i, unit, result)` gets the results in order 0, 1, 2, …; an error stops handing out
///   units, the workers finish the unit they run, and the error is returned
///   ([`PoolError::Emit`]).
/// - `stop` set (Ctrl-C) stops handing out units; those already running finish and are emitted.
/// - A panic in `start` or `work` stops handing out units and becomes [`PoolError::Panicked`]
///   after the other workers finish, never a hang; results of the units before it are emitted.
pub fn run_pool<'d, D, S, U, R, E>(
    devices: &'d [D],
    units: &[U],
    stop: &AtomicBool,
    start: impl Fn(usize, &'d D) -> S + Sync,
    work: impl Fn(&mut S, usize, &U) -> R + Sync,
    mut emit: impl FnMut(usize, &U, R) -> Result<(), E>,
) -> Result<PoolSummary, PoolError<E>>
where
    D: Sync,
    U: Sync,
    R: Send,
{
    let began = Instant::now();
    if devices.is_empty() {
        if units.is_empty() {
            return Ok(PoolSummary::default());
        }
        return Err(PoolError::NoWorkers { units: units.len() });
    }
    let next = AtomicUsize::new(0);
    // Set by a failed emit or a panic: no more units go out.
    let halt = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Message<R>>();
    let mut summary = PoolSummary {
        workers: vec![WorkerSummary::default(); devices.len()],
        ..PoolSummary::default()
    };
    let mut emit_error: Option<E> = None;
    let mut panic: Option<(Option<usize>, usize, String)> = None;
    std::thread::scope(|s| {
        for (w, device) in devices.iter().enumerate() {
            let tx = tx.clone();
            let (next, halt, start, work) = (&next, &halt, &start, &work);
            s.spawn(move || {
                let mut mine = WorkerSummary::default();
                let mut state = match catch(|| start(w, device)) {
                    Ok(state) => state,
                    Err(message) => {
                        halt.store(true, Ordering::SeqCst);
                        let _ = tx.send(Message::Panicked {
                            unit: None,
                            worker: w,
                            message,
                        });
                        let _ = tx.send(Message::Finished {
                            worker: w,
                            summary: mine,
                        });
                        return;
                    }
                };
                loop {
                    if halt.load(Ordering::SeqCst) || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(unit) = units.get(i) else { break };
                    let t = Instant::now();
                    let result = catch(|| work(&mut state, i, unit));
                    mine.busy += t.elapsed();
                    mine.units += 1;
                    match result {
                        Ok(result) => {
                            let _ = tx.send(Message::Done { unit: i, result });
                        }
                        Err(message) => {
                            halt.store(true, Ordering::SeqCst);
                            let _ = tx.send(Message::Panicked {
                                unit: Some(i),
                                worker: w,
                                message,
                            });
                            break;
                        }
                    }
                }
                let _ = tx.send(Message::Finished {
                    worker: w,
                    summary: mine,
                });
            });
        }
        drop(tx);
        let mut pending: BTreeMap<usize, R> = BTreeMap::new();
        // Ends when every worker has dropped its sender, i.e. finished.
        for message in rx {
            match message {
                Message::Done { unit, result } => {
                    if emit_error.is_none() {
                        pending.insert(unit, result);
                    }
                }
                Message::Panicked {
                    unit,
                    worker,
                    message,
                } => {
                    // The first panic is the one reported; units after it are not emitted.
                    if panic.is_none() {
                        panic = Some((unit, worker, message));
                    }
                }
                Message::Finished { worker, summary: w } => summary.workers[worker] = w,
            }
            let limit = match &panic {
                Some((Some(unit), ..)) => *unit,
                _ => usize::MAX,
            };
            while emit_error.is_none() && summary.emitted < limit {
                let Some(result) = pending.remove(&summary.emitted) else {
                    break;
                };
                let i = summary.emitted;
                match emit(i, &units[i], result) {
                    Ok(()) => summary.emitted += 1,
                    Err(e) => {
                        halt.store(true, Ordering::SeqCst);
                        emit_error = Some(e);
                        pending.clear();
                    }
                }
            }
        }
    });
    summary.wall = began.elapsed();
    if let Some(e) = emit_error {
        return Err(PoolError::Emit(e));
    }
    if let Some((unit, worker, message)) = panic {
        return Err(PoolError::Panicked {
            unit,
            worker,
            message,
        });
    }
    summary.stopped = summary.emitted < units.len();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A reproducible sleep of 0–7 ms per (unit, worker), so workers finish out of order.
    fn nap(unit: usize, worker: usize) -> Duration {
        let mut x = (unit as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ worker as u64;
        x ^= x >> 29;
        Duration::from_micros((x % 8) * 1000)
    }

    struct Fake {
        worker: usize,
    }

    fn fakes(n: usize) -> Vec<usize> {
        (0..n).collect()
    }

    #[test]
    fn results_are_emitted_in_unit_order_and_each_unit_runs_once() {
        for workers in [1, 2, 3, 8] {
            let units: Vec<u64> = (0..60).map(|i| i * 10).collect();
            let runs = Mutex::new(vec![0usize; units.len()]);
            let by_worker = Mutex::new(vec![Vec::new(); workers]);
            let mut emitted = Vec::new();
            let stop = AtomicBool::new(false);
            let devices = fakes(workers);
            let summary = run_pool(
                &devices,
                &units,
                &stop,
                |w, &d| {
                    assert_eq!(w, d);
                    Fake { worker: w }
                },
                |fake, i, &u| {
                    std::thread::sleep(nap(i, fake.worker));
                    runs.lock().unwrap()[i] += 1;
                    by_worker.lock().unwrap()[fake.worker].push(i);
                    (u + 1, fake.worker)
                },
                |i, &u, (r, _worker)| {
                    assert_eq!(r, u + 1, "unit {i} got another unit's result");
                    emitted.push(i);
                    Ok::<(), String>(())
                },
            )
            .unwrap();
            assert_eq!(
                emitted,
                (0..units.len()).collect::<Vec<_>>(),
                "{workers} workers"
            );
            assert!(runs.lock().unwrap().iter().all(|&n| n == 1));
            assert_eq!(summary.emitted, units.len());
            assert!(!summary.stopped);
            assert_eq!(summary.workers.len(), workers);
            let per_worker: Vec<usize> = by_worker.lock().unwrap().iter().map(Vec::len).collect();
            assert_eq!(
                summary.workers.iter().map(|w| w.units).collect::<Vec<_>>(),
                per_worker
            );
            assert_eq!(per_worker.iter().sum::<usize>(), units.len());
            if workers > 1 {
                // Sixty units of up to 7 ms: every worker gets some.
                assert!(per_worker.iter().all(|&n| n > 0), "{per_worker:?}");
            }
            for w in &summary.workers {
                assert!(w.busy <= summary.wall, "{w:?} vs {:?}", summary.wall);
            }
            assert!(summary.utilisation() > 0.0 && summary.utilisation() <= 1.0);
        }
    }

    #[test]
    fn an_emit_error_stops_the_work_and_is_returned() {
        let units: Vec<usize> = (0..200).collect();
        let started = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let mut emitted = Vec::new();
        let err = run_pool(
            &fakes(4),
            &units,
            &stop,
            |_, _| (),
            |_, i, _| {
                started.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(nap(i, 0));
                i
            },
            |i, _, r| {
                assert_eq!(i, r);
                if i == 5 {
                    return Err(format!("disk full at unit {i}"));
                }
                emitted.push(i);
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(err, PoolError::Emit("disk full at unit 5".to_string()));
        assert_eq!(emitted, vec![0, 1, 2, 3, 4]);
        // Units stop going out once emit fails: at most the ones running then, well short of 200.
        let ran = started.load(Ordering::SeqCst);
        assert!(ran < 40, "{ran} units ran after the error");
    }

    #[test]
    fn a_panicking_unit_is_an_error_not_a_hang() {
        let units: Vec<usize> = (0..50).collect();
        let stop = AtomicBool::new(false);
        let mut emitted = Vec::new();
        let err = run_pool(
            &fakes(3),
            &units,
            &stop,
            |_, _| (),
            |_, i, _| {
                std::thread::sleep(nap(i, 1));
                if i == 7 {
                    panic!("unit seven is broken");
                }
                i
            },
            |i, _, _| {
                emitted.push(i);
                Ok::<(), String>(())
            },
        )
        .unwrap_err();
        match err {
            PoolError::Panicked { unit, message, .. } => {
                assert_eq!(unit, Some(7));
                assert_eq!(message, "unit seven is broken");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(emitted, (0..7).collect::<Vec<_>>(), "the units before it");
        let e = PoolError::<String>::Panicked {
            unit: Some(7),
            worker: 2,
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "worker 2 panicked on unit 7: boom");
    }

    #[test]
    fn a_panicking_start_is_an_error() {
        let units: Vec<usize> = (0..10).collect();
        let stop = AtomicBool::new(false);
        let err = run_pool(
            &fakes(2),
            &units,
            &stop,
            |w, _| {
                if w == 1 {
                    panic!("no context");
                }
            },
            |_, i, _| i,
            |_, _, _| Ok::<(), String>(()),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "worker 1 panicked while starting: no context"
        );
    }

    #[test]
    fn the_stop_flag_ends_handing_out_and_keeps_what_ran() {
        let units: Vec<usize> = (0..100).collect();
        let stop = AtomicBool::new(false);
        let mut emitted = Vec::new();
        let summary = run_pool(
            &fakes(2),
            &units,
            &stop,
            |_, _| (),
            |_, i, _| {
                if i == 10 {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
                i
            },
            |i, _, r| {
                assert_eq!(i, r);
                emitted.push(i);
                Ok::<(), String>(())
            },
        )
        .unwrap();
        assert!(summary.stopped);
        assert_eq!(summary.emitted, emitted.len());
        assert!((11..=13).contains(&emitted.len()), "{emitted:?}");
        assert_eq!(emitted, (0..emitted.len()).collect::<Vec<_>>());
    }

    #[test]
    fn the_summary_line_names_each_device() {
        let s = PoolSummary {
            workers: vec![
                WorkerSummary {
                    units: 3,
                    busy: Duration::from_millis(1500),
                },
                WorkerSummary {
                    units: 1,
                    busy: Duration::from_millis(500),
                },
            ],
            emitted: 4,
            stopped: false,
            wall: Duration::from_secs(2),
        };
        assert_eq!(s.utilisation(), 0.5);
        assert_eq!(
            s.describe(&[0, 2]),
            "pool: GPU 0 3 units busy 1.50 s; GPU 2 1 units busy 0.50 s; 2.00 s wall, 50% busy"
        );
    }

    #[test]
    fn no_devices_is_refused_and_no_units_is_nothing() {
        let stop = AtomicBool::new(false);
        let none: [usize; 0] = [];
        let err = run_pool(
            &none,
            &[1, 2],
            &stop,
            |_, _| (),
            |_, _, _| (),
            |_, _, _| Ok::<(), String>(()),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no worker to run 2 unit(s) on");
        let s = run_pool(
            &fakes(3),
            &[] as &[u8],
            &stop,
            |_, _| (),
            |_, _, _| (),
            |_, _, _| Ok::<(), String>(()),
        )
        .unwrap();
        assert_eq!(s.emitted, 0);
        assert!(!s.stopped);
    }
}
