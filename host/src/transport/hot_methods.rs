//! The hot methods (`prompts/get`, `prompts/list`, `completion/complete`),
//! answered by a transport itself rather than through rmcp's per-request
//! tasks: stdio on the thread that read the request (`stdio::hot_path`),
//! HTTP on the POST's own task (`http::sessions`, answered by the front).
//! One home for what a hot request is, how it is dispatched, and how a
//! `notifications/cancelled` finds it ([`CancellableRequests`]), so both
//! transports answer it as rmcp's own loop would.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{ClientRequest, ErrorData, GetExtensions, GetMeta, JsonRpcMessage, JsonRpcRequest, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RequestContext, RxJsonRpcMessage};
use rmcp::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::handler::PromptServer;

/// A hot request's answer, to come.
pub(crate) type HotCall = Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>;

/// The call that answers `message` through `server`, as a request of the
/// session of `peer`, if it is a hot request, cancelled with `cancelled`
/// (its context's token is that token's child). Anything else is handed
/// back, for rmcp: so is a `prompts/get` that may be answered with
/// `elicitation/create`, as rmcp ties such a request to the one it serves.
///
/// The request goes through rmcp's own dispatch (`Service::handle_request`,
/// with its protocol-revision checks), its `_meta` and extensions moved to
/// its context as rmcp does; a panic is answered as an internal error
/// rather than ending the session.
#[allow(clippy::result_large_err, reason = "the message handed back is the caller's, moved, not copied")]
pub(crate) fn hot_call(
    server: &Arc<PromptServer>,
    peer: &Peer<RoleServer>,
    message: RxJsonRpcMessage<RoleServer>,
    cancelled: &CancellationToken,
) -> Result<(RequestId, HotCall), RxJsonRpcMessage<RoleServer>> {
    let JsonRpcMessage::Request(JsonRpcRequest {
        request: ClientRequest::GetPromptRequest(_) | ClientRequest::ListPromptsRequest(_) | ClientRequest::CompleteRequest(_),
        ..
    }) = &message
    else {
        return Err(message);
    };
    let JsonRpcMessage::Request(JsonRpcRequest { id, mut request, .. }) = message else { unreachable!("matched above") };
    let mut context = RequestContext::new(id.clone(), peer.clone());
    context.ct = cancelled.child_token();
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    if matches!(request, ClientRequest::GetPromptRequest(_)) && crate::handler::may_elicit(&context) {
        *request.extensions_mut() = std::mem::take(&mut context.extensions);
        *request.get_meta_mut() = std::mem::take(&mut context.meta);
        return Err(JsonRpcMessage::Request(JsonRpcRequest::new(id, request)));
    }
    let server = server.clone();
    let answer_id = id.clone();
    let call = Box::pin(async move {
        let dispatched = std::panic::AssertUnwindSafe(rmcp::Service::handle_request(&*server, request, context));
        match futures::FutureExt::catch_unwind(dispatched).await {
            Ok(Ok(result)) => JsonRpcMessage::response(result, answer_id),
            Ok(Err(error)) => JsonRpcMessage::error(error, Some(answer_id)),
            // On rmcp's path a panic ends its request's task, unanswered;
            // here it would end the session's: it is answered instead.
            Err(_) => {
                tracing::error!(id = ?logged_id(&answer_id), "the host failed while answering a request (a panic): answered as an internal error");
                JsonRpcMessage::error(ErrorData::internal_error("the host failed while answering this request", None), Some(answer_id))
            }
        }
    });
    Ok((id, call))
}

/// The hot requests running, each with the token that cancels it and what
/// it holds until it is over (`T`). A client may reuse an id while a
/// request with it runs, so an id names every request running with it,
/// each told apart by a serial number. Whoever removes a request's entry
/// decides: the call ([`Self::ended`]: its answer is sent) or a
/// cancellation ([`Self::cancel`]: it is not).
pub(crate) struct CancellableRequests<T> {
    running: std::sync::Mutex<HashMap<RequestId, Vec<Running<T>>>>,
    next_serial: AtomicU64,
}

/// One request running: its serial number, its token, what it holds.
struct Running<T> {
    serial: u64,
    cancel: CancellationToken,
    held: T,
}

/// A request running, as [`CancellableRequests::started`] noted it.
pub(crate) struct Noted {
    id: RequestId,
    serial: u64,
}

impl<T> Default for CancellableRequests<T> {
    fn default() -> Self {
        CancellableRequests { running: Default::default(), next_serial: AtomicU64::new(0) }
    }
}

impl<T> CancellableRequests<T> {
    /// Notes a request with `id` running, cancelled through `cancel`,
    /// holding `held` until it is over.
    pub(crate) fn started(&self, id: RequestId, cancel: CancellationToken, held: T) -> Noted {
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
        self.running.lock().expect("never poisoned").entry(id.clone()).or_default().push(Running { serial, cancel, held });
        Noted { id, serial }
    }

    /// What the request `noted` held, if it was still running (not
    /// cancelled); it is running no more.
    pub(crate) fn ended(&self, noted: &Noted) -> Option<T> {
        let mut running = self.running.lock().expect("never poisoned");
        let requests = running.get_mut(&noted.id)?;
        let at = requests.iter().position(|request| request.serial == noted.serial)?;
        let request = requests.swap_remove(at);
        if requests.is_empty() {
            running.remove(&noted.id);
        }
        Some(request.held)
    }

    /// Cancels every request running with `id`.
    pub(crate) fn cancel(&self, id: &RequestId) {
        let cancelled = self.running.lock().expect("never poisoned").remove(id);
        cancelled.into_iter().flatten().for_each(|request| request.cancel.cancel());
    }

    /// The id of each request running, once per request.
    pub(crate) fn ids(&self) -> Vec<RequestId> {
        let running = self.running.lock().expect("never poisoned");
        running.iter().flat_map(|(id, requests)| std::iter::repeat_n(id.clone(), requests.len())).collect()
    }
}

/// A request id in a log line, cut to [`LOGGED_ID_CHARS`] characters: log
/// it with `?`, which escapes what the client wrote.
pub(super) fn logged_id(id: &RequestId) -> RequestId {
    match id {
        RequestId::String(text) if text.chars().count() > LOGGED_ID_CHARS => {
            RequestId::String(format!("{}…", text.chars().take(LOGGED_ID_CHARS).collect::<String>()).into())
        }
        id => id.clone(),
    }
}

const LOGGED_ID_CHARS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_cancels_every_hot_request_with_its_id_and_no_other() {
        let requests = CancellableRequests::default();
        let (first, second, other) = (CancellationToken::new(), CancellationToken::new(), CancellationToken::new());
        let reused = RequestId::Number(7);
        let first_noted = requests.started(reused.clone(), first.clone(), ());
        requests.started(reused.clone(), second.clone(), ());
        let other_noted = requests.started(RequestId::Number(8), other.clone(), ());
        requests.cancel(&reused);
        assert!(first.is_cancelled() && second.is_cancelled() && !other.is_cancelled());
        // A call cancelled, then ended, leaves nothing; the other stays noted until it ends.
        assert_eq!(requests.ended(&first_noted), None);
        assert_eq!(requests.ids(), [RequestId::Number(8)]);
        assert_eq!(requests.ended(&other_noted), Some(()));
        assert!(requests.ids().is_empty());
    }
}
