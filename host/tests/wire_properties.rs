//! The front door as properties: whatever a client sends, the stdio line
//! decoder and the HTTP request path never panic, answer every message that
//! carries an id exactly once, with that id, and bound what they answer.
//! Generated messages (deep nesting, huge numbers, bytes that are not UTF-8,
//! duplicate keys, ids of every JSON type, lines cut short), seeded with the
//! committed corpus in `tests/wire-corpus`. The `stdio_lines` and
//! `http_body` fuzz targets (host/fuzz) are the long run of the same.

use std::path::Path;

use proptest::prelude::*;
use prompt_host::transport::malformed::http_body;
use prompt_host::transport::stdio::{Incoming, decode_lines};
use rmcp::model::{JsonRpcMessage, RequestId};
use serde_json::{Value, json};

/// The most an answer to one message may take, besides its id: a reason of
/// at most 4 KiB, escaped once more by JSON, and the envelope.
const ANSWER_BYTES: usize = 2 * 4096 + 512;

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

/// What one decoded item says: the id it answers or carries, if any.
fn item_id(item: &Incoming) -> Option<RequestId> {
    match item {
        Incoming::Message(JsonRpcMessage::Request(request)) => Some(request.id.clone()),
        Incoming::Message(_) => None,
        Incoming::Refused(JsonRpcMessage::Error(error)) => error.id.clone(),
        Incoming::Refused(other) => panic!("the transport answered with no error: {other:?}"),
    }
}

fn answer_bytes(item: &Incoming) -> Option<usize> {
    match item {
        Incoming::Refused(answer) => Some(serde_json::to_vec(answer).unwrap().len()),
        Incoming::Message(_) => None,
    }
}

fn id_bytes(id: &Option<RequestId>) -> usize {
    id.as_ref().map_or(0, |id| serde_json::to_vec(id).unwrap().len())
}

/// Checks the property for `lines` sent over stdio with a line limit of
/// `limit` bytes, in reads of `read` bytes, the last line with or without
/// its newline.
fn check_stdio(lines: &[Line], limit: usize, read: usize, last_newline: bool) -> Result<(), TestCaseError> {
    let mut input = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        input.extend_from_slice(&line.bytes);
        if index + 1 < lines.len() || last_newline {
            input.push(b'\n');
        }
    }
    let (items, held) = decode_lines(limit, &input, read).map_err(|error| TestCaseError::fail(error.to_string()))?;
    prop_assert!(held <= limit + 1 + read, "{held} bytes held for a limit of {limit}");
    // Line by line, the same decoder gives the same items: no line's fate
    // depends on how the reads cut the input, or on its neighbours.
    let mut one_by_one = Vec::new();
    for line in lines {
        let mut alone = line.bytes.clone();
        alone.push(b'\n');
        let (items, _) = decode_lines(limit, &alone, alone.len()).unwrap();
        prop_assert!(items.len() <= 1, "one line gave {} items", items.len());
        if line.has_id {
            prop_assert_eq!(items.len(), 1, "a line with an id got no answer: {:?}", String::from_utf8_lossy(&line.bytes));
        }
        if let (Some(id), Some(item)) = (&line.id, items.first()) {
            let overlong = line.bytes.len() > limit;
            // Past the limit an id is read from the line's first 4 KiB (the
            // byte after it there too, to know the id ends) and from its end.
            let in_head = line.id_end < (limit + 1).min(4096);
            if !overlong || in_head || line.id_last {
                prop_assert_eq!(item_id(item), Some(id.clone()), "{:?}", String::from_utf8_lossy(&line.bytes));
            }
        }
        if line.id_cut && let Some(item) = items.first() {
            prop_assert_eq!(item_id(item), None, "a cut id was read: {:?}", String::from_utf8_lossy(&line.bytes));
        }
        for item in &items {
            if let Some(bytes) = answer_bytes(item) {
                prop_assert!(bytes <= ANSWER_BYTES + id_bytes(&item_id(item)), "an answer of {bytes} bytes");
            }
        }
        one_by_one.extend(items);
    }
    let as_json = |items: &[Incoming]| -> Vec<Value> { items.iter().map(|item| json!(format!("{item:?}"))).collect() };
    prop_assert_eq!(as_json(&items), as_json(&one_by_one));
    Ok(())
}

