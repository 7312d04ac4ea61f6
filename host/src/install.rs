//! Packs from registries, installed into a plugin directory: the `add`,
//! `update`, `remove`, `list` and `publish` commands.
//!
//! Installing pulls the pack (every byte bounded, every blob checked against
//! its digest), verifies its signatures against the configuration's policy,
//! keeps it and its provenance in the pack store, records it in the lockfile,
//! and only then places the component in the plugin directory, whole (a
//! rename), where a running server's watcher loads it. Whatever fails on the
//! way leaves the installed pack, the lockfile and the directory as they were.
//! A command that changes the lockfile holds it ([`Lockfile::lock`]) from
//! start to end, so two commands (or a command and `serve` installing its
//! sources) never interleave.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::ServeConfig;
use crate::loader::{self, PluginSource};
use crate::startup;
use prompt_host_trust::distribution::{DistributionError, PackReference, Progress, PulledPack, RegistryClient};
use prompt_host_trust::lockfile::{LockedPack, Lockfile, LockfileError, LockfileGuard, is_plugin_name};
use prompt_host_trust::pack_store::{self, PackStore};
use prompt_host_trust::signature::{self, Provenance, SignatureError};

/// Where the commands work: the configuration, and the files beside it.
pub struct Installation<'a> {
    pub config: &'a ServeConfig,
    /// The plugin directory packs are installed into.
    pub plugins_dir: PathBuf,
    /// `prompt-host.lock`, beside the config file.
    pub lockfile: PathBuf,
    pub store: PackStore,
}

/// Why a command failed. Each names the pack and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("the config file names no plugin directory ([server] plugins): packs are installed there")]
    NoPluginDirectory,
    #[error("packs are installed only with a config file (--config FILE): the lockfile and the pack store are beside it")]
    NoStore,
    #[error(transparent)]
    Registry(#[from] DistributionError),
    #[error("{reference}: signature refused: {error}{}", skipped_note(.skipped))]
    Signature { reference: String, error: SignatureError, skipped: Vec<String> },
    #[error(transparent)]
    Lockfile(#[from] LockfileError),
    #[error(
        "{reference} now names {digest}, which {name} was updated past (it has {installed}): a registry may be \
         rolling it back; `{retry}` installs it"
    )]
    MovedPast { name: String, reference: String, digest: String, installed: String, retry: Retry },
    #[error(
        "{reference} now names {digest}, version {version:?}, older than the installed version {installed:?}: \
         a registry may be rolling it back; `{retry}` installs it"
    )]
    OlderVersion { name: String, reference: String, digest: String, version: String, installed: String, retry: Retry },
    #[error(
        "{reference} now names {digest}, which {says}, so it cannot be shown not to be older than the installed version \
         {installed:?}: a registry may be rolling it back; `{retry}` installs it"
    )]
    UnorderedVersion { name: String, reference: String, digest: String, says: String, installed: String, retry: Retry },
    #[error("{name:?} is not a valid plugin name: use {} (choose one with --name)", prompt_host_trust::lockfile::PLUGIN_NAME_RULE)]
    InvalidName { name: String },
    #[error(
        "a plugin named {name:?} is already installed ({path}): `prompt-host update {name} --to REFERENCE` moves it \
         to another reference, in one step, with the same checks as add"
    )]
    AlreadyInstalled { name: String, path: String },
    #[error(
        "a plugin file {path} is there, not installed from a registry (copied in by hand): \
         `prompt-host add {reference} --name {name} --replace` replaces it with the pack, in one rename \
         (a running server swaps it, never serving neither)"
    )]
    NotFromRegistry { name: String, path: String, reference: String },
    #[error("--to names the pack to move one plugin to: name it (`prompt-host update NAME --to {reference}`)")]
    ToWithoutName { reference: String },
    #[error(
        "{name} is installed from the config's source ([plugins.{name}] source = {configured:?}), which `serve` \
         would put back: change the source there instead of moving it with --to"
    )]
    PinnedBySource { name: String, configured: String },
    #[error(
        "{reference} is the pack of SHA-256 {actual}, but the config pins {name} to {pinned} ([plugins.{name}] sha256), \
         so serve would refuse it: change the pin there first"
    )]
    PinnedByDigest { name: String, reference: String, pinned: String, actual: String },
    #[error("no pack named {name:?} is installed from a registry (prompt-host.lock has {known})")]
    NotInstalled { name: String, known: String },
    #[error("cannot write {path}: {error}")]
    Write { path: String, error: String },
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: String },
    #[error("{key}: {error}")]
    Signing { key: String, error: String },
    #[error(
        "{reference} names a tag, and a tag may have moved since it was published: sign the digest \
         `prompt-host publish` printed (oci://REGISTRY/REPOSITORY@sha256:...), or pass --allow-tag to sign \
         whatever the tag names now"
    )]
    SignTag { reference: String },
    #[error(
        "{name}: the pack store's copy {path} is damaged (sha256 {actual}, prompt-host.lock records {locked}): \
         not served; `prompt-host update {name}` fetches it again"
    )]
    StoreDamaged { name: String, path: String, actual: String, locked: String },
}

/// What `serve` did with a pack the config names by source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Sourced {
    /// Installed already, and its plugin file is the one installed.
    Served(LockedPack),
    /// Its plugin file had changed or gone: put back from the pack store.
    Restored(LockedPack),
    /// Pulled from its registry and installed.
    Installed(LockedPack),
}

