//! Reading the files prompt-host is given: packs and their Sigstore bundles
//! in the plugin directory, the pack store, the lockfile, compiled-cache
//! entries, and the files the configuration names (keys, trusted roots, CA
//! files, secrets). A crate of its own, with no dependency but `rustix`,
//! because both the sandbox kernel and the trust chain read files, and
//! neither may depend on the other.
//!
//! Every such file is opened the one way here: without blocking
//! (`O_NONBLOCK`, so a FIFO or a device with no one on the other side
//! cannot hang the open), then checked through the open handle to be a
//! regular file, and read up to a bound checked before reading. A FIFO put
//! beside a pack would otherwise stop a rescan, `inspect` or `list` for
//! good, and with them the server's answer to a stop signal.
#![warn(missing_docs)]

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The most bytes a pack file (a `.wasm` in the plugin directory or the
/// pack store) may have: the largest packs (a JavaScript or Python runtime
/// inside) are tens of MiB.
pub const MAX_PACK_FILE_BYTES: u64 = 1 << 30;

/// The most bytes any other file the host reads may have: a configuration,
/// a key, a trusted root, a CA file, the lockfile, a provenance record, a
/// Sigstore bundle.
pub const MAX_SMALL_FILE_BYTES: u64 = 1 << 20;

/// Opens `path` for reading without blocking, and checks that it is a
/// regular file (a symlink is followed). The error says what it is instead.
pub fn open_regular(path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        options.custom_flags(flags.bits() as i32);
    }
    let file = options.open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind(&metadata))));
    }
    Ok((file, metadata))
}

/// Opens `path` for appending, creating it readable and writable by its
/// owner only (mode 0600) if missing, without blocking, and checks that it
/// is a regular file: a FIFO (with no reader it is refused at once, never
/// waited on) or a device is refused, saying what it is.
pub fn open_append(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        options.custom_flags(flags.bits() as i32).mode(0o600);
    }
    let file = options.open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {}, not a regular file", kind(&metadata))));
    }
    Ok(file)
}

/// Opens the directory at `path` without blocking (a symlink is followed):
/// a FIFO or a device there is refused at once (`O_DIRECTORY`), never
/// waited on.
pub fn open_directory(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::DIRECTORY;
        options.custom_flags(flags.bits() as i32);
    }
    options.open(path).map_err(|error| match error.raw_os_error() {
        Some(code) if code == rustix::io::Errno::NOTDIR.raw_os_error() => {
            io::Error::new(io::ErrorKind::InvalidInput, "it is not a directory".to_string())
        }
        _ => error,
    })
}

