//! Start-up: from a configuration to a registry of loaded plugins, and the
//! watcher that keeps a plugin directory live.

use std::path::Path;
use std::sync::Arc;

use crate::bundled;
use crate::config::ServeConfig;
use crate::loader::{self, LoadError, LoadFailure, Loader, PluginSettings, PluginSource};
use crate::registry::Registry;
use crate::watch::{self, ConfigSource, PluginDirectory, Served};
use prompt_host_kernel::cache::CompiledCache;
use prompt_host_kernel::sandbox::{CallObserver, CallUsage, PrepareError, Sandbox};

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
/// with its file and the reason, and the others are served. One line then
/// says what is served (a warning, saying why, when nothing is). On SIGHUP,
/// `config_source` (if any) gives the configuration to serve with from then on.
pub async fn start(config: &ServeConfig, config_source: Option<ConfigSource>) -> Result<Host, StartupError> {
    let host = load(config, config_source).await?;
    crate::metrics::initial_load_finished();
    Ok(host)
}

/// What each call into a pack used, recorded in the metrics and on the
/// call's trace span: the server's side of the kernel's [`CallObserver`].
struct Telemetry;

impl CallObserver for Telemetry {
    fn call_finished(&self, plugin: &str, usage: &CallUsage) {
        crate::metrics::call_usage(plugin, usage);
        crate::traces::call_usage(usage);
        crate::access_log::call_fuel(usage.fuel);
    }

    fn spare_failed(&self, plugin: &str) {
        crate::metrics::spare_failed(plugin);
    }
}

/// [`start`], without saying the initial load finished.
async fn load(config: &ServeConfig, config_source: Option<ConfigSource>) -> Result<Host, StartupError> {
    let sandbox = Arc::new(Sandbox::new(config.sandbox_config())?.observed_by(Arc::new(Telemetry)));
    let cache = compiled_cache(config, &sandbox);
    let loader = Arc::new(Loader::new(sandbox, cache));
    let registry = Arc::new(Registry::new(Vec::new()));

    let Some(dir) = &config.plugins_dir else {
        let sources = bundled::sources();
        let names: Vec<String> = sources.iter().map(|source| source.id.clone()).collect();
        let (plugins, failures) = loader.load_all(sources, |id| config.plugin_settings(id)).await;
        for failure in &failures {
            tracing::error!("bundled pack not loaded: {failure}");
        }
        for unmatched in config.unmatched_plugins(&names) {
            tracing::warn!("{unmatched}");
        }
        let loaded = plugins.len();
        let plugins: Vec<Arc<prompt_host_kernel::plugin::Plugin>> = plugins.into_iter().map(Arc::new).collect();
        registry.publish(plugins.clone());
        for plugin in &plugins {
            crate::metrics::plugin_loaded(
                plugin.id(),
                &crate::catalog::served_names(plugin),
                plugin.info().map(|info| info.version.as_str()),
                plugin.digest(),
            );
        }
        Served::now(&registry, names.len(), loaded).log(None);
        return Ok(Host { registry, watcher: None });
    };

    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
    let directory = Arc::new(PluginDirectory::new(&dir, loader, Arc::new(config.clone()), registry.clone()));
    let unreadable = |error| StartupError::PluginDir { path: dir.display().to_string(), error };
    loader::plugin_files(&dir).map_err(unreadable)?;
    watch::refuse_unmatched_when_pinned(config, &dir).map_err(StartupError::Config)?;
    let rescan = directory.rescan(false).await.map_err(unreadable)?;
    rescan.served.log(Some(&dir));
    Ok(Host { registry, watcher: Some(directory.keep_live(config_source)) })
}

/// Starts each tenant of `config` as a host of its own: its plugin
/// directory loaded and watched, in a sandbox of its own (a tenant's calls
/// never take another's slots). `config_source(NAME)` gives the tenant's
/// configuration on SIGHUP. A tenant whose directory cannot be read fails
/// the start, naming it. The server is ready once every tenant is loaded.
pub async fn start_tenants(
    config: &ServeConfig,
    config_source: impl Fn(&str) -> Option<ConfigSource>,
) -> Result<std::collections::BTreeMap<String, Host>, StartupError> {
    let mut hosts = std::collections::BTreeMap::new();
    for (name, dir) in &config.tenants {
        let host = load(&config.for_tenant(name, dir), config_source(name)).await.map_err(|error| match error {
            StartupError::PluginDir { path, error } => StartupError::PluginDir { path: format!("{path} (tenant {name})"), error },
            other => other,
        })?;
        hosts.insert(name.clone(), host);
    }
    crate::metrics::initial_load_finished();
    Ok(hosts)
}

/// The compiled cache `config` names, opened for `sandbox`'s engine: `None`
/// when the configuration has none, or when it cannot be used (a warning
/// says why; the cache only saves time). `serve`, `inspect`, `get` and
/// `complete` all open it here, so that they share it.
pub fn compiled_cache(config: &ServeConfig, sandbox: &Sandbox) -> Option<CompiledCache> {
    let dir = config.cache_dir.as_ref()?;
    match CompiledCache::open(dir, sandbox.engine(), config.cache_max_bytes) {
        Ok(cache) => Some(cache),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), "compiled cache disabled: {error}");
            None
        }
    }
}

/// Loads the plugin file `path` as the server configured by `config` would
/// (its settings, the compiled cache), into a registry of that one plugin:
/// for `prompt-host get` and `complete`, a prompt served without a client.
pub async fn load_one(path: &Path, config: &ServeConfig) -> Result<Arc<Registry>, LoadFailure> {
    let source = PluginSource::read_off_runtime(path, config.registry.max_pack_bytes).await?;
    let settings = config.plugin_settings(&source.id);
    let plugin = loader_for_one(&source, &settings, config)?.load(source, settings).await?;
    Ok(Arc::new(Registry::new(vec![Arc::new(plugin)])))
}

/// A loader for the one plugin `source`: a sandbox with memory slots large
/// enough for its limit, and the compiled cache `config` names. A sandbox
/// that cannot start fails the plugin's load.
pub fn loader_for_one(source: &PluginSource, settings: &PluginSettings, config: &ServeConfig) -> Result<Loader, LoadFailure> {
    let sandbox = Sandbox::new(config.sandbox_config().fitting(&settings.limits))
        .map_err(|error| LoadFailure { origin: source.origin.clone(), error: LoadError::Link(error.to_string()) })?
        .observed_by(Arc::new(Telemetry));
    let cache = compiled_cache(config, &sandbox);
    Ok(Loader::new(Arc::new(sandbox), cache))
}
