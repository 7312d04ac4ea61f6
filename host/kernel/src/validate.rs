//! What a pack may hand back, checked in one place, per WIT return type:
//! its prompt definitions (at load), a `get-prompt` reply or (0.2) its
//! input-required forms and state, a completion, and an error or panic
//! message. Each bound is derived from the pack's
//! [`Limits`], and so is the copy budget ([`copy_budget`]) that the sandbox
//! gives each call, so the host never copies much more out of a pack than
//! the largest answer it would accept.
//!
//! A plugin is untrusted: a violation is reported with the field that is
//! wrong, so that the plugin's author can fix it.
//!
//! Sizes are measured as the client receives them: every string a pack
//! returns is counted by its length in JSON ([`json_escaped_len`]: a control
//! character is six bytes there, `\u0001`), and binary data by its base64
//! ([`base64_len`]), so that a byte budget is a budget of bytes on the wire.

use std::collections::HashSet;

use crate::arguments::{self, Declared, Kind, Pattern, PromptArguments};
use crate::limits::Limits;
use crate::model;
// The one rule for text a pack or a client controls, as it may be shown;
// below `arguments`, which quotes client values with it.
use crate::sandbox::{CallFailure, Listing};
pub use crate::shown::{TRUNCATION_MARKER, cut_printable, is_format, printable};

mod frontmatter;
mod pack_content;

pub use frontmatter::{MAX_DESCRIPTION_CHARS, MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_DEPTH, MAX_SKILL_NAME_CHARS};
pub use pack_content::{Body, Content, File, Resource, SKILL_MD, SKILL_SCHEME, Skill, pack_content, skill_prefix};

/// One thing wrong with a plugin, and how its author can fix it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// What is wrong, and where: `prompt "a", argument "x": declared more than once`.
    pub problem: String,
    /// How to fix it, where the problem alone does not say.
    pub hint: Option<&'static str>,
}

/// The longest prompt or argument name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The most of an error or panic message kept, in bytes: longer ones are cut
/// (with [`TRUNCATION_MARKER`]) before they reach a client or the log.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 4 << 10;

/// Room, per message of a reply, for what the host allocates besides the
/// message's strings when it copies it.
const COPY_ALLOWANCE_PER_MESSAGE: usize = 1 << 10;
/// Room, per prompt of a pack's definitions, for the same: wasmtime counts
/// about 80 bytes for each argument and icon of a prompt, so this leaves
/// room for about 50.
const COPY_ALLOWANCE_PER_PROMPT: usize = 4 << 10;
/// Room, per answer, for what is not counted per item.
const COPY_ALLOWANCE: usize = 64 << 10;

/// The most forms one input-required answer may hold.
pub const MAX_FORMS: usize = 8;
/// The most fields one form may hold.
pub const MAX_FORM_FIELDS: usize = 32;
/// The most choices one enum field may offer.
/// (As many as a typed argument may declare.)
pub const MAX_ENUM_CHOICES: usize = arguments::MAX_CHOICES;

/// The calls into a pack, by what they return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `list-prompts`: the pack's prompt definitions.
    Definitions,
    /// `get-prompt`: a reply, or an error.
    Reply,
    /// `complete`: a completion, or an error.
    Completion,
    /// `content` (0.4): the skills' files and static resources.
    Content,
}

/// Room, per skill file or static resource, for what the host allocates
/// besides its strings and bytes when it copies it.
const COPY_ALLOWANCE_PER_FILE: usize = 128;

/// The most bytes the host copies out of a pack for one answer before it
/// refuses it (wasmtime's "hostcall fuel"): the largest answer the limits
/// accept, plus room for its structure. A pack that returns more, even as
/// strings that all alias one buffer, is stopped at the copy.
pub fn copy_budget(answer: Answer, limits: &Limits) -> usize {
    let (content, structure) = match answer {
        Answer::Definitions => (limits.max_catalog_bytes, limits.max_prompts.saturating_mul(COPY_ALLOWANCE_PER_PROMPT)),
        // A reply, or forms and their state.
        Answer::Reply => (
            limits.max_reply_bytes.max(limits.max_form_bytes.saturating_add(limits.max_input_state_bytes)),
            limits.max_messages.max(MAX_FORMS * MAX_FORM_FIELDS).saturating_mul(COPY_ALLOWANCE_PER_MESSAGE),
        ),
        // Values are counted by their bytes; the room per answer covers a
        // few thousand of them.
        Answer::Completion => (limits.max_reply_bytes, 0),
        // Raw bytes are never more than their size on the wire, which the
        // limit counts; the files are at most as many as the limits allow.
        Answer::Content => {
            let files = limits.max_skills.saturating_mul(limits.max_skill_files).saturating_add(limits.max_resources);
            (limits.max_content_bytes, files.saturating_mul(COPY_ALLOWANCE_PER_FILE))
        }
    };
    // An error message is copied whole before it is cut: it must fit too.
    let content = content.max(MAX_ERROR_MESSAGE_BYTES * 16);
    content.saturating_add(structure).saturating_add(COPY_ALLOWANCE)
}

/// The bytes `text` takes in JSON between its quotes, as serde_json writes
/// it (and so as a client receives it): `"` and `\\` and the control
/// characters with a short escape (`\n`, `\t`, `\r`, `\b`, `\f`) take two
/// bytes, every other character below U+0020 six (`\u0001`), the rest their
/// UTF-8 bytes.
pub fn json_escaped_len(text: &str) -> usize {
    let escapes: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\t' | b'\r' | 0x08 | 0x0c => 1,
            0x00..=0x1f => 5,
            _ => 0,
        })
        .sum();
    text.len() + escapes
}

/// The bytes `bytes` bytes of binary data take on the wire: base64 with
/// padding, as `convert` encodes them.
pub fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3).saturating_mul(4)
}

/// An error or panic message from a pack (or any text from outside quoted
/// in an error: a client's method name), as a client and the log may be
/// shown it: made [`printable`], and cut to [`MAX_ERROR_MESSAGE_BYTES`]
/// (escapes included) with a visible marker saying how many bytes of the
/// text were left out. Only what is kept is escaped. The cut is of the
/// printable text: JSON writes a quote, a backslash, LF and TAB of it in two
/// bytes, so on the wire a message takes at most twice that and the marker.
pub fn error_message(message: impl AsRef<str>) -> String {
    cut_printable(message.as_ref(), MAX_ERROR_MESSAGE_BYTES)
}

/// A call failure with any message the pack wrote cut as [`error_message`] cuts it.
pub fn call_failure(failure: CallFailure) -> CallFailure {
    match failure {
        CallFailure::Panic { message } => CallFailure::Panic { message: error_message(message) },
        CallFailure::Trap { message } => CallFailure::Trap { message: error_message(message) },
        other => other,
    }
}

const HINT_TOO_MANY: &str = "split the pack into several, or ask the operator to raise limits.max_prompts for this plugin";
const HINT_TOO_LARGE: &str = "shorten the titles, descriptions and icons (use https: icons rather than data: URIs), or ask the operator \
     to raise limits.max_catalog_kib for this plugin";
const HINT_NAME: &str = "use a name a client can type and send back, such as \"code-review\" or \"code_review\"";
const HINT_DECEPTIVE_NAME: &str = "names may hold no invisible formatting characters (bidirectional controls, \
     zero-width characters, byte order marks), which make a name display as another: remove them";
const HINT_DUPLICATE: &str = "give each prompt, and each argument of one prompt, a name of its own";
const HINT_ICON_SRC: &str = "use an absolute URI, such as https://example.com/icon.png or a data: URI";
const HINT_ICON_MIME: &str = "use an image media type, such as image/png or image/svg+xml";

