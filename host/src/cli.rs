//! The command line: every command and option of `prompt-host`, parsed by
//! the binary with clap; the configuration `serve` and the one-plugin
//! commands read from them (the config file under the options); and
//! [`run`], which runs a command: `serve` is [`crate::serve`]'s, the others
//! are in `one_plugin` (`inspect`, `get`, `complete`), `packs` (the
//! registry commands) and `starting` (`new`, `examples`). Only what a
//! command was asked for goes to stdout.

// The options' doc comments are clap's help text, where `[registry]` names
// a section of the config file, not an item.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::bare_urls)]

mod one_plugin;
mod packs;
mod starting;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use prompt_host_kernel::limits::LimitOverrides;

use crate::config::{ConfigError, ServeConfig};
use crate::error::RequestError;
use crate::install::InstallError;
use crate::loader::LoadFailure;
use crate::scaffold::Language;
use crate::serve::{App, ServeError};
use crate::transport::{http, stdio};
use prompt_host_trust::lockfile::LockfileError;

/// What `--version` prints: the version, the WIT versions packs may target,
/// and what the binary was built with and from.
pub static LONG_VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{}\naccepts packs built against {}\nbuilt with {}",
        env!("CARGO_PKG_VERSION"),
        crate::loader::accepted_wit_versions(),
        env!("PROMPT_HOST_BUILD")
    )
});

