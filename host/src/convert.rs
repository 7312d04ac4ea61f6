//! Conversions between the kernel's model of what packs answer and the MCP
//! types clients speak. Every such conversion lives here, in both directions.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{
    Annotations, AudioContent, CompletionInfo, ContentBlock, EmbeddedResource, GetPromptResult, Icon, IconTheme, ImageContent, JsonObject,
    Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Role, TextContent,
};
use serde_json::Value;

use prompt_host_kernel::model;

/// A prompt as a plugin declared it, served under `exposed_name`.
pub fn prompt(declared: &model::Prompt, exposed_name: &str) -> Prompt {
    let mut prompt = Prompt::new(exposed_name, declared.description.clone(), None);
    prompt.title = declared.title.clone();
    if !declared.arguments.is_empty() {
        prompt.arguments = Some(declared.arguments.iter().map(prompt_argument).collect());
    }
    if !declared.icons.is_empty() {
        prompt.icons = Some(declared.icons.iter().map(icon).collect());
    }
    prompt
}

fn prompt_argument(declared: &model::PromptArgument) -> PromptArgument {
    let mut argument = PromptArgument::new(&declared.name).with_required(declared.required);
    argument.title = declared.title.clone();
    argument.description = declared.description.clone();
    argument
}

fn icon(declared: &model::Icon) -> Icon {
    let mut icon = Icon::new(&declared.src);
    icon.mime_type = declared.mime_type.clone();
    if !declared.sizes.is_empty() {
        icon.sizes = Some(declared.sizes.clone());
    }
    icon.theme = declared.theme.map(|theme| match theme {
        model::IconTheme::Light => IconTheme::Light,
        model::IconTheme::Dark => IconTheme::Dark,
    });
    icon
}

/// A plugin's reply to `get-prompt`, as the result of `prompts/get`.
pub fn reply(reply: model::PromptReply) -> GetPromptResult {
    let messages = reply.messages.into_iter().map(message).collect();
    let mut result = GetPromptResult::new(messages);
    result.description = reply.description;
    result
}

fn message(message: model::Message) -> PromptMessage {
    PromptMessage::new(role(message.role), content(message.content))
}

fn role(role: model::Role) -> Role {
    match role {
        model::Role::User => Role::User,
        model::Role::Assistant => Role::Assistant,
    }
}

fn content(content: model::Content) -> ContentBlock {
    match content {
        model::Content::Text(text) => {
            let mut block = TextContent::new(text.text);
            block.annotations = text.annotations.map(annotations);
            ContentBlock::Text(block)
        }
        model::Content::Image(image) => {
            let mut block = ImageContent::new(BASE64.encode(&image.data), image.mime_type);
            block.annotations = image.annotations.map(annotations);
            ContentBlock::Image(block)
        }
        model::Content::Audio(audio) => {
            let mut block = AudioContent::new(BASE64.encode(&audio.data), audio.mime_type);
            block.annotations = audio.annotations.map(annotations);
            ContentBlock::Audio(block)
        }
        model::Content::Resource(resource) => {
            let contents = match resource.body {
                model::ResourceBody::Text(text) => {
                    ResourceContents::TextResourceContents { uri: resource.uri, mime_type: resource.mime_type, text, meta: None }
                }
                model::ResourceBody::Blob(blob) => ResourceContents::BlobResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    blob: BASE64.encode(&blob),
                    meta: None,
                },
            };
            let mut block = EmbeddedResource::new(contents);
            block.annotations = resource.annotations.map(annotations);
            ContentBlock::Resource(block)
        }
        model::Content::ResourceLink(link) => {
            let mut block = Resource::new(link.uri, link.name);
            block.title = link.title;
            block.description = link.description;
            block.mime_type = link.mime_type;
            block.size = link.size;
            block.annotations = link.annotations.map(annotations);
            ContentBlock::ResourceLink(block)
        }
    }
}

