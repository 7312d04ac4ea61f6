//! The front door as properties: whatever a client sends, the stdio line
//! decoder and the HTTP request path (headers and body) never panic, answer
//! every message that carries an id exactly once, with that id, and bound
//! what they answer. Generated messages (deep nesting, huge numbers, bytes
//! that are not UTF-8, duplicate keys, ids of every JSON type, lines cut
//! short) and headers, seeded with the committed corpus in
//! `tests/wire-corpus`. The checks themselves are in
//! `tests/support/front_door.rs`, shared with the `stdio_lines`,
//! `http_body` and `http_request` fuzz targets (host/fuzz), the long run of
//! the same.

#[path = "support/front_door.rs"]
mod front_door;

use std::path::Path;

use front_door::{Carries, Expect, HttpRequest, item_id};
use prompt_host::transport::stdio::decode_lines;
use proptest::prelude::*;
use rmcp::model::RequestId;
use serde_json::{Value, json};

/// One line a client might send, and what it is known to carry.
#[derive(Debug, Clone)]
struct Line {
    bytes: Vec<u8>,
    /// The request id the line carries, where it can be read: the answer
    /// must carry it.
    id: Option<RequestId>,
    /// Whether the line carries an `id` member at all (usable or not): it
    /// must be answered.
    has_id: bool,
    /// Where the `id` member ends (0 if there is none), and whether it is
    /// the line's last member, the line whole: an overlong line's id is read
    /// from its first 4 KiB and from its end only.
    id_end: usize,
    id_last: bool,
    /// The line is cut inside its `id` member (`"id":1234` of
    /// `"id":12345`): the answer must carry no id at all.
    id_cut: bool,
}

impl Line {
    /// What the line must get over stdio with lines of at most `limit`
    /// bytes: past the limit an id is read from the line's first 4 KiB (the
    /// byte after it there too, to know the id ends) and from its end.
    fn expect(&self, limit: usize) -> Expect {
        let overlong = self.bytes.len() > limit;
        let in_head = self.id_end < (limit + 1).min(4096);
        let id = match &self.id {
            Some(id) if !overlong || in_head || self.id_last => Carries::Id(id.clone()),
            _ if self.id_cut => Carries::NoId,
            _ => Carries::Any,
        };
        Expect { answered: self.has_id, id }
    }
}

/// Checks the property for `lines` sent over stdio with a line limit of
/// `limit` bytes, in reads of `read` bytes, the last line with or without
/// its newline.
fn check_stdio(lines: &[Line], limit: usize, read: usize, last_newline: bool) {
    let mut input = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        input.extend_from_slice(&line.bytes);
        if index + 1 < lines.len() || last_newline {
            input.push(b'\n');
        }
    }
    let items = front_door::stdio_stream(limit, read, &input);
    // Line by line, the same decoder gives the same items: no line's fate
    // depends on how the reads cut the input, or on its neighbours.
    let mut one_by_one = Vec::new();
    for line in lines {
        one_by_one.extend(front_door::stdio_line(limit, &line.bytes, &line.expect(limit)));
    }
    let as_json =
        |items: &[prompt_host::transport::stdio::Incoming]| -> Vec<Value> { items.iter().map(|item| json!(format!("{item:?}"))).collect() };
    assert_eq!(as_json(&items), as_json(&one_by_one));
}

/// What a line must get as an HTTP request body.
fn check_http(line: &Line) {
    let id = line.id.clone().map_or(Carries::Any, Carries::Id);
    front_door::http_message(&line.bytes, &Expect { answered: line.has_id, id });
}

/// A JSON value as text, of the kinds that break parsers: deep nesting,
/// huge numbers, duplicate keys, escapes, bytes that are not UTF-8.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"{}".to_vec()),
        "[a-z ]{0,20}".prop_map(|text| format!("{{\"name\":\"{text}\"}}").into_bytes()),
        (0usize..400).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        (0usize..300).prop_map(|depth| format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)).into_bytes()),
        (100_000usize..200_000).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        Just(b"1e999999".to_vec()),
        "[0-9]{20,400}".prop_map(String::into_bytes),
        Just(b"-0.0e-99999".to_vec()),
        Just(br#"{"a":1,"a":2,"a":{"a":[]}}"#.to_vec()),
        Just(br#"{"s":"]}\"{[\\","t":"\u0000\ud800"}"#.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(|bytes| {
            let mut quoted = b"\"".to_vec();
            quoted.extend(bytes.into_iter().filter(|&byte| byte != b'"' && byte != b'\\' && byte != b'\n'));
            quoted.push(b'"');
            quoted
        }),
    ]
}

