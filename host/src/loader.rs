//! Plugin loading: from bytes on disk (or bundled in the binary) to a
//! validated [`Plugin`].
//!
//! Loading checks, in order: that the bytes are a WebAssembly component, that
//! it compiles, that it exports the prompt-provider interface, that its
//! imports are ones the host provides, that listing its prompts stays within
//! its limits, and that the prompts it lists are valid. The first failure
//! stops the load and says which check failed and why.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use prompt_host_kernel::bindings::{Linked, PROVIDER_INTERFACE, WitVersion};
use prompt_host_kernel::cache::{CompiledCache, Origin};
use prompt_host_kernel::grants::{GrantedAccess, Grants, Withheld};
use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model;
use prompt_host_kernel::plugin::Plugin;
use prompt_host_kernel::sandbox::{CallFailure, CallQuota, CallState, CallUsage, PrepareError, Sandbox};
use prompt_host_kernel::validate::{self, Answer, Problem};
use prompt_host_trust::lockfile::{LockedPack, Lockfile};
use prompt_host_trust::pack_store::PackStore;
use prompt_host_trust::signature::{self, SignatureError, SignaturePolicy, Verified};

/// How often a compile that is still running says so in the log.
pub const COMPILE_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The versions of the WIT package this host accepts, for people:
/// "prompt-host:prompts 0.1.x, 0.2.x, 0.3.x or 0.4.x" (a 0.y release is compatible within
/// y; see [`WitVersion::ACCEPTED`]).
pub fn accepted_wit_versions() -> String {
    format!("{} {}", prompt_host_kernel::bindings::PACKAGE, accepted_versions())
}

/// "0.1.x, 0.2.x, 0.3.x or 0.4.x".
fn accepted_versions() -> String {
    let versions: Vec<String> = WitVersion::ACCEPTED.iter().map(|version| format!("{version}.x")).collect();
    match versions.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The bytes of a plugin and where they came from.
#[derive(Debug, Clone)]
pub struct PluginSource {
    /// The plugin's name: its file name without `.wasm`.
    pub id: String,
    /// Where the bytes came from, for messages: a path, or "bundled".
    pub origin: String,
    pub bytes: Vec<u8>,
    /// A Sigstore bundle beside the file (`NAME.wasm.sigstore.json`): its
    /// signature, for a pack that did not come from a registry.
    pub bundle: Option<Vec<u8>>,
}

impl PluginSource {
    /// Reads a `.wasm` file of at most `max_bytes` (`registry.max_pack_mib`:
    /// a file in the plugin directory is bounded as a pulled pack is), and
    /// the Sigstore bundle beside it if there is one (each a regular file,
    /// opened without blocking, bounded: see [`prompt_host_files`]); the plugin
    /// is named after the file. This blocks: on the async runtime, call
    /// [`PluginSource::read_off_runtime`].
    pub fn read(path: &Path, max_bytes: u64) -> Result<PluginSource, LoadFailure> {
        let origin = path.display().to_string();
        let failure = |error| LoadFailure { origin: origin.clone(), error };
        let bytes = prompt_host_files::read(path, max_bytes).map_err(|error| failure(LoadError::Read(error.to_string())))?;
        let bundle_path = PathBuf::from(format!("{}{}", path.display(), signature::BUNDLE_SUFFIX));
        let bundle = prompt_host_files::read_if_exists(&bundle_path, prompt_host_files::MAX_SMALL_FILE_BYTES)
            .map_err(|error| failure(LoadError::Bundle { path: bundle_path.display().to_string(), error: error.to_string() }))?;
        Ok(PluginSource { id: plugin_id(path), origin, bytes, bundle })
    }

    /// [`PluginSource::read`] on tokio's blocking pool, never on a runtime worker.
    pub async fn read_off_runtime(path: &Path, max_bytes: u64) -> Result<PluginSource, LoadFailure> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || PluginSource::read(&path, max_bytes)).await.expect("reading a plugin file does not panic")
    }
}