fn annotations(declared: model::Annotations) -> Annotations {
    let mut annotations = Annotations::default();
    if !declared.audience.is_empty() {
        annotations.audience = Some(declared.audience.into_iter().map(role).collect());
    }
    annotations.priority = declared.priority;
    annotations.last_modified = declared.last_modified;
    annotations
}

/// The most values one completion may carry, per the MCP specification.
pub const MAX_COMPLETION_VALUES: usize = CompletionInfo::MAX_VALUES;

/// A plugin's completion, as the result of `completion/complete`. Values past
/// the protocol's maximum are cut, and `hasMore` then says so.
pub fn completion(completion: model::Completion) -> CompletionInfo {
    let mut values = completion.values;
    let cut = values.len() > MAX_COMPLETION_VALUES;
    values.truncate(MAX_COMPLETION_VALUES);
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = completion.total;
    info.has_more = Some(completion.has_more || cut);
    info
}

/// A request argument that is not a string, which MCP forbids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("argument '{name}' must be a string, not {found}")]
pub struct NonStringArgument {
    pub name: String,
    pub found: &'static str,
}

/// The arguments of a `prompts/get` request, as the plugin receives them, in
/// the order the client sent them.
pub fn arguments(arguments: Option<&JsonObject>) -> Result<Vec<model::Argument>, NonStringArgument> {
    let Some(arguments) = arguments else {
        return Ok(Vec::new());
    };
    arguments
        .iter()
        .map(|(name, value)| match value {
            Value::String(value) => Ok(model::Argument { name: name.clone(), value: value.clone() }),
            // The name is the client's: escaped and bounded wherever it is shown.
            other => Err(NonStringArgument { name: prompt_host_kernel::validate::error_message(name), found: json_kind(other) }),
        })
        .collect()
}

/// The already-filled arguments of a `completion/complete` request.
pub fn completion_context<'a>(arguments: impl IntoIterator<Item = (&'a String, &'a String)>) -> Vec<model::Argument> {
    let mut context: Vec<model::Argument> =
        arguments.into_iter().map(|(name, value)| model::Argument { name: name.clone(), value: value.clone() }).collect();
    // The client sends a JSON object; give plugins a stable order.
    context.sort_by(|a, b| a.name.cmp(&b.name));
    context
}

/// What kind of JSON value `value` is, for an error: "a number".
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_arguments_pass_through_in_order() {
        let object = json!({"code": "x = 1", "language": "python"});
        let converted = arguments(object.as_object()).unwrap();
        let pairs: Vec<(&str, &str)> = converted.iter().map(|a| (a.name.as_str(), a.value.as_str())).collect();
        assert_eq!(pairs, [("code", "x = 1"), ("language", "python")]);
    }

    #[test]
    fn a_non_string_argument_is_named() {
        let object = json!({"code": "x", "count": 3});
        let error = arguments(object.as_object()).unwrap_err();
        assert_eq!(error.to_string(), "argument 'count' must be a string, not a number");
    }

    #[test]
    fn media_is_base64_encoded() {
        let reply = model::PromptReply {
            description: None,
            messages: vec![model::Message {
                role: model::Role::User,
                content: model::Content::Image(model::MediaContent {
                    data: vec![1, 2, 3],
                    mime_type: "image/png".into(),
                    annotations: None,
                }),
            }],
        };
        let json = serde_json::to_value(super::reply(reply)).unwrap();
        assert_eq!(json["messages"][0]["content"], json!({"type": "image", "data": "AQID", "mimeType": "image/png"}));
    }

    #[test]
    fn completions_are_cut_at_the_protocol_maximum() {
        let values: Vec<String> = (0..150).map(|i| i.to_string()).collect();
        let info = completion(model::Completion { values, total: Some(150), has_more: false });
        assert_eq!(info.values.len(), 100);
        assert_eq!(info.has_more, Some(true));
        assert_eq!(info.total, Some(150));
    }
}