/// What `update` did to one pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Updated {
    /// Its reference resolves to the installed digest, and the file on disk
    /// is the one installed.
    UpToDate(LockedPack),
    /// Its reference resolves to a new digest, now installed.
    Replaced { pack: LockedPack, previous: String },
    /// Same digest, but the file on disk had changed or gone: put back.
    Restored(LockedPack),
    /// Moved to another reference (`update NAME --to`) that names the
    /// installed digest: only the lockfile's reference changed.
    Moved { pack: LockedPack, previous: String },
}

impl<'a> Installation<'a> {
    /// The installation a config file describes.
    pub fn new(config: &'a ServeConfig) -> Result<Installation<'a>, InstallError> {
        let plugins_dir = config.plugins_dir.clone().ok_or(InstallError::NoPluginDirectory)?;
        let store = config.pack_store.clone().ok_or(InstallError::NoStore)?;
        let lockfile = config.lockfile.clone().ok_or(InstallError::NoStore)?;
        Ok(Installation { config, plugins_dir, lockfile, store: PackStore::new(store) })
    }

    fn client(&self) -> Result<RegistryClient, InstallError> {
        Ok(RegistryClient::new(self.config.registry.clone())?)
    }

    fn plugin_file(&self, name: &str) -> PathBuf {
        self.plugins_dir.join(format!("{name}.wasm"))
    }

    /// `prompt-host add`: installs the pack at `reference` as plugin `name`
    /// (by default the repository's last segment). A plugin file of that
    /// name not installed from a registry is refused, or, with `replace`,
    /// replaced by the pack in one rename.
    pub async fn add(
        &self,
        reference: &str,
        name: Option<&str>,
        allow_downgrade: bool,
        replace: bool,
        progress: Progress<'_>,
    ) -> Result<LockedPack, InstallError> {
        let reference = PackReference::parse(reference)?;
        let name = match name {
            Some(name) => name.to_string(),
            None => reference.repository().rsplit('/').next().unwrap_or_default().to_string(),
        };
        check_name(&name)?;
        let _held = self.hold().await?;
        let lockfile = Lockfile::read(&self.lockfile)?;
        let file = self.plugin_file(&name);
        if lockfile.get(&name).is_some() {
            return Err(InstallError::AlreadyInstalled { name, path: file.display().to_string() });
        }
        let placing = match file.symlink_metadata() {
            Ok(_) if replace => Placing::Replace,
            Ok(_) => {
                let reference = reference.to_string();
                return Err(InstallError::NotFromRegistry { name, path: file.display().to_string(), reference });
            }
            Err(_) => Placing::New,
        };
        // A name removed before: checked against what it knew (its digests
        // and version), as an update is, so that remove then add is no way
        // around the rollback checks.
        if let Some(gone) = lockfile.removed(&name) {
            return self.install_after_removal(&name, &reference, gone, allow_downgrade, placing, progress).await;
        }
        self.install(&name, &reference, placing, progress).await
    }

    /// Installs what `reference` names as plugin `name`, removed before as
    /// `gone`: checked against what it knew (its digests and version), as
    /// an update is, so that remove then add (or a config's `source`) is no
    /// way around the rollback checks.
    async fn install_after_removal(
        &self,
        name: &str,
        reference: &PackReference,
        gone: &LockedPack,
        allow_downgrade: bool,
        placing: Placing,
        progress: Progress<'_>,
    ) -> Result<LockedPack, InstallError> {
        let client = self.client()?;
        let digest = client.resolve(reference).await?;
        let replacing = Replacing { installed: gone, allow_downgrade, to: Some(reference), adding: true };
        if !allow_downgrade && gone.previous_digests.contains(&digest) {
            return Err(InstallError::MovedPast {
                name: name.to_string(),
                reference: reference.to_string(),
                digest,
                installed: gone.digest.clone(),
                retry: replacing.retry(),
            });
        }
        let mut fetched = self.fetch_verified(&client, name, reference, &digest, Some(replacing), progress).await?;
        fetched.pack = fetched.pack.replacing(gone);
        self.record_and_place(&fetched, placing)?;
        Ok(fetched.pack)
    }

    /// Holds the lockfile for the rest of a command.
    async fn hold(&self) -> Result<LockfileGuard, InstallError> {
        Ok(Lockfile::lock(&self.lockfile).await?)
    }

    /// Pulls and verifies the pack `reference` names now, records it as
    /// plugin `name` and places it.
    async fn install(
        &self,
        name: &str,
        reference: &PackReference,
        placing: Placing,
        progress: Progress<'_>,
    ) -> Result<LockedPack, InstallError> {
        let client = self.client()?;
        let digest = client.resolve(reference).await?;
        let fetched = self.fetch_verified(&client, name, reference, &digest, None, progress).await?;
        self.record_and_place(&fetched, placing)?;
        Ok(fetched.pack)
    }

    /// Keeps the fetched pack and its provenance in the store, records it in
    /// the lockfile, then puts its component in the plugin directory: a
    /// server that loads it finds it recorded. If it cannot be placed, the
    /// lockfile's entry is put back as it was, and the store's: a failed
    /// install leaves nothing behind.
    fn record_and_place(&self, fetched: &Fetched, placing: Placing) -> Result<(), InstallError> {
        let pack = &fetched.pack;
        let store_error =
            |error: std::io::Error| InstallError::Write { path: self.store.dir().display().to_string(), error: error.to_string() };
        let put = self.store.put(&pack.name, &pack.sha256, &fetched.wasm, &fetched.provenance).map_err(store_error)?;
        let Err(error) = self.lock_and_place(pack, placing) else { return Ok(()) };
        match self.store.undo(put) {
            Ok(()) => Err(error),
            Err(also) => Err(InstallError::Write { path: self.store.dir().display().to_string(), error: format!("{error}; and {also}") }),
        }
    }

    /// Records `pack` in the lockfile, then places it; if it cannot be
    /// placed, puts the lockfile's entry back as it was.
    fn lock_and_place(&self, pack: &LockedPack, placing: Placing) -> Result<(), InstallError> {
        let mut lockfile = Lockfile::read(&self.lockfile)?;
        let previous = lockfile.get(&pack.name).cloned();
        lockfile.insert(pack.clone());
        lockfile.write(&self.lockfile)?;
        let Err(error) = self.place(pack, placing) else { return Ok(()) };
        match previous {
            Some(previous) => lockfile.insert(previous),
            None => _ = lockfile.remove(&pack.name),
        }
        match lockfile.write(&self.lockfile) {
            Ok(()) => Err(error),
            Err(also) => {
                Err(InstallError::Write { path: self.plugin_file(&pack.name).display().to_string(), error: format!("{error}; and {also}") })
            }
        }
    }

    /// `prompt-host update`: resolves each installed pack's reference again
    /// (or only `name`'s) and installs what changed. Each pack's outcome is
    /// its own: one that fails keeps what is installed.
    /// Never to an older pack unless `allow_downgrade`: not to a digest this
    /// install had before, nor to a pack whose version (`describe-pack`) is
    /// lower than the installed one's. Then the store keeps only what the
    /// lockfile names.
    ///
    /// With `to`, the one pack `name` moves to that reference (a new tag, a
    /// digest, another repository), with the checks `add` makes, and its
    /// file is replaced in one rename: a running server never serves
    /// without it.
    pub async fn update(
        &self,
        name: Option<&str>,
        to: Option<&str>,
        allow_downgrade: bool,
        progress: Progress<'_>,
    ) -> Result<Vec<(String, Result<Updated, InstallError>)>, InstallError> {
        let to = match (to, name) {
            (Some(to), None) => return Err(InstallError::ToWithoutName { reference: to.to_string() }),
            (Some(to), Some(name)) => {
                let to = PackReference::parse(to)?;
                if let Some(source) =
                    self.config.plugins.get(name).and_then(|plugin| plugin.source.clone()).filter(|source| *source != to.to_string())
                {
                    return Err(InstallError::PinnedBySource { name: name.to_string(), configured: source });
                }
                Some(to)
            }
            (None, _) => None,
        };
        let _held = self.hold().await?;
        let lockfile = Lockfile::read(&self.lockfile)?;
        let packs: Vec<LockedPack> = match name {
            Some(name) => vec![lockfile.get(name).cloned().ok_or_else(|| not_installed(name, &lockfile))?],
            None => lockfile.packs.clone(),
        };
        let client = self.client()?;
        let mut outcomes = Vec::new();
        for locked in packs {
            let outcome = self.update_one(&client, &locked, to.as_ref(), allow_downgrade, progress).await;
            outcomes.push((locked.name.clone(), outcome));
        }
        self.collect_garbage(&lockfile);
        Ok(outcomes)
    }

    async fn update_one(
        &self,
        client: &RegistryClient,
        locked: &LockedPack,
        to: Option<&PackReference>,
        allow_downgrade: bool,
        progress: Progress<'_>,
    ) -> Result<Updated, InstallError> {
        let reference = match to {
            Some(to) => to.clone(),
            None => PackReference::parse(&locked.reference)?,
        };
        let moved = reference.to_string() != locked.reference;
        let digest = client.resolve(&reference).await?;
        let on_disk = self.file_state(locked).await;
        if digest == locked.digest && on_disk == FileState::Agrees && !moved {
            return Ok(Updated::UpToDate(locked.clone()));
        }
        if digest == locked.digest {
            // Verified again: a signature binds the repository, and a
            // moved reference may name another one.
            let mut fetched = self.fetch_verified(client, &locked.name, &reference, &digest, None, progress).await?;
            fetched.pack.previous_digests = locked.previous_digests.clone();
            fetched.pack.version = locked.version.clone();
            self.record_and_place(&fetched, Placing::Replace)?;
            // Moved (the file put back too, if it had changed), or not moved
            // and put back.
            return Ok(if moved {
                Updated::Moved { pack: fetched.pack, previous: locked.reference.clone() }
            } else {
                Updated::Restored(fetched.pack)
            });
        }
        let replacing = Replacing { installed: locked, allow_downgrade, to, adding: false };
        if !allow_downgrade && locked.previous_digests.contains(&digest) {
            return Err(InstallError::MovedPast {
                name: locked.name.clone(),
                reference: reference.to_string(),
                digest,
                installed: locked.digest.clone(),
                retry: replacing.retry(),
            });
        }
        let mut fetched = self.fetch_verified(client, &locked.name, &reference, &digest, Some(replacing), progress).await?;
        fetched.pack = fetched.pack.replacing(locked);
        self.record_and_place(&fetched, Placing::Replace)?;
        Ok(Updated::Replaced { pack: fetched.pack, previous: locked.digest.clone() })
    }

    /// Removes from the pack store what the lockfile no longer names (an
    /// earlier version of a pack, a removed pack, another plugin's record),
    /// so that nothing but an install carries provenance. A failure is only
    /// logged: the command's work is done.
    fn collect_garbage(&self, before: &Lockfile) {
        let installs = |lockfile: &Lockfile| lockfile.packs.iter().map(|pack| (pack.name.clone(), pack.sha256.clone())).collect();
        let kept = match Lockfile::read(&self.lockfile) {
            Ok(lockfile) => installs(&lockfile),
            Err(error) => return tracing::warn!("the pack store was not cleaned: {error}"),
        };
        if let Err(error) = self.store.release(&installs(before), &kept) {
            tracing::warn!("the pack store {} was not cleaned: {error}", self.store.dir().display());
        }
    }

    /// For `serve`: installs each pack the config names by source
    /// (`[plugins.NAME] source = "oci://..."`) that is not installed yet, or
    /// whose source changed, and puts back a plugin file that changed or went.
    /// A pack the lockfile records comes from the pack store, so a restart
    /// needs no registry; `update` resolves tags again. Each pack's outcome is
    /// its own.
    pub async fn install_sources(&self) -> Vec<(String, Result<Sourced, InstallError>)> {
        let mut outcomes = Vec::new();
        let _held = match self.hold().await {
            Ok(held) => held,
            Err(error) => {
                let message = error.to_string();
                return self
                    .sources()
                    .map(|(name, _)| {
                        (name.clone(), Err(InstallError::Read { path: self.lockfile.display().to_string(), error: message.clone() }))
                    })
                    .collect();
            }
        };
        for (name, source) in self.sources() {
            let outcome = self.install_source(name, source).await;
            outcomes.push((name.clone(), outcome));
        }
        outcomes
    }

    /// The packs the config names by source.
    fn sources(&self) -> impl Iterator<Item = (&String, &String)> {
        self.config.plugins.iter().filter_map(|(name, plugin)| Some((name, plugin.source.as_ref()?)))
    }

    async fn install_source(&self, name: &str, source: &str) -> Result<Sourced, InstallError> {
        check_name(name)?;
        let lockfile = Lockfile::read(&self.lockfile)?;
        // Compared as the lockfile writes references: `oci://REG/REPO` is
        // `oci://REG/REPO:latest`, not a new source at every start.
        let reference = PackReference::parse(source)?;
        match lockfile.get(name) {
            Some(locked) if locked.reference == reference.to_string() => {
                if self.file_state(locked).await == FileState::Agrees {
                    return Ok(Sourced::Served(locked.clone()));
                }
                let stored = self.store.wasm_path(&locked.sha256);
                let bytes = read_file(&stored, prompt_host_files::MAX_PACK_FILE_BYTES)?;
                let actual = loader::digest(&bytes);
                if actual != locked.sha256 {
                    return Err(InstallError::StoreDamaged {
                        name: name.to_string(),
                        path: stored.display().to_string(),
                        actual,
                        locked: locked.sha256.clone(),
                    });
                }
                self.place(locked, Placing::Replace)?;
                Ok(Sourced::Restored(locked.clone()))
            }
            // A new source: moved as `update NAME --to` moves it, with the
            // same checks (never to a digest it was updated past, nor to an
            // older version, without `update --allow-downgrade`); the one
            // installed stays until the new one is in.
            Some(earlier) => {
                let earlier = earlier.clone();
                let client = self.client()?;
                let pack = match self.update_one(&client, &earlier, Some(&reference), false, &|_, _| {}).await? {
                    Updated::UpToDate(pack) | Updated::Restored(pack) => return Ok(Sourced::Restored(pack)),
                    Updated::Replaced { pack, .. } | Updated::Moved { pack, .. } => pack,
                };
                self.collect_garbage(&lockfile);
                Ok(Sourced::Installed(pack))
            }
            // Removed before: checked against what it knew, as `add` is.
            None if lockfile.removed(name).is_some() => {
                let gone = lockfile.removed(name).expect("checked").clone();
                let pack = self.install_after_removal(name, &reference, &gone, false, Placing::Replace, &|_, _| {}).await?;
                self.collect_garbage(&lockfile);
                Ok(Sourced::Installed(pack))
            }
            // None installed yet.
            None => {
                let client = self.client()?;
                let digest = client.resolve(&reference).await?;
                let fetched = self.fetch_verified(&client, name, &reference, &digest, None, &|_, _| {}).await?;
                self.record_and_place(&fetched, Placing::Replace)?;
                Ok(Sourced::Installed(fetched.pack))
            }
        }
    }

    /// `prompt-host remove`: takes the pack out of the plugin directory (a
    /// running server unloads it) and out of the lockfile.
    pub async fn remove(&self, name: &str) -> Result<LockedPack, InstallError> {
        let _held = self.hold().await?;
        let mut lockfile = Lockfile::read(&self.lockfile)?;
        let before = lockfile.clone();
        let locked = lockfile.get(name).cloned().ok_or_else(|| not_installed(name, &lockfile))?;
        let file = self.plugin_file(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(InstallError::Write { path: file.display().to_string(), error: error.to_string() }),
        }
        lockfile.remove(name);
        lockfile.write(&self.lockfile)?;
        self.collect_garbage(&before);
        Ok(locked)
    }

    /// `prompt-host list`: every pack in the lockfile, and every other
    /// plugin file in the directory, with what is on disk.
    pub async fn list(&self) -> Result<Vec<Listed>, InstallError> {
        let lockfile = Lockfile::read(&self.lockfile)?;
        let mut listed = Vec::new();
        for locked in &lockfile.packs {
            let state = self.file_state(locked).await;
            let file = self.plugin_file(&locked.name);
            let (prompts, granted) = if state == FileState::Missing { (None, Vec::new()) } else { self.served(&file).await };
            let tag = PackReference::parse(&locked.reference).ok().and_then(|reference| reference.tag().map(str::to_string));
            listed.push(Listed {
                name: locked.name.clone(),
                source: locked.reference.clone(),
                tag,
                digest: Some(locked.digest.clone()),
                sha256: Some(locked.sha256.clone()),
                signer: Some(locked.signer.clone()),
                prompts,
                granted,
                state,
            });
        }
        let files = loader::plugin_files(&self.plugins_dir)
            .map_err(|error| InstallError::Read { path: self.plugins_dir.display().to_string(), error: error.to_string() })?;
        for file in files {
            let name = loader::plugin_id(&file);
            if lockfile.get(&name).is_some() {
                continue;
            }
            let (prompts, granted) = self.served(&file).await;
            listed.push(Listed {
                name,
                source: file.display().to_string(),
                tag: None,
                digest: None,
                sha256: prompt_host_files::read(&file, self.config.registry.max_pack_bytes).ok().map(|bytes| loader::digest(&bytes)),
                signer: None,
                prompts,
                granted,
                state: FileState::NotLocked,
            });
        }
        Ok(listed)
    }

    /// Pulls the pack at `digest` and checks its signatures against the
    /// policy for plugin `name` (the rule of [`signature::accept`]) and, when
    /// it replaces an installed pack, that it is not an older version (unless
    /// a downgrade is allowed). Nothing is written yet.
    async fn fetch_verified(
        &self,
        client: &RegistryClient,
        name: &str,
        reference: &PackReference,
        digest: &str,
        replacing: Option<Replacing<'_>>,
        progress: Progress<'_>,
    ) -> Result<Fetched, InstallError> {
        let pulled: PulledPack = client.pull(reference, digest, progress).await?;
        let policy = self.config.plugin_settings(name).signatures;
        let repository = self.config.registry.mirrors.signed_repository(reference);
        for skipped in &pulled.skipped {
            // What a registry sent: a Debug field, escaped.
            tracing::warn!(plugin = name.escape_debug().to_string(), skipped = ?skipped, "not a signature, skipped");
        }
        let accepted =
            signature::accept(&policy, [signature::verify(&pulled.manifest_digest, &repository, &pulled.signatures, &policy)]).map_err(
                |error| InstallError::Signature { reference: pulled.reference.to_string(), error, skipped: pulled.skipped.clone() },
            )?;
        for ignored in &accepted.ignored {
            tracing::warn!(
                "{}: a signature that does not verify counts as none (signatures are not required), installed as unsigned: {ignored}",
                pulled.reference
            );
        }
        let sha256 = loader::digest(&pulled.wasm);
        // A pack the config pins by SHA-256 would not be served: refused
        // here, before anything is placed.
        if let Some(pinned) = self.config.plugins.get(name).and_then(|plugin| plugin.sha256.as_ref())
            && !pinned.eq_ignore_ascii_case(&sha256)
        {
            return Err(InstallError::PinnedByDigest {
                name: name.to_string(),
                reference: reference.to_string(),
                pinned: pinned.clone(),
                actual: sha256,
            });
        }
        // Recorded at every install (`add` too), so that the next one is
        // checked against it.
        let mut version = self.pack_version(name, &pulled.wasm).await;
        if let Some(replacing @ Replacing { installed, allow_downgrade, .. }) = replacing {
            let installed_version = self.installed_version(installed).await;
            if !allow_downgrade && let Some(old) = &installed_version {
                let refused = |says: String| InstallError::UnorderedVersion {
                    name: name.to_string(),
                    reference: reference.to_string(),
                    digest: digest.to_string(),
                    says,
                    installed: old.clone(),
                    retry: replacing.retry(),
                };
                match version_order(version.as_deref(), old) {
                    VersionOrder::NotOlder => {}
                    VersionOrder::Older => {
                        return Err(InstallError::OlderVersion {
                            name: name.to_string(),
                            reference: reference.to_string(),
                            digest: digest.to_string(),
                            version: version.clone().unwrap_or_default(),
                            installed: old.clone(),
                            retry: replacing.retry(),
                        });
                    }
                    VersionOrder::Unsaid => return Err(refused("says no version (a WIT 0.1 pack has no describe-pack)".to_string())),
                    VersionOrder::Unordered => {
                        return Err(refused(format!(
                            "says version {:?}, which is not a semantic version",
                            version.clone().unwrap_or_default()
                        )));
                    }
                }
            }
            // A pack that says no version does not erase what the lockfile
            // knew: the next install is checked against that.
            if version.is_none() {
                version = installed_version;
            }
        }
        use base64::Engine as _;
        let provenance = Provenance {
            reference: pulled.reference.to_string(),
            manifest_digest: pulled.manifest_digest.clone(),
            manifest: base64::engine::general_purpose::STANDARD.encode(&pulled.manifest),
            signatures: pulled.signatures.clone(),
        };
        let pack = LockedPack {
            name: name.to_string(),
            reference: reference.to_string(),
            digest: pulled.manifest_digest,
            sha256,
            size: pulled.wasm.len() as u64,
            signer: accepted.verified.map_or_else(|| "unsigned".to_string(), |verified| verified.signer),
            version,
            previous_digests: Vec::new(),
        };
        Ok(Fetched { pack, wasm: pulled.wasm, provenance })
    }

    /// The version of the installed pack: as the lockfile records it, else
    /// as its copy in the store says.
    async fn installed_version(&self, installed: &LockedPack) -> Option<String> {
        if let Some(version) = &installed.version {
            return Some(version.clone());
        }
        // Read as every file is (bounded, a FIFO or device refused at once).
        let bytes = prompt_host_files::read(&self.store.wasm_path(&installed.sha256), prompt_host_files::MAX_PACK_FILE_BYTES).ok()?;
        if loader::digest(&bytes) != installed.sha256 {
            return None;
        }
        self.pack_version(&installed.name, &bytes).await
    }

    /// The version the pack in `bytes` says it is (`describe-pack`, WIT
    /// 0.2), loaded as plugin `name` under its limits; `None` for a 0.1 pack
    /// or one that does not load (the server refuses that one anyway). The
    /// bytes were verified already, so no signature is checked again here.
    async fn pack_version(&self, name: &str, bytes: &[u8]) -> Option<String> {
        let source =
            PluginSource { id: name.to_string(), origin: format!("the pack pulled for {name}"), bytes: bytes.to_vec(), bundle: None };
        let settings = loader::PluginSettings {
            signatures: signature::SignaturePolicy::default(),
            pinned_sha256: None,
            require_pinned: false,
            pack_store: None,
            lockfile: None,
            ..self.config.plugin_settings(name)
        };
        let loader = startup::loader_for_one(&source, &settings, self.config).ok()?;
        let plugin = loader.load(source, settings).await.ok()?;
        plugin.info().map(|info| info.version.clone())
    }

    /// Puts the stored component in the plugin directory, whole.
    fn place(&self, pack: &LockedPack, placing: Placing) -> Result<(), InstallError> {
        let stored = self.store.wasm_path(&pack.sha256);
        let bytes = read_file(&stored, prompt_host_files::MAX_PACK_FILE_BYTES)?;
        let file = self.plugin_file(&pack.name);
        let placed = match placing {
            Placing::Replace => pack_store::write_atomically(&file, &bytes),
            Placing::New => pack_store::write_atomically_new(&file, &bytes),
        };
        placed.map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => {
                InstallError::AlreadyInstalled { name: pack.name.clone(), path: file.display().to_string() }
            }
            _ => InstallError::Write { path: file.display().to_string(), error: error.to_string() },
        })
    }

    /// Whether the plugin file is the installed one: read and hashed on
    /// tokio's blocking pool (a pack is up to 1 GiB).
    async fn file_state(&self, locked: &LockedPack) -> FileState {
        let (file, sha256) = (self.plugin_file(&locked.name), locked.sha256.clone());
        tokio::task::spawn_blocking(move || match prompt_host_files::read(&file, prompt_host_files::MAX_PACK_FILE_BYTES) {
            Ok(bytes) if loader::digest(&bytes) == sha256 => FileState::Agrees,
            Ok(_) => FileState::Differs,
            Err(_) => FileState::Missing,
        })
        .await
        .expect("reading a plugin file does not panic")
    }

    /// How many prompts the plugin file serves, loaded as the server would
    /// (`None` if it does not load), and what its calls are granted to see.
    async fn served(&self, file: &Path) -> (Option<usize>, Vec<String>) {
        let loaded = async {
            let source = PluginSource::read_off_runtime(file, self.config.registry.max_pack_bytes).await.ok()?;
            let settings = self.config.plugin_settings(&source.id);
            let loader = startup::loader_for_one(&source, &settings, self.config).ok()?;
            loader.load(source, settings).await.ok()
        };
        match loaded.await {
            Some(plugin) => (Some(plugin.prompts().len()), plugin.access().given()),
            None => (None, Vec::new()),
        }
    }
}

