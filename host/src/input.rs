//! Input-required prompts (WIT 0.2): the forms a pack asks the user to fill
//! in, served to a client as elicitation requests (inside an
//! `InputRequiredResult`, or over the session to an earlier client, see
//! [`elicit`]); the `requestState` that
//! carries the forms and the pack's state to the retry, sealed so that a
//! client cannot change it; and the client's answers, checked against the
//! forms before the pack sees them.
//!
//! The host keeps nothing between the rounds: everything the retry needs
//! travels in the sealed state, so any replica holding the same key (the
//! config's `server.request_state_key_file`) accepts the retry. The state
//! is bound to the user it was issued to (their tenant, issuer and subject),
//! and the keys of `server.request_state_previous_key_files` still open it,
//! so that rotating the key breaks no state in flight.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions, ServerRequest,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::convert::json_kind;
use crate::identity::Principal;
use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model;
use prompt_host_kernel::validate::{MAX_FORM_FIELDS, MAX_FORMS, json_escaped_len};

/// How long a user has to fill in the forms: a `requestState` older than
/// this is refused, and the request must start again.
pub const REQUEST_STATE_TTL: Duration = Duration::from_secs(60 * 60);

/// The bounds on `elicitation/create` requests waiting for a client of a
/// revision before 2026-07-28 to answer (asked over its session, while its
/// `prompts/get` stays open): how long one waits, and how many may wait at
/// once in one session, in one tenant and in all. Each waiting request holds
/// a task and its pack's answer so far, so a client that asks and goes away
/// must not be able to pile them up. The `[elicitation]` section of the
/// config sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitationLimits {
    /// How long the host waits for the answer to one `elicitation/create`.
    pub timeout: Duration,
    /// Elicitations waiting at once in one session (one stdio connection,
    /// one HTTP session).
    pub per_session: usize,
    /// Elicitations waiting at once in one tenant's sessions together.
    pub per_tenant: usize,
    /// Elicitations waiting at once in the whole server.
    pub in_all: usize,
}

impl Default for ElicitationLimits {
    /// Two minutes for a person to fill a form in; a client asks one form
    /// of one `prompts/get` at a time, so 16 at once in a session, 256 in a
    /// tenant and 1,024 in all are more than real clients reach.
    fn default() -> Self {
        ElicitationLimits { timeout: Duration::from_secs(120), per_session: 16, per_tenant: 256, in_all: 1024 }
    }
}

/// The longest `[elicitation] timeout_ms`: one hour, the life of a
/// `requestState`.
pub const MAX_ELICITATION_TIMEOUT_MS: u64 = REQUEST_STATE_TTL.as_millis() as u64;

/// The elicitations waiting for answers, counted against [`ElicitationLimits`]:
/// the count in all is shared by every tenant's server, the tenant's by
/// every session of the tenant, and each session (each clone, see
/// [`Clone`]) has its own.
#[derive(Debug)]
pub struct PendingElicitations {
    limits: ElicitationLimits,
    in_all: Arc<Semaphore>,
    tenant: Arc<Semaphore>,
    session: Arc<Semaphore>,
}

impl PendingElicitations {
    /// The counts of a server with one tenant.
    pub fn new(limits: ElicitationLimits) -> PendingElicitations {
        PendingElicitations::in_server(limits, Arc::new(Semaphore::new(limits.in_all)))
    }

    /// The counts of one more tenant of the server whose count in all is `in_all`.
    fn in_server(limits: ElicitationLimits, in_all: Arc<Semaphore>) -> PendingElicitations {
        PendingElicitations {
            limits,
            in_all,
            tenant: Arc::new(Semaphore::new(limits.per_tenant)),
            session: Arc::new(Semaphore::new(limits.per_session)),
        }
    }

    /// The counts of another tenant of the same server: its own count per
    /// tenant, the same count in all.
    pub fn another_tenant(&self) -> PendingElicitations {
        PendingElicitations::in_server(self.limits, self.in_all.clone())
    }

    pub fn limits(&self) -> ElicitationLimits {
        self.limits
    }

    /// Room for one more elicitation, held until the permit is dropped; or
    /// which bound is reached.
    pub fn admit(&self) -> Result<PendingPermit, InputError> {
        let full = |scope: &'static str, limit: usize, key: &'static str| InputError::TooManyPending { scope, limit, key };
        let session = self
            .session
            .clone()
            .try_acquire_owned()
            .map_err(|_| full("this session", self.limits.per_session, "max_pending_per_session"))?;
        let tenant =
            self.tenant.clone().try_acquire_owned().map_err(|_| full("this tenant", self.limits.per_tenant, "max_pending_per_tenant"))?;
        let in_all = self.in_all.clone().try_acquire_owned().map_err(|_| full("the server", self.limits.in_all, "max_pending"))?;
        Ok(PendingPermit { _held: [session, tenant, in_all] })
    }
}

impl Clone for PendingElicitations {
    /// The counts of a new session of the same tenant: rmcp's HTTP transport
    /// clones the handler once per session.
    fn clone(&self) -> PendingElicitations {
        PendingElicitations {
            limits: self.limits,
            in_all: self.in_all.clone(),
            tenant: self.tenant.clone(),
            session: Arc::new(Semaphore::new(self.limits.per_session)),
        }
    }
}