/// A pack's listing, checked: what the host serves.
pub struct CheckedListing {
    /// The prompts, with each typed argument's hint in its description.
    pub prompts: Vec<model::Prompt>,
    /// The typed arguments of each prompt (0.3 packs), or none.
    pub typed: Vec<PromptArguments>,
    /// What a 0.2 or 0.3 pack says it is.
    pub info: Option<model::PackInfo>,
    /// The skills and static resources a 0.4 pack carries (none otherwise).
    pub content: Content,
}

/// Checks everything a pack's `describe-pack` and `list-prompts` answered
/// ([`pack_info`], [`wants`], [`argument_declarations`],
/// [`prompt_definitions`]). A listing with any problem is not served: the
/// problems, and the prompts as declared, for the report.
pub fn listing(listing: Listing, limits: &Limits) -> Result<CheckedListing, (Vec<Problem>, Vec<model::Prompt>)> {
    let Listing { mut prompts, typed_arguments, info, wants, prompts_that_ask, content } = listing;
    let mut problems = info.as_ref().map(pack_info).unwrap_or_default();
    problems.extend(wants.as_ref().map(self::wants).unwrap_or_default());
    let mut typed = match typed_arguments {
        true => {
            let (typed, found) = argument_declarations(&prompts);
            problems.extend(found);
            typed
        }
        false => Vec::new(),
    };
    // The hints are part of the descriptions the size limit counts.
    for (prompt, typed) in prompts.iter_mut().zip(&typed) {
        typed.describe(prompt);
    }
    problems.extend(prompt_definitions(&prompts, &typed, limits));
    if let Some(names) = prompts_that_ask
        && problems.is_empty()
    {
        problems.extend(asking(&names, &prompts, &mut typed, limits));
    }
    let content = match content.map(|content| pack_content(content, limits)).transpose() {
        Ok(content) => content.unwrap_or_default(),
        Err(found) => {
            problems.extend(found);
            Content::default()
        }
    };
    if !problems.is_empty() {
        return Err((problems, prompts));
    }
    Ok(CheckedListing { prompts, typed, info, content })
}

const HINT_ASKING: &str = "name in prompts-that-ask only prompts list-prompts lists, each once, whose required arguments fit one form \
     (at most 32 fields, within the form size limit)";

/// Checks the prompts a 0.3.1 pack opts in to have the host ask for their
/// missing arguments (`names`), and marks them in `typed`: each must be one
/// the pack lists (`prompts`, already checked), named once, and the form
/// for all its required arguments must pass the checks a pack's own form
/// passes ([`input_required`]), so that any form the host builds for it
/// does.
fn asking(names: &[String], prompts: &[model::Prompt], typed: &mut [PromptArguments], limits: &Limits) -> Vec<Problem> {
    let problem = |problem: String| Problem { problem, hint: Some(HINT_ASKING) };
    if names.len() > prompts.len() {
        return vec![problem(format!("prompts-that-ask names {} prompts, more than the {} it lists", names.len(), prompts.len()))];
    }
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for name in names {
        let shown = cut_printable(name, MAX_NAME_BYTES);
        let Some(at) = prompts.iter().position(|prompt| prompt.name == *name) else {
            problems.push(problem(format!("prompts-that-ask names {shown:?}, a prompt it does not list")));
            continue;
        };
        if !seen.insert(name.as_str()) {
            problems.push(problem(format!("prompts-that-ask names {shown:?} more than once")));
            continue;
        }
        let required: Vec<&str> =
            typed[at].declared.iter().filter(|declared| declared.required).map(|declared| declared.name.as_str()).collect();
        if !required.is_empty()
            && let Err(refused) = input_required(&typed[at].form_for_missing(&prompts[at], name, &required), limits)
        {
            problems.push(problem(format!("prompt {shown:?} asks for its missing arguments, but their form is refused: {refused}")));
            continue;
        }
        typed[at].asks_for_missing = true;
    }
    problems
}

/// Checks a plugin's prompt definitions: their number and their size in all
/// against the limits (with the schema the host adds to each prompt's
/// `_meta` for typed arguments, `typed`: one per prompt for a 0.3 pack,
/// empty otherwise), usable, unique names,
/// and well-formed icons. Returns every problem found, in declaration
/// order; a plugin with any is not loaded.
pub fn prompt_definitions(prompts: &[model::Prompt], typed: &[PromptArguments], limits: &Limits) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |problem: String, hint| problems.push(Problem { problem, hint: Some(hint) });
    if prompts.len() > limits.max_prompts {
        // Checking each of 100,000 prompts would bury this one problem.
        report(format!("{} prompts, more than the limit of {}", prompts.len(), limits.max_prompts), HINT_TOO_MANY);
        return problems;
    }
    let bytes: usize = prompts.iter().map(definition_bytes).sum::<usize>() + typed.iter().map(typed_bytes).sum::<usize>();
    if bytes > limits.max_catalog_bytes {
        report(format!("the definitions are {bytes} bytes in all, more than the limit of {}", limits.max_catalog_bytes), HINT_TOO_LARGE);
    }
    let mut names = HashSet::new();
    for prompt in prompts {
        let at = format!("prompt {:?}", prompt.name);
        if let Err((problem, hint)) = usable_name(&prompt.name) {
            report(format!("{at}: name {problem}"), hint);
        }
        if !names.insert(prompt.name.as_str()) {
            report(format!("{at}: declared more than once"), HINT_DUPLICATE);
        }
        let mut argument_names = HashSet::new();
        for argument in &prompt.arguments {
            let at = format!("{at}, argument {:?}", argument.name);
            if let Err((problem, hint)) = usable_name(&argument.name) {
                report(format!("{at}: name {problem}"), hint);
            }
            if !argument_names.insert(argument.name.as_str()) {
                report(format!("{at}: declared more than once"), HINT_DUPLICATE);
            }
        }
        for (index, icon) in prompt.icons.iter().enumerate() {
            let at = format!("{at}, icon {index}");
            if let Err(problem) = uri(&icon.src) {
                report(format!("{at}: src {problem}"), HINT_ICON_SRC);
            }
            if let Some(Err(problem)) = icon.mime_type.as_ref().map(|mime| media_type(mime, Some("image/"))) {
                report(format!("{at}: mime type {problem}"), HINT_ICON_MIME);
            }
        }
    }
    problems
}

/// Checks a plugin's reply to `get-prompt`: its size against the limits,
/// then every message's content.
pub fn reply(reply: &model::PromptReply, limits: &Limits) -> Result<(), String> {
    if reply.messages.len() > limits.max_messages {
        return Err(format!("it holds {} messages, more than the limit of {}", reply.messages.len(), limits.max_messages));
    }
    let description = reply.description.as_deref().map_or(0, json_escaped_len);
    if description > limits.max_string_bytes {
        return Err(format!("description is {description} bytes, more than the limit of {}", limits.max_string_bytes));
    }
    for (index, message) in reply.messages.iter().enumerate() {
        let at = |problem: String| format!("message {index}: {problem}");
        for (field, size) in content_sizes(&message.content) {
            if size > limits.max_string_bytes {
                return Err(at(format!("{field} is {size} bytes, more than the limit of {}", limits.max_string_bytes)));
            }
        }
        content(&message.content).map_err(at)?;
    }
    Ok(())
}

/// Checks a plugin's completion: no suggestion longer than a string may be.
/// (The whole answer is held to the reply limit by [`wire_size`].)
pub fn completion(completion: &model::Completion, limits: &Limits) -> Result<(), String> {
    for (index, value) in completion.values.iter().enumerate() {
        let size = json_escaped_len(value);
        if size > limits.max_string_bytes {
            return Err(format!("value {index} is {size} bytes, more than the limit of {}", limits.max_string_bytes));
        }
    }
    Ok(())
}

