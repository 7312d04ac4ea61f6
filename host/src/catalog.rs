//! The catalog: every served prompt, merged from all plugins, in one stable
//! order; name resolution; and pagination.
//!
//! The catalog is plain data built from plugin summaries. It never calls a
//! plugin and knows nothing of WebAssembly, so `prompts/list` costs a slice
//! and a few clones.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{MetaObject, Prompt};

use prompt_host_kernel::arguments::{PromptArguments, SCHEMA_META_KEY};
use prompt_host_kernel::plugin::Plugin;

use crate::cursor::{self, List};

pub use crate::cursor::CursorError;

/// What the catalog needs to know of one plugin.
#[derive(Debug, Clone)]
pub struct PluginSummary {
    /// The plugin's name.
    pub id: String,
    /// The SHA-256 of its bytes: part of the catalog's version.
    pub digest: String,
    /// Put before each of its prompt names.
    pub prefix: String,
    /// Its prompts, under the names it declared them with, in its order.
    pub prompts: Vec<Prompt>,
    /// The typed arguments of each prompt, in the same order (0.3 packs);
    /// empty otherwise.
    pub typed: Vec<Arc<PromptArguments>>,
}

/// One served prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The prompt under its served name. Its `_meta` naming the plugin is
    /// added as it is listed ([`Entry::listed`]), not kept: a map in each of
    /// 100,000 prompts was 63 MiB of a 1,000-pack host's idle heap.
    pub prompt: Prompt,
    /// The index of the owning plugin among the summaries the catalog was
    /// built from.
    pub plugin: usize,
    /// The owning plugin's name, shared by all its entries.
    pub served_by: Arc<str>,
    /// The name the owning plugin declared it with.
    pub declared_name: String,
    /// Its typed arguments (a 0.3 pack's prompt), shared with the plugin.
    pub typed: Option<Arc<PromptArguments>>,
}

impl Entry {
    /// The prompt as `prompts/list` shows it: with a `_meta` naming the
    /// plugin that serves it, and the JSON Schema of its typed arguments
    /// (under [`SCHEMA_META_KEY`]: MCP's `PromptArgument` has no `_meta` of
    /// its own in any revision, and the SDKs drop what it does not define).
    pub fn listed(&self) -> Prompt {
        let mut prompt = self.prompt.clone();
        let mut meta = serde_json::Map::new();
        meta.insert(PLUGIN_META_KEY.to_string(), serde_json::Value::String(self.served_by.to_string()));
        if let Some(typed) = self.typed.as_ref().filter(|typed| !typed.declared.is_empty()) {
            meta.insert(SCHEMA_META_KEY.to_string(), typed.schema());
        }
        prompt.meta = Some(MetaObject(meta));
        prompt
    }

    /// The names of the arguments a client must pass.
    pub fn required_arguments(&self) -> impl Iterator<Item = &str> {
        self.prompt.arguments.iter().flatten().filter(|argument| argument.required == Some(true)).map(|argument| argument.name.as_str())
    }
}

/// A prompt left out because an earlier plugin already serves its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub plugin: String,
    pub served_by: String,
}

/// The number of prompts on one page of `prompts/list`, unless configured.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// One page of `prompts/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<'a> {
    pub prompts: &'a [Entry],
    pub next_cursor: Option<String>,
}

