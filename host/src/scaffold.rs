//! `prompt-host new`: a new prompt pack that builds, and that `prompt-host
//! inspect` accepts, as it comes.
//!
//! The files come from `host/templates/<language>/`, with `{{name}}`
//! replaced by the pack's name, plus what every pack needs from this
//! repository, copied as they are: the WIT package (0.4, which new packs
//! target), a `skills/` folder with one skill, and the SDK of the pack's
//! language: for Rust, the `prompt-pack` crate (which generates bindings for
//! 0.1 to 0.4, and so needs every WIT file where the repository has it) and the lock file it is tested
//! with; for JavaScript and Python, the one-file libraries with the same
//! template API (`host/templates/js/prompt-pack.js`,
//! `host/templates/python/prompt_pack.py`). They are compiled into the
//! binary, so `new` works wherever the binary is.

use std::fmt;
use std::path::{Path, PathBuf};

/// The languages a pack can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Rust,
    JavaScript,
    Python,
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Language::Rust => "Rust",
            Language::JavaScript => "JavaScript",
            Language::Python => "Python",
        })
    }
}

/// A file of a new pack: where it goes, what it holds, and whether
/// `{{name}}` is replaced in it.
struct TemplateFile {
    path: &'static str,
    contents: &'static str,
    fill_in: bool,
}

const fn template(path: &'static str, contents: &'static str) -> TemplateFile {
    TemplateFile { path, contents, fill_in: true }
}

const fn copied(path: &'static str, contents: &'static str) -> TemplateFile {
    TemplateFile { path, contents, fill_in: false }
}

/// The WIT 0.4 package, as the one contract a JavaScript or Python pack
/// builds against.
const WIT: TemplateFile = copied("wit/prompt-provider.wit", include_str!("../../wit/0.4/prompt-provider.wit"));

/// The starter's skill, the same in every language: the pack embeds its
/// `skills/` folder when it is built.
const SKILL: TemplateFile = copied("skills/summarizing/SKILL.md", include_str!("../templates/skills/summarizing/SKILL.md"));

/// Every WIT package, laid out as in this repository, where the Rust SDK
/// finds them.
const WIT_0_1: TemplateFile = copied("wit/prompt-provider.wit", include_str!("../../wit/prompt-provider.wit"));
const WIT_0_2: TemplateFile = copied("wit/0.2/prompt-provider.wit", include_str!("../../wit/0.2/prompt-provider.wit"));
const WIT_0_3: TemplateFile = copied("wit/0.3/prompt-provider.wit", include_str!("../../wit/0.3/prompt-provider.wit"));
const WIT_0_4: TemplateFile = copied("wit/0.4/prompt-provider.wit", include_str!("../../wit/0.4/prompt-provider.wit"));

