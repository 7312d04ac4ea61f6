//! What both examples do first: a pack's bytes made into a [`Plugin`] with
//! the kernel alone (the server's loader does the same, after checking
//! where the bytes came from). Not an example of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prompt_host_kernel::bindings::WitVersion;
use prompt_host_kernel::limits::Limits;
use prompt_host_kernel::plugin::Plugin;
use prompt_host_kernel::sandbox::{CallQuota, Sandbox};
use prompt_host_kernel::validate::{self, Answer};

/// The pack a bundled example reads unless given a path: one of the packs
/// `plugins/` builds (`cargo build --release --target wasm32-wasip2
/// --manifest-path plugins/Cargo.toml`).
pub fn built_pack(name: &str) -> PathBuf {
    match std::env::args_os().nth(1) {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/target/wasm32-wasip2/release").join(format!("{name}.wasm")),
    }
}

/// Compiles the pack at `path`, links it against the WASI the sandbox
/// provides (as whichever WIT version it exports), lists its prompts in a
/// fresh instance under `limits`, and checks them and what the pack says it
/// is, as the loader does (`Plugin::new` trusts its caller to have checked).
pub async fn load(sandbox: &Arc<Sandbox>, path: &Path, limits: Limits) -> Result<Plugin, String> {
    let bytes = std::fs::read(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let component = sandbox.compile(&bytes).map_err(|error| error.to_string())?;
    // The newest version first: a pack links as the version it exports.
    let pre = WitVersion::ACCEPTED
        .iter()
        .rev()
        .find_map(|version| sandbox.prepare(&component, *version).ok())
        .ok_or_else(|| format!("not a prompt pack of WIT {:?}", WitVersion::ACCEPTED.map(WitVersion::as_str)))?;
    let id = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let quota = CallQuota::new(limits.concurrent_calls);
    let budget = validate::copy_budget(Answer::Definitions, &limits);
    let instance = sandbox.instantiate(&pre, &limits, budget, &quota, &id).await.map_err(|failure| failure.to_string())?;
    let (listing, _) =
        instance.list_prompts(validate::copy_budget(Answer::Content, &limits)).await.map_err(|failure| failure.to_string())?;
    let checked = validate::listing(listing, &limits)
        .map_err(|(problems, _)| format!("{} problems in what it says it is and in its prompt definitions", problems.len()))?;
    let digest = String::new();
    Ok(Plugin::new(id, digest, String::new(), String::new(), checked, limits, quota, pre, sandbox.clone(), Default::default()))
}
