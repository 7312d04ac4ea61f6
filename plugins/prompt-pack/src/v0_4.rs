//! Everything a pack targeting WIT 0.4 needs: `use prompt_pack::v0_4::*;`.
//! The same types and helpers as 0.3, and a pack implements 0.3's [`Guest`]
//! (or is a [`TemplatePack`] with [`DescribePack`]) exactly as there. What
//! 0.4 adds is what a pack *carries* beside its prompts ([`Carries`]):
//! **skills**, folders each holding a `SKILL.md`, embedded from the pack's
//! source at build time with one line ([`include_skills!`]), and **static
//! resources** a client reads with `resources/read`, such as one the pack
//! embeds in its replies. The host reads them once when it loads the pack
//! and serves them from memory, signed with the rest of the pack.
//!
//! A pack of templates with the skills of its `skills/` folder (beside its
//! `Cargo.toml`) and one static resource:
//!
//! ```
//! use prompt_pack::v0_4::*;
//!
//! struct Reviews;
//!
//! impl TemplatePack for Reviews {
//!     fn templates() -> Vec<Template> {
//!         vec![template("review", "Asks for a review").argument(required("code", "The code")).user("Review this:\n{code}")]
//!     }
//! }
//!
//! impl DescribePack for Reviews {
//!     fn describe() -> PackInfo {
//!         prompt_pack::cargo_pack_info!().into()
//!     }
//! }
//!
//! impl Carries for Reviews {
//!     // In a pack: `fn skills() -> Vec<SkillFile> { prompt_pack::v0_4::include_skills!() }`
//!     fn skills() -> Vec<SkillFile> {
//!         vec![skill_file("review/SKILL.md", "---\nname: review\ndescription: Reviews code\n---\nRead the diff first.\n")]
//!     }
//!
//!     fn static_resources() -> Vec<StaticResource> {
//!         vec![text_static_resource("reviews://checklist.md", "checklist.md", "text/markdown", "- [ ] tests pass\n")]
//!     }
//! }
//!
//! prompt_pack::v0_4::export_pack!(Reviews);
//!
//! assert_eq!(<Reviews as ContentGuest>::skill_files()[0].path, "review/SKILL.md");
//! assert!(<Reviews as AskingGuest>::prompts_that_ask().is_empty());
//! assert_eq!(<Reviews as ContentGuest>::static_resources()[0].uri, "reviews://checklist.md");
//! ```
//!
//! The host refuses a pack whose skills break a rule, naming the file: a
//! `SKILL.md` without YAML frontmatter holding `name` (equal to its
//! folder's name: lowercase letters, digits and single hyphens) and
//! `description`; paths other than ASCII letters, digits, `-`, `_`, `.` and
//! `~`; a skill inside another's folder; more or larger files than its
//! limits. `prompt-host inspect` lists a pack's skills, each file's digest
//! and size, and every problem with a hint.

pub use crate::v0_3::*;

pub use crate::bindings_v0_4::exports::prompt_host::prompts::content::{Guest as ContentGuest, SkillFile, StaticResource};

/// The `asking` interface as 0.4 exports it, which [`export_pack!`]
/// implements (0.3's, of the same shape, is another trait): what a pack's
/// tests call, `<Pack as AskingGuest>::prompts_that_ask()`.
pub use crate::bindings_v0_4::exports::prompt_host::prompts::asking::Guest as AskingGuest;

#[doc(hidden)]
pub use include_dir as __include_dir;

/// What a pack carries beside its prompts. Both are empty unless the pack
/// says otherwise; `impl Carries for Pack {}` carries nothing.
pub trait Carries {
    /// Every file of every skill: usually [`include_skills!()`](include_skills).
    fn skills() -> Vec<SkillFile> {
        Vec::new()
    }

    /// The static resources a client may read.
    fn static_resources() -> Vec<StaticResource> {
        Vec::new()
    }
}

/// A skill file at `path` (`code-review/SKILL.md`) holding `bytes`.
pub fn skill_file(path: &str, bytes: impl Into<Vec<u8>>) -> SkillFile {
    SkillFile { path: path.to_string(), bytes: bytes.into() }
}

