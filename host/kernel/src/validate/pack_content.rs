//! What a 0.4 pack carries beside its prompts, checked once at load: its
//! skills (each a folder holding a `SKILL.md`, served through the MCP
//! Skills extension as `skill://<path>`) and its static resources (served by
//! `resources/read`). What passes is kept as [`Content`]: the bytes, each
//! file's `sha256:` digest and size, and the skills' frontmatter as JSON, so
//! every request for it is answered from memory and nothing a pack can vary
//! sits between a listing and a read.
//!
//! Skills are text a model will follow, from a pack nobody has to trust:
//! every rule here refuses the whole pack with a reason naming the file,
//! before anything is served. Sizes are counted as a client receives them
//! ([`json_escaped_len`] for text, [`base64_len`] for binary).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::frontmatter;
use super::{Problem, base64_len, json_escaped_len, media_type, usable_name};
use crate::limits::Limits;
use crate::model;
use crate::shown::cut_printable;

/// The file that makes a folder a skill.
pub const SKILL_MD: &str = "SKILL.md";

/// The URI scheme of skill files (SEP-2640).
pub const SKILL_SCHEME: &str = "skill";

/// The prefix of frontmatter `metadata` keys SEP-2640 reserves to MCP.
const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// The longest segment of a skill file's path, in bytes.
const MAX_SEGMENT_BYTES: usize = 255;

/// The most of a pack-controlled path or URI quoted in a problem.
const QUOTED_BYTES: usize = 96;

const HINT_PATH: &str = "name files and folders with ASCII letters, digits, '-', '_', '.' and '~' only, segments separated by '/', \
     such as code-review/references/checklist.md";
const HINT_SKILL: &str = "put each skill in a folder of its own whose name is the skill's name, holding a SKILL.md that starts with \
     YAML frontmatter (---, name: ..., description: ..., ---)";
const HINT_SIZE: &str = "make the files smaller or fewer, or ask the operator to raise the limit named for this plugin";
const HINT_RESOURCE: &str = "give each static resource a URI of a scheme of the pack's own, such as my-pack://guide.md, and a name";

/// What a pack carries, checked: what the host serves from memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Content {
    /// Its skills, by path.
    pub skills: Vec<Skill>,
    /// Its static resources, in the order it listed them.
    pub resources: Vec<Resource>,
}

impl Content {
    /// Whether the pack carries nothing.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty() && self.resources.is_empty()
    }
}

/// One skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its folder's path within the pack's skills: `code-review`, `acme/billing`.
    pub path: String,
    /// Its `name`: the last segment of its path.
    pub name: String,
    /// Its `description`.
    pub description: String,
    /// Its whole frontmatter, as JSON, `name` and `description` included.
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// Its files: `SKILL.md` first, then the others by path.
    pub files: Vec<File>,
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    /// Its path within the skill: `SKILL.md`, `references/checklist.md`.
    pub path: String,
    /// Its MIME type, from its extension.
    pub mime_type: &'static str,
    /// Its bytes, as text when they are UTF-8.
    pub body: Body,
    /// `sha256:` and the hex SHA-256 of its bytes.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Bytes served: text when they are UTF-8, so a client reads them as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// UTF-8 text.
    Text(Arc<str>),
    /// Anything else.
    Blob(Arc<[u8]>),
}

impl Body {
    /// The body of `bytes`: text when they are UTF-8.
    fn of(bytes: Vec<u8>) -> Body {
        match String::from_utf8(bytes) {
            Ok(text) => Body::Text(text.into()),
            Err(error) => Body::Blob(error.into_bytes().into()),
        }
    }

    /// Its bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Body::Text(text) => text.as_bytes(),
            Body::Blob(blob) => blob,
        }
    }

    /// The bytes it takes in a `resources/read` result: text JSON-escaped,
    /// binary base64-encoded.
    pub fn wire_bytes(&self) -> usize {
        match self {
            Body::Text(text) => json_escaped_len(text),
            Body::Blob(blob) => base64_len(blob.len()),
        }
    }
}

/// One static resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its short name.
    pub name: String,
    /// Its title.
    pub title: Option<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its contents, text or binary as the pack declared them.
    pub body: Body,
    /// `sha256:` and the hex SHA-256 of its bytes, taken once at load.
    pub digest: String,
}

