//! The HTTP front as an OAuth 2.1 resource server, as MCP's authorization
//! specification has it: it publishes its protected resource metadata (RFC
//! 9728), and takes only JWT access tokens (RFC 9068) that its authorization
//! server signed for this very resource (RFC 8707 audience) and that carry
//! the scope for prompts.
//!
//! A token is checked with jsonwebtoken against the issuer's published keys
//! (its JWKS), fetched over HTTPS (or on loopback), with a bound on size and
//! time, cached, and fetched again when a token names a key not in the cache
//! (a rotation), at most once per `jwks_min_refresh`, or in the background
//! when the keys held are `jwks_max_age` old (a key withdrawn): a request
//! whose key is held never waits for a fetch. Only asymmetric algorithms
//! count, and a key counts only for the algorithm family of its type (and its
//! own `alg`, when it names one): no `none`, no HMAC with a public key as the
//! secret. A token bound to a proof of possession (`cnf`) or whose header
//! names critical extensions (`crit`) is refused: neither is verified here.
//!
//! An opaque token (not a JWT) counts only if an introspection endpoint (RFC
//! 7662) is configured and says it is an active access token, issued by the
//! issuer, for this resource, valid now; an active answer is cached until the
//! token expires (within [`INTROSPECTION_CACHE_MAX`]), so a client cannot make
//! the host ask the issuer at every request. Introspection is bounded per
//! client address as well as in all, and a token that cannot be one (too
//! long, characters RFC 6750 does not allow) is refused without asking, so a
//! client sending junk tokens cannot take the turns of valid ones.
//!
//! What a token says of its holder (the tenant claim) is read only after all
//! of that holds.
//!
//! Here, the settings, what a check grants or denies, and the flow of one
//! check ([`ResourceServer::authorize`]); by concern beside it: `jwt` (the
//! token read and its claims), `jwks` (the issuer's keys), `introspection`
//! (opaque tokens) and `metadata` (what the resource server publishes).

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::connections::{client_network, client_prefix};

mod introspection;
mod jwks;
mod jwt;
mod metadata;

use jwks::check_key_fits;
use jwt::{bearer_token, strings, token_algorithm};

/// The longest access token read; a JWT is a few kilobytes.
pub const MAX_TOKEN_BYTES: usize = 16 << 10;
/// The most bytes of the issuer's metadata or key set.
pub const MAX_KEYS_BYTES: usize = 64 << 10;
/// The most keys read from the key set.
pub const MAX_KEYS: usize = 32;
/// Requests that may wait at once for the issuer's keys (a token naming a
/// key not held), in all and from one client network (its prefix: as many
/// as [`INTROSPECTIONS_PER_PREFIX`]); past either, 503 at once.
pub const MAX_KEY_WAITS: usize = 16;
pub const KEY_WAITS_PER_CLIENT: usize = 2;
/// How long such a request waits for the keys, at most, before 503: a
/// token naming an unknown key holds its connection no longer than this.
pub const KEY_WAIT: Duration = Duration::from_secs(5);
/// How long fetching the issuer's metadata or keys may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The default of `jwks_max_age_secs`: how old the keys held may get before
/// they are fetched again (in the background).
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// The largest `jwks_max_age_secs`: a withdrawn key stops counting within a day.
pub const MAX_KEYS_MAX_AGE: Duration = Duration::from_secs(86_400);
/// The default of `jwks_min_refresh_secs`: how often a token naming an
/// unknown key may make the host fetch the keys again.
pub const DEFAULT_KEYS_MIN_REFRESH: Duration = Duration::from_secs(10);
/// The default leeway on `exp` and `nbf`, for clocks that disagree a little.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The largest `leeway_secs`: an expired token counts at most this long.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);
/// How long an introspection's "active" answer is trusted, at most (else
/// until the token's `exp`): how long a revoked opaque token may still count.
pub const INTROSPECTION_CACHE_MAX: Duration = Duration::from_secs(300);
/// How long a token the issuer refused is refused without asking again.
pub const INTROSPECTION_REFUSAL_TTL: Duration = Duration::from_secs(10);
/// Introspections under way at once.
pub const MAX_INTROSPECTIONS_IN_FLIGHT: usize = 16;
/// Of the [`MAX_INTROSPECTIONS_IN_FLIGHT`] turns, those that client prefixes
/// (an IPv4 /24, an IPv6 /48) the issuer refused a token from within
/// [`SUSPECT_FOR`] share; the others are for every other network. So a
/// client sending junk tokens from many addresses of a few prefixes waits
/// behind its own junk, not in front of valid tokens.
pub const SUSPECT_INTROSPECTIONS_IN_FLIGHT: usize = 4;
/// Of the [`MAX_INTROSPECTIONS_IN_FLIGHT`] turns, those kept for client
/// networks that presented a valid token within [`SUSPECT_FOR`] (even from a
/// suspect prefix) and none the issuer refused since: junk from fresh
/// addresses never takes them, and a network that sends junk loses them.
pub const VOUCHED_INTROSPECTIONS_IN_FLIGHT: usize = 4;
/// The turns every other network shares.
const CLEAN_INTROSPECTIONS_IN_FLIGHT: usize =
    MAX_INTROSPECTIONS_IN_FLIGHT - SUSPECT_INTROSPECTIONS_IN_FLIGHT - VOUCHED_INTROSPECTIONS_IN_FLIGHT;
