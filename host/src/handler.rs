//! The MCP handler: one rmcp [`ServerHandler`] whose methods each take a
//! registry snapshot and delegate, to the catalog for listing and to the
//! owning plugin for prompts and completions.

use std::sync::Arc;

#[allow(deprecated, reason = "logging/setLevel is deprecated from 2026-07-28; earlier clients still send it")]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CacheScope, CallToolRequestMethod, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ConstString,
    CustomRequest, CustomResult, ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetSkillRequestMethod,
    GetSkillRequestParams, GetSkillResult, Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListSkillsRequestMethod, ListSkillsResult,
    ListToolsRequestMethod, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceDirectoryRequestMethod,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
#[allow(deprecated, reason = "resources/subscribe and unsubscribe are legacy-only; earlier clients may still send them")]
use rmcp::model::{SubscribeRequestMethod, SubscribeRequestParams, UnsubscribeRequestMethod, UnsubscribeRequestParams};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{Peer, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::convert;
use crate::error::{self, RequestError};
use crate::identity::{self, Principal};
use crate::input::{self, Answers, Binding, ElicitationLimits, Forms, InputError, PendingElicitations, RequestStateSeal};
use crate::metrics;
use crate::prompt_tools::{self, PromptRequest};
use crate::registry::{Changes, Registry, Snapshot};
use crate::served_content::NotServed;
use crate::traces;
use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model::{self, PromptAnswer};
use prompt_host_kernel::plugin::{Plugin, PluginError};

/// Serves the registry's prompts over MCP.
#[derive(Clone)]
pub struct PromptServer {
    registry: Arc<Registry>,
    page_size: usize,
    list_caching: ListCaching,
    session: SessionEnd,
    seal: RequestStateSeal,
    elicitations: PendingElicitations,
    access_log: Option<Arc<crate::access_log::AccessLog>>,
    /// Whether the prompts are also served as two tools (`prompt_tools`).
    prompts_as_tools: bool,
    /// The two tools, built once per catalog version (their schemas name
    /// the prompts), shared by the server's sessions.
    tools: Arc<std::sync::Mutex<Option<BuiltTools>>>,
}

/// The tools of prompts as tools, and the catalog version they were built for.
type BuiltTools = (String, Arc<Vec<rmcp::model::Tool>>);

/// Cancelled when the client of a request can no longer receive its answer:
/// the HTTP transport puts one in each request's extensions and cancels it
/// when the response (its event stream) is dropped, the client gone. An
/// elicitation the request waits for is then cancelled.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// What the HTTP transport puts in each request's extensions besides
/// [`ClientGone`]. An elicitation keeps its request's connection busy while
/// it waits, as a long-lived stream does: it takes a stream's place, counted
/// with the user's and the tenant's streams (`take`: the place, held until
/// dropped; or the refusal's text), so pending elicitations cannot hold the
/// connections kept for other requests and `/healthz`. It ends when the
/// server stops (`stopping`), instead of holding the stop for the grace.
#[derive(Clone)]
pub struct StreamPlace {
    pub take: Arc<dyn Fn() -> Result<Box<dyn std::any::Any + Send + Sync>, String> + Send + Sync>,
    pub stopping: CancellationToken,
}

/// How the host can ask the client of a request for the input a prompt
/// needs.
#[derive(Clone)]
pub enum Asking {
    /// With an `InputRequiredResult` (protocol 2026-07-28 and later, to a
    /// client that declared the elicitation capability).
    InputRequired,
    /// With `elicitation/create` requests on the session, then the call
    /// continues (an earlier revision's client that declared elicitation),
    /// until any of the tokens is cancelled: the request is cancelled, its
    /// client gone, its session ended, or the server stopping; over HTTP,
    /// each elicitation takes a stream's place.
    Elicitation(Peer<RoleServer>, Vec<CancellationToken>, Option<StreamPlace>),
    /// It cannot: the reason, which completes "it needs input (...), and".
    Cannot(&'static str),
    /// Without a client (the `get` command): the answers `Answerer` gives.
    Locally(Answerer),
}

/// Answers forms without a client: `None` when a required field has no
/// answer (the `get` command was given none and cannot ask).
pub type Answerer = Arc<dyn Fn(&Forms) -> Option<rmcp::model::InputResponses> + Send + Sync>;

/// Why the `get` command could not answer a form.
const GET_CANNOT_ASK: &str =
    "the get command has no answer for it: give --answer FIELD=VALUE for each required field, or run it on a terminal to be asked";

/// Whether the client of `context` can fill in a form: it declared
/// elicitation as `form`, or as an empty `elicitation` (which means form);
/// a client that declared only `url` cannot.
fn fills_in_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Whether a `prompts/get` in `context` may be answered with
/// `elicitation/create` requests to its client (see `Asking::of`): rmcp
/// ties those to the request it is serving, so such a request is left to it.
pub fn may_elicit(context: &RequestContext<RoleServer>) -> bool {
    !is_2026_07_28_or_later(context) && fills_in_forms(context)
}

impl Asking {
    /// How the client of `context`, in the session that ends with
    /// `session_ended`, can be asked.
    fn of(context: &RequestContext<RoleServer>, session_ended: &CancellationToken) -> Asking {
        match (is_2026_07_28_or_later(context), fills_in_forms(context)) {
            (true, true) => Asking::InputRequired,
            (true, false) => Asking::Cannot("the client did not declare the elicitation capability"),
            (false, true) => {
                let http = context.extensions.get::<hyper::http::request::Parts>();
                let client_gone = http.and_then(|http| http.extensions.get::<ClientGone>()).map(|gone| gone.0.clone());
                let stream_place = http.and_then(|http| http.extensions.get::<StreamPlace>()).cloned();
                let stopping = stream_place.as_ref().map(|place| place.stopping.clone());
                let ends = [Some(context.ct.clone()), Some(session_ended.clone()), client_gone, stopping];
                Asking::Elicitation(context.peer.clone(), ends.into_iter().flatten().collect(), stream_place)
            }
            (false, false) => Asking::Cannot(
                "the client declared no elicitation capability, and its protocol revision has no input-required \
                 results (they came with 2026-07-28)",
            ),
        }
    }
}

/// How long a client of protocol 2026-07-28 or later may consider a page of
/// `prompts/list` fresh, by default: one minute. The catalog changes only
/// when the operator changes the packs; a client listening for
/// `notifications/prompts/list_changed` learns of a change at once (the
/// notification invalidates its cache), and one that does not sees it within
/// a minute, while a client that lists before each use of a prompt does not
/// list again for a minute.
pub const DEFAULT_LIST_TTL_MS: u64 = 60_000;

/// The caching hints (`ttlMs`, `cacheScope`) sent with each page of
/// `prompts/list` to a client of protocol 2026-07-28 or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListCaching {
    pub ttl_ms: u64,
    pub scope: CacheScope,
}

impl ListCaching {
    /// The hints for a server whose endpoint requires a bearer token
    /// (`requires_token`) or not. The prompt list is the same for every
    /// client, so without a token it is `public`: any cache may serve it to
    /// anyone, who could fetch it anyway. Behind a token it is `private`:
    /// 2026-07-28 forbids sharing a private result across authorization
    /// contexts, so a shared cache cannot hand the list to someone without
    /// the token.
    pub fn new(ttl_ms: u64, requires_token: bool) -> ListCaching {
        let scope = if requires_token { CacheScope::Private } else { CacheScope::Public };
        ListCaching { ttl_ms, scope }
    }
}

impl Default for ListCaching {
    fn default() -> Self {
        ListCaching::new(DEFAULT_LIST_TTL_MS, false)
    }
}

impl PromptServer {
    pub fn new(registry: Arc<Registry>, page_size: usize) -> PromptServer {
        PromptServer {
            registry,
            page_size: page_size.max(1),
            list_caching: ListCaching::default(),
            session: SessionEnd::new(),
            seal: RequestStateSeal::random(),
            elicitations: PendingElicitations::new(ElicitationLimits::default()),
            access_log: None,
            prompts_as_tools: false,
            tools: Arc::default(),
        }
    }

    /// The server, also serving its prompts as the tools `list_prompts` and
    /// `get_prompt` when `on`, for clients that only call tools.
    pub fn with_prompts_as_tools(self, on: bool) -> PromptServer {
        PromptServer { prompts_as_tools: on, ..self }
    }

    /// The server, counting the elicitations waiting for answers in
    /// `elicitations` (by default, its own counts under the default limits;
    /// a tenant's server takes `another_tenant()` of the first's).
    pub fn with_pending_elicitations(self, elicitations: PendingElicitations) -> PromptServer {
        PromptServer { elicitations, ..self }
    }

    /// Cancelled when this server's session ends; a transport that sees its
    /// client go (stdio at the end of its input) cancels it at once, which
    /// cancels the elicitations waiting in the session.
    pub fn session_ended(&self) -> CancellationToken {
        self.session.ended.clone()
    }

    /// The server, sealing the `requestState` of input-required prompts
    /// with `seal` (by default, a random key of this process).
    pub fn with_request_state_seal(self, seal: RequestStateSeal) -> PromptServer {
        PromptServer { seal, ..self }
    }

    /// The server, sending `list_caching` with each page of `prompts/list`.
    pub fn with_list_caching(self, list_caching: ListCaching) -> PromptServer {
        PromptServer { list_caching, ..self }
    }

    /// The server, writing a line to `access_log` for each `prompts/get`
    /// and `completion/complete`.
    pub fn with_access_log(self, access_log: Arc<crate::access_log::AccessLog>) -> PromptServer {
        PromptServer { access_log: Some(access_log), ..self }
    }

    /// Answers `request` (a `method` of `prompt`) and, if the access log is
    /// on, writes its line: who, what, how it ended (`outcome`), how long,
    /// and the fuel its calls burned.
    async fn logged<T>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        prompt: &str,
        request: impl Future<Output = Result<T, RequestError>>,
        outcome: impl FnOnce(&T) -> &'static str,
    ) -> Result<T, RequestError> {
        let Some(log) = &self.access_log else { return request.await };
        let (started, clock) = (std::time::SystemTime::now(), std::time::Instant::now());
        let (result, fuel) = crate::access_log::counting_fuel(request).await;
        let principal = principal(context);
        let user = Some(principal.subject.clone()).filter(|subject| !subject.is_empty()).or_else(|| session_label(context));
        let plugin = self.registry.snapshot().resolve(prompt).map(|(_, plugin)| plugin.id().to_string());
        let outcome = match &result {
            Ok(answer) => outcome(answer),
            Err(error) => error.outcome(),
        };
        let entry = crate::access_log::Entry::new(
            started,
            clock.elapsed(),
            &principal.tenant,
            user,
            method,
            prompt,
            plugin.as_deref(),
            outcome,
            fuel,
        );
        log.write(&entry);
        result
    }

    fn list(&self, request: Option<PaginatedRequestParams>) -> Result<ListPromptsResult, RequestError> {
        let snapshot = self.registry.snapshot();
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        let page = snapshot.catalog().page(cursor, self.page_size)?;
        let mut result = ListPromptsResult::with_all_items(page.prompts.iter().map(|entry| entry.listed()).collect());
        result.next_cursor = page.next_cursor;
        Ok(result)
    }

    /// The names of the prompts served, in catalog order.
    pub fn prompt_names(&self) -> Vec<String> {
        self.registry.snapshot().catalog().entries().iter().map(|entry| entry.prompt.name.clone()).collect()
    }

    /// Whether a prompt is served under `name`.
    fn serves(&self, name: &str) -> bool {
        self.registry.snapshot().catalog().resolve(name).is_some()
    }

    /// The names of the arguments the prompt served under `name` declares.
    pub fn declared_arguments(&self, name: &str) -> Option<Vec<String>> {
        let snapshot = self.registry.snapshot();
        let entry = snapshot.catalog().resolve(name)?;
        Some(entry.prompt.arguments.iter().flatten().map(|argument| argument.name.clone()).collect())
    }

    /// Answers a `prompts/get` without a client and without answers: a
    /// prompt that asks for input is refused.
    pub async fn get_prompt_result(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, RequestError> {
        self.get_prompt_answering(request, Arc::new(|_: &Forms| None)).await
    }

    /// Answers a `prompts/get` without a client (the `get` command): a
    /// form the prompt asks for is answered by `answer`.
    pub async fn get_prompt_answering(&self, request: GetPromptRequestParams, answer: Answerer) -> Result<GetPromptResult, RequestError> {
        match self.get_prompt_response(request, Asking::Locally(answer), &Principal::stdio()).await? {
            GetPromptResponse::Complete(result) => Ok(result),
            _ => unreachable!("a request that cannot ask for input gets no InputRequiredResult"),
        }
    }

    /// Answers a `prompts/get`: resolves the name, checks the arguments, and
    /// any answers to forms against the forms sealed in `requestState`, and
    /// runs the owning plugin; if it asks for input, asks the client as
    /// `asking` allows. A `requestState` is sealed for, and opens only for,
    /// `principal`.
    pub async fn get_prompt_response(
        &self,
        request: GetPromptRequestParams,
        asking: Asking,
        principal: &Principal,
    ) -> Result<GetPromptResponse, RequestError> {
        let snapshot = self.registry.snapshot();
        let (entry, plugin) = snapshot.resolve(&request.name).ok_or_else(|| unknown_prompt(&snapshot, &request.name))?;
        let name = request.name.clone();
        let response = self.answer_get(entry, plugin, request, asking, principal).await;
        let outcome = match &response {
            Ok(GetPromptResponse::Complete(_)) => metrics::OK,
            Ok(_) => metrics::INPUT_REQUIRED,
            Err(error) => error.outcome(),
        };
        metrics::prompt_served(plugin.id(), &name, outcome);
        response
    }

    /// Answers a `prompts/get` of `entry`, served by `plugin`: the
    /// arguments checked, the missing ones asked for (when the prompt asks
    /// for them), the typed ones checked against their kinds, and then the
    /// pack called, in as many rounds as its forms take.
    async fn answer_get(
        &self,
        entry: &crate::catalog::Entry,
        plugin: &Plugin,
        request: GetPromptRequestParams,
        asking: Asking,
        principal: &Principal,
    ) -> Result<GetPromptResponse, RequestError> {
        let mut call = self.opened_get(entry, plugin, request, principal)?;
        if !call.missing().is_empty()
            && let Some(response) = self.fill_missing(&mut call, &asking).await?
        {
            return Ok(response);
        }
        call.check_arguments()?;
        self.call_in_rounds(call, asking).await
    }

    /// A `prompts/get` opened: its arguments as the client sent them, sized,
    /// and (unless the prompt asks for its missing arguments) all there;
    /// with a retry, the forms sealed in its state opened, and the answers
    /// to them taken.
    fn opened_get<'a>(
        &self,
        entry: &'a crate::catalog::Entry,
        plugin: &'a Plugin,
        request: GetPromptRequestParams,
        principal: &'a Principal,
    ) -> Result<GetCall<'a>, RequestError> {
        let arguments = convert::arguments(request.arguments.as_ref())
            .map_err(|problem| RequestError::NonStringArgument { prompt: request.name.clone(), problem })?;
        check_argument_size(&request.name, &arguments, plugin.limits(), 0)?;
        let mut call = GetCall {
            entry,
            plugin,
            principal,
            name: request.name,
            sent: arguments.len(),
            arguments,
            answered: Vec::new(),
            input: None,
            unanswered: None,
            asked_for_arguments: false,
        };
        let asks_for_missing = entry.typed.as_ref().is_some_and(|typed| typed.asks_for_missing);
        if !asks_for_missing {
            let missing = call.missing();
            if !missing.is_empty() {
                return Err(RequestError::MissingArguments { prompt: call.name, missing });
            }
        }
        // A retry: the forms sealed in the state, and the arguments answered
        // through the host's form in an earlier round; a form left
        // unanswered is asked for again. Answers without a state answer
        // nothing asked: ignored.
        if let Some(state) = &request.request_state {
            let forms = self.seal.open(state, &call.binding(), plugin.limits()).map_err(|problem| call.input_error(problem))?;
            call.answered = forms.carried();
            match forms.answers(request.input_responses.as_ref()).map_err(|problem| call.input_error(problem))? {
                Answers::Complete(answers) if forms.is_for_arguments() => {
                    call.answered.extend(input::answered_arguments(&answers));
                    call.asked_for_arguments = true;
                }
                Answers::Complete(answers) => call.input = Some(answers),
                Answers::Missing => call.unanswered = Some(forms),
            }
        }
        add_answered(&mut call.arguments, &call.answered);
        Ok(call)
    }

    /// Asks for `call`'s missing arguments with the host's form, if its
    /// prompt asks for them (0.3.1), the client can be asked and has not
    /// just declined it: now, or with an `InputRequiredResult` (then that is
    /// the answer). Past that, a missing argument is -32602, as for every
    /// other prompt.
    async fn fill_missing(&self, call: &mut GetCall<'_>, asking: &Asking) -> Result<Option<GetPromptResponse>, RequestError> {
        // The values the client did pass are checked first: no form for
        // a request that would be refused anyway.
        if let Some(typed) = &call.entry.typed {
            typed.apply(&mut call.arguments.clone()).map_err(|refused| call.invalid_argument(refused))?;
        }
        let form = match call.unanswered.take() {
            Some(forms) if forms.is_for_arguments() => Some(forms),
            _ if call.asked_for_arguments || matches!(asking, Asking::Cannot(_)) => None,
            _ => self.form_for_missing(call.entry, call.plugin, &call.missing()),
        };
        if let Some(form) = form {
            if let Asking::InputRequired = asking {
                return Ok(Some(GetPromptResponse::InputRequired(self.seal.ask(&form.carrying(&call.answered), &call.binding()))));
            }
            let cannot_ask = |why| call.input_error(cannot_ask(call.entry, &form, why));
            let responses = self.ask_now(&call.name, asking, &form, cannot_ask).await?;
            if let Answers::Complete(answers) = form.answers(Some(&responses)).map_err(|problem| call.input_error(problem))? {
                call.answered = input::answered_arguments(&answers);
                add_answered(&mut call.arguments, &call.answered);
            }
        }
        let missing = call.missing();
        if !missing.is_empty() {
            return Err(RequestError::MissingArguments { prompt: call.name.clone(), missing });
        }
        Ok(None)
    }

    /// Calls the pack with `call`'s arguments, and while it answers with
    /// forms, asks the client (now, or with an `InputRequiredResult`, which
    /// is then the answer) and calls it again with the answers, at most
    /// [`input::MAX_ELICITATION_ROUNDS`] times.
    async fn call_in_rounds(&self, mut call: GetCall<'_>, asking: Asking) -> Result<GetPromptResponse, RequestError> {
        let (entry, plugin) = (call.entry, call.plugin);
        let mut rounds = 0;
        loop {
            let asked = match call.unanswered.take() {
                Some(forms) => forms,
                None => {
                    let answer = plugin.get_prompt(&entry.declared_name, &call.arguments, call.input.as_ref());
                    let answer = plugin_call(plugin, metrics::Method::Get, answer, |answer| match answer {
                        Ok(PromptAnswer::InputRequired(_)) => metrics::INPUT_REQUIRED,
                        answer => error::outcome(answer),
                    });
                    match answer.await? {
                        PromptAnswer::Reply(reply) => {
                            let result = plugin.bounded_on_the_wire(&entry.declared_name, convert::reply(reply))?;
                            return Ok(GetPromptResponse::Complete(result));
                        }
                        PromptAnswer::InputRequired(asked) => Forms::from(&asked),
                    }
                }
            };
            if let Asking::InputRequired = &asking {
                // The arguments answered through the host's form ride along
                // to the next round, sealed: bounded as a form is.
                input::check_carried(&call.answered, plugin.limits()).map_err(|problem| call.input_error(problem))?;
                return Ok(GetPromptResponse::InputRequired(self.seal.ask(&asked.carrying(&call.answered), &call.binding())));
            }
            rounds += 1;
            if rounds > input::MAX_ELICITATION_ROUNDS {
                return Err(call.input_error(InputError::TooManyRounds));
            }
            let cannot_ask = |why| call.input_error(cannot_ask(entry, &asked, why));
            let responses = self.ask_now(&call.name, &asking, &asked, cannot_ask).await?;
            let Answers::Complete(answers) = asked.answers(Some(&responses)).map_err(|problem| call.input_error(problem))? else {
                unreachable!("elicit answers every form");
            };
            check_argument_size(&call.name, &call.arguments, plugin.limits(), input::input_bytes(&answers))?;
            call.input = Some(answers);
        }
    }

    /// The host's form for `entry`'s `missing` arguments, if its prompt
    /// asks for them (a 0.3.1 pack's `asking`).
    fn form_for_missing(&self, entry: &crate::catalog::Entry, plugin: &Plugin, missing: &[String]) -> Option<Forms> {
        let typed = entry.typed.as_ref().filter(|typed| typed.asks_for_missing)?;
        let prompt = plugin.prompts().iter().find(|prompt| prompt.name == entry.declared_name)?;
        let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
        let form = typed.form_for_missing(prompt, &entry.prompt.name, &missing);
        // Checked at load with the declared name; the served one may be longer.
        if let Err(problem) = prompt_host_kernel::validate::input_required(&form, plugin.limits()) {
            tracing::debug!(prompt = %entry.prompt.name.escape_debug(), problem = %problem.escape_debug(), "no form for the missing arguments");
            return None;
        }
        Some(Forms::for_missing_arguments(&form))
    }

    /// Asks the client for `forms` now, as `asking` allows (elicitation
    /// requests on its session, or the `get` command's answers), and returns
    /// its answers; `cannot_ask` says why when it cannot.
    async fn ask_now(
        &self,
        prompt: &str,
        asking: &Asking,
        forms: &Forms,
        cannot_ask: impl FnOnce(&'static str) -> RequestError,
    ) -> Result<rmcp::model::InputResponses, RequestError> {
        let input_error = |problem: InputError| RequestError::Input { prompt: prompt.to_string(), problem };
        match asking {
            Asking::Elicitation(peer, ends, stream_place) => {
                let _pending = self.elicitations.admit().map_err(input_error)?;
                let _stream = match stream_place {
                    Some(place) => Some((place.take)().map_err(|refusal| input_error(InputError::NoStreamPlace { refusal }))?),
                    None => None,
                };
                let abandoned = futures::future::select_all(ends.iter().map(|end| Box::pin(end.cancelled())));
                let timeout = self.elicitations.limits().timeout;
                input::elicit(peer, forms, timeout, async {
                    abandoned.await;
                })
                .await
                .map_err(input_error)
            }
            Asking::Locally(answer) => answer(forms).ok_or_else(|| cannot_ask(GET_CANNOT_ASK)),
            Asking::Cannot(why) => Err(cannot_ask(why)),
            Asking::InputRequired => unreachable!("answered with an InputRequiredResult before asking now"),
        }
    }

    /// Answers a `completion/complete`: resolves the prompt, checks the
    /// arguments' size, and runs the owning plugin.
    pub async fn complete_result(&self, request: CompleteRequestParams) -> Result<CompleteResult, RequestError> {
        let Reference::Prompt(reference) = &request.r#ref else {
            return Err(RequestError::UnsupportedReference);
        };
        let snapshot = self.registry.snapshot();
        let (entry, plugin) = snapshot.resolve(&reference.name).ok_or_else(|| unknown_prompt(&snapshot, &reference.name))?;
        let context =
            convert::completion_context(request.context.as_ref().and_then(|context| context.arguments.as_ref()).into_iter().flatten());
        let argument = &request.argument;
        let typed = model::Argument { name: argument.name.clone(), value: argument.value.clone() };
        check_argument_size(&reference.name, context.iter().chain([&typed]), plugin.limits(), 0)?;
        // Choices and booleans (0.3) are completed from the declaration:
        // the pack does not run.
        if let Some(completion) = entry.typed.as_ref().and_then(|typed| typed.completion(&argument.name, &argument.value)) {
            return Ok(plugin.bounded_on_the_wire(&entry.declared_name, CompleteResult::new(convert::completion(completion)))?);
        }
        // The pack sees only context values of their kind (a form half filled in leaves the rest out).
        let context = match entry.typed.as_ref() {
            Some(typed) => typed.completion_context(context),
            None => context,
        };
        let call = plugin.complete(&entry.declared_name, &argument.name, &argument.value, &context);
        let completion = plugin_call(plugin, metrics::Method::Complete, call, error::outcome).await?;
        Ok(plugin.bounded_on_the_wire(&entry.declared_name, CompleteResult::new(convert::completion(completion)))?)
    }
}