/// Every served prompt, in order: plugins by name, and each plugin's prompts
/// in the order it declared them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    version: String,
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// Merges the plugins' prompts. A served name stays with the plugin
    /// that serves it in `previous` (the catalog being replaced), as long as
    /// that plugin still declares it, so a plugin added later never takes a
    /// name from one that is serving it; a name no plugin served before
    /// belongs to the first plugin (by name) that declares it. The same name
    /// from any other plugin is skipped and reported.
    pub fn build(plugins: &[PluginSummary], previous: Option<&Catalog>) -> (Catalog, Vec<Skipped>) {
        let mut order: Vec<usize> = (0..plugins.len()).collect();
        order.sort_by(|&a, &b| plugins[a].id.cmp(&plugins[b].id));
        let owners = owners(plugins, &order, previous);

        let prompts = plugins.iter().map(|plugin| plugin.prompts.len()).sum();
        let mut catalog =
            Catalog { version: String::new(), entries: Vec::with_capacity(prompts), by_name: HashMap::with_capacity(prompts) };
        let mut skipped = Vec::new();
        for &index in &order {
            let plugin = &plugins[index];
            let served_by: Arc<str> = Arc::from(plugin.id.as_str());
            for (at, declared) in plugin.prompts.iter().enumerate() {
                let name = served_name(&plugin.prefix, &declared.name);
                let owner = owners[&name];
                // A plugin that declares one name twice serves its first.
                if owner != index || catalog.by_name.contains_key(&name) {
                    skipped.push(Skipped { name, plugin: plugin.id.clone(), served_by: plugins[owner].id.clone() });
                    continue;
                }
                let mut prompt = declared.clone();
                prompt.name = name.clone();
                catalog.by_name.insert(name, catalog.entries.len());
                let typed = plugin.typed.get(at).cloned();
                catalog.entries.push(Entry {
                    prompt,
                    plugin: index,
                    served_by: served_by.clone(),
                    declared_name: declared.name.clone(),
                    typed,
                });
            }
        }
        catalog.version = version(order.iter().map(|&i| &plugins[i]), &skipped);
        (catalog, skipped)
    }

    /// The catalog's version: derived from the plugins' names, contents and
    /// prefixes only, so equal plugin sets give equal versions (and cursors)
    /// on any host.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// All served prompts, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The prompt served under `name`.
    pub fn resolve(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&index| &self.entries[index])
    }

    /// The served name closest to `name`, when one is close enough to be
    /// what was meant (a typo: at most a third of its characters, and at
    /// least one, differ).
    pub fn closest(&self, name: &str) -> Option<&str> {
        // A client may send a name of megabytes: no served name is longer
        // than MAX_SUGGESTED_BYTES, and the distance costs the product of the
        // lengths, so only names of about a served name's length are compared.
        if name.len() > MAX_SUGGESTED_BYTES {
            return None;
        }
        let allowed = (name.chars().count() / 3).max(1);
        self.entries
            .iter()
            .filter(|entry| entry.prompt.name.len().abs_diff(name.len()) <= allowed * 4)
            .map(|entry| (strsim::levenshtein(name, &entry.prompt.name), entry.prompt.name.as_str()))
            .filter(|(distance, _)| *distance <= allowed)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, served)| served)
    }

    /// The page that starts at `cursor` (or at the beginning), of at most
    /// `page_size` prompts, with the cursor of the next page if any remain.
    pub fn page(&self, cursor: Option<&str>, page_size: usize) -> Result<Page<'_>, CursorError> {
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor::decode(List::Prompts, cursor, &self.version, self.entries.len())?,
        };
        let end = start.saturating_add(page_size.max(1)).min(self.entries.len());
        let next_cursor = (end < self.entries.len()).then(|| cursor::encode(&self.version, end));
        Ok(Page { prompts: &self.entries[start..end], next_cursor })
    }
}

/// The longest name a suggestion is looked for: served names are at most
/// 256 bytes plus a prefix.
const MAX_SUGGESTED_BYTES: usize = 512;

/// The `_meta` key that names the plugin serving a listed prompt, so that
/// clients and operators can tell which pack answers it.
pub const PLUGIN_META_KEY: &str = "prompt-host/plugin";

/// The name a prompt is served under: the plugin's prefix, then the name the
/// plugin declared.
pub fn served_name(prefix: &str, declared: &str) -> String {
    format!("{prefix}{declared}")
}

/// The names `plugin`'s prompts are served under.
pub fn served_names(plugin: &Plugin) -> Vec<String> {
    plugin.prompts().iter().map(|prompt| served_name(plugin.prefix(), &prompt.name)).collect()
}

