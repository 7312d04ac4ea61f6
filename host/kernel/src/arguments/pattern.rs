//! Patterns of typed text arguments: one semantics, the one JSON Schema
//! names. JSON Schema's `pattern` is an ECMA-262 regular expression (ajv,
//! the official TypeScript SDK's validator, compiles it with the `u` flag),
//! and python-jsonschema runs it with Python's `re`. A pack writes its
//! pattern in ECMA-262 syntax (`u` flag); the host parses it ([`parse`])
//! and refuses at load what it cannot publish with one meaning, and
//! otherwise
//! - publishes it rewritten into the syntax ECMA-262 and Python's `re`
//!   read alike ([`Pattern::published`]): `\d`, `\w`, `\s` and `.` as the
//!   explicit character sets ECMA-262 gives them (Python's `\d` would take
//!   Arabic-Indic digits), every ASCII punctuation as `\xHH` (so `[a&&b]`
//!   means its four characters everywhere), the end as `(?![\s\S])` (Python's
//!   `$` also matches before a final line feed);
//! - checks values with the `regex` crate, compiled from the same parse
//!   ([`Pattern::regex`]): linear in the value, whatever the pattern.
//!
//! So a value the schema accepts is a value the host accepts, and the
//! other way round. What is refused, with the reason: backreferences and
//! lookaround (no linear-time engine has them), `\b` and `\B` (Python's
//! are Unicode), `\p{…}` (Python has none), inline flags (ECMA-262 has
//! none), and anything that is not ECMA-262 with the `u` flag (`[[:alpha:]]`,
//! a lone `{`).

use std::fmt::Write as _;

use super::{MAX_PATTERN_BYTES, MAX_PATTERN_COMPILED_BYTES};

/// How deep groups may nest in a pattern.
pub const MAX_PATTERN_NESTING: usize = 32;
/// The most times a pattern may repeat something: a repetition is
/// compiled as that many copies, so this keeps a short pattern from
/// spending the compile budget in one `{n}`, and says why in its own words.
pub const MAX_REPETITION: u32 = 1000;
/// The longest pattern as published (the sets `\s`, `\w`, `.` and the
/// like are spelled out), in bytes.
pub const MAX_PUBLISHED_PATTERN_BYTES: usize = 8 << 10;

/// A pattern, parsed.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// A set of characters (one character is a set of one).
    Set(Ranges),
    /// `^`: the start of the value.
    Start,
    /// `$`: the end of the value.
    End,
    /// Each in turn.
    Sequence(Vec<Node>),
    /// One of them.
    Either(Vec<Node>),
    /// A group: `(...)`, `(?:...)`, `(?<name>...)`, all matching alike.
    Group(Box<Node>),
    /// Repeated from `min` to `max` times (`None`: no bound).
    Repeat { node: Box<Node>, min: u32, max: Option<u32>, lazy: bool },
}

/// Sorted, disjoint, inclusive ranges of Unicode scalar values.
#[derive(Debug, Clone, PartialEq, Default)]
struct Ranges(Vec<(u32, u32)>);

const MAX_SCALAR: u32 = 0x10FFFF;
const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);

impl Ranges {
    fn of(ranges: &[(u32, u32)]) -> Ranges {
        let mut set = Ranges::default();
        for &(low, high) in ranges {
            set.add(low, high);
        }
        set
    }

