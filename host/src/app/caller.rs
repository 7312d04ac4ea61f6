//! Who a request comes from and what its client can do, as each transport
//! tells the use cases: the one typed [`Caller`] they take instead of a
//! protocol's request context.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::identity::Principal;
use crate::input::{ClientSession, Forms};

/// The caller of one request: whom it comes from (`principal`, which a
/// sealed `requestState` is bound to), and what its client can do when a
/// prompt needs input (`asking`).
#[derive(Clone)]
pub struct Caller {
    pub principal: Principal,
    pub asking: Asking,
}

impl Caller {
    /// The caller of the `get`, `complete` and `inspect` commands: the
    /// process's own user, on stdio, answering forms with `answer`.
    pub fn local(answer: Answerer) -> Caller {
        Caller { principal: Principal::stdio(), asking: Asking::Locally(answer) }
    }
}

/// How the host can ask the client of a request for the input a prompt
/// needs.
#[derive(Clone)]
pub enum Asking {
    /// With an `InputRequiredResult` (protocol 2026-07-28 and later, to a
    /// client that declared the elicitation capability).
    InputRequired,
    /// With `elicitation/create` requests on the client's session, then the
    /// call continues (an earlier revision's client that declared
    /// elicitation), until any of the tokens is cancelled: the request is
    /// cancelled, its client gone, its session ended, or the server
    /// stopping; over HTTP, each elicitation takes a stream's place.
    Elicitation(ClientSession, Vec<CancellationToken>, Option<StreamPlace>),
    /// It cannot: the reason, which completes "it needs input (...), and".
    Cannot(&'static str),
    /// Without a client (the `get` command): the answers `Answerer` gives.
    Locally(Answerer),
}

/// Answers forms without a client: `None` when a required field has no
/// answer (the `get` command was given none and cannot ask).
pub type Answerer = Arc<dyn Fn(&Forms) -> Option<rmcp::model::InputResponses> + Send + Sync>;

/// What the HTTP transport lends a request whose prompt may ask its client
/// now. An elicitation keeps its request's connection busy while it waits,
/// as a long-lived stream does: it takes a stream's place, counted with the
/// user's and the tenant's streams (`take`: the place, held until dropped;
/// or the refusal's text), so pending elicitations cannot hold the
/// connections kept for other requests and `/healthz`. It ends when the
/// server stops (`stopping`), instead of holding the stop for the grace.
#[derive(Clone)]
pub struct StreamPlace {
    pub take: Arc<dyn Fn() -> Result<Box<dyn std::any::Any + Send + Sync>, String> + Send + Sync>,
    pub stopping: CancellationToken,
}
