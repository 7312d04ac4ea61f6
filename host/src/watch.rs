//! The live plugin directory: rescans that add, replace and remove plugins
//! while the host serves, and the watcher that triggers them.
//!
//! A rescan compares every `*.wasm` file's SHA-256, and the settings the
//! configuration gives it, with what is loaded. New and changed files (or
//! files whose settings changed) are loaded; a file that fails to load never
//! replaces the plugin already serving under its name (the last good version
//! keeps serving); a deleted file's plugin is removed. Then the registry gets
//! the new plugin set, and publishes it only if the catalog changed.
//!
//! The watcher follows the directory's path, not the directory: deploys
//! replace it (rename a new one over it, delete and re-create it, flip a
//! symlink as Kubernetes does for ConfigMaps), so the parent directory is
//! watched too, and when the path leads to another directory the watch is
//! moved to it and the directory rescanned.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::{Mutex, mpsc};

use crate::config::{ConfigError, ServeConfig};
use crate::loader::{self, Loader, PluginSettings, PluginSource};
use crate::registry::Registry;
use prompt_host_kernel::plugin::Plugin;

/// How long after a change the directory is rescanned: the events of a burst
/// (a copy in progress, a batch of files) within it give one rescan. A fixed
/// window rather than "wait for quiet", so that constant churn cannot
/// postpone rescans forever.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// How often the directory is polled when inotify cannot watch it (no
/// inotify, or its watch limit reached).
pub const FALLBACK_POLL: Duration = Duration::from_secs(2);

/// Reads the configuration again, with the same validation and command-line
/// overrides as at start: what SIGHUP applies.
pub type ConfigSource = Box<dyn Fn() -> Result<ServeConfig, ConfigError> + Send + Sync>;

/// A plugin directory being served.
pub struct PluginDirectory {
    dir: PathBuf,
    loader: Arc<Loader>,
    /// The configuration in force: replaced by a good one on SIGHUP.
    config: ArcSwap<ServeConfig>,
    registry: Arc<Registry>,
    /// One rescan at a time.
    state: Mutex<Loaded>,
}

/// What a rescan knows of the files it has seen.
#[derive(Default)]
struct Loaded {
    /// The plugins serving, by name.
    plugins: BTreeMap<String, Arc<Plugin>>,
    /// The settings each serving plugin was loaded with, by name, so that a
    /// configuration change reloads the plugins it concerns.
    settings: HashMap<String, PluginSettings>,
    /// The digest of the last bytes that failed to load (and of the Sigstore
    /// bundle beside them), by name, so that the same bad file is reported
    /// once, not at every rescan.
    failed: HashMap<String, String>,
    /// The `[plugins.NAME]` sections already reported as matching no file.
    unmatched: BTreeSet<String>,
}

/// One plugin file as a rescan read it, and whether it vanished mid-scan.
struct ReadFile {
    source: Result<PluginSource, loader::LoadFailure>,
    vanished: bool,
    file: PathBuf,
}

/// The files of a rescan, sorted: the names present, the files to load
/// (with what a failure of each is remembered by), and the unreadable ones.
struct Sorted {
    present: Vec<String>,
    to_load: Vec<(PluginSource, String)>,
    unreadable: Vec<loader::LoadFailure>,
}

impl Loaded {
    /// Sorts what a rescan read: a file whose bytes and settings are those
    /// served, or whose bytes failed before, is not loaded again.
    fn sort(&self, read: Vec<ReadFile>, config: &ServeConfig) -> Sorted {
        let mut sorted = Sorted { present: Vec::new(), to_load: Vec::new(), unreadable: Vec::new() };
        for ReadFile { source, vanished, file } in read {
            let source = match source {
                Ok(source) => source,
                Err(failure) if vanished => {
                    tracing::debug!(file = %file.display(), "{failure}");
                    sorted.present.push(loader::plugin_id(&file));
                    continue;
                }
                Err(failure) => {
                    sorted.present.push(loader::plugin_id(&file));
                    sorted.unreadable.push(failure);
                    continue;
                }
            };
            sorted.present.push(source.id.clone());
            let digest = loader::digest(&source.bytes);
            let unchanged = self.plugins.get(&source.id).is_some_and(|plugin| plugin.digest() == digest)
                && self.settings.get(&source.id) == Some(&config.plugin_settings(&source.id));
            // A failure is remembered with the bundle beside the file: a bundle
            // added or replaced later is a new attempt.
            let attempt = match &source.bundle {
                Some(bundle) => format!("{digest}+{}", loader::digest(bundle)),
                None => digest,
            };
            let known_bad = self.failed.get(&source.id) == Some(&attempt);
            if !unchanged && !known_bad {
                sorted.to_load.push((source, attempt));
            }
        }
        sorted
    }

