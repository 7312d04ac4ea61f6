//! Typed prompt arguments (WIT 0.3): what a pack declared an argument to
//! take, checked once at load (`validate::argument_declarations` builds
//! these), and then, for every request, a client's value checked against
//! it before the pack runs, completions of choices and booleans answered
//! without running the pack, and the declaration shown to clients (a JSON
//! Schema fragment, and a short hint for clients that show only text).
//!
//! MCP passes every argument value as a string, and so does the host: a
//! value that passes reaches the pack as the client wrote it, but for an
//! integer, which reaches it in plain decimal (`1.0` and `1e2` are integers
//! as JSON Schema counts them, and reach the pack as `1` and `100`).
//!
//! The published schema says what the host enforces, for a client that
//! reads each value as JSON when it is one (a number, `true`, `false`,
//! written with no space around it) and as a string otherwise: patterns
//! in the syntax ECMA-262 and Python's `re` read alike (`pattern`), URIs
//! as a pattern of their own, integers and numbers within the host's range.

use serde_json::{Value, json};

use crate::model;

mod pattern;

pub use pattern::{MAX_PATTERN_NESTING, MAX_PUBLISHED_PATTERN_BYTES, MAX_REPETITION, Pattern};

/// The most choices an argument may declare (also the most values one
/// `completion/complete` answer may hold).
pub const MAX_CHOICES: usize = 100;
/// The longest choice, default or example, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;
/// The most examples an argument may give.
pub const MAX_EXAMPLES: usize = 8;
/// The longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1 << 10;
/// The most memory one compiled pattern may take (the `regex` crate's size
/// limit, for the program and for its lazy DFA each).
pub const MAX_PATTERN_COMPILED_BYTES: usize = 256 << 10;
/// The most patterns one pack may declare: each compiled keeps up to a few
/// MiB (its programs and DFAs), so their number is bounded, not only their size.
pub const MAX_PATTERNS: usize = 16;
/// The most schemes a URI argument may name.
pub const MAX_SCHEMES: usize = 16;
/// The greatest integer the host takes, and its negative the least:
/// JavaScript's `Number.MAX_SAFE_INTEGER`, the last of the integers every
/// client's JSON reads exactly, so its validator and the host agree on each.
pub const MAX_INTEGER: i64 = (1 << 53) - 1;
/// The most of a client's value quoted back in a refusal, in bytes.
pub const MAX_SHOWN_VALUE_BYTES: usize = 256;
/// The key of a listed prompt's `_meta` under which the host puts the
/// JSON Schema of its typed arguments.
pub const SCHEMA_META_KEY: &str = "prompt-host/arguments";
/// The most choices a refusal or a hint lists before saying how many more.
const LISTED_CHOICES: usize = 10;

/// What values an argument takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Any text, within bounds.
    Text {
        /// The most characters (Unicode scalar values).
        max_length: Option<u32>,
        /// The pattern the whole value must match.
        pattern: Option<Pattern>,
    },
    /// A whole number as JSON writes one (`3`, `3.0`, `3e0`), within
    /// ±[`MAX_INTEGER`] and inclusive bounds; the pack reads it in decimal.
    Integer {
        /// The least value.
        min: Option<i64>,
        /// The greatest value.
        max: Option<i64>,
    },
    /// A number as JSON writes one, within inclusive bounds.
    Number {
        /// The least value.
        min: Option<f64>,
        /// The greatest value.
        max: Option<f64>,
    },
    /// `true` or `false`.
    Boolean,
    /// One of these strings, exactly.
    Choice(Vec<String>),
    /// An absolute URI, of one of these schemes if any are named.
    Uri {
        /// The schemes allowed, lowercase; empty means any.
        schemes: Vec<String>,
        /// What such a URI is, as checked and published ([`Pattern::uri`]).
        pattern: Pattern,
    },
}

