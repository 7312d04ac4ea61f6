//! Checks on what plugins hand the host, before any of it reaches a client.
//!
//! A plugin is untrusted: its prompt definitions and its replies are checked
//! here, and a violation is reported with the field that is wrong, so that the
//! plugin's author can fix it.

use std::collections::HashSet;

use crate::bindings::provider;
use crate::limits::Limits;

/// One thing wrong with a plugin, and how its author can fix it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// What is wrong, and where: `prompt "a", argument "x": declared more than once`.
    pub problem: String,
    /// How to fix it, where the problem alone does not say.
    pub hint: Option<&'static str>,
}

const HINT_TOO_MANY: &str =
    "split the pack into several, or ask the operator to raise limits.max_prompts for this plugin";
const HINT_NAME: &str = "use a name a client can type and send back, such as \"code-review\" or \"code_review\"";
const HINT_DUPLICATE: &str = "give each prompt, and each argument of one prompt, a name of its own";
const HINT_ICON_SRC: &str = "use an absolute URI, such as https://example.com/icon.png or a data: URI";
const HINT_ICON_MIME: &str = "use an image media type, such as image/png or image/svg+xml";

/// Checks a plugin's prompt definitions: usable, unique names, and
/// well-formed icons. Returns every problem found, in declaration order; a
/// plugin with any is not loaded.
pub fn prompt_definitions(prompts: &[provider::Prompt], max_prompts: usize) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |problem: String, hint| problems.push(Problem { problem, hint: Some(hint) });
    if prompts.len() > max_prompts {
        // Checking each of 100,000 prompts would bury this one problem.
        report(format!("{} prompts, more than the limit of {max_prompts}", prompts.len()), HINT_TOO_MANY);
        return problems;
    }
    let mut names = HashSet::new();
    for prompt in prompts {
        let at = format!("prompt {:?}", prompt.name);
        if let Err(problem) = usable_name(&prompt.name) {
            report(format!("{at}: name {problem}"), HINT_NAME);
        }
        if !names.insert(prompt.name.as_str()) {
            report(format!("{at}: declared more than once"), HINT_DUPLICATE);
        }
        let mut argument_names = HashSet::new();
        for argument in &prompt.arguments {
            let at = format!("{at}, argument {:?}", argument.name);
            if let Err(problem) = usable_name(&argument.name) {
                report(format!("{at}: name {problem}"), HINT_NAME);
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
pub fn reply(reply: &provider::PromptReply, limits: &Limits) -> Result<(), String> {
    if reply.messages.len() > limits.max_messages {
        return Err(format!(
            "it holds {} messages, more than the limit of {}",
            reply.messages.len(),
            limits.max_messages
        ));
    }
    let mut total = reply.description.as_ref().map_or(0, String::len);
    if total > limits.max_string_bytes {
        return Err(format!("description is {total} bytes, more than the limit of {}", limits.max_string_bytes));
    }
    for (index, message) in reply.messages.iter().enumerate() {
        let at = |problem: String| format!("message {index}: {problem}");
        for (field, size) in content_sizes(&message.content) {
            if size > limits.max_string_bytes {
                return Err(at(format!("{field} is {size} bytes, more than the limit of {}", limits.max_string_bytes)));
            }
            total += size;
        }
        content(&message.content).map_err(at)?;
    }
    if total > limits.max_reply_bytes {
        return Err(format!("it is {total} bytes, more than the limit of {}", limits.max_reply_bytes));
    }
    Ok(())
}

/// Checks a plugin's completion: no suggestion longer than a string may be.
pub fn completion(completion: &provider::Completion, limits: &Limits) -> Result<(), String> {
    match completion.values.iter().position(|value| value.len() > limits.max_string_bytes) {
        Some(index) => Err(format!(
            "value {index} is {} bytes, more than the limit of {}",
            completion.values[index].len(),
            limits.max_string_bytes
        )),
        None => Ok(()),
    }
}

/// The size of each string or byte string in one piece of content, by field.
fn content_sizes(content: &provider::Content) -> Vec<(&'static str, usize)> {
    let optional = |text: &Option<String>| text.as_ref().map_or(0, String::len);
    match content {
        provider::Content::Text(text) => vec![("text", text.text.len())],
        provider::Content::Image(media) => vec![("image data", media.data.len()), ("mime type", media.mime_type.len())],
        provider::Content::Audio(media) => vec![("audio data", media.data.len()), ("mime type", media.mime_type.len())],
        provider::Content::Resource(resource) => {
            let body = match &resource.body {
                provider::ResourceBody::Text(text) => text.len(),
                provider::ResourceBody::Blob(blob) => blob.len(),
            };
            vec![("resource uri", resource.uri.len()), ("resource mime type", optional(&resource.mime_type)), ("resource contents", body)]
        }
        provider::Content::ResourceLink(link) => vec![
            ("resource link uri", link.uri.len()),
            ("resource link name", link.name.len()),
            ("resource link title", optional(&link.title)),
            ("resource link description", optional(&link.description)),
            ("resource link mime type", optional(&link.mime_type)),
        ],
    }
}

fn content(content: &provider::Content) -> Result<(), String> {
    match content {
        provider::Content::Text(_) => Ok(()),
        provider::Content::Image(image) => {
            media_type(&image.mime_type, Some("image/")).map_err(|problem| format!("image mime type {problem}"))
        }
        provider::Content::Audio(audio) => {
            media_type(&audio.mime_type, Some("audio/")).map_err(|problem| format!("audio mime type {problem}"))
        }
        provider::Content::Resource(resource) => {
            uri(&resource.uri).map_err(|problem| format!("resource uri {problem}"))?;
            if let Some(mime_type) = &resource.mime_type {
                media_type(mime_type, None).map_err(|problem| format!("resource mime type {problem}"))?;
            }
            Ok(())
        }
        provider::Content::ResourceLink(link) => {
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

/// A name a client can type and pass back: non-empty, with no whitespace and
/// no control characters.
fn usable_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("contains {c:?}, and names may hold no whitespace or control characters"));
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
    let valid = essence
        .split_once('/')
        .is_some_and(|(kind, subtype)| is_token(kind) && is_token(subtype));
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
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(name: &str, arguments: &[&str]) -> provider::Prompt {
        provider::Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: arguments
                .iter()
                .map(|name| provider::PromptArgument {
                    name: name.to_string(),
                    title: None,
                    description: None,
                    required: true,
                })
                .collect(),
            icons: Vec::new(),
        }
    }

    fn problems(prompts: &[provider::Prompt], max_prompts: usize) -> Vec<String> {
        prompt_definitions(prompts, max_prompts).into_iter().map(|problem| problem.problem).collect()
    }

    #[test]
    fn good_definitions_pass() {
        assert_eq!(prompt_definitions(&[prompt("code_review", &["code"]), prompt("b", &[])], 10), vec![]);
    }

    #[test]
    fn bad_definitions_name_the_field() {
        assert_eq!(
            problems(&[prompt("two words", &[])], 10),
            ["prompt \"two words\": name contains ' ', and names may hold no whitespace or control characters"]
        );
        assert_eq!(problems(&[prompt("", &[])], 10), ["prompt \"\": name is empty"]);
        assert_eq!(problems(&[prompt("a", &[]), prompt("a", &[])], 10), ["prompt \"a\": declared more than once"]);
        assert_eq!(
            problems(&[prompt("a", &["x", "x"])], 10),
            ["prompt \"a\", argument \"x\": declared more than once"]
        );
        assert_eq!(
            problems(&[prompt("a", &["bad\u{7}"])], 10),
            ["prompt \"a\", argument \"bad\\u{7}\": name contains '\\u{7}', and names may hold no whitespace or control characters"]
        );
        assert_eq!(problems(&[prompt("a", &[]), prompt("b", &[])], 1), ["2 prompts, more than the limit of 1"]);
    }

    #[test]
    fn every_problem_is_reported_with_its_hint() {
        let mut with_icon = prompt("b c", &["x", "x"]);
        with_icon.icons.push(provider::Icon {
            src: "icon.png".into(),
            mime_type: Some("text/plain".into()),
            sizes: Vec::new(),
            theme: None,
        });
        let found = prompt_definitions(&[prompt("a", &[]), prompt("a", &[]), with_icon], 10);
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

    fn text_reply(texts: &[&str]) -> provider::PromptReply {
        provider::PromptReply {
            description: None,
            messages: texts
                .iter()
                .map(|text| provider::Message {
                    role: provider::Role::User,
                    content: provider::Content::Text(provider::TextContent { text: text.to_string(), annotations: None }),
                })
                .collect(),
        }
    }

    #[test]
    fn replies_are_held_to_the_size_limits() {
        let limits = Limits { max_messages: 2, max_string_bytes: 5, max_reply_bytes: 8, ..Limits::default() };
        assert_eq!(reply(&text_reply(&["abc", "defg"]), &limits), Ok(()));
        assert_eq!(
            reply(&text_reply(&["a", "b", "c"]), &limits),
            Err("it holds 3 messages, more than the limit of 2".into())
        );
        assert_eq!(
            reply(&text_reply(&["abcdef"]), &limits),
            Err("message 0: text is 6 bytes, more than the limit of 5".into())
        );
        assert_eq!(
            reply(&text_reply(&["abcde", "fghij"]), &limits),
            Err("it is 10 bytes, more than the limit of 8".into())
        );
    }

    #[test]
    fn a_reply_description_is_held_to_the_string_limit() {
        let limits = Limits { max_string_bytes: 5, ..Limits::default() };
        let mut long = text_reply(&["abc"]);
        long.description = Some("abcdef".into());
        assert_eq!(reply(&long, &limits), Err("description is 6 bytes, more than the limit of 5".into()));
    }

    #[test]
    fn media_types() {
        assert_eq!(media_type("image/png", Some("image/")), Ok(()));
        assert_eq!(media_type("text/plain; charset=utf-8", None), Ok(()));
        assert_eq!(
            media_type("text/plain", Some("image/")),
            Err("\"text/plain\" does not start with image/".into())
        );
        assert_eq!(
            media_type("png", None),
            Err("\"png\" is not a media type of the form type/subtype".into())
        );
        assert_eq!(
            media_type("image/", Some("image/")),
            Err("\"image/\" is not a media type of the form type/subtype".into())
        );
    }

    #[test]
    fn uris() {
        assert_eq!(uri("file:///src/main.py"), Ok(()));
        assert_eq!(uri("logs://recent?timeframe=1h"), Ok(()));
        assert!(uri("not a uri").unwrap_err().starts_with("\"not a uri\" is not a URI"));
    }
}
