//! prompt-host's trust chain: which packs the host may load, and where they
//! came from.
//!
//! Each module depends only on those listed after it:
//! - [`lockfile`]: `prompt-host.lock`, and the one rule for plugin names;
//! - [`pack_store`]: pulled packs by digest, each install with its
//!   provenance;
//! - [`signature`]: which signatures count (keys and keyless), and checking
//!   them;
//! - [`distribution`]: OCI registries, every byte bounded.
//!
//! It must never depend on the WebAssembly runtime (wasmtime) or the
//! protocol (rmcp): it deals in bytes, digests and signatures, and the
//! server joins it to the sandbox kernel. `tests/run-all` checks its
//! dependency tree.
#![warn(missing_docs)]

pub mod distribution;
pub mod lockfile;
pub mod pack_store;
pub mod signature;