/// One argument as a 0.3 pack declared it, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// The argument's name.
    pub name: String,
    /// Whether a client must pass it (never, with a default).
    pub required: bool,
    /// What values it takes; none means any string.
    pub kind: Option<Kind>,
    /// The value passed when a client gives none: of the kind.
    pub default: Option<String>,
    /// Example values: of the kind.
    pub examples: Vec<String>,
}

/// The declared arguments of one prompt of a 0.3 pack, in declaration
/// order, and whether the host asks the user for those missing (0.3.1's
/// `asking`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptArguments {
    /// The arguments, in declaration order.
    pub declared: Vec<Declared>,
    /// Whether the prompt opted in to have the host ask for its missing
    /// required arguments, with a form built from [`Self::form_for_missing`].
    pub asks_for_missing: bool,
}

/// Completions answered from a declaration: the values that start with
/// what the user typed, at most [`MAX_CHOICES`], and how many matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    /// The values, in declaration order.
    pub values: Vec<String>,
    /// How many values matched in all.
    pub total: usize,
    /// Whether more matched than `values` holds.
    pub has_more: bool,
}

/// The key of the form the host builds for missing arguments.
pub const ARGUMENTS_FORM_KEY: &str = "arguments";

/// An answer to a field of that form, as the argument value a client would
/// have passed: text as it is, a whole number in decimal, a number as JSON
/// writes it, a boolean as `true` or `false`. The host checks it against the
/// argument's kind afterwards, as any value.
pub fn argument_value(value: &model::FieldValue) -> String {
    match value {
        model::FieldValue::String(text) => text.clone(),
        model::FieldValue::Integer(integer) => integer.to_string(),
        // A whole number as the user typed it (`1`, not `1.0`).
        model::FieldValue::Number(number) if number.fract() == 0.0 && number.abs() < 1e15 => (*number as i64).to_string(),
        model::FieldValue::Number(number) => {
            serde_json::Number::from_f64(*number).map_or_else(|| number.to_string(), |number| number.to_string())
        }
        model::FieldValue::Boolean(boolean) => boolean.to_string(),
    }
}

impl Kind {
    /// An absolute URI, of one of `schemes` (lowercase) if any are named.
    pub fn uri(schemes: Vec<String>) -> Kind {
        let pattern = Pattern::uri(&schemes);
        Kind::Uri { schemes, pattern }
    }

    /// The kind of form field that asks for a value of this kind: a choice
    /// is a list to pick from, a boolean a yes or no, an integer or a
    /// number a number (its bounds checked on the answer), text and a URI
    /// text.
    pub fn field(&self) -> model::FieldKind {
        match self {
            Kind::Text { .. } | Kind::Uri { .. } => model::FieldKind::String(None),
            Kind::Integer { .. } => model::FieldKind::Integer(None),
            Kind::Number { .. } => model::FieldKind::Number(None),
            Kind::Boolean => model::FieldKind::Boolean(None),
            Kind::Choice(choices) => model::FieldKind::Enum(model::EnumField { choices: choices.clone(), default: None }),
        }
    }

    /// Whether `value` is of this kind; else what was expected
    /// ([`Kind::expected`]).
    pub fn check(&self, value: &str) -> Result<(), String> {
        let fits = match self {
            Kind::Text { max_length, pattern } => {
                max_length.is_none_or(|max| value.chars().count() <= max as usize)
                    && pattern.as_ref().is_none_or(|pattern| pattern.regex.is_match(value))
            }
            Kind::Integer { min, max } => {
                integer(value).is_some_and(|number| min.is_none_or(|min| number >= min) && max.is_none_or(|max| number <= max))
            }
            Kind::Number { min, max } => {
                number(value).is_some_and(|number| min.is_none_or(|min| number >= min) && max.is_none_or(|max| number <= max))
            }
            Kind::Boolean => value == "true" || value == "false",
            Kind::Choice(choices) => choices.iter().any(|choice| choice == value),
            Kind::Uri { pattern, .. } => pattern.regex.is_match(value),
        };
        if fits { Ok(()) } else { Err(self.expected()) }
    }

