//! MCP over stdin and stdout, one JSON-RPC message per line, with a bound on
//! the length of a line.
//!
//! rmcp's own stdio transport drops a line over its cap with only a log line,
//! and the client that sent it waits forever. This transport frames lines the
//! same way, with rmcp's codec, and answers an overlong line itself: a
//! JSON-RPC error carrying the request's id where it can be read. So it does
//! a line rmcp cannot parse (too deeply nested, not UTF-8, cut short), which
//! rmcp drops: see [`super::malformed`]. rmcp still handles the protocol;
//! this module owns reading and framing lines, and writes through the same
//! writer rmcp's transport uses.
//!
//! Once rmcp has started the session, the hot methods (`prompts/get`,
//! `prompts/list`, `completion/complete`) are answered here, on the thread
//! that read them: see `HotPath`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{ErrorCode, ErrorData, JsonRpcMessage, JsonRpcResponse, RequestId, ServerJsonRpcMessage, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use rustix::net::{RecvFlags, SendFlags};
use serde_json::json;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::sync::Mutex;
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

use super::TransportError;
use super::malformed::{self, FoundId};
use crate::handler::PromptServer;

mod hot_path;
use hot_path::{Calls, HotOutcome, HotPath, SharedWriter, closed, logged_ids, write_message};

/// The default for `--max-message-kib`: rmcp's own cap on a line, 16 MiB.
pub const DEFAULT_MAX_MESSAGE_KIB: usize = 16 << 10;

/// The largest `--max-message-kib` accepted: 1 GiB.
pub const MAX_MAX_MESSAGE_KIB: usize = 1 << 20;

/// How much of the start of an overlong line is read for its id. Most
/// clients write the id before the parameters.
const HEAD_BYTES: usize = 4 << 10;

/// How much of the end of an overlong line is kept for its id. The official
/// TypeScript SDK writes the id last (`{"method":…,"params":…,"jsonrpc":"2.0","id":7}`).
const TAIL_BYTES: usize = 128;

/// Serves MCP over this process's stdin and stdout until the client closes
/// stdin, or `stop` completes. A line (one message) may hold at most
/// `max_message_bytes` bytes before its newline. Only protocol messages are
/// written to stdout.
///
/// When `stop` completes, no more of stdin is read; the requests already read
/// have `grace` to be answered (their answers are written), and then the
/// session is closed. A call still running after `grace` is abandoned.
pub async fn serve_stdio(
    server: PromptServer,
    max_message_bytes: usize,
    stop: impl Future<Output = ()>,
    grace: std::time::Duration,
) -> Result<(), TransportError> {
    match (SocketStdio::of(std::io::stdin().as_fd()), SocketStdio::of(std::io::stdout().as_fd())) {
        (Some(stdin), Some(stdout)) => {
            tracing::debug!("stdin and stdout are sockets: reading and writing them without blocking");
            serve(server, StdioTransport::new(stdin, stdout, max_message_bytes), stop, grace).await
        }
        _ => {
            tracing::debug!("stdin and stdout are not both sockets: rmcp's stdio streams");
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            serve(server, StdioTransport::new(stdin, stdout, max_message_bytes), stop, grace).await
        }
    }
}

/// Serves MCP over `transport`, as [`serve_stdio`] says.
async fn serve<R, W>(
    server: PromptServer,
    mut transport: StdioTransport<R, W>,
    stop: impl Future<Output = ()>,
    grace: std::time::Duration,
) -> Result<(), TransportError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (stopping, calls) = (transport.stopping.clone(), transport.calls.clone());
    transport.input_ended = server.session_ended();
    let session_ended = server.session_ended();
    let server = Arc::new(server);
    let hot = HotPath::new(server.clone());
    let session_started = hot.peer.clone();
    transport.hot = Some(hot);
    let mut stop = std::pin::pin!(stop);
    let running = tokio::select! {
        running = rmcp::ServiceExt::serve(server, transport) => running.map_err(|error| TransportError::Start(error.to_string()))?,
        // No session yet: nothing to let finish.
        () = &mut stop => return Ok(()),
    };
    // From here on, the hot methods are answered by the transport.
    let _ = session_started.set(running.peer().clone());
    let session = running.cancellation_token();
    let mut ended = std::pin::pin!(running.waiting());
    tokio::select! {
        reason = &mut ended => {
            let reason = reason.map_err(|error| TransportError::Run(error.to_string()))?;
            tracing::info!(?reason, "stdio session ended");
            return Ok(());
        }
        () = stop => {}
    }
    stopping.cancel();
    // An elicitation waiting for the client's answer would hold the stop for
    // the whole grace: it ends now, and its call is answered.
    session_ended.cancel();
    let (count, open) = calls.open_requests();
    if count > 0 {
        tracing::info!(count, ids = ?logged_ids(&open), "no more requests are read; answering those already read");
    }
    let finished = super::drain(&calls.tracker, grace).await;
    if !finished {
        let (count, open) = calls.open_requests();
        tracing::warn!(count, ids = ?logged_ids(&open), answers_being_written = count - open.len(), "requests left unanswered");
    }
    session.cancel();
    // With every call answered, rmcp closes the session at once; a call
    // abandoned is not waited for.
    if finished {
        let _ = ended.await;
    }
    Ok(())
}