/// `prompt-host publish`: pushes the component in `file` to `reference` as a
/// CNCF wasm artifact; returns the manifest digest (what to sign).
pub async fn publish(config: &ServeConfig, file: &Path, reference: &str) -> Result<String, InstallError> {
    let reference = PackReference::parse(reference)?;
    let wasm = read_file(file, prompt_host_files::MAX_PACK_FILE_BYTES)?;
    let client = RegistryClient::new(config.registry.clone())?;
    Ok(client.publish(&wasm, &reference).await?)
}

/// `prompt-host sign`: signs the pack at the digest `reference` names with
/// the private key in `key_file`, as cosign does (the payload names the
/// digest and the repository), and stores the signature beside it. A tag is
/// signed only with `allow_tag`: it is resolved to the digest it names now,
/// which may not be what was published. Returns what was signed.
pub async fn sign(
    config: &ServeConfig,
    reference: &str,
    key_file: &Path,
    password: &[u8],
    allow_tag: bool,
) -> Result<Signed, InstallError> {
    let reference = PackReference::parse(reference)?;
    if reference.digest().is_none() && !allow_tag {
        return Err(InstallError::SignTag { reference: reference.to_string() });
    }
    let key = read_file(key_file, prompt_host_files::MAX_SMALL_FILE_BYTES)?;
    let client = RegistryClient::new(config.registry.clone())?;
    let digest = client.resolve(&reference).await?;
    let repository = format!("{}/{}", reference.registry(), reference.repository());
    let made = signature::sign(&repository, &digest, &key, password)
        .map_err(|error| InstallError::Signing { key: key_file.display().to_string(), error })?;
    let same_key = |existing: &str| made.is_by_the_same_key(existing);
    client.push_signature(&reference, &digest, &made.payload, &made.signature, &same_key).await?;
    Ok(Signed { digest, repository })
}

