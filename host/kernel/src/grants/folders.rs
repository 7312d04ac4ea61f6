//! Granted folders, read-only, through the standard `wasi:filesystem`
//! interfaces (`types` and `preopens`), implemented here in place of
//! wasmtime-wasi's own, so that a pack reads them with its language's own
//! file API (Rust's `std::fs`, Python's `open`) and the host keeps control
//! of every step:
//! - **beneath the folder**: every path is resolved by the Linux kernel
//!   (`openat2` with `RESOLVE_BENEATH`, [`prompt_host_files::open_beneath`]),
//!   so `..`, absolute paths and symlinks out, even one swapped in during
//!   the call, are refused (`not-permitted`); a hard link to a file outside
//!   cannot be told apart and is read (docs/security/grants.md);
//! - **never blocking**: opens are non-blocking, and only regular files and
//!   directories are kept (a FIFO, socket or device is refused with
//!   `access` before anything could wait on it); files are read in chunks
//!   of at most [`READ_CHUNK`], on the call's own task;
//! - **read-only**: every write, create, rename, link, removal and
//!   `set-times` is refused (`read-only`);
//! - **metered**: files opened, bytes read, entries listed and time in host
//!   I/O count against the call's budgets ([`super::IoMeter`]); past one,
//!   the call fails;
//! - **fresh**: nothing is read while an instance starts (before its call
//!   begins: `access`), so a spare made ahead of time cannot carry what a
//!   folder held then into a later call;
//! - **bounded in all**: each call opens each folder's root once (counted
//!   as a file opened), and the descriptors of granted folders open at
//!   once are bounded across the process ([`Descriptors`]: at most
//!   [`MAX_OPEN_IN_ALL`], and at most a quarter of the process's descriptor
//!   limit), for each sandbox (each tenant's: an equal share of that) and
//!   for each plugin (a quarter of its sandbox's), `busy` past any.
//!
//! The descriptors a pack holds are wasmtime-wasi's resource types by name
//! (the other WASI interfaces are still wasmtime-wasi's); the table entries
//! behind them are this module's `Node`s, reached by their index.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use prompt_host_files::{Beneath, open_beneath};
use rustix::fs::FileType;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult, InputStream, Pollable, StreamError, StreamResult};

use super::{Budget, GrantRefusal, GrantedAccess, IoMeter};

/// The most bytes one read of a granted file returns.
pub const READ_CHUNK: usize = 64 << 10;

/// The most descriptors of granted folders open at once, across every call
/// of every pack: beside each call's `grant_files_opened`, so that 64 calls
/// at once cannot hold 64 budgets' worth of the host's descriptors. Lower
/// when the process may open fewer ([`Descriptors::for_process`]).
pub const MAX_OPEN_IN_ALL: usize = 4096;

/// A path opened beneath a folder, and what `fstat` says of it.
type OpenedBeneath = (OwnedFd, rustix::fs::Stat);

/// The longest path a pack may pass, in bytes (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// Descriptors of granted folders and origins' connections open now, and
/// the most that may be: in the process, in one sandbox (one tenant's), or
/// of one plugin, each counted in the one it is a share of too.
#[derive(Debug)]
pub struct Descriptors {
    open: AtomicUsize,
    cap: usize,
    /// What this is a share of, if anything.
    within: Option<Arc<Descriptors>>,
}

impl Descriptors {
    /// At most `cap` open at once, a share of nothing.
    pub fn new(cap: usize) -> Descriptors {
        Descriptors { open: AtomicUsize::new(0), cap, within: None }
    }

