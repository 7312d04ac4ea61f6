//! An HTTP session's id, sealed, so that any replica serves any session.
//!
//! A session of a revision before 2026-07-28 is opened by `initialize` and
//! named by the id its client sends with every request after it. The id the
//! host gives is not rmcp's: it is rmcp's id and what the client's
//! `initialize` said (its revision, its capabilities, its name and version),
//! sealed with the shared request-state key (`input::RequestStateSeal`:
//! HMAC-SHA256, a key ring for rotation) for the principal it was issued to
//! (tenant, issuer, subject), with an expiry ([`SESSION_LIFETIME`]). A
//! replica that never saw the `initialize`, or one restarted since, opens the
//! id and has rmcp replay the handshake from it ([`Restorable`], rmcp's
//! session store), then serves the request; nothing about a session lives
//! only in the process that opened it.
//!
//! What cannot move: an elicitation waiting for its answer (the request
//! that asked waits in one process), and the resumption of one replica's
//! event stream by `Last-Event-ID` on another. A session ended with DELETE
//! is remembered as ended by the replica that ended it ([`EndedSessions`]);
//! another replica would restore it for its own user until it expires.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{Implementation, InitializeRequestParams};
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use serde::{Deserialize, Serialize};

use crate::app::ServedContent;
use crate::identity::Principal;
use crate::input::RequestStateSeal;

/// How long a session id is good for from its `initialize`: a day, after
/// which its client is answered 404 and opens a new session, as the
/// specification has a client do whenever its session is gone.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest session id the host issues, and reads (bytes of the header
/// value, as the client sends it back with every request). An `initialize`
/// whose capabilities would make it longer gets an id without them, which
/// only the replica that opened the session can serve.
pub const MAX_SESSION_ID_BYTES: usize = 4096;

/// How many sessions ended with DELETE a replica remembers as ended (per
/// tenant), the oldest forgotten first: each is one a client ended itself.
pub const MAX_ENDED_SESSIONS: usize = 10_000;

/// What a session id seals.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// rmcp's id of the session, the same on every replica.
    id: String,
    /// What a replica that never saw the client's `initialize` replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    initialize: Option<InitializeRequestParams>,
    /// What content the client was told of, which a restore declares again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<ServedContent>,
}

/// A session id opened.
#[derive(Debug)]
pub struct OpenedSession {
    /// rmcp's id of the session.
    pub id: String,
    /// The client's `initialize` as sealed, if it fitted.
    pub initialize: Option<InitializeRequestParams>,
    /// What content the client was told of at its `initialize`.
    pub content: Option<ServedContent>,
}

/// Why a presented session id does not name a session.
#[derive(Debug, PartialEq, Eq)]
pub enum NotOpened {
    /// Sealed by this key ring for this principal, but past its lifetime.
    Expired,
    /// Not one this key ring sealed for this principal: forged, altered,
    /// another user's or tenant's, sealed with a key no longer held, or
    /// longer than any issued.
    NotBound,
    /// A session this replica's client ended with DELETE ([`EndedSessions`]).
    Ended,
}

/// Issues and opens session ids with the shared request-state key.
#[derive(Clone)]
pub struct SessionIds {
    seal: RequestStateSeal,
}

impl SessionIds {
    pub fn new(seal: RequestStateSeal) -> SessionIds {
        SessionIds { seal }
    }

    /// The id a client is given for rmcp's session `id`, opened by
    /// `principal` with the `initialize` request whose body is `body`, and
    /// told of `content`.
    pub fn issue(&self, id: &str, body: &[u8], content: Option<ServedContent>, principal: &Principal) -> String {
        let bound_to = bound_to(principal);
        let sealed = Sealed { id: id.to_string(), initialize: initialize_params(body), content };
        let issued = self.seal.seal_bound(&sealed, &bound_to, SESSION_LIFETIME);
        if issued.len() <= MAX_SESSION_ID_BYTES {
            return issued;
        }
        tracing::info!(
            bytes = issued.len(),
            limit = MAX_SESSION_ID_BYTES,
            "a client's initialize is too large to travel in its session id: only this replica can serve the session"
        );
        self.seal.seal_bound(&Sealed { id: id.to_string(), initialize: None, content }, &bound_to, SESSION_LIFETIME)
    }

    /// The session `presented` names, if this key ring sealed it for
    /// `principal` and it has not expired.
    pub fn open(&self, presented: &str, principal: &Principal) -> Result<OpenedSession, NotOpened> {
        if presented.len() > MAX_SESSION_ID_BYTES {
            return Err(NotOpened::NotBound);
        }
        match self.seal.open_bound::<Sealed>(presented, &bound_to(principal)) {
            Ok(Sealed { id, initialize, content }) => Ok(OpenedSession { id, initialize, content }),
            Err(true) => Err(NotOpened::Expired),
            Err(false) => Err(NotOpened::NotBound),
        }
    }
}

