//! The YAML frontmatter of a skill's `SKILL.md` (Agent Skills, served through
//! the MCP Skills extension, SEP-2640), read into JSON and checked against
//! the Agent Skills rules: a `name` that is the skill's folder name and a
//! `description` that tells a model when to use it.
//!
//! The text comes from a pack nobody has to trust and a model will follow
//! it, so the reading is bounded before it starts and refuses what YAML
//! could do beyond plain data. The fences are found without looking past
//! [`MAX_FRONTMATTER_BYTES`], so a huge file costs nothing to refuse. The
//! YAML is read as a stream of events (saphyr-parser's pull parser, an
//! explicit state machine with no recursion) and the JSON is built here, on
//! a stack of at most [`MAX_FRONTMATTER_DEPTH`] open collections, so that:
//! anchors and aliases are refused (no billion laughs: the JSON grows only
//! with the text), tags are refused (no `!!python/object`), and
//! nesting is refused the moment it goes too deep. Plain scalars take their
//! type from the YAML 1.2 core schema, so `version: 1.0` stays a number, as
//! any other YAML reader would see it.
//!
//! Every reason names what is wrong and how to fix it, and quotes at most
//! [`QUOTED_CHARS`] characters of the pack's text, escaped, so that an error
//! message cannot carry the pack's text (or a terminal escape) to whoever
//! reads it.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span, Tag};
use serde_json::{Map, Number, Value};

/// The most bytes of frontmatter (between the fences) a SKILL.md may have.
pub const MAX_FRONTMATTER_BYTES: usize = 16 << 10;
/// The deepest a frontmatter value may nest (mappings and sequences), the
/// frontmatter's own mapping being the first level.
pub const MAX_FRONTMATTER_DEPTH: usize = 8;
/// The longest skill name, in characters (Agent Skills rule).
pub const MAX_SKILL_NAME_CHARS: usize = 64;
/// The longest description, in characters (Agent Skills rule).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The most characters of the pack's text quoted in a reason.
const QUOTED_CHARS: usize = 64;

/// The longest a closing fence line can be (`---\r\n`): the fence search
/// looks this far past [`MAX_FRONTMATTER_BYTES`], and no further.
const FENCE_LINE_BYTES: usize = 5;

/// saphyr-parser's reason for an alias whose anchor it has not seen: since
/// every anchor is refused before its alias is reached, this is how an alias
/// shows itself.
const UNKNOWN_ANCHOR: &str = "while parsing node, found unknown anchor";
/// saphyr-parser's reason when flow collections nest past its own limit
/// (255): its scanner reads ahead of the events, so it can get there before
/// the depth check here sees the ninth level.
const FLOW_TOO_DEEP: &str = "recursion limit exceeded";

/// A SKILL.md's frontmatter, as JSON: `name` and `description` are strings,
/// checked; other fields kept verbatim with YAML's types.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    /// Its `name`, which passed [`check_name`].
    pub name: String,
    /// Its `description`: not blank, at most [`MAX_DESCRIPTION_CHARS`] characters.
    pub description: String,
    /// Every field, name and description included, in the order written
    /// (where serde_json keeps order: with its `preserve_order` feature; by
    /// key otherwise).
    pub fields: Map<String, Value>,
}

/// Reads the frontmatter of `skill_md` (already known to be UTF-8). Err is a
/// one-line reason a pack author can act on, e.g. "its frontmatter uses a
/// YAML alias (*x): aliases are refused, write the value out".
pub fn parse(skill_md: &str) -> Result<Frontmatter, String> {
    let yaml = fenced(skill_md)?;
    let fields = read(yaml)?;
    let name = match fields.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(format!("its frontmatter's name is {}, not a string: write the skill's folder name", kind(other))),
        None => return Err("its frontmatter has no name: add a line name: followed by the skill's folder name".into()),
    };
    check_name(&name).map_err(|reason| format!("its frontmatter's name: {reason}"))?;
    let description = match fields.get("description") {
        Some(Value::String(description)) => description.clone(),
        Some(other) => return Err(format!("its frontmatter's description is {}, not a string: write it as text", kind(other))),
        None => return Err("its frontmatter has no description: add one saying what the skill does and when to use it".into()),
    };
    if description.trim().is_empty() {
        return Err("its frontmatter's description is blank: say what the skill does and when to use it".into());
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!("its frontmatter's description is {chars} characters, more than {MAX_DESCRIPTION_CHARS}: shorten it"));
    }
    Ok(Frontmatter { name, description, fields })
}

