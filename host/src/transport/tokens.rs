//! Static bearer tokens: the one of `--auth-token-file`, and the named ones
//! of `--auth-tokens-file`, each a person or a service, optionally for one
//! tenant and until an expiry. Both files are read again at SIGHUP: a token
//! removed is refused from the next request on; a file that no longer reads
//! keeps the tokens in force, and the log says why.
//!
//! A named token is stored as the SHA-256 of the token, never the token:
//! `prompt-host token new NAME` makes a token of 256 random bits, prints it
//! once and adds its hash (writing the file whole, then renaming it into
//! place, so that a reader never sees half an entry). SHA-256, not a password
//! hash such as argon2: the tokens are random, not chosen by people, so a
//! stolen file gives an attacker nothing to guess, and a slow hash would
//! make every request, with or without a valid token, cost the host
//! milliseconds of CPU before it is refused. A presented token is hashed
//! once and looked up by that digest: what the lookup's time could reveal is
//! the digest of what the client sent, which it knows already, not a stored
//! token; and the cost is the same for 1 token or 10,000.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::TransportError;
use super::authorization::Grant;

/// The most tokens one file may name.
pub const MAX_TOKENS: usize = 10_000;

/// What a token's name may be: it names the user in logs and traces.
pub const TOKEN_NAME_RULE: &str = "1 to 64 ASCII letters, digits, '.', '_', '@' or '-'";

/// The issuer named in the principal of a request made with a named token.
pub const TOKENS_ISSUER: &str = "prompt-host:tokens";

/// One token: its digest, and, for a named one, whose it is, its tenant and
/// its expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    digest: [u8; 32],
    /// None for the one token of `--auth-token-file`.
    name: Option<String>,
    tenant: Option<String>,
    expires: Option<SystemTime>,
}

/// The tokens in force, by digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSet {
    tokens: HashMap<[u8; 32], Token>,
}

/// What a presented token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// The one token of `--auth-token-file`: whoever has it, no one named.
    Unnamed,
    /// A named token in force: the grant its request carries.
    Named(Grant),
    /// A named token past its expiry: its name, for the log.
    Expired(String),
    /// None of the tokens.
    Unknown,
}

impl TokenSet {
    /// The token of `--auth-token-file`: `text`, trimmed.
    pub fn single(path: &Path, text: &str) -> Result<TokenSet, String> {
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("the token file {} is empty", path.display()));
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        Ok(TokenSet { tokens: HashMap::from([(digest, Token { digest, name: None, tenant: None, expires: None })]) })
    }

    /// The named tokens of a tokens file (`text`, from `path`), or what is
    /// wrong with it (never quoting a digest).
    pub fn named(path: &Path, text: &str) -> Result<TokenSet, String> {
        let at = |problem: String| format!("the tokens file {}: {problem}", path.display());
        let file: TokensFile = toml::from_str(text).map_err(|error| at(error.message().to_string()))?;
        if file.token.len() > MAX_TOKENS {
            return Err(at(format!("{} tokens, more than the limit of {MAX_TOKENS}", file.token.len())));
        }
        let mut tokens = HashMap::with_capacity(file.token.len());
        let mut names = std::collections::HashSet::with_capacity(file.token.len());
        for (index, entry) in file.token.into_iter().enumerate() {
            let at = |problem: String| at(format!("token {}: {problem}", index + 1));
            check_name(&entry.name).map_err(&at)?;
            if !names.insert(entry.name.clone()) {
                return Err(at(format!("the name {:?} is given twice", entry.name)));
            }
            let digest = hex_digest(&entry.sha256).ok_or_else(|| at("sha256 is not 64 hexadecimal digits".to_string()))?;
            if tokens.contains_key(&digest) {
                return Err(at(format!("{:?} has the same token as another entry", entry.name)));
            }
            let expires = entry.expires.as_deref().map(parse_expiry).transpose().map_err(&at)?;
            if let Some(tenant) = &entry.tenant {
                check_tenant(tenant).map_err(&at)?;
            }
            tokens.insert(digest, Token { digest, name: Some(entry.name), tenant: entry.tenant, expires });
        }
        Ok(TokenSet { tokens })
    }

    /// These tokens and `other`'s.
    pub fn with(mut self, other: TokenSet) -> TokenSet {
        self.tokens.extend(other.tokens);
        self
    }

    /// The tenants the named tokens name.
    pub fn tenants(&self) -> impl Iterator<Item = &str> {
        self.tokens.values().filter_map(|token| token.tenant.as_deref())
    }

    /// A tenant a named token names that is not among `served`, if any.
    pub fn unserved_tenant<'a>(&'a self, served: &[String]) -> Option<&'a str> {
        self.tenants().find(|tenant| !served.iter().any(|served| served == tenant))
    }

    /// How many tokens, named or not.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// What `presented` is at `now`: hashed once, and looked up by digest.
    pub fn check(&self, presented: &str, now: SystemTime) -> Presented {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let Some(token) = self.tokens.get(&digest) else { return Presented::Unknown };
        let Some(name) = &token.name else { return Presented::Unnamed };
        match token.expires {
            Some(expires) if expires <= now => Presented::Expired(name.clone()),
            expires => Presented::Named(Grant { subject: Some(name.clone()), tenants: token.tenant.iter().cloned().collect(), expires }),
        }
    }
}