    /// The process's, one for all its sandboxes: [`MAX_OPEN_IN_ALL`], or a
    /// quarter of the descriptors this process may open (its soft limit,
    /// raised to the hard limit first), whichever is less, so that grants
    /// can never take the descriptors the server needs for its own files
    /// and connections, however many tenants it serves.
    pub fn for_process() -> Arc<Descriptors> {
        static PROCESS: std::sync::OnceLock<Arc<Descriptors>> = std::sync::OnceLock::new();
        PROCESS
            .get_or_init(|| {
                let limit = prompt_host_files::raise_descriptor_limit();
                Arc::new(Descriptors::new(MAX_OPEN_IN_ALL.min(usize::try_from(limit / 4).unwrap_or(usize::MAX)).max(8)))
            })
            .clone()
    }

    /// A share of these: at most one `part`-th of them, counted here too.
    /// A sandbox (a tenant) takes an equal share of the process's, and a
    /// plugin a quarter of its sandbox's, so that neither one tenant nor
    /// one pack's calls can hold another's granted descriptors.
    pub fn share(self: &Arc<Self>, part: usize) -> Arc<Descriptors> {
        Arc::new(Descriptors { open: AtomicUsize::new(0), cap: (self.cap / part).max(1), within: Some(self.clone()) })
    }

    /// Counts one more open, here and in what this is a share of, unless
    /// one of them is full.
    fn take(&self) -> bool {
        if self.open.fetch_add(1, Ordering::Relaxed) >= self.cap {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        if let Some(within) = &self.within
            && !within.take()
        {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn give_back(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        if let Some(within) = &self.within {
            within.give_back();
        }
    }
}

/// What one plugin's calls see, and the descriptors they hold between them.
#[derive(Debug)]
pub struct PluginFolders {
    access: GrantedAccess,
    descriptors: Arc<Descriptors>,
    /// Its calls' name lookups under way (see [`super::http::MAX_LOOKUPS`]).
    lookups: Arc<tokio::sync::Semaphore>,
}

impl PluginFolders {
    /// The folders of a plugin that sees `access`, holding at most its
    /// share of descriptors at once (`descriptors`).
    pub fn new(access: GrantedAccess, descriptors: Arc<Descriptors>) -> PluginFolders {
        PluginFolders { access, descriptors, lookups: Arc::new(tokio::sync::Semaphore::new(super::http::MAX_LOOKUPS)) }
    }

    /// What its calls see.
    pub fn access(&self) -> &GrantedAccess {
        &self.access
    }
}

/// Takes descriptors for one plugin's call: granted folders' and
/// granted origins' connections, counted together.
#[derive(Debug, Clone)]
pub struct DescriptorHolder {
    plugin: Arc<PluginFolders>,
}

impl DescriptorHolder {
    /// Counts one more open descriptor, of the plugin, its sandbox and the
    /// process, unless one of them has too many.
    pub fn take(&self) -> Option<Held> {
        self.plugin.descriptors.take().then(|| Held { descriptors: self.plugin.descriptors.clone() })
    }

    /// What the plugin's calls see.
    pub fn access(&self) -> &GrantedAccess {
        &self.plugin.access
    }

    /// The plugin's turns to resolve a name.
    pub fn lookups(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.plugin.lookups
    }
}

/// One descriptor counted in its plugin's [`Descriptors`] (and so in its
/// sandbox's and the process's) while it lives.
#[derive(Debug)]
pub struct Held {
    descriptors: Arc<Descriptors>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.descriptors.give_back();
    }
}

/// One open descriptor of a granted folder.
#[derive(Debug)]
struct Opened {
    fd: OwnedFd,
    _held: Held,
}

/// What a descriptor a pack holds is.
enum Node {
    /// The preopen of folder `folder` (an index into the access's folders),
    /// opened on its first use in the call, once however many preopens of
    /// it the pack asks for.
    Root { folder: usize },
    /// A directory opened beneath one.
    Dir(Arc<Opened>),
    /// A regular file opened beneath one.
    File(Arc<Opened>),
}

/// A listing of a directory, entry by entry, on a descriptor of its own.
struct Entries {
    listing: rustix::fs::Dir,
    _held: Held,
}

/// What the calls of one plugin are granted, and what this call used: the
/// part of a call's state the granted folders need.
pub struct CallFolders {
    plugin: Arc<PluginFolders>,
    meter: Arc<IoMeter>,
    /// Each folder's root, once opened in this call.
    roots: std::sync::Mutex<Vec<Option<Arc<Opened>>>>,
}

impl CallFolders {
    /// The folders `plugin` sees, for one call metered by `meter`, their
    /// descriptors counted in the plugin's share with every other call's.
    pub fn new(plugin: Arc<PluginFolders>, meter: Arc<IoMeter>) -> CallFolders {
        let roots = std::sync::Mutex::new(vec![None; plugin.access.folders.len()]);
        CallFolders { plugin, meter, roots }
    }

    /// The call's meter.
    pub fn meter(&self) -> &Arc<IoMeter> {
        &self.meter
    }

    /// What takes descriptors for the call.
    pub fn holder(&self) -> DescriptorHolder {
        DescriptorHolder { plugin: self.plugin.clone() }
    }
}

/// The view of a call's store the filesystem interfaces are implemented on.
pub struct FolderView<'a> {
    /// The store's resource table.
    pub table: &'a mut ResourceTable,
    /// The call's folders and meter.
    pub folders: &'a CallFolders,
    /// Whether the call has begun (nothing is read while its instance starts).
    pub begun: bool,
}

/// The `HasData` of [`FolderView`], for the linker.
pub struct GrantedFolders;

impl HasData for GrantedFolders {
    type Data<'a> = FolderView<'a>;
}

/// Adds this module's `wasi:filesystem/types` and `wasi:filesystem/preopens`
/// to `linker`, over any there: `view` gives a store's [`FolderView`].
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    view: fn(&mut T) -> FolderView<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    types::add_to_linker::<T, GrantedFolders>(linker, view)?;
    preopens::add_to_linker::<T, GrantedFolders>(linker, view)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A descriptor the pack holds, as this module's table entry.
fn node(fd: &Resource<types::Descriptor>) -> Resource<Node> {
    Resource::new_borrow(fd.rep())
}

fn refused(refusal: GrantRefusal) -> FsError {
    FsError::trap(wasmtime::Error::new(refusal))
}

/// An OS error as the pack sees it: a path that would leave its folder is
/// `not-permitted`, as anything else the kernel refuses is.
fn os_error(error: std::io::Error) -> FsError {
    if error.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
        return ErrorCode::NotPermitted.into();
    }
    ErrorCode::from(error).into()
}

