//! The pack store: the packs pulled from registries, addressed by the
//! SHA-256 of their component, each with its [`Provenance`] (the manifest
//! and signatures it came with).
//!
//! ```text
//! STORE/sha256/<hex>.wasm              the component
//! STORE/sha256/<hex>.provenance.json   where it came from, and its signatures
//! ```
//!
//! Nothing in it is trusted for being there: at each load the component's
//! bytes are hashed, the record found by that hash, and the record checked
//! from the bytes up to a trusted key ([`crate::signature::check_at_load`]).
//! A changed file is no longer found, or no longer matches.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::signature::{Provenance, read_bounded};

/// A pack store in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackStore {
    dir: PathBuf,
}

impl PackStore {
    pub fn new(dir: PathBuf) -> PackStore {
        PackStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The component with SHA-256 `sha256` (hex).
    pub fn wasm_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.wasm"))
    }

    fn provenance_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.provenance.json"))
    }

    /// Keeps a pulled component and its provenance: the record first, so a
    /// component in the store always has one.
    pub fn put(&self, sha256: &str, wasm: &[u8], provenance: &Provenance) -> std::io::Result<()> {
        let record = serde_json::to_vec_pretty(provenance).expect("a provenance record serializes");
        write_atomically(&self.provenance_path(sha256), &record)?;
        write_atomically(&self.wasm_path(sha256), wasm)
    }

    /// The provenance of the component with SHA-256 `sha256`, if the store
    /// has one; an error if it is there but unreadable, too large or not a
    /// record.
    pub fn provenance(&self, sha256: &str) -> Result<Option<Provenance>, String> {
        let path = self.provenance_path(sha256);
        let Some(text) = read_bounded(&path)? else { return Ok(None) };
        serde_json::from_slice(&text).map(Some).map_err(|error| format!("{} is not a provenance record: {error}", path.display()))
    }

    /// Removes every component and provenance record whose SHA-256 is not
    /// in `kept` (what the lockfile names). Returns how many were removed.
    pub fn retain(&self, kept: &std::collections::HashSet<String>) -> std::io::Result<usize> {
        let entries = match std::fs::read_dir(self.dir.join("sha256")) {
            Ok(entries) => entries,
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(error) => return Err(error),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(sha256) = name.strip_suffix(".wasm").or_else(|| name.strip_suffix(".provenance.json")) else { continue };
            let is_digest = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if is_digest && !kept.contains(sha256) {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Writes `bytes` to `path` whole: into a temporary file beside it, then
/// renamed over it, so a reader (a watching server) never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_whole(path, bytes, true)
}

/// As [`write_atomically`], but fails with `AlreadyExists`, changing
/// nothing, if `path` exists when the file is put in place.
pub fn write_atomically_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_whole(path, bytes, false)
}

fn write_whole(path: &Path, bytes: &[u8], replace: bool) -> std::io::Result<()> {
    let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)?;
    let mut file = tempfile::Builder::new().prefix(".prompt-host-").suffix(".partial").tempfile_in(folder)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    if replace { file.persist(path) } else { file.persist_noclobber(path) }.map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::MAX_PROVENANCE_BYTES;

    #[test]
    fn a_record_is_found_by_the_components_digest_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let store = PackStore::new(dir.path().to_path_buf());
        let record = Provenance {
            reference: "oci://r.example/p@sha256:00".into(),
            manifest_digest: "sha256:00".into(),
            manifest: "e30=".into(),
            signatures: vec![],
        };
        assert_eq!(store.provenance("ab"), Ok(None));
        store.put("ab", b"\0asm", &record).unwrap();
        assert_eq!(store.provenance("ab"), Ok(Some(record)));
        assert_eq!(std::fs::read(store.wasm_path("ab")).unwrap(), b"\0asm");
        std::fs::write(dir.path().join("sha256/ab.provenance.json"), vec![b' '; MAX_PROVENANCE_BYTES as usize + 1]).unwrap();
        let error = store.provenance("ab").unwrap_err();
        assert!(error.ends_with("is larger than the 1048576 bytes it may have"), "{error}");
    }
}
