//! Configuration of a serving host: defaults, the TOML config file, and how
//! the two combine for each plugin.
//!
//! ```toml
//! [server]
//! plugins = "/srv/prompt-packs"   # the plugin directory (a relative path is relative to this file)
//! page_size = 100                 # prompts per page of prompts/list
//! list_ttl_ms = 60000             # how long 2026-07-28 clients may cache a page of it
//! watch = true                    # reload plugins when the directory changes
//! watch_poll_ms = 2000            # poll the directory instead of inotify (NFS)
//! cache_dir = "/var/cache/prompt-host"  # compiled plugins; default ~/.cache/prompt-host
//! cache_max_mib = 512             # the most the compiled cache keeps
//! require_pinned = false          # refuse plugins without a sha256 below
//! request_state_key_file = "state.key"  # seals input-required state and session ids (32+ bytes); shared by replicas; default: random per process
//! request_state_previous_key_files = ["state.key.old"]  # still open state sealed before a rotation
//! store = "prompt-host-store"     # packs pulled from registries (the default)
//! access_log = "access.log"       # one JSON line per prompts/get and completion/complete; reopened at SIGHUP
//!
//! [signatures]                    # what every plugin's signature must be
//! require = false                 # refuse plugins without a valid signature
//! public_keys = ["keys/acme.pub"] # cosign public keys (PEM) whose signatures count
//! trusted_root = "trusted_root.json"  # keyless: Sigstore's trusted root (offline)
//! identities = [{ identity = "release@acme.example", issuer = "https://accounts.google.com" }]
//!                                 # each may pin source_repository, source_ref, workflow (Fulcio's extensions)
//!
//! [registry]                      # how `add`, `update` and `publish` reach registries
//! plain_http = ["127.0.0.1:5000"] # registries spoken to over HTTP, not HTTPS
//! ca_file = "registry-ca.pem"     # a CA trusted besides the system's
//! max_pack_mib = 128              # the largest pack, pulled or in the plugin directory
//! timeout_secs = 300              # the deadline of one pull, tag resolution or push
//! mirrors = { "mirror.local:5000/acme" = "registry.example/acme" }  # pulled from = signed as
//!
//! [limits]                        # every plugin, unless overridden below
//! fuel = 500000000
//! deadline_ms = 1000
//! memory_mib = 64
//! concurrent_calls = 16           # calls into one plugin at once
//!
//! [sandbox]                       # shared by all plugins
//! max_concurrent_calls = 64
//!
//! [elicitation]                   # elicitation/create asked of clients before 2026-07-28
//! timeout_ms = 120000             # how long the host waits for one answer
//! max_pending_per_session = 16    # elicitations waiting at once in one session
//! max_pending_per_tenant = 256    # ... in one tenant
//! max_pending = 1024              # ... in the whole server
//!
//! [plugins.acme]                  # the plugin in acme.wasm
//! prefix = "acme-"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! limits = { deadline_ms = 3000 }
//! source = "oci://registry.example/acme/prompts:1.2"  # installed at start (see prompt-host.lock)
//! require_signature = true        # over signatures.require, for this plugin
//! public_keys = ["keys/acme.pub"] # this plugin's own signers: with identities = [...], or either
//!                                 # alone, they replace signatures.public_keys AND signatures.identities
//!
//! [plugins.acme.grants]           # what it may see of what it asks for (WIT 0.3); nothing by default
//! folders = { logs = "/var/log/acme" }            # read-only, as /logs in the pack
//! env = { API_TOKEN = { file = "secrets/acme" } } # or a value: REGION = "eu-west-1"
//!
//! [authorization]                 # --http as an OAuth 2.1 resource server
//! resource = "https://prompts.example/mcp"  # this server's URI: the tokens' audience
//! issuer = "https://idp.example"  # the authorization server whose tokens count
//! jwks_uri = "https://idp.example/jwks"     # default: from the issuer's metadata
//! scope = "prompts"               # the scope needed to list, get and complete prompts
//! leeway_secs = 30                # on exp and nbf, at most 300
//! jwks_min_refresh_secs = 10      # how often an unknown key id may refetch the keys (at least 1)
//! jwks_max_age_secs = 3600        # keys this old are fetched again in the background (at most 86400)
//! ca_file = "idp-ca.pem"          # a CA trusted for the issuer besides the system's
//! tenant_claim = "tenant"         # required with [tenants]: the claim naming the tenant (a string, or an array such as groups)
//! default_tenant = "public"       # for tokens naming no tenant; default: no prompts
//! accept_untyped_jwt = false      # true: JWTs without typ at+jwt count too (issuers not following RFC 9068)
//! introspection_endpoint = "https://idp.example/token/introspection"  # opaque tokens (RFC 7662)
//! client_id = "prompt-host"       # this server's client at the issuer, to introspect
//! client_secret_file = "idp-client-secret"
//! introspections_per_client = 2   # under way or waiting per client address (1 to 16)
//! trusted_proxies = ["10.0.0.0/8"] # reverse proxies whose X-Forwarded-For names the client
//!
//! [tenants.acme]                  # the prompts of tokens whose tenant claim says "acme"
//! plugins = "packs/acme"
//! [tenants.acme.grants.insights]  # for acme's insights, in place of [plugins.insights.grants]
//! folders = { logs = "/var/log/acme" }
//! ```
//!
//! The file is read, and its errors reported, in one place
//! ([`ServeConfig::from_toml_in`]); each section's own shape and checks are
//! in a module of their own beside it (`config/server.rs`, `sandbox.rs`,
//! `elicitation.rs`, `signatures.rs`, `registry.rs`, `authorization.rs`).

mod authorization;
mod elicitation;
mod grants;
mod registry;
mod sandbox;
mod server;
mod signatures;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::catalog::DEFAULT_PAGE_SIZE;
use crate::handler::DEFAULT_LIST_TTL_MS;
use crate::input::ElicitationLimits;
use crate::loader::PluginSettings;
use crate::transport::authorization::AuthorizationSettings;
use authorization::{AuthorizationSection, TenantSection};
use elicitation::ElicitationSection;
use prompt_host_kernel::grants::Grants;
use prompt_host_kernel::limits::{LimitOverrides, Limits};
use prompt_host_kernel::sandbox::SandboxConfig;
use prompt_host_trust::distribution::RegistrySettings;
use prompt_host_trust::signature::{Identity, Keyless, SignaturePolicy, TrustedKey};
use registry::RegistrySection;
use sandbox::SandboxSection;
use server::ServerSection;
use signatures::{SignaturesSection, read_keys};

pub use authorization::DEFAULT_SCOPE;