impl FolderView<'_> {
    fn meter(&self) -> &IoMeter {
        &self.folders.meter
    }

    /// Counts a refused use, and refuses it with `code`.
    fn deny<T>(&self, code: ErrorCode) -> FsResult<T> {
        self.meter().denied();
        Err(code.into())
    }

    fn access(&self) -> &GrantedAccess {
        &self.folders.plugin.access
    }

    /// Counts one more open descriptor, of the plugin and in all, unless
    /// either has too many (then the descriptor, opened already, is closed
    /// when the caller drops it).
    fn hold(&self) -> FsResult<Held> {
        self.folders.holder().take().ok_or_else(|| ErrorCode::Busy.into())
    }

    fn opened(&self, fd: OwnedFd) -> FsResult<Arc<Opened>> {
        Ok(Arc::new(Opened { fd, _held: self.hold()? }))
    }

    /// The directory `fd` names, opening a folder's root on its first use.
    fn dir(&mut self, fd: &Resource<types::Descriptor>) -> FsResult<Arc<Opened>> {
        if !self.begun {
            return self.deny(ErrorCode::Access);
        }
        let folder = match self.table.get(&node(fd))? {
            Node::Dir(dir) => return Ok(dir.clone()),
            Node::File(_) => return Err(ErrorCode::NotDirectory.into()),
            Node::Root { folder } => *folder,
        };
        if let Some(root) = &self.folders.roots.lock().unwrap()[folder] {
            return Ok(root.clone());
        }
        let seen = &self.access().folders[folder];
        let Some(path) = seen.path.clone() else {
            self.meter().denied();
            let refusal = GrantRefusal::NotGranted { section: self.access().section.clone(), folder: seen.name.clone() };
            return Err(refused(refusal));
        };
        self.meter().charge(Budget::FilesOpened, 1).map_err(refused)?;
        let started = Instant::now();
        // The operator's path, as it is now (a folder swapped in by a
        // deployment is followed), and of a filesystem a pack may read.
        let opened = prompt_host_files::open_granted_folder(&path).map_err(os_error);
        self.meter().spent_since(started).map_err(refused)?;
        let opened = self.opened(opened?)?;
        self.folders.roots.lock().unwrap()[folder] = Some(opened.clone());
        Ok(opened)
    }

    /// Whether `fd` is the preopen of a folder the pack asked for and was
    /// not granted: looking at the folder itself (`stat`) says so with
    /// `access`, without failing the call, so that a pack can do without it;
    /// any use of what is beneath it fails the call.
    fn withheld(&self, fd: &Resource<types::Descriptor>) -> bool {
        match self.table.get(&node(fd)) {
            Ok(Node::Root { folder }) => self.access().folders[*folder].path.is_none(),
            _ => false,
        }
    }

    /// The regular file `fd` names.
    fn file(&mut self, fd: &Resource<types::Descriptor>) -> FsResult<Arc<Opened>> {
        match self.table.get(&node(fd))? {
            Node::File(file) => Ok(file.clone()),
            _ => Err(ErrorCode::IsDirectory.into()),
        }
    }

    /// What `fstat` says of the descriptor `fd` itself; for a folder asked
    /// for and not granted, `access`, without failing the call.
    fn look_at_itself(&mut self, fd: &Resource<types::Descriptor>) -> FsResult<rustix::fs::Stat> {
        if self.withheld(fd) {
            return self.deny(ErrorCode::Access);
        }
        self.fstat(fd)
    }

    /// Resolves `path` beneath the directory `fd` names, as `how`, timed:
    /// the folder, and what the system said. Looking at a folder asked for
    /// and not granted (`.`, or no path) is `access`, without failing the
    /// call (see [`FolderView::withheld`]).
    fn resolve(
        &mut self,
        fd: &Resource<types::Descriptor>,
        path: &str,
        follow: bool,
        how: Beneath,
    ) -> FsResult<(Arc<Opened>, std::io::Result<OpenedBeneath>)> {
        if how == Beneath::Look && self.withheld(fd) && matches!(path, "" | "." | "./") {
            return self.deny(ErrorCode::Access);
        }
        let dir = self.dir(fd)?;
        if path.len() > MAX_PATH {
            return Err(ErrorCode::NameTooLong.into());
        }
        let started = Instant::now();
        let resolved = open_beneath(&dir.fd, path, follow, how);
        self.meter().spent_since(started).map_err(refused)?;
        Ok((dir, resolved))
    }

    /// Opens `path` beneath the directory `fd` names, as `how`, counting a
    /// refusal (out of the folder, a special file, a final symlink).
    fn open_beneath(&mut self, fd: &Resource<types::Descriptor>, path: &str, follow: bool, how: Beneath) -> FsResult<OpenedBeneath> {
        let (_, opened) = self.resolve(fd, path, follow, how)?;
        opened.map_err(|error| {
            let errno = error.raw_os_error();
            if [rustix::io::Errno::XDEV, rustix::io::Errno::ACCESS, rustix::io::Errno::LOOP]
                .iter()
                .any(|refusal| errno == Some(refusal.raw_os_error()))
            {
                self.meter().denied();
            }
            os_error(error)
        })
    }

    fn stat_of(&self, stat: &rustix::fs::Stat) -> DescriptorStat {
        let time = |seconds: i64, nanoseconds: u64| {
            u64::try_from(seconds).ok().map(|seconds| Datetime { seconds, nanoseconds: nanoseconds as u32 })
        };
        DescriptorStat {
            type_: descriptor_type(FileType::from_raw_mode(stat.st_mode)),
            link_count: stat.st_nlink,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            data_access_timestamp: time(stat.st_atime, stat.st_atime_nsec),
            data_modification_timestamp: time(stat.st_mtime, stat.st_mtime_nsec),
            status_change_timestamp: time(stat.st_ctime, stat.st_ctime_nsec),
        }
    }

    fn fstat(&mut self, fd: &Resource<types::Descriptor>) -> FsResult<rustix::fs::Stat> {
        let opened = match self.table.get(&node(fd))? {
            Node::File(file) => file.clone(),
            _ => self.dir(fd)?,
        };
        let started = Instant::now();
        let stat = rustix::fs::fstat(&opened.fd).map_err(|errno| os_error(errno.into()));
        self.meter().spent_since(started).map_err(refused)?;
        stat
    }
}

