//! Errors a request can end in, and their JSON-RPC form.
//!
//! Codes follow the MCP specification: -32602 (invalid params) for what the
//! client can fix (an unknown prompt, missing or non-string arguments, a bad
//! cursor, arguments a plugin rejected); -32603 (internal error) for a plugin
//! that failed or hit a limit. Each error carries structured `data` naming
//! the prompt or plugin involved.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::convert::NonStringArgument;
use crate::cursor::CursorError;
use crate::input::InputError;
use crate::served_content::NotServed;
use prompt_host_kernel::arguments::Refused;
use prompt_host_kernel::grants::GrantRefusal;
use prompt_host_kernel::plugin::PluginError;
use prompt_host_kernel::sandbox::CallFailure;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    #[error("unknown prompt '{name}'{}", did_you_mean(.closest))]
    UnknownPrompt { name: String, closest: Option<String> },
    #[error("prompt '{prompt}' is missing required arguments: {}", missing.join(", "))]
    MissingArguments { prompt: String, missing: Vec<String> },
    #[error("prompt '{prompt}': {problem}")]
    NonStringArgument { prompt: String, problem: NonStringArgument },
    /// A value not of the kind its argument declared (WIT 0.3).
    #[error("prompt '{prompt}': argument '{}' must be {}, not \"{}\"", .refused.argument, .refused.expected, .refused.given)]
    InvalidArgument { prompt: String, refused: Refused },
    #[error("the arguments of prompt '{prompt}' are {bytes} bytes, more than the limit of {limit}")]
    ArgumentsTooLarge { prompt: String, bytes: usize, limit: usize },
    #[error("prompt '{prompt}': {problem}")]
    Input { prompt: String, problem: InputError },
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error("completion/complete supports only ref/prompt references: this server serves no resources")]
    UnsupportedReference,
    #[error(transparent)]
    Plugin(#[from] PluginError),
    #[error("invalid params for {method}: {problem}")]
    InvalidParams { method: String, problem: String },
    #[error("method not found: {0}")]
    UnknownMethod(String),
    /// A URI no skill, resource or folder is served at (SEP-2164: -32602,
    /// with the URI in `data`).
    #[error("{}", not_served(.uri, .what))]
    NotServed { uri: String, what: NotServed },
}

fn not_served(uri: &str, what: &NotServed) -> String {
    match what {
        NotServed::Skill => format!("no skill is served at '{uri}': skills/list lists each skill by its SKILL.md's URI"),
        NotServed::Resource => format!("no resource is served at '{uri}': resources/list lists every one"),
        NotServed::Directory => {
            format!(
                "'{uri}' is not a folder served here: resources/directory/read takes a skill's folder (skill://<path>) or one inside it"
            )
        }
    }
}

impl RequestError {
    /// The error for `uri` (the client's, escaped and bounded here), not
    /// served as `what`.
    pub fn not_served(uri: &str, what: NotServed) -> RequestError {
        RequestError::NotServed { uri: prompt_host_kernel::validate::error_message(uri), what }
    }

    /// The `outcome` label of a request that ended in this error: a call
    /// into a plugin's failure kind, else what the client got wrong.
    pub fn outcome(&self) -> &'static str {
        match self {
            RequestError::Plugin(error) => failure_kind(error),
            RequestError::MissingArguments { .. }
            | RequestError::NonStringArgument { .. }
            | RequestError::InvalidArgument { .. }
            | RequestError::ArgumentsTooLarge { .. } => "invalid-arguments",
            RequestError::Input { .. } => "input-refused",
            RequestError::UnknownPrompt { .. } | RequestError::NotServed { .. } => "not-found",
            RequestError::Cursor(_)
            | RequestError::UnsupportedReference
            | RequestError::InvalidParams { .. }
            | RequestError::UnknownMethod(_) => "invalid-params",
        }
    }

    fn data(&self) -> Value {
        match self {
            RequestError::UnknownPrompt { name, .. } => json!({ "prompt": name }),
            RequestError::MissingArguments { prompt, missing } => json!({ "prompt": prompt, "missing": missing }),
            RequestError::NonStringArgument { prompt, problem } => {
                json!({ "prompt": prompt, "argument": problem.name })
            }
            RequestError::InvalidArgument { prompt, refused } => {
                json!({ "prompt": prompt, "argument": refused.argument, "expected": refused.expected })
            }
            RequestError::ArgumentsTooLarge { prompt, limit, .. } => {
                json!({ "prompt": prompt, "limit": { "bytes": limit } })
            }
            RequestError::Input { prompt, problem } => match problem {
                InputError::Response { form, .. } => json!({ "prompt": prompt, "form": form }),
                InputError::Field { form, field, .. } => json!({ "prompt": prompt, "form": form, "field": field }),
                _ => json!({ "prompt": prompt, "reason": "input" }),
            },
            RequestError::Cursor(_) => json!({ "reason": "cursor" }),
            RequestError::UnsupportedReference => json!({ "reason": "reference" }),
            RequestError::Plugin(error) => plugin_data(error),
            RequestError::InvalidParams { method, .. } => json!({ "method": method }),
            RequestError::UnknownMethod(method) => json!({ "method": method }),
            RequestError::NotServed { uri, .. } => json!({ "uri": uri }),
        }
    }
}