    /// What a value of this kind is, as a person reads it: `an integer from
    /// 1 to 10`, `one of: short, long`.
    pub fn expected(&self) -> String {
        match self {
            Kind::Text { max_length, pattern } => {
                let mut expected = "text".to_string();
                if let Some(max) = max_length {
                    expected.push_str(&format!(" of at most {max} characters"));
                }
                if let Some(pattern) = pattern {
                    expected.push_str(&format!(" matching the pattern {:?}", pattern.source));
                }
                expected
            }
            Kind::Integer { min: given_min, max: given_max } => {
                let (min, max) = integer_bounds(*given_min, *given_max);
                format!("an integer{}", bounds(given_min.map(|_| min.to_string()), given_max.map(|_| max.to_string())))
            }
            Kind::Number { min, max } => format!("a number{}", bounds(min.map(number_text), max.map(number_text))),
            Kind::Boolean => "true or false".to_string(),
            Kind::Choice(choices) => format!("one of: {}", listed(choices)),
            Kind::Uri { schemes, .. } if schemes.is_empty() => "an absolute URI".to_string(),
            Kind::Uri { schemes, .. } => format!("an absolute URI of scheme {}", schemes.join(" or ")),
        }
    }

    /// The JSON Schema of a value of this kind (the value the string
    /// holds: `{"type": "integer"}` for `"42"`).
    fn schema(&self) -> serde_json::Map<String, Value> {
        let mut schema = serde_json::Map::new();
        let mut set = |key: &str, value: Value| {
            schema.insert(key.to_string(), value);
        };
        match self {
            Kind::Text { max_length, pattern } => {
                set("type", json!("string"));
                if let Some(max) = max_length {
                    set("maxLength", json!(max));
                }
                if let Some(pattern) = pattern {
                    set("pattern", json!(pattern.published));
                }
            }
            // Bounds as the host's own range where the pack gives none or
            // a wider one: a value past it is no integer or number to the host.
            Kind::Integer { min, max } => {
                set("type", json!("integer"));
                let (min, max) = integer_bounds(*min, *max);
                set("minimum", json!(min));
                set("maximum", json!(max));
            }
            Kind::Number { min, max } => {
                set("type", json!("number"));
                set("minimum", json!(min.unwrap_or(f64::MIN)));
                set("maximum", json!(max.unwrap_or(f64::MAX)));
            }
            Kind::Boolean => set("type", json!("boolean")),
            Kind::Choice(choices) => {
                set("type", json!("string"));
                set("enum", json!(choices));
            }
            // No `format`: validators check `uri` each their own way (ajv's
            // refuses `|`, python-jsonschema checks no format by default).
            Kind::Uri { pattern, .. } => {
                set("type", json!("string"));
                set("pattern", json!(pattern.published));
            }
        }
        schema
    }

    /// `value` (of this kind) as the JSON value the schema describes.
    fn typed(&self, value: &str) -> Value {
        match self {
            Kind::Integer { .. } => integer(value).map_or_else(|| json!(value), |number| json!(number)),
            Kind::Number { .. } => number(value).map_or_else(|| json!(value), |number| json!(number)),
            Kind::Boolean => json!(value == "true"),
            _ => json!(value),
        }
    }

    /// The values the host completes from the declaration (choices and
    /// booleans); none for kinds whose completions the pack gives.
    fn values(&self) -> Option<Vec<&str>> {
        match self {
            Kind::Boolean => Some(vec!["true", "false"]),
            Kind::Choice(choices) => Some(choices.iter().map(String::as_str).collect()),
            _ => None,
        }
    }
}