    /// Serves the plugins a rescan loaded, each added or replacing its
    /// previous version.
    fn take_loaded(&mut self, plugins: Vec<Plugin>, config: &ServeConfig, rescan: &mut Rescan) -> Vec<Announcement> {
        let mut to_announce = Vec::new();
        for plugin in plugins {
            let id = plugin.id().to_string();
            self.failed.remove(&id);
            self.settings.insert(id.clone(), config.plugin_settings(&id));
            let plugin = Arc::new(plugin);
            let before = self.plugins.insert(id.clone(), plugin.clone());
            if before.is_some() {
                rescan.replaced.push(id);
            } else {
                rescan.added.push(id);
            }
            to_announce.push(Announcement::Loaded { plugin, before });
        }
        to_announce
    }

    /// Logs and counts the files a rescan could not load, and remembers each
    /// by its `digests` (a busy sandbox's failure is tried again). A
    /// previous version keeps serving unless the configuration it loaded
    /// under changed: what serves must meet the configuration in force.
    fn take_failures(
        &mut self,
        failures: Vec<loader::LoadFailure>,
        digests: &HashMap<String, String>,
        config: &ServeConfig,
        rescan: &mut Rescan,
    ) -> Vec<Announcement> {
        let mut to_announce = Vec::new();
        for failure in failures {
            let id = loader::plugin_id(Path::new(&failure.origin));
            // The failure quotes what the pack said (a panic, a bad name): a Debug field, escaped.
            let error = failure.to_string();
            let settings_changed = self.settings.get(&id).is_some_and(|settings| *settings != config.plugin_settings(&id));
            crate::metrics::plugin_load_failed(&id, !settings_changed && self.plugins.contains_key(&id));
            if settings_changed {
                // What serves must meet the configuration in force (a new pin, a lower limit).
                self.plugins.remove(&id);
                self.settings.remove(&id);
                to_announce.push(Announcement::RemovedByConfig { file: failure.origin.clone(), error: error.clone() });
                rescan.removed.push(id.clone());
            } else if self.plugins.contains_key(&id) {
                tracing::error!(file = %failure.origin, ?error, "new version not loaded, the previous one keeps serving");
            } else {
                tracing::error!(file = %failure.origin, ?error, "plugin not loaded");
            }
            // A busy sandbox says nothing about the file: try it again next time.
            let transient = failure.error.is_transient();
            if let Some(digest) = digests.get(&id).filter(|_| !transient) {
                self.failed.insert(id.clone(), digest.clone());
            }
            rescan.failed.push(id);
        }
        to_announce
    }

    /// Takes out of service the plugins whose files are gone, and forgets
    /// their failures.
    fn drop_gone(&mut self, present: &[String], rescan: &mut Rescan) -> Vec<Announcement> {
        let gone: Vec<String> = self.plugins.keys().filter(|id| !present.contains(id)).cloned().collect();
        let mut to_announce = Vec::new();
        for id in gone {
            self.plugins.remove(&id);
            self.settings.remove(&id);
            to_announce.push(Announcement::Removed { id: id.clone() });
            rescan.removed.push(id);
        }
        self.failed.retain(|id, _| present.contains(id));
        to_announce
    }
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
    /// What the directory serves after the rescan.
    pub served: Served,
}

