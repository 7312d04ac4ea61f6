//! `prompt-host.lock`: which packs were installed from registries, beside
//! the config file, in TOML.
//!
//! ```toml
//! version = 1
//!
//! [[pack]]
//! name = "acme"
//! reference = "oci://registry.example/acme/prompts:1.2"
//! digest = "sha256:…"          # the manifest's, which the signature signs
//! sha256 = "…"                 # the component's, as the plugin file must be
//! size = 123456
//! signer = "keys/acme.pub"     # or "unsigned"
//! ```
//!
//! It is written whole, through a temporary file and a rename, so a reader
//! never sees half of it.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The lockfile's name, in the config file's folder.
pub const LOCKFILE_NAME: &str = "prompt-host.lock";
const VERSION: u32 = 1;

/// The packs installed from registries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    pub version: u32,
    #[serde(default, rename = "pack")]
    pub packs: Vec<LockedPack>,
}

/// One installed pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPack {
    /// The plugin's name: its file is NAME.wasm in the plugin directory.
    pub name: String,
    /// What it was installed from, as given (a tag, or a digest).
    pub reference: String,
    /// The manifest digest the reference resolved to.
    pub digest: String,
    /// The component's SHA-256 (hex): what the plugin file must hash to.
    pub sha256: String,
    /// The component's size in bytes.
    pub size: u64,
    /// The trusted key that signed it, or "unsigned".
    pub signer: String,
}

/// Why the lockfile cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct LockfileError {
    pub path: String,
    pub problem: String,
}

impl Lockfile {
    /// Reads the lockfile; a missing one is empty.
    pub fn read(path: &Path) -> Result<Lockfile, LockfileError> {
        let error = |problem: String| LockfileError { path: path.display().to_string(), problem };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Lockfile { version: VERSION, packs: Vec::new() });
            }
            Err(other) => return Err(error(other.to_string())),
        };
        let lockfile: Lockfile = toml::from_str(&text).map_err(|problem| error(problem.to_string().trim_end().to_string()))?;
        if lockfile.version != VERSION {
            return Err(error(format!("version {} is not one this host reads ({VERSION})", lockfile.version)));
        }
        Ok(lockfile)
    }

    /// Writes the lockfile whole, replacing the old one in one rename.
    pub fn write(&self, path: &Path) -> Result<(), LockfileError> {
        let error = |problem: String| LockfileError { path: path.display().to_string(), problem };
        let text = format!(
            "# Written by prompt-host add / update / remove. Packs installed from registries.\n{}",
            toml::to_string(self).map_err(|problem| error(problem.to_string()))?
        );
        crate::pack_store::write_atomically(path, text.as_bytes()).map_err(|problem| error(problem.to_string()))
    }

    pub fn get(&self, name: &str) -> Option<&LockedPack> {
        self.packs.iter().find(|pack| pack.name == name)
    }

    /// Records `pack`, in place of any entry with its name.
    pub fn insert(&mut self, pack: LockedPack) {
        self.packs.retain(|locked| locked.name != pack.name);
        self.packs.push(pack);
        self.packs.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Forgets the pack named `name`; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.packs.len();
        self.packs.retain(|pack| pack.name != name);
        self.packs.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(name: &str) -> LockedPack {
        LockedPack {
            name: name.into(),
            reference: format!("oci://r.example/{name}:1"),
            digest: format!("sha256:{}", "a".repeat(64)),
            sha256: "b".repeat(64),
            size: 10,
            signer: "unsigned".into(),
        }
    }

    #[test]
    fn a_lockfile_round_trips_sorted_by_name_with_one_entry_per_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE_NAME);
        assert_eq!(Lockfile::read(&path).unwrap().packs, vec![]);
        let mut lockfile = Lockfile::read(&path).unwrap();
        lockfile.insert(pack("zeta"));
        lockfile.insert(pack("acme"));
        lockfile.insert(LockedPack { size: 20, ..pack("acme") });
        lockfile.write(&path).unwrap();
        let read = Lockfile::read(&path).unwrap();
        assert_eq!(read.packs, vec![LockedPack { size: 20, ..pack("acme") }, pack("zeta")]);
        assert!(std::fs::read_to_string(&path).unwrap().contains("[[pack]]\nname = \"acme\""));
        let mut read = read;
        assert!(read.remove("acme"));
        assert!(!read.remove("acme"));
    }

    #[test]
    fn an_unknown_version_or_key_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE_NAME);
        std::fs::write(&path, "version = 2\n").unwrap();
        let error = Lockfile::read(&path).unwrap_err().to_string();
        assert_eq!(error, format!("{}: version 2 is not one this host reads (1)", path.display()));
        std::fs::write(&path, "version = 1\nextra = true\n").unwrap();
        assert!(Lockfile::read(&path).unwrap_err().to_string().contains("unknown field `extra`"));
    }
}
