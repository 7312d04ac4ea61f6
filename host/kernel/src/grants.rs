//! Grants: what an operator lets one pack see of the machine, and what one
//! call may do with it (WIT 0.3).
//!
//! A pack sees nothing of the machine unless it asked for it
//! (`pack-info.wants`) and the operator granted it (the config's
//! `[plugins.NAME.grants]`, handed here as plain [`Grants`]): [`GrantedAccess::between`]
//! is that intersection, made once when a plugin loads. What a call is given:
//! - **folders**, read-only, as the preopened directories `/<name>`, through
//!   the host's own implementation of the standard `wasi:filesystem`
//!   interfaces ([`folders`]): every path is resolved by the Linux kernel
//!   beneath the folder (`openat2` with `RESOLVE_BENEATH`), nothing is
//!   written, and no open can block;
//! - **origins**, through the standard `wasi:http/outgoing-handler`, each
//!   request sent by the host's own hook ([`http`]): the origin admits it,
//!   a name resolves to no loopback, private, link-local or metadata
//!   address, TLS is verified, and every step ends at the call's deadline;
//! - **named values**, through `wasi:cli/environment`.
//!
//! Each call's use of its folders and origins is metered ([`IoMeter`]) against budgets
//! declared once with the other limits (`grant_*` in [`crate::limits`]): a
//! call that goes past one fails, naming the budget. A folder the pack asked
//! for and was not granted is still listed among its preopens, so that its
//! first use fails the call with an error that names the config key that
//! would grant it; a value asked for and not granted is simply absent (the
//! log said so when the pack loaded).
//!
//! The server owns the policy (the config file); this module owns the
//! enforcement. It knows nothing of MCP.

pub mod folders;
pub mod http;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::limits::Limits;
use crate::model::Wants;
pub use http::Origin;

/// What the operator grants one plugin, by the names a pack asks for them
/// by: plain data, read from the config by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Folders: the pack's name for one (`logs`) to the host's path.
    pub folders: BTreeMap<String, PathBuf>,
    /// Named values (`API_TOKEN`) and what they hold.
    pub values: BTreeMap<String, Secret>,
    /// Origins a pack may call.
    pub origins: Vec<Origin>,
    /// The config table they come from (`tenants.acme.grants.insights`),
    /// when not `plugins.NAME.grants`: what a message names to grant more.
    pub section: Option<String>,
}

/// Whether `name` may name a folder a pack asks for (and its preopen,
/// `/<name>`): a lowercase ASCII letter, then lowercase letters, digits,
/// `-` or `_`, at most 64 in all.
pub fn is_folder_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 64
}

/// Whether `name` may name a value a pack asks for: ASCII letters, digits
/// and `_`, 1 to 128 of them.
pub fn is_value_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 128 && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// A granted value: shown nowhere (its `Debug` says only how long it is),
/// handed to the pack that asked for it, and to nothing else.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A value to grant.
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value itself, for the pack's environment.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// One folder a pack asked for, as its calls see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenFolder {
    /// The pack's name for it: its preopen is `/<name>`.
    pub name: String,
    /// The host's folder, when granted; none when the pack asked for it and
    /// the operator did not grant it (its use fails the call, naming the key).
    pub path: Option<PathBuf>,
}

/// One origin a pack asked for, and what of it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenOrigin {
    /// What the pack asked for.
    pub asked: Origin,
    /// What its calls may call: for each grant that overlaps it, the
    /// narrower of the two; none when no grant overlaps it.
    pub given: Vec<Origin>,
}

/// What one plugin's calls see of the machine: what it asked for and was
/// granted, and the folders it asked for that were not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantedAccess {
    /// The plugin's name, for the errors its calls end in.
    pub plugin: String,
    /// The config table that grants it more (`plugins.NAME.grants`, or a
    /// tenant's own), for the errors its calls end in.
    pub section: String,
    /// The folders it asked for, in its order, granted or not.
    pub folders: Vec<SeenFolder>,
    /// The values it asked for and was granted, in its order.
    pub values: Vec<(String, Secret)>,
    /// The origins it asked for (validated when it loaded), granted or not.
    pub origins: Vec<SeenOrigin>,
}

/// Something asked for and not granted, or granted and not asked for: each
/// logged when the plugin loads, with the config key concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Withheld {
    /// The pack asked for it; the config does not grant it.
    NotGranted {
        /// `folder 'logs'` or `value 'API_TOKEN'`.
        what: String,
        /// The config line that would grant it.
        key: String,
    },
    /// The config grants it; the pack did not ask for it, so it is not given.
    NotAsked {
        /// `folder 'logs'` or `value 'API_TOKEN'`.
        what: String,
        /// The config line that grants it.
        key: String,
    },
}