/// The tokens in force, and the files they are read from again at SIGHUP.
pub struct Tokens {
    single: Option<PathBuf>,
    named: Option<PathBuf>,
    /// The tenants a named token may name: those the configuration serves.
    served_tenants: Vec<String>,
    current: ArcSwap<TokenSet>,
}

impl PartialEq for Tokens {
    fn eq(&self, other: &Tokens) -> bool {
        self.single == other.single && self.named == other.named && *self.current() == *other.current()
    }
}

impl Eq for Tokens {}

impl std::fmt::Debug for Tokens {
    /// The files and how many tokens are in force: never a digest.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").field("single", &self.single).field("named", &self.named).field("in_force", &self.current().len()).finish()
    }
}

impl Tokens {
    /// Tokens given in memory, read from no file (SIGHUP keeps them).
    pub fn fixed(set: TokenSet) -> Arc<Tokens> {
        Arc::new(Tokens { single: None, named: None, served_tenants: Vec::new(), current: ArcSwap::from_pointee(set) })
    }

    /// Reads the token file `single` (`--auth-token-file`) and the tokens
    /// file `named` (`--auth-tokens-file`), whose tokens may name only the
    /// tenants `served_tenants`; None when neither file is given.
    pub fn read(single: Option<&Path>, named: Option<&Path>, served_tenants: Vec<String>) -> Result<Option<Arc<Tokens>>, TransportError> {
        if single.is_none() && named.is_none() {
            return Ok(None);
        }
        let tokens = Tokens {
            single: single.map(Path::to_path_buf),
            named: named.map(Path::to_path_buf),
            served_tenants,
            current: ArcSwap::default(),
        };
        let set = tokens.read_files().map_err(TransportError::Start)?;
        tracing::info!("bearer tokens in force: {}", tokens.describe(&set));
        tokens.current.store(Arc::new(set));
        Ok(Some(Arc::new(tokens)))
    }

    fn read_files(&self) -> Result<TokenSet, String> {
        let read = |path: &Path, what: &str| {
            prompt_host_files::read_text(path).map_err(|error| format!("cannot read the {what} {}: {error}", path.display()))
        };
        let mut set = TokenSet::default();
        if let Some(path) = &self.single {
            set = set.with(TokenSet::single(path, &read(path, "token file")?)?);
        }
        if let Some(path) = &self.named {
            let named = TokenSet::named(path, &read(path, "tokens file")?)?;
            if let Some(tenant) = named.unserved_tenant(&self.served_tenants) {
                return Err(format!(
                    "the tokens file {} names the tenant {tenant:?}, which the configuration does not serve: add [tenants.{tenant}]",
                    path.display()
                ));
            }
            set = set.with(named);
        }
        Ok(set)
    }

    /// What `set`, read from these files, holds, for the log: how many
    /// named tokens from which file, and the token of which file.
    fn describe(&self, set: &TokenSet) -> String {
        let named = set.tokens.values().filter(|token| token.name.is_some()).count();
        let mut parts = Vec::new();
        if let Some(path) = &self.named {
            parts.push(format!("{named} named from {}", path.display()));
        }
        if let Some(path) = &self.single {
            parts.push(format!("the token of {}", path.display()));
        }
        parts.join(", and ")
    }

