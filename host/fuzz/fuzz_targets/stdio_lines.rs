//! The stdio line decoder takes bytes straight from a client: whatever they
//! are and however the reads cut them, it must never panic, must give each
//! line at most one item (a message for rmcp, or the transport's own
//! answer), must answer every line with an id exactly once, with the id
//! where it can be read, must bound every answer, and must hold no more
//! than a line's limit and one read. The property is stated once, in
//! `tests/support/front_door.rs` (`stdio_input`), for this target and the
//! proptests of `tests/wire_properties.rs`.
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/support/front_door.rs"]
mod front_door;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| front_door::stdio_input(input));
