//! The live plugin directory: rescans that add, replace and remove plugins
//! while the host serves, and the watcher that triggers them.
//!
//! A rescan compares every `*.wasm` file's SHA-256 with what is loaded. New
//! and changed files are loaded; a file that fails to load never replaces
//! the plugin already serving under its name (the last good version keeps
//! serving); a deleted file's plugin is removed. Then the registry gets the
//! new plugin set, and publishes it only if the catalog changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::{Mutex, mpsc};

use crate::config::ServeConfig;
use crate::loader::{self, Loader, PluginSource};
use crate::plugin::Plugin;
use crate::registry::Registry;

/// How long after a change the directory is rescanned: the events of a burst
/// (a copy in progress, a batch of files) within it give one rescan. A fixed
/// window rather than "wait for quiet", so that constant churn cannot
/// postpone rescans forever.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// A plugin directory being served.
pub struct PluginDirectory {
    dir: PathBuf,
    loader: Arc<Loader>,
    config: Arc<ServeConfig>,
    registry: Arc<Registry>,
    /// One rescan at a time.
    state: Mutex<Loaded>,
}

/// What a rescan knows of the files it has seen.
#[derive(Default)]
struct Loaded {
    /// The plugins serving, by name.
    plugins: BTreeMap<String, Arc<Plugin>>,
    /// The digest of the last bytes that failed to load, by name, so that
    /// the same bad file is reported once, not at every rescan.
    failed: HashMap<String, String>,
}

/// What one rescan changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rescan {
    pub added: Vec<String>,
    pub replaced: Vec<String>,
    pub removed: Vec<String>,
    pub failed: Vec<String>,
    /// Whether the served catalog changed.
    pub published: bool,
}

impl PluginDirectory {
    pub fn new(dir: &Path, loader: Arc<Loader>, config: Arc<ServeConfig>, registry: Arc<Registry>) -> PluginDirectory {
        PluginDirectory { dir: dir.to_path_buf(), loader, config, registry, state: Mutex::new(Loaded::default()) }
    }

    /// Brings the served plugins in line with the directory. Files that
    /// failed to load are tried again only if their bytes changed, or if
    /// `retry_failed` (an operator's SIGHUP).
    pub async fn rescan(&self, retry_failed: bool) -> std::io::Result<Rescan> {
        let mut loaded = self.state.lock().await;
        if retry_failed {
            loaded.failed.clear();
        }
        let files = loader::plugin_files(&self.dir)?;
        let mut rescan = Rescan::default();
        let mut present = Vec::new();
        let mut to_load = Vec::new();
        for file in files {
            let source = match PluginSource::read(&file) {
                Ok(source) => source,
                Err(failure) => {
                    // Vanished or unreadable mid-scan: keep what is serving.
                    tracing::warn!(file = %file.display(), "{failure}");
                    present.push(loader::plugin_id(&file));
                    continue;
                }
            };
            present.push(source.id.clone());
            let digest = loader::digest(&source.bytes);
            let unchanged = loaded.plugins.get(&source.id).is_some_and(|plugin| plugin.digest() == digest);
            let known_bad = loaded.failed.get(&source.id) == Some(&digest);
            if !unchanged && !known_bad {
                to_load.push((source, digest));
            }
        }

        let (sources, digests): (Vec<PluginSource>, Vec<String>) = to_load.into_iter().unzip();
        let ids_and_digests: HashMap<String, String> =
            sources.iter().map(|source| source.id.clone()).zip(digests).collect();
        let (plugins, failures) = self.loader.load_all(sources, |id| self.config.plugin_settings(id)).await;
        for plugin in plugins {
            let id = plugin.id().to_string();
            loaded.failed.remove(&id);
            let plugin = Arc::new(plugin);
            tracing::info!(
                plugin = %id,
                prompts = plugin.prompts().len(),
                sha256 = &plugin.digest()[..12],
                "plugin {}",
                if loaded.plugins.contains_key(&id) { "replaced" } else { "loaded" }
            );
            if loaded.plugins.insert(id.clone(), plugin).is_some() {
                rescan.replaced.push(id);
            } else {
                rescan.added.push(id);
            }
        }
        for failure in failures {
            let id = loader::plugin_id(Path::new(&failure.origin));
            if loaded.plugins.contains_key(&id) {
                tracing::error!(file = %failure.origin, "new version not loaded, the previous one keeps serving: {failure}");
            } else {
                tracing::error!(file = %failure.origin, "plugin not loaded: {failure}");
            }
            // A busy sandbox says nothing about the file: try it again next time.
            let transient = failure.error.is_transient();
            if let Some(digest) = ids_and_digests.get(&id).filter(|_| !transient) {
                loaded.failed.insert(id.clone(), digest.clone());
            }
            rescan.failed.push(id);
        }
        let gone: Vec<String> = loaded.plugins.keys().filter(|id| !present.contains(id)).cloned().collect();
        for id in gone {
            loaded.plugins.remove(&id);
            tracing::info!(plugin = %id, "plugin removed");
            rescan.removed.push(id);
        }
        loaded.failed.retain(|id, _| present.contains(id));

        if loaded.plugins.is_empty() {
            tracing::warn!(dir = %self.dir.display(), "no plugin loaded: the server has no prompts to offer");
        }
        rescan.published = self.registry.publish(loaded.plugins.values().cloned().collect());
        tracing::debug!(?rescan, "plugin directory rescanned");
        Ok(rescan)
    }

    /// Rescans the directory on SIGHUP and, if `watch_files`, after its
    /// files change and the changes settle, until the returned task is
    /// aborted.
    pub fn keep_live(self: &Arc<Self>, watch_files: bool) -> notify::Result<tokio::task::JoinHandle<()>> {
        let (events, mut received) = mpsc::unbounded_channel::<()>();
        let watcher = if watch_files {
            let events = events.clone();
            let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|event| !matches!(event.kind, EventKind::Access(_))) {
                    let _ = events.send(());
                }
            })?;
            watcher.watch(&self.dir, RecursiveMode::NonRecursive)?;
            Some(watcher)
        } else {
            None
        };
        let directory = self.clone();
        Ok(tokio::spawn(async move {
            // Both live as long as the task: the watcher sends into the channel.
            let (_watcher, _events) = (watcher, events);
            let mut hangups = hangup_signals();
            loop {
                let retry_failed = tokio::select! {
                    _ = received.recv() => {
                        tokio::time::sleep(DEBOUNCE).await;
                        while received.try_recv().is_ok() {}
                        false
                    }
                    _ = next_hangup(&mut hangups) => {
                        tracing::info!(dir = %directory.dir.display(), "SIGHUP: rescanning the plugin directory");
                        true
                    }
                };
                if let Err(error) = directory.rescan(retry_failed).await {
                    tracing::error!(dir = %directory.dir.display(), "cannot rescan the plugin directory: {error}");
                }
            }
        }))
    }
}

#[cfg(unix)]
fn hangup_signals() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(unix)]
async fn next_hangup(signals: &mut Option<tokio::signal::unix::Signal>) {
    match signals {
        Some(signals) => {
            signals.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
fn hangup_signals() -> Option<()> {
    None
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Option<()>) {
    std::future::pending().await
}
