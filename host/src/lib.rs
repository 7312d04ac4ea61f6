//! prompt-host: an MCP server that serves prompts from sandboxed WebAssembly
//! prompt packs.
//!
//! This crate is the server. Below it, and kept apart by the compiler, are
//! the sandbox kernel (`prompt_host_kernel`: `plugin`, `validate`,
//! `arguments`, `sandbox`, `grants`, `cache`, `limits`, `log_budget`,
//! `model`, `bindings`; no protocol, HTTP server, registries or telemetry), the
//! trust chain (`prompt_host_trust`: `pack_store`, `lockfile`,
//! `signature`, `distribution`; no WebAssembly runtime, no protocol), the
//! one way a file is read (`prompt_host_files`) and the one address
//! classifier (`prompt_host_addresses`), which both of them need. Their
//! modules are named by their crate's path wherever they are used (no
//! re-export here), so a reader finds each where it lives.
//! `tests/crate-boundaries` checks the dependency trees.
//!
//! At the top, depending on any module below: [`cli`] (the command line:
//! every command and option, and each command run; the binary only parses
//! the arguments, sets up logging with [`logging`]'s filter, and calls
//! [`cli::run`] on the runtime the sandbox builds,
//! `prompt_host_kernel::sandbox::runtime_builder`) and [`serve`] (the
//! server assembled from its configuration, one registry per tenant, its
//! MCP servers, and the transport it serves them over until a stop signal).
//!
//! A request flows top to bottom through these modules, and each depends only
//! on those below it:
//! - [`transport`]: MCP over stdio and Streamable HTTP, with the bounds on
//!   what a client sends, and who may send it (a token, or OAuth access
//!   tokens naming a tenant: `transport::authorization`);
//! - [`handler`]: the MCP `ServerHandler`, the thin adapter from rmcp to the
//!   use cases: one short method per request kind, which builds the
//!   request's `Caller` and answers through one telemetry wrapper
//!   (`handler::telemetry`: in flight, log and trace spans, the access log);
//! - [`app`]: the use cases (list, get with its rounds of input, complete,
//!   skills, resources, the tools of prompts as tools), plain methods of
//!   `UseCases` taking one typed `Caller`; they know neither rmcp's service
//!   nor hyper (`tests/crate-boundaries` checks it);
//! - [`prompt_tools`]: the two tools that stand for the prompts (their
//!   schemas, and a tool call read as the prompt request it stands for);
//! - [`error`]: request errors and their JSON-RPC codes;
//! - [`registry`]: the current snapshot of plugins and their catalog;
//! - [`catalog`]: the merged prompt list, name resolution, pages and cursors;
//! - [`served_content`]: the skills and static resources packs carry (WIT
//!   0.4), indexed by URI, with their pages and folders; like the catalog,
//!   plain data that never calls a pack;
//! - [`cursor`]: the pagination cursors of those lists, each bound to one
//!   version of one list;
//! - [`input`]: input-required prompts: forms as elicitation requests, the
//!   sealed request state, the answers checked;
//! - [`convert`]: the kernel's model of a pack's prompts and answers to MCP
//!   types, and MCP's arguments back;
//! - [`plugin`](prompt_host_kernel::plugin): a loaded plugin and calls into it;
//! - [`validate`](prompt_host_kernel::validate): checks on everything a plugin returns;
//! - [`arguments`](prompt_host_kernel::arguments): typed prompt arguments (WIT 0.3): values checked
//!   against their declared kinds, completions of choices and booleans, the
//!   schema clients see;
//! - [`sandbox`](prompt_host_kernel::sandbox): the engine and one fresh store per call, in each plugin's
//!   share of the slots;
//! - [`limits`](prompt_host_kernel::limits): every limit a plugin runs under, declared once;
//! - [`log_budget`](prompt_host_kernel::log_budget): at most so many log lines of a kind per window, for
//!   what a pack or a client can make the host log;
//! - [`metrics`]: the Prometheus metrics and the health state, which the
//!   server's modules above record into, and the kernel's through
//!   [`prompt_host_kernel::sandbox::CallObserver`] (it depends on none of them);
//! - [`access_log`]: the access log, one JSON line per `prompts/get` and
//!   `completion/complete` (it depends on none of them but `validate`'s
//!   cutting of a client's text);
//! - [`traces`]: the OpenTelemetry spans of requests and of calls into
//!   packs, exported over OTLP when asked for (it depends on none of them
//!   either);
//! - [`identity`]: who a request comes from (tenant, issuer, subject), the
//!   session ids bound to it, and the keyed labels naming sessions in logs
//!   and traces (it depends on none of them either);
//! - [`model`](prompt_host_kernel::model): the host's own types of a pack,
//!   its prompts and its answers, which every module above the bindings
//!   speaks;
//! - [`bindings`](prompt_host_kernel::bindings): generated from the WIT
//!   packages (0.1 to 0.4, one module each), each with its adapter
//!   into the model;
//! - [`files`](prompt_host_files): reading a file the host is given: opened without blocking,
//!   a regular file only, bounded (it depends on no other module).
//!
//! From [`plugin`](prompt_host_kernel::plugin) down, the modules are the kernel's; [`metrics`],
//! [`traces`] and [`identity`] are the server's, and the kernel reports
//! what each call used through [`prompt_host_kernel::sandbox::CallObserver`], which
//! [`startup`] implements with them.
//!
//! Beside the request path, each depending only on what is listed after it
//! and on the request path's modules: [`json_log`] (the JSON log lines,
//! their Debug fields unquoted once, and an event's message; it depends on
//! none of them), [`logging`] (the log's filter; it depends on `json_log`
//! alone), [`hangup`]
//! (SIGHUP, at which files are read again; it depends on none of them), [`report`] (the `inspect` command's
//! report as a person reads it), [`inspect`] (that report, built), [`install`]
//! (packs from registries: add, update, remove, list, publish, sign),
//! [`startup`] (from config to registry, one per tenant, and one plugin for
//! the `get` command), [`watch`] (the live plugin directory), [`config`], [`bundled`]
//! (the example packs built in), [`loader`] (from bytes to plugin, their
//! signature checked), [`scaffold`] (the `new` command: a new pack from
//! templates), [`lockfile`](prompt_host_trust::lockfile) (`prompt-host.lock`, and the one rule for
//! plugin names), [`pack_store`](prompt_host_trust::pack_store) (pulled packs by digest, each install with
//! its provenance), [`signature`](prompt_host_trust::signature) (which signatures count, and checking
//! them), [`distribution`](prompt_host_trust::distribution) (OCI registries, every byte bounded) and
//! [`cache`](prompt_host_kernel::cache) (compiled plugins on disk).

pub mod access_log;
pub mod app;
pub mod bundled;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod convert;
pub mod cursor;
pub mod error;
pub mod handler;
pub mod hangup;
pub mod identity;
pub mod input;
pub mod inspect;
pub mod install;
pub mod json_log;
pub mod loader;
pub mod logging;
pub mod metrics;
pub mod prompt_tools;
pub mod registry;
pub mod report;
pub mod scaffold;
pub mod serve;
pub mod served_content;
pub mod startup;
pub mod traces;
pub mod transport;
pub mod watch;
