//! The server assembled: [`App::from_config`] reads the configuration `serve`
//! runs with, and [`App::serve`] loads the packs (one registry per tenant),
//! builds the MCP servers over them (list caching, the request-state seal,
//! pending elicitations, the access log) and serves them over stdio or
//! Streamable HTTP until a stop signal.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::access_log::AccessLog;
use crate::cli::{DEFAULT_CONFIG_FILE, HttpArgs, ServeArgs, config_file, serve_config};
use crate::config::{ConfigError, ServeConfig};
use crate::handler::{ListCaching, PromptServer};
use crate::input::{KeyError, PendingElicitations, RequestStateSeal};
use crate::registry::Registry;
use crate::startup::{Host, StartupError};
use crate::traces::TracesError;
use crate::transport::TransportError;
use crate::transport::http::{self, HttpConfig, HttpListener};
use crate::transport::operations::MetricsListener;
use crate::transport::stdio;
use crate::watch::ConfigSource;

/// The target of serving's own events (start, stop, what is read): the
/// crate's, as when the binary logged them, and as their log lines read.
const TARGET: &str = "prompt_host";

/// Why `serve` could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error(transparent)]
    Traces(#[from] TracesError),
    #[error(transparent)]
    RequestStateKey(#[from] KeyError),
    #[error("{0}")]
    AccessLog(String),
    #[error("serving MCP over stdio: {0}")]
    Stdio(TransportError),
}

/// The server of `prompt-host serve`, configured and not yet serving.
pub struct App {
    args: ServeArgs,
    config: ServeConfig,
    /// The config in force: the one read at start, then each one SIGHUP
    /// reads (what following the registry follows).
    in_force: Arc<arc_swap::ArcSwap<ServeConfig>>,
}

impl App {
    /// The configuration `args` give: the config file they name (or
    /// `./prompt-host.toml` if there is one) under the command-line options.
    pub fn from_config(mut args: ServeArgs) -> Result<App, ServeError> {
        args.config = config_file(args.config.take());
        let config = serve_config(&args)?;
        let in_force = Arc::new(arc_swap::ArcSwap::from_pointee(config.clone()));
        Ok(App { args, config, in_force })
    }

    /// Serves until a stop signal (SIGINT, SIGTERM) or, over stdio, the end
    /// of stdin; calls in flight then have the shutdown grace to finish.
    pub async fn serve(self) -> Result<(), ServeError> {
        // Listened for from the first moment, so that a stop while plugins
        // load (a slow compile, a pack that lists its prompts until its
        // deadline) is logged and ends the process cleanly too.
        let mut signals = StopSignals::install();
        // No reader of files listens for SIGHUP before the plugins are loaded,
        // and with none listening it would end the process: it is heard here.
        // (tokio keeps the handler for the life of the process.)
        let mut hangups = crate::hangup::signals();
        let (args, config) = (&self.args, &self.config);
        // What can be wrong without loading a plugin is checked first: the
        // config, the token file and the address (bound here, so that one in
        // use is reported before plugins compile).
        if args.http.http.is_none() {
            warn_of_sections_for_http(config);
        }
        // Until serve returns, whichever way (a stop signal, the end of stdin, an
        // error): dropping it flushes the spans not yet exported.
        let _traces = args.otel_traces.then(crate::traces::enable).transpose()?;
        let listener = match &args.http.http {
            Some(address) => Some(HttpListener::bind(http_config(address, &args.http, config).await?).await?),
            None => None,
        };
        // Served from here on, so that /readyz says 503 while plugins load.
        if let Some(address) = &args.metrics {
            MetricsListener::bind(address, args.metrics_allow_remote).await?.serve();
        }
        // Over HTTP with OAuth tenants, each tenant's directory is served on
        // its own, and `server.plugins` is not served.
        let tenanted = listener.is_some() && !config.tenants.is_empty();
        let mut start = std::pin::pin!(self.start(tenanted));
        let (host, tenants) = loop {
            tokio::select! {
                hosts = &mut start => break hosts?,
                signal = signals.next() => {
                    tracing::info!(target: TARGET, "{signal} while loading plugins: stopped");
                    return Ok(());
                }
                () = crate::hangup::next(&mut hangups) => {
                    tracing::warn!(
                        target: TARGET,
                        "SIGHUP while loading plugins: only what has finished loading reads its files again; send it again once the server serves"
                    );
                }
            }
        };
        // With the line on what is served: the start-up summary.
        match &args.config {
            Some(path) => {
                tracing::info!(target: TARGET, "configuration read from {}", std::path::absolute(path).unwrap_or_else(|_| path.clone()).display())
            }
            None => {
                tracing::info!(target: TARGET, "no configuration file (no --config, no ./{DEFAULT_CONFIG_FILE}): the defaults and the options")
            }
        }
        let servers = self.servers()?;
        self.follow_registry();
        let by_name: BTreeMap<String, PromptServer> = tenants
            .into_iter()
            .map(|(name, host)| {
                let server = servers.server_for(host.registry).with_prompts_as_tools(config.prompts_as_tools_for(Some(&name)));
                (name, server)
            })
            .collect();
        // The default tenant is served by that tenant's one service (one
        // session table), not by a second one.
        let default = match &config.default_tenant {
            Some(name) if tenanted && by_name.contains_key(name) => http::DefaultTenant::Tenant(name.clone()),
            _ => http::DefaultTenant::Own(servers.server_for(host.registry).with_prompts_as_tools(config.prompts_as_tools_for(None))),
        };
        let grace = Duration::from_millis(args.shutdown_grace_ms);
        match listener {
            Some(listener) => {
                // Session ids sealed with the shared request-state key: any
                // replica serves any session.
                let running = listener.sealing_sessions_with(servers.seal.clone()).serve_tenants(http::Tenants { by_name, default });
                let signal = signals.next().await;
                crate::metrics::stopping();
                tracing::info!(target: TARGET, "{signal}: stopping; calls in flight have {} ms to finish, then every session is closed", grace.as_millis());
                running.shutdown(grace).await;
            }
            None => {
                let http::DefaultTenant::Own(server) = default else { unreachable!("tenants are served over HTTP only") };
                let stop = async move {
                    let signal = signals.next().await;
                    crate::metrics::stopping();
                    tracing::info!(target: TARGET, "{signal}: stopping; calls in flight have {} ms to finish", grace.as_millis());
                };
                stdio::serve_stdio(server, args.max_message_kib << 10, stop, grace).await.map_err(ServeError::Stdio)?;
            }
        }
        tracing::info!(target: TARGET, "stopped");
        Ok(())
    }

    /// Installs the packs the config names by source, then loads the
    /// plugins: `server.plugins`, or each tenant's directory when `tenanted`
    /// (then the default host serves nothing of its own).
    async fn start(&self, tenanted: bool) -> Result<(Host, Vec<(String, Host)>), StartupError> {
        let (args, config) = (&self.args, &self.config);
        if args.config.is_some() {
            crate::install::install_sources(config).await;
        }
        if !tenanted {
            return Ok((crate::startup::start(config, self.config_source()).await?, Vec::new()));
        }
        crate::metrics::serving_tenants();
        let tenant_config = |name: &str| {
            let (args, name, in_force) = (args.clone(), name.to_string(), self.in_force.clone());
            args.config.is_some().then(|| {
                Box::new(move || {
                    let config = serve_config(&args)?;
                    in_force.store(Arc::new(config.clone()));
                    let dir = config.tenants.get(&name).cloned().unwrap_or_default();
                    Ok(config.for_tenant(&name, &dir))
                }) as ConfigSource
            })
        };
        let tenants = crate::startup::start_tenants(config, tenant_config).await?;
        let default = Host { registry: Arc::new(Registry::new(Vec::new())), watcher: None };
        Ok((default, tenants.into_iter().collect()))
    }

    /// With `[server] update_interval`, follows the packs named by source in
    /// the config in force while serving ([`crate::install::follow_sources`]).
    fn follow_registry(&self) {
        let Some(every) = self.config.update_interval else { return };
        if self.args.config.is_none() {
            return;
        }
        tracing::info!(target: TARGET, "following the registry: the packs named by source are checked every {} s", every.as_secs());
        let in_force = self.in_force.clone();
        tokio::spawn(crate::install::follow_sources(move || in_force.load_full(), every));
    }

    /// What SIGHUP reads: the config file again, under the same options,
    /// with a `source` added since installed before the rescan that loads it.
    fn config_source(&self) -> Option<ConfigSource> {
        let (args, in_force) = (self.args.clone(), self.in_force.clone());
        self.args.config.is_some().then(|| {
            Box::new(move || {
                let config = serve_config(&args)?;
                in_force.store(Arc::new(config.clone()));
                // (The runtime is multi-threaded: this blocks only the
                // watcher's task.)
                tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(crate::install::install_sources(&config)));
                Ok(config)
            }) as ConfigSource
        })
    }

    /// What every MCP server of this process shares: list caching, one
    /// count of pending elicitations in all (each tenant's server its own
    /// count per tenant), the request-state seal and the access log.
    fn servers(&self) -> Result<Servers, ServeError> {
        let (args, config) = (&self.args, &self.config);
        let requires_token = args.http.auth_token_file.is_some() || args.http.auth_tokens_file.is_some() || config.authorization.is_some();
        let seal = match &config.request_state_key_file {
            Some(key_file) => Some(RequestStateSeal::from_key_files(key_file, &config.request_state_previous_key_files)?),
            None => None,
        };
        let access_log = match &config.access_log {
            Some(path) => {
                let log = Arc::new(AccessLog::open(path).map_err(ServeError::AccessLog)?);
                // Opened again at SIGHUP, for logrotate.
                let reopened = log.clone();
                crate::hangup::on_each(move || reopened.reopen(), tokio_util::sync::CancellationToken::new());
                Some(log)
            }
            None => None,
        };
        Ok(Servers {
            page_size: config.page_size,
            list_caching: ListCaching::new(config.list_ttl_ms, requires_token),
            elicitations: PendingElicitations::new(config.elicitation),
            seal,
            access_log,
        })
    }
}

