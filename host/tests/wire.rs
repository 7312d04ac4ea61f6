//! What a client receives is bounded as it receives it, a pack's text in an
//! error cannot act on a terminal, and every message with an id gets one
//! answer: over the real binary, with the `hostile_wire` fixture, over stdio
//! and over HTTP.

mod support;

use std::io::{Read, Write};

use serde_json::{Value, json};
use support::{Server, serve_plugins, spawn_http};

/// The default limits: 4 MiB per string, 8 MiB per reply.
const STRING_LIMIT: usize = 4 << 20;
const REPLY_LIMIT: usize = 8 << 20;

fn serve_hostile_wire() -> (tempfile::TempDir, Server) {
    serve_plugins(&["hostile_wire"], &[])
}

/// Sends a request and returns the line that answers it, as it came.
fn raw_answer(server: &mut Server, method: &str, params: Value) -> String {
    let id = server.send_request(method, params);
    loop {
        let line = server.next_line();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return line;
        }
    }
}

fn texts(server: &mut Server, count: usize, repeat: usize, unit: &str) -> String {
    let arguments = json!({ "count": count.to_string(), "repeat": repeat.to_string(), "unit": unit });
    raw_answer(server, "prompts/get", json!({ "name": "texts", "arguments": arguments }))
}

fn complete(server: &mut Server, prompt: &str, value: &str) -> String {
    let params = json!({ "ref": { "type": "ref/prompt", "name": prompt }, "argument": { "name": "count", "value": value } });
    raw_answer(server, "completion/complete", params)
}

fn error(line: &str) -> Value {
    serde_json::from_str::<Value>(line).unwrap()["error"].clone()
}

fn invalid_reply(prompt: &str, problem: &str) -> Value {
    json!({
        "code": -32603,
        "message": format!("plugin 'hostile_wire' returned an invalid reply for prompt '{prompt}': {problem}"),
        "data": { "plugin": "hostile_wire", "prompt": prompt, "failure": "invalid-reply" },
    })
}

