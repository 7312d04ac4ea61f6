//! Start-up: from a configuration to a registry of loaded plugins, and the
//! watcher that keeps a plugin directory live.

use std::path::Path;
use std::sync::Arc;

use crate::bundled;
use crate::cache::CompiledCache;
use crate::config::ServeConfig;
use crate::loader::{self, LoadError, LoadFailure, Loader, PluginSettings, PluginSource};
use crate::registry::Registry;
use crate::sandbox::{PrepareError, Sandbox, SandboxConfig};
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

/// Loads the plugin file `path` as the server would, with `settings`, into a
/// registry of that one plugin (for `prompt-host get`: a prompt served
/// without a client), without the compiled cache.
pub async fn load_one(
    path: &Path,
    settings: PluginSettings,
    sandbox_config: SandboxConfig,
) -> Result<Arc<Registry>, LoadFailure> {
    let source = PluginSource::read(path)?;
    let sandbox = sandbox_for_one(&source, &settings, sandbox_config)?;
    let plugin = Loader::new(sandbox, None).load(source, settings).await?;
    Ok(Arc::new(Registry::new(vec![Arc::new(plugin)])))
}

/// A sandbox for the one plugin `source`, with memory slots large enough for
/// its limit. A sandbox that cannot start fails the plugin's load.
pub fn sandbox_for_one(
    source: &PluginSource,
    settings: &PluginSettings,
    config: SandboxConfig,
) -> Result<Arc<Sandbox>, LoadFailure> {
    let sandbox = Sandbox::new(config.fitting(&settings.limits)).map_err(|error| LoadFailure {
        origin: source.origin.clone(),
        error: LoadError::Link(error.to_string()),
    })?;
    Ok(Arc::new(sandbox))
}