/// One elicitation's place in the counts, given back when dropped.
pub struct PendingPermit {
    _held: [OwnedSemaphorePermit; 3],
}

/// The most times one `prompts/get` asks a client over its session before
/// it gives up: a pack that asks again after every answer cannot hold a
/// request open for ever.
pub const MAX_ELICITATION_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The shortest key that may seal request state (HMAC-SHA256 wants 32 bytes).
pub const MIN_KEY_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

/// Seals and opens `requestState`: HMAC-SHA256 over the forms and the pack's
/// state, bound to the user, the prompt, its arguments and the pack's
/// digest, with an expiry of [`REQUEST_STATE_TTL`] (rmcp's
/// `RequestStateCodec`, with a key ring: it seals with the current key, and
/// opens with it or a previous one). Sealed, not encrypted: a client can
/// read what a pack puts in its state.
#[derive(Clone, Debug)]
pub struct RequestStateSeal {
    codec: RequestStateCodec,
}

/// Why a request state key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read the request state key file {}: {error}", path.display())]
    Read { path: PathBuf, error: std::io::Error },
    #[error(
        "the request state key file {} holds {bytes} bytes, and a key needs at least {MIN_KEY_BYTES} \
         (write one with `openssl rand -hex 32`)",
        path.display()
    )]
    TooShort { path: PathBuf, bytes: usize },
}

impl RequestStateSeal {
    /// Seals with the key in the file at `current`, and opens with it or
    /// with the key in any of the files at `previous` (each file's bytes,
    /// without the whitespace around them, so a key written by `openssl rand
    /// -hex 32 > file` works).
    pub fn from_key_files(current: &Path, previous: &[PathBuf]) -> Result<RequestStateSeal, KeyError> {
        let read = |path: &Path| {
            let bytes = prompt_host_files::read(path, prompt_host_files::MAX_SMALL_FILE_BYTES)
                .map_err(|error| KeyError::Read { path: path.to_path_buf(), error })?;
            let key = bytes.trim_ascii().to_vec();
            if key.len() < MIN_KEY_BYTES {
                return Err(KeyError::TooShort { path: path.to_path_buf(), bytes: key.len() });
            }
            Ok(key)
        };
        let previous = previous.iter().map(|path| read(path)).collect::<Result<Vec<_>, _>>()?;
        Ok(RequestStateSeal::with_keys(read(current)?, previous))
    }

    /// A random key of this process: fine for one replica; replicas behind
    /// one endpoint need a shared key file, or a retry that reaches another
    /// replica is refused.
    pub fn random() -> RequestStateSeal {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides random bytes");
        RequestStateSeal::with_keys(key.to_vec(), Vec::new())
    }

    /// Seals with `current`, opens with it or any of `previous` (keys of at
    /// least [`MIN_KEY_BYTES`]). Each key is named in the state by a hash of
    /// it, so the name stays the same when the key moves from current to
    /// previous.
    fn with_keys(current: Vec<u8>, previous: Vec<Vec<u8>>) -> RequestStateSeal {
        let key_id = |key: &[u8]| {
            let hash = Sha256::digest([b"prompt-host request state key id ".as_slice(), key].concat());
            BASE64.encode(&hash[..9])
        };
        let active = key_id(&current);
        let mut ring: Vec<(String, Vec<u8>)> = vec![(active.clone(), current)];
        for key in previous {
            let id = key_id(&key);
            // The same key listed twice (a rotation half done) is one key.
            if !ring.iter().any(|(known, _)| *known == id) {
                ring.push((id, key));
            }
        }
        let codec = RequestStateCodec::new_with_keyring(active, ring).expect("keys of at least 32 bytes, ids unique");
        RequestStateSeal { codec }
    }

    /// `value` sealed with the current key for `bound_to` (what opening it
    /// must name again), good for `ttl`: what other things the shared key
    /// seals use (an HTTP session's id, `transport::http::session_ids`),
    /// each with associated data of its own, so that nothing sealed for one
    /// purpose opens for another.
    pub fn seal_bound(&self, value: &impl Serialize, bound_to: &[u8], ttl: Duration) -> String {
        let options = SealOptions::new().associated_data(bound_to).ttl(ttl);
        self.codec.seal_json_with(value, &options).expect("what the host seals serializes to JSON")
    }

    /// What [`Self::seal_bound`] sealed for `bound_to`, if this key ring
    /// sealed it for that and it has not expired; else whether it had
    /// expired (`Err(true)`) or is anything else (`Err(false)`).
    pub fn open_bound<T: serde::de::DeserializeOwned>(&self, sealed: &str, bound_to: &[u8]) -> Result<T, bool> {
        self.codec.open_json_with(sealed, bound_to).map_err(|error| matches!(error, rmcp::model::RequestStateError::Expired))
    }

    /// An `InputRequiredResult` asking the client for `forms`, with them and
    /// the pack's state sealed into its `requestState` for this `request`.
    pub fn ask(&self, forms: &Forms, request: &Binding) -> InputRequiredResult {
        let requests: InputRequests = forms.forms.iter().map(|form| (form.key.clone(), form.elicitation())).collect();
        let options = SealOptions::new().associated_data(&request.0).ttl(REQUEST_STATE_TTL);
        let state = self.codec.seal_json_with(forms, &options).expect("forms serialize to JSON");
        InputRequiredResult::new(Some(requests), Some(state))
    }