/// What `prompt-host sign` signed: a manifest digest in a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub digest: String,
    /// `REGISTRY/REPOSITORY`, as the signature names it.
    pub repository: String,
}

/// One line of `prompt-host list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    pub name: String,
    /// The reference it was installed from, or the file for a plugin not
    /// installed from a registry.
    pub source: String,
    pub tag: Option<String>,
    /// The manifest digest.
    pub digest: Option<String>,
    /// The component's SHA-256, as locked (or as on disk, for a file not
    /// installed from a registry).
    pub sha256: Option<String>,
    pub signer: Option<String>,
    /// The prompts it serves; `None` when it does not load.
    pub prompts: Option<usize>,
    /// What its calls are granted to see (never a value itself).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub granted: Vec<String>,
    pub state: FileState,
}

/// How the plugin file compares with the lockfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    /// The file is the component the lockfile records.
    Agrees,
    /// The file was changed after it was installed.
    Differs,
    /// The lockfile records it, and the file is gone.
    Missing,
    /// A plugin file the lockfile does not record (copied in by hand).
    NotLocked,
}

impl std::fmt::Display for FileState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            // The words of `list --json`'s "state", so that both say the same.
            FileState::Agrees => "agrees",
            FileState::Differs => "differs (changed on disk)",
            FileState::Missing => "missing (gone from disk)",
            FileState::NotLocked => "not-locked (not from a registry)",
        })
    }
}

