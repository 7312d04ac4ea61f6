//! The use cases: what the host does for a request, whichever transport
//! carried it. Listing the prompts, getting one (with the rounds of input
//! it asks for), completing an argument, serving a pack's skills and
//! resources, and the tools that stand for the prompts: each is a plain
//! method of [`UseCases`], given the one typed [`Caller`] its transport
//! builds, and answering in MCP's message types or a [`RequestError`].
//!
//! This layer knows neither rmcp's service (its handler, request contexts,
//! peers) nor hyper: the MCP handler (`handler`) is the thin adapter from
//! one to the other, and the request's telemetry is one wrapper there.
//! `tests/crate-boundaries` fails if a path of either reaches this module.
//! What each call into a pack cost, and how each use case ended, it
//! records itself (`metrics`, `traces`), as only it sees the calls.

mod caller;
mod get;

use std::sync::{Arc, Mutex};

use rmcp::model::{CompleteRequestParams, CompleteResult, ListPromptsResult, Reference, Tool};

use crate::convert;
use crate::cursor::CursorError;
use crate::error::{self, RequestError};
use crate::input::{ElicitationLimits, PendingElicitations, RequestStateSeal};
use crate::metrics;
use crate::prompt_tools;
use crate::registry::{Changes, Registry, Snapshot};
use crate::served_content::{ContentIndex, NotServed};
use crate::traces;
use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model;
use prompt_host_kernel::plugin::{Plugin, PluginError};

pub use caller::{Answerer, Asking, Caller, StreamPlace};

/// The use cases over one registry of packs.
#[derive(Clone)]
pub struct UseCases {
    registry: Arc<Registry>,
    page_size: usize,
    seal: RequestStateSeal,
    elicitations: PendingElicitations,
    /// The two tools of prompts as tools, built once per catalog version
    /// (their schemas name the prompts), shared by every session.
    tools: Arc<Mutex<Option<BuiltTools>>>,
}

/// The tools of prompts as tools, and the catalog version they were built for.
type BuiltTools = (String, Arc<Vec<Tool>>);

/// What content the packs carry, which decides what a server declares:
/// none, resources only (static resources of 0.4 packs), or resources and
/// the skills extension. (Serialized: a session's id carries what its
/// client was told, `transport::http::session_ids`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServedContent {
    None,
    Resources,
    WithSkills,
}

impl UseCases {
    /// The use cases over `registry`, listing `page_size` entries a page,
    /// with a random request-state key of this process and the default
    /// limits on pending elicitations.
    pub fn new(registry: Arc<Registry>, page_size: usize) -> UseCases {
        UseCases {
            registry,
            page_size: page_size.max(1),
            seal: RequestStateSeal::random(),
            elicitations: PendingElicitations::new(ElicitationLimits::default()),
            tools: Arc::default(),
        }
    }

    /// Sealing the `requestState` of input-required prompts with `seal`.
    pub fn with_request_state_seal(self, seal: RequestStateSeal) -> UseCases {
        UseCases { seal, ..self }
    }

    /// Counting the elicitations waiting for answers in `elicitations`.
    pub fn with_pending_elicitations(self, elicitations: PendingElicitations) -> UseCases {
        UseCases { elicitations, ..self }
    }

    /// The registry's changes, for the notifications of list changes.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<Changes> {
        self.registry.subscribe()
    }

    /// A page of `prompts/list`, from `cursor`.
    pub fn list(&self, cursor: Option<&str>) -> Result<ListPromptsResult, RequestError> {
        let snapshot = self.registry.snapshot();
        let page = snapshot.catalog().page(cursor, self.page_size)?;
        let mut result = ListPromptsResult::with_all_items(page.prompts.iter().map(|entry| entry.listed()).collect());
        result.next_cursor = page.next_cursor;
        Ok(result)
    }

    /// The names of the prompts served, in catalog order.
    pub fn prompt_names(&self) -> Vec<String> {
        self.registry.snapshot().catalog().entries().iter().map(|entry| entry.prompt.name.clone()).collect()
    }

    /// The names of the arguments the prompt served under `name` declares.
    pub fn declared_arguments(&self, name: &str) -> Option<Vec<String>> {
        let snapshot = self.registry.snapshot();
        let entry = snapshot.catalog().resolve(name)?;
        Some(entry.prompt.arguments.iter().flatten().map(|argument| argument.name.clone()).collect())
    }

    /// The plugin serving the prompt `name`, if one does.
    pub fn prompt_served_by(&self, name: &str) -> Option<String> {
        self.registry.snapshot().resolve(name).map(|(_, plugin)| plugin.id().to_string())
    }

    /// Answers a `completion/complete`: resolves the prompt, checks the
    /// arguments' size, and runs the owning plugin.
    pub async fn complete(&self, request: CompleteRequestParams) -> Result<CompleteResult, RequestError> {
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

    /// The two tools of prompts as tools, for the catalog being served.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        let snapshot = self.registry.snapshot();
        let version = snapshot.catalog().version();
        let mut cached = self.tools.lock().expect("never poisoned");
        match cached.as_ref() {
            Some((built_for, tools)) if built_for == version => tools.clone(),
            _ => cached.insert((version.to_string(), Arc::new(prompt_tools::tools(&snapshot)))).1.clone(),
        }
    }

    /// What content the packs being served carry now.
    pub fn carried_content(&self) -> ServedContent {
        let snapshot = self.registry.snapshot();
        let content = snapshot.content();
        match (content.is_empty(), content.has_skills()) {
            (true, _) => ServedContent::None,
            (false, false) => ServedContent::Resources,
            (false, true) => ServedContent::WithSkills,
        }
    }

    /// A page of a content list, from the content being served with
    /// `list`, given the request's cursor and the page size.
    pub fn list_content<T>(
        &self,
        cursor: Option<&str>,
        list: impl FnOnce(&ContentIndex, Option<&str>, usize) -> Result<T, CursorError>,
    ) -> Result<T, RequestError> {
        Ok(list(self.registry.snapshot().content(), cursor, self.page_size)?)
    }

    /// A read of what the packs being served carry, on one snapshot of
    /// them: who serves a URI, and what is read there, agree.
    pub fn content_read(&self) -> ContentRead {
        ContentRead { snapshot: self.registry.snapshot() }
    }
}

/// What the packs carry, as one snapshot serves it ([`UseCases::content_read`]).
pub struct ContentRead {
    snapshot: Arc<Snapshot>,
}

impl ContentRead {
    /// The plugin serving what a read of `uri` reads (a skill, a resource or
    /// a folder, as `not_served` says), if one does.
    pub fn served_by(&self, uri: &str, not_served: NotServed) -> Option<String> {
        let content = self.snapshot.content();
        match not_served {
            NotServed::Directory => content.folder_served_by(uri).map(|plugin| plugin.to_string()),
            NotServed::Skill => content.skill(uri).map(|skill| skill.served_by.to_string()),
            NotServed::Resource => content.served_by(uri).map(|plugin| plugin.to_string()),
        }
    }

    /// A read of `uri` (`method`) with `read`, which refuses it as
    /// `not_served`; counted by the plugin serving it.
    pub fn read<T>(
        &self,
        method: &'static str,
        uri: &str,
        not_served: NotServed,
        read: impl FnOnce(&ContentIndex, &str) -> Result<T, NotServed>,
    ) -> Result<T, RequestError> {
        let result = read(self.snapshot.content(), uri).map_err(|what| RequestError::not_served(uri, what));
        let outcome = if result.is_ok() { metrics::OK } else { "not-found" };
        metrics::content_read(self.served_by(uri, not_served).as_deref(), method, outcome);
        result
    }
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
