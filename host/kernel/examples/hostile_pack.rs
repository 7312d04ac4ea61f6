//! A hostile pack refused call by call, while the host keeps serving it and
//! everyone else: a loop runs out of fuel or time, an allocation hits the
//! memory limit, deep recursion overflows the stack, a panic is a panic,
//! a reply of 64 aliases of one 4 MiB buffer (256 MiB once copied) is
//! refused before it is copied out. Each failure is a
//! plain value naming what was hit, and the next call gets a fresh
//! instance, as if nothing had happened.
//!
//! Run: `cargo run -p prompt-host-kernel --example hostile_pack [hostile.wasm]`
//! (by default the `hostile` fixture, built under `plugins/`). Exits with
//! an error if any of these is not refused as said.

mod common;

use std::sync::Arc;
use std::time::Duration;

use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::model::PromptAnswer;
use prompt_host_kernel::plugin::PluginError;
use prompt_host_kernel::sandbox::{Sandbox, SandboxConfig};

#[tokio::main]
async fn main() -> Result<(), String> {
    let sandbox = Arc::new(Sandbox::new(SandboxConfig::default()).map_err(|error| error.to_string())?);
    let limits = Limits { fuel: 200_000_000, deadline: Duration::from_millis(300), memory_bytes: 16 << 20, ..Limits::default() };
    let plugin = common::load(&sandbox, &common::built_pack("hostile"), limits).await?;
    // Each hostile prompt, and the start of what its refusal must say.
    let attacks = [
        ("spin", "exceeded its"),
        ("grow", "exceeded its 16 MiB memory limit"),
        ("recurse", "overflowed its"),
        ("panic", "panicked: hostile plugin panicked on purpose"),
        ("alias-bomb", "returned more than the"),
    ];
    for (prompt, expected) in attacks {
        let refusal = match plugin.get_prompt(prompt, &[], None).await {
            Ok(_) => return Err(format!("{prompt}: answered, but should have been refused")),
            Err(PluginError::Failed { failure, .. }) => failure.to_string(),
            Err(other) => other.to_string(),
        };
        println!("{prompt:>10}: {refusal}");
        if !refusal.contains(expected) {
            return Err(format!("{prompt}: refused with {refusal:?}, not {expected:?}"));
        }
    }
    // And the pack still answers, from a fresh instance.
    match plugin.get_prompt("echo", &[], None).await.map_err(|error| error.to_string())? {
        PromptAnswer::Reply(reply) => println!("      echo: still served, {} message", reply.messages.len()),
        PromptAnswer::InputRequired(_) => return Err("echo asked for input".to_string()),
    }
    Ok(())
}
