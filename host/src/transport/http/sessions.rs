//! A cap on HTTP sessions: rmcp's in-memory session manager, counting its
//! sessions and when each was last used, so that a client cannot open
//! sessions without bound and idle ones make room for new ones.
//!
//! The hot methods of a session (`prompts/get`, `prompts/list`,
//! `completion/complete`) are answered here rather than through rmcp's
//! session worker and a task per request, which costs about half the
//! thread hand-offs: once rmcp has checked the request (its headers, its
//! session), `create_stream` hands the call to the front
//! ([`HotAnswerSlot`]), which runs it on the POST's own task, through the
//! session's own handler (`hot_methods`), and sends its answer as JSON,
//! the other form the transport allows: a stream with one event would owe
//! the client a priming event and a way to resume, and the answer would
//! have to be kept for that. What rmcp's worker did for these requests is
//! done here: a `notifications/cancelled` naming one ends it, unanswered;
//! the session's end ends them; a call whose client is gone runs on, its
//! answer discarded, as rmcp's tasks do; and, as hot requests never reach
//! the worker, idle sessions are closed here ([`CappedSessions::close_idle`])
//! instead of by rmcp's keep-alive.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, GetExtensions, RequestId, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::handler::HotSession;
use crate::transport::hot_methods::{CancellableRequests, HotCall, Noted, hot_call};

/// A session unused for this long may be closed to make room for a new one
/// when the cap is reached.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(60);

/// A session unused for this long is closed, whatever the room: rmcp's own
/// keep-alive (5 minutes), which it measures by what reaches its session
/// worker, is off, as hot requests do not.
pub const IDLE_CLOSE_AFTER: Duration = Duration::from_secs(300);

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error("{0}")]
    Local(#[from] LocalSessionManagerError),
    #[error("the cap of {0} sessions is reached")]
    Full(usize),
    #[error("Last-Event-ID names an event of a request this process did not serve: its answer cannot be resumed here")]
    RequestElsewhere,
}

/// rmcp's [`LocalSessionManager`], holding at most `max` sessions.
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    evictable_after: Duration,
    /// Each open session and when a client last used it.
    /// (An async lock: creating a session awaits under it.)
    last_used: tokio::sync::Mutex<HashMap<SessionId, Instant>>,
    /// Each open session's token, cancelled when it is closed (deleted,
    /// evicted, or found ended): what is waiting on the session's client
    /// (an elicitation) ends with it.
    closing: std::sync::Mutex<HashMap<SessionId, CancellationToken>>,
    /// The user (an OAuth token's issuer and subject) who opened each
    /// session, when one is known: a user holds at most half of the table.
    owners: std::sync::Mutex<HashMap<SessionId, String>>,
    /// The tag of the event ids this process gives (`event_ids`).
    event_tag: String,
    /// Each open session's handler and peer, once its `initialize` is
    /// answered, and its hot requests running: they are answered here
    /// (`create_stream`).
    hot: std::sync::Mutex<HashMap<SessionId, Arc<HotRequests>>>,
}

/// A session's handler and peer, once known, and its hot requests running,
/// each with the token that cancels it.
#[derive(Default)]
struct HotRequests {
    session: HotSession,
    running: CancellableRequests<()>,
}

impl CappedSessions {
    /// At most `max` sessions; one unused for `evictable_after` may be
    /// closed to make room.
    pub fn new(max: usize, evictable_after: Duration) -> CappedSessions {
        let mut inner = LocalSessionManager::default();
        // Idle sessions are closed by `close_idle` instead.
        inner.session_config.keep_alive = None;
        CappedSessions {
            inner,
            max,
            evictable_after,
            last_used: tokio::sync::Mutex::new(HashMap::new()),
            closing: Default::default(),
            owners: Default::default(),
            event_tag: event_ids::new_tag(),
            hot: Default::default(),
        }
    }

    /// The most sessions one user may hold: half of the table, rounded up.
    pub fn per_user(&self) -> usize {
        self.max.div_ceil(2)
    }

    /// Records that `user` opened the session `id`.
    pub fn opened_by(&self, id: &str, user: &str) {
        if self.closing.lock().expect("never poisoned").contains_key(id) {
            self.owners.lock().expect("never poisoned").insert(SessionId::from(id.to_string()), user.to_string());
        }
    }