/// Reads the regular file at `path`, at most `max_bytes` of it: larger is
/// refused before anything is read (and a file growing while read, after
/// `max_bytes + 1`).
pub fn read(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let (file, metadata) = open_regular(path)?;
    let too_large = || io::Error::new(io::ErrorKind::InvalidData, format!("it is larger than the {max_bytes} bytes it may have"));
    if metadata.len() > max_bytes {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read`], with `None` when there is no file at `path`.
pub fn read_if_exists(path: &Path, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    match read(path, max_bytes) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(missing) if missing.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// [`read`] of a text file (UTF-8) of at most [`MAX_SMALL_FILE_BYTES`].
pub fn read_text(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path, MAX_SMALL_FILE_BYTES)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// How [`open_beneath`] opens a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beneath {
    /// To read it: a regular file or a directory, anything else refused
    /// (see [`open_beneath`]).
    Read,
    /// To read it as a directory only.
    Directory,
    /// Only to look at it (`O_PATH`): whatever it is, even a FIFO, nothing
    /// of it is opened; for `fstat` and `readlinkat`.
    Look,
}

/// Opens `path` inside the directory `dir`, for a pack that was granted
/// that directory: the kernel resolves the path (`openat2` with
/// `RESOLVE_BENEATH`), so no `..`, absolute path or symlink, even one
/// swapped in while the path is resolved, can name anything outside `dir`
/// (refused with `EXDEV`); nor can it cross into another filesystem
/// mounted inside (`RESOLVE_NO_XDEV`: a `/proc` or a network mount below a
/// granted folder stays out of reach), or follow `/proc`-style magic
/// links. A final symlink is followed only if `follow` (else `ELOOP`, or
/// the link itself with [`Beneath::Look`]). The path is first only looked
/// at (`O_PATH`, which opens nothing of the file and cannot block): to
/// read, only a regular file or a directory is then opened, non-blocking,
/// and checked to be the same file, so a FIFO, a socket or a device is
/// refused with `EACCES` without its open ever running (a driver's open,
/// a FIFO's writer woken). An empty path names nothing (`ENOENT`). Returns
/// the descriptor and what `fstat` says of it.
pub fn open_beneath<Fd: std::os::fd::AsFd>(
    dir: Fd,
    path: &str,
    follow: bool,
    how: Beneath,
) -> io::Result<(std::os::fd::OwnedFd, rustix::fs::Stat)> {
    use rustix::fs::{FileType, OFlags};
    use rustix::io::Errno;
    if path.is_empty() {
        return Err(io::Error::from(Errno::NOENT));
    }
    let dir = dir.as_fd();
    let no_follow = if follow { OFlags::empty() } else { OFlags::NOFOLLOW };
    let looked_at = resolve_beneath(dir, path, OFlags::PATH | OFlags::CLOEXEC | no_follow)?;
    let seen = rustix::fs::fstat(&looked_at)?;
    let kind = FileType::from_raw_mode(seen.st_mode);
    let flags = match (how, kind) {
        (Beneath::Look, _) => return Ok((looked_at, seen)),
        (_, FileType::Symlink) => return Err(io::Error::from(Errno::LOOP)),
        (Beneath::Directory, FileType::Directory) | (Beneath::Read, FileType::Directory) => OFlags::DIRECTORY,
        (Beneath::Directory, FileType::RegularFile) => return Err(io::Error::from(Errno::NOTDIR)),
        (Beneath::Read, FileType::RegularFile) => OFlags::empty(),
        _ => return Err(io::Error::from(Errno::ACCESS)),
    };
    let flags = flags | OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC | no_follow;
    let opened = resolve_beneath(dir, path, flags).map_err(|error| match error.raw_os_error() {
        // What opening a socket file answers (it was swapped in since).
        Some(code) if code == Errno::NXIO.raw_os_error() => io::Error::from(Errno::ACCESS),
        _ => error,
    })?;
    let stat = rustix::fs::fstat(&opened)?;
    // Swapped for another file between the look and the open: refused. The
    // look is still open, so its inode cannot have been freed and its
    // number given to the file swapped in.
    let same = |stat: &rustix::fs::Stat| (stat.st_dev, stat.st_ino, FileType::from_raw_mode(stat.st_mode));
    if same(&stat) != same(&seen) {
        return Err(io::Error::from(Errno::ACCESS));
    }
    drop(looked_at);
    Ok((opened, stat))
}

/// `openat2` of `path` beneath `dir`, not crossing mounts or magic links,
/// tried again on `EAGAIN` (a `..` resolved while something was renamed).
fn resolve_beneath(dir: std::os::fd::BorrowedFd<'_>, path: &str, flags: rustix::fs::OFlags) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, ResolveFlags};
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV;
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(rustix::io::Errno::AGAIN) if tries < 4 => tries += 1,
            result => return result.map_err(io::Error::from),
        }
    }
}

/// Opens the directory an operator granted (following symlinks in the
/// operator's own path), refusing a filesystem a pack may not read: the
/// kernel's own (procfs, sysfs and the like expose the host and its other
/// processes), and a network or FUSE filesystem (a read of it can hang
/// past a call's deadline, where a local disk's cannot).
pub fn open_granted_folder(path: &Path) -> io::Result<std::os::fd::OwnedFd> {
    let dir = std::os::fd::OwnedFd::from(open_directory(path)?);
    let kind = rustix::fs::fstatfs(&dir)?.f_type as i64;
    if let Some(name) = REFUSED_FILESYSTEMS.iter().find(|(magic, _)| *magic == kind).map(|(_, name)| name) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("it is on {name}, which a pack may not read: grant a folder on a local disk"),
        ));
    }
    Ok(dir)
}

/// Filesystems a granted folder may not be on, by their magic number
/// (`statfs(2)`), with what the refusal calls them.
const REFUSED_FILESYSTEMS: &[(i64, &str)] = &[
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x1cd1, "devpts"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x0027_e0eb, "a cgroup filesystem"),
    (0x6367_7270, "a cgroup filesystem"),
    (0xcafe_4a11, "bpffs"),
    (0x6265_6570, "configfs"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x6573_5546, "a FUSE filesystem"),
    (0x6969, "NFS"),
    (0x517b, "SMB"),
    (0xff53_4d42, "CIFS"),
    (0xfe53_4d42, "SMB2"),
    (0x00c3_6400, "Ceph"),
    (0x5346_414f, "AFS"),
    (0x0102_1997, "9p"),
];

/// Raises this process's soft limit on open descriptors to its hard limit,
/// and returns the soft limit in force after: so that the host's own caps
/// (connections, granted folders), not a low default soft limit (often
/// 1024), are what bound its descriptors.
pub fn raise_descriptor_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else { return limit.current.unwrap_or(u64::MAX) };
    if soft >= hard || setrlimit(Resource::Nofile, Rlimit { current: Some(hard), maximum: Some(hard) }).is_err() {
        return soft;
    }
    hard
}

/// What a file that is not a regular file is, for messages.
fn kind(metadata: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let file_type = metadata.file_type();
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
    }
    if metadata.is_dir() { "a directory" } else { "not a file" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_beneath_a_directory_stays_beneath_it_and_never_blocks() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"outside").unwrap();
        let granted = tempfile::tempdir().unwrap();
        let root = granted.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/inside"), b"inside").unwrap();
        symlink(outside.path().join("secret"), root.join("out")).unwrap();
        symlink("sub/inside", root.join("in")).unwrap();
        symlink("../../../../../../../../etc/passwd", root.join("sub/up")).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(root.join("pipe")).status().unwrap().success());
        let dir = open_directory(root).unwrap();
        let errno = |path: &str, follow: bool, how: Beneath| open_beneath(&dir, path, follow, how).unwrap_err().raw_os_error();
        let exdev = Some(rustix::io::Errno::XDEV.raw_os_error());
        for escape in ["..", "../x", "sub/../../x", "/etc/passwd", "out", "sub/up"] {
            assert_eq!(errno(escape, true, Beneath::Read), exdev, "{escape}");
        }
        assert_eq!(errno("in", false, Beneath::Read), Some(rustix::io::Errno::LOOP.raw_os_error()));
        assert_eq!(errno("pipe", true, Beneath::Read), Some(rustix::io::Errno::ACCESS.raw_os_error()));
        assert_eq!(errno("sub/inside", true, Beneath::Directory), Some(rustix::io::Errno::NOTDIR.raw_os_error()));
        let (fd, stat) = open_beneath(&dir, "in", true, Beneath::Read).unwrap();
        assert_eq!(stat.st_size, 6);
        assert_eq!(std::io::read_to_string(File::from(fd)).unwrap(), "inside");
        assert!(open_beneath(&dir, "pipe", true, Beneath::Look).is_ok(), "looking at a FIFO opens nothing of it");
        assert_eq!(errno("proc-mount-absent", true, Beneath::Look), Some(rustix::io::Errno::NOENT.raw_os_error()));
        let procfs = open_granted_folder(Path::new("/proc")).unwrap_err().to_string();
        assert_eq!(procfs, "it is on procfs, which a pack may not read: grant a folder on a local disk");
        assert!(open_beneath(&dir, ".", true, Beneath::Directory).is_ok());
        assert_eq!(errno("", true, Beneath::Look), Some(rustix::io::Errno::NOENT.raw_os_error()));
    }

    #[test]
    fn a_fifo_a_directory_or_a_large_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(read(&fifo, 10).unwrap_err().to_string(), "it is a FIFO (named pipe), not a regular file");
        assert_eq!(read(dir.path(), 10).unwrap_err().to_string(), "it is a directory, not a regular file");
        let file = dir.path().join("file");
        std::fs::write(&file, b"12345678901").unwrap();
        assert_eq!(read(&file, 10).unwrap_err().to_string(), "it is larger than the 10 bytes it may have");
        assert_eq!(read(&file, 11).unwrap(), b"12345678901");
        assert_eq!(read_if_exists(&dir.path().join("none"), 10).unwrap(), None);
    }
}