#[test]
fn replies_are_bounded_in_the_bytes_the_client_receives() {
    let (_dir, mut server) = serve_hostile_wire();
    // Two texts of 3 MiB of U+0001: 6 MiB in the pack, 36 MiB in JSON.
    let line = texts(&mut server, 2, 3 << 20, "\u{1}");
    assert_eq!(error(&line), invalid_reply("texts", "message 0: text is 18874368 bytes, more than the limit of 4194304"));
    // Three texts of 1.5 MiB of quotes: each 3 MiB in JSON, 9 MiB in all,
    // and the result's structure around them.
    let line = texts(&mut server, 3, 3 << 19, "\"");
    let quotes = "\"".repeat(3 << 19);
    let sent = json!({ "messages": [text_message(&quotes, None), text_message(&quotes, None), text_message(&quotes, None)] });
    // Each message 51 bytes around its text, two commas, `{"messages":[]}`.
    assert_eq!(json_len(&sent), 9437184 + 3 * 51 + 2 + 15);
    assert_eq!(error(&line), invalid_reply("texts", &over_the_wire(json_len(&sent))));
    // 100 values of 60 KiB of U+0001: 6 MiB in the pack, 36 MiB in JSON.
    let line = complete(&mut server, "texts", &format!("100 {} \u{1}", 60 << 10));
    let values = vec!["\u{1}".repeat(60 << 10); 100];
    let sent = json!({ "completion": { "values": values, "hasMore": false } });
    // Each value's quotes, 99 commas, `{"completion":{"values":[],"hasMore":false}}`.
    assert_eq!(json_len(&sent), 36864000 + 100 * 2 + 99 + 44);
    assert_eq!(error(&line), invalid_reply("texts", &over_the_wire(json_len(&sent))));
    // An image, a clip and a blob of 2.5 MiB each: 3,495,256 bytes each in
    // base64, with their media types, the blob's URI and the structure.
    let arguments = json!({ "bytes": (5 << 19).to_string() });
    let line = raw_answer(&mut server, "prompts/get", json!({ "name": "media", "arguments": arguments }));
    let base64 = "A".repeat(3495256);
    let sent = json!({ "messages": [
        { "role": "user", "content": { "type": "image", "data": base64, "mimeType": "image/png" } },
        { "role": "user", "content": { "type": "audio", "data": base64, "mimeType": "audio/wav" } },
        { "role": "user", "content": { "type": "resource", "resource": {
            "uri": "file:///blob.bin", "mimeType": "application/octet-stream", "blob": base64 } } },
    ] });
    assert_eq!(error(&line), invalid_reply("media", &over_the_wire(json_len(&sent))));

    // At the limits, what arrives is the limit and the envelope around it.
    let line = texts(&mut server, 1, STRING_LIMIT / 6, "\u{1}");
    let text = &serde_json::from_str::<Value>(&line).unwrap()["result"]["messages"][0]["content"]["text"];
    assert_eq!(text.as_str().unwrap().len(), STRING_LIMIT / 6);
    assert!(line.len() <= STRING_LIMIT + 200, "{} bytes on the wire for a 4 MiB string limit", line.len());
    // Two texts of 2,097,116 quotes: 8,388,606 bytes as a result (4 x
    // 2,097,116 escaped, 118 of structure, 24 of `resultType`), two under
    // the limit; one more quote in each, and the result is two over it.
    let result_len = |line: &str| json_len(&serde_json::from_str::<Value>(line).unwrap()["result"]);
    let line = texts(&mut server, 2, 2097116, "\"");
    assert_eq!(result_len(&line) + RESULT_TYPE_BYTES, REPLY_LIMIT - 2);
    assert!(line.len() <= REPLY_LIMIT + 40, "{} bytes on the wire", line.len());
    let line = texts(&mut server, 2, 2097117, "\"");
    assert_eq!(error(&line), invalid_reply("texts", &over_the_wire(REPLY_LIMIT + 2 - RESULT_TYPE_BYTES)));
    // 100 values of 13,976 U+0001: 83,856 bytes each in JSON, 8,385,943 in all.
    let line = complete(&mut server, "texts", "100 13976 \u{1}");
    assert_eq!(result_len(&line), 8385943);
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["result"]["completion"]["values"].as_array().unwrap().len(), 100);
    let arguments = json!({ "bytes": (REPLY_LIMIT / 4 - 100).to_string() });
    let line = raw_answer(&mut server, "prompts/get", json!({ "name": "media", "arguments": arguments }));
    assert!(error(&line).is_null(), "{line:.300}");
    assert!(result_len(&line) <= REPLY_LIMIT, "{} bytes on the wire", line.len());
}

/// The bytes `value` takes as serde_json writes it, as the host sends it.
fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

/// The problem a reply over the limit on the wire is refused for, the
/// result the client receives being `bytes` bytes. The host measures the
/// result as a client of protocol 2026-07-28 receives it, with
/// `"resultType":"complete",` (24 bytes), which rmcp leaves out for the
/// older clients these tests are.
fn over_the_wire(bytes: usize) -> String {
    format!("it is {} bytes on the wire, more than the limit of {REPLY_LIMIT}", bytes + RESULT_TYPE_BYTES)
}

const RESULT_TYPE_BYTES: usize = r#""resultType":"complete","#.len();

/// A text message as MCP writes it, with the `annotations` the fixture's
/// `annotated` prompt gives it (an audience of four, `lastModified`).
fn text_message(text: &str, last_modified: Option<&str>) -> Value {
    let mut content = json!({ "type": "text", "text": text });
    if let Some(last_modified) = last_modified {
        content["annotations"] = json!({ "audience": ["user", "user", "user", "user"], "lastModified": last_modified });
    }
    json!({ "role": "user", "content": content })
}