    /// The tokens in force now.
    pub fn current(&self) -> Arc<TokenSet> {
        self.current.load_full()
    }

    /// Reads the files again (at SIGHUP): the new tokens are in force from
    /// the next request; a file that does not read keeps the old ones, and
    /// the log says why.
    pub fn reload(&self) {
        if self.single.is_none() && self.named.is_none() {
            return;
        }
        match self.read_files() {
            // A file caught empty (being rewritten by hand, say) would refuse everyone.
            Ok(set) if set.is_empty() && !self.current().is_empty() => {
                tracing::error!("SIGHUP: the bearer tokens in force are kept: the token files name no token now");
            }
            Ok(set) => {
                let described = self.describe(&set);
                let before = self.current.swap(Arc::new(set));
                let after = self.current.load();
                tracing::info!(tokens = after.len(), before = before.len(), "SIGHUP: bearer tokens read again: {described}");
            }
            Err(problem) => {
                tracing::error!("SIGHUP: the bearer tokens in force are kept: {}", problem.escape_debug());
            }
        }
    }
}

/// A tokens file, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    sha256: String,
    tenant: Option<String>,
    expires: Option<String>,
}

fn check_name(name: &str) -> Result<(), String> {
    check_word("name", name, &['.', '_', '@', '-'], TOKEN_NAME_RULE)
}

/// A tenant's name as a token names it: as the config's `[tenants.NAME]`
/// keys are written.
fn check_tenant(tenant: &str) -> Result<(), String> {
    check_word("tenant", tenant, &['.', '_', '-'], "1 to 64 ASCII letters, digits, '.', '_' or '-'")
}

/// Checks that `text` (the token's `what`) is 1 to 64 ASCII letters, digits
/// and the `punctuation` given (`rule` says so); what is refused is quoted
/// printable and cut.
fn check_word(what: &str, text: &str, punctuation: &[char], rule: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || punctuation.contains(&c);
    match !text.is_empty() && text.len() <= 64 && text.chars().all(allowed) {
        true => Ok(()),
        false => Err(format!("the {what} {:?} is not {rule}", prompt_host_kernel::validate::error_message(text))),
    }
}

