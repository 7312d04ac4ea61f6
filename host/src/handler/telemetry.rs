//! The telemetry of one request, as one wrapper around the use case that
//! answers it ([`PromptServer::observed`]): counted in flight, its log lines
//! in a span carrying the client's `traceparent`, a trace span, a line in
//! the access log, and its failure logged once and converted for the wire.
//! What each call into a pack costs is the use cases' to record (`app`).

use rmcp::RoleServer;
use rmcp::model::ErrorData;
use rmcp::service::RequestContext;
use tracing::Instrument;

use super::{PromptServer, principal};
use crate::error::RequestError;
use crate::identity;
use crate::metrics;
use crate::traces;
use prompt_host_kernel::plugin::PluginError;

/// One request as its telemetry names it.
pub(super) struct Observed<'a> {
    method: &'static str,
    /// The prompt or URI the request names; empty for none.
    target: &'a str,
    /// The plugin serving the target, if one does: the trace span is named
    /// after a served target only, and the access log names the plugin.
    served_by: Option<String>,
    /// Whether the request gets a line in the access log: each request
    /// naming a prompt or a URI does, a list does not.
    access_logged: bool,
}

impl<'a> Observed<'a> {
    /// A list (`method`), which names nothing.
    pub(super) fn list(method: &'static str) -> Observed<'a> {
        Observed { method, target: "", served_by: None, access_logged: false }
    }

    /// A request (`method`) naming `target`, served by the plugin `served_by`.
    pub(super) fn of_target(method: &'static str, target: &'a str, served_by: Option<String>) -> Observed<'a> {
        Observed { method, target, served_by, access_logged: true }
    }
}

impl PromptServer {
    /// Answers `request` with `answer`, observed: in flight while it runs,
    /// in its log span and its trace span, with its line in the access log
    /// (who, what, how it ended as `outcome` names a success, how long, and
    /// the fuel its calls burned), and its failure logged once.
    pub(super) async fn observed<T>(
        &self,
        context: &RequestContext<RoleServer>,
        request: Observed<'_>,
        answer: impl Future<Output = Result<T, RequestError>>,
        outcome: impl FnOnce(&T) -> &'static str,
    ) -> Result<T, ErrorData> {
        let _in_flight = metrics::request_started();
        let span = request_span(context);
        let target = Some(request.target).filter(|target| !target.is_empty());
        let trace = trace_request(context, request.method, target, request.served_by.is_some());
        let answer = answer.instrument(span.clone());
        let answer = async {
            match self.access_log.as_deref().filter(|_| request.access_logged) {
                Some(log) => logged(log, context, &request, answer, outcome).await,
                None => answer.await,
            }
        };
        let result = trace.within(answer).await;
        let result = span.in_scope(|| result.map_err(|error| log_failure(request.method, request.target, error)));
        trace.finished(result.as_ref().err().map(|error| error.code.0));
        result
    }
}

/// Runs `answer` and writes its line to the access log `log`.
async fn logged<T>(
    log: &crate::access_log::AccessLog,
    context: &RequestContext<RoleServer>,
    request: &Observed<'_>,
    answer: impl Future<Output = Result<T, RequestError>>,
    outcome: impl FnOnce(&T) -> &'static str,
) -> Result<T, RequestError> {
    let (started, clock) = (std::time::SystemTime::now(), std::time::Instant::now());
    let (result, fuel) = crate::access_log::counting_fuel(answer).await;
    let principal = principal(context);
    let user = Some(principal.subject.clone()).filter(|subject| !subject.is_empty()).or_else(|| session_label(context));
    let outcome = match &result {
        Ok(answer) => outcome(answer),
        Err(error) => error.outcome(),
    };
    let entry = crate::access_log::Entry::new(
        started,
        clock.elapsed(),
        &principal.tenant,
        user,
        request.method,
        request.target,
        request.served_by.as_deref(),
        outcome,
        fuel,
    );
    log.write(&entry);
    result
}

