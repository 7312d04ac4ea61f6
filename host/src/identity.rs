//! Who a request comes from, and what a client holds bound to it.
//!
//! A [`Principal`] is the tenant, the token's issuer and its subject (over
//! stdio, the fixed [`Principal::stdio`]). What the host hands a client that
//! it could hand to someone else is bound to the principal: the sealed
//! `requestState` (see `input::Binding`), and an HTTP session's id, which
//! carries a tag only this process computes for that principal
//! ([`bind_session`], [`bound_session`]).
//!
//! A session is named in the log and in traces only by [`session_label`], a
//! keyed hash of its id: whoever reads them cannot take the session over.
//!
//! Like [`crate::metrics`], this module depends on nothing else in the
//! crate.

use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Who a request comes from: what requests states and sessions are bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant serving the request ("" for the handler of requests that
    /// name no tenant, when it is not a tenant).
    pub tenant: String,
    /// The issuer of the token ("" without OAuth).
    pub issuer: String,
    /// The token's `sub` ("" without OAuth, or a token without one).
    pub subject: String,
}

impl Principal {
    /// The one client of stdio: it has no token.
    pub fn stdio() -> Principal {
        Principal { tenant: String::new(), issuer: "stdio".into(), subject: "stdio".into() }
    }

    /// Every client of the HTTP front without OAuth (open, or one static
    /// token): the front cannot tell them apart.
    pub fn http_without_oauth() -> Principal {
        Principal { tenant: String::new(), issuer: String::new(), subject: String::new() }
    }

    /// The principal as bytes a MAC covers: a JSON array, so that no two
    /// principals give the same bytes.
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::json!(["principal", self.tenant, self.issuer, self.subject]).to_string().into_bytes()
    }
}

/// The key of this process's session tags and labels: random, as sessions
/// live in this process only.
fn process_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides random bytes");
        key
    })
}

/// HMAC-SHA256 under the process key of `parts`, each length-prefixed
/// after the `purpose` label.
fn mac(purpose: &str, parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(process_key()).expect("HMAC takes any key length");
    mac.update(purpose.as_bytes());
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

/// The bytes of a session tag (128 bits).
const SESSION_TAG_BYTES: usize = 16;

/// The session id a client is given for the session `id` (rmcp's) opened
/// by `principal`: the id, a dot, and a tag binding it to the principal (in
/// lowercase hex, as rmcp's ids are, so a client that folds case keeps it).
pub fn bind_session(id: &str, principal: &Principal) -> String {
    let tag = mac("prompt-host session", &[id.as_bytes(), &principal.bytes()]).finalize().into_bytes();
    format!("{id}.{}", hex(&tag[..SESSION_TAG_BYTES]))
}

/// The session id (rmcp's) in `presented`, if this process gave it to
/// `principal` (see [`bind_session`]); compared in constant time.
pub fn bound_session<'a>(presented: &'a str, principal: &Principal) -> Option<&'a str> {
    let (id, tag) = presented.rsplit_once('.')?;
    if tag.len() != SESSION_TAG_BYTES * 2 || !tag.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let tag: Vec<u8> = (0..SESSION_TAG_BYTES).map(|at| u8::from_str_radix(&tag[at * 2..at * 2 + 2], 16).expect("hex")).collect();
    mac("prompt-host session", &[id.as_bytes(), &principal.bytes()]).verify_truncated_left(&tag).ok()?;
    Some(id)
}

/// What names a session in the log and in traces: a keyed hash of its id
/// (16 hex digits), the same for the same session within this process, and
/// of no use to take the session over.
pub fn session_label(id: &str) -> String {
    let hash = mac("prompt-host session label", &[id.as_bytes()]).finalize().into_bytes();
    hex(&hash[..8])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal { tenant: "acme".into(), issuer: "https://issuer".into(), subject: "alice".into() }
    }

    #[test]
    fn a_session_id_counts_only_for_the_principal_it_was_given_to() {
        let given = bind_session("4b1c-session", &alice());
        assert_eq!(bound_session(&given, &alice()), Some("4b1c-session"));
        let mallory = Principal { subject: "mallory".into(), ..alice() };
        let globex = Principal { tenant: "globex".into(), ..alice() };
        for other in [mallory, globex, Principal::stdio(), Principal::http_without_oauth()] {
            assert_eq!(bound_session(&given, &other), None, "{other:?}");
        }
        let upper = given.to_ascii_uppercase();
        for forged in ["4b1c-session", "4b1c-session.", "other.00000000000000000000000000000000", &format!("x{given}"), &upper] {
            assert_eq!(bound_session(forged, &alice()), None, "{forged}");
        }
    }

    #[test]
    fn principals_whose_fields_run_together_differ() {
        let one = Principal { tenant: "a".into(), issuer: "bc".into(), subject: String::new() };
        let two = Principal { tenant: "ab".into(), issuer: "c".into(), subject: String::new() };
        assert_ne!(one.bytes(), two.bytes());
    }

    #[test]
    fn a_session_label_is_a_stable_keyed_hash_that_does_not_show_the_id() {
        let label = session_label("4b1c-session");
        assert_eq!(label, session_label("4b1c-session"));
        assert_ne!(label, session_label("4b1c-session2"));
        assert_eq!(label.len(), 16);
        assert!(label.bytes().all(|byte| byte.is_ascii_hexdigit()), "{label}");
    }
}