    /// The forms sealed in a `requestState` the client sent back for
    /// `request`, if this host sealed it for that request and it has not
    /// expired. Its length is checked first, against the longest state the
    /// host seals under `limits`. Every way this fails is the one
    /// [`InputError::BadState`] to the client (so a client learns nothing of
    /// what a forgery got wrong); the reason is logged at debug, escaped.
    pub fn open(&self, state: &str, request: &Binding, limits: &Limits) -> Result<Forms, InputError> {
        let limit = sealed_state_bound(limits);
        if state.len() > limit {
            tracing::debug!(bytes = state.len(), limit, "refused a requestState longer than any this server issues");
            return Err(InputError::BadState);
        }
        self.codec.open_json_with(state, &request.0).map_err(|error| {
            tracing::debug!(reason = ?error.to_string(), "refused a requestState");
            InputError::BadState
        })
    }
}

/// The longest `requestState` the host seals under `limits`: the pack's
/// state in base64, the forms' strings JSON-escaped (at most 6 bytes each),
/// room for the JSON around each field, all of it in base64 again, and the
/// seal's own header, tag and expiry.
pub fn sealed_state_bound(limits: &Limits) -> usize {
    let state = limits.max_input_state_bytes.div_ceil(3) * 4;
    // And the arguments answered through the host's form, carried along:
    // at most `max_form_bytes` as JSON (`answered_arguments`), one per
    // field of that one form.
    let strings = limits.max_form_bytes.saturating_mul(7);
    let structure = (MAX_FORMS * (MAX_FORM_FIELDS + 1) + MAX_FORM_FIELDS) * 160;
    let payload = state.saturating_add(strings).saturating_add(structure);
    payload.div_ceil(3).saturating_mul(4).saturating_add(256)
}

/// What a sealed state is bound to: the user (tenant, issuer, subject), the
/// pack (by digest), the prompt as the client named it, and the arguments.
/// A state issued for one of these cannot be replayed against another.
pub struct Binding(Vec<u8>);

impl Binding {
    pub fn new(principal: &Principal, plugin_digest: &str, prompt: &str, arguments: &[model::Argument]) -> Binding {
        let arguments: Vec<[&str; 2]> = arguments.iter().map(|a| [a.name.as_str(), a.value.as_str()]).collect();
        let user = [principal.tenant.as_str(), principal.issuer.as_str(), principal.subject.as_str()];
        let bound = json!(["prompt-host input-required", user, plugin_digest, prompt, arguments]);
        Binding(Sha256::digest(bound.to_string().as_bytes()).to_vec())
    }
}

/// The forms a pack asked for, and its state: what the host seals into
/// `requestState`, in a form of its own (the WIT types do not serialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forms {
    forms: Vec<Form>,
    /// The pack's state, in base64.
    state: String,
    /// Whether this is the form the host built for the prompt's missing
    /// arguments (0.3.1's `asking`), not forms the pack asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    for_arguments: bool,
    /// Arguments the user gave through that form in an earlier round of
    /// this request, passed with the client's in every later round (a
    /// client of 2026-07-28 sends its own arguments again each round, not
    /// these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    answered: Vec<[String; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Form {
    key: String,
    message: String,
    fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Field {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    kind: Kind,
    required: bool,
}

/// A field's kind and default, as the elicitation schema says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Kind {
    String { default: Option<String> },
    Number { default: Option<f64> },
    Integer { default: Option<i64> },
    Boolean { default: Option<bool> },
    Enum { choices: Vec<String>, default: Option<String> },
}

impl From<&model::InputRequired> for Forms {
    fn from(input: &model::InputRequired) -> Forms {
        let forms = input
            .forms
            .iter()
            .map(|form| Form {
                key: form.key.clone(),
                message: form.message.clone(),
                fields: form.fields.iter().map(Field::from).collect(),
            })
            .collect();
        Forms { forms, state: BASE64.encode(&input.state), for_arguments: false, answered: Vec::new() }
    }
}

impl From<&model::FormField> for Field {
    fn from(field: &model::FormField) -> Field {
        let kind = match &field.kind {
            model::FieldKind::String(default) => Kind::String { default: default.clone() },
            model::FieldKind::Number(default) => Kind::Number { default: *default },
            model::FieldKind::Integer(default) => Kind::Integer { default: *default },
            model::FieldKind::Boolean(default) => Kind::Boolean { default: *default },
            model::FieldKind::Enum(choices) => Kind::Enum { choices: choices.choices.clone(), default: choices.default.clone() },
        };
        Field {
            name: field.name.clone(),
            title: field.title.clone(),
            description: field.description.clone(),
            kind,
            required: field.required,
        }
    }
}

/// One field of a form, as a person is asked to fill it in.
pub struct FieldQuestion<'a> {
    /// The form's message, the pack's words (unescaped).
    pub message: &'a str,
    /// Whether this is the form's first field (its message not yet shown).
    pub first_of_form: bool,
    pub name: &'a str,
    /// Its title, else its description, if the pack gave one (unescaped).
    pub label: Option<&'a str>,
    pub required: bool,
}

