//! `--log-format json`: each line as tracing-subscriber's JSON formatter
//! writes it, with the fields recorded with `?` (Debug) unquoted once.
//!
//! The host logs text a pack or a client controls with `?`, so that the
//! text log shows it quoted and escaped (`prompt="announce"`,
//! `reason="\u{202e}x"`). The JSON formatter writes such a value as the
//! JSON string of its Debug text, quotes included:
//! `"prompt":"\"announce\""`. Here a field value that is a Debug string
//! (`"` ... `"`) loses its outer quotes and its `\"` escapes, and nothing
//! else: every other escape stays as the text it is (`"\\u{202e}x"`), and a
//! backslash the text held stays doubled, so that no control or
//! bidirectional character reaches the log raw, and a pack's literal
//! `\u{202e}` reads differently from its real U+202E.

use std::io::Write;

/// The message of `event`, as a log line shows it: for the binary's filter
/// of rmcp's lines, and for tests that read what was logged in process.
pub fn event_message(event: &tracing::Event<'_>) -> String {
    struct Message(String);
    impl tracing::field::Visit for Message {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    let mut message = Message(String::new());
    event.record(&mut message);
    message.0
}

/// A writer of JSON log lines to stderr, each rewritten by [`unquote_line`].
pub struct JsonLogWriter;

impl Write for JsonLogWriter {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        // tracing-subscriber writes one whole line per write.
        let line = String::from_utf8_lossy(buffer);
        std::io::stderr().write_all(unquote_line(&line).as_bytes())?;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `line` (one JSON object) with every string value that is a Debug string
/// unquoted, and every other byte as it was: keys, their order, numbers.
/// A line that is not well-formed JSON text is left as it is.
pub fn unquote_line(line: &str) -> String {
    let mut rewritten = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('"') {
        rewritten.push_str(&rest[..start]);
        let Some(length) = string_token_length(&rest[start..]) else { return line.to_string() };
        let token = &rest[start..start + length];
        rest = &rest[start + length..];
        let is_key = rest.trim_start().starts_with(':');
        let unquoted = match is_key {
            true => None,
            false => serde_json::from_str::<String>(token).ok().and_then(|text| unquote(&text)),
        };
        match unquoted {
            Some(text) => rewritten.push_str(&serde_json::to_string(&text).expect("a string serializes")),
            None => rewritten.push_str(token),
        }
    }
    rewritten.push_str(rest);
    rewritten
}

/// The length of the JSON string token at the start of `text` (which
/// starts with `"`), its quotes included.
fn string_token_length(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, byte) in text.bytes().enumerate().skip(1) {
        match (escaped, byte) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(at + 1),
            _ => {}
        }
    }
    None
}

/// The text of a Debug string (`"` ... `"`), its `\"` made `"`, every other
/// escape (`\\` too) kept as written; None if `text` is not one.
fn unquote(text: &str) -> Option<String> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    let mut unquoted = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('"') => unquoted.push('"'),
                Some(other) => {
                    unquoted.push('\\');
                    unquoted.push(other);
                }
                None => return None,
            },
            // An unescaped quote inside: not one Debug string.
            '"' => return None,
            c => unquoted.push(c),
        }
    }
    Some(unquoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_strings_lose_one_level_of_quoting_and_keep_their_escapes() {
        let line = r#"{"level":"WARN","fields":{"message":"plugin call failed","prompt":"\"big-error\"","reason":"\"\\u{202e}x \\\"q\\\" C:\\\\d\"","count":3,"plain":"a \"b\""}}"#;
        let rewritten: serde_json::Value = serde_json::from_str(&unquote_line(line)).unwrap();
        assert_eq!(rewritten["fields"]["prompt"], "big-error");
        // The bidirectional override stays as the six characters of its escape.
        assert_eq!(rewritten["fields"]["reason"], r#"\u{202e}x "q" C:\\d"#);
        assert_eq!(rewritten["fields"]["count"], 3);
        // Not a Debug string (quotes inside, not around): left as it is.
        assert_eq!(rewritten["fields"]["plain"], "a \"b\"");
        assert_eq!(rewritten["fields"]["message"], "plugin call failed");
        assert_eq!(unquote_line("not json\n"), "not json\n");
        assert!(unquote_line(&format!("{line}\n")).ends_with("}\n"));
        // Keys and their order are kept.
        let ordered = r#"{"timestamp":"t","level":"INFO","fields":{"message":"m","prompt":"\"p\""},"target":"x"}"#;
        assert_eq!(unquote_line(ordered), r#"{"timestamp":"t","level":"INFO","fields":{"message":"m","prompt":"p"},"target":"x"}"#);
    }
}