/// A pack pulled and verified, not yet installed.
struct Fetched {
    pack: LockedPack,
    wasm: Vec<u8>,
    provenance: Provenance,
}

/// The installed pack an update replaces (or the removed one an `add` of
/// its name follows), and whether it may be replaced by an older version.
#[derive(Clone, Copy)]
struct Replacing<'a> {
    installed: &'a LockedPack,
    allow_downgrade: bool,
    /// The reference `update --to` (or `add`) moves it to, if it does.
    to: Option<&'a PackReference>,
    /// Whether this is an `add` after a `remove`.
    adding: bool,
}

impl Replacing<'_> {
    /// The command that installs it anyway, as a refusal says it.
    fn retry(&self) -> Retry {
        Retry { name: self.installed.name.clone(), to: self.to.cloned(), adding: self.adding }
    }
}

/// The command a rollback refusal suggests: the same, with
/// `--allow-downgrade` (so that it installs what was asked for).
#[derive(Debug)]
pub struct Retry {
    name: String,
    to: Option<PackReference>,
    adding: bool,
}

impl std::fmt::Display for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.to, self.adding) {
            (Some(to), true) => write!(f, "prompt-host add {to} --name {} --allow-downgrade", self.name),
            (Some(to), false) => write!(f, "prompt-host update {} --to {to} --allow-downgrade", self.name),
            (None, _) => write!(f, "prompt-host update {} --allow-downgrade", self.name),
        }
    }
}

