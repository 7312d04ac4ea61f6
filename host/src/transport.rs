//! Transports: how MCP messages reach the handler. [`stdio`] is the default;
//! [`http`] serves Streamable HTTP; [`operations`] serves metrics and health;
//! [`malformed`] answers, on both, a message rmcp cannot parse; `front`
//! holds what the two HTTP fronts share, and `connections` the places of
//! their connections (caps per client network, shedding, write deadlines);
//! [`tokens`] holds the static bearer tokens, named or not.

pub mod authorization;
mod connections;
mod front;
pub(crate) mod hot_methods;
pub mod http;
pub mod malformed;
pub mod operations;
pub mod stdio;
pub mod tokens;

use std::time::Duration;

use tokio_util::task::TaskTracker;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended abnormally: {0}")]
    Run(String),
}

/// The default for `--shutdown-grace-ms`: how long calls in flight may take
/// to finish once the server is asked to stop.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The longest `--shutdown-grace-ms` accepted: one hour.
pub const MAX_SHUTDOWN_GRACE_MS: u64 = 3_600_000;

/// Waits, within `grace`, until the calls `calls` tracks have finished (the
/// transport has stopped taking new ones). Returns whether they all did; the
/// calls still running after the grace are abandoned, with a warning saying
/// how many.
async fn drain(calls: &TaskTracker, grace: Duration) -> bool {
    calls.close();
    if !calls.is_empty() {
        tracing::info!(calls = calls.len(), "waiting for calls in flight to finish");
    }
    if tokio::time::timeout(grace, calls.wait()).await.is_ok() {
        return true;
    }
    tracing::warn!(
        calls = calls.len(),
        grace_ms = grace.as_millis() as u64,
        "abandoning calls still running after the shutdown grace (--shutdown-grace-ms)"
    );
    false
}