impl Forms {
    /// The form the host built for a prompt's missing arguments
    /// (`arguments::PromptArguments::form_for_missing`).
    pub fn for_missing_arguments(form: &model::InputRequired) -> Forms {
        Forms { for_arguments: true, ..Forms::from(form) }
    }

    /// Whether this is the form the host built for missing arguments.
    pub fn is_for_arguments(&self) -> bool {
        self.for_arguments
    }

    /// These forms, carrying `answered`: arguments the user gave through
    /// the host's form in an earlier round.
    pub fn carrying(mut self, answered: &[model::Argument]) -> Forms {
        self.answered = answered.iter().map(|argument| [argument.name.clone(), argument.value.clone()]).collect();
        self
    }

    /// The arguments these forms carry from an earlier round.
    pub fn carried(&self) -> Vec<model::Argument> {
        self.answered.iter().map(|[name, value]| model::Argument { name: name.clone(), value: value.clone() }).collect()
    }

    /// The forms' keys, messages and fields (each with its title, else its
    /// description), for an error that says what was asked; the pack's
    /// words quoted and escaped: `form 'user_context': "What context?"
    /// (fields: context "Context")`.
    pub fn describe(&self) -> String {
        let forms: Vec<String> = self
            .forms
            .iter()
            .map(|form| {
                let fields: Vec<String> = form
                    .fields
                    .iter()
                    .map(|field| match field.label() {
                        Some(label) => format!("{} {label:?}", field.name.escape_debug()),
                        None => field.name.escape_debug().to_string(),
                    })
                    .collect();
                format!("form '{}': {:?} (fields: {})", form.key.escape_debug(), form.message, fields.join(", "))
            })
            .collect();
        forms.join("; ")
    }

    /// The names of the forms' fields, in order.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.forms.iter().flat_map(|form| form.fields.iter().map(|field| field.name.as_str()))
    }

    /// Answers to these forms as a client would send them, each field's
    /// value from `answer` (as typed: converted to the field's kind, a value
    /// that is not of it left for the checks to refuse), or left out when
    /// it gives none. `None` when a required field gets none.
    pub fn answer_each(&self, mut answer: impl FnMut(&FieldQuestion<'_>) -> Option<String>) -> Option<InputResponses> {
        let mut responses = InputResponses::new();
        for form in &self.forms {
            let mut content = Map::new();
            for (index, field) in form.fields.iter().enumerate() {
                let question = FieldQuestion {
                    message: &form.message,
                    first_of_form: index == 0,
                    name: &field.name,
                    label: field.label(),
                    required: field.required,
                };
                match answer(&question) {
                    Some(typed) => {
                        content.insert(field.name.clone(), field.typed_value(typed));
                    }
                    // A required field with a default takes it, as a client's form would show it.
                    None if field.required => {
                        content.insert(field.name.clone(), field.default_value()?);
                    }
                    None => {}
                }
            }
            responses.insert(form.key.clone(), json!({ "action": "accept", "content": content }));
        }
        Some(responses)
    }

    /// The client's answers to these forms, checked against them, as the
    /// pack receives them; or [`Answers::Missing`] when a form has no
    /// answer (the host then asks again). Answers to forms not asked for
    /// are ignored, and so are fields a form does not declare.
    pub fn answers(&self, responses: Option<&InputResponses>) -> Result<Answers, InputError> {
        let mut answers = Vec::new();
        for form in &self.forms {
            let Some(response) = responses.and_then(|responses| responses.get(&form.key)) else {
                return Ok(Answers::Missing);
            };
            answers.push(model::FormAnswer { key: form.key.clone(), response: form.response(response)? });
        }
        // Sealed by this host from the pack's bytes: it decodes.
        let state = BASE64.decode(&self.state).map_err(|_| InputError::BadState)?;
        Ok(Answers::Complete(model::Input { answers, state }))
    }
}

/// The session of a client of a revision before 2026-07-28, which
/// `elicitation/create` requests are sent on: the transport's edge hands it
/// to the use cases, which never see the protocol's session itself.
#[derive(Clone)]
pub struct ClientSession(Peer<RoleServer>);

impl ClientSession {
    pub fn new(peer: Peer<RoleServer>) -> ClientSession {
        ClientSession(peer)
    }
}

/// Asks a client of a revision before 2026-07-28 to fill in `forms`, one
/// `elicitation/create` request on its session for each, waiting up to
/// `timeout` for each answer, and returns its answers as a 2026-07-28 client
/// would send them. When `abandoned` completes first (the client went away,
/// or cancelled its request), the elicitation waiting is cancelled (the
/// client is told, if it is still there) and nothing more is waited for.
pub async fn elicit(
    ClientSession(peer): &ClientSession,
    forms: &Forms,
    timeout: Duration,
    abandoned: impl Future<Output = ()>,
) -> Result<InputResponses, InputError> {
    tokio::pin!(abandoned);
    let mut responses = InputResponses::new();
    for form in &forms.forms {
        let failed = |reason: String| InputError::Elicitation { form: form.key.clone(), reason };
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(form.elicitation_params()));
        let options = PeerRequestOptions::with_timeout(timeout);
        let handle = peer.send_request_with_option(request, options).await.map_err(|error| failed(error.to_string()))?;
        let id = handle.id.clone();
        let result = tokio::select! {
            result = handle.await_response() => result.map_err(|error| failed(error.to_string()))?,
            () = &mut abandoned => {
                // rmcp forgets the request it waits for when it sends this.
                // Not awaited here: once the session is over, rmcp answers
                // the send only when its task ends.
                let reason = "the request that asked for this input ended".to_string();
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason))).await;
                });
                return Err(InputError::Abandoned { form: form.key.clone() });
            }
        };
        let ClientResult::ElicitResult(result) = result else {
            return Err(failed("the client answered with something other than an elicitation result".into()));
        };
        responses.insert(form.key.clone(), serde_json::to_value(result).expect("an elicitation result serializes"));
    }
    Ok(responses)
}

