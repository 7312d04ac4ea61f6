//! Load a prompt pack and call its prompts' `get-prompt` under limits, with
//! the sandbox kernel alone: no MCP, no server. Each call runs in a fresh
//! instance with its own fuel, deadline and memory; what it used is told to
//! a `CallObserver`, which here prints it (the server records it in its
//! metrics and traces instead).
//!
//! Run: `cargo run -p prompt-host-kernel --example call_a_pack [PACK.wasm]`
//! (by default the bundled `code_review` pack, built under `plugins/`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model::{self, PromptAnswer};
use prompt_host_kernel::sandbox::{CallObserver, CallUsage, Sandbox, SandboxConfig};

/// Prints what each call used.
struct Printed;

impl CallObserver for Printed {
    fn call_finished(&self, plugin: &str, usage: &CallUsage) {
        println!("  ({plugin}: {} fuel, {} KiB of memory at most, {:?})", usage.fuel, usage.peak_memory_bytes >> 10, usage.elapsed);
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let sandbox = Arc::new(Sandbox::new(SandboxConfig::default()).map_err(|error| error.to_string())?.observed_by(Arc::new(Printed)));
    let limits = Limits { fuel: 100_000_000, deadline: Duration::from_millis(500), memory_bytes: 32 << 20, ..Limits::default() };
    let plugin = common::load(&sandbox, &common::built_pack("code_review"), limits).await?;
    println!("{} declares {} prompts", plugin.id(), plugin.prompts().len());
    for prompt in plugin.prompts() {
        // Each required argument given a value, as a client would.
        let arguments: Vec<model::Argument> = prompt
            .arguments
            .iter()
            .filter(|argument| argument.required)
            .map(|argument| model::Argument { name: argument.name.clone(), value: "fn main() {}".to_string() })
            .collect();
        println!("get-prompt {}", prompt.name);
        match plugin.get_prompt(&prompt.name, &arguments, None).await.map_err(|error| error.to_string())? {
            PromptAnswer::Reply(reply) => println!("  {} messages", reply.messages.len()),
            PromptAnswer::InputRequired(input) => println!("  it asks for input first: {} forms", input.forms.len()),
        }
    }
    Ok(())
}