/// Whether placing a pack may replace a plugin file already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placing {
    /// `add`: a file that appeared meanwhile (copied in by hand) is kept.
    New,
    /// `update`, and `serve`'s sources: the installed file is replaced.
    Replace,
}

/// How a pack's version stands to the installed one's.
#[derive(Debug, PartialEq, Eq)]
enum VersionOrder {
    /// Both semantic versions, the new one not lower; or the same text.
    NotOlder,
    /// Both semantic versions, the new one lower.
    Older,
    /// The new pack says no version.
    Unsaid,
    /// Different texts, not both semantic versions: they cannot be ordered.
    Unordered,
}

/// The rule an install that replaces another follows (without
/// `--allow-downgrade`): it must show it is not older than the installed
/// version. A pack that says no version, or a version that cannot be
/// ordered against the installed one, cannot show it, and is refused as an
/// older one is.
fn version_order(new: Option<&str>, installed: &str) -> VersionOrder {
    let Some(new) = new else { return VersionOrder::Unsaid };
    if new == installed {
        return VersionOrder::NotOlder;
    }
    match (semver::Version::parse(new), semver::Version::parse(installed)) {
        (Ok(new), Ok(installed)) if new < installed => VersionOrder::Older,
        (Ok(_), Ok(_)) => VersionOrder::NotOlder,
        _ => VersionOrder::Unordered,
    }
}

