//! Test fixture: its start (the module's `_initialize`, run as the component
//! is instantiated) fills 80 MiB of linear memory and keeps it, more than a
//! quarter of the spares' shelf: served with a raised memory limit, it must
//! not push every other pack's spare off the shelf with one of its own.

use std::sync::Mutex;

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

static HOARD: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// The module's initializer, run as the component is instantiated.
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    *HOARD.lock().unwrap() = vec![1u8; 80 << 20];
}

struct BigStart;

impl Guest for BigStart {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "big-start".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt { name: "size".into(), title: None, description: None, arguments: Vec::new(), icons: Vec::new() }]
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        match name.as_str() {
            "size" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message {
                    role: Role::User,
                    content: Content::Text(TextContent { text: HOARD.lock().unwrap().len().to_string(), annotations: None }),
                }],
            })),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(BigStart);