impl Declared {
    /// The short hint a listed description ends with, for clients that
    /// show only text: `one of: short, long; default short`. None for an
    /// argument with neither a kind nor a default.
    pub fn hint(&self) -> Option<String> {
        let kind = self.kind.as_ref().map(Kind::expected);
        let default = self.default.as_ref().map(|default| format!("default {default}"));
        match (kind, default) {
            (None, None) => None,
            (Some(kind), None) => Some(kind),
            (None, Some(default)) => Some(default),
            (Some(kind), Some(default)) => Some(format!("{kind}; {default}")),
        }
    }

    /// The description as listed: the pack's, and the hint after it.
    pub fn described(&self, description: Option<&str>) -> Option<String> {
        match (description, self.hint()) {
            (description, None) => description.map(str::to_string),
            (None, Some(hint)) => Some(format!("({hint})")),
            (Some(description), Some(hint)) => Some(format!("{description} ({hint})")),
        }
    }

    /// The argument's JSON Schema fragment: its kind, default and examples.
    pub fn schema(&self) -> Value {
        let mut schema = self.kind.as_ref().map(Kind::schema).unwrap_or_else(|| {
            let mut schema = serde_json::Map::new();
            schema.insert("type".into(), json!("string"));
            schema
        });
        let typed = |value: &str| self.kind.as_ref().map_or_else(|| json!(value), |kind| kind.typed(value));
        if let Some(default) = &self.default {
            schema.insert("default".into(), typed(default));
        }
        if !self.examples.is_empty() {
            schema.insert("examples".into(), Value::Array(self.examples.iter().map(|example| typed(example)).collect()));
        }
        Value::Object(schema)
    }

    /// The completions of this argument the host answers itself, for what
    /// the user typed (`typed`): the values that start with it. None when
    /// the pack answers them.
    pub fn complete(&self, typed: &str) -> Option<Completed> {
        let values = self.kind.as_ref()?.values()?;
        let matching: Vec<&str> = values.into_iter().filter(|value| value.starts_with(typed)).collect();
        let total = matching.len();
        let values: Vec<String> = matching.into_iter().take(MAX_CHOICES).map(str::to_string).collect();
        Some(Completed { has_more: total > values.len(), values, total })
    }
}

/// A client's value that is not of its argument's kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The argument.
    pub argument: String,
    /// What it takes ([`Kind::expected`]).
    pub expected: String,
    /// What was given, made printable and cut to [`MAX_SHOWN_VALUE_BYTES`].
    pub given: String,
}

impl From<Vec<Declared>> for PromptArguments {
    /// These declarations, of a prompt that does not ask for missing arguments.
    fn from(declared: Vec<Declared>) -> PromptArguments {
        PromptArguments { declared, asks_for_missing: false }
    }
}

impl PromptArguments {
    /// Fills in the default of each declared argument the client left out,
    /// then checks every declared argument's value against its kind: the
    /// first that is not of it is refused. Undeclared arguments pass as
    /// they came.
    pub fn apply(&self, arguments: &mut Vec<model::Argument>) -> Result<(), Refused> {
        for declared in &self.declared {
            if let Some(default) = &declared.default
                && !arguments.iter().any(|argument| argument.name == declared.name)
            {
                arguments.push(model::Argument { name: declared.name.clone(), value: default.clone() });
            }
        }
        for argument in arguments.iter_mut() {
            let Some(kind) = self.get(&argument.name).and_then(|declared| declared.kind.as_ref()) else { continue };
            kind.check(&argument.value).map_err(|expected| Refused {
                argument: argument.name.clone(),
                expected,
                given: crate::shown::cut_printable(&argument.value, MAX_SHOWN_VALUE_BYTES),
            })?;
            if let Kind::Integer { .. } = kind
                && let Some(number) = integer(&argument.value)
            {
                argument.value = number.to_string();
            }
        }
        Ok(())
    }

