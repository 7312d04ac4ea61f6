//! `prompt-host inspect` and `prompt-host get`: one plugin file, loaded as
//! the server would load it, outside a server.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::served_name;
use crate::convert;
use crate::loader::{self, LoadFailure, Loader, PluginSettings, PluginSource};
use crate::sandbox::{Sandbox, SandboxConfig};

/// What a valid plugin offers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub plugin: String,
    pub file: String,
    pub sha256: String,
    pub size_bytes: usize,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    pub limits: LimitsReport,
    /// The prompts, as `prompts/list` would serve them.
    pub prompts: Vec<rmcp::model::Prompt>,
}

/// The limits a plugin's calls run under.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsReport {
    pub fuel: u64,
    pub deadline_ms: u64,
    pub memory_bytes: usize,
    pub max_wasm_stack_bytes: usize,
    pub max_prompts: usize,
}

/// Loads `path` as the server would, with `settings`, and reports on it.
pub async fn inspect(path: &Path, settings: PluginSettings, sandbox_config: SandboxConfig) -> Result<Report, LoadFailure> {
    let source = PluginSource::read(path)?;
    let max_wasm_stack = sandbox_config.max_wasm_stack;
    let sandbox = sandbox_for(&source, &settings, sandbox_config)?;
    let loader = Loader::new(sandbox.clone(), None);
    let fail = |error| LoadFailure { origin: source.origin.clone(), error };
    let digest = loader::digest(&source.bytes);
    let (component, _) = loader.compile(&source.bytes, &digest).await.map_err(fail)?;
    let (imports, exports) = (loader::import_names(&sandbox, &component), loader::export_names(&sandbox, &component));
    let limits = LimitsReport {
        fuel: settings.limits.fuel,
        deadline_ms: settings.limits.deadline.as_millis() as u64,
        memory_bytes: settings.limits.memory_bytes,
        max_wasm_stack_bytes: max_wasm_stack,
        max_prompts: settings.limits.max_prompts,
    };
    let (file, size_bytes) = (source.origin.clone(), source.bytes.len());
    let plugin = loader.load_compiled(source.clone(), digest, &component, settings).await.map_err(fail)?;
    Ok(Report {
        plugin: plugin.id().to_string(),
        file,
        sha256: plugin.digest().to_string(),
        size_bytes,
        imports,
        exports,
        limits,
        prompts: plugin
            .prompts()
            .iter()
            .map(|prompt| convert::prompt(prompt, &served_name(plugin.prefix(), &prompt.name)))
            .collect(),
    })
}

/// Loads `path` as the server would, for `prompt-host get`: a registry of
/// that one plugin behind a prompt server, to call without a client.
pub async fn serve_one(
    path: &Path,
    settings: PluginSettings,
    sandbox_config: SandboxConfig,
) -> Result<crate::handler::PromptServer, LoadFailure> {
    let source = PluginSource::read(path)?;
    let sandbox = sandbox_for(&source, &settings, sandbox_config)?;
    let plugin = Loader::new(sandbox, None).load(source, settings).await?;
    let registry = crate::registry::Registry::new(vec![Arc::new(plugin)]);
    Ok(crate::handler::PromptServer::new(Arc::new(registry), crate::handler::DEFAULT_PAGE_SIZE))
}

/// A sandbox for one plugin, with memory slots large enough for its limit.
fn sandbox_for(
    source: &PluginSource,
    settings: &PluginSettings,
    config: SandboxConfig,
) -> Result<Arc<Sandbox>, LoadFailure> {
    let config = SandboxConfig { max_memory_bytes: config.max_memory_bytes.max(settings.limits.memory_bytes), ..config };
    let sandbox = Sandbox::new(config).map_err(|error| LoadFailure {
        origin: source.origin.clone(),
        error: loader::LoadError::Link(error.to_string()),
    })?;
    Ok(Arc::new(sandbox))
}
