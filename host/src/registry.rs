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
use prompt_host_kernel::plugin::Plugin;

/// The plugins being served, and the catalog merged from them.
pub struct Snapshot {
    plugins: Vec<Arc<Plugin>>,
    catalog: Catalog,
    /// Prompts left out because another plugin serves their names.
    skipped: Vec<Skipped>,
}

impl Snapshot {
    /// Merges the plugins' prompts into a catalog, after `previous` (the
    /// snapshot it replaces, if any): a prompt whose served name is taken by
    /// another plugin is skipped, and a name stays with the plugin that
    /// served it in `previous` ([`Catalog::build`]).
    pub fn new(plugins: Vec<Arc<Plugin>>, previous: Option<&Snapshot>) -> Snapshot {
        let summaries: Vec<PluginSummary> = plugins.iter().map(|plugin| summary(plugin)).collect();
        let (catalog, skipped) = Catalog::build(&summaries, previous.map(|previous| &previous.catalog));
        Snapshot { plugins, catalog, skipped }
    }

    /// Warns of each skipped prompt that `previous` did not skip already, so
    /// that a clash is reported when it appears, not at every change after.
    fn warn_of_new_clashes(&self, previous: &[Skipped]) {
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
    changes: watch::Sender<u64>,
}

impl Registry {
    pub fn new(plugins: Vec<Arc<Plugin>>) -> Registry {
        let snapshot = Snapshot::new(plugins, None);
        snapshot.warn_of_new_clashes(&[]);
        metrics::catalog_published(snapshot.catalog.version(), snapshot.catalog.entries().len());
        Registry { current: ArcSwap::from_pointee(snapshot), changes: watch::Sender::new(0) }
    }

    /// The current snapshot, for one request to use to its end.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Serves `plugins` from now on. Requests already running finish on the
    /// snapshot they took. Returns whether the catalog changed: a plugin
    /// replaced by one of the same content (its limits changed in the
    /// configuration, say) is served from the next call on, but changes no
    /// prompt, cursor or catalog version, and so tells no client.
    pub fn publish(&self, plugins: Vec<Arc<Plugin>>) -> bool {
        let current = self.current.load();
        let next = Snapshot::new(plugins, Some(&**current));
        if next.catalog.version() == current.catalog.version() {
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
        next.warn_of_new_clashes(&current.skipped);
        metrics::catalog_published(next.catalog.version(), next.catalog.entries().len());
        self.changes.send_modify(|generation| *generation += 1);
        true
    }

    /// A receiver that is woken after each effective change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