impl std::fmt::Display for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Withheld::NotGranted { what, key } => write!(f, "it asks for {what}, which is not granted (grant it with {key})"),
            Withheld::NotAsked { what, key } => {
                write!(f, "{what} is granted ({key}) but the pack does not ask for it: not given")
            }
        }
    }
}

/// The config table of `plugin`'s grants, `section` if given (a
/// tenant's own), else `plugins.NAME.grants`.
pub fn grants_section(plugin: &str, section: Option<&str>) -> String {
    section.map_or_else(|| format!("plugins.{}.grants", plugin.escape_debug()), |section| section.escape_debug().to_string())
}

/// The config line that grants folder `folder`, in the table `section`.
pub fn folder_key(section: &str, folder: &str) -> String {
    format!("{folder} = \"/path/on/the/host\" in [{section}.folders]")
}

/// The config line that grants `origin`, in the table `section`.
pub fn origin_key(section: &str, origin: &Origin) -> String {
    format!("http = [\"{origin}\"] in [{section}]")
}

/// The config line that grants value `name`, in the table `section`.
pub fn value_key(section: &str, name: &str) -> String {
    format!("{name} = {{ file = \"/path/to/secret\" }} in [{section}.env]")
}

impl GrantedAccess {
    /// What `plugin`'s calls see: what it asked for (`wants`: none for a
    /// pack before 0.3, which asks for nothing) and `grants` grants, and
    /// what was withheld either way.
    pub fn between(plugin: &str, wants: Option<&Wants>, grants: &Grants) -> (GrantedAccess, Vec<Withheld>) {
        let section = grants_section(plugin, grants.section.as_deref());
        let mut access = GrantedAccess { plugin: plugin.to_string(), section: section.clone(), ..GrantedAccess::default() };
        let mut withheld = Vec::new();
        let (asked_folders, asked_values): (Vec<&str>, Vec<&str>) = match wants {
            Some(wants) => (wants.folders.iter().map(|f| f.name.as_str()).collect(), wants.env.iter().map(String::as_str).collect()),
            None => (Vec::new(), Vec::new()),
        };
        // Checked when the pack loaded (`validate::wants`): one that does not parse is not asked for.
        let asked_origins: Vec<Origin> =
            wants.map(|wants| wants.origins.iter().filter_map(|origin| Origin::parse(origin).ok()).collect()).unwrap_or_default();
        for asked in &asked_origins {
            let given: Vec<Origin> = grants.origins.iter().filter_map(|granted| asked.overlap(granted)).collect();
            if given.is_empty() {
                withheld.push(Withheld::NotGranted { what: format!("origin {asked}"), key: origin_key(&section, asked) });
            }
            access.origins.push(SeenOrigin { asked: asked.clone(), given });
        }
        for granted in grants.origins.iter().filter(|granted| !asked_origins.iter().any(|asked| asked.overlap(granted).is_some())) {
            withheld.push(Withheld::NotAsked { what: format!("origin {granted}"), key: origin_key(&section, granted) });
        }
        for name in &asked_folders {
            let path = grants.folders.get(*name).cloned();
            if path.is_none() {
                withheld.push(Withheld::NotGranted { what: format!("folder '{name}'"), key: folder_key(&section, name) });
            }
            access.folders.push(SeenFolder { name: name.to_string(), path });
        }
        for name in &asked_values {
            match grants.values.get(*name) {
                Some(value) => access.values.push((name.to_string(), value.clone())),
                None => withheld.push(Withheld::NotGranted { what: format!("value '{name}'"), key: value_key(&section, name) }),
            }
        }
        for name in grants.folders.keys().filter(|name| !asked_folders.contains(&name.as_str())) {
            withheld.push(Withheld::NotAsked { what: format!("folder '{}'", name.escape_debug()), key: folder_key(&section, name) });
        }
        for name in grants.values.keys().filter(|name| !asked_values.contains(&name.as_str())) {
            withheld.push(Withheld::NotAsked { what: format!("value '{}'", name.escape_debug()), key: value_key(&section, name) });
        }
        (access, withheld)
    }

    /// What is given, one item each (`folder logs = /var/log/app`, `value
    /// API_TOKEN`), for the log and `list`: never a value itself.
    pub fn given(&self) -> Vec<String> {
        let folders = self
            .folders
            .iter()
            // The operator's path, escaped: a list's columns are tab-separated.
            .filter_map(|folder| {
                folder
                    .path
                    .as_ref()
                    .map(|path| format!("folder {} = {} (read-only)", folder.name, path.display().to_string().escape_debug()))
            });
        let origins = self.origins.iter().flat_map(|seen| seen.given.iter().map(|given| format!("origin {given}")));
        folders.chain(origins).chain(self.values.iter().map(|(name, _)| format!("value {name}"))).collect()
    }
}

