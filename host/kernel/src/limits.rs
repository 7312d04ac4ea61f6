//! The limits every plugin runs under, declared once: each limit's field,
//! config key, unit, default, allowed range and documentation are written in
//! the one `declare_limits!` list below, which generates [`Limits`], its
//! defaults, the [`LimitOverrides`] a config file or the command line sets,
//! their checks, and the limits table of the book's docs/security/limits.md (a test keeps that table
//! equal to [`security_table`]). Each limit can be set for all plugins and
//! overridden for one (see `config`).
//!
//! The sandbox enforces the limits on execution (fuel, deadline, memory,
//! captured output, concurrent calls); `validate` enforces the limits on what
//! a plugin hands back (prompt count, catalog size, reply size, message
//! count, string size, forms and their state); the handler enforces the limit
//! on what a client hands in (argument size, answers to forms included).

use std::time::Duration;

/// The unit a limit is written in, in the config file and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain number of things (fuel units, calls, prompts, messages).
    Count,
    /// Milliseconds, for durations.
    Milliseconds,
    /// Kibibytes (1024 bytes).
    KiB,
    /// Mebibytes (1024 KiB).
    MiB,
}

impl Unit {
    /// What one of this unit is in the unit `Limits` holds (bytes for sizes).
    fn scale(self) -> u64 {
        match self {
            Unit::Count | Unit::Milliseconds => 1,
            Unit::KiB => 1 << 10,
            Unit::MiB => 1 << 20,
        }
    }
}

/// A value `Limits` holds, made from a configured number in its unit.
trait Quantity {
    fn from_config(unit: Unit, value: u64) -> Self;
}

impl Quantity for u64 {
    fn from_config(unit: Unit, value: u64) -> Self {
        value.saturating_mul(unit.scale())
    }
}

impl Quantity for usize {
    fn from_config(unit: Unit, value: u64) -> Self {
        usize::try_from(value.saturating_mul(unit.scale())).unwrap_or(usize::MAX)
    }
}

impl Quantity for Duration {
    fn from_config(unit: Unit, value: u64) -> Self {
        debug_assert_eq!(unit, Unit::Milliseconds, "a duration is configured in milliseconds");
        Duration::from_millis(value)
    }
}

/// One limit as declared, for documentation.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    /// The key in `[limits]` and `[plugins.NAME.limits]`.
    pub key: &'static str,
    /// The unit the key is written in.
    pub unit: Unit,
    /// The default, in `unit`.
    pub default: u64,
    /// The smallest value the key accepts, in `unit`.
    pub min: u64,
    /// The largest value the key accepts, in `unit`.
    pub max: u64,
    /// What is limited, as the book's limits table says it.
    pub what: &'static str,
    /// What happens when the limit is hit, as the book's limits table says it.
    pub when_hit: &'static str,
}

/// The largest size any limit may be set to: 4 GiB, the most a 32-bit
/// WebAssembly memory can hold. Larger values would overflow once converted
/// to bytes, and no sandboxed call needs them.
pub const MAX_MIB: u64 = 4096;

/// The most plugin calls that may run at once, in all or in one plugin.
pub const MAX_CONCURRENT_CALLS: u64 = 4096;

/// The longest deadline: one day. A call that needs more is not a prompt,
/// and a larger one could overflow the clock arithmetic of a deadline.
const MAX_DEADLINE_MS: u64 = 24 * 60 * 60 * 1000;

macro_rules! declare_limits {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident: $type:ty = $default:literal $unit:ident as $key:ident, $min:literal..=$max:expr;
        table: $what:literal => $when_hit:literal;
    )+) => {
        /// Limits on one plugin.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Limits {
            $( $(#[doc = $doc])+ pub $field: $type, )+
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $( $field: Quantity::from_config(Unit::$unit, $default), )+ }
            }
        }

        /// Limits as a config file or the command line sets them, each
        /// optional, in the units people write.
        #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LimitOverrides {
            $(
                $(#[doc = $doc])+
                ///
                /// Written in the unit its key names (`_ms`, `_kib`, `_mib`;
                /// a count otherwise); `None` keeps the limit it overrides.
                pub $key: Option<u64>,
            )+
        }

        impl LimitOverrides {
            /// `base`, with the limits set here replacing its own.
            pub fn apply(&self, base: &Limits) -> Limits {
                Limits {
                    $( $field: self.$key.map_or_else(|| base.$field.clone(), |value| Quantity::from_config(Unit::$unit, value)), )+
                }
            }

            /// Refuses a value outside its limit's range (a limit of zero
            /// would refuse every call), naming `section` and the key.
            pub fn check(&self, section: &str) -> Result<(), String> {
                $( if let Some(value) = self.$key {
                    check_range(&format!("{section}.{}", stringify!($key)), value, $min, $max)?;
                } )+
                Ok(())
            }
        }

        /// Every limit, in the order of the book's limits table.
        pub const DECLARED: &[Declared] = &[
            $( Declared {
                key: stringify!($key),
                unit: Unit::$unit,
                default: $default,
                min: $min,
                max: $max,
                what: $what,
                when_hit: $when_hit,
            }, )+
        ];
    };
}