/// The arguments the user gave through the host's form for missing
/// arguments, as argument values (`arguments::argument_value`); none when
/// the user declined or cancelled it. They count with the client's against
/// `max_argument_kib`, as arguments do.
pub fn answered_arguments(input: &model::Input) -> Vec<model::Argument> {
    input
        .answers
        .iter()
        .flat_map(|answer| match &answer.response {
            model::FormResponse::Accept(fields) => fields.as_slice(),
            _ => &[],
        })
        .map(|field| model::Argument { name: field.name.clone(), value: prompt_host_kernel::arguments::argument_value(&field.value) })
        .collect()
}

/// Checks that the arguments answered through the host's form can ride
/// along, sealed, into the next round of a 2026-07-28 request (when the
/// pack asks for more): their names and values, as JSON writes them, at
/// most `max_form_bytes` in all.
pub fn check_carried(answered: &[model::Argument], limits: &Limits) -> Result<(), InputError> {
    let bytes: usize = answered.iter().map(|argument| json_escaped_len(&argument.name) + json_escaped_len(&argument.value)).sum();
    match bytes > limits.max_form_bytes {
        true => Err(InputError::AnswersTooLarge { bytes, limit: limits.max_form_bytes }),
        false => Ok(()),
    }
}

/// The client's answers to the forms asked for.
#[derive(Debug)]
pub enum Answers {
    /// Every form is answered, and every answer checked.
    Complete(model::Input),
    /// A form has no answer.
    Missing,
}

/// The bytes of the answers' names and string values, counted with the
/// arguments against `limits.max_argument_bytes` (a number or a boolean
/// counts 8).
pub fn input_bytes(input: &model::Input) -> usize {
    let value_bytes = |value: &model::FieldValue| match value {
        model::FieldValue::String(text) => text.len(),
        _ => 8,
    };
    input
        .answers
        .iter()
        .map(|answer| {
            let fields = match &answer.response {
                model::FormResponse::Accept(fields) => fields.iter().map(|field| field.name.len() + value_bytes(&field.value)).sum(),
                _ => 0,
            };
            answer.key.len() + fields
        })
        .sum()
}

impl Form {
    /// The `elicitation/create` request for this form, as an input request.
    fn elicitation(&self) -> InputRequest {
        let params = serde_json::to_value(self.elicitation_params()).expect("elicitation parameters serialize");
        let request = json!({ "method": "elicitation/create", "params": params });
        serde_json::from_value(request).expect("the host builds elicitation requests rmcp can read")
    }

    /// The parameters of the `elicitation/create` request for this form
    /// (form mode, with the flat schema MCP's elicitation allows).
    fn elicitation_params(&self) -> ElicitRequestParams {
        let mut properties = Map::new();
        for field in &self.fields {
            properties.insert(field.name.clone(), field.schema());
        }
        let required: Vec<&str> = self.fields.iter().filter(|field| field.required).map(|field| field.name.as_str()).collect();
        let mut schema = json!({ "type": "object", "properties": properties });
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        let params = json!({ "mode": "form", "message": self.message, "requestedSchema": schema });
        serde_json::from_value(params).expect("the host builds elicitation parameters rmcp can read")
    }

    /// What the user did with this form, from the client's answer.
    fn response(&self, response: &Value) -> Result<model::FormResponse, InputError> {
        let problem = |problem: String| InputError::Response { form: self.key.clone(), problem };
        let result: ElicitResult =
            serde_json::from_value(response.clone()).map_err(|error| problem(format!("is not an elicitation result ({error})")))?;
        match result.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => return Ok(model::FormResponse::Decline),
            // Cancel, and any action a later revision adds: not an answer.
            _ => return Ok(model::FormResponse::Cancel),
        }
        let empty = Map::new();
        let content = match &result.content {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(content)) => content,
            Some(other) => return Err(problem(format!("has content that is {}, not an object", json_kind(other)))),
        };
        let mut fields = Vec::new();
        for field in &self.fields {
            let value = match content.get(&field.name) {
                None | Some(Value::Null) if field.required => {
                    return Err(field.problem(&self.key, "is required, and the answer leaves it out".into()));
                }
                None | Some(Value::Null) => continue,
                Some(value) => field.value(value).map_err(|problem| field.problem(&self.key, problem))?,
            };
            fields.push(model::FieldAnswer { name: field.name.clone(), value });
        }
        Ok(model::FormResponse::Accept(fields))
    }
}

impl Field {
    /// What names the field for a person: its title, else its description.
    fn label(&self) -> Option<&str> {
        self.title.as_deref().or(self.description.as_deref())
    }