/// Everything `prompt-host serve` needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Where the plugins are; `None` serves the packs bundled in the binary.
    pub plugins_dir: Option<PathBuf>,
    /// Prompts on one page of `prompts/list`.
    pub page_size: usize,
    /// How long a 2026-07-28 client may consider a page of `prompts/list`
    /// fresh (its `ttlMs`), in milliseconds.
    pub list_ttl_ms: u64,
    /// Whether the prompts are also served as the tools `list_prompts` and
    /// `get_prompt`, for clients that only call tools
    /// (`server.prompts_as_tools`; off by default).
    pub prompts_as_tools: bool,
    /// Each tenant's own `prompts_as_tools`, where its section sets one.
    pub tenant_prompts_as_tools: BTreeMap<String, bool>,
    /// How often `serve` resolves each configured `source` again and
    /// installs what changed, as `prompt-host update` does
    /// (`server.update_interval`, such as `"60s"`; off by default).
    pub update_interval: Option<std::time::Duration>,
    /// The limits of every plugin without its own.
    pub limits: Limits,
    /// Settings of the sandbox shared by all plugins.
    pub sandbox: SandboxConfig,
    /// The bounds on elicitations waiting for clients' answers.
    pub elicitation: ElicitationLimits,
    /// What is configured for particular plugins, by plugin name.
    pub plugins: BTreeMap<String, PluginConfig>,
    /// Whether a plugin without a pinned SHA-256 is refused.
    pub require_pinned: bool,
    /// Whether the plugin directory is watched for changes.
    pub watch: bool,
    /// Poll the plugin directory at this interval instead of relying on
    /// inotify, which misses changes made on another machine (NFS).
    pub watch_poll: Option<Duration>,
    /// Where compiled plugins are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The most bytes of compiled plugins the cache keeps.
    pub cache_max_bytes: u64,
    /// The file whose contents seal the `requestState` of input-required
    /// prompts and HTTP session ids; `None` seals with a random key of the
    /// process (fine for one replica, see `input::RequestStateSeal` and
    /// `transport::http::session_ids`).
    pub request_state_key_file: Option<PathBuf>,
    /// Files of keys that sealed `requestState` before the current one: a
    /// state they sealed still opens (a key rotation in progress).
    pub request_state_previous_key_files: Vec<PathBuf>,
    /// Where the access log goes, if anywhere (`access_log`).
    pub access_log: Option<PathBuf>,
    /// Where packs pulled from registries are kept, with their provenance;
    /// `None` (no config file) looks for no provenance.
    pub pack_store: Option<PathBuf>,
    /// `prompt-host.lock`, beside the config file; `None` without one.
    pub lockfile: Option<PathBuf>,
    /// What every plugin's signature must be, unless its section says.
    pub signatures: SignaturePolicy,
    /// How registries are reached.
    pub registry: RegistrySettings,
    /// OAuth access tokens for `--http`, if set.
    pub authorization: Option<AuthorizationSettings>,
    /// Each tenant's plugin directory, by tenant name.
    pub tenants: BTreeMap<String, PathBuf>,
    /// What each tenant's plugins are granted, by tenant, then plugin
    /// name (`[tenants.T.grants.NAME]`), in place of `[plugins.NAME.grants]`.
    pub tenant_grants: BTreeMap<String, BTreeMap<String, Grants>>,
    /// For a tenant: its own grants, by plugin name, in place of
    /// `[plugins.NAME.grants]` (kept apart from `plugins`, whose sections
    /// must match plugin files).
    pub own_grants: BTreeMap<String, Grants>,
    /// The tenant serving tokens that name none; `None` serves them no prompts.
    pub default_tenant: Option<String>,
    /// For a tenant: every tenant's plugin directory. `[plugins.NAME]`
    /// sections apply to every tenant, so a section matches a plugin of any
    /// of them (it is not a typo for being absent from this one).
    pub tenant_dirs: Vec<PathBuf>,
}

/// The pack store's default folder, beside the config file.
pub const DEFAULT_PACK_STORE: &str = "prompt-host-store";

/// The default size cap of the compiled cache, in MiB.
pub const DEFAULT_CACHE_MAX_MIB: u64 = 512;

/// The default compiled cache directory: `$XDG_CACHE_HOME/prompt-host`, else
/// `~/.cache/prompt-host`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("prompt-host"))
}

/// What is configured for one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// Put before each of the plugin's prompt names.
    #[serde(default)]
    pub prefix: String,
    /// The folder its skills are served under: `skill://<skill_prefix>/<path>`
    /// (where two packs carry a skill of the same path).
    #[serde(default)]
    pub skill_prefix: String,
    /// Limits that differ from the `[limits]` section.
    #[serde(default)]
    pub limits: LimitOverrides,
    /// The SHA-256 (hex) the plugin file must have: any other file under
    /// that name is refused.
    pub sha256: Option<String>,
    /// Whether only `--prefix` names the plugin, with no `[plugins.NAME]`
    /// section: a warning that the name matches no plugin then names the flag.
    #[serde(skip)]
    pub only_prefix_flag: bool,
    /// The registry it is installed from at start, if any
    /// (`oci://REGISTRY/REPOSITORY:TAG`): see `prompt-host serve`.
    pub source: Option<String>,
    /// Whether the plugin needs a valid signature, over `signatures.require`.
    pub require_signature: Option<bool>,
    /// The keys its signature may be by, in place of
    /// `signatures.public_keys` (files, relative to the config file).
    pub public_keys: Option<Vec<PathBuf>>,
    /// Those keys, read.
    #[serde(skip)]
    pub trusted_keys: Option<Vec<TrustedKey>>,
    /// The identities its keyless signature may be by, in place of
    /// `signatures.identities` (checked against `signatures.trusted_root`).
    pub identities: Option<Vec<Identity>>,
    /// What it is granted to see, as written (`[plugins.NAME.grants]`).
    #[serde(default)]
    grants: grants::GrantsSection,
    /// Those grants, checked and read (paths relative to the config file).
    #[serde(skip)]
    pub granted: Grants,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            plugins_dir: None,
            page_size: DEFAULT_PAGE_SIZE,
            list_ttl_ms: DEFAULT_LIST_TTL_MS,
            prompts_as_tools: false,
            tenant_prompts_as_tools: BTreeMap::new(),
            update_interval: None,
            limits: Limits::default(),
            sandbox: SandboxConfig::default(),
            elicitation: ElicitationLimits::default(),
            plugins: BTreeMap::new(),
            require_pinned: false,
            watch: true,
            watch_poll: None,
            cache_dir: default_cache_dir(),
            cache_max_bytes: DEFAULT_CACHE_MAX_MIB << 20,
            request_state_key_file: None,
            access_log: None,
            request_state_previous_key_files: Vec::new(),
            pack_store: None,
            lockfile: None,
            signatures: SignaturePolicy::default(),
            registry: RegistrySettings::default(),
            authorization: None,
            tenants: BTreeMap::new(),
            tenant_grants: BTreeMap::new(),
            own_grants: BTreeMap::new(),
            default_tenant: None,
            tenant_dirs: Vec::new(),
        }
    }
}

