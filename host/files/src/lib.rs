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