    fn add(&mut self, low: u32, high: u32) {
        self.0.push((low, high));
        self.0.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.0.len());
        for &(low, high) in &self.0 {
            match merged.last_mut() {
                Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
                _ => merged.push((low, high)),
            }
        }
        self.0 = merged;
    }

    fn union(&mut self, other: &Ranges) {
        for &(low, high) in &other.0 {
            self.add(low, high);
        }
    }

    /// Every scalar value not in the set (surrogates are no scalar values).
    fn complement(&self) -> Ranges {
        let mut out = Ranges::default();
        let mut next = 0u32;
        for &(low, high) in &self.0 {
            if low > next {
                out.0.push((next, low - 1));
            }
            next = high + 1;
        }
        if next <= MAX_SCALAR {
            out.0.push((next, MAX_SCALAR));
        }
        out.without_surrogates()
    }

    fn without_surrogates(mut self) -> Ranges {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for (low, high) in self.0.drain(..) {
            if high < SURROGATES.0 || low > SURROGATES.1 {
                out.push((low, high));
                continue;
            }
            if low < SURROGATES.0 {
                out.push((low, SURROGATES.0 - 1));
            }
            if high > SURROGATES.1 {
                out.push((SURROGATES.1 + 1, high));
            }
        }
        Ranges(out)
    }
}

/// `\d`: ECMA-262's digits, ASCII only.
const DIGITS: &[(u32, u32)] = &[(0x30, 0x39)];
/// `\w`: ECMA-262's word characters (with the `u` flag and no `i`), ASCII only.
const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
/// `\s`: ECMA-262's white space and line terminators.
const SPACE: &[(u32, u32)] = &[
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
];
/// What `.` does not match: ECMA-262's line terminators.
const LINE_TERMINATORS: &[(u32, u32)] = &[(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)];

/// A pattern a pack declared, parsed, with its two renderings.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// As the pack wrote it.
    pub source: String,
    /// The whole-value pattern as the schema publishes it, read alike by
    /// ECMA-262 (`u` flag) and Python's `re`.
    pub published: String,
    /// The same pattern for the `regex` crate, anchored at both ends.
    pub regex: regex::Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source
    }
}

impl Pattern {
    /// `source`, an ECMA-262 pattern (`u` flag), parsed and compiled for the
    /// `regex` crate, within the size limits; else why not.
    pub fn compile(source: &str) -> Result<Pattern, String> {
        if source.len() > MAX_PATTERN_BYTES {
            return Err(format!("is {} bytes, more than the limit of {MAX_PATTERN_BYTES}", source.len()));
        }
        let max_compiled_bytes = MAX_PATTERN_COMPILED_BYTES;
        let node = parse(source)?;
        let published = format!("^(?:{})(?![\\s\\S])", render(&node, Target::Published));
        if published.len() > MAX_PUBLISHED_PATTERN_BYTES {
            return Err(format!(
                "is {} bytes once its character sets are spelled out, more than the limit of {MAX_PUBLISHED_PATTERN_BYTES}",
                published.len()
            ));
        }
        let host = format!("^(?:{})$", render(&node, Target::Host));
        let regex =
            regex::RegexBuilder::new(&host).size_limit(max_compiled_bytes).dfa_size_limit(max_compiled_bytes).build().map_err(|error| {
                match error {
                    regex::Error::CompiledTooBig(limit) => format!("compiles to more than {limit} bytes"),
                    error => format!("does not compile: {}", error.to_string().lines().last().unwrap_or_default().trim()),
                }
            })?;
        Ok(Pattern { source: source.to_string(), published, regex })
    }

    /// A pattern that is none of the pack's: the schemes a URI argument
    /// names, in either case, or any scheme (the host's absolute URI).
    pub fn uri(schemes: &[String]) -> Pattern {
        let letter = |c: char| match c.is_ascii_alphabetic() {
            true => Node::Set(Ranges::of(&[
                (c.to_ascii_lowercase() as u32, c.to_ascii_lowercase() as u32),
                (c.to_ascii_uppercase() as u32, c.to_ascii_uppercase() as u32),
            ])),
            false => Node::Set(Ranges::of(&[(c as u32, c as u32)])),
        };
        let scheme = match schemes.is_empty() {
            // RFC 3986: a letter, then letters, digits, `+`, `-` and `.`.
            true => Node::Sequence(vec![
                Node::Set(Ranges::of(&[(0x41, 0x5A), (0x61, 0x7A)])),
                Node::Repeat {
                    node: Box::new(Node::Set(Ranges::of(&[(0x2B, 0x2B), (0x2D, 0x2E), (0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)]))),
                    min: 0,
                    max: None,
                    lazy: false,
                },
            ]),
            false => Node::Group(Box::new(Node::Either(
                schemes.iter().map(|scheme| Node::Sequence(scheme.chars().map(letter).collect())).collect(),
            ))),
        };
        // Then at least one character, none of them white space, a control
        // or a format character (a bidi override, a zero-width space).
        let rest = Node::Repeat { node: Box::new(Node::Set(uri_characters())), min: 1, max: None, lazy: false };
        let node = Node::Sequence(vec![scheme, Node::Set(Ranges::of(&[(0x3A, 0x3A)])), rest]);
        let published = format!("^(?:{})(?![\\s\\S])", render(&node, Target::Published));
        let host = format!("^(?:{})$", render(&node, Target::Host));
        let regex = regex::Regex::new(&host).expect("the URI pattern compiles");
        Pattern { source: published.clone(), published, regex }
    }
}

