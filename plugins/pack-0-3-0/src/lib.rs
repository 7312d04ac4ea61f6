//! Test fixture: a pack built against `prompt-host:prompts@0.3.0` (the WIT
//! in its own `wit/`, as released), which a host of 0.3.1 must serve
//! unchanged: its `prompt-provider@0.3.0` export found by its
//! semver-compatible name, its typed argument checked, and no prompt asking
//! for missing arguments, as it has no `asking`.

wit_bindgen::generate!({ path: "wit", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

struct Pack;

impl Guest for Pack {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "pack-0-3-0".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
            wants: Wants { folders: Vec::new(), origins: Vec::new(), env: Vec::new() },
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt {
            name: "older".into(),
            title: None,
            description: None,
            arguments: vec![PromptArgument {
                name: "tone".into(),
                title: None,
                description: None,
                required: true,
                kind: Some(ArgumentKind::Choice(vec!["formal".into(), "casual".into()])),
                default: None,
                examples: Vec::new(),
            }],
            icons: Vec::new(),
        }]
    }

    fn get_prompt(_name: String, arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        let tone = arguments.iter().find(|argument| argument.name == "tone").map_or("", |argument| argument.value.as_str());
        Ok(PromptAnswer::Reply(PromptReply {
            description: None,
            messages: vec![Message {
                role: Role::User,
                content: Content::Text(TextContent { text: format!("tone={tone}"), annotations: None }),
            }],
        }))
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(Pack);
