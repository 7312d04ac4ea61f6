//! A call's share of the CPU: how long it has run, and the turns it holds
//! while it runs as a long call.
//!
//! A call that has run [`LONG_CALL`] is a long call: it runs only while it
//! holds its plugin's one slow turn and one of the sandbox's slow-lane
//! turns, so that however many calls spin, calls that finish quickly always
//! find a free worker thread. What counts is the time the call *runs*: the
//! time spent inside each poll of the call's future (WebAssembly and the
//! host's own work for it). A call that waits (for an HTTP response, a
//! clock, its turn) is not polled, so it neither adds to its time nor holds
//! a turn while it waits. A pack cannot use waiting to run more than its
//! share; its deadline and its budgets still bound the whole call, waiting
//! included.
//!
//! The turns are for one poll: a long call gives them back whenever a poll
//! ends (it waits, its step is done, or the epoch's tick yielded it), and
//! takes them again, behind whoever queued meanwhile, before it runs on (at
//! a tick it queues at once: it is ready to run). So
//! the lane goes round the plugins one tick at a time, and a long call waits
//! for about one tick of each plugin queued ahead of it, never for another
//! plugin's whole call. That matters beyond fairness: a poll's time is
//! wall-clock time, so a quick call whose thread the machine stalled (a
//! hypervisor taking the virtual CPU, say) can count 10 ms in one poll and
//! become long; it then waits a tick or so behind a spinning pack, not
//! that pack's call to its deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A call that has run this long is a long call: long calls take turns in
/// the slow lane, so that however many spin, calls that finish quickly
/// always find a free worker thread.
pub const LONG_CALL: Duration = Duration::from_millis(10);

/// The two turns a long call runs under: its plugin's and the slow lane's.
type Turns = [OwnedSemaphorePermit; 2];

/// One call's share of the CPU (one per store: an instance, while it starts
/// and through its one call).
pub struct CpuTurn {
    /// The plugin's one turn for the slow lane (see [`super::CallQuota`]).
    plugin_turn: Arc<Semaphore>,
    /// The sandbox's slow lane: one turn fewer than the cores.
    lane: Arc<Semaphore>,
    state: Mutex<TurnState>,
}

#[derive(Default)]
struct TurnState {
    /// How long the call has run, over all its polls so far.
    ran: Duration,
    /// Its turns, while it is a long call in a poll.
    held: Option<Turns>,
    /// The last poll ended at the epoch's tick, not to wait.
    ticked: bool,
}

/// A call waiting for its turns.
type TurnWait = Pin<Box<dyn Future<Output = Turns> + Send>>;

impl CpuTurn {
    /// A call's share, under its plugin's `plugin_turn` and the sandbox's `lane`.
    pub fn new(plugin_turn: Arc<Semaphore>, lane: Arc<Semaphore>) -> CpuTurn {
        CpuTurn { plugin_turn, lane, state: Mutex::default() }
    }

    /// The epoch callback yields the call at a tick: it is ready to run on.
    pub fn tick(&self) {
        self.state.lock().unwrap().ticked = true;
    }

    /// How long the call has run so far.
    #[cfg(test)]
    pub fn ran(&self) -> Duration {
        self.state.lock().unwrap().ran
    }

    /// Runs `call`, counting the time it runs, and holding the turns of a
    /// long call only while it runs.
    pub async fn run<F: Future>(self: &Arc<Self>, call: F) -> F::Output {
        let mut call = std::pin::pin!(call);
        let mut waiting: Option<TurnWait> = None;
        std::future::poll_fn(|cx| self.poll(cx, call.as_mut(), &mut waiting)).await
    }