/// Returns to the system the memory that loading packs used and freed
/// (after a rescan that loaded any; the bundled packs are few).
/// An allocator keeps what the loading threads freed in its arenas,
/// resident: after a start with 1,000 packs, 80 MiB of the host's 250 MiB of
/// anonymous memory was free heap that only glibc's `malloc_trim` gave back.
/// The binary allocates with jemalloc (feature `jemalloc`), whose arenas are
/// purged here; glibc's are trimmed too, for what C code and a library user
/// without the feature allocate there.
fn give_back_freed_memory() {
    #[cfg(feature = "jemalloc")]
    {
        // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty
        // pages back to the system. A jemalloc that no one allocates with
        // (a test binary on the system's malloc) has none.
        // SAFETY: a mallctl that reads and writes nothing: every pointer is
        // null and the name is a NUL-terminated string.
        unsafe {
            tikv_jemalloc_sys::mallctl(c"arena.4096.purge".as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), 0)
        };
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim takes no pointer; it returns free pages of the
        // allocator's own arenas to the system, and is safe to call from any
        // thread at any time.
        unsafe { malloc_trim(0) };
    }
}

/// What a plugin directory (or the bundled packs) serves, in numbers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Served {
    /// The plugin files found.
    pub files: usize,
    /// The plugins serving.
    pub plugins: usize,
    /// The prompts served (a prompt whose name another plugin serves is not).
    pub prompts: usize,
}

impl Served {
    /// What `registry` serves now, from `plugins` plugins of `files` files.
    pub fn now(registry: &Registry, files: usize, plugins: usize) -> Served {
        Served { files, plugins, prompts: registry.snapshot().catalog().entries().len() }
    }

    /// The files found that serve nothing: refused, or unreadable.
    pub fn refused(&self) -> usize {
        self.files.saturating_sub(self.plugins)
    }

    /// Logs one line on what is served, from the plugin directory `dir` or
    /// (`None`) from the packs bundled in the binary: at info, or as a
    /// warning saying why when nothing is.
    pub fn log(&self, dir: Option<&Path>) {
        let dir = dir.map(|dir| tracing::field::display(dir.display()));
        let refused = match self.refused() {
            0 => String::new(),
            refused => format!(" ({refused} refused)"),
        };
        if self.prompts > 0 {
            let (prompts, plugins) = (count(self.prompts, "prompt"), count(self.plugins, "plugin"));
            tracing::info!(dir, "serving {prompts} from {plugins}{refused}");
        } else if self.files == 0 {
            tracing::warn!(dir, "serving no prompts: the plugin directory holds no plugin files (*.wasm)");
        } else if self.plugins == 0 {
            let plugins = count(self.files, "plugin");
            tracing::warn!(dir, "serving no prompts: {plugins} found, and every one refused (the errors above say why)");
        } else {
            let plugins = count(self.plugins, "plugin");
            tracing::warn!(dir, "serving no prompts: the {plugins} loaded declare none{refused}");
        }
    }
}