/// A static resource of text.
pub fn text_static_resource(uri: &str, name: &str, mime_type: &str, text: impl Into<String>) -> StaticResource {
    StaticResource {
        uri: uri.to_string(),
        name: name.to_string(),
        title: None,
        description: None,
        mime_type: Some(mime_type.to_string()),
        body: ResourceBody::Text(text.into()),
    }
}

/// A static resource of bytes.
pub fn blob_static_resource(uri: &str, name: &str, mime_type: &str, bytes: impl Into<Vec<u8>>) -> StaticResource {
    StaticResource { body: ResourceBody::Blob(bytes.into()), ..text_static_resource(uri, name, mime_type, "") }
}

/// The first mistake in the skills `files` that the host would refuse the
/// pack for, in the host's words, or `Ok`: each skill's `SKILL.md` must be
/// UTF-8, start with YAML frontmatter between two lines `---`, and name the
/// skill by its folder's name (`name:`) and say what it does
/// (`description:`). Only what a line-by-line look can tell is checked
/// here; the host reads the frontmatter as YAML at load and checks the rest
/// (`prompt-host inspect` names every problem, with a hint). Keep a test
/// that calls it: `assert_eq!(check_skills(&Pack::skills()), Ok(()))`.
pub fn check_skills(files: &[SkillFile]) -> Result<(), String> {
    for file in files {
        let Some(folder) = file.path.strip_suffix("/SKILL.md") else { continue };
        let name = folder.rsplit('/').next().unwrap_or(folder);
        let at = |problem: &str| format!("skill {folder:?}: {problem}");
        let text = std::str::from_utf8(&file.bytes).map_err(|_| at("its SKILL.md is not UTF-8 text"))?;
        let Some(body) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
            return Err(at("its SKILL.md: its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---"));
        };
        let mut lines = body.lines();
        let frontmatter: Vec<&str> = lines.by_ref().take_while(|line| line.trim_end() != "---").collect();
        if frontmatter.len() == body.lines().count() {
            return Err(at("its SKILL.md: its frontmatter has no closing --- line: end it with a line --- before the markdown"));
        }
        let value = |key: &str| frontmatter.iter().find_map(|line| line.strip_prefix(key)?.strip_prefix(':').map(str::trim));
        match value("name").map(|named| named.trim_matches(|c| c == '"' || c == '\'')) {
            None => return Err(at("its SKILL.md: its frontmatter has no name: add a line name: followed by the skill's folder name")),
            Some(named) if named != name => {
                return Err(at(&format!("its SKILL.md names it {named:?}, and a skill's name must be its folder's name")));
            }
            Some(_) => {}
        }
        if value("description").is_none() {
            return Err(at("its SKILL.md: its frontmatter has no description: add one saying what the skill does and when to use it"));
        }
    }
    Ok(())
}