impl ServeConfig {
    /// Whether `tenant`'s prompts (or, with none, the server's own) are also
    /// served as tools: the tenant's `prompts_as_tools` where it sets one,
    /// else `server.prompts_as_tools`.
    pub fn prompts_as_tools_for(&self, tenant: Option<&str>) -> bool {
        tenant.and_then(|tenant| self.tenant_prompts_as_tools.get(tenant).copied()).unwrap_or(self.prompts_as_tools)
    }

    /// The configuration tenant `tenant` is served with: this one, over
    /// the tenant's plugin directory, with its own grants in place of
    /// `[plugins.NAME.grants]` for the plugins it names.
    pub fn for_tenant(&self, tenant: &str, plugins_dir: &Path) -> ServeConfig {
        ServeConfig {
            plugins_dir: Some(plugins_dir.to_path_buf()),
            own_grants: self.tenant_grants.get(tenant).cloned().unwrap_or_default(),
            tenants: BTreeMap::new(),
            tenant_grants: BTreeMap::new(),
            default_tenant: None,
            tenant_dirs: self.tenants.values().cloned().collect(),
            ..self.clone()
        }
    }

    /// The sandbox settings, with memory slots large enough for the largest
    /// memory limit any plugin has.
    pub fn sandbox_config(&self) -> SandboxConfig {
        let largest = self
            .plugins
            .values()
            .map(|plugin| plugin.limits.apply(&self.limits).memory_bytes)
            .chain([self.limits.memory_bytes])
            .max()
            .unwrap_or_default();
        // A tenant's config lists every tenant's directory: one sandbox each.
        let sandboxes = self.tenant_dirs.len().max(1);
        SandboxConfig { max_memory_bytes: largest, sandboxes, ..self.sandbox.clone() }
    }

    /// What applies to the plugin named `plugin`.
    pub fn plugin_settings(&self, plugin: &str) -> PluginSettings {
        let configured = self.plugins.get(plugin).cloned().unwrap_or_default();
        let signatures = self.signature_policy(&configured);
        PluginSettings {
            prefix: configured.prefix,
            skill_prefix: configured.skill_prefix,
            limits: configured.limits.apply(&self.limits),
            pinned_sha256: configured.sha256,
            require_pinned: self.require_pinned,
            signatures,
            pack_store: self.pack_store.clone(),
            lockfile: self.lockfile.clone(),
            mirrors: self.registry.mirrors.clone(),
            grants: self.own_grants.get(plugin).cloned().unwrap_or(configured.granted),
        }
    }

    /// The signature policy of a plugin configured as `configured`. A
    /// plugin that names its own signers (`public_keys`, `identities`, or
    /// both) is checked against those alone: they replace the global keys
    /// and identities, both kinds, so trusting `acme.pub` for acme does not
    /// also trust every identity trusted for the other plugins.
    fn signature_policy(&self, configured: &PluginConfig) -> SignaturePolicy {
        let required = configured.require_signature.unwrap_or(self.signatures.required);
        if configured.trusted_keys.is_none() && configured.identities.is_none() {
            return SignaturePolicy { required, ..self.signatures.clone() };
        }
        let keyless = match (&configured.identities, &self.signatures.keyless) {
            (Some(identities), Some(keyless)) => Some(Keyless { root: keyless.root.clone(), identities: identities.clone() }),
            _ => None,
        };
        SignaturePolicy { required, keys: configured.trusted_keys.clone().unwrap_or_default(), keyless }
    }

    /// Serves plugin `plugin` under `prefix`, as `--prefix PLUGIN=PREFIX`
    /// asks: over what its `[plugins.NAME]` section says, if it has one.
    /// Either way the name is checked against the plugins present, as a
    /// section's is (see [`ServeConfig::unmatched_plugins`]).
    pub fn set_prefix_from_flag(&mut self, plugin: &str, prefix: &str) {
        let configured =
            self.plugins.entry(plugin.to_string()).or_insert_with(|| PluginConfig { only_prefix_flag: true, ..PluginConfig::default() });
        configured.prefix = prefix.to_string();
    }

    /// The plugin names, from `[plugins.NAME]` sections or `--prefix`, that
    /// name none of the `present` plugins (a typo'd name silently configures
    /// nothing), each with the closest present name when one is a likely
    /// typo of it.
    pub fn unmatched_plugins(&self, present: &[String]) -> Vec<UnmatchedPlugin> {
        let elsewhere: Vec<String> = self
            .tenant_dirs
            .iter()
            .filter_map(|dir| crate::loader::plugin_files(dir).ok())
            .flatten()
            .map(|file| crate::loader::plugin_id(&file))
            .collect();
        self.plugins
            .iter()
            .filter(|(name, _)| !present.contains(name) && !elsewhere.contains(name))
            .map(|(name, configured)| UnmatchedPlugin {
                name: name.clone(),
                prefix_flag: configured.only_prefix_flag.then(|| configured.prefix.clone()),
                closest: present
                    .iter()
                    .map(|id| (strsim::levenshtein(name, id), id))
                    .filter(|(distance, _)| *distance <= MAX_TYPO_DISTANCE)
                    .min()
                    .map(|(_, id)| id.clone()),
            })
            .collect()
    }