const RUST: &[TemplateFile] = &[
    template("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
    template(".cargo/config.toml", include_str!("../templates/rust/.cargo/config.toml")),
    template("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
    template("README.md", include_str!("../templates/rust/README.md")),
    template(".gitignore", include_str!("../templates/rust/.gitignore")),
    SKILL,
    WIT_0_1,
    WIT_0_2,
    WIT_0_3,
    WIT_0_4,
    // The SDK is not published yet: each pack gets a copy, and the versions
    // of its dependencies that the plugins workspace is tested with.
    copied("sdk/prompt-pack/Cargo.toml", SDK_MANIFEST),
    copied("sdk/prompt-pack/src/lib.rs", include_str!("../../plugins/prompt-pack/src/lib.rs")),
    copied("sdk/prompt-pack/src/input.rs", include_str!("../../plugins/prompt-pack/src/input.rs")),
    copied("sdk/prompt-pack/src/template.rs", include_str!("../../plugins/prompt-pack/src/template.rs")),
    copied("sdk/prompt-pack/src/v0_3.rs", include_str!("../../plugins/prompt-pack/src/v0_3.rs")),
    copied("sdk/prompt-pack/src/v0_4.rs", include_str!("../../plugins/prompt-pack/src/v0_4.rs")),
    copied("Cargo.lock", include_str!("../../plugins/Cargo.lock")),
];

/// The SDK's manifest outside the plugins workspace, which it inherits from
/// there. A unit test keeps the two in step.
const SDK_MANIFEST: &str = r#"[package]
name = "prompt-pack"
version = "0.1.0"
description = "Write prompt packs for prompt-host in Rust"
edition = "2024"
rust-version = "1.88"
license = "Apache-2.0"
publish = false

[dependencies]
wit-bindgen = "=0.61.1"
include_dir = "0.7.4"
"#;

const JAVASCRIPT: &[TemplateFile] = &[
    template("pack.js", include_str!("../templates/js/pack.js")),
    template("pack.test.js", include_str!("../templates/js/pack.test.js")),
    // The SDK, as the Rust one is: not published, so each pack gets a copy.
    copied("prompt-pack.js", JS_SDK),
    template("package.json", include_str!("../templates/js/package.json")),
    template("package-lock.json", include_str!("../templates/js/package-lock.json")),
    template("README.md", include_str!("../templates/js/README.md")),
    template(".gitignore", include_str!("../templates/js/.gitignore")),
    copied("jco-preopen.mjs", include_str!("../../tests/jco-preopen.mjs")),
    copied("embed-skills.mjs", include_str!("../templates/js/embed-skills.mjs")),
    SKILL,
    WIT,
];

const PYTHON: &[TemplateFile] = &[
    template("app.py", include_str!("../templates/python/app.py")),
    template("test_app.py", include_str!("../templates/python/test_app.py")),
    copied("prompt_pack.py", PYTHON_SDK),
    template("requirements.txt", include_str!("../templates/python/requirements.txt")),
    template("README.md", include_str!("../templates/python/README.md")),
    template(".gitignore", include_str!("../templates/python/.gitignore")),
    SKILL,
    WIT,
];

/// The template API in JavaScript and Python, one file each.
const JS_SDK: &str = include_str!("../templates/js/prompt-pack.js");
const PYTHON_SDK: &str = include_str!("../templates/python/prompt_pack.py");

fn files(language: Language) -> &'static [TemplateFile] {
    match language {
        Language::Rust => RUST,
        Language::JavaScript => JAVASCRIPT,
        Language::Python => PYTHON,
    }
}

/// Why a pack could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("'{0}' cannot name a pack: it names the plugin and its .wasm file, so use {rule}", rule = prompt_host_trust::lockfile::PLUGIN_NAME_RULE)]
    BadName(String),
    #[error(
        "'{name}' cannot name a Rust pack: its .wasm file is named after its crate, and a crate's file name turns \
         '-' into '_' and cannot start with a digit or '_': name it '{suggestion}', or write it in JavaScript or Python"
    )]
    BadCrateName { name: String, suggestion: String },
    #[error("{0} already exists and is not empty: choose another name or --dir")]
    NotEmpty(PathBuf),
    #[error("{0} already exists and is not a directory: choose another name or --dir")]
    NotADirectory(PathBuf),
    #[error("cannot write {path}: {error}")]
    Write { path: PathBuf, error: std::io::Error },
}

/// Checks that `name` can name a pack in `language`: a plugin name, and,
/// in Rust, one its crate's .wasm file keeps.
pub fn check_name(name: &str, language: Language) -> Result<(), ScaffoldError> {
    if !prompt_host_trust::lockfile::is_plugin_name(name) {
        return Err(ScaffoldError::BadName(name.to_string()));
    }
    let kept_by_a_crate = name.starts_with(|c: char| c.is_ascii_lowercase()) && !name.contains('-');
    if language == Language::Rust && !kept_by_a_crate {
        let trimmed = name.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_' || c == '-');
        let suggestion = if trimmed.is_empty() { "my_pack".to_string() } else { trimmed.replace('-', "_") };
        return Err(ScaffoldError::BadCrateName { name: name.to_string(), suggestion });
    }
    Ok(())
}