    /// The field's default, if it has one.
    fn default_value(&self) -> Option<Value> {
        match &self.kind {
            Kind::String { default } | Kind::Enum { default, .. } => default.clone().map(Value::String),
            Kind::Number { default } => default.and_then(serde_json::Number::from_f64).map(Value::Number),
            Kind::Integer { default } => default.map(Value::from),
            Kind::Boolean { default } => default.map(Value::Bool),
        }
    }

    /// A value typed for this field (`get --answer`, a terminal), as JSON of
    /// the field's kind when it reads as one, else as the string typed.
    fn typed_value(&self, typed: String) -> Value {
        let parsed = match &self.kind {
            Kind::String { .. } | Kind::Enum { .. } => None,
            Kind::Number { .. } => {
                typed.trim().parse::<f64>().ok().and_then(|number| serde_json::Number::from_f64(number).map(Value::Number))
            }
            Kind::Integer { .. } => typed.trim().parse::<i64>().ok().map(Value::from),
            Kind::Boolean { .. } => typed.trim().parse::<bool>().ok().map(Value::Bool),
        };
        parsed.unwrap_or(Value::String(typed))
    }

    /// The field's schema in an elicitation request.
    fn schema(&self) -> Value {
        let mut schema = match &self.kind {
            Kind::String { default } => json!({ "type": "string", "default": default }),
            Kind::Number { default } => json!({ "type": "number", "default": default }),
            Kind::Integer { default } => json!({ "type": "integer", "default": default }),
            Kind::Boolean { default } => json!({ "type": "boolean", "default": default }),
            Kind::Enum { choices, default } => json!({ "type": "string", "enum": choices, "default": default }),
        };
        let object = schema.as_object_mut().expect("a schema is an object");
        object.retain(|_, value| !value.is_null());
        if let Some(title) = &self.title {
            object.insert("title".into(), json!(title));
        }
        if let Some(description) = &self.description {
            object.insert("description".into(), json!(description));
        }
        schema
    }

    /// A client's value for this field, if it is of the field's kind.
    fn value(&self, value: &Value) -> Result<model::FieldValue, String> {
        let wrong = |expected: &str| format!("must be {expected}, not {}", json_kind(value));
        match (&self.kind, value) {
            (Kind::String { .. }, Value::String(text)) => Ok(model::FieldValue::String(text.clone())),
            (Kind::String { .. }, _) => Err(wrong("a string")),
            (Kind::Number { .. }, Value::Number(number)) => {
                number.as_f64().filter(|n| n.is_finite()).map(model::FieldValue::Number).ok_or_else(|| wrong("a number"))
            }
            (Kind::Number { .. }, _) => Err(wrong("a number")),
            (Kind::Integer { .. }, Value::Number(number)) => number
                .as_i64()
                .map(model::FieldValue::Integer)
                .ok_or_else(|| format!("must be a whole number that fits 64 bits, not {number}")),
            (Kind::Integer { .. }, _) => Err(wrong("a whole number")),
            (Kind::Boolean { .. }, Value::Bool(flag)) => Ok(model::FieldValue::Boolean(*flag)),
            (Kind::Boolean { .. }, _) => Err(wrong("a boolean")),
            (Kind::Enum { choices, .. }, Value::String(choice)) if choices.contains(choice) => {
                Ok(model::FieldValue::String(choice.clone()))
            }
            (Kind::Enum { choices, .. }, Value::String(choice)) => {
                let quoted: Vec<String> = choices.iter().map(|choice| format!("{choice:?}")).collect();
                Err(format!("must be one of {}, not {choice:?}", quoted.join(", ")))
            }
            (Kind::Enum { .. }, _) => Err(wrong("one of its choices (a string)")),
        }
    }

    fn problem(&self, form: &str, problem: String) -> InputError {
        InputError::Field { form: form.to_string(), field: self.name.clone(), problem }
    }
}