#[test]
fn annotations_count_in_the_bytes_the_client_receives() {
    let (_dir, mut server) = serve_hostile_wire();
    let annotated = |server: &mut Server, count: usize, repeat: usize| {
        let arguments = json!({ "count": count.to_string(), "repeat": repeat.to_string(), "unit": "\u{1}" });
        raw_answer(server, "prompts/get", json!({ "name": "annotated", "arguments": arguments }))
    };
    // An empty text whose last-modified is 1 MiB of U+0001: 6 MiB in JSON,
    // over the string limit, named.
    let line = annotated(&mut server, 1, 1 << 20);
    assert_eq!(
        error(&line),
        invalid_reply("annotated", "message 0: annotations last modified is 6291456 bytes, more than the limit of 4194304")
    );
    // Three empty texts whose last-modified is 500,000 U+0001 each: each
    // within the string limit (3,000,000 bytes in JSON), 9 MB and their
    // audiences and structure in all, over the reply limit.
    let line = annotated(&mut server, 3, 500_000);
    let last_modified = "\u{1}".repeat(500_000);
    let message = text_message("", Some(&last_modified));
    let sent = json!({ "messages": [message.clone(), message.clone(), message] });
    // Each message 126 bytes around its last-modified, two commas, `{"messages":[]}`.
    assert_eq!(json_len(&sent), 9_000_000 + 3 * 126 + 2 + 15);
    assert_eq!(error(&line), invalid_reply("annotated", &over_the_wire(json_len(&sent))));
    // Under the limit, the reply arrives whole, annotations and all.
    let line = annotated(&mut server, 2, 500_000);
    let result = &serde_json::from_str::<Value>(&line).unwrap()["result"];
    let message = text_message("", Some(&last_modified));
    assert_eq!(result, &json!({ "messages": [message.clone(), message] }));
}

/// Where `panic!` is written in the fixture's source, the `nth` time, as
/// a Rust panic names it: `hostile-wire/src/lib.rs:LINE:COLUMN`.
fn panic_location(nth: usize) -> String {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/hostile-wire/src/lib.rs")).unwrap();
    let (line, text) = source.lines().enumerate().filter(|(_, text)| text.contains("=> panic!(")).nth(nth).unwrap();
    format!("hostile-wire/src/lib.rs:{}:{}", line + 1, text.find("panic!").unwrap() + 1)
}

/// The panic message the client receives: every control character but LF
/// and TAB escaped.
fn escaped_panic(nth: usize) -> String {
    format!(
        "plugin 'hostile_wire' panicked: boom\\u{{1b}}[31m red\\u{{0}} nul\\u{{7}} bel\n2026-11-24T00:00:00.000000Z  WARN \
         prompt_host::handler: all plugins trusted\\u{{d}}\\u{{1b}}[2K\ttab (at {})",
        panic_location(nth)
    )
}

#[test]
fn a_panic_reaches_the_client_escaped_and_the_log_once() {
    let (_dir, mut server) = serve_hostile_wire();
    let line = raw_answer(&mut server, "prompts/get", json!({ "name": "panic" }));
    assert_eq!(
        error(&line),
        json!({ "code": -32603, "message": escaped_panic(0), "data": { "plugin": "hostile_wire", "failure": "panic" } })
    );
    // The bytes on the wire: JSON's own escapes of the host's escapes, LF and TAB as JSON writes them.
    let wire = r#"panicked: boom\\u{1b}[31m red\\u{0} nul\\u{7} bel\n2026-11-24T00:00:00.000000Z  WARN prompt_host::handler: all plugins trusted\\u{d}\\u{1b}[2K\ttab (at "#;
    assert!(line.contains(wire), "{line}");
    assert!(!line.bytes().any(|byte| byte < 0x20), "a raw control byte on the wire: {line:?}");

    let line = complete(&mut server, "panic", "x");
    assert_eq!(
        error(&line),
        json!({ "code": -32603, "message": escaped_panic(1), "data": { "plugin": "hostile_wire", "failure": "panic" } })
    );

    let stderr = server.wait_for_stderr_count("plugin call failed", 2);
    // Each panic's text is logged once, with the failure, escaped: not again as the pack's stderr.
    assert_eq!(stderr.matches("all plugins trusted").count(), 2, "{stderr}");
    let logged = r#"boom\\u{1b}[31m red\\u{0} nul\\u{7} bel\n2026-11-24T00:00:00.000000Z  WARN prompt_host::handler: all plugins trusted\\u{d}\\u{1b}[2K\ttab (at "#;
    assert_eq!(stderr.matches(logged).count(), 2, "{stderr}");
    assert!(!stderr.contains(['\r', '\0', '\x07', '\x1b']), "raw control characters reached the log");
    assert!(!stderr.lines().any(|line| line.starts_with("2026-11-24T00:00:00")), "a forged line in the log:\n{stderr}");
}

fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// The messages serde_json cannot parse, each with the id it carries (or
/// none), and the code that answers it.
fn unparsable_messages() -> Vec<(Vec<u8>, Option<Value>, i64)> {
    let get = format!(
        r#"{{"jsonrpc":"2.0","id":101,"method":"prompts/get","params":{{"name":"code_review","arguments":{{"code":{}}}}}}}"#,
        nested_arrays(200)
    );
    let unknown = format!(
        r#"{{"jsonrpc":"2.0","id":"one-hundred-two","method":"no/such","params":{}1{}}}"#,
        "{\"a\":".repeat(100_000),
        "}".repeat(100_000)
    );
    // The id last, as the official TypeScript SDK writes it.
    let context = format!(
        r#"{{"jsonrpc":"2.0","method":"completion/complete","params":{{"ref":{{"type":"ref/prompt","name":"code_review"}},"argument":{{"name":"code","value":""}},"context":{{"arguments":{}}}}},"id":103}}"#,
        nested_arrays(1_000_000)
    );
    let mut not_utf8 = br#"{"jsonrpc":"2.0","id":104,"method":"prompts/get","params":{"name":"code_review","arguments":{"code":""#.to_vec();
    not_utf8.extend_from_slice(b"\xff\xfe\"}}}");
    let cut_short = br#"{"jsonrpc":"2.0","id":105,"method":"prompts/get","params":{"name":"code_"#.to_vec();
    let no_id = nested_arrays(300).into_bytes();
    vec![
        (get.into_bytes(), Some(json!(101)), -32700),
        (unknown.into_bytes(), Some(json!("one-hundred-two")), -32700),
        (context.into_bytes(), Some(json!(103)), -32700),
        (not_utf8, Some(json!(104)), -32700),
        (cut_short, Some(json!(105)), -32700),
        (br#"{"jsonrpc":"2.0","id":106,"method":7}"#.to_vec(), Some(json!(106)), -32600),
        (no_id, None, -32700),
    ]
}

fn code_and_id(answer: &Value) -> (i64, Option<Value>) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    (answer["error"]["code"].as_i64().unwrap(), answer.get("id").cloned())
}

