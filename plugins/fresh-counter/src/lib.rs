//! Test fixture: one global counter, incremented once by the instance's start
//! function (a static initializer) and once by each call, which returns it.
//! An instance that no call has used answers 2: 3 or more would mean that an
//! instance served two calls, 1 that its start function never ran.

use std::sync::atomic::{AtomicU32, Ordering};

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn count() -> u32 {
    COUNTER.fetch_add(1, Ordering::SeqCst) + 1
}

extern "C" fn start() {
    count();
}

/// Run once per instance, before any export, by the module's constructors
/// (wasm-ld's `__wasm_call_ctors`).
#[used]
#[unsafe(link_section = ".init_array")]
static START: extern "C" fn() = start;

struct FreshCounter;

impl Guest for FreshCounter {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "fresh-counter".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        let argument = PromptArgument { name: "value".into(), title: None, description: None, required: false };
        let prompt = |name: &str, arguments: Vec<PromptArgument>| Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments,
            icons: Vec::new(),
        };
        vec![prompt("count", vec![argument]), prompt("count-then-trap", Vec::new())]
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        let counter = count();
        match name.as_str() {
            "count" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: counter.to_string(), annotations: None }) }],
            })),
            "count-then-trap" => std::process::abort(),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: vec![count().to_string()], total: None, has_more: false })
    }
}

export!(FreshCounter);
