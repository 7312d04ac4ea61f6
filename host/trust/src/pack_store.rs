//! The pack store: the packs pulled from registries, addressed by the
//! SHA-256 of their component, each install with its [`Provenance`] (the
//! manifest and signatures it came with).
//!
//! ```text
//! STORE/sha256/<hex>.wasm                     the component
//! STORE/sha256/<hex>.<name>.provenance.json   plugin <name>'s install of it:
//!                                             where it came from, its signatures
//! ```
//!
//! Provenance is kept per install, not per component: the same bytes
//! installed for another plugin (unsigned, from a mirror without
//! signatures) never replace what a signed install recorded.
//!
//! Nothing in it is trusted for being there: at each load the component's
//! bytes are hashed, the plugin's record found by that hash, and the record
//! checked from the bytes up to a trusted key
//! ([`crate::signature::check_at_load`]). A changed file is no longer
//! found, or no longer matches.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::signature::Provenance;
use prompt_host_files as files;

/// A pack store in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackStore {
    dir: PathBuf,
}

impl PackStore {
    /// The store in `dir` (nothing is created until a pack is put in it).
    pub fn new(dir: PathBuf) -> PackStore {
        PackStore { dir }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The component with SHA-256 `sha256` (hex).
    pub fn wasm_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.wasm"))
    }

    /// Plugin `name`'s record of its install of the component with SHA-256
    /// `sha256` (a plugin name has no dot: the two never run together).
    fn provenance_path(&self, name: &str, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.{name}.provenance.json"))
    }

    /// Keeps a pulled component and plugin `name`'s provenance for it: the
    /// record first, so a component in the store always has one. Returns
    /// what [`PackStore::undo`] needs to take the install back out.
    ///
    /// Call it only while holding the install lock (`Installer::hold`, the
    /// OS lock every command that changes the lockfile takes): `undo`
    /// removes the component when this put created it, which is right only
    /// if no other install put the same bytes in between and kept them.
    pub fn put(&self, name: &str, sha256: &str, wasm: &[u8], provenance: &Provenance) -> std::io::Result<Put> {
        let record_path = self.provenance_path(name, sha256);
        let wasm_path = self.wasm_path(sha256);
        let put = Put {
            record: record_path.clone(),
            previous_record: files::read_if_exists(&record_path, files::MAX_SMALL_FILE_BYTES)?,
            wasm: (!wasm_path.exists()).then(|| wasm_path.clone()),
        };
        let record = serde_json::to_vec_pretty(provenance).expect("a provenance record serializes");
        write_atomically(&record_path, &record)?;
        write_atomically(&wasm_path, wasm)?;
        Ok(put)
    }

    /// Takes back what [`PackStore::put`] wrote for an install that then
    /// failed: the record as it was before (or none), and the component if
    /// it was new. A failed install leaves nothing in the store.
    pub fn undo(&self, put: Put) -> std::io::Result<()> {
        match &put.previous_record {
            Some(previous) => write_atomically(&put.record, previous)?,
            None => remove_if_exists(&put.record)?,
        }
        match &put.wasm {
            Some(wasm) => remove_if_exists(wasm),
            None => Ok(()),
        }
    }

    /// Plugin `name`'s provenance for the component with SHA-256 `sha256`,
    /// if the store has one; an error if it is there but unreadable, too
    /// large or not a record.
    pub fn provenance(&self, name: &str, sha256: &str) -> Result<Option<Provenance>, String> {
        let path = self.provenance_path(name, sha256);
        let read = files::read_if_exists(&path, files::MAX_SMALL_FILE_BYTES);
        let Some(text) = read.map_err(|error| format!("cannot read {}: {error}", path.display()))? else { return Ok(None) };
        serde_json::from_slice(&text).map(Some).map_err(|error| format!("{} is not a provenance record: {error}", path.display()))
    }