/// Checks what a pack carries against `limits` and the Agent Skills rules.
/// Any problem refuses it all: the problems, each naming the file.
pub fn pack_content(content: model::PackContent, limits: &Limits) -> Result<Content, Vec<Problem>> {
    let model::PackContent { skill_files, resources } = content;
    let mut problems = Vec::new();
    let counted = counts(&skill_files, &resources, limits);
    if !counted.is_empty() {
        return Err(counted);
    }
    let mut total = 0usize;
    let skills = skills(skill_files, limits, &mut total, &mut problems);
    let resources = static_resources(resources, limits, &mut total, &mut problems);
    if total > limits.max_content_bytes {
        problems.push(size_problem(
            format!("its skills and resources are {total} bytes on the wire, more than the limit of {}", limits.max_content_bytes),
            "max_content_kib",
        ));
    }
    match problems.is_empty() {
        true => Ok(Content { skills, resources }),
        false => Err(problems),
    }
}

/// The counts, checked before anything else is looked at.
fn counts(files: &[model::SkillFile], resources: &[model::StaticResource], limits: &Limits) -> Vec<Problem> {
    let mut problems = Vec::new();
    let skills = files.iter().filter(|file| file.path == SKILL_MD || file.path.ends_with("/SKILL.md")).count();
    if skills > limits.max_skills {
        problems.push(size_problem(format!("it carries {skills} skills, more than the limit of {}", limits.max_skills), "max_skills"));
    }
    // No skill can hold more files than this, so more is refused unread.
    let most_files = limits.max_skills.saturating_mul(limits.max_skill_files);
    if files.len() > most_files {
        problems.push(size_problem(
            format!(
                "it carries {} skill files, more than {} skills of {} files each",
                files.len(),
                limits.max_skills,
                limits.max_skill_files
            ),
            "max_skill_files",
        ));
    }
    if resources.len() > limits.max_resources {
        problems.push(size_problem(
            format!("it carries {} static resources, more than the limit of {}", resources.len(), limits.max_resources),
            "max_resources",
        ));
    }
    problems
}

fn size_problem(problem: String, key: &str) -> Problem {
    Problem { problem: format!("{problem} (limits.{key})"), hint: Some(HINT_SIZE) }
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", cut_printable(text, QUOTED_BYTES).escape_default())
}

/// The skills of `files`: each path checked, each file given to the skill
/// whose folder holds it, each skill checked.
fn skills(files: Vec<model::SkillFile>, limits: &Limits, total: &mut usize, problems: &mut Vec<Problem>) -> Vec<Skill> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut paths = Vec::with_capacity(files.len());
    for file in &files {
        match skill_path(&file.path, limits) {
            Ok(()) => {}
            Err(problem) => {
                problems.push(Problem { problem: format!("skill file {}: {problem}", quoted(&file.path)), hint: Some(HINT_PATH) });
                continue;
            }
        }
        if let Some(earlier) = seen.insert(file.path.to_ascii_lowercase(), file.path.clone()) {
            problems.push(Problem {
                problem: format!("skill files {} and {} differ only in case", quoted(&earlier), quoted(&file.path)),
                hint: Some(HINT_PATH),
            });
        }
        paths.push(file.path.to_ascii_lowercase());
    }
    if !problems.is_empty() {
        return Vec::new();
    }
    // A path that is also another's folder is both a file and a folder.
    let folders: HashSet<&str> = paths.iter().flat_map(|path| path.match_indices('/').map(|(at, _)| &path[..at])).collect();
    for file in &files {
        if folders.contains(file.path.to_ascii_lowercase().as_str()) {
            problems.push(Problem {
                problem: format!("skill file {} is also a folder of other files", quoted(&file.path)),
                hint: Some(HINT_PATH),
            });
        }
    }
    if !problems.is_empty() {
        return Vec::new();
    }
    let roots: HashSet<String> = files
        .iter()
        .filter_map(|file| file.path.strip_suffix(SKILL_MD).and_then(|root| root.strip_suffix('/')))
        .map(str::to_string)
        .collect();
    let mut by_skill: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for file in files {
        match owning_skill(&file.path, &roots) {
            Ok(root) => {
                let relative = file.path[root.len() + 1..].to_string();
                by_skill.entry(root.to_string()).or_default().push((relative, file.bytes));
            }
            Err(problem) => {
                problems.push(Problem { problem: format!("skill file {}: {problem}", quoted(&file.path)), hint: Some(HINT_SKILL) })
            }
        }
    }
    let mut skills = Vec::with_capacity(by_skill.len());
    for (path, files) in by_skill {
        match skill(&path, files, limits, total) {
            Ok(skill) => skills.push(skill),
            Err(found) => problems.extend(found),
        }
    }
    skills
}