/// How long a client network stays among those sharing the
/// [`SUSPECT_INTROSPECTIONS_IN_FLIGHT`] turns after the issuer refused a
/// token from it (or after it last asked for an introspection meanwhile).
pub const SUSPECT_FOR: Duration = Duration::from_secs(300);
/// The most client networks remembered as refused (the least recently
/// refused forgotten first).
pub const MAX_SUSPECT_NETWORKS: usize = 4096;
/// The default of `introspections_per_client`: introspections under way or
/// waiting for a turn, per client network (an IPv4 address, an IPv6 /64);
/// past it, that client's request gets 503 at once. (Behind a proxy, the
/// client is read from `X-Forwarded-For` if the proxy is in
/// `trusted_proxies`.)
pub const DEFAULT_INTROSPECTIONS_PER_CLIENT: usize = 2;
/// Introspections under way or waiting for a turn from all the client
/// networks of one prefix (an IPv4 /24, an IPv6 /48), whatever
/// `introspections_per_client` says: one site's many addresses count as one.
pub const INTROSPECTIONS_PER_PREFIX: usize = 8;
/// How long an introspection waits for one of the
/// [`MAX_INTROSPECTIONS_IN_FLIGHT`] turns before its request gets 503.
pub const INTROSPECTION_TURN_WAIT: Duration = Duration::from_secs(5);
/// The most active introspected tokens remembered; when full, the one
/// expiring soonest is forgotten.
pub const MAX_INTROSPECTED: usize = 4096;
/// The most active introspected tokens remembered per subject (`sub`; the
/// tokens naming none count as one subject): a client minting tokens pushes
/// out only its own.
pub const MAX_INTROSPECTED_PER_SUBJECT: usize = 64;
/// The most refused introspected tokens remembered (apart, so that refusals
/// never take the place of active tokens).
pub const MAX_INTROSPECTION_REFUSALS: usize = 4096;
/// The longest opaque token sent to introspection.
pub const MAX_OPAQUE_TOKEN_BYTES: usize = 2048;
/// The path of the protected resource metadata (RFC 9728), before the
/// resource's own path.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why a token past its `exp` (and the leeway) is refused, JWT or opaque.
const EXPIRED: &str = "it has expired";
/// Why a token before its `nbf` (and the leeway) is refused, JWT or opaque.
const NOT_VALID_YET: &str = "it is not valid yet (nbf)";

/// The algorithms a token may be signed with: asymmetric ones only.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How the resource server is set up (`[authorization]` in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationSettings {
    /// This server's canonical URI (the MCP endpoint), which tokens must
    /// name as their audience.
    pub resource: url::Url,
    /// The authorization server whose tokens count: their `iss`, exactly.
    pub issuer: String,
    /// Where its keys are; by default, read from its metadata.
    pub jwks_uri: Option<url::Url>,
    /// The scope a token needs to list, get and complete prompts.
    pub scope: String,
    /// At most [`MAX_LEEWAY`].
    pub leeway: Duration,
    /// Introspections under way or waiting per client address, at most
    /// [`MAX_INTROSPECTIONS_IN_FLIGHT`].
    pub introspections_per_client: usize,
    /// The reverse proxies whose `X-Forwarded-For` names the client: a
    /// request from one of them counts as from the rightmost address in it
    /// that is not one of them.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub keys_min_refresh: Duration,
    /// How old the keys held may get before they are fetched again (in the
    /// background), at most [`MAX_KEYS_MAX_AGE`].
    pub keys_max_age: Duration,
    /// The claim that names the token holder's tenant (a string, or an array
    /// of them such as groups), if tenants are served.
    pub tenant_claim: Option<String>,
    /// PEM certificates of CAs trusted for the issuer, besides the system's.
    pub ca_certificates: Vec<Vec<u8>>,
    /// Where opaque tokens are introspected, if they are accepted.
    pub introspection: Option<Introspection>,
    /// Whether a JWT without `typ: at+jwt` counts (issuers that do not
    /// follow RFC 9068).
    pub accept_untyped_jwt: bool,
}

/// An introspection endpoint (RFC 7662), and this server's credentials
/// there as a client of the issuer.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    pub endpoint: url::Url,
    pub client_id: String,
    pub client_secret: String,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed.
        f.debug_struct("Introspection").field("endpoint", &self.endpoint).field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

