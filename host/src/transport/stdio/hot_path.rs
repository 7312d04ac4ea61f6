//! The hot methods over stdio (`prompts/get`, `prompts/list`,
//! `completion/complete`), answered by the transport on the thread that
//! read them instead of through rmcp's per-request tasks: [`HotPath`], and
//! [`Calls`], the table of requests read and not yet answered that both
//! paths share. Bounded on purpose: it repeats three things rmcp's own loop
//! does (one request per id in flight, cancellation by
//! `notifications/cancelled`, a panic answered rather than ending the
//! session), and `host/tests/stdio_hot_path.rs` holds it to rmcp's
//! behaviour for each. Everything else about stdio is `super`'s.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::task::Poll;

use futures::SinkExt;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::TransportWriter;
use rmcp::{Peer, RoleServer};
use tokio::io::AsyncWrite;
use tokio::sync::{Mutex, SetOnce};
use tokio_util::sync::CancellationToken;
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use crate::handler::PromptServer;
use crate::transport::hot_methods::{CancellableRequests, HotCall, Noted, hot_call, logged_id};

/// The hot methods (`prompts/get`, `prompts/list`, `completion/complete`),
/// answered by the transport on the thread that read them.
///
/// rmcp hands each request to a task of its own, which sends its answer
/// through a channel back to the session's task, which hands the write to a
/// third. Here the request is given to the same handler, through rmcp's own
/// dispatch (`Service::handle_request`, with its protocol-revision checks),
/// and polled once where it was read; a call that answers at once (most do:
/// a fresh instance is made ahead of time) is written from there. One that
/// does not (it waits for a turn, or runs past an epoch tick), and any call
/// read while more input waits (so that the other cores take calls while
/// this one reads), continues as a task of its own: a long call never holds
/// the reading of the next line.
///
/// A `prompts/get` that may be answered with `elicitation/create` goes to
/// rmcp: rmcp ties such a request to the one it serves.
pub(super) struct HotPath {
    server: Arc<PromptServer>,
    /// The session's peer, set when rmcp has started the session. rmcp
    /// starts its session loop (which reads the lines after `initialize`)
    /// before it hands the peer over, so a line read after `initialize` is
    /// answered waits for it: read before, a hot request would go to rmcp.
    /// A session begun without `initialize` (2026-07-28, by a request
    /// carrying its own metadata) has no such point: a hot request read
    /// before the peer is set goes to rmcp, answered all the same.
    pub(super) peer: Arc<SetOnce<Peer<RoleServer>>>,
    /// Whether rmcp has handed the transport its answer to `initialize`:
    /// every line read from then on is read by rmcp's session loop, and
    /// waits for `peer`.
    pub(super) initialize_answered: bool,
    /// The hot calls running as tasks: at the end of the input they have
    /// [`END_OF_INPUT_GRACE`] to write their answers, as rmcp's own have.
    tasks: TaskTracker,
    /// When the calls still running at the end of the input are abandoned:
    /// set once, so that a wait dropped and begun again does not restart it.
    abandon_at: Option<tokio::time::Instant>,
    /// How many requests were taken here, for the session's last log line.
    pub(super) handled: u64,
}

/// How long the calls still running at the end of the input have to answer
/// before the session closes: rmcp's own figure for its handlers.
const END_OF_INPUT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// What [`HotPath::take`] did with a message.
pub(super) enum HotOutcome {
    /// Not a hot request: rmcp's.
    ForRmcp(RxJsonRpcMessage<RoleServer>),
    /// Answered at once: the answer to write, and its request's token, to
    /// release once it is written.
    Answered(ServerJsonRpcMessage, TaskTrackerToken),
    /// Still running, as a task that writes its answer.
    Running,
}

impl HotPath {
    pub(super) fn new(server: Arc<PromptServer>) -> HotPath {
        HotPath { server, peer: Arc::default(), initialize_answered: false, tasks: TaskTracker::new(), abandon_at: None, handled: 0 }
    }

    /// The call that answers `message`, if it is a hot request and the
    /// session has started, and the token that cancels it.
    fn call(&self, message: RxJsonRpcMessage<RoleServer>) -> Result<(RequestId, HotCall, CancellationToken), RxJsonRpcMessage<RoleServer>> {
        let Some(peer) = self.peer.get() else { return Err(message) };
        let cancelled = CancellationToken::new();
        let (id, call) = hot_call(&self.server, peer, message, &cancelled)?;
        Ok((id, call, cancelled))
    }

    /// Answers `message` here if it is a hot request: unless `more_read`
    /// (more of the input is read and waiting), polls its call once, and if
    /// it has not answered, runs it on as a task that writes its answer
    /// through `write`.
    pub(super) async fn take<W: AsyncWrite + Send + Unpin + 'static>(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
        more_read: bool,
        write: &SharedWriter<W>,
        calls: &Arc<Calls>,
    ) -> HotOutcome {
        let (id, mut call, cancelled) = match self.call(message) {
            Ok(call) => call,
            Err(message) => return HotOutcome::ForRmcp(message),
        };
        self.handled += 1;
        // HotOutcome before the call is first polled: a stop on another thread
        // waits for it from here.
        let open = calls.tracker.token();
        if !more_read && let Poll::Ready(answer) = futures::poll!(call.as_mut()) {
            return HotOutcome::Answered(answer, open);
        }
        let hot_task = calls.task_started(id, cancelled, open);
        let (write, calls) = (write.clone(), calls.clone());
        let task = async move {
            let answer = call.await;
            // Else it was cancelled: the client expects no answer, and its
            // request was finished when the notification was read.
            let Some(done) = calls.task_done(hot_task) else { return };
            if let Err(error) = write_message(&write, answer).await {
                tracing::debug!(%error, "the answer of a call could not be written: the client is gone");
            }
            // Written, or never to be: either way the request is over.
            drop(done);
        };
        self.tasks.spawn(tracing::Instrument::in_current_span(task));
        HotOutcome::Running
    }

    /// At the end of the input: waits up to [`END_OF_INPUT_GRACE`] for the
    /// calls still running to write their answers. Waiting again (after a
    /// dropped wait) waits only what is left of it.
    pub(super) async fn finish(&mut self) {
        self.tasks.close();
        let abandon_at = *self.abandon_at.get_or_insert_with(|| tokio::time::Instant::now() + END_OF_INPUT_GRACE);
        if tokio::time::timeout_at(abandon_at, self.tasks.wait()).await.is_err() {
            tracing::warn!(
                count = self.tasks.len(),
                grace_s = END_OF_INPUT_GRACE.as_secs(),
                "the input ended; calls still running after the grace are abandoned, unanswered"
            );
        }
    }
}

