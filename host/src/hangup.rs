//! SIGHUP: what an operator sends to have the server read its files again
//! (the configuration and plugin directory, token files, the access log).
//! Each reader listens on its own; a reader's work reads files, so it runs
//! off the async workers.

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// This process's SIGHUPs, or `None` where they cannot be listened to (then
/// [`next`] never completes).
pub fn signals() -> Option<Signal> {
    signal(SignalKind::hangup()).ok()
}

/// Completes at the next SIGHUP.
pub async fn next(signals: &mut Option<Signal>) {
    match signals {
        Some(signals) => {
            signals.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Runs `work` on the blocking pool at every SIGHUP, one at a time, until
/// `until` is cancelled.
pub fn on_each(work: impl Fn() + Send + Sync + 'static, until: CancellationToken) {
    let work = std::sync::Arc::new(work);
    tokio::spawn(async move {
        let mut hangups = signals();
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