/// Checks the property for one HTTP request body.
fn check_http(line: &Line) -> Result<(), TestCaseError> {
    match http_body(&line.bytes) {
        Ok(message) => {
            if let Some(id) = &line.id
                && let JsonRpcMessage::Request(request) = &message
            {
                prop_assert_eq!(&request.id, id);
            }
        }
        Err(None) => return Err(TestCaseError::fail("a request was taken for a response and left unanswered")),
        Err(Some(answer)) => {
            let JsonRpcMessage::Error(error) = &answer else { return Err(TestCaseError::fail("an answer that is no error")) };
            if let Some(id) = &line.id {
                prop_assert_eq!(error.id.as_ref(), Some(id));
            }
            let bytes = serde_json::to_vec(&answer).unwrap().len();
            prop_assert!(bytes <= ANSWER_BYTES + id_bytes(&error.id), "an answer of {bytes} bytes");
        }
    }
    Ok(())
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_line_with_an_id_is_answered_once_over_stdio(
        lines in proptest::collection::vec(line(), 1..6),
        limit in prop_oneof![Just(64usize), Just(4096), Just(1 << 20)],
        read in prop_oneof![Just(1usize), Just(7), Just(4096), Just(1 << 20)],
        last_newline in any::<bool>(),
    ) {
        check_stdio(&lines, limit, read, last_newline)?;
    }

    #[test]
    fn every_body_with_an_id_is_answered_once_over_http(line in line()) {
        check_http(&line)?;
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
            let bytes = expand(&std::fs::read(dir.join(name)).unwrap());
            let has_id = !matches!(*name, "deep-no-id.json" | "not-json.txt");
            // The corpus is checked whole, under a limit it fits, and under
            // small ones with no claim on the id (`id_end` past any head).
            (name.to_string(), Line { bytes, id: id.clone(), has_id, id_end: usize::MAX, id_last: false, id_cut: false })
        })
        .collect()
}

/// `<<N*TEXT>>` replaced by TEXT repeated N times.
fn expand(template: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.windows(2).position(|window| window == b"<<") {
        out.extend_from_slice(&rest[..start]);
        let end = rest[start..].windows(2).position(|window| window == b">>").expect("an unclosed <<") + start;
        let inner = std::str::from_utf8(&rest[start + 2..end]).unwrap();
        let (count, text) = inner.split_once('*').unwrap();
        out.extend_from_slice(text.repeat(count.parse().unwrap()).as_bytes());
        rest = &rest[end + 2..];
    }
    out.extend_from_slice(rest);
    out
}

#[test]
fn the_corpus_is_answered_with_the_ids_it_carries() {
    let corpus = corpus();
    for (name, line) in &corpus {
        let (items, _) = decode_lines(16 << 20, &[line.bytes.as_slice(), b"\n"].concat(), 4096).unwrap();
        assert_eq!(items.len(), 1, "{name}: {items:?}");
        assert_eq!(item_id(&items[0]), line.id, "{name}");
        check_http(line).map_err(|error| format!("{name}: {error}")).unwrap();
        let answered = http_body(&line.bytes);
        if let Some(id) = &line.id {
            let carried = match &answered {
                Ok(JsonRpcMessage::Request(request)) => Some(request.id.clone()),
                Ok(_) => None,
                Err(Some(JsonRpcMessage::Error(error))) => error.id.clone(),
                Err(_) => None,
            };
            assert_eq!(carried.as_ref(), Some(id), "{name}");
        }
    }
    // And all of it as one stream, in reads of every size, with small limits too.
    let lines: Vec<Line> = corpus.into_iter().map(|(_, line)| line).collect();
    for (limit, read) in [(16 << 20, 1 << 16), (4096, 7), (100, 4096)] {
        check_stdio(&lines, limit, read, false).unwrap();
    }
}
