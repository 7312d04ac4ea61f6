//! The skills and static resources the packs carry (WIT 0.4), indexed by
//! URI: what `skills/list`, `skills/get`, `resources/list`, `resources/read`
//! and `resources/directory/read` answer, from memory.
//!
//! Like the catalog, the index is plain data built from the plugins of one
//! snapshot, and swapped with it: it never calls a pack, so what a client
//! reads is the bytes whose digest it was listed with. A skill's files are
//! served as `skill://<path>/<file>` (SEP-2640); a URI belongs to the pack
//! that served it before a change (a pack added later never takes it) or,
//! new, to the first pack by name that carries it; the same URI from any
//! other pack is skipped and reported.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use prompt_host_kernel::plugin::Plugin;
use prompt_host_kernel::validate::{Body, Content, File, SKILL_MD, SKILL_SCHEME, Skill};

use crate::cursor::{self, List};

/// What the index needs of one plugin: its name, its digest (part of the
/// lists' versions) and what it carries.
#[derive(Debug, Clone, Copy)]
pub struct Carrier<'a> {
    pub id: &'a str,
    pub digest: &'a str,
    pub content: &'a Arc<Content>,
    /// The folder its skills are served under, or empty.
    pub skill_prefix: &'a str,
}

impl Carrier<'_> {
    /// Where `skill` is served: its path, under the plugin's skill prefix.
    fn served_path(&self, skill: &Skill) -> String {
        match self.skill_prefix {
            "" => skill.path.clone(),
            prefix => format!("{prefix}/{}", skill.path),
        }
    }
}

impl<'a> From<&'a Plugin> for Carrier<'a> {
    fn from(plugin: &'a Plugin) -> Carrier<'a> {
        Carrier { id: plugin.id(), digest: plugin.digest(), content: plugin.content(), skill_prefix: plugin.skill_prefix() }
    }
}

/// One served skill.
#[derive(Debug, Clone)]
pub struct ServedSkill {
    /// Its `SKILL.md`'s URI: `skill://code-review/SKILL.md`.
    pub uri: String,
    /// Its path as served: the skill's own, under the plugin's skill prefix.
    pub path: String,
    /// The URI of its folder: `skill://code-review`.
    pub folder: String,
    /// The plugin that carries it.
    pub served_by: Arc<str>,
    content: Arc<Content>,
    index: usize,
    /// Its entry as `skills/list` and `skills/get` give it, made once, and
    /// the bytes it takes serialized.
    entry: Arc<rmcp::model::Skill>,
    entry_bytes: usize,
}

impl ServedSkill {
    /// The skill, as the pack carries it (checked at load).
    pub fn skill(&self) -> &Skill {
        &self.content.skills[self.index]
    }
}

/// What a URI serves.
#[derive(Debug, Clone)]
pub enum Served {
    /// A file of a skill: the skill's index in [`ContentIndex::skills`], and
    /// the file's in the skill's files.
    SkillFile { skill: usize, file: usize },
    /// A static resource: the plugin that carries it, and its contents.
    Resource { served_by: Arc<str>, content: Arc<Content>, index: usize },
}

/// One entry of a folder, as `resources/directory/read` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Child {
    /// A folder, by its URI.
    Folder(String),
    /// A file, by its URI.
    File(String),
}

/// A URI left out because another plugin serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedUri {
    pub uri: String,
    pub plugin: String,
    pub served_by: String,
}

/// Every served skill and resource, by URI.
#[derive(Debug, Clone, Default)]
pub struct ContentIndex {
    skills_version: String,
    resources_version: String,
    skills: Vec<ServedSkill>,
    by_skill_uri: HashMap<String, usize>,
    /// Every served URI, in `resources/list` order: each skill's files
    /// (`SKILL.md` first), then the static resources.
    listed: Vec<String>,
    served: HashMap<String, Served>,
    /// Each folder's children, and the skill (its index) it is in.
    folders: HashMap<String, (usize, Vec<Child>)>,
}

/// The URI of a skill's file.
pub fn skill_file_uri(skill_path: &str, file: &str) -> String {
    format!("{SKILL_SCHEME}://{skill_path}/{file}")
}