impl AuthorizationSettings {
    /// Refuses URIs a token's check could be subverted through: keys
    /// fetched over plain HTTP from another machine.
    pub fn check(&self) -> Result<(), String> {
        let issuer = url::Url::parse(&self.issuer).map_err(|error| format!("authorization.issuer is not a URL: {error}"))?;
        let introspection = self.introspection.as_ref().map(|introspection| &introspection.endpoint);
        for (what, url) in [("issuer", Some(&issuer)), ("jwks_uri", self.jwks_uri.as_ref()), ("introspection_endpoint", introspection)] {
            let Some(url) = url else { continue };
            if url.scheme() != "https" && !(url.scheme() == "http" && url.host_str().is_some_and(is_loopback)) {
                return Err(format!("authorization.{what} must be an https:// URL (plain http only on loopback): {url}"));
            }
        }
        if !matches!(self.resource.scheme(), "https" | "http") || self.resource.fragment().is_some() {
            return Err(format!("authorization.resource must be this server's http(s) URI, without a fragment: {}", self.resource));
        }
        if self.scope.is_empty() || self.scope.contains(char::is_whitespace) {
            return Err("authorization.scope must be one scope, without spaces".to_string());
        }
        if self.leeway > MAX_LEEWAY {
            return Err(format!("authorization.leeway_secs must be at most {}", MAX_LEEWAY.as_secs()));
        }
        if !(1..=MAX_INTROSPECTIONS_IN_FLIGHT).contains(&self.introspections_per_client) {
            return Err(format!("authorization.introspections_per_client must be between 1 and {MAX_INTROSPECTIONS_IN_FLIGHT}"));
        }
        if self.keys_min_refresh.is_zero() {
            return Err("authorization.jwks_min_refresh_secs must be at least 1".to_string());
        }
        if self.keys_max_age.is_zero() || self.keys_max_age > MAX_KEYS_MAX_AGE {
            return Err(format!("authorization.jwks_max_age_secs must be between 1 and {}", MAX_KEYS_MAX_AGE.as_secs()));
        }
        Ok(())
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What a valid token grants: who holds it, and the tenants it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub subject: Option<String>,
    /// The tenant claim's values, in order (none if tenants are not served).
    pub tenants: Vec<String>,
    /// When the token stops counting (its `exp` and the leeway), if it says:
    /// a stream it opened ends then.
    pub expires: Option<std::time::SystemTime>,
}

/// Why a request is not authorized. Each is answered with the status and
/// challenge the specification gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// No bearer token (401, with where the resource metadata is).
    NoToken,
    /// A token that does not count (401 `invalid_token`), and why.
    InvalidToken(String),
    /// A valid token without the scope (403 `insufficient_scope`).
    InsufficientScope,
    /// The issuer cannot be reached (its keys, its introspection), so the
    /// token cannot be checked (503).
    IssuerUnavailable(String),
    /// Too many introspections are under way (in all, or from this client)
    /// for the token to be checked now (503).
    Busy(String),
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::NoToken => f.write_str("no bearer token"),
            Denial::InvalidToken(why) => write!(f, "invalid token: {why}"),
            Denial::InsufficientScope => f.write_str("the token lacks the scope"),
            Denial::IssuerUnavailable(why) => write!(f, "the issuer cannot be reached: {why}"),
            Denial::Busy(why) => write!(f, "the token cannot be checked now: {why}"),
        }
    }
}

/// The keys fetched from the issuer, and when.
struct Keys {
    set: JwkSet,
    /// When the keys held were fetched.
    fetched: Option<Instant>,
    /// When a fetch was last tried, whether it succeeded or not: the rate of
    /// fetches is bounded from this, so an issuer that is down is not asked
    /// again at every request.
    attempted: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failure: Option<String>,
}

/// The answer to an introspection asked, for the requests with the same
/// token that wait for it.
type IntrospectionAnswer = tokio::sync::watch::Sender<Option<Result<Grant, Denial>>>;

/// Checks access tokens for this server.
pub struct ResourceServer {
    settings: AuthorizationSettings,
    http: reqwest::Client,
    /// The keys held, read without waiting for a fetch.
    keys: std::sync::Mutex<Keys>,
    /// Held by the one fetch under way, with the key set's URI once known
    /// (given, or read from the issuer's metadata).
    refreshing: tokio::sync::Mutex<Option<url::Url>>,
    /// Whether a background fetch has been started and has not ended:
    /// claimed at once, so one request starts it, not each in the window.
    refreshing_in_background: std::sync::atomic::AtomicBool,
    /// Introspection answers, by the token's SHA-256.
    introspected: std::sync::Mutex<Introspected>,
    /// The introspections asked or waiting for a turn, by the token's
    /// SHA-256: a request with the same token awaits that answer instead of
    /// asking again, and takes no turn.
    introspecting: std::sync::Mutex<HashMap<[u8; 32], IntrospectionAnswer>>,
    /// The turns of client networks the issuer has not refused a token from
    /// lately ([`MAX_INTROSPECTIONS_IN_FLIGHT`] -
    /// [`SUSPECT_INTROSPECTIONS_IN_FLIGHT`]).
    clean_turns: Arc<tokio::sync::Semaphore>,
    /// The turns of the prefixes it has ([`SUSPECT_INTROSPECTIONS_IN_FLIGHT`]).
    suspect_turns: Arc<tokio::sync::Semaphore>,
    /// The turns of networks that presented a valid token lately
    /// ([`VOUCHED_INTROSPECTIONS_IN_FLIGHT`]).
    vouched_turns: Arc<tokio::sync::Semaphore>,
    /// The client networks that presented a valid token, until when they
    /// take the vouched turns.
    vouched: std::sync::Mutex<ExpiringMap<IpAddr, ()>>,
    /// Introspections under way or waiting, per client network and prefix.
    client_turns: Arc<std::sync::Mutex<ClientTurns>>,
    /// Requests waiting for the issuer's keys (their key not held), per
    /// client network and prefix, and in all ([`MAX_KEY_WAITS`]).
    key_waits: Arc<std::sync::Mutex<ClientTurns>>,
    key_wait_places: Arc<tokio::sync::Semaphore>,
    /// The client prefixes the issuer refused a token from, until when they
    /// share the suspect turns.
    suspects: std::sync::Mutex<ExpiringMap<IpAddr, ()>>,
    /// Introspections refused as busy, logged apart from other refusals so
    /// that a flood of them cannot silence the log of the rest.
    busy_log: std::sync::Mutex<prompt_host_kernel::log_budget::LogWindow>,
}

