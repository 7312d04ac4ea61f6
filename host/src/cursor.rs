//! Pagination cursors for `prompts/list`, `skills/list` and
//! `resources/list`.
//!
//! A cursor is opaque to clients. Inside, it is the base64url form of
//! `<list version>:<position>`: the version ties it to one version of one
//! list, so a cursor issued before the plugins changed (or by another list)
//! is recognised as stale rather than silently skipping or repeating
//! entries; the position is the index of the next entry to list.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;

/// The list a cursor pages through, as its errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Prompts,
    Skills,
    Resources,
}

impl List {
    /// What a client lists again: `prompts`.
    fn what(self) -> &'static str {
        match self {
            List::Prompts => "prompts",
            List::Skills => "skills",
            List::Resources => "resources",
        }
    }

    /// What changed under a stale cursor: `the prompt catalog`.
    fn changed(self) -> &'static str {
        match self {
            List::Prompts => "the prompt catalog",
            List::Skills => "the skills served",
            List::Resources => "the resources served",
        }
    }
}

/// Why a cursor was refused. Both are the client's to fix by listing again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("invalid cursor: it is not one this server issued; list {} again without a cursor", .0.what())]
    Malformed(List),
    #[error("stale cursor: {} changed after it was issued; list {} again without a cursor", .0.changed(), .0.what())]
    Stale(List),
}

/// Encodes a cursor.
pub fn encode(version: &str, position: usize) -> String {
    BASE64URL.encode(format!("{version}:{position}"))
}

/// Decodes a cursor of `list` and checks it against the list's `version`,
/// of `len` entries.
pub fn decode(list: List, cursor: &str, version: &str, len: usize) -> Result<usize, CursorError> {
    let malformed = CursorError::Malformed(list);
    let bytes = BASE64URL.decode(cursor).map_err(|_| malformed.clone())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| malformed.clone())?;
    let (cursor_version, position) = text.split_once(':').ok_or(malformed.clone())?;
    if !is_version(cursor_version) || !position.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed);
    }
    let position: usize = position.parse().map_err(|_| malformed.clone())?;
    if cursor_version != version {
        return Err(CursorError::Stale(list));
    }
    // A list only issues cursors that point inside it, past its start.
    if position == 0 || position >= len {
        return Err(malformed);
    }
    Ok(position)
}

/// The length of a list version, in hex digits.
pub const VERSION_LEN: usize = 16;

/// A list's version from `parts`, each length-prefixed, hashed (SHA-256):
/// equal parts give equal versions on any host.
pub fn version<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let hash = hasher.finalize();
    hash.iter().take(VERSION_LEN / 2).map(|byte| format!("{byte:02x}")).collect()
}

fn is_version(text: &str) -> bool {
    text.len() == VERSION_LEN && text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION: &str = "0123456789abcdef";

    #[test]
    fn round_trip() {
        let cursor = encode(VERSION, 42);
        assert_eq!(decode(List::Prompts, &cursor, VERSION, 100), Ok(42));
    }

    #[test]
    fn another_version_is_stale() {
        let cursor = encode("fedcba9876543210", 42);
        assert_eq!(decode(List::Prompts, &cursor, VERSION, 100), Err(CursorError::Stale(List::Prompts)));
    }

    #[test]
    fn garbage_is_malformed() {
        for cursor in ["", "!!!", "bm90IGEgY3Vyc29y", &BASE64URL.encode("0123456789abcdef:x")] {
            assert_eq!(decode(List::Prompts, cursor, VERSION, 100), Err(CursorError::Malformed(List::Prompts)), "{cursor:?}");
        }
    }

    #[test]
    fn positions_outside_the_catalog_are_malformed() {
        assert_eq!(decode(List::Prompts, &encode(VERSION, 0), VERSION, 100), Err(CursorError::Malformed(List::Prompts)));
        assert_eq!(decode(List::Prompts, &encode(VERSION, 100), VERSION, 100), Err(CursorError::Malformed(List::Prompts)));
        assert_eq!(
            decode(List::Prompts, &BASE64URL.encode(format!("{VERSION}:99999999999999999999999")), VERSION, 100),
            Err(CursorError::Malformed(List::Prompts))
        );
    }
}
