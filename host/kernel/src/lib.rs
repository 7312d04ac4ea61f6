//! prompt-host's sandbox kernel: prompt packs (WebAssembly components of the
//! WIT `prompt-provider` interface) loaded and called in a sandbox, and
//! everything they return checked.
//!
//! A call flows top to bottom through these modules, and each depends only
//! on those below it:
//! - [`plugin`]: a loaded plugin and calls into it;
//! - [`validate`]: checks on everything a plugin returns (a 0.4 pack's
//!   skills and static resources among them, with their frontmatter), and
//!   the one rule for text a pack or a client controls shown in an error
//!   (from [`shown`]);
//! - [`arguments`]: typed prompt arguments (0.3): a client's value checked
//!   against what the pack declared, completions of choices and booleans,
//!   and the schema clients see;
//! - [`sandbox`]: the engine and one fresh store per call, in each plugin's
//!   share of the slots, with what each call used reported to a
//!   [`sandbox::CallObserver`];
//! - [`cache`]: compiled plugins on disk;
//! - [`limits`]: every limit a plugin runs under, declared once;
//! - [`log_budget`]: at most so many log lines of a kind per window, for
//!   what a pack or a client can make the host log;
//! - [`shown`]: text a pack or a client controls, made printable and cut:
//!   the one rule, wherever such text is shown;
//! - [`bindings`]: generated from the WIT packages (0.1 to 0.4, one
//!   module each), and the one adapter from each version's types into the
//!   model;
//! - [`model`]: the host's own types of a pack, its prompts and its
//!   answers, which every module above `bindings` speaks.
//!
//! It must never depend on the protocol (rmcp), HTTP (hyper, reqwest),
//! registries and signatures (oci-client, sigstore, jsonwebtoken), or
//! telemetry (prometheus, opentelemetry): it reports what a call used through
//! [`sandbox::CallObserver`], which the server implements. `tests/run-all`
//! checks its dependency tree.
#![warn(missing_docs)]

pub mod arguments;
pub mod bindings;
pub mod cache;
pub mod grants;
pub mod limits;
pub mod log_budget;
pub mod model;
pub mod plugin;
pub mod sandbox;
pub mod shown;
pub mod validate;
