//! OpenTelemetry traces over the real binary, received by an OTLP/HTTP
//! receiver this test starts on loopback, which decodes each export with the
//! protocol's own generated types (`ExportTraceServiceRequest`).
//!
//! With `--otel-traces`, each request is a SERVER span named as the MCP
//! semantic conventions say, continuing the client's trace from
//! `params._meta.traceparent`, and each call into a pack an INTERNAL child
//! span with the plugin, its fuel, peak memory and outcome; the spans are
//! flushed when stdin ends and on SIGTERM; over HTTP a span names its
//! session by a keyed label, and no exported byte holds the session id. A
//! span is named after a prompt only if one is served under that name, and
//! what a client wrote is escaped as in the log. Without the flag nothing is
//! sent, whatever the environment says.

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use prost::Message;
use serde_json::json;
use support::{Server, http_exchange, http_post, plugin_dir};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN_ID: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

/// One export the receiver got.
struct Export {
    path: String,
    headers: hyper::HeaderMap,
    request: ExportTraceServiceRequest,
    /// The export as it came, every byte.
    body: Bytes,
}

/// An OTLP/HTTP receiver on loopback: it answers each export 200 (an empty
/// `ExportTraceServiceResponse`) and keeps what it decoded.
struct Receiver {
    address: SocketAddr,
    exports: Arc<Mutex<Vec<Export>>>,
    /// Connections accepted, whether or not they sent an export.
    connections: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let address = listener.local_addr().unwrap();
        let exports = Arc::new(Mutex::new(Vec::new()));
        let kept = exports.clone();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                accepted.fetch_add(1, Ordering::SeqCst);
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| receive(request, kept.clone()));
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Receiver { address, exports, connections, _runtime: runtime }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every span received so far, of every export.
    fn spans(&self) -> Vec<Span> {
        let exports = self.exports.lock().unwrap();
        exports
            .iter()
            .flat_map(|export| &export.request.resource_spans)
            .flat_map(|resource| &resource.scope_spans)
            .flat_map(|scope| scope.spans.clone())
            .collect()
    }

    /// The one span named `name`.
    fn span(&self, name: &str) -> Span {
        let spans = self.spans();
        let named: Vec<&Span> = spans.iter().filter(|span| span.name == name).collect();
        assert_eq!(named.len(), 1, "spans named {name:?} among {:?}", spans.iter().map(|span| &span.name).collect::<Vec<_>>());
        named[0].clone()
    }

    /// The one span whose parent is `parent`.
    fn child_of(&self, parent: &Span) -> Span {
        let spans = self.spans();
        let children: Vec<&Span> = spans.iter().filter(|span| span.parent_span_id == parent.span_id).collect();
        assert_eq!(children.len(), 1, "children of {:?}", parent.name);
        children[0].clone()
    }
}

async fn receive(request: Request<Incoming>, exports: Arc<Mutex<Vec<Export>>>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let request = ExportTraceServiceRequest::decode(body.clone()).expect("an ExportTraceServiceRequest in protobuf");
    exports.lock().unwrap().push(Export { path: parts.uri.path().to_string(), headers: parts.headers, request, body });
    let response = Response::builder().header("content-type", "application/x-protobuf").body(Full::new(Bytes::new()));
    Ok(response.unwrap())
}

/// A span's attributes, each value as text (strings as they are, integers
/// in decimal).
fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|attribute| {
            let value = match attribute.value.as_ref().and_then(|value: &AnyValue| value.value.clone()) {
                Some(any_value::Value::StringValue(text)) => text,
                Some(any_value::Value::IntValue(number)) => number.to_string(),
                other => panic!("unexpected value of {}: {other:?}", attribute.key),
            };
            (attribute.key.clone(), value)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    attributes(span).remove(key)
}

