//! Start-up: from a configuration to a registry of loaded plugins, and the
//! watcher that keeps a plugin directory live.

use std::sync::Arc;

use crate::bundled;
use crate::cache::CompiledCache;
use crate::config::ServeConfig;
use crate::loader::{self, Loader};
use crate::registry::Registry;
use crate::sandbox::{PrepareError, Sandbox};
use crate::watch::{self, ConfigSource, PluginDirectory};

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot read the plugin directory {path}: {error}")]
    PluginDir { path: String, error: std::io::Error },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(#[from] PrepareError),
}

/// A host ready to serve: the registry, and the watcher keeping it in line
/// with the plugin directory, if there is one to watch.
pub struct Host {
    pub registry: Arc<Registry>,
    pub watcher: Option<tokio::task::JoinHandle<()>>,
}

/// Loads every plugin the configuration names, and watches the plugin
/// directory if the configuration asks. A plugin that fails to load is logged
/// with its file and the reason, and the others are served. On SIGHUP,
/// `config_source` (if any) gives the configuration to serve with from then on.
pub async fn start(config: &ServeConfig, config_source: Option<ConfigSource>) -> Result<Host, StartupError> {
    let sandbox = Arc::new(Sandbox::new(config.sandbox_config())?);
    let cache = config.cache_dir.as_ref().and_then(|dir| match CompiledCache::open(dir, sandbox.engine(), config.cache_max_bytes) {
        Ok(cache) => Some(cache),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), "compiled cache disabled: {error}");
            None
        }
    });
    let loader = Arc::new(Loader::new(sandbox, cache));
    let registry = Arc::new(Registry::new(Vec::new()));

    let Some(dir) = &config.plugins_dir else {
        let (plugins, failures) = loader.load_all(bundled::sources(), |id| config.plugin_settings(id)).await;
        for failure in failures {
            tracing::error!("bundled pack not loaded: {failure}");
        }
        registry.publish(plugins.into_iter().map(Arc::new).collect());
        return Ok(Host { registry, watcher: None });
    };

    let directory = Arc::new(PluginDirectory::new(dir, loader, Arc::new(config.clone()), registry.clone()));
    let unreadable = |error| StartupError::PluginDir { path: dir.display().to_string(), error };
    loader::plugin_files(dir).map_err(unreadable)?;
    watch::refuse_unmatched_when_pinned(config, dir).map_err(StartupError::Config)?;
    directory.rescan(false).await.map_err(unreadable)?;
    Ok(Host { registry, watcher: Some(directory.keep_live(config_source)) })
}