/// "1 prompt", "2 prompts".
fn count(n: usize, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

impl PluginDirectory {
    /// `dir` is made absolute, so that the watcher's paths compare with it.
    pub fn new(dir: &Path, loader: Arc<Loader>, config: Arc<ServeConfig>, registry: Arc<Registry>) -> PluginDirectory {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        PluginDirectory { dir, loader, config: ArcSwap::new(config), registry, state: Mutex::new(Loaded::default()) }
    }

    /// Checks `config` against the directory and the configuration in
    /// force, and makes it the one in force. A configuration that cannot
    /// take effect without a restart is refused, saying why, and the one in
    /// force stays.
    pub fn replace_config(&self, config: ServeConfig) -> Result<(), String> {
        let current = self.config.load();
        if let Some(key) = restart_only_change(&current, &config) {
            return Err(format!("{key} changed, which takes effect only at a restart"));
        }
        refuse_unmatched_when_pinned(&config, &self.dir)?;
        self.config.store(Arc::new(config));
        Ok(())
    }

    /// Brings the served plugins in line with the directory. Files that
    /// failed to load are tried again only if their bytes changed, or if
    /// `retry_failed` (an operator's SIGHUP).
    pub async fn rescan(&self, retry_failed: bool) -> std::io::Result<Rescan> {
        let mut loaded = self.state.lock().await;
        let config = self.config.load_full();
        if retry_failed {
            loaded.failed.clear();
        }
        let read = self.read_files(config.registry.max_pack_bytes).await?;
        let Sorted { present, to_load, unreadable } = loaded.sort(read, &config);
        let (sources, digests): (Vec<PluginSource>, Vec<String>) = to_load.into_iter().unzip();
        let ids_and_digests: HashMap<String, String> = sources.iter().map(|source| source.id.clone()).zip(digests).collect();
        let attempted_loads = !sources.is_empty();
        let (plugins, mut failures) = self.loader.load_all(sources, |id| config.plugin_settings(id)).await;
        failures.extend(unreadable);
        // What changes what calls see is logged once it is published, so
        // that a line saying "for the next call" is already true.
        let mut rescan = Rescan::default();
        let mut to_announce = loaded.take_loaded(plugins, &config, &mut rescan);
        to_announce.extend(loaded.take_failures(failures, &ids_and_digests, &config, &mut rescan));
        to_announce.extend(loaded.drop_gone(&present, &mut rescan));
        let unmatched = config.unmatched_plugins(&present);
        for section in &unmatched {
            if !loaded.unmatched.contains(&section.name) {
                tracing::warn!(dir = %self.dir.display(), "{section}");
            }
        }
        loaded.unmatched = unmatched.into_iter().map(|section| section.name).collect();

        rescan.published = self.registry.publish(loaded.plugins.values().cloned().collect());
        // (An old version a change replaced is dropped here, once said.)
        to_announce.into_iter().for_each(Announcement::announce);
        rescan.served = Served::now(&self.registry, present.len(), loaded.plugins.len());
        if attempted_loads {
            // Off the runtime: it walks the allocator's arenas.
            tokio::task::spawn_blocking(give_back_freed_memory);
        }
        tracing::debug!(?rescan, "plugin directory rescanned");
        Ok(rescan)
    }

    /// Reads every plugin file of the directory, off the async runtime:
    /// every file is opened without blocking and bounded (a FIFO is
    /// refused), but a read still waits on the disk. Each with whether it
    /// vanished mid-scan.
    async fn read_files(&self, max_pack_bytes: u64) -> std::io::Result<Vec<ReadFile>> {
        let dir = self.dir.clone();
        let read = tokio::task::spawn_blocking(move || {
            let files = loader::plugin_files(&dir)?;
            let read = files.into_iter().map(|file| {
                let source = PluginSource::read(&file, max_pack_bytes);
                // Vanished mid-scan: the next rescan, which its removal triggers, unloads it.
                // (A dangling symlink has not vanished: it is reported.)
                let vanished = source.is_err() && std::fs::symlink_metadata(&file).is_err();
                ReadFile { source, vanished, file }
            });
            Ok::<_, std::io::Error>(read.collect::<Vec<_>>())
        });
        read.await.expect("reading the plugin directory does not panic")
    }

    /// Rescans the directory on SIGHUP and, if the configuration watches
    /// it, after its files change and the changes settle, until the returned
    /// task is aborted. SIGHUP also re-arms the watch and, given a
    /// `config_source`, reads the configuration again.
    pub fn keep_live(self: &Arc<Self>, config_source: Option<ConfigSource>) -> tokio::task::JoinHandle<()> {
        let (events, mut received) = mpsc::unbounded_channel::<Change>();
        let config = self.config.load();
        let mut watch = config.watch.then(|| LiveWatch::start(&self.dir, config.watch_poll, events.clone()));
        let directory = self.clone();
        let config_source = config_source.map(Arc::new);
        // Listened for from here on, before the server answers anyone, not
        // from the task's first poll: a SIGHUP with no listener ends the process.
        let mut hangups = crate::hangup::signals();
        tokio::spawn(async move {
            // The watcher sends into the channel as long as the task lives.
            let _events = events;
            loop {
                let retry_failed = tokio::select! {
                    Some(change) = received.recv() => {
                        tokio::time::sleep(DEBOUNCE).await;
                        let mut in_dir = change == Change::InDir;
                        while let Ok(change) = received.try_recv() {
                            in_dir |= change == Change::InDir;
                        }
                        // A change beside the directory matters only if the path now leads elsewhere.
                        let moved = watch.as_mut().is_some_and(|watch| watch.rearm_if_moved(false));
                        if !in_dir && !moved {
                            continue;
                        }
                        false
                    }
                    _ = crate::hangup::next(&mut hangups) => {
                        tracing::info!(dir = %directory.dir.display(), "SIGHUP: rescanning the plugin directory");
                        // The config and the files it names are read off the async runtime.
                        let (reloading, source) = (directory.clone(), config_source.clone());
                        let reloaded = tokio::task::spawn_blocking(move || reloading.reload_config(source.as_deref()));
                        reloaded.await.expect("reloading the configuration does not panic");
                        if let Some(watch) = watch.as_mut() {
                            watch.rearm_if_moved(true);
                        }
                        true
                    }
                };
                crate::metrics::reloaded();
                match directory.rescan(retry_failed).await {
                    // What is served, after every rescan that changed it (or
                    // that leaves nothing served): one line an operator can
                    // read the state from, as at start-up.
                    Ok(rescan) if rescan.published || rescan.served.prompts == 0 => rescan.served.log(Some(&directory.dir)),
                    Ok(_) => {}
                    Err(error) => tracing::error!(dir = %directory.dir.display(), "cannot rescan the plugin directory: {error}"),
                }
            }
        })
    }

    /// Reads the configuration again and puts it in force, or logs why not.
    fn reload_config(&self, source: Option<&ConfigSource>) {
        let Some(source) = source else { return };
        let result = source().map_err(|error| error.to_string()).and_then(|config| self.replace_config(config));
        match result {
            Ok(()) => tracing::info!("configuration reloaded"),
            Err(error) => tracing::error!("configuration not reloaded, the running one stays: {error}"),
        }
    }
}

/// The first setting that differs between `current` and `new` and that a
/// running host cannot change: the engine, the transport and the watcher are
/// built from them at start.
fn restart_only_change(current: &ServeConfig, new: &ServeConfig) -> Option<&'static str> {
    let (sandbox, new_sandbox) = (current.sandbox_config(), new.sandbox_config());
    [
        ("server.plugins", current.plugins_dir != new.plugins_dir),
        ("server.page_size", current.page_size != new.page_size),
        (
            "server.prompts_as_tools (or a tenant's)",
            current.prompts_as_tools != new.prompts_as_tools || current.tenant_prompts_as_tools != new.tenant_prompts_as_tools,
        ),
        ("server.watch", current.watch != new.watch),
        ("server.watch_poll_ms", current.watch_poll != new.watch_poll),
        ("server.cache_dir", current.cache_dir != new.cache_dir),
        ("the [sandbox] section", SandboxConfigKey::of(&sandbox) != SandboxConfigKey::of(&new_sandbox)),
        // The engine's memory slots are as large as the largest limit at start.
        ("a memory_mib limit above the largest at start", new_sandbox.max_memory_bytes > sandbox.max_memory_bytes),
    ]
    .into_iter()
    .find_map(|(key, changed)| changed.then_some(key))
}

