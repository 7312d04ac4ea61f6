//! Checks on what plugins hand the host, before any of it reaches a client.
//!
//! A plugin is untrusted: its prompt definitions and its replies are checked
//! here, and a violation is reported with the field that is wrong, so that the
//! plugin's author can fix it.

use std::collections::HashSet;

use crate::bindings::provider;

/// Checks a plugin's prompt definitions: usable, unique names, and
/// well-formed icons.
pub fn prompt_definitions(prompts: &[provider::Prompt], max_prompts: usize) -> Result<(), String> {
    if prompts.len() > max_prompts {
        return Err(format!("declares {} prompts, more than the limit of {max_prompts}", prompts.len()));
    }
    let mut names = HashSet::new();
    for prompt in prompts {
        let at = format!("prompt {:?}", prompt.name);
        usable_name(&prompt.name).map_err(|problem| format!("{at}: name {problem}"))?;
        if !names.insert(prompt.name.as_str()) {
            return Err(format!("{at}: declared more than once"));
        }
        let mut argument_names = HashSet::new();
        for argument in &prompt.arguments {
            let at = format!("{at}, argument {:?}", argument.name);
            usable_name(&argument.name).map_err(|problem| format!("{at}: name {problem}"))?;
            if !argument_names.insert(argument.name.as_str()) {
                return Err(format!("{at}: declared more than once"));
            }
        }
        for (index, icon) in prompt.icons.iter().enumerate() {
            let at = format!("{at}, icon {index}");
            uri(&icon.src).map_err(|problem| format!("{at}: src {problem}"))?;
            if let Some(mime_type) = &icon.mime_type {
                media_type(mime_type, Some("image/")).map_err(|problem| format!("{at}: mime type {problem}"))?;
            }
        }
    }
    Ok(())
}

/// Checks a plugin's reply to `get-prompt`.
pub fn reply(reply: &provider::PromptReply) -> Result<(), String> {
    for (index, message) in reply.messages.iter().enumerate() {
        content(&message.content).map_err(|problem| format!("message {index}: {problem}"))?;
    }
    Ok(())
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

    #[test]
    fn good_definitions_pass() {
        assert_eq!(prompt_definitions(&[prompt("code_review", &["code"]), prompt("b", &[])], 10), Ok(()));
    }

    #[test]
    fn bad_definitions_name_the_field() {
        assert_eq!(
            prompt_definitions(&[prompt("two words", &[])], 10),
            Err("prompt \"two words\": name contains ' ', and names may hold no whitespace or control characters".into())
        );
        assert_eq!(prompt_definitions(&[prompt("", &[])], 10), Err("prompt \"\": name is empty".into()));
        assert_eq!(
            prompt_definitions(&[prompt("a", &[]), prompt("a", &[])], 10),
            Err("prompt \"a\": declared more than once".into())
        );
        assert_eq!(
            prompt_definitions(&[prompt("a", &["x", "x"])], 10),
            Err("prompt \"a\", argument \"x\": declared more than once".into())
        );
        assert_eq!(
            prompt_definitions(&[prompt("a", &["bad\u{7}"])], 10),
            Err("prompt \"a\", argument \"bad\\u{7}\": name contains '\\u{7}', and names may hold no whitespace or control characters".into())
        );
        assert_eq!(
            prompt_definitions(&[prompt("a", &[]), prompt("b", &[])], 1),
            Err("declares 2 prompts, more than the limit of 1".into())
        );
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