/// rmcp's writer, shared by rmcp's answers and the transport's own.
pub(super) type SharedWriter<W> = Arc<Mutex<Option<TransportWriter<RoleServer, W>>>>;

/// Why nothing more can be written: the session closed the writer.
pub(super) fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the transport is closed")
}

/// Writes and flushes `item`.
pub(super) async fn write_message<W: AsyncWrite + Send + Unpin + 'static>(
    write: &SharedWriter<W>,
    item: TxJsonRpcMessage<RoleServer>,
) -> io::Result<()> {
    match write.lock().await.as_mut() {
        Some(writer) => writer.send(item).await.map_err(io::Error::from),
        None => Err(closed()),
    }
}

/// Request ids in a log line: the ids are the client's, so at most
/// [`LOGGED_IDS`] of them, each cut to [`LOGGED_ID_CHARS`] characters.
pub(super) fn logged_ids(ids: &[RequestId]) -> Vec<RequestId> {
    ids.iter().take(LOGGED_IDS).map(logged_id).collect()
}

const LOGGED_IDS: usize = 10;

/// The requests read and not yet answered, each holding a token of
/// `tracker`, so that stopping can wait until they are answered.
///
/// A client may reuse an id while a request with it is open. rmcp keeps
/// one request per id in flight (a second replaces the first in its
/// table) and writes one answer for them, so `open` holds one token per
/// id: a token per request would wait for answers never to come.
///
/// rmcp's answer takes its request's token out of `open` when rmcp hands
/// it to the transport, as rmcp drops the request from its own table then,
/// and releases it once the answer is written. A hot request never enters
/// `open`: its token goes with its answer, released once it is written.
/// An answer made at once holds it until then ([`PendingAnswer`]); a call
/// running as a task holds it in `running`, beside the token that a
/// `notifications/cancelled` naming it cancels (a cancelled call's answer
/// is not written, as rmcp does), and takes it back while it writes. So
/// each hot request is finished once, by its answer or by its
/// cancellation, whatever else uses its id.
#[derive(Default)]
pub(super) struct Calls {
    pub(super) tracker: TaskTracker,
    /// The requests rmcp answers, open.
    open: std::sync::Mutex<HashMap<RequestId, TaskTrackerToken>>,
    /// The hot calls running as tasks, each holding its request's token.
    /// Whoever removes a call's entry decides: the call itself (it writes
    /// its answer) or its cancellation (which cancels every hot call with
    /// the id it names).
    running: CancellableRequests<TaskTrackerToken>,
}

impl Calls {
    pub(super) fn started(&self, id: RequestId) {
        self.open.lock().expect("never poisoned").entry(id).or_insert_with(|| self.tracker.token());
    }

    /// The token of the open request with `id`, no longer open.
    pub(super) fn take_open(&self, id: &RequestId) -> Option<TaskTrackerToken> {
        self.open.lock().expect("never poisoned").remove(id)
    }

    /// How many requests are open (each holds a token of `tracker`), and the
    /// ids of those whose answer is not being written: an answer held or
    /// being written holds its request's token, not its id.
    pub(super) fn open_requests(&self) -> (usize, Vec<RequestId>) {
        let ids = self.open_ids();
        (self.tracker.len().max(ids.len()), ids)
    }

    /// The ids of the open requests whose answer is not being written, one
    /// per request.
    pub(super) fn open_ids(&self) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = {
            let open = self.open.lock().expect("never poisoned");
            open.keys().cloned().collect()
        };
        ids.extend(self.running.ids());
        ids
    }

    /// Notes what a message from the client, for rmcp, starts or ends.
    pub(super) fn read(&self, message: &RxJsonRpcMessage<RoleServer>) {
        match message {
            JsonRpcMessage::Request(request) => self.started(request.id.clone()),
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    // rmcp sends no answer to a request of its own the
                    // client cancelled, and a hot call cancelled writes none.
                    drop(self.take_open(id));
                    self.running.cancel(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
    }

    /// Notes a hot call with `id` running as a task, cancelled through
    /// `cancel`, its request open while `open` is held.
    pub(super) fn task_started(&self, id: RequestId, cancel: CancellationToken, open: TaskTrackerToken) -> Noted {
        self.running.started(id, cancel, open)
    }

    /// `call`, now done, if it is still running (and so writes its answer,
    /// its request finished when this is dropped), not cancelled; it is
    /// running no more.
    pub(super) fn task_done(&self, call: Noted) -> Option<TaskTrackerToken> {
        self.running.ended(&call)
    }
}