/// An id of every JSON type, as text, and the request id it is, if any.
fn id() -> impl Strategy<Value = (Vec<u8>, Option<RequestId>)> {
    prop_oneof![
        any::<i64>().prop_map(|n| (n.to_string().into_bytes(), Some(RequestId::Number(n)))),
        "[a-zA-Z0-9 _-]{0,12}".prop_map(|s| (format!("\"{s}\"").into_bytes(), Some(RequestId::String(s.into())))),
        Just((b"null".to_vec(), None)),
        Just((b"1.5".to_vec(), None)),
        Just((b"true".to_vec(), None)),
        Just((b"123456789012345678901234567890".to_vec(), None)),
        Just((b"{\"id\":1}".to_vec(), None)),
        Just((b"[1]".to_vec(), None)),
    ]
}

prop_compose! {
    /// A JSON-RPC message, perhaps with an id (first, in the middle or last),
    /// perhaps cut short.
    fn message()(
        method in prop_oneof![Just("ping"), Just("prompts/get"), Just("completion/complete"), Just("no/such"), Just("notifications/x")],
        params in proptest::option::of(value()),
        id in proptest::option::of(id()),
        position in 0usize..3,
        duplicate_method in any::<bool>(),
        cut in proptest::option::of(any::<proptest::sample::Index>()),
    ) -> Line {
        let mut members: Vec<Vec<u8>> = vec![b"\"jsonrpc\":\"2.0\"".to_vec(), format!("\"method\":\"{method}\"").into_bytes()];
        if duplicate_method {
            members.push(format!("\"method\":\"{method}\"").into_bytes());
        }
        if let Some(params) = params {
            members.push([b"\"params\":".as_slice(), &params].concat());
        }
        let has_id = id.is_some();
        let mut id_at = None;
        if let Some((text, _)) = &id {
            let at = match position { 0 => 0, 1 => 1, _ => members.len() };
            members.insert(at, [b"\"id\":".as_slice(), text].concat());
            id_at = Some(at);
        }
        let mut bytes = b"{".to_vec();
        let (mut id_start, mut id_end) = (0, 0);
        for (index, member) in members.iter().enumerate() {
            if index > 0 {
                bytes.push(b',');
            }
            if Some(index) == id_at {
                id_start = bytes.len();
            }
            bytes.extend_from_slice(member);
            if Some(index) == id_at {
                id_end = bytes.len();
            }
        }
        bytes.push(b'}');
        let id_is_string = id.as_ref().is_some_and(|(text, _)| text.starts_with(b"\""));
        let mut id_last = id_at.is_some() && id_at == Some(members.len() - 1);
        let mut id = id.and_then(|(_, id)| id);
        let mut has_id = has_id;
        let mut id_cut = false;
        if let Some(cut) = cut {
            let at = cut.index(bytes.len() + 1);
            // An id cut off, or cut through, is not there to read; nor is
            // a number the cut ends at, which may have gone on.
            let whole = at > id_end || (at == id_end && id_is_string);
            if has_id && !whole {
                id = None;
                has_id = false;
                // Cut past `"id":` and into the value.
                id_cut = at > id_start + 5;
            }
            id_last = false;
            bytes.truncate(at);
        }
        Line { bytes, id, has_id, id_end, id_last, id_cut }
    }
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        8 => message(),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(|mut bytes| {
            bytes.retain(|&byte| byte != b'\n');
            Line { bytes, id: None, has_id: false, id_end: 0, id_last: false, id_cut: false }
        }),
    ]
}

