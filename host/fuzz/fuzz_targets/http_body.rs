//! The HTTP request path takes a request body straight from a client: rmcp
//! reads it as a message, and a body it cannot read gets the transport's own
//! answer. Whatever the body, this must never panic, must answer every body
//! with an id, with the id where it can be read, and must bound the answer.
//! The property is stated once, in `tests/support/front_door.rs`
//! (`http_input`), for this target and the proptests of
//! `tests/wire_properties.rs`; `http_request` sends whole requests.
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/support/front_door.rs"]
mod front_door;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| front_door::http_input(input));