#[test]
fn every_unparsable_line_gets_one_answer_with_its_id_over_stdio() {
    let mut server = Server::start(&[]);
    let messages = unparsable_messages();
    for (line, _, _) in &messages {
        server.send_bytes(line);
        server.send_bytes(b"\n");
    }
    let answers: Vec<(i64, Option<Value>)> =
        messages.iter().map(|_| code_and_id(&serde_json::from_str(&server.next_line()).unwrap())).collect();
    let expected: Vec<(i64, Option<Value>)> = messages.iter().map(|(_, id, code)| (*code, id.clone())).collect();
    assert_eq!(answers, expected);
    // No second answer: the next line answers the next request.
    assert_eq!(server.request("ping", json!({})), json!({ "jsonrpc": "2.0", "id": 2, "result": {} }));
    let stderr = server.wait_for_stderr_count("answered a message that could not be parsed", messages.len());
    assert_eq!(stderr.matches("answered a message that could not be parsed").count(), messages.len(), "{stderr}");
    // Logged bounded: 128 bytes of a message of 2 MB, escaped.
    assert!(stderr.lines().all(|line| line.len() < 2000), "an unbounded log line");
    assert!(stderr.contains(r#"start="{\"jsonrpc\":\"2.0\",\"id\":104,"#), "{stderr}");
}

#[test]
fn an_unknown_method_is_quoted_back_escaped_and_bounded() {
    let mut server = Server::start(&[]);
    let method = format!("x\u{1b}{}", "y".repeat(100_000));
    let error = server.error(&method, json!({}));
    // 4 KiB of the escaped name: "x", "\u{1b}" and 4,089 of the 100,000 "y"s.
    let shown = format!("x\\u{{1b}}{}... [cut by prompt-host: 95911 more bytes]", "y".repeat(4089));
    assert_eq!(error, json!({ "code": -32601, "message": format!("method not found: {shown}"), "data": { "method": shown } }));
}

#[test]
fn an_unparsable_line_is_logged_once_escaped_even_at_debug() {
    let mut server = Server::start_with_env(&[], &[("RUST_LOG", "debug")]);
    server.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"m\":\"FORGED\x1b[2K\rWARN\"}}\n");
    let answer: Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(
        answer,
        json!({ "jsonrpc": "2.0", "id": 5, "error": {
            "code": -32700,
            "message": "Parse error: control character (\\u0000-\\u001F) found while parsing a string at line 1 column 62",
        } })
    );
    let stderr = server.wait_for_stderr("answered a message that could not be parsed");
    assert_eq!(stderr.matches("FORGED").count(), 1, "{stderr}");
    assert!(stderr.contains(r#"FORGED\u{1b}[2K\rWARN"#), "{stderr}");
    assert!(!stderr.contains(['\r', '\x1b']), "raw control characters reached the log");
}

#[test]
fn a_last_line_cut_short_by_the_end_of_input_is_answered() {
    let mut server = Server::start(&[]);
    server.send_bytes(br#"{"jsonrpc":"2.0","id":107,"method":"pi"#);
    // The line has no newline: it ends when stdin does, and the answer is written before the server exits.
    assert_eq!(server.close_stdin(), Some(0));
    assert_eq!(code_and_id(&serde_json::from_str(&server.next_line()).unwrap()), (-32700, Some(json!(107))));
}

/// POSTs `body` to /mcp at `addr` as a client would (no session yet), and
/// returns the status and the body of the answer.
fn post(addr: std::net::SocketAddr, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|window| window == b"\r\n\r\n").expect("an HTTP response") + 4;
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = response[split..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunked(&body);
    }
    (status, body)
}

/// A chunked HTTP/1.1 body, its chunks joined.
fn dechunked(mut chunked: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = chunked.windows(2).position(|window| window == b"\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&chunked[..line_end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&chunked[line_end + 2..line_end + 2 + size]);
        chunked = &chunked[line_end + 2 + size + 2..];
    }
}

#[test]
fn every_unparsable_body_gets_one_answer_with_its_id_over_http() {
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &[]);
    let messages = unparsable_messages();
    for (body, id, code) in &messages {
        let (status, answer) = post(addr, body);
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&answer));
        let answer: Value =
            serde_json::from_slice(&answer).unwrap_or_else(|error| panic!("{error}: {:?}", String::from_utf8_lossy(&answer)));
        assert_eq!(code_and_id(&answer), (*code, id.clone()), "{answer}");
    }
    // A body that parses is rmcp's, as before: the session opens.
    let (status, _) = post(addr, support::HTTP_INITIALIZE.as_bytes());
    assert_eq!(status, 200);
    let log = support::wait_for_text(&stderr, "answered a message that could not be parsed", messages.len());
    assert_eq!(log.matches("answered a message that could not be parsed").count(), messages.len(), "{log}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A `ping` line whose first `head` bytes end inside its `"id":12345`
/// member, cut to `"id":1234`, followed by `rest`.
fn ping_cut_at_the_id(head: usize, rest: &str) -> Vec<u8> {
    let start = r#"{"jsonrpc":"2.0","method":"ping","params":{"p":""#;
    let pad = head - start.len() - r#""},"id":1234"#.len();
    format!(r#"{start}{}"}},"id":1234{rest}"#, "a".repeat(pad)).into_bytes()
}

#[test]
fn an_id_the_size_limit_cuts_is_not_read_short() {
    // 1 KiB lines: the server reads an overlong line's id from its first 1,025 bytes.
    let mut server = Server::start(&["--max-message-kib", "1"]);
    // The id is the line's last member: read from its end, whole.
    let last = ping_cut_at_the_id(1025, "5}");
    // The id is not last: no id can be read, and the answer has none.
    let not_last = ping_cut_at_the_id(1025, r#"5,"x":1}"#);
    // Two ids: the last counts, as for a line the server parses.
    let two = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"p":"{}"}},"id":2}}"#, "a".repeat(2000));
    for line in [&last, &not_last, two.as_bytes()] {
        server.send_bytes(line);
        server.send_bytes(b"\n");
    }
    let answers: Vec<(i64, Option<Value>)> = (0..3).map(|_| code_and_id(&serde_json::from_str(&server.next_line()).unwrap())).collect();
    assert_eq!(answers, [(-32600, Some(json!(12345))), (-32600, None), (-32600, Some(json!(2)))]);
    // No other answer: the next line answers the next request.
    let id = server.send_request("ping", json!({}));
    assert_eq!(serde_json::from_str::<Value>(&server.next_line()).unwrap(), json!({ "jsonrpc": "2.0", "id": id, "result": {} }));
}

