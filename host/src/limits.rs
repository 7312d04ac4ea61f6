//! The limits every plugin runs under, with their defaults. Each can be set
//! for all plugins and overridden for one (see `config`).
//!
//! The sandbox enforces the limits on execution (fuel, deadline, memory,
//! captured output); `validate` enforces the limits on what a plugin hands
//! back (prompt count, reply size, message count, string size); the handler
//! enforces the limit on what a client hands in (argument size).

use std::time::Duration;

/// Limits on one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (roughly, WebAssembly instructions) one call may burn.
    pub fuel: u64,
    /// Wall-clock time one call may take, instantiation included.
    pub deadline: Duration,
    /// Bytes of linear memory one memory of an instance may grow to.
    pub memory_bytes: usize,
    /// Bytes of stdout and of stderr kept from one call, for the log.
    pub output_capture_bytes: usize,
    /// Prompts one plugin may declare.
    pub max_prompts: usize,
    /// Messages in one reply.
    pub max_messages: usize,
    /// Bytes of one string (or one image, clip or blob) in a reply.
    pub max_string_bytes: usize,
    /// Bytes of one whole reply: every text, URI, name and binary together.
    pub max_reply_bytes: usize,
    /// Bytes of the arguments of one request, names and values together.
    pub max_argument_bytes: usize,
    /// Bytes of all of one pack's prompt definitions' strings together.
    pub max_catalog_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 500_000_000,
            deadline: Duration::from_millis(1000),
            memory_bytes: 64 << 20,
            output_capture_bytes: 16 << 10,
            max_prompts: 1000,
            max_messages: 100,
            max_string_bytes: 4 << 20,
            max_reply_bytes: 8 << 20,
            max_argument_bytes: 1 << 20,
            max_catalog_bytes: 1 << 20,
        }
    }
}