impl ServerHandler for PromptServer {
    /// rmcp's own, once the session's content is fixed (`serves_content`).
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let _ = self.session.declared.set(self.carried_content());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(capabilities(self.prompts_as_tools, self.serves_content()))
            .with_server_info(
                Implementation::new("prompt-host", env!("CARGO_PKG_VERSION"))
                    .with_title("prompt-host")
                    .with_description("Serves prompts from sandboxed WebAssembly prompt packs"),
            )
            .with_instructions(match self.prompts_as_tools {
                false => "This server offers prompts. List them with prompts/list and fetch one with prompts/get.",
                true => {
                    "This server offers prompts. List them with prompts/list and fetch one with prompts/get, or call the tools \
                         list_prompts and get_prompt."
                }
            })
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let _in_flight = metrics::request_started();
        let span = request_span(&context);
        let trace = trace_request(&context, "prompts/list", None, false);
        let result = span.in_scope(|| self.list(request)).map_err(ErrorData::from);
        // Caching hints are fields of 2026-07-28; earlier clients get none.
        answered(trace, result.map(|result| self.cached(&context, result)))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let _in_flight = metrics::request_started();
        let name = request.name.clone();
        let span = request_span(&context);
        let trace = trace_request(&context, "prompts/get", Some(&name), self.serves(&name));
        let principal = principal(&context);
        // Boxed: rmcp spawns a task per request, and copies its future into
        // the task's cell; this keeps that copy a pointer's.
        let answer =
            Box::pin(self.get_prompt_response(request, Asking::of(&context, &self.session.ended), &principal)).instrument(span.clone());
        let answer = self.logged(&context, "prompts/get", &name, answer, |answer| match answer {
            GetPromptResponse::Complete(_) => metrics::OK,
            _ => metrics::INPUT_REQUIRED,
        });
        let result = trace.within(answer).await;
        answered(trace, span.in_scope(|| result.map_err(|error| log_failure("prompts/get", &name, error))))
    }

    async fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        let _in_flight = metrics::request_started();
        let name = request.r#ref.as_prompt_name().unwrap_or_default().to_string();
        let span = request_span(&context);
        let prompt = Some(name.as_str()).filter(|name| !name.is_empty());
        let trace = trace_request(&context, "completion/complete", prompt, self.serves(&name));
        let answer = Box::pin(self.complete_result(request)).instrument(span.clone());
        let answer = self.logged(&context, "completion/complete", &name, answer, |_| metrics::OK);
        let result = trace.within(answer).await;
        answered(trace, span.in_scope(|| result.map_err(|error| log_failure("completion/complete", &name, error))))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let told = Told { tools: self.prompts_as_tools, resources: self.serves_content() != ServedContent::None };
        notify_list_changes(&self.registry, context.peer, self.session.ended.clone(), told);
    }

    /// Accepted so that clients may set it; this server sends no log
    /// messages to clients (its log goes to stderr).
    #[allow(deprecated, reason = "logging/setLevel is deprecated from 2026-07-28; earlier clients still send it")]
    async fn set_level(&self, request: SetLevelRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        request_span(&context).in_scope(|| tracing::debug!(level = ?request.level, "client set its log level"));
        Ok(())
    }

    /// Protocol 2026-07-28 has no sessions: clients listen for prompt list
    /// changes with `subscriptions/listen`.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let filter = SubscriptionFilter::builder().prompts_list_changed();
        let filter = if self.prompts_as_tools { filter.tools_list_changed() } else { filter };
        let filter = if self.carried_content() != ServedContent::None { filter.resources_list_changed() } else { filter };
        Some(filter.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let changes = self.registry.subscribe();
        let sink = context.sink();
        // Only the kinds the subscription accepted: rmcp refuses another,
        // which would end the subscription. (`get_prompt`'s input schema
        // names the prompts: with prompts as tools, the tools changed too.)
        let accepted = sink.accepted();
        let prompts = accepted.prompts_list_changed == Some(true);
        let told = Told {
            tools: self.prompts_as_tools && accepted.tools_list_changed == Some(true),
            resources: self.carried_content() != ServedContent::None && accepted.resources_list_changed == Some(true),
        };
        let notify = |changed: Changed| async move {
            if prompts && changed.prompts {
                sink.notify_prompt_list_changed().await?;
            }
            if told.tools && changed.prompts {
                sink.notify_tool_list_changed().await?;
            }
            if told.resources && changed.content { sink.notify_resource_list_changed().await } else { Ok(()) }
        };
        forward_list_changes(changes, context.cancelled(), prompts, notify).await;
        Ok(())
    }

    // This server declares resources only while a pack carries content, and
    // tools only when it serves its prompts as tools (see `get_info`): each
    // method of an undeclared capability that rmcp routes to the handler
    // answers through `undeclared` (the list is
    // `UNDECLARED_CAPABILITY_METHODS`).

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if !self.prompts_as_tools {
            return undeclared::<_, ListToolsRequestMethod>(&context, Some(ListToolsResult::default()));
        }
        let snapshot = self.registry.snapshot();
        let version = snapshot.catalog().version();
        let mut cached = self.tools.lock().expect("never poisoned");
        let tools = match cached.as_ref() {
            Some((built_for, tools)) if built_for == version => tools.clone(),
            _ => cached.insert((version.to_string(), Arc::new(prompt_tools::tools(&snapshot)))).1.clone(),
        };
        drop(cached);
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    /// A call of `list_prompts` or `get_prompt`: answered by the prompts
    /// handler, exactly as the `prompts/list` or `prompts/get` it stands for.
    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        if !self.prompts_as_tools {
            return undeclared::<_, CallToolRequestMethod>(&context, None);
        }
        let request = prompt_tools::request(request).map_err(|error| log_failure("tools/call", "", error))?;
        match request {
            PromptRequest::List(request) => {
                let listed = self.list_prompts(request, context).await?;
                Ok(CallToolResponse::Complete(prompt_tools::listed(listed)))
            }
            PromptRequest::Get(request) => match self.get_prompt(request, context).await? {
                GetPromptResponse::Complete(result) => Ok(CallToolResponse::Complete(prompt_tools::got(result))),
                GetPromptResponse::InputRequired(asked) => Ok(CallToolResponse::InputRequired(asked)),
                _ => unreachable!("prompts/get is answered complete or with input required"),
            },
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if self.serves_content_to(&context) == ServedContent::None {
            return undeclared::<_, ListResourcesRequestMethod>(&context, Some(ListResourcesResult::default()));
        }
        self.content_list(&context, "resources/list", request, |content, cursor, page_size| content.list_resources(cursor, page_size))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        if self.serves_content_to(&context) == ServedContent::None {
            return undeclared::<_, ListResourceTemplatesRequestMethod>(&context, Some(ListResourceTemplatesResult::default()));
        }
        // Packs serve no templates: every resource has a URI of its own.
        let result = ListResourceTemplatesResult::default();
        Ok(self.cached(&context, result))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if self.serves_content_to(&context) == ServedContent::None {
            return undeclared::<_, ReadResourceRequestMethod>(&context, None);
        }
        let result = self.content_read(&context, "resources/read", &request.uri, NotServed::Resource, |content, uri| content.read(uri))?;
        let result = self.cached(&context, result);
        Ok(ReadResourceResponse::Complete(result))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.skills_declared::<ListSkillsRequestMethod>(&context)?;
        self.content_list(&context, "skills/list", request, |content, cursor, page_size| content.list_skills(cursor, page_size))
    }

    async fn get_skill(&self, request: GetSkillRequestParams, context: RequestContext<RoleServer>) -> Result<GetSkillResult, ErrorData> {
        self.skills_declared::<GetSkillRequestMethod>(&context)?;
        let result = self.content_read(&context, "skills/get", &request.uri, NotServed::Skill, |content, uri| content.get_skill(uri))?;
        Ok(self.cached(&context, result))
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.skills_declared::<ReadResourceDirectoryRequestMethod>(&context)?;
        if request.cursor.is_some() {
            // A folder is one page: no cursor was ever handed out.
            let problem = "a folder is listed in one page, and this server hands out no cursor for it: read it without one".into();
            let error = RequestError::InvalidParams { method: "resources/directory/read".into(), problem };
            return Err(log_failure("resources/directory/read", &request.uri, error));
        }
        let method = "resources/directory/read";
        let result = self.content_read(&context, method, &request.uri, NotServed::Directory, |content, uri| content.read_directory(uri))?;
        Ok(self.cached(&context, result))
    }

    #[allow(deprecated, reason = "resources/subscribe is legacy-only; earlier clients may still send it")]
    async fn subscribe(&self, _request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        undeclared::<_, SubscribeRequestMethod>(&context, None)
    }

    #[allow(deprecated, reason = "resources/unsubscribe is legacy-only; earlier clients may still send it")]
    async fn unsubscribe(&self, _request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        undeclared::<_, UnsubscribeRequestMethod>(&context, None)
    }

    async fn on_custom_request(&self, request: CustomRequest, context: RequestContext<RoleServer>) -> Result<CustomResult, ErrorData> {
        let content_declared = self.serves_content_to(&context) != ServedContent::None;
        Err(error::unparsed_request(&request.method, request.params, self.prompts_as_tools, content_declared).into())
    }
}