/// Why the input a prompt asked for could not be asked for or taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error(
        "the requestState was not issued by this server to this user for this prompt and these arguments, or has \
         expired: send the request again without requestState and inputResponses"
    )]
    BadState,
    #[error("inputResponses[{form:?}] {problem}")]
    Response { form: String, problem: String },
    #[error("inputResponses[{form:?}]: field {field:?} {problem}")]
    Field { form: String, field: String, problem: String },
    #[error("it needs input ({needed}), and {why}{skip}")]
    CannotAsk {
        needed: String,
        why: &'static str,
        /// How to do without the form, if arguments of the prompt name its
        /// fields: "; or give the argument ... instead, which skips the form".
        skip: String,
    },
    #[error("the client did not answer the elicitation of form {form:?}: {reason}")]
    Elicitation { form: String, reason: String },
    #[error("the client went away or cancelled the request, or the server stopped, while the elicitation of form {form:?} waited")]
    Abandoned { form: String },
    #[error(
        "it needs input, and {scope} already has {limit} elicitations waiting for answers, the most the server \
         keeps ([elicitation] {key}): answer or cancel one first"
    )]
    TooManyPending { scope: &'static str, limit: usize, key: &'static str },
    #[error("it asked for input {MAX_ELICITATION_ROUNDS} times in one request, the most the host asks")]
    TooManyRounds,
    #[error(
        "it asks for more input, and the answers to the form for its missing arguments are {bytes} bytes, more than \
         the limit of {limit} (max_form_kib) that rides along to the next round: pass them as arguments instead"
    )]
    AnswersTooLarge { bytes: usize, limit: usize },
    /// Over HTTP, an elicitation holds its request's connection as a
    /// long-lived stream does, and takes a stream's place: none was left.
    #[error("it needs input, and waiting for the answer would hold a stream's place, refused: {refusal}")]
    NoStreamPlace { refusal: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, kind: model::FieldKind, required: bool) -> model::FormField {
        model::FormField { name: name.into(), title: None, description: None, kind, required }
    }

    fn asked(fields: Vec<model::FormField>) -> model::InputRequired {
        model::InputRequired {
            forms: vec![model::Form { key: "user_context".into(), message: "What context?".into(), fields }],
            state: b"step 1".to_vec(),
        }
    }

    fn seal() -> RequestStateSeal {
        RequestStateSeal::with_keys(vec![7; 32], Vec::new())
    }

    fn alice() -> Principal {
        Principal { tenant: "acme".into(), issuer: "https://issuer".into(), subject: "alice".into() }
    }

    fn binding() -> Binding {
        binding_for(&alice())
    }

    fn binding_for(principal: &Principal) -> Binding {
        Binding::new(principal, "digest", "prompt", &[model::Argument { name: "a".into(), value: "1".into() }])
    }

    #[test]
    fn a_form_becomes_an_elicitation_request_with_a_flat_schema() {
        let choices = model::EnumField { choices: vec!["low".into(), "high".into()], default: Some("low".into()) };
        let mut context = field("context", model::FieldKind::String(None), true);
        context.title = Some("Context".into());
        let forms = Forms::from(&asked(vec![
            context,
            field("level", model::FieldKind::Enum(choices), false),
            field("count", model::FieldKind::Integer(Some(3)), false),
        ]));
        let result = seal().ask(&forms, &binding());
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["resultType"], "input_required");
        assert_eq!(
            json["inputRequests"]["user_context"],
            json!({
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "What context?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "context": { "type": "string", "title": "Context" },
                            "level": { "type": "string", "enum": ["low", "high"], "default": "low" },
                            "count": { "type": "integer", "default": 3 },
                        },
                        "required": ["context"],
                    },
                },
            })
        );
    }

    #[test]
    fn a_sealed_state_opens_only_unchanged_and_for_its_own_request() {
        let forms = Forms::from(&asked(vec![field("context", model::FieldKind::String(None), true)]));
        let state = seal().ask(&forms, &binding()).request_state.unwrap();
        let limits = Limits::default();
        assert_eq!(seal().open(&state, &binding(), &limits), Ok(forms));
        // Every way of failing is the one error, whatever the codec says.
        let tampered = format!("{state}-TAMPERED");
        assert_eq!(seal().open(&tampered, &binding(), &limits), Err(InputError::BadState));
        let alice = alice();
        let other = Binding::new(&alice, "digest", "prompt", &[model::Argument { name: "a".into(), value: "2".into() }]);
        assert_eq!(seal().open(&state, &other, &limits), Err(InputError::BadState));
        for user in [
            Principal { subject: "mallory".into(), ..alice.clone() },
            Principal { tenant: "globex".into(), ..alice.clone() },
            Principal { issuer: "https://elsewhere".into(), ..alice.clone() },
            Principal::stdio(),
        ] {
            assert_eq!(seal().open(&state, &binding_for(&user), &limits), Err(InputError::BadState), "{user:?}");
        }
        let other_key = RequestStateSeal::random();
        assert_eq!(other_key.open(&state, &binding(), &limits), Err(InputError::BadState));
        let long = "x".repeat(sealed_state_bound(&limits) + 1);
        assert_eq!(seal().open(&long, &binding(), &limits), Err(InputError::BadState));
        assert_eq!(seal().open("", &binding(), &limits), Err(InputError::BadState));
    }

    #[test]
    fn a_state_sealed_before_a_key_rotation_opens_after_it_until_the_key_is_retired() {
        let forms = Forms::from(&asked(vec![field("context", model::FieldKind::String(None), true)]));
        let limits = Limits::default();
        let (old, new) = (vec![1; 32], vec![2; 40]);
        let before = RequestStateSeal::with_keys(old.clone(), Vec::new());
        let state = before.ask(&forms, &binding()).request_state.unwrap();
        let rotated = RequestStateSeal::with_keys(new.clone(), vec![old.clone(), new.clone()]);
        assert_eq!(rotated.open(&state, &binding(), &limits), Ok(forms.clone()));
        // What the rotated ring seals, a replica not yet rotated that already
        // lists the new key as a previous one opens too.
        let sealed_after = rotated.ask(&forms, &binding()).request_state.unwrap();
        let half_rotated = RequestStateSeal::with_keys(old, vec![new.clone()]);
        assert_eq!(half_rotated.open(&sealed_after, &binding(), &limits), Ok(forms.clone()));
        let retired = RequestStateSeal::with_keys(new, Vec::new());
        assert_eq!(retired.open(&state, &binding(), &limits), Err(InputError::BadState));
        assert_eq!(retired.open(&sealed_after, &binding(), &limits), Ok(forms));
    }

    #[test]
    fn the_largest_forms_and_state_seal_within_the_bound() {
        let limits = Limits { max_form_bytes: 4096, max_input_state_bytes: 1024, ..Limits::default() };
        let per_field = limits.max_form_bytes / (MAX_FORMS * MAX_FORM_FIELDS);
        let forms: Vec<model::Form> = (0..MAX_FORMS)
            .map(|form| model::Form {
                key: format!("f{form}"),
                message: String::new(),
                fields: (0..MAX_FORM_FIELDS)
                    .map(|index| {
                        let mut field = field(&format!("n{index}"), model::FieldKind::Number(Some(-1.0e300)), true);
                        // U+0001 is six bytes on the wire, as validate counts it.
                        field.description = Some("\u{1}".repeat(per_field.saturating_sub(4) / 6));
                        field.title = Some(String::new());
                        field
                    })
                    .collect(),
            })
            .collect();
        let input = model::InputRequired { forms, state: vec![0xff; limits.max_input_state_bytes] };
        prompt_host_kernel::validate::input_required(&input, &limits).unwrap();
        let state = seal().ask(&Forms::from(&input), &binding()).request_state.unwrap();
        assert!(state.len() <= sealed_state_bound(&limits), "{} > {}", state.len(), sealed_state_bound(&limits));
        // With the most arguments answered through the host's form carried
        // along: one per field of that form, their bytes within the
        // arguments' limit, each byte six on the wire.
        let per_argument = limits.max_form_bytes / MAX_FORM_FIELDS / 6;
        let answered: Vec<model::Argument> = (0..MAX_FORM_FIELDS)
            .map(|index| {
                let name = format!("a{index}");
                model::Argument { value: "\u{1}".repeat(per_argument - name.len()), name }
            })
            .collect();
        let carried = Forms::from(&input).carrying(&answered);
        let state = seal().ask(&carried, &binding()).request_state.unwrap();
        assert!(state.len() <= sealed_state_bound(&limits), "{} > {}", state.len(), sealed_state_bound(&limits));
        let pairs = |arguments: Vec<model::Argument>| arguments.into_iter().map(|a| (a.name, a.value)).collect::<Vec<_>>();
        assert_eq!(pairs(seal().open(&state, &binding(), &limits).unwrap().carried()), pairs(answered));
    }

    #[test]
    fn answers_carried_to_a_later_round_are_bounded_as_json() {
        let limits = Limits { max_form_bytes: 10, ..Limits::default() };
        let argument = |value: &str| model::Argument { name: "a".into(), value: value.into() };
        assert_eq!(check_carried(&[argument("123456789")], &limits), Ok(()));
        // A newline is two bytes in JSON: 11 in all.
        assert_eq!(check_carried(&[argument("12345678\n")], &limits), Err(InputError::AnswersTooLarge { bytes: 11, limit: 10 }));
    }

    #[test]
    fn answers_are_checked_against_the_fields() {
        let choices = model::EnumField { choices: vec!["low".into(), "high".into()], default: None };
        let forms = Forms::from(&asked(vec![
            field("context", model::FieldKind::String(None), true),
            field("level", model::FieldKind::Enum(choices), false),
            field("count", model::FieldKind::Integer(None), false),
        ]));
        let answer = |content: Value| {
            let responses: InputResponses = [("user_context".to_string(), json!({ "action": "accept", "content": content }))].into();
            forms.answers(Some(&responses))
        };
        let Ok(Answers::Complete(input)) = answer(json!({ "context": "ctx", "count": 2, "extra": true })) else {
            panic!("a valid answer was refused")
        };
        assert_eq!(input.state, b"step 1");
        let model::FormResponse::Accept(fields) = &input.answers[0].response else { panic!("not accepted") };
        let names: Vec<&str> = fields.iter().map(|field| field.name.as_str()).collect();
        assert_eq!(names, ["context", "count"]);
        assert_eq!(
            answer(json!({ "count": 2 })).unwrap_err().to_string(),
            "inputResponses[\"user_context\"]: field \"context\" is required, and the answer leaves it out"
        );
        assert_eq!(
            answer(json!({ "context": 5 })).unwrap_err().to_string(),
            "inputResponses[\"user_context\"]: field \"context\" must be a string, not a number"
        );
        assert_eq!(
            answer(json!({ "context": "c", "level": "medium" })).unwrap_err().to_string(),
            "inputResponses[\"user_context\"]: field \"level\" must be one of \"low\", \"high\", not \"medium\""
        );
        assert_eq!(
            answer(json!({ "context": "c", "count": 2.5 })).unwrap_err().to_string(),
            "inputResponses[\"user_context\"]: field \"count\" must be a whole number that fits 64 bits, not 2.5"
        );
        let declined: InputResponses = [("user_context".to_string(), json!({ "action": "decline" }))].into();
        let Ok(Answers::Complete(input)) = forms.answers(Some(&declined)) else { panic!("a decline was refused") };
        assert!(matches!(input.answers[0].response, model::FormResponse::Decline));
        let malformed: InputResponses = [("user_context".to_string(), json!(12345))].into();
        assert!(matches!(forms.answers(Some(&malformed)), Err(InputError::Response { .. })));
        let elsewhere: InputResponses = [("other".to_string(), json!({ "action": "accept" }))].into();
        assert!(matches!(forms.answers(Some(&elsewhere)), Ok(Answers::Missing)));
        assert!(matches!(forms.answers(None), Ok(Answers::Missing)));
    }
}