/// Busy refusals logged every 10 s; past that they are counted.
const BUSY_LOG: prompt_host_kernel::log_budget::LogBudget =
    prompt_host_kernel::log_budget::LogBudget { lines: 10, window: Duration::from_secs(10) };

/// A map of at most `max` entries, each until a time: expired entries are
/// never answered and are dropped first; when full, the entry expiring
/// soonest is dropped. Each insertion costs O(log n).
struct ExpiringMap<K, V> {
    entries: HashMap<K, (V, Instant)>,
    /// The entries by when they expire.
    order: BTreeSet<(Instant, K)>,
    max: usize,
}

impl<K: std::hash::Hash + Ord + Copy, V> ExpiringMap<K, V> {
    fn new(max: usize) -> Self {
        ExpiringMap { entries: HashMap::new(), order: BTreeSet::new(), max }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key).filter(|(_, until)| Instant::now() < *until).map(|(value, _)| value)
    }

    fn remove(&mut self, key: &K) -> Option<V> {
        let (value, until) = self.entries.remove(key)?;
        self.order.remove(&(until, *key));
        Some(value)
    }

    /// Inserts (or replaces) `key`, and returns the entries dropped to make
    /// room: expired ones, then the soonest to expire.
    fn insert(&mut self, key: K, value: V, until: Instant) -> Vec<(K, V)> {
        self.remove(&key);
        let now = Instant::now();
        let mut dropped = Vec::new();
        while let Some(&(soonest, oldest)) = self.order.first()
            && (soonest <= now || self.entries.len() >= self.max)
        {
            dropped.extend(self.remove(&oldest).map(|value| (oldest, value)));
        }
        self.entries.insert(key, (value, until));
        self.order.insert((until, key));
        dropped
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Introspection answers remembered, by the token's SHA-256, until when:
/// active ones and refusals apart, each bounded, so that a client sending
/// junk tokens cannot push valid ones out; active ones at most
/// [`MAX_INTROSPECTED_PER_SUBJECT`] per subject, so that a client minting
/// tokens cannot either.
struct Introspected {
    active: ExpiringMap<[u8; 32], Grant>,
    /// The active tokens of each subject, by when they expire.
    by_subject: HashMap<Option<String>, BTreeSet<(Instant, [u8; 32])>>,
    refused: ExpiringMap<[u8; 32], Denial>,
}

impl Default for Introspected {
    fn default() -> Self {
        Introspected {
            active: ExpiringMap::new(MAX_INTROSPECTED),
            by_subject: HashMap::new(),
            refused: ExpiringMap::new(MAX_INTROSPECTION_REFUSALS),
        }
    }
}

impl Introspected {
    fn get(&self, key: &[u8; 32]) -> Option<Result<Grant, Denial>> {
        if let Some(grant) = self.active.get(key) {
            return Some(Ok(grant.clone()));
        }
        self.refused.get(key).map(|denial| Err(denial.clone()))
    }

    fn remember(&mut self, key: [u8; 32], answer: &Result<Grant, Denial>, until: Instant) {
        match answer {
            Ok(grant) => {
                let subject = grant.subject.clone();
                let mut dropped: Vec<([u8; 32], Grant)> = self.active.remove(&key).map(|grant| (key, grant)).into_iter().collect();
                self.forget(dropped.drain(..));
                let held = self.by_subject.entry(subject.clone()).or_default();
                while held.len() >= MAX_INTROSPECTED_PER_SUBJECT
                    && let Some((_, soonest)) = held.pop_first()
                {
                    dropped.extend(self.active.remove(&soonest).map(|grant| (soonest, grant)));
                }
                dropped.extend(self.active.insert(key, grant.clone(), until));
                self.forget(dropped.into_iter());
                self.by_subject.entry(subject).or_default().insert((until, key));
            }
            Err(denial) => {
                self.refused.insert(key, denial.clone(), until);
            }
        }
    }

    /// Drops active tokens no longer remembered from their subject's list.
    fn forget(&mut self, dropped: impl Iterator<Item = ([u8; 32], Grant)>) {
        for (key, grant) in dropped {
            if let Some(held) = self.by_subject.get_mut(&grant.subject) {
                held.retain(|(_, held)| *held != key);
                if held.is_empty() {
                    self.by_subject.remove(&grant.subject);
                }
            }
        }
    }
}

/// The address in one hop of `X-Forwarded-For`: an address, or one with a
/// port as some proxies write it (`192.0.2.1:443`, `[2001:db8::1]:443`,
/// `[2001:db8::1]`); `None` for anything else.
fn forwarded_address(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(address) = hop.parse::<IpAddr>() {
        return Some(address);
    }
    if let Ok(address) = hop.parse::<std::net::SocketAddr>() {
        return Some(address.ip());
    }
    hop.strip_prefix('[')?.strip_suffix(']')?.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
}

/// Introspections under way or waiting, per client network and per prefix.
#[derive(Default)]
struct ClientTurns {
    networks: HashMap<IpAddr, usize>,
    prefixes: HashMap<IpAddr, usize>,
}

/// One of a client's introspection turns (of its network and of its
/// prefix), given back when dropped.
struct ClientTurn {
    turns: Arc<std::sync::Mutex<ClientTurns>>,
    network: IpAddr,
    prefix: IpAddr,
}

impl ClientTurn {
    /// A turn for `peer`, unless its network holds `per_network` or its
    /// prefix [`INTROSPECTIONS_PER_PREFIX`]; else why not.
    fn take(turns: &Arc<std::sync::Mutex<ClientTurns>>, peer: IpAddr, per_network: usize) -> Result<ClientTurn, String> {
        let (network, prefix) = (client_network(peer), client_prefix(peer));
        let mut held = turns.lock().expect("never poisoned");
        if held.networks.get(&network).is_some_and(|count| *count >= per_network) {
            return Err(format!("{per_network} introspections from this client are under way or waiting"));
        }
        if held.prefixes.get(&prefix).is_some_and(|count| *count >= INTROSPECTIONS_PER_PREFIX) {
            let bits = if prefix.is_ipv4() { 24 } else { 48 };
            return Err(format!("{INTROSPECTIONS_PER_PREFIX} introspections from this client's /{bits} are under way or waiting"));
        }
        *held.networks.entry(network).or_default() += 1;
        *held.prefixes.entry(prefix).or_default() += 1;
        Ok(ClientTurn { turns: Arc::clone(turns), network, prefix })
    }
}

impl Drop for ClientTurn {
    fn drop(&mut self) {
        let mut held = self.turns.lock().expect("never poisoned");
        let ClientTurns { networks, prefixes } = &mut *held;
        for (counts, key) in [(networks, self.network), (prefixes, self.prefix)] {
            if let Some(count) = counts.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&key);
                }
            }
        }
    }
}

