//! The log's filter: what is logged unless RUST_LOG says otherwise, and
//! which of rmcp's and oci-client's own lines are left out because the host
//! logs the same event itself, once, bounded and escaped. The binary sets up
//! logging with it, on stderr: stdout belongs to the protocol.

/// What is logged unless RUST_LOG says otherwise: the host's own events, and
/// only rmcp's warnings (it logs every message it handles at info).
const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// rmcp's service loop logs every error response at warn, with the error's
/// Debug dump. The handler already logs each failed request once (a pack's
/// failure at warn, as escaped fields), so this is off unless RUST_LOG names
/// rmcp itself.
const RMCP_RESPONSE_ERRORS_OFF: &str = "rmcp::service=error";

/// rmcp's HTTP service logs each Host or Origin it refuses at warn, without
/// the client's address. The HTTP front logs every refusal itself, with the
/// address, so this is off unless RUST_LOG names rmcp itself.
const RMCP_REFUSALS_OFF: &str = "rmcp::transport::streamable_http_server::tower=error";

/// rmcp's stdio codec logs each line it cannot parse at debug, whole and
/// unescaped, in the line's message. The transport answers and logs such a
/// line itself, once, bounded and escaped (`transport::malformed`), so this
/// is off unless RUST_LOG names rmcp itself.
const RMCP_UNPARSED_LINES_OFF: &str = "rmcp::transport::async_rw=info";
/// rmcp's session manager logs each new session's id at info. The host
/// names a session only by its label (`identity::session_label`), so this
/// is off unless RUST_LOG names rmcp itself.
const RMCP_SESSION_IDS_OFF: &str = "rmcp::transport::streamable_http_server::session=warn";

/// oci-client (which pushes for `publish` and `sign`) logs a registry's
/// sign-in refusal, the registry's own text, unescaped at debug: a registry
/// is not trusted with the log, so this is off unless RUST_LOG names
/// oci_client itself.
const OCI_CLIENT_DEBUG_OFF: &str = "oci_client=info";

/// The log filter: RUST_LOG, or the default; either way without rmcp's
/// second line per failed request or refusal unless RUST_LOG asks for rmcp,
/// and without oci-client's debug lines unless it asks for oci_client.
pub fn filter() -> tracing_subscriber::EnvFilter {
    let requested = std::env::var("RUST_LOG").ok().filter(|filter| !filter.trim().is_empty());
    let mut filter = tracing_subscriber::EnvFilter::try_new(requested.as_deref().unwrap_or(DEFAULT_LOG_FILTER))
        .unwrap_or_else(|_| DEFAULT_LOG_FILTER.into());
    let names = |target: &str| requested.as_deref().is_some_and(|filter| filter.contains(target));
    if !names("oci_client") {
        filter = filter.add_directive(OCI_CLIENT_DEBUG_OFF.parse().expect("a valid directive"));
    }
    if names("rmcp") {
        return filter;
    }
    filter
        .add_directive(RMCP_RESPONSE_ERRORS_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_REFUSALS_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_UNPARSED_LINES_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_SESSION_IDS_OFF.parse().expect("a valid directive"))
}

/// What rmcp's service loop logs at error when a response cannot be sent
/// because the client has gone: a client that closes its connection before
/// (or right after) its answer is ordinary, so these lines are dropped. The
/// handler has already logged how the call itself went.
const CLIENT_GONE_MESSAGES: [&str; 2] = ["fail to response message", "failed to send pending response during drain"];

/// Drops rmcp's `CLIENT_GONE_MESSAGES` events.
pub struct ClientGoneFilter;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClientGoneFilter {
    fn event_enabled(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) -> bool {
        if event.metadata().target() != "rmcp::service" {
            return true;
        }
        !CLIENT_GONE_MESSAGES.contains(&crate::json_log::event_message(event).as_str())
    }
}
