//! Host-side bindings generated from the WIT package in `wit/`.
//!
//! Every export is called asynchronously, so that a plugin's call yields to
//! the runtime (see `sandbox`) instead of holding a worker thread.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "prompt-pack",
    exports: { default: async },
});

pub use exports::prompt_host::prompts::prompt_provider as provider;

/// The fully qualified name of the interface every pack must export.
pub const PROVIDER_INTERFACE: &str = "prompt-host:prompts/prompt-provider@0.1.0";
