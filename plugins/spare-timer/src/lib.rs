//! Test fixture: its start (the module's `_initialize`, which the component
//! runs as it is instantiated) subscribes to the monotonic clock for 500 ms
//! and for 1000 ms and keeps both pollables; its one prompt, `waited`,
//! answers which of them are ready. In an instance built for its call, none
//! is; in a spare that waited, they would tell how long it waited (the
//! clocks the pack reads stand still while it starts, but a pollable's
//! deadline runs from its making), so a call could pass a secret to the next
//! by when it ends. The host keeps no spare of a pack whose start holds a
//! host resource.

use std::sync::Mutex;

use wasi::io::poll::Pollable;

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

/// The pollables the start made: (milliseconds, pollable).
static KEPT: Mutex<Vec<(u64, Pollable)>> = Mutex::new(Vec::new());

/// The module's initializer, run as the component is instantiated.
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    let mut kept = KEPT.lock().unwrap();
    for ms in [500, 1000] {
        kept.push((ms, wasi::clocks::monotonic_clock::subscribe_duration(ms * 1_000_000)));
    }
}

/// `500:pending 1000:pending`, or `ready` for those whose time has come.
fn waited() -> String {
    let kept = KEPT.lock().unwrap();
    kept.iter().map(|(ms, pollable)| format!("{ms}:{}", if pollable.ready() { "ready" } else { "pending" })).collect::<Vec<_>>().join(" ")
}

struct SpareTimer;

impl Guest for SpareTimer {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "spare-timer".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt { name: "waited".into(), title: None, description: None, arguments: Vec::new(), icons: Vec::new() }]
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        match name.as_str() {
            "waited" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: waited(), annotations: None }) }],
            })),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(SpareTimer);