/// A change to what is served, logged and counted once the catalog with it
/// is published.
enum Announcement {
    Loaded {
        plugin: Arc<Plugin>,
        before: Option<Arc<Plugin>>,
    },
    /// Taken out of service: it does not load under the configuration now in force.
    RemovedByConfig {
        file: String,
        error: String,
    },
    /// Its file is gone from the directory.
    Removed {
        id: String,
    },
}

impl Announcement {
    fn announce(self) {
        match self {
            Announcement::Loaded { plugin, before } => {
                let id = plugin.id();
                crate::metrics::plugin_loaded(
                    id,
                    &crate::catalog::served_names(&plugin),
                    plugin.info().map(|info| info.version.as_str()),
                    plugin.digest(),
                );
                log_access_change(id, before.as_ref().map(|before| before.access()), plugin.access());
                tracing::info!(
                    plugin = %id.escape_debug(),
                    prompts = plugin.prompts().len(),
                    sha256 = &plugin.digest()[..12],
                    wit = plugin.wit_version().as_str(),
                    // What the pack says it is: its own words, escaped.
                    // (Left out when the pack says nothing, not logged as an Option.)
                    pack = plugin.info().map(|info| tracing::field::debug(format!("{} {}", info.name, info.version))),
                    "plugin {}",
                    if before.is_some() { "replaced" } else { "loaded" }
                );
            }
            Announcement::RemovedByConfig { file, error } => {
                tracing::error!(file = %file, ?error, "plugin removed: it does not load under the new configuration")
            }
            Announcement::Removed { id } => {
                crate::metrics::plugin_removed(&id);
                tracing::info!(plugin = %id.escape_debug(), "plugin removed");
            }
        }
    }
}