/// A per-call budget of granted I/O, by its key in `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Files and folders opened.
    FilesOpened,
    /// Bytes read from files.
    ReadBytes,
    /// Directory entries listed.
    DirEntries,
    /// Time spent in host I/O for the call.
    IoTime,
    /// HTTP requests sent to granted origins.
    HttpRequests,
    /// Bytes sent to granted origins (request heads and bodies).
    HttpSentBytes,
    /// Bytes received from granted origins (response heads and bodies).
    HttpReceivedBytes,
}

/// How many budgets there are.
const BUDGETS: usize = 7;

impl Budget {
    /// The key that sets it, in `[limits]` and `[plugins.NAME.limits]`.
    pub fn key(self) -> &'static str {
        match self {
            Budget::FilesOpened => "grant_files_opened",
            Budget::ReadBytes => "grant_read_kib",
            Budget::DirEntries => "grant_dir_entries",
            Budget::IoTime => "grant_io_ms",
            Budget::HttpRequests => "grant_http_requests",
            Budget::HttpSentBytes => "grant_http_sent_kib",
            Budget::HttpReceivedBytes => "grant_http_received_kib",
        }
    }
}

/// Why a call's use of what it was granted failed the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantRefusal {
    /// The call used up one of its budgets.
    #[error("used up its per-call budget of {}", budget_text(*budget, *limit))]
    Budget {
        /// Which budget.
        budget: Budget,
        /// Its size, in the unit of [`IoMeter`] (bytes, nanoseconds, or a count).
        limit: u64,
    },
    /// The call used a folder the pack asked for and was not granted.
    #[error("used folder '{folder}', which it asks for but is not granted: grant it with {}", folder_key(section, folder))]
    NotGranted {
        /// The config table that would grant it.
        section: String,
        /// The pack's name for the folder.
        folder: String,
    },
    /// The call sent a request that no origin given to its pack admits.
    #[error("called {url}, which no origin granted to it admits: {}", origin_remedy(section, asked.as_ref()))]
    OriginNotGranted {
        /// The config table that would grant it.
        section: String,
        /// What it called (scheme, authority and path, escaped).
        url: String,
        /// The origin it asked for that admits the request, if any.
        asked: Option<Origin>,
    },
    /// A granted name resolved to an address of a class a name must not reach.
    #[error(
        "called {host}:{port}, which resolves to {address}, a {class} address, which a granted name may not reach: \
         only an origin that is the address itself (such as http://{}:{port}) may, asked for and granted",
        shown_address(*address)
    )]
    AddressRefused {
        /// The plugin's name.
        plugin: String,
        /// The host it called (escaped).
        host: String,
        /// The port it called.
        port: u16,
        /// The address the name resolved to.
        address: std::net::IpAddr,
        /// Its class (`loopback`, `cloud metadata`, ...).
        class: &'static str,
    },
}

/// How an origin the call was refused is granted, if it can be.
fn origin_remedy(section: &str, asked: Option<&Origin>) -> String {
    match asked {
        Some(asked) => format!("grant it with {}", origin_key(section, asked)),
        None => "the pack does not ask for it in its pack-info (wants.origins), so no config can grant it".to_string(),
    }
}

/// An address as a URL's host shows it.
fn shown_address(address: std::net::IpAddr) -> String {
    match address {
        std::net::IpAddr::V4(address) => address.to_string(),
        std::net::IpAddr::V6(address) => format!("[{address}]"),
    }
}

fn budget_text(budget: Budget, limit: u64) -> String {
    let amount = match budget {
        Budget::FilesOpened => format!("{limit} files opened"),
        Budget::ReadBytes => format!("{limit} bytes read"),
        Budget::DirEntries => format!("{limit} directory entries listed"),
        Budget::IoTime => format!("{} ms in host I/O", limit / 1_000_000),
        Budget::HttpRequests => format!("{limit} HTTP requests"),
        Budget::HttpSentBytes => format!("{limit} bytes sent"),
        Budget::HttpReceivedBytes => format!("{limit} bytes received"),
    };
    let granted = match budget {
        Budget::HttpRequests | Budget::HttpSentBytes | Budget::HttpReceivedBytes => "to granted origins",
        _ => "in granted folders",
    };
    format!("{amount} {granted} (limits.{}); a failed call keeps none of what it read", budget.key())
}

