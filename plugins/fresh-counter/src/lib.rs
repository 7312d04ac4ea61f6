//! Test fixture: one global counter, incremented once by the instance's start
//! function (the module's `_initialize`, which the component runs as it is
//! instantiated) and once by each call, which returns it.
//! An instance that no call has used answers 2: 3 or more would mean that an
//! instance served two calls, 1 that its start function never ran.
//!
//! Its start function also reads both clocks, as a pack carrying a secret
//! from one call to the next through a spare's start would (the `clocks`
//! prompt answers what it read).

use std::sync::atomic::{AtomicU32, Ordering};

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn count() -> u32 {
    COUNTER.fetch_add(1, Ordering::SeqCst) + 1
}

/// What the start function read: the monotonic clock, and the wall clock
/// (nanoseconds since the UNIX epoch).
static STARTED: std::sync::Mutex<Option<(std::time::Instant, u128)>> = std::sync::Mutex::new(None);

/// The module's initializer, which the component calls as it is
/// instantiated (a reactor's `_initialize`), before any export: as a
/// spare's start runs when it is built ahead of its call.
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    count();
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    *STARTED.lock().unwrap() = Some((std::time::Instant::now(), wall));
}

/// `MS WALL`: the milliseconds the monotonic clock moved between the start
/// function and this call, and the wall clock's reading at the start.
fn clocks() -> String {
    let (started, wall) = STARTED.lock().unwrap().expect("the start function ran");
    format!("{} {wall}", started.elapsed().as_millis())
}

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
        vec![prompt("count", vec![argument]), prompt("count-then-trap", Vec::new()), prompt("clocks", Vec::new())]
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        let counter = count();
        match name.as_str() {
            "count" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: counter.to_string(), annotations: None }) }],
            })),
            "count-then-trap" => std::process::abort(),
            "clocks" => Ok(PromptAnswer::Reply(PromptReply {
                description: None,
                messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: clocks(), annotations: None }) }],
            })),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: vec![count().to_string()], total: None, has_more: false })
    }
}

export!(FreshCounter);