/// The one rule for what a client receives from a pack: the result, as it
/// will be sent (already converted to its MCP type), is at most
/// `max_reply_bytes` in serialized JSON. Measured exactly, by serializing
/// it into a counter: one pass, nothing allocated. The per-field checks in
/// [`reply`] and [`completion`] only name the field that is too large; this
/// counts everything (annotations, keys, punctuation, base64). The result
/// holds `"resultType":"complete"`, as a client of protocol 2026-07-28
/// receives it; rmcp strips it for older clients, who receive 24 bytes less.
pub fn wire_size<T: serde::Serialize + ?Sized>(result: &T, limits: &Limits) -> Result<(), String> {
    let bytes = json_bytes(result);
    if bytes > limits.max_reply_bytes {
        return Err(format!("it is {bytes} bytes on the wire, more than the limit of {}", limits.max_reply_bytes));
    }
    Ok(())
}

/// The bytes `value` takes in JSON, as serde_json writes it.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).expect("serializing to a counter cannot fail");
    counter.0
}

/// An [`std::io::Write`] that only counts what is written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks a 0.2 pack's input-required answer: at most [`MAX_FORMS`] forms
/// of at most [`MAX_FORM_FIELDS`] fields, every key and field name usable
/// and unique where it must be, every enum's choices unique and its default
/// among them, the forms' bytes in all and the state within the limits.
pub fn input_required(input: &model::InputRequired, limits: &Limits) -> Result<(), String> {
    use model::FieldKind;
    let count = |what: &str, found: usize, max: usize| match found {
        0 => Err(format!("{what}: none, and at least one is needed")),
        found if found > max => Err(format!("{what}: {found}, more than the limit of {max}")),
        _ => Ok(()),
    };
    count("forms", input.forms.len(), MAX_FORMS)?;
    if input.state.len() > limits.max_input_state_bytes {
        return Err(format!("its state is {} bytes, more than the limit of {}", input.state.len(), limits.max_input_state_bytes));
    }
    let optional = |text: &Option<String>| text.as_deref().map_or(0, json_escaped_len);
    let mut bytes = 0;
    let mut keys = HashSet::new();
    for form in &input.forms {
        let at = format!("form {:?}", form.key);
        usable_name(&form.key).map_err(|(problem, _)| format!("{at}: key {problem}"))?;
        if !keys.insert(form.key.as_str()) {
            return Err(format!("{at}: asked for more than once"));
        }
        count(&format!("{at}: fields"), form.fields.len(), MAX_FORM_FIELDS)?;
        bytes += json_escaped_len(&form.key) + json_escaped_len(&form.message);
        let mut names = HashSet::new();
        for field in &form.fields {
            let at = format!("{at}, field {:?}", field.name);
            usable_name(&field.name).map_err(|(problem, _)| format!("{at}: name {problem}"))?;
            if !names.insert(field.name.as_str()) {
                return Err(format!("{at}: declared more than once"));
            }
            bytes += json_escaped_len(&field.name) + optional(&field.title) + optional(&field.description);
            match &field.kind {
                FieldKind::String(default) => bytes += optional(default),
                FieldKind::Number(Some(default)) if !default.is_finite() => {
                    return Err(format!("{at}: default {default} is not a finite number"));
                }
                FieldKind::Number(_) | FieldKind::Integer(_) | FieldKind::Boolean(_) => {}
                FieldKind::Enum(choices) => {
                    count(&format!("{at}: choices"), choices.choices.len(), MAX_ENUM_CHOICES)?;
                    let mut seen = HashSet::new();
                    if let Some(duplicate) = choices.choices.iter().find(|choice| !seen.insert(choice.as_str())) {
                        return Err(format!("{at}: choice {duplicate:?} offered more than once"));
                    }
                    if let Some(default) = &choices.default
                        && !seen.contains(default.as_str())
                    {
                        return Err(format!("{at}: default {default:?} is not one of its choices"));
                    }
                    bytes += choices.choices.iter().map(|choice| json_escaped_len(choice)).sum::<usize>() + optional(&choices.default);
                }
            }
        }
    }
    if bytes > limits.max_form_bytes {
        return Err(format!("its forms are {bytes} bytes, more than the limit of {}", limits.max_form_bytes));
    }
    Ok(())
}

/// The most bytes of one string of a pack's description (`pack-info`).
pub const MAX_PACK_INFO_FIELD_BYTES: usize = 1 << 10;
/// The most authors a pack may name.
pub const MAX_PACK_AUTHORS: usize = 16;

const HINT_PACK_INFO: &str = "describe-pack: keep each string within 1 KiB, name at most 16 authors, give name and \
     version without whitespace, and homepage and repository as https: URLs";

/// Checks what a 0.2 pack says it is: every string at most
/// [`MAX_PACK_INFO_FIELD_BYTES`], at most [`MAX_PACK_AUTHORS`] authors, a
/// name and a version a person can read back (as names are), and a homepage
/// and repository that are `https:` or `http:` URLs. Returns every problem;
/// a pack with any is not loaded.
pub fn pack_info(info: &model::PackInfo) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |problem: String| problems.push(Problem { problem, hint: Some(HINT_PACK_INFO) });
    let optional =
        [("description", &info.description), ("license", &info.license), ("homepage", &info.homepage), ("repository", &info.repository)];
    let strings = [("name", Some(&info.name)), ("version", Some(&info.version))]
        .into_iter()
        .chain(optional.iter().map(|(field, value)| (*field, value.as_ref())))
        .chain(info.authors.iter().map(|author| ("author", Some(author))));
    for (field, value) in strings {
        if let Some(value) = value
            && value.len() > MAX_PACK_INFO_FIELD_BYTES
        {
            report(format!("pack {field} is {} bytes, more than the limit of {MAX_PACK_INFO_FIELD_BYTES}", value.len()));
        }
    }
    if info.authors.len() > MAX_PACK_AUTHORS {
        report(format!("pack names {} authors, more than the limit of {MAX_PACK_AUTHORS}", info.authors.len()));
    }
    for (field, value) in [("name", &info.name), ("version", &info.version)] {
        if let Err((problem, _)) = usable_name(value) {
            report(format!("pack {field} {problem}"));
        }
    }
    for (field, value) in [("homepage", &info.homepage), ("repository", &info.repository)] {
        let Some(value) = value else { continue };
        match url::Url::parse(value) {
            Ok(url) if matches!(url.scheme(), "https" | "http") => {}
            _ => report(format!("pack {field} {value:?} is not an https: or http: URL")),
        }
    }
    problems
}

/// What the host adds on the wire for one prompt's typed arguments: the
/// schema in the prompt's `_meta` (the hints are in the descriptions by
/// then, and counted with them).
fn typed_bytes(typed: &PromptArguments) -> usize {
    if typed.declared.is_empty() {
        return 0;
    }
    // The key, its quotes and the colon.
    json_bytes(&typed.schema()) + arguments::SCHEMA_META_KEY.len() + 3
}

/// The most problems with typed arguments reported for one pack.
const MAX_PROBLEMS: usize = 100;

const HINT_ARGUMENT_KIND: &str = "declare at most 100 distinct, non-empty choices of at most 256 bytes, bounds with min <= max \
     (finite numbers; integers within -(2^53-1) to 2^53-1), at most 16 patterns per pack of at most 1 KiB each in ECMA-262's syntax (no look-around, back-references, \\b, \\p or inline flags), at most 16 lowercase URI \
     schemes, and a default and at most 8 examples of the argument's kind";

/// Checks the typed arguments of a 0.3 pack's prompts, and turns them into
/// the host's [`PromptArguments`], one per prompt: each choice, bound,
/// pattern (compiled here, once), scheme, default and example. Returns them
/// with every problem found; a plugin with any is not loaded.
pub fn argument_declarations(declared: &[model::Prompt]) -> (Vec<PromptArguments>, Vec<Problem>) {
    let mut problems = Vec::new();
    let patterns = declared
        .iter()
        .flat_map(|prompt| &prompt.arguments)
        .filter(|argument| matches!(&argument.kind, Some(model::ArgumentKind::Text(text)) if text.pattern.is_some()))
        .count();
    if patterns > arguments::MAX_PATTERNS {
        // None is compiled: each keeps memory of its own.
        let problem = format!("{patterns} argument patterns, more than the limit of {}", arguments::MAX_PATTERNS);
        return (Vec::new(), vec![Problem { problem, hint: Some(HINT_ARGUMENT_KIND) }]);
    }
    let typed = declared
        .iter()
        .map(|prompt| {
            PromptArguments::from(
                prompt.arguments.iter().map(|argument| declared_argument(prompt, argument, &mut problems)).collect::<Vec<_>>(),
            )
        })
        .collect();
    (typed, problems)
}

