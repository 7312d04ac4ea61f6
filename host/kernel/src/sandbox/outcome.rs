//! What a call into a pack ends in: why it failed ([`CallFailure`], each a
//! sentence about the plugin), why a pack could not be prepared
//! ([`PrepareError`]), and what a call used ([`CallUsage`]).

use std::time::Duration;

use crate::grants::{GrantRefusal, IoUsage};

/// Why a call into a plugin failed. The messages complete a sentence that
/// starts with the plugin's name: "plugin 'acme' exceeded its fuel budget".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallFailure {
    /// The call burned all its fuel.
    #[error("exceeded its fuel budget ({budget} units)")]
    OutOfFuel {
        /// The plugin's fuel limit.
        budget: u64,
    },
    /// The call ran past its deadline, in WebAssembly code or blocked in a
    /// host call.
    #[error("exceeded its {} ms deadline", deadline.as_millis())]
    DeadlineExceeded {
        /// The plugin's deadline.
        deadline: Duration,
    },
    /// A memory of the instance tried to grow past the plugin's memory limit.
    #[error("exceeded its {} MiB memory limit", limit_bytes >> 20)]
    MemoryLimit {
        /// The plugin's memory limit, in bytes.
        limit_bytes: usize,
    },
    /// The call used more WebAssembly stack than the sandbox allows.
    #[error("overflowed its {} KiB stack", limit_bytes >> 10)]
    StackOverflow {
        /// The sandbox's WebAssembly stack limit, in bytes.
        limit_bytes: usize,
    },
    /// The call trapped after the pack wrote a Rust panic message to stderr.
    #[error("panicked: {message}")]
    Panic {
        /// The panic's message and its location, as the pack wrote them.
        message: String,
    },
    /// The call trapped for any other reason.
    #[error("trapped: {message}")]
    Trap {
        /// The trap, or the root cause of the error, as wasmtime words it.
        message: String,
    },
    /// No call slot came free within the queue wait: the plugin's quota or
    /// the sandbox's slots stayed full.
    #[error("could not be called: all {limit} {scope} stayed busy for {} ms", waited.as_millis())]
    Busy {
        /// How many calls the full scope allows at once.
        limit: usize,
        /// How long the call waited for a slot.
        waited: Duration,
        /// Whose slots were full.
        scope: BusyScope,
    },
    /// The call used a folder its pack was not granted, or went past a
    /// budget of what it was granted.
    #[error("{0}")]
    Grant(GrantRefusal),
    /// The call's answer, or a call it made to the host, was larger than
    /// the host copies out of one call.
    #[error("returned more than the {budget} bytes the host copies out of one call")]
    CopyBudget {
        /// The most the host copies out of the instance in one call, in bytes.
        budget: usize,
    },
}

/// Whose calls were all busy: the plugin's own (its quota), or every
/// plugin's (the sandbox's slots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyScope {
    /// The plugin's own quota of concurrent calls.
    Plugin,
    /// The sandbox's slots, shared by every plugin.
    Sandbox,
}

impl std::fmt::Display for BusyScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BusyScope::Plugin => "of its concurrent calls",
            BusyScope::Sandbox => "sandbox slots",
        })
    }
}

impl CallFailure {
    /// A short, stable name for the kind of failure, for structured error data.
    pub fn kind(&self) -> &'static str {
        match self {
            CallFailure::OutOfFuel { .. } => "fuel",
            CallFailure::DeadlineExceeded { .. } => "deadline",
            CallFailure::MemoryLimit { .. } => "memory",
            CallFailure::StackOverflow { .. } => "stack",
            CallFailure::Panic { .. } => "panic",
            CallFailure::Trap { .. } => "trap",
            CallFailure::Busy { .. } => "busy",
            CallFailure::CopyBudget { .. } => "invalid-reply",
            CallFailure::Grant(GrantRefusal::Budget { .. }) => "grant-budget",
            CallFailure::Grant(GrantRefusal::NotGranted { .. } | GrantRefusal::OriginNotGranted { .. }) => "not-granted",
            CallFailure::Grant(GrantRefusal::AddressRefused { .. }) => "address-refused",
        }
    }
}

/// Why a component could not be prepared for calls.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The engine could not be created, or the component's bytes could not
    /// be compiled.
    #[error("{0}")]
    Compile(String),
    /// WASI could not be added to the linker, or the component could not be
    /// linked against it or does not export the prompt-provider interface
    /// of its version.
    #[error("{0}")]
    Link(String),
}

/// What one call cost, from instantiation to its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallUsage {
    /// What it used of its pack's granted folders.
    pub io: IoUsage,
    /// Fuel burned.
    pub fuel: u64,
    /// The size its largest linear memory reached: what the memory limit,
    /// which applies to each memory, is measured against.
    pub peak_memory_bytes: usize,
    /// Wall-clock time.
    pub elapsed: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_sentences_about_the_plugin() {
        let fuel = CallFailure::OutOfFuel { budget: 500_000_000 };
        assert_eq!(fuel.to_string(), "exceeded its fuel budget (500000000 units)");
        let deadline = CallFailure::DeadlineExceeded { deadline: Duration::from_millis(1000) };
        assert_eq!(deadline.to_string(), "exceeded its 1000 ms deadline");
        let memory = CallFailure::MemoryLimit { limit_bytes: 64 << 20 };
        assert_eq!(memory.to_string(), "exceeded its 64 MiB memory limit");
        let waited = Duration::from_millis(2000);
        let own = CallFailure::Busy { limit: 16, waited, scope: BusyScope::Plugin };
        assert_eq!(own.to_string(), "could not be called: all 16 of its concurrent calls stayed busy for 2000 ms");
        let shared = CallFailure::Busy { limit: 64, waited, scope: BusyScope::Sandbox };
        assert_eq!(shared.to_string(), "could not be called: all 64 sandbox slots stayed busy for 2000 ms");
    }
}
