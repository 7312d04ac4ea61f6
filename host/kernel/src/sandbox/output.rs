//! What a pack printed: its panic message read back, and its output logged
//! within a rate limit.

use std::time::Duration;

use crate::log_budget::{Admission, LogBudget, LogWindow};

/// Extracts the message of a Rust panic from what a guest wrote to stderr:
/// "thread '<unnamed>' panicked at src/lib.rs:9:5:\nboom\nnote: ..." gives
/// "boom (at src/lib.rs:9:5)".
pub(super) fn panic_message(stderr: &str) -> Option<String> {
    let line = panic_message_start(stderr)?;
    let rest = &stderr[line + stderr[line..].find(PANICKED_AT)? + PANICKED_AT.len()..];
    let (location, message) = rest.split_once(":\n")?;
    let message: Vec<&str> = message.lines().take_while(|line| !line.starts_with("note: ")).collect();
    Some(format!("{} (at {location})", message.join("\n").trim()))
}

const PANICKED_AT: &str = "panicked at ";

/// Where the line of a Rust panic starts in what a guest wrote to stderr.
/// The last such line counts: the panic ends the call, so it is the last
/// thing the pack wrote, and a pack that printed "panicked at " earlier
/// neither hides what it wrote after nor forges the message.
pub(super) fn panic_message_start(stderr: &str) -> Option<usize> {
    let mut start = stderr.len();
    loop {
        let line = stderr[..start].trim_end_matches('\n').rfind('\n').map_or(0, |newline| newline + 1);
        let text = &stderr[line..start];
        if text.starts_with("thread '") && text.contains(PANICKED_AT) {
            return Some(line);
        }
        if line == 0 {
            return None;
        }
        start = line - 1;
    }
}

/// Lines of one plugin's output logged every 10 s; past that they are
/// counted, and the count is logged when the next window opens.
const OUTPUT_LOG: LogBudget = LogBudget { lines: 50, window: Duration::from_secs(10) };

/// One line of a plugin's output in the log: a line it wrote, or the note
/// that the rest of what it wrote was not kept.
enum LogLine<'a> {
    Output(&'a str),
    Cut(usize),
}

/// How many lines of each plugin's output the log has taken in the current
/// window: a pack that prints on every call cannot flood the log.
#[derive(Default)]
pub(super) struct OutputLog {
    by_plugin: std::sync::Mutex<std::collections::HashMap<String, LogWindow>>,
}

impl OutputLog {
    /// Logs what a plugin wrote to one stream, line by line under its name,
    /// within the plugin's rate limit. Each line is a field, escaped (`?`),
    /// so that a pack cannot forge a line of the host's log with a newline,
    /// a carriage return or an escape sequence.
    pub(super) fn log(&self, plugin: &str, stream: &str, text: &str, dropped_bytes: usize) {
        let lines = text.split('\n').filter(|line| !line.trim().is_empty());
        if dropped_bytes == 0 && text.trim().is_empty() {
            return;
        }
        let mut by_plugin = self.by_plugin.lock().unwrap();
        let window = by_plugin.entry(plugin.to_string()).or_default();
        if let Some(dropped) = window.roll(OUTPUT_LOG) {
            tracing::warn!(
                plugin,
                dropped_lines = dropped,
                "{dropped} lines of plugin output were not logged in the last {} s (at most {} are)",
                OUTPUT_LOG.window.as_secs(),
                OUTPUT_LOG.lines
            );
        }
        let cut = (dropped_bytes > 0).then_some(LogLine::Cut(dropped_bytes));
        for line in lines.map(LogLine::Output).chain(cut) {
            match window.admit(OUTPUT_LOG) {
                Admission::Log => match line {
                    LogLine::Output(line) => tracing::info!(plugin, stream, output = ?line, "plugin output"),
                    LogLine::Cut(bytes) => tracing::info!(plugin, stream, "... {bytes} more bytes not kept"),
                },
                Admission::FirstDropped => tracing::warn!(
                    plugin,
                    "plugin output rate limit reached: at most {} lines every {} s are logged; the rest are counted",
                    OUTPUT_LOG.lines,
                    OUTPUT_LOG.window.as_secs()
                ),
                Admission::Dropped => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_reads_rust_panic_output() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:9:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom (at src/lib.rs:9:5)"));
    }

    #[test]
    fn the_last_panic_line_counts() {
        let stderr = "printed: thread 'x' panicked at fake.rs:1:1:\nforged\nthread 'x' panicked at fake.rs:1:1:\nforged too\n\
                      more output\nthread '<unnamed>' panicked at src/lib.rs:9:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom (at src/lib.rs:9:5)"));
        let start = panic_message_start(stderr).unwrap();
        assert_eq!(
            &stderr[..start],
            "printed: thread 'x' panicked at fake.rs:1:1:\nforged\nthread 'x' panicked at fake.rs:1:1:\nforged too\nmore output\n"
        );
        assert_eq!(panic_message_start("no panic\n\n"), None);
    }

    #[test]
    fn panic_message_is_none_without_a_panic() {
        assert_eq!(panic_message("memory allocation of 5 bytes failed\n"), None);
    }
}