    /// Removes what one lockfile let go of: each install of `released`
    /// (plugin name and SHA-256) that `kept` (what that lockfile names now)
    /// does not name, its provenance record and, if none of `kept` has it,
    /// its component. Nothing else is touched, so sites sharing a store keep
    /// each other's records (a component both hold is removed when one lets
    /// it go; the other's plugin file and record still serve it). Returns
    /// how many files were removed.
    pub fn release(
        &self,
        released: &std::collections::HashSet<(String, String)>,
        kept: &std::collections::HashSet<(String, String)>,
    ) -> std::io::Result<usize> {
        let removed = |path: PathBuf| match std::fs::remove_file(path) {
            Ok(()) => Ok(1),
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(error) => Err(error),
        };
        let mut count = 0;
        for (name, sha256) in released.difference(kept) {
            count += removed(self.provenance_path(name, sha256))?;
            if !kept.iter().any(|(_, held)| held == sha256) {
                count += removed(self.wasm_path(sha256))?;
            }
        }
        Ok(count)
    }
}

/// What one [`PackStore::put`] changed.
#[derive(Debug)]
#[must_use = "an install that fails must undo what it put in the store"]
pub struct Put {
    record: PathBuf,
    previous_record: Option<Vec<u8>>,
    /// The component's file, if the put created it.
    wasm: Option<PathBuf>,
}

fn remove_if_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
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
    use prompt_host_files::MAX_SMALL_FILE_BYTES;

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
        assert_eq!(store.provenance("acme", "ab"), Ok(None));
        let put = store.put("acme", "ab", b"\0asm", &record).unwrap();
        assert_eq!(store.provenance("acme", "ab"), Ok(Some(record.clone())));
        assert_eq!(store.provenance("other", "ab"), Ok(None));
        assert_eq!(std::fs::read(store.wasm_path("ab")).unwrap(), b"\0asm");
        // Another install of the same bytes keeps its own record; undone, it leaves the first as it was.
        let unsigned = Provenance { signatures: vec![], reference: "oci://mirror.example/p@sha256:00".into(), ..record.clone() };
        let other = store.put("other", "ab", b"\0asm", &unsigned).unwrap();
        assert_eq!(store.provenance("acme", "ab"), Ok(Some(record.clone())));
        store.undo(other).unwrap();
        assert_eq!(store.provenance("other", "ab"), Ok(None));
        assert!(store.wasm_path("ab").exists());
        store.undo(put).unwrap();
        assert_eq!((store.provenance("acme", "ab"), store.wasm_path("ab").exists()), (Ok(None), false));
        std::fs::write(dir.path().join("sha256/ab.acme.provenance.json"), vec![b' '; MAX_SMALL_FILE_BYTES as usize + 1]).unwrap();
        let error = store.provenance("acme", "ab").unwrap_err();
        assert!(error.ends_with(".provenance.json: it is larger than the 1048576 bytes it may have"), "{error}");
    }

    #[test]
    fn releasing_installs_removes_only_what_the_lockfile_let_go_of() {
        let dir = tempfile::tempdir().unwrap();
        let store = PackStore::new(dir.path().to_path_buf());
        let record = Provenance {
            reference: "oci://r.example/p@sha256:00".into(),
            manifest_digest: "sha256:00".into(),
            manifest: "e30=".into(),
            signatures: vec![],
        };
        let (a, b, c) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        let _ = store.put("acme", &a, b"\0asm a", &record).unwrap();
        let _ = store.put("other", &a, b"\0asm a", &record).unwrap();
        let _ = store.put("acme", &b, b"\0asm b", &record).unwrap();
        // Another site's install, in the same store (issue #34 item 13).
        let _ = store.put("elsewhere", &c, b"\0asm c", &record).unwrap();
        std::fs::write(dir.path().join("sha256/notes.txt"), b"not the store's").unwrap();
        let set = |installs: &[(&str, &String)]| installs.iter().map(|(name, sha)| (name.to_string(), sha.to_string())).collect();
        // acme moved from b to a; other was removed.
        let released = set(&[("acme", &b), ("other", &a)]);
        assert_eq!(store.release(&released, &set(&[("acme", &a)])).unwrap(), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path().join("sha256"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![
                format!("{a}.acme.provenance.json"),
                format!("{a}.wasm"),
                format!("{c}.elsewhere.provenance.json"),
                format!("{c}.wasm"),
                "notes.txt".to_string()
            ]
        );
    }
}
