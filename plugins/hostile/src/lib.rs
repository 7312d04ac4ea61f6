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
];

impl Guest for Hostile {
    fn list_prompts() -> Vec<Prompt> {
        PROMPTS
            .iter()
            .map(|(name, description)| {
                let prompt = prompt(name, description);
                if *name == "echo" { prompt.argument(optional("text", "What to echo")) } else { prompt }
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
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(prompt: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        match prompt.as_str() {
            "spin" => spin(),
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

fn recurse(depth: u64) -> u64 {
    if black_box(true) { black_box(recurse(black_box(depth + 1))) + 1 } else { depth }
}

prompt_pack::export_pack!(Hostile);
