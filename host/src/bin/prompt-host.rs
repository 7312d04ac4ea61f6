//! The `prompt-host` command: parses its arguments, sets up logging on
//! stderr, and runs the command ([`prompt_host::cli::run`]) on a runtime.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use prompt_host::cli::{Cli, LogFormat};

/// jemalloc rather than the system's malloc: less CPU per request under
/// load, for a little more memory (Cargo.toml, BENCHMARKS.md).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // stdout belongs to the protocol: every log line goes to stderr.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let log = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(prompt_host::logging::filter());
    match cli.log_format {
        LogFormat::Text => log.with_ansi(std::io::stderr().is_terminal()).finish().with(prompt_host::logging::ClientGoneFilter).init(),
        LogFormat::Json => log
            .json()
            .with_current_span(false)
            .with_writer(|| prompt_host::json_log::JsonLogWriter)
            .finish()
            .with(prompt_host::logging::ClientGoneFilter)
            .init(),
    }
    // A multi-threaded runtime, for stdio too: a pack that runs long keeps one
    // core (the sandbox's slow lane is one fewer than the cores), and the
    // other keeps answering. A single-threaded runtime measured less CPU per
    // request under the official TypeScript SDK client, but a request then
    // waited behind each spinning call's time slice (p99 5.4 ms with 8
    // spinners, against tens of µs): BENCHMARKS.md. The sandbox sets how
    // often a worker checks its I/O, since a call it yielded waits for that.
    let runtime = prompt_host_kernel::sandbox::runtime_builder().build().expect("failed to start the async runtime");
    let result = runtime.block_on(prompt_host::cli::run(cli.command));
    // Everything to be written has been: do not wait for what is left, such
    // as a read of stdin blocked in a thread, or a call abandoned at shutdown.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The error and its sources, each after a colon.
            eprintln!("error: {:#}", anyhow::Error::from(error));
            ExitCode::FAILURE
        }
    }
}