    fn poll<F: Future>(&self, cx: &mut Context<'_>, call: Pin<&mut F>, waiting: &mut Option<TurnWait>) -> Poll<F::Output> {
        if waiting.is_some() || self.needs_turns() {
            let wait = waiting.get_or_insert_with(|| self.wait_for_turns());
            let turns = ready!(wait.as_mut().poll(cx));
            *waiting = None;
            self.state.lock().unwrap().held = Some(turns);
        }
        let started = Instant::now();
        let polled = call.poll(cx);
        let ran = started.elapsed();
        let (given_back, ticked, long) = {
            let mut state = self.state.lock().unwrap();
            state.ran += ran;
            // Whether it waits, is done or was yielded at a tick: the turns
            // are for running.
            (state.held.take(), std::mem::take(&mut state.ticked), state.ran >= LONG_CALL)
        };
        drop(given_back);
        if polled.is_pending() && ticked && long {
            // Yielded at a tick, the call is ready to run on: it queues at
            // once, behind whoever was queued when it gave its turns back.
            // Queued only when next polled, it would come behind the calls
            // the turns it gave back woke, which tokio polls first (a task
            // woken by the running one takes the worker's next poll): one
            // pack's calls could hand the lane to each other for many ticks.
            // Turns it gets at once (no one else wanted them) go back at
            // once: it holds none while it is not running.
            let mut wait = self.wait_for_turns();
            if wait.as_mut().poll(cx).is_pending() {
                *waiting = Some(wait);
            }
        }
        polled
    }

    /// The wait for a long call's two turns: the plugin's own first, so
    /// each plugin has at most one call queued for the lane, and the lane's
    /// turns go round the plugins.
    fn wait_for_turns(&self) -> TurnWait {
        let (own, lane) = (self.plugin_turn.clone(), self.lane.clone());
        Box::pin(async move {
            let own = own.acquire_owned().await.expect("a quota never closes its semaphore");
            let lane = lane.acquire_owned().await.expect("the slow lane never closes");
            [own, lane]
        })
    }

    fn needs_turns(&self) -> bool {
        let state = self.state.lock().unwrap();
        state.ran >= LONG_CALL && state.held.is_none()
    }

    /// Whether the call holds its turns now.
    #[cfg(test)]
    pub fn holds_turns(&self) -> bool {
        self.state.lock().unwrap().held.is_some()
    }

