//! What WIT 0.2 adds: forms a pack asks the user to fill in before it
//! replies (input-required answers), the answers that come back, and what
//! a pack says it is.

use crate::PromptReply;
pub use crate::bindings_v0_2::exports::prompt_host::prompts::prompt_provider::{
    EnumField, FieldAnswer, FieldKind, FieldValue, Form, FormAnswer, FormField, FormResponse, Input, InputRequired, PackInfo, PromptAnswer,
};

/// The most forms one input-required answer may carry (the host's limit).
pub const MAX_FORMS: usize = 8;

/// A form with this key (how its answer comes back: a name like a field's)
/// and message (what it asks for, shown to the user), and no fields yet.
pub fn form(key: &str, message: &str) -> Form {
    Form { key: key.to_string(), message: message.to_string(), fields: Vec::new() }
}

impl Form {
    /// Adds a field, after the ones already added.
    pub fn field(mut self, field: FormField) -> Self {
        self.fields.push(field);
        self
    }
}

fn field(name: &str, description: &str, kind: FieldKind) -> FormField {
    FormField { name: name.to_string(), title: None, description: Some(description.to_string()), kind, required: true }
}

/// A required text field.
pub fn string_field(name: &str, description: &str) -> FormField {
    field(name, description, FieldKind::String(None))
}

/// A required number field (whole or not).
pub fn number_field(name: &str, description: &str) -> FormField {
    field(name, description, FieldKind::Number(None))
}

/// A required whole-number field.
pub fn integer_field(name: &str, description: &str) -> FormField {
    field(name, description, FieldKind::Integer(None))
}

/// A required yes-or-no field.
pub fn boolean_field(name: &str, description: &str) -> FormField {
    field(name, description, FieldKind::Boolean(None))
}

/// A required field whose value is one of `choices` (its answer comes back
/// as a string).
pub fn enum_field(name: &str, description: &str, choices: &[&str]) -> FormField {
    let choices = choices.iter().map(|choice| choice.to_string()).collect();
    field(name, description, FieldKind::Enum(EnumField { choices, default: None }))
}

impl FormField {
    /// Sets the human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_string());
        self
    }

    /// Lets the user leave the field empty.
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// Sets the value the field starts with. An enum field's default is one
    /// of its choices, as a string.
    ///
    /// # Panics
    /// When the value is not of the field's kind (a text default for a
    /// number field, say): a mistake in the pack, which the host reports
    /// with this message when the pack runs.
    pub fn default(mut self, value: impl Into<FieldValue>) -> Self {
        let value = value.into();
        self.kind = match (self.kind, value) {
            (FieldKind::String(_), FieldValue::String(value)) => FieldKind::String(Some(value)),
            (FieldKind::Number(_), FieldValue::Number(value)) => FieldKind::Number(Some(value)),
            (FieldKind::Number(_), FieldValue::Integer(value)) => FieldKind::Number(Some(value as f64)),
            (FieldKind::Integer(_), FieldValue::Integer(value)) => FieldKind::Integer(Some(value)),
            (FieldKind::Boolean(_), FieldValue::Boolean(value)) => FieldKind::Boolean(Some(value)),
            (FieldKind::Enum(choices), FieldValue::String(value)) => FieldKind::Enum(EnumField { default: Some(value), ..choices }),
            (kind, value) => {
                let kind = match kind {
                    FieldKind::String(_) => "a text",
                    FieldKind::Number(_) => "a number",
                    FieldKind::Integer(_) => "an integer",
                    FieldKind::Boolean(_) => "a boolean",
                    FieldKind::Enum(_) => "an enum",
                };
                panic!("field '{}' is {kind} field, and its default {value:?} is of another kind", self.name)
            }
        };
        self
    }
}

/// An input-required answer asking the user to fill in `forms` (at most
/// [`MAX_FORMS`]), with no state of the pack's own. Return it with `.into()`.
pub fn ask(forms: impl IntoIterator<Item = Form>) -> InputRequired {
    InputRequired { forms: forms.into_iter().collect(), state: Vec::new() }
}

