//! Who a request comes from, and what a client holds bound to it.
//!
//! A [`Principal`] is the tenant, the token's issuer and its subject (over
//! stdio, the fixed [`Principal::stdio`]). What the host hands a client that
//! it could hand to someone else is bound to the principal: the sealed
//! `requestState` (see `input::Binding`), and an HTTP session's id, sealed
//! for that principal (`transport::http::session_ids`).
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

/// The key of this process's session labels: random, so that a label
/// names a session in this process's log only.
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