/// Writes a new pack named `name` into `dir` (which must not exist, or be
/// empty). Returns the files written, relative to `dir`.
pub fn create(dir: &Path, name: &str, language: Language) -> Result<Vec<&'static str>, ScaffoldError> {
    check_name(name, language)?;
    if dir.exists() && !dir.is_dir() {
        return Err(ScaffoldError::NotADirectory(dir.to_path_buf()));
    }
    if dir.read_dir().is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(ScaffoldError::NotEmpty(dir.to_path_buf()));
    }
    let mut written = Vec::new();
    for file in files(language) {
        let path = dir.join(file.path);
        let contents = if file.fill_in { file.contents.replace("{{name}}", name) } else { file.contents.to_string() };
        let write = || {
            std::fs::create_dir_all(path.parent().expect("a file in the pack has a parent"))?;
            std::fs::write(&path, contents)
        };
        write().map_err(|error| ScaffoldError::Write { path: path.clone(), error })?;
        written.push(file.path);
    }
    Ok(written)
}

/// What to run next, in the new pack's directory.
pub fn next_steps(name: &str, language: Language) -> String {
    let (build, wasm) = match language {
        Language::Rust => {
            ("rustup target add wasm32-wasip2 && cargo build --release".to_string(), format!("target/wasm32-wasip2/release/{name}.wasm"))
        }
        Language::JavaScript => ("npm install && npm test && npm run build".to_string(), format!("{name}.wasm")),
        Language::Python => (
            format!(
                "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && \
                 .venv/bin/componentize-py -d wit -w prompt-pack-with-content componentize app -o {name}.wasm"
            ),
            format!("{name}.wasm"),
        ),
    };
    format!("  {build}\n  prompt-host inspect {wasm}\n  prompt-host get {wasm} summarize text='Some text to summarize.'\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_plugin_name_rule_and_in_rust_what_a_crate_keeps() {
        assert!(check_name("acme_prompts2", Language::Rust).is_ok());
        for bad in ["", "Acme", "a b", "../x", "-x"] {
            assert!(matches!(check_name(bad, Language::JavaScript), Err(ScaffoldError::BadName(_))), "{bad:?}");
        }
        for good in ["my-pack", "2fast"] {
            assert!(check_name(good, Language::JavaScript).is_ok() && check_name(good, Language::Python).is_ok(), "{good:?}");
        }
        assert_eq!(
            check_name("my-pack", Language::Rust).unwrap_err().to_string(),
            "'my-pack' cannot name a Rust pack: its .wasm file is named after its crate, and a crate's file name turns \
             '-' into '_' and cannot start with a digit or '_': name it 'my_pack', or write it in JavaScript or Python"
        );
        assert_eq!(
            check_name("Acme", Language::Rust).unwrap_err().to_string(),
            "'Acme' cannot name a pack: it names the plugin and its .wasm file, so use lowercase letters, digits, '-' \
             and '_', at most 64, not starting with '-'"
        );
    }

    #[test]
    fn a_pack_is_written_with_its_name_filled_in() {
        let dir = tempfile::tempdir().unwrap();
        let pack = dir.path().join("acme");
        let written = create(&pack, "acme", Language::Rust).unwrap();
        assert!(written.contains(&"wit/prompt-provider.wit"));
        // The SDK builds against every version, where the repository has them.
        assert_eq!(std::fs::read_to_string(pack.join("wit/0.2/prompt-provider.wit")).unwrap(), WIT_0_2.contents);
        assert!(WIT_0_1.contents.contains("package prompt-host:prompts@0.1.0;"));
        // A JavaScript or Python pack gets 0.4 as its one contract.
        let js = dir.path().join("js");
        create(&js, "acme", Language::JavaScript).unwrap();
        let contract = std::fs::read_to_string(js.join("wit/prompt-provider.wit")).unwrap();
        assert!(contract.contains("package prompt-host:prompts@0.4.0;"));
        // Every language's starter carries the same skill.
        let skill = std::fs::read_to_string(pack.join("skills/summarizing/SKILL.md")).unwrap();
        assert!(skill.starts_with("---\nname: summarizing\n"));
        assert_eq!(std::fs::read_to_string(js.join("skills/summarizing/SKILL.md")).unwrap(), skill);
        let manifest = std::fs::read_to_string(pack.join("Cargo.toml")).unwrap();
        assert!(manifest.starts_with("[package]\nname = \"acme\"\n"));
        // Copied files keep their braces: the SDK's own {{ escapes must survive.
        let sdk = std::fs::read_to_string(pack.join("sdk/prompt-pack/src/template.rs")).unwrap();
        assert_eq!(sdk, include_str!("../../plugins/prompt-pack/src/template.rs"));
        // So must the JavaScript and Python libraries' (their parsers name '{{').
        assert!(JS_SDK.contains("'{{'") && PYTHON_SDK.contains("'{{{{'"));
        assert_eq!(std::fs::read_to_string(js.join("prompt-pack.js")).unwrap(), JS_SDK);
        let python = dir.path().join("python");
        create(&python, "acme", Language::Python).unwrap();
        assert_eq!(std::fs::read_to_string(python.join("prompt_pack.py")).unwrap(), PYTHON_SDK);
        assert!(std::fs::read_to_string(python.join("app.py")).unwrap().contains("name=\"acme\","));
        assert_eq!(std::fs::read_to_string(python.join("skills/summarizing/SKILL.md")).unwrap(), skill);
        assert!(matches!(create(&pack, "acme", Language::Rust), Err(ScaffoldError::NotEmpty(_))));
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(create(&file, "acme", Language::Rust), Err(ScaffoldError::NotADirectory(_))));
    }

    /// A Rust pack gets every source file of the SDK and every WIT package
    /// its bindings read: a file added to either is vendored too.
    #[test]
    fn a_rust_pack_vendors_every_file_of_the_sdk_and_every_wit_package() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let vendored: Vec<&str> = RUST.iter().map(|file| file.path).collect();
        for entry in std::fs::read_dir(root.join("plugins/prompt-pack/src")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let path = format!("sdk/prompt-pack/src/{name}");
            assert!(vendored.contains(&path.as_str()), "{path} is not vendored into a new Rust pack");
        }
        for wit in ["wit/prompt-provider.wit", "wit/0.2/prompt-provider.wit", "wit/0.3/prompt-provider.wit", "wit/0.4/prompt-provider.wit"]
        {
            assert!(root.join(wit).exists() && vendored.contains(&wit), "{wit}");
        }
    }

    /// The pins a new pack gets are the ones this repository tests with.
    #[test]
    fn pins_match_the_repository() {
        let workspace = include_str!("../../plugins/Cargo.toml");
        for dependency in ["wit-bindgen = ", "include_dir = "] {
            let pin = SDK_MANIFEST.lines().find(|line| line.starts_with(dependency)).unwrap();
            assert!(workspace.lines().any(|line| line == pin), "plugins/Cargo.toml lacks {pin}");
        }

        let tests: serde_json::Value = serde_json::from_str(include_str!("../../tests/package.json")).unwrap();
        let template: serde_json::Value = serde_json::from_str(include_str!("../templates/js/package.json")).unwrap();
        for (package, version) in template["devDependencies"].as_object().unwrap() {
            assert_eq!(&tests["dependencies"][package], version, "{package}");
        }
        assert_eq!(template["overrides"], tests["overrides"]);
        // The template's lock was made from its package.json.
        let lock: serde_json::Value = serde_json::from_str(include_str!("../templates/js/package-lock.json")).unwrap();
        assert_eq!(lock["packages"][""]["devDependencies"], template["devDependencies"]);
        assert_eq!(lock["packages"][""]["engines"], template["engines"]);
        for (package, version) in template["devDependencies"].as_object().unwrap() {
            assert_eq!(&lock["packages"][format!("node_modules/{package}")]["version"], version, "{package}");
        }

        let pinned = include_str!("../templates/python/requirements.txt").trim();
        assert!(include_str!("../../tests/requirements.txt").lines().any(|line| line == pinned), "{pinned}");
    }
}