fn descriptor_type(kind: FileType) -> DescriptorType {
    match kind {
        FileType::RegularFile => DescriptorType::RegularFile,
        FileType::Directory => DescriptorType::Directory,
        FileType::Symlink => DescriptorType::SymbolicLink,
        FileType::Fifo => DescriptorType::Fifo,
        FileType::Socket => DescriptorType::Socket,
        FileType::CharacterDevice => DescriptorType::CharacterDevice,
        FileType::BlockDevice => DescriptorType::BlockDevice,
        FileType::Unknown => DescriptorType::Unknown,
    }
}

/// Reads a granted file at `offset`: at most `size` bytes and
/// [`READ_CHUNK`], counted against the call's byte budget (read one byte
/// past what is left, so that a file that ends exactly at the budget is
/// read whole, and one byte more fails the call).
fn read_at(opened: &Opened, meter: &IoMeter, size: usize, offset: u64) -> Result<Vec<u8>, ReadFailure> {
    let left = meter.left(Budget::ReadBytes).saturating_add(1);
    let size = size.min(READ_CHUNK).min(usize::try_from(left).unwrap_or(usize::MAX));
    let mut buffer = vec![0; size];
    let started = Instant::now();
    let read = rustix::io::pread(&opened.fd, &mut buffer, offset);
    meter.spent_since(started).map_err(ReadFailure::Refused)?;
    let read = read.map_err(|errno| ReadFailure::Os(errno.into()))?;
    buffer.truncate(read);
    meter.charge(Budget::ReadBytes, read as u64).map_err(ReadFailure::Refused)?;
    Ok(buffer)
}