/// The folder of the skill that holds the file at `path`: the nearest one
/// above it holding a `SKILL.md`. A skill inside another's folder, and a
/// file in no skill's folder, are refused.
fn owning_skill<'a>(path: &str, roots: &'a HashSet<String>) -> Result<&'a str, String> {
    let mut owners = path.match_indices('/').map(|(at, _)| &path[..at]).filter_map(|folder| roots.get(folder));
    let Some(owner) = owners.next() else {
        return Err("is in no skill's folder: a skill is a folder holding a SKILL.md".into());
    };
    if let Some(inner) = owners.next() {
        return Err(format!("the skill {} is inside the folder of the skill {}: skills may not nest", quoted(inner), quoted(owner)));
    }
    Ok(owner)
}

/// A folder under which an operator serves a pack's skills
/// (`[plugins.NAME] skill_prefix`, `skill://<prefix>/<skill path>`): a
/// lowercase path by the same rules as a skill file's, at most 64 bytes
/// and 2 segments, so what it adds to every URI is bounded (65 bytes).
pub fn skill_prefix(prefix: &str) -> Result<(), String> {
    const MOST_BYTES: usize = 64;
    const MOST_SEGMENTS: usize = 2;
    if prefix.len() > MOST_BYTES {
        return Err(format!("it is {} bytes, and a skill prefix is at most {MOST_BYTES}", prefix.len()));
    }
    if prefix.split('/').count() > MOST_SEGMENTS {
        return Err(format!("it has more than {MOST_SEGMENTS} segments, the most a skill prefix has"));
    }
    // Its first segment is the URI's authority, which RFC 3986 reads in any
    // case, as do the file systems of Windows and macOS clients.
    if prefix.bytes().any(|byte| byte.is_ascii_uppercase()) {
        return Err("it holds an uppercase letter: a skill prefix is lowercase".into());
    }
    skill_path(prefix, &Limits::default())
}

/// A skill file's path: relative, `/`-separated segments of URI-safe ASCII
/// (so a path is its URI, and no two spellings name one file), within the
/// length and depth limits.
fn skill_path(path: &str, limits: &Limits) -> Result<(), String> {
    if path.len() > limits.max_content_path_bytes {
        return Err(format!(
            "its path is {} bytes, more than the limit of {} (limits.max_content_path_bytes)",
            path.len(),
            limits.max_content_path_bytes
        ));
    }
    let segments = path.split('/').count();
    if segments > limits.max_content_path_depth {
        return Err(format!(
            "its path is {segments} segments deep, more than the limit of {} (limits.max_content_path_depth)",
            limits.max_content_path_depth
        ));
    }
    for segment in path.split('/') {
        if segment.is_empty() {
            return Err("its path has an empty segment (a leading, trailing or doubled '/'): paths are relative".into());
        }
        if segment == "." || segment == ".." {
            return Err(format!("its path has the segment {segment:?}: paths name files beneath the skill, never above"));
        }
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(format!("a segment of its path is {} bytes, more than {MAX_SEGMENT_BYTES}", segment.len()));
        }
        if let Some(c) = segment.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))) {
            return Err(format!("its path holds {:?}, which a skill path may not", c));
        }
        // Names one file system would take as another's: Windows drops a
        // trailing dot, and opens a device for CON, NUL, COM1... whatever
        // the extension, so a client saving the skill would write elsewhere.
        if segment.ends_with('.') {
            return Err(format!("a segment of its path, {}, ends in '.', which Windows drops", quoted(segment)));
        }
        let stem = segment.split('.').next().unwrap_or(segment).to_ascii_uppercase();
        let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
            || (stem.len() == 4 && (stem.starts_with("COM") || stem.starts_with("LPT")) && stem.as_bytes()[3].is_ascii_digit());
        if device {
            return Err(format!("a segment of its path, {}, names a Windows device", quoted(segment)));
        }
    }
    Ok(())
}