/// Logs, in one line, what a plugin's calls see of the machine when it is
/// first loaded seeing something, and whenever that changes (a grant
/// added, narrowed or removed at SIGHUP, or an update asking for more or
/// less): calls under way keep what they started with.
fn log_access_change(
    id: &str,
    before: Option<&prompt_host_kernel::grants::GrantedAccess>,
    now: &prompt_host_kernel::grants::GrantedAccess,
) {
    let listed = |given: Vec<String>| if given.is_empty() { "nothing".to_string() } else { given.join(", ") };
    let now = now.given();
    match before.map(|before| before.given()) {
        None if now.is_empty() => {}
        None => tracing::info!(plugin = %id.escape_debug(), "granted: {}", listed(now)),
        Some(before) if before == now => {}
        Some(before) => {
            tracing::info!(plugin = %id.escape_debug(), "grants changed for the next call: now {}; before {}", listed(now), listed(before))
        }
    }
}

/// The sandbox settings that only a new engine can change.
#[derive(PartialEq)]
struct SandboxConfigKey(usize, usize, Duration);

impl SandboxConfigKey {
    fn of(config: &prompt_host_kernel::sandbox::SandboxConfig) -> SandboxConfigKey {
        SandboxConfigKey(config.max_wasm_stack, config.max_concurrent_calls, config.queue_wait)
    }
}

/// Under `require_pinned`, a `[plugins.NAME]` section that matches no file
/// in `dir` is refused: it is most likely a typo'd pin, and the plugin it
/// meant would be refused as unpinned.
pub fn refuse_unmatched_when_pinned(config: &ServeConfig, dir: &Path) -> Result<(), String> {
    if !config.require_pinned {
        return Ok(());
    }
    let present: Vec<String> = loader::plugin_files(dir)
        .map_err(|error| format!("cannot read the plugin directory {}: {error}", dir.display()))?
        .iter()
        .map(|file| loader::plugin_id(file))
        .collect();
    // A --prefix cannot pin: only a section can be a typo'd pin.
    match config.unmatched_plugins(&present).iter().find(|unmatched| unmatched.prefix_flag.is_none()) {
        Some(section) => {
            Err(format!("in {}: {section} Every plugin must be pinned (require_pinned): fix or remove the section", dir.display()))
        }
        None => Ok(()),
    }
}

/// Where a watched change happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// In the plugin directory, or to the directory itself.
    InDir,
    /// Beside it, in a parent: the path may now lead to another directory.
    Beside,
}

/// A directory's device and inode.
#[cfg(unix)]
type Identity = (u64, u64);
#[cfg(not(unix))]
type Identity = PathBuf;

