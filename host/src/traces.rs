//! OpenTelemetry traces, exported over OTLP (HTTP/protobuf) when `serve
//! --otel-traces` asks for them, and otherwise not made at all.
//!
//! Until [`enable`] is called nothing is installed: no exporter, no span
//! processor, no `tracing` layer; each function here reads one atomic (the
//! unset [`OnceLock`]) and returns, and a request runs without an
//! OpenTelemetry context.
//! Once enabled, each request the handler answers is a SERVER span named and
//! attributed as the OpenTelemetry semantic conventions for MCP say
//! (`{mcp.method.name} {gen_ai.prompt.name}`), a child of the client's
//! trace when its `params._meta` carries a W3C `traceparent`; each call into
//! a pack is an INTERNAL child span of it, with the plugin, the fuel used,
//! the peak memory and the outcome the metrics count.
//!
//! The exporter reads the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, ...), the resource `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`. Spans are exported in batches, from a thread
//! of the batch processor's own; [`Traces`] flushes them when dropped.
//!
//! What a client or a pack controls reaches a span only bounded and
//! escaped: every string attribute is escaped as the log escapes it
//! (control characters, bidirectional overrides) and cut to
//! [`MAX_ATTRIBUTE_BYTES`], a span is named after a prompt only if one is
//! served under that name (else after the method alone, so clients cannot
//! make span names without bound), a session is named by its keyed label
//! (`identity::session_label`), never its id, a `tracestate` longer than
//! [`MAX_TRACESTATE_BYTES`] is dropped, and the `traceparent` is the one the
//! caller has checked.
//!
//! Like [`crate::metrics`], this module depends on nothing else in the
//! crate, so that every module on the request path may record into it.

use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{FutureExt, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// The longest string attribute a span carries, in bytes: a prompt name as
/// long as a pack may declare one (`validate::MAX_NAME_BYTES`), or a request
/// id, session id or protocol version a client sent, cut at a character
/// boundary.
pub const MAX_ATTRIBUTE_BYTES: usize = 256;

/// The longest `tracestate` continued, in bytes: the 512 characters W3C
/// Trace Context asks every vendor to propagate. A longer one is dropped
/// (the trace continues without it).
pub const MAX_TRACESTATE_BYTES: usize = 512;

/// The service name spans are exported under unless `OTEL_SERVICE_NAME`
/// names another.
const SERVICE_NAME: &str = "prompt-host";

/// Why traces could not be enabled.
#[derive(Debug, thiserror::Error)]
#[error("cannot export OpenTelemetry traces: {0}")]
pub struct TracesError(String);

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Traces being exported, until this is dropped: then the spans not yet
/// exported are flushed (the batch processor's thread sends them; the
/// flush waits at most 5 seconds), and the exporter is shut down.
pub struct Traces {
    provider: SdkTracerProvider,
}

/// Starts tracing: builds the OTLP exporter from the environment and a
/// batch processor, for the life of the process (it is enabled once).
pub fn enable() -> Result<Traces, TracesError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(|error| TracesError(error.to_string()))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none_or(|name| name.is_empty()) {
        resource = resource.with_service_name(SERVICE_NAME);
    }
    let provider = SdkTracerProvider::builder().with_resource(resource.build()).with_batch_exporter(exporter).build();
    let tracer = provider
        .tracer_with_scope(opentelemetry::InstrumentationScope::builder("prompt-host").with_version(env!("CARGO_PKG_VERSION")).build());
    TRACER.set(tracer).map_err(|_| TracesError("traces are already enabled".into()))?;
    Ok(Traces { provider })
}

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(error = %error, "the last spans could not be exported");
        }
    }
}

/// Whether traces are enabled.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// What the server span of one request says: the MCP semantic conventions'
/// attributes. Each string the client sent is escaped and cut to
/// [`MAX_ATTRIBUTE_BYTES`] here.
pub struct RequestAttributes<'a> {
    /// `mcp.method.name`, such as `prompts/get`.
    pub method: &'static str,
    /// `gen_ai.prompt.name`: the prompt the request names, if any.
    pub prompt: Option<&'a str>,
    /// Whether a prompt is served under that name: only then is the span
    /// named after it.
    pub prompt_served: bool,
    /// `mcp.protocol.version`.
    pub protocol_version: Option<String>,
    /// `jsonrpc.request.id`.
    pub request_id: String,
    /// `mcp.session.id`: the label of the session (Streamable HTTP's
    /// `Mcp-Session-Id`, by `identity::session_label`), never its id.
    pub session: Option<String>,
    /// `network.transport`: `pipe` (stdio) or `tcp` (HTTP).
    pub transport: &'static str,
    /// The client's W3C `traceparent`, already checked, and `tracestate`.
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}

