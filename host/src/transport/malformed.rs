//! A message from a client that rmcp cannot parse, answered: every message
//! that carries an id gets one answer, over stdio and over HTTP.
//!
//! serde_json refuses a message nested deeper than 128 levels, one that is
//! not UTF-8, one cut short; rmcp then drops it (stdio) or answers it with a
//! bare HTTP status, and the client waits for an answer that never comes.
//! Here such a message is answered with a JSON-RPC error: -32700 (parse
//! error) when it is not JSON, -32600 (invalid request) when it is JSON but
//! no JSON-RPC message, each with the message's id when [`find_id`] can read
//! it, with a null id otherwise. The message is logged once, its start
//! escaped and its length bounded, within a log budget.

use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use serde_json::error::Category;

use prompt_host_kernel::log_budget::{Admission, LogBudget, LogWindow};

/// What the top-level `id` member of a message says, found without parsing
/// the message.
#[derive(Debug, Clone, PartialEq)]
pub enum FoundId {
    /// The bytes do not start a JSON value, or break JSON's structure at the
    /// top level before an `id` member.
    NotJson,
    /// A top-level `id` member whose value is a request id.
    Id(RequestId),
    /// A top-level `id` member whose value is no request id (null, a
    /// fraction, an object): the message is a request all the same.
    UnusableId,
    /// JSON, but no top-level `id`, or bytes that end before it.
    NoId,
    /// A top-level `id` in a message with a top-level `result` or `error`
    /// and no `method`: a response from the client, which is never
    /// answered (its id is one of the server's, and an answer could collide
    /// with the client's own request of that id).
    Response,
}

impl FoundId {
    /// Whether the message carries an `id` member, usable or not: it is a
    /// request, and must be answered.
    pub fn is_request(&self) -> bool {
        matches!(self, FoundId::Id(_) | FoundId::UnusableId)
    }

    /// The id an answer carries.
    pub fn into_id(self) -> Option<RequestId> {
        match self {
            FoundId::Id(id) => Some(id),
            FoundId::NotJson | FoundId::UnusableId | FoundId::NoId | FoundId::Response => None,
        }
    }
}

/// The top-level `id` member of the JSON object `bytes` starts (the last,
/// if there are several, as serde_json reads duplicate keys), read in one
/// pass without recursion: nested values are skipped by counting brackets
/// outside strings, so a message nested a million levels deep costs one
/// pass over its bytes and no stack. `bytes` may be only the start of a
/// message: an id read before the bytes end, or break, counts, but not a
/// number or literal the end of the bytes may have cut short (`"id":1234`
/// may be the start of `"id":12345`). A UTF-8 byte order mark is allowed, as
/// rmcp allows it. An id in a message that has a top-level `result` or
/// `error` and no `method` (as far as the bytes go) is a response's:
/// [`FoundId::Response`].
pub fn find_id(bytes: &[u8]) -> FoundId {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut scan = Scan { bytes, at: 0, mismatched: false };
    match scan.next_non_space() {
        None => return FoundId::NoId,
        Some(b'{') => scan.at += 1,
        Some(b'[' | b'"' | b'-' | b'0'..=b'9') => return FoundId::NoId,
        Some(_) if starts_literal(&bytes[scan.at..]) => return FoundId::NoId,
        Some(_) => return FoundId::NotJson,
    }
    let mut found = FoundId::NoId;
    let (mut method, mut result_or_error) = (false, false);
    // What the bytes come to where they break JSON's structure.
    let broken = |found: FoundId| if found.is_request() { found } else { FoundId::NotJson };
    let found = loop {
        match scan.next_non_space() {
            None | Some(b'}') => break found,
            Some(b'"') => {}
            Some(_) => break broken(found),
        }
        let key_start = scan.at;
        let Some(key_end) = scan.skip_value() else { break found };
        let key = &bytes[key_start..key_end];
        let is_id = is_key(key, "id");
        method |= is_key(key, "method");
        result_or_error |= is_key(key, "result") || is_key(key, "error");
        match scan.next_non_space() {
            None => break found,
            Some(b':') => scan.at += 1,
            Some(_) => break broken(found),
        }
        if scan.next_non_space().is_none() {
            break found;
        }
        let value_start = scan.at;
        let Some(value_end) = scan.skip_value() else {
            break if scan.mismatched { broken(found) } else { found };
        };
        if is_id {
            found = match serde_json::from_slice::<RequestId>(&bytes[value_start..value_end]) {
                Ok(id) => FoundId::Id(id),
                Err(_) => FoundId::UnusableId,
            };
        }
        match scan.next_non_space() {
            None | Some(b'}') => break found,
            Some(b',') => scan.at += 1,
            Some(_) => break broken(found),
        }
    };
    match found {
        FoundId::Id(_) | FoundId::UnusableId if result_or_error && !method => FoundId::Response,
        found => found,
    }
}