/// A result that carries the caching hints of 2026-07-28 (`ttlMs`, `cacheScope`).
trait CachingHints {
    fn hints(&mut self) -> (&mut Option<u64>, &mut Option<CacheScope>);
}

macro_rules! caching_hints {
    ($($result:ty),*) => {$(
        impl CachingHints for $result {
            fn hints(&mut self) -> (&mut Option<u64>, &mut Option<CacheScope>) {
                (&mut self.ttl_ms, &mut self.cache_scope)
            }
        }
    )*};
}

caching_hints!(
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    rmcp::model::ReadResourceResult,
    ListSkillsResult,
    GetSkillResult
);

/// What content the server declares: none, resources only (static
/// resources of 0.4 packs), or resources and the skills extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServedContent {
    None,
    Resources,
    WithSkills,
}

impl PromptServer {
    /// What content this server declares: in a session, what the packs
    /// carried at its `initialize`, for its life (capabilities are fixed per
    /// session: one opened while no pack carried any keeps none declared,
    /// and one told of skills keeps the methods, answering empty lists and
    /// -32602 if the packs go); without a session (2026-07-28), what the
    /// packs carry now, as each request's discovery says.
    fn serves_content(&self) -> ServedContent {
        match self.session.declared.get() {
            Some(declared) => *declared,
            None => self.carried_content(),
        }
    }

