//! Test fixture: the prompts and resources the official MCP conformance
//! suite asks for, built against WIT 0.4 (`wit/0.4/`) directly: its
//! `get-prompt` may ask the user for input (`test_input_required_result_prompt`
//! asks for a context first, as the 0.2.0-alpha.12 suite's
//! `input-required-result-non-tool-request` scenario describes), and it
//! carries the static resources `test://static-text` and
//! `test://static-binary` the `resources-*` scenarios read.

wit_bindgen::generate!({ path: "../../wit/0.4", world: "prompt-pack-with-content" });

use exports::prompt_host::prompts::content::{Guest as ContentGuest, SkillFile, StaticResource};
use exports::prompt_host::prompts::prompt_provider::*;

/// A 1x1 PNG.
const PIXEL_PNG: &[u8] = include_bytes!("pixel.png");

/// The state the input-required prompt hands back with its form, and
/// expects back with the answer.
const ASKED_STATE: &[u8] = b"asked for the context";

struct Conformance;

/// A prompt, with its required arguments: (name, description).
fn prompt(name: &str, description: &str, arguments: &[(&str, &str)]) -> Prompt {
    Prompt {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        arguments: arguments
            .iter()
            .map(|(name, description)| PromptArgument {
                name: name.to_string(),
                title: None,
                description: Some(description.to_string()),
                required: true,
                kind: None,
                default: None,
                examples: Vec::new(),
            })
            .collect(),
        icons: Vec::new(),
    }
}

fn text(text: impl Into<String>) -> Message {
    Message { role: Role::User, content: Content::Text(TextContent { text: text.into(), annotations: None }) }
}

fn reply(messages: Vec<Message>) -> Result<PromptAnswer, PromptError> {
    Ok(PromptAnswer::Reply(PromptReply { description: None, messages }))
}

fn argument<'a>(arguments: &'a [Argument], name: &str) -> Result<&'a str, PromptError> {
    arguments
        .iter()
        .find(|argument| argument.name == name)
        .map(|argument| argument.value.as_str())
        .ok_or_else(|| PromptError::InvalidArguments(format!("missing required argument '{name}'")))
}

/// The answer to the input-required prompt: asks for the context first,
/// then builds its message from the answer.
fn input_required_prompt(input: Option<Input>) -> Result<PromptAnswer, PromptError> {
    let Some(input) = input else {
        return Ok(PromptAnswer::InputRequired(InputRequired {
            forms: vec![Form {
                key: "user_context".into(),
                message: "What context should the prompt use?".into(),
                fields: vec![FormField {
                    name: "context".into(),
                    title: None,
                    description: None,
                    kind: FieldKind::String(None),
                    required: true,
                }],
            }],
            state: ASKED_STATE.to_vec(),
        }));
    };
    if input.state != ASKED_STATE {
        return Err(PromptError::Internal("the state did not come back unchanged".into()));
    }
    let answer = input.answers.into_iter().find(|answer| answer.key == "user_context");
    match answer.map(|answer| answer.response) {
        Some(FormResponse::Accept(fields)) => {
            let context = fields.into_iter().find_map(|field| match (field.name.as_str(), field.value) {
                ("context", FieldValue::String(context)) => Some(context),
                _ => None,
            });
            let context = context.ok_or_else(|| PromptError::Internal("the context did not come back".into()))?;
            reply(vec![text(format!("Prompt with context: '{context}'"))])
        }
        Some(FormResponse::Decline | FormResponse::Cancel) => reply(vec![text("Prompt without context: the user declined to give one")]),
        None => Err(PromptError::Internal("the host passed no answer to the form".into())),
    }
}

impl Guest for Conformance {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "conformance".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some("The prompts the official MCP conformance suite asks for".into()),
            authors: vec!["prompt-host developers".into()],
            license: Some("Apache-2.0".into()),
            homepage: None,
            repository: Some("https://github.com/prompt-host/prompt-host".into()),
            wants: Wants { folders: Vec::new(), origins: Vec::new(), env: Vec::new() },
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("test_simple_prompt", "A simple prompt without arguments", &[]),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
                &[("arg1", "First test argument"), ("arg2", "Second test argument")],
            ),
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
                &[("resourceUri", "URI of the resource to embed")],
            ),
            prompt("test_prompt_with_image", "A prompt that includes an image", &[]),
            prompt("test_input_required_result_prompt", "A prompt that asks the user for a context first", &[]),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        match name.as_str() {
            "test_simple_prompt" => reply(vec![text("This is a simple prompt for testing.")]),
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = (argument(&arguments, "arg1")?, argument(&arguments, "arg2")?);
                reply(vec![text(format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))])
            }
            "test_prompt_with_embedded_resource" => {
                let uri = argument(&arguments, "resourceUri")?;
                let resource = Content::Resource(EmbeddedResource {
                    uri: uri.into(),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("Embedded resource content for testing.".into()),
                    annotations: None,
                });
                reply(vec![Message { role: Role::User, content: resource }, text("Please process the embedded resource above.")])
            }
            "test_prompt_with_image" => {
                let image = Content::Image(MediaContent { data: PIXEL_PNG.to_vec(), mime_type: "image/png".into(), annotations: None });
                reply(vec![Message { role: Role::User, content: image }, text("Please analyze the image above.")])
            }
            "test_input_required_result_prompt" => input_required_prompt(input),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(prompt: String, argument: String, value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        let values: Vec<String> = match (prompt.as_str(), argument.as_str()) {
            ("test_prompt_with_arguments", "arg1") => ["paris", "park", "party", "penguin"]
                .into_iter()
                .filter(|candidate| candidate.starts_with(&value.to_ascii_lowercase()))
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        };
        let total = values.len() as u32;
        Ok(Completion { values, total: Some(total), has_more: false })
    }
}

impl exports::prompt_host::prompts::asking::Guest for Conformance {
    fn prompts_that_ask() -> Vec<String> {
        Vec::new()
    }
}

impl ContentGuest for Conformance {
    fn skill_files() -> Vec<SkillFile> {
        Vec::new()
    }

    fn static_resources() -> Vec<StaticResource> {
        let resource = |uri: &str, name: &str, mime_type: &str, body| StaticResource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
            body,
        };
        vec![
            resource(
                "test://static-text",
                "static-text",
                "text/plain",
                ResourceBody::Text("This is the content of the static text resource.".into()),
            ),
            resource("test://static-binary", "static-binary", "image/png", ResourceBody::Blob(PIXEL_PNG.to_vec())),
        ]
    }
}

export!(Conformance);