impl ResourceServer {
    pub fn new(settings: AuthorizationSettings) -> Result<ResourceServer, String> {
        settings.check()?;
        let mut http = reqwest::Client::builder().timeout(FETCH_TIMEOUT).redirect(reqwest::redirect::Policy::none());
        for pem in &settings.ca_certificates {
            http =
                http.add_root_certificate(reqwest::Certificate::from_pem(pem).map_err(|error| format!("authorization.ca_file: {error}"))?);
        }
        let http = http.build().map_err(|error| error.to_string())?;
        let keys = Keys { set: JwkSet { keys: Vec::new() }, fetched: None, attempted: None, failure: None };
        Ok(ResourceServer {
            refreshing: tokio::sync::Mutex::new(settings.jwks_uri.clone()),
            refreshing_in_background: Default::default(),
            settings,
            http,
            keys: std::sync::Mutex::new(keys),
            introspected: Default::default(),
            introspecting: Default::default(),
            clean_turns: Arc::new(tokio::sync::Semaphore::new(CLEAN_INTROSPECTIONS_IN_FLIGHT)),
            suspect_turns: Arc::new(tokio::sync::Semaphore::new(SUSPECT_INTROSPECTIONS_IN_FLIGHT)),
            vouched_turns: Arc::new(tokio::sync::Semaphore::new(VOUCHED_INTROSPECTIONS_IN_FLIGHT)),
            vouched: std::sync::Mutex::new(ExpiringMap::new(MAX_SUSPECT_NETWORKS)),
            client_turns: Default::default(),
            key_waits: Default::default(),
            key_wait_places: Arc::new(tokio::sync::Semaphore::new(MAX_KEY_WAITS)),
            suspects: std::sync::Mutex::new(ExpiringMap::new(MAX_SUSPECT_NETWORKS)),
            busy_log: Default::default(),
        })
    }

    pub fn settings(&self) -> &AuthorizationSettings {
        &self.settings
    }