    /// What content the request in `context` was told of: a 2026-07-28
    /// request's is what the packs carry now (it has no session, even over
    /// stdio after an earlier `initialize`); any other's, its session's.
    fn serves_content_to(&self, context: &RequestContext<RoleServer>) -> ServedContent {
        match is_2026_07_28_or_later(context) {
            true => self.carried_content(),
            false => self.serves_content(),
        }
    }

    /// What content the packs being served carry now.
    fn carried_content(&self) -> ServedContent {
        let snapshot = self.registry.snapshot();
        let content = snapshot.content();
        match (content.is_empty(), content.has_skills()) {
            (true, _) => ServedContent::None,
            (false, false) => ServedContent::Resources,
            (false, true) => ServedContent::WithSkills,
        }
    }

    /// `result` with the caching hints when the client speaks 2026-07-28
    /// or later; earlier clients get none. A pack's content changes only
    /// with the pack, as its prompts do, so it is cached as the prompt list is.
    fn cached<T: CachingHints>(&self, context: &RequestContext<RoleServer>, mut result: T) -> T {
        if is_2026_07_28_or_later(context) {
            let (ttl_ms, scope) = result.hints();
            (*ttl_ms, *scope) = (Some(self.list_caching.ttl_ms), Some(self.list_caching.scope));
        }
        result
    }