/// What a URI may hold after its scheme: no white space, control or
/// format character (Unicode's Cc, Cf and White_Space).
fn uri_characters() -> Ranges {
    let mut refused = Ranges::of(SPACE);
    refused.union(&Ranges::of(&[
        (0x00, 0x20),
        (0x7F, 0x9F),
        (0xAD, 0xAD),
        (0x600, 0x605),
        (0x61C, 0x61C),
        (0x6DD, 0x6DD),
        (0x70F, 0x70F),
        (0x890, 0x891),
        (0x8E2, 0x8E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ]));
    refused.complement()
}

/// Which engine a rendering is for.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    /// ECMA-262 with the `u` flag, and Python's `re`, alike.
    Published,
    /// The `regex` crate.
    Host,
}

fn render(node: &Node, target: Target) -> String {
    let mut out = String::new();
    render_into(node, target, &mut out);
    out
}

fn render_into(node: &Node, target: Target, out: &mut String) {
    match node {
        Node::Set(ranges) => render_set(ranges, out),
        Node::Start => out.push('^'),
        Node::End => out.push_str(match target {
            // Python's `$` also matches before a final line feed.
            Target::Published => "(?![\\s\\S])",
            Target::Host => "$",
        }),
        Node::Sequence(nodes) => nodes.iter().for_each(|node| render_into(node, target, out)),
        Node::Either(nodes) => {
            for (at, node) in nodes.iter().enumerate() {
                if at > 0 {
                    out.push('|');
                }
                render_into(node, target, out);
            }
        }
        Node::Group(node) => {
            out.push_str("(?:");
            render_into(node, target, out);
            out.push(')');
        }
        Node::Repeat { node, min, max, lazy } => {
            let atomic = matches!(**node, Node::Set(_) | Node::Group(_));
            if !atomic {
                out.push_str("(?:");
            }
            render_into(node, target, out);
            if !atomic {
                out.push(')');
            }
            let _ = match (min, max) {
                (0, None) => write!(out, "*"),
                (1, None) => write!(out, "+"),
                (0, Some(1)) => write!(out, "?"),
                (min, None) => write!(out, "{{{min},}}"),
                (min, Some(max)) if min == max => write!(out, "{{{min}}}"),
                (min, Some(max)) => write!(out, "{{{min},{max}}}"),
            };
            if *lazy {
                out.push('?');
            }
        }
    }
}

/// One character as every engine reads it alike: letters and digits as
/// they are, other ASCII as `\xHH`, the rest of the Basic Multilingual
/// Plane as `\uHHHH`, and past it as itself (no escape of it is common to
/// the three).
fn render_char(scalar: u32, out: &mut String) {
    let c = char::from_u32(scalar).expect("ranges hold scalar values only");
    let _ = match c {
        c if c.is_ascii_alphanumeric() => write!(out, "{c}"),
        c if c.is_ascii() => write!(out, "\\x{scalar:02X}"),
        _ if scalar <= 0xFFFF => write!(out, "\\u{scalar:04X}"),
        c => write!(out, "{c}"),
    };
}