    /// The client a request from `peer` is from: `peer` itself, unless it is
    /// a trusted proxy; then the rightmost address of `X-Forwarded-For`
    /// (`forwarded_for`, the header's values in order) that is not a trusted
    /// proxy (each proxy appends the address it got the request from, so the
    /// addresses left of the first untrusted one are the client's to write).
    /// A value that is not an address ends the walk at the proxy that wrote it.
    pub fn client_address<'a>(&self, forwarded_for: impl Iterator<Item = &'a [u8]>, peer: IpAddr) -> IpAddr {
        // A dual-stack listener sees an IPv4 client as ::ffff:a.b.c.d, which
        // no IPv4 block contains: compare and count addresses canonically.
        let peer = peer.to_canonical();
        let trusted = |address: &IpAddr| self.settings.trusted_proxies.iter().any(|proxy| proxy.contains(address));
        if !trusted(&peer) {
            return peer;
        }
        let hops: Vec<&'a [u8]> = forwarded_for.flat_map(|value| value.split(|byte| *byte == b',')).collect();
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            let Some(address) = std::str::from_utf8(hop).ok().and_then(forwarded_address).map(|address| address.to_canonical()) else {
                break;
            };
            client = address;
            if !trusted(&address) {
                break;
            }
        }
        client
    }

    /// Checks the `Authorization` header of a request from `peer`; a valid
    /// token vouches for `peer`'s network (see [`VOUCHED_INTROSPECTIONS_IN_FLIGHT`]).
    pub async fn authorize(self: &Arc<Self>, header: Option<&[u8]>, peer: IpAddr) -> Result<Grant, Denial> {
        let checked = self.check_token(header, peer).await;
        if checked.is_ok() {
            self.vouched.lock().expect("never poisoned").insert(client_network(peer), (), Instant::now() + SUSPECT_FOR);
        }
        checked
    }

    async fn check_token(self: &Arc<Self>, header: Option<&[u8]>, peer: IpAddr) -> Result<Grant, Denial> {
        let token = bearer_token(header.ok_or(Denial::NoToken)?)?;
        let invalid = |why: String| Denial::InvalidToken(why);
        if token.split('.').count() != 3 {
            return match &self.settings.introspection {
                Some(_) => self.introspect(token, peer).await,
                None => Err(invalid("it is not a JWT, and no introspection endpoint is configured for opaque tokens".to_string())),
            };
        }
        let algorithm = token_algorithm(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|error| invalid(format!("its header cannot be read: {error}")))?;
        // RFC 9068: an access token says so, which an ID token for the same
        // audience does not.
        let typed =
            header.typ.as_deref().is_some_and(|typ| typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("application/at+jwt"));
        if !typed && !self.settings.accept_untyped_jwt {
            return Err(invalid(format!(
                "its type is {:?}, not at+jwt (an access token, RFC 9068; authorization.accept_untyped_jwt accepts others)",
                header.typ.as_deref().map(cut).unwrap_or("none")
            )));
        }
        let key = self.key_for(header.kid.as_deref(), peer).await?;
        check_key_fits(&key, algorithm)?;
        let decoding_key = DecodingKey::from_jwk(&key).map_err(|error| invalid(format!("the issuer's key cannot be used: {error}")))?;
        let mut validation = Validation::new(algorithm);
        validation.algorithms = vec![algorithm];
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[self.settings.resource.as_str()]);
        validation.leeway = self.settings.leeway.as_secs();
        validation.validate_nbf = true;
        validation.required_spec_claims = ["exp", "iss", "aud"].into_iter().map(String::from).collect();
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &decoding_key, &validation)
            .map_err(|error| invalid(self.explain(&error)))?
            .claims;
        self.grant(&claims)
    }
}