/// Which plugin serves each name: the one serving it in `previous`, if it
/// still declares it, else the first in `order` that declares it.
fn owners(plugins: &[PluginSummary], order: &[usize], previous: Option<&Catalog>) -> HashMap<String, usize> {
    let mut owners: HashMap<String, usize> = HashMap::new();
    for &index in order {
        let plugin = &plugins[index];
        for declared in &plugin.prompts {
            let name = served_name(&plugin.prefix, &declared.name);
            let incumbent = previous.and_then(|previous| previous.resolve(&name)).is_some_and(|entry| *entry.served_by == *plugin.id);
            match owners.entry(name) {
                std::collections::hash_map::Entry::Vacant(vacant) => {
                    vacant.insert(index);
                }
                std::collections::hash_map::Entry::Occupied(mut occupied) if incumbent => {
                    occupied.insert(index);
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
    }
    owners
}

/// The version of a catalog of `plugins` (in order) that skipped `skipped`:
/// equal plugin sets give equal versions on any host, and so do equal
/// plugin sets whose clashes were settled alike (a name kept by the plugin
/// that served it first).
fn version<'a>(plugins: impl Iterator<Item = &'a PluginSummary>, skipped: &[Skipped]) -> String {
    let plugins = plugins.flat_map(|plugin| [&plugin.id, &plugin.digest, &plugin.prefix]);
    let skipped = skipped.iter().flat_map(|skip| [&skip.name, &skip.plugin]);
    cursor::version(plugins.chain(skipped).map(|part| part.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(id: &str, prefix: &str, names: &[&str]) -> PluginSummary {
        PluginSummary {
            id: id.into(),
            digest: format!("digest-of-{id}"),
            prefix: prefix.into(),
            prompts: names.iter().map(|name| Prompt::new(*name, None::<String>, None)).collect(),
            typed: Vec::new(),
        }
    }

    fn names(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|entry| entry.prompt.name.as_str()).collect()
    }

    #[test]
    fn plugins_merge_in_name_order_and_keep_their_own_order() {
        let (catalog, skipped) = Catalog::build(&[plugin("zeta", "", &["z2", "z1"]), plugin("alpha", "", &["a2", "a1"])], None);
        assert_eq!(names(catalog.entries()), ["a2", "a1", "z2", "z1"]);
        assert!(skipped.is_empty());
        let entry = catalog.resolve("z1").unwrap();
        assert_eq!((entry.plugin, entry.declared_name.as_str()), (0, "z1"));
        let meta = entry.listed().meta.unwrap();
        assert_eq!(meta.0.get(PLUGIN_META_KEY), Some(&serde_json::json!("zeta")));
        assert_eq!(entry.listed().name, "z1");
    }

    #[test]
    fn a_typo_finds_the_closest_name() {
        let (catalog, _) = Catalog::build(&[plugin("a", "", &["translate", "summarize", "code_review"])], None);
        assert_eq!(catalog.closest("translat"), Some("translate"));
        assert_eq!(catalog.closest("sumarise"), Some("summarize"));
        assert_eq!(catalog.closest("code-review"), Some("code_review"));
        assert_eq!(catalog.closest("weather"), None);
        assert_eq!(catalog.closest(""), None);
        // A name far longer than any served one is not compared at all.
        assert_eq!(catalog.closest(&"translate".repeat(100_000)), None);
    }

    #[test]
    fn a_clashing_name_stays_with_the_first_plugin() {
        let (catalog, skipped) = Catalog::build(&[plugin("b", "", &["shared", "b-only"]), plugin("a", "", &["shared"])], None);
        assert_eq!(names(catalog.entries()), ["shared", "b-only"]);
        assert_eq!(catalog.resolve("shared").unwrap().plugin, 1);
        assert_eq!(skipped, [Skipped { name: "shared".into(), plugin: "b".into(), served_by: "a".into() }]);
    }

    #[test]
    fn a_name_stays_with_the_plugin_serving_it_when_a_plugin_that_sorts_first_comes() {
        let incumbent = || plugin("triage_errors", "", &["triage-errors", "summary"]);
        let newcomer = || plugin("triage-errors", "", &["triage-errors", "new-one"]);
        let (served, _) = Catalog::build(&[incumbent()], None);
        let (catalog, skipped) = Catalog::build(&[incumbent(), newcomer()], Some(&served));
        assert_eq!(names(catalog.entries()), ["new-one", "triage-errors", "summary"]);
        assert_eq!(catalog.resolve("triage-errors").unwrap().plugin, 0);
        assert_eq!(skipped, [Skipped { name: "triage-errors".into(), plugin: "triage-errors".into(), served_by: "triage_errors".into() }]);
        // A later change keeps it there (the newcomer replaced, say).
        let (again, _) = Catalog::build(&[newcomer(), incumbent()], Some(&catalog));
        assert_eq!(again.resolve("triage-errors").unwrap().served_by.as_ref(), "triage_errors");
        // With no plugin serving it before (at start), the first by name takes it.
        let (fresh, skipped) = Catalog::build(&[incumbent(), newcomer()], None);
        assert_eq!(fresh.resolve("triage-errors").unwrap().plugin, 1);
        assert_eq!(skipped, [Skipped { name: "triage-errors".into(), plugin: "triage_errors".into(), served_by: "triage-errors".into() }]);
        // The two lists differ, and so do their versions (and cursors).
        assert_ne!(fresh.version(), catalog.version());
        // Once the incumbent is gone, the name is free for the next.
        let (after, skipped) = Catalog::build(&[newcomer()], Some(&catalog));
        assert_eq!((after.resolve("triage-errors").unwrap().plugin, skipped), (0, vec![]));
    }

    #[test]
    fn prefixes_rename_and_resolve_back() {
        let (catalog, skipped) = Catalog::build(&[plugin("a", "", &["shared"]), plugin("b", "team-", &["shared"])], None);
        assert_eq!(names(catalog.entries()), ["shared", "team-shared"]);
        assert!(skipped.is_empty());
        assert_eq!(catalog.resolve("team-shared").unwrap().declared_name, "shared");
    }

    #[test]
    fn equal_plugin_sets_give_equal_versions() {
        let one = Catalog::build(&[plugin("a", "", &["x"]), plugin("b", "", &["y"])], None).0;
        let two = Catalog::build(&[plugin("b", "", &["y"]), plugin("a", "", &["x"])], None).0;
        assert_eq!(one.version(), two.version());
        let changed = Catalog::build(&[plugin("a", "p-", &["x"]), plugin("b", "", &["y"])], None).0;
        assert_ne!(one.version(), changed.version());
    }

    #[test]
    fn pages_walk_the_whole_catalog() {
        let (catalog, _) = Catalog::build(&[plugin("a", "", &["1", "2", "3", "4", "5"])], None);
        let first = catalog.page(None, 2).unwrap();
        assert_eq!(names(first.prompts), ["1", "2"]);
        let second = catalog.page(first.next_cursor.as_deref(), 2).unwrap();
        assert_eq!(names(second.prompts), ["3", "4"]);
        let third = catalog.page(second.next_cursor.as_deref(), 2).unwrap();
        assert_eq!(names(third.prompts), ["5"]);
        assert_eq!(third.next_cursor, None);
    }

    #[test]
    fn a_cursor_from_another_catalog_is_stale() {
        let (old, _) = Catalog::build(&[plugin("a", "", &["1", "2", "3"])], None);
        let (new, _) = Catalog::build(&[plugin("a", "", &["1", "2", "3"]), plugin("b", "", &["4"])], None);
        let cursor = old.page(None, 1).unwrap().next_cursor.unwrap();
        assert_eq!(new.page(Some(&cursor), 1), Err(CursorError::Stale(List::Prompts)));
    }

    proptest::proptest! {
        /// Whatever the plugins and the page size, walking the pages lists
        /// every served prompt exactly once, in catalog order, and every
        /// declared name is either served or reported as skipped.
        #[test]
        fn pages_list_every_prompt_once_in_order(
            plugins in proptest::collection::vec(
                ("[a-d]{1,2}", proptest::collection::vec("[a-f]{1,2}", 0..12)),
                0..6,
            ),
            page_size in 1usize..20,
        ) {
            let summaries: Vec<PluginSummary> = plugins
                .iter()
                .enumerate()
                .map(|(i, (id, names))| {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    plugin(&format!("{id}{i}"), "", &names)
                })
                .collect();
            let (catalog, skipped) = Catalog::build(&summaries, None);
            let mut walked = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = catalog.page(cursor.as_deref(), page_size).unwrap();
                proptest::prop_assert!(page.prompts.len() <= page_size);
                walked.extend(page.prompts.iter().cloned());
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            proptest::prop_assert_eq!(&walked, catalog.entries());
            let mut served: Vec<&str> = walked.iter().map(|entry| entry.prompt.name.as_str()).collect();
            let total = served.len();
            served.sort();
            served.dedup();
            proptest::prop_assert_eq!(served.len(), total, "a name was served twice");
            let declared: usize = summaries.iter().map(|plugin| plugin.prompts.len()).sum();
            proptest::prop_assert_eq!(total + skipped.len(), declared);
        }

        /// No string, however odd, makes cursor decoding panic, and a cursor
        /// that decodes points inside the catalog.
        #[test]
        fn any_cursor_text_decodes_or_is_refused(text in ".{0,64}", len in 0usize..200) {
            let (catalog, _) = Catalog::build(&[], None);
            if let Ok(position) = cursor::decode(List::Prompts, &text, catalog.version(), len) {
                proptest::prop_assert!(position > 0 && position < len);
            }
        }
    }

    #[test]
    fn an_empty_catalog_has_one_empty_page() {
        let (catalog, _) = Catalog::build(&[], None);
        let page = catalog.page(None, 10).unwrap();
        assert!(page.prompts.is_empty());
        assert_eq!(page.next_cursor, None);
    }
}