/// What was skipped beside a pack as not a signature, to follow a refusal.
fn skipped_note(skipped: &[String]) -> String {
    if skipped.is_empty() { String::new() } else { format!(" (skipped as not signatures: {})", skipped.join("; ")) }
}

/// Reads a file the way every file the host is given is read
/// ([`prompt_host_files`]), saying which one could not be.
fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, InstallError> {
    prompt_host_files::read(path, max_bytes)
        .map_err(|error| InstallError::Read { path: path.display().to_string(), error: error.to_string() })
}

fn check_name(name: &str) -> Result<(), InstallError> {
    if is_plugin_name(name) { Ok(()) } else { Err(InstallError::InvalidName { name: name.to_string() }) }
}

fn not_installed(name: &str, lockfile: &Lockfile) -> InstallError {
    let known: Vec<&str> = lockfile.packs.iter().map(|pack| pack.name.as_str()).collect();
    InstallError::NotInstalled { name: name.to_string(), known: if known.is_empty() { "none".to_string() } else { known.join(", ") } }
}

/// For `serve`: installs the packs the config names by source, before the
/// plugin directory is loaded. A pack that cannot be installed is logged and
/// not served; the rest are.
pub async fn install_sources(config: &ServeConfig) {
    if !config.plugins.values().any(|plugin| plugin.source.is_some()) {
        return;
    }
    let installation = match Installation::new(config) {
        Ok(installation) => installation,
        Err(error) => return tracing::error!("packs named by source not installed: {error}"),
    };
    for (name, outcome) in installation.install_sources().await {
        tell_sourced(&name, &outcome);
    }
}