declare_limits! {
    /// Fuel (roughly, WebAssembly instructions) one call may burn.
    fuel: u64 = 500_000_000 Count as fuel, 1..=u64::MAX;
    table: "fuel (roughly, instructions) per call"
        => "-32603 `plugin 'acme' exceeded its fuel budget (500000000 units)`";

    /// Wall-clock time one call may take, instantiation included.
    deadline: Duration = 1000 Milliseconds as deadline_ms, 1..=MAX_DEADLINE_MS;
    table: "wall-clock time per call, including time blocked in a host call"
        => "-32603 `plugin 'acme' exceeded its 1000 ms deadline`";

    /// Bytes of linear memory one memory of an instance may grow to.
    memory_bytes: usize = 64 MiB as memory_mib, 1..=MAX_MIB;
    table: "linear memory per memory"
        => "-32603 `plugin 'acme' exceeded its 64 MiB memory limit`";

    /// Calls into one plugin that may run at once; more wait for a turn, as
    /// long as a call waits for a sandbox slot.
    concurrent_calls: usize = 16 Count as concurrent_calls, 1..=MAX_CONCURRENT_CALLS;
    table: "calls into one pack running at once (the others' calls never wait for them)"
        => "a call waits up to `queue_wait_ms`, then -32603 `plugin 'acme' could not be called: all 16 of its concurrent calls stayed busy for 2000 ms`";

    /// Prompts one plugin may declare.
    max_prompts: usize = 1000 Count as max_prompts, 1..=u64::MAX;
    table: "prompts one pack may declare"
        => "the pack is not loaded";

    /// Bytes of all of one plugin's prompt definitions' strings together
    /// (names, titles, descriptions, arguments, icons).
    max_catalog_bytes: usize = 1024 KiB as max_catalog_kib, 1..=MAX_MIB << 10;
    table: "bytes of the strings of all of one pack's prompt definitions together, **on the wire** (their JSON structure not counted)"
        => "the pack is not loaded";

    /// Skills one pack may carry (WIT 0.4).
    max_skills: usize = 64 Count as max_skills, 0..=4096;
    table: "skills one pack carries (0.4 packs)"
        => "the pack is not loaded";

    /// Files one skill may hold, its `SKILL.md` included.
    max_skill_files: usize = 256 Count as max_skill_files, 1..=4096;
    table: "files one skill holds, its `SKILL.md` included"
        => "the pack is not loaded";

    /// Static resources one pack may carry (WIT 0.4).
    max_resources: usize = 256 Count as max_resources, 0..=4096;
    table: "static resources one pack carries (0.4 packs)"
        => "the pack is not loaded";

    /// Bytes of one skill file or static resource, as a client receives it
    /// in `resources/read` (text JSON-escaped, binary base64-encoded).
    max_content_file_bytes: usize = 1024 KiB as max_content_file_kib, 1..=MAX_MIB << 10;
    table: "bytes of one skill file or static resource, **on the wire** (text JSON-escaped, binary base64)"
        => "the pack is not loaded";

    /// Bytes of all of one pack's skill files and static resources together,
    /// on the wire, their paths and URIs included. Also bounds what the host
    /// copies out of the pack to read them.
    max_content_bytes: usize = 8192 KiB as max_content_kib, 1..=MAX_MIB << 10;
    table: "bytes of all of one pack's skill files and static resources, their paths and URIs included, **on the wire**; \
        the host copies no more than this (and room for structure) out of the pack"
        => "the pack is not loaded";

    /// Bytes of one skill file's path or one static resource's URI.
    max_content_path_bytes: usize = 256 Count as max_content_path_bytes, 16..=4096;
    table: "bytes of one skill file's path or one static resource's URI"
        => "the pack is not loaded";

    /// Folders deep a skill file's path may go, the file included
    /// (`a/b/SKILL.md` is 3).
    max_content_path_depth: usize = 8 Count as max_content_path_depth, 2..=64;
    table: "segments of one skill file's path (`code-review/SKILL.md` is 2)"
        => "the pack is not loaded";

    /// Messages in one reply.
    max_messages: usize = 100 Count as max_messages, 1..=u64::MAX;
    table: "messages in one reply"
        => "-32603 `... returned an invalid reply ...: it holds 1000 messages, more than the limit of 100`";

    /// Bytes of one string (or one image, clip or blob) in a reply, as the
    /// client receives it (`validate::json_escaped_len`, `validate::base64_len`).
    max_string_bytes: usize = 4096 KiB as max_string_kib, 1..=MAX_MIB << 10;
    table: "bytes of one string (an annotation's last-modified too), image, clip or blob in a reply, or one completion value, **on the wire**"
        => "-32603, naming the message and field";

    /// Bytes of one whole `prompts/get` or `completion/complete` result, as
    /// the client receives it: the serialized JSON, measured exactly
    /// (`validate::wire_size`).
    max_reply_bytes: usize = 8192 KiB as max_reply_kib, 1..=MAX_MIB << 10;
    table: "bytes of one whole `prompts/get` or `completion/complete` result, its serialized JSON, **on the wire**"
        => "-32603 `... returned an invalid reply ...: it is 9000419 bytes on the wire, more than the limit of 8388608`";

    /// Bytes of the arguments of one request, names and values together.
    max_argument_bytes: usize = 1024 KiB as max_argument_kib, 1..=MAX_MIB << 10;
    table: "bytes of the arguments of one request"
        => "-32602, before the pack runs";

    /// Bytes of all the forms of one input-required answer together (keys,
    /// messages, field names, titles, descriptions, choices, defaults); and
    /// of the answers to the form the host builds for missing arguments
    /// (0.3.1), which travel sealed in later rounds.
    max_form_bytes: usize = 64 KiB as max_form_kib, 1..=MAX_MIB << 10;
    table: "bytes of the forms of one input-required answer (0.2 packs), **on the wire**; of the answers to the host's form for missing arguments (0.3.1 packs) carried into a later round, as JSON"
        => "-32603 `... returned an invalid reply ...: its forms are 70000 bytes, more than the limit of 65536`; for answers carried, -32602 `... are 70032 bytes, more than the limit of 65536 (max_form_kib) that rides along to the next round: pass them as arguments instead`";

    /// Bytes of the state a pack hands back with its forms, which the
    /// client carries (sealed) to the next round.
    max_input_state_bytes: usize = 16 KiB as max_input_state_kib, 0..=MAX_MIB << 10;
    table: "bytes of the state a pack returns with its forms (0.2 packs)"
        => "-32603, naming the limit; a client's `requestState` longer than the largest the host seals is refused -32602 before it is read";

    /// Files and folders one call may open in the folders granted to its
    /// pack (WIT 0.3 grants).
    grant_files_opened: usize = 256 Count as grant_files_opened, 1..=4096;
    table: "files and folders one call opens in its pack's granted folders"
        => "-32603 `plugin 'acme' used up its per-call budget of 256 files opened in granted folders (limits.grant_files_opened)...`";

    /// Bytes one call may read from the files of its granted folders.
    grant_read_bytes: usize = 4096 KiB as grant_read_kib, 1..=MAX_MIB << 10;
    table: "bytes one call reads from its pack's granted folders"
        => "-32603, naming `limits.grant_read_kib`";

    /// Directory entries one call may list in its granted folders.
    grant_dir_entries: usize = 10000 Count as grant_dir_entries, 1..=u64::MAX;
    table: "directory entries one call lists in its pack's granted folders"
        => "-32603, naming `limits.grant_dir_entries`";

    /// Time one call may spend in host I/O on its granted folders.
    grant_io_time: Duration = 500 Milliseconds as grant_io_ms, 1..=MAX_DEADLINE_MS;
    table: "time one call spends in host I/O on its pack's granted folders (the call's deadline still applies)"
        => "-32603, naming `limits.grant_io_ms`";

    /// HTTP requests one call may send to the origins granted to its pack.
    grant_http_requests: usize = 16 Count as grant_http_requests, 1..=1024;
    table: "HTTP requests one call sends to its pack's granted origins (each redirect is one)"
        => "-32603 `plugin 'acme' used up its per-call budget of 16 HTTP requests to granted origins (limits.grant_http_requests)...`";

    /// Bytes one call may send to its granted origins (request heads and bodies).
    grant_http_sent_bytes: usize = 1024 KiB as grant_http_sent_kib, 1..=MAX_MIB << 10;
    table: "bytes one call sends to its pack's granted origins (request lines, headers, bodies and trailers)"
        => "-32603, naming `limits.grant_http_sent_kib`";

    /// Bytes one call may receive from its granted origins (response heads and bodies).
    grant_http_received_bytes: usize = 4096 KiB as grant_http_received_kib, 1..=MAX_MIB << 10;
    table: "bytes one call receives from its pack's granted origins (status lines, headers, bodies and trailers), as the pack reads them"
        => "-32603, naming `limits.grant_http_received_kib`";

    /// Bytes of stdout and of stderr kept from one call, for the log.
    output_capture_bytes: usize = 16 KiB as output_capture_kib, 0..=MAX_MIB << 10;
    table: "captured stdout and stderr per stream per call"
        => "the rest is dropped; the log says how much";
}

