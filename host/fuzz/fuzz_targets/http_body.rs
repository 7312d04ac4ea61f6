//! The HTTP request path takes a request body straight from a client: rmcp
//! reads it as a message, and a body it cannot read gets the transport's own
//! answer. Whatever the body, this must never panic, must answer a body that
//! parses as a request with the request's id, and must bound the answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prompt_host::transport::malformed::http_body;
use rmcp::model::{JsonRpcMessage, RequestId};

/// An answer's reason is at most 4 KiB, escaped once more by JSON.
const ANSWER_BYTES: usize = 2 * 4096 + 512;

fuzz_target!(|body: &[u8]| {
    let request_id = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .filter(|value| value.get("method").is_some())
        .and_then(|value| serde_json::from_value::<RequestId>(value.get("id")?.clone()).ok());
    match http_body(body) {
        Ok(JsonRpcMessage::Request(request)) => {
            if let Some(id) = request_id {
                assert_eq!(request.id, id);
            }
        }
        Ok(_) => {}
        // A client's response (a result or an error, no method) is not answered.
        Err(None) => assert!(request_id.is_none(), "a request taken for a response: {body:?}"),
        Err(Some(answer)) => {
            let JsonRpcMessage::Error(error) = &answer else { panic!("an answer that is no error: {answer:?}") };
            if let Some(id) = &request_id {
                assert_eq!(error.id.as_ref(), Some(id));
            }
            let id = error.id.as_ref().map_or(0, |id| serde_json::to_vec(id).unwrap().len());
            assert!(serde_json::to_vec(&answer).unwrap().len() <= ANSWER_BYTES + id);
        }
    }
});
