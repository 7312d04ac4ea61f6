//! `[signatures]` (which signatures count, read by `signature`), and the
//! public key files it and `[plugins.NAME]` name.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use prompt_host_trust::signature::{Identity, Keyless, TrustedKey, TrustedRoot};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SignaturesSection {
    pub(super) require: Option<bool>,
    #[serde(default)]
    pub(super) public_keys: Vec<PathBuf>,
    pub(super) trusted_root: Option<PathBuf>,
    #[serde(default)]
    pub(super) identities: Vec<Identity>,
}

impl SignaturesSection {
    /// The trusted root and identities for keyless signatures: both or
    /// neither, as there is no match-anything default.
    pub(super) fn keyless(&self, folder: &Path) -> Result<Option<Keyless>, String> {
        match (&self.trusted_root, self.identities.is_empty()) {
            (None, true) => Ok(None),
            (None, false) => Err("signatures.identities needs signatures.trusted_root to check them against".into()),
            (Some(_), true) => {
                Err("signatures.trusted_root needs signatures.identities: the identities (and their issuers) whose keyless \
                 signatures count; there is no match-anything default"
                    .into())
            }
            (Some(file), false) => {
                let path = folder.join(file);
                let text = prompt_host_files::read_text(&path)
                    .map_err(|error| format!("signatures.trusted_root: cannot read {}: {error}", path.display()))?;
                let root =
                    TrustedRoot::from_json(&text).map_err(|error| format!("signatures.trusted_root: {}: {error}", path.display()))?;
                Ok(Some(Keyless { root: std::sync::Arc::new(root), identities: self.identities.clone() }))
            }
        }
    }
}

/// Reads the public key files `files` (relative to `folder`) that `key` names.
pub(super) fn read_keys(key: &str, files: &[PathBuf], folder: &Path) -> Result<Vec<TrustedKey>, String> {
    files
        .iter()
        .map(|file| {
            let path = folder.join(file);
            let pem = prompt_host_files::read_text(&path).map_err(|error| format!("{key}: cannot read {}: {error}", path.display()))?;
            TrustedKey::new(file.display().to_string(), pem).map_err(|error| format!("{key}: {error}"))
        })
        .collect()
}