fn serve_traced(receiver: &Receiver, plugins: &tempfile::TempDir, flags: &[&str], env: &[(&str, &str)]) -> Server {
    let mut args = vec!["--plugins", plugins.path().to_str().unwrap()];
    args.extend_from_slice(flags);
    let endpoint = receiver.endpoint();
    let mut environment = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    environment.extend_from_slice(env);
    Server::start_with_env(&args, &environment)
}

#[test]
fn requests_and_pack_calls_are_spans_of_the_clients_trace_flushed_when_stdin_ends() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review", "hostile"]);
    let mut server = serve_traced(&receiver, &plugins, &["--otel-traces"], &[]);
    server.result("prompts/list", json!({}));
    let meta = json!({ "traceparent": TRACEPARENT, "tracestate": "vendor=opaque" });
    let get = server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" }, "_meta": meta }));
    assert!(server.response(get).get("result").is_some());
    assert_eq!(server.error("prompts/get", json!({ "name": "no_such_prompt" }))["code"], -32602);
    assert_eq!(server.error("prompts/get", json!({ "name": "panic" }))["code"], -32603);
    assert_eq!(server.close_stdin(), Some(0));

    let exports = receiver.exports.lock().unwrap();
    assert!(!exports.is_empty());
    for export in exports.iter() {
        assert_eq!(export.path, "/v1/traces");
        assert_eq!(export.headers["content-type"], "application/x-protobuf");
        let resource = export.request.resource_spans[0].resource.as_ref().unwrap();
        let service = resource.attributes.iter().find(|attribute| attribute.key == "service.name").unwrap();
        assert_eq!(service.value.as_ref().unwrap().value, Some(any_value::Value::StringValue("prompt-host".into())));
    }
    drop(exports);

    let list = receiver.span("prompts/list");
    assert_eq!(list.kind, SpanKind::Server as i32);
    assert!(list.parent_span_id.is_empty(), "a request without a traceparent starts a trace");
    assert_eq!(attribute(&list, "mcp.method.name").as_deref(), Some("prompts/list"));
    assert_eq!(attribute(&list, "gen_ai.prompt.name"), None);
    assert_eq!(attribute(&list, "error.type"), None);

    let get_span = receiver.span("prompts/get code_review");
    assert_eq!(get_span.kind, SpanKind::Server as i32);
    assert_eq!(hex(&get_span.trace_id), TRACE_ID);
    assert_eq!(hex(&get_span.parent_span_id), CLIENT_SPAN_ID);
    assert_eq!(get_span.trace_state, "vendor=opaque");
    let expected: HashMap<String, String> = [
        ("mcp.method.name", "prompts/get"),
        ("gen_ai.prompt.name", "code_review"),
        ("mcp.protocol.version", "2025-11-25"),
        ("jsonrpc.request.id", &get.to_string()),
        ("network.transport", "pipe"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect();
    assert_eq!(attributes(&get_span), expected);
    assert_ne!(get_span.status.as_ref().map(|status| status.code), Some(StatusCode::Error as i32));

    let call = receiver.child_of(&get_span);
    assert_eq!(call.name, "plugin prompts/get");
    assert_eq!(call.kind, SpanKind::Internal as i32);
    assert_eq!(hex(&call.trace_id), TRACE_ID);
    let call_attributes = attributes(&call);
    assert_eq!(call_attributes["prompt_host.plugin.name"], "code_review");
    assert_eq!(call_attributes["prompt_host.plugin.method"], "prompts/get");
    assert_eq!(call_attributes["prompt_host.plugin.outcome"], "ok");
    assert!(call_attributes["prompt_host.plugin.fuel_used"].parse::<u64>().unwrap() > 0, "{call_attributes:?}");
    // At least one WebAssembly page of linear memory.
    assert!(call_attributes["prompt_host.plugin.peak_memory_bytes"].parse::<u64>().unwrap() >= 65536, "{call_attributes:?}");
    assert_eq!(call_attributes.get("error.type"), None);

    // No prompt is served under that name: the span is named after the method.
    let unknown = receiver.span("prompts/get");
    assert_eq!(attribute(&unknown, "gen_ai.prompt.name").as_deref(), Some("no_such_prompt"));
    assert_eq!(attribute(&unknown, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attribute(&unknown, "rpc.response.status_code").as_deref(), Some("-32602"));
    assert_eq!(unknown.status.as_ref().unwrap().code, StatusCode::Error as i32);
    assert_ne!(hex(&unknown.trace_id), TRACE_ID, "a request without a traceparent starts a trace of its own");
    assert!(receiver.spans().iter().all(|span| span.parent_span_id != unknown.span_id), "no pack was called");

    let panicked = receiver.span("prompts/get panic");
    assert_eq!(attribute(&panicked, "error.type").as_deref(), Some("-32603"));
    let call = receiver.child_of(&panicked);
    let call_attributes = attributes(&call);
    assert_eq!(call_attributes["prompt_host.plugin.name"], "hostile");
    assert_eq!(call_attributes["prompt_host.plugin.outcome"], "panic");
    assert_eq!(call_attributes["error.type"], "panic");
    assert_eq!(call.status.as_ref().unwrap().code, StatusCode::Error as i32);
}

#[test]
fn spans_are_flushed_on_sigterm_with_the_standard_service_name_and_headers() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let env = [("OTEL_SERVICE_NAME", "prompts-eu"), ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20collector-token")];
    let mut server = serve_traced(&receiver, &plugins, &["--otel-traces"], &env);
    server.get_prompt("code_review", json!({ "code": "x" }));
    server.terminate();

    let span = receiver.span("prompts/get code_review");
    assert_eq!(attribute(&span, "gen_ai.prompt.name").as_deref(), Some("code_review"));
    let exports = receiver.exports.lock().unwrap();
    let export = &exports[0];
    assert_eq!(export.headers["authorization"], "Bearer collector-token");
    let resource = export.request.resource_spans[0].resource.as_ref().unwrap();
    let service = resource.attributes.iter().find(|attribute| attribute.key == "service.name").unwrap();
    assert_eq!(service.value.as_ref().unwrap().value, Some(any_value::Value::StringValue("prompts-eu".into())));
}

#[test]
fn a_long_prompt_name_is_cut_in_the_span() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let mut server = serve_traced(&receiver, &plugins, &["--otel-traces"], &[]);
    let name = format!("{}é", "n".repeat(255));
    server.error("prompts/get", json!({ "name": name }));
    server.close_stdin();
    // No prompt has that name: the span is named after the method alone.
    let span = receiver.span("prompts/get");
    assert_eq!(attribute(&span, "gen_ai.prompt.name"), Some("n".repeat(255)));
}

#[test]
fn only_a_served_prompt_names_a_span_and_what_a_client_wrote_is_escaped_as_in_the_log() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let mut server = serve_traced(&receiver, &plugins, &["--otel-traces"], &[]);
    server.result("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" } }));
    for index in 0..200 {
        server.error("prompts/get", json!({ "name": format!("made-up-{index}") }));
    }
    let hostile = "evil\u{1b}[31m\nforged\u{202e}txt";
    server.error("prompts/get", json!({ "name": hostile }));
    let completion = json!({ "ref": { "type": "ref/prompt", "name": hostile }, "argument": { "name": "a", "value": "b" } });
    server.error("completion/complete", completion);
    assert_eq!(server.close_stdin(), Some(0));

    let spans = receiver.spans();
    let mut names: Vec<&str> = spans.iter().filter(|span| span.kind == SpanKind::Server as i32).map(|span| span.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names, ["completion/complete", "prompts/get", "prompts/get code_review"]);
    let escaped = "evil\\u{1b}[31m\\nforged\\u{202e}txt";
    let named = |method: &str| {
        spans
            .iter()
            .filter(|span| span.name == method && attribute(span, "gen_ai.prompt.name").is_some_and(|name| !name.starts_with("made-up-")))
            .map(|span| attribute(span, "gen_ai.prompt.name").unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(named("prompts/get"), [escaped]);
    assert_eq!(named("completion/complete"), [escaped]);
    let exported: Vec<u8> = receiver.exports.lock().unwrap().iter().flat_map(|export| export.body.to_vec()).collect();
    // The raw characters never: (a single byte alone could be part of an id
    // or a length in the protobuf, so each is looked for with its neighbours).
    for raw in ["evil\u{1b}", "[31m\nforged", "forged\u{202e}txt"] {
        assert!(!exported.windows(raw.len()).any(|window| window == raw.as_bytes()), "{raw:?} was exported");
    }
}

#[test]
fn without_the_flag_nothing_is_sent_even_with_an_endpoint_set() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let mut server = serve_traced(&receiver, &plugins, &[], &[]);
    server.result("prompts/list", json!({}));
    let meta = json!({ "traceparent": TRACEPARENT });
    server.result("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" }, "_meta": meta }));
    assert_eq!(server.close_stdin(), Some(0));
    assert_eq!(receiver.connections.load(Ordering::SeqCst), 0);
    assert_eq!(receiver.exports.lock().unwrap().len(), 0);
}