/// What a session id is bound to: the principal, under a label of its own
/// (a `requestState` is bound under another, so neither opens as the other).
fn bound_to(principal: &Principal) -> Vec<u8> {
    [b"prompt-host session\0".as_slice(), &principal.bytes()].concat()
}

/// The parameters of the `initialize` request in `body` a replica needs to
/// replay it: the revision, the capabilities, and of the client's
/// `clientInfo` its name and version (its title, icons and website serve
/// no replica). None for a body that is not one such request.
fn initialize_params(body: &[u8]) -> Option<InitializeRequestParams> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let params: InitializeRequestParams = serde_json::from_value(request.get("params")?.clone()).ok()?;
    let client = Implementation::new(params.client_info.name, params.client_info.version);
    Some(InitializeRequestParams::new(params.capabilities, client).with_protocol_version(params.protocol_version))
}

/// The sessions a request of this replica is about to restore, by rmcp's
/// id, with the `initialize` its id sealed: rmcp's session store, which rmcp
/// asks when a request names a session it does not hold. An entry lives as
/// long as the requests that offered it ([`Restorable::offer`]), so the map
/// holds at most one entry per request under way.
#[derive(Default)]
pub struct Restorable {
    offered: Mutex<HashMap<String, (InitializeRequestParams, usize)>>,
}

/// An offer of one session to restore, withdrawn when dropped.
pub struct RestoreOffer {
    restorable: Arc<Restorable>,
    id: String,
}

impl Restorable {
    /// Offers rmcp the session `id` to restore from `initialize`, for as
    /// long as the offer is held.
    pub fn offer(self: &Arc<Self>, id: &str, initialize: InitializeRequestParams) -> RestoreOffer {
        let mut offered = self.offered.lock().expect("never poisoned");
        offered.entry(id.to_string()).or_insert((initialize, 0)).1 += 1;
        RestoreOffer { restorable: self.clone(), id: id.to_string() }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.offered.lock().expect("never poisoned").len()
    }
}

