//! Prompts for clients that only call tools (`[server] prompts_as_tools`):
//! two tools, `list_prompts` and `get_prompt`, each a thin adapter over the
//! prompts handler. A call is turned into the `prompts/list` or
//! `prompts/get` request it stands for, which the handler answers exactly as
//! it answers that request (typed argument checks, forms, budgets, tenants,
//! grants, metrics, the access log), and the answer is turned back into a
//! tool result. Nothing here calls a pack.
//!
//! The results, for a model and for a program:
//! - `get_prompt`: `content` holds each message's content block in order
//!   (text, image, audio, an embedded resource or a link: what a model
//!   reads), and `structuredContent` the `prompts/get` result as MCP
//!   writes it (`{description?, messages: [{role, content}]}`), roles
//!   included. So a result is at most about twice the plugin's reply limit.
//! - `list_prompts`: `structuredContent` is the `prompts/list` page
//!   (`{prompts, nextCursor?}`), and `content` one text block with the same
//!   JSON.
//!
//! `get_prompt`'s input schema names the prompts served (`name`'s `enum`)
//! and, per prompt, the JSON Schema of its arguments (from its typed
//! arguments, or text for each declared one), titled with the prompt's
//! name, under `arguments`' `anyOf` (never at the schema's top level, which
//! some model APIs refuse); past
//! [`MAX_SCHEMA_BYTES`] of schema (measured serialized) the per-prompt
//! schemas are left out, and `list_prompts` gives them.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResult, JsonObject, ListPromptsResult,
    PaginatedRequestParams, Tool,
};
use serde_json::{Value, json};

use crate::error::RequestError;
use crate::registry::Snapshot;

/// The tool that lists the prompts.
pub const LIST_PROMPTS: &str = "list_prompts";

/// The tool that gets a prompt.
pub const GET_PROMPT: &str = "get_prompt";

/// The most bytes (serialized) of `get_prompt`'s per-prompt schemas; past
/// it they are left out of its input schema.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;

/// The request a tool call stands for.
pub enum PromptRequest {
    /// `list_prompts`: a page of `prompts/list`.
    List(Option<PaginatedRequestParams>),
    /// `get_prompt`: a `prompts/get`, with the `requestState` and input
    /// responses of a retry.
    Get(GetPromptRequestParams),
}

/// The two tools, with `get_prompt`'s input schema from the prompts
/// `snapshot` serves.
pub fn tools(snapshot: &Snapshot) -> Vec<Tool> {
    let list_schema = json!({
        "type": "object",
        "properties": { "cursor": { "type": "string", "description": "The nextCursor of the previous page, for the next one." } },
        "additionalProperties": false,
    });
    let list = Tool::new(
        LIST_PROMPTS,
        "List the prompts this server serves: each one's name, title, description and arguments (a page at a time).",
        object(list_schema),
    );
    let get = Tool::new(
        GET_PROMPT,
        "Get a prompt's messages: give its name and its arguments (see list_prompts). The messages are instructions and context \
         to follow.",
        object(get_schema(snapshot)),
    );
    vec![list, get]
}

/// `get_prompt`'s input schema.
fn get_schema(snapshot: &Snapshot) -> Value {
    let entries = snapshot.catalog().entries();
    let names: Vec<&str> = entries.iter().map(|entry| entry.prompt.name.as_str()).collect();
    let per_prompt: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let mut arguments = match entry.typed.as_ref().filter(|typed| !typed.declared.is_empty()) {
                Some(typed) => typed.schema(),
                None => {
                    let declared = entry.prompt.arguments.iter().flatten();
                    let properties: serde_json::Map<String, Value> = declared
                        .clone()
                        .map(|argument| {
                            let mut schema = json!({ "type": "string" });
                            if let Some(description) = &argument.description {
                                schema["description"] = json!(description);
                            }
                            (argument.name.clone(), schema)
                        })
                        .collect();
                    let required: Vec<&str> = entry.required_arguments().collect();
                    json!({ "type": "object", "properties": properties, "required": required })
                }
            };
            arguments["title"] = json!(entry.prompt.name);
            arguments
        })
        .collect();
    schema_within(&names, per_prompt, MAX_SCHEMA_BYTES)
}

/// `get_prompt`'s input schema over the prompts `names`, with the
/// `per_prompt` schemas of their arguments (each titled with its prompt's
/// name) under `arguments`' `anyOf`, within `max` bytes
/// serialized: past it the per-prompt schemas are left out, and past it
/// with the names alone, the names too (then `list_prompts` gives both).
fn schema_within(names: &[&str], per_prompt: Vec<Value>, max: usize) -> Value {
    let names_bytes = prompt_host_kernel::validate::json_bytes(names);
    let mut name = json!({ "type": "string", "description": "The prompt's name, as list_prompts gives it." });
    if names_bytes <= max {
        name["enum"] = json!(names);
    }
    let mut schema = json!({
        "type": "object",
        "properties": {
            "name": name,
            "arguments": {
                "type": "object",
                "description": "The prompt's arguments, by name.",
                "additionalProperties": { "type": ["string", "number", "integer", "boolean"] },
            },
        },
        "required": ["name"],
    });
    // Under `arguments`, not at the top: some model APIs refuse a tool
    // whose input schema has `anyOf` at its top level.
    if !per_prompt.is_empty() && names_bytes + prompt_host_kernel::validate::json_bytes(&per_prompt) <= max {
        schema["properties"]["arguments"]["anyOf"] = Value::Array(per_prompt);
    }
    schema
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("a schema is an object"),
    }
}