    /// -32601 for method `M` of the skills extension unless the client of
    /// `context` was told of it (a pack carries a skill).
    fn skills_declared<M: ConstString>(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        match self.serves_content_to(context) {
            ServedContent::WithSkills => Ok(()),
            _ => Err(ErrorData::method_not_found::<M>()),
        }
    }

    /// Answers a page of a content list (`method`) from the snapshot's
    /// content with `list`, given the request's cursor and the page size;
    /// counted in flight and traced as `prompts/list` is.
    fn content_list<T: CachingHints>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        request: Option<PaginatedRequestParams>,
        list: impl FnOnce(&crate::served_content::ContentIndex, Option<&str>, usize) -> Result<T, crate::cursor::CursorError>,
    ) -> Result<T, ErrorData> {
        let _in_flight = metrics::request_started();
        let trace = trace_request(context, method, None, false);
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        let result = list(self.registry.snapshot().content(), cursor, self.page_size).map_err(RequestError::from);
        let result = result.map(|result| self.cached(context, result)).map_err(|error| log_failure(method, "", error));
        answered(trace, result)
    }

    /// Answers a read of `uri` (`method`) from the snapshot's content with
    /// `read`, which refuses it as `not_served`; counted, access-logged and
    /// traced as the prompts' requests are, naming the URI.
    fn content_read<T>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        uri: &str,
        not_served: NotServed,
        read: impl FnOnce(&crate::served_content::ContentIndex, &str) -> Result<T, NotServed>,
    ) -> Result<T, ErrorData> {
        let _in_flight = metrics::request_started();
        let (started, clock) = (std::time::SystemTime::now(), std::time::Instant::now());
        let snapshot = self.registry.snapshot();
        let served_by = match not_served {
            NotServed::Directory => snapshot.content().folder_served_by(uri),
            NotServed::Skill => snapshot.content().skill(uri).map(|skill| skill.served_by.clone()),
            NotServed::Resource => snapshot.content().served_by(uri),
        };
        let trace = trace_request(context, method, Some(uri), served_by.is_some());
        let result = read(snapshot.content(), uri).map_err(|what| RequestError::not_served(uri, what));
        let outcome = if result.is_ok() { metrics::OK } else { "not-found" };
        metrics::content_read(served_by.as_deref(), method, outcome);
        if let Some(log) = &self.access_log {
            let principal = principal(context);
            let user = Some(principal.subject.clone()).filter(|subject| !subject.is_empty()).or_else(|| session_label(context));
            let entry = crate::access_log::Entry::new(
                started,
                clock.elapsed(),
                &principal.tenant,
                user,
                method,
                uri,
                served_by.as_deref(),
                outcome,
                0,
            );
            log.write(&entry);
        }
        answered(trace, result.map_err(|error| log_failure(method, uri, error)))
    }
}

