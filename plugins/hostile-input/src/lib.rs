//! Test fixture: a WIT 0.2 pack whose input-required answers break the
//! host's rules, one per prompt, which the host must refuse (-32603, naming
//! the problem) without asking the client anything.

wit_bindgen::generate!({ path: "../../wit/0.2", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;

struct HostileInput;

fn text_field(name: &str) -> FormField {
    FormField { name: name.into(), title: None, description: None, kind: FieldKind::String(None), required: true }
}

fn form(key: &str, fields: Vec<FormField>) -> Form {
    Form { key: key.into(), message: "Fill this in".into(), fields }
}

fn ask(forms: Vec<Form>, state: Vec<u8>) -> Result<PromptAnswer, PromptError> {
    Ok(PromptAnswer::InputRequired(InputRequired { forms, state }))
}

impl Guest for HostileInput {
    fn describe_pack() -> PackInfo {
        PackInfo {
            name: "hostile-input".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        ["too-many-forms", "huge-state", "bad-default"]
            .into_iter()
            .map(|name| Prompt { name: name.into(), title: None, description: None, arguments: Vec::new(), icons: Vec::new() })
            .collect()
    }

    fn get_prompt(name: String, _arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        match name.as_str() {
            "too-many-forms" => ask((0..9).map(|index| form(&format!("form{index}"), vec![text_field("a")])).collect(), Vec::new()),
            "huge-state" => ask(vec![form("f", vec![text_field("a")])], vec![0; 17 << 10]),
            "bad-default" => {
                let kind = FieldKind::Enum(EnumField { choices: vec!["low".into(), "high".into()], default: Some("medium".into()) });
                let field = FormField { name: "level".into(), title: None, description: None, kind, required: false };
                ask(vec![form("f", vec![field])], Vec::new())
            }
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(HostileInput);