enum ReadFailure {
    Refused(GrantRefusal),
    Os(std::io::Error),
}

/// A granted file read as a stream (`read-via-stream`).
struct FileStream {
    opened: Arc<Opened>,
    meter: Arc<IoMeter>,
    position: u64,
}

#[wasmtime_wasi::async_trait]
impl Pollable for FileStream {
    // A regular file is always ready: each read is one bounded `pread`.
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl InputStream for FileStream {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        if size == 0 {
            return Ok(Bytes::new());
        }
        match read_at(&self.opened, &self.meter, size, self.position) {
            Ok(bytes) if bytes.is_empty() => Err(StreamError::Closed),
            Ok(bytes) => {
                self.position += bytes.len() as u64;
                Ok(Bytes::from(bytes))
            }
            Err(ReadFailure::Refused(refusal)) => Err(StreamError::Trap(wasmtime::Error::new(refusal))),
            Err(ReadFailure::Os(error)) => Err(StreamError::LastOperationFailed(wasmtime::Error::new(error))),
        }
    }
}

impl preopens::Host for FolderView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<types::Descriptor>, String)>> {
        let mut directories = Vec::new();
        let names: Vec<String> = self.access().folders.iter().map(|seen| format!("/{}", seen.name)).collect();
        for (folder, name) in names.into_iter().enumerate() {
            let root = self.table.push(Node::Root { folder })?;
            directories.push((Resource::new_own(root.rep()), name));
        }
        Ok(directories)
    }
}