impl Drop for RestoreOffer {
    fn drop(&mut self) {
        let mut offered = self.restorable.offered.lock().expect("never poisoned");
        if let Some((_, held)) = offered.get_mut(&self.id) {
            *held -= 1;
            if *held == 0 {
                offered.remove(&self.id);
            }
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for Restorable {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let offered = self.offered.lock().expect("never poisoned");
        Ok(offered.get(session_id).map(|(initialize, _)| SessionState::new(initialize.clone())))
    }

    /// Nothing to store: the state travels in the session's id.
    async fn store(&self, _session_id: &str, _state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, _session_id: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}

/// The sessions this replica's clients ended with DELETE, by rmcp's id:
/// their ids are answered 404 here, as before sessions could move, rather
/// than restored. At most [`MAX_ENDED_SESSIONS`], each for at most
/// [`SESSION_LIFETIME`] (past which its id opens no more anyway).
#[derive(Default)]
pub struct EndedSessions {
    ended: Mutex<(HashMap<String, Instant>, VecDeque<String>)>,
}

impl EndedSessions {
    /// Remembers that the session `id` was ended.
    pub fn end(&self, id: &str) {
        let mut guard = self.ended.lock().expect("never poisoned");
        let (by_id, order) = &mut *guard;
        if by_id.insert(id.to_string(), Instant::now()).is_none() {
            order.push_back(id.to_string());
        }
        while order.len() > MAX_ENDED_SESSIONS {
            if let Some(oldest) = order.pop_front() {
                by_id.remove(&oldest);
            }
        }
    }

    /// Whether the session `id` was ended here within its lifetime.
    pub fn ended(&self, id: &str) -> bool {
        let guard = self.ended.lock().expect("never poisoned");
        guard.0.get(id).is_some_and(|when| when.elapsed() < SESSION_LIFETIME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal { tenant: "acme".into(), issuer: "https://issuer".into(), subject: "alice".into() }
    }

    fn ids() -> SessionIds {
        SessionIds::new(RequestStateSeal::random())
    }

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
        "capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"mcp","version":"1.0","title":"A client",
        "websiteUrl":"https://example.com"}}}"#;

    #[test]
    fn a_session_id_opens_for_the_principal_it_was_issued_to_with_what_its_initialize_said() {
        let ids = ids();
        let issued = ids.issue("4b1c-session", INITIALIZE.as_bytes(), Some(ServedContent::WithSkills), &alice());
        let opened = ids.open(&issued, &alice()).unwrap();
        assert_eq!(opened.id, "4b1c-session");
        let initialize = opened.initialize.unwrap();
        assert_eq!(initialize.protocol_version.to_string(), "2025-11-25");
        assert!(initialize.capabilities.elicitation.is_some());
        assert_eq!((initialize.client_info.name.as_str(), initialize.client_info.version.as_str()), ("mcp", "1.0"));
        assert_eq!(initialize.client_info.title, None, "what no replica needs is left out");
        assert_eq!(opened.content, Some(ServedContent::WithSkills));
        assert!(issued.len() <= MAX_SESSION_ID_BYTES);
        assert!(issued.bytes().all(|byte| byte.is_ascii_graphic()), "a header value a client sends back as it is: {issued}");
    }

    #[test]
    fn a_session_id_opens_for_no_other_user_or_tenant_and_cannot_be_forged() {
        let ids = ids();
        let issued = ids.issue("4b1c-session", INITIALIZE.as_bytes(), Some(ServedContent::WithSkills), &alice());
        let mallory = Principal { subject: "mallory".into(), ..alice() };
        let globex = Principal { tenant: "globex".into(), ..alice() };
        for other in [mallory, globex, Principal::stdio(), Principal::http_without_oauth()] {
            assert_eq!(ids.open(&issued, &other).unwrap_err(), NotOpened::NotBound, "{other:?}");
        }
        // Another key ring (another deployment, or a key rotated out).
        assert_eq!(super::SessionIds::new(RequestStateSeal::random()).open(&issued, &alice()).unwrap_err(), NotOpened::NotBound);
        let mut altered = issued.clone().into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        let too_long = "x".repeat(MAX_SESSION_ID_BYTES + 1);
        for forged in ["", "4b1c-session", "rs2.AAAA.AAAA.AAAA", &altered, &too_long, &issued.to_ascii_uppercase()] {
            assert_eq!(ids.open(forged, &alice()).unwrap_err(), NotOpened::NotBound, "{forged}");
        }
        // What the key seals for another purpose does not open as a session.
        let other_purpose =
            ids.seal.seal_bound(&Sealed { id: "x".into(), initialize: None, content: None }, &alice().bytes(), SESSION_LIFETIME);
        assert_eq!(ids.open(&other_purpose, &alice()).unwrap_err(), NotOpened::NotBound);
    }

    #[test]
    fn a_session_id_past_its_lifetime_opens_no_more() {
        let ids = ids();
        let sealed = Sealed { id: "4b1c-session".into(), initialize: None, content: None };
        let expired = ids.seal.seal_bound(&sealed, &bound_to(&alice()), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(ids.open(&expired, &alice()).unwrap_err(), NotOpened::Expired);
    }

    /// [`INITIALIZE`] with `bytes` of experimental capabilities.
    fn with_experimental(bytes: usize) -> String {
        let padding = format!(r#""capabilities":{{"experimental":{{"x":{{"pad":"{}"}}}},"#, "y".repeat(bytes));
        INITIALIZE.replace(r#""capabilities":{"#, &padding)
    }

    #[test]
    fn an_initialize_too_large_to_travel_gives_an_id_this_replica_alone_serves() {
        let ids = ids();
        // Large, and within the bound: it travels.
        let issued = ids.issue("4b1c-session", with_experimental(2_000).as_bytes(), None, &alice());
        assert!(issued.len() > 2_000 && issued.len() <= MAX_SESSION_ID_BYTES, "{}", issued.len());
        let initialize = ids.open(&issued, &alice()).unwrap().initialize.expect("it fits");
        assert_eq!(initialize.capabilities.experimental.unwrap()["x"]["pad"], "y".repeat(2_000));
        // Past the bound: an id without it.
        let issued = ids.issue("4b1c-session", with_experimental(8_192).as_bytes(), Some(ServedContent::Resources), &alice());
        assert!(issued.len() <= MAX_SESSION_ID_BYTES, "{}", issued.len());
        let opened = ids.open(&issued, &alice()).unwrap();
        assert_eq!((opened.id.as_str(), opened.initialize.is_none()), ("4b1c-session", true));
        assert_eq!(opened.content, Some(ServedContent::Resources));
        // And a body that is no initialize seals none.
        let issued = ids.issue("4b1c-session", b"not json", None, &alice());
        assert!(ids.open(&issued, &alice()).unwrap().initialize.is_none());
    }

    #[tokio::test]
    async fn a_session_is_offered_to_restore_while_a_request_holds_the_offer() {
        let restorable = Arc::new(Restorable::default());
        let params = initialize_params(INITIALIZE.as_bytes()).unwrap();
        assert!(restorable.load("s").await.unwrap().is_none());
        let first = restorable.offer("s", params.clone());
        let second = restorable.offer("s", params);
        assert!(restorable.load("s").await.unwrap().is_some());
        drop(first);
        assert!(restorable.load("s").await.unwrap().is_some(), "the second request still holds it");
        drop(second);
        assert!(restorable.load("s").await.unwrap().is_none());
        assert_eq!(restorable.len(), 0);
    }

    #[test]
    fn ended_sessions_are_remembered_up_to_the_cap_oldest_forgotten_first() {
        let ended = EndedSessions::default();
        for at in 0..=MAX_ENDED_SESSIONS {
            ended.end(&format!("s{at}"));
        }
        assert!(!ended.ended("s0"), "the oldest is forgotten");
        assert!(ended.ended("s1"));
        assert!(ended.ended(&format!("s{MAX_ENDED_SESSIONS}")));
        assert!(!ended.ended("never"));
    }
}