impl ContentIndex {
    /// Indexes what `plugins` carry, after `previous` (the index being
    /// replaced): a URI stays with the plugin that served it there.
    pub fn build(plugins: &[Carrier<'_>], previous: Option<&ContentIndex>) -> (ContentIndex, Vec<SkippedUri>) {
        let mut order: Vec<&Carrier<'_>> = plugins.iter().filter(|plugin| !plugin.content.is_empty()).collect();
        order.sort_by(|a, b| a.id.cmp(b.id));
        let owners = owners(&order, previous);
        let nested = nested_skills(&order, &owners, previous);
        let mut index = ContentIndex::default();
        let mut skipped = Vec::new();
        for plugin in &order {
            let served_by: Arc<str> = Arc::from(plugin.id);
            let content = plugin.content;
            for (at, skill) in content.skills.iter().enumerate() {
                let path = plugin.served_path(skill);
                let uri = skill_file_uri(&path, SKILL_MD);
                let owner = if owners.get(&uri).map(|owner| &**owner) != Some(plugin.id) {
                    Some(owners[&uri].to_string())
                } else {
                    nested.get(&(plugin.id, path.clone())).map(|other| other.to_string())
                };
                if let Some(served_by) = owner {
                    skipped.push(SkippedUri { uri, plugin: plugin.id.to_string(), served_by });
                    continue;
                }
                let entry = Arc::new(ContentIndex::entry_of(&uri, &path, skill));
                let entry_bytes = serde_json::to_vec(&*entry).map_or(0, |json| json.len());
                index.add_skill(ServedSkill {
                    uri,
                    folder: format!("{SKILL_SCHEME}://{path}"),
                    path,
                    served_by: served_by.clone(),
                    content: content.clone(),
                    index: at,
                    entry,
                    entry_bytes,
                });
            }
            for (at, resource) in content.resources.iter().enumerate() {
                if owners.get(&resource.uri).map(|owner| &**owner) != Some(plugin.id) || index.served.contains_key(&resource.uri) {
                    skipped.push(SkippedUri {
                        uri: resource.uri.clone(),
                        plugin: plugin.id.to_string(),
                        served_by: owners[&resource.uri].to_string(),
                    });
                    continue;
                }
                index.listed.push(resource.uri.clone());
                let served = Served::Resource { served_by: served_by.clone(), content: content.clone(), index: at };
                index.served.insert(resource.uri.clone(), served);
            }
        }
        index.skills_version = index.version_of_skills();
        index.resources_version = index.version_of_resources();
        (index, skipped)
    }

    fn add_skill(&mut self, skill: ServedSkill) {
        let at = self.skills.len();
        let checked = skill.skill();
        let mut folders: BTreeMap<String, Vec<Child>> = BTreeMap::new();
        for (file, served) in checked.files.iter().enumerate() {
            let uri = skill_file_uri(&skill.path, &served.path);
            self.listed.push(uri.clone());
            self.served.insert(uri.clone(), Served::SkillFile { skill: at, file });
            // Each folder from the skill's own down to the file's lists its child.
            let mut child = Child::File(uri.clone());
            let mut parent = uri.rsplit_once('/').map(|(parent, _)| parent.to_string());
            while let Some(folder) = parent.filter(|folder| folder.len() >= skill.folder.len()) {
                folders.entry(folder.clone()).or_default().push(child);
                child = Child::Folder(folder.clone());
                parent = folder.rsplit_once('/').map(|(parent, _)| parent.to_string());
            }
        }
        for (folder, mut children) in folders {
            children.sort();
            children.dedup();
            self.folders.insert(folder, (at, children));
        }
        self.by_skill_uri.insert(skill.uri.clone(), at);
        self.skills.push(skill);
    }

    /// The version of everything served: equal for equal content.
    pub fn version(&self) -> (&str, &str) {
        (&self.skills_version, &self.resources_version)
    }

    /// Whether any skill or resource is served.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// Whether any skill is served.
    pub fn has_skills(&self) -> bool {
        !self.skills.is_empty()
    }

    /// Every served skill, in order: plugins by name, each one's by path.
    pub fn skills(&self) -> &[ServedSkill] {
        &self.skills
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn skill(&self, uri: &str) -> Option<&ServedSkill> {
        self.by_skill_uri.get(uri).map(|&at| &self.skills[at])
    }

    /// What `uri` serves.
    pub fn resolve(&self, uri: &str) -> Option<&Served> {
        self.served.get(uri)
    }

    /// The children of the folder at `uri` (a skill's folder, or one inside
    /// it), in order.
    pub fn folder(&self, uri: &str) -> Option<&[Child]> {
        self.folders.get(uri.strip_suffix('/').unwrap_or(uri)).map(|(_, children)| children.as_slice())
    }

    /// Every served URI, in `resources/list` order.
    pub fn listed(&self) -> &[String] {
        &self.listed
    }

    /// A page of `resources/list`: the URIs from `cursor` on, at most
    /// `page_size`, and the cursor of the next page.
    pub fn resources_page(&self, cursor: Option<&str>, page_size: usize) -> Result<(&[String], Option<String>), cursor::CursorError> {
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor::decode(List::Resources, cursor, &self.resources_version, self.listed.len())?,
        };
        let end = start.saturating_add(page_size.max(1)).min(self.listed.len());
        Ok((&self.listed[start..end], (end < self.listed.len()).then(|| cursor::encode(&self.resources_version, end))))
    }

    /// The plugin serving `uri` (a skill by its `SKILL.md`, or a resource).
    pub fn served_by(&self, uri: &str) -> Option<Arc<str>> {
        match self.served.get(uri)? {
            Served::SkillFile { skill, .. } => Some(self.skills[*skill].served_by.clone()),
            Served::Resource { served_by, .. } => Some(served_by.clone()),
        }
    }

    /// The plugin serving the folder at `uri`.
    pub fn folder_served_by(&self, uri: &str) -> Option<Arc<str>> {
        let (skill, _) = self.folders.get(uri.strip_suffix('/').unwrap_or(uri))?;
        Some(self.skills[*skill].served_by.clone())
    }

    /// The skill file at `skill`, `file` of [`Served::SkillFile`].
    pub fn skill_file(&self, skill: usize, file: usize) -> (&ServedSkill, &File) {
        let served = &self.skills[skill];
        (served, &served.skill().files[file])
    }
}

/// Which plugin serves each URI (a skill's `SKILL.md` stands for its
/// files): the one serving it in `previous`, if it still carries it, else
/// the first in `order`.
fn owners(order: &[&Carrier<'_>], previous: Option<&ContentIndex>) -> HashMap<String, Arc<str>> {
    let mut owners: HashMap<String, Arc<str>> = HashMap::new();
    for plugin in order {
        let content = plugin.content;
        let skills = content.skills.iter().map(|skill| skill_file_uri(&plugin.served_path(skill), SKILL_MD));
        let uris: Vec<String> = skills.chain(content.resources.iter().map(|resource| resource.uri.clone())).collect();
        for uri in uris {
            let incumbent = previous.and_then(|previous| previous.served_by(&uri)).is_some_and(|served_by| &*served_by == plugin.id);
            match owners.entry(uri) {
                std::collections::hash_map::Entry::Vacant(vacant) => {
                    vacant.insert(Arc::from(plugin.id));
                }
                std::collections::hash_map::Entry::Occupied(mut occupied) if incumbent => {
                    occupied.insert(Arc::from(plugin.id));
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
    }
    owners
}

/// The skills (by plugin and path) whose URI their plugin owns but whose
/// folder is inside another served skill's, or holds one (one folder cannot
/// be two skills'), with the plugin that keeps the folder: skills served in
/// `previous` are placed first, so a pack added later never displaces one
/// that was serving; then the others, plugins by name.
fn nested_skills<'a>(
    order: &[&Carrier<'a>],
    owners: &HashMap<String, Arc<str>>,
    previous: Option<&ContentIndex>,
) -> HashMap<(&'a str, String), Arc<str>> {
    let mut placed: BTreeMap<String, Arc<str>> = BTreeMap::new();
    let mut nested = HashMap::new();
    for incumbents in [true, false] {
        for plugin in order {
            for skill in &plugin.content.skills {
                let path = plugin.served_path(skill);
                let uri = skill_file_uri(&path, SKILL_MD);
                let incumbent = previous.and_then(|previous| previous.served_by(&uri)).is_some_and(|by| &*by == plugin.id);
                if owners.get(&uri).map(|owner| &**owner) != Some(plugin.id) || incumbent != incumbents {
                    continue;
                }
                let outer = path.match_indices('/').map(|(at, _)| &path[..at]).find_map(|outer| placed.get(outer));
                // Every path inside `path/` sorts from `path/` on, together.
                let folder = format!("{path}/");
                let inner = placed.range::<str, _>((std::ops::Bound::Included(folder.as_str()), std::ops::Bound::Unbounded)).next();
                let inner = inner.filter(|(inner, _)| inner.starts_with(&folder));
                match outer.or(inner.map(|(_, by)| by)) {
                    Some(by) => {
                        nested.insert((plugin.id, path), by.clone());
                    }
                    None => {
                        placed.insert(path, Arc::from(plugin.id));
                    }
                }
            }
        }
    }
    nested
}

impl ContentIndex {
    /// The version of `skills/list`: of what it serves (each skill's URI and
    /// every file's path and digest, which cover its frontmatter), so equal
    /// skills give equal versions on any host, and a change to a pack's
    /// prompts alone changes nothing here.
    fn version_of_skills(&self) -> String {
        let files = self.skills.iter().flat_map(|served| {
            let skill = served.skill();
            let files = skill.files.iter().flat_map(|file| [file.path.as_bytes(), file.digest.as_bytes()]);
            [b"skill".as_slice(), served.uri.as_bytes()].into_iter().chain(files)
        });
        cursor::version([b"skills".as_slice()].into_iter().chain(files))
    }

    /// The version of `resources/list`: of every URI listed and what it
    /// serves (a skill file's digest; a static resource's listing and
    /// bytes), so a cursor of one list is stale for the other.
    fn version_of_resources(&self) -> String {
        let described = |text: &Option<String>| text.as_deref().unwrap_or("\0").as_bytes().to_vec();
        let parts: Vec<Vec<u8>> = self
            .listed
            .iter()
            .flat_map(|uri| {
                let served: Vec<Vec<u8>> = match &self.served[uri] {
                    Served::SkillFile { skill, file } => vec![self.skill_file(*skill, *file).1.digest.as_bytes().to_vec()],
                    Served::Resource { content, index, .. } => {
                        let resource = &content.resources[*index];
                        vec![
                            resource.name.as_bytes().to_vec(),
                            described(&resource.title),
                            described(&resource.description),
                            described(&resource.mime_type),
                            resource.digest.as_bytes().to_vec(),
                            // Text or bytes: what resources/read answers with.
                            match resource.body {
                                Body::Text(_) => b"text".to_vec(),
                                Body::Blob(_) => b"blob".to_vec(),
                            },
                        ]
                    }
                };
                std::iter::once(uri.as_bytes().to_vec()).chain(served)
            })
            .collect();
        cursor::version([b"resources".as_slice()].into_iter().chain(parts.iter().map(Vec::as_slice)))
    }
}

/// The most a page of `skills/list` holds, serialized, beyond its first
/// entry: a skill's entry (its frontmatter and every file's URI, digest and
/// size) can be some 100 KiB, so a page of 100 is bounded by bytes too.
pub const MAX_SKILLS_PAGE_BYTES: usize = 1024 * 1024;

/// What `resources/directory/read` and `skills/get` refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotServed {
    /// No skill's `SKILL.md` is at the URI.
    Skill,
    /// Nothing is served at the URI.
    Resource,
    /// The URI is not a folder served (a file, or nothing).
    Directory,
}

impl ContentIndex {
    /// A skill's entry, as `skills/list` and `skills/get` show it: its
    /// frontmatter verbatim, and every file's URI, digest and size.
    pub fn skill_entry(served: &ServedSkill) -> rmcp::model::Skill {
        served.entry.as_ref().clone()
    }

    /// The entry of `skill`, whose `SKILL.md` is at `uri`.
    fn entry_of(uri: &str, path: &str, skill: &Skill) -> rmcp::model::Skill {
        let mut frontmatter = rmcp::model::SkillFrontmatter::new(&skill.name, &skill.description);
        for (key, value) in skill.frontmatter.iter().filter(|(key, _)| *key != "name" && *key != "description") {
            frontmatter = frontmatter.with_field(key.clone(), value.clone());
        }
        let files = skill
            .files
            .iter()
            .map(|file| rmcp::model::SkillResource::new(skill_file_uri(path, &file.path), &file.digest, file.size))
            .collect();
        rmcp::model::Skill::new(uri, frontmatter, rmcp::model::SkillResources::Files(files))
    }

    /// A page of `skills/list`: at most `page_size` skills, and no more than
    /// [`MAX_SKILLS_PAGE_BYTES`] after the first; a skill is never split.
    pub fn list_skills(&self, cursor: Option<&str>, page_size: usize) -> Result<rmcp::model::ListSkillsResult, cursor::CursorError> {
        let first = match cursor {
            None => 0,
            Some(cursor) => cursor::decode(List::Skills, cursor, &self.skills_version, self.skills.len())?,
        };
        let mut entries = Vec::new();
        let mut bytes = 0;
        for served in self.skills[first..].iter().take(page_size.max(1)) {
            bytes += served.entry_bytes;
            if !entries.is_empty() && bytes > MAX_SKILLS_PAGE_BYTES {
                break;
            }
            entries.push(Self::skill_entry(served));
        }
        let end = first + entries.len();
        let mut result = rmcp::model::ListSkillsResult::with_all_items(entries);
        result.next_cursor = (end < self.skills.len()).then(|| cursor::encode(&self.skills_version, end));
        Ok(result)
    }

    /// `skills/get` of the skill whose `SKILL.md` is at `uri`.
    pub fn get_skill(&self, uri: &str) -> Result<rmcp::model::GetSkillResult, NotServed> {
        let served = self.skill(uri).ok_or(NotServed::Skill)?;
        Ok(rmcp::model::GetSkillResult::new(Self::skill_entry(served)))
    }

    /// The listing of what `uri` serves, as `resources/list` and
    /// `resources/directory/read` show it. A skill's `SKILL.md` is named and
    /// described by its frontmatter (SEP-2640); its other files by their path.
    fn listing(&self, uri: &str) -> Option<rmcp::model::Resource> {
        Some(match self.served.get(uri)? {
            Served::SkillFile { skill, file } => {
                let (served, file) = self.skill_file(*skill, *file);
                let skill = served.skill();
                let resource = match file.path == SKILL_MD {
                    true => rmcp::model::Resource::new(uri, &skill.name).with_description(&skill.description),
                    false => rmcp::model::Resource::new(uri, format!("{}/{}", served.path, file.path)),
                };
                resource.with_mime_type(file.mime_type).with_size(file.size)
            }
            Served::Resource { content, index, .. } => {
                let resource = &content.resources[*index];
                let mut listed = rmcp::model::Resource::new(uri, &resource.name).with_size(resource.body.bytes().len() as u64);
                listed.title = resource.title.clone();
                listed.description = resource.description.clone();
                listed.mime_type = resource.mime_type.clone();
                listed
            }
        })
    }

    /// A page of `resources/list`: every skill file and static resource.
    pub fn list_resources(&self, cursor: Option<&str>, page_size: usize) -> Result<rmcp::model::ListResourcesResult, cursor::CursorError> {
        let (page, next_cursor) = self.resources_page(cursor, page_size)?;
        let mut result = rmcp::model::ListResourcesResult::with_all_items(page.iter().filter_map(|uri| self.listing(uri)).collect());
        result.next_cursor = next_cursor;
        Ok(result)
    }

    /// `resources/read` of `uri`: the bytes it was listed with, from memory.
    pub fn read(&self, uri: &str) -> Result<rmcp::model::ReadResourceResult, NotServed> {
        let (body, mime_type) = match self.served.get(uri).ok_or(NotServed::Resource)? {
            Served::SkillFile { skill, file } => {
                let (_, file) = self.skill_file(*skill, *file);
                (&file.body, Some(file.mime_type.to_string()))
            }
            Served::Resource { content, index, .. } => {
                let resource = &content.resources[*index];
                (&resource.body, resource.mime_type.clone())
            }
        };
        let contents = match body {
            Body::Text(text) => {
                rmcp::model::ResourceContents::TextResourceContents { uri: uri.to_string(), mime_type, text: text.to_string(), meta: None }
            }
            Body::Blob(bytes) => {
                use base64::Engine;
                let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                rmcp::model::ResourceContents::BlobResourceContents { uri: uri.to_string(), mime_type, blob, meta: None }
            }
        };
        Ok(rmcp::model::ReadResourceResult::new(vec![contents]))
    }

    /// `resources/directory/read` of the folder at `uri` (a skill's, or one
    /// inside it): its direct children, folders as `inode/directory`. A
    /// folder holds at most a skill's files, so it is one page.
    pub fn read_directory(&self, uri: &str) -> Result<rmcp::model::ListResourcesResult, NotServed> {
        let children = self.folder(uri).ok_or(NotServed::Directory)?;
        let resources = children
            .iter()
            .filter_map(|child| match child {
                Child::Folder(folder) => {
                    let name = folder.rsplit('/').next().unwrap_or(folder);
                    Some(rmcp::model::Resource::new(folder, name).with_mime_type(rmcp::model::DIRECTORY_MIME_TYPE))
                }
                Child::File(file) => self.listing(file),
            })
            .collect();
        Ok(rmcp::model::ListResourcesResult::with_all_items(resources))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prompt_host_kernel::validate::{Body, File, Resource, Skill};

    fn file(path: &str, text: &str) -> File {
        File {
            path: path.into(),
            mime_type: "text/markdown",
            body: Body::Text(text.into()),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: text.len() as u64,
        }
    }

    fn skill(path: &str, files: &[&str]) -> Skill {
        let name = path.rsplit('/').next().unwrap().to_string();
        let mut all = vec![file(SKILL_MD, &format!("---\nname: {name}\ndescription: d\n---\n"))];
        all.extend(files.iter().map(|path| file(path, "x")));
        Skill { path: path.into(), name, description: "d".into(), frontmatter: serde_json::Map::new(), files: all }
    }

    fn content(skills: Vec<Skill>, resources: &[&str]) -> Arc<Content> {
        let resources = resources
            .iter()
            .map(|uri| Resource {
                uri: uri.to_string(),
                name: "r".into(),
                title: None,
                description: None,
                mime_type: None,
                body: Body::Blob(vec![1, 2].into()),
                digest: "sha256:0".into(),
            })
            .collect();
        Arc::new(Content { skills, resources })
    }

    fn build(packs: &[(&str, &Arc<Content>)], previous: Option<&ContentIndex>) -> (ContentIndex, Vec<SkippedUri>) {
        let carriers: Vec<Carrier<'_>> = packs.iter().map(|(id, content)| Carrier { id, digest: id, content, skill_prefix: "" }).collect();
        ContentIndex::build(&carriers, previous)
    }

    fn skipped(skips: &[SkippedUri]) -> Vec<(&str, &str, &str)> {
        skips.iter().map(|skip| (skip.uri.as_str(), skip.plugin.as_str(), skip.served_by.as_str())).collect()
    }

    #[test]
    fn a_uri_stays_with_the_pack_that_served_it_and_goes_first_to_the_first_by_name() {
        let review = content(vec![skill("review", &[])], &["acme://guide"]);
        let (first, skips) = build(&[("zeta", &review)], None);
        assert!(skips.is_empty());
        // "alpha" sorts first, but zeta served the URIs before the change.
        let (next, skips) = build(&[("alpha", &review), ("zeta", &review)], Some(&first));
        assert_eq!(next.served_by("skill://review/SKILL.md").as_deref(), Some("zeta"));
        assert_eq!(next.served_by("acme://guide").as_deref(), Some("zeta"));
        assert_eq!(skipped(&skips), [("skill://review/SKILL.md", "alpha", "zeta"), ("acme://guide", "alpha", "zeta")]);
        // Built fresh, the first by name takes them.
        let (fresh, _) = build(&[("zeta", &review), ("alpha", &review)], None);
        assert_eq!(fresh.served_by("skill://review/SKILL.md").as_deref(), Some("alpha"));
    }

    #[test]
    fn a_skill_inside_another_packs_skill_folder_or_holding_one_is_skipped() {
        let outer = content(vec![skill("acme", &["billing/notes.md"])], &[]);
        let inner = content(vec![skill("acme/billing", &[])], &[]);
        let sibling = content(vec![skill("acmex", &[])], &[]);
        let (index, skips) = build(&[("a", &outer), ("b", &inner), ("c", &sibling)], None);
        assert_eq!(skipped(&skips), [("skill://acme/billing/SKILL.md", "b", "a")]);
        // "acmex" only shares a prefix of characters, not a folder.
        assert_eq!(
            index.skills().iter().map(|skill| skill.uri.as_str()).collect::<Vec<_>>(),
            ["skill://acme/SKILL.md", "skill://acmex/SKILL.md"]
        );
        let (_, skips) = build(&[("a", &inner), ("b", &outer)], None);
        assert_eq!(skipped(&skips), [("skill://acme/SKILL.md", "b", "a")]);
    }

    #[test]
    fn a_pack_added_later_never_displaces_a_serving_skill_by_nesting() {
        let inner = content(vec![skill("x/y", &[])], &[]);
        let outer = content(vec![skill("x", &[])], &[]);
        let (serving, _) = build(&[("b", &inner)], None);
        // "a" sorts first and would hold x/y's folder: it is the one skipped.
        let (next, skips) = build(&[("a", &outer), ("b", &inner)], Some(&serving));
        assert_eq!(skipped(&skips), [("skill://x/SKILL.md", "a", "b")]);
        assert_eq!(next.served_by("skill://x/y/SKILL.md").as_deref(), Some("b"));
        // And the other way round: an outer incumbent keeps its folder.
        let (serving, _) = build(&[("b", &outer)], None);
        let (_, skips) = build(&[("a", &inner), ("b", &outer)], Some(&serving));
        assert_eq!(skipped(&skips), [("skill://x/y/SKILL.md", "a", "b")]);
        // A sibling that sorts between "x" and "x/" does not hide a nested one.
        let sibling = content(vec![skill("x-z", &[])], &[]);
        let (_, skips) = build(&[("a", &sibling), ("b", &outer), ("c", &inner)], None);
        assert_eq!(skipped(&skips), [("skill://x/y/SKILL.md", "c", "b")]);
    }

    #[test]
    fn a_skill_prefix_serves_a_packs_skills_in_a_folder_of_its_own() {
        let review = content(vec![skill("review", &["notes.md"])], &[]);
        let carriers = [
            Carrier { id: "a", digest: "a", content: &review, skill_prefix: "" },
            Carrier { id: "b", digest: "b", content: &review, skill_prefix: "team-b" },
        ];
        let (index, skips) = ContentIndex::build(&carriers, None);
        assert!(skips.is_empty(), "{skips:?}");
        let uris: Vec<&str> = index.listed().iter().map(String::as_str).collect();
        assert_eq!(
            uris,
            ["skill://review/SKILL.md", "skill://review/notes.md", "skill://team-b/review/SKILL.md", "skill://team-b/review/notes.md"]
        );
        let entry = index.get_skill("skill://team-b/review/SKILL.md").unwrap().skill;
        let files: Vec<String> = match entry.resources {
            rmcp::model::SkillResources::Files(files) => files.into_iter().map(|file| file.uri).collect(),
            _ => unreachable!(),
        };
        assert_eq!(files, ["skill://team-b/review/SKILL.md", "skill://team-b/review/notes.md"]);
        // The prefix is no skill's folder: a client browses from each skill's.
        assert_eq!(index.folder("skill://team-b"), None);
        assert_eq!(index.folder("skill://team-b/review").unwrap()[0], Child::File("skill://team-b/review/SKILL.md".into()));
        assert_eq!(index.served_by("skill://team-b/review/notes.md").as_deref(), Some("b"));
    }

    #[test]
    fn folders_list_their_direct_children_and_files_are_no_folders() {
        let pack = content(vec![skill("review", &["a/b/c.md", "a/d.md", "z.md"])], &[]);
        let (index, _) = build(&[("p", &pack)], None);
        assert_eq!(
            index.folder("skill://review").unwrap(),
            [
                Child::Folder("skill://review/a".into()),
                Child::File("skill://review/SKILL.md".into()),
                Child::File("skill://review/z.md".into())
            ]
        );
        assert_eq!(
            index.folder("skill://review/a/").unwrap(),
            [Child::Folder("skill://review/a/b".into()), Child::File("skill://review/a/d.md".into())]
        );
        assert_eq!(index.read_directory("skill://review/z.md"), Err(NotServed::Directory));
        assert_eq!(index.read_directory("skill://revie"), Err(NotServed::Directory));
        assert_eq!(index.read_directory("skill:/"), Err(NotServed::Directory));
    }

    #[test]
    fn a_cursor_is_bound_to_its_list_and_its_version() {
        let skills = (0..5).map(|at| skill(&format!("s{at}"), &[])).collect();
        let pack = content(skills, &[]);
        let (index, _) = build(&[("p", &pack)], None);
        let first = index.list_skills(None, 2).unwrap();
        let cursor = first.next_cursor.clone().unwrap();
        assert_eq!(index.list_skills(Some(&cursor), 2).unwrap().skills[0].uri, "skill://s2/SKILL.md");
        // A skills cursor is no resources cursor, and a change makes it stale.
        assert!(index.list_resources(Some(&cursor), 2).is_err());
        let (changed, _) = build(&[("p", &pack), ("q", &content(vec![skill("t", &[])], &[]))], None);
        assert!(changed.list_skills(Some(&cursor), 2).is_err());
    }

    #[test]
    fn a_page_of_skills_stops_past_its_byte_bound_but_never_splits_or_empties() {
        let big: Vec<String> = (0..200).map(|at| format!("{at:0>200}.md")).collect();
        let files: Vec<&str> = big.iter().map(String::as_str).collect();
        let skills = (0..100).map(|at| skill(&format!("s{at}"), &files)).collect();
        let pack = content(skills, &[]);
        let (index, _) = build(&[("p", &pack)], None);
        let page = index.list_skills(None, 100).unwrap();
        let bytes = serde_json::to_vec(&page.skills).unwrap().len();
        let one = serde_json::to_vec(&page.skills[0]).unwrap().len();
        assert!(page.skills.len() < 100 && page.next_cursor.is_some(), "{}", page.skills.len());
        assert!(bytes <= MAX_SKILLS_PAGE_BYTES + page.skills.len() && bytes + one > MAX_SKILLS_PAGE_BYTES, "{bytes}");
    }

    #[test]
    fn a_read_gives_the_bytes_listed_and_an_unknown_uri_is_not_served() {
        let pack = content(vec![skill("review", &["notes.md"])], &["acme://blob"]);
        let (index, _) = build(&[("p", &pack)], None);
        let read = serde_json::to_value(index.read("skill://review/notes.md").unwrap()).unwrap();
        assert_eq!(read["contents"], serde_json::json!([{ "uri": "skill://review/notes.md", "mimeType": "text/markdown", "text": "x" }]));
        let blob = serde_json::to_value(index.read("acme://blob").unwrap()).unwrap();
        assert_eq!(blob["contents"], serde_json::json!([{ "uri": "acme://blob", "blob": "AQI=" }]));
        assert_eq!(index.read("skill://review/../review/notes.md"), Err(NotServed::Resource));
        assert_eq!(index.get_skill("skill://review/notes.md"), Err(NotServed::Skill));
    }
}