/// Whether `bytes` start with `true`, `false` or `null`, or with the start
/// of one of them that the bytes cut short.
fn starts_literal(bytes: &[u8]) -> bool {
    [b"true".as_slice(), b"false", b"null"].iter().any(|literal| bytes.starts_with(literal) || literal.starts_with(bytes))
}

/// Whether a key, quotes included, is `name` (plain ASCII), however it is
/// escaped (`"\u0069d"` is `"id"` too).
fn is_key(key: &[u8], name: &str) -> bool {
    let Some(inner) = key.strip_prefix(b"\"").and_then(|key| key.strip_suffix(b"\"")) else { return false };
    match inner == name.as_bytes() {
        true => true,
        // The longest way to write the name: a \uXXXX escape per letter.
        false => {
            inner.contains(&b'\\') && inner.len() <= 6 * name.len() && serde_json::from_slice::<String>(key).is_ok_and(|key| key == name)
        }
    }
}

/// A position in bytes being scanned.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// A value closed a bracket with the wrong kind (`{"x":1]`): what
    /// follows is not JSON's structure, and no id read after it counts.
    mismatched: bool,
}

impl Scan<'_> {
    /// The next byte that is not JSON whitespace, left unread.
    fn next_non_space(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Skips the value that starts here (a string, an array or object with
    /// everything in it, or a scalar), and returns where it ends; `None`
    /// when the bytes end first or a bracket is closed by the other kind
    /// ([`Scan::mismatched`]). Brackets inside strings are not counted; the
    /// kinds of the open ones are kept one bit each (1 for `{`), so a value
    /// nested a million levels deep costs 128 KiB, no stack.
    fn skip_value(&mut self) -> Option<usize> {
        let mut depth: usize = 0;
        let mut objects: Vec<u64> = Vec::new();
        let mut in_string = false;
        while let Some(&byte) = self.bytes.get(self.at) {
            self.at += 1;
            if in_string {
                match byte {
                    b'\\' => self.at += 1,
                    b'"' => {
                        in_string = false;
                        if depth == 0 {
                            return Some(self.at);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    if depth.is_multiple_of(64) {
                        objects.push(0);
                    }
                    if byte == b'{' {
                        objects[depth / 64] |= 1 << (depth % 64);
                    }
                    depth += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    let bit = 1 << (depth % 64);
                    let was_object = objects[depth / 64] & bit != 0;
                    if was_object != (byte == b'}') {
                        self.mismatched = true;
                        return None;
                    }
                    objects[depth / 64] &= !bit;
                    if depth.is_multiple_of(64) {
                        objects.pop();
                    }
                    if depth == 0 {
                        return Some(self.at);
                    }
                }
                // The end of a scalar: the byte that ends it is not its own.
                b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => {
                    self.at -= 1;
                    return Some(self.at);
                }
                _ => {}
            }
        }
        // Anything the bytes end in is cut short, a scalar too: the bytes
        // ending in `1234` may be the start of `12345`.
        None
    }
}

/// The answer to `message`, which rmcp could not parse for `error`: -32700
/// when it is not JSON (serde_json's syntax errors, an early end, too deep a
/// nesting, bytes that are not UTF-8), -32600 when it is JSON but no JSON-RPC
/// message; with the message's id when it can be read. Logs the message
/// once, as [`log_skipped`] does.
pub fn answer(transport: &str, message: &[u8], error: &serde_json::Error) -> Option<ServerJsonRpcMessage> {
    let found = find_id(message);
    let is_response = found == FoundId::Response;
    let id = found.into_id();
    // serde_json's message names what it expected, and may quote the
    // client's text: escaped and bounded like any text from outside.
    let reason = prompt_host_kernel::validate::error_message(error.to_string());
    let (code, what) = match error.classify() {
        Category::Data => (ErrorCode::INVALID_REQUEST, "Invalid request"),
        Category::Syntax | Category::Eof | Category::Io => (ErrorCode::PARSE_ERROR, "Parse error"),
    };
    log_skipped(transport, message, id.as_ref(), &reason, !is_response);
    // A client's response is not answered: logged only.
    (!is_response).then(|| ServerJsonRpcMessage::error(ErrorData::new(code, format!("{what}: {reason}"), None), id))
}

/// What the HTTP transport makes of a request body: the message, as rmcp
/// reads it, or the answer to a body rmcp cannot read (`None` for a
/// client's response, which is not answered).
pub fn http_body(body: &[u8]) -> Result<ClientJsonRpcMessage, Option<ServerJsonRpcMessage>> {
    serde_json::from_slice::<ClientJsonRpcMessage>(body).map_err(|error| answer("http", body, &error))
}

/// How much of a skipped message's start the log shows.
const LOGGED_START_BYTES: usize = 128;

/// Skipped messages logged every 10 s; past that they are counted, and the
/// count is logged when the next window opens.
const SKIPPED_LOG: LogBudget = LogBudget { lines: 20, window: Duration::from_secs(10) };

static SKIPPED: LazyLock<Mutex<LogWindow>> = LazyLock::new(Mutex::default);

/// Logs a skipped message once (`answered` or, a client's response, not):
/// its length, its id, the reason (already
/// bounded) and its first `LOGGED_START_BYTES` bytes, escaped (a Debug
/// field); within `SKIPPED_LOG`, so that a client cannot flood the log.
pub fn log_skipped(transport: &str, message: &[u8], id: Option<&RequestId>, reason: &str, answered: bool) {
    let mut window = SKIPPED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dropped) = window.roll(SKIPPED_LOG) {
        tracing::warn!(dropped, "{dropped} unparsable messages were not logged in the last {} s", SKIPPED_LOG.window.as_secs());
    }
    match window.admit(SKIPPED_LOG) {
        Admission::Log => {
            let start = String::from_utf8_lossy(&message[..message.len().min(LOGGED_START_BYTES)]);
            let id = id.map(|id| prompt_host_kernel::validate::error_message(id.to_string()));
            if answered {
                tracing::warn!(transport, bytes = message.len(), id = ?id, reason = ?reason, start = ?start, "answered a message that could not be parsed");
            } else {
                tracing::warn!(transport, bytes = message.len(), id = ?id, reason = ?reason, start = ?start, "skipped a response from the client that could not be parsed");
            }
        }
        Admission::FirstDropped => tracing::warn!(
            "unparsable message log rate limit reached: at most {} every {} s are logged; the rest are counted",
            SKIPPED_LOG.lines,
            SKIPPED_LOG.window.as_secs()
        ),
        Admission::Dropped => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> FoundId {
        find_id(text.as_bytes())
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), FoundId::Id(RequestId::Number(7)));
        assert_eq!(
            id(r#" { "method" : "x" , "params":{"id":1,"a":[{"id":2}]}, "id" : "s" } "#),
            FoundId::Id(RequestId::String("s".into()))
        );
        assert_eq!(id(r#"{"x":"}\"]{[","id":3}"#), FoundId::Id(RequestId::Number(3)));
        assert_eq!(id(r#"{"\u0069d":4}"#), FoundId::Id(RequestId::Number(4)));
        assert_eq!(id("\u{feff}{\"id\":5}"), FoundId::Id(RequestId::Number(5)));
        // The last id counts, as serde_json reads duplicate keys.
        assert_eq!(id(r#"{"id":1,"id":2}"#), FoundId::Id(RequestId::Number(2)));
        assert_eq!(id(r#"{"id":1,"id":null}"#), FoundId::UnusableId);
        assert_eq!(id(r#"{"id":1,"x":2 "y"#), FoundId::Id(RequestId::Number(1)));
        // A number the bytes end in may be cut short: it is no id.
        assert_eq!(id(r#"{"id":1"#), FoundId::NoId);
        assert_eq!(id(r#"{"method":"x","id":1234"#), FoundId::NoId);
        assert_eq!(id(r#"{"method":"x","id":1234 "#), FoundId::Id(RequestId::Number(1234)));
        assert_eq!(id(r#"{"method":"x","id":"12"#), FoundId::NoId);
    }

    #[test]
    fn an_id_past_a_mismatched_bracket_is_not_read() {
        // serde_json stops at the `]`: neither 5 (nested) nor 9 (past it) is the id.
        assert_eq!(id(r#"{"p":{"x":1],"id":5},"id":9}"#), FoundId::NotJson);
        assert_eq!(id(r#"{"id":3,"p":[1,{"a":[]}}],"id":4}"#), FoundId::Id(RequestId::Number(3)));
        // Matched brackets of both kinds, past 64 levels, are skipped as before.
        let deep = format!(r#"{{"p":{}1{},"id":6}}"#, "[{\"a\":".repeat(100), "}]".repeat(100));
        assert_eq!(id(&deep), FoundId::Id(RequestId::Number(6)));
        let crossed = format!(r#"{{"p":{}1{}],"id":7}}"#, "[{\"a\":".repeat(100), "}]".repeat(99));
        assert_eq!(id(&crossed), FoundId::NotJson);
    }

    #[test]
    fn a_response_is_found_as_one() {
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#), FoundId::Response);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":1,"result":{"a":[[]]}}"#), FoundId::Response);
        assert_eq!(id(r#"{"\u0072esult":{},"id":null}"#), FoundId::Response);
        // A method makes it a request, whatever else it holds; neither a
        // method nor a result or error: a request all the same.
        assert_eq!(id(r#"{"id":2,"result":1,"method":"x"}"#), FoundId::Id(RequestId::Number(2)));
        assert_eq!(id(r#"{"id":3,"params":{"result":1}}"#), FoundId::Id(RequestId::Number(3)));
        assert!(matches!(http_body(br#"{"jsonrpc":"2.0","id":1,"error":"x"}"#), Err(None)));
    }

    #[test]
    fn an_id_past_deep_nesting_is_found_in_one_pass() {
        let deep = format!(r#"{{"params":{}{},"id":9}}"#, "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(find_id(deep.as_bytes()), FoundId::Id(RequestId::Number(9)));
        let open = format!(r#"{{"params":{},"id":9}}"#, "{\"a\":".repeat(100_000));
        assert_eq!(find_id(open.as_bytes()), FoundId::NoId);
    }

    #[test]
    fn no_usable_id() {
        for text in [r#"{"id":null}"#, r#"{"id":1.5}"#, r#"{"id":{"a":1}}"#, r#"{"id":true}"#] {
            assert_eq!(id(text), FoundId::UnusableId, "{text}");
        }
        for text in [r#"{"ids":1}"#, "{}", "[1]", "\"id\"", "", r#"{"id":"#, r#"{"id":"ab"#, "nu", "false"] {
            assert_eq!(id(text), FoundId::NoId, "{text}");
        }
        for text in ["not json", "nul!", "{id:1}", r#"{"a" 1,"id":2}"#, r#"{"a":1;"id":2}"#, "\u{1}"] {
            assert_eq!(id(text), FoundId::NotJson, "{text}");
        }
    }

    #[test]
    fn unparsable_messages_are_answered_with_their_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"d","method":"prompts/get","params":{{"name":"a","arguments":{{"x":{}{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let answer = serde_json::to_value(http_body(deep.as_bytes()).unwrap_err().unwrap()).unwrap();
        assert_eq!(answer["id"], "d");
        assert_eq!(answer["error"]["code"], -32700);
        assert_eq!(answer["error"]["message"], "Parse error: recursion limit exceeded at line 1 column 212");
        let answer = serde_json::to_value(http_body(br#"{"id":3,"x":1}"#).unwrap_err().unwrap()).unwrap();
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["error"]["code"], -32600);
        let answer = serde_json::to_value(http_body(b"{\"id\":4,\"method\":\"\xff\"}").unwrap_err().unwrap()).unwrap();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (serde_json::json!(4), serde_json::json!(-32700)));
        let answer = serde_json::to_value(http_body(b"[[[").unwrap_err().unwrap()).unwrap();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (serde_json::Value::Null, serde_json::json!(-32700)));
    }
}