fn hex_digest(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (index, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(digest)
}

/// An expiry as RFC 3339 writes one: a date-time with an offset
/// (`2027-01-31T18:00:00Z`), or a date, meaning its start in UTC.
fn parse_expiry(text: &str) -> Result<SystemTime, String> {
    let instant = chrono::DateTime::parse_from_rfc3339(text)
        .map(|time| time.with_timezone(&chrono::Utc))
        .or_else(|_| chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").map(|date| date.and_time(chrono::NaiveTime::MIN).and_utc()));
    let instant =
        instant.map_err(|_| format!("expires {text:?} is not an RFC 3339 date (2027-01-31) or date-time (2027-01-31T18:00:00Z)"))?;
    let seconds = u64::try_from(instant.timestamp()).map_err(|_| format!("expires {text:?} is before 1970"))?;
    Ok(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

/// A fresh token of 256 random bits (`ph_` and 43 base64url characters),
/// and the entry of the tokens file that names it `name`, for `tenant`,
/// until `expires`, holding its SHA-256 last (a reader that saw the entry
/// cut short sees no token, never one without its tenant or expiry).
pub fn new_token(name: &str, tenant: Option<&str>, expires: Option<&str>) -> Result<(String, String), String> {
    check_name(name)?;
    if let Some(tenant) = tenant {
        check_tenant(tenant)?;
    }
    if let Some(expires) = expires {
        parse_expiry(expires)?;
    }
    let mut bits = [0u8; 32];
    getrandom::fill(&mut bits).map_err(|error| format!("no random bytes from the operating system: {error}"))?;
    use base64::Engine as _;
    let token = format!("ph_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bits));
    let digest: String = Sha256::digest(token.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect();
    let quoted = |text: &str| toml::Value::String(text.to_string()).to_string();
    let mut entry = format!("\n[[token]]\nname = {}\n", quoted(name));
    if let Some(tenant) = tenant {
        entry.push_str(&format!("tenant = {}\n", quoted(tenant)));
    }
    if let Some(expires) = expires {
        entry.push_str(&format!("expires = {}\n", quoted(expires)));
    }
    entry.push_str(&format!("sha256 = \"{digest}\"\n"));
    Ok((token, entry))
}

/// `prompt-host token new`: adds the entry of a new token named `name` to
/// the tokens file `path` (created, readable by its owner only, if missing),
/// after checking that the file with it reads, has no other token of that
/// name and stays within what the host reads; returns the token, to be
/// printed once.
pub fn add_new_token(path: &Path, name: &str, tenant: Option<&str>, expires: Option<&str>) -> Result<String, String> {
    let mut token = String::new();
    rewrite_tokens_file(path, |existing, set| {
        if set.tokens.values().any(|token| token.name.as_deref() == Some(name)) {
            return Err(format!("the tokens file {} already has a token named {name:?}: remove its entry first", path.display()));
        }
        let entry;
        (token, entry) = new_token(name, tenant, expires)?;
        let header = "# Bearer tokens prompt-host accepts (--auth-tokens-file), each as the SHA-256 of the token.\n\
                      # Add one with `prompt-host token new NAME`; revoke one with `prompt-host token revoke NAME`, then SIGHUP.\n";
        Ok(format!("{}{entry}", existing.unwrap_or(header)))
    })?;
    Ok(token)
}

/// `prompt-host token revoke`: removes the entry of the token named `name`
/// from the tokens file `path`, keeping the rest of the file as written
/// (its comments and layout). A running server refuses the token from the
/// first request after SIGHUP.
pub fn revoke_token(path: &Path, name: &str) -> Result<(), String> {
    check_name(name)?;
    rewrite_tokens_file(path, |existing, set| {
        let shown = path.display();
        let Some(existing) = existing else { return Err(format!("there is no tokens file {shown}")) };
        let named = |token: &Token| token.name.as_deref() == Some(name);
        if !set.tokens.values().any(named) {
            return Err(format!("the tokens file {shown} has no token named {name:?}"));
        }
        // A server keeps the tokens in force when the file names none (a
        // file caught while someone rewrites it must not refuse everyone),
        // so revoking the last token would not take effect: say so.
        if set.tokens.values().all(named) {
            return Err(format!(
                "{name:?} is the last token of the tokens file {shown}, and a running server keeps its tokens when the file \
                 names none: add another token first (prompt-host token new), or serve without --auth-tokens-file"
            ));
        }
        let mut document: toml_edit::DocumentMut =
            existing.parse().map_err(|error: toml_edit::TomlError| format!("the tokens file {shown}: {}", error.message()))?;
        let has_name = |table: &dyn toml_edit::TableLike| table.get("name").and_then(toml_edit::Item::as_str) == Some(name);
        match document.get_mut("token") {
            Some(toml_edit::Item::ArrayOfTables(entries)) => {
                let position = entries.iter().position(|entry| has_name(entry)).expect("the name was found above");
                // What comes before the last blank line above the first entry
                // is the file's header: it stays, above whatever comes next.
                // The comment lines right above an entry are its own, and go
                // with it.
                let header = match position {
                    0 => entries
                        .get(0)
                        .and_then(|entry| entry.decor().prefix())
                        .and_then(|prefix| prefix.as_str())
                        .and_then(|prefix| prefix.rfind("\n\n").map(|at| prefix[..at + 1].to_string())),
                    _ => None,
                };
                entries.remove(position);
                if let (Some(header), Some(next)) = (header, entries.get_mut(0)) {
                    let own = next.decor().prefix().and_then(|prefix| prefix.as_str()).unwrap_or("").to_string();
                    next.decor_mut().set_prefix(format!("{header}{own}"));
                }
            }
            // `token = [{ name = ... }, ...]`, as a person may write it.
            Some(toml_edit::Item::Value(toml_edit::Value::Array(entries))) => {
                entries.retain(|entry| !entry.as_inline_table().is_some_and(|entry| has_name(entry)));
            }
            _ => return Err(format!("the tokens file {shown} has no token named {name:?}")),
        }
        Ok(document.to_string())
    })
}

/// A named token as `prompt-host token list` shows it: never its digest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListedToken {
    pub name: String,
    pub tenant: Option<String>,
    /// As written in the file.
    pub expires: Option<String>,
    /// Whether it has expired (at `now`).
    pub expired: bool,
}

/// `prompt-host token list`: the named tokens of the tokens file `path`,
/// in the file's order, checked as the server reads them.
pub fn list_tokens(path: &Path, now: SystemTime) -> Result<Vec<ListedToken>, String> {
    let text = prompt_host_files::read_text(path).map_err(|error| format!("cannot read the tokens file {}: {error}", path.display()))?;
    let set = TokenSet::named(path, &text)?;
    let file: TokensFile = toml::from_str(&text).map_err(|error| error.message().to_string())?;
    let expired =
        |name: &str| set.tokens.values().any(|token| token.name.as_deref() == Some(name) && token.expires.is_some_and(|at| at <= now));
    Ok(file
        .token
        .into_iter()
        .map(|entry| ListedToken { expired: expired(&entry.name), name: entry.name, tenant: entry.tenant, expires: entry.expires })
        .collect())
}

/// Rewrites the tokens file `path` with what `change` makes of its text
/// (None when there is none yet) and of the tokens it names, after checking
/// that the new text reads and stays within what the host reads. The file
/// is written whole beside the old one (keeping its permissions, and its
/// owner where allowed) and renamed into place, under a lock on its folder,
/// so that neither a server reading it at SIGHUP nor another `token`
/// command sees half of it, and nothing is left beside it.
fn rewrite_tokens_file(path: &Path, change: impl FnOnce(Option<&str>, &TokenSet) -> Result<String, String>) -> Result<(), String> {
    let shown = path.display();
    let file_name = path.file_name().and_then(|name| name.to_str()).unwrap_or("tokens");
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let lock = prompt_host_files::open_directory(folder).map_err(|error| format!("cannot lock the tokens file {shown}: {error}"))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|error| format!("cannot lock the tokens file {shown}: {error}"))?;
    let existing = match std::fs::symlink_metadata(path) {
        Ok(_) => Some(prompt_host_files::read_text(path).map_err(|error| format!("cannot read the tokens file {shown}: {error}"))?),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("cannot read the tokens file {shown}: {error}")),
    };
    let set = TokenSet::named(path, existing.as_deref().unwrap_or(""))?;
    let text = change(existing.as_deref(), &set)?;
    if text.len() as u64 > prompt_host_files::MAX_SMALL_FILE_BYTES {
        return Err(format!(
            "the tokens file {shown} would be more than the {} bytes the host reads",
            prompt_host_files::MAX_SMALL_FILE_BYTES
        ));
    }
    if TokenSet::named(path, &text)?.len() > MAX_TOKENS {
        return Err(format!("the tokens file {shown} has {MAX_TOKENS} tokens, the most the host reads"));
    }
    let temporary = path.with_file_name(format!(".{file_name}.new"));
    let _ = std::fs::remove_file(&temporary);
    let write = || -> std::io::Result<()> {
        let mut file = prompt_host_files::open_append(&temporary)?;
        #[cfg(unix)]
        if let Ok(old) = std::fs::metadata(path) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o777))?;
            // Kept where allowed (as root); else the file is the writer's.
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
        }
        use std::io::Write;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        format!("cannot write the tokens file {shown}: {error}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> Result<TokenSet, String> {
        TokenSet::named(Path::new("tokens.toml"), text)
    }

    #[test]
    fn the_last_token_is_not_revoked_since_a_server_would_keep_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        add_new_token(&file, "only", None, None).unwrap();
        let before = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            revoke_token(&file, "only").unwrap_err(),
            format!(
                "\"only\" is the last token of the tokens file {}, and a running server keeps its tokens when the file names \
                 none: add another token first (prompt-host token new), or serve without --auth-tokens-file",
                file.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
        // With another one, it goes.
        add_new_token(&file, "next", None, None).unwrap();
        revoke_token(&file, "only").unwrap();
        let names: Vec<String> = list_tokens(&file, SystemTime::now()).unwrap().into_iter().map(|token| token.name).collect();
        assert_eq!(names, ["next"]);
    }

    #[test]
    fn revoking_keeps_the_files_header_and_the_other_entries_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let text = format!(
            "# the team's tokens\n\n# alice's laptop\n[[token]]\nname = \"alice\"\nsha256 = \"{a}\"\n\n\
             # the build server\n[[token]]\nname = \"ci\"\nsha256 = \"{b}\"\n"
        );
        std::fs::write(&file, &text).unwrap();
        revoke_token(&file, "alice").unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("# the team's tokens\n\n# the build server\n[[token]]\nname = \"ci\"\nsha256 = \"{b}\"\n")
        );
        // Written inline, as a person may.
        std::fs::write(&file, format!("token = [{{ name = \"a\", sha256 = \"{a}\" }}, {{ name = \"b\", sha256 = \"{b}\" }}]\n")).unwrap();
        revoke_token(&file, "a").unwrap();
        let names: Vec<String> = list_tokens(&file, SystemTime::now()).unwrap().into_iter().map(|token| token.name).collect();
        assert_eq!(names, ["b"]);
    }

    #[test]
    fn a_new_token_is_random_and_its_entry_names_only_its_hash() {
        let (token, entry) = new_token("alice", Some("acme"), Some("2099-01-01")).unwrap();
        let (other, _) = new_token("alice", None, None).unwrap();
        assert!(token.starts_with("ph_") && token.len() == 46, "{token}");
        assert_ne!(token, other);
        assert!(!entry.contains(&token));
        let tokens = set(&entry).unwrap();
        let grant =
            Grant { subject: Some("alice".into()), tenants: vec!["acme".into()], expires: Some(parse_expiry("2099-01-01").unwrap()) };
        assert_eq!(tokens.check(&token, SystemTime::now()), Presented::Named(grant));
        assert_eq!(tokens.check(&other, SystemTime::now()), Presented::Unknown);
        assert_eq!(tokens.check(&token, parse_expiry("2099-01-01T00:00:01Z").unwrap()), Presented::Expired("alice".into()));
    }

    #[test]
    fn a_file_that_is_wrong_says_where_and_quotes_no_digest() {
        let digest = "a".repeat(64);
        let entry = |name: &str, sha: &str| format!("[[token]]\nname = {name:?}\nsha256 = {sha:?}\n");
        assert_eq!(
            set(&entry("bob smith", &digest)).unwrap_err(),
            format!("the tokens file tokens.toml: token 1: the name \"bob smith\" is not {TOKEN_NAME_RULE}")
        );
        assert_eq!(set(&entry("bob", "abc")).unwrap_err(), "the tokens file tokens.toml: token 1: sha256 is not 64 hexadecimal digits");
        let twice = format!("{}{}", entry("bob", &digest), entry("bob", &"b".repeat(64)));
        assert_eq!(set(&twice).unwrap_err(), "the tokens file tokens.toml: token 2: the name \"bob\" is given twice");
        let same = format!("{}{}", entry("bob", &digest), entry("eve", &digest));
        assert_eq!(set(&same).unwrap_err(), "the tokens file tokens.toml: token 2: \"eve\" has the same token as another entry");
        let expiry = format!("{}expires = \"soon\"\n", entry("bob", &digest));
        assert!(set(&expiry).unwrap_err().contains("expires \"soon\" is not an RFC 3339 date"));
        assert!(set("[[token]]\nname = \"x\"\nsha256 = \"y\"\nsecret = 1\n").unwrap_err().contains("unknown field `secret`"));
        assert_eq!(set("").unwrap(), TokenSet::default());
        assert!(set(&format!("{}tenant = \"a b\"\n", entry("bob", &digest))).unwrap_err().contains("the tenant \"a b\" is not"));
    }

    #[test]
    fn an_entry_cut_short_names_no_token_rather_than_one_without_its_tenant_or_expiry() {
        let (_, entry) = new_token("alice", Some("acme"), Some("2099-01-01")).unwrap();
        let cut = &entry[..entry.find("sha256").unwrap()];
        assert!(set(cut).unwrap_err().contains("missing field `sha256`"));
    }

    #[test]
    fn the_single_token_is_unnamed_and_both_files_count_together() {
        let single = TokenSet::single(Path::new("t"), " s3cret \n").unwrap();
        let (token, entry) = new_token("ci", None, None).unwrap();
        let both = single.with(set(&entry).unwrap());
        assert_eq!(both.check("s3cret", SystemTime::now()), Presented::Unnamed);
        assert!(matches!(both.check(&token, SystemTime::now()), Presented::Named(_)));
        assert_eq!(TokenSet::single(Path::new("t"), " \n").unwrap_err(), "the token file t is empty");
    }
}