/// Headers a client might send, valid or not, each with its name: the
/// gate's checks (Host, Origin, the bearer token), rmcp's (Accept,
/// Content-Type, the protocol revision, the session), and ones no check
/// reads. `None` leaves the header out.
fn header() -> impl Strategy<Value = (&'static str, Option<String>)> {
    let long = "x".repeat(100 << 10);
    prop_oneof![
        prop_oneof![Just("localhost:1"), Just("127.0.0.1"), Just("example.com"), Just(""), Just("[::1]:8080")]
            .prop_map(|host| ("host", Some(host.to_string()))),
        Just(("host", Some(format!("{long}.example")))),
        Just(("host", None)),
        prop_oneof![Just("http://localhost:3000"), Just("https://evil.example"), Just("null"), Just("\u{7f}")]
            .prop_map(|origin| ("origin", Some(origin.to_string()))),
        Just(("origin", Some(format!("https://{long}")))),
        prop_oneof![Just("application/json"), Just("text/event-stream"), Just("*/*"), Just("text/html")]
            .prop_map(|accept| ("accept", Some(accept.to_string()))),
        Just(("accept", None)),
        prop_oneof![Just("text/plain"), Just("application/json; charset=utf-8"), Just("application/x-www-form-urlencoded")]
            .prop_map(|content_type| ("content-type", Some(content_type.to_string()))),
        Just(("content-type", None)),
        prop_oneof![Just("Bearer wrong"), Just("bearer front-door-token"), Just("Basic Zm9vOmJhcg=="), Just("Bearer")]
            .prop_map(|authorization| ("authorization", Some(authorization.to_string()))),
        Just(("authorization", None)),
        prop_oneof![Just("2025-03-26"), Just("1999-01-01"), Just("2026-07-28"), Just("")]
            .prop_map(|version| ("mcp-protocol-version", Some(version.to_string()))),
        Just(("mcp-protocol-version", None)),
        prop_oneof![Just("made-up"), Just("a.b.c"), Just("")].prop_map(|session| ("mcp-session-id", Some(session.to_string()))),
        Just(("mcp-session-id", None)),
        "[ -~]{0,40}".prop_map(|value| ("x-anything", Some(value))),
    ]
}