/// One skill, from the files in its folder (paths relative to it).
fn skill(path: &str, mut files: Vec<(String, Vec<u8>)>, limits: &Limits, total: &mut usize) -> Result<Skill, Vec<Problem>> {
    let problem = |problem: String, hint| vec![Problem { problem: format!("skill {}: {problem}", quoted(path)), hint: Some(hint) }];
    if files.len() > limits.max_skill_files {
        return Err(problem(
            format!("it holds {} files, more than the limit of {} (limits.max_skill_files)", files.len(), limits.max_skill_files),
            HINT_SIZE,
        ));
    }
    files.sort_by(|(a, _), (b, _)| (a != SKILL_MD, a).cmp(&(b != SKILL_MD, b)));
    let folder_name = path.rsplit('/').next().unwrap_or(path);
    let skill_md = std::str::from_utf8(&files[0].1).map_err(|_| problem("its SKILL.md is not UTF-8 text".into(), HINT_SKILL))?;
    let parsed = frontmatter::parse(skill_md).map_err(|reason| problem(format!("its SKILL.md: {reason}"), HINT_SKILL))?;
    if parsed.name != folder_name {
        return Err(problem(
            format!("its SKILL.md names it {}, and a skill's name must be its folder's name", quoted(&parsed.name)),
            HINT_SKILL,
        ));
    }
    // SEP-2640 reserves these keys for MCP extensions, and defines none.
    let metadata = parsed.fields.get("metadata").and_then(|metadata| metadata.as_object());
    if let Some(reserved) = metadata.and_then(|metadata| metadata.keys().find(|key| key.starts_with(RESERVED_METADATA_PREFIX))) {
        return Err(problem(
            format!("its SKILL.md's metadata has the key {}: keys under {RESERVED_METADATA_PREFIX} are reserved to MCP", quoted(reserved)),
            HINT_SKILL,
        ));
    }
    let mut checked = Vec::with_capacity(files.len());
    let mut problems = Vec::new();
    for (relative, bytes) in files {
        let file = file(relative, bytes);
        let wire = file.body.wire_bytes();
        if wire > limits.max_content_file_bytes {
            problems.push(size_problem(
                format!(
                    "skill file {}/{}: it is {wire} bytes on the wire, more than the limit of {}",
                    path, file.path, limits.max_content_file_bytes
                ),
                "max_content_file_kib",
            ));
        }
        // Its URI, as skills/list and resources/list carry it, counts too.
        *total = total.saturating_add(wire).saturating_add(path.len() + file.path.len() + SKILL_SCHEME.len() + 4);
        checked.push(file);
    }
    match problems.is_empty() {
        true => Ok(Skill {
            path: path.to_string(),
            name: parsed.name,
            description: parsed.description,
            frontmatter: parsed.fields,
            files: checked,
        }),
        false => Err(problems),
    }
}

fn file(path: String, bytes: Vec<u8>) -> File {
    let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
    let size = bytes.len() as u64;
    let body = Body::of(bytes);
    let mime_type = mime_type_of(&path, matches!(body, Body::Text(_)));
    File { path, mime_type, body, digest, size }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The MIME type a skill file is served with, from its extension.
fn mime_type_of(path: &str, text: bool) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, extension)| extension.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The schemes a static resource may not use: skill files are served as
/// `skill://` from the skills themselves, and the others name things that
/// are not the pack's.
const REFUSED_SCHEMES: [&str; 5] = [SKILL_SCHEME, "file", "http", "https", "data"];

/// The most bytes of a static resource's title or description.
const MAX_RESOURCE_TEXT_BYTES: usize = 4 << 10;

