//! The `prompt-host` command: a thin shell over the library.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use prompt_host::config::ServeConfig;
use prompt_host::handler::{DEFAULT_PAGE_SIZE, PromptServer};
use prompt_host::sandbox::Limits;

/// What is logged unless RUST_LOG says otherwise: the host's own events, and
/// only rmcp's warnings (it logs every message it handles at info).
const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// Serve prompts from sandboxed WebAssembly prompt packs over MCP.
#[derive(Parser)]
#[command(name = "prompt-host", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over stdio (stdin and stdout carry the protocol; logs go to stderr).
    Serve(ServeArgs),
    /// Load one plugin as the server would, and print its prompts as JSON.
    ///
    /// Exits with status 1 and the reason on stderr when the file is not a valid plugin.
    Inspect {
        /// The plugin file (a WebAssembly component).
        file: PathBuf,
        #[command(flatten)]
        limits: LimitArgs,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// Directory of plugin files (`*.wasm`). Without it, the example packs
    /// built into this binary are served.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Prompts per page of prompts/list.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PAGE_SIZE as u32, value_parser = clap::value_parser!(u32).range(1..))]
    page_size: u32,
    /// Serve the prompts of plugin PLUGIN under PREFIX followed by their declared names (repeatable).
    #[arg(long = "prefix", value_name = "PLUGIN=PREFIX", value_parser = parse_prefix)]
    prefixes: Vec<(String, String)>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Limits on every call into a plugin.
#[derive(Args)]
struct LimitArgs {
    /// Fuel (roughly, WebAssembly instructions) one call may burn.
    #[arg(long, value_name = "UNITS", default_value_t = Limits::default().fuel)]
    fuel: u64,
    /// Wall-clock milliseconds one call may take.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().deadline.as_millis() as u64)]
    deadline_ms: u64,
    /// MiB of linear memory one plugin instance may use.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().memory_bytes >> 20)]
    memory_mib: usize,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            fuel: self.fuel,
            deadline: Duration::from_millis(self.deadline_ms),
            memory_bytes: self.memory_mib << 20,
            ..Limits::default()
        }
    }
}

fn parse_prefix(text: &str) -> Result<(String, String), String> {
    let (plugin, prefix) = text.split_once('=').ok_or("expected PLUGIN=PREFIX")?;
    if plugin.is_empty() {
        return Err("the plugin name before '=' is empty".into());
    }
    Ok((plugin.to_string(), prefix.to_string()))
}

fn main() -> ExitCode {
    // stdout belongs to the protocol: every log line goes to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG_FILTER.into()),
        )
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().expect("failed to start the async runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Inspect { file, limits } => inspect(file, limits).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = ServeConfig {
        plugins_dir: args.plugins,
        page_size: args.page_size as usize,
        prefixes: args.prefixes.into_iter().collect::<BTreeMap<_, _>>(),
        limits: args.limits.limits(),
        ..ServeConfig::default()
    };
    let registry = prompt_host::startup::load_registry(&config).await?;
    let server = PromptServer::new(registry, config.page_size);
    prompt_host::transport::serve_stdio(server).await.context("serving MCP over stdio")
}

async fn inspect(file: PathBuf, limits: LimitArgs) -> anyhow::Result<()> {
    let config = ServeConfig { limits: limits.limits(), ..ServeConfig::default() };
    let settings = config.plugin_settings(&prompt_host::loader::plugin_id(&file));
    let report = prompt_host::inspect::inspect(&file, settings, config.sandbox).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