    /// A completion's context as the pack's `complete` sees it: the values
    /// of declared arguments that are not of their kind left out (a form
    /// half filled in), integers in plain decimal.
    pub fn completion_context(&self, context: Vec<model::Argument>) -> Vec<model::Argument> {
        context
            .into_iter()
            .filter_map(|mut argument| {
                let Some(kind) = self.get(&argument.name).and_then(|declared| declared.kind.as_ref()) else { return Some(argument) };
                kind.check(&argument.value).ok()?;
                if let (Kind::Integer { .. }, Some(number)) = (kind, integer(&argument.value)) {
                    argument.value = number.to_string();
                }
                Some(argument)
            })
            .collect()
    }

    /// `prompt`'s argument descriptions as listed: each with the hint of its
    /// declaration ([`Declared::described`]), and not required when it has
    /// a default.
    pub fn describe(&self, prompt: &mut model::Prompt) {
        for argument in &mut prompt.arguments {
            if let Some(declared) = self.get(&argument.name) {
                argument.description = declared.described(argument.description.as_deref());
                argument.required = declared.required;
            }
        }
    }

    /// The declaration of argument `name`, if declared.
    pub fn get(&self, name: &str) -> Option<&Declared> {
        self.declared.iter().find(|declared| declared.name == name)
    }

    /// The completion the host answers itself for argument `argument`
    /// from its declaration (a choice or a boolean), for what the user
    /// typed; none when the pack answers it.
    pub fn completion(&self, argument: &str, typed: &str) -> Option<model::Completion> {
        let completed = self.get(argument)?.complete(typed)?;
        let total = u32::try_from(completed.total).unwrap_or(u32::MAX);
        Some(model::Completion { values: completed.values, total: Some(total), has_more: completed.has_more })
    }

    /// The form the host asks the user to fill in for `prompt`'s required
    /// arguments `missing` (0.3.1's `asking`): one field for each, in
    /// declaration order, titled and described as listed (with its hint),
    /// of the form kind its declaration maps to ([`Kind::field`]), its
    /// message naming the prompt as clients see it (`served_name`). Key
    /// [`ARGUMENTS_FORM_KEY`]; no state.
    pub fn form_for_missing(&self, prompt: &model::Prompt, served_name: &str, missing: &[&str]) -> model::InputRequired {
        let fields = prompt
            .arguments
            .iter()
            .filter(|argument| missing.contains(&argument.name.as_str()))
            .map(|argument| model::FormField {
                name: argument.name.clone(),
                title: argument.title.clone(),
                description: argument.description.clone(),
                kind: self
                    .get(&argument.name)
                    .and_then(|declared| declared.kind.as_ref())
                    .map_or(model::FieldKind::String(None), Kind::field),
                required: true,
            })
            .collect();
        let form = model::Form {
            key: ARGUMENTS_FORM_KEY.to_string(),
            message: format!("The prompt {served_name} needs: {}", missing.join(", ")),
            fields,
        };
        model::InputRequired { forms: vec![form], state: Vec::new() }
    }

    /// The JSON Schema of the prompt's arguments as an object: each
    /// argument's fragment under `properties`, and those a client must pass
    /// under `required`.
    pub fn schema(&self) -> Value {
        let properties: serde_json::Map<String, Value> =
            self.declared.iter().map(|declared| (declared.name.clone(), declared.schema())).collect();
        let required: Vec<&str> =
            self.declared.iter().filter(|declared| declared.required).map(|declared| declared.name.as_str()).collect();
        json!({ "type": "object", "properties": properties, "required": required })
    }
}

/// An integer as JSON Schema counts one: a number as JSON writes it (no
/// leading zero, no `+`, no space) whose value, read as clients read JSON
/// (the nearest double), is whole (`1.0`, `1e2`) and within
/// ±[`MAX_INTEGER`].
fn integer(value: &str) -> Option<i64> {
    let number = number(value)?;
    (number.fract() == 0.0 && number.abs() <= MAX_INTEGER as f64).then_some(number as i64)
}

/// An integer argument's bounds within the host's range.
fn integer_bounds(min: Option<i64>, max: Option<i64>) -> (i64, i64) {
    (min.map_or(-MAX_INTEGER, |min| min.max(-MAX_INTEGER)), max.map_or(MAX_INTEGER, |max| max.min(MAX_INTEGER)))
}

