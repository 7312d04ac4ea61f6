//! A loaded plugin: its identity, its validated prompt definitions, and calls
//! into it, each in a fresh sandboxed instance (made ahead of the call when
//! it can be: [`crate::sandbox::spares`]).

use std::sync::Arc;

use crate::arguments::PromptArguments;
use crate::bindings::{Linked, WitVersion};
use crate::grants::GrantedAccess;
use crate::limits::Limits;
use crate::model::{self, PromptAnswer};
use crate::sandbox::spares::PackInstances;
use crate::sandbox::{CallFailure, CallQuota, CallState, Sandbox};
use crate::validate::{self, Answer, CheckedListing, Content};

/// A prompt pack, loaded, validated and ready to call.
pub struct Plugin {
    id: String,
    digest: String,
    prefix: String,
    skill_prefix: String,
    prompts: Vec<model::Prompt>,
    /// The typed arguments of each prompt, in the order of `prompts` (0.3
    /// packs); empty otherwise.
    typed: Vec<Arc<PromptArguments>>,
    /// Its fresh instances: how they are made, under its limits and in its
    /// share of the sandbox.
    instances: Arc<PackInstances>,
    /// What the pack says it is (0.2 packs), validated.
    info: Option<model::PackInfo>,
    /// The skills and static resources it carries (0.4 packs), checked.
    content: Arc<Content>,
}

/// Why a call into a plugin did not produce a usable answer. Every message
/// names the plugin.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PluginError {
    /// The call did not run to an answer: the sandbox refused it (busy) or
    /// the plugin broke a limit, trapped or panicked.
    #[error("plugin '{plugin}' {failure}")]
    Failed {
        /// The plugin's name.
        plugin: String,
        /// What went wrong, with any message the pack wrote cut and escaped.
        failure: CallFailure,
    },
    /// The plugin answered `invalid-arguments`.
    #[error("plugin '{plugin}' rejected the arguments of prompt '{prompt}': {message}")]
    InvalidArguments {
        /// The plugin's name.
        plugin: String,
        /// The prompt, by the name the plugin declared.
        prompt: String,
        /// The plugin's message, cut and escaped.
        message: String,
    },
    /// The plugin answered `internal`.
    #[error("plugin '{plugin}' failed on prompt '{prompt}': {message}")]
    Internal {
        /// The plugin's name.
        plugin: String,
        /// The prompt, by the name the plugin declared.
        prompt: String,
        /// The plugin's message, cut and escaped.
        message: String,
    },
    /// The plugin answered `not-found` for a prompt it listed itself.
    #[error("plugin '{plugin}' does not know prompt '{prompt}', although it listed it")]
    Disowned {
        /// The plugin's name.
        plugin: String,
        /// The prompt, by the name the plugin declared.
        prompt: String,
    },
    /// The plugin's answer failed the checks of `validate`, or is larger on
    /// the wire than its reply limit.
    #[error("plugin '{plugin}' returned an invalid reply for prompt '{prompt}': {problem}")]
    InvalidReply {
        /// The plugin's name.
        plugin: String,
        /// The prompt, by the name the plugin declared.
        prompt: String,
        /// What is wrong with the answer, cut and escaped.
        problem: String,
    },
}

impl PluginError {
    /// The plugin the error is about.
    pub fn plugin(&self) -> &str {
        match self {
            PluginError::Failed { plugin, .. }
            | PluginError::InvalidArguments { plugin, .. }
            | PluginError::Internal { plugin, .. }
            | PluginError::Disowned { plugin, .. }
            | PluginError::InvalidReply { plugin, .. } => plugin,
        }
    }
}

impl Plugin {
    /// A plugin of prompts already listed and checked (the loader's work:
    /// [`validate::listing`]; this does not check them again), called
    /// through `pre` in `sandbox`, `quota` calls at a time, each seeing `access`.
    pub fn new(
        id: String,
        digest: String,
        prefix: String,
        skill_prefix: String,
        listing: CheckedListing,
        limits: Limits,
        quota: CallQuota,
        pre: Linked<CallState>,
        sandbox: Arc<Sandbox>,
        access: GrantedAccess,
    ) -> Plugin {
        let instances = PackInstances::new(sandbox, pre, limits, quota, id.clone(), access);
        let CheckedListing { prompts, typed, info, content } = listing;
        let typed = typed.into_iter().map(Arc::new).collect();
        Plugin { id, digest, prefix, skill_prefix, prompts, typed, instances, info, content: Arc::new(content) }
    }

    /// The typed arguments of each prompt, in the order of [`Plugin::prompts`]
    /// (0.3 packs); empty for a pack of an earlier version.
    pub fn typed(&self) -> &[Arc<PromptArguments>] {
        &self.typed
    }

