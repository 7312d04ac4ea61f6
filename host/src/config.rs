//! Configuration of a serving host.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::handler::DEFAULT_PAGE_SIZE;
use crate::loader::PluginSettings;
use crate::sandbox::{Limits, SandboxConfig};

/// Everything `prompt-host serve` needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Where the plugins are; `None` serves the packs bundled in the binary.
    pub plugins_dir: Option<PathBuf>,
    /// Prompts on one page of `prompts/list`.
    pub page_size: usize,
    /// The limits every plugin call runs under.
    pub limits: Limits,
    /// Settings of the sandbox shared by all plugins.
    pub sandbox: SandboxConfig,
    /// Prefixes to put before the prompt names of some plugins, by plugin name.
    pub prefixes: BTreeMap<String, String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            plugins_dir: None,
            page_size: DEFAULT_PAGE_SIZE,
            limits: Limits::default(),
            sandbox: SandboxConfig::default(),
            prefixes: BTreeMap::new(),
        }
    }
}

impl ServeConfig {
    /// What applies to the plugin named `plugin`.
    pub fn plugin_settings(&self, plugin: &str) -> PluginSettings {
        PluginSettings {
            prefix: self.prefixes.get(plugin).cloned().unwrap_or_default(),
            limits: self.limits.clone(),
        }
    }
}