/// The plugin name a file gives: its name without the `.wasm` extension.
pub fn plugin_id(path: &Path) -> String {
    path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The `.wasm` entries of a plugin directory that are not directories,
/// sorted by name: one that is not a regular file (a FIFO) is listed, so
/// that reading it refuses it by name rather than passing over it.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "wasm") && !path.is_dir() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// What the operator configured for one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSettings {
    /// Put before each of the plugin's prompt names.
    pub prefix: String,
    /// The folder its skills are served under (`skill://<prefix>/...`), or empty.
    pub skill_prefix: String,
    /// The limits each call runs under.
    pub limits: Limits,
    /// The SHA-256 (hex) the plugin's bytes must have, if pinned.
    pub pinned_sha256: Option<String>,
    /// Whether a plugin that is not pinned is refused.
    pub require_pinned: bool,
    /// What its signature must be.
    pub signatures: SignaturePolicy,
    /// Where the provenance of packs pulled from registries is kept.
    pub pack_store: Option<PathBuf>,
    /// `prompt-host.lock`: a pack installed from a registry must be the
    /// bytes it records.
    pub lockfile: Option<PathBuf>,
    /// Which repository a pack pulled from a mirror is signed as.
    pub mirrors: prompt_host_trust::distribution::Mirrors,
    /// What the operator grants it to see, of what it asks for.
    pub grants: Grants,
}

/// Why a plugin could not be loaded. Each says what is wrong; [`LoadError::hint`]
/// says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read it: {0}")]
    Read(String),
    #[error("its Sigstore bundle {path} cannot be read: {error}")]
    Bundle { path: String, error: String },
    #[error("not a WebAssembly file: it does not start with the \\0asm magic bytes")]
    NotWasm,
    #[error("a core WebAssembly module, not a component")]
    CoreModule,
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    #[error("does not export {PROVIDER_INTERFACE} (version {}; it exports: {exports})", accepted_versions())]
    WrongWorld { exports: String },
    #[error("is built against version {found} of the prompt-host:prompts WIT package, and this host accepts {}", accepted_versions())]
    UnsupportedVersion { found: String },
    #[error("imports what the host does not provide: {}", .0.join(", "))]
    UnsatisfiedImports(Vec<String>),
    #[error("cannot be linked: {0}")]
    Link(String),
    #[error("failed while listing its prompts: it {0}")]
    List(CallFailure),
    #[error("its prompt definitions are invalid: {}", summarize(.0))]
    Definitions(Vec<Problem>),
    #[error("its SHA-256 is {actual}, but the configuration pins it to {pinned}")]
    PinMismatch { pinned: String, actual: String },
    #[error("it is not pinned, and the configuration requires every plugin to be pinned (plugins.NAME.sha256)")]
    NotPinned,
    #[error("it is not the pack installed from {reference}: its SHA-256 is {actual}, and prompt-host.lock records {locked}")]
    NotInstalledBytes { reference: String, locked: String, actual: String },
    #[error("signature refused: {0}")]
    Signature(SignatureError),
    #[error("its provenance cannot be read: {0}")]
    Provenance(String),
}