/// stdin or stdout when it is a Unix socket, read and written through
/// tokio's reactor without blocking.
///
/// Clients started from Node (the official TypeScript SDK, the MCP
/// Inspector, many desktop apps) give a server socket pairs, not pipes.
/// rmcp's `stdio_pipes()` reads FIFOs without blocking but falls back to
/// tokio's blocking stdio for anything else, which hands every read and
/// every write to a thread of the blocking pool: two thread hand-offs per
/// message. Here each read and write is one `recv`/`send` with
/// `MSG_DONTWAIT` on a duplicate of the descriptor, so the socket's own
/// blocking mode (shared with whatever else holds it) is left alone.
pub struct SocketStdio(AsyncFd<OwnedFd>);

impl SocketStdio {
    /// The descriptor as a non-blocking stream, if it is a socket.
    pub fn of(fd: BorrowedFd<'_>) -> Option<SocketStdio> {
        let stat = rustix::fs::fstat(fd).ok()?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
            return None;
        }
        let own: OwnedFd = rustix::io::fcntl_dupfd_cloexec(fd, 3).ok()?;
        // SAFETY: an OwnedFd is an open descriptor, owned by the AsyncFd
        // from here until it is dropped, and it always names that descriptor.
        unsafe { AsyncFd::register_with_interest(own, Interest::READABLE | Interest::WRITABLE) }.ok().map(SocketStdio)
    }
}

