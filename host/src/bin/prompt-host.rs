//! The `prompt-host` command: a thin shell over the library.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory, Parser, Subcommand};
use prompt_host::config::{ConfigError, ServeConfig};
use prompt_host::error::RequestError;
use prompt_host::handler::{ListCaching, PromptServer};
use prompt_host::scaffold::{self, Language};
use prompt_host::transport::http::{self, HttpConfig, HttpListener};
use prompt_host::transport::operations::MetricsListener;
use prompt_host::transport::stdio;
use prompt_host_kernel::limits::LimitOverrides;

#[path = "prompt-host/packs.rs"]
mod packs;

/// What is logged unless RUST_LOG says otherwise: the host's own events, and
/// only rmcp's warnings (it logs every message it handles at info).
const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// rmcp's service loop logs every error response at warn, with the error's
/// Debug dump. The handler already logs each failed request once (a pack's
/// failure at warn, as escaped fields), so this is off unless RUST_LOG names
/// rmcp itself.
const RMCP_RESPONSE_ERRORS_OFF: &str = "rmcp::service=error";

/// rmcp's HTTP service logs each Host or Origin it refuses at warn, without
/// the client's address. The HTTP front logs every refusal itself, with the
/// address, so this is off unless RUST_LOG names rmcp itself.
const RMCP_REFUSALS_OFF: &str = "rmcp::transport::streamable_http_server::tower=error";

/// rmcp's stdio codec logs each line it cannot parse at debug, whole and
/// unescaped, in the line's message. The transport answers and logs such a
/// line itself, once, bounded and escaped (`transport::malformed`), so this
/// is off unless RUST_LOG names rmcp itself.
const RMCP_UNPARSED_LINES_OFF: &str = "rmcp::transport::async_rw=info";
/// rmcp's session manager logs each new session's id at info. The host
/// names a session only by its label (`identity::session_label`), so this
/// is off unless RUST_LOG names rmcp itself.
const RMCP_SESSION_IDS_OFF: &str = "rmcp::transport::streamable_http_server::session=warn";

/// oci-client (which pushes for `publish` and `sign`) logs a registry's
/// sign-in refusal, the registry's own text, unescaped at debug: a registry
/// is not trusted with the log, so this is off unless RUST_LOG names
/// oci_client itself.
const OCI_CLIENT_DEBUG_OFF: &str = "oci_client=info";

/// The log filter: RUST_LOG, or the default; either way without rmcp's
/// second line per failed request or refusal unless RUST_LOG asks for rmcp,
/// and without oci-client's debug lines unless it asks for oci_client.
fn log_filter() -> tracing_subscriber::EnvFilter {
    let requested = std::env::var("RUST_LOG").ok().filter(|filter| !filter.trim().is_empty());
    let mut filter = tracing_subscriber::EnvFilter::try_new(requested.as_deref().unwrap_or(DEFAULT_LOG_FILTER))
        .unwrap_or_else(|_| DEFAULT_LOG_FILTER.into());
    let names = |target: &str| requested.as_deref().is_some_and(|filter| filter.contains(target));
    if !names("oci_client") {
        filter = filter.add_directive(OCI_CLIENT_DEBUG_OFF.parse().expect("a valid directive"));
    }
    if names("rmcp") {
        return filter;
    }
    filter
        .add_directive(RMCP_RESPONSE_ERRORS_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_REFUSALS_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_UNPARSED_LINES_OFF.parse().expect("a valid directive"))
        .add_directive(RMCP_SESSION_IDS_OFF.parse().expect("a valid directive"))
}

/// What rmcp's service loop logs at error when a response cannot be sent
/// because the client has gone: a client that closes its connection before
/// (or right after) its answer is ordinary, so these lines are dropped. The
/// handler has already logged how the call itself went.
const CLIENT_GONE_MESSAGES: [&str; 2] = ["fail to response message", "failed to send pending response during drain"];

