//! Cursor decoding takes text straight from clients: it must never panic,
//! must only accept positions inside the catalog, and must read back every
//! cursor the catalog issues.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prompt_host::cursor::{self, List};

const VERSION: &str = "0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    let Some((&len, text)) = data.split_first() else { return };
    let len = len as usize;
    let text = String::from_utf8_lossy(text);
    if let Ok(position) = cursor::decode(List::Prompts, &text, VERSION, len) {
        assert!(position > 0 && position < len, "{text:?} decoded to {position} of {len}");
        assert_eq!(cursor::decode(List::Prompts, &cursor::encode(VERSION, position), VERSION, len), Ok(position));
    }
});
