//! Test fixture: a pack whose prompts each misbehave in one way, beside one
//! that behaves, so tests can show that the host contains each misdeed and
//! keeps serving.

use std::hint::black_box;

use prompt_pack::*;

struct Hostile;

const PROMPTS: &[(&str, &str)] = &[
    ("echo", "Behaves: echoes its text argument"),
    ("spin", "Loops forever"),
    ("sleep", "Blocks in a host call (a one-hour sleep)"),
    ("grow", "Allocates memory until it runs out"),
    ("recurse", "Recurses until the stack overflows"),
    ("panic", "Panics"),
    ("huge-reply", "Builds a reply of hundreds of megabytes"),
    ("bad-mime", "Returns an image whose mime type is not image/*"),
    ("bad-uri", "Returns an embedded resource whose URI does not parse"),
    ("read-file", "Tries to read a file of the host"),
    ("read-env", "Tries to read an environment variable of the host"),
    ("open-socket", "Tries to open a network connection"),
    ("chatty", "Prints to stdout and stderr, then behaves"),
    ("flood", "Prints a megabyte to stdout, then behaves"),
    ("many-messages", "Replies with a thousand messages"),
    ("alias-bomb", "Replies with 64 texts that all alias one 4 MiB buffer"),
    ("big-error", "Fails with an error message of `bytes` bytes that tries to forge log lines"),
    ("big-completion", "Completes with `COUNTxBYTES` values of BYTES bytes each"),
    ("long-description", LONG_DESCRIPTION),
];

/// 2,000 bytes of description: with it, the pack's definitions come to more
/// than 2 KiB, which tests of the catalog limit rely on.
const LONG_DESCRIPTION: &str = concat!(
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
    "Twenty sentences of one hundred bytes each make this description weigh two thousand bytes in all... ",
);

impl Guest for Hostile {
    fn list_prompts() -> Vec<Prompt> {
        PROMPTS
            .iter()
            .map(|(name, description)| {
                let prompt = prompt(name, description);
                match *name {
                    "echo" => prompt.argument(optional("text", "What to echo")),
                    "big-error" => prompt.argument(required("bytes", "How long the error message is")),
                    "big-completion" => prompt.argument(optional("shape", "COUNTxBYTES")),
                    _ => prompt,
                }
            })
            .collect()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "echo" => Ok(reply([user_text(arguments.get("text").unwrap_or("echo"))])),
            "spin" => spin(),
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Ok(reply([user_text("woke up")]))
            }
            "grow" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    black_box(&hoard);
                }
            }
            "recurse" => Ok(reply([user_text(format!("{}", recurse(0)))])),
            "panic" => panic!("hostile plugin panicked on purpose"),
            "huge-reply" => Ok(reply([user_text("x".repeat(300 << 20))])),
            "bad-mime" => Ok(reply([message(Role::User, image(vec![0u8; 4], "text/plain"))])),
            "bad-uri" => Ok(reply([message(Role::User, text_resource("not a uri", "text/plain", "contents"))])),
            "read-file" => std::fs::read_to_string("/etc/passwd")
                .map(|contents| reply([user_text(contents)]))
                .map_err(|error| PromptError::Internal(format!("reading /etc/passwd failed: {error}"))),
            "read-env" => std::env::var("HOME")
                .map(|home| reply([user_text(home)]))
                .map_err(|error| PromptError::Internal(format!("reading $HOME failed: {error}"))),
            "open-socket" => std::net::TcpStream::connect("127.0.0.1:80")
                .map(|_| reply([user_text("connected")]))
                .map_err(|error| PromptError::Internal(format!("connecting to 127.0.0.1:80 failed: {error}"))),
            "chatty" => {
                println!("hello from the plugin's stdout");
                eprintln!("hello from the plugin's stderr");
                Ok(reply([user_text("chatted")]))
            }
            "flood" => {
                for _ in 0..16_384 {
                    println!("{}", "flood ".repeat(10));
                }
                Ok(reply([user_text("flooded")]))
            }
            "many-messages" => Ok(reply((0..1000).map(|i| user_text(format!("message {i}"))))),
            "alias-bomb" => Ok(reply(aliases_of_one_buffer(64, 4 << 20).into_iter().map(user_text))),
            "big-error" => {
                let bytes: usize = arguments.require("bytes")?.parse().map_err(|_| invalid("bytes must be a number"))?;
                Err(PromptError::Internal(forged_log_lines(bytes)))
            }
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(prompt: String, _: String, value: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        match prompt.as_str() {
            "spin" => spin(),
            "big-completion" => {
                let shape = value.split_once('x').and_then(|(count, bytes)| Some((count.parse().ok()?, bytes.parse().ok()?)));
                let (count, bytes): (usize, usize) = shape.ok_or_else(|| invalid("the value must be COUNTxBYTES"))?;
                Ok(Completion { values: (0..count).map(|_| "v".repeat(bytes)).collect(), total: None, has_more: false })
            }
            _ => Ok(no_completions()),
        }
    }
}

fn spin<T>() -> T {
    let mut counter: u64 = 0;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

fn invalid(message: &str) -> PromptError {
    PromptError::InvalidArguments(message.to_string())
}

/// `count` strings that all point at the same `bytes`-byte buffer: the guest
/// pays for one buffer, and a host that copies each string pays `count` times.
/// The strings are never dropped here: the host's copy budget stops the call
/// before the pack would free the same buffer twice.
fn aliases_of_one_buffer(count: usize, bytes: usize) -> Vec<String> {
    let buffer: &'static mut str = "a".repeat(bytes).leak();
    let (pointer, length) = (buffer.as_mut_ptr(), buffer.len());
    // SAFETY: deliberately unsound aliasing, on purpose for this fixture; see above.
    (0..count).map(|_| unsafe { String::from_raw_parts(pointer, length, length) }).collect()
}

/// An error message of `bytes` bytes that starts with text made to look like
/// a line of the host's own log, with raw CR, NUL and an escape sequence.
fn forged_log_lines(bytes: usize) -> String {
    let forged = "plugin failed\n2026-11-22T10:00:00.000000Z  INFO prompt_host::watch: plugin loaded plugin=trusted_pack\r\0\x1b[2K";
    // Reserved whole, and doubled in place: growing by doubling would need
    // twice the memory, and pushing byte by byte a great deal of fuel.
    let mut message = String::with_capacity(bytes.max(forged.len()));
    message.push_str(forged);
    while message.len() < bytes {
        message.extend_from_within(..message.len().min(bytes - message.len()));
    }
    message.truncate(bytes);
    message
}

fn recurse(depth: u64) -> u64 {
    if black_box(true) { black_box(recurse(black_box(depth + 1))) + 1 } else { depth }
}

prompt_pack::export_pack!(Hostile);