/// Logs what installing plugin `name` from its source came to.
fn tell_sourced(name: &str, outcome: &Result<Sourced, InstallError>) {
    let plugin = name.escape_debug().to_string();
    match outcome {
        Ok(Sourced::Served(pack)) => {
            tracing::info!(
                plugin,
                reference = pack.reference,
                digest = pack.digest,
                signer = pack.signer,
                "already installed from its source"
            )
        }
        Ok(Sourced::Restored(pack)) => tracing::warn!(
            plugin,
            reference = pack.reference,
            digest = pack.digest,
            "its plugin file had changed or gone: put back from the pack store"
        ),
        Ok(Sourced::Installed(pack)) => tracing::info!(
            plugin,
            reference = pack.reference,
            digest = pack.digest,
            signer = pack.signer,
            "pulled from its source and installed"
        ),
        // The error may quote what a registry sent: a Debug field, escaped.
        Err(error) => tracing::error!(plugin, error = ?error.to_string(), "not installed from its source"),
    }
}

/// For `serve` with `[server] update_interval`: follows the registry while
/// serving. Every interval, give or take a tenth (so that replicas started
/// together do not ask at once), each pack the config in force names by
/// source is installed if it is not yet (or its source changed), and
/// otherwise its reference resolved again and what changed installed
/// exactly as `prompt-host update` does (signature policy, never an older
/// pack, the lockfile, one rename into the plugin directory, whose watcher
/// loads it and tells clients). `config` is the config in force at each
/// round (SIGHUP's). A refusal (a bad signature, an older version, a
/// registry down) keeps what is installed, is counted, and is logged when
/// its reason changes, not at every round; a pack whose source could not be
/// installed is not updated from an older source meanwhile. Each round asks
/// a registry once per source; it runs beside the requests, which never wait
/// for it.
pub async fn follow_sources(config: impl Fn() -> std::sync::Arc<ServeConfig>, every: std::time::Duration) {
    // The last refusal said of each plugin, and of the round itself.
    let mut said: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    // Not a plugin name (those are lowercase letters, digits, '-' and '_').
    const ROUND: &str = "(every plugin)";
    loop {
        tokio::time::sleep(jittered(every)).await;
        let config = config();
        let sourced: Vec<String> =
            config.plugins.iter().filter(|(_, plugin)| plugin.source.is_some()).map(|(name, _)| name.clone()).collect();
        if sourced.is_empty() {
            continue;
        }
        let installation = match Installation::new(&config) {
            Ok(installation) => installation,
            Err(error) => {
                tell_once(&mut said, ROUND, &format!("packs named by source not followed: {error}"));
                continue;
            }
        };
        said.remove(ROUND);
        // Installing reads and hashes every sourced plugin file, which the
        // updates below do again: done only in a round where a source is
        // not installed yet, or changed (or the lockfile does not read).
        let locked = Lockfile::read(&installation.lockfile).ok();
        let installed_as_configured = |name: &String| {
            let configured = config.plugins.get(name).and_then(|plugin| plugin.source.as_deref());
            let configured = configured.and_then(|source| PackReference::parse(source).ok()).map(|reference| reference.to_string());
            let locked = locked.as_ref().and_then(|lockfile| lockfile.get(name)).map(|pack| pack.reference.clone());
            configured.is_some() && configured == locked
        };
        let installed: std::collections::HashMap<String, Result<Sourced, InstallError>> = match sourced.iter().all(installed_as_configured)
        {
            true => std::collections::HashMap::new(),
            false => installation.install_sources().await.into_iter().collect(),
        };
        for name in sourced {
            let outcome = match installed.get(&name) {
                Some(Err(error)) => Err(format!("not installed from its source: {error}")),
                Some(Ok(sourced @ Sourced::Installed(_))) => {
                    tell_sourced(&name, &Ok(sourced.clone()));
                    Ok("updated")
                }
                Some(Ok(sourced @ Sourced::Restored(_))) => {
                    tell_sourced(&name, &Ok(sourced.clone()));
                    Ok("restored")
                }
                Some(Ok(Sourced::Served(_))) | None => match installation.update(Some(&name), None, false, &|_, _| {}).await {
                    Ok(mut outcomes) => match outcomes.pop().map(|(_, outcome)| outcome) {
                        Some(Ok(Updated::UpToDate(_))) | None => Ok("up-to-date"),
                        Some(Ok(Updated::Replaced { pack, previous } | Updated::Moved { pack, previous })) => {
                            let plugin = name.escape_debug().to_string();
                            tracing::info!(plugin, reference = pack.reference, digest = pack.digest, previous, "updated from its source");
                            Ok("updated")
                        }
                        Some(Ok(Updated::Restored(pack))) => {
                            tell_sourced(&name, &Ok(Sourced::Restored(pack)));
                            Ok("restored")
                        }
                        Some(Err(error)) => Err(format!("not updated, the installed pack stays: {error}")),
                    },
                    Err(error) => Err(format!("not updated, the installed pack stays: {error}")),
                },
            };
            match outcome {
                Ok(outcome) => {
                    crate::metrics::pack_update(&name, outcome);
                    said.remove(&name);
                }
                Err(reason) => {
                    crate::metrics::pack_update(&name, "refused");
                    tell_once(&mut said, &name, &reason);
                }
            }
        }
    }
}

/// Logs `reason` for plugin `name` unless it was the last thing said of it.
fn tell_once(said: &mut std::collections::HashMap<String, String>, name: &str, reason: &str) {
    if said.get(name).map(String::as_str) != Some(reason) {
        // The reason may quote what a registry sent: a Debug field, escaped.
        tracing::warn!(plugin = %name.escape_debug(), reason = ?reason, "following the registry");
        said.insert(name.to_string(), reason.to_string());
    }
}

/// `every`, give or take a tenth, at random.
fn jittered(every: std::time::Duration) -> std::time::Duration {
    let mut bytes = [0u8; 2];
    let spread = match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    };
    every.mul_f64(0.9 + 0.2 * spread)
}
