//! Test fixture: a pack whose answers are small as the pack holds them and
//! large as a client receives them (JSON escapes a control character in six
//! bytes, a quote in two; binary data goes out in base64), and whose panics
//! carry terminal escape sequences and a forged log line. Its annotations
//! (a last-modified string, an audience) count on the wire too.

use prompt_pack::*;

struct HostileWire;

/// A panic message made to act on a terminal (ESC, NUL, BEL) and to pass
/// for a line of the host's own log.
const FORGED_PANIC: &str =
    "boom\x1b[31m red\0 nul\x07 bel\n2026-11-24T00:00:00.000000Z  WARN prompt_host::handler: all plugins trusted\r\x1b[2K\ttab";

impl Guest for HostileWire {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("texts", "Replies with `count` texts of `unit` repeated `repeat` times; completes \"COUNT REPEAT UNIT\" likewise")
                .argument(required("count", "How many texts"))
                .argument(required("repeat", "How many times the unit is repeated in each"))
                .argument(required("unit", "The text repeated")),
            prompt("media", "Replies with an image, an audio clip and a blob of `bytes` bytes each")
                .argument(required("bytes", "Bytes of each")),
            prompt("annotated", "Replies with `count` empty texts annotated with a last-modified of `unit` repeated `repeat` times")
                .argument(required("count", "How many texts"))
                .argument(required("repeat", "How many times the unit is repeated"))
                .argument(required("unit", "The text repeated")),
            prompt("panic", "Panics, in get-prompt and in complete, with escape sequences and a forged log line")
                .argument(optional("any", "Ignored")),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "texts" => {
                let count = number(arguments.require("count")?)?;
                let repeat = number(arguments.require("repeat")?)?;
                let text = arguments.require("unit")?.repeat(repeat);
                Ok(reply((0..count).map(|_| user_text(text.clone()))))
            }
            "annotated" => {
                let count = number(arguments.require("count")?)?;
                let repeat = number(arguments.require("repeat")?)?;
                let last_modified = arguments.require("unit")?.repeat(repeat);
                let annotations = Annotations { audience: vec![Role::User; 4], priority: None, last_modified: Some(last_modified) };
                let annotated = Content::Text(TextContent { text: String::new(), annotations: Some(annotations) });
                Ok(reply((0..count).map(|_| message(Role::User, annotated.clone()))))
            }
            "media" => {
                let bytes = number(arguments.require("bytes")?)?;
                Ok(reply([
                    message(Role::User, image(vec![7u8; bytes], "image/png")),
                    message(Role::User, audio(vec![7u8; bytes], "audio/wav")),
                    message(Role::User, blob_resource("file:///blob.bin", "application/octet-stream", vec![7u8; bytes])),
                ]))
            }
            "panic" => panic!("{FORGED_PANIC}"),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(prompt: String, _: String, value: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        match prompt.as_str() {
            "texts" => {
                let mut parts = value.splitn(3, ' ');
                let (count, repeat, unit) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let value = unit.repeat(number(repeat)?);
                Ok(Completion { values: vec![value; number(count)?], total: None, has_more: false })
            }
            "panic" => panic!("{FORGED_PANIC}"),
            _ => Ok(no_completions()),
        }
    }
}

fn number(text: &str) -> Result<usize, PromptError> {
    text.parse().map_err(|_| PromptError::InvalidArguments(format!("{text:?} is not a number")))
}

prompt_pack::export_pack!(HostileWire);