    /// Reads a config file over the defaults. The paths in it are relative
    /// to the file's folder, not to the working directory; errors name the
    /// file by its absolute path.
    pub fn from_file(path: &Path) -> Result<ServeConfig, ConfigError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let invalid = |problem| ConfigError { path: path.display().to_string(), problem };
        let text = prompt_host_files::read_text(&path).map_err(|error| invalid(error.to_string()))?;
        let folder = path.parent().unwrap_or(Path::new(""));
        ServeConfig::from_toml_in(&text, folder).map_err(invalid)
    }

    /// Parses a config file's text over the defaults, with its paths as
    /// written. The error names the offending key.
    pub fn from_toml(text: &str) -> Result<ServeConfig, String> {
        ServeConfig::from_toml_in(text, Path::new(""))
    }

    /// Parses the text of a config file in `folder` over the defaults: a
    /// relative path in it (server.plugins, server.cache_dir) is relative to
    /// `folder`. The error names the offending key.
    pub fn from_toml_in(text: &str, folder: &Path) -> Result<ServeConfig, String> {
        let file: ConfigFile = toml::from_str(text).map_err(|error| toml_error(text, &error))?;
        file.limits.check("limits")?;
        for (name, plugin) in &file.plugins {
            plugin.limits.check(&format!("plugins.{name}.limits"))?;
        }
        let mut config = ServeConfig::default();
        config.apply_paths_and_trust(&file, folder)?;
        for (name, plugin) in &file.plugins {
            if let Some(pin) = &plugin.sha256
                && !(pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return Err(format!("plugins.{name}.sha256 must be 64 hex digits, not {pin:?}"));
            }
        }
        if let Some(page_size) = file.server.page_size {
            positive("server.page_size", page_size as u64)?;
            config.page_size = page_size;
        }
        config.list_ttl_ms = file.server.list_ttl_ms.unwrap_or(config.list_ttl_ms);
        config.prompts_as_tools = file.server.prompts_as_tools.unwrap_or(config.prompts_as_tools);
        config.update_interval = file.server.update_interval.as_deref().map(update_interval).transpose()?;
        config.limits = file.limits.apply(&config.limits);
        config.sandbox = file.sandbox.apply(&config.sandbox)?;
        config.elicitation = file.elicitation.apply(config.elicitation)?;
        config.apply_plugins(file.plugins, folder)?;
        config.apply_tenants(file.authorization.as_ref(), file.tenants, folder)?;
        Ok(config)
    }

    /// The file's paths (each relative to the file's `folder`), its
    /// signature policy and registry settings, and the server section's
    /// switches.
    fn apply_paths_and_trust(&mut self, file: &ConfigFile, folder: &Path) -> Result<(), String> {
        let config = self;
        // Every path key of the file: relative to the file's folder.
        config.plugins_dir = file.server.plugins.clone().map(|dir| folder.join(dir));
        config.pack_store = Some(folder.join(file.server.store.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_PACK_STORE))));
        config.lockfile = Some(folder.join(prompt_host_trust::lockfile::LOCKFILE_NAME));
        config.signatures = SignaturePolicy {
            required: file.signatures.require.unwrap_or(false),
            keys: read_keys("signatures.public_keys", &file.signatures.public_keys, folder)?,
            keyless: file.signatures.keyless(folder)?,
        };
        config.registry = file.registry.apply(folder)?;
        config.require_pinned = file.server.require_pinned.unwrap_or(config.require_pinned);
        config.watch = file.server.watch.unwrap_or(config.watch);
        if let Some(ms) = file.server.watch_poll_ms {
            positive("server.watch_poll_ms", ms)?;
            config.watch_poll = Some(Duration::from_millis(ms));
        }
        if let Some(dir) = &file.server.cache_dir {
            config.cache_dir = Some(folder.join(dir));
        }
        config.request_state_key_file = file.server.request_state_key_file.as_ref().map(|key| folder.join(key));
        config.access_log = file.server.access_log.as_ref().map(|log| folder.join(log));
        config.request_state_previous_key_files = file.server.request_state_previous_key_files.iter().map(|key| folder.join(key)).collect();
        if config.request_state_key_file.is_none() && !config.request_state_previous_key_files.is_empty() {
            return Err("server.request_state_previous_key_files needs server.request_state_key_file: the key that seals now".into());
        }
        if let Some(mib) = file.server.cache_max_mib {
            positive("server.cache_max_mib", mib)?;
            config.cache_max_bytes = mib.checked_mul(1 << 20).ok_or("server.cache_max_mib is too large")?;
        }
        Ok(())
    }

    /// The `[plugins.NAME]` sections: each source, signer and grant checked
    /// and read.
    fn apply_plugins(&mut self, plugins: BTreeMap<String, PluginConfig>, folder: &Path) -> Result<(), String> {
        let config = self;
        config.plugins = plugins;
        for (name, plugin) in config.plugins.iter_mut() {
            if !plugin.skill_prefix.is_empty() {
                prompt_host_kernel::validate::skill_prefix(&plugin.skill_prefix)
                    .map_err(|problem| format!("plugins.{name}.skill_prefix {:?}: {problem}", plugin.skill_prefix))?;
            }
            if let Some(source) = &plugin.source {
                prompt_host_trust::distribution::PackReference::parse(source).map_err(|error| format!("plugins.{name}.source: {error}"))?;
                if config.plugins_dir.is_none() {
                    return Err(format!("plugins.{name}.source needs server.plugins: packs from registries are installed there"));
                }
            }
            if plugin.identities.as_ref().is_some_and(|identities| identities.is_empty() || config.signatures.keyless.is_none()) {
                return Err(format!("plugins.{name}.identities needs signatures.trusted_root, and at least one identity"));
            }
            // An empty list would replace the global signers with none at all.
            if plugin.public_keys.as_ref().is_some_and(Vec::is_empty) {
                return Err(format!(
                    "plugins.{name}.public_keys is empty: name at least one key file, or leave it out to trust signatures.public_keys and signatures.identities"
                ));
            }
            plugin.granted = plugin.grants.apply(&format!("plugins.{name}.grants"), folder)?;
            if let Some(keys) = &plugin.public_keys {
                plugin.trusted_keys = Some(read_keys(&format!("plugins.{name}.public_keys"), keys, folder)?);
            }
        }
        Ok(())
    }

    /// The `[authorization]` section and the `[tenants.NAME]` sections,
    /// which need it.
    fn apply_tenants(
        &mut self,
        authorization: Option<&AuthorizationSection>,
        tenants: BTreeMap<String, TenantSection>,
        folder: &Path,
    ) -> Result<(), String> {
        let config = self;
        if let Some(section) = authorization {
            config.authorization = Some(section.apply(folder)?);
            config.default_tenant = section.default_tenant.clone();
        }
        for (name, tenant) in tenants {
            let mut grants = BTreeMap::new();
            for (plugin, section) in &tenant.grants {
                grants.insert(plugin.clone(), section.apply(&format!("tenants.{name}.grants.{plugin}"), folder)?);
            }
            config.tenant_grants.insert(name.clone(), grants);
            if let Some(on) = tenant.prompts_as_tools {
                config.tenant_prompts_as_tools.insert(name.clone(), on);
            }
            config.tenants.insert(name, folder.join(tenant.plugins));
        }
        if !config.tenants.is_empty() {
            match &config.authorization {
                None => {
                    return Err("[tenants] need an [authorization] section (resource, issuer and tenant_claim): \
                                a tenant is picked by a claim of the client's access token"
                        .into());
                }
                Some(authorization) if authorization.tenant_claim.is_none() => {
                    return Err("tenants need authorization.tenant_claim: the claim of a token that names its tenant".into());
                }
                Some(_) => {}
            }
        }
        if let Some(default) = &config.default_tenant
            && !config.tenants.contains_key(default)
        {
            return Err(format!("authorization.default_tenant {default:?} is not a [tenants.NAME] section"));
        }
        Ok(())
    }
}