/// The identity of the directory a path leads to, following symlinks.
#[cfg(unix)]
fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().filter(|meta| meta.is_dir()).map(|meta| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<Identity> {
    std::fs::canonicalize(path).ok().filter(|path| path.is_dir())
}

/// A watch on the plugin directory's path and on the directories its path
/// passes through (the parent, and the parent of where symlinks lead).
struct LiveWatch {
    watcher: Box<dyn Watcher + Send>,
    dir: PathBuf,
    /// The directory the watch is on, `None` if it is on none (the path led
    /// nowhere when last armed).
    armed: Option<Identity>,
}

impl LiveWatch {
    /// Watches with inotify (or the platform's equivalent), or polls every
    /// `poll` if given. When the native watcher cannot be had, polls every
    /// [`FALLBACK_POLL`], with a warning.
    fn start(dir: &Path, poll: Option<Duration>, events: mpsc::UnboundedSender<Change>) -> LiveWatch {
        let native = match poll {
            Some(_) => None,
            None => match LiveWatch::arm(notify::recommended_watcher(handler(dir, events.clone())), dir) {
                Ok(watch) => Some(watch),
                Err(error) => {
                    tracing::warn!(
                        dir = %dir.display(),
                        "cannot watch the plugin directory ({error}): polling it every {}s instead",
                        FALLBACK_POLL.as_secs()
                    );
                    None
                }
            },
        };
        let watch = native.unwrap_or_else(|| {
            let interval = poll.unwrap_or(FALLBACK_POLL);
            let config = notify::Config::default().with_poll_interval(interval);
            LiveWatch::arm(notify::PollWatcher::new(handler(dir, events), config), dir).unwrap_or_else(|error| {
                // Polling a directory cannot fail for lack of a resource: only
                // the parent missing stops it. SIGHUP still rescans.
                tracing::error!(dir = %dir.display(), "cannot poll the plugin directory: {error}");
                LiveWatch { watcher: Box::new(notify::NullWatcher), dir: dir.to_path_buf(), armed: None }
            })
        });
        tracing::info!(dir = %dir.display(), polling_ms = poll.map(|poll| poll.as_millis() as u64), "watching the plugin directory");
        watch
    }

    /// Watches `dir`'s parents and `dir` with `watcher`.
    fn arm(watcher: notify::Result<impl Watcher + Send + 'static>, dir: &Path) -> notify::Result<LiveWatch> {
        let mut watcher: Box<dyn Watcher + Send> = Box::new(watcher?);
        let mut parents: Vec<PathBuf> = dir.parent().into_iter().map(Path::to_path_buf).collect();
        if let Some(parent) = std::fs::canonicalize(dir).ok().as_deref().and_then(Path::parent) {
            parents.push(parent.to_path_buf());
        }
        parents.dedup();
        for parent in parents {
            watcher.watch(&parent, RecursiveMode::NonRecursive)?;
        }
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(LiveWatch { watcher, dir: dir.to_path_buf(), armed: identity(dir) })
    }

    /// Moves the watch to the directory the path now leads to, if it changed
    /// (or if `force`). Returns whether it moved.
    fn rearm_if_moved(&mut self, force: bool) -> bool {
        let now = identity(&self.dir);
        if now == self.armed && !force {
            return false;
        }
        // The old watch may already be gone with its directory.
        let _ = self.watcher.unwatch(&self.dir);
        let previous = self.armed.take();
        if now.is_some() {
            match self.watcher.watch(&self.dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    // A SIGHUP re-arms the watch on the same directory: only another one is news.
                    if now != previous {
                        tracing::info!(dir = %self.dir.display(), "the plugin directory was replaced: watching the new one");
                    }
                    self.armed = now;
                }
                Err(error) => tracing::warn!(dir = %self.dir.display(), "cannot watch the plugin directory: {error}"),
            }
        }
        true
    }
}

/// Sends each change the watcher reports (but reads), and logs its errors.
fn handler(dir: &Path, events: mpsc::UnboundedSender<Change>) -> impl FnMut(notify::Result<notify::Event>) + Send + 'static {
    let dir = dir.to_path_buf();
    move |event: notify::Result<notify::Event>| match event {
        Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
        Ok(event) => {
            let in_dir = event.paths.is_empty() || event.paths.iter().any(|path| path == &dir || path.parent() == Some(dir.as_path()));
            let _ = events.send(if in_dir { Change::InDir } else { Change::Beside });
        }
        Err(error) => tracing::warn!(dir = %dir.display(), "watching the plugin directory: {error}"),
    }
}
