//! Test fixture (WIT 0.3): typed argument declarations that break every
//! bound the host sets on them; the host refuses the pack at load, naming
//! each.

wit_bindgen::generate!({ path: "../../wit/0.3", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

fn argument(name: &str, kind: ArgumentKind, default: Option<&str>) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        title: None,
        description: None,
        required: false,
        kind: Some(kind),
        default: default.map(str::to_string),
        examples: Vec::new(),
    }
}

struct HostileKinds;

impl Guest for HostileKinds {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "hostile-kinds".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
            wants: Wants {
                folders: vec![WantedFolder { name: "../etc".into(), description: None }],
                origins: vec!["ftp://x".into()],
                env: Vec::new(),
            },
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt {
            name: "bad".into(),
            title: None,
            description: None,
            arguments: vec![
                argument("many", ArgumentKind::Choice((0..101).map(|n| n.to_string()).collect()), None),
                argument("pattern", ArgumentKind::Text(TextKind { max_length: None, pattern: Some("(".into()) }), None),
                argument("huge", ArgumentKind::Text(TextKind { max_length: None, pattern: Some(r"(?:\w{1000}){1000}".into()) }), None),
                // Rust's syntax, not ECMA-262's: refused, naming why.
                argument("flag", ArgumentKind::Text(TextKind { max_length: None, pattern: Some("(?i)abc".into()) }), None),
                argument("greek", ArgumentKind::Text(TextKind { max_length: None, pattern: Some(r"\p{Greek}+".into()) }), None),
                argument("posix", ArgumentKind::Text(TextKind { max_length: None, pattern: Some("[[:alpha:]]+".into()) }), None),
                argument("bounds", ArgumentKind::Integer(IntegerKind { min: Some(5), max: Some(1) }), None),
                // Past the integers every client reads exactly: no value could pass.
                argument("past", ArgumentKind::Integer(IntegerKind { min: Some(1 << 60), max: None }), None),
                argument("below", ArgumentKind::Integer(IntegerKind { min: None, max: Some(-(1 << 60)) }), None),
                argument("nan", ArgumentKind::Number(NumberKind { min: Some(f64::NAN), max: None }), None),
                argument("default", ArgumentKind::Boolean, Some("yes")),
            ],
            icons: Vec::new(),
        }]
    }

    fn get_prompt(_name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        Err(PromptError::NotFound)
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(HostileKinds);