/// The ranges inside a class: `a-z`, `ab`, `\x2B`.
fn render_ranges(ranges: &Ranges, out: &mut String) {
    for &(low, high) in &ranges.0 {
        render_char(low, out);
        if high > low {
            if high > low + 1 {
                out.push('-');
            }
            render_char(high, out);
        }
    }
}

fn render_set(ranges: &Ranges, out: &mut String) {
    // A set with fewer ranges outside it than in it is written negated
    // (`.` as the four line terminators it leaves out).
    let complement = ranges.complement();
    if !ranges.0.is_empty() && !complement.0.is_empty() && complement.0.len() < ranges.0.len() {
        out.push_str("[^");
        render_ranges(&complement, out);
        out.push(']');
        return;
    }
    match ranges.0.as_slice() {
        // Matches nothing: a class of nothing is not written alike everywhere.
        [] => {
            out.push_str("[^\\x00-");
            render_char(MAX_SCALAR, out);
            out.push(']');
        }
        [(low, high)] if low == high => render_char(*low, out),
        _ => {
            out.push('[');
            render_ranges(ranges, out);
            out.push(']');
        }
    }
}

/// Parses `source` as an ECMA-262 pattern with the `u` flag, refusing what
/// cannot be published with one meaning (module documentation).
fn parse(source: &str) -> Result<Node, String> {
    let mut parser = Parser { chars: source.chars().collect(), at: 0, depth: 0 };
    let node = parser.disjunction()?;
    match parser.peek() {
        None => Ok(node),
        Some(')') => Err(parser.error("has a `)` that closes no group")),
        Some(c) => Err(parser.error(&format!("has an unexpected {c:?}"))),
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
}

/// ECMA-262's syntax characters: escaped to stand for themselves.
const SYNTAX: &str = "^$\\.*+?()[]{}|/";

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += 1;
        }
        found
    }

    fn error(&self, what: &str) -> String {
        format!("is not an ECMA-262 pattern the host can publish: it {what} (at character {})", self.at + 1)
    }

    fn disjunction(&mut self) -> Result<Node, String> {
        let mut either = vec![self.alternative()?];
        while self.eat('|') {
            either.push(self.alternative()?);
        }
        Ok(if either.len() == 1 { either.pop().unwrap() } else { Node::Either(either) })
    }

    fn alternative(&mut self) -> Result<Node, String> {
        let mut sequence = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let term = self.term()?;
            sequence.push(term);
        }
        Ok(if sequence.len() == 1 { sequence.pop().unwrap() } else { Node::Sequence(sequence) })
    }

    fn term(&mut self) -> Result<Node, String> {
        let atom = match self.peek().expect("a term starts at a character") {
            '^' => {
                self.at += 1;
                return self.no_quantifier(Node::Start);
            }
            '$' => {
                self.at += 1;
                return self.no_quantifier(Node::End);
            }
            _ => self.atom()?,
        };
        self.quantified(atom)
    }

    /// An assertion may not be repeated.
    fn no_quantifier(&mut self, node: Node) -> Result<Node, String> {
        match self.peek() {
            Some('*' | '+' | '?' | '{') => Err(self.error("repeats an assertion")),
            _ => Ok(node),
        }
    }

    fn atom(&mut self) -> Result<Node, String> {
        let c = self.peek().expect("an atom starts at a character");
        match c {
            '.' => {
                self.at += 1;
                Ok(Node::Set(Ranges::of(LINE_TERMINATORS).complement()))
            }
            '(' => self.group(),
            '[' => self.class(),
            '\\' => {
                self.at += 1;
                self.atom_escape()
            }
            '*' | '+' | '?' => Err(self.error(&format!("has {c:?} with nothing before it to repeat"))),
            '{' | '}' | ']' => Err(self.error(&format!("has a lone {c:?} (the `u` flag refuses it: write \\{c})"))),
            c => {
                self.at += 1;
                Ok(Node::Set(Ranges::of(&[(c as u32, c as u32)])))
            }
        }
    }

    fn group(&mut self) -> Result<Node, String> {
        self.at += 1;
        if self.depth >= MAX_PATTERN_NESTING {
            return Err(self.error(&format!("nests groups more than {MAX_PATTERN_NESTING} deep")));
        }
        if self.eat('?') {
            match (self.peek(), self.peek_at(1)) {
                (Some(':'), _) => self.at += 1,
                (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                    return Err(self.error("uses lookaround, which the host does not support (it matches in linear time)"));
                }
                (Some('<'), _) => {
                    // A named group matches as any group does.
                    self.at += 1;
                    let name_start = self.at;
                    while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                        self.at += 1;
                    }
                    if self.at == name_start || !self.eat('>') {
                        return Err(self.error("has a group name that is not `(?<name>…)`"));
                    }
                }
                _ => return Err(self.error("has an inline flag or another `(?` form, which ECMA-262 does not have")),
            }
        }
        self.depth += 1;
        let inner = self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(self.error("has a group that is never closed"));
        }
        Ok(Node::Group(Box::new(inner)))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => {
                let start = self.at;
                self.at += 1;
                let min = self.number().ok_or_else(|| self.error("has a `{` that starts no repetition (write \\{)"))?;
                let max = match self.eat(',') {
                    false => Some(min),
                    true if self.peek() == Some('}') => None,
                    true => Some(self.number().ok_or_else(|| self.error("has a repetition with no upper bound after its `,`"))?),
                };
                if min.max(max.unwrap_or(0)) > MAX_REPETITION {
                    return Err(self.error(&format!("repeats more than {MAX_REPETITION} times")));
                }
                if !self.eat('}') {
                    return Err(self.error("has a repetition that is never closed"));
                }
                if max.is_some_and(|max| max < min) {
                    self.at = start;
                    return Err(self.error("has a repetition whose bounds are out of order"));
                }
                self.at -= 1;
                (min, max)
            }
            _ => return Ok(atom),
        };
        self.at += 1;
        let lazy = self.eat('?');
        if matches!(self.peek(), Some('*' | '+' | '?' | '{')) {
            return Err(self.error("repeats a repetition"));
        }
        Ok(Node::Repeat { node: Box::new(atom), min, max, lazy })
    }

    /// Decimal digits, as a repetition bound.
    fn number(&mut self) -> Option<u32> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        // Past u32: more than any bound allows, said as such.
        if digits.len() > 9 { Some(u32::MAX) } else { digits.parse().ok() }
    }

    fn atom_escape(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some('b' | 'B') => Err(self.error("uses \\b or \\B (a word boundary is Unicode in Python's re, ASCII in ECMA-262)")),
            Some('1'..='9') | Some('k') => Err(self.error("uses a backreference, which the host does not support")),
            _ => self.escape(false).map(Node::Set),
        }
    }

    /// What follows a `\`, in a class (`in_class`) or out of one.
    fn escape(&mut self, in_class: bool) -> Result<Ranges, String> {
        let Some(c) = self.peek() else { return Err(self.error("ends with a lone `\\`")) };
        self.at += 1;
        let one = |scalar: u32| Ok(Ranges::of(&[(scalar, scalar)]));
        match c {
            'd' => Ok(Ranges::of(DIGITS)),
            'D' => Ok(Ranges::of(DIGITS).complement()),
            'w' => Ok(Ranges::of(WORD)),
            'W' => Ok(Ranges::of(WORD).complement()),
            's' => Ok(Ranges::of(SPACE)),
            'S' => Ok(Ranges::of(SPACE).complement()),
            'p' | 'P' => Err(self.error("uses a Unicode property (\\p or \\P), which Python's re does not have")),
            'f' => one(0x0C),
            'n' => one(0x0A),
            'r' => one(0x0D),
            't' => one(0x09),
            'v' => one(0x0B),
            'b' if in_class => one(0x08),
            '-' if in_class => one(0x2D),
            '0' if !self.peek().is_some_and(|c| c.is_ascii_digit()) => one(0),
            'c' => match self.peek() {
                Some(letter) if letter.is_ascii_alphabetic() => {
                    self.at += 1;
                    one(letter as u32 % 32)
                }
                _ => Err(self.error("has a `\\c` with no letter after it")),
            },
            'x' => {
                let value = self.hex(2).ok_or_else(|| self.error("has a `\\x` without two hexadecimal digits"))?;
                one(value)
            }
            'u' => {
                let value = self.unicode_escape()?;
                one(value)
            }
            c if SYNTAX.contains(c) => one(c as u32),
            c => Err(self.error(&format!("escapes {c:?}, which the `u` flag refuses"))),
        }
    }

    fn hex(&mut self, digits: usize) -> Option<u32> {
        let text: String = self.chars.get(self.at..self.at + digits)?.iter().collect();
        if text.len() != digits || !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.at += digits;
        u32::from_str_radix(&text, 16).ok()
    }

    /// `\uXXXX` (a surrogate pair of two joined), or `\u{X…}`.
    fn unicode_escape(&mut self) -> Result<u32, String> {
        if self.eat('{') {
            let start = self.at;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.at += 1;
            }
            let text: String = self.chars[start..self.at].iter().collect();
            let value = u32::from_str_radix(&text, 16).ok().filter(|&value| value <= MAX_SCALAR);
            return match (value, self.eat('}')) {
                (Some(value), true) if char::from_u32(value).is_some() => Ok(value),
                _ => Err(self.error("has a `\\u{…}` that is no Unicode scalar value")),
            };
        }
        let high = self.hex(4).ok_or_else(|| self.error("has a `\\u` without four hexadecimal digits"))?;
        if (0xD800..0xDC00).contains(&high) && self.peek() == Some('\\') && self.peek_at(1) == Some('u') {
            let save = self.at;
            self.at += 2;
            match self.hex(4) {
                Some(low) if (0xDC00..0xE000).contains(&low) => return Ok(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)),
                _ => self.at = save,
            }
        }
        match char::from_u32(high) {
            Some(_) => Ok(high),
            None => Err(self.error("has a lone surrogate, which no argument value holds")),
        }
    }

    fn class(&mut self) -> Result<Node, String> {
        self.at += 1;
        let negated = self.eat('^');
        let mut set = Ranges::default();
        loop {
            match self.peek() {
                None => return Err(self.error("has a `[` that is never closed")),
                Some(']') => {
                    self.at += 1;
                    break;
                }
                Some(_) => {}
            }
            let low = self.class_atom()?;
            let is_range = self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']');
            if !is_range {
                set.union(&low);
                continue;
            }
            self.at += 1;
            let high = self.class_atom()?;
            let (Some(low), Some(high)) = (single(&low), single(&high)) else {
                return Err(self.error("has a range with a set such as \\d at one end"));
            };
            if high < low {
                return Err(self.error("has a range whose ends are out of order"));
            }
            set.add(low, high);
        }
        let set = set.without_surrogates();
        Ok(Node::Set(if negated { set.complement() } else { set }))
    }

    fn class_atom(&mut self) -> Result<Ranges, String> {
        let c = self.peek().expect("a class atom starts at a character");
        self.at += 1;
        match c {
            '\\' => self.escape(true),
            c => Ok(Ranges::of(&[(c as u32, c as u32)])),
        }
    }
}

