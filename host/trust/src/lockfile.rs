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
//! version = "1.2.0"            # what the pack says it is (describe-pack), if it says
//! previous_digests = ["sha256:…"]  # digests this install moved past: no going back
//! ```
//!
//! It is written whole, through a temporary file and a rename, so a reader
//! never sees half of it; the commands that change it hold [`LockfileGuard`]
//! from reading it to writing it, so two never interleave. What it says is
//! checked as it is read: its names and digests become file names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The lockfile's name, in the config file's folder.
pub const LOCKFILE_NAME: &str = "prompt-host.lock";
const VERSION: u32 = 1;

/// The packs installed from registries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// The lockfile's format; this host reads only version 1.
    pub version: u32,
    /// The installed packs (`[[pack]]`), sorted by name, one per name.
    #[serde(default, rename = "pack")]
    pub packs: Vec<LockedPack>,
    /// Packs removed (`[[removed]]`), as they were when removed, one per
    /// name, at most [`MAX_REMOVED`] (the oldest forgotten first): an `add`
    /// of the name is checked against what it knew, as an update is, so
    /// `remove` then `add` is no way around the rollback checks.
    #[serde(default, rename = "removed", skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<LockedPack>,
}

/// The most removed packs a lockfile remembers.
pub const MAX_REMOVED: usize = 256;

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
    /// The version the pack says it is (`describe-pack`, WIT 0.2), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The manifest digests this install had before, newest first, at most
    /// [`MAX_PREVIOUS_DIGESTS`]: `update` never goes back to one of them
    /// unless told to (`--allow-downgrade`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_digests: Vec<String>,
}

/// The most earlier digests kept for one install.
pub const MAX_PREVIOUS_DIGESTS: usize = 64;

impl LockedPack {
    /// Where this install was pulled from, at its manifest digest: what the
    /// pack store's record of it names. `None` if the reference does not parse.
    pub fn pulled_reference(&self) -> Option<String> {
        let reference = crate::distribution::PackReference::parse(&self.reference).ok()?;
        Some(reference.at_digest(&self.digest).to_string())
    }

    /// Records that this pack replaces `earlier` (the same install): the
    /// earlier digest joins the ones it has moved past.
    pub fn replacing(mut self, earlier: &LockedPack) -> LockedPack {
        let mut previous = vec![earlier.digest.clone()];
        previous.extend(earlier.previous_digests.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        previous.retain(|digest| *digest != self.digest && seen.insert(digest.clone()));
        previous.truncate(MAX_PREVIOUS_DIGESTS);
        self.previous_digests = previous;
        self
    }
}

/// Held while a command changes the lockfile: an OS lock on a file beside
/// it (`prompt-host.lock.guard`; the lockfile itself is replaced whole, so
/// it cannot carry the lock), released when the guard is dropped or the
/// process ends.
#[derive(Debug)]
pub struct LockfileGuard {
    _file: std::fs::File,
}

fn guard_path(lockfile: &Path) -> PathBuf {
    let mut name = lockfile.file_name().unwrap_or_default().to_os_string();
    name.push(".guard");
    lockfile.with_file_name(name)
}

/// What may name a plugin, in words: the one rule for a plugin file's name
/// (`NAME.wasm`), `add --name` (or the repository's last segment) and `new`.
pub const PLUGIN_NAME_RULE: &str = "lowercase letters, digits, '-' and '_', at most 64, not starting with '-'";

/// Whether `name` may name a plugin, by [`PLUGIN_NAME_RULE`].
pub fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !name.starts_with('-')
}

/// Why the lockfile cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct LockfileError {
    /// The lockfile, or the guard file beside it.
    pub path: String,
    /// What went wrong: an I/O error, or what in the file is invalid.
    pub problem: String,
}