impl AsyncRead for SocketStdio {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut ready = std::task::ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| Ok(rustix::net::recv(fd, &mut *unfilled, RecvFlags::DONTWAIT)?)) {
                Ok(received) => {
                    let (read, _) = received?;
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for SocketStdio {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut ready = std::task::ready!(self.0.poll_write_ready(cx))?;
            let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
            match ready.try_io(|fd| Ok(rustix::net::send(fd, bytes, flags)?)) {
                Ok(sent) => return Poll::Ready(sent),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// An rmcp transport over a reader and a writer of JSON-RPC lines, which
/// answers a line longer than its limit instead of dropping it.
pub struct StdioTransport<R, W> {
    lines: FramedRead<R, LineCodec>,
    /// rmcp's writer: the transport's own answers share it with rmcp's.
    write: SharedWriter<W>,
    /// An answer the transport made (to a refused line, or a hot request
    /// answered at once), until it has been written and flushed.
    answer: Option<PendingAnswer>,
    /// Cancelled when the server stops: from then on, no line is read.
    stopping: CancellationToken,
    /// The requests read and not yet answered.
    calls: Arc<Calls>,
    /// Cancelled at the end of the input: the client is gone, and the
    /// elicitations waiting for its answers with it (the server's session
    /// end, see `serve`).
    input_ended: CancellationToken,
    /// The hot methods, answered here once the session has started; without
    /// it, every message goes to rmcp.
    hot: Option<HotPath>,
}

struct PendingAnswer {
    /// The answer, until the writer holds it (then only the flush is left).
    message: Option<ServerJsonRpcMessage>,
    /// The token of the hot request it answers, released once it is
    /// written, or never to be (a refused line was never started: none).
    _request: Option<TaskTrackerToken>,
}

impl<R: AsyncRead, W: AsyncWrite> StdioTransport<R, W> {
    pub fn new(read: R, write: W, max_message_bytes: usize) -> Self {
        StdioTransport {
            lines: FramedRead::new(read, LineCodec::new(max_message_bytes)),
            write: Arc::new(Mutex::new(Some(FramedWrite::new(write, JsonRpcMessageCodec::default())))),
            answer: None,
            stopping: CancellationToken::new(),
            calls: Arc::default(),
            input_ended: CancellationToken::new(),
            hot: None,
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Send + Unpin + 'static> StdioTransport<R, W> {
    /// Writes and flushes the answer the transport holds, if any, and then
    /// finishes the request it answers. Kept in `self` across awaits: a
    /// write dropped half-way resumes where it stopped. False if stdout
    /// cannot be written.
    async fn write_held_answer(&mut self) -> bool {
        let Some(answer) = &mut self.answer else { return true };
        let mut write = self.write.lock().await;
        let written = match write.as_mut() {
            None => Err(closed()),
            Some(writer) => {
                let written: Result<(), JsonRpcMessageCodecError> = async {
                    if answer.message.is_some() {
                        std::future::poll_fn(|cx| writer.poll_ready_unpin(cx)).await?;
                        // Synchronous: once taken, the message is the writer's.
                        writer.start_send_unpin(answer.message.take().expect("checked above"))?;
                    }
                    writer.flush().await
                }
                .await;
                written.map_err(io::Error::from)
            }
        };
        // Written, or never to be: either way the request is over.
        drop(self.answer.take());
        match written {
            Ok(()) => true,
            Err(error) => {
                tracing::error!(%error, "cannot write to stdout");
                false
            }
        }
    }

    /// The next message for rmcp, read from the lines.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if let Some(hot) = &self.hot
            && hot.initialize_answered
        {
            hot.peer.wait().await;
        }
        loop {
            if !self.write_held_answer().await {
                return None;
            }
            let Some(line) = self.lines.next().await else {
                if let Some(hot) = &mut self.hot {
                    hot.finish().await;
                }
                return None;
            };
            match line {
                Ok(Incoming::Message(message)) => {
                    let Some(hot) = &mut self.hot else {
                        self.calls.read(&message);
                        return Some(message);
                    };
                    let more_read = !self.lines.read_buffer().is_empty();
                    match hot.take(message, more_read, &self.write, &self.calls).await {
                        HotOutcome::ForRmcp(message) => {
                            self.calls.read(&message);
                            return Some(message);
                        }
                        HotOutcome::Answered(message, request) => {
                            self.answer = Some(PendingAnswer { message: Some(message), _request: Some(request) })
                        }
                        HotOutcome::Running => {}
                    }
                }
                Ok(Incoming::Refused(message)) => self.answer = Some(PendingAnswer { message: Some(message), _request: None }),
                Err(error) => {
                    tracing::error!(%error, "cannot read stdin");
                    return None;
                }
            }
        }
    }

    /// How many requests the transport took to answer itself.
    fn handled_here(&self) -> u64 {
        self.hot.as_ref().map_or(0, |hot| hot.handled)
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        if let JsonRpcMessage::Response(JsonRpcResponse { result: ServerResult::InitializeResult(_), .. }) = &item
            && let Some(hot) = &mut self.hot
        {
            hot.initialize_answered = true;
        }
        // The request is no longer open the moment rmcp hands over its
        // answer, as rmcp drops it from its own table then (a request with
        // its id read from here on is a new one); its token is released
        // once the answer is written, or never to be.
        let answering = answered_id(&item).and_then(|id| self.calls.take_open(&id));
        let write = self.write.clone();
        async move {
            let sent = write_message(&write, item).await;
            drop(answering);
            sent
        }
    }

    /// The next message for rmcp; none once the server stops. rmcp polls
    /// this inside a `select!` and may drop it at any await, so every step
    /// keeps its progress in `self`: the framed reader keeps a partial line,
    /// and `answer` a half-written answer.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let stopping = self.stopping.clone();
        let message = tokio::select! {
            biased;
            () = stopping.cancelled() => None,
            message = self.next_message() => Some(message),
        };
        match message {
            Some(message) => {
                if message.is_none() {
                    tracing::info!(handled_here = self.handled_here(), "the input ended");
                    self.input_ended.cancel();
                }
                message
            }
            // Not the end of the input: an answer already made is written,
            // and rmcp goes on writing the answers of the calls in flight
            // until the session is closed.
            None => {
                self.write_held_answer().await;
                std::future::pending().await
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

/// The request a message from the server answers, if it is an answer.
fn answered_id(message: &TxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(response.id.clone()),
        JsonRpcMessage::Error(error) => error.id.clone(),
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
    }
}

/// What one line from the client comes to.
#[derive(Debug)]
pub enum Incoming {
    /// A message for rmcp to handle.
    Message(RxJsonRpcMessage<RoleServer>),
    /// A line rmcp never sees, and the error that answers it.
    Refused(ServerJsonRpcMessage),
}

/// Decodes `input` as this transport decodes stdin, with lines of at most
/// `limit` bytes, arriving in reads of `read` bytes and then the end of the
/// input: each message for rmcp, or the answer the transport writes itself.
/// Also returns the most bytes the decoder held at once. For tests and
/// fuzzing: the same decoder as [`serve_stdio`]'s, without a process.
pub fn decode_lines(limit: usize, input: &[u8], read: usize) -> io::Result<(Vec<Incoming>, usize)> {
    let mut codec = LineCodec::new(limit);
    let mut buffer = BytesMut::new();
    let (mut items, mut held) = (Vec::new(), 0);
    for piece in input.chunks(read.max(1)) {
        buffer.extend_from_slice(piece);
        held = held.max(buffer.len());
        while let Some(item) = codec.decode(&mut buffer)? {
            items.push(item);
        }
    }
    while let Some(item) = codec.decode_eof(&mut buffer)? {
        items.push(item);
    }
    Ok((items, held))
}

/// Frames lines of at most `limit` bytes with rmcp's codec, which parses them
/// as rmcp's own transport would, and turns a longer line into an error for
/// its sender. Of a longer line it keeps only what it has read when the limit
/// is passed, until its id is read from that, and then [`TAIL_BYTES`]. A
/// line rmcp cannot parse is answered too ([`malformed::answer`]).
struct LineCodec {
    limit: usize,
    rmcp: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    /// The line over the limit being skipped, until its newline.
    overlong: Option<Overlong>,
    /// How much of the buffer is known to hold no newline: a long line
    /// arriving in many reads is searched once.
    searched: usize,
}

impl LineCodec {
    fn new(limit: usize) -> LineCodec {
        LineCodec { limit, rmcp: JsonRpcMessageCodec::new_with_max_length(limit), overlong: None, searched: 0 }
    }
}

impl Decoder for LineCodec {
    type Item = Incoming;
    type Error = io::Error;

    fn decode(&mut self, buffer: &mut BytesMut) -> io::Result<Option<Incoming>> {
        loop {
            if let Some(overlong) = &mut self.overlong {
                let newline = buffer.iter().position(|&byte| byte == b'\n');
                let end = newline.unwrap_or(buffer.len());
                overlong.skip(&buffer[..end]);
                buffer.advance(newline.map_or(end, |end| end + 1));
                if newline.is_none() {
                    return Ok(None);
                }
                let overlong = self.overlong.take().expect("an overlong line is being skipped");
                match overlong.answer(self.limit) {
                    Some(answer) => return Ok(Some(Incoming::Refused(answer))),
                    None => continue,
                }
            }
            let unread = buffer.len();
            // rmcp takes a line out of the buffer before it parses it, and
            // drops a line it cannot parse: copy the line first, so that it is
            // answered with its id.
            let window = unread.min(self.limit + 1);
            let from = self.searched.min(window);
            let newline = buffer[from..window].iter().position(|&byte| byte == b'\n').map(|at| from + at);
            let line = newline.map(|end| Bytes::copy_from_slice(&buffer[..end]));
            self.searched = if newline.is_some() { 0 } else { window };
            match self.rmcp.decode(buffer) {
                Ok(Some(message)) => return Ok(Some(Incoming::Message(message))),
                // rmcp skips a notification it does not know with no item: the
                // line is gone from the buffer, and the next may be whole already.
                // It skips a request too (a message with an id) whose method
                // starts with `notifications/`, when it cannot read it: that
                // one is answered.
                Ok(None) if buffer.len() < unread => {
                    if let Some(line) = line.filter(|line| malformed::find_id(line).is_request())
                        && let Err(error) = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&line)
                        && let Some(answer) = malformed::answer("stdio", &line, &error)
                    {
                        return Ok(Some(Incoming::Refused(answer)));
                    }
                    continue;
                }
                Ok(None) => return Ok(None),
                Err(JsonRpcMessageCodecError::MaxLineLengthExceeded) => {
                    // No newline in the first `limit + 1` bytes. rmcp's codec
                    // would skip the rest of the line silently: skip it here instead.
                    self.rmcp = JsonRpcMessageCodec::new_with_max_length(self.limit);
                    self.searched = 0;
                    self.overlong = Some(Overlong::starting(&buffer[..=self.limit]));
                }
                Err(JsonRpcMessageCodecError::Serde(error)) => {
                    let line = line.expect("rmcp parses a line only once its newline is in the buffer");
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    // A blank line carries no message: nothing to answer.
                    if line.trim_ascii().is_empty() {
                        continue;
                    }
                    // Every line that is not a message rmcp reads is answered,
                    // with its id when it can be read: -32700 when it is not
                    // JSON (answers are well-formed JSON, so two peers cannot
                    // answer each other's answers), -32600 when it is no
                    // JSON-RPC message.
                    // A client's malformed response is logged only.
                    match malformed::answer("stdio", line, &error) {
                        Some(answer) => return Ok(Some(Incoming::Refused(answer))),
                        None => continue,
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    fn decode_eof(&mut self, buffer: &mut BytesMut) -> io::Result<Option<Incoming>> {
        if let Some(incoming) = self.decode(buffer)? {
            return Ok(Some(incoming));
        }
        if buffer.is_empty() && self.overlong.is_none() {
            return Ok(None);
        }
        // A last line with no newline is read as if it had one, as rmcp's
        // transport reads it: a message cut short by the end of the input is
        // answered too.
        buffer.extend_from_slice(b"\n");
        self.decode(buffer)
    }
}

/// A line over the limit, skipped as it arrives.
struct Overlong {
    /// The id read from the line's first [`HEAD_BYTES`].
    head: FoundId,
    /// Bytes of the line so far, its newline not counted.
    bytes: usize,
    /// The last [`TAIL_BYTES`] bytes seen.
    tail: Vec<u8>,
}

impl Overlong {
    /// Starts skipping a line, reading its id from its first bytes (`start`
    /// holds no newline).
    fn starting(start: &[u8]) -> Overlong {
        Overlong { head: malformed::find_id(&start[..start.len().min(HEAD_BYTES)]), bytes: 0, tail: Vec::with_capacity(TAIL_BYTES) }
    }

    fn skip(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len();
        let kept = bytes.len().min(TAIL_BYTES);
        let dropped = (self.tail.len() + kept).saturating_sub(TAIL_BYTES);
        self.tail.drain(..dropped);
        self.tail.extend_from_slice(&bytes[bytes.len() - kept..]);
    }

    /// The error that answers the line: -32700 when it does not start as
    /// JSON, else -32600 with the request's id when it could be read (the
    /// last one, as serde_json reads duplicate keys: an id that is the
    /// line's last member wins over one in its head). A client's response
    /// is not answered (`None`), only logged.
    fn answer(self, limit: usize) -> Option<ServerJsonRpcMessage> {
        let is_response = self.head == FoundId::Response;
        let (code, id) = match self.head {
            FoundId::NotJson => (ErrorCode::PARSE_ERROR, None),
            FoundId::Id(id) => (ErrorCode::INVALID_REQUEST, id_at_end(&self.tail).or(Some(id))),
            FoundId::UnusableId | FoundId::NoId | FoundId::Response => (ErrorCode::INVALID_REQUEST, id_at_end(&self.tail)),
        };
        tracing::warn!(bytes = self.bytes, limit, ?id, "refused a message over the size limit");
        if is_response {
            return None;
        }
        let message = format!("the message is {} bytes, more than the limit of {limit} bytes (set by --max-message-kib)", self.bytes);
        let data = json!({ "bytes": self.bytes, "limit": { "bytes": limit } });
        Some(ServerJsonRpcMessage::error(ErrorData::new(code, message, Some(data)), id))
    }
}

/// The id of a message whose last member is its `id`, read from the end of
/// the line: `…,"id":7}`. (Inside a JSON string, `"id"` could not appear with
/// unescaped quotes, so a match is the key of a member.)
fn id_at_end(tail: &[u8]) -> Option<RequestId> {
    let text = tail.trim_ascii_end().strip_suffix(b"}")?;
    let key = text.windows(4).rposition(|window| window == b"\"id\"")?;
    if !matches!(text[..key].trim_ascii_end().last(), Some(b',' | b'{')) {
        return None;
    }
    let value = text[key + 4..].trim_ascii_start().strip_prefix(b":")?;
    serde_json::from_slice(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Feeds `input` to a codec of `limit` bytes in chunks of `chunk` bytes,
    /// as reads would deliver it, and returns every item as JSON.
    fn decode_all(limit: usize, input: &[u8], chunk: usize) -> Vec<Value> {
        let mut codec = LineCodec::new(limit);
        let mut buffer = BytesMut::new();
        let mut items = Vec::new();
        for piece in input.chunks(chunk) {
            buffer.extend_from_slice(piece);
            while let Some(item) = codec.decode(&mut buffer).unwrap() {
                items.push(match item {
                    Incoming::Message(message) => json!({ "message": message }),
                    Incoming::Refused(answer) => json!({ "answer": answer }),
                });
            }
            // Never more than the limit, its newline and one chunk.
            assert!(buffer.len() <= limit + 1 + chunk, "{} bytes buffered", buffer.len());
        }
        items
    }

    fn answer(code: i32, id: Option<Value>, bytes: usize, limit: usize) -> Value {
        let mut answer = json!({ "answer": {
            "jsonrpc": "2.0",
            "error": {
                "code": code,
                "message": format!("the message is {bytes} bytes, more than the limit of {limit} bytes (set by --max-message-kib)"),
                "data": { "bytes": bytes, "limit": { "bytes": limit } },
            },
        }});
        if let Some(id) = id {
            answer["answer"]["id"] = id;
        }
        answer
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    #[test]
    fn lines_within_the_limit_pass_through_whatever_the_reads() {
        let input = format!("{PING}\n{PING}\n");
        for chunk in [1, 7, input.len()] {
            let items = decode_all(PING.len(), input.as_bytes(), chunk);
            assert_eq!(items.len(), 2, "chunks of {chunk}: {items:?}");
            assert_eq!(items[0]["message"]["method"], "ping");
        }
    }

    #[test]
    fn an_overlong_line_is_answered_with_its_id_and_the_next_line_served() {
        let long = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{{"name":"{}"}}}}"#, "x".repeat(300));
        let input = format!("{long}\n{PING}\n");
        for chunk in [1, 64, input.len()] {
            let items = decode_all(100, input.as_bytes(), chunk);
            assert_eq!(items[0], answer(-32600, Some(json!(7)), long.len(), 100), "chunks of {chunk}");
            assert_eq!(items[1]["message"]["id"], 1);
            assert_eq!(items.len(), 2);
        }
    }

    #[test]
    fn an_id_written_last_is_read_from_the_end_of_the_line() {
        let long = format!(r#"{{"method":"prompts/get","params":{{"name":"{}"}},"jsonrpc":"2.0","id":"req-9"}}"#, "x".repeat(300));
        let items = decode_all(100, format!("{long}\r\n").as_bytes(), 16);
        assert_eq!(items, [answer(-32600, Some(json!("req-9")), long.len() + 1, 100)]);
    }

    #[test]
    fn an_overlong_line_without_an_id_is_invalid_and_one_that_is_not_json_unparsable() {
        let no_id = format!(r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#, "y".repeat(300));
        let not_json = "z".repeat(300);
        let items = decode_all(100, format!("{no_id}\n{not_json}\n").as_bytes(), 50);
        assert_eq!(items, [answer(-32600, None, no_id.len(), 100), answer(-32700, None, 300, 100)]);
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes() {
        let items = decode_all(PING.len(), format!("{PING}\n").as_bytes(), 3);
        assert_eq!(items[0]["message"]["id"], 1);
        let items = decode_all(PING.len() - 1, format!("{PING}\n").as_bytes(), 3);
        assert_eq!(items, [answer(-32600, Some(json!(1)), PING.len(), PING.len() - 1)]);
    }

    #[test]
    fn lines_rmcp_cannot_parse_are_answered_and_those_it_skips_are_skipped() {
        // rmcp skips the stderr notification (no "jsonrpc") with no item; a
        // blank line carries no message.
        let input = format!("not json\n{{\"method\":\"notifications/stderr\",\"params\":{{}}}}\n\r\n \n{{\"foo\":1}}\n{PING}\n");
        let items = decode_all(1000, input.as_bytes(), input.len());
        assert_eq!(
            items,
            [
                json!({ "answer": { "jsonrpc": "2.0", "error": { "code": -32700, "message": "Parse error: expected ident at line 1 column 2" } } }),
                json!({ "answer": { "jsonrpc": "2.0", "error": { "code": -32600, "message": "Invalid request: unrecognized JSON-RPC message" } } }),
                json!({ "message": serde_json::from_str::<Value>(PING).unwrap() }),
            ]
        );
    }

    fn error_of(item: &Incoming) -> (i32, Option<RequestId>) {
        match item {
            Incoming::Refused(JsonRpcMessage::Error(error)) => (error.error.code.0, error.id.clone()),
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn a_line_nested_past_serde_jsons_limit_is_answered_with_its_id() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let get =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{{"name":"a","arguments":{{"x":{}}}}}}}"#, nested(200));
        let unknown =
            format!(r#"{{"jsonrpc":"2.0","id":"two","method":"x/y","params":{}{}}}"#, "{\"a\":".repeat(100_000), "}".repeat(100_000));
        let context = format!(r#"{{"jsonrpc":"2.0","method":"completion/complete","params":{{"context":{}}},"id":3}}"#, nested(1_000_000));
        let input = format!("{get}\n{unknown}\n{context}\n");
        for read in [4096, input.len()] {
            let (items, held) = decode_lines(4 << 20, input.as_bytes(), read).unwrap();
            let answers: Vec<_> = items.iter().map(error_of).collect();
            assert_eq!(
                answers,
                [
                    (-32700, Some(RequestId::Number(1))),
                    (-32700, Some(RequestId::String("two".into()))),
                    (-32700, Some(RequestId::Number(3)))
                ]
            );
            assert!(held <= input.len());
        }
    }

    #[test]
    fn invalid_utf8_and_lines_cut_short_are_answered_with_their_id() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"pi\n{\"id\":6,\"method\"";
        let (items, _) = decode_lines(1000, input, 7).unwrap();
        let answers: Vec<_> = items.iter().map(error_of).collect();
        assert_eq!(
            answers,
            [(-32700, Some(RequestId::Number(4))), (-32700, Some(RequestId::Number(5))), (-32700, Some(RequestId::Number(6)))]
        );
    }

    #[tokio::test]
    async fn an_answer_survives_a_receive_dropped_while_writing_it() {
        use tokio::io::AsyncReadExt;

        let input = format!("{}\n{PING}\n", "z".repeat(200));
        // One byte of room: writing the answer stops after its first byte.
        let (writer, mut peer) = tokio::io::duplex(1);
        let mut transport = StdioTransport::new(input.as_bytes(), writer, 100);
        {
            let mut receive = std::pin::pin!(transport.receive());
            assert!(futures::poll!(&mut receive).is_pending());
        }
        let output = tokio::spawn(async move {
            let mut bytes = Vec::new();
            peer.read_to_end(&mut bytes).await.unwrap();
            bytes
        });
        let next = transport.receive().await.expect("the next line is served");
        assert_eq!(serde_json::to_value(next).unwrap()["id"], 1);
        transport.close().await.unwrap();
        let written: Value = serde_json::from_slice(&output.await.unwrap()).expect("one whole answer");
        assert_eq!(json!({ "answer": written }), answer(-32700, None, 200, 100));
    }

    #[test]
    fn a_reused_id_is_one_open_request_as_rmcp_answers_it_once() {
        let calls = Calls::default();
        calls.started(RequestId::Number(7));
        calls.started(RequestId::Number(7));
        assert_eq!(calls.open_ids(), [RequestId::Number(7)]);
        assert_eq!(calls.tracker.len(), 1);
        drop(calls.take_open(&RequestId::Number(7)));
        assert!(calls.open_ids().is_empty());
        assert!(calls.tracker.is_empty());
        // An answer naming an id not open finishes nothing.
        calls.started(RequestId::Number(8));
        drop(calls.take_open(&RequestId::Number(7)));
        assert_eq!(calls.open_ids(), [RequestId::Number(8)]);
    }

    #[tokio::test]
    async fn a_request_read_while_an_answer_with_its_id_is_written_is_a_new_one() {
        // rmcp drops a request from its table when it hands over the
        // answer: a request with the same id read while that answer is
        // written is new, and rmcp will answer it.
        let (writer, _output) = tokio::io::duplex(4096);
        let mut transport = StdioTransport::new(&b""[..], writer, 1000);
        let id = RequestId::Number(5);
        transport.calls.started(id.clone());
        let writing = transport.send(ServerJsonRpcMessage::error(ErrorData::internal_error("done", None), Some(id.clone())));
        assert!(transport.calls.open_ids().is_empty());
        assert_eq!(transport.calls.tracker.len(), 1, "the answer being written holds its request");
        transport.calls.started(id.clone());
        assert_eq!(transport.calls.tracker.len(), 2);
        writing.await.unwrap();
        assert_eq!(transport.calls.open_ids(), [id]);
        assert_eq!(transport.calls.tracker.len(), 1);
    }

    #[test]
    fn a_hot_request_is_open_until_its_answer_is_written_or_it_is_cancelled() {
        let calls = Calls::default();
        let id = RequestId::Number(7);
        let cancel: RxJsonRpcMessage<RoleServer> =
            serde_json::from_str(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#).unwrap();
        // One request of rmcp's and three hot ones, all with one id.
        calls.started(id.clone());
        let answered_at_once = calls.tracker.token();
        let (first_cancel, second_cancel) = (CancellationToken::new(), CancellationToken::new());
        let first = calls.task_started(id.clone(), first_cancel.clone(), calls.tracker.token());
        let second = calls.task_started(id.clone(), second_cancel.clone(), calls.tracker.token());
        assert_eq!(calls.open_requests(), (4, vec![id.clone(), id.clone(), id.clone()]));
        // The first call is done, and writes its answer: still open.
        let writing = calls.task_done(first).expect("not cancelled");
        assert_eq!(calls.open_requests(), (4, vec![id.clone(), id.clone()]));
        // A cancellation naming the id ends rmcp's request and the call still
        // running; the answers made are written.
        calls.read(&cancel);
        assert!(second_cancel.is_cancelled() && !first_cancel.is_cancelled());
        assert!(calls.task_done(second).is_none(), "a cancelled call writes no answer");
        assert_eq!(calls.open_requests(), (2, vec![]));
        drop(writing);
        drop(answered_at_once);
        assert!(calls.tracker.is_empty());
        // A cancellation naming an id not open finishes nothing.
        calls.started(RequestId::Number(8));
        calls.read(&cancel);
        assert_eq!(calls.open_requests(), (1, vec![RequestId::Number(8)]));
    }

    #[test]
    fn logged_ids_are_few_and_short() {
        let long = RequestId::String("x".repeat(1000).into());
        let ids: Vec<RequestId> = std::iter::once(long).chain((0..50).map(RequestId::Number)).collect();
        let logged = logged_ids(&ids);
        assert_eq!(logged.len(), 10);
        assert_eq!(logged[0], RequestId::String(format!("{}…", "x".repeat(64)).into()));
        assert_eq!(logged[1..], (0..9).map(RequestId::Number).collect::<Vec<_>>()[..]);
    }

    #[tokio::test]
    async fn after_initialize_is_answered_a_hot_request_waits_for_the_session_to_be_the_transports() {
        // rmcp's session loop reads the lines after `initialize` before its
        // peer is handed over: a `prompts/list` read then is still the
        // transport's, once the peer is set. Before `initialize` is
        // answered, lines are read without waiting (rmcp's handshake reads
        // them).
        let list = r#"{"jsonrpc":"2.0","id":9,"method":"prompts/list"}"#;
        let second_ping = PING.replace(r#""id":1"#, r#""id":2"#);
        let input = format!("{PING}\n{list}\n{second_ping}\n");
        let (writer, output) = tokio::io::duplex(64 << 10);
        let mut transport = StdioTransport::new(input.as_bytes(), writer, 1000);
        let server = Arc::new(PromptServer::new(Arc::new(crate::registry::Registry::new(Vec::new())), 10));
        let hot = HotPath::new(server.clone());
        let peer = hot.peer.clone();
        transport.hot = Some(hot);
        let first = futures::poll!(std::pin::pin!(transport.receive()));
        let Poll::Ready(Some(first)) = first else { panic!("a line before initialize's answer waited: {first:?}") };
        assert_eq!(serde_json::to_value(first).unwrap()["id"], 1);
        let info = rmcp::ServerHandler::get_info(&*server);
        transport.send(ServerJsonRpcMessage::response(ServerResult::InitializeResult(info), RequestId::Number(0))).await.unwrap();
        let next = {
            let mut receive = std::pin::pin!(transport.receive());
            assert!(futures::poll!(&mut receive).is_pending(), "a line was read before the session's peer was set");
            // A peer of a session of its own: the list needs none of its
            // state.
            let elsewhere = rmcp::service::serve_directly(server, StdioTransport::new(&b""[..], tokio::io::sink(), 1000), None);
            peer.set(elsewhere.peer().clone()).unwrap();
            // The same wait, woken by the peer.
            tokio::time::timeout(std::time::Duration::from_secs(10), receive).await.expect("the wait was not woken")
        };
        assert_eq!(serde_json::to_value(next.expect("the second ping is rmcp's")).unwrap()["id"], 2);
        assert_eq!(transport.handled_here(), 1);
        // Read with the ping behind it, the list runs as a task.
        transport.hot.as_mut().unwrap().finish().await;
        transport.close().await.unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(output));
        let initialize: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(initialize["id"], 0, "{initialize}");
        let listed: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(listed, json!({ "jsonrpc": "2.0", "id": 9, "result": { "prompts": [] } }));
        assert_eq!(lines.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn once_stopping_no_line_is_read_and_a_request_is_open_until_answered() {
        let input = format!("{PING}\n{}\n", PING.replace(r#""id":1"#, r#""id":2"#));
        let (writer, _peer) = tokio::io::duplex(4096);
        let mut transport = StdioTransport::new(input.as_bytes(), writer, 1000);
        let first = transport.receive().await.expect("the first line is served");
        assert_eq!(serde_json::to_value(first).unwrap()["id"], 1);
        assert_eq!(transport.calls.open_ids(), [RequestId::Number(1)]);

        transport.stopping.cancel();
        assert!(futures::poll!(std::pin::pin!(transport.receive())).is_pending(), "a line was read after stopping");
        assert_eq!(transport.calls.open_ids(), [RequestId::Number(1)]);
        let answer = ServerJsonRpcMessage::error(ErrorData::internal_error("done", None), Some(RequestId::Number(1)));
        transport.send(answer).await.unwrap();
        assert!(transport.calls.open_ids().is_empty());
        assert!(transport.calls.tracker.is_empty());
    }

    #[test]
    fn ids_at_the_end() {
        assert_eq!(id_at_end(br#"xx","jsonrpc":"2.0","id" : 12 }  "#), Some(RequestId::Number(12)));
        assert_eq!(id_at_end(br#"xx",  "id":"a"}"#), Some(RequestId::String("a".into())));
        // The last member is not the id, or the id is inside a string.
        assert_eq!(id_at_end(br#""id":1,"x":2}"#), None);
        assert_eq!(id_at_end(br#"x\"id\":1}"}"#), None);
        assert_eq!(id_at_end(br#"{"x":{"id":1}}"#), None);
        assert_eq!(id_at_end(br#","id":1.5}"#), None);
    }
}