/// Checks a skill name against the Agent Skills naming rule: 1..=64
/// characters, lowercase ASCII letters, digits and hyphens, not starting or
/// ending with a hyphen, no two hyphens in a row.
pub fn check_name(name: &str) -> Result<(), String> {
    const RULE: &str = "a skill name is 1 to 64 lowercase ASCII letters, digits and single hyphens, such as pdf-processing";
    if name.is_empty() {
        return Err(format!("the skill name is empty: {RULE}"));
    }
    // Counted only up to one past the limit: the name may be long.
    if name.chars().nth(MAX_SKILL_NAME_CHARS).is_some() {
        return Err(format!("the skill name {} is longer than {MAX_SKILL_NAME_CHARS} characters: {RULE}", quoted(name)));
    }
    if let Some(c) = name.chars().find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-')) {
        return Err(format!("the skill name {} holds {}: {RULE}", quoted(name), quoted_char(c)));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!("the skill name {} starts or ends with a hyphen: {RULE}", quoted(name)));
    }
    if name.contains("--") {
        return Err(format!("the skill name {} has two hyphens in a row: {RULE}", quoted(name)));
    }
    Ok(())
}

/// The text between the opening `---` line and the next line that is exactly
/// `---`, found without looking at more than [`MAX_FRONTMATTER_BYTES`] (and a
/// fence line) of it.
fn fenced(skill_md: &str) -> Result<&str, String> {
    if skill_md.starts_with('\u{feff}') {
        return Err("it starts with a byte order mark (U+FEFF): save it as UTF-8 without one, so that its first line is ---".into());
    }
    let Some(body) = skill_md.strip_prefix("---\n").or_else(|| skill_md.strip_prefix("---\r\n")) else {
        return Err("its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---".into());
    };
    let bytes = body.as_bytes();
    let window = &bytes[..bytes.len().min(MAX_FRONTMATTER_BYTES + FENCE_LINE_BYTES)];
    // `start` is where a line starts: the fence may be any line's, as long
    // as what comes before it fits.
    let mut start = 0;
    while start <= MAX_FRONTMATTER_BYTES {
        if is_fence(&bytes[start..]) {
            return Ok(&body[..start]);
        }
        match window.get(start..).and_then(|rest| rest.iter().position(|&byte| byte == b'\n')) {
            Some(at) => start += at + 1,
            None => break,
        }
    }
    match bytes.len() > MAX_FRONTMATTER_BYTES {
        true => Err(format!(
            "its frontmatter has no closing --- line within {MAX_FRONTMATTER_BYTES} bytes, the most frontmatter may hold: shorten it, \
             or move long text into the markdown below it"
        )),
        false => Err("its frontmatter has no closing --- line: end it with a line --- before the markdown".into()),
    }
}

/// Whether `rest` starts with a line that is exactly `---`.
fn is_fence(rest: &[u8]) -> bool {
    matches!(rest, [b'-', b'-', b'-'] | [b'-', b'-', b'-', b'\n', ..] | [b'-', b'-', b'-', b'\r', b'\n', ..])
}

/// A collection still open while the events are read.
enum Open {
    /// A mapping, and the key whose value comes next (None: a key comes next).
    Mapping(Map<String, Value>, Option<String>),
    Sequence(Vec<Value>),
}