/// What every MCP server of this process shares ([`App::servers`]).
struct Servers {
    page_size: usize,
    list_caching: ListCaching,
    elicitations: PendingElicitations,
    seal: Option<RequestStateSeal>,
    access_log: Option<Arc<AccessLog>>,
}

impl Servers {
    /// The MCP server of one tenant's registry (or the one registry).
    fn server_for(&self, registry: Arc<Registry>) -> PromptServer {
        let server = PromptServer::new(registry, self.page_size)
            .with_list_caching(self.list_caching)
            .with_pending_elicitations(self.elicitations.another_tenant());
        let server = match &self.access_log {
            Some(log) => server.with_access_log(log.clone()),
            None => server,
        };
        match &self.seal {
            Some(seal) => server.with_request_state_seal(seal.clone()),
            None => server,
        }
    }
}

/// Over stdio, the sections that apply only to `--http`, each with a
/// warning: stdio has one client, the process that started the server, and
/// no token to ask it for.
fn warn_of_sections_for_http(config: &ServeConfig) {
    if config.authorization.is_some() {
        tracing::warn!(
            target: TARGET,
            "the [authorization] section applies only with --http: over stdio no token is asked for, \
             and every prompt is served to the process that started the server"
        );
    }
    if !config.tenants.is_empty() {
        let served = match &config.plugins_dir {
            Some(dir) => format!("server.plugins ({}) is served", dir.display()),
            None => "the bundled example packs are served".to_string(),
        };
        tracing::warn!(target: TARGET, "the [tenants] sections apply only with --http: over stdio {served}");
    }
}

/// The HTTP front's settings, from `--http ADDRESS` and the other HTTP
/// options; reads the token file.
async fn http_config(address: &str, args: &HttpArgs, config: &ServeConfig) -> Result<HttpConfig, ServeError> {
    let authorization = config.authorization.clone();
    let mut http = HttpConfig::resolving(address).await?;
    http.allow_remote = args.allow_remote;
    http.allowed_hosts.extend(args.allowed_hosts.iter().cloned());
    http.allowed_origins = args.allowed_origins.clone();
    let served_tenants = config.tenants.keys().cloned().collect();
    http.tokens =
        crate::transport::tokens::Tokens::read(args.auth_token_file.as_deref(), args.auth_tokens_file.as_deref(), served_tenants)?;
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
