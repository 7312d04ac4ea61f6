//! The access log (`[server] access_log`, opt-in): one JSON line per
//! `prompts/get` and `completion/complete`, with the time, tenant, user,
//! method, prompt, plugin, outcome, duration and the fuel the pack burned.
//! It goes to the file the operator names (appended, created readable by
//! its owner only), never to stdout, and the file is opened again at SIGHUP,
//! so that logrotate can move it away.
//!
//! The user is a named token's name, an OAuth token's subject, or else the
//! keyed label of the HTTP session: never a token. A prompt name a client
//! sent is cut (as error messages quote it) and written as a JSON string, so
//! that no line can be split or forged; every other value is the host's or
//! the operator's.
//!
//! It depends on nothing else in the crate but `validate`'s cutting, so that
//! the handler can record into it.

use std::cell::Cell;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

tokio::task_local! {
    /// The fuel the calls of the request being answered burned.
    static FUEL: Cell<u64>;
}

/// Adds `fuel` to the request being answered, if it is being logged (the
/// sandbox's observer calls this, in the request's task).
pub fn call_fuel(fuel: u64) {
    let _ = FUEL.try_with(|total| total.set(total.get() + fuel));
}

/// Runs `request`, and returns its output and the fuel its calls burned.
pub async fn counting_fuel<T>(request: impl Future<Output = T>) -> (T, u64) {
    FUEL.scope(Cell::new(0), async {
        let output = request.await;
        (output, FUEL.with(Cell::get))
    })
    .await
}

/// One line of the access log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// RFC 3339, UTC, to the microsecond.
    pub time: String,
    pub tenant: String,
    /// Whose request: a named token's name, an OAuth subject, or the
    /// session's label; none over HTTP without a token or session.
    pub user: Option<String>,
    pub method: &'static str,
    /// The prompt as the client named it, cut at 256 bytes.
    pub prompt: String,
    /// The plugin serving it; none for a name no plugin serves.
    pub plugin: Option<String>,
    /// `ok`, `input-required`, or the failure's kind (as the metrics say it).
    pub outcome: &'static str,
    pub duration_ms: f64,
    pub fuel: u64,
}

impl Entry {
    /// The entry of a request that started at `started` and took `elapsed`;
    /// `prompt` as the client named it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        started: SystemTime,
        elapsed: Duration,
        tenant: &str,
        user: Option<String>,
        method: &'static str,
        prompt: &str,
        plugin: Option<&str>,
        outcome: &'static str,
        fuel: u64,
    ) -> Entry {
        let time = chrono::DateTime::<chrono::Utc>::from(started).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        Entry {
            time,
            tenant: tenant.to_string(),
            user,
            method,
            prompt: prompt_host_kernel::validate::cut_printable(prompt, MAX_PROMPT_BYTES),
            plugin: plugin.map(str::to_string),
            outcome,
            duration_ms: (elapsed.as_secs_f64() * 1e6).round() / 1e3,
            fuel,
        }
    }
}

/// The longest prompt name written, in bytes (a client's, when it names no
/// prompt served).
pub const MAX_PROMPT_BYTES: usize = 256;

/// The access log file.
pub struct AccessLog {
    path: PathBuf,
    file: Mutex<File>,
    /// When a failed write was last logged (seconds since the epoch).
    last_failure_logged: std::sync::atomic::AtomicU64,
}

impl AccessLog {
    /// Opens (creating it, mode 0600) the access log at `path`.
    pub fn open(path: &Path) -> Result<AccessLog, String> {
        Ok(AccessLog { path: path.to_path_buf(), file: Mutex::new(open(path)?), last_failure_logged: Default::default() })
    }

    /// Appends `entry`, as one line, in one write (the file is opened to
    /// append: lines are not interleaved). A failed write (a full disk) is
    /// logged once a minute at most, and the request is not failed for it.
    /// The write is synchronous, on the request's worker: a local disk's
    /// append of a line, not a network file system's.
    pub fn write(&self, entry: &Entry) {
        let mut line = serde_json::to_string(entry).expect("an entry serializes");
        line.push('\n');
        let written = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).write_all(line.as_bytes());
        if let Err(error) = written {
            use std::sync::atomic::Ordering;
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
            let last = self.last_failure_logged.load(Ordering::Relaxed);
            if now >= last + 60 && self.last_failure_logged.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                tracing::warn!(path = %self.path.display(), "cannot write the access log (said once a minute at most): {error}");
            }
        }
    }

    /// Opens the file again (at SIGHUP, after logrotate moved it): lines go
    /// to the file at the path from now on. If it cannot be opened, the old
    /// one is kept, and the log says why.
    pub fn reopen(&self) {
        match open(&self.path) {
            Ok(file) => {
                *self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = file;
                tracing::info!(path = %self.path.display(), "SIGHUP: the access log opened again");
            }
            Err(error) => tracing::error!("SIGHUP: the access log is kept where it was: {error}"),
        }
    }
}

fn open(path: &Path) -> Result<File, String> {
    prompt_host_files::open_append(path).map_err(|error| format!("cannot open the access log {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_one_json_line_with_the_clients_text_cut_and_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let log = AccessLog::open(&path).unwrap();
        let prompt = format!("evil\"}}\n{{\"forged\":1}}{}", "x".repeat(1000));
        let started = SystemTime::UNIX_EPOCH + Duration::from_micros(1_800_000_000_123_456);
        let entry =
            Entry::new(started, Duration::from_micros(1500), "acme", Some("alice".into()), "prompts/get", &prompt, None, "not-found", 0);
        log.write(&entry);
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written.lines().count(), 1, "{written}");
        let line: serde_json::Value = serde_json::from_str(written.trim_end()).unwrap();
        assert_eq!(line["time"], "2027-01-15T08:00:00.123456Z");
        assert_eq!(line["duration_ms"], 1.5);
        assert_eq!(line["user"], "alice");
        assert!(line["prompt"].as_str().unwrap().len() < 320, "{line}");
        assert!(line.get("forged").is_none());
        // A FIFO is refused at once, not waited on.
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(AccessLog::open(&fifo).err().unwrap().starts_with("cannot open the access log"));
        // Opened again after a move: the next line goes to a new file at the path.
        std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
        log.reopen();
        log.write(&entry);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    }
}