#[test]
fn over_http_a_span_names_its_session() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command
        .args(["serve", "--http", "127.0.0.1:0", "--otel-traces", "--plugins", plugins.path().to_str().unwrap()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
    let (mut child, stderr, address) = support::start_http(command, "info");
    let (status, response) = http_exchange(address, &http_post("localhost", "", support::HTTP_INITIALIZE));
    assert_eq!(status, 200, "{response}");
    let session = response
        .lines()
        .find(|line| line.to_ascii_lowercase().starts_with("mcp-session-id:"))
        .map(|line| line["mcp-session-id:".len()..].trim().to_string())
        .expect("no session id");
    let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(http_exchange(address, &http_post("localhost", &headers, initialized)).0, 202);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{}}"#;
    let (status, response) = http_exchange(address, &http_post("localhost", &headers, list));
    assert_eq!(status, 200, "{response}");
    support::send_signal(child.id(), "TERM");
    assert!(child.wait().unwrap().success());

    let span = receiver.span("prompts/list");
    // Named by a keyed label (16 hex digits), not by its id, in whole or in part.
    let label = attribute(&span, "mcp.session.id").expect("a session label");
    assert_eq!(label.len(), 16, "{label}");
    assert!(label.bytes().all(|byte| byte.is_ascii_hexdigit()), "{label}");
    let (rmcp_id, tag) = session.rsplit_once('.').expect("an id bound to its user");
    let exported: Vec<u8> = receiver.exports.lock().unwrap().iter().flat_map(|export| export.body.to_vec()).collect();
    let log = stderr.lock().unwrap().clone();
    for secret in [session.as_str(), rmcp_id, tag] {
        assert!(!exported.windows(secret.len()).any(|window| window == secret.as_bytes()), "{secret} was exported");
        assert!(!log.contains(secret), "{secret} was logged:\n{log}");
    }
    assert_eq!(attribute(&span, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attribute(&span, "jsonrpc.request.id").as_deref(), Some("2"));
}

#[test]
fn a_client_trace_that_is_not_sampled_is_not_exported() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["code_review"]);
    let mut server = serve_traced(&receiver, &plugins, &["--otel-traces"], &[]);
    let unsampled = TRACEPARENT.replace("-01", "-00");
    let meta = json!({ "traceparent": unsampled });
    server.result("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" }, "_meta": meta }));
    server.result("prompts/list", json!({}));
    assert_eq!(server.close_stdin(), Some(0));
    let names: Vec<String> = receiver.spans().into_iter().map(|span| span.name).collect();
    assert_eq!(names, ["prompts/list"]);
}
