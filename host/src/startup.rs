//! Start-up: from a configuration to a registry of loaded plugins.

use std::sync::Arc;

use crate::bundled;
use crate::config::ServeConfig;
use crate::loader::{self, PluginSource};
use crate::registry::Registry;
use crate::sandbox::{PrepareError, Sandbox};

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot read the plugin directory {path}: {error}")]
    PluginDir { path: String, error: std::io::Error },
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(#[from] PrepareError),
}

/// Loads every plugin the configuration names. A plugin that fails to load is
/// logged with its file and the reason, and the others are served.
pub async fn load_registry(config: &ServeConfig) -> Result<Arc<Registry>, StartupError> {
    let sandbox = Arc::new(Sandbox::new(config.sandbox.clone())?);
    let (sources, read_failures) = match &config.plugins_dir {
        None => (bundled::sources(), Vec::new()),
        Some(dir) => {
            let files = loader::plugin_files(dir)
                .map_err(|error| StartupError::PluginDir { path: dir.display().to_string(), error })?;
            let (mut sources, mut failures) = (Vec::new(), Vec::new());
            for file in files {
                match PluginSource::read(&file) {
                    Ok(source) => sources.push(source),
                    Err(failure) => failures.push(failure),
                }
            }
            (sources, failures)
        }
    };
    let (plugins, load_failures) = loader::load_all(&sandbox, sources, |id| config.plugin_settings(id)).await;
    for failure in read_failures.iter().chain(&load_failures) {
        tracing::error!(file = %failure.origin, "plugin not loaded: {failure}");
    }
    for plugin in &plugins {
        tracing::info!(
            plugin = plugin.id(),
            prompts = plugin.prompts().len(),
            sha256 = &plugin.digest()[..12],
            "plugin loaded"
        );
    }
    if plugins.is_empty() {
        tracing::warn!("no plugin loaded: the server has no prompts to offer");
    }
    Ok(Arc::new(Registry::new(plugins)))
}