    /// Whether `user` may open one more session (below [`Self::per_user`]):
    /// at its share, its sessions rmcp has ended are forgotten first, then
    /// its own session unused longest is closed if it has been unused for
    /// `evictable_after`. Concurrent initializes of one user may each pass
    /// before any is recorded: they are bounded by its requests under way.
    pub async fn user_has_room(&self, user: &str) -> bool {
        let mine = || -> Vec<SessionId> {
            let owners = self.owners.lock().expect("never poisoned");
            owners.iter().filter(|(_, owner)| *owner == user).map(|(id, _)| id.clone()).collect()
        };
        let held = mine();
        if held.len() < self.per_user() {
            return true;
        }
        let mut last_used = self.last_used.lock().await;
        for id in &held {
            if !self.inner.has_session(id).await.unwrap_or(false) {
                last_used.remove(id);
                self.closed(id);
            }
        }
        let held = mine();
        if held.len() < self.per_user() {
            crate::metrics::sessions_open(last_used.len());
            return true;
        }
        let Some(oldest) = held
            .iter()
            .filter_map(|id| last_used.get(id).map(|used| (id, *used)))
            .filter(|(_, used)| used.elapsed() >= self.evictable_after)
            .min_by_key(|(_, used)| *used)
            .map(|(id, _)| id.clone())
        else {
            return false;
        };
        last_used.remove(&oldest);
        self.closed(&oldest);
        crate::metrics::sessions_open(last_used.len());
        drop(last_used);
        let session = crate::identity::session_label(&oldest);
        tracing::info!(%session, "closing a user's longest-idle HTTP session to make room for its new one");
        self.close_in_rmcp(&oldest).await;
        true
    }

    /// What a user is told at its share.
    pub fn user_full_message(&self) -> String {
        format!(
            "too many requests: this user holds its maximum of {} sessions (half of --max-sessions); end one with DELETE",
            self.per_user()
        )
    }

    /// The token cancelled when the session `id` is closed, if it is open.
    pub fn closing(&self, id: &str) -> Option<CancellationToken> {
        self.closing.lock().expect("never poisoned").get(id).cloned()
    }

    /// Cancels the token of the session `id`, closed.
    fn closed(&self, id: &SessionId) {
        self.owners.lock().expect("never poisoned").remove(id);
        // `closing` first: an `initialize` that still finds it puts its
        // session's entry in `hot` before this removes it.
        let closing = self.closing.lock().expect("never poisoned").remove(id);
        self.hot.lock().expect("never poisoned").remove(id);
        // Cancels the session's hot requests too (their tokens are its children).
        if let Some(token) = closing {
            token.cancel();
        }
    }

    /// What a client is told when no session can be opened.
    pub fn full_message(&self) -> String {
        format!(
            "service unavailable: the server holds its maximum of {} sessions (--max-sessions); \
             retry later, or end a session with DELETE",
            self.max
        )
    }

    /// Whether a new session would fit: under the cap, or with a session
    /// idle long enough to be closed for it. Closes nothing: only a valid
    /// `initialize` (in [`SessionManager::create_session`]) makes room.
    pub async fn has_room(&self) -> bool {
        let last_used = self.last_used.lock().await;
        last_used.len() < self.max || last_used.values().any(|used| used.elapsed() >= self.evictable_after)
    }

    /// Forgets sessions rmcp has ended on its own (a worker that stopped), which would otherwise count against the cap.
    async fn forget_ended(&self, last_used: &mut HashMap<SessionId, Instant>) {
        let mut ended = Vec::new();
        for id in last_used.keys() {
            if !self.inner.has_session(id).await.unwrap_or(false) {
                ended.push(id.clone());
            }
        }
        for id in ended {
            last_used.remove(&id);
            self.closed(&id);
        }
    }

    /// Closes the session unused longest, if it has been unused for
    /// `evictable_after`. Returns whether one was closed.
    async fn evict_idle(&self, last_used: &mut HashMap<SessionId, Instant>) -> bool {
        let Some(oldest) = last_used
            .iter()
            .filter(|(_, used)| used.elapsed() >= self.evictable_after)
            .min_by_key(|(_, used)| **used)
            .map(|(id, _)| id.clone())
        else {
            return false;
        };
        last_used.remove(&oldest);
        self.closed(&oldest);
        // Named by its label: whoever reads the log cannot use the session.
        let session = crate::identity::session_label(&oldest);
        tracing::info!(%session, "closing the longest-idle HTTP session to make room for a new one");
        self.close_in_rmcp(&oldest).await;
        true
    }