/// What a client said, cut to 256 bytes for a message or a log line.
fn cut(text: &str) -> &str {
    let mut end = text.len().min(256);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::introspection::could_be_opaque_token;
    use super::jwt::scopes;
    use super::*;

    fn settings() -> AuthorizationSettings {
        AuthorizationSettings {
            resource: url::Url::parse("https://prompts.example/mcp").unwrap(),
            issuer: "https://idp.example".to_string(),
            jwks_uri: None,
            scope: "prompts".to_string(),
            leeway: DEFAULT_LEEWAY,
            introspections_per_client: DEFAULT_INTROSPECTIONS_PER_CLIENT,
            trusted_proxies: Vec::new(),
            keys_min_refresh: DEFAULT_KEYS_MIN_REFRESH,
            keys_max_age: DEFAULT_KEYS_MAX_AGE,
            tenant_claim: None,
            ca_certificates: Vec::new(),
            introspection: None,
            accept_untyped_jwt: false,
        }
    }

    #[test]
    fn a_subject_that_is_not_a_string_is_refused_not_read_as_no_subject() {
        // Issue "Hardening, round 3", item 6: `sub: 42` and `sub: 43` were
        // one user, with one session binding.
        let server = ResourceServer::new(settings()).unwrap();
        let claims = |sub: Value| serde_json::json!({ "scope": "prompts", "sub": sub }).as_object().unwrap().clone();
        for sub in [serde_json::json!(42), serde_json::json!(["alice"]), Value::Null] {
            assert_eq!(
                server.grant(&claims(sub.clone())).err().map(|denial| denial.to_string()),
                Some(Denial::InvalidToken("its sub claim is not a string".to_string()).to_string()),
                "{sub}"
            );
        }
        assert_eq!(server.grant(&claims("42".into())).unwrap().subject.as_deref(), Some("42"));
        let without = serde_json::json!({ "scope": "prompts" }).as_object().unwrap().clone();
        assert_eq!(server.grant(&without).unwrap().subject, None);
    }

    #[test]
    fn the_metadata_names_the_resource_its_issuer_and_scope_at_the_rfc_9728_path() {
        let server = ResourceServer::new(settings()).unwrap();
        assert_eq!(server.metadata_paths(), ["/.well-known/oauth-protected-resource/mcp".to_string(), METADATA_PATH.to_string()]);
        assert_eq!(server.metadata()["resource"], "https://prompts.example/mcp");
        assert_eq!(server.metadata()["authorization_servers"], serde_json::json!(["https://idp.example"]));
        assert_eq!(
            server.challenge(&Denial::InsufficientScope),
            "Bearer error=\"insufficient_scope\", scope=\"prompts\", resource_metadata=\"https://prompts.example/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[test]
    fn keys_come_over_https_or_from_loopback_only() {
        let mut plain = settings();
        plain.issuer = "http://idp.example".to_string();
        assert_eq!(
            plain.check().unwrap_err(),
            "authorization.issuer must be an https:// URL (plain http only on loopback): http://idp.example/"
        );
        plain.issuer = "http://127.0.0.1:4000".to_string();
        assert_eq!(plain.check(), Ok(()));
    }

    #[test]
    fn none_and_hmac_are_refused_by_name() {
        use base64::Engine as _;
        let token = |alg: &str| {
            let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{{\"alg\":\"{alg}\",\"typ\":\"JWT\"}}"));
            format!("{header}.e30.")
        };
        assert_eq!(
            token_algorithm(&token("none")),
            Err(Denial::InvalidToken("its algorithm \"none\" is not accepted (only asymmetric signatures are)".into()))
        );
        assert_eq!(
            token_algorithm(&token("HS256")),
            Err(Denial::InvalidToken("its algorithm \"HS256\" is not accepted (only asymmetric signatures are)".into()))
        );
        assert_eq!(token_algorithm(&token("ES256")), Ok(Algorithm::ES256));
    }

    #[test]
    fn crit_is_refused_and_a_refused_algorithm_is_cut() {
        use base64::Engine as _;
        let encode = |header: &str| format!("{}.e30.", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header));
        assert_eq!(
            token_algorithm(&encode(r#"{"alg":"ES256","crit":["exp"],"exp":1}"#)),
            Err(Denial::InvalidToken(
                "its header names critical extensions (crit), which this server does not understand (RFC 7515 §4.1.11)".into()
            ))
        );
        let long = format!(r#"{{"alg":"{}\u001b"}}"#, "A".repeat(1000));
        assert_eq!(
            token_algorithm(&encode(&long)),
            Err(Denial::InvalidToken(format!("its algorithm {:?} is not accepted (only asymmetric signatures are)", "A".repeat(256))))
        );
    }

    #[test]
    fn only_what_could_be_an_opaque_token_is_introspected_and_peers_are_counted_by_network() {
        assert!(could_be_opaque_token("abc-DEF_123.~+/=="));
        assert!(!could_be_opaque_token("a b"));
        assert!(!could_be_opaque_token("abc=def"));
        assert!(!could_be_opaque_token("===="));
        assert!(!could_be_opaque_token(&"a".repeat(MAX_OPAQUE_TOKEN_BYTES + 1)));
        assert!(could_be_opaque_token(&"a".repeat(MAX_OPAQUE_TOKEN_BYTES)));
        let turns = Arc::new(std::sync::Mutex::new(ClientTurns::default()));
        let network: IpAddr = "10.0.0.1".parse().unwrap();
        let first = ClientTurn::take(&turns, network, 2).unwrap();
        let second = ClientTurn::take(&turns, network, 2).unwrap();
        assert_eq!(ClientTurn::take(&turns, network, 2).err().unwrap(), "2 introspections from this client are under way or waiting");
        // Its neighbours in the /24 take the prefix's other 6 turns, no more.
        let neighbours: Vec<ClientTurn> = (2..8).map(|host| ClientTurn::take(&turns, IpAddr::from([10, 0, 0, host]), 2).unwrap()).collect();
        assert_eq!(
            ClientTurn::take(&turns, "10.0.0.9".parse().unwrap(), 2).err().unwrap(),
            "8 introspections from this client's /24 are under way or waiting"
        );
        assert!(ClientTurn::take(&turns, "10.0.1.9".parse().unwrap(), 2).is_ok());
        drop((first, second, neighbours));
        let held = turns.lock().unwrap();
        assert!(held.networks.is_empty() && held.prefixes.is_empty());
    }

    #[test]
    fn a_subject_minting_tokens_pushes_out_only_its_own_and_a_full_cache_its_soonest_expiring() {
        let mut introspected = Introspected::default();
        let now = Instant::now();
        let grant = |subject: &str| Grant { subject: Some(subject.into()), tenants: vec![], expires: None };
        let key = |index: usize| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(index as u64).to_le_bytes());
            key
        };
        introspected.remember(key(0), &Ok(grant("alice")), now + Duration::from_secs(30));
        for index in 1..=1000 {
            introspected.remember(key(index), &Ok(grant("mallory")), now + Duration::from_secs(60 + index as u64));
        }
        assert_eq!(introspected.active.len(), 1 + MAX_INTROSPECTED_PER_SUBJECT);
        assert_eq!(introspected.get(&key(0)), Some(Ok(grant("alice"))));
        assert_eq!(introspected.get(&key(1000)), Some(Ok(grant("mallory"))));
        assert_eq!(introspected.get(&key(1000 - MAX_INTROSPECTED_PER_SUBJECT)), None);
        // Full: the token expiring soonest goes.
        let mut full = ExpiringMap::new(3);
        for (index, secs) in [(1, 50), (2, 10), (3, 30)] {
            assert!(full.insert(index, (), now + Duration::from_secs(secs)).is_empty());
        }
        assert_eq!(full.insert(4, (), now + Duration::from_secs(40)), vec![(2, ())]);
        assert_eq!(full.len(), 3);
    }

    #[test]
    fn refusals_remembered_never_push_out_active_tokens() {
        let mut introspected = Introspected::default();
        let later = Instant::now() + Duration::from_secs(60);
        let grant = Grant { subject: Some("alice".into()), tenants: vec!["acme".into()], expires: None };
        for index in 0..MAX_INTROSPECTION_REFUSALS + 10 {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(index as u64).to_le_bytes());
            introspected.remember(key, &Err(Denial::InvalidToken("no".into())), later);
        }
        introspected.remember([9; 32], &Ok(grant.clone()), later);
        assert_eq!(introspected.refused.len(), MAX_INTROSPECTION_REFUSALS);
        assert_eq!(introspected.get(&[9; 32]), Some(Ok(grant)));
    }

    #[test]
    fn behind_trusted_proxies_the_client_is_the_rightmost_untrusted_forwarded_address() {
        let mut proxied = settings();
        proxied.trusted_proxies = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let server = ResourceServer::new(proxied).unwrap();
        let client =
            |headers: &[&str], peer: &str| server.client_address(headers.iter().map(|value| value.as_bytes()), peer.parse().unwrap());
        let address = |text: &str| text.parse::<IpAddr>().unwrap();
        // Left of the first untrusted hop is the client's to write.
        assert_eq!(client(&["6.6.6.6, 192.0.2.1, 10.1.1.1"], "10.0.0.1"), address("192.0.2.1"));
        assert_eq!(client(&["6.6.6.6", "192.0.2.1"], "::1"), address("192.0.2.1"));
        // Not from a trusted proxy: the header is not read.
        assert_eq!(client(&["192.0.2.1"], "192.0.2.9"), address("192.0.2.9"));
        // No header, or garbage: the proxy that wrote it.
        assert_eq!(client(&[], "10.0.0.1"), address("10.0.0.1"));
        assert_eq!(client(&["192.0.2.1, junk, 10.2.2.2"], "10.0.0.1"), address("10.2.2.2"));
        // Every hop trusted: the leftmost.
        assert_eq!(client(&["10.3.3.3, 10.2.2.2"], "10.0.0.1"), address("10.3.3.3"));
        // A proxy that writes the client's port too (issue "Hardening,
        // round 3", item 6): the address is read, not the proxy taken.
        assert_eq!(client(&["192.0.2.1:51234"], "10.0.0.1"), address("192.0.2.1"));
        assert_eq!(client(&["[2001:db8::7]:443, 10.2.2.2:80"], "10.0.0.1"), address("2001:db8::7"));
        assert_eq!(client(&["[2001:db8::7]"], "10.0.0.1"), address("2001:db8::7"));
        assert_eq!(client(&["192.0.2.1:notaport"], "10.0.0.1"), address("10.0.0.1"));
        // A dual-stack listener's IPv4 peer (and hop) is compared as IPv4.
        assert_eq!(client(&["::ffff:192.0.2.1"], "::ffff:10.0.0.1"), address("192.0.2.1"));
        assert_eq!(client(&["192.0.2.1"], "::ffff:192.0.2.9"), address("192.0.2.9"));
    }

    #[test]
    fn a_key_serves_only_its_own_family_and_algorithm() {
        let ec: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "k",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
        }))
        .unwrap();
        assert_eq!(check_key_fits(&ec, Algorithm::ES256), Ok(()));
        assert_eq!(
            check_key_fits(&ec, Algorithm::RS256),
            Err(Denial::InvalidToken("its algorithm RS256 is not the one its key is for".into()))
        );
        assert_eq!(
            check_key_fits(&ec, Algorithm::ES384),
            Err(Denial::InvalidToken("its algorithm ES384 is not the one its key is for".into()))
        );
    }

    #[test]
    fn scopes_are_read_from_scope_or_scp_and_tenants_from_a_string_or_an_array() {
        let claims: Map<String, Value> = serde_json::from_value(serde_json::json!({"scope": "openid prompts", "scp": ["extra"]})).unwrap();
        assert_eq!(scopes(&claims), BTreeSet::from(["openid", "prompts", "extra"]));
        assert_eq!(strings(Some(&serde_json::json!("acme"))), vec!["acme"]);
        assert_eq!(strings(Some(&serde_json::json!(["a", 1, "b"]))), vec!["a", "b"]);
        assert_eq!(bearer_token(b"bearer abc"), Ok("abc"));
        assert_eq!(bearer_token(b"Basic abc"), Err(Denial::NoToken));
    }
}
