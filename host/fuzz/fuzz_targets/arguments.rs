//! The arguments of prompts/get come straight from clients: converting them
//! must never panic, must pass every string through unchanged, and must name
//! a non-string argument that exists.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prompt_host::convert;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(data) else { return };
    match convert::arguments(Some(&object)) {
        Ok(arguments) => {
            assert_eq!(arguments.len(), object.len());
            for argument in arguments {
                assert_eq!(object[&argument.name], Value::String(argument.value));
            }
        }
        Err(error) => assert!(!object[&error.name].is_string()),
    }
});