impl types::Host for FolderView<'_> {
    fn convert_error_code(&mut self, error: FsError) -> wasmtime::Result<ErrorCode> {
        error.downcast()
    }

    fn filesystem_error_code(&mut self, error: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        let error = self.table.get(&error)?;
        Ok(error.downcast_ref::<std::io::Error>().map(ErrorCode::from))
    }
}

impl HostDescriptor for FolderView<'_> {
    async fn advise(
        &mut self,
        fd: Resource<types::Descriptor>,
        _offset: types::Filesize,
        _len: types::Filesize,
        _advice: types::Advice,
    ) -> FsResult<()> {
        self.file(&fd)?;
        Ok(())
    }

    async fn sync_data(&mut self, _fd: Resource<types::Descriptor>) -> FsResult<()> {
        Ok(())
    }

    async fn get_flags(&mut self, _fd: Resource<types::Descriptor>) -> FsResult<DescriptorFlags> {
        Ok(DescriptorFlags::READ)
    }

    async fn get_type(&mut self, fd: Resource<types::Descriptor>) -> FsResult<DescriptorType> {
        Ok(match self.table.get(&node(&fd))? {
            Node::File(_) => DescriptorType::RegularFile,
            _ => DescriptorType::Directory,
        })
    }

    async fn set_size(&mut self, _fd: Resource<types::Descriptor>, _size: types::Filesize) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn set_times(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _atim: types::NewTimestamp,
        _mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn read(&mut self, fd: Resource<types::Descriptor>, len: types::Filesize, offset: types::Filesize) -> FsResult<(Vec<u8>, bool)> {
        let opened = self.file(&fd)?;
        let size = usize::try_from(len).unwrap_or(usize::MAX);
        match read_at(&opened, self.meter(), size, offset) {
            Ok(bytes) => {
                let end = bytes.is_empty();
                Ok((bytes, end))
            }
            Err(ReadFailure::Refused(refusal)) => Err(refused(refusal)),
            Err(ReadFailure::Os(error)) => Err(os_error(error)),
        }
    }

    async fn write(&mut self, _fd: Resource<types::Descriptor>, _buf: Vec<u8>, _offset: types::Filesize) -> FsResult<types::Filesize> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn read_directory(&mut self, fd: Resource<types::Descriptor>) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let dir = self.dir(&fd)?;
        self.meter().charge(Budget::FilesOpened, 1).map_err(refused)?;
        let started = Instant::now();
        // A descriptor of its own: the listing's position is not the directory's.
        let listing = rustix::fs::Dir::read_from(&dir.fd).map_err(|errno| os_error(errno.into()));
        self.meter().spent_since(started).map_err(refused)?;
        let listing = listing?;
        let held = self.hold()?;
        let entries = self.table.push(Entries { listing, _held: held })?;
        Ok(Resource::new_own(entries.rep()))
    }

    async fn sync(&mut self, _fd: Resource<types::Descriptor>) -> FsResult<()> {
        Ok(())
    }

    async fn create_directory_at(&mut self, _fd: Resource<types::Descriptor>, _path: String) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn stat(&mut self, fd: Resource<types::Descriptor>) -> FsResult<DescriptorStat> {
        let stat = self.look_at_itself(&fd)?;
        Ok(self.stat_of(&stat))
    }

    async fn stat_at(&mut self, fd: Resource<types::Descriptor>, path_flags: types::PathFlags, path: String) -> FsResult<DescriptorStat> {
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let (_looked_at, stat) = self.open_beneath(&fd, &path, follow, Beneath::Look)?;
        Ok(self.stat_of(&stat))
    }

    async fn set_times_at(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _path_flags: types::PathFlags,
        _path: String,
        _atim: types::NewTimestamp,
        _mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn link_at(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _old_path_flags: types::PathFlags,
        _old_path: String,
        _new_descriptor: Resource<types::Descriptor>,
        _new_path: String,
    ) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn open_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<types::Descriptor>> {
        let writes = oflags.intersects(types::OpenFlags::CREATE | types::OpenFlags::EXCLUSIVE | types::OpenFlags::TRUNCATE)
            || flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
        if writes {
            return self.deny(ErrorCode::ReadOnly);
        }
        self.dir(&fd)?;
        self.meter().charge(Budget::FilesOpened, 1).map_err(refused)?;
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let how = if oflags.contains(types::OpenFlags::DIRECTORY) { Beneath::Directory } else { Beneath::Read };
        let (opened, stat) = self.open_beneath(&fd, &path, follow, how)?;
        let opened = self.opened(opened)?;
        let entry = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Node::Dir(opened),
            _ => Node::File(opened),
        };
        let entry = self.table.push(entry)?;
        Ok(Resource::new_own(entry.rep()))
    }

    fn drop(&mut self, fd: Resource<types::Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(Resource::<Node>::new_own(fd.rep()))?;
        Ok(())
    }

    async fn readlink_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<String> {
        let (link, stat) = self.open_beneath(&fd, &path, false, Beneath::Look)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
            return Err(ErrorCode::Invalid.into());
        }
        let started = Instant::now();
        let target = rustix::fs::readlinkat(&link, "", Vec::new()).map_err(|errno| os_error(errno.into()));
        self.meter().spent_since(started).map_err(refused)?;
        let target = target?.into_string().map_err(|_| FsError::from(ErrorCode::IllegalByteSequence))?;
        // An absolute target says where on the host the folder is; it could
        // not be followed anyway.
        if target.starts_with('/') {
            return self.deny(ErrorCode::NotPermitted);
        }
        Ok(target)
    }

    async fn remove_directory_at(&mut self, _fd: Resource<types::Descriptor>, _path: String) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn rename_at(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _old_path: String,
        _new_fd: Resource<types::Descriptor>,
        _new_path: String,
    ) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn symlink_at(&mut self, _fd: Resource<types::Descriptor>, _src_path: String, _dest_path: String) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn unlink_file_at(&mut self, _fd: Resource<types::Descriptor>, _path: String) -> FsResult<()> {
        self.deny(ErrorCode::ReadOnly)
    }

    fn read_via_stream(&mut self, fd: Resource<types::Descriptor>, offset: types::Filesize) -> FsResult<Resource<DynInputStream>> {
        let opened = self.file(&fd)?;
        let stream: DynInputStream = Box::new(FileStream { opened, meter: self.folders.meter.clone(), position: offset });
        Ok(self.table.push(stream)?)
    }

    fn write_via_stream(&mut self, _fd: Resource<types::Descriptor>, _offset: types::Filesize) -> FsResult<Resource<DynOutputStream>> {
        self.deny(ErrorCode::ReadOnly)
    }

    fn append_via_stream(&mut self, _fd: Resource<types::Descriptor>) -> FsResult<Resource<DynOutputStream>> {
        self.deny(ErrorCode::ReadOnly)
    }

    async fn is_same_object(&mut self, a: Resource<types::Descriptor>, b: Resource<types::Descriptor>) -> wasmtime::Result<bool> {
        // A refusal that ends the call ends it here too; an error code only says "not the same".
        let stat = |view: &mut Self, fd| match view.fstat(fd) {
            Ok(stat) => Ok(Some(stat)),
            Err(error) => error.downcast().map(|_code| None),
        };
        let (Some(a), Some(b)) = (stat(self, &a)?, stat(self, &b)?) else { return Ok(false) };
        Ok((a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
    }

    async fn metadata_hash(&mut self, fd: Resource<types::Descriptor>) -> FsResult<types::MetadataHashValue> {
        let stat = self.look_at_itself(&fd)?;
        Ok(metadata_hash(&stat))
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        // wasi-libc asks for each entry a listing returns (its d_ino): an
        // entry that is a mount point (not crossed) or is gone by now would
        // end the pack's listing, so one name the folder holds gets a hash
        // of the folder and the name instead, and no refusal is counted.
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let (dir, looked) = self.resolve(&fd, &path, follow, Beneath::Look)?;
        match looked {
            Ok((_looked_at, stat)) => Ok(metadata_hash(&stat)),
            Err(_) if !path.contains('/') && !path.starts_with('.') => {
                let folder = rustix::fs::fstat(&dir.fd).map_err(|errno| os_error(errno.into()))?;
                Ok(keyed_hash(&(folder.st_dev, folder.st_ino, path)))
            }
            Err(error) => Err(os_error(error)),
        }
    }
}

/// Equal for the same file, and unlike for others: a hash of its device
/// and inode, keyed with a secret of this process (SipHash, std's
/// `RandomState`), so that neither number can be recovered from it.
fn metadata_hash(stat: &rustix::fs::Stat) -> types::MetadataHashValue {
    keyed_hash(&(stat.st_dev, stat.st_ino))
}

fn keyed_hash(value: &impl std::hash::Hash) -> types::MetadataHashValue {
    use std::hash::BuildHasher;
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(std::collections::hash_map::RandomState::new);
    types::MetadataHashValue { lower: key.hash_one((value, 0u8)), upper: key.hash_one((value, 1u8)) }
}

impl HostDirectoryEntryStream for FolderView<'_> {
    async fn read_directory_entry(&mut self, stream: Resource<types::DirectoryEntryStream>) -> FsResult<Option<types::DirectoryEntry>> {
        let meter = self.folders.meter.clone();
        let Entries { listing, .. } = self.table.get_mut(&Resource::<Entries>::new_borrow(stream.rep()))?;
        loop {
            let started = Instant::now();
            let next = listing.read();
            meter.spent_since(started).map_err(refused)?;
            let entry = match next {
                None => return Ok(None),
                Some(entry) => entry.map_err(|errno| os_error(errno.into()))?,
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            meter.charge(Budget::DirEntries, 1).map_err(refused)?;
            let Some(name) = OsStr::from_bytes(name).to_str() else {
                return Err(ErrorCode::IllegalByteSequence.into());
            };
            return Ok(Some(types::DirectoryEntry { type_: descriptor_type(entry.file_type()), name: name.to_string() }));
        }
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.table.delete(Resource::<Entries>::new_own(stream.rep()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(descriptors: Arc<Descriptors>) -> DescriptorHolder {
        DescriptorHolder { plugin: Arc::new(PluginFolders::new(GrantedAccess::default(), descriptors)) }
    }

    #[test]
    fn a_plugin_takes_its_share_of_its_sandboxs_and_each_of_two_sandboxes_half_the_processs() {
        let process = Arc::new(Descriptors::new(16));
        let (tenant, other_tenant) = (process.share(2), process.share(2));
        let plugins: Vec<DescriptorHolder> = (0..4).map(|_| holder(tenant.share(4))).collect();
        // Each plugin takes 2 (a quarter of its tenant's 8); the tenant's four plugins take the tenant's 8.
        let held: Vec<Held> = plugins.iter().flat_map(|plugin| [plugin.take(), plugin.take(), plugin.take()]).flatten().collect();
        assert_eq!(held.len(), 8);
        assert_eq!(process.open.load(Ordering::Relaxed), 8);
        // The other tenant still finds the other half of the process's.
        let other = holder(other_tenant.share(1));
        let other_held: Vec<Held> = (0..10).filter_map(|_| other.take()).collect();
        assert_eq!(other_held.len(), 8);
        assert!(holder(process.share(1)).take().is_none(), "the process's 16 are all held");
        drop(held);
        drop(other_held);
        assert_eq!(process.open.load(Ordering::Relaxed), 0);
        assert_eq!(tenant.open.load(Ordering::Relaxed), 0);
    }
}