impl LoadError {
    /// How the pack's author or the operator can fix it, where the message
    /// alone does not say.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            LoadError::Read(_) | LoadError::Link(_) => return None,
            LoadError::Bundle { .. } => {
                "a Sigstore bundle beside a pack is the file `cosign sign-blob --bundle` writes: replace it, or remove it"
            }
            LoadError::NotWasm => "a pack is the .wasm file a build for wasm32-wasip2 (or jco, or componentize-py) produces",
            LoadError::CoreModule => "build the pack for the wasm32-wasip2 target, or wrap the module with `wasm-tools component new`",
            LoadError::Invalid(_) => {
                "the file may be truncated or corrupt (build it again and copy it whole), or use a WebAssembly \
                 feature this host does not enable (the message names it)"
            }
            LoadError::WrongWorld { .. } => {
                "build it against the prompt-pack world of the prompt-host WIT package (`prompt-host new` sets that up)"
            }
            LoadError::UnsupportedVersion { .. } => "rebuild it against the WIT package this host ships",
            LoadError::UnsatisfiedImports(_) => {
                "a pack may import only WASI 0.2 (wasi:cli, wasi:clocks, wasi:filesystem, wasi:io, wasi:random, \
                 wasi:sockets), and is granted nothing through it: drop the dependency that imports the rest"
            }
            LoadError::List(CallFailure::Panic { .. } | CallFailure::Trap { .. }) => {
                "list-prompts must not fail: fix what the message says (the SDK's template packs report mistakes \
                 in their templates this way)"
            }
            LoadError::List(CallFailure::Busy { .. }) => "every sandbox slot was busy: load it again",
            LoadError::List(CallFailure::CopyBudget { .. }) => {
                "the prompt definitions, or the skills and resources the pack carries (WIT 0.4), are larger than \
                 this plugin's limits allow (limits.max_prompts, limits.max_catalog_kib, limits.max_content_kib): \
                 shorten them, or ask the operator to raise those limits"
            }
            LoadError::List(_) => {
                "list-prompts runs once at load, under the pack's limits: return the declarations and do no other \
                 work there; a pack with a large runtime (JavaScript, Python) may need plugins.NAME.limits raised"
            }
            LoadError::Definitions(problems) => match problems.split_first() {
                Some((first, rest)) if rest.iter().all(|problem| problem.hint == first.hint) => return first.hint,
                _ => "`prompt-host inspect` lists each problem with its own hint",
            },
            LoadError::PinMismatch { .. } => "if this file is the one you mean to serve, pin its new SHA-256 in plugins.NAME.sha256",
            LoadError::NotPinned => "add plugins.NAME.sha256 to the config with the SHA-256 `prompt-host inspect` prints",
            LoadError::Signature(SignatureError::Unsigned | SignatureError::NotTheSignedBytes { .. }) => {
                "install signed packs with `prompt-host add oci://...` (or `update NAME`): a file changed or copied in \
                 by hand has no signature the host can check"
            }
            LoadError::Signature(SignatureError::NoKeys) => "name the publisher's key in signatures.public_keys",
            LoadError::Signature(_) => {
                "the pack is not signed by a key the configuration trusts (signatures.public_keys, \
                 plugins.NAME.public_keys): ask its publisher which key signs it"
            }
            LoadError::Provenance(_) => "install it again with `prompt-host update NAME`",
            LoadError::NotInstalledBytes { .. } => {
                "the file was changed after it was installed: `prompt-host update NAME` puts the installed pack back, \
                 `prompt-host remove NAME` forgets it"
            }
        })
    }

    /// Whether the error says nothing about the plugin's file, only that the
    /// host was too busy to load it then: loading it again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, LoadError::List(CallFailure::Busy { .. }))
    }

    /// The problems this error stands for, each with its hint: each invalid
    /// definition on its own, any other error as one.
    pub fn into_problems(self) -> Vec<Problem> {
        match self {
            LoadError::Definitions(problems) => problems,
            error => vec![Problem { hint: error.hint(), problem: error.to_string() }],
        }
    }
}

/// The problems of a plugin's definitions in one line, cut short when there
/// are many (`prompt-host inspect` lists them all).
fn summarize(problems: &[Problem]) -> String {
    const SHOWN: usize = 5;
    let mut summary: Vec<&str> = problems.iter().take(SHOWN).map(|problem| problem.problem.as_str()).collect();
    let more;
    if problems.len() > SHOWN {
        more = format!("and {} more (prompt-host inspect lists them all)", problems.len() - SHOWN);
        summary.push(&more);
    }
    summary.join("; ")
}