fn static_resources(
    resources: Vec<model::StaticResource>,
    limits: &Limits,
    total: &mut usize,
    problems: &mut Vec<Problem>,
) -> Vec<Resource> {
    let mut uris = HashSet::with_capacity(resources.len());
    let mut checked = Vec::with_capacity(resources.len());
    for resource in resources {
        let problem = |problem: String| Problem {
            problem: format!("static resource {}: {problem}", quoted(&resource.uri)),
            hint: Some(HINT_RESOURCE),
        };
        if let Err(reason) = resource_uri(&resource.uri, limits) {
            problems.push(problem(reason));
            continue;
        }
        if !uris.insert(resource.uri.clone()) {
            problems.push(problem("it is listed twice".into()));
            continue;
        }
        if let Err((reason, _)) = usable_name(&resource.name) {
            problems.push(problem(format!("its name {reason}")));
        }
        for (field, text) in [("title", &resource.title), ("description", &resource.description)] {
            if let Some(text) = text
                && (text.len() > MAX_RESOURCE_TEXT_BYTES
                    || text.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || super::is_format(c)))
            {
                problems.push(problem(format!(
                    "its {field} is over {MAX_RESOURCE_TEXT_BYTES} bytes or holds control or formatting characters"
                )));
            }
        }
        if let Some(mime_type) = &resource.mime_type
            && let Err(reason) = media_type(mime_type, None)
        {
            problems.push(problem(format!("its MIME type {reason}")));
        }
        let body = match resource.body {
            model::ResourceBody::Text(text) => Body::Text(text.into()),
            model::ResourceBody::Blob(blob) => Body::Blob(blob.into()),
        };
        let wire = body.wire_bytes();
        if wire > limits.max_content_file_bytes {
            problems.push(size_problem(
                format!(
                    "static resource {}: it is {wire} bytes on the wire, more than the limit of {}",
                    quoted(&resource.uri),
                    limits.max_content_file_bytes
                ),
                "max_content_file_kib",
            ));
        }
        let described = [&resource.title, &resource.description, &resource.mime_type]
            .iter()
            .filter_map(|text| text.as_ref())
            .map(|text| json_escaped_len(text))
            .sum::<usize>();
        *total = total.saturating_add(wire).saturating_add(resource.uri.len() + json_escaped_len(&resource.name) + described);
        let digest = format!("sha256:{}", hex(&Sha256::digest(body.bytes())));
        checked.push(Resource {
            digest,
            uri: resource.uri,
            name: resource.name,
            title: resource.title,
            description: resource.description,
            mime_type: resource.mime_type,
            body,
        });
    }
    checked
}