/// A finite number, written as JSON writes one (no spaces, no `NaN`), read
/// as the nearest double, as JavaScript and Python read it.
fn number(value: &str) -> Option<f64> {
    serde_json::from_str::<serde_json::Number>(value).ok().filter(|_| value.trim() == value)?;
    // Rust's own parser, correctly rounded (serde_json's default is not
    // always, and a client's validator reads the nearest double).
    value.parse::<f64>().ok().filter(|number| number.is_finite())
}

/// ` from 1 to 10`, ` of at least 1`, ` of at most 10`, or nothing.
fn bounds(min: Option<String>, max: Option<String>) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!(" from {min} to {max}"),
        (Some(min), None) => format!(" of at least {min}"),
        (None, Some(max)) => format!(" of at most {max}"),
        (None, None) => String::new(),
    }
}

/// A bound as people read it: `1`, `0.5`, `1e-300` (never 300 digits).
fn number_text(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 { format!("{}", number as i64) } else { json!(number).to_string() }
}

/// `a, b, c`, or the first few and how many more.
fn listed(choices: &[String]) -> String {
    let shown = choices.iter().take(LISTED_CHOICES).map(String::as_str).collect::<Vec<_>>().join(", ");
    match choices.len().saturating_sub(LISTED_CHOICES) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_answer_becomes_the_argument_value_a_client_would_write() {
        use model::FieldValue;
        let values = [FieldValue::Number(1.0), FieldValue::Number(-0.5), FieldValue::Number(1e300), FieldValue::Integer(-7)];
        let written: Vec<String> = values.iter().map(argument_value).collect();
        assert_eq!(written, ["1", "-0.5", "1e+300", "-7"]);
        assert_eq!(argument_value(&FieldValue::Boolean(true)), "true");
        assert_eq!(argument_value(&FieldValue::String("a \"b\"".into())), "a \"b\"");
    }

    fn declared(kind: Kind) -> Declared {
        Declared { name: "a".into(), required: false, kind: Some(kind), default: None, examples: Vec::new() }
    }

    #[test]
    fn each_kind_accepts_its_values_and_names_what_it_expected() {
        let text = Kind::Text { max_length: Some(3), pattern: Some(Pattern::compile("[a-z]+").unwrap()) };
        assert_eq!(text.check("abc"), Ok(()));
        assert_eq!(text.check("abcd"), Err("text of at most 3 characters matching the pattern \"[a-z]+\"".into()));
        // Anchored: a match inside the value is not enough.
        assert!(text.check("1a").is_err());
        assert_eq!(Kind::Text { max_length: Some(2), pattern: None }.check("éé"), Ok(()));
        let integer = Kind::Integer { min: Some(1), max: Some(10) };
        assert_eq!(integer.check("10"), Ok(()));
        for refused in ["11", "0", "+5", " 5", "5.5", "", "-", "1e2", "007", "99999999999999999999", "1e19"] {
            assert_eq!(integer.check(refused), Err("an integer from 1 to 10".into()), "{refused:?}");
        }
        // Whole numbers as JSON writes them are integers, as JSON Schema counts them.
        for accepted in ["5.0", "1e1", "10.00", "5E0"] {
            assert_eq!(integer.check(accepted), Ok(()), "{accepted:?}");
        }
        assert_eq!(Kind::Integer { min: None, max: None }.check("-12"), Ok(()));
        // The host's range is the integers every client reads exactly, and a
        // value is what a client's JSON reads: the nearest double.
        let any = Kind::Integer { min: None, max: None };
        for accepted in ["9007199254740991", "-9007199254740991", "0.99999999999999999999", "9007199254740991.4", "-0"] {
            assert_eq!(any.check(accepted), Ok(()), "{accepted:?}");
        }
        for refused in ["9007199254740992", "9007199254740993.0", "-9223372036854775809", "9223372036854775807", "1e16", "0.5"] {
            assert_eq!(any.check(refused), Err("an integer".into()), "{refused:?}");
        }
        let wide = Kind::Integer { min: Some(i64::MIN), max: Some(i64::MAX) };
        assert_eq!(wide.schema()["minimum"], json!(-MAX_INTEGER));
        assert_eq!(wide.schema()["maximum"], json!(MAX_INTEGER));
        assert_eq!(wide.check("9007199254740992"), Err("an integer from -9007199254740991 to 9007199254740991".into()));
        let number = Kind::Number { min: Some(-1.5), max: None };
        for accepted in ["-1.5", "0", "1e3", "2.25"] {
            assert_eq!(number.check(accepted), Ok(()), "{accepted:?}");
        }
        for refused in ["-2", "NaN", "inf", "1e400", " 1", ".5", "0x10"] {
            assert_eq!(number.check(refused), Err("a number of at least -1.5".into()), "{refused:?}");
        }
        assert_eq!(Kind::Boolean.check("true"), Ok(()));
        assert_eq!(Kind::Boolean.check("True"), Err("true or false".into()));
        let choice = Kind::Choice(vec!["short".into(), "long".into()]);
        assert_eq!(choice.check("long"), Ok(()));
        assert_eq!(choice.check("Long"), Err("one of: short, long".into()));
        let uri = Kind::uri(vec!["https".into(), "file".into()]);
        assert_eq!(uri.check("HTTPS://example.com/a"), Ok(()));
        assert_eq!(uri.check("file:///src/main.py"), Ok(()));
        assert_eq!(uri.check("http://example.com"), Err("an absolute URI of scheme https or file".into()));
        assert_eq!(Kind::uri(vec![]).check("relative/path"), Err("an absolute URI".into()));
        // White space, controls and format characters (a bidi override, a zero-width space).
        for refused in ["https://exa\r\nmple.com", "\u{1}https://x", "https://x/a b", "https://a\u{202E}b", "https://a\u{200B}b"] {
            assert!(uri.check(refused).is_err(), "{refused:?}");
        }
        assert_eq!(Kind::Number { min: Some(-1e300), max: Some(1e-300) }.expected(), "a number from -1e+300 to 1e-300");
    }

    #[test]
    fn defaults_fill_absent_arguments_and_every_declared_value_is_checked() {
        let arguments = PromptArguments::from(vec![
            Declared { default: Some("short".into()), ..declared(Kind::Choice(vec!["short".into(), "long".into()])) },
            Declared { name: "n".into(), ..declared(Kind::Integer { min: Some(1), max: None }) },
        ]);
        let argument = |name: &str, value: &str| model::Argument { name: name.into(), value: value.into() };
        let mut given = vec![argument("n", "2e1"), argument("extra", "anything")];
        assert_eq!(arguments.apply(&mut given), Ok(()));
        let pairs: Vec<(&str, &str)> = given.iter().map(|argument| (argument.name.as_str(), argument.value.as_str())).collect();
        // An integer reaches the pack in plain decimal.
        assert_eq!(pairs, [("n", "20"), ("extra", "anything"), ("a", "short")]);
        // A completion's context keeps what is of its kind.
        let context =
            arguments.completion_context(vec![argument("n", "0"), argument("a", "long"), argument("x", "1"), argument("n", "3.0")]);
        let pairs: Vec<(&str, &str)> = context.iter().map(|argument| (argument.name.as_str(), argument.value.as_str())).collect();
        assert_eq!(pairs, [("a", "long"), ("x", "1"), ("n", "3")]);
        let mut given = vec![argument("a", "long"), argument("n", &format!("0\u{1b}{}", "9".repeat(300)))];
        let refused = arguments.apply(&mut given).unwrap_err();
        assert_eq!((refused.argument.as_str(), refused.expected.as_str()), ("n", "an integer of at least 1"));
        // 256 bytes kept: "0", the escape's 6, and 249 of the 300 nines.
        assert_eq!(refused.given, format!("0\\u{{1b}}{}... [cut by prompt-host: 51 more bytes]", "9".repeat(249)));
    }

    #[test]
    fn a_long_list_of_choices_is_shown_cut() {
        let choices: Vec<String> = (0..25).map(|n| format!("c{n}")).collect();
        assert_eq!(Kind::Choice(choices).expected(), "one of: c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 and 15 more");
    }

    #[test]
    fn patterns_are_bounded_in_source_and_compiled_size() {
        assert_eq!(Pattern::compile(&"a".repeat(MAX_PATTERN_BYTES + 1)).unwrap_err(), "is 1025 bytes, more than the limit of 1024");
        assert!(Pattern::compile("(").unwrap_err().starts_with("is not an ECMA-262 pattern the host can publish: "));
        assert!(Pattern::compile(r"(?:\w{1000}){1000}").unwrap_err().starts_with("compiles to more than "));
        // Look-around is not in the linear-time syntax.
        assert!(Pattern::compile("(?=a)a").is_err());
        // A source cannot close the anchoring group.
        assert!(Pattern::compile("a)|(?:.*").unwrap_err().contains("closes no group"));
    }

    #[test]
    fn the_host_completes_choices_and_booleans_by_prefix_and_nothing_else() {
        let choice = declared(Kind::Choice(vec!["formal".into(), "casual".into(), "friendly".into()]));
        assert_eq!(choice.complete("f"), Some(Completed { values: vec!["formal".into(), "friendly".into()], total: 2, has_more: false }));
        assert_eq!(
            choice.complete(""),
            Some(Completed { values: vec!["formal".into(), "casual".into(), "friendly".into()], total: 3, has_more: false })
        );
        assert_eq!(choice.complete("x"), Some(Completed { values: vec![], total: 0, has_more: false }));
        assert_eq!(declared(Kind::Boolean).complete("t"), Some(Completed { values: vec!["true".into()], total: 1, has_more: false }));
        assert_eq!(declared(Kind::Integer { min: None, max: None }).complete(""), None);
        let untyped = Declared { kind: None, ..declared(Kind::Boolean) };
        assert_eq!(untyped.complete(""), None);
    }

    #[test]
    fn schemas_and_hints_say_the_kind_the_default_and_the_examples() {
        let tone = Declared {
            name: "tone".into(),
            required: false,
            kind: Some(Kind::Choice(vec!["short".into(), "long".into()])),
            default: Some("short".into()),
            examples: Vec::new(),
        };
        assert_eq!(tone.hint().as_deref(), Some("one of: short, long; default short"));
        assert_eq!(tone.described(Some("How long")).as_deref(), Some("How long (one of: short, long; default short)"));
        assert_eq!(tone.schema(), json!({ "type": "string", "enum": ["short", "long"], "default": "short" }));
        let count = Declared {
            name: "count".into(),
            required: true,
            kind: Some(Kind::Integer { min: Some(1), max: None }),
            default: None,
            examples: vec!["3".into()],
        };
        assert_eq!(count.schema(), json!({ "type": "integer", "minimum": 1, "maximum": MAX_INTEGER, "examples": [3] }));
        let arguments = PromptArguments::from(vec![tone, count]);
        assert_eq!(
            arguments.schema(),
            json!({
                "type": "object",
                "properties": {
                    "tone": { "type": "string", "enum": ["short", "long"], "default": "short" },
                    "count": { "type": "integer", "minimum": 1, "maximum": MAX_INTEGER, "examples": [3] },
                },
                "required": ["count"],
            })
        );
        let plain = Declared { name: "x".into(), required: false, kind: None, default: None, examples: Vec::new() };
        assert_eq!((plain.hint(), plain.described(Some("d")).as_deref()), (None, Some("d")));
    }
}
