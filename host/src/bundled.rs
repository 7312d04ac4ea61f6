//! The example packs built into the binary, served when no plugin directory is
//! given, so a new user sees the server work at once.

use std::io::Write;

use crate::loader::PluginSource;

/// The bundled packs: name and bytes.
pub const BUNDLED_PACKS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/bundled_packs.rs"));

/// The bundled packs, as plugin sources.
pub fn sources() -> Vec<PluginSource> {
    BUNDLED_PACKS
        .iter()
        .map(|(id, bytes)| PluginSource { id: id.to_string(), origin: format!("bundled pack '{id}'"), bytes: bytes.to_vec(), bundle: None })
        .collect()
}

/// The config `write_examples` writes beside the packs: it serves them, and
/// shows in comments what `project_insights` asks to see.
const EXAMPLES_CONFIG: &str = r#"# Serves the example packs built into prompt-host, copied here to start from:
#   prompt-host serve --config prompt-host.toml
# Add, replace or remove .wasm files in plugins/: a running server picks the
# change up, and tells its clients. prompt-host's book, docs/config-file.md
# in its repository, has every key.

[server]
plugins = "plugins"

# project_insights asks to see two folders (`prompt-host inspect
# plugins/project_insights.wasm` says why); it links instead of embedding
# while they are not granted. Paths are relative to this file.
# [plugins.project_insights.grants.folders]
# logs = "/var/log/myapp"
# project = "."
"#;

/// Why the example packs could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExamplesError {
    #[error("{0} already exists and is not empty: choose another directory")]
    NotEmpty(std::path::PathBuf),
    #[error("{0} already exists and is not a directory: choose another directory")]
    NotADirectory(std::path::PathBuf),
    #[error("cannot write {path}: {error}")]
    Write { path: std::path::PathBuf, error: std::io::Error },
}

/// Writes the bundled packs into `dir/plugins/NAME.wasm`, and a config
/// that serves them into `dir/prompt-host.toml` (`dir` must not exist, or
/// be empty; no file is overwritten). Returns the files written, relative
/// to `dir`.
pub fn write_examples(dir: &std::path::Path) -> Result<Vec<String>, ExamplesError> {
    if dir.exists() && !dir.is_dir() {
        return Err(ExamplesError::NotADirectory(dir.to_path_buf()));
    }
    if dir.read_dir().is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(ExamplesError::NotEmpty(dir.to_path_buf()));
    }
    let files = BUNDLED_PACKS
        .iter()
        .map(|(name, bytes)| (format!("plugins/{name}.wasm"), *bytes))
        .chain([("prompt-host.toml".to_string(), EXAMPLES_CONFIG.as_bytes())]);
    let mut written = Vec::new();
    for (file, bytes) in files {
        let path = dir.join(&file);
        let write = || {
            std::fs::create_dir_all(path.parent().expect("every file is in dir"))?;
            std::fs::File::create_new(&path)?.write_all(bytes)
        };
        write().map_err(|error| ExamplesError::Write { path: path.clone(), error })?;
        written.push(file);
    }
    Ok(written)
}