/// The one character a set holds, if it holds one.
fn single(set: &Ranges) -> Option<u32> {
    match set.0.as_slice() {
        [(low, high)] if low == high => Some(*low),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(source: &str) -> Pattern {
        Pattern::compile(source).unwrap_or_else(|why| panic!("{source:?}: {why}"))
    }

    #[test]
    fn sets_are_spelled_as_ecma_262_gives_them() {
        let digits = compiled(r"\d+");
        assert_eq!(digits.published, r"^(?:[0-9]+)(?![\s\S])");
        assert!(digits.regex.is_match("123") && !digits.regex.is_match("١٢٣"));
        let word = compiled(r"\w+");
        assert!(word.regex.is_match("abc_9") && !word.regex.is_match("été"));
        let any = compiled(".+");
        for value in ["a\rb", "a\nb", "a\u{2028}b", "a\u{2029}b"] {
            assert!(!any.regex.is_match(value), "{value:?}");
        }
        assert!(any.regex.is_match("a\u{85}b") && any.regex.is_match("a\tb"));
        // `&&` is no intersection: four characters.
        let class = compiled("[a&&b]");
        assert_eq!(class.published, r"^(?:[\x26ab])(?![\s\S])");
        assert!(class.regex.is_match("a") && class.regex.is_match("&") && !class.regex.is_match("c"));
        // A final line feed is not before the end.
        let letters = compiled("[a-z]+");
        assert!(!letters.regex.is_match("abc\n"));
        // What no engine has alike is refused, saying why.
        for (source, why) in [
            ("(?i)abc", "inline flag"),
            ("(?m)^a$", "inline flag"),
            (r"\p{Greek}+", "Unicode property"),
            ("[[:alpha:]]+", "lone ']'"),
            (r"(a)\1", "backreference"),
            ("a(?=b)", "lookaround"),
            (r"\bword", "\\b or \\B"),
            ("a{", "starts no repetition"),
            ("x{2,1}", "out of order"),
            ("a)|(?:.*", "closes no group"),
            (r"\-", "which the `u` flag refuses"),
            ("a**", "repeats a repetition"),
        ] {
            let error = Pattern::compile(source).unwrap_err();
            assert!(error.contains(why), "{source:?}: {error}");
        }
        // The common pattern that once compiled past the bound.
        compiled(r"\w{1,40}");
    }

    #[test]
    fn the_empty_set_and_negated_sets_are_spelled_alike() {
        assert!(!compiled("[]").regex.is_match("a"));
        assert!(compiled("[^]").regex.is_match("\n"));
        let not_digit = compiled(r"[\D]");
        assert!(not_digit.regex.is_match("a") && !not_digit.regex.is_match("5"));
        assert!(compiled(r"\u{1F600}").regex.is_match("😀"));
        assert!(compiled(r"\uD83D\uDE00").regex.is_match("😀"));
        let nested = "(".repeat(MAX_PATTERN_NESTING + 1) + &")".repeat(MAX_PATTERN_NESTING + 1);
        assert!(Pattern::compile(&nested).unwrap_err().contains("nests groups"));
    }

    #[test]
    fn uri_schemes_match_in_either_case_and_no_control_or_format_character_passes() {
        let uri = Pattern::uri(&["https".into(), "git+ssh".into()]);
        assert_eq!(
            uri.published,
            r"^(?:(?:[Hh][Tt][Tt][Pp][Ss]|[Gg][Ii][Tt]\x2B[Ss][Ss][Hh])\x3A[^\x00-\x20\x7F-\u00A0\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u1680\u180E\u2000-\u200F\u2028-\u202F\u205F-\u2064\u2066-\u206F\u3000\uFEFF\uFFF9-\uFFFB𑂽𑃍𓐰-𓐿𛲠-𛲣𝅳-𝅺󠀁󠀠-󠁿]+)(?![\s\S])"
        );
        for (value, fits) in [
            ("https://example.com", true),
            ("HTTPS://example.com", true),
            ("git+ssh://h/x", true),
            ("ftp://h", false),
            ("https://a\u{202E}b", false),
            ("https://a\u{200B}b", false),
            ("https://a b", false),
            ("https:", false),
        ] {
            assert_eq!(uri.regex.is_match(value), fits, "{value:?}");
        }
        let any = Pattern::uri(&[]);
        assert!(any.regex.is_match("x-foo:bar") && !any.regex.is_match("relative/path") && !any.regex.is_match("1x:y"));
    }
}