/// The capabilities this server declares: prompts (with list changes),
/// completions and logging; tools (with list changes) when it serves its
/// prompts as tools; resources (with list changes) when a pack carries
/// content, and the skills extension (with directory reads) when one
/// carries a skill.
fn capabilities(prompts_as_tools: bool, content: ServedContent) -> ServerCapabilities {
    #[allow(deprecated, reason = "logging is deprecated from 2026-07-28, but clients of earlier revisions set its level")]
    let builder = ServerCapabilities::builder().enable_logging().enable_prompts().enable_prompts_list_changed().enable_completions();
    let builder = if content == ServedContent::WithSkills { builder.enable_skills_with_directory_read() } else { builder };
    let mut capabilities = builder.build();
    if content != ServedContent::None {
        let mut resources = rmcp::model::ResourcesCapability::default();
        resources.list_changed = Some(true);
        capabilities.resources = Some(resources);
    }
    if prompts_as_tools {
        let mut tools = rmcp::model::ToolsCapability::default();
        tools.list_changed = Some(true);
        capabilities.tools = Some(tools);
    }
    capabilities
}

/// The methods of the capabilities this server may leave undeclared (tools,
/// and resources while no pack carries content) that rmcp routes to the
/// handler; each answers through `undeclared` then. (The skills methods
/// answer -32601 while no pack carries a skill, as rmcp does for the tasks
/// extension, which this server does not declare; logging and completions
/// are always declared.)
pub const UNDECLARED_CAPABILITY_METHODS: [&str; 7] = [
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The answer to method `M` of a capability this server does not declare:
/// -32601 (method not found), except that before protocol 2026-07-28, which
/// requires -32601, a list method answers `empty_list`, as earlier clients
/// and their conformance suite expect.
fn undeclared<T, M: ConstString>(context: &RequestContext<RoleServer>, empty_list: Option<T>) -> Result<T, ErrorData> {
    match empty_list {
        Some(empty) if !is_2026_07_28_or_later(context) => Ok(empty),
        _ => Err(ErrorData::method_not_found::<M>()),
    }
}

/// Whether the request is of protocol 2026-07-28 or later.
fn is_2026_07_28_or_later(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The span of one request's log lines: it carries the request's W3C
/// `traceparent` from `_meta` (SEP-414), so an operator can find the lines
/// of a request a client traced. The value is the client's, so only a
/// syntactically valid one is kept (55 characters, see `valid_traceparent`),
/// and it is logged as an escaped Debug field; without one, no span.
///
/// At level ERROR so that the span is enabled whenever any of the request's
/// lines is logged.
fn request_span(context: &RequestContext<RoleServer>) -> tracing::Span {
    match context.meta.get_traceparent().filter(|value| valid_traceparent(value)) {
        Some(traceparent) => tracing::error_span!("request", traceparent = ?traceparent),
        None => tracing::Span::none(),
    }
}

/// Who the request comes from: over HTTP, whom the front found (see
/// `transport::http`); over stdio, its one client.
fn principal(context: &RequestContext<RoleServer>) -> Principal {
    match context.extensions.get::<hyper::http::request::Parts>() {
        Some(http) => http.extensions.get::<Principal>().cloned().unwrap_or_else(Principal::http_without_oauth),
        None => Principal::stdio(),
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

/// Ends the trace span of a request answered with `result`.
fn answered<T>(trace: traces::RequestSpan, result: Result<T, ErrorData>) -> Result<T, ErrorData> {
    trace.finished(result.as_ref().err().map(|error| error.code.0));
    result
}

/// Runs one call into `plugin` (`call`, of `method`) and records it: in the
/// metrics, and as a span of its own in the request's trace, both with the
/// outcome `outcome` names.
async fn plugin_call<T>(
    plugin: &Plugin,
    method: metrics::Method,
    call: impl Future<Output = Result<T, PluginError>>,
    outcome: impl FnOnce(&Result<T, PluginError>) -> &'static str,
) -> Result<T, PluginError> {
    let started = metrics::call_started();
    let span = traces::plugin_call_started(plugin.id(), method.label());
    let result = span.within(call).await;
    let outcome = outcome(&result);
    metrics::call_finished(plugin.id(), method, outcome, started);
    span.finished(outcome, result.is_err());
    result
}

/// Whether `value` is a W3C Trace Context `traceparent` of version 00 form:
/// `VV-TRACEID-PARENTID-FF`, lowercase hex of 2, 32, 16 and 2 digits
/// (55 characters), with a version other than `ff` and trace and parent ids
/// that are not all zeros.
fn valid_traceparent(value: &str) -> bool {
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

/// Which notifications besides the prompts' a client is told: the tools'
/// (prompts as tools: `get_prompt`'s input schema names the prompts) and
/// the resources' (when content was declared to it).
#[derive(Debug, Clone, Copy)]
struct Told {
    tools: bool,
    resources: bool,
}

/// Which lists one change changed.
#[derive(Debug, Clone, Copy)]
struct Changed {
    prompts: bool,
    content: bool,
}

/// Sends a session's client `notifications/prompts/list_changed` (and those
/// `told` says) after each effective change, from its `initialized` on,
/// until the session ends (`ended`), a notification cannot be sent, or the
/// registry is dropped. Nothing polls: the task sleeps until one of these
/// happens.
fn notify_list_changes(registry: &Registry, peer: Peer<RoleServer>, ended: CancellationToken, told: Told) {
    let changes = registry.subscribe();
    tokio::spawn(async move {
        let notify = |changed: Changed| {
            let peer = peer.clone();
            async move {
                if changed.prompts {
                    peer.notify_prompt_list_changed().await?;
                    if told.tools {
                        peer.notify_tool_list_changed().await?;
                    }
                }
                if told.resources && changed.content { peer.notify_resource_list_changed().await } else { Ok(()) }
            }
        };
        forward_list_changes(changes, ended.cancelled(), true, notify).await;
        tracing::debug!("a session's list_changed notifier stopped");
    });
}

/// Cancelled when the handler holding it is dropped, which rmcp does when
/// the handler's session ends (whatever ended it: the client leaving, DELETE,
/// idle timeout, eviction, shutdown).
///
/// Each clone is a new one, with its own token: rmcp's HTTP transport clones
/// the handler once per session, and each session's notifier must end with
/// its own session, not with the handler it was cloned from.
///
/// It also keeps what content the session was told of at `initialize`
/// (`declared`), which holds for the session's life.
struct SessionEnd {
    ended: CancellationToken,
    _cancel_on_drop: tokio_util::sync::DropGuard,
    declared: std::sync::OnceLock<ServedContent>,
}

impl SessionEnd {
    fn new() -> SessionEnd {
        let ended = CancellationToken::new();
        SessionEnd { _cancel_on_drop: ended.clone().drop_guard(), ended, declared: std::sync::OnceLock::new() }
    }
}

impl Clone for SessionEnd {
    fn clone(&self) -> SessionEnd {
        SessionEnd::new()
    }
}

/// Calls `notify` once per change of the registry, with what it changed,
/// until `stop` completes or a notification cannot be sent. Changes that
/// come while a notification is being sent are coalesced into one more.
async fn forward_list_changes<E, Sent>(
    mut changes: tokio::sync::watch::Receiver<Changes>,
    stop: impl Future<Output = ()>,
    prompts_told: bool,
    notify: impl Fn(Changed) -> Sent,
) where
    Sent: Future<Output = Result<(), E>>,
{
    tokio::pin!(stop);
    let mut seen = *changes.borrow_and_update();
    loop {
        tokio::select! {
            _ = &mut stop => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = *changes.borrow_and_update();
                let changed = Changed { prompts: now.prompts != seen.prompts, content: now.content != seen.content };
                seen = now;
                // Counted as it is handed to the transport, so that a client
                // that has it finds it counted: the prompts' notification,
                // when this client is told of the prompts' changes.
                if changed.prompts && prompts_told {
                    metrics::list_changed_sent();
                }
                if notify(changed).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// One `prompts/get` under way, between its phases: what it is for, and
/// where it stands.
struct GetCall<'a> {
    entry: &'a crate::catalog::Entry,
    plugin: &'a Plugin,
    principal: &'a Principal,
    /// The prompt's name, as the client sent it.
    name: String,
    /// The client's arguments (the first `sent`), then those answered
    /// through the host's form, then, once checked, the defaults.
    arguments: Vec<model::Argument>,
    sent: usize,
    /// The arguments answered through the host's form, in this round or an
    /// earlier one (carried in the sealed state).
    answered: Vec<model::Argument>,
    /// The answers to the pack's own forms.
    input: Option<model::Input>,
    /// The forms sealed in the state the client sent back, left unanswered.
    unanswered: Option<Forms>,
    /// Whether the client answered the host's form for missing arguments in
    /// this round.
    asked_for_arguments: bool,
}

impl GetCall<'_> {
    /// The prompt's required arguments not among the arguments.
    fn missing(&self) -> Vec<String> {
        self.entry
            .required_arguments()
            .filter(|required| !self.arguments.iter().any(|argument| argument.name == *required))
            .map(str::to_string)
            .collect()
    }

    /// What a state is bound to: the arguments as the client sent them,
    /// which it sends again with every round; what the host adds (answers
    /// to its form, defaults) goes after them. Made only where a state is
    /// opened or sealed: most calls need none.
    fn binding(&self) -> Binding {
        Binding::new(self.principal, self.plugin.digest(), &self.name, &self.arguments[..self.sent])
    }

    fn input_error(&self, problem: InputError) -> RequestError {
        RequestError::Input { prompt: self.name.clone(), problem }
    }

    fn invalid_argument(&self, refused: prompt_host_kernel::arguments::Refused) -> RequestError {
        RequestError::InvalidArgument { prompt: self.name.clone(), refused }
    }

    /// The arguments sized again (with the answers to the pack's forms),
    /// and, for typed arguments (0.3), the defaults filled in and every
    /// declared value checked, before the pack runs.
    fn check_arguments(&mut self) -> Result<(), RequestError> {
        check_argument_size(&self.name, &self.arguments, self.plugin.limits(), 0)?;
        if let Some(typed) = &self.entry.typed {
            typed.apply(&mut self.arguments).map_err(|refused| RequestError::InvalidArgument { prompt: self.name.clone(), refused })?;
        }
        if let Some(answers) = &self.input {
            check_argument_size(&self.name, &self.arguments, self.plugin.limits(), input::input_bytes(answers))?;
        }
        Ok(())
    }
}

/// Why `forms` cannot be asked for (`why`), naming what the prompt needs,
/// and the arguments that would do instead (fields the prompt also takes as
/// arguments: given those, it need not ask).
fn cannot_ask(entry: &crate::catalog::Entry, forms: &Forms, why: &'static str) -> InputError {
    let declared: Vec<&str> = entry.prompt.arguments.iter().flatten().map(|argument| argument.name.as_str()).collect();
    let arguments: Vec<String> = forms.field_names().filter(|field| declared.contains(field)).map(|field| format!("{field}=...")).collect();
    let skip = match arguments.len() {
        0 => String::new(),
        1 => format!("; or give the argument {} instead, which skips the form", arguments[0]),
        _ => format!("; or give the arguments {} instead, which skips the forms", arguments.join(" ")),
    };
    InputError::CannotAsk { needed: forms.describe(), why, skip }
}

/// Adds the arguments the user gave through the host's form to the
/// client's, after them: each that the client did not pass itself.
fn add_answered(arguments: &mut Vec<model::Argument>, answered: &[model::Argument]) {
    for argument in answered {
        if !arguments.iter().any(|given| given.name == argument.name) {
            arguments.push(argument.clone());
        }
    }
}

/// The error for a name the catalog does not serve, with the closest name it
/// does serve, if one is close.
fn unknown_prompt(snapshot: &Snapshot, name: &str) -> RequestError {
    // The name is the client's: escaped and bounded, in the message and in `data`.
    let closest = snapshot.catalog().closest(name).map(str::to_string);
    RequestError::UnknownPrompt { name: prompt_host_kernel::validate::error_message(name), closest }
}

/// Refuses arguments (and `answers_bytes` of answers to forms) larger in
/// all than the owning plugin accepts.
fn check_argument_size<'a>(
    prompt: &str,
    arguments: impl IntoIterator<Item = &'a model::Argument>,
    limits: &Limits,
    answers_bytes: usize,
) -> Result<(), RequestError> {
    let bytes: usize = arguments.into_iter().map(|argument| argument.name.len() + argument.value.len()).sum::<usize>() + answers_bytes;
    if bytes > limits.max_argument_bytes {
        return Err(RequestError::ArgumentsTooLarge { prompt: prompt.to_string(), bytes, limit: limits.max_argument_bytes });
    }
    Ok(())
}

/// Logs a failed request once, and converts the error for the wire: a
/// plugin's failure at warn for the operator; arguments the pack refused
/// at info, naming the prompt (a client's mistake, not the pack's
/// failure); a client's other mistakes at debug. What a client or a pack
/// wrote (the prompt name, the message) goes in escaped fields, never in
/// the log line's message.
fn log_failure(method: &str, prompt: &str, error: RequestError) -> ErrorData {
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

#[cfg(test)]
mod tests {
    use super::{CacheScope, ListCaching, UNDECLARED_CAPABILITY_METHODS, capabilities, valid_traceparent};

    #[test]
    fn only_a_well_formed_traceparent_is_valid() {
        assert!(valid_traceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"));
        for invalid in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-011",
            "00-0AF7651916CD43DD8448EB211C80319C-00F067AA0BA902B7-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7\n01",
            "00-0af7651916cd43dd8448eb211c8031\u{1b}-00f067aa0ba902b7-01",
        ] {
            assert!(!valid_traceparent(invalid), "{invalid:?}");
        }
    }

    #[test]
    fn the_prompt_list_is_private_only_behind_a_token() {
        assert_eq!(ListCaching::new(5, false), ListCaching { ttl_ms: 5, scope: CacheScope::Public });
        assert_eq!(ListCaching::new(5, true), ListCaching { ttl_ms: 5, scope: CacheScope::Private });
    }

    #[test]
    fn the_methods_answered_as_undeclared_belong_to_capabilities_not_declared() {
        let declared = capabilities(false, super::ServedContent::None);
        assert_eq!((declared.tools, declared.resources, declared.extensions), (None, None, None));
        for method in UNDECLARED_CAPABILITY_METHODS {
            assert!(method.starts_with("tools/") || method.starts_with("resources/"), "{method}");
        }
    }
}