fn check_range(key: &str, value: u64, min: u64, max: u64) -> Result<(), String> {
    if value < min {
        return Err(format!("{key} must be at least {min}"));
    }
    if value > max {
        return Err(format!("{key} must be at most {max}"));
    }
    Ok(())
}

/// The limits table of docs/security/limits.md, rendered from the declarations.
pub fn security_table() -> String {
    let mut table = String::from("| limit | config key | default | when hit |\n|---|---|---|---|\n");
    for limit in DECLARED {
        table += &format!("| {} | `{}` | {} | {} |\n", limit.what, limit.key, grouped(limit.default), limit.when_hit);
    }
    table
}

/// 1234567 as "1,234,567".
pub fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_declared_ones_in_the_units_limits_hold() {
        let limits = Limits::default();
        assert_eq!(limits.fuel, 500_000_000);
        assert_eq!(limits.deadline, Duration::from_millis(1000));
        assert_eq!(limits.memory_bytes, 64 << 20);
        assert_eq!(limits.output_capture_bytes, 16 << 10);
        assert_eq!(limits.max_catalog_bytes, 1024 << 10);
        assert_eq!(limits.concurrent_calls, 16);
        assert_eq!(limits.max_string_bytes, 4 << 20);
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let overrides = LimitOverrides { max_reply_kib: Some(3), concurrent_calls: Some(2), ..LimitOverrides::default() };
        let limits = overrides.apply(&Limits::default());
        assert_eq!(limits.max_reply_bytes, 3 << 10);
        assert_eq!(limits.concurrent_calls, 2);
        assert_eq!(Limits { max_reply_bytes: 8 << 20, concurrent_calls: 16, ..limits }, Limits::default());
    }

    #[test]
    fn values_out_of_range_are_named() {
        let zero = LimitOverrides { max_catalog_kib: Some(0), ..LimitOverrides::default() };
        assert_eq!(zero.check("limits"), Err("limits.max_catalog_kib must be at least 1".into()));
        let many = LimitOverrides { concurrent_calls: Some(4097), ..LimitOverrides::default() };
        assert_eq!(many.check("limits"), Err("limits.concurrent_calls must be at most 4096".into()));
        let nothing_kept = LimitOverrides { output_capture_kib: Some(0), ..LimitOverrides::default() };
        assert_eq!(nothing_kept.check("limits"), Ok(()));
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(500_000_000), "500,000,000");
    }

    /// The book's table of limits (docs/security/limits.md) is the one the
    /// declarations render, between its markers, so the document cannot
    /// drift from the code.
    #[test]
    fn the_book_states_the_declared_limits() {
        let document = include_str!("../../../docs/security/limits.md");
        let start = "<!-- limits:start: rendered by limits::security_table; a test checks it -->\n";
        let end = "<!-- limits:end -->";
        let from = document.find(start).expect("docs/security/limits.md lacks the limits:start marker") + start.len();
        let to = document[from..].find(end).expect("docs/security/limits.md lacks the limits:end marker") + from;
        assert_eq!(&document[from..to], security_table(), "paste this table into docs/security/limits.md:\n{}", security_table());
    }
}