/// What one call used of what it was granted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoUsage {
    /// Files and folders opened.
    pub files_opened: u64,
    /// Bytes read from files.
    pub read_bytes: u64,
    /// Directory entries listed.
    pub dir_entries: u64,
    /// Time spent in host I/O.
    pub io_time: Duration,
    /// HTTP requests sent.
    pub http_requests: u64,
    /// Bytes sent to granted origins.
    pub http_sent_bytes: u64,
    /// Bytes received from granted origins.
    pub http_received_bytes: u64,
    /// Uses refused: a path out of its folder, a FIFO, socket or device,
    /// a write, a folder or origin not granted, an address refused.
    pub denials: u64,
}

/// One call's use of its grants, counted against its budgets. Shared with
/// the streams the call reads through, hence atomics.
#[derive(Debug)]
pub struct IoMeter {
    limits: [u64; BUDGETS],
    used: [AtomicU64; BUDGETS],
    denials: AtomicU64,
    /// The first refusal that ends the call, however the pack handled the
    /// error it was given (an HTTP refusal reaches the pack as an error
    /// code, which it could ignore).
    refusal: std::sync::Mutex<Option<GrantRefusal>>,
    /// Whether host I/O of the call was ended by its deadline: the call
    /// then ends as a call past its deadline does, even if the pack
    /// answered in the moment between.
    deadline_reached: std::sync::atomic::AtomicBool,
}

