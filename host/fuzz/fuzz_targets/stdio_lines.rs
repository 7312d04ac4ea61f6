//! The stdio line decoder takes bytes straight from a client: whatever they
//! are and however the reads cut them, it must never panic, must give each
//! line at most one item (a message for rmcp, or the transport's own
//! answer), must answer a line that parses as a request with the request's
//! id, must bound every answer, and must hold no more than a line's limit
//! and one read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prompt_host::transport::stdio::{Incoming, decode_lines};
use rmcp::model::{JsonRpcMessage, RequestId};

/// An answer's reason is at most 4 KiB, escaped once more by JSON.
const ANSWER_BYTES: usize = 2 * 4096 + 512;

fuzz_target!(|data: &[u8]| {
    let Some((&[limit, read], input)) = data.split_first_chunk::<2>() else { return };
    let limit = 16 + usize::from(limit) * 64;
    let read = 1 + usize::from(read);
    let (items, held) = decode_lines(limit, input, read).expect("decoding never fails on bytes alone");
    assert!(held <= limit + 1 + read, "{held} bytes held for a limit of {limit}");
    let lines = input.split(|&byte| byte == b'\n').filter(|line| !line.trim_ascii().is_empty()).count();
    assert!(items.len() <= lines, "{} items for {lines} lines", items.len());
    for item in &items {
        if let Incoming::Refused(answer) = item {
            let JsonRpcMessage::Error(error) = answer else { panic!("an answer that is no error: {answer:?}") };
            let id = error.id.as_ref().map_or(0, |id| serde_json::to_vec(id).unwrap().len());
            assert!(serde_json::to_vec(answer).unwrap().len() <= ANSWER_BYTES + id);
        }
    }
    // One line at a time, each answered alone, with the id it carries.
    for line in input.split(|&byte| byte == b'\n') {
        let (alone, _) = decode_lines(limit, &[line, b"\n"].concat(), line.len() + 1).unwrap();
        assert!(alone.len() <= 1, "one line gave {} items", alone.len());
        let request_id = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .filter(|value| value.get("method").is_some())
            .and_then(|value| serde_json::from_value::<RequestId>(value.get("id")?.clone()).ok());
        if let Some(id) = request_id.filter(|_| line.len() <= limit) {
            let carried = match alone.first() {
                Some(Incoming::Message(JsonRpcMessage::Request(request))) => Some(&request.id),
                Some(Incoming::Refused(JsonRpcMessage::Error(error))) => error.id.as_ref(),
                other => panic!("a request with id {id} got {other:?}"),
            };
            assert_eq!(carried, Some(&id));
        }
    }
});