    /// Hands the call that answers `message` to the front, through the slot
    /// the front put in its request, if it is a hot request of a session
    /// whose `initialize` is answered; else hands `message` back, for rmcp.
    #[allow(clippy::result_large_err, reason = "the message handed back is the caller's, moved, not copied")]
    fn hot_answer(&self, id: &SessionId, mut message: ClientJsonRpcMessage) -> Result<(), ClientJsonRpcMessage> {
        let Some(requests) = self.hot.lock().expect("never poisoned").get(id).cloned() else { return Err(message) };
        let ClientJsonRpcMessage::Request(request) = &mut message else { return Err(message) };
        // Out of the request: the call's context keeps its parts, and a slot
        // among them would keep the call that the slot holds.
        let http = request.request.extensions_mut().get_mut::<hyper::http::request::Parts>();
        let Some(slot) = http.and_then(|http| http.extensions.remove::<HotAnswerSlot>()) else { return Err(message) };
        let Some((server, peer)) = requests.session.0.get() else { return Err(message) };
        // A child of the session's: cancelled when it closes, even if it
        // closed a moment ago.
        let Some(closing) = self.closing(id) else { return Err(message) };
        let cancelled = closing.child_token();
        let (request, call) = hot_call(server, peer, message, &cancelled)?;
        *slot.0.lock().expect("never poisoned") = Some(HotAnswer::new(requests.clone(), request, call, cancelled));
        Ok(())
    }

    /// Closes every session unused for `idle_for`: what rmcp's keep-alive
    /// did (see [`IDLE_CLOSE_AFTER`]).
    pub async fn close_idle(&self, idle_for: Duration) {
        let idle: Vec<SessionId> = {
            let mut last_used = self.last_used.lock().await;
            let idle: Vec<SessionId> = last_used.iter().filter(|(_, used)| used.elapsed() >= idle_for).map(|(id, _)| id.clone()).collect();
            for id in &idle {
                last_used.remove(id);
                self.closed(id);
            }
            crate::metrics::sessions_open(last_used.len());
            idle
        };
        for id in idle {
            let session = crate::identity::session_label(&id);
            tracing::debug!(%session, idle_s = idle_for.as_secs(), "closing an HTTP session unused for too long");
            self.close_in_rmcp(&id).await;
        }
    }

    /// Has rmcp close the session `id`, already forgotten here (`closed`).
    async fn close_in_rmcp(&self, id: &SessionId) {
        if let Err(error) = self.inner.close_session(id).await {
            tracing::warn!(session = %crate::identity::session_label(id), "closing an idle session failed: {error}");
        }
    }

