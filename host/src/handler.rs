//! The MCP handler: one rmcp [`ServerHandler`] whose methods each take a
//! registry snapshot and delegate, to the catalog for listing and to the
//! owning plugin for prompts and completions.

use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CustomRequest, CustomResult, ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, InitializeResult, ListPromptsResult, PaginatedRequestParams, Reference,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
#[allow(deprecated, reason = "logging/setLevel is deprecated from 2026-07-28; earlier clients still send it")]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{Peer, RoleServer, ServerHandler};

use crate::bindings::provider;
use crate::convert;
use crate::limits::Limits;
use crate::error::{self, RequestError};
use crate::registry::Registry;

/// Serves the registry's prompts over MCP.
#[derive(Clone)]
pub struct PromptServer {
    registry: Arc<Registry>,
    page_size: usize,
}

impl PromptServer {
    pub fn new(registry: Arc<Registry>, page_size: usize) -> PromptServer {
        PromptServer { registry, page_size: page_size.max(1) }
    }

    fn list(&self, request: Option<PaginatedRequestParams>) -> Result<ListPromptsResult, RequestError> {
        let snapshot = self.registry.snapshot();
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        let page = snapshot.catalog().page(cursor, self.page_size)?;
        let mut result = ListPromptsResult::with_all_items(page.prompts.iter().map(|entry| entry.prompt.clone()).collect());
        result.next_cursor = page.next_cursor;
        Ok(result)
    }

    /// Answers a `prompts/get`: resolves the name, checks the arguments, and
    /// runs the owning plugin.
    pub async fn get_prompt_result(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, RequestError> {
        let snapshot = self.registry.snapshot();
        let (entry, plugin) = snapshot
            .resolve(&request.name)
            .ok_or_else(|| RequestError::UnknownPrompt(request.name.clone()))?;
        let arguments = convert::arguments(request.arguments.as_ref()).map_err(|problem| {
            RequestError::NonStringArgument { prompt: request.name.clone(), problem }
        })?;
        check_argument_size(&request.name, &arguments, plugin.limits())?;
        let missing: Vec<String> = entry
            .required_arguments()
            .filter(|required| !arguments.iter().any(|argument| argument.name == *required))
            .map(str::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(RequestError::MissingArguments { prompt: request.name, missing });
        }
        let reply = plugin.get_prompt(&entry.declared_name, &arguments).await?;
        Ok(convert::reply(reply))
    }

    async fn complete(&self, request: CompleteRequestParams) -> Result<CompleteResult, RequestError> {
        let Reference::Prompt(reference) = &request.r#ref else {
            return Err(RequestError::UnsupportedReference);
        };
        let snapshot = self.registry.snapshot();
        let (entry, plugin) = snapshot
            .resolve(&reference.name)
            .ok_or_else(|| RequestError::UnknownPrompt(reference.name.clone()))?;
        let context = convert::completion_context(
            request.context.as_ref().and_then(|context| context.arguments.as_ref()).into_iter().flatten(),
        );
        let argument = &request.argument;
        let typed = provider::Argument { name: argument.name.clone(), value: argument.value.clone() };
        check_argument_size(&reference.name, context.iter().chain([&typed]), plugin.limits())?;
        let completion = plugin.complete(&entry.declared_name, &argument.name, &argument.value, &context).await?;
        Ok(CompleteResult::new(convert::completion(completion)))
    }
}

impl ServerHandler for PromptServer {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated, reason = "logging is deprecated from 2026-07-28, but clients of earlier revisions set its level")]
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .build();
        InitializeResult::new(capabilities)
            .with_server_info(
                Implementation::new("prompt-host", env!("CARGO_PKG_VERSION"))
                    .with_title("prompt-host")
                    .with_description("Serves prompts from sandboxed WebAssembly prompt packs"),
            )
            .with_instructions("This server offers prompts. List them with prompts/list and fetch one with prompts/get.")
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(self.list(request)?)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name.clone();
        let result = self.get_prompt_result(request).await;
        result.map(GetPromptResponse::Complete).map_err(|error| log_failure("prompts/get", &name, error))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let name = request.r#ref.as_prompt_name().unwrap_or_default().to_string();
        self.complete(request).await.map_err(|error| log_failure("completion/complete", &name, error))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        notify_list_changes(&self.registry, context.peer);
    }

    /// Accepted so that clients may set it; this server sends no log
    /// messages to clients (its log goes to stderr).
    #[allow(deprecated, reason = "logging/setLevel is deprecated from 2026-07-28; earlier clients still send it")]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(level = ?request.level, "client set its log level");
        Ok(())
    }

    /// Protocol 2026-07-28 has no sessions: clients listen for prompt list
    /// changes with `subscriptions/listen`.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().prompts_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let changes = self.registry.subscribe();
        forward_list_changes(changes, context.cancelled(), || context.sink().notify_prompt_list_changed()).await;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(error::unparsed_request(&request.method, request.params).into())
    }
}

/// Sends a session's client `notifications/prompts/list_changed` after
/// each effective change of the catalog, from its `initialized` on, until the
/// client goes away.
fn notify_list_changes(registry: &Registry, peer: Peer<RoleServer>) {
    let changes = registry.subscribe();
    tokio::spawn(async move {
        let closed = async {
            let mut check_closed = tokio::time::interval(CLOSED_CHECK);
            while !peer.is_transport_closed() {
                check_closed.tick().await;
            }
        };
        forward_list_changes(changes, closed, || peer.notify_prompt_list_changed()).await;
    });
}

/// Calls `notify` once per change of the catalog until `stop` completes or a
/// notification cannot be sent. Changes that come while a notification is
/// being sent are coalesced into one more.
async fn forward_list_changes<E, Sent>(
    mut changes: tokio::sync::watch::Receiver<u64>,
    stop: impl Future<Output = ()>,
    notify: impl Fn() -> Sent,
) where
    Sent: Future<Output = Result<(), E>>,
{
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            changed = changes.changed() => {
                if changed.is_err() || notify().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// How often a notifier checks whether its client is gone.
const CLOSED_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Refuses arguments larger in all than the owning plugin accepts.
fn check_argument_size<'a>(
    prompt: &str,
    arguments: impl IntoIterator<Item = &'a provider::Argument>,
    limits: &Limits,
) -> Result<(), RequestError> {
    let bytes: usize = arguments.into_iter().map(|argument| argument.name.len() + argument.value.len()).sum();
    if bytes > limits.max_argument_bytes {
        return Err(RequestError::ArgumentsTooLarge { prompt: prompt.to_string(), bytes, limit: limits.max_argument_bytes });
    }
    Ok(())
}

/// Logs a plugin's failure for the operator (the client gets the error too),
/// and converts the error for the wire.
fn log_failure(method: &str, prompt: &str, error: RequestError) -> ErrorData {
    if let RequestError::Plugin(plugin_error) = &error {
        tracing::warn!(method, prompt, plugin = plugin_error.plugin(), "{plugin_error}");
    }
    error.into()
}