/// A config file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config file {path}: {problem}")]
pub struct ConfigError {
    pub path: String,
    pub problem: String,
}

/// A `[plugins.NAME]` section, or a `--prefix NAME=PREFIX`, that matches no
/// plugin file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedPlugin {
    pub name: String,
    /// The prefix, when only `--prefix` names the plugin.
    pub prefix_flag: Option<String>,
    /// A plugin whose name is a few edits away: what was probably meant.
    pub closest: Option<String>,
}

impl std::fmt::Display for UnmatchedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.name.escape_debug();
        match &self.prefix_flag {
            None => write!(f, "[plugins.{name}] matches no plugin file (no {name}.wasm).")?,
            Some(prefix) => write!(f, "--prefix {name}={} matches no plugin file (no {name}.wasm).", prefix.escape_debug())?,
        }
        match (&self.closest, &self.prefix_flag) {
            (None, _) => Ok(()),
            (Some(closest), None) => write!(f, " Did you mean [plugins.{}]?", closest.escape_debug()),
            (Some(closest), Some(_)) => write!(f, " Did you mean '{}'?", closest.escape_debug()),
        }
    }
}

/// Edits (Levenshtein distance) within which a plugin name is suggested for
/// a section that matches none.
const MAX_TYPO_DISTANCE: usize = 2;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    server: ServerSection,
    #[serde(default)]
    limits: LimitOverrides,
    #[serde(default)]
    sandbox: SandboxSection,
    #[serde(default)]
    elicitation: ElicitationSection,
    #[serde(default)]
    plugins: BTreeMap<String, PluginConfig>,
    #[serde(default)]
    signatures: SignaturesSection,
    #[serde(default)]
    registry: RegistrySection,
    authorization: Option<AuthorizationSection>,
    #[serde(default)]
    tenants: BTreeMap<String, TenantSection>,
}

/// The shortest and longest `server.update_interval`: a registry is asked
/// at most once a second per source, and at least once a day.
const UPDATE_INTERVAL_RANGE: (u64, u64) = (1, 86_400);

/// `server.update_interval`: a whole number of seconds, minutes or hours
/// (`"90s"`, `"5m"`, `"1h"`), within [`UPDATE_INTERVAL_RANGE`].
fn update_interval(text: &str) -> Result<std::time::Duration, String> {
    let refused = || {
        format!(
            "server.update_interval: {:?} is not a whole number of seconds, minutes or hours (\"90s\", \"5m\", \"1h\") from {} s to {} h",
            prompt_host_kernel::validate::error_message(text),
            UPDATE_INTERVAL_RANGE.0,
            UPDATE_INTERVAL_RANGE.1 / 3600
        )
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(refused)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| refused())?;
    let seconds = match unit {
        "s" => Some(number),
        "m" => number.checked_mul(60),
        "h" => number.checked_mul(3600),
        _ => None,
    };
    match seconds {
        Some(seconds) if (UPDATE_INTERVAL_RANGE.0..=UPDATE_INTERVAL_RANGE.1).contains(&seconds) => {
            Ok(std::time::Duration::from_secs(seconds))
        }
        _ => Err(refused()),
    }
}

/// What is wrong in a config file's text, and where (line and column):
/// never the line itself, which toml's own message quotes, and which may
/// hold a granted secret. The key the line sets is named when it is a bare
/// key; within a `grants` table (and on a line that names one), the line's
/// key is not named (the line may be inside a multi-line secret), and
/// quoted parts of the message, which may be the value, are left out too,
/// unless all it quotes is key names (a key unknown, missing or given twice).
fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    let Some(span) = error.span() else { return message.to_string() };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |line| line.chars().count()) + 1;
    let whole = text.lines().nth(line - 1).unwrap_or("");
    let table = text.lines().take(line).filter(|line| line.trim_start().starts_with('[')).last().unwrap_or("");
    if table.contains("grants") || whole.contains("grants") {
        let message = if quotes_only_keys(message) { message.to_string() } else { without_quoted(message) };
        return format!("line {line}, column {column}: {message} (in a grants table, values are not shown)");
    }
    let key: String = whole.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).collect();
    let sets = whole.trim_start()[key.len()..].trim_start().starts_with('=');
    match key.is_empty() || !sets {
        true => format!("line {line}, column {column}: {message}"),
        false => format!("line {line}, column {column}, key {key}: {message}"),
    }
}

/// Whether toml's `message` quotes nothing but key names (a key unknown,
/// missing or given twice): key names are no secret, and are shown.
fn quotes_only_keys(message: &str) -> bool {
    ["unknown field `", "missing field `", "duplicate key `", "duplicate field `"].iter().any(|start| message.starts_with(start))
}

