//! Test fixture (WIT 0.3.1): two prompts with an argument of every kind.
//! `report` refuses a request missing its required argument, as every
//! prompt did before 0.3.1; `announce` and `confirm` opt in (through
//! `asking`) to have the host ask for their missing arguments with a form,
//! and `confirm` then asks for more itself (a form of its own, `sure`). `get-prompt` echoes
//! the arguments it was given, one `name=value` line each, sorted, so a
//! test sees exactly what the host passed (defaults filled in, answers
//! among them, nothing refused reaching it); `complete` traps, so a
//! completion the host answers from a declaration shows it never ran. It
//! wants a folder, an origin and a value, which nothing grants.

wit_bindgen::generate!({ path: "../../wit/0.3", world: "prompt-pack-that-asks" });

use exports::prompt_host::prompts::prompt_provider::*;

fn argument(name: &str, required: bool, kind: Option<ArgumentKind>, default: Option<&str>, examples: &[&str]) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        title: None,
        description: Some(format!("The {name}")),
        required,
        kind,
        default: default.map(str::to_string),
        examples: examples.iter().map(|example| example.to_string()).collect(),
    }
}

struct TypedArguments;

impl Guest for TypedArguments {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "typed-arguments".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
            wants: Wants {
                folders: vec![WantedFolder { name: "logs".into(), description: Some("recent log lines".into()) }],
                origins: vec!["https://api.example.com/v1/".into()],
                env: vec!["API_TOKEN".into()],
            },
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        let choice = ArgumentKind::Choice(vec!["formal".into(), "casual".into(), "friendly".into()]);
        vec![
            Prompt {
                name: "report".into(),
                title: None,
                description: None,
                arguments: vec![
                    argument("tone", false, Some(choice), Some("formal"), &[]),
                    argument("count", true, Some(ArgumentKind::Integer(IntegerKind { min: Some(1), max: Some(10) })), None, &["3"]),
                    argument("ratio", false, Some(ArgumentKind::Number(NumberKind { min: Some(0.0), max: Some(1.0) })), None, &[]),
                    argument("verbose", false, Some(ArgumentKind::Boolean), None, &[]),
                    argument(
                        "title",
                        false,
                        Some(ArgumentKind::Text(TextKind { max_length: Some(20), pattern: Some("[A-Za-z ]+".into()) })),
                        None,
                        &[],
                    ),
                    argument("source", false, Some(ArgumentKind::Uri(UriKind { schemes: vec!["https".into(), "file".into()] })), None, &[]),
                    argument("free", false, None, None, &[]),
                ],
                icons: Vec::new(),
            },
            Prompt {
                name: "confirm".into(),
                title: None,
                description: None,
                arguments: vec![argument("tone", true, Some(ArgumentKind::Choice(vec!["formal".into(), "casual".into()])), None, &[])],
                icons: Vec::new(),
            },
            Prompt {
                name: "announce".into(),
                title: Some("Announce".into()),
                description: Some("Writes an announcement".into()),
                arguments: vec![
                    argument("tone", true, Some(ArgumentKind::Choice(vec!["formal".into(), "casual".into()])), None, &[]),
                    argument("count", true, Some(ArgumentKind::Integer(IntegerKind { min: Some(1), max: Some(10) })), None, &[]),
                    argument("ratio", true, Some(ArgumentKind::Number(NumberKind { min: Some(0.0), max: Some(1.0) })), None, &[]),
                    argument("urgent", true, Some(ArgumentKind::Boolean), None, &[]),
                    argument("headline", true, Some(ArgumentKind::Text(TextKind { max_length: Some(40), pattern: None })), None, &[]),
                    argument("channel", false, None, Some("general"), &[]),
                ],
                icons: Vec::new(),
            },
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        if name != "report" && name != "announce" && name != "confirm" {
            return Err(PromptError::NotFound);
        }
        let mut lines: Vec<String> = arguments.into_iter().map(|argument| format!("{}={}", argument.name, argument.value)).collect();
        // `confirm` asks for more itself once the host has its arguments.
        if name == "confirm" {
            let Some(input) = input else {
                let field =
                    FormField { name: "sure".into(), title: None, description: None, kind: FieldKind::Boolean(None), required: true };
                let form = Form { key: "sure".into(), message: "Sure?".into(), fields: vec![field] };
                return Ok(PromptAnswer::InputRequired(InputRequired { forms: vec![form], state: b"asked".to_vec() }));
            };
            for answer in input.answers {
                if let FormResponse::Accept(fields) = answer.response {
                    for field in fields {
                        if let FieldValue::Boolean(value) = field.value {
                            lines.push(format!("{}={value}", field.name));
                        }
                    }
                }
            }
        }
        lines.sort();
        Ok(PromptAnswer::Reply(PromptReply {
            description: None,
            messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text: lines.join("\n"), annotations: None }) }],
        }))
    }

    fn complete(_prompt: String, argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        panic!("complete ran for {argument}")
    }
}

impl exports::prompt_host::prompts::asking::Guest for TypedArguments {
    fn prompts_that_ask() -> Vec<String> {
        vec!["announce".into(), "confirm".into()]
    }
}

export!(TypedArguments);