impl InputRequired {
    /// Sets the state that comes back, unchanged, in the [`Input`] of the
    /// next call. The host authenticates it but does not encrypt it: it
    /// must hold no secret.
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = state.into();
        self
    }
}

impl From<PromptReply> for PromptAnswer {
    fn from(reply: PromptReply) -> Self {
        PromptAnswer::Reply(reply)
    }
}

impl From<InputRequired> for PromptAnswer {
    fn from(input_required: InputRequired) -> Self {
        PromptAnswer::InputRequired(input_required)
    }
}

impl PromptAnswer {
    /// The reply, if this answer is one.
    pub fn into_reply(self) -> Option<PromptReply> {
        match self {
            PromptAnswer::Reply(reply) => Some(reply),
            PromptAnswer::InputRequired(_) => None,
        }
    }

    /// The request for input, if this answer is one.
    pub fn into_input_required(self) -> Option<InputRequired> {
        match self {
            PromptAnswer::InputRequired(input_required) => Some(input_required),
            PromptAnswer::Reply(_) => None,
        }
    }
}

impl Input {
    /// What the user did with the form `key`, if the answers include it.
    pub fn response(&self, key: &str) -> Option<&FormResponse> {
        self.answers.iter().find(|answer| answer.key == key).map(|answer| &answer.response)
    }

    /// The value of `field` in the form `key`, if the user submitted the
    /// form with that field filled in.
    pub fn value(&self, key: &str, field: &str) -> Option<&FieldValue> {
        match self.response(key)? {
            FormResponse::Accept(fields) => fields.iter().find(|answer| answer.name == field).map(|answer| &answer.value),
            FormResponse::Decline | FormResponse::Cancel => None,
        }
    }

    /// Sets the state, as the host passes back what the pack returned: for
    /// calling a pack's functions in tests.
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = state.into();
        self
    }
}

impl FieldValue {
    /// The text, of a text or enum field.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FieldValue::String(value) => Some(value),
            _ => None,
        }
    }

    /// The number, of a number field.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FieldValue::Number(value) => Some(*value),
            _ => None,
        }
    }

    /// The whole number, of an integer field.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FieldValue::Integer(value) => Some(*value),
            _ => None,
        }
    }

    /// Yes or no, of a boolean field.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            FieldValue::Boolean(value) => Some(*value),
            _ => None,
        }
    }
}

impl From<&str> for FieldValue {
    fn from(value: &str) -> Self {
        FieldValue::String(value.to_string())
    }
}

impl From<String> for FieldValue {
    fn from(value: String) -> Self {
        FieldValue::String(value)
    }
}

impl From<f64> for FieldValue {
    fn from(value: f64) -> Self {
        FieldValue::Number(value)
    }
}

impl From<i64> for FieldValue {
    fn from(value: i64) -> Self {
        FieldValue::Integer(value)
    }
}

impl From<i32> for FieldValue {
    fn from(value: i32) -> Self {
        FieldValue::Integer(value.into())
    }
}

impl From<bool> for FieldValue {
    fn from(value: bool) -> Self {
        FieldValue::Boolean(value)
    }
}

/// The answers to earlier forms, with no state, as the host passes them:
/// for calling a pack's functions in tests.
pub fn answers(answers: impl IntoIterator<Item = FormAnswer>) -> Input {
    Input { answers: answers.into_iter().collect(), state: Vec::new() }
}

/// The form `key`, submitted with these field values.
pub fn accepted<'a, V: Into<FieldValue>>(key: &str, fields: impl IntoIterator<Item = (&'a str, V)>) -> FormAnswer {
    let fields = fields.into_iter().map(|(name, value)| FieldAnswer { name: name.to_string(), value: value.into() }).collect();
    FormAnswer { key: key.to_string(), response: FormResponse::Accept(fields) }
}