prop_compose! {
    /// A request to the front: a method, a path, headers changed from what
    /// a client of a session sends, a body.
    fn http_request()(
        method in prop_oneof![8 => Just("POST"), 1 => Just("GET"), 1 => Just("DELETE"), 1 => Just("PUT")],
        path in prop_oneof![8 => Just("/mcp"), 1 => Just("/healthz"), 1 => Just("/nowhere")],
        headers in proptest::collection::vec(header(), 0..4),
        line in line(),
    ) -> (HttpRequest, Line) {
        let mut request = HttpRequest::post(line.bytes.clone());
        request.method = method.to_string();
        request.path = path.to_string();
        for (name, value) in headers {
            request = match value {
                Some(value) => request.with(name, value),
                None => request.without(name),
            };
        }
        (request, line)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_line_with_an_id_is_answered_once_over_stdio(
        lines in proptest::collection::vec(line(), 1..6),
        limit in prop_oneof![Just(64usize), Just(4096), Just(1 << 20)],
        read in prop_oneof![Just(1usize), Just(7), Just(4096), Just(1 << 20)],
        last_newline in any::<bool>(),
    ) {
        check_stdio(&lines, limit, read, last_newline);
    }

    #[test]
    fn every_body_with_an_id_is_answered_once_over_http(line in line()) {
        check_http(&line);
    }

    /// Whatever the params (a value, a broken one, bytes), a request with a
    /// known id around them is answered once, with the id where it can be
    /// read; over stdio under each limit, and as an HTTP body.
    #[test]
    fn params_of_any_kind_do_not_lose_the_id(
        params in prop_oneof![value(), proptest::collection::vec(any::<u8>(), 0..64), line().prop_map(|line| line.bytes)],
    ) {
        for (limit, _) in front_door::STDIO_SHAPES {
            for (line, expect) in front_door::framed(&params) {
                front_door::stdio_line(limit, &line, &expect);
            }
        }
        front_door::http_input(&params);
    }
}

proptest! {
    // Each case is a few requests over loopback to the front this process
    // serves.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the headers and the body, a request to the front gets one
    /// response, bounded, and a request with an id one JSON-RPC answer with
    /// its id unless it is refused with a plain HTTP status.
    #[test]
    fn every_http_request_is_answered_once((request, line) in http_request()) {
        let id = line.id.clone().map_or(Carries::Any, Carries::Id);
        front_door::http_request(request.clone(), &Expect { answered: line.has_id, id });
        for (body, expect) in front_door::framed(&line.bytes) {
            front_door::http_request(HttpRequest { body, ..request.clone() }, &expect);
        }
    }
}

/// The committed corpus, `<<N*TEXT>>` expanded, with the id each message's
/// answer must carry.
fn corpus() -> Vec<(String, Line)> {
    let expected: &[(&str, Option<RequestId>)] = &[
        ("deep-get-200.json", Some(RequestId::Number(101))),
        ("deep-unknown-100000-objects.json", Some(RequestId::String("one-hundred-two".into()))),
        ("deep-context-1000000-id-last.json", Some(RequestId::Number(103))),
        ("deep-no-id.json", None),
        ("not-utf8.json", Some(RequestId::Number(104))),
        ("not-utf8-key.json", Some(RequestId::Number(111))),
        // Found by the http_request fuzz target: an id of 100,000 bytes
        // the transport reads from a body serde_json refuses, and echoes.
        ("not-utf8-key-long-id.json", Some(RequestId::String("}".repeat(100_000).into()))),
        ("truncated.json", Some(RequestId::Number(105))),
        ("duplicate-keys.json", Some(RequestId::Number(106))),
        ("duplicate-ids.json", Some(RequestId::String("again".into()))),
        ("id-null.json", None),
        ("id-null-notification.json", None),
        ("notification-method-with-id.json", Some(RequestId::Number(112))),
        ("id-fraction.json", None),
        ("id-huge.json", None),
        ("id-bool.json", None),
        ("id-object.json", None),
        ("id-array.json", None),
        ("id-escaped-key.json", Some(RequestId::String("escaped".into()))),
        ("huge-numbers.json", Some(RequestId::Number(108))),
        ("not-json.txt", None),
        ("method-not-string.json", Some(RequestId::Number(109))),
        ("string-with-brackets.json", Some(RequestId::Number(110))),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire-corpus");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != "README.md")
        .collect();
    names.sort();
    let mut listed: Vec<&str> = expected.iter().map(|(name, _)| *name).collect();
    listed.sort();
    assert_eq!(names, listed, "every corpus file has its expected id here");
    expected
        .iter()
        .map(|(name, id)| {
            let bytes = front_door::expand(&std::fs::read(dir.join(name)).unwrap());
            let has_id = !matches!(*name, "deep-no-id.json" | "not-json.txt");
            // The corpus is checked whole, under a limit it fits, and under
            // small ones with no claim on the id (`id_end` past any head).
            (name.to_string(), Line { bytes, id: id.clone(), has_id, id_end: usize::MAX, id_last: false, id_cut: false })
        })
        .collect()
}

#[test]
fn the_corpus_is_answered_with_the_ids_it_carries() {
    let corpus = corpus();
    for (name, line) in &corpus {
        let (items, _) = decode_lines(16 << 20, &[line.bytes.as_slice(), b"\n"].concat(), 4096).unwrap();
        assert_eq!(items.len(), 1, "{name}: {items:?}");
        assert_eq!(item_id(&items[0]), line.id, "{name}");
        // Over HTTP, as a body and as a request to the front: with its id,
        // or with none.
        let id = match &line.id {
            Some(id) => Carries::Id(id.clone()),
            None if line.has_id => Carries::NoId,
            None => Carries::Any,
        };
        let expect = Expect { answered: line.has_id, id };
        front_door::http_message(&line.bytes, &expect);
        let response = front_door::http_request(HttpRequest::post(line.bytes.clone()), &expect);
        if line.has_id {
            assert!(matches!(response.status, 200 | 400), "{name}: {response:?}");
        }
    }
    // And all of it as one stream, in reads of every size, with small limits too.
    let lines: Vec<Line> = corpus.into_iter().map(|(_, line)| line).collect();
    for (limit, read) in [(16 << 20, 1 << 16), (4096, 7), (100, 4096)] {
        check_stdio(&lines, limit, read, false);
    }
}

/// The fuzz targets' property holds for their seeds: each corpus file as
/// `stdio_lines`, `http_body` and `http_request` take it.
#[test]
fn the_fuzz_property_holds_for_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire-corpus");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "md") {
            continue;
        }
        let input = std::fs::read(&path).unwrap();
        front_door::stdio_input(&input);
        front_door::http_input(&input);
        front_door::http_request_input(&input);
    }
}
