//! Pagination cursors for `prompts/list`.
//!
//! A cursor is opaque to clients. Inside, it is the base64url form of
//! `<catalog version>:<position>`: the version ties it to one catalog, so a
//! cursor issued before the plugins changed is recognised as stale rather than
//! silently skipping or repeating prompts; the position is the index of the
//! next prompt to list.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;

/// Why a cursor was refused. Both are the client's to fix by listing again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("invalid cursor: it is not one this server issued; list prompts again without a cursor")]
    Malformed,
    #[error("stale cursor: the prompt catalog changed after it was issued; list prompts again without a cursor")]
    Stale,
}

/// Encodes a cursor.
pub fn encode(version: &str, position: usize) -> String {
    BASE64URL.encode(format!("{version}:{position}"))
}

/// Decodes a cursor and checks it against the catalog of `version` with `len`
/// prompts.
pub fn decode(cursor: &str, version: &str, len: usize) -> Result<usize, CursorError> {
    let bytes = BASE64URL.decode(cursor).map_err(|_| CursorError::Malformed)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| CursorError::Malformed)?;
    let (cursor_version, position) = text.split_once(':').ok_or(CursorError::Malformed)?;
    if !is_version(cursor_version) || !position.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CursorError::Malformed);
    }
    let position: usize = position.parse().map_err(|_| CursorError::Malformed)?;
    if cursor_version != version {
        return Err(CursorError::Stale);
    }
    // The catalog only issues cursors that point inside it, past its start.
    if position == 0 || position >= len {
        return Err(CursorError::Malformed);
    }
    Ok(position)
}

/// The length of a catalog version, in hex digits.
pub const VERSION_LEN: usize = 16;

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
        assert_eq!(decode(&cursor, VERSION, 100), Ok(42));
    }

    #[test]
    fn another_version_is_stale() {
        let cursor = encode("fedcba9876543210", 42);
        assert_eq!(decode(&cursor, VERSION, 100), Err(CursorError::Stale));
    }

    #[test]
    fn garbage_is_malformed() {
        for cursor in ["", "!!!", "bm90IGEgY3Vyc29y", &BASE64URL.encode("0123456789abcdef:x")] {
            assert_eq!(decode(cursor, VERSION, 100), Err(CursorError::Malformed), "{cursor:?}");
        }
    }

    #[test]
    fn positions_outside_the_catalog_are_malformed() {
        assert_eq!(decode(&encode(VERSION, 0), VERSION, 100), Err(CursorError::Malformed));
        assert_eq!(decode(&encode(VERSION, 100), VERSION, 100), Err(CursorError::Malformed));
        assert_eq!(decode(&BASE64URL.encode(format!("{VERSION}:99999999999999999999999")), VERSION, 100), Err(CursorError::Malformed));
    }
}