/// Every file beneath `dir`, as skill files with paths relative to it: what
/// [`include_skills!`] embeds, flattened.
#[doc(hidden)]
pub fn skill_files_of(dir: &include_dir::Dir<'_>) -> Vec<SkillFile> {
    let mut files = Vec::new();
    let mut folders = vec![dir];
    while let Some(folder) = folders.pop() {
        for entry in folder.entries() {
            match entry {
                // Hidden files and folders (.DS_Store, an editor's swap
                // file, .git) are the machine's, not the skill's: left out.
                entry if is_hidden(entry.path()) => {}
                include_dir::DirEntry::Dir(inner) => folders.push(inner),
                include_dir::DirEntry::File(file) => {
                    // Paths as the host reads them: `/`-separated, whatever the build machine.
                    let path = file.path().components().map(|part| part.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                    files.push(skill_file(&path, file.contents()));
                }
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

fn is_hidden(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.'))
}

/// The files of a folder of skills, embedded in the pack when it is built
/// (hidden ones, whose names start with `.`, left out):
/// `include_skills!()` embeds `skills/` beside the pack's `Cargo.toml`;
/// `include_skills!("$CARGO_MANIFEST_DIR/other")` another folder (an
/// absolute path; `$VAR`s are read from the build's environment). cargo
/// rebuilds the pack when an embedded file changes; after adding or
/// removing a file, touch the pack's `src/lib.rs` (or `cargo clean -p`).
#[macro_export]
macro_rules! include_skills {
    () => {
        $crate::include_skills!("$CARGO_MANIFEST_DIR/skills")
    };
    ($folder:tt) => {{
        use $crate::v0_4::__include_dir as include_dir;
        static SKILLS: include_dir::Dir<'static> = include_dir::include_dir!($folder);
        $crate::v0_4::skill_files_of(&SKILLS)
    }};
}

pub use crate::include_skills;

impl<T: Guest> crate::bindings_v0_4::exports::prompt_host::prompts::prompt_provider::Guest for T {
    fn describe_pack() -> PackInfo {
        <T as Guest>::describe_pack()
    }

    fn list_prompts() -> Vec<Prompt> {
        <T as Guest>::list_prompts()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        <T as Guest>::get_prompt(name, arguments, input)
    }

    fn complete(prompt: String, argument: String, value: String, context: Vec<Argument>) -> Result<Completion, PromptError> {
        <T as Guest>::complete(prompt, argument, value, context)
    }
}

/// Exports a type implementing 0.3's [`Guest`] (or a [`TemplatePack`] with
/// [`DescribePack`]) and [`Carries`] as a WIT 0.4 pack:
/// `export_pack!(Pack);`, or `export_pack!(Pack, asks_for_missing = ["announce"]);`
/// to have the host ask for the missing arguments of those prompts, as in
/// [0.3](crate::v0_3::export_pack).
pub use crate::__export_pack_v0_4 as export_pack;

#[doc(hidden)]
#[macro_export]
macro_rules! __export_pack_v0_4 {
    ($pack:ident) => {
        $crate::__export_pack_v0_4!($pack, asks_for_missing = []);
    };
    ($pack:ident, asks_for_missing = [$($prompt:expr),* $(,)?]) => {
        impl $crate::bindings_v0_4::exports::prompt_host::prompts::asking::Guest for $pack {
            fn prompts_that_ask() -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![$(::std::string::ToString::to_string(&$prompt)),*]
            }
        }
        impl $crate::bindings_v0_4::exports::prompt_host::prompts::content::Guest for $pack {
            fn skill_files() -> ::std::vec::Vec<$crate::v0_4::SkillFile> {
                <$pack as $crate::v0_4::Carries>::skills()
            }
            fn static_resources() -> ::std::vec::Vec<$crate::v0_4::StaticResource> {
                <$pack as $crate::v0_4::Carries>::static_resources()
            }
        }
        $crate::bindings_v0_4::export_pack_v0_4!($pack);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases tests/python/test_sdk_libraries.py plays on the JavaScript
    /// and Python libraries, which must answer alike.
    #[test]
    fn skills_are_checked_as_the_host_checks_them_at_load() {
        let check = |path: &str, text: &[u8]| check_skills(&[skill_file(path, text)]);
        assert_eq!(check("review/SKILL.md", b"---\nname: review\ndescription: Reviews\n---\nBody\n"), Ok(()));
        assert_eq!(check("acme/review/SKILL.md", b"---\nname: \"review\"\ndescription: >\n  Reviews\n---\n"), Ok(()));
        assert_eq!(check("review/references/notes.md", b"anything"), Ok(()));
        assert_eq!(check("review/SKILL.md", b"\xff"), Err("skill \"review\": its SKILL.md is not UTF-8 text".into()));
        assert_eq!(
            check("review/SKILL.md", b"# Review\n"),
            Err(
                "skill \"review\": its SKILL.md: its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---"
                    .into()
            )
        );
        assert_eq!(
            check("review/SKILL.md", b"---\nname: review\n"),
            Err("skill \"review\": its SKILL.md: its frontmatter has no closing --- line: end it with a line --- before the markdown"
                .into())
        );
        assert_eq!(
            check("review/SKILL.md", b"---\ndescription: Reviews\n---\n"),
            Err("skill \"review\": its SKILL.md: its frontmatter has no name: add a line name: followed by the skill's folder name".into())
        );
        assert_eq!(
            check("review/SKILL.md", b"---\nname: reviews\ndescription: Reviews\n---\n"),
            Err("skill \"review\": its SKILL.md names it \"reviews\", and a skill's name must be its folder's name".into())
        );
        assert_eq!(
            check("review/SKILL.md", b"---\nname: review\n---\n"),
            Err(
                "skill \"review\": its SKILL.md: its frontmatter has no description: add one saying what the skill does and when to use it"
                    .into()
            )
        );
    }
}
