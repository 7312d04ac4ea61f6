//! The compiled-component cache: compiled plugins kept on disk so a restart
//! skips compilation.
//!
//! An entry is keyed by the plugin's SHA-256 and by the engine's
//! compatibility hash (its version and settings), so a plugin compiled by
//! another build or configuration is never loaded. Entries are written whole
//! (to a temporary file, then renamed) into a directory only the host writes,
//! and each starts with the SHA-256 of the artifact that follows: loading a
//! compiled artifact is unsafe (it is machine code), so an entry whose digest
//! does not match is deleted and the plugin compiled again.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of compiled components for one engine.
#[derive(Debug)]
pub struct CompiledCache {
    dir: PathBuf,
    engine_key: String,
}

/// Where a compiled component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Compiled,
}

impl CompiledCache {
    /// Opens (creating it if need be, readable only by this user) the cache
    /// directory for `engine`.
    pub fn open(dir: &Path, engine: &Engine) -> std::io::Result<CompiledCache> {
        std::fs::DirBuilder::new().recursive(true).create(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompiledCache { dir: dir.to_path_buf(), engine_key: format!("{:016x}", hasher.finish()) })
    }

    /// The default cache directory: `$XDG_CACHE_HOME/prompt-host`, else
    /// `~/.cache/prompt-host`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
        Some(base.join("prompt-host"))
    }

    fn entry(&self, plugin_digest: &str) -> PathBuf {
        self.dir.join(format!("{plugin_digest}-{}.cwasm", self.engine_key))
    }

    /// The compiled component for the plugin with this digest, if a sound
    /// entry exists.
    pub fn load(&self, engine: &Engine, plugin_digest: &str) -> Option<Component> {
        let path = self.entry(plugin_digest);
        let bytes = std::fs::read(&path).ok()?;
        let sound = bytes.len() > 32 && Sha256::digest(&bytes[32..]).as_slice() == &bytes[..32];
        if !sound {
            tracing::warn!(entry = %path.display(), "compiled cache entry is corrupt or tampered with: deleting it and compiling again");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        // SAFETY: the entry was written by `store` below, into a directory
        // only this user can write, for an engine with the same compatibility
        // hash, and its digest matches what was written.
        match unsafe { Component::deserialize(engine, &bytes[32..]) } {
            Ok(component) => Some(component),
            Err(error) => {
                tracing::warn!(entry = %path.display(), "compiled cache entry cannot be loaded ({error}): compiling again");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores a compiled component. A failure is logged: the cache only
    /// saves time.
    pub fn store(&self, plugin_digest: &str, component: &Component) {
        if let Err(error) = self.try_store(plugin_digest, component) {
            tracing::warn!(dir = %self.dir.display(), "cannot write to the compiled cache: {error}");
        }
    }

    fn try_store(&self, plugin_digest: &str, component: &Component) -> Result<(), String> {
        let artifact = component.serialize().map_err(|error| error.to_string())?;
        let path = self.entry(plugin_digest);
        let mut file = tempfile::NamedTempFile::new_in(&self.dir).map_err(|error| error.to_string())?;
        file.write_all(&Sha256::digest(&artifact)).map_err(|error| error.to_string())?;
        file.write_all(&artifact).map_err(|error| error.to_string())?;
        file.persist(&path).map_err(|error| error.to_string())?;
        Ok(())
    }
}