/// Drops rmcp's [`CLIENT_GONE_MESSAGES`] events.
struct ClientGoneFilter;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClientGoneFilter {
    fn event_enabled(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) -> bool {
        if event.metadata().target() != "rmcp::service" {
            return true;
        }
        !CLIENT_GONE_MESSAGES.contains(&prompt_host::json_log::event_message(event).as_str())
    }
}

/// Serve prompts from sandboxed WebAssembly prompt packs over MCP.
/// What `--version` prints: the version, the WIT versions packs may target,
/// and what the binary was built with and from.
static LONG_VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{}\naccepts packs built against {}\nbuilt with {}",
        env!("CARGO_PKG_VERSION"),
        prompt_host::loader::accepted_wit_versions(),
        env!("PROMPT_HOST_BUILD")
    )
});

#[derive(Parser)]
#[command(name = "prompt-host", version, long_version = LONG_VERSION.as_str(), about, long_about = None)]
struct Cli {
    /// How log lines (on stderr) are written: text for people, or one JSON
    /// object per line for log shippers.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
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
enum TokenCommand {
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
}

/// How `add`, `publish` and `sign` reach the reference's registry.
#[derive(Args)]
struct PlainHttpArgs {
    /// Reach the reference's registry over plain HTTP, as if the config's
    /// [registry] plain_http listed it (credentials go over plain HTTP only
    /// to a registry on this machine).
    #[arg(long)]
    plain_http: bool,
}

/// The config file every command reads when `--config` names none, in the
/// working directory: `add`, `update`, `remove` and `list` need it; `serve`,
/// `inspect`, `get`, `complete`, `publish` and `sign` read it if it is there.
const DEFAULT_CONFIG_FILE: &str = "prompt-host.toml";

/// The config file a command reads: the one `--config` names, else
/// [`DEFAULT_CONFIG_FILE`] if the working directory has one.
fn config_file(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| std::path::Path::new(DEFAULT_CONFIG_FILE).is_file().then(|| PathBuf::from(DEFAULT_CONFIG_FILE)))
}

/// Which installation `add`, `update`, `remove` and `list` work on.
#[derive(Args)]
struct InstallArgs {
    /// The config file `serve` uses: its plugin directory receives the packs,
    /// prompt-host.lock is beside it, and its [signatures] and [registry]
    /// sections apply.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_FILE)]
    config: PathBuf,
}