fn did_you_mean(closest: &Option<String>) -> String {
    closest.as_ref().map(|name| format!(" (did you mean '{name}'?)")).unwrap_or_default()
}

fn plugin_data(error: &PluginError) -> Value {
    let (plugin, failure) = (error.plugin(), failure_kind(error));
    match error {
        PluginError::Failed { failure: call_failure, .. } => {
            let mut data = json!({ "plugin": plugin, "failure": failure });
            if let Some(limit) = limit(call_failure) {
                data["limit"] = limit;
            }
            data
        }
        PluginError::InvalidArguments { prompt, .. }
        | PluginError::Internal { prompt, .. }
        | PluginError::Disowned { prompt, .. }
        | PluginError::InvalidReply { prompt, .. } => json!({ "plugin": plugin, "prompt": prompt, "failure": failure }),
    }
}

/// A short, stable name for how a call into a plugin failed: the `failure`
/// of the error's data, and the `outcome` label of the call's metric.
pub fn failure_kind(error: &PluginError) -> &'static str {
    match error {
        PluginError::Failed { failure, .. } => failure.kind(),
        PluginError::InvalidArguments { .. } => "invalid-arguments",
        PluginError::Internal { .. } => "internal",
        PluginError::Disowned { .. } => "not-found",
        PluginError::InvalidReply { .. } => "invalid-reply",
    }
}

/// The `outcome` label of a call into a plugin that ended in `result`.
pub fn outcome<T>(result: &Result<T, PluginError>) -> &'static str {
    result.as_ref().map_or_else(failure_kind, |_| crate::metrics::OK)
}

/// The limit a failure hit, with its unit, for structured error data.
fn limit(failure: &CallFailure) -> Option<Value> {
    match failure {
        CallFailure::OutOfFuel { budget } => Some(json!({ "fuel": budget })),
        CallFailure::DeadlineExceeded { deadline } => Some(json!({ "milliseconds": deadline.as_millis() as u64 })),
        CallFailure::MemoryLimit { limit_bytes } => Some(json!({ "bytes": limit_bytes })),
        CallFailure::StackOverflow { limit_bytes } => Some(json!({ "bytes": limit_bytes })),
        CallFailure::Busy { limit, .. } => Some(json!({ "concurrentCalls": limit })),
        CallFailure::CopyBudget { budget } => Some(json!({ "bytes": budget })),
        CallFailure::Grant(GrantRefusal::Budget { budget, limit }) => Some(json!({ "budget": budget.key(), "limit": limit })),
        CallFailure::Grant(GrantRefusal::AddressRefused { address, class, .. }) => Some(json!({ "address": address, "class": class })),
        CallFailure::Grant(GrantRefusal::NotGranted { .. } | GrantRefusal::OriginNotGranted { .. })
        | CallFailure::Panic { .. }
        | CallFailure::Trap { .. } => None,
    }
}

impl From<RequestError> for ErrorData {
    fn from(error: RequestError) -> ErrorData {
        let (message, data) = (error.to_string(), Some(error.data()));
        let code = match &error {
            RequestError::Plugin(PluginError::InvalidArguments { .. }) => ErrorCode::INVALID_PARAMS,
            RequestError::Plugin(_) => ErrorCode::INTERNAL_ERROR,
            RequestError::UnknownMethod(_) => ErrorCode::METHOD_NOT_FOUND,
            _ => ErrorCode::INVALID_PARAMS,
        };
        ErrorData::new(code, message, data)
    }
}

/// The error for a request rmcp could not parse: a method this server does
/// not offer, or one of its methods with parameters of the wrong shape, which
/// gets the reason the parameters were refused (`tools/call` is one of them
/// when the server serves its prompts as tools: `tools_declared`; the
/// resource and skill reads when it serves content: `content_declared`).
///
/// The method's name and the reason quote the client: escaped and bounded as
/// a pack's text is (`validate::error_message`), so that the answer is
/// bounded whatever the client sent.
pub fn unparsed_request(method: &str, params: Option<Value>, tools_declared: bool, content_declared: bool) -> RequestError {
    use rmcp::model::{
        CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, GetSkillRequestParams, PaginatedRequestParams,
        ReadResourceDirectoryRequestParams, ReadResourceRequestParams,
    };
    let problem = match method {
        "tools/call" if tools_declared => params_problem::<CallToolRequestParams>(params),
        "resources/read" if content_declared => params_problem::<ReadResourceRequestParams>(params),
        "skills/get" if content_declared => params_problem::<GetSkillRequestParams>(params),
        "resources/directory/read" if content_declared => params_problem::<ReadResourceDirectoryRequestParams>(params),
        "prompts/get" => params_problem::<GetPromptRequestParams>(params),
        "prompts/list" => params_problem::<PaginatedRequestParams>(params),
        "completion/complete" => params_problem::<CompleteRequestParams>(params),
        _ => return RequestError::UnknownMethod(prompt_host_kernel::validate::error_message(method)),
    };
    RequestError::InvalidParams { method: method.to_string(), problem: prompt_host_kernel::validate::error_message(problem) }
}

fn params_problem<T: serde::de::DeserializeOwned>(params: Option<Value>) -> String {
    match serde_json::from_value::<T>(params.unwrap_or(Value::Null)) {
        Err(error) => error.to_string(),
        Ok(_) => "the parameters do not fit the method".to_string(),
    }
}
