//! SIGHUP: what an operator sends to have the server read its files again
//! (the configuration and plugin directory, token files, the access log).
//! Each reader listens on its own; a reader's work reads files, so it runs
//! off the async workers. Where there are no such signals, none comes.

use tokio_util::sync::CancellationToken;

/// This process's SIGHUPs, or `None` where they cannot be listened to (then
/// [`next`] never completes).
#[cfg(unix)]
pub fn signals() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

/// No SIGHUPs where there are no Unix signals.
#[cfg(not(unix))]
pub fn signals() -> Option<()> {
    None
}

/// Completes at the next SIGHUP; never, if there will be none.
#[cfg(unix)]
pub async fn next(signals: &mut Option<tokio::signal::unix::Signal>) {
    if let Some(listening) = signals
        && listening.recv().await.is_some()
    {
        return;
    }
    // No listener, or it is gone for good: no more SIGHUPs (rather than a
    // loop that wakes at once, again and again).
    *signals = None;
    std::future::pending().await
}

/// Never completes where there are no Unix signals.
#[cfg(not(unix))]
pub async fn next(_: &mut Option<()>) {
    std::future::pending().await
}

/// Runs `work` on the blocking pool at every SIGHUP, one at a time, until
/// `until` is cancelled.
pub fn on_each(work: impl Fn() + Send + Sync + 'static, until: CancellationToken) {
    let work = std::sync::Arc::new(work);
    // Listened for from here on, not from the task's first poll: a SIGHUP
    // with no listener yet would end the process.
    let mut hangups = signals();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = next(&mut hangups) => {
                    let work = work.clone();
                    let _ = tokio::task::spawn_blocking(move || work()).await;
                }
                () = until.cancelled() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn with_no_signals_to_listen_to_the_next_hangup_never_comes() {
        let mut none = None;
        let waited = tokio::time::timeout(std::time::Duration::from_millis(100), next(&mut none)).await;
        assert!(waited.is_err(), "next completed with no signals to listen to");
    }

    /// A SIGHUP sent once `on_each` has returned, before its task first
    /// runs, is its work's: with no listener yet it would end the process
    /// (this test binary, here).
    #[cfg(unix)]
    #[tokio::test(flavor = "current_thread")]
    async fn a_sighup_as_soon_as_on_each_returns_runs_its_work() {
        let (done, worked) = std::sync::mpsc::channel();
        on_each(move || done.send(()).unwrap(), CancellationToken::new());
        // No await in between: the listening task has not run yet.
        let sent = std::process::Command::new("kill").args(["-HUP", &std::process::id().to_string()]).status().unwrap();
        assert!(sent.success());
        let waited = tokio::task::spawn_blocking(move || worked.recv_timeout(std::time::Duration::from_secs(10))).await.unwrap();
        assert_eq!(waited, Ok(()));
    }
}