/// The form `key`, declined.
pub fn declined(key: &str) -> FormAnswer {
    FormAnswer { key: key.to_string(), response: FormResponse::Decline }
}

/// What a pack of templates says it is, in WIT 0.2: implement it beside
/// [`TemplatePack`](crate::TemplatePack) and the SDK implements the 0.2
/// `Guest` for the type. (In WIT 0.3, [`v0_3::DescribePack`](crate::v0_3::DescribePack).)
pub trait DescribePack {
    /// The pack's name, version and the rest; usually
    /// [`cargo_pack_info!()`](crate::cargo_pack_info).
    fn describe() -> PackInfo;
}

/// What a pack says it is, from the `[package]` of the Cargo.toml of the
/// crate that calls it: name, version, description, authors, license,
/// homepage and repository (those left out are none).
#[macro_export]
macro_rules! cargo_pack_info {
    () => {
        $crate::PackInfo::from_cargo(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            env!("CARGO_PKG_DESCRIPTION"),
            env!("CARGO_PKG_AUTHORS"),
            env!("CARGO_PKG_LICENSE"),
            env!("CARGO_PKG_HOMEPAGE"),
            env!("CARGO_PKG_REPOSITORY"),
        )
    };
}

impl PackInfo {
    /// The pack info from Cargo's package fields, as
    /// [`cargo_pack_info!`](crate::cargo_pack_info) reads them: an empty
    /// field is none, and authors are separated by colons.
    #[doc(hidden)]
    pub fn from_cargo(
        name: &str,
        version: &str,
        description: &str,
        authors: &str,
        license: &str,
        homepage: &str,
        repository: &str,
    ) -> PackInfo {
        let given = |value: &str| (!value.trim().is_empty()).then(|| value.to_string());
        PackInfo {
            name: name.to_string(),
            version: version.to_string(),
            description: given(description),
            authors: authors.split(':').filter_map(given).collect(),
            license: given(license),
            homepage: given(homepage),
            repository: given(repository),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_take_defaults_of_their_kind() {
        assert_eq!(integer_field("n", "N").default(3).kind, FieldKind::Integer(Some(3)));
        assert_eq!(number_field("x", "X").default(2).kind, FieldKind::Number(Some(2.0)));
        assert_eq!(boolean_field("b", "B").default(true).kind, FieldKind::Boolean(Some(true)));
        let level = enum_field("level", "L", &["low", "high"]).default("low").optional();
        assert_eq!(level.kind, FieldKind::Enum(EnumField { choices: vec!["low".into(), "high".into()], default: Some("low".into()) }));
        assert!(!level.required);
    }

    #[test]
    #[should_panic(expected = "field 'n' is an integer field, and its default FieldValue::String(\"three\") is of another kind")]
    fn a_default_of_another_kind_is_a_mistake() {
        let _ = integer_field("n", "N").default("three");
    }

    #[test]
    fn answers_are_read_by_form_and_field() {
        let input = answers([accepted("who", [("name", "Ada")]), declined("when")]).with_state(*b"s");
        assert_eq!(input.value("who", "name").and_then(FieldValue::as_str), Some("Ada"));
        assert_eq!(input.value("who", "age"), None);
        assert_eq!(input.value("when", "date"), None);
        assert_eq!(input.response("when"), Some(&FormResponse::Decline));
        assert_eq!(input.state, b"s");
    }

    #[test]
    fn cargo_fields_left_out_are_none() {
        let info = PackInfo::from_cargo("acme", "1.0.0", "", "Ada <ada@example.com>:Grace", "MIT", "", "https://x.example");
        assert_eq!(info.description, None);
        assert_eq!(info.authors, ["Ada <ada@example.com>", "Grace"]);
        assert_eq!(info.homepage, None);
        assert_eq!(info.repository.as_deref(), Some("https://x.example"));
        assert_eq!(crate::cargo_pack_info!().description.as_deref(), Some("Write prompt packs for prompt-host in Rust"));
    }
}
