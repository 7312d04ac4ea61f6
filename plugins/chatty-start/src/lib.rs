//! Test fixture: its start (the module's `_initialize`, run as the component
//! is instantiated) writes 1.2 MiB to stdout in one host call. The host
//! copies at most a call's copy budget out of a pack in one host call, and
//! builds a spare under the budget of the call that just ended: served with
//! `max_reply_kib = 1024`, a `prompts/get` budget (1.3 MiB) lets the start
//! finish and a `completion/complete` budget (1.06 MiB) does not. So the
//! spare made after a completion fails to start, deterministically, where
//! every call succeeds: what `prompt_host_plugin_spare_failures_total`
//! counts.

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

/// The bytes the start writes in one host call.
const WRITTEN: usize = 1200 << 10;

/// The module's initializer, run as the component is instantiated.
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    let stdout = wasi::cli::stdout::get_stdout();
    // The host accepts any size; what stops a large write is the copy.
    let _ = stdout.write(&vec![b'.'; WRITTEN]);
}

struct ChattyStart;

impl Guest for ChattyStart {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "chatty-start".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt {
            name: "hello".into(),
            title: None,
            description: None,
            arguments: vec![PromptArgument { name: "who".into(), title: None, description: None, required: false }],
            icons: Vec::new(),
        }]
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        match name.as_str() {
            "hello" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: "hello".into(), annotations: None }) }],
            })),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: vec!["world".into()], total: None, has_more: false })
    }
}

export!(ChattyStart);