/// The frontmatter's YAML, as a JSON object, built from the parser's events.
fn read(yaml: &str) -> Result<Map<String, Value>, String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut open: Vec<Open> = Vec::with_capacity(MAX_FRONTMATTER_DEPTH);
    let mut root: Option<Map<String, Value>> = None;
    // The top-level field being read, to name it in a reason.
    let mut field: Option<String> = None;
    let mut documents = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|error| syntax(yaml, &error))?;
        let mapping = matches!(event, Event::MappingStart(..));
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(format!(
                        "its frontmatter holds more than one YAML document (a second one starts at line {}): \
                         remove the --- or ... line inside it",
                        line(span)
                    ));
                }
            }
            Event::Alias(_) => return Err(alias(yaml, span)),
            Event::Scalar(text, style, anchor, tag) => {
                refuse_anchor_or_tag(yaml, span, anchor, tag.as_deref())?;
                if open.is_empty() {
                    return Err(not_a_mapping(span));
                }
                let value = scalar(&text, style).map_err(|what| format!("its frontmatter's {} {what}", place(&open, &field)))?;
                if let Value::String(text) = &value
                    && let Some(c) = text.chars().find(|&c| is_refused_char(c))
                {
                    return Err(format!("its frontmatter's {} holds {}: remove it", place(&open, &field), refused_char(c)));
                }
                add(&mut open, &mut field, value, span)?;
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                refuse_anchor_or_tag(yaml, span, anchor, tag.as_deref())?;
                match open.last() {
                    None if root.is_some() => return Err(format!("its frontmatter holds a second value at line {}", line(span))),
                    None if !mapping => return Err(not_a_mapping(span)),
                    Some(Open::Mapping(_, None)) => {
                        return Err(format!(
                            "its frontmatter has a key that is a {} at line {}: keys must be plain strings",
                            if mapping { "mapping" } else { "sequence" },
                            line(span)
                        ));
                    }
                    _ => {}
                }
                if open.len() >= MAX_FRONTMATTER_DEPTH {
                    return Err(too_deep(line(span)));
                }
                open.push(if mapping { Open::Mapping(Map::new(), None) } else { Open::Sequence(Vec::new()) });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match open.pop() {
                    Some(Open::Mapping(map, _)) => Value::Object(map),
                    Some(Open::Sequence(items)) => Value::Array(items),
                    // The parser balances its events; should it not, the
                    // frontmatter is refused rather than guessed at.
                    None => {
                        return Err(format!(
                            "its frontmatter could not be read (a collection closes at line {} that never opened)",
                            line(span)
                        ));
                    }
                };
                match (open.is_empty(), value) {
                    (true, Value::Object(map)) => root = Some(map),
                    (true, _) => return Err(not_a_mapping(span)),
                    (false, value) => add(&mut open, &mut field, value, span)?,
                }
            }
        }
    }
    root.ok_or_else(|| "its frontmatter is empty: write name: and description: between the two --- lines".into())
}

/// `value`, put where it belongs: the key or the value of the innermost open
/// mapping, or the next item of the innermost open sequence.
fn add(open: &mut [Open], field: &mut Option<String>, value: Value, span: Span) -> Result<(), String> {
    let top_level = open.len() == 1;
    match open.last_mut() {
        Some(Open::Mapping(map, key @ None)) => {
            let Value::String(name) = value else {
                return Err(format!(
                    "its frontmatter has a key that is {} at line {}: keys must be plain strings (quote it)",
                    kind(&value),
                    line(span)
                ));
            };
            if map.contains_key(&name) {
                return Err(format!("its frontmatter has the key {} twice (again at line {}): keep one", quoted(&name), line(span)));
            }
            if top_level {
                *field = Some(name.clone());
            }
            *key = Some(name);
        }
        Some(Open::Mapping(map, key @ Some(_))) => {
            if let Some(name) = key.take() {
                map.insert(name, value);
            }
        }
        Some(Open::Sequence(items)) => items.push(value),
        None => return Err(not_a_mapping(span)),
    }
    Ok(())
}

/// A scalar's JSON value: a plain one typed by the YAML 1.2 core schema,
/// a quoted or block one always a string. Err says what is wrong with it.
fn scalar(text: &str, style: ScalarStyle) -> Result<Value, String> {
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_string()));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            let integer = if let Some(octal) = text.strip_prefix("0o").filter(|digits| is_digits(digits, 8)) {
                Some(i64::from_str_radix(octal, 8))
            } else if let Some(hex) = text.strip_prefix("0x").filter(|digits| is_digits(digits, 16)) {
                Some(i64::from_str_radix(hex, 16))
            } else if is_digits(text.strip_prefix(['-', '+']).unwrap_or(text), 10) {
                Some(text.parse::<i64>())
            } else {
                None
            };
            match integer {
                Some(Ok(integer)) => Value::Number(integer.into()),
                Some(Err(_)) => {
                    return Err(format!("holds the integer {}, which does not fit in 64 bits: quote it to keep it as text", quoted(text)));
                }
                None if is_core_float(text) || is_infinity_or_nan(text) => match text.parse::<f64>().ok().and_then(Number::from_f64) {
                    Some(number) => Value::Number(number),
                    None => {
                        return Err(format!(
                            "holds the number {}, which JSON cannot hold (infinite or not a number): quote it to keep it as text",
                            quoted(text)
                        ));
                    }
                },
                None => Value::String(text.to_string()),
            }
        }
    })
}

/// Whether `text` is one or more digits of `radix`.
fn is_digits(text: &str, radix: u32) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_digit(radix))
}

/// Whether `text` is a float of the core schema:
/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_core_float(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => is_digits(fraction, 10),
        Some((whole, fraction)) => is_digits(whole, 10) && (fraction.is_empty() || is_digits(fraction, 10)),
        None => is_digits(mantissa, 10),
    };
    mantissa_ok && exponent.is_none_or(|exponent| is_digits(exponent.strip_prefix(['-', '+']).unwrap_or(exponent), 10))
}

