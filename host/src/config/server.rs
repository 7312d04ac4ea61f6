//! `[server]`: the plugin directory, pages, the watcher, the compiled
//! cache, the request-state keys and the pack store.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerSection {
    pub(super) plugins: Option<PathBuf>,
    pub(super) page_size: Option<usize>,
    pub(super) list_ttl_ms: Option<u64>,
    pub(super) require_pinned: Option<bool>,
    pub(super) watch: Option<bool>,
    pub(super) watch_poll_ms: Option<u64>,
    pub(super) cache_dir: Option<PathBuf>,
    pub(super) cache_max_mib: Option<u64>,
    pub(super) request_state_key_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) request_state_previous_key_files: Vec<PathBuf>,
    pub(super) store: Option<PathBuf>,
    pub(super) access_log: Option<PathBuf>,
    pub(super) prompts_as_tools: Option<bool>,
    pub(super) update_interval: Option<String>,
}