/// `message` with whatever it quotes (`"..."`, `` `...` ``) left out.
fn without_quoted(message: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    for c in message.chars() {
        match quote {
            Some(open) if c == open => {
                out.push('…');
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if c == '"' || c == '`' => {
                out.push(c);
                quote = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// `value`, which `key` gives, must be at least 1.
fn positive(key: &str, value: u64) -> Result<(), String> {
    if value == 0 { Err(format!("{key} must be at least 1")) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_need_a_tenant_claim_and_a_default_tenant_must_be_one() {
        let authorization = "[authorization]\nresource = \"https://p.example/mcp\"\nissuer = \"https://idp.example\"\n";
        let tenants = "[tenants.acme]\nplugins = \"acme\"\n";
        assert_eq!(
            ServeConfig::from_toml(&format!("{authorization}{tenants}")).unwrap_err(),
            "tenants need authorization.tenant_claim: the claim of a token that names its tenant"
        );
        assert_eq!(
            ServeConfig::from_toml(&format!("{authorization}tenant_claim = \"tenant\"\ndefault_tenant = \"public\"\n{tenants}"))
                .unwrap_err(),
            "authorization.default_tenant \"public\" is not a [tenants.NAME] section"
        );
        assert_eq!(
            ServeConfig::from_toml(tenants).unwrap_err(),
            "[tenants] need an [authorization] section (resource, issuer and tenant_claim): \
             a tenant is picked by a claim of the client's access token"
        );
        let config = ServeConfig::from_toml(&format!("{authorization}tenant_claim = \"groups\"\n{tenants}")).unwrap();
        assert_eq!(config.tenants, BTreeMap::from([("acme".to_string(), PathBuf::from("acme"))]));
        let authorization = config.authorization.unwrap();
        assert_eq!((authorization.scope.as_str(), authorization.tenant_claim.as_deref()), ("prompts", Some("groups")));
        assert_eq!(
            ServeConfig::from_toml("[authorization]\nresource = \"https://p.example/mcp\"\nissuer = \"http://idp.example\"\n").unwrap_err(),
            "authorization.issuer must be an https:// URL (plain http only on loopback): http://idp.example/"
        );
    }

    #[test]
    fn a_tenants_grants_replace_the_plugins_for_that_tenant_alone() {
        let config = ServeConfig::from_toml(
            "[authorization]\nresource = \"https://p.example/mcp\"\nissuer = \"https://idp.example\"\ntenant_claim = \"tenant\"\n\
             [plugins.insights.grants]\nhttp = [\"https://shared.example\"]\n\
             [tenants.acme]\nplugins = \"acme\"\n[tenants.acme.grants.insights]\nhttp = [\"https://acme.example/v1/\"]\n\
             [tenants.other]\nplugins = \"other\"\n",
        )
        .unwrap();
        let origins = |tenant: &str| config.for_tenant(tenant, Path::new(tenant)).plugin_settings("insights").grants.origins;
        assert_eq!(origins("acme"), [prompt_host_kernel::grants::Origin::parse("https://acme.example/v1/").unwrap()]);
        assert_eq!(origins("other"), [prompt_host_kernel::grants::Origin::parse("https://shared.example").unwrap()]);
        // What would grant acme's insights more names acme's own table; no [plugins.insights] section appears.
        let acme = config.for_tenant("acme", Path::new("acme"));
        assert_eq!(acme.plugin_settings("insights").grants.section.as_deref(), Some("tenants.acme.grants.insights"));
        assert_eq!(acme.plugins.keys().collect::<Vec<_>>(), ["insights"], "only the global section");
        // Each of the two tenants' sandboxes takes half the process's descriptors for grants.
        assert_eq!(config.for_tenant("acme", Path::new("acme")).sandbox_config().sandboxes, 2);
        assert_eq!(ServeConfig::default().sandbox_config().sandboxes, 1);
        assert_eq!(
            ServeConfig::from_toml(
                "[authorization]\nresource = \"https://p.example/mcp\"\nissuer = \"https://idp.example\"\ntenant_claim = \"t\"\n\
                 [tenants.acme]\nplugins = \"acme\"\n[tenants.acme.grants.insights]\nhttp = [\"ftp://x\"]\n"
            )
            .unwrap_err(),
            "tenants.acme.grants.insights.http: \"ftp://x\" is not an origin such as \"https://api.example.com/v1/\": its scheme is neither https nor http"
        );
    }

    #[test]
    fn the_leeway_and_the_keys_age_are_bounded() {
        let authorization = "[authorization]\nresource = \"https://p.example/mcp\"\nissuer = \"https://idp.example\"\n";
        assert_eq!(
            ServeConfig::from_toml(&format!("{authorization}leeway_secs = 301\n")).unwrap_err(),
            "authorization.leeway_secs must be at most 300"
        );
        assert_eq!(
            ServeConfig::from_toml(&format!("{authorization}jwks_max_age_secs = 0\n")).unwrap_err(),
            "authorization.jwks_max_age_secs must be between 1 and 86400"
        );
        assert_eq!(
            ServeConfig::from_toml(&format!("{authorization}introspections_per_client = 17\n")).unwrap_err(),
            "authorization.introspections_per_client must be between 1 and 16"
        );
        let config = ServeConfig::from_toml(&format!("{authorization}leeway_secs = 300\njwks_max_age_secs = 60\n")).unwrap();
        let authorization = config.authorization.unwrap();
        assert_eq!((authorization.leeway, authorization.keys_max_age), (Duration::from_secs(300), Duration::from_secs(60)));
    }

    #[test]
    fn a_pack_pulled_may_be_no_larger_than_a_pack_file_the_host_reads() {
        assert!(ServeConfig::from_toml("[registry]\nmax_pack_mib = 1024\n").is_ok());
        assert_eq!(
            ServeConfig::from_toml("[registry]\nmax_pack_mib = 1025\n").unwrap_err(),
            "registry.max_pack_mib is 1025, more than the 1024 MiB a pack file may have"
        );
    }

    #[test]
    fn an_empty_file_gives_the_defaults() {
        let store = Some(PathBuf::from(DEFAULT_PACK_STORE));
        let lockfile = Some(PathBuf::from(prompt_host_trust::lockfile::LOCKFILE_NAME));
        assert_eq!(ServeConfig::from_toml(""), Ok(ServeConfig { pack_store: store, lockfile, ..ServeConfig::default() }));
    }

    #[test]
    fn plugin_limits_override_the_defaults_which_override_the_built_in_ones() {
        let config = ServeConfig::from_toml(
            r#"
            [server]
            plugins = "/srv/packs"
            page_size = 10

            [limits]
            fuel = 1000
            memory_mib = 32

            [sandbox]
            max_concurrent_calls = 4

            [plugins.acme]
            prefix = "acme-"
            limits = { fuel = 5, deadline_ms = 3000 }
            "#,
        )
        .unwrap();
        assert_eq!(config.plugins_dir, Some(PathBuf::from("/srv/packs")));
        assert_eq!(config.page_size, 10);
        assert_eq!(config.sandbox.max_concurrent_calls, 4);

        let acme = config.plugin_settings("acme");
        assert_eq!(acme.prefix, "acme-");
        assert_eq!(acme.limits.fuel, 5);
        assert_eq!(acme.limits.deadline, Duration::from_millis(3000));
        assert_eq!(acme.limits.memory_bytes, 32 << 20);

        let other = config.plugin_settings("other");
        assert_eq!(other.prefix, "");
        assert_eq!(other.limits.fuel, 1000);
        assert_eq!(other.limits.deadline, Limits::default().deadline);
    }

    #[test]
    fn a_mistake_is_placed_by_line_and_column_and_never_quotes_the_line() {
        // The line may hold a granted secret: toml's own message quotes it.
        for text in [
            "[plugins.acme.grants.env]\nAPI_TOKEN = hunter2secret\n",
            "[plugins.acme.grants.env]\nAPI_TOKEN = { value = \"hunter2secret\" }\n",
            "[plugins.acme.grants.env]\nAPI_TOKEN = \"hunter2\"secret\"\n",
            "[plugins.acme.grants]\nenv = \"API_TOKEN=hunter2secret\"\n",
            "[plugins.acme.grants.env]\nAPI_TOKEN = 123456789012345678901234567890123456789012hunter2\n",
            "[plugins.acme.grants.env]\nAPI_TOKEN: hunter2secret\n",
            "[plugins.acme.grants.env]\nAPI_TOKEN = \"\"\"\nse=hunter2 \\q\n\"\"\"\n",
        ] {
            let error = ServeConfig::from_toml(text).unwrap_err();
            assert!(!error.contains("hunter2"), "{error}");
            assert!(error.starts_with("line 2, column ") || error.starts_with("line 3, column "), "{error}");
            assert!(error.ends_with("(in a grants table, values are not shown)"), "{error}");
        }
    }

    #[test]
    fn a_mistyped_key_in_a_grants_table_is_named_and_no_value_is_shown() {
        let error = ServeConfig::from_toml("[plugins.acme.grants.foldrs]\nlogs = \"/var/log\"\n").unwrap_err();
        assert_eq!(
            error,
            "line 1, column 22: unknown field `foldrs`, expected one of `folders`, `env`, `http` \
             (in a grants table, values are not shown)"
        );
        let error = ServeConfig::from_toml("[plugins.acme.grants.env]\nAPI_TOKEN = { fil = \"hunter2\" }\n").unwrap_err();
        assert!(!error.contains("hunter2"), "{error}");
    }

    #[test]
    fn an_unknown_key_is_named() {
        let error = ServeConfig::from_toml("[limits]\nfuell = 5\n").unwrap_err();
        assert!(error.contains("unknown field `fuell`"), "{error}");
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn a_zero_limit_is_named() {
        assert_eq!(
            ServeConfig::from_toml("[plugins.acme.limits]\ndeadline_ms = 0\n"),
            Err("plugins.acme.limits.deadline_ms must be at least 1".into())
        );
        assert_eq!(
            ServeConfig::from_toml("[sandbox]\nmax_concurrent_calls = 0\n"),
            Err("sandbox.max_concurrent_calls must be at least 1".into())
        );
        assert_eq!(ServeConfig::from_toml("[limits]\nmemory_mib = 17592186044416\n"), Err("limits.memory_mib must be at most 4096".into()));
    }

    #[test]
    fn a_stack_the_engine_cannot_run_is_refused_naming_the_maximum() {
        assert_eq!(
            ServeConfig::from_toml("[sandbox]\nmax_wasm_stack_kib = 2048\n"),
            Err("sandbox.max_wasm_stack_kib must be at most 1536: calls run on the engine's 2048 KiB stacks, \
                 and the host's own functions need the rest"
                .into())
        );
        let config = ServeConfig::from_toml("[sandbox]\nmax_wasm_stack_kib = 1536\n").unwrap();
        assert_eq!(config.sandbox.max_wasm_stack, 1536 << 10);
    }

    #[test]
    fn the_new_limits_are_read_in_their_units() {
        let config = ServeConfig::from_toml("[limits]\nmax_catalog_kib = 2\n\n[plugins.acme.limits]\nconcurrent_calls = 3\n").unwrap();
        let acme = config.plugin_settings("acme").limits;
        assert_eq!((acme.max_catalog_bytes, acme.concurrent_calls), (2 << 10, 3));
        assert_eq!(config.plugin_settings("other").limits.concurrent_calls, 16);
    }

    #[test]
    fn pins_are_read_and_checked() {
        let pin = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let config = ServeConfig::from_toml(&format!("[server]\nrequire_pinned = true\n[plugins.acme]\nsha256 = \"{pin}\"\n")).unwrap();
        let settings = config.plugin_settings("acme");
        assert_eq!(settings.pinned_sha256.as_deref(), Some(pin));
        assert!(settings.require_pinned);
        assert_eq!(
            ServeConfig::from_toml("[plugins.acme]\nsha256 = \"abc\"\n"),
            Err("plugins.acme.sha256 must be 64 hex digits, not \"abc\"".into())
        );
    }

    #[test]
    fn a_section_for_no_plugin_is_found_with_the_closest_name() {
        let config = ServeConfig::from_toml("[plugins.code_reveiw]\nprefix = \"a-\"\n[plugins.zzz]\n[plugins.dev]\n").unwrap();
        let present = ["code_review".to_string(), "dev".to_string()];
        let unmatched = config.unmatched_plugins(&present);
        assert_eq!(
            unmatched.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "[plugins.code_reveiw] matches no plugin file (no code_reveiw.wasm). Did you mean [plugins.code_review]?",
                "[plugins.zzz] matches no plugin file (no zzz.wasm).",
            ]
        );
    }

    #[test]
    fn a_skill_prefix_is_a_short_path_by_the_skill_path_rules() {
        let config = ServeConfig::from_toml("[plugins.acme]\nskill_prefix = \"team-a\"\n").unwrap();
        assert_eq!(config.plugin_settings("acme").skill_prefix, "team-a");
        assert_eq!(config.plugin_settings("other").skill_prefix, "");
        for (prefix, problem) in [
            ("../up", "its path has the segment \"..\": paths name files beneath the skill, never above"),
            ("a/b/c", "it has more than 2 segments, the most a skill prefix has"),
            ("/abs", "its path has an empty segment (a leading, trailing or doubled '/'): paths are relative"),
            ("Team-B", "it holds an uppercase letter: a skill prefix is lowercase"),
        ] {
            assert_eq!(
                ServeConfig::from_toml(&format!("[plugins.acme]\nskill_prefix = {prefix:?}\n")).map(|_| ()),
                Err(format!("plugins.acme.skill_prefix {prefix:?}: {problem}")),
            );
        }
    }

    #[test]
    fn a_prefix_flag_for_no_plugin_is_found_as_a_section_is_and_named_as_the_flag() {
        let mut config = ServeConfig::from_toml("[plugins.dev]\nprefix = \"d-\"\n").unwrap();
        config.set_prefix_from_flag("code_reveiw", "x_");
        config.set_prefix_from_flag("dev", "e-");
        config.set_prefix_from_flag("nothing_like_it", "n-");
        assert_eq!(config.plugin_settings("dev").prefix, "e-");
        let present = ["code_review".to_string()];
        assert_eq!(
            config.unmatched_plugins(&present).iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "--prefix code_reveiw=x_ matches no plugin file (no code_reveiw.wasm). Did you mean 'code_review'?",
                "[plugins.dev] matches no plugin file (no dev.wasm).",
                "--prefix nothing_like_it=n- matches no plugin file (no nothing_like_it.wasm).",
            ]
        );
    }

    #[test]
    fn relative_paths_in_a_config_file_are_relative_to_its_folder() {
        let text = "[server]\nplugins = \"packs\"\ncache_dir = \"../cache\"\nrequest_state_key_file = \"state.key\"\n\
                    request_state_previous_key_files = [\"old.key\", \"/keys/older.key\"]\n";
        let config = ServeConfig::from_toml_in(text, Path::new("/etc/prompt-host")).unwrap();
        assert_eq!(config.plugins_dir, Some(PathBuf::from("/etc/prompt-host/packs")));
        assert_eq!(config.cache_dir, Some(PathBuf::from("/etc/prompt-host/../cache")));
        assert_eq!(config.request_state_key_file, Some(PathBuf::from("/etc/prompt-host/state.key")));
        assert_eq!(config.request_state_previous_key_files, [PathBuf::from("/etc/prompt-host/old.key"), PathBuf::from("/keys/older.key")]);
        assert_eq!(
            ServeConfig::from_toml_in("[server]\nrequest_state_previous_key_files = [\"old.key\"]\n", Path::new("/etc"))
                .unwrap_err()
                .to_string(),
            "server.request_state_previous_key_files needs server.request_state_key_file: the key that seals now"
        );
        let absolute = ServeConfig::from_toml_in("[server]\nplugins = \"/srv/packs\"\n", Path::new("/etc")).unwrap();
        assert_eq!(absolute.plugins_dir, Some(PathBuf::from("/srv/packs")));

        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("prompt-host.toml");
        std::fs::write(&file, text).unwrap();
        let config = ServeConfig::from_file(&file).unwrap();
        assert_eq!(config.plugins_dir, Some(folder.path().join("packs")));
        // A file named relative to the working directory is named absolute in errors.
        let error = ServeConfig::from_file(Path::new("no-such-prompt-host.toml")).unwrap_err();
        assert_eq!(error.path, std::env::current_dir().unwrap().join("no-such-prompt-host.toml").display().to_string());
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named() {
        let error = ServeConfig::from_toml("[limits]\nfuel = \"lots\"\n").unwrap_err();
        assert!(error.contains("fuel"), "{error}");
        assert!(error.contains("invalid type: string \"lots\""), "{error}");
    }
}

#[cfg(test)]
mod update_interval_tests {
    use super::*;

    #[test]
    fn an_update_interval_is_whole_seconds_minutes_or_hours_within_its_range() {
        let interval =
            |text: &str| ServeConfig::from_toml(&format!("[server]\nupdate_interval = {text:?}\n")).map(|config| config.update_interval);
        assert_eq!(interval("90s"), Ok(Some(std::time::Duration::from_secs(90))));
        assert_eq!(interval("5m"), Ok(Some(std::time::Duration::from_secs(300))));
        assert_eq!(interval("24h"), Ok(Some(std::time::Duration::from_secs(86_400))));
        assert_eq!(ServeConfig::from_toml("").unwrap().update_interval, None);
        for refused in ["0s", "25h", "1.5m", "60", "s", "10 s", "99999999999999999999h"] {
            assert_eq!(
                interval(refused).unwrap_err(),
                format!(
                    "server.update_interval: {refused:?} is not a whole number of seconds, minutes or hours (\"90s\", \"5m\", \"1h\") from 1 s to 24 h"
                ),
                "{refused}"
            );
        }
    }
}

#[cfg(test)]
mod reference {
    use super::*;

    /// What serde says of a key no table has, set in the table at `path`.
    fn refusal(path: &str) -> String {
        ServeConfig::from_toml(&format!("[{path}]\nnot_a_key_of_any_table = 1\n")).expect_err(path)
    }

    /// The keys of the table at `path`, as its own refusal of an unknown key
    /// lists them ("expected one of `a`, `b`"), or None when it is no table
    /// of fixed keys.
    fn keys_of(path: &str) -> Option<Vec<String>> {
        let refused = refusal(path);
        let listed = refused.split("unknown field `not_a_key_of_any_table`, expected ").nth(1)?;
        Some(listed.split('`').skip(1).step_by(2).map(str::to_string).collect())
    }

    /// Every key a config file may set, as `section.key` paths (a table of
    /// names, such as `[plugins.NAME]`, walked through the name `NAME`).
    fn every_key() -> Vec<String> {
        let mut found = Vec::new();
        let mut tables: Vec<String> = keys_of("").unwrap_or_default();
        let top = ServeConfig::from_toml("not_a_key_of_any_table = 1\n").unwrap_err();
        tables.extend(top.split('`').skip(3).step_by(2).map(str::to_string));
        while let Some(path) = tables.pop() {
            if let Some(keys) = keys_of(&path) {
                tables.extend(keys.iter().map(|key| format!("{path}.{key}")));
            } else if refusal(&path).contains("invalid type: integer") && !path.ends_with(".NAME") {
                // A table of names: its entries are tables of their own.
                tables.push(format!("{path}.NAME"));
            } else {
                found.push(path);
            }
        }
        found.sort();
        found
    }

    /// The book's config reference (docs/config-file.md, and for the
    /// limits the generated table of docs/security/limits.md, to which it
    /// points) names every key the parser accepts, so a key added to a
    /// section cannot go undocumented.
    #[test]
    fn the_config_reference_names_every_key() {
        let page = include_str!("../../docs/config-file.md");
        let limits_page = include_str!("../../docs/security/limits.md");
        let keys = every_key();
        // The walk reached every section, the tables of names among them.
        for expected in ["server.plugins", "limits.fuel", "plugins.NAME.limits.fuel", "plugins.NAME.grants.http", "tenants.NAME.plugins"] {
            assert!(keys.iter().any(|key| key == expected), "{expected} not found in {keys:?}");
        }
        // Set in the sample (`key = `, commented out or not, or inline
        // `{ key = `), or a table of its own (`.key]`); a limit in the
        // limits table (`` `key` ``).
        let set_in_sample = |leaf: &str| {
            page.lines().any(|line| {
                let line = line.trim_start().trim_start_matches('#').trim_start();
                line.starts_with(&format!("{leaf} =")) || line.contains(&format!("{{ {leaf} =")) || line.contains(&format!(".{leaf}]"))
            })
        };
        let missing: Vec<&String> = keys
            .iter()
            .filter(|key| {
                let words: Vec<&str> = key.split('.').filter(|word| *word != "NAME").collect();
                let leaf = words.last().expect("a key has a name");
                let in_limits = words.iter().rev().nth(1) == Some(&"limits") || words[0] == "sandbox";
                match in_limits {
                    true => !limits_page.contains(&format!("`{leaf}`")),
                    false => !set_in_sample(leaf),
                }
            })
            .collect();
        assert!(missing.is_empty(), "docs/config-file.md does not name {missing:?}");
    }
}