/// One request's SERVER span, if traces are enabled; ended by
/// [`RequestSpan::finished`] (or, if the request is abandoned, when dropped).
pub struct RequestSpan(Option<Context>);

/// Starts the server span of a request; `attributes` is called only when
/// traces are enabled.
pub fn request_started<'a>(attributes: impl FnOnce() -> RequestAttributes<'a>) -> RequestSpan {
    let Some(tracer) = TRACER.get() else {
        return RequestSpan(None);
    };
    let request = attributes();
    let prompt = request.prompt.map(bounded);
    let name = match &prompt {
        Some(prompt) if request.prompt_served => format!("{} {prompt}", request.method),
        _ => request.method.to_string(),
    };
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", request.method),
        KeyValue::new("jsonrpc.request.id", bounded(&request.request_id).into_owned()),
        KeyValue::new("network.transport", request.transport),
    ];
    let optional = [
        ("gen_ai.prompt.name", prompt),
        ("mcp.protocol.version", request.protocol_version.as_deref().map(bounded)),
        ("mcp.session.id", request.session.as_deref().map(bounded)),
    ];
    attributes.extend(optional.into_iter().filter_map(|(key, value)| Some(KeyValue::new(key, value?.into_owned()))));
    let parent = client_context(request.traceparent, request.tracestate);
    let span = tracer.span_builder(name).with_kind(SpanKind::Server).with_attributes(attributes).start_with_context(tracer, &parent);
    RequestSpan(Some(parent.with_span(span)))
}

/// The client's trace, from its `traceparent` and `tracestate` (W3C Trace
/// Context, as the SDK's propagator reads them); without a traceparent, a
/// new trace.
fn client_context(traceparent: Option<&str>, tracestate: Option<&str>) -> Context {
    let Some(traceparent) = traceparent else {
        return Context::new();
    };
    let tracestate = tracestate.filter(|state| state.len() <= MAX_TRACESTATE_BYTES);
    TraceContextPropagator::new().extract_with_context(&Context::new(), &ClientTraceContext { traceparent, tracestate })
}

/// The two W3C Trace Context fields of a request's `_meta`, as the
/// propagator reads headers.
struct ClientTraceContext<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for ClientTraceContext<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

impl RequestSpan {
    /// Runs `future` with this span current (so that calls into packs are
    /// its children); without a span, runs it as it is.
    pub async fn within<F: Future>(&self, future: F) -> F::Output {
        within(self.0.as_ref(), future).await
    }