/// Whether `text` is the core schema's infinity or not-a-number, which JSON
/// cannot hold (so that it is refused, not kept as a string that reads as one).
fn is_infinity_or_nan(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN")
}

/// Whether `c` may not appear in a frontmatter string: a control character
/// other than a newline or a tab (an escape sequence, a carriage return,
/// NUL), or an invisible format character (`shown::is_format`: bidirectional
/// overrides and isolates, which make text display as other text to the
/// person who reviews it, zero-width characters, tag characters).
fn is_refused_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || crate::shown::is_format(c)
}

fn refused_char(c: char) -> String {
    match c.is_control() {
        true => format!("a control character (U+{:04X})", u32::from(c)),
        false => format!("an invisible format character (U+{:04X}), which can make text display as other text", u32::from(c)),
    }
}
/// Refuses a node that has an anchor (`&x`) or a tag (`!foo`, `!!python/object`).
fn refuse_anchor_or_tag(yaml: &str, span: Span, anchor: usize, tag: Option<&Tag>) -> Result<(), String> {
    let written = token_at(yaml, span);
    if let Some(tag) = tag
        && (anchor == 0 || written.starts_with('!'))
    {
        let shown = match written.starts_with('!') {
            true => written,
            false => format!("{}{}", tag.handle, tag.suffix),
        };
        return Err(format!(
            "its frontmatter uses a YAML tag ({}) at line {}: tags are refused, write the value plainly",
            escaped(&shown),
            line(span)
        ));
    }
    if anchor != 0 {
        let shown = if written.starts_with('&') { escaped(&written) } else { "&...".into() };
        return Err(format!(
            "its frontmatter uses a YAML anchor ({shown}) at line {}: anchors are refused, write the value out",
            line(span)
        ));
    }
    Ok(())
}

fn alias(yaml: &str, span: Span) -> String {
    let written = token_at(yaml, span);
    let shown = if written.starts_with('*') { escaped(&written) } else { "*...".into() };
    format!("its frontmatter uses a YAML alias ({shown}) at line {}: aliases are refused, write the value out", line(span))
}

/// A parser's error as a reason: its own words, escaped and cut, and where.
fn syntax(yaml: &str, error: &ScanError) -> String {
    let span = Span::empty(*error.marker());
    match error.info() {
        UNKNOWN_ANCHOR => alias(yaml, span),
        FLOW_TOO_DEEP => too_deep(line(span)),
        info => format!("its frontmatter is not valid YAML: {} (line {}, column {})", escaped(info), line(span), error.marker().col() + 1),
    }
}

fn too_deep(line: usize) -> String {
    format!("its frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels (at line {line}): flatten it")
}

fn not_a_mapping(span: Span) -> String {
    format!(
        "its frontmatter is not a mapping (at line {}): write fields, one a line, such as name: pdf-processing and description: ...",
        line(span)
    )
}

/// Where a value being read sits, for a reason: the top-level field it
/// belongs to, or a key.
fn place(open: &[Open], field: &Option<String>) -> String {
    let awaiting_key = matches!(open.last(), Some(Open::Mapping(_, None)));
    match (awaiting_key, open.len() <= 1, field) {
        (true, true, _) | (true, false, None) => "key".into(),
        (true, false, Some(field)) => format!("key inside field {}", quoted(field)),
        (false, _, Some(field)) => format!("field {}", quoted(field)),
        (false, _, None) => "value".into(),
    }
}

/// The line of the SKILL.md where `span` starts: the parser counts from the
/// frontmatter's first line, which is the file's second.
fn line(span: Span) -> usize {
    span.start.line() + 1
}

/// What the pack wrote where `span` starts, up to a blank or a flow
/// indicator and at most [`QUOTED_CHARS`] characters: an anchor, alias or tag
/// as written. The parser counts in characters, so this walks to it (once,
/// for a reason, over at most [`MAX_FRONTMATTER_BYTES`]).
fn token_at(yaml: &str, span: Span) -> String {
    yaml.chars()
        .skip(span.start.index())
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
        .take(QUOTED_CHARS)
        .collect()
}