#[test]
fn a_clients_malformed_response_is_not_answered() {
    let mut server = Server::start(&["--max-message-kib", "1"]);
    // A response whose error is no object, one whose result is nested past
    // serde_json's 128 levels, one over the 1 KiB limit: each carries id 1,
    // the id of the client's own `initialize`.
    let nested = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, nested_arrays(200));
    let overlong = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"p":"{}"}}}}"#, "a".repeat(5000));
    for line in [r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#, &nested, &overlong] {
        server.send_raw(line);
    }
    // None is answered: the next line answers the next request.
    let id = server.send_request("ping", json!({}));
    assert_eq!(serde_json::from_str::<Value>(&server.next_line()).unwrap(), json!({ "jsonrpc": "2.0", "id": id, "result": {} }));
    // Each is logged once.
    // stderr is read by a thread of its own: wait for every expected line,
    // not only the first kind (CI saw the refusal not yet read).
    let skipped = "skipped a response from the client that could not be parsed";
    let refused = "refused a message over the size limit";
    server.wait_for_stderr_count(refused, 1);
    let stderr = server.wait_for_stderr_count(skipped, 2);
    assert_eq!(stderr.matches(skipped).count(), 2, "{stderr}");
    assert!(!stderr.contains("answered a message"), "{stderr}");
    assert_eq!(stderr.matches(refused).count(), 1, "{stderr}");
}

#[test]
fn a_clients_names_are_quoted_back_escaped_and_bounded() {
    let mut server = Server::start(&[]);
    let name = format!("x\u{1b}{}", "y".repeat(100_000));
    // 4 KiB of the escaped name: "x", "\u{1b}" and 4,089 of the 100,000 "y"s.
    let shown = format!("x\\u{{1b}}{}... [cut by prompt-host: 95911 more bytes]", "y".repeat(4089));
    let error = server.error("prompts/get", json!({ "name": name }));
    assert_eq!(error, json!({ "code": -32602, "message": format!("unknown prompt '{shown}'"), "data": { "prompt": shown } }));
    let prompt = "code_review";
    let error = server.error("prompts/get", json!({ "name": prompt, "arguments": { name.clone(): 1 } }));
    assert_eq!(
        error,
        json!({
            "code": -32602,
            "message": format!("prompt '{prompt}': argument '{shown}' must be a string, not a number"),
            "data": { "prompt": prompt, "argument": shown },
        })
    );
}

#[test]
fn a_clients_malformed_response_gets_no_json_rpc_answer_over_http() {
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &[]);
    let (status, answer) = post(addr, br#"{"jsonrpc":"2.0","id":1,"error":"x"}"#);
    // rmcp's own refusal, a status and a line of text: no JSON-RPC answer carrying id 1.
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(status, 415, "{answer}");
    assert!(answer.starts_with("fail to deserialize request body"), "{answer}");
    let log = support::wait_for_text(&stderr, "skipped a response from the client that could not be parsed", 1);
    assert!(!log.contains("answered a message that could not be parsed"), "{log}");
    let _ = child.kill();
    let _ = child.wait();
}
