//! The registry: the plugins being served and their catalog, as one immutable
//! snapshot that is swapped whole.
//!
//! A request takes one snapshot and uses it to the end, so it never sees half
//! of a change, and a plugin it is calling stays alive until it is done.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::catalog::{Catalog, Entry, PluginSummary, Skipped};
use crate::convert;
use crate::metrics;
use crate::served_content::{Carrier, ContentIndex, SkippedUri};
use prompt_host_kernel::plugin::Plugin;

/// The plugins being served, and the catalog merged from them.
pub struct Snapshot {
    plugins: Vec<Arc<Plugin>>,
    catalog: Catalog,
    /// Prompts left out because another plugin serves their names.
    skipped: Vec<Skipped>,
    /// The skills and static resources the plugins carry (WIT 0.4).
    content: ContentIndex,
    /// URIs left out because another plugin serves them.
    skipped_uris: Vec<SkippedUri>,
}

/// Which lists a change of the registry changed, counted since it began:
/// a subscriber tells its client of each kind whose count moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changes {
    /// Changes of the prompt catalog (`notifications/prompts/list_changed`).
    pub prompts: u64,
    /// Changes of the skills and resources served
    /// (`notifications/resources/list_changed`).
    pub content: u64,
}

impl Snapshot {
    /// Merges the plugins' prompts into a catalog, after `previous` (the
    /// snapshot it replaces, if any): a prompt whose served name is taken by
    /// another plugin is skipped, and a name stays with the plugin that
    /// served it in `previous` ([`Catalog::build`]).
    pub fn new(plugins: Vec<Arc<Plugin>>, previous: Option<&Snapshot>) -> Snapshot {
        let summaries: Vec<PluginSummary> = plugins.iter().map(|plugin| summary(plugin)).collect();
        let (catalog, skipped) = Catalog::build(&summaries, previous.map(|previous| &previous.catalog));
        let carriers: Vec<Carrier<'_>> = plugins.iter().map(|plugin| Carrier::from(&**plugin)).collect();
        let (content, skipped_uris) = ContentIndex::build(&carriers, previous.map(|previous| &previous.content));
        Snapshot { plugins, catalog, skipped, content, skipped_uris }
    }

    /// Warns of each skipped prompt that `previous` did not skip already, so
    /// that a clash is reported when it appears, not at every change after.
    fn warn_of_new_clashes(&self, previous: &[Skipped], previous_uris: &[SkippedUri]) {
        for skip in self.skipped_uris.iter().filter(|skip| !previous_uris.contains(skip)) {
            // URIs were checked at load (printable ASCII); plugin names are
            // file names: escaped.
            tracing::warn!(
                uri = %skip.uri.escape_debug(),
                plugin = %skip.plugin.escape_debug(),
                served_by = %skip.served_by.escape_debug(),
                "'{}' of plugin '{}' is skipped: plugin '{}' already serves that URI",
                skip.uri.escape_debug(),
                skip.plugin.escape_debug(),
                skip.served_by.escape_debug()
            );
        }
        for skip in self.skipped.iter().filter(|skip| !previous.contains(skip)) {
            // Prompt names may appear in the message: validation refused any
            // with whitespace, control or format characters at load. Plugin
            // names are file names: escaped.
            tracing::warn!(
                prompt = %skip.name,
                plugin = %skip.plugin.escape_debug(),
                served_by = %skip.served_by.escape_debug(),
                "prompt '{}' of plugin '{}' is skipped: plugin '{}' already serves that name",
                skip.name,
                skip.plugin.escape_debug(),
                skip.served_by.escape_debug()
            );
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The skills and static resources served.
    pub fn content(&self) -> &ContentIndex {
        &self.content
    }

    /// The prompt served under `name`, and the plugin that owns it.
    pub fn resolve(&self, name: &str) -> Option<(&Entry, &Arc<Plugin>)> {
        let entry = self.catalog.resolve(name)?;
        Some((entry, &self.plugins[entry.plugin]))
    }
}

fn summary(plugin: &Plugin) -> PluginSummary {
    PluginSummary {
        id: plugin.id().to_string(),
        digest: plugin.digest().to_string(),
        prefix: plugin.prefix().to_string(),
        prompts: plugin.prompts().iter().map(|prompt| convert::prompt(prompt, &prompt.name)).collect(),
        typed: plugin.typed().to_vec(),
    }
}

/// Holds the current snapshot, and tells subscribers when it changes.
pub struct Registry {
    current: ArcSwap<Snapshot>,
    /// Counts effective changes. A watch channel keeps only the latest value,
    /// so a burst of changes wakes a slow subscriber once.
    changes: watch::Sender<Changes>,
}

impl Registry {
    pub fn new(plugins: Vec<Arc<Plugin>>) -> Registry {
        let snapshot = Snapshot::new(plugins, None);
        snapshot.warn_of_new_clashes(&[], &[]);
        metrics::catalog_published(snapshot.catalog.version(), snapshot.catalog.entries().len());
        Registry { current: ArcSwap::from_pointee(snapshot), changes: watch::Sender::new(Changes::default()) }
    }

    /// The current snapshot, for one request to use to its end.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Serves `plugins` from now on. Requests already running finish on the
    /// snapshot they took. Returns whether the catalog or the content
    /// changed: a plugin replaced by one of the same bytes (its limits
    /// changed in the configuration, say) is served from the next call on,
    /// but changes no prompt, URI, cursor or version, and so tells no client.
    pub fn publish(&self, plugins: Vec<Arc<Plugin>>) -> bool {
        let current = self.current.load();
        let next = Snapshot::new(plugins, Some(&**current));
        let prompts_changed = next.catalog.version() != current.catalog.version();
        let content_changed = next.content.version() != current.content.version();
        if !prompts_changed && !content_changed {
            let same_plugins = next.plugins.len() == current.plugins.len()
                && next.plugins.iter().zip(&current.plugins).all(|(next, current)| Arc::ptr_eq(next, current));
            if !same_plugins {
                self.current.store(Arc::new(next));
            }
            return false;
        }
        // Said once it is served: a line or a metric read before is true.
        let next = Arc::new(next);
        self.current.store(next.clone());
        next.warn_of_new_clashes(&current.skipped, &current.skipped_uris);
        metrics::catalog_published(next.catalog.version(), next.catalog.entries().len());
        self.changes.send_modify(|changes| {
            changes.prompts += u64::from(prompts_changed);
            changes.content += u64::from(content_changed);
        });
        true
    }

    /// A receiver that is woken after each effective change.
    pub fn subscribe(&self) -> watch::Receiver<Changes> {
        self.changes.subscribe()
    }
}