/// The JSON type of `value`, for a reason.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// `text` as a reason may show it: cut to [`QUOTED_CHARS`] characters and
/// escaped (a bidirectional override included), without quotes.
fn escaped(text: &str) -> String {
    let mut shown = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == QUOTED_CHARS {
            shown.push_str("...");
            break;
        }
        match c {
            // Quoted in double quotes: an apostrophe needs no escape.
            '\'' => shown.push(c),
            c if is_refused_char(c) => shown.extend(c.escape_unicode()),
            c => shown.extend(c.escape_debug()),
        }
    }
    shown
}

/// `text` as a reason may show it, in quotes.
fn quoted(text: &str) -> String {
    format!("\"{}\"", escaped(text))
}

fn quoted_char(c: char) -> String {
    match is_refused_char(c) {
        true => format!("'{}'", c.escape_unicode()),
        false => format!("'{}'", c.escape_debug()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill(frontmatter: &str) -> String {
        format!("---\n{frontmatter}---\n# Body\n")
    }

    fn refused(skill_md: &str) -> String {
        match parse(skill_md) {
            Ok(parsed) => panic!("accepted {:?} as {parsed:?}", &skill_md[..skill_md.len().min(200)]),
            Err(reason) => reason,
        }
    }

    #[track_caller]
    fn assert_refused(skill_md: &str, phrase: &str) {
        let reason = refused(skill_md);
        assert!(reason.contains(phrase), "{reason:?} does not say {phrase:?}");
        assert!(!reason.contains('\n'), "{reason:?} is more than one line");
    }

    const VALID: &str = "---
name: pdf-processing
description: >-
  Extract text and tables from PDF files.
  Use when the user mentions PDFs.
license: Apache-2.0
metadata:
  author: example-org
  version: \"1.0\"
  tags: [pdf, extract]
  nested: {deep: {er: [1, 2.5, -3]}}
allowed-tools: Bash(pdftotext:*) Read
tools-list:
  - Read
  - Write
max-pages: 0x10
octal: 0o17
big: 12345678901
ratio: 1.5e3
half: .5
signed: +7
internal: true
shouty: FALSE
nothing: ~
empty:
quoted-number: '42'
quoted-bool: \"true\"
literal: |
  line one
  \tline two
---

# PDF processing
";

    fn expected() -> Value {
        json!({
            "name": "pdf-processing",
            "description": "Extract text and tables from PDF files. Use when the user mentions PDFs.",
            "license": "Apache-2.0",
            "metadata": {"author": "example-org", "version": "1.0", "tags": ["pdf", "extract"], "nested": {"deep": {"er": [1, 2.5, -3]}}},
            "allowed-tools": "Bash(pdftotext:*) Read",
            "tools-list": ["Read", "Write"],
            "max-pages": 16,
            "octal": 15,
            "big": 12345678901_i64,
            "ratio": 1500.0,
            "half": 0.5,
            "signed": 7,
            "internal": true,
            "shouty": false,
            "nothing": null,
            "empty": null,
            "quoted-number": "42",
            "quoted-bool": "true",
            "literal": "line one\n\tline two\n",
        })
    }

    #[test]
    fn a_valid_skill_md_gives_exactly_its_fields_as_json() {
        let parsed = parse(VALID).expect("valid");
        assert_eq!(parsed.name, "pdf-processing");
        assert_eq!(parsed.description, "Extract text and tables from PDF files. Use when the user mentions PDFs.");
        assert_eq!(Value::Object(parsed.fields.clone()), expected());
        // Types are YAML's: a hex integer is a JSON integer, 1.5e3 a float.
        assert!(parsed.fields["max-pages"].is_i64());
        assert!(parsed.fields["ratio"].is_f64());
    }

    #[test]
    fn crlf_line_ends_read_the_same() {
        let crlf = VALID.replace('\n', "\r\n");
        let parsed = parse(&crlf).expect("valid with CRLF");
        assert_eq!(Value::Object(parsed.fields), expected());
    }

    #[test]
    fn the_frontmatter_may_end_the_file_and_be_minimal() {
        let parsed = parse("---\nname: a\ndescription: b\n---").expect("fence at the end of the file");
        assert_eq!(Value::Object(parsed.fields), json!({"name": "a", "description": "b"}));
        let parsed = parse("---\r\nname: a\r\ndescription: b\r\n---\r\n").expect("CRLF fences");
        assert_eq!((parsed.name.as_str(), parsed.description.as_str()), ("a", "b"));
    }

    #[test]
    fn the_fences_are_required_and_exact() {
        assert_refused("name: a\ndescription: b\n", "its first line is not ---");
        assert_refused("--- \nname: a\ndescription: b\n---\n", "its first line is not ---");
        assert_refused("\n---\nname: a\ndescription: b\n---\n", "its first line is not ---");
        assert_refused("---", "its first line is not ---");
        assert_refused("---\nname: a\ndescription: b\n", "no closing --- line");
        // `----` and `--- x` are not the closing fence; YAML reads the latter
        // as a second document, which is refused.
        assert_refused("---\nname: a\ndescription: b\n----\n", "no closing --- line");
        assert_refused("---\nname: a\ndescription: b\n--- x\n---\n", "more than one YAML document");
    }

    #[test]
    fn a_byte_order_mark_is_refused() {
        assert_refused("\u{feff}---\nname: a\ndescription: b\n---\n", "byte order mark");
    }

    #[test]
    fn frontmatter_over_the_limit_is_refused_unread() {
        // 10 MiB of valid-looking YAML and no fence: refused by its size.
        let huge = format!("---\nname: a\ndescription: b\n{}", "k: v\n".repeat(2 << 20));
        assert_refused(&huge, &format!("within {MAX_FRONTMATTER_BYTES} bytes"));
        // And with a fence far past the limit.
        assert_refused(&format!("{huge}---\n"), &format!("within {MAX_FRONTMATTER_BYTES} bytes"));
        // Exactly at the limit, it is read (the fence line may follow).
        let filler = "x".repeat(MAX_FRONTMATTER_BYTES - "name: a\ndescription: b\nf: \n".len());
        let at_limit = format!("---\nname: a\ndescription: b\nf: {filler}\n---\r\n");
        assert_eq!(parse(&at_limit).expect("at the limit").fields["f"], json!(filler));
        let over = format!("---\nname: a\ndescription: b\nf: {filler}x\n---\n");
        assert_refused(&over, "within 16384 bytes");
    }

    #[test]
    fn aliases_and_anchors_are_refused() {
        assert_refused(&skill("name: a\ndescription: b\nx: *x\n"), "its frontmatter uses a YAML alias (*x) at line 4: aliases are refused");
        assert_refused(&skill("name: a\ndescription: &d b\n"), "its frontmatter uses a YAML anchor (&d) at line 3: anchors are refused");
        assert_refused(&skill("name: a\ndescription: b\n&k x: y\n"), "(&k) at line 4: anchors are refused");
        assert_refused(&skill("name: a\ndescription: b\nm: &m {a: 1}\nn: *m\n"), "anchors are refused");
    }

    #[test]
    fn the_billion_laughs_is_refused_at_its_first_anchor() {
        let laughs = "name: a\ndescription: b\n\
            a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
            c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
            e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
            g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
            h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n\
            i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        assert_refused(&skill(laughs), "YAML anchor (&a) at line 4: anchors are refused");
    }

    #[test]
    fn tags_are_refused() {
        assert_refused(
            &skill("name: a\ndescription: !!python/object:os.system b\n"),
            "YAML tag (!!python/object:os.system) at line 3: tags are refused",
        );
        assert_refused(&skill("name: a\ndescription: b\nx: !foo {a: 1}\n"), "YAML tag (!foo) at line 4: tags are refused");
        assert_refused(&skill("name: a\ndescription: !!str b\n"), "tags are refused");
        assert_refused(&skill("name: a\ndescription: b\nx: ! y\n"), "tags are refused");
        assert_refused(&skill("%TAG !e! tag:example.com,2000:\n--- \nname: a\ndescription: !e!x b\n"), "tags are refused");
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let at_limit =
            format!("name: a\ndescription: b\nx: {}1{}\n", "[".repeat(MAX_FRONTMATTER_DEPTH - 1), "]".repeat(MAX_FRONTMATTER_DEPTH - 1));
        let value = parse(&skill(&at_limit)).expect("at the limit").fields["x"].clone();
        assert_eq!(value, json!([[[[[[[1]]]]]]]));
        let over = format!("name: a\ndescription: b\nx: {}1{}\n", "[".repeat(MAX_FRONTMATTER_DEPTH), "]".repeat(MAX_FRONTMATTER_DEPTH));
        assert_refused(&skill(&over), "nests deeper than 8 levels (at line 4)");
        let block = "name: a\ndescription: b\nx:\n a:\n  b:\n   c:\n    d:\n     e:\n      f:\n       g:\n        h: 1\n";
        assert_refused(&skill(block), "nests deeper than 8 levels");
    }

    #[test]
    fn ten_thousand_deep_is_refused_without_overflowing() {
        for (open, close) in [("[", "]"), ("{a: ", "}")] {
            let deep = format!("name: a\ndescription: b\nx: {}{}\n", open.repeat(10_000 / open.len()), close.repeat(10_000 / open.len()));
            let deep = &deep[..deep.len().min(MAX_FRONTMATTER_BYTES - 1)];
            assert_refused(&format!("---\n{deep}\n---\n"), "nests deeper than 8 levels");
        }
        let unclosed = format!("x: {}\n", "[".repeat(10_000));
        assert_refused(&skill(&unclosed), "nests deeper than 8 levels");
        let block = format!("x:\n{}1\n", "- ".repeat(7_000));
        assert_refused(&skill(&block), "nests deeper than 8 levels");
    }

    #[test]
    fn one_document_only() {
        assert_refused(&skill("name: a\ndescription: b\n...\nname: c\n"), "more than one YAML document (a second one starts at line 5)");
    }

    #[test]
    fn the_top_level_must_be_a_mapping() {
        assert_refused(&skill("- name: a\n"), "its frontmatter is not a mapping");
        assert_refused(&skill("just text\n"), "its frontmatter is not a mapping");
        assert_refused(&skill("[name, a]\n"), "its frontmatter is not a mapping");
        assert_refused(&skill(""), "its frontmatter is empty");
        assert_refused(&skill("# only a comment\n"), "its frontmatter is empty");
    }

    #[test]
    fn keys_must_be_strings_and_unique() {
        assert_refused(&skill("name: a\ndescription: b\n1: x\n"), "a key that is a number at line 4: keys must be plain strings");
        assert_refused(&skill("name: a\ndescription: b\ntrue: x\n"), "a key that is a boolean");
        assert_refused(&skill("name: a\ndescription: b\n~: x\n"), "a key that is null");
        assert_refused(&skill("name: a\ndescription: b\n? [a, b]\n: x\n"), "a key that is a sequence at line 4");
        assert_refused(&skill("name: a\ndescription: b\n{a: 1}: x\n"), "a key that is a mapping");
        assert_refused(&skill("name: a\ndescription: b\nm: {[1]: x}\n"), "a key that is a sequence");
        assert_refused(&skill("name: a\ndescription: b\nname: c\n"), "the key \"name\" twice (again at line 4)");
        assert_refused(&skill("name: a\ndescription: b\nm: {k: 1, \"k\": 2}\n"), "the key \"k\" twice");
        // A quoted key is a string.
        let parsed = parse(&skill("\"name\": a\n'description': b\n\"1\": x\n")).expect("quoted keys");
        assert_eq!(Value::Object(parsed.fields), json!({"name": "a", "description": "b", "1": "x"}));
    }

    #[test]
    fn numbers_json_cannot_hold_are_refused() {
        assert_refused(
            &skill("name: a\ndescription: b\nn: 9223372036854775808\n"),
            "field \"n\" holds the integer \"9223372036854775808\", which does not fit",
        );
        assert_refused(&skill("name: a\ndescription: b\nn: 0xFFFFFFFFFFFFFFFF\n"), "does not fit in 64 bits");
        assert_refused(&skill("name: a\ndescription: b\nn: .inf\n"), "field \"n\" holds the number \".inf\", which JSON cannot hold");
        assert_refused(&skill("name: a\ndescription: b\nn: [-.Inf]\n"), "which JSON cannot hold");
        assert_refused(&skill("name: a\ndescription: b\nn: .NaN\n"), "which JSON cannot hold");
        assert_refused(&skill("name: a\ndescription: b\nn: 1e999\n"), "which JSON cannot hold");
        let parsed = parse(&skill("name: a\ndescription: b\nmin: -9223372036854775808\nq: '.inf'\nv: 1.2.3\nh: 0x\n")).expect("valid");
        assert_eq!(parsed.fields["min"], json!(i64::MIN));
        assert_eq!(parsed.fields["q"], json!(".inf"));
        assert_eq!(parsed.fields["v"], json!("1.2.3"));
        assert_eq!(parsed.fields["h"], json!("0x"));
    }

    #[test]
    fn control_and_format_characters_are_refused_naming_the_field() {
        assert_refused(&skill("name: a\ndescription: \"b\\e[31m\"\n"), "field \"description\" holds a control character (U+001B)");
        assert_refused(&skill("name: a\ndescription: \"b\\r\"\n"), "(U+000D)");
        assert_refused(&skill("name: a\ndescription: b\nm: {k: [\"\\0\"]}\n"), "field \"m\" holds a control character (U+0000)");
        assert_refused(
            &skill("name: a\ndescription: b \u{202e}txt.exe\n"),
            "field \"description\" holds an invisible format character (U+202E)",
        );
        // Zero-width and tag characters are invisible too.
        assert_refused(&skill("name: a\ndescription: b\u{200b}\n"), "field \"description\" holds an invisible format character (U+200B)");
        assert_refused(&skill("name: a\ndescription: b\u{e0041}\n"), "(U+E0041)");
        assert_refused(&skill("name: a\ndescription: b\nx: \"\u{2066}\"\n"), "(U+2066)");
        assert_refused(&skill("name: a\ndescription: b\n\"k\\u0007\": x\n"), "its frontmatter's key holds a control character (U+0007)");
        assert_refused(&skill("name: a\ndescription: b\nm: {\"k\\u0007\": x}\n"), "key inside field \"m\" holds a control character");
        // Newlines and tabs are text.
        assert!(parse(&skill("name: a\ndescription: \"b\\n\\tc\"\n")).is_ok());
    }

    #[test]
    fn name_and_description_are_required_and_checked() {
        assert_refused(&skill("description: b\n"), "its frontmatter has no name");
        assert_refused(&skill("name: a\n"), "its frontmatter has no description");
        assert_refused(&skill("name: 123\ndescription: b\n"), "its frontmatter's name is a number, not a string");
        assert_refused(&skill("name: a\ndescription: [b]\n"), "its frontmatter's description is a sequence, not a string");
        assert_refused(&skill("name: a\ndescription:\n"), "its frontmatter's description is null, not a string");
        assert_refused(&skill("name: a\ndescription: \"  \\n \"\n"), "its frontmatter's description is blank");
        assert_refused(&skill("name: PDF\ndescription: b\n"), "its frontmatter's name: the skill name \"PDF\" holds 'P'");
        let long = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(parse(&skill(&format!("name: a\ndescription: {long}\n"))).is_ok());
        assert_refused(&skill(&format!("name: a\ndescription: {long}x\n")), "description is 1025 characters, more than 1024");
    }

    #[test]
    fn the_name_rule() {
        assert_eq!(check_name("pdf-processing"), Ok(()));
        assert_eq!(check_name("a"), Ok(()));
        assert_eq!(check_name("a1-b2-c3"), Ok(()));
        assert_eq!(check_name(&"a".repeat(64)), Ok(()));
        let reason = |name: &str| check_name(name).expect_err(name);
        assert!(reason("PDF").contains("the skill name \"PDF\" holds 'P'"));
        assert!(reason("-a").contains("starts or ends with a hyphen"));
        assert!(reason("a-").contains("starts or ends with a hyphen"));
        assert!(reason("a--b").contains("two hyphens in a row"));
        assert!(reason(&"a".repeat(65)).contains("longer than 64 characters"));
        assert!(reason("").contains("the skill name is empty"));
        assert!(reason("a_b").contains("holds '_'"));
        assert!(reason("a b").contains("holds ' '"));
        assert!(reason("é").contains("holds 'é'"));
        assert!(reason("a\u{1b}").contains("holds '\\u{1b}'"));
        assert!(reason("a'").contains("holds '\\''"));
        assert!(reason("a\u{202e}").contains("holds '\\u{202e}'"));
    }

    #[test]
    fn reasons_quote_little_of_the_pack_and_escape_it() {
        let name = format!("\u{1b}[2J{}", "X".repeat(10_000));
        let reason = refused(&skill(&format!("name: \"{}\"\ndescription: b\n", name.replace('\u{1b}', "\\e"))));
        assert!(reason.contains("(U+001B)"), "{reason}");
        let reason = check_name(&name).expect_err("long");
        assert!(reason.len() < 300 && !reason.contains('\u{1b}') && reason.contains("\\u{1b}[2J") && reason.contains("..."), "{reason}");
        let reason = refused(&skill(&format!("name: a\ndescription: b\n{}: 1\n{0}: 2\n", "k".repeat(1_000))));
        assert!(reason.len() < 300 && reason.contains("twice"), "{reason}");
        let reason = refused(&skill("name: a\ndescription: b\nx: \"\\q\"\n"));
        assert!(reason.starts_with("its frontmatter is not valid YAML: ") && reason.contains("(line 4, column"), "{reason}");
        let reason = refused(&skill("name: a\ndescription: b\nx: \"it's\"\ny: \"\\\"\\u202e\"\n"));
        assert!(reason.contains("field \"y\" holds an invisible format character (U+202E)"), "{reason}");
        let reason = refused(&skill("name: a\ndescription: b\nx: @\u{1b}[31m\n"));
        assert!(reason.contains("not valid YAML") && !reason.contains('\u{1b}'), "{reason}");
    }
}
