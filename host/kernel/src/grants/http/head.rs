//! The bound on a response's head as it is read: a connection that counts
//! the bytes of the status line and headers (and of any interim `1xx`
//! heads before them) and fails the read that would pass
//! [`MAX_RESPONSE_HEAD`]. hyper's own `max_buf_size` checks only a head
//! still incomplete when its buffer fills, so heads of up to about 100 KiB
//! passed it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::MAX_RESPONSE_HEAD;

/// The error a read ends in when the head passes the bound.
#[derive(Debug)]
pub struct HeadTooLarge;

impl std::fmt::Display for HeadTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the response's head is longer than {MAX_RESPONSE_HEAD} bytes")
    }
}

impl std::error::Error for HeadTooLarge {}

/// Whether `error` (or what caused it) is [`HeadTooLarge`].
pub fn is_head_too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.downcast_ref::<HeadTooLarge>().is_some()
            || error.downcast_ref::<io::Error>().and_then(|io| io.get_ref()).is_some_and(|inner| inner.is::<HeadTooLarge>())
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Where the reading of heads stands.
#[derive(Debug, Default)]
struct HeadScan {
    /// Bytes of heads read so far.
    read: usize,
    /// The first bytes of the head being read (its status line's start).
    status: Vec<u8>,
    /// The last byte ended a line (a line feed; carriage returns aside).
    line_start: bool,
    /// The final head has been read whole: the rest is the body.
    done: bool,
}

/// `HTTP/1.1 1`: the start of an interim head, which another head follows.
const STATUS_PREFIX: usize = "HTTP/1.1 1".len();

impl HeadScan {
    /// Counts the bytes of `bytes` that belong to heads; fails once they
    /// pass the bound.
    fn scan(&mut self, bytes: &[u8]) -> Result<(), HeadTooLarge> {
        for &byte in bytes {
            if self.done {
                return Ok(());
            }
            self.read += 1;
            if self.read > MAX_RESPONSE_HEAD {
                return Err(HeadTooLarge);
            }
            match byte {
                b'\r' => {}
                b'\n' if self.line_start && !self.status.is_empty() => {
                    // A blank line ends a head: an interim one (1xx) has another after it.
                    let interim = self.status.len() >= STATUS_PREFIX && self.status[STATUS_PREFIX - 1] == b'1';
                    self.done = !interim;
                    self.status.clear();
                }
                b'\n' => self.line_start = true,
                _ => {
                    self.line_start = false;
                    if self.status.len() < STATUS_PREFIX {
                        self.status.push(byte);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A connection whose response heads are bounded as they are read.
pub struct HeadLimited<S> {
    inner: S,
    scan: HeadScan,
}

impl<S> HeadLimited<S> {
    pub fn new(inner: S) -> HeadLimited<S> {
        HeadLimited { inner, scan: HeadScan::default() }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadLimited<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let this = &mut *self;
        match this.scan.scan(&buf.filled()[before..]) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(too_large) => Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, too_large))),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadLimited<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head of exactly `bytes` bytes: a status line, fillers, a blank line.
    fn head(status: &str, bytes: usize) -> Vec<u8> {
        let mut head = format!("HTTP/1.1 {status}\r\n").into_bytes();
        let end = b"content-length: 0\r\n\r\n";
        // Fillers of 6 to 1,005 bytes: `x: `, a value, CRLF.
        let fill = bytes - head.len() - end.len();
        let count = fill.div_ceil(1005);
        for at in 0..count {
            let size = fill / count + usize::from(at < fill % count);
            head.extend(format!("x: {}\r\n", "z".repeat(size - 5)).into_bytes());
        }
        head.extend_from_slice(end);
        assert_eq!(head.len(), bytes, "the test's head is not of the size asked for");
        head
    }

    fn scanned(chunks: &[&[u8]]) -> Result<HeadScan, HeadTooLarge> {
        let mut scan = HeadScan::default();
        for chunk in chunks {
            scan.scan(chunk)?;
        }
        Ok(scan)
    }

    #[test]
    fn a_head_of_the_bound_passes_and_one_byte_more_does_not() {
        let exact = head("200 OK", MAX_RESPONSE_HEAD);
        let scan = scanned(&[&exact, b"the body, which is not counted"]).unwrap();
        assert!(scan.done);
        assert_eq!(scan.read, MAX_RESPONSE_HEAD);
        assert!(scanned(&[&head("200 OK", MAX_RESPONSE_HEAD + 1)]).is_err());
        // However it is split into reads.
        let over = head("200 OK", MAX_RESPONSE_HEAD + 1);
        let chunks: Vec<&[u8]> = over.chunks(7).collect();
        assert!(scanned(&chunks).is_err());
        let chunks: Vec<&[u8]> = exact.chunks(3).collect();
        assert!(scanned(&chunks).unwrap().done);
    }

    #[test]
    fn interim_heads_and_blank_lines_before_a_head_count_too() {
        let interim = head("100 Continue", 40_000);
        let last = head("200 OK", MAX_RESPONSE_HEAD - 40_000 + 1);
        assert!(scanned(&[&interim, &last]).is_err());
        let last = head("200 OK", MAX_RESPONSE_HEAD - 40_000);
        assert!(scanned(&[&interim, &last]).unwrap().done);
        // Blank lines before the status line do not end the head.
        let mut leading = b"\r\n\n\r\n".to_vec();
        leading.extend(head("200 OK", MAX_RESPONSE_HEAD));
        assert!(scanned(&[&leading]).is_err());
        // Bare line feeds end lines and heads, as parsers accept them.
        let scan = scanned(&[b"HTTP/1.1 200 OK\nx: y\n\nbody"]).unwrap();
        assert_eq!((scan.done, scan.read), (true, 22));
    }
}
