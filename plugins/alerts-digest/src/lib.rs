//! An example pack that calls an HTTP origin the operator grants (WIT 0.3):
//! `triage-alerts` fetches the alerts firing now from the local Prometheus
//! (`GET http://127.0.0.1:9090/api/v1/alerts`, Prometheus' own address and
//! API) through the standard `wasi:http/outgoing-handler`, and embeds its
//! answer as a `resource` for the model to triage.
//!
//! The pack asks for the origin in `describe-pack`; the operator grants it:
//!
//! ```toml
//! [plugins.alerts_digest.grants]
//! http = ["http://127.0.0.1:9090/api/v1/"]
//! ```
//!
//! Not granted, the call fails with -32603 naming that line; the host sends
//! the request itself, within the call's HTTP budgets and deadline.

use prompt_pack::v0_3::*;
use wasip2::http::{outgoing_handler, types as http};

/// Where the alerts are: Prometheus' HTTP API on its default address.
const ORIGIN: &str = "http://127.0.0.1:9090/api/v1/";
const AUTHORITY: &str = "127.0.0.1:9090";
const ALERTS_PATH: &str = "/api/v1/alerts";
/// The most of Prometheus' answer embedded.
const MAX_ANSWER_BYTES: usize = 256 << 10;

struct AlertsDigest;

impl Guest for AlertsDigest {
    fn describe_pack() -> PackInfo {
        PackInfo::from(prompt_pack::cargo_pack_info!()).origin(ORIGIN)
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("triage-alerts", "Triage the alerts firing now on the local Prometheus")
                .title("Triage alerts")
                .argument(optional("severity", "The alerts to look at first").choice(["critical", "warning", "any"]).default("any")),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        if name != "triage-alerts" {
            return Err(PromptError::NotFound);
        }
        // The host filled in the default and checked the choice.
        let severity = Arguments::from(arguments).require("severity")?.to_string();
        let alerts = get(ALERTS_PATH).map_err(|why| PromptError::Internal(format!("GET {ALERTS_PATH} from {ORIGIN}: {why}")))?;
        let first = match severity.as_str() {
            "any" => "Start with the most severe.".to_string(),
            severity => format!("Start with the {severity} ones."),
        };
        Ok(reply([
            user_text(format!("Triage the alerts firing now: what is wrong, how urgent, and what to check first. {first}")),
            message(Role::User, text_resource("prometheus://alerts", "application/json", alerts)),
        ])
        .into())
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        // The host completes `severity` from its choices.
        Ok(no_completions())
    }
}

/// The body of `GET path` from the origin, if it answers 200 with at most
/// [`MAX_ANSWER_BYTES`] of UTF-8.
fn get(path: &str) -> Result<String, String> {
    let request = http::OutgoingRequest::new(http::Fields::new());
    request.set_scheme(Some(&http::Scheme::Http)).map_err(|()| "the scheme was refused")?;
    request.set_authority(Some(AUTHORITY)).map_err(|()| "the authority was refused")?;
    request.set_path_with_query(Some(path)).map_err(|()| "the path was refused")?;
    let response = outgoing_handler::handle(request, None).map_err(|error| format!("{error:?}"))?;
    response.subscribe().block();
    let response = match response.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(error))) => return Err(format!("{error:?}")),
        _ => return Err("no response".to_string()),
    };
    if response.status() != 200 {
        return Err(format!("it answered {}", response.status()));
    }
    let body = response.consume().map_err(|()| "its body could not be read")?;
    let stream = body.stream().map_err(|()| "its body could not be read")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) if bytes.len() + chunk.len() <= MAX_ANSWER_BYTES => bytes.extend_from_slice(&chunk),
            Ok(_) => return Err(format!("its answer is more than {MAX_ANSWER_BYTES} bytes")),
            Err(wasip2::io::streams::StreamError::Closed) => break,
            Err(wasip2::io::streams::StreamError::LastOperationFailed(error)) => {
                return Err(format!("{:?}", http::http_error_code(&error)));
            }
        }
    }
    String::from_utf8(bytes).map_err(|_| "its answer is not UTF-8".to_string())
}

prompt_pack::v0_3::export_pack!(AlertsDigest);
