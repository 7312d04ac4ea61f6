//! The HTTP request path, headers and body, as a client sends it: over a
//! real loopback connection to the real front (hyper, the gate's checks of
//! Host, Origin, Accept, Content-Type, the session and protocol headers and
//! the bearer token, rmcp's service, the handler with no plugins), served in
//! this process. Whatever the request, nothing panics, it gets exactly one
//! response, its body bounded, and a request with an id that is not refused
//! with a plain HTTP status gets exactly one JSON-RPC answer, with its id.
//! The input is a body, or `HEAD\n\nBODY` (see
//! `front_door::HttpRequest::from_input`). The property is stated once, in
//! `tests/support/front_door.rs` (`http_request_input`), for this target
//! and the proptests of `tests/wire_properties.rs`.
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/support/front_door.rs"]
mod front_door;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| front_door::http_request_input(input));
