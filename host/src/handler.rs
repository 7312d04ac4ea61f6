//! The MCP handler: the thin adapter between rmcp's [`ServerHandler`] and
//! the use cases (`app`). Each method builds the request's [`Caller`] from
//! rmcp's request context (and, over HTTP, what the front put in hyper's
//! request parts), calls one use case, and answers through one telemetry
//! wrapper (`telemetry`): in flight, the log span, the trace, the access
//! log and the failure's log line. What it adds of its own is the
//! protocol's: capabilities, caching hints, methods of undeclared
//! capabilities, and the notifications of list changes.

mod telemetry;

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
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
#[allow(deprecated, reason = "resources/subscribe and unsubscribe are legacy-only; earlier clients may still send them")]
use rmcp::model::{SubscribeRequestMethod, SubscribeRequestParams, UnsubscribeRequestMethod, UnsubscribeRequestParams};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{Peer, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::app::{Answerer, Asking, Caller, ServedContent, StreamPlace, UseCases};
use crate::error::{self, RequestError};
use crate::identity::Principal;
use crate::input::{ClientSession, Forms, PendingElicitations, RequestStateSeal};
use crate::metrics;
use crate::prompt_tools::{self, PromptRequest};
use crate::registry::{Changes, Registry};
use crate::served_content::{ContentIndex, NotServed};
#[cfg(test)]
use telemetry::valid_traceparent;
use telemetry::{Observed, log_failure, request_span};

/// Serves the registry's prompts over MCP.
#[derive(Clone)]
pub struct PromptServer {
    use_cases: UseCases,
    list_caching: ListCaching,
    session: SessionEnd,
    access_log: Option<Arc<crate::access_log::AccessLog>>,
    /// Whether the prompts are also served as two tools (`prompt_tools`).
    prompts_as_tools: bool,
}

/// Cancelled when the client of a request can no longer receive its answer:
/// the HTTP transport puts one in each request's extensions and cancels it
/// when the response (its event stream) is dropped, the client gone. An
/// elicitation the request waits for is then cancelled.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// What content an HTTP session's client was told of at its `initialize`:
/// the HTTP front puts an empty one in the request of an `initialize`,
/// which the handler fills in and the front seals into the session's id;
/// when a replica restores the session from its id, the front puts one
/// holding what the id says, and the replayed `initialize` declares that,
/// so a session's capabilities stay what its client was told on every
/// replica.
#[derive(Clone, Debug, Default)]
pub struct DeclaredContent(pub Arc<std::sync::OnceLock<ServedContent>>);

/// An HTTP session's handler and peer, filled in at its `initialize`: the
/// HTTP sessions put an empty one in the `initialize` they pass to rmcp, so
/// that the hot methods of the session can be answered without rmcp's
/// session worker. The handler is a clone of the session's: it shares the
/// use cases, not the session's own state (`SessionEnd`, fresh in each
/// clone), which the hot methods (`list_prompts`, `complete`, and a
/// `get_prompt` that cannot elicit) do not read.
#[derive(Clone, Default)]
pub struct HotSession(pub Arc<std::sync::OnceLock<(Arc<PromptServer>, Peer<RoleServer>)>>);

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
/// `elicitation/create` requests to its client (see `asking`): rmcp ties
/// those to the request it is serving, so such a request is left to it.
pub fn may_elicit(context: &RequestContext<RoleServer>) -> bool {
    !is_2026_07_28_or_later(context) && fills_in_forms(context)
}

/// How the client of `context`, in the session that ends with
/// `session_ended`, can be asked.
fn asking(context: &RequestContext<RoleServer>, session_ended: &CancellationToken) -> Asking {
    match (is_2026_07_28_or_later(context), fills_in_forms(context)) {
        (true, true) => Asking::InputRequired,
        (true, false) => Asking::Cannot("the client did not declare the elicitation capability"),
        (false, true) => {
            let http = context.extensions.get::<hyper::http::request::Parts>();
            let client_gone = http.and_then(|http| http.extensions.get::<ClientGone>()).map(|gone| gone.0.clone());
            let stream_place = http.and_then(|http| http.extensions.get::<StreamPlace>()).cloned();
            let stopping = stream_place.as_ref().map(|place| place.stopping.clone());
            let ends = [Some(context.ct.clone()), Some(session_ended.clone()), client_gone, stopping];
            Asking::Elicitation(ClientSession::new(context.peer.clone()), ends.into_iter().flatten().collect(), stream_place)
        }
        (false, false) => Asking::Cannot(
            "the client declared no elicitation capability, and its protocol revision has no input-required \
             results (they came with 2026-07-28)",
        ),
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
            use_cases: UseCases::new(registry, page_size),
            list_caching: ListCaching::default(),
            session: SessionEnd::new(),
            access_log: None,
            prompts_as_tools: false,
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
        PromptServer { use_cases: self.use_cases.clone().with_pending_elicitations(elicitations), ..self }
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
        PromptServer { use_cases: self.use_cases.clone().with_request_state_seal(seal), ..self }
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

    /// The names of the prompts served, in catalog order.
    pub fn prompt_names(&self) -> Vec<String> {
        self.use_cases.prompt_names()
    }

    /// The names of the arguments the prompt served under `name` declares.
    pub fn declared_arguments(&self, name: &str) -> Option<Vec<String>> {
        self.use_cases.declared_arguments(name)
    }

    /// Answers a `prompts/get` without a client and without answers: a
    /// prompt that asks for input is refused.
    pub async fn get_prompt_result(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, RequestError> {
        self.get_prompt_answering(request, Arc::new(|_: &Forms| None)).await
    }

    /// Answers a `prompts/get` without a client (the `get` command): a
    /// form the prompt asks for is answered by `answer`.
    pub async fn get_prompt_answering(&self, request: GetPromptRequestParams, answer: Answerer) -> Result<GetPromptResult, RequestError> {
        match self.use_cases.get(request, &Caller::local(answer)).await? {
            GetPromptResponse::Complete(result) => Ok(result),
            _ => unreachable!("a request that cannot ask for input gets no InputRequiredResult"),
        }
    }

    /// Answers a `completion/complete` without a client (the `complete`
    /// command).
    pub async fn complete_result(&self, request: CompleteRequestParams) -> Result<CompleteResult, RequestError> {
        self.use_cases.complete(request).await
    }

    /// Starts the session's list_changed notifier, once: at its
    /// `initialize` or its `notifications/initialized`, whichever comes
    /// first (the second finds it running; a restore replays both).
    fn start_notifying(&self, peer: Peer<RoleServer>) {
        if self.session.notifying.set(()).is_ok() {
            let told = Told { tools: self.prompts_as_tools, resources: self.serves_content() != ServedContent::None };
            notify_list_changes(self.use_cases.changes(), peer, self.session.ended.clone(), told);
        }
    }

    /// The caller of the request in `context`, as the use cases take it.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        Caller { principal: principal(context), asking: asking(context, &self.session.ended) }
    }
}

impl ServerHandler for PromptServer {
    /// rmcp's own, once the session's content is fixed (`serves_content`):
    /// what the packs carry now, or, for a session restored from its id,
    /// what its client was told when it opened it (`DeclaredContent`).
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let http = context.extensions.get::<hyper::http::request::Parts>();
        let slot = http.and_then(|http| http.extensions.get::<DeclaredContent>());
        let declared = slot.and_then(|slot| slot.0.get().copied()).unwrap_or_else(|| self.use_cases.carried_content());
        if let Some(slot) = slot {
            let _ = slot.0.set(declared);
        }
        let _ = self.session.declared.set(declared);
        // Over HTTP the client's `notifications/initialized` may reach
        // another replica (round robin), which restores the session there
        // and notifies from there: this replica notifies from its own
        // `initialize`, so a client is told of changes by every replica
        // that holds its session.
        self.start_notifying(context.peer.clone());
        context.peer.set_peer_info(request.clone());
        let negotiated = self.negotiate_initialize(&request);
        if negotiated.is_ok()
            && let Some(slot) = context.extensions.get::<HotSession>()
        {
            let _ = slot.0.set((Arc::new(self.clone()), context.peer.clone()));
        }
        negotiated
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
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        // Caching hints are fields of 2026-07-28; earlier clients get none.
        let listed = async { self.use_cases.list(cursor).map(|result| self.cached(&context, result)) };
        self.observed(&context, Observed::list("prompts/list"), listed, |_| metrics::OK).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name.clone();
        let caller = self.caller(&context);
        let observed = Observed::of_target("prompts/get", &name, self.use_cases.prompt_served_by(&name));
        // Boxed: rmcp spawns a task per request, and copies its future into
        // the task's cell; this keeps that copy a pointer's.
        let answer = Box::pin(async move { self.use_cases.get(request, &caller).await });
        self.observed(&context, observed, answer, |answer| match answer {
            GetPromptResponse::Complete(_) => metrics::OK,
            _ => metrics::INPUT_REQUIRED,
        })
        .await
    }

    async fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        let name = request.r#ref.as_prompt_name().unwrap_or_default().to_string();
        let observed = Observed::of_target("completion/complete", &name, self.use_cases.prompt_served_by(&name));
        let answer = Box::pin(self.use_cases.complete(request));
        self.observed(&context, observed, answer, |_| metrics::OK).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.start_notifying(context.peer);
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
        let filter = if self.use_cases.carried_content() != ServedContent::None { filter.resources_list_changed() } else { filter };
        Some(filter.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let changes = self.use_cases.changes();
        let sink = context.sink();
        // Only the kinds the subscription accepted: rmcp refuses another,
        // which would end the subscription. (`get_prompt`'s input schema
        // names the prompts: with prompts as tools, the tools changed too.)
        let accepted = sink.accepted();
        let prompts = accepted.prompts_list_changed == Some(true);
        let told = Told {
            tools: self.prompts_as_tools && accepted.tools_list_changed == Some(true),
            resources: self.use_cases.carried_content() != ServedContent::None && accepted.resources_list_changed == Some(true),
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
        Ok(ListToolsResult::with_all_items(self.use_cases.tools().as_ref().clone()))
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
        self.content_list(&context, "resources/list", request, |content, cursor, page_size| content.list_resources(cursor, page_size)).await
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
        let result =
            self.content_read(&context, "resources/read", &request.uri, NotServed::Resource, |content, uri| content.read(uri)).await?;
        let result = self.cached(&context, result);
        Ok(ReadResourceResponse::Complete(result))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.skills_declared::<ListSkillsRequestMethod>(&context)?;
        self.content_list(&context, "skills/list", request, |content, cursor, page_size| content.list_skills(cursor, page_size)).await
    }

    async fn get_skill(&self, request: GetSkillRequestParams, context: RequestContext<RoleServer>) -> Result<GetSkillResult, ErrorData> {
        self.skills_declared::<GetSkillRequestMethod>(&context)?;
        let result =
            self.content_read(&context, "skills/get", &request.uri, NotServed::Skill, |content, uri| content.get_skill(uri)).await?;
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
        let result =
            self.content_read(&context, method, &request.uri, NotServed::Directory, |content, uri| content.read_directory(uri)).await?;
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
            None => self.use_cases.carried_content(),
        }
    }

    /// What content the request in `context` was told of: a 2026-07-28
    /// request's is what the packs carry now (it has no session, even over
    /// stdio after an earlier `initialize`); any other's, its session's.
    fn serves_content_to(&self, context: &RequestContext<RoleServer>) -> ServedContent {
        match is_2026_07_28_or_later(context) {
            true => self.use_cases.carried_content(),
            false => self.serves_content(),
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

    /// Answers a page of a content list (`method`) from the content being
    /// served with `list`, given the request's cursor and the page size;
    /// observed as `prompts/list` is.
    async fn content_list<T: CachingHints>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        request: Option<PaginatedRequestParams>,
        list: impl FnOnce(&ContentIndex, Option<&str>, usize) -> Result<T, crate::cursor::CursorError>,
    ) -> Result<T, ErrorData> {
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        let listed = async { self.use_cases.list_content(cursor, list).map(|result| self.cached(context, result)) };
        self.observed(context, Observed::list(method), listed, |_| metrics::OK).await
    }

    /// Answers a read of `uri` (`method`) from the content being served with
    /// `read`, which refuses it as `not_served`; observed as the prompts'
    /// requests are, naming the URI.
    async fn content_read<T>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        uri: &str,
        not_served: NotServed,
        read: impl FnOnce(&ContentIndex, &str) -> Result<T, NotServed>,
    ) -> Result<T, ErrorData> {
        let content = self.use_cases.content_read();
        let observed = Observed::of_target(method, uri, content.served_by(uri, not_served));
        let answer = async { content.read(method, uri, not_served, read) };
        self.observed(context, observed, answer, |_| metrics::OK).await
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
fn notify_list_changes(changes: tokio::sync::watch::Receiver<Changes>, peer: Peer<RoleServer>, ended: CancellationToken, told: Told) {
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
    /// Set once the session's list_changed notifier runs: it is started at
    /// `initialize` and at `notifications/initialized`, whichever comes
    /// (see `start_notifying`), and only once.
    notifying: std::sync::OnceLock<()>,
}

impl SessionEnd {
    fn new() -> SessionEnd {
        let ended = CancellationToken::new();
        SessionEnd {
            _cancel_on_drop: ended.clone().drop_guard(),
            ended,
            declared: std::sync::OnceLock::new(),
            notifying: std::sync::OnceLock::new(),
        }
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
