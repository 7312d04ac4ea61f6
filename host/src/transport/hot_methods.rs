//! The hot methods (`prompts/get`, `prompts/list`, `completion/complete`),
//! answered by a transport itself rather than through rmcp's per-request
//! tasks: stdio on the thread that read the request (`stdio::hot_path`),
//! HTTP on the POST's own task (`http::sessions`, answered by the front). One home for what a
//! hot request is and how it is dispatched, so both transports answer it
//! as rmcp's own loop would.

use std::pin::Pin;
use std::sync::Arc;

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