    /// Ends the span: answered, or failed with JSON-RPC error `error_code`
    /// (its `error.type` and `rpc.response.status_code`).
    pub fn finished(self, error_code: Option<i32>) {
        let Some(context) = self.0 else { return };
        let span = context.span();
        if let Some(code) = error_code {
            let code = code.to_string();
            span.set_attribute(KeyValue::new("error.type", code.clone()));
            span.set_attribute(KeyValue::new("rpc.response.status_code", code));
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

async fn within<F: Future>(context: Option<&Context>, future: F) -> F::Output {
    match context {
        Some(context) => future.with_context(context.clone()).await,
        None => future.await,
    }
}

/// One call into a pack's INTERNAL span, a child of the current span, if
/// traces are enabled.
pub struct PluginCallSpan(Option<Context>);

/// Starts the span of a call into plugin `plugin`'s `method` (the metrics'
/// method label).
pub fn plugin_call_started(plugin: &str, method: &'static str) -> PluginCallSpan {
    let Some(tracer) = TRACER.get() else {
        return PluginCallSpan(None);
    };
    let parent = Context::current();
    let attributes =
        vec![KeyValue::new("prompt_host.plugin.name", bounded(plugin).into_owned()), KeyValue::new("prompt_host.plugin.method", method)];
    let span = tracer
        .span_builder(format!("plugin {method}"))
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    PluginCallSpan(Some(parent.with_span(span)))
}

impl PluginCallSpan {
    /// Runs the call with this span current, so that [`call_usage`] finds it.
    pub async fn within<F: Future>(&self, future: F) -> F::Output {
        within(self.0.as_ref(), future).await
    }

    /// Ends the span with the call's `outcome` (the metrics' outcome: `ok`,
    /// `input-required`, or the failure's kind, which is also its
    /// `error.type`).
    pub fn finished(self, outcome: &'static str, failed: bool) {
        let Some(context) = self.0 else { return };
        let span = context.span();
        span.set_attribute(KeyValue::new("prompt_host.plugin.outcome", outcome));
        if failed {
            span.set_attribute(KeyValue::new("error.type", outcome));
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

/// Records what a call into a pack cost on the current span (the call's,
/// see [`PluginCallSpan::within`]); outside one, nothing.
pub fn call_usage(usage: &prompt_host_kernel::sandbox::CallUsage) {
    if TRACER.get().is_none() {
        return;
    }
    Context::map_current(|context| {
        let span = context.span();
        span.set_attribute(KeyValue::new("prompt_host.plugin.fuel_used", usage.fuel as i64));
        span.set_attribute(KeyValue::new("prompt_host.plugin.peak_memory_bytes", usage.peak_memory_bytes as i64));
        // What it did with its grants, on the spans of calls that used any.
        let io = &usage.io;
        if *io != prompt_host_kernel::grants::IoUsage::default() {
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.files_opened", io.files_opened as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.read_bytes", io.read_bytes as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.dir_entries", io.dir_entries as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.denials", io.denials as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.io_us", io.io_time.as_micros() as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.http_requests", io.http_requests as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.http_sent_bytes", io.http_sent_bytes as i64));
            span.set_attribute(KeyValue::new("prompt_host.plugin.granted.http_received_bytes", io.http_received_bytes as i64));
        }
    });
}

/// `text` escaped as the log escapes a field (Rust's `escape_debug`:
/// control characters such as ESC and newline, bidirectional overrides such
/// as U+202E, quotes and backslashes), cut to at most
/// [`MAX_ATTRIBUTE_BYTES`] at a character boundary.
pub fn bounded(text: &str) -> Cow<'_, str> {
    let mut escaped = String::new();
    for piece in text.chars().map(char::escape_debug) {
        let piece = piece.to_string();
        // Stops at the bound: a huge value costs no more, and an escape is
        // never cut in half.
        if escaped.len() + piece.len() > MAX_ATTRIBUTE_BYTES {
            break;
        }
        escaped.push_str(&piece);
    }
    if escaped == text { Cow::Borrowed(text) } else { Cow::Owned(escaped) }
}

#[cfg(test)]
mod tests {
    use super::{MAX_ATTRIBUTE_BYTES, bounded, client_context};
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn an_attribute_is_escaped_as_in_the_log_and_cut_whole_characters_at_the_bound() {
        assert_eq!(bounded("code-review"), "code-review");
        assert_eq!(bounded("a\u{1b}[31m\nb\u{202e}c\"d\\"), "a\\u{1b}[31m\\nb\\u{202e}c\\\"d\\\\");
        // An escape is never cut in half.
        let escapes = "\u{202e}".repeat(100);
        assert_eq!(bounded(&escapes), "\\u{202e}".repeat(MAX_ATTRIBUTE_BYTES / 8));
        let long = format!("{}é", "n".repeat(MAX_ATTRIBUTE_BYTES - 1));
        assert_eq!(bounded(&long), "n".repeat(MAX_ATTRIBUTE_BYTES - 1));
        assert_eq!(bounded(&"n".repeat(MAX_ATTRIBUTE_BYTES)).len(), MAX_ATTRIBUTE_BYTES);
    }

    #[test]
    fn the_client_trace_continues_with_its_tracestate_unless_too_long() {
        let traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
        let context = client_context(traceparent, Some("vendor=opaque"));
        let span = context.span();
        let parent = span.span_context();
        assert_eq!(parent.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(parent.span_id().to_string(), "00f067aa0ba902b7");
        assert!(parent.is_remote());
        assert_eq!(parent.trace_state().header(), "vendor=opaque");
        // Three entries W3C allows (values of up to 256 characters), 612 bytes in all.
        let value = "v".repeat(200);
        let long = format!("a={value},b={value},c={value}");
        assert!(long.len() > super::MAX_TRACESTATE_BYTES);
        let context = client_context(traceparent, Some(&long));
        assert_eq!(context.span().span_context().trace_state().header(), "");
        assert!(!client_context(None, Some("vendor=opaque")).span().span_context().is_valid());
    }
}
