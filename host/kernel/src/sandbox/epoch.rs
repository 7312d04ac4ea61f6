//! The epoch ticker: one thread per engine that advances its epoch while
//! calls run, so that a running call yields and meets its deadline.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::Engine;

/// How often the engine's epoch advances. A running call yields to the async
/// runtime at every tick, and its deadline is checked at every tick; the tick
/// bounds how long a spinning plugin holds a worker thread before others run.
pub(super) const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Raised from the epoch callback when a call outlives its deadline.
#[derive(Debug)]
pub(super) struct DeadlineReached;

impl std::fmt::Display for DeadlineReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline reached")
    }
}

impl std::error::Error for DeadlineReached {}

/// Advances the engine's epoch every [`EPOCH_TICK`] while calls run, for as
/// long as the engine lives. One thread per engine, whatever the number of
/// plugins and calls.
///
/// Idle, it sleeps: an idle host (a stdio server beside its client all day)
/// wakes about once a second, not a thousand times. Busy, it keeps ticking
/// until no call has run for [`TICKER_LINGER`], so that a call does not pay
/// to wake it: under a stream of short calls the call path only counts
/// itself in and out, and the ticker is never parked and woken per call.
/// A tick comes a full [`EPOCH_TICK`] after the ticker wakes, so a short
/// call is not interrupted by the wake-up its own start caused.
pub(super) fn start_epoch_ticker(engine: &Engine, running: Arc<RunningCalls>) {
    let engine = engine.weak();
    let calls = running.clone();
    let ticker = std::thread::Builder::new()
        .name("prompt-host-epoch".into())
        .spawn(move || {
            let mut last_busy = Instant::now();
            loop {
                if calls.count.load(Ordering::SeqCst) > 0 {
                    last_busy = Instant::now();
                } else if last_busy.elapsed() >= TICKER_LINGER {
                    calls.parked.store(true, Ordering::SeqCst);
                    // A call that started before `parked` was set is seen
                    // here; one that starts after it sees `parked` and
                    // unparks (an unpark before the park is not lost).
                    if calls.count.load(Ordering::SeqCst) == 0 {
                        // The timeout only lets the thread notice that the
                        // engine is gone.
                        std::thread::park_timeout(IDLE_CHECK);
                    }
                    calls.parked.store(false, Ordering::SeqCst);
                    if engine.upgrade().is_none() {
                        return;
                    }
                    // Woken by a call (counted above on the next turn), or
                    // by the timeout: then it parks again at once.
                    continue;
                }
                std::thread::sleep(EPOCH_TICK);
                let Some(engine) = engine.upgrade() else { return };
                if calls.count.load(Ordering::SeqCst) > 0 {
                    engine.increment_epoch();
                    #[cfg(test)]
                    calls.ticks.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .expect("failed to start the epoch ticker thread");
    running.ticker.set(ticker.thread().clone()).expect("one ticker per sandbox");
}

/// How often an idle ticker checks that its engine still lives.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// How long the ticker keeps ticking after the last call ends, before it
/// parks until the next one.
pub(super) const TICKER_LINGER: Duration = Duration::from_millis(100);

/// The calls running in a sandbox, so that its epoch ticker runs only while
/// there are any.
#[derive(Default)]
pub(super) struct RunningCalls {
    pub(super) count: AtomicUsize,
    /// Whether the ticker is parked (or about to park) until a call starts.
    pub(super) parked: AtomicBool,
    /// Epoch ticks so far, for the tests (the engine does not tell).
    #[cfg(test)]
    pub(super) ticks: std::sync::atomic::AtomicU64,
    ticker: OnceLock<std::thread::Thread>,
}

/// One running call, from instantiation until its instance is dropped.
pub(super) struct RunningCall(Arc<RunningCalls>);

impl RunningCall {
    pub(super) fn start(calls: &Arc<RunningCalls>) -> RunningCall {
        calls.count.fetch_add(1, Ordering::SeqCst);
        if calls.parked.swap(false, Ordering::SeqCst)
            && let Some(ticker) = calls.ticker.get()
        {
            ticker.unpark();
        }
        RunningCall(calls.clone())
    }
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}
