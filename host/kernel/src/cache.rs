//! The compiled-component cache: compiled plugins kept on disk so a restart
//! skips compilation.
//!
//! Loading a compiled artifact runs it as machine code, so the cache trusts
//! nothing it did not write:
//! - entries live in a directory of the host's own (`compiled/` inside the
//!   configured directory), created readable and writable only by its user;
//!   the configured directory itself is never changed;
//! - that directory is checked when the cache opens, and every entry on its
//!   opened handle (not by path, so an entry cannot be swapped between check
//!   and use): owned by the host's user and writable by no one else, or it
//!   is not used. (Should the directory later be replaced, by someone who can
//!   write the configured directory, its entries would fail the same check.)
//! - an entry is keyed by the plugin's SHA-256 and by the engine's
//!   compatibility hash (its version and settings), and holds the plugin's
//!   SHA-256 itself: an entry is used only for the exact bytes it was
//!   compiled from, so copying one pack's entry over another's does nothing;
//! - a SHA-256 over the plugin digest and the artifact detects corruption;
//! - entries are written whole (a temporary file, then a rename), and the
//!   least recently used are evicted past a size cap.
//!
//! On Linux, on a local filesystem, a sound entry is then mapped from that
//! same opened file (through `/proc/self/fd`), not copied: its code pages
//! are the file's, clean and (but on tmpfs) reclaimable, and 1,000 packs do
//! not hold 1,000 private copies of their machine code. A mapped entry is read from its file
//! for as long as its pack is loaded: the checks above run on the bytes read
//! before mapping, and a later write into the file in place (not the
//! temporary file and rename this cache uses) changes what runs, and
//! truncating it crashes the host. Only the host's own user (or root) can do
//! either, and such a process can change what runs anyway. On a network or
//! FUSE filesystem (where a stale handle would crash the host), where `/proc`
//! is not procfs, or where the mapping cannot be made executable (a
//! `noexec` mount), the checked bytes are copied in instead.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The directory of the host's own inside the configured cache directory.
const ENTRIES_DIR: &str = "compiled";

/// How old a temporary file must be before eviction takes it for one a
/// store left behind, rather than one being written.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(600);

/// What an entry ends with, after the artifact: the plugin's SHA-256, a
/// SHA-256 over that digest and the artifact, then the format. The artifact
/// comes first so that the entry can be mapped as it is: wasmtime reads an
/// artifact (an ELF file) by the offsets in its own header, and the trailer
/// after it is never read as code.
const MAGIC: &[u8; 8] = b"phcache3";
const TRAILER_LEN: usize = 32 + 32 + MAGIC.len();
/// In each entry's name, so that a host of an earlier format sharing the
/// directory never reads this one's entries (its eviction may still remove
/// them, which costs a compile; this host's eviction counts and removes
/// theirs).
const FORMAT_IN_NAME: &str = "v3";

/// A directory of compiled components for one engine.
#[derive(Debug)]
pub struct CompiledCache {
    dir: PathBuf,
    engine_key: String,
    max_bytes: u64,
    /// Set when a sound entry could not be mapped (a `noexec` mount, say):
    /// said once, and entries are copied from then on.
    mapping_failed: std::sync::atomic::AtomicBool,
}

/// Where a compiled component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Loaded from a sound entry in the cache.
    Cache,
    /// Compiled from the plugin's bytes: no cache, or no usable entry in it.
    Compiled,
}

/// Why the cache cannot be used at all.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache's directory could not be created, opened or inspected.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The cache's directory is owned by another user, or its group or
    /// others may write it.
    #[error("{path} is not safe to load native code from: {problem}")]
    Unsafe {
        /// The directory refused.
        path: String,
        /// What is wrong with it: its owner or its mode.
        problem: String,
    },
}