/// One argument's declaration, checked (its problems added to `problems`,
/// up to [`MAX_PROBLEMS`]) and turned into the host's.
fn declared_argument(prompt: &model::Prompt, argument: &model::PromptArgument, problems: &mut Vec<Problem>) -> Declared {
    // Names not yet checked (prompt_definitions does): cut.
    let name = |name: &str| cut_printable(name, MAX_NAME_BYTES);
    let at = format!("prompt {:?}, argument {:?}", name(&prompt.name), name(&argument.name));
    let mut report = |problem: String| {
        if problems.len() < MAX_PROBLEMS {
            problems.push(Problem { problem: format!("{at}: {problem}"), hint: Some(HINT_ARGUMENT_KIND) })
        }
    };
    let kind = argument.kind.as_ref().and_then(|kind| argument_kind(kind).map_err(&mut report).ok());
    let mut value = |what: &str, value: &str| {
        if value.len() > arguments::MAX_VALUE_BYTES {
            report(format!("{what} is {} bytes, more than the limit of {}", value.len(), arguments::MAX_VALUE_BYTES));
        } else if let Some(Err(expected)) = kind.as_ref().map(|kind| kind.check(value)) {
            report(format!("{what} {:?} is not {expected}", printable(value)));
        }
    };
    if let Some(default) = &argument.default {
        value("default", default);
    }
    for example in &argument.examples {
        value("example", example);
    }
    if argument.examples.len() > arguments::MAX_EXAMPLES {
        report(format!("{} examples, more than the limit of {}", argument.examples.len(), arguments::MAX_EXAMPLES));
    }
    Declared {
        name: argument.name.clone(),
        required: argument.required && argument.default.is_none(),
        kind,
        default: argument.default.clone(),
        examples: argument.examples.clone(),
    }
}

/// One declared kind, checked and turned into the host's.
fn argument_kind(kind: &model::ArgumentKind) -> Result<Kind, String> {
    use model::ArgumentKind as Declared;
    Ok(match kind {
        Declared::Text(text) => Kind::Text {
            max_length: text.max_length,
            pattern: text.pattern.as_deref().map(Pattern::compile).transpose().map_err(|problem| format!("pattern {problem}"))?,
        },
        Declared::Integer(bounds) => {
            if let (Some(min), Some(max)) = (bounds.min, bounds.max)
                && min > max
            {
                return Err(format!("min {min} is more than max {max}"));
            }
            // Past the host's range, a bound would leave no integer to take.
            if let Some(min) = bounds.min.filter(|min| *min > arguments::MAX_INTEGER) {
                return Err(format!("min {min} is more than the greatest integer the host takes, {}", arguments::MAX_INTEGER));
            }
            if let Some(max) = bounds.max.filter(|max| *max < -arguments::MAX_INTEGER) {
                return Err(format!("max {max} is less than the least integer the host takes, -{}", arguments::MAX_INTEGER));
            }
            Kind::Integer { min: bounds.min, max: bounds.max }
        }
        Declared::Number(bounds) => {
            if [bounds.min, bounds.max].into_iter().flatten().any(|bound| !bound.is_finite()) {
                return Err("a bound is not a finite number".to_string());
            }
            if let (Some(min), Some(max)) = (bounds.min, bounds.max)
                && min > max
            {
                return Err(format!("min {min} is more than max {max}"));
            }
            Kind::Number { min: bounds.min, max: bounds.max }
        }
        Declared::Boolean => Kind::Boolean,
        Declared::Choice(choices) => {
            if choices.is_empty() || choices.len() > arguments::MAX_CHOICES {
                return Err(format!("{} choices: declare from 1 to {}", choices.len(), arguments::MAX_CHOICES));
            }
            let mut seen = HashSet::new();
            for choice in choices {
                if choice.is_empty() || choice.len() > arguments::MAX_VALUE_BYTES {
                    return Err(format!("choice {:?} is empty or longer than {} bytes", error_message(choice), arguments::MAX_VALUE_BYTES));
                }
                if choice.chars().any(|c| c.is_control() || is_format(c)) {
                    return Err(format!("choice {:?} holds control or format characters", printable(choice)));
                }
                if !seen.insert(choice.as_str()) {
                    return Err(format!("choice {choice:?} is declared more than once"));
                }
            }
            Kind::Choice(choices.clone())
        }
        Declared::Uri(uri) => {
            if uri.schemes.len() > arguments::MAX_SCHEMES {
                return Err(format!("{} schemes, more than the limit of {}", uri.schemes.len(), arguments::MAX_SCHEMES));
            }
            for scheme in &uri.schemes {
                let mut chars = scheme.chars();
                let valid = chars.next().is_some_and(|first| first.is_ascii_lowercase())
                    && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
                    && scheme.len() <= 32;
                if !valid {
                    return Err(format!("scheme {:?} is not a lowercase URI scheme", error_message(scheme)));
                }
            }
            Kind::uri(uri.schemes.clone())
        }
    })
}

/// The most folders, origins or values a pack may want, each.
pub const MAX_WANTS: usize = 16;

const HINT_WANTS: &str = "describe-pack: want at most 16 folders (each named like \"logs\"), 16 origins (each like \
     \"https://api.example.com\" with an optional path prefix) and 16 values (each like \"API_TOKEN\")";

/// Checks what a 0.3 pack says it wants to see: at most [`MAX_WANTS`] of
/// each; folder names a path segment can carry, origins `http:` or
/// `https:` URLs with a host and nothing after the path, value names of
/// ASCII letters, digits and `_`, each unique. Returns every problem.
pub fn wants(wants: &model::Wants) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |problem: String| problems.push(Problem { problem, hint: Some(HINT_WANTS) });
    for (what, count) in [("folders", wants.folders.len()), ("origins", wants.origins.len()), ("values", wants.env.len())] {
        if count > MAX_WANTS {
            report(format!("the pack wants {count} {what}, more than the limit of {MAX_WANTS}"));
        }
    }
    let mut seen = HashSet::new();
    for folder in &wants.folders {
        if !crate::grants::is_folder_name(&folder.name) {
            report(format!("wanted folder {:?} is not a name such as \"logs\"", error_message(&folder.name)));
        } else if !seen.insert(folder.name.as_str()) {
            report(format!("wanted folder {:?} is named more than once", folder.name));
        }
        if folder.description.as_ref().is_some_and(|description| description.len() > MAX_PACK_INFO_FIELD_BYTES) {
            report(format!("the description of wanted folder {:?} is more than {MAX_PACK_INFO_FIELD_BYTES} bytes", folder.name));
        }
    }
    for origin in &wants.origins {
        let parsed = url::Url::parse(origin).ok().filter(|url| {
            matches!(url.scheme(), "https" | "http")
                && url.host().is_some()
                && url.username().is_empty()
                && url.password().is_none()
                && url.query().is_none()
                && url.fragment().is_none()
        });
        if origin.len() > MAX_PACK_INFO_FIELD_BYTES || parsed.is_none() {
            report(format!(
                "wanted origin {:?} is not an https: or http: URL with a host, and no user, query or fragment",
                error_message(origin)
            ));
        }
    }
    let mut seen = HashSet::new();
    for name in &wants.env {
        if !crate::grants::is_value_name(name) {
            report(format!("wanted value {:?} is not a name such as \"API_TOKEN\"", error_message(name)));
        } else if !seen.insert(name.as_str()) {
            report(format!("wanted value {name:?} is named more than once"));
        }
    }
    problems
}