    /// Closes idle sessions ([`Self::close_idle`]) every tenth of
    /// `idle_for`, until `stop` is cancelled or the sessions are dropped.
    pub fn close_idle_in_background(sessions: &Arc<CappedSessions>, idle_for: Duration, stop: CancellationToken) {
        let sessions = Arc::downgrade(sessions);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(idle_for / 10) => {}
                }
                let Some(sessions) = sessions.upgrade() else { return };
                sessions.close_idle(idle_for).await;
            }
        });
    }

    /// Room for one more session under the cap: sessions rmcp has ended
    /// forgotten, else the one idle longest closed, else the cap's refusal.
    async fn make_room(&self, last_used: &mut HashMap<SessionId, Instant>) -> Result<(), SessionsError> {
        if last_used.len() >= self.max {
            self.forget_ended(last_used).await;
        }
        if last_used.len() >= self.max && !self.evict_idle(last_used).await {
            return Err(SessionsError::Full(self.max));
        }
        Ok(())
    }

    /// Counts the session `id`, just opened.
    fn count_in(&self, last_used: &mut HashMap<SessionId, Instant>, id: &SessionId) {
        last_used.insert(id.clone(), Instant::now());
        self.closing.lock().expect("never poisoned").insert(id.clone(), CancellationToken::new());
        crate::metrics::sessions_open(last_used.len());
    }

    async fn touch(&self, id: &SessionId) {
        if let Some(used) = self.last_used.lock().await.get_mut(id) {
            *used = Instant::now();
        }
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Checked here, under the lock, so that concurrent initializes never
        // take the count past the cap; rmcp calls this only for a valid
        // initialize, so nothing else can close an idle session.
        let mut last_used = self.last_used.lock().await;
        self.make_room(&mut last_used).await?;
        let (id, transport) = self.inner.create_session().await?;
        self.count_in(&mut last_used, &id);
        Ok((id, transport))
    }

    /// A session a replica never held, or no longer holds, opened again
    /// from its sealed id (`session_ids`): it takes a place under the cap
    /// as a new session does.
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let mut last_used = self.last_used.lock().await;
        if last_used.contains_key(&id) && self.inner.has_session(&id).await? {
            return Ok(RestoreOutcome::AlreadyPresent);
        }
        self.make_room(&mut last_used).await?;
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.count_in(&mut last_used, &id);
        }
        Ok(outcome)
    }

    async fn initialize_session(&self, id: &SessionId, mut message: ClientJsonRpcMessage) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id).await;
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            // Under `closing`'s lock: see `closed`.
            let closing = self.closing.lock().expect("never poisoned");
            if closing.contains_key(id) {
                let hot = Arc::new(HotRequests::default());
                request.request.extensions_mut().insert(hot.session.clone());
                self.hot.lock().expect("never poisoned").insert(id.clone(), hot);
            }
        }
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let mut last_used = self.last_used.lock().await;
        last_used.remove(id);
        self.closed(id);
        crate::metrics::sessions_open(last_used.len());
        drop(last_used);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        let message = match self.hot_answer(id, message) {
            Ok(()) => return Ok(futures::stream::empty().left_stream()),
            Err(message) => message,
        };
        let tag = self.event_tag.clone();
        Ok(self.inner.create_stream(id, message).await?.map(move |event| event_ids::as_shown(&tag, event)).right_stream())
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id).await;
        // Handed on to rmcp all the same: it cancels a request of its own.
        if let ClientJsonRpcMessage::Notification(notification) = &message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(request) = &cancelled.params.request_id
            && let Some(hot) = self.hot.lock().expect("never poisoned").get(id)
        {
            hot.running.cancel(request);
        }
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        let tag = self.event_tag.clone();
        Ok(self.inner.create_standalone_stream(id).await?.map(move |event| event_ids::as_shown(&tag, event)))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        let tag = self.event_tag.clone();
        match event_ids::resume(&tag, &last_event_id) {
            event_ids::Resume::From(first_unseen) => {
                Ok(self.inner.resume(id, first_unseen).await?.map(move |event| event_ids::as_shown(&tag, event)).left_stream())
            }
            // The session's stream as another process numbered it (another
            // replica, or this one before a restart: the session was
            // restored from its id here): its events are not here to
            // replay, so the client gets the session's stream from now on,
            // which carries its notifications.
            event_ids::Resume::Elsewhere { standalone: true } => {
                tracing::debug!("resuming a session's stream from another process's event: the session's stream from now on");
                let stream = self.inner.create_standalone_stream(id).await?;
                Ok(stream.map(move |event| event_ids::as_shown(&tag, event)).right_stream())
            }
            // A request's stream of another process: its answer is there.
            event_ids::Resume::Elsewhere { standalone: false } => Err(SessionsError::RequestElsewhere),
        }
    }
}

/// Where the front finds the call that answers a hot request: the front
/// puts an empty one in each POST that names a session, and
/// `create_stream` fills it in for a hot request.
#[derive(Clone, Default)]
pub struct HotAnswerSlot(Arc<std::sync::Mutex<Option<HotAnswer>>>);

impl HotAnswerSlot {
    /// The call, if the request was a hot one.
    pub fn take(&self) -> Option<HotAnswer> {
        self.0.lock().expect("never poisoned").take()
    }
}

/// A hot request's call, until it answers or is cancelled. Dropped before
/// (its client gone), or cancelled, the call runs on as a task of its own,
/// its answer discarded, as rmcp's own task for a request would: it
/// finishes what it began (its access-log line, its metrics), within its
/// deadline, holding its pack's slots meanwhile.
pub struct HotAnswer {
    call: Option<HotCall>,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    requests: Arc<HotRequests>,
    noted: Noted,
}

impl HotAnswer {
    fn new(requests: Arc<HotRequests>, request: RequestId, call: HotCall, cancel: CancellationToken) -> HotAnswer {
        let noted = requests.running.started(request, cancel.clone(), ());
        HotAnswer { call: Some(call), cancelled: Box::pin(cancel.cancelled_owned()), requests, noted }
    }

    /// The answer, or `None` once the request is cancelled (rmcp sends no
    /// answer to a request its client cancelled).
    pub async fn answer(mut self) -> Option<ServerJsonRpcMessage> {
        std::future::poll_fn(|cx| self.poll_answer(cx)).await
    }

    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<Option<ServerJsonRpcMessage>> {
        let Some(call) = self.call.as_mut() else { return Poll::Ready(None) };
        if self.cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        let answer = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(Some(answer))
    }
}