/// A static resource's URI: a URI of the pack's own scheme, printable
/// ASCII, within the path limit.
fn resource_uri(uri: &str, limits: &Limits) -> Result<(), String> {
    if uri.len() > limits.max_content_path_bytes {
        return Err(format!(
            "its URI is {} bytes, more than the limit of {} (limits.max_content_path_bytes)",
            uri.len(),
            limits.max_content_path_bytes
        ));
    }
    if !uri.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err("its URI holds a character other than printable ASCII: percent-encode it".into());
    }
    let parsed = url::Url::parse(uri).map_err(|error| format!("it is not a URI ({error})"))?;
    // One spelling per resource: `A://x` and `a://x` are one URI.
    if parsed.as_str() != uri {
        return Err(format!("it is not written as its normal form {}: write it so", quoted(parsed.as_str())));
    }
    if REFUSED_SCHEMES.contains(&parsed.scheme()) {
        return Err(format!("its scheme {} is not one a pack's static resource may use", parsed.scheme()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str = "---\nname: review\ndescription: Reviews code\n---\nRead the diff first.\n";

    fn file(path: &str, bytes: impl Into<Vec<u8>>) -> model::SkillFile {
        model::SkillFile { path: path.into(), bytes: bytes.into() }
    }

    fn resource(uri: &str, body: model::ResourceBody) -> model::StaticResource {
        model::StaticResource { uri: uri.into(), name: "guide".into(), title: None, description: None, mime_type: None, body }
    }

    fn check(skill_files: Vec<model::SkillFile>) -> Result<Content, String> {
        check_with(skill_files, Vec::new(), &Limits::default())
    }

    fn check_with(skill_files: Vec<model::SkillFile>, resources: Vec<model::StaticResource>, limits: &Limits) -> Result<Content, String> {
        pack_content(model::PackContent { skill_files, resources }, limits)
            .map_err(|problems| problems.iter().map(|problem| problem.problem.clone()).collect::<Vec<_>>().join("\n"))
    }

    #[test]
    fn a_skill_is_kept_with_its_digests_sizes_and_frontmatter() {
        let content = check(vec![file("review/references/checklist.md", "- tests pass\n"), file("review/SKILL.md", SKILL)]).unwrap();
        let [skill] = content.skills.as_slice() else { panic!("{content:?}") };
        assert_eq!((skill.path.as_str(), skill.name.as_str(), skill.description.as_str()), ("review", "review", "Reviews code"));
        assert_eq!(
            serde_json::Value::Object(skill.frontmatter.clone()),
            serde_json::json!({"name": "review", "description": "Reviews code"})
        );
        let paths: Vec<&str> = skill.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "references/checklist.md"]);
        assert_eq!(skill.files[0].digest, format!("sha256:{}", hex(&Sha256::digest(SKILL.as_bytes()))));
        assert_eq!((skill.files[0].size, skill.files[0].mime_type), (SKILL.len() as u64, "text/markdown"));
        assert_eq!(skill.files[1].body, Body::Text("- tests pass\n".into()));
    }

    #[test]
    fn a_binary_file_is_a_blob_of_its_exact_bytes() {
        let content = check(vec![file("review/SKILL.md", SKILL), file("review/logo.png", vec![0x89, b'P', 0xff, 0])]).unwrap();
        let logo = &content.skills[0].files[1];
        assert_eq!((&logo.body, logo.mime_type, logo.size), (&Body::Blob(vec![0x89, b'P', 0xff, 0].into()), "image/png", 4));
    }

    #[test]
    fn paths_that_leave_the_skill_or_could_be_spelt_two_ways_are_refused() {
        for (path, reason) in [
            ("review/../etc/passwd", "the segment \"..\""),
            ("review/./SKILL.md", "the segment \".\""),
            ("/review/SKILL.md", "an empty segment"),
            ("review//SKILL.md", "an empty segment"),
            ("review/SKILL.md/", "an empty segment"),
            ("review\\evil.md", "holds '\\\\'"),
            ("review/a b.md", "holds ' '"),
            ("review/nul\0.md", "holds '\\0'"),
            ("review/\u{202e}dm.exe", "holds '\\u{202e}'"),
            ("review/%2e%2e/x.md", "holds '%'"),
            ("review/caf\u{e9}.md", "holds '\u{e9}'"),
            ("review/SKILL.md.", "ends in '.', which Windows drops"),
            ("review/nul.txt", "names a Windows device"),
            ("review/COM1", "names a Windows device"),
        ] {
            let refused = check(vec![file("review/SKILL.md", SKILL), file(path, "x")]).unwrap_err();
            assert!(refused.contains(reason), "{path:?}: {refused}");
        }
    }

    #[test]
    fn long_and_deep_paths_are_refused_naming_the_limit() {
        let long = format!("review/{}.md", "a".repeat(4096));
        assert!(check(vec![file("review/SKILL.md", SKILL), file(&long, "x")]).unwrap_err().contains("limits.max_content_path_bytes"));
        let deep = format!("review/{}x.md", "d/".repeat(8));
        assert!(check(vec![file("review/SKILL.md", SKILL), file(&deep, "x")]).unwrap_err().contains("limits.max_content_path_depth"));
    }

    #[test]
    fn files_differing_only_in_case_or_both_file_and_folder_are_refused() {
        let refused = check(vec![file("review/SKILL.md", SKILL), file("review/Notes.md", "a"), file("review/notes.md", "b")]).unwrap_err();
        assert!(refused.contains("differ only in case"), "{refused}");
        let refused = check(vec![file("review/SKILL.md", SKILL), file("review/notes", "a"), file("review/notes/a.md", "b")]).unwrap_err();
        assert!(refused.contains("is also a folder of other files"), "{refused}");
    }

    #[test]
    fn a_skill_must_be_named_after_its_folder_and_not_nest() {
        let refused = check(vec![file("other/SKILL.md", SKILL)]).unwrap_err();
        assert!(refused.contains("names it \"review\", and a skill's name must be its folder's name"), "{refused}");
        let inner = "---\nname: inner\ndescription: d\n---\n";
        let refused = check(vec![file("review/SKILL.md", SKILL), file("review/inner/SKILL.md", inner)]).unwrap_err();
        assert!(refused.contains("skills may not nest"), "{refused}");
        let refused = check(vec![file("loose.md", "x")]).unwrap_err();
        assert!(refused.contains("is in no skill's folder"), "{refused}");
    }

    #[test]
    fn a_skill_md_that_is_not_utf8_or_has_no_frontmatter_is_refused() {
        let refused = check(vec![file("review/SKILL.md", vec![0xff, 0xfe, b'-'])]).unwrap_err();
        assert!(refused.contains("its SKILL.md is not UTF-8 text"), "{refused}");
        let refused = check(vec![file("review/SKILL.md", "Just instructions.\n")]).unwrap_err();
        assert!(refused.starts_with("skill \"review\": its SKILL.md: "), "{refused}");
    }

    #[test]
    fn metadata_keys_reserved_to_mcp_are_refused() {
        let skill = "---\nname: review\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n";
        let refused = check(vec![file("review/SKILL.md", skill)]).unwrap_err();
        assert!(refused.contains("keys under io.modelcontextprotocol/ are reserved to MCP"), "{refused}");
    }

    #[test]
    fn counts_and_sizes_are_refused_at_their_limits() {
        let limits = Limits {
            max_skills: 2,
            max_skill_files: 2,
            max_resources: 1,
            max_content_file_bytes: 64,
            max_content_bytes: 200,
            ..Limits::default()
        };
        let skill = |name: &str| file(&format!("{name}/SKILL.md"), format!("---\nname: {name}\ndescription: d\n---\n"));
        let refused = check_with(vec![skill("a"), skill("b"), skill("c")], Vec::new(), &limits).unwrap_err();
        assert!(refused.contains("it carries 3 skills, more than the limit of 2 (limits.max_skills)"), "{refused}");
        let refused = check_with(vec![skill("a"), file("a/1", "x"), file("a/2", "x")], Vec::new(), &limits).unwrap_err();
        assert!(refused.contains("it holds 3 files, more than the limit of 2 (limits.max_skill_files)"), "{refused}");
        let text = |uri: &str| resource(uri, model::ResourceBody::Text("x".into()));
        let refused = check_with(Vec::new(), vec![text("a://1"), text("a://2")], &limits).unwrap_err();
        assert!(refused.contains("it carries 2 static resources, more than the limit of 1 (limits.max_resources)"), "{refused}");
        // Measured as the client receives it: 40 quotes are 80 bytes of JSON.
        let refused = check_with(vec![skill("a"), file("a/q.md", "\"".repeat(40))], Vec::new(), &limits).unwrap_err();
        assert!(refused.contains("skill file a/q.md: it is 80 bytes on the wire, more than the limit of 64"), "{refused}");
        let refused =
            check_with(vec![skill("a"), file("a/1", "x".repeat(60)), skill("b"), file("b/1", "x".repeat(60))], Vec::new(), &limits)
                .unwrap_err();
        assert!(refused.contains("more than the limit of 200 (limits.max_content_kib)"), "{refused}");
    }

    #[test]
    fn static_resources_need_a_scheme_of_their_own_and_a_name() {
        for (uri, reason) in [
            ("skill://review/SKILL.md", "its scheme skill is not one"),
            ("file:///etc/passwd", "its scheme file is not one"),
            ("https://example.com/x", "its scheme https is not one"),
            ("guide.md", "it is not a URI"),
            ("a://\u{202e}x", "other than printable ASCII"),
            ("A://x", "it is not written as its normal form \"a://x\""),
        ] {
            let refused =
                check_with(Vec::new(), vec![resource(uri, model::ResourceBody::Text("x".into()))], &Limits::default()).unwrap_err();
            assert!(refused.contains(reason), "{uri:?}: {refused}");
        }
        let twice = vec![resource("a://x", model::ResourceBody::Text("x".into())), resource("a://x", model::ResourceBody::Blob(vec![1]))];
        assert!(check_with(Vec::new(), twice, &Limits::default()).unwrap_err().contains("it is listed twice"));
        let mut described = resource("a://x", model::ResourceBody::Text("x".into()));
        described.description = Some("ok\u{1b}[2J".into());
        assert!(check_with(Vec::new(), vec![described], &Limits::default()).unwrap_err().contains("its description is over"));
    }
}