/// The bytes of every string in one prompt definition, on the wire.
fn definition_bytes(prompt: &model::Prompt) -> usize {
    let optional = |text: &Option<String>| text.as_deref().map_or(0, json_escaped_len);
    let arguments: usize = prompt
        .arguments
        .iter()
        .map(|argument| json_escaped_len(&argument.name) + optional(&argument.title) + optional(&argument.description))
        .sum();
    let icons: usize = prompt
        .icons
        .iter()
        .map(|icon| {
            json_escaped_len(&icon.src) + optional(&icon.mime_type) + icon.sizes.iter().map(|size| json_escaped_len(size)).sum::<usize>()
        })
        .sum();
    json_escaped_len(&prompt.name) + optional(&prompt.title) + optional(&prompt.description) + arguments + icons
}

/// The size on the wire of each string or byte string in one piece of
/// content, by field: strings JSON-escaped, binary data in base64.
fn content_sizes(content: &model::Content) -> Vec<(&'static str, usize)> {
    let optional = |text: &Option<String>| text.as_deref().map_or(0, json_escaped_len);
    let annotations = match content {
        model::Content::Text(text) => &text.annotations,
        model::Content::Image(media) | model::Content::Audio(media) => &media.annotations,
        model::Content::Resource(resource) => &resource.annotations,
        model::Content::ResourceLink(link) => &link.annotations,
    };
    let last_modified = annotations.as_ref().map_or(0, |annotations| optional(&annotations.last_modified));
    let mut sizes = content_field_sizes(content, optional);
    sizes.push(("annotations last modified", last_modified));
    sizes
}

fn content_field_sizes(content: &model::Content, optional: impl Fn(&Option<String>) -> usize) -> Vec<(&'static str, usize)> {
    match content {
        model::Content::Text(text) => vec![("text", json_escaped_len(&text.text))],
        model::Content::Image(media) => {
            vec![("image data", base64_len(media.data.len())), ("mime type", json_escaped_len(&media.mime_type))]
        }
        model::Content::Audio(media) => {
            vec![("audio data", base64_len(media.data.len())), ("mime type", json_escaped_len(&media.mime_type))]
        }
        model::Content::Resource(resource) => {
            let body = match &resource.body {
                model::ResourceBody::Text(text) => json_escaped_len(text),
                model::ResourceBody::Blob(blob) => base64_len(blob.len()),
            };
            vec![
                ("resource uri", json_escaped_len(&resource.uri)),
                ("resource mime type", optional(&resource.mime_type)),
                ("resource contents", body),
            ]
        }
        model::Content::ResourceLink(link) => vec![
            ("resource link uri", json_escaped_len(&link.uri)),
            ("resource link name", json_escaped_len(&link.name)),
            ("resource link title", optional(&link.title)),
            ("resource link description", optional(&link.description)),
            ("resource link mime type", optional(&link.mime_type)),
        ],
    }
}

fn content(content: &model::Content) -> Result<(), String> {
    match content {
        model::Content::Text(_) => Ok(()),
        model::Content::Image(image) => {
            media_type(&image.mime_type, Some("image/")).map_err(|problem| format!("image mime type {problem}"))
        }
        model::Content::Audio(audio) => {
            media_type(&audio.mime_type, Some("audio/")).map_err(|problem| format!("audio mime type {problem}"))
        }
        model::Content::Resource(resource) => {
            uri(&resource.uri).map_err(|problem| format!("resource uri {problem}"))?;
            if let Some(mime_type) = &resource.mime_type {
                media_type(mime_type, None).map_err(|problem| format!("resource mime type {problem}"))?;
            }
            Ok(())
        }
        model::Content::ResourceLink(link) => {
            uri(&link.uri).map_err(|problem| format!("resource link uri {problem}"))?;
            if link.name.is_empty() {
                return Err("resource link name is empty".into());
            }
            if let Some(mime_type) = &link.mime_type {
                media_type(mime_type, None).map_err(|problem| format!("resource link mime type {problem}"))?;
            }
            Ok(())
        }
    }
}

/// A name a client can type, pass back, and show as it is: non-empty, at
/// most [`MAX_NAME_BYTES`], with no whitespace, no control characters
/// (Unicode category Cc) and no format characters (Cf: bidirectional
/// controls, zero-width characters, byte order marks), which make a name
/// display as another.
fn usable_name(name: &str) -> Result<(), (String, &'static str)> {
    if name.is_empty() {
        return Err(("is empty".into(), HINT_NAME));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err((format!("is {} bytes, more than the limit of {MAX_NAME_BYTES}", name.len()), HINT_NAME));
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err((format!("contains {c:?}, and names may hold no whitespace or control characters"), HINT_NAME));
    }
    if let Some(c) = name.chars().find(|&c| is_format(c)) {
        return Err((
            format!("contains the invisible formatting character {c:?}, which makes a name display as another"),
            HINT_DECEPTIVE_NAME,
        ));
    }
    Ok(())
}

fn uri(uri: &str) -> Result<(), String> {
    url::Url::parse(uri).map(|_| ()).map_err(|error| format!("{uri:?} is not a URI ({error})"))
}

/// A syntactically valid media type (`type/subtype`, optionally with
/// parameters), starting with `required_prefix` when one is given.
fn media_type(mime_type: &str, required_prefix: Option<&str>) -> Result<(), String> {
    let essence = mime_type.split(';').next().unwrap_or_default().trim();
    let valid = essence.split_once('/').is_some_and(|(kind, subtype)| is_token(kind) && is_token(subtype));
    if !valid {
        return Err(format!("{mime_type:?} is not a media type of the form type/subtype"));
    }
    if let Some(prefix) = required_prefix
        && !essence.to_ascii_lowercase().starts_with(prefix)
    {
        return Err(format!("{mime_type:?} does not start with {prefix}"));
    }
    Ok(())
}

