//! Test fixture (WIT 0.3): one prompt, `table`, with an optional argument of
//! every kind, and text arguments with the patterns whose meaning differs
//! between engines (`\d`, `.`, `\w`, `[a&&b]`, `$`), so that a test can ask
//! the host and two JSON Schema validators (the official TypeScript SDK's
//! ajv and python-jsonschema) the same question about each value.
//! `get-prompt` answers the arguments it was given, one `name=value` line
//! each, sorted: what reached the pack.

wit_bindgen::generate!({ path: "../../wit/0.3", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

fn optional(name: &str, kind: ArgumentKind) -> PromptArgument {
    PromptArgument { name: name.into(), title: None, description: None, required: false, kind: Some(kind), default: None, examples: Vec::new() }
}

fn text(pattern: &str) -> ArgumentKind {
    ArgumentKind::Text(TextKind { max_length: None, pattern: Some(pattern.into()) })
}

struct SchemaTable;

impl Guest for SchemaTable {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "schema-table".into(),
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
        let uri = |schemes: &[&str]| ArgumentKind::Uri(UriKind { schemes: schemes.iter().map(|scheme| scheme.to_string()).collect() });
        vec![Prompt {
            name: "table".into(),
            title: None,
            description: None,
            arguments: vec![
                optional("digits", text(r"\d+")),
                optional("dot", text(".+")),
                optional("word", text(r"\w+")),
                optional("ampersands", text("[a&&b]")),
                optional("letters", text("[a-z]+")),
                optional("short-words", text(r"\w{1,40}")),
                optional("escapes", text(r"[\x41-\x43]\u00e9\.[^\s]?")),
                optional("either", text("(?:ab|c)+$|x")),
                optional("bounded", ArgumentKind::Text(TextKind { max_length: Some(3), pattern: None })),
                optional("schemes", uri(&["https", "file", "x-foo", "git+ssh"])),
                optional("any-uri", uri(&[])),
                optional("integer", ArgumentKind::Integer(IntegerKind { min: None, max: None })),
                optional("one-to-ten", ArgumentKind::Integer(IntegerKind { min: Some(1), max: Some(10) })),
                optional("number", ArgumentKind::Number(NumberKind { min: None, max: None })),
                optional("ratio", ArgumentKind::Number(NumberKind { min: Some(0.0), max: Some(1.0) })),
                optional("flag", ArgumentKind::Boolean),
                optional("tone", ArgumentKind::Choice(vec!["formal".into(), "Formal".into(), "é".into()])),
            ],
            icons: Vec::new(),
        }]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        if name != "table" {
            return Err(PromptError::NotFound);
        }
        let mut lines: Vec<String> = arguments.into_iter().map(|argument| format!("{}={}", argument.name, argument.value)).collect();
        lines.sort();
        let text = if lines.is_empty() { "nothing".to_string() } else { lines.join("\n") };
        Ok(PromptAnswer::Reply(PromptReply {
            description: None,
            messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text, annotations: None }) }],
        }))
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(SchemaTable);