impl CompiledCache {
    /// Opens the cache in `dir` (creating it if need be) for `engine`,
    /// holding at most `max_bytes` of entries.
    pub fn open(dir: &Path, engine: &Engine, max_bytes: u64) -> Result<CompiledCache, CacheError> {
        let entries = dir.join(ENTRIES_DIR);
        private_dir_builder().create(&entries).or_else(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(error),
        })?;
        // Opened as a directory, without blocking: a FIFO put there is
        // refused, not waited on for ever.
        let opened = prompt_host_files::open_directory(&entries)
            .map_err(|error| std::io::Error::new(error.kind(), format!("{}: {error}", entries.display())))?;
        trusted(&opened, &entries)?;
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompiledCache {
            dir: entries,
            engine_key: format!("{:016x}", hasher.finish()),
            max_bytes,
            mapping_failed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn entry(&self, plugin_digest: &str) -> PathBuf {
        self.dir.join(format!("{plugin_digest}-{}-{FORMAT_IN_NAME}.cwasm", self.engine_key))
    }

    /// The compiled component for the plugin with this (hex) digest, if a
    /// sound entry for exactly those bytes exists.
    pub fn load(&self, engine: &Engine, plugin_digest: &str) -> Option<Component> {
        let path = self.entry(plugin_digest);
        let (mut file, metadata) = match prompt_host_files::open_regular(&path) {
            Ok(opened) => opened,
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => return None,
            Err(error) => {
                tracing::warn!(entry = %path.display(), "compiled cache entry not used, compiling instead: {error}");
                return None;
            }
        };
        if let Err(error) = trusted(&file, &path) {
            tracing::warn!("compiled cache entry not used, compiling instead: {error}");
            return None;
        }
        // An entry is at most the cache's size cap (a larger one would be
        // evicted anyway): checked on the opened handle before reading, and
        // again by the read, should the file grow meanwhile.
        let mut bytes = Vec::new();
        let read = if metadata.len() > self.max_bytes {
            Err(format!("is {} bytes, over the cache's cap of {} bytes", metadata.len(), self.max_bytes))
        } else {
            bytes.reserve_exact(metadata.len() as usize);
            match (&mut file).take(self.max_bytes.saturating_add(1)).read_to_end(&mut bytes) {
                Ok(_) if bytes.len() as u64 > self.max_bytes => {
                    Err(format!("grew past the cache's cap of {} bytes while read", self.max_bytes))
                }
                Ok(_) => Ok(()),
                Err(error) => Err(format!("cannot be read: {error}")),
            }
        };
        if let Err(problem) = read {
            tracing::warn!(entry = %path.display(), "compiled cache entry {problem}: compiling instead");
            return None;
        }
        let artifact = match check_entry(&bytes, plugin_digest) {
            Ok(artifact) => artifact,
            Err(problem) => {
                tracing::warn!(entry = %path.display(), "compiled cache entry {problem}: deleting it and compiling again");
                let _ = std::fs::remove_file(&path);
                return None;
            }
        };
        // SAFETY: deserializing runs the artifact as native code. It was read
        // from an open file that this user owns and no one else may write, in
        // a directory with the same checks; it was compiled for an engine
        // with the same compatibility hash; and its trailer says it was
        // compiled from exactly the bytes being loaded, with a SHA-256 over
        // that digest and the artifact that matches. Mapped, it is that same
        // open file, which stays unchanged while mapped unless this user
        // writes into it in place (see the module's documentation).
        let mapped = self
            .may_map(&file)
            .then(|| mapped(&file, &metadata))
            .flatten()
            .map(|path_of_opened| unsafe { Component::deserialize_file(engine, path_of_opened) });
        let loaded = match mapped {
            Some(Ok(component)) => Ok(component),
            Some(Err(mapping_error)) => {
                let copied = unsafe { Component::deserialize(engine, artifact) };
                // Copied where mapping failed: it is the mapping that fails
                // here (a `noexec` mount, say), not this entry, so entries are
                // copied from now on. Said once, naming the entry that showed it.
                if copied.is_ok() && !self.mapping_failed.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(entry = %path.display(), "compiled cache entries cannot be mapped here ({mapping_error:#}): copying them instead");
                }
                copied
            }
            None => unsafe { Component::deserialize(engine, artifact) },
        };
        match loaded {
            Ok(component) => {
                // Used: evicted last.
                let _ = file.set_modified(SystemTime::now());
                Some(component)
            }
            Err(error) => {
                tracing::warn!(entry = %path.display(), "compiled cache entry cannot be loaded ({error:#}): deleting it and compiling again");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Whether an opened entry is mapped rather than copied: not once a
    /// mapping failed, and only from a filesystem whose files stay put under
    /// a mapping.
    fn may_map(&self, opened: &File) -> bool {
        !self.mapping_failed.load(std::sync::atomic::Ordering::Relaxed) && local_filesystem(opened)
    }

    /// Stores a compiled component, then evicts the least recently used
    /// entries past the size cap. A failure is logged: the cache only saves
    /// time.
    pub fn store(&self, plugin_digest: &str, component: &Component) {
        if let Err(error) = self.try_store(plugin_digest, component) {
            tracing::warn!(dir = %self.dir.display(), "cannot write to the compiled cache: {error}");
        }
        if let Err(error) = self.evict() {
            tracing::warn!(dir = %self.dir.display(), "cannot evict from the compiled cache: {error}");
        }
    }

    fn try_store(&self, plugin_digest: &str, component: &Component) -> Result<(), String> {
        let digest = decode_hex(plugin_digest).ok_or("the plugin digest is not 64 hex digits")?;
        let artifact = component.serialize().map_err(|error| error.to_string())?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir).map_err(|error| error.to_string())?;
        file.write_all(&artifact).map_err(|error| error.to_string())?;
        file.write_all(&digest).map_err(|error| error.to_string())?;
        file.write_all(&integrity(&digest, &artifact)).map_err(|error| error.to_string())?;
        file.write_all(MAGIC).map_err(|error| error.to_string())?;
        file.persist(self.entry(plugin_digest)).map_err(|error| error.to_string())?;
        Ok(())
    }

    /// Deletes the least recently used entries until the rest fit the cap.
    fn evict(&self) -> std::io::Result<()> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let metadata = entry.metadata()?;
            if !metadata.is_file() {
                continue;
            }
            if entry.path().extension().is_some_and(|ext| ext == "cwasm") {
                entries.push((metadata.modified()?, metadata.len(), entry.path()));
            } else if metadata.modified()?.elapsed().is_ok_and(|age| age > STALE_TEMPORARY) {
                // A temporary file a store left behind (the process died
                // before the rename): it counts against nothing, so remove it.
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            match std::fs::remove_file(&path) {
                // Another load, storing at the same time, evicted it first.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                result => result?,
            }
            tracing::info!(entry = %path.display(), bytes = len, "compiled cache entry evicted to keep the cache under its size cap");
            total -= len;
        }
        Ok(())
    }
}

/// Creates directories readable and writable by this user only.
fn private_dir_builder() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// Refuses an opened file or directory that another user owns, or that its
/// group or others may write.
fn trusted(opened: &File, path: &Path) -> Result<(), CacheError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = opened.metadata()?;
        let user = rustix::process::geteuid().as_raw();
        let unsafe_because = |problem: String| CacheError::Unsafe { path: path.display().to_string(), problem };
        if metadata.uid() != user {
            return Err(unsafe_because(format!("it is owned by user {}, not by this user ({user})", metadata.uid())));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(unsafe_because(format!("its group or others may write it (mode {:o})", metadata.mode() & 0o7777)));
        }
    }
    #[cfg(not(unix))]
    let _ = (opened, path);
    Ok(())
}

