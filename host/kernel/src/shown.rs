//! Text a pack or a client controls, as it may be shown (an error message,
//! a report, a log): the one rule, made printable and cut. A leaf module:
//! `validate` and `arguments` both quote text with it.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// What follows text cut by [`cut_printable`].
pub const TRUNCATION_MARKER: &str = "... [cut by prompt-host:";

/// Text a pack wrote, as it may be shown (in an error message, a report, a
/// log): control and format characters (an escape sequence, a carriage
/// return, NUL, a bidirectional override) are written escaped, `\u{1b}`;
/// the rest, newlines and tabs included, as is. A client that prints an
/// error to a terminal is not open to escape injection.
pub fn printable(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        push_printable(&mut shown, c);
    }
    shown
}

fn push_printable(shown: &mut String, c: char) {
    use std::fmt::Write as _;
    match c {
        '\n' | '\t' => shown.push(c),
        c if c.is_control() || is_format(c) => write!(shown, "{}", c.escape_unicode()).expect("writing to a String"),
        c => shown.push(c),
    }
}

/// `text` made [`printable`] and cut to `max_bytes` (escapes included), with
/// [`TRUNCATION_MARKER`] saying how many bytes of it were left out (as
/// `validate::error_message` cuts at its limit).
pub fn cut_printable(message: &str, max_bytes: usize) -> String {
    let mut shown = String::with_capacity(message.len().min(max_bytes));
    for (at, c) in message.char_indices() {
        let before = shown.len();
        push_printable(&mut shown, c);
        if shown.len() > max_bytes {
            shown.truncate(before);
            return format!("{shown}{TRUNCATION_MARKER} {} more bytes]", message.len() - at);
        }
    }
    shown
}

/// Whether `c` is an invisible formatting character (Unicode Cf: a
/// bidirectional override, a zero-width joiner), which makes text display as
/// other text.
pub fn is_format(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
}