/// An RFC 9110 token: one or more visible ASCII characters other than
/// delimiters.
fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 0.3 prompt named `name` whose arguments `a0`, `a1`... each take `kind`, with `default`.
    fn typed_prompt(name: &str, arguments: usize, kind: model::ArgumentKind, default: Option<&str>) -> model::Prompt {
        model::Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: (0..arguments)
                .map(|at| model::PromptArgument {
                    name: format!("a{at}"),
                    title: None,
                    description: None,
                    required: false,
                    kind: Some(kind.clone()),
                    default: default.map(str::to_string),
                    examples: Vec::new(),
                })
                .collect(),
            icons: Vec::new(),
        }
    }

    #[test]
    fn a_pack_declares_at_most_16_patterns_and_none_is_compiled_past_that() {
        let pattern = model::ArgumentKind::Text(model::TextKind { max_length: None, pattern: Some("a".into()) });
        let (typed, problems) = argument_declarations(&[typed_prompt("p", 16, pattern.clone(), None)]);
        assert_eq!((typed[0].declared.len(), problems), (16, vec![]));
        let (typed, problems) = argument_declarations(&[typed_prompt("p", 17, pattern, None)]);
        assert!(typed.is_empty());
        assert_eq!(
            problems.iter().map(|problem| problem.problem.as_str()).collect::<Vec<_>>(),
            ["17 argument patterns, more than the limit of 16"]
        );
    }

    #[test]
    fn problems_with_typed_arguments_quote_names_cut_and_stop_at_100() {
        let long_name = format!("\u{1b}{}", "n".repeat(10_000));
        let (_, problems) = argument_declarations(&[typed_prompt(&long_name, 150, model::ArgumentKind::Boolean, Some("yes"))]);
        assert_eq!(problems.len(), 100);
        let shown = cut_printable(&long_name, MAX_NAME_BYTES);
        assert_eq!(problems[0].problem, format!("prompt {shown:?}, argument \"a0\": default \"yes\" is not true or false"));
        assert!(shown.len() < 300 && shown.ends_with("... [cut by prompt-host: 9750 more bytes]"), "{shown}");
    }

    #[test]
    fn the_hints_added_to_descriptions_count_toward_the_catalog_limit() {
        let choices = model::ArgumentKind::Choice((0..10).map(|n| format!("choice{n:02}")).collect());
        let declared = vec![typed_prompt("p", 1, choices, None)];
        let (typed, _) = argument_declarations(&declared);
        let undescribed = declared.clone();
        // What the definitions and the schema take, without the hint.
        let counted = prompt_definitions(&undescribed, &typed, &Limits { max_catalog_bytes: 0, ..Limits::default() });
        let without_hint: usize = counted[0].problem.split(' ').nth(3).unwrap().parse().unwrap();
        let limits = Limits { max_catalog_bytes: without_hint, ..Limits::default() };
        assert_eq!(prompt_definitions(&undescribed, &typed, &limits), vec![]);
        let listed = Listing { prompts: undescribed, typed_arguments: true, ..Listing::default() };
        let (problems, _) = listing(listed, &limits).err().expect("the hint takes the listing past the limit");
        let hint = "(one of: choice00, choice01, choice02, choice03, choice04, choice05, choice06, choice07, choice08, choice09)";
        assert_eq!(
            problems[0].problem,
            format!("the definitions are {} bytes in all, more than the limit of {without_hint}", without_hint + hint.len())
        );
    }

    /// What `listing` says of a 0.3.1 pack of `declared` prompts whose
    /// `prompts-that-ask` answers `asking`: which prompts ask, or the problems.
    fn asking_of(declared: Vec<model::Prompt>, asking: &[&str]) -> Result<Vec<bool>, Vec<String>> {
        let names = asking.iter().map(|name| name.to_string()).collect();
        let listed = Listing { prompts: declared, typed_arguments: true, prompts_that_ask: Some(names), ..Listing::default() };
        match listing(listed, &Limits::default()) {
            Ok(checked) => Ok(checked.typed.iter().map(|typed| typed.asks_for_missing).collect()),
            Err((problems, _)) => Err(problems.into_iter().map(|problem| problem.problem).collect()),
        }
    }

    #[test]
    fn prompts_that_ask_are_each_a_listed_prompt_once_whose_form_passes_the_form_checks() {
        let boolean = model::ArgumentKind::Boolean;
        let required = |mut prompt: model::Prompt| {
            prompt.arguments.iter_mut().for_each(|argument| argument.required = true);
            prompt
        };
        let two = || vec![required(typed_prompt("a", 2, boolean.clone(), None)), typed_prompt("b", 1, boolean.clone(), None)];
        assert_eq!(asking_of(two(), &["a"]), Ok(vec![true, false]));
        assert_eq!(asking_of(two(), &[]), Ok(vec![false, false]));
        // A prompt without required arguments may opt in: it is never missing any.
        assert_eq!(asking_of(two(), &["b", "a"]), Ok(vec![true, true]));
        let hostile = format!("x\u{1b}{}", "y".repeat(5_000));
        assert_eq!(
            asking_of(two(), &["a", "a", "nope", &hostile]),
            Err(vec!["prompts-that-ask names 4 prompts, more than the 2 it lists".to_string()])
        );
        let shown = cut_printable(&hostile, MAX_NAME_BYTES);
        assert_eq!(asking_of(two(), &["a", "a"]).unwrap_err(), ["prompts-that-ask names \"a\" more than once"]);
        assert_eq!(
            asking_of(two(), &["nope", &hostile]).unwrap_err(),
            [
                "prompts-that-ask names \"nope\", a prompt it does not list".to_string(),
                format!("prompts-that-ask names {shown:?}, a prompt it does not list")
            ]
        );
        // 33 required arguments cannot be one form of at most 32 fields.
        let many = vec![required(typed_prompt("many", 33, boolean.clone(), None))];
        assert_eq!(
            asking_of(many, &["many"]).unwrap_err(),
            [
                "prompt \"many\" asks for its missing arguments, but their form is refused: form \"arguments\": fields: 33, more than the limit of 32"
            ]
        );
    }

    fn prompt(name: &str, arguments: &[&str]) -> model::Prompt {
        model::Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: arguments
                .iter()
                .map(|name| model::PromptArgument {
                    name: name.to_string(),
                    title: None,
                    description: None,
                    required: true,
                    kind: None,
                    default: None,
                    examples: vec![],
                })
                .collect(),
            icons: Vec::new(),
        }
    }

    fn problems(prompts: &[model::Prompt], max_prompts: usize) -> Vec<String> {
        let limits = Limits { max_prompts, ..Limits::default() };
        prompt_definitions(prompts, &[], &limits).into_iter().map(|problem| problem.problem).collect()
    }

    #[test]
    fn good_definitions_pass() {
        assert_eq!(problems(&[prompt("code_review", &["code"]), prompt("b", &[])], 10), Vec::<String>::new());
    }

    #[test]
    fn bad_definitions_name_the_field() {
        assert_eq!(
            problems(&[prompt("two words", &[])], 10),
            ["prompt \"two words\": name contains ' ', and names may hold no whitespace or control characters"]
        );
        assert_eq!(problems(&[prompt("", &[])], 10), ["prompt \"\": name is empty"]);
        assert_eq!(problems(&[prompt("a", &[]), prompt("a", &[])], 10), ["prompt \"a\": declared more than once"]);
        assert_eq!(problems(&[prompt("a", &["x", "x"])], 10), ["prompt \"a\", argument \"x\": declared more than once"]);
        assert_eq!(
            problems(&[prompt("a", &["bad\u{7}"])], 10),
            ["prompt \"a\", argument \"bad\\u{7}\": name contains '\\u{7}', and names may hold no whitespace or control characters"]
        );
        assert_eq!(problems(&[prompt("a", &[]), prompt("b", &[])], 1), ["2 prompts, more than the limit of 1"]);
    }

    #[test]
    fn every_problem_is_reported_with_its_hint() {
        let mut with_icon = prompt("b c", &["x", "x"]);
        with_icon.icons.push(model::Icon { src: "icon.png".into(), mime_type: Some("text/plain".into()), sizes: Vec::new(), theme: None });
        let found = prompt_definitions(&[prompt("a", &[]), prompt("a", &[]), with_icon], &[], &Limits::default());
        let found: Vec<(&str, &str)> = found.iter().map(|p| (p.problem.as_str(), p.hint.unwrap())).collect();
        assert_eq!(
            found,
            [
                ("prompt \"a\": declared more than once", HINT_DUPLICATE),
                ("prompt \"b c\": name contains ' ', and names may hold no whitespace or control characters", HINT_NAME),
                ("prompt \"b c\", argument \"x\": declared more than once", HINT_DUPLICATE),
                ("prompt \"b c\", icon 0: src \"icon.png\" is not a URI (relative URL without a base)", HINT_ICON_SRC),
                ("prompt \"b c\", icon 0: mime type \"text/plain\" does not start with image/", HINT_ICON_MIME),
            ]
        );
    }

    #[test]
    fn names_that_display_as_other_names_are_refused() {
        assert_eq!(
            problems(&[prompt("h_rtl\u{202E}txt.exe", &[]), prompt("code_review\u{200B}", &["code\u{FEFF}"])], 10),
            [
                r#"prompt "h_rtl\u{202e}txt.exe": name contains the invisible formatting character '\u{202e}', which makes a name display as another"#,
                r#"prompt "code_review\u{200b}": name contains the invisible formatting character '\u{200b}', which makes a name display as another"#,
                r#"prompt "code_review\u{200b}", argument "code\u{feff}": name contains the invisible formatting character '\u{feff}', which makes a name display as another"#,
            ]
        );
        // Letters of any script are fine; so is a name of exactly the limit.
        assert_eq!(problems(&[prompt("résumé_作成", &[]), prompt(&"n".repeat(MAX_NAME_BYTES), &[])], 10), Vec::<String>::new());
        assert_eq!(
            problems(&[prompt(&"n".repeat(MAX_NAME_BYTES + 1), &[])], 10)[0].split_once(": ").unwrap().1,
            "name is 257 bytes, more than the limit of 256"
        );
    }

    #[test]
    fn the_definitions_of_one_pack_are_held_to_the_catalog_limit() {
        let mut described = prompt("a", &["x"]);
        described.description = Some("d".repeat(90));
        // 1 (name) + 1 (argument) + 90 (description) = 92 bytes.
        let limits = Limits { max_catalog_bytes: 91, ..Limits::default() };
        let found: Vec<String> = prompt_definitions(&[described.clone()], &[], &limits).into_iter().map(|p| p.problem).collect();
        assert_eq!(found, ["the definitions are 92 bytes in all, more than the limit of 91"]);
        let limits = Limits { max_catalog_bytes: 92, ..Limits::default() };
        assert_eq!(prompt_definitions(&[described], &[], &limits), vec![]);
    }

    #[test]
    fn completions_are_held_to_the_string_and_the_reply_limits() {
        let limits = Limits { max_string_bytes: 4, max_reply_bytes: 10, ..Limits::default() };
        let values =
            |values: &[&str]| model::Completion { values: values.iter().map(|v| v.to_string()).collect(), total: None, has_more: false };
        assert_eq!(completion(&values(&["abcd", "efgh", "ij"]), &limits), Ok(()));
        assert_eq!(completion(&values(&["abcd", "efgh", "abcde"]), &limits), Err("value 2 is 5 bytes, more than the limit of 4".into()));
    }

    #[test]
    fn the_wire_size_is_what_serde_json_writes() {
        let limits = Limits { max_reply_bytes: 16, ..Limits::default() };
        // `{"a":"\u0001"}`: 14 bytes.
        let value = serde_json::json!({ "a": "\u{1}" });
        assert_eq!(json_bytes(&value), 14);
        assert_eq!(wire_size(&value, &limits), Ok(()));
        // `{"a":"\u0001","b":[]}`: 21 bytes.
        let value = serde_json::json!({ "a": "\u{1}", "b": [] });
        assert_eq!(wire_size(&value, &limits), Err("it is 21 bytes on the wire, more than the limit of 16".into()));
    }

    #[test]
    fn long_error_messages_are_cut_with_a_marker() {
        assert_eq!(error_message("short"), "short");
        let exact = "e".repeat(MAX_ERROR_MESSAGE_BYTES);
        assert_eq!(error_message(exact.clone()), exact);
        let cut = error_message("e".repeat(MAX_ERROR_MESSAGE_BYTES + 10));
        assert_eq!(cut, format!("{exact}... [cut by prompt-host: 10 more bytes]"));
        // Never inside a character: 'é' is two bytes.
        let cut = error_message(format!("{}é{}", "e".repeat(MAX_ERROR_MESSAGE_BYTES - 1), "e".repeat(5)));
        assert_eq!(cut, format!("{}... [cut by prompt-host: 7 more bytes]", "e".repeat(MAX_ERROR_MESSAGE_BYTES - 1)));
    }

    #[test]
    fn control_and_format_characters_are_shown_escaped_and_the_rest_as_is() {
        assert_eq!(printable("a\u{1b}[2Jb\rc\u{202e}d"), "a\\u{1b}[2Jb\\u{d}c\\u{202e}d");
        assert_eq!(printable("line one\n\tdon't \"quote\" é"), "line one\n\tdon't \"quote\" é");
    }

    #[test]
    fn error_messages_are_escaped_before_they_are_cut() {
        assert_eq!(error_message("a\0b\x07c\x1b[31m\nWARN d\te"), "a\\u{0}b\\u{7}c\\u{1b}[31m\nWARN d\te");
        // An escape that would pass the bound is left out whole, and counted as one byte of the pack's.
        let message = format!("{}\x1b{}", "e".repeat(MAX_ERROR_MESSAGE_BYTES - 3), "e".repeat(9));
        assert_eq!(error_message(message), format!("{}... [cut by prompt-host: 10 more bytes]", "e".repeat(MAX_ERROR_MESSAGE_BYTES - 3)));
        // Only what is kept is escaped: a message of a million controls is cut after 4 KiB of escapes.
        let cut = error_message("\x01".repeat(1_000_000));
        assert_eq!(cut, format!("{}... [cut by prompt-host: {} more bytes]", "\\u{1}".repeat(819), 1_000_000 - 819));
    }

    #[test]
    fn json_lengths_of_known_strings() {
        assert_eq!(json_escaped_len(""), 0);
        assert_eq!(json_escaped_len("abc"), 3);
        assert_eq!(json_escaped_len("\u{1}"), 6);
        assert_eq!(json_escaped_len("\"\\\n\t\r\u{8}\u{c}"), 14);
        assert_eq!(json_escaped_len("\u{7f}é\u{1b}"), 1 + 2 + 6);
        assert_eq!(base64_len(0), 0);
        assert_eq!(base64_len(1), 4);
        assert_eq!(base64_len(3), 4);
        assert_eq!(base64_len(4), 8);
    }

    proptest::proptest! {
        /// The length counted is the length serde_json writes, quotes aside,
        /// for any text: ASCII controls and quotes above all.
        #[test]
        fn json_lengths_are_serde_json_lengths(text in "(?s:[\\x00-\\x7f]|.){0,64}") {
            proptest::prop_assert_eq!(json_escaped_len(&text) + 2, serde_json::to_string(&text).unwrap().len());
        }

        #[test]
        fn base64_lengths_are_the_encoded_lengths(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            use base64::Engine as _;
            proptest::prop_assert_eq!(base64_len(bytes.len()), base64::engine::general_purpose::STANDARD.encode(&bytes).len());
        }
    }

    #[test]
    fn replies_are_counted_as_the_client_receives_them() {
        let limits = Limits { max_string_bytes: 60, max_reply_bytes: 100, ..Limits::default() };
        // Ten controls are 60 bytes in JSON: at the string limit, not past it.
        assert_eq!(reply(&text_reply(&[&"\u{1}".repeat(10)]), &limits), Ok(()));
        assert_eq!(
            reply(&text_reply(&[&"\u{1}".repeat(11)]), &limits),
            Err("message 0: text is 66 bytes, more than the limit of 60".into())
        );
        assert_eq!(reply(&text_reply(&[&"\"".repeat(30)]), &limits), Ok(()));
        assert_eq!(reply(&text_reply(&[&"\"".repeat(31)]), &limits), Err("message 0: text is 62 bytes, more than the limit of 60".into()));
        // 45 bytes of image are 60 in base64.
        let image = |bytes: usize| model::PromptReply {
            description: None,
            messages: vec![model::Message {
                role: model::Role::User,
                content: model::Content::Image(model::MediaContent {
                    data: vec![0; bytes],
                    mime_type: "image/png".into(),
                    annotations: None,
                }),
            }],
        };
        assert_eq!(reply(&image(45), &limits), Ok(()));
        assert_eq!(reply(&image(46), &limits), Err("message 0: image data is 64 bytes, more than the limit of 60".into()));
    }

    #[test]
    fn copy_budgets_cover_the_largest_valid_answer_and_little_more() {
        let limits = Limits::default();
        assert_eq!(copy_budget(Answer::Reply, &limits), (8 << 20) + 256 * 1024 + (64 << 10));
        assert_eq!(copy_budget(Answer::Completion, &limits), (8 << 20) + (64 << 10));
        assert_eq!(copy_budget(Answer::Definitions, &limits), (1 << 20) + 1000 * 4096 + (64 << 10));
        // However small the limits, an error message fits before it is cut.
        let tiny = Limits { max_reply_bytes: 1, max_messages: 1, ..Limits::default() };
        assert!(copy_budget(Answer::Reply, &tiny) > MAX_ERROR_MESSAGE_BYTES * 16);
    }

    fn text_reply(texts: &[&str]) -> model::PromptReply {
        model::PromptReply {
            description: None,
            messages: texts
                .iter()
                .map(|text| model::Message {
                    role: model::Role::User,
                    content: model::Content::Text(model::TextContent { text: text.to_string(), annotations: None }),
                })
                .collect(),
        }
    }

    #[test]
    fn replies_are_held_to_the_size_limits() {
        let limits = Limits { max_messages: 2, max_string_bytes: 5, max_reply_bytes: 8, ..Limits::default() };
        assert_eq!(reply(&text_reply(&["abc", "defg"]), &limits), Ok(()));
        assert_eq!(reply(&text_reply(&["a", "b", "c"]), &limits), Err("it holds 3 messages, more than the limit of 2".into()));
        assert_eq!(reply(&text_reply(&["abcdef"]), &limits), Err("message 0: text is 6 bytes, more than the limit of 5".into()));
        // Their total on the wire is `wire_size`'s to check.
        assert_eq!(reply(&text_reply(&["abcde", "fghij"]), &limits), Ok(()));
    }

    #[test]
    fn a_last_modified_annotation_is_held_to_the_string_limit() {
        let limits = Limits { max_string_bytes: 12, ..Limits::default() };
        let annotated = |last_modified: &str| model::PromptReply {
            description: None,
            messages: vec![model::Message {
                role: model::Role::User,
                content: model::Content::Text(model::TextContent {
                    text: String::new(),
                    annotations: Some(model::Annotations { audience: vec![], priority: None, last_modified: Some(last_modified.into()) }),
                }),
            }],
        };
        assert_eq!(reply(&annotated("\u{1}\u{1}"), &limits), Ok(()));
        assert_eq!(
            reply(&annotated("\u{1}\u{1}\u{1}"), &limits),
            Err("message 0: annotations last modified is 18 bytes, more than the limit of 12".into())
        );
    }

    #[test]
    fn a_reply_description_is_held_to_the_string_limit() {
        let limits = Limits { max_string_bytes: 5, ..Limits::default() };
        let mut long = text_reply(&["abc"]);
        long.description = Some("abcdef".into());
        assert_eq!(reply(&long, &limits), Err("description is 6 bytes, more than the limit of 5".into()));
    }

    fn form_field(name: &str, kind: model::FieldKind) -> model::FormField {
        model::FormField { name: name.into(), title: None, description: None, kind, required: true }
    }

    fn forms(keys_and_fields: Vec<(&str, Vec<model::FormField>)>) -> model::InputRequired {
        model::InputRequired {
            forms: keys_and_fields.into_iter().map(|(key, fields)| model::Form { key: key.into(), message: "m".into(), fields }).collect(),
            state: Vec::new(),
        }
    }

    #[test]
    fn input_required_answers_are_held_to_their_rules_and_limits() {
        use model::{EnumField, FieldKind};
        let limits = Limits { max_form_bytes: 20, max_input_state_bytes: 4, ..Limits::default() };
        let text = || form_field("a", FieldKind::String(None));
        assert_eq!(input_required(&forms(vec![("k", vec![text()])]), &limits), Ok(()));
        assert_eq!(input_required(&forms(vec![]), &limits), Err("forms: none, and at least one is needed".into()));
        let nine = (0..9).map(|_| ("k", vec![text()])).collect();
        assert_eq!(input_required(&forms(nine), &limits), Err("forms: 9, more than the limit of 8".into()));
        assert_eq!(
            input_required(&forms(vec![("k", vec![])]), &limits),
            Err("form \"k\": fields: none, and at least one is needed".into())
        );
        assert_eq!(
            input_required(&forms(vec![("k", vec![text()]), ("k", vec![text()])]), &limits),
            Err("form \"k\": asked for more than once".into())
        );
        assert_eq!(
            input_required(&forms(vec![("k", vec![text(), text()])]), &limits),
            Err("form \"k\", field \"a\": declared more than once".into())
        );
        assert_eq!(
            input_required(&forms(vec![("two words", vec![text()])]), &limits),
            Err("form \"two words\": key contains ' ', and names may hold no whitespace or control characters".into())
        );
        let choices = |choices: &[&str], default: Option<&str>| {
            FieldKind::Enum(EnumField { choices: choices.iter().map(|c| c.to_string()).collect(), default: default.map(str::to_string) })
        };
        assert_eq!(
            input_required(&forms(vec![("k", vec![form_field("e", choices(&["x", "x"], None))])]), &limits),
            Err("form \"k\", field \"e\": choice \"x\" offered more than once".into())
        );
        assert_eq!(
            input_required(&forms(vec![("k", vec![form_field("e", choices(&["x"], Some("y")))])]), &limits),
            Err("form \"k\", field \"e\": default \"y\" is not one of its choices".into())
        );
        assert_eq!(
            input_required(&forms(vec![("k", vec![form_field("e", choices(&[], None))])]), &limits),
            Err("form \"k\", field \"e\": choices: none, and at least one is needed".into())
        );
        assert_eq!(
            input_required(&forms(vec![("k", vec![form_field("n", FieldKind::Number(Some(f64::NAN)))])]), &limits),
            Err("form \"k\", field \"n\": default NaN is not a finite number".into())
        );
        let mut long = text();
        long.description = Some("d".repeat(20));
        assert_eq!(
            input_required(&forms(vec![("k", vec![long])]), &limits),
            Err("its forms are 23 bytes, more than the limit of 20".into())
        );
        let mut stateful = forms(vec![("k", vec![text()])]);
        stateful.state = vec![0; 5];
        assert_eq!(input_required(&stateful, &limits), Err("its state is 5 bytes, more than the limit of 4".into()));
    }

    #[test]
    fn what_a_pack_says_it_is_is_held_to_its_rules() {
        let info = |name: &str, homepage: Option<&str>, authors: usize| model::PackInfo {
            name: name.into(),
            version: "1.0.0".into(),
            description: None,
            authors: vec!["a".into(); authors],
            license: None,
            homepage: homepage.map(str::to_string),
            repository: None,
        };
        assert_eq!(pack_info(&info("pack", Some("https://example.com"), 16)), []);
        let problems: Vec<String> =
            pack_info(&info("two words", Some("file:///etc/passwd"), 17)).into_iter().map(|problem| problem.problem).collect();
        assert_eq!(
            problems,
            [
                "pack names 17 authors, more than the limit of 16",
                "pack name contains ' ', and names may hold no whitespace or control characters",
                "pack homepage \"file:///etc/passwd\" is not an https: or http: URL",
            ]
        );
        let mut long = info("pack", None, 0);
        long.description = Some("d".repeat(MAX_PACK_INFO_FIELD_BYTES + 1));
        assert_eq!(pack_info(&long)[0].problem, "pack description is 1025 bytes, more than the limit of 1024");
    }

    #[test]
    fn media_types() {
        assert_eq!(media_type("image/png", Some("image/")), Ok(()));
        assert_eq!(media_type("text/plain; charset=utf-8", None), Ok(()));
        assert_eq!(media_type("text/plain", Some("image/")), Err("\"text/plain\" does not start with image/".into()));
        assert_eq!(media_type("png", None), Err("\"png\" is not a media type of the form type/subtype".into()));
        assert_eq!(media_type("image/", Some("image/")), Err("\"image/\" is not a media type of the form type/subtype".into()));
    }

    #[test]
    fn uris() {
        assert_eq!(uri("file:///src/main.py"), Ok(()));
        assert_eq!(uri("logs://recent?timeframe=1h"), Ok(()));
        assert!(uri("not a uri").unwrap_err().starts_with("\"not a uri\" is not a URI"));
    }
}