impl Drop for HotAnswer {
    fn drop(&mut self) {
        self.requests.running.ended(&self.noted);
        if let Some(call) = self.call.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(call);
        }
    }
}

/// The event ids clients see, mended around two behaviours of rmcp 3.9 to 3.11's
/// in-memory sessions, and told apart from another process's. rmcp numbers
/// a session's standalone (GET) stream from 0, while its HTTP layer gives
/// that stream's priming event the id 0 as well; and it replays from the
/// event a client names in `Last-Event-ID` inclusively, so every resumption
/// repeated the last event the client had seen. The host shows the
/// standalone stream's events numbered from 1, and asks rmcp to replay
/// from the first event after the one named. (A request's stream,
/// `<index>/<request>`, primes with its own index 0.)
///
/// Each id also carries this process's tag (`<tag>.<n>`, `<tag>.<index>/<request>`):
/// a session moves between replicas and outlives a restart, and another
/// process numbers its events from the start, so an id it gave names other
/// events here. A stream resumed from another process's event is the
/// session's stream from now on ([`Resume::Elsewhere`]), never a replay of
/// whichever events here happen to carry that number.
///
/// A new GET without `Last-Event-ID` is still sent what rmcp keeps of the
/// session's recent events (rmcp replays them so that a client misses no
/// request made while it had no stream): a client resumes with the id of
/// the last event it saw to be sent only what came after.
mod event_ids {
    use rmcp::transport::streamable_http_server::session::ServerSseMessage;

    /// This process's tag: 8 random hex digits.
    pub fn new_tag() -> String {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// The standalone stream's index, as rmcp numbers it: ids without a request part.
    fn standalone(id: &str) -> Option<usize> {
        id.parse().ok()
    }

    /// `event` with the id the client sees, tagged with `tag`.
    pub fn as_shown(tag: &str, mut event: ServerSseMessage) -> ServerSseMessage {
        event.event_id = event.event_id.map(|id| match standalone(&id) {
            Some(index) => format!("{tag}.{}", index.saturating_add(1)),
            None => format!("{tag}.{id}"),
        });
        event
    }

    /// Where a stream resumes for a client that last saw an event.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Resume {
        /// From this event, as rmcp numbers it: the first the client has not seen.
        From(String),
        /// The event was another process's: nothing here to replay.
        Elsewhere { standalone: bool },
    }

