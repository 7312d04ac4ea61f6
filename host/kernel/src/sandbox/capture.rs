//! Where a plugin's stdout and stderr go: a bounded buffer that keeps the
//! first bytes and counts the rest. Writes never fail, so a chatty plugin
//! behaves as it would with a real terminal (Rust's `println!` panics when a
//! write fails), and never reach the host's own stdout.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// How much a guest may write in one go; it is always ready for more.
const WRITE_BUDGET: usize = 64 << 10;

/// One stream of a call's output, kept up to a capacity.
#[derive(Clone)]
pub struct CapturedOutput {
    capacity: usize,
    captured: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: usize,
}

impl CapturedOutput {
    pub fn new(capacity: usize) -> CapturedOutput {
        CapturedOutput { capacity, captured: Arc::default() }
    }

    fn accept(&self, data: &[u8]) {
        let mut captured = self.captured.lock().unwrap();
        let keep = data.len().min(self.capacity - captured.kept.len());
        captured.kept.extend_from_slice(&data[..keep]);
        captured.dropped += data.len() - keep;
    }

    /// What was kept, as text, and how many bytes past the capacity were
    /// dropped.
    pub fn contents(&self) -> (String, usize) {
        let captured = self.captured.lock().unwrap();
        (String::from_utf8_lossy(&captured.kept).into_owned(), captured.dropped)
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.accept(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(WRITE_BUDGET)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CapturedOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.accept(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let output = CapturedOutput::new(5);
        output.accept(b"hel");
        output.accept(b"lo world");
        assert_eq!(output.contents(), ("hello".to_string(), 6));
    }
}