// Every command and option; `about` is the package's description.
#[derive(Parser)]
#[command(name = "prompt-host", version, long_version = LONG_VERSION.as_str(), about, long_about = None)]
pub struct Cli {
    /// How log lines (on stderr) are written: text for people, or one JSON
    /// object per line for log shippers.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum Command {
    /// Create a new prompt pack, ready to build: a starter prompt, the WIT
    /// contract, and (for Rust) the SDK.
    New {
        /// The pack's name: it names the directory, the plugin and its .wasm
        /// file, so a plugin name (lowercase letters, digits, '-' and '_');
        /// in Rust, its crate's too (no '-', starting with a letter).
        name: String,
        /// The language to write the pack in.
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// Where to create it [default: ./NAME]. It must not exist, or be empty.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Serve MCP over stdio (stdin and stdout carry the protocol; logs go to
    /// stderr), or over Streamable HTTP with --http.
    Serve(ServeArgs),
    /// Manage the named bearer tokens of `serve --auth-tokens-file`.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Write the example packs built in (DIR/plugins/NAME.wasm), and a
    /// config that serves them (DIR/prompt-host.toml), to start from.
    Examples {
        /// Where to write them. It must not exist, or be empty.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Load one plugin as the server would, and report on it: its prompts,
    /// imports, size, compile time, what listing its prompts cost, and every
    /// problem that would stop the server loading it, with a hint for each.
    ///
    /// Exits with status 1 when the server would refuse the plugin.
    Inspect {
        /// The plugin file (a WebAssembly component).
        file: PathBuf,
        /// Print the report as JSON, for machines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        plugin: OnePluginArgs,
    },
    /// Run one prompt of a plugin file without a client, and print the
    /// result as a client would receive it (JSON).
    ///
    /// Exits with status 1 and the error on stderr when the prompt fails.
    Get {
        /// The plugin file (a WebAssembly component).
        file: PathBuf,
        /// The prompt's name, as a client asks for it: as the plugin declares
        /// it, after the prefix the config file gives the plugin, if any.
        prompt: String,
        /// Arguments, each NAME=VALUE.
        #[arg(value_name = "NAME=VALUE", value_parser = parse_argument)]
        arguments: Vec<(String, String)>,
        /// An answer to a field of a form the prompt asks for (repeatable).
        /// A required field without one is asked for on a terminal.
        #[arg(long = "answer", value_name = "FIELD=VALUE", value_parser = parse_argument)]
        answers: Vec<(String, String)>,
        #[command(flatten)]
        plugin: OnePluginArgs,
    },
    /// Print a shell completion script for prompt-host (for example
    /// `prompt-host completions bash > /etc/bash_completion.d/prompt-host`).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print prompt-host's man page (roff), for `man -l -` or a man directory.
    Man,
    /// Ask a plugin file for completions of one argument of a prompt, as a
    /// client's completion/complete would, and print the result (JSON).
    ///
    /// Exits with status 1 and the error on stderr when the call fails.
    Complete {
        /// The plugin file (a WebAssembly component).
        file: PathBuf,
        /// The prompt's name, as a client asks for it.
        prompt: String,
        /// The argument to complete.
        argument: String,
        /// What the user has typed of it so far.
        #[arg(default_value = "")]
        typed: String,
        /// Arguments already filled in, each NAME=VALUE.
        #[arg(long = "with", value_name = "NAME=VALUE", value_parser = parse_argument)]
        context: Vec<(String, String)>,
        #[command(flatten)]
        plugin: OnePluginArgs,
    },
    /// Install a pack from an OCI registry into the plugin directory: pull
    /// it, verify its signature against the config's policy, record it in
    /// prompt-host.lock (beside the config file), then place it, whole, where
    /// a running server loads it.
    Add {
        /// oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:HEX
        reference: String,
        /// The plugin's name [default: the repository's last segment].
        #[arg(long)]
        name: Option<String>,
        /// Install it even if it is older than the pack of that name removed
        /// before (the lockfile remembers removed packs, so that remove then
        /// add is no way around the rollback checks).
        #[arg(long)]
        allow_downgrade: bool,
        /// Replace a plugin file of that name that was not installed from a
        /// registry (copied in by hand), in one rename: a running server
        /// swaps it, never serving neither.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        plain: PlainHttpArgs,
        #[command(flatten)]
        install: InstallArgs,
    },
    /// Resolve the tags of installed packs again (or of NAME's) and install
    /// what changed, verified, never an older pack: not a digest the install
    /// had before, nor a lower version (describe-pack). A pack that fails
    /// keeps what is installed, and the reason is printed; exits with status
    /// 1 if any failed. The pack store then keeps only what prompt-host.lock
    /// names. With --to, moves NAME to another reference (a new tag, say)
    /// with the checks add makes, replacing its file in one step.
    Update {
        name: Option<String>,
        /// Move NAME to this reference (oci://REGISTRY/REPOSITORY:TAG or
        /// @sha256:...) instead of resolving its own again.
        #[arg(long, value_name = "REFERENCE", requires = "name")]
        to: Option<String>,
        /// Install what the reference names even if it is older than the
        /// installed pack (a rollback you mean).
        #[arg(long)]
        allow_downgrade: bool,
        /// Reach the registry of --to's reference, or of each pack updated,
        /// over plain HTTP (credentials go over plain HTTP only to a
        /// registry on this machine).
        #[arg(long)]
        plain_http: bool,
        #[command(flatten)]
        install: InstallArgs,
    },
    /// Remove a pack installed from a registry: its plugin file (a running
    /// server unloads it) and its prompt-host.lock entry.
    Remove {
        name: String,
        #[command(flatten)]
        install: InstallArgs,
    },
    /// List the installed packs: each one's name, tag, digest, signer and
    /// prompt count, and whether the file on disk is the one the lockfile
    /// records; then the plugin files not installed from a registry.
    List {
        /// Print the list as JSON, for tools.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        install: InstallArgs,
    },
    /// Sign a pack in a registry as cosign does (the signature names its
    /// manifest digest and its repository, never a tag), store the signature
    /// beside it, and say what was signed.
    /// The key is cosign's (`prompt-host keygen` and `cosign
    /// generate-key-pair` write cosign.key), or an ECDSA P-256 key in PEM as
    /// openssl writes it: SEC1, PKCS#8 or encrypted PKCS#8. The password of
    /// an encrypted key is read from COSIGN_PASSWORD.
    Sign {
        /// oci://REGISTRY/REPOSITORY@sha256:HEX, the digest `publish` printed
        reference: String,
        /// The private key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Accept a tag (oci://REGISTRY/REPOSITORY:TAG): it is resolved to the
        /// digest it names now, which may not be what was published.
        #[arg(long)]
        allow_tag: bool,
        #[command(flatten)]
        plain: PlainHttpArgs,
        /// A config file whose [registry] section says how to reach the registry.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Write a new signing key pair as `cosign generate-key-pair` does:
    /// PREFIX.key, ECDSA P-256 in cosign's encrypted format (its password
    /// from COSIGN_PASSWORD, or asked for on a terminal), and PREFIX.pub, the
    /// public key to trust ([signatures] public_keys). Neither file may exist.
    Keygen {
        /// Where to write the keys: PREFIX.key and PREFIX.pub.
        #[arg(long, value_name = "PREFIX", default_value = "cosign")]
        output_key_prefix: String,
    },
    /// Push a pack to an OCI registry as a CNCF wasm artifact (the layout
    /// wkg and oras push), and print its manifest digest: what cosign signs.
    Publish {
        /// The pack (a WebAssembly component).
        file: PathBuf,
        /// oci://REGISTRY/REPOSITORY:TAG
        reference: String,
        #[command(flatten)]
        plain: PlainHttpArgs,
        /// A config file whose [registry] section says how to reach the registry.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

/// What `prompt-host token` does.
#[derive(Subcommand)]
pub enum TokenCommand {
    /// Make a token of 256 random bits for NAME (a person or a service),
    /// print it once on stdout, and append its SHA-256 to the tokens file
    /// (created, readable by its owner only, if missing). A running server
    /// accepts it after SIGHUP.
    New {
        /// Whose token it is: 1 to 64 ASCII letters, digits, '.', '_', '@'
        /// or '-'. It names the user in logs and traces.
        name: String,
        /// The tokens file `serve --auth-tokens-file` reads.
        #[arg(long, value_name = "FILE")]
        tokens_file: PathBuf,
        /// The tenant whose prompts the token is served ([tenants.NAME]).
        #[arg(long)]
        tenant: Option<String>,
        /// When it stops counting: an RFC 3339 date (2027-01-31, its start
        /// in UTC) or date-time (2027-01-31T18:00:00Z).
        #[arg(long, value_name = "WHEN")]
        expires: Option<String>,
    },
    /// List the named tokens of the tokens file: each one's name, tenant and
    /// expiry, and whether it has expired (never a token or its digest).
    List {
        /// The tokens file `serve --auth-tokens-file` reads.
        #[arg(long, value_name = "FILE")]
        tokens_file: PathBuf,
        /// Print one JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove the token named NAME from the tokens file, keeping the rest
    /// of the file as written. A running server refuses it after SIGHUP.
    Revoke {
        /// The token's name, as `token new` was given it.
        name: String,
        /// The tokens file `serve --auth-tokens-file` reads.
        #[arg(long, value_name = "FILE")]
        tokens_file: PathBuf,
    },
}

/// How `add`, `publish` and `sign` reach the reference's registry.
#[derive(Args)]
pub struct PlainHttpArgs {
    /// Reach the reference's registry over plain HTTP, as if the config's
    /// [registry] plain_http listed it (credentials go over plain HTTP only
    /// to a registry on this machine).
    #[arg(long)]
    pub plain_http: bool,
}

/// The config file every command reads when `--config` names none, in the
/// working directory: `add`, `update`, `remove` and `list` need it; `serve`,
/// `inspect`, `get`, `complete`, `publish` and `sign` read it if it is there.
pub const DEFAULT_CONFIG_FILE: &str = "prompt-host.toml";

/// The config file a command reads: the one `--config` names, else
/// [`DEFAULT_CONFIG_FILE`] if the working directory has one.
pub fn config_file(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| std::path::Path::new(DEFAULT_CONFIG_FILE).is_file().then(|| PathBuf::from(DEFAULT_CONFIG_FILE)))
}

/// Which installation `add`, `update`, `remove` and `list` work on.
#[derive(Args)]
pub struct InstallArgs {
    /// The config file `serve` uses: its plugin directory receives the packs,
    /// prompt-host.lock is beside it, and its [signatures] and [registry]
    /// sections apply.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_FILE)]
    pub config: PathBuf,
}

/// How `inspect`, `get` and `complete` load their one plugin: as `serve`
/// would with this config file (its limits, prefix and pin for the plugin,
/// its compiled cache), or with the defaults.
#[derive(Args)]
pub struct OnePluginArgs {
    /// The config file `serve` uses: the plugin gets the limits, prefix and
    /// pinned SHA-256 it configures for it [default: ./prompt-host.toml, if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl OnePluginArgs {
    /// The configuration the plugin loads under.
    pub fn config(&self) -> Result<ServeConfig, ConfigError> {
        let mut config = match config_file(self.config.clone()) {
            Some(path) => {
                // A file found in the working directory is said (one named
                // by --config is known): a check run beside a config file
                // gets that file's limits, prefix, pin and grants.
                if self.config.is_none() {
                    let shown = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
                    eprintln!("config: {} (found in the working directory): its settings for this plugin apply", shown.display());
                }
                ServeConfig::from_file(&path)?
            }
            None => ServeConfig::default(),
        };
        // As in serve: the options replace [limits], and the plugin's own
        // [plugins.NAME.limits] still apply over them.
        config.limits = self.limits.overrides().apply(&config.limits);
        self.cache.apply(&mut config);
        Ok(config)
    }
}

/// Where compiled plugins are cached: shared by serve, inspect, get and
/// complete, so that a pack compiles once.
#[derive(Args, Clone)]
pub struct CacheArgs {
    /// Where compiled plugins are cached [default: the config file's server.cache_dir, or
    /// $XDG_CACHE_HOME/prompt-host or ~/.cache/prompt-host].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile without the compiled cache: read nothing from it, write nothing to it.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

impl CacheArgs {
    pub fn apply(&self, config: &mut ServeConfig) {
        if self.no_cache {
            config.cache_dir = None;
        } else if let Some(dir) = &self.cache_dir {
            config.cache_dir = Some(dir.clone());
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Js,
    Python,
}

impl From<Lang> for Language {
    fn from(lang: Lang) -> Language {
        match lang {
            Lang::Rust => Language::Rust,
            Lang::Js => Language::JavaScript,
            Lang::Python => Language::Python,
        }
    }
}

#[derive(Args, Clone)]
pub struct ServeArgs {
    /// A TOML config file: plugin directory, page size, limits, per-plugin
    /// prefixes and limits. Command-line options override it
    /// [default: ./prompt-host.toml, if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory of plugin files (`*.wasm`). Without it (here or in the config
    /// file), the example packs built into this binary are served.
    #[arg(long, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// Prompts per page of prompts/list [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub page_size: Option<u32>,
    /// How long a 2026-07-28 client may consider a page of prompts/list fresh
    /// (its ttlMs), in milliseconds; 0 makes it stale at once [default: 60000].
    #[arg(long, value_name = "MS")]
    pub list_ttl_ms: Option<u64>,
    /// Serve the prompts of plugin PLUGIN under PREFIX followed by their declared names (repeatable).
    #[arg(long = "prefix", value_name = "PLUGIN=PREFIX", value_parser = parse_prefix)]
    pub prefixes: Vec<(String, String)>,
    /// Do not watch the plugin directory (SIGHUP still rescans it).
    #[arg(long)]
    pub no_watch: bool,
    /// Poll the plugin directory every MS milliseconds instead of using
    /// inotify, which misses changes made by other machines (NFS).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub watch_poll_ms: Option<u64>,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// The most the compiled cache keeps, in MiB; the least recently used
    /// entries are evicted past it [default: 512].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub cache_max_mib: Option<u64>,
    /// Load only plugins whose SHA-256 the config file pins (plugins.NAME.sha256).
    #[arg(long)]
    pub require_pinned: bool,
    /// The longest message a client may send over stdio, in KiB; a longer
    /// line is skipped unread and answered with an error.
    #[arg(
        long,
        value_name = "KIB",
        default_value_t = stdio::DEFAULT_MAX_MESSAGE_KIB,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=stdio::MAX_MAX_MESSAGE_KIB as u64),
        conflicts_with = "http"
    )]
    pub max_message_kib: usize,
    /// On SIGTERM or Ctrl-C, how long calls in flight may take to finish
    /// (their answers are sent) before they are abandoned and the server exits.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = crate::transport::DEFAULT_SHUTDOWN_GRACE.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(0..=crate::transport::MAX_SHUTDOWN_GRACE_MS)
    )]
    pub shutdown_grace_ms: u64,
    #[command(flatten)]
    pub http: HttpArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics, and /healthz and
    /// /readyz, on a listener of their own (with stdio too). ADDR is as for --http.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Allow --metrics on an address other than loopback.
    #[arg(long, requires = "metrics")]
    pub metrics_allow_remote: bool,
    /// Export OpenTelemetry traces (a span per request, a child span per call
    /// into a pack) over OTLP HTTP/protobuf, configured by the standard
    /// OTEL_EXPORTER_OTLP_* variables [default endpoint: http://localhost:4318].
    #[arg(long)]
    pub otel_traces: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Serving over Streamable HTTP instead of stdio.
#[derive(Args, Clone)]
pub struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio.
    /// ADDR is IP:PORT (127.0.0.1:8080, [::1]:8080) or HOST:PORT
    /// (localhost:8080: every address the name resolves to).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Allow --http on an address other than loopback.
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Accept this Host header besides localhost, 127.0.0.1 and ::1 (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Accept this Origin besides loopback ones, such as https://app.example.com (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,
    /// Require `Authorization: Bearer <token>`, with the token read from
    /// FILE (read again at SIGHUP).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub auth_token_file: Option<PathBuf>,
    /// Require a bearer token among the named tokens of FILE (TOML, each
    /// [[token]] a name, the token's sha256, and optionally a tenant and an
    /// expiry; `prompt-host token new NAME` adds one). Read again at SIGHUP.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub auth_tokens_file: Option<PathBuf>,
    /// The largest request body accepted, in KiB; larger ones get 413.
    #[arg(long, value_name = "KIB", default_value_t = http::DEFAULT_MAX_REQUEST_KIB as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..=MAX_REQUEST_KIB))]
    pub max_request_kib: u32,
    /// Connections served at once; further ones wait until one closes. A
    /// quarter (at least one) is kept from long-lived streams: with 1, no
    /// stream opens (nor, over a session, an elicitation).
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_CONNECTIONS as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections one client (an IPv4 address, an IPv6 /64) may hold at
    /// once; past it, 503 at once. One /24 (IPv6 /48) holds at most half of
    /// --max-connections, or this if more. Default: a quarter of
    /// --max-connections, at least 8. Behind a reverse proxy every
    /// connection comes from the proxy: set it to --max-connections there.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_client: Option<u32>,
    /// Sessions open at once; past it, once no session has been idle a
    /// minute, a new session gets 503.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_SESSIONS as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
    /// Long-lived streams (GET streams, subscriptions/listen) one user (an
    /// OAuth token's subject) may hold open at once; past it, 429. Streams in
    /// all leave a quarter of --max-connections to other requests.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_STREAMS_PER_USER as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams_per_user: u32,
    /// Long-lived streams one tenant's users may hold open at once; past it, 429.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_STREAMS_PER_TENANT as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams_per_tenant: u32,
    /// Milliseconds a client may take to send a request's body; slower ones get 408.
    #[arg(long, value_name = "MS", default_value_t = http::DEFAULT_BODY_READ_TIMEOUT.as_millis() as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub body_read_timeout_ms: u64,
}

/// The largest --max-request-kib: 1 GiB.
pub const MAX_REQUEST_KIB: i64 = 1 << 20;

/// Limits on every call into a plugin (the config file can set more, and set
/// them per plugin).
#[derive(Args, Clone)]
pub struct LimitArgs {
    /// Fuel (roughly, WebAssembly instructions) one call may burn [default: 500000000].
    #[arg(long, value_name = "UNITS", value_parser = clap::value_parser!(u64).range(1..))]
    pub fuel: Option<u64>,
    /// Wall-clock milliseconds one call may take [default: 1000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub deadline_ms: Option<u64>,
    /// MiB of linear memory one plugin instance may use [default: 64].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub memory_mib: Option<u64>,
}

impl LimitArgs {
    pub fn overrides(&self) -> LimitOverrides {
        LimitOverrides { fuel: self.fuel, deadline_ms: self.deadline_ms, memory_mib: self.memory_mib, ..LimitOverrides::default() }
    }
}

pub fn parse_argument(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').ok_or("expected NAME=VALUE")?;
    Ok((name.to_string(), value.to_string()))
}

pub fn parse_prefix(text: &str) -> Result<(String, String), String> {
    let (plugin, prefix) = text.split_once('=').ok_or("expected PLUGIN=PREFIX")?;
    if plugin.is_empty() {
        return Err("the plugin name before '=' is empty".into());
    }
    Ok((plugin.to_string(), prefix.to_string()))
}

/// The configuration serve runs with: the config file, if any, under the
/// command-line options. Also what SIGHUP reads again.
pub fn serve_config(args: &ServeArgs) -> Result<ServeConfig, ConfigError> {
    let mut config = match &args.config {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    };
    if let Some(dir) = &args.plugins {
        config.plugins_dir = Some(dir.clone());
    }
    if let Some(page_size) = args.page_size {
        config.page_size = page_size as usize;
    }
    config.list_ttl_ms = args.list_ttl_ms.unwrap_or(config.list_ttl_ms);
    for (plugin, prefix) in &args.prefixes {
        config.set_prefix_from_flag(plugin, prefix);
    }
    if args.no_watch {
        config.watch = false;
    }
    if let Some(ms) = args.watch_poll_ms {
        config.watch_poll = Some(std::time::Duration::from_millis(ms));
    }
    args.cache.apply(&mut config);
    if let Some(mib) = args.cache_max_mib {
        config.cache_max_bytes = mib << 20;
    }
    if args.require_pinned {
        config.require_pinned = true;
    }
    config.limits = args.limits.overrides().apply(&config.limits);
    Ok(config)
}

/// Why a command failed. The binary prints it with its sources, each after
/// a colon.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the registry commands need the config file `serve` uses (--config FILE)")]
    NeedsConfig(#[source] ConfigError),
    #[error(transparent)]
    Load(#[from] LoadFailure),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error(transparent)]
    Lockfile(#[from] LockfileError),
    #[error(transparent)]
    Distribution(#[from] prompt_host_trust::distribution::DistributionError),
    #[error(transparent)]
    Scaffold(#[from] crate::scaffold::ScaffoldError),
    #[error(transparent)]
    Examples(#[from] crate::bundled::ExamplesError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        error: std::io::Error,
    },
    /// A command's own refusal, said whole.
    #[error("{0}")]
    Failed(String),
}

impl CommandError {
    /// The error and its sources, each after a colon: what the binary prints.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(error) = source {
            text.push_str(&format!(": {error}"));
            source = error.source();
        }
        text
    }
}

/// Runs `command`.
pub async fn run(command: Command) -> Result<(), CommandError> {
    match command {
        Command::New { name, lang, dir } => starting::new(name, lang.into(), dir),
        Command::Serve(args) => Ok(App::from_config(args)?.serve().await?),
        Command::Examples { out } => starting::examples(out),
        Command::Token { command: TokenCommand::New { name, tokens_file, tenant, expires } } => {
            let token = crate::transport::tokens::add_new_token(&tokens_file, &name, tenant.as_deref(), expires.as_deref())
                .map_err(CommandError::Failed)?;
            // The token on stdout, once, for a script to take; what happened on stderr.
            println!("{token}"); // stdout-ok: a command's output for the shell, never under serve
            eprintln!(
                "added the token {name:?} to {}: it is shown once, so store it now; send SIGHUP to a running server to accept it",
                tokens_file.display()
            );
            Ok(())
        }
        Command::Token { command: TokenCommand::List { tokens_file, json } } => {
            let listed = crate::transport::tokens::list_tokens(&tokens_file, std::time::SystemTime::now()).map_err(CommandError::Failed)?;
            if json {
                let text = serde_json::to_string_pretty(&listed).expect("listed tokens serialize");
                println!("{text}"); // stdout-ok: a command's output for the shell, never under serve
                return Ok(());
            }
            println!("NAME\tTENANT\tEXPIRES"); // stdout-ok: a command's output for the shell, never under serve
            for token in listed {
                let expires = match (&token.expires, token.expired) {
                    (None, _) => "never".to_string(),
                    (Some(at), false) => at.clone(),
                    (Some(at), true) => format!("{at} (expired)"),
                };
                let tenant = token.tenant.as_deref().unwrap_or("-");
                println!("{}\t{tenant}\t{expires}", token.name); // stdout-ok: a command's output for the shell, never under serve
            }
            Ok(())
        }
        Command::Token { command: TokenCommand::Revoke { name, tokens_file } } => {
            crate::transport::tokens::revoke_token(&tokens_file, &name).map_err(CommandError::Failed)?;
            eprintln!(
                "revoked the token {name:?} in {}: send SIGHUP to a running server, which refuses it from its next request",
                tokens_file.display()
            );
            Ok(())
        }
        Command::Inspect { file, json, plugin } => one_plugin::inspect(file, json, plugin).await,
        Command::Get { file, prompt, arguments, answers, plugin } => one_plugin::get(file, prompt, arguments, answers, plugin).await,
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "prompt-host", &mut std::io::stdout()); // stdout-ok: a command's output for the shell, never under serve
            Ok(())
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout()) // stdout-ok: a command's output for the shell, never under serve
            .map_err(|error| CommandError::Io { what: "writing the man page".into(), error }),
        Command::Complete { file, prompt, argument, typed, context, plugin } => {
            one_plugin::complete(file, prompt, argument, typed, context, plugin).await
        }
        Command::Add { reference, name, allow_downgrade, replace, plain, install } => {
            packs::add(&install.config, &reference, name.as_deref(), allow_downgrade, replace, plain.plain_http).await
        }
        Command::Update { name, to, allow_downgrade, plain_http, install } => {
            packs::update(&install.config, name.as_deref(), to.as_deref(), allow_downgrade, plain_http).await
        }
        Command::Remove { name, install } => packs::remove(&install.config, &name).await,
        Command::List { json, install } => packs::list(&install.config, json).await,
        Command::Publish { file, reference, plain, config } => {
            packs::publish(&file, &reference, config_file(config).as_deref(), plain.plain_http).await
        }
        Command::Keygen { output_key_prefix } => packs::keygen(&output_key_prefix),
        Command::Sign { reference, key, allow_tag, plain, config } => {
            packs::sign(&reference, &key, allow_tag, config_file(config).as_deref(), plain.plain_http).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's command reference (docs/commands.md) names every command,
    /// and each command's long options in its own synopsis lines (a global
    /// option anywhere), so an option added here cannot go undocumented.
    #[test]
    fn the_command_reference_names_every_command_and_option() {
        let page = include_str!("../../docs/commands.md");
        // The synopsis: its first code block, one entry per `prompt-host` line
        // and the indented lines that continue it.
        let block = page.split("```").nth(1).expect("docs/commands.md opens with its synopsis");
        let mut synopses: Vec<String> = Vec::new();
        for line in block.lines() {
            match (line.starts_with("prompt-host "), synopses.last_mut()) {
                (true, _) | (false, None) => synopses.push(line.to_string()),
                (false, Some(last)) => last.push_str(line),
            }
        }
        let names = |text: &str, option: &str| {
            text.match_indices(option)
                .any(|(at, _)| !text[at + option.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-'))
        };
        let mut missing = Vec::new();
        let mut commands = vec![(String::from("prompt-host"), Cli::command())];
        while let Some((path, command)) = commands.pop() {
            if !page.contains(&path) {
                missing.push(path.clone());
            }
            let own: Vec<&String> = synopses.iter().filter(|synopsis| synopsis.starts_with(&format!("{path} "))).collect();
            for argument in command.get_arguments() {
                let Some(long) = argument.get_long().filter(|long| !matches!(*long, "help" | "version")) else { continue };
                let option = format!("--{long}");
                let documented = match argument.is_global_set() || own.is_empty() {
                    true => names(page, &option),
                    false => own.iter().any(|synopsis| names(synopsis, &option)),
                };
                if !documented {
                    missing.push(format!("{path} {option}"));
                }
            }
            for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
                commands.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(missing.is_empty(), "docs/commands.md does not name {missing:?}");
    }
}