    /// Where to resume for a client that last saw `last_seen`, in the
    /// process tagged `tag`. The standalone stream's shown id N is rmcp's
    /// N - 1, so N is already the next one (and the priming event's 0, which
    /// rmcp's HTTP layer sends untagged, asks for everything); a request's
    /// `<index>/<request>` resumes at index + 1. Anything else untagged is
    /// handed on unchanged, for rmcp to refuse.
    pub fn resume(tag: &str, last_seen: &str) -> Resume {
        let Some((seen_tag, id)) = last_seen.split_once('.') else {
            return Resume::From(last_seen.to_string());
        };
        if seen_tag != tag {
            return Resume::Elsewhere { standalone: !id.contains('/') };
        }
        if standalone(id).is_some() {
            return Resume::From(id.to_string());
        }
        match id.split_once('/').and_then(|(index, request)| Some((index.parse::<usize>().ok()?, request))) {
            Some((index, request)) => Resume::From(format!("{}/{request}", index.saturating_add(1))),
            None => Resume::From(id.to_string()),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn event(id: &str) -> ServerSseMessage {
            ServerSseMessage::priming(id, std::time::Duration::from_secs(1))
        }

        #[test]
        fn the_standalone_stream_is_shown_from_1_and_every_id_is_tagged() {
            assert_eq!(as_shown("ab12cd34", event("0")).event_id.as_deref(), Some("ab12cd34.1"));
            assert_eq!(as_shown("ab12cd34", event("41")).event_id.as_deref(), Some("ab12cd34.42"));
            assert_eq!(as_shown("ab12cd34", event("0/3")).event_id.as_deref(), Some("ab12cd34.0/3"));
            assert_eq!(as_shown("ab12cd34", ServerSseMessage::retry(std::time::Duration::from_secs(1))).event_id, None);
            let tag = new_tag();
            assert!(tag.len() == 8 && tag.bytes().all(|byte| byte.is_ascii_hexdigit()), "{tag}");
        }

        #[test]
        fn resuming_asks_rmcp_for_the_first_event_not_seen_and_only_of_this_process() {
            let from = |id: &str| Resume::From(id.to_string());
            // Shown 1 is rmcp's 0: the next is rmcp's 1.
            assert_eq!(resume("ab12cd34", "ab12cd34.1"), from("1"));
            // The priming event, untagged: everything.
            assert_eq!(resume("ab12cd34", "0"), from("0"));
            assert_eq!(resume("ab12cd34", "ab12cd34.1/7"), from("2/7"));
            assert_eq!(resume("ab12cd34", "nonsense"), from("nonsense"));
            assert_eq!(resume("ab12cd34", "ab12cd34.x/7"), from("x/7"));
            // Another process's events: nothing of them here.
            assert_eq!(resume("ab12cd34", "ffffffff.3"), Resume::Elsewhere { standalone: true });
            assert_eq!(resume("ab12cd34", "ffffffff.1/7"), Resume::Elsewhere { standalone: false });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_idle_long_enough_makes_room_and_others_do_not() {
        let busy = CappedSessions::new(1, Duration::from_secs(3600));
        busy.create_session().await.unwrap();
        assert!(!busy.has_room().await);
        assert!(matches!(busy.create_session().await, Err(SessionsError::Full(1))));

        let idle = CappedSessions::new(1, Duration::ZERO);
        let (first, _transport) = idle.create_session().await.unwrap();
        // Asking closes nothing; a new session does.
        assert!(idle.has_room().await);
        assert!(idle.has_session(&first).await.unwrap());
        let (second, _transport) = idle.create_session().await.unwrap();
        assert!(!idle.has_session(&first).await.unwrap());
        assert!(idle.has_session(&second).await.unwrap());
        assert_eq!(idle.last_used.lock().await.len(), 1);
    }

    #[tokio::test]
    async fn a_user_at_its_share_gets_room_from_its_own_ended_or_idle_sessions_only() {
        // Issue "Hardening, round 3", item 6 (review): ended sessions kept
        // counting against their user's share for good.
        let sessions = CappedSessions::new(4, Duration::from_secs(3600));
        let mut ids = Vec::new();
        for _ in 0..2 {
            let (id, _transport) = sessions.create_session().await.unwrap();
            sessions.opened_by(&id, "alice");
            ids.push(id);
        }
        assert!(!sessions.user_has_room("alice").await);
        assert!(sessions.user_has_room("bob").await);
        // Ended by rmcp on its own: forgotten when alice needs room.
        sessions.inner.close_session(&ids[0]).await.unwrap();
        assert!(sessions.user_has_room("alice").await);
        // Idle long enough: alice's own oldest makes room.
        let idle = CappedSessions::new(4, Duration::ZERO);
        for _ in 0..2 {
            let (id, _transport) = idle.create_session().await.unwrap();
            idle.opened_by(&id, "alice");
        }
        assert!(idle.user_has_room("alice").await);
        assert_eq!(idle.last_used.lock().await.len(), 1);
    }

    #[tokio::test]
    async fn a_session_rmcp_ended_does_not_count() {
        let sessions = CappedSessions::new(1, Duration::from_secs(3600));
        let (first, _transport) = sessions.create_session().await.unwrap();
        // Ended by rmcp itself, behind the cap's back.
        sessions.inner.close_session(&first).await.unwrap();
        let (second, _transport) = sessions.create_session().await.unwrap();
        assert!(sessions.has_session(&second).await.unwrap());
        assert_eq!(sessions.last_used.lock().await.len(), 1);
    }

    #[tokio::test]
    async fn only_sessions_unused_for_the_idle_period_are_closed() {
        let sessions = CappedSessions::new(4, Duration::from_secs(3600));
        let (idle, _transport) = sessions.create_session().await.unwrap();
        let (used, _transport) = sessions.create_session().await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        // As every request on a session does, hot ones included.
        sessions.touch(&used).await;
        let idle_token = sessions.closing(&idle).expect("open");
        sessions.close_idle(Duration::from_millis(500)).await;
        assert!(!sessions.has_session(&idle).await.unwrap());
        assert!(idle_token.is_cancelled());
        assert!(sessions.has_session(&used).await.unwrap());
        assert_eq!(sessions.last_used.lock().await.len(), 1);
        // rmcp's own keep-alive would close a session whose requests were all hot.
        assert_eq!(sessions.inner.session_config.keep_alive, None);
    }
}