    /// What the pack says it is: its name, version, authors... (0.2 packs).
    pub fn info(&self) -> Option<&model::PackInfo> {
        self.info.as_ref()
    }

    /// The skills and static resources the pack carries (0.4 packs), served
    /// from memory.
    pub fn content(&self) -> &Arc<Content> {
        &self.content
    }

    /// The plugin's name: its file name without `.wasm`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The SHA-256 of the plugin's bytes, in hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// What the operator asked to put before each of its prompt names.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The folder its skills are served under (`skill://<prefix>/...`),
    /// or empty: set by the operator where two packs' skills would collide.
    pub fn skill_prefix(&self) -> &str {
        &self.skill_prefix
    }

    /// The prompts the plugin declared, validated, in its order.
    pub fn prompts(&self) -> &[model::Prompt] {
        &self.prompts
    }

    /// The version of the WIT package the plugin targets.
    pub fn wit_version(&self) -> WitVersion {
        self.instances.pre().version()
    }

    /// The limits each call into this plugin runs under.
    pub fn limits(&self) -> &Limits {
        self.instances.limits()
    }

    /// What each call into this plugin sees of the machine: what its pack
    /// asked for and the operator granted.
    pub fn access(&self) -> &GrantedAccess {
        self.instances.access()
    }

    fn failed(&self, failure: CallFailure) -> PluginError {
        PluginError::Failed { plugin: self.id.clone(), failure: validate::call_failure(failure) }
    }

    /// Runs the plugin's `get-prompt` for its prompt `prompt` (the name it
    /// declared), with the answers to the forms it asked for, if any, and
    /// checks its answer.
    pub async fn get_prompt(
        &self,
        prompt: &str,
        arguments: &[model::Argument],
        input: Option<&model::Input>,
    ) -> Result<PromptAnswer, PluginError> {
        let budget = validate::copy_budget(Answer::Reply, self.limits());
        let mut instance = self.instances.fresh(budget).await.map_err(|f| self.failed(f))?;
        let answer = instance.get_prompt(prompt, arguments, input).await;
        self.instances.retire(instance);
        let answer = answer.map_err(|f| self.failed(f))?.map_err(|e| self.prompt_error(prompt, e))?;
        match &answer {
            PromptAnswer::Reply(reply) => validate::reply(reply, self.limits()),
            PromptAnswer::InputRequired(input) => validate::input_required(input, self.limits()),
        }
        .map_err(|problem| self.invalid_reply(prompt, problem))?;
        Ok(answer)
    }

    /// Runs the plugin's `complete` for an argument of its prompt `prompt`.
    pub async fn complete(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
        context: &[model::Argument],
    ) -> Result<model::Completion, PluginError> {
        let budget = validate::copy_budget(Answer::Completion, self.limits());
        let mut instance = self.instances.fresh(budget).await.map_err(|f| self.failed(f))?;
        let answer = instance.complete(prompt, argument, value, context).await;
        self.instances.retire(instance);
        let completion = answer.map_err(|f| self.failed(f))?.map_err(|e| self.prompt_error(prompt, e))?;
        validate::completion(&completion, self.limits()).map_err(|problem| self.invalid_reply(prompt, problem))?;
        Ok(completion)
    }

    /// `result`, this plugin's answer for its prompt `prompt` as the client
    /// will receive it, if it is within the reply limit on the wire
    /// ([`validate::wire_size`]); else the invalid-reply error naming the plugin.
    pub fn bounded_on_the_wire<T: serde::Serialize>(&self, prompt: &str, result: T) -> Result<T, PluginError> {
        validate::wire_size(&result, self.limits()).map_err(|problem| self.invalid_reply(prompt, problem))?;
        Ok(result)
    }

    fn invalid_reply(&self, prompt: &str, problem: String) -> PluginError {
        // The problem quotes what the pack returned: bounded and escaped as its own messages are.
        PluginError::InvalidReply { plugin: self.id.clone(), prompt: prompt.to_string(), problem: validate::error_message(problem) }
    }

    fn prompt_error(&self, prompt: &str, error: model::PromptError) -> PluginError {
        let (plugin, prompt) = (self.id.clone(), prompt.to_string());
        match error {
            model::PromptError::NotFound => PluginError::Disowned { plugin, prompt },
            model::PromptError::InvalidArguments(message) => {
                PluginError::InvalidArguments { plugin, prompt, message: validate::error_message(message) }
            }
            model::PromptError::Internal(message) => PluginError::Internal { plugin, prompt, message: validate::error_message(message) },
        }
    }
}