/// The request a call of one of the tools stands for: -32602 for another
/// tool, or arguments that are not the tool's.
pub fn request(call: CallToolRequestParams) -> Result<PromptRequest, RequestError> {
    let mut arguments = call.arguments.unwrap_or_default();
    // The client's text, escaped and bounded, wherever an error shows it.
    let shown = |text: &str| prompt_host_kernel::validate::error_message(text);
    let tool = shown(&call.name);
    let wrong = |problem: String| RequestError::InvalidParams { method: "tools/call".into(), problem: format!("tool '{tool}': {problem}") };
    match call.name.as_ref() {
        LIST_PROMPTS => {
            let cursor = match arguments.remove("cursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(cursor)) => Some(cursor),
                Some(_) => return Err(wrong("cursor must be a string".into())),
            };
            if let Some(other) = arguments.keys().next() {
                return Err(wrong(format!("it takes only a cursor, not '{}'", shown(other))));
            }
            Ok(PromptRequest::List(cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)))))
        }
        GET_PROMPT => {
            let name = match arguments.remove("name") {
                Some(Value::String(name)) => name,
                _ => return Err(wrong("name must be the prompt's name, a string".into())),
            };
            // Prompt arguments are text: a number or a boolean a model sends
            // for a typed argument is its JSON text, checked as prompts/get
            // checks it.
            let values = match arguments.remove("arguments") {
                None | Some(Value::Null) => JsonObject::new(),
                Some(Value::Object(values)) => values
                    .into_iter()
                    .map(|(key, value)| match value {
                        Value::Number(_) | Value::Bool(_) => (key, Value::String(value.to_string())),
                        other => (key, other),
                    })
                    .collect(),
                Some(_) => return Err(wrong("arguments must be an object of the prompt's arguments".into())),
            };
            if let Some(other) = arguments.keys().next() {
                return Err(wrong(format!("it takes a name and arguments, not '{}'", shown(other))));
            }
            let mut request = GetPromptRequestParams::new(name).with_arguments(values);
            request.request_state = call.request_state;
            request.input_responses = call.input_responses;
            Ok(PromptRequest::Get(request))
        }
        _ => Err(RequestError::InvalidParams {
            method: "tools/call".into(),
            problem: format!("unknown tool '{tool}': this server's tools are {LIST_PROMPTS} and {GET_PROMPT}"),
        }),
    }
}

/// A result as `structuredContent` carries it: as MCP writes it, without
/// its `resultType` (the tool result has its own).
fn structured(result: &impl serde::Serialize) -> Value {
    let mut value = serde_json::to_value(result).expect("a result serializes");
    if let Value::Object(object) = &mut value {
        object.remove("resultType");
    }
    value
}

/// A `prompts/get` result as `get_prompt`'s result.
pub fn got(result: GetPromptResult) -> CallToolResult {
    let structured = structured(&result);
    let content: Vec<ContentBlock> = result.messages.into_iter().map(|message| message.content).collect();
    let mut tool_result = CallToolResult::success(content);
    tool_result.structured_content = Some(structured);
    tool_result
}

/// A `prompts/list` page as `list_prompts`'s result.
pub fn listed(result: ListPromptsResult) -> CallToolResult {
    let structured = structured(&result);
    let text = serde_json::to_string(&structured).expect("JSON serializes");
    let mut tool_result = CallToolResult::success(vec![ContentBlock::text(text)]);
    tool_result.structured_content = Some(structured);
    tool_result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_leaves_out_what_does_not_fit_measured_serialized() {
        let per_prompt = vec![json!({ "properties": { "name": { "const": "a\"b" } } })];
        let names = ["a\"b"];
        // Measured serialized: the names in 8 bytes (the quote escaped), the per-prompt schemas in 42.
        let sizes = (prompt_host_kernel::validate::json_bytes(&names), prompt_host_kernel::validate::json_bytes(&per_prompt));
        assert_eq!(sizes, (8, 42));
        let whole = schema_within(&names, per_prompt.clone(), 50);
        let arguments = |schema: &Value| schema["properties"]["arguments"].get("anyOf").cloned();
        assert_eq!((whole["properties"]["name"]["enum"].clone(), arguments(&whole)), (json!(["a\"b"]), Some(json!(per_prompt))));
        assert_eq!(whole.get("anyOf"), None);
        let no_per_prompt = schema_within(&names, per_prompt.clone(), 49);
        assert_eq!((no_per_prompt["properties"]["name"]["enum"].clone(), arguments(&no_per_prompt)), (json!(["a\"b"]), None));
        let nothing = schema_within(&names, per_prompt, 7);
        assert_eq!((nothing["properties"]["name"].get("enum"), arguments(&nothing)), (None, None));
    }
}