/// A path that opens the very file `opened` is (its inode, whatever its
/// directory entry now names), for wasmtime to map: Linux's
/// `/proc/self/fd/N`, when `/proc` is procfs (in a chroot it could be a plain
/// directory whose names anyone able to write it could change before
/// wasmtime's open) and the path opens a file with `opened`'s device and
/// inode. Both checks are by path, so they narrow that window rather than
/// close it: in a chroot whose `/` others may write, `/proc` itself could
/// still be replaced in between.
fn mapped(opened: &File, opened_metadata: &std::fs::Metadata) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        const PROC_SUPER_MAGIC: u32 = 0x9FA0;
        let procfs = rustix::fs::statfs("/proc/self/fd").is_ok_and(|stat| filesystem_type(&stat) == PROC_SUPER_MAGIC);
        if !procfs {
            return None;
        }
        let path = PathBuf::from(format!("/proc/self/fd/{}", opened.as_raw_fd()));
        let named = std::fs::metadata(&path).ok()?;
        ((named.dev(), named.ino()) == (opened_metadata.dev(), opened_metadata.ino())).then_some(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (opened, opened_metadata);
        None
    }
}

/// Whether `opened` is on a local filesystem that Linux keeps a mapped file of
/// as it is: ext4, XFS, Btrfs, tmpfs, overlayfs (containers), ZFS or F2FS.
/// Anything else (NFS, SMB, FUSE, unknown) is copied from: there a handle
/// can go stale under a mapping, and touching its pages would crash the host.
fn local_filesystem(opened: &File) -> bool {
    #[cfg(target_os = "linux")]
    {
        const LOCAL: [u32; 7] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0x794C_7630, 0x2FC1_2FC1, 0xF2F5_2010];
        rustix::fs::fstatfs(opened).is_ok_and(|stat| LOCAL.contains(&filesystem_type(&stat)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = opened;
        false
    }
}

/// A filesystem's magic number, from `statfs`: its low 32 bits (`f_type` is
/// signed, and on 32-bit targets `as u64` would sign-extend magic numbers
/// with the top bit set, such as Btrfs's).
#[cfg(target_os = "linux")]
fn filesystem_type(stat: &rustix::fs::StatFs) -> u32 {
    stat.f_type as u32
}

/// The artifact of an entry for the plugin with `plugin_digest`, or why the
/// entry cannot be used.
fn check_entry<'a>(bytes: &'a [u8], plugin_digest: &str) -> Result<&'a [u8], &'static str> {
    if bytes.len() <= TRAILER_LEN || !bytes.ends_with(MAGIC) {
        return Err("is not in this host's format");
    }
    let (artifact, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
    let (digest, check) = (&trailer[..32], &trailer[32..64]);
    if integrity(digest, artifact).as_slice() != check {
        return Err("is corrupt or tampered with");
    }
    if decode_hex(plugin_digest).as_ref().map(|expected| expected.as_slice()) != Some(digest) {
        return Err("was compiled from other bytes than the plugin's");
    }
    Ok(artifact)
}

fn integrity(plugin_digest: &[u8], artifact: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(plugin_digest);
    hasher.update(artifact);
    hasher.finalize().into()
}

fn decode_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(digest: &[u8; 32], artifact: &[u8]) -> Vec<u8> {
        [artifact, digest, &integrity(digest, artifact), MAGIC.as_slice()].concat()
    }

    #[test]
    fn an_entry_is_used_only_for_the_bytes_it_was_compiled_from() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let hex = |digest: &[u8; 32]| digest.iter().map(|byte| format!("{byte:02x}")).collect::<String>();
        let bytes = entry(&a, b"artifact");
        assert_eq!(check_entry(&bytes, &hex(&a)), Ok(b"artifact".as_slice()));
        assert_eq!(check_entry(&bytes, &hex(&b)), Err("was compiled from other bytes than the plugin's"));
        let mut flipped = bytes.clone();
        flipped[0] ^= 1;
        assert_eq!(check_entry(&flipped, &hex(&a)), Err("is corrupt or tampered with"));
        // The format before this one: the magic, the digest, the check, then the artifact.
        let earlier = [b"phcache2".as_slice(), &a, &integrity(&a, b"artifact"), b"artifact"].concat();
        assert_eq!(check_entry(&earlier, &hex(&a)), Err("is not in this host's format"));
        // A trailer with nothing before it.
        assert_eq!(check_entry(&entry(&a, b"")[..TRAILER_LEN], &hex(&a)), Err("is not in this host's format"));
    }

    #[test]
    fn an_entry_over_the_cap_is_not_read_and_an_earlier_formats_entry_is_neither_read_nor_deleted() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(dir.path(), &engine, 1024).unwrap();
        let digest = "cd".repeat(32);
        let component = Component::new(&engine, r#"(component)"#).unwrap();
        let artifact = component.serialize().unwrap();
        let sound = entry(&[0xcd; 32], &artifact);
        assert!(sound.len() > 1024, "the fixture must be over the cap: {} bytes", sound.len());
        write_private(&cache.entry(&digest), &sound);
        assert!(cache.load(&engine, &digest).is_none(), "an entry over the cap was loaded");
        assert_eq!(std::fs::read(cache.entry(&digest)).unwrap(), sound, "an entry over the cap is left as it is");

        // An entry named as the format before this one named them (no format
        // in the name): this host never opens it, and a load leaves it be.
        let earlier = dir.path().join(ENTRIES_DIR).join(format!("{digest}-{}.cwasm", cache.engine_key));
        write_private(&earlier, b"an earlier format");
        std::fs::remove_file(cache.entry(&digest)).unwrap();
        assert!(cache.load(&engine, &digest).is_none());
        assert_eq!(std::fs::read(&earlier).unwrap(), b"an earlier format");
    }

    /// Writes a file as the cache writes its entries: readable and
    /// writable by this user only (whatever the umask), so that the owner and
    /// mode checks pass and what a test checks is reached.
    fn write_private(path: &Path, bytes: &[u8]) {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(path).unwrap().write_all(bytes).unwrap();
    }

    /// Whether the test's temporary directory is where entries are mapped
    /// from (a local filesystem, mounted without `noexec`); said when not,
    /// since the mapping tests then check nothing.
    #[cfg(target_os = "linux")]
    fn maps_entries_in(dir: &Path) -> bool {
        let opened = File::open(dir).unwrap();
        let executable = rustix::fs::fstatvfs(&opened).is_ok_and(|stat| !stat.f_flag.contains(rustix::fs::StatVfsMountFlags::NOEXEC));
        let mapped_from = local_filesystem(&opened) && executable;
        if !mapped_from {
            eprintln!("skipped: {} is not on a filesystem entries are mapped from", dir.display());
        }
        mapped_from
    }

    #[cfg(target_os = "linux")]
    fn mapped_lines(path: &Path) -> Vec<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let path = path.to_str().unwrap();
        maps.lines().filter(|line| line.contains(path)).map(|line| line.rsplit_once(' ').unwrap().1.to_string()).collect()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_loaded_entry_is_mapped_from_its_file_not_copied_and_outlives_its_eviction() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        if !maps_entries_in(dir.path()) {
            return;
        }
        let cache = CompiledCache::open(dir.path(), &engine, 1 << 20).unwrap();
        let component = Component::new(&engine, r#"(component (core module (func (export "f"))))"#).unwrap();
        let digest = "ab".repeat(32);
        cache.store(&digest, &component);
        let entry = cache.entry(&digest);
        assert!(mapped_lines(&entry).is_empty());

        let loaded = cache.load(&engine, &digest).expect("a sound entry loads");
        assert!(!mapped_lines(&entry).is_empty(), "the entry is not mapped: {:?}", std::fs::read_to_string("/proc/self/maps"));
        assert!(mapped_lines(&entry).iter().all(|name| name == entry.to_str().unwrap()));

        // Evicted while loaded: the mapping keeps the file's pages.
        std::fs::remove_file(&entry).unwrap();
        let after_eviction = mapped_lines(&entry);
        assert!(!after_eviction.is_empty() && after_eviction.iter().all(|name| name == "(deleted)"), "{after_eviction:?}");
        drop(loaded);
        assert!(mapped_lines(&entry).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_is_mapped_is_the_file_that_was_opened_and_checked_even_if_its_name_now_names_another() {
        let dir = tempfile::tempdir().unwrap();
        let (checked, other) = (dir.path().join("entry"), dir.path().join("other"));
        std::fs::write(&checked, b"checked").unwrap();
        std::fs::write(&other, b"swapped in").unwrap();
        let opened = File::open(&checked).unwrap();
        std::fs::rename(&other, &checked).unwrap();
        assert_eq!(std::fs::read(&checked).unwrap(), b"swapped in");
        assert_eq!(std::fs::read(mapped(&opened, &opened.metadata().unwrap()).unwrap()).unwrap(), b"checked");
    }
}