impl Lockfile {
    /// Reads the lockfile; a missing one is empty.
    pub fn read(path: &Path) -> Result<Lockfile, LockfileError> {
        let error = |problem: String| LockfileError { path: path.display().to_string(), problem };
        let text = match prompt_host_files::read_if_exists(path, prompt_host_files::MAX_SMALL_FILE_BYTES) {
            Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| error("it is not UTF-8 text".into()))?,
            Ok(None) => return Ok(Lockfile { version: VERSION, packs: Vec::new(), removed: Vec::new() }),
            Err(other) => return Err(error(other.to_string())),
        };
        let lockfile: Lockfile = toml::from_str(&text).map_err(|problem| error(problem.to_string().trim_end().to_string()))?;
        if lockfile.version != VERSION {
            return Err(error(format!("version {} is not one this host reads ({VERSION})", lockfile.version)));
        }
        for pack in lockfile.packs.iter().chain(&lockfile.removed) {
            if !is_plugin_name(&pack.name) {
                return Err(error(format!("{:?} is not a plugin name ({PLUGIN_NAME_RULE})", pack.name)));
            }
            if !crate::distribution::is_sha256_digest(&format!("sha256:{}", pack.sha256))
                || !crate::distribution::is_sha256_digest(&pack.digest)
                || !pack.previous_digests.iter().all(|digest| crate::distribution::is_sha256_digest(digest))
            {
                return Err(error(format!("{}: its digest and sha256 must be SHA-256 digests", pack.name)));
            }
        }
        Ok(lockfile)
    }

    /// Waits until no other command holds the lockfile at `path`, and holds
    /// it until the guard is dropped.
    pub async fn lock(path: &Path) -> Result<LockfileGuard, LockfileError> {
        let guard_path = guard_path(path);
        let error = |problem: std::io::Error| LockfileError { path: guard_path.display().to_string(), problem: problem.to_string() };
        if let Some(folder) = guard_path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(error)?;
        }
        // Opened without blocking: a FIFO there would otherwise hang the open.
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut options,
            // Not followed if a symlink: a dangling one would create its target.
            (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32,
        );
        let file = options.open(&guard_path).map_err(error)?;
        if !file.metadata().map_err(error)?.is_file() {
            return Err(LockfileError { path: guard_path.display().to_string(), problem: "it is not a regular file".into() });
        }
        let file = tokio::task::spawn_blocking(move || file.lock().map(|()| file))
            .await
            .expect("taking a file lock does not panic")
            .map_err(error)?;
        Ok(LockfileGuard { _file: file })
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

    /// The pack named `name`, if it is installed.
    pub fn get(&self, name: &str) -> Option<&LockedPack> {
        self.packs.iter().find(|pack| pack.name == name)
    }

    /// Records `pack`, in place of any entry with its name (installed or
    /// removed).
    pub fn insert(&mut self, pack: LockedPack) {
        self.packs.retain(|locked| locked.name != pack.name);
        self.removed.retain(|removed| removed.name != pack.name);
        self.packs.push(pack);
        self.packs.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Takes the pack named `name` out of the installed ones, and remembers
    /// it among the removed; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(at) = self.packs.iter().position(|pack| pack.name == name) else { return false };
        let gone = self.packs.remove(at);
        self.removed.retain(|removed| removed.name != name);
        self.removed.push(gone);
        if self.removed.len() > MAX_REMOVED {
            self.removed.remove(0);
        }
        true
    }

    /// The pack named `name` as it was when removed, if the lockfile
    /// remembers one.
    pub fn removed(&self, name: &str) -> Option<&LockedPack> {
        self.removed.iter().find(|pack| pack.name == name)
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
            version: None,
            previous_digests: Vec::new(),
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
    fn a_replacing_pack_keeps_the_digests_moved_past_newest_first_without_itself_and_bounded() {
        let digest = |n: usize| format!("sha256:{n:064x}");
        let mut installed = LockedPack { digest: digest(0), ..pack("acme") };
        for n in 1..=MAX_PREVIOUS_DIGESTS + 5 {
            installed = LockedPack { digest: digest(n), ..pack("acme") }.replacing(&installed);
        }
        assert_eq!(installed.previous_digests.len(), MAX_PREVIOUS_DIGESTS);
        assert_eq!(installed.previous_digests[0], digest(MAX_PREVIOUS_DIGESTS + 4));
        // Back to an earlier digest (allowed): it leaves the list, the one replaced joins it.
        let back = LockedPack { digest: digest(MAX_PREVIOUS_DIGESTS), ..pack("acme") }.replacing(&installed);
        assert_eq!(back.previous_digests[0], digest(MAX_PREVIOUS_DIGESTS + 5));
        assert!(!back.previous_digests.contains(&back.digest));
        assert_eq!(back.previous_digests.len(), MAX_PREVIOUS_DIGESTS);
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

    #[test]
    fn a_name_or_digest_that_could_name_another_file_is_refused_as_the_lockfile_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE_NAME);
        let write = |pack: LockedPack| Lockfile { version: VERSION, packs: vec![pack], removed: Vec::new() }.write(&path).unwrap();
        write(LockedPack { name: "../../etc/cron.d/x".into(), ..pack("acme") });
        assert_eq!(
            Lockfile::read(&path).unwrap_err().to_string(),
            format!("{}: \"../../etc/cron.d/x\" is not a plugin name ({PLUGIN_NAME_RULE})", path.display())
        );
        write(LockedPack { sha256: "../../../../tmp/evil".into(), ..pack("acme") });
        assert_eq!(
            Lockfile::read(&path).unwrap_err().to_string(),
            format!("{}: acme: its digest and sha256 must be SHA-256 digests", path.display())
        );
        write(pack("acme"));
        assert_eq!(Lockfile::read(&path).unwrap().packs, vec![pack("acme")]);
    }

    #[test]
    fn a_removed_pack_is_remembered_until_its_name_is_installed_again() {
        let mut lockfile = Lockfile::default();
        lockfile.insert(pack("acme"));
        assert!(lockfile.remove("acme"));
        assert!(!lockfile.remove("acme"));
        assert_eq!((lockfile.get("acme"), lockfile.removed("acme")), (None, Some(&pack("acme"))));
        lockfile.insert(pack("acme"));
        assert_eq!((lockfile.get("acme"), lockfile.removed("acme")), (Some(&pack("acme")), None));
        for index in 0..=MAX_REMOVED {
            lockfile.insert(pack(&format!("p{index}")));
            lockfile.remove(&format!("p{index}"));
        }
        assert_eq!(lockfile.removed.len(), MAX_REMOVED);
        assert_eq!(lockfile.removed("p0"), None, "the oldest is forgotten first");
    }

    #[tokio::test]
    async fn the_guard_is_never_a_symlink_followed() {
        // Issue "Hardening, round 3", item 13: a dangling symlink at the
        // guard's path made the lock create its target.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE_NAME);
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, guard_path(&path)).unwrap();
        let error = Lockfile::lock(&path).await.unwrap_err();
        assert_eq!(error.path, guard_path(&path).display().to_string());
        assert!(error.problem.contains("symbolic links"), "{}", error.problem);
        assert!(!target.exists());
    }

    #[tokio::test]
    async fn a_second_command_waits_for_the_first_to_release_the_lockfile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE_NAME);
        let first = Lockfile::lock(&path).await.unwrap();
        let second = tokio::spawn({
            let path = path.clone();
            async move { Lockfile::lock(&path).await.map(|_guard| ()) }
        });
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!second.is_finished(), "the second command took the lock while the first held it");
        drop(first);
        second.await.unwrap().unwrap();
        assert!(dir.path().join("prompt-host.lock.guard").exists());
    }
}