/// How `inspect`, `get` and `complete` load their one plugin: as `serve`
/// would with this config file (its limits, prefix and pin for the plugin,
/// its compiled cache), or with the defaults.
#[derive(Args)]
struct OnePluginArgs {
    /// The config file `serve` uses: the plugin gets the limits, prefix and
    /// pinned SHA-256 it configures for it [default: ./prompt-host.toml, if there is one].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    cache: CacheArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

impl OnePluginArgs {
    /// The configuration the plugin loads under.
    fn config(&self) -> anyhow::Result<ServeConfig> {
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
struct CacheArgs {
    /// Where compiled plugins are cached [default: the config file's server.cache_dir, or
    /// $XDG_CACHE_HOME/prompt-host or ~/.cache/prompt-host].
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile without the compiled cache: read nothing from it, write nothing to it.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
}

impl CacheArgs {
    fn apply(&self, config: &mut ServeConfig) {
        if self.no_cache {
            config.cache_dir = None;
        } else if let Some(dir) = &self.cache_dir {
            config.cache_dir = Some(dir.clone());
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Lang {
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
struct ServeArgs {
    /// A TOML config file: plugin directory, page size, limits, per-plugin
    /// prefixes and limits. Command-line options override it
    /// [default: ./prompt-host.toml, if there is one].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory of plugin files (`*.wasm`). Without it (here or in the config
    /// file), the example packs built into this binary are served.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Prompts per page of prompts/list [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    page_size: Option<u32>,
    /// How long a 2026-07-28 client may consider a page of prompts/list fresh
    /// (its ttlMs), in milliseconds; 0 makes it stale at once [default: 60000].
    #[arg(long, value_name = "MS")]
    list_ttl_ms: Option<u64>,
    /// Serve the prompts of plugin PLUGIN under PREFIX followed by their declared names (repeatable).
    #[arg(long = "prefix", value_name = "PLUGIN=PREFIX", value_parser = parse_prefix)]
    prefixes: Vec<(String, String)>,
    /// Do not watch the plugin directory (SIGHUP still rescans it).
    #[arg(long)]
    no_watch: bool,
    /// Poll the plugin directory every MS milliseconds instead of using
    /// inotify, which misses changes made by other machines (NFS).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    watch_poll_ms: Option<u64>,
    #[command(flatten)]
    cache: CacheArgs,
    /// The most the compiled cache keeps, in MiB; the least recently used
    /// entries are evicted past it [default: 512].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    cache_max_mib: Option<u64>,
    /// Load only plugins whose SHA-256 the config file pins (plugins.NAME.sha256).
    #[arg(long)]
    require_pinned: bool,
    /// The longest message a client may send over stdio, in KiB; a longer
    /// line is skipped unread and answered with an error.
    #[arg(
        long,
        value_name = "KIB",
        default_value_t = stdio::DEFAULT_MAX_MESSAGE_KIB,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=stdio::MAX_MAX_MESSAGE_KIB as u64),
        conflicts_with = "http"
    )]
    max_message_kib: usize,
    /// On SIGTERM or Ctrl-C, how long calls in flight may take to finish
    /// (their answers are sent) before they are abandoned and the server exits.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = prompt_host::transport::DEFAULT_SHUTDOWN_GRACE.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(0..=prompt_host::transport::MAX_SHUTDOWN_GRACE_MS)
    )]
    shutdown_grace_ms: u64,
    #[command(flatten)]
    http: HttpArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics, and /healthz and
    /// /readyz, on a listener of their own (with stdio too). ADDR is as for --http.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Allow --metrics on an address other than loopback.
    #[arg(long, requires = "metrics")]
    metrics_allow_remote: bool,
    /// Export OpenTelemetry traces (a span per request, a child span per call
    /// into a pack) over OTLP HTTP/protobuf, configured by the standard
    /// OTEL_EXPORTER_OTLP_* variables [default endpoint: http://localhost:4318].
    #[arg(long)]
    otel_traces: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Serving over Streamable HTTP instead of stdio.
#[derive(Args, Clone)]
struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio.
    /// ADDR is IP:PORT (127.0.0.1:8080, [::1]:8080) or HOST:PORT
    /// (localhost:8080: every address the name resolves to).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Allow --http on an address other than loopback.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Accept this Host header besides localhost, 127.0.0.1 and ::1 (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,
    /// Accept this Origin besides loopback ones, such as https://app.example.com (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allowed_origins: Vec<String>,
    /// Require `Authorization: Bearer <token>`, with the token read from
    /// FILE (read again at SIGHUP).
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_token_file: Option<PathBuf>,
    /// Require a bearer token among the named tokens of FILE (TOML, each
    /// [[token]] a name, the token's sha256, and optionally a tenant and an
    /// expiry; `prompt-host token new NAME` adds one). Read again at SIGHUP.
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_tokens_file: Option<PathBuf>,
    /// The largest request body accepted, in KiB; larger ones get 413.
    #[arg(long, value_name = "KIB", default_value_t = http::DEFAULT_MAX_REQUEST_KIB as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..=MAX_REQUEST_KIB))]
    max_request_kib: u32,
    /// Connections served at once; further ones wait until one closes. A
    /// quarter (at least one) is kept from long-lived streams: with 1, no
    /// stream opens (nor, over a session, an elicitation).
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_CONNECTIONS as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Connections one client (an IPv4 address, an IPv6 /64) may hold at
    /// once; past it, 503 at once. One /24 (IPv6 /48) holds at most half of
    /// --max-connections, or this if more. Default: a quarter of
    /// --max-connections, at least 8. Behind a reverse proxy every
    /// connection comes from the proxy: set it to --max-connections there.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_client: Option<u32>,
    /// Sessions open at once; past it, once no session has been idle a
    /// minute, a new session gets 503.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_SESSIONS as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: u32,
    /// Long-lived streams (GET streams, subscriptions/listen) one user (an
    /// OAuth token's subject) may hold open at once; past it, 429. Streams in
    /// all leave a quarter of --max-connections to other requests.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_STREAMS_PER_USER as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_streams_per_user: u32,
    /// Long-lived streams one tenant's users may hold open at once; past it, 429.
    #[arg(long, value_name = "N", default_value_t = http::DEFAULT_MAX_STREAMS_PER_TENANT as u32, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_streams_per_tenant: u32,
    /// Milliseconds a client may take to send a request's body; slower ones get 408.
    #[arg(long, value_name = "MS", default_value_t = http::DEFAULT_BODY_READ_TIMEOUT.as_millis() as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    body_read_timeout_ms: u64,
}

/// The largest --max-request-kib: 1 GiB.
const MAX_REQUEST_KIB: i64 = 1 << 20;

/// Limits on every call into a plugin (the config file can set more, and set
/// them per plugin).
#[derive(Args, Clone)]
struct LimitArgs {
    /// Fuel (roughly, WebAssembly instructions) one call may burn [default: 500000000].
    #[arg(long, value_name = "UNITS", value_parser = clap::value_parser!(u64).range(1..))]
    fuel: Option<u64>,
    /// Wall-clock milliseconds one call may take [default: 1000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    deadline_ms: Option<u64>,
    /// MiB of linear memory one plugin instance may use [default: 64].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    memory_mib: Option<u64>,
}

impl LimitArgs {
    fn overrides(&self) -> LimitOverrides {
        LimitOverrides { fuel: self.fuel, deadline_ms: self.deadline_ms, memory_mib: self.memory_mib, ..LimitOverrides::default() }
    }
}

fn parse_argument(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').ok_or("expected NAME=VALUE")?;
    Ok((name.to_string(), value.to_string()))
}

fn parse_prefix(text: &str) -> Result<(String, String), String> {
    let (plugin, prefix) = text.split_once('=').ok_or("expected PLUGIN=PREFIX")?;
    if plugin.is_empty() {
        return Err("the plugin name before '=' is empty".into());
    }
    Ok((plugin.to_string(), prefix.to_string()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // stdout belongs to the protocol: every log line goes to stderr.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let log = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(log_filter());
    match cli.log_format {
        LogFormat::Text => log.with_ansi(std::io::stderr().is_terminal()).finish().with(ClientGoneFilter).init(),
        LogFormat::Json => {
            log.json().with_current_span(false).with_writer(|| prompt_host::json_log::JsonLogWriter).finish().with(ClientGoneFilter).init()
        }
    }
    // A multi-threaded runtime, for stdio too: a pack that runs long keeps one
    // core (the sandbox's slow lane is one fewer than the cores), and the
    // other keeps answering. A single-threaded runtime measured less CPU per
    // request under the official TypeScript SDK client, but a request then
    // waited behind each spinning call's time slice (p99 5.4 ms with 8
    // spinners, against tens of µs): BENCHMARKS.md.
    let runtime = tokio::runtime::Runtime::new().expect("failed to start the async runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::New { name, lang, dir } => new(name, lang.into(), dir),
            Command::Serve(args) => serve(args).await,
            Command::Examples { out } => examples(out),
            Command::Token { command: TokenCommand::New { name, tokens_file, tenant, expires } } => {
                let token = prompt_host::transport::tokens::add_new_token(&tokens_file, &name, tenant.as_deref(), expires.as_deref())
                    .map_err(anyhow::Error::msg)?;
                // The token on stdout, once, for a script to take; what happened on stderr.
                println!("{token}");
                eprintln!(
                    "added the token {name:?} to {}: it is shown once, so store it now; send SIGHUP to a running server to accept it",
                    tokens_file.display()
                );
                Ok(())
            }
            Command::Inspect { file, json, plugin } => inspect(file, json, plugin).await,
            Command::Get { file, prompt, arguments, answers, plugin } => get(file, prompt, arguments, answers, plugin).await,
            Command::Completions { shell } => {
                clap_complete::generate(shell, &mut Cli::command(), "prompt-host", &mut std::io::stdout());
                Ok(())
            }
            Command::Man => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()).context("writing the man page"),
            Command::Complete { file, prompt, argument, typed, context, plugin } => {
                complete(file, prompt, argument, typed, context, plugin).await
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
    });
    // Everything to be written has been: do not wait for what is left, such
    // as a read of stdin blocked in a thread, or a call abandoned at shutdown.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The configuration serve runs with: the config file, if any, under the
/// command-line options. Also what SIGHUP reads again.
fn serve_config(args: &ServeArgs) -> Result<ServeConfig, ConfigError> {
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

async fn serve(mut args: ServeArgs) -> anyhow::Result<()> {
    // Listened for from the first moment, so that a stop while plugins
    // load (a slow compile, a pack that lists its prompts until its
    // deadline) is logged and ends the process cleanly too.
    let mut signals = StopSignals::install();
    // No reader of files listens for SIGHUP before the plugins are loaded,
    // and with none listening it would end the process: it is heard here.
    // (tokio keeps the handler for the life of the process.)
    let mut hangups = prompt_host::hangup::signals();
    args.config = config_file(args.config.take());
    // What can be wrong without loading a plugin is checked first: the
    // config, the token file and the address (bound here, so that one in
    // use is reported before plugins compile).
    let config = serve_config(&args)?;
    if args.http.http.is_none() {
        warn_of_sections_for_http(&config);
    }
    // Until serve returns, whichever way (a stop signal, the end of stdin, an
    // error): dropping it flushes the spans not yet exported.
    let _traces = args.otel_traces.then(prompt_host::traces::enable).transpose()?;
    let listener = match &args.http.http {
        Some(address) => Some(HttpListener::bind(http_config(address, &args.http, &config).await?).await?),
        None => None,
    };
    // Served from here on, so that /readyz says 503 while plugins load.
    if let Some(address) = &args.metrics {
        MetricsListener::bind(address, args.metrics_allow_remote).await?.serve();
    }
    let config_source = args.config.is_some().then(|| {
        let args = args.clone();
        Box::new(move || {
            let config = serve_config(&args)?;
            // As at start: a `source` added since is installed before the
            // rescan that loads it. (The runtime is multi-threaded: this
            // blocks only the watcher's task.)
            tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(packs::install_sources(&config)));
            Ok(config)
        }) as prompt_host::watch::ConfigSource
    });
    // Over HTTP with OAuth tenants, each tenant's directory is served on
    // its own, and `server.plugins` is not served.
    let tenanted = listener.is_some() && !config.tenants.is_empty();
    let start = async {
        if args.config.is_some() {
            packs::install_sources(&config).await;
        }
        if tenanted {
            prompt_host::metrics::serving_tenants();
            let tenant_config = |name: &str| {
                let (args, name) = (args.clone(), name.to_string());
                args.config.is_some().then(|| {
                    Box::new(move || {
                        let config = serve_config(&args)?;
                        let dir = config.tenants.get(&name).cloned().unwrap_or_default();
                        Ok(config.for_tenant(&name, &dir))
                    }) as prompt_host::watch::ConfigSource
                })
            };
            let tenants = prompt_host::startup::start_tenants(&config, tenant_config).await?;
            let default = prompt_host::startup::Host {
                registry: std::sync::Arc::new(prompt_host::registry::Registry::new(Vec::new())),
                watcher: None,
            };
            Ok::<_, prompt_host::startup::StartupError>((default, tenants))
        } else {
            Ok((prompt_host::startup::start(&config, config_source).await?, Default::default()))
        }
    };
    let mut start = std::pin::pin!(start);
    let (host, tenants) = loop {
        tokio::select! {
            hosts = &mut start => break hosts?,
            signal = signals.next() => {
                tracing::info!("{signal} while loading plugins: stopped");
                return Ok(());
            }
            () = prompt_host::hangup::next(&mut hangups) => {
                tracing::warn!(
                    "SIGHUP while loading plugins: only what has finished loading reads its files again; send it again once the server serves"
                );
            }
        }
    };
    // With the line on what is served: the start-up summary.
    match &args.config {
        Some(path) => tracing::info!("configuration read from {}", std::path::absolute(path).unwrap_or_else(|_| path.clone()).display()),
        None => tracing::info!("no configuration file (no --config, no ./{DEFAULT_CONFIG_FILE}): the defaults and the options"),
    }
    let requires_token = args.http.auth_token_file.is_some() || args.http.auth_tokens_file.is_some() || config.authorization.is_some();
    let list_caching = ListCaching::new(config.list_ttl_ms, requires_token);
    let seal = match &config.request_state_key_file {
        Some(key_file) => Some(prompt_host::input::RequestStateSeal::from_key_files(key_file, &config.request_state_previous_key_files)?),
        None => None,
    };
    // One count of pending elicitations in all; each tenant's server its own count per tenant.
    let elicitations = prompt_host::input::PendingElicitations::new(config.elicitation);
    let access_log = match &config.access_log {
        Some(path) => {
            let log = std::sync::Arc::new(prompt_host::access_log::AccessLog::open(path).map_err(anyhow::Error::msg)?);
            // Opened again at SIGHUP, for logrotate.
            let reopened = log.clone();
            prompt_host::hangup::on_each(move || reopened.reopen(), tokio_util::sync::CancellationToken::new());
            Some(log)
        }
        None => None,
    };
    let server_for = |registry| {
        let server = PromptServer::new(registry, config.page_size)
            .with_list_caching(list_caching)
            .with_pending_elicitations(elicitations.another_tenant());
        let server = match &access_log {
            Some(log) => server.with_access_log(log.clone()),
            None => server,
        };
        match &seal {
            Some(seal) => server.with_request_state_seal(seal.clone()),
            None => server,
        }
    };
    let mut by_name: std::collections::BTreeMap<String, PromptServer> =
        tenants.into_iter().map(|(name, host)| (name, server_for(host.registry))).collect();
    // The default tenant is served by that tenant's one service (one
    // session table), not by a second one.
    let default = match &config.default_tenant {
        Some(name) if tenanted && by_name.contains_key(name) => http::DefaultTenant::Tenant(name.clone()),
        _ => http::DefaultTenant::Own(server_for(host.registry)),
    };
    let grace = std::time::Duration::from_millis(args.shutdown_grace_ms);
    let Some(listener) = listener else {
        let http::DefaultTenant::Own(server) = default else { unreachable!("tenants are served over HTTP only") };
        let stop = async move {
            let signal = signals.next().await;
            prompt_host::metrics::stopping();
            tracing::info!("{signal}: stopping; calls in flight have {} ms to finish", grace.as_millis());
        };
        stdio::serve_stdio(server, args.max_message_kib << 10, stop, grace).await.context("serving MCP over stdio")?;
        tracing::info!("stopped");
        return Ok(());
    };
    let running = listener.serve_tenants(http::Tenants { by_name: std::mem::take(&mut by_name), default });
    let signal = signals.next().await;
    prompt_host::metrics::stopping();
    tracing::info!("{signal}: stopping; calls in flight have {} ms to finish, then every session is closed", grace.as_millis());
    running.shutdown(grace).await;
    tracing::info!("stopped");
    Ok(())
}

/// Over stdio, the sections that apply only to `--http`, each with a
/// warning: stdio has one client, the process that started the server, and
/// no token to ask it for.
fn warn_of_sections_for_http(config: &ServeConfig) {
    if config.authorization.is_some() {
        tracing::warn!(
            "the [authorization] section applies only with --http: over stdio no token is asked for, \
             and every prompt is served to the process that started the server"
        );
    }
    if !config.tenants.is_empty() {
        let served = match &config.plugins_dir {
            Some(dir) => format!("server.plugins ({}) is served", dir.display()),
            None => "the bundled example packs are served".to_string(),
        };
        tracing::warn!("the [tenants] sections apply only with --http: over stdio {served}");
    }
}

/// The HTTP front's settings, from `--http ADDRESS` and the other HTTP
/// options; reads the token file.
async fn http_config(address: &str, args: &HttpArgs, config: &ServeConfig) -> anyhow::Result<HttpConfig> {
    let authorization = config.authorization.clone();
    let mut http = HttpConfig::resolving(address).await?;
    http.allow_remote = args.allow_remote;
    http.allowed_hosts.extend(args.allowed_hosts.iter().cloned());
    http.allowed_origins = args.allowed_origins.clone();
    let served_tenants = config.tenants.keys().cloned().collect();
    http.tokens =
        prompt_host::transport::tokens::Tokens::read(args.auth_token_file.as_deref(), args.auth_tokens_file.as_deref(), served_tenants)?;
    http.authorization = authorization;
    http.max_request_bytes = (args.max_request_kib as usize) << 10;
    http.max_connections = args.max_connections as usize;
    http.max_connections_per_client = args.max_connections_per_client.map(|cap| cap as usize);
    http.max_sessions = args.max_sessions as usize;
    http.max_streams_per_user = args.max_streams_per_user as usize;
    http.max_streams_per_tenant = args.max_streams_per_tenant as usize;
    http.body_read_timeout = std::time::Duration::from_millis(args.body_read_timeout_ms);
    Ok(http)
}

/// Ctrl-C (SIGINT) and SIGTERM, which systemd and Kubernetes send to stop a
/// service, each listened for from `install` on: a signal that comes between
/// two waits is not lost.
struct StopSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Starts listening (a signal before this ends the process at once, as
    /// by default).
    fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            StopSignals { interrupt: signal(SignalKind::interrupt()).ok(), terminate: signal(SignalKind::terminate()).ok() }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// Waits for the next stop signal, and names it.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        if let (Some(interrupt), Some(terminate)) = (&mut self.interrupt, &mut self.terminate) {
            return tokio::select! {
                _ = interrupt.recv() => "interrupted",
                _ = terminate.recv() => "SIGTERM",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "interrupted"
    }
}

fn new(name: String, language: Language, dir: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
    let written = scaffold::create(&dir, &name, language)?;
    // The next steps are what the user asked for: stdout, like every command but serve.
    println!("Created the {language} prompt pack '{name}' in {}:", dir.display());
    for file in written {
        println!("  {file}");
    }
    println!("Next, in {}:\n{}", dir.display(), scaffold::next_steps(&name, language));
    Ok(())
}

fn examples(out: PathBuf) -> anyhow::Result<()> {
    let written = prompt_host::bundled::write_examples(&out)?;
    println!("Wrote the example packs and a config that serves them in {}:", out.display());
    for file in written {
        println!("  {file}");
    }
    println!("Next:\n  prompt-host serve --config {}", out.join("prompt-host.toml").display());
    Ok(())
}

async fn inspect(file: PathBuf, json: bool, plugin: OnePluginArgs) -> anyhow::Result<()> {
    let inspected = async { Ok::<_, anyhow::Error>(prompt_host::inspect::inspect(&file, &plugin.config()?).await?) };
    let report = match inspected.await {
        Ok(report) => report,
        Err(error) => {
            // Tools that read --json read stdout: they get the error there too.
            if json {
                let error = serde_json::json!({ "file": file.display().to_string(), "error": format!("{error:#}") });
                println!("{}", serde_json::to_string_pretty(&error)?);
            }
            return Err(error);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    if !report.loadable() {
        anyhow::bail!("{}: the server would refuse this plugin: {}", report.file, report.problems[0].problem);
    }
    Ok(())
}

async fn get(
    file: PathBuf,
    prompt: String,
    arguments: Vec<(String, String)>,
    answers: Vec<(String, String)>,
    plugin: OnePluginArgs,
) -> anyhow::Result<()> {
    let server = serve_one(&file, &plugin.config()?).await?;
    // An unknown prompt has no arguments to warn of: its error comes below.
    let declared = server.declared_arguments(&prompt);
    for (index, (name, _)) in arguments.iter().enumerate() {
        if arguments[..index].iter().any(|(earlier, _)| earlier == name) {
            eprintln!("warning: argument '{name}' is given more than once: the last value is used");
        } else if let Some(declared) = &declared
            && !declared.contains(name)
        {
            eprintln!("warning: prompt '{prompt}' declares no argument '{name}' (it declares: {})", list_or_none(declared));
        }
    }
    let arguments = arguments.into_iter().map(|(name, value)| (name, serde_json::Value::String(value))).collect();
    let request = rmcp::model::GetPromptRequestParams::new(prompt).with_arguments(arguments);
    let result = server.get_prompt_answering(request, answer_forms(answers)).await;
    let mut result = result.map_err(|error| naming_what_it_serves(error, &file, &server))?;
    // As a client of a handshake revision sees it (rmcp drops the field then).
    result.result_type = None;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}

/// How `get` answers a form: with the `--answer FIELD=VALUE` given for a
/// field (the last one), else, on a terminal, by asking on it.
fn answer_forms(answers: Vec<(String, String)>) -> prompt_host::handler::Answerer {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    std::sync::Arc::new(move |forms: &prompt_host::input::Forms| {
        forms.answer_each(|question| {
            if let Some((_, value)) = answers.iter().rev().find(|(field, _)| field == question.name) {
                return Some(value.clone());
            }
            if !terminal {
                return None;
            }
            // The pack's words, escaped: a terminal obeys control characters.
            if question.first_of_form {
                eprintln!("{}", question.message.escape_debug());
            }
            let label = question.label.map(|label| format!(" ({})", label.escape_debug())).unwrap_or_default();
            let optional = if question.required { "" } else { " [optional: Enter leaves it out]" };
            eprint!("  {}{label}{optional}: ", question.name.escape_debug());
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).ok()?;
            let typed = line.trim_end_matches(['\r', '\n']);
            (!typed.is_empty()).then(|| typed.to_string())
        })
    })
}

/// The plugin file `file`, loaded as the server would, behind a prompt
/// server to call without a client.
async fn serve_one(file: &std::path::Path, config: &ServeConfig) -> anyhow::Result<PromptServer> {
    let registry = prompt_host::startup::load_one(file, config).await?;
    Ok(PromptServer::new(registry, prompt_host::catalog::DEFAULT_PAGE_SIZE))
}

/// `error`, and when it is an unknown prompt, what `file` serves instead.
fn naming_what_it_serves(error: RequestError, file: &std::path::Path, server: &PromptServer) -> anyhow::Error {
    match error {
        RequestError::UnknownPrompt { .. } => {
            anyhow::anyhow!("{error}; {} serves: {}", file.display(), list_or_none(&server.prompt_names()))
        }
        other => other.into(),
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".to_string() } else { names.join(", ") }
}

async fn complete(
    file: PathBuf,
    prompt: String,
    argument: String,
    typed: String,
    context: Vec<(String, String)>,
    plugin: OnePluginArgs,
) -> anyhow::Result<()> {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, CompletionContext, Reference};
    let server = serve_one(&file, &plugin.config()?).await?;
    let mut request = CompleteRequestParams::new(Reference::for_prompt(prompt), ArgumentInfo::new(argument, typed));
    if !context.is_empty() {
        request.context = Some(CompletionContext::with_arguments(context.into_iter().collect()));
    }
    let mut result = server.complete_result(request).await.map_err(|error| naming_what_it_serves(error, &file, &server))?;
    // As a client of a handshake revision sees it (rmcp drops the field then).
    result.result_type = None;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}