/// The span of one request's log lines: it carries the request's W3C
/// `traceparent` from `_meta` (SEP-414), so an operator can find the lines
/// of a request a client traced. The value is the client's, so only a
/// syntactically valid one is kept (55 characters, see `valid_traceparent`),
/// and it is logged as an escaped Debug field; without one, no span.
///
/// At level ERROR so that the span is enabled whenever any of the request's
/// lines is logged.
pub(super) fn request_span(context: &RequestContext<RoleServer>) -> tracing::Span {
    match context.meta.get_traceparent().filter(|value| valid_traceparent(value)) {
        Some(traceparent) => tracing::error_span!("request", traceparent = ?traceparent),
        None => tracing::Span::none(),
    }
}

/// The trace span of one request (`method`, naming `prompt`, which the span
/// is named after only if `served`), if traces are enabled: a child of the
/// client's trace when its `_meta` carries a valid `traceparent`. The
/// session is named by its label, never its id.
fn trace_request(context: &RequestContext<RoleServer>, method: &'static str, prompt: Option<&str>, served: bool) -> traces::RequestSpan {
    traces::request_started(|| {
        let http = context.extensions.get::<hyper::http::request::Parts>();
        traces::RequestAttributes {
            method,
            prompt,
            prompt_served: served,
            protocol_version: context.protocol_version().map(|version| version.to_string()),
            request_id: context.id.to_string(),
            session: session_label(context),
            transport: if http.is_some() { "tcp" } else { "pipe" },
            traceparent: context.meta.get_traceparent().filter(|value| valid_traceparent(value)),
            tracestate: context.meta.get_tracestate(),
        }
    })
}

/// The label of the HTTP session a request was sent in, if it was: what
/// names the session in traces and the access log, never its id.
fn session_label(context: &RequestContext<RoleServer>) -> Option<String> {
    let http = context.extensions.get::<hyper::http::request::Parts>()?;
    let id = http.headers.get("mcp-session-id")?;
    Some(identity::session_label(&String::from_utf8_lossy(id.as_bytes())))
}

/// Whether `value` is a W3C Trace Context `traceparent` of version 00 form:
/// `VV-TRACEID-PARENTID-FF`, lowercase hex of 2, 32, 16 and 2 digits
/// (55 characters), with a version other than `ff` and trace and parent ids
/// that are not all zeros.
pub(super) fn valid_traceparent(value: &str) -> bool {
    let fields: Vec<&str> = value.split('-').collect();
    let [version, trace_id, parent_id, flags] = fields.as_slice() else {
        return false;
    };
    let hex = |field: &str, len: usize| field.len() == len && field.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let all_zeros = |field: &str| field.bytes().all(|b| b == b'0');
    hex(version, 2)
        && *version != "ff"
        && hex(trace_id, 32)
        && !all_zeros(trace_id)
        && hex(parent_id, 16)
        && !all_zeros(parent_id)
        && hex(flags, 2)
}

/// Logs a failed request once, and converts the error for the wire: a
/// plugin's failure at warn for the operator; arguments the pack refused
/// at info, naming the prompt (a client's mistake, not the pack's
/// failure); a client's other mistakes at debug. What a client or a pack
/// wrote (the prompt name, the message) goes in escaped fields, never in
/// the log line's message.
pub(super) fn log_failure(method: &str, prompt: &str, error: RequestError) -> ErrorData {
    let prompt = prompt_host_kernel::validate::error_message(prompt);
    match &error {
        RequestError::Plugin(refused @ PluginError::InvalidArguments { .. }) => {
            tracing::info!(method, prompt = ?prompt, plugin = refused.plugin(), error = ?refused.to_string(), "arguments refused by the plugin");
        }
        RequestError::Plugin(plugin_error) => {
            tracing::warn!(method, prompt = ?prompt, plugin = plugin_error.plugin(), error = ?plugin_error.to_string(), "plugin call failed");
        }
        client_error => {
            tracing::debug!(method, prompt = ?prompt, error = ?client_error.to_string(), "request refused");
        }
    }
    error.into()
}