    /// Counts `ran` as run (a test's stand-in for a long start).
    #[cfg(test)]
    pub fn count_as_run(&self, ran: Duration) {
        self.state.lock().unwrap().ran += ran;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future that runs for `ran` (spinning on the thread), then waits `waits` on a timer, `times` times.
    async fn spin_then_wait(turn: Arc<CpuTurn>, ran: Duration, waits: Duration, times: usize, lane: Arc<Semaphore>) -> Vec<(bool, usize)> {
        let mut seen = Vec::new();
        for _ in 0..times {
            let until = Instant::now() + ran;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            tokio::time::sleep(waits).await;
            // After each wait, as the call runs again: does it hold its turns, and how many are free?
            seen.push((turn.holds_turns(), lane.available_permits()));
        }
        seen
    }

    #[tokio::test]
    async fn a_call_that_only_waits_needs_no_turn() {
        // No turn is free at all: a call that needed one would never end.
        let (own, lane) = (Arc::new(Semaphore::new(0)), Arc::new(Semaphore::new(0)));
        let turn = Arc::new(CpuTurn::new(own, lane.clone()));
        let call = turn.run(spin_then_wait(turn.clone(), Duration::ZERO, Duration::from_millis(30), 3, lane));
        let seen = tokio::time::timeout(Duration::from_secs(10), call).await.expect("a call that only waits ends without a turn");
        assert_eq!(seen, [(false, 0), (false, 0), (false, 0)]);
        assert!(turn.ran() < LONG_CALL, "{:?}", turn.ran());
    }

    /// A wait does not start a call's count again: a call 1 ms short of
    /// long, quick as it starts, that runs 2 ms and waits, runs as a long
    /// call after its wait (else a pack whose calls spin and sleep by turns
    /// would never be long, and would take both worker threads from quick
    /// calls).
    #[tokio::test]
    async fn a_call_that_waits_keeps_what_it_ran() {
        let (own, lane) = (Arc::new(Semaphore::new(1)), Arc::new(Semaphore::new(1)));
        let turn = Arc::new(CpuTurn::new(own, lane.clone()));
        turn.count_as_run(LONG_CALL - Duration::from_millis(1));
        let call = async {
            let as_it_starts = (turn.holds_turns(), lane.available_permits());
            let after_each_wait = spin_then_wait(turn.clone(), Duration::from_millis(2), Duration::from_millis(5), 2, lane.clone()).await;
            (as_it_starts, after_each_wait)
        };
        let seen = turn.run(call).await;
        assert_eq!(seen, ((false, 1), vec![(true, 0), (true, 0)]));
    }

    #[tokio::test]
    async fn a_long_call_holds_its_turns_only_while_it_runs() {
        let (own, lane) = (Arc::new(Semaphore::new(1)), Arc::new(Semaphore::new(1)));
        let turn = Arc::new(CpuTurn::new(own.clone(), lane.clone()));
        turn.count_as_run(LONG_CALL);
        let watcher = {
            let (own, lane) = (own.clone(), lane.clone());
            // While the call waits on its timer, both turns are free for others.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(15)).await;
                (own.available_permits(), lane.available_permits())
            })
        };
        let seen = turn.run(spin_then_wait(turn.clone(), Duration::from_millis(1), Duration::from_millis(30), 2, lane.clone())).await;
        // It ran holding both (none free), and took them again after each wait.
        assert_eq!(seen, [(true, 0), (true, 0)]);
        assert_eq!(watcher.await.unwrap(), (1, 1));
        // Done (its last poll was Ready): it gave them back at once.
        assert_eq!((own.available_permits(), lane.available_permits()), (1, 1));
        assert!(!turn.holds_turns());
    }

    /// A call that spins, yielding at each tick as the epoch callback
    /// makes it, for `ticks` ticks of 1 ms.
    async fn spin_and_yield(turn: Arc<CpuTurn>, ticks: usize) {
        for _ in 0..ticks {
            let until = Instant::now() + Duration::from_millis(1);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            turn.tick();
            tokio::task::yield_now().await;
        }
    }

    /// The lane goes round by ticks: another plugin's long call, queued
    /// while a long call spins, runs at its next tick, not at its end.
    /// (That a call yielded at a tick queues at once, ahead of the tasks
    /// its release woke, showed with many calls of one pack:
    /// `a_pack_that_alternates_spinning_and_waiting_gets_no_more_than_its_share`
    /// failed without it while its deadline was 4 times the burn's time
    /// alone; at 8 times, not measured.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_call_gives_its_turns_at_each_tick_to_whoever_queued() {
        let lane = Arc::new(Semaphore::new(1));
        let spinner = Arc::new(CpuTurn::new(Arc::new(Semaphore::new(1)), lane.clone()));
        spinner.count_as_run(LONG_CALL);
        let spinning = tokio::spawn({
            let spinner = spinner.clone();
            async move { spinner.run(spin_and_yield(spinner.clone(), 400)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let other = Arc::new(CpuTurn::new(Arc::new(Semaphore::new(1)), lane.clone()));
        other.count_as_run(LONG_CALL);
        let started = Instant::now();
        other.run(spin_and_yield(other.clone(), 5)).await;
        let took = started.elapsed();
        // Five ticks of its own and about as many of the spinner's: far
        // from the spinner's 400.
        assert!(!spinning.is_finished(), "the spinner ended first: the other call took {took:?}");
        assert!(took < Duration::from_millis(200), "{took:?}");
        spinning.abort();
    }

    #[tokio::test]
    async fn a_long_call_that_waited_runs_again_only_once_its_turn_comes() {
        let (own, lane) = (Arc::new(Semaphore::new(1)), Arc::new(Semaphore::new(1)));
        let turn = Arc::new(CpuTurn::new(own.clone(), lane.clone()));
        turn.count_as_run(LONG_CALL);
        let call = tokio::spawn({
            let turn = turn.clone();
            async move { turn.run(async { tokio::time::sleep(Duration::from_millis(20)).await }).await }
        });
        // Another plugin's long call takes the lane while the first waits.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let other = lane.clone().try_acquire_owned().expect("the waiting call gave the lane back");
        tokio::time::sleep(Duration::from_millis(40)).await;
        // The timer is long done, but the call cannot run on without the lane.
        assert!(!call.is_finished());
        drop(other);
        call.await.unwrap();
    }
}