/// A plugin that failed to load, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFailure {
    pub origin: String,
    pub error: LoadError,
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.error)?;
        match self.error.hint() {
            Some(hint) => write!(f, " (hint: {hint})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for LoadFailure {}

/// The hex SHA-256 of a plugin's bytes.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A size for a log line: megabytes, to one decimal.
fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A duration for a log line: seconds, to one decimal.
fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// A compiled component, as loading a plugin found it.
pub struct Compiled {
    pub component: Component,
    /// How long compiling it, or reading it from the cache, took (with the
    /// wait for a turn to compile, when other compiles ran).
    pub took: Duration,
    /// Whether it was compiled or read from the cache.
    pub origin: Origin,
}

/// What loading a plugin found, step by step, for `prompt-host inspect`.
/// Each field is filled in when its step succeeds. Recording costs the
/// server's loads nothing but a clone of the component's handle.
#[derive(Default)]
pub struct LoadTrace {
    /// The compiled component, and how it was had.
    pub compiled: Option<Compiled>,
    /// What the one `list-prompts` call cost.
    pub listing: Option<CallUsage>,
    /// The prompts as declared, when they failed validation (a loaded
    /// plugin holds its own).
    pub invalid_prompts: Vec<model::Prompt>,
    /// What a 0.2 or 0.3 pack said it is, when it said it.
    pub info: Option<model::PackInfo>,
    /// What a 0.3 pack said it wants to see, when it said it.
    pub wants: Option<model::Wants>,
    /// Who signed it, when a trusted key did.
    pub signature: Option<Verified>,
    /// What its calls see of what it asked for, once it loaded.
    pub access: Option<GrantedAccess>,
    /// What it asked for and was not granted, and what was granted and not asked for.
    pub withheld: Vec<Withheld>,
}

/// Loads plugins: compiles them (or takes them from the compiled cache),
/// checks them, lists their prompts once in the sandbox and validates them.
pub struct Loader {
    sandbox: Arc<Sandbox>,
    cache: Option<Arc<CompiledCache>>,
    /// Compiles running at once: one per core. Each
    /// compile already spreads over the cores, and takes tens of MiB while it
    /// runs: more at once only adds memory (a cold start of 200 packs peaked
    /// at 551 MiB with every compile at once on tokio's blocking pool).
    compiling: Arc<tokio::sync::Semaphore>,
    /// Compiled-cache entries read at once: two per core, so that one waits
    /// on the disk while the other is checked. Each is read on the blocking
    /// pool; with every load of a 1,000-pack start reading at once, tokio ran
    /// hundreds of blocking threads, heaptrack saw 89 MiB of entry buffers
    /// alive at once, and the host stayed 15 MiB larger idle. (Only the read
    /// takes turns: a pack slow to list its prompts holds up no other load.)
    reading_cache: Arc<tokio::sync::Semaphore>,
}

impl Loader {
    pub fn new(sandbox: Arc<Sandbox>, cache: Option<CompiledCache>) -> Loader {
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        Loader {
            sandbox,
            cache: cache.map(Arc::new),
            compiling: Arc::new(tokio::sync::Semaphore::new(cores)),
            reading_cache: Arc::new(tokio::sync::Semaphore::new(2 * cores)),
        }
    }

    /// The sandbox the plugins it loads run in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// Loads one plugin.
    pub async fn load(&self, source: PluginSource, settings: PluginSettings) -> Result<Plugin, LoadFailure> {
        self.load_traced(source, settings, &mut LoadTrace::default()).await
    }

    /// Loads one plugin, and records in `trace` what each step found, so that
    /// a failed load still shows how far it got.
    pub async fn load_traced(&self, source: PluginSource, settings: PluginSettings, trace: &mut LoadTrace) -> Result<Plugin, LoadFailure> {
        let origin = source.origin.clone();
        self.load_checked(source, settings, trace).await.map_err(|error| LoadFailure { origin, error })
    }

    async fn load_checked(&self, source: PluginSource, settings: PluginSettings, trace: &mut LoadTrace) -> Result<Plugin, LoadError> {
        let digest = digest(&source.bytes);
        check_pin(&digest, &settings)?;
        // The lockfile and the pack store are read off the async runtime.
        let (source, settings, checked) = tokio::task::spawn_blocking(move || {
            let checked = check_installed(&source.id, &digest, &settings)
                .and_then(|installed| check_signature(&digest, &source, installed.as_ref(), &settings));
            (source, settings, checked.map(|accepted| (digest, accepted)))
        })
        .await
        .expect("checking a pack's provenance does not panic");
        let (digest, accepted) = checked?;
        for ignored in &accepted.ignored {
            tracing::warn!(
                plugin = %source.id.escape_debug(),
                "a signature that does not verify counts as none (signatures are not required), served as unsigned: {ignored}"
            );
        }
        trace.signature = accepted.verified;
        let started = Instant::now();
        let (component, origin) = self.compile(&source.id, &source.bytes, &digest).await?;
        trace.compiled = Some(Compiled { component: component.clone(), took: started.elapsed(), origin });
        if origin == Origin::Cache {
            tracing::debug!(plugin = source.id, "loaded the compiled component from the cache");
        }
        let pre = prepare(&self.sandbox, &component)?;
        let budget = validate::copy_budget(Answer::Definitions, &settings.limits);
        let quota = CallQuota::new(settings.limits.concurrent_calls);
        let listing = Instant::now();
        let listed = match self.sandbox.instantiate(&pre, &settings.limits, budget, &quota, &source.id).await {
            Ok(instance) => instance.list_prompts(validate::copy_budget(Answer::Content, &settings.limits)).await,
            Err(failure) => Err(failure),
        };
        let outcome = listed.as_ref().map_or_else(CallFailure::kind, |_| crate::metrics::OK);
        crate::metrics::listed(&source.id, outcome, listing.elapsed());
        let (listing, usage) = listed.map_err(|failure| LoadError::List(validate::call_failure(failure)))?;
        trace.listing = Some(usage);
        trace.info = listing.info.clone();
        trace.wants = listing.wants.clone();
        let wants = listing.wants.clone();
        let checked = validate::listing(listing, &settings.limits).map_err(|(problems, prompts)| {
            trace.invalid_prompts = prompts;
            LoadError::Definitions(problems)
        })?;
        let (access, withheld) = GrantedAccess::between(&source.id, wants.as_ref(), &settings.grants);
        for withheld in &withheld {
            match withheld {
                Withheld::NotGranted { .. } => {
                    tracing::info!(plugin = %source.id.escape_debug(), "{withheld}")
                }
                Withheld::NotAsked { .. } => tracing::warn!(plugin = %source.id.escape_debug(), "{withheld}"),
            }
        }
        trace.withheld = withheld;
        trace.access = Some(access.clone());
        Ok(Plugin::new(
            source.id,
            digest,
            settings.prefix,
            settings.skill_prefix,
            checked,
            settings.limits,
            quota,
            pre,
            self.sandbox.clone(),
            access,
        ))
    }

    /// Checks that the bytes are a component, then takes its compiled form
    /// from the cache or compiles it (and caches it). Both run off the async
    /// runtime: compiling is CPU-bound and takes milliseconds to seconds.
    /// A compile is logged when it starts, every [`COMPILE_PROGRESS_EVERY`]
    /// while it runs, and when it ends: a large pack (a JavaScript or Python
    /// runtime) compiles for seconds, which should not pass in silence.
    pub async fn compile(&self, id: &str, bytes: &[u8], digest: &str) -> Result<(Component, Origin), LoadError> {
        check_header(bytes)?;
        if let Some(component) = self.cached(digest).await {
            return Ok((component, Origin::Cache));
        }
        // Compiles take turns; a pack with the same bytes may have been
        // compiled and cached while this one waited for its turn.
        let _turn = self.compiling.acquire().await.expect("the loader never closes its semaphore");
        if let Some(component) = self.cached(digest).await {
            return Ok((component, Origin::Cache));
        }
        let (sandbox, cache) = (self.sandbox.clone(), self.cache.clone());
        let name = id.escape_debug().to_string();
        let (id, bytes, digest) = (id.to_string(), bytes.to_vec(), digest.to_string());
        let started = Instant::now();
        let compile = tokio::task::spawn_blocking(move || {
            // The name is the file's, chosen by the operator; escaped all the same.
            let name = id.escape_debug();
            tracing::info!(plugin = %name, bytes = bytes.len(), "compiling {name} ({})…", megabytes(bytes.len()));
            let started = Instant::now();
            let component = sandbox.compile(&bytes).map_err(|error| LoadError::Invalid(error.to_string()))?;
            let took = started.elapsed();
            tracing::info!(plugin = %name, elapsed_ms = took.as_millis() as u64, "compiled {name} in {}", seconds(took));
            if let Some(cache) = &cache {
                cache.store(&digest, &component);
            }
            Ok((component, Origin::Compiled))
        });
        tokio::pin!(compile);
        let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + COMPILE_PROGRESS_EVERY, COMPILE_PROGRESS_EVERY);
        loop {
            tokio::select! {
                compiled = &mut compile => return compiled.expect("the compile task does not panic"),
                _ = progress.tick() => {
                    tracing::info!(plugin = %name, "still compiling {name}: {} so far…", seconds(started.elapsed()));
                }
            }
        }
    }

    /// The compiled component of the pack with this digest, if the cache has
    /// it (read off the async runtime: it reads and checks a file).
    async fn cached(&self, digest: &str) -> Option<Component> {
        let cache = self.cache.clone()?;
        let _turn = self.reading_cache.acquire().await.expect("the loader never closes its semaphore");
        let (engine, digest) = (self.sandbox.engine().clone(), digest.to_string());
        tokio::task::spawn_blocking(move || cache.load(&engine, &digest)).await.expect("a cache read does not panic")
    }

    /// Loads many plugins concurrently (compiles take turns, one per core,
    /// and cache reads two per core, on the blocking pool). Returns the ones
    /// that loaded, in the order of `sources`, and the failures.
    pub async fn load_all(
        self: &Arc<Self>,
        sources: Vec<PluginSource>,
        settings: impl Fn(&str) -> PluginSettings,
    ) -> (Vec<Plugin>, Vec<LoadFailure>) {
        let mut tasks = tokio::task::JoinSet::new();
        for (index, source) in sources.into_iter().enumerate() {
            let (loader, settings) = (self.clone(), settings(&source.id));
            tasks.spawn(async move { (index, loader.load(source, settings).await) });
        }
        let mut results = tasks.join_all().await;
        results.sort_by_key(|(index, _)| *index);
        let (mut plugins, mut failures) = (Vec::new(), Vec::new());
        for (_, result) in results {
            match result {
                Ok(plugin) => plugins.push(plugin),
                Err(failure) => failures.push(failure),
            }
        }
        (plugins, failures)
    }
}

/// Refuses bytes other than those `prompt-host.lock` records for the plugin,
/// when it was installed from a registry: the lockfile is read at each load,
/// so `add`, `update` and `remove` take effect without a restart. Returns the
/// lockfile's install of exactly these bytes, if it has one.
fn check_installed(id: &str, digest: &str, settings: &PluginSettings) -> Result<Option<LockedPack>, LoadError> {
    let Some(path) = &settings.lockfile else { return Ok(None) };
    let lockfile = Lockfile::read(path).map_err(|error| LoadError::Provenance(error.to_string()))?;
    match lockfile.get(id) {
        Some(locked) if locked.sha256 != digest => Err(LoadError::NotInstalledBytes {
            reference: locked.reference.clone(),
            locked: locked.sha256.clone(),
            actual: digest.to_string(),
        }),
        installed => Ok(installed.cloned()),
    }
}

/// Checks the signature of `source`'s bytes (SHA-256 `digest`) against the
/// plugin's policy, from every source of provenance they have: the record
/// the pack store keeps for this plugin's install of exactly those bytes (a
/// pack from a registry), and the Sigstore bundle beside its file. The
/// record counts only for the install the lockfile has now (`installed`):
/// a record left from an earlier install (a removed pack copied back by
/// hand, a lockfile edited or lost) is not this plugin's provenance, and
/// one that names another pull than the lockfile's is refused.
fn check_signature(
    digest: &str,
    source: &PluginSource,
    installed: Option<&LockedPack>,
    settings: &PluginSettings,
) -> Result<signature::Accepted, LoadError> {
    let record = match (&settings.pack_store, installed) {
        (Some(dir), Some(_)) => PackStore::new(dir.clone()).provenance(&source.id, digest).map_err(LoadError::Provenance)?,
        _ => None,
    };
    if let (Some(record), Some(installed)) = (&record, installed)
        && (installed.pulled_reference().as_ref() != Some(&record.reference) || record.manifest_digest != installed.digest)
    {
        return Err(LoadError::Provenance(format!(
            "the pack store's record says it was pulled from {}, and prompt-host.lock installs it from {} at {}",
            record.reference.escape_debug(),
            installed.reference.escape_debug(),
            installed.digest.escape_debug()
        )));
    }
    signature::check_pack(digest, &source.bytes, record.as_ref(), source.bundle.as_deref(), &settings.signatures, &settings.mirrors)
        .map_err(LoadError::Signature)
}

/// Refuses bytes that do not match the plugin's pinned digest, and unpinned
/// plugins when pins are required.
fn check_pin(digest: &str, settings: &PluginSettings) -> Result<(), LoadError> {
    match &settings.pinned_sha256 {
        Some(pinned) if !pinned.eq_ignore_ascii_case(digest) => {
            Err(LoadError::PinMismatch { pinned: pinned.clone(), actual: digest.to_string() })
        }
        None if settings.require_pinned => Err(LoadError::NotPinned),
        _ => Ok(()),
    }
}

/// Links a compiled component, telling a component of another world apart
/// from one that needs imports the host lacks.
pub fn prepare(sandbox: &Sandbox, component: &Component) -> Result<Linked<CallState>, LoadError> {
    let exports = export_names(sandbox, component);
    let Some(found) = exports.iter().find_map(|name| name.strip_prefix(PROVIDER_INTERFACE)) else {
        let exports = if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") };
        return Err(LoadError::WrongWorld { exports });
    };
    let found = found.trim_start_matches('@');
    let Some(version) = WitVersion::of(found) else {
        let found = if found.is_empty() { "(none)" } else { found };
        return Err(LoadError::UnsupportedVersion { found: found.to_string() });
    };
    sandbox.prepare(component, version).map_err(|error| match error {
        PrepareError::Compile(message) => LoadError::Invalid(message),
        PrepareError::Link(message) => {
            let unsatisfied: Vec<String> = import_names(sandbox, component).into_iter().filter(|name| !is_provided(name)).collect();
            if unsatisfied.is_empty() { LoadError::Link(message) } else { LoadError::UnsatisfiedImports(unsatisfied) }
        }
    })
}

/// The WASI packages the sandbox links (all of WASI 0.2, with nothing
/// granted): the only imports a pack may have.
const PROVIDED_PACKAGES: &[&str] = &["wasi:cli/", "wasi:clocks/", "wasi:filesystem/", "wasi:io/", "wasi:random/", "wasi:sockets/"];

fn is_provided(import: &str) -> bool {
    PROVIDED_PACKAGES.iter().any(|package| import.starts_with(package)) && import.contains("@0.2.")
}

/// The names a component exports.
pub fn export_names(sandbox: &Sandbox, component: &Component) -> Vec<String> {
    let engine = sandbox.engine();
    component.component_type().exports(engine).map(|(name, _)| name.to_string()).collect()
}

/// The names a component imports.
pub fn import_names(sandbox: &Sandbox, component: &Component) -> Vec<String> {
    let engine = sandbox.engine();
    component.component_type().imports(engine).map(|(name, _)| name.to_string()).collect()
}

/// The first eight bytes of a WebAssembly binary: the magic `\0asm`, then a
/// version and a layer that tell a core module from a component.
fn check_header(bytes: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    const CORE_MODULE: &[u8] = &[1, 0, 0, 0];
    if !bytes.starts_with(MAGIC) {
        return Err(LoadError::NotWasm);
    }
    if bytes.get(4..8) == Some(CORE_MODULE) {
        return Err(LoadError::CoreModule);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_tell_files_apart() {
        assert_eq!(check_header(b"hello world"), Err(LoadError::NotWasm));
        assert_eq!(check_header(b"\0asm\x01\0\0\0rest"), Err(LoadError::CoreModule));
        assert_eq!(check_header(b"\0asm\x0d\0\x01\0rest"), Ok(()));
    }

    #[test]
    fn only_wasi_0_2_is_provided() {
        assert!(is_provided("wasi:cli/environment@0.2.6"));
        assert!(!is_provided("wasi:cli/environment@0.3.0"));
        assert!(!is_provided("fixture:extra-import/vault@0.1.0"));
    }

    #[test]
    fn many_definition_problems_are_summarized() {
        let problems: Vec<Problem> = (0..7).map(|n| Problem { problem: format!("problem {n}"), hint: Some("fix it") }).collect();
        assert_eq!(
            LoadError::Definitions(problems).to_string(),
            "its prompt definitions are invalid: problem 0; problem 1; problem 2; problem 3; problem 4; \
             and 2 more (prompt-host inspect lists them all)"
        );
    }

    #[test]
    fn a_failure_reads_as_where_what_and_how_to_fix_it() {
        let failure = LoadFailure { origin: "packs/a.wasm".into(), error: LoadError::CoreModule };
        assert_eq!(
            failure.to_string(),
            "packs/a.wasm: a core WebAssembly module, not a component \
             (hint: build the pack for the wasm32-wasip2 target, or wrap the module with `wasm-tools component new`)"
        );
    }

    #[test]
    fn plugins_are_named_after_their_files() {
        assert_eq!(plugin_id(Path::new("/srv/packs/code_review.wasm")), "code_review");
    }
}