impl IoMeter {
    /// A meter of a call under `limits`.
    pub fn new(limits: &Limits) -> IoMeter {
        let nanos = u64::try_from(limits.grant_io_time.as_nanos()).unwrap_or(u64::MAX);
        IoMeter {
            limits: [
                limits.grant_files_opened as u64,
                limits.grant_read_bytes as u64,
                limits.grant_dir_entries as u64,
                nanos,
                limits.grant_http_requests as u64,
                limits.grant_http_sent_bytes as u64,
                limits.grant_http_received_bytes as u64,
            ],
            used: Default::default(),
            denials: AtomicU64::new(0),
            refusal: std::sync::Mutex::new(None),
            deadline_reached: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn index(budget: Budget) -> usize {
        budget as usize
    }

    /// How much of `budget` is left.
    pub fn left(&self, budget: Budget) -> u64 {
        let index = Self::index(budget);
        self.limits[index].saturating_sub(self.used[index].load(Ordering::Relaxed))
    }

    /// Counts `amount` of `budget`; past the budget, the refusal that ends
    /// the call.
    pub fn charge(&self, budget: Budget, amount: u64) -> Result<(), GrantRefusal> {
        let index = Self::index(budget);
        let used = self.used[index].fetch_add(amount, Ordering::Relaxed).saturating_add(amount);
        if used > self.limits[index] {
            return Err(GrantRefusal::Budget { budget, limit: self.limits[index] });
        }
        Ok(())
    }

    /// Counts the time since `started` as host I/O.
    pub fn spent_since(&self, started: Instant) -> Result<(), GrantRefusal> {
        self.charge(Budget::IoTime, u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Counts a use that was refused.
    pub fn denied(&self) {
        self.denials.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends the call with `refusal` (unless an earlier one ends it already).
    pub fn refuse(&self, refusal: GrantRefusal) {
        self.refusal.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_or_insert(refusal);
    }

    /// Host I/O of the call was ended by its deadline.
    pub fn reach_deadline(&self) {
        self.deadline_reached.store(true, Ordering::Relaxed);
    }

    /// Whether host I/O of the call was ended by its deadline.
    pub fn deadline_reached(&self) -> bool {
        self.deadline_reached.load(Ordering::Relaxed)
    }

    /// The refusal that ends the call, if any.
    pub fn refusal(&self) -> Option<GrantRefusal> {
        self.refusal.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// What the call used so far.
    pub fn usage(&self) -> IoUsage {
        let used = |budget| self.used[Self::index(budget)].load(Ordering::Relaxed);
        IoUsage {
            files_opened: used(Budget::FilesOpened),
            read_bytes: used(Budget::ReadBytes),
            dir_entries: used(Budget::DirEntries),
            io_time: Duration::from_nanos(used(Budget::IoTime)),
            http_requests: used(Budget::HttpRequests),
            http_sent_bytes: used(Budget::HttpSentBytes),
            http_received_bytes: used(Budget::HttpReceivedBytes),
            denials: self.denials.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WantedFolder;

    fn wants(folders: &[&str], env: &[&str]) -> Wants {
        Wants {
            folders: folders.iter().map(|name| WantedFolder { name: name.to_string(), description: None }).collect(),
            origins: vec!["https://api.example.com".to_string(), "https://ask.example.com".to_string()],
            env: env.iter().map(|name| name.to_string()).collect(),
        }
    }

    #[test]
    fn a_pack_sees_what_it_asked_for_and_was_granted_and_nothing_else() {
        let grants = Grants {
            folders: [("logs".to_string(), PathBuf::from("/var/log/app")), ("home".to_string(), PathBuf::from("/home"))].into(),
            values: [("API_TOKEN".to_string(), Secret::new("s3cret".into())), ("OTHER".to_string(), Secret::new("x".into()))].into(),
            origins: vec![
                Origin::parse("https://api.example.com/v1/").unwrap(),
                Origin::parse("https://api.example.com/v2/").unwrap(),
                Origin::parse("https://other.example.com").unwrap(),
            ],
            section: None,
        };
        let (access, withheld) = GrantedAccess::between("acme", Some(&wants(&["logs", "project"], &["API_TOKEN", "REGION"])), &grants);
        assert_eq!(
            access.folders,
            [
                SeenFolder { name: "logs".into(), path: Some(PathBuf::from("/var/log/app")) },
                SeenFolder { name: "project".into(), path: None },
            ]
        );
        assert_eq!(access.values, [("API_TOKEN".to_string(), Secret::new("s3cret".into()))]);
        assert_eq!(
            access.given(),
            [
                "folder logs = /var/log/app (read-only)",
                "origin https://api.example.com/v1/",
                "origin https://api.example.com/v2/",
                "value API_TOKEN"
            ]
        );
        let withheld: Vec<String> = withheld.iter().map(ToString::to_string).collect();
        assert_eq!(
            withheld,
            [
                "it asks for origin https://ask.example.com, which is not granted (grant it with http = [\"https://ask.example.com\"] in [plugins.acme.grants])",
                "origin https://other.example.com is granted (http = [\"https://other.example.com\"] in [plugins.acme.grants]) but the pack does not ask for it: not given",
                "it asks for folder 'project', which is not granted (grant it with project = \"/path/on/the/host\" in [plugins.acme.grants.folders])",
                "it asks for value 'REGION', which is not granted (grant it with REGION = { file = \"/path/to/secret\" } in [plugins.acme.grants.env])",
                "folder 'home' is granted (home = \"/path/on/the/host\" in [plugins.acme.grants.folders]) but the pack does not ask for it: not given",
                "value 'OTHER' is granted (OTHER = { file = \"/path/to/secret\" } in [plugins.acme.grants.env]) but the pack does not ask for it: not given",
            ]
        );
        // A pack before 0.3 asks for nothing, and is given nothing.
        let (access, withheld) = GrantedAccess::between("old", None, &grants);
        assert!(access.folders.is_empty() && access.values.is_empty() && access.origins.is_empty());
        assert_eq!(withheld.len(), 7);
    }

    #[test]
    fn a_tenants_own_grants_are_named_in_what_would_grant_more() {
        let grants = Grants { section: Some("tenants.acme.grants.insights".into()), ..Grants::default() };
        let (access, withheld) = GrantedAccess::between("insights", Some(&wants(&["logs"], &[])), &grants);
        assert_eq!(access.section, "tenants.acme.grants.insights");
        assert_eq!(
            withheld[0].to_string(),
            "it asks for origin https://api.example.com, which is not granted (grant it with http = [\"https://api.example.com\"] in [tenants.acme.grants.insights])"
        );
        assert_eq!(
            GrantRefusal::NotGranted { section: access.section.clone(), folder: "logs".into() }.to_string(),
            "used folder 'logs', which it asks for but is not granted: grant it with logs = \"/path/on/the/host\" in [tenants.acme.grants.insights.folders]"
        );
    }

    #[test]
    fn a_secret_is_never_shown() {
        let secret = Secret::new("hunter2".into());
        assert_eq!(format!("{secret:?}"), "Secret(7 bytes)");
        let grants = Grants { values: [("K".to_string(), secret)].into(), ..Grants::default() };
        assert!(!format!("{grants:?}").contains("hunter2"));
    }

    #[test]
    fn a_budget_allows_exactly_its_size() {
        let limits = Limits { grant_read_bytes: 10, ..Limits::default() };
        let meter = IoMeter::new(&limits);
        assert_eq!(meter.charge(Budget::ReadBytes, 10), Ok(()));
        assert_eq!(meter.left(Budget::ReadBytes), 0);
        let refusal = meter.charge(Budget::ReadBytes, 1).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "used up its per-call budget of 10 bytes read in granted folders (limits.grant_read_kib); a failed call keeps none of what it read"
        );
        assert_eq!(meter.usage().read_bytes, 11);
    }
}
