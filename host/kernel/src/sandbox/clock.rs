//! The clocks a call's pack reads, which start with its call.

use std::sync::Arc;
use std::time::{Duration, Instant};

/// The clocks a pack reads: both stand at zero while its instance starts
/// (its start function and constructors), and run from the moment its call
/// begins: the monotonic clock from zero, the wall clock as the host's. So
/// an instance made ahead of time (a spare, started right after the
/// previous call ended) cannot be told from one made for the call, and
/// cannot carry when the previous call ended into the next.
#[derive(Clone, Default)]
pub(super) struct CallClock(Arc<std::sync::OnceLock<Instant>>);

impl CallClock {
    pub(super) fn start(&self) {
        let _ = self.0.set(Instant::now());
    }

    pub(super) fn started(&self) -> bool {
        self.0.get().is_some()
    }
}

impl wasmtime_wasi::HostMonotonicClock for CallClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.get().map_or(0, |started| u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// The wall clock of [`CallClock`]: the UNIX epoch until the call begins.
pub(super) struct CallWallClock(pub(super) CallClock);

impl wasmtime_wasi::HostWallClock for CallWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        match self.0.started() {
            true => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default(),
            false => Duration::ZERO,
        }
    }
}
