//! Packs in OCI registries: references, pulling a pack and its cosign
//! signatures with a bound on every byte, and publishing a pack.
//!
//! A pack is a CNCF wasm artifact (the layout `wkg` and `oras` push): an OCI
//! image manifest whose config has the media type
//! [`WASM_CONFIG_MEDIA_TYPE`] and whose one layer, [`WASM_LAYER_MEDIA_TYPE`],
//! is the component. Its cosign signatures live beside it, in the manifest
//! tagged `sha256-<digest>.sig` (cosign's tag scheme).
//!
//! Talking to registries is the host's own, through reqwest: oci-client reads
//! every answer whole, however large the registry makes it, and signs in to
//! whatever token service a registry names, with the credentials. So
//! signing in, resolving a tag, and fetching manifests and blobs each read at
//! most a bound, refused as soon as it passes it, and every manifest and blob
//! is checked against its digest before use; pushing (`publish`, `sign`)
//! signs in the same way. One guard decides where credentials go
//! (`RegistryClient::sign_in`): only over HTTPS or to this machine, to the
//! registry's own host or to a token service over HTTPS; and a token service
//! on a link-local, unspecified or metadata address, or on plain HTTP off
//! this machine, is refused outright. Every operation has a deadline, and a
//! registry that stops sending is given up on. oci-client gives the
//! reference and manifest types.

use std::fmt;

use oci_client::Reference;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use prompt_host_addresses::AddressClass;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The config media type of a CNCF wasm artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of its one layer, the component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The annotation on a cosign signature layer that holds the signature.
pub const COSIGN_SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type of a cosign signature layer: its blob is the signed payload.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// The most bytes a manifest may have (a pack's or a signature's). A pack's
/// manifest names two blobs and is under a kilobyte.
pub const MAX_MANIFEST_BYTES: usize = 64 << 10;
/// The most bytes a signed payload may have (cosign's is about 250).
pub const MAX_SIGNATURE_PAYLOAD_BYTES: usize = 16 << 10;
/// The most layers of a signature manifest looked at (each a possible
/// signature): junk layers hide no valid signature among the first this many.
pub const MAX_SIGNATURE_LAYERS: usize = 128;
/// The most signatures read for one pack, skipping what is not a signature:
/// every one among the first [`MAX_SIGNATURE_LAYERS`] layers, so that
/// well-formed signatures by strangers hide no valid one behind them (each
/// payload is at most [`MAX_SIGNATURE_PAYLOAD_BYTES`]: 2 MiB in all).
pub const MAX_SIGNATURES: usize = MAX_SIGNATURE_LAYERS;
/// The default bound on a pack's component, pulled or in the plugin
/// directory, in MiB (`[registry] max_pack_mib`).
pub const DEFAULT_MAX_PACK_MIB: u64 = 128;
/// The most bytes of a token service's answer when signing in (a token is a
/// few kilobytes).
pub const MAX_TOKEN_ANSWER_BYTES: usize = 64 << 10;
/// The default deadline of one registry operation, in seconds (`[registry]
/// timeout_secs`): resolving a tag, or pulling a pack with its signatures.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// How long a registry may send nothing before it is given up on.
pub const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A pack's place in a registry, as the commands take it:
/// `oci://REGISTRY/REPOSITORY:TAG` or `oci://REGISTRY/REPOSITORY@sha256:HEX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackReference(Reference);

impl PackReference {
    /// Reads `oci://REGISTRY/REPOSITORY:TAG` or
    /// `oci://REGISTRY/REPOSITORY@sha256:HEX`; refuses a reference without
    /// the `oci://` scheme, without a registry host, or with a digest other
    /// than sha256.
    pub fn parse(text: &str) -> Result<PackReference, DistributionError> {
        let invalid = |why: &str| DistributionError::Reference { reference: text.to_string(), why: why.to_string() };
        let rest =
            text.strip_prefix("oci://").ok_or_else(|| invalid("it must start with oci://, as in oci://registry.example/team/pack:1.0"))?;
        // `acme:1` would be Docker Hub's `docker.io/library/acme`: a
        // registry is always named, then a repository after a `/`.
        if !rest.split_once('/').is_some_and(|(host, _)| host.contains(['.', ':']) || host == "localhost") {
            return Err(invalid("it must name the registry (a host, with a port or a dot), then the repository"));
        }
        let reference: Reference = rest.parse().map_err(|error: oci_client::ParseError| invalid(&error.to_string()))?;
        if let Some(digest) = reference.digest()
            && !is_sha256_digest(digest)
        {
            return Err(invalid("its digest must be sha256: and 64 hex digits"));
        }
        Ok(PackReference(reference))
    }

    /// The registry's host (and port), as written.
    pub fn registry(&self) -> &str {
        self.0.registry()
    }

    /// The repository inside the registry: `team/pack`.
    pub fn repository(&self) -> &str {
        self.0.repository()
    }

    /// The tag the reference names, if it names one.
    pub fn tag(&self) -> Option<&str> {
        self.0.tag()
    }

    /// The digest the reference names, if it names one.
    pub fn digest(&self) -> Option<&str> {
        self.0.digest()
    }

    /// The same repository at `digest`.
    pub fn at_digest(&self, digest: &str) -> PackReference {
        PackReference(Reference::with_digest(self.registry().to_string(), self.repository().to_string(), digest.to_string()))
    }

    fn at_tag(&self, tag: &str) -> Reference {
        Reference::with_tag(self.registry().to_string(), self.repository().to_string(), tag.to_string())
    }
}

impl fmt::Display for PackReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry(), self.repository())?;
        if let Some(tag) = self.tag() {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = self.digest() {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// How to reach registries: which speak plain HTTP, which CAs to trust
/// besides the system's, and the bound on a pack's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Registries (`host:port`) reached over plain HTTP rather than HTTPS.
    pub plain_http: Vec<String>,
    /// PEM certificates of CAs trusted for every registry.
    pub ca_certificates: Vec<Vec<u8>>,
    /// The most bytes a pack's component may have.
    pub max_pack_bytes: u64,
    /// The deadline of one operation (resolving, pulling, publishing).
    pub timeout: std::time::Duration,
    /// Which repository a pack pulled from a mirror is signed as.
    pub mirrors: Mirrors,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        RegistrySettings {
            plain_http: Vec::new(),
            ca_certificates: Vec::new(),
            max_pack_bytes: DEFAULT_MAX_PACK_MIB << 20,
            timeout: std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            mirrors: Mirrors::default(),
        }
    }
}

/// Mirrors of repositories (`[registry] mirrors`): each maps a prefix of
/// where packs are pulled from (`HOST[:PORT][/PATH]`) to the prefix of the
/// repository their publisher signed (cosign's `docker-reference`). A
/// signature binds a repository: a pack pulled from a mirror must be signed
/// for the repository the mirror copies, and for no other.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors(Vec<(String, String)>);

impl Mirrors {
    /// The mirrors `pulled from = signed as`, checked: both a registry host
    /// and an optional path, without a scheme, tag or trailing `/`.
    pub fn new(mirrors: impl IntoIterator<Item = (String, String)>) -> Result<Mirrors, String> {
        let mut checked = Vec::new();
        for (mirror, original) in mirrors {
            for prefix in [&mirror, &original] {
                let host = prefix.split('/').next().unwrap_or_default();
                if host.is_empty() || prefix.contains("://") || prefix.ends_with('/') || prefix.contains(['@', ' ']) {
                    return Err(format!(
                        "registry.mirrors: {prefix:?} is not a registry and repository prefix, as in \"mirror.local:5000/acme\""
                    ));
                }
            }
            checked.push((mirror, original));
        }
        // The longest prefix wins: a mirror of one repository within a mirrored registry.
        checked.sort_by_key(|(mirror, _)| std::cmp::Reverse(mirror.len()));
        Ok(Mirrors(checked))
    }

    /// The repository a signature of the pack at `reference` must name
    /// (`REGISTRY/REPOSITORY`): where it is pulled from, or what the mirror
    /// it is pulled from copies.
    pub fn signed_repository(&self, reference: &PackReference) -> String {
        let pulled = format!("{}/{}", reference.registry(), reference.repository());
        for (mirror, original) in &self.0 {
            if let Some(rest) = pulled.strip_prefix(mirror.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                return format!("{original}{rest}");
            }
        }
        pulled
    }
}

impl RegistrySettings {
    fn is_plain_http(&self, registry: &str) -> bool {
        self.plain_http.iter().any(|plain| plain == registry)
    }

    /// `--plain-http`: the registry of `reference` is reached over plain
    /// HTTP for this command, as if `[registry] plain_http` listed it.
    pub fn reach_over_plain_http(&mut self, reference: &str) -> Result<(), DistributionError> {
        let registry = PackReference::parse(reference)?.registry().to_string();
        if !self.is_plain_http(&registry) {
            self.plain_http.push(registry);
        }
        Ok(())
    }
}

/// Why `registry` could not be reached (`why`, the error's whole chain),
/// saying so plainly when a TLS handshake met an endpoint that speaks plain
/// HTTP (rustls reads its answer as a record of an invalid content type).
fn unreachable(plain_http: bool, registry: &str, why: String) -> DistributionError {
    if !plain_http && why.contains("InvalidContentType") {
        return DistributionError::SpeaksPlainHttp { registry: registry.to_string() };
    }
    DistributionError::Unreachable { registry: registry.to_string(), why }
}

/// Why talking to a registry failed.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    /// A pack reference could not be read ([`PackReference::parse`]).
    #[error("invalid pack reference {reference:?}: {why}")]
    Reference {
        /// The reference, as given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// The registry or its token service could not be reached, or answered
    /// in a way that cannot be used (a token service's answer without a
    /// token, an upload started without a usable location).
    #[error("cannot reach the registry {registry}: {why}")]
    Unreachable {
        /// The registry, as the reference names it.
        registry: String,
        /// The error and its causes, on one line, or what was wrong.
        why: String,
    },
    /// A registry asked over HTTPS answered in plain HTTP. (Signing in to a
    /// registry on this machine reaches it over plain HTTP instead.)
    #[error(
        "cannot reach the registry {registry} over HTTPS: it answered in plain HTTP. If it is meant to be reached \
         so, pass --plain-http or list it in the config: [registry] plain_http = [\"{registry}\"] (credentials go \
         over plain HTTP only to a registry on this machine)"
    )]
    SpeaksPlainHttp {
        /// The registry, as the reference names it.
        registry: String,
    },
    /// The registry (or its token service) answered 401 or 403.
    #[error(
        "{registry} refused access to {reference}: give credentials in the docker config file \
         ($DOCKER_CONFIG/config.json or ~/.docker/config.json), or in PROMPT_HOST_REGISTRY_USERNAME and \
         PROMPT_HOST_REGISTRY_PASSWORD with PROMPT_HOST_REGISTRY={registry}"
    )]
    Unauthorized {
        /// The registry, as the reference names it.
        registry: String,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
    },
    /// The registry (or its token service) answered 401 or 403, and the
    /// registry is reached over plain HTTP from another machine, so no
    /// credentials were sent to it.
    #[error(
        "{registry} refused access to {reference}, and credentials are never sent to it: it is reached over \
         plain HTTP ([registry] plain_http) and is not on this machine; reach it over HTTPS"
    )]
    UnauthorizedOverPlainHttp {
        /// The registry, as the reference names it.
        registry: String,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
    },
    /// An operation (resolving a tag, pulling, publishing...) ran past the
    /// configured deadline.
    #[error("{what} of {reference} took longer than {seconds} s ([registry] timeout_secs)")]
    TimedOut {
        /// The operation: "resolving the tag", "pulling the pack"...
        what: &'static str,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
        /// The deadline, in seconds.
        seconds: u64,
    },
    /// The registry answered an HTTP status other than success, 401 or 403;
    /// or it has no manifest where one was asked for (404).
    #[error("{what} of {reference}: the registry answered {status}")]
    Status {
        /// What was being done or read ("the manifest", "pushing"...).
        what: &'static str,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
        /// The HTTP status code.
        status: u16,
    },
    /// A manifest, blob or token service's answer is (or says it will be)
    /// larger than its bound, or a pack's layer declares a size larger than
    /// the pack bound.
    #[error("{what} of {reference} is larger than the {limit} bytes allowed")]
    TooLarge {
        /// What was too large ("the manifest", "the pack's component"...).
        what: &'static str,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
        /// The bound, in bytes.
        limit: u64,
    },
    /// A manifest or a blob read does not hash to the digest it was asked
    /// by.
    #[error("{what} of {reference} does not match its digest: expected {expected}, received {actual}")]
    DigestMismatch {
        /// What was read ("the manifest", "the pack's component"...).
        what: &'static str,
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
        /// The digest asked for, `sha256:HEX`.
        expected: String,
        /// The digest of the bytes received, `sha256:HEX`.
        actual: String,
    },
    /// The manifest is not a CNCF wasm artifact with one component layer,
    /// or names a blob by a digest other than sha256.
    #[error("{reference} is not a wasm pack: {why}")]
    NotAPack {
        /// The pack (or signature) reference, as `oci://...`.
        reference: String,
        /// What about the manifest is not a pack's.
        why: String,
    },
    /// A configured CA certificate is not a PEM certificate, or the HTTP
    /// client could not be built.
    #[error("cannot read the CA certificate: {0}")]
    Certificate(String),
    /// The token service the registry's challenge names is not asked: it is
    /// not a URL, is on a refused address or scheme, or redirects.
    #[error("{registry} names the token service {realm:?}, which is refused: {why}")]
    Realm {
        /// The registry, as the reference names it.
        registry: String,
        /// The token service's URL, as the registry named it.
        realm: String,
        /// Why it is refused.
        why: String,
    },
    /// A signature manifest already there that does not parse: signing
    /// would replace it, and lose what it holds.
    #[error("the signature manifest {reference} does not parse ({why}): not replaced, so that no signature on it is lost")]
    UnreadableSignatures {
        /// The signature manifest's reference, as `oci://...`.
        reference: String,
        /// Why it does not parse.
        why: String,
    },
    /// The token service refused access (401 or 403) after the registry's
    /// credentials were withheld from it, as they may not go there.
    #[error(
        "the token service {realm:?} of {registry} refused access, and the credentials for {registry} are never sent \
         to it: they go only over HTTPS, or to the registry's own host on this machine"
    )]
    CredentialsWithheld {
        /// The registry, as the reference names it.
        registry: String,
        /// The token service's URL, as the registry named it.
        realm: String,
    },
}

/// A pack pulled from a registry: its manifest, its component, and the
/// cosign signatures found for its digest (not yet verified).
#[derive(Debug, Clone)]
pub struct PulledPack {
    /// The reference at its manifest digest.
    pub reference: PackReference,
    /// The manifest's digest: what signatures sign.
    pub manifest_digest: String,
    /// The manifest, as the registry sent it.
    pub manifest: Vec<u8>,
    /// The component.
    pub wasm: Vec<u8>,
    /// The cosign signatures found for the manifest's digest, at most
    /// [`MAX_SIGNATURES`], not yet verified.
    pub signatures: Vec<CosignSignature>,
    /// What was found beside it and skipped as not a signature, each with why.
    pub skipped: Vec<String>,
}

/// One cosign signature: the signed payload and the base64 signature of it,
/// and for a keyless signature its certificate, chain and transparency log
/// bundle (cosign's annotations, as they were).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosignSignature {
    /// The simple-signing payload, base64.
    pub payload: String,
    /// The signature of the payload's bytes, base64 (as cosign stores it).
    pub signature: String,
    /// A keyless signature's signing certificate, PEM; `None` for a
    /// signature by a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// The certificate chain cosign stored beside the certificate, PEM, if
    /// not empty. Kept as found; verification chains to the trusted root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// A keyless signature's transparency log bundle, cosign's JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// cosign's annotations for a keyless signature.
const COSIGN_CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
const COSIGN_CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
const COSIGN_BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// Reports a download's progress: bytes so far, and the total expected.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Send + Sync);

/// A client for the registries a host pulls packs from.
pub struct RegistryClient {
    http: reqwest::Client,
    /// For token services: follows no redirect, so a token service is
    /// asked only at the address the guard looked at.
    token_http: reqwest::Client,
    settings: RegistrySettings,
    /// Registries on this machine found to speak plain HTTP when asked over
    /// HTTPS (Docker's convention: such a registry may), for this client's life.
    found_plain_http: std::sync::Mutex<Vec<String>>,
}

impl RegistryClient {
    /// A client under `settings`; fails if a configured CA certificate
    /// cannot be used.
    pub fn new(settings: RegistrySettings) -> Result<RegistryClient, DistributionError> {
        // Registries send blobs from elsewhere (a CDN) by redirect; never to a
        // link-local or metadata address (reqwest drops the authorization
        // when a redirect leaves the registry's host).
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() >= 10 {
                attempt.error("more than 10 redirects")
            } else if let Some(why) = refused_address(attempt.url()) {
                let to = attempt.url().to_string();
                attempt.error(format!("a redirect to {to}, which is refused: {why}"))
            } else {
                attempt.follow()
            }
        });
        let http = http_client(&settings, redirects, None)?;
        let token_http = http_client(&settings, reqwest::redirect::Policy::none(), None)?;
        Ok(RegistryClient { http, token_http, settings, found_plain_http: Default::default() })
    }

    fn client(
        &self,
        redirects: reqwest::redirect::Policy,
        pinned: Option<(&str, &[std::net::SocketAddr])>,
    ) -> Result<reqwest::Client, DistributionError> {
        http_client(&self.settings, redirects, pinned)
    }

    /// The digest `reference` names now: its own digest, or the SHA-256 of
    /// the manifest its tag resolves to (fetched with its bound, as a digest
    /// header would be the registry's word alone).
    pub async fn resolve(&self, reference: &PackReference) -> Result<String, DistributionError> {
        if let Some(digest) = reference.digest() {
            return Ok(digest.to_string());
        }
        self.within_deadline("resolving the tag", reference, async {
            let token = self.sign_in(&reference.0, Access::Pull).await?;
            // Asked first without the body: a tag that did not move costs the
            // registry a HEAD. Whatever digest it says is checked when the
            // manifest is fetched by that digest to install it; one that says
            // the installed digest keeps the installed pack, as a registry
            // that serves an old tag does (a freeze: docs/security/registries.md).
            if let Some(digest) = self.head_manifest_digest(&reference.0, &token, MANIFEST_ACCEPT).await? {
                return Ok(digest);
            }
            let manifest = self.fetch_manifest(&reference.0, &token, MANIFEST_ACCEPT).await?.ok_or_else(|| DistributionError::Status {
                what: "the manifest",
                reference: reference.to_string(),
                status: 404,
            })?;
            Ok(sha256_digest(&manifest))
        })
        .await
    }

    /// Pulls the pack at `digest` and its signatures. Every byte is bounded
    /// before it is read, and checked against its digest.
    pub async fn pull(&self, reference: &PackReference, digest: &str, progress: Progress<'_>) -> Result<PulledPack, DistributionError> {
        self.within_deadline("pulling the pack", reference, self.pull_at(reference, digest, progress)).await
    }

    async fn pull_at(&self, reference: &PackReference, digest: &str, progress: Progress<'_>) -> Result<PulledPack, DistributionError> {
        let at_digest = reference.at_digest(digest);
        let token = self.sign_in(&at_digest.0, Access::Pull).await?;
        let manifest = self.fetch_manifest(&at_digest.0, &token, MANIFEST_ACCEPT).await?.ok_or_else(|| DistributionError::Status {
            what: "the manifest",
            reference: at_digest.to_string(),
            status: 404,
        })?;
        check_digest("the manifest", &at_digest, digest, &manifest)?;
        let layer = pack_layer(&at_digest, &manifest)?;
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > self.settings.max_pack_bytes {
            return Err(DistributionError::TooLarge {
                what: "the pack's component",
                reference: at_digest.to_string(),
                limit: self.settings.max_pack_bytes,
            });
        }
        let wasm = self.fetch_blob(&at_digest.0, &token, &layer.digest, size, "the pack's component", progress).await?;
        let (signatures, skipped) = self.signatures(reference, digest, &token).await;
        Ok(PulledPack { reference: at_digest, manifest_digest: digest.to_string(), manifest, wasm, signatures, skipped })
    }

    /// The cosign signatures stored for `digest`, under cosign's tag
    /// `sha256-<hex>.sig` in the same repository; none if there is no such
    /// tag. Whatever there is not a signature (a manifest too large or not an
    /// image manifest, a layer of another type, without a signature, too
    /// large, or whose payload is missing or not its digest) is skipped, and
    /// said in the second list: a registry cannot make a pull fail, nor hide
    /// a valid signature among the first [`MAX_SIGNATURE_LAYERS`] layers.
    async fn signatures(&self, reference: &PackReference, digest: &str, token: &Token) -> (Vec<CosignSignature>, Vec<String>) {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let signature_ref = reference.at_tag(&tag);
        let shown = PackReference(signature_ref.clone());
        let mut skipped = Vec::new();
        let manifest = match self.fetch_manifest(&signature_ref, token, MANIFEST_ACCEPT).await {
            Ok(Some(manifest)) => manifest,
            Ok(None) => return (Vec::new(), skipped),
            Err(error) => {
                skipped.push(format!("the signature manifest {shown}: {error}"));
                return (Vec::new(), skipped);
            }
        };
        let manifest: OciImageManifest = match serde_json::from_slice(&manifest) {
            Ok(manifest) => manifest,
            Err(error) => {
                skipped.push(format!("the signature manifest {shown}: it is not an OCI image manifest: {error}"));
                return (Vec::new(), skipped);
            }
        };
        if manifest.layers.len() > MAX_SIGNATURE_LAYERS {
            skipped.push(format!(
                "layers {} to {} of the signature manifest {shown}: at most {MAX_SIGNATURE_LAYERS} are looked at",
                MAX_SIGNATURE_LAYERS + 1,
                manifest.layers.len()
            ));
        }
        let mut signatures = Vec::new();
        for (index, layer) in manifest.layers.iter().enumerate().take(MAX_SIGNATURE_LAYERS) {
            if signatures.len() == MAX_SIGNATURES {
                skipped.push(format!("layers {} on of the signature manifest {shown}: {MAX_SIGNATURES} signatures were read", index + 1));
                break;
            }
            match self.signature_layer(&signature_ref, token, layer).await {
                Ok(signature) => signatures.push(signature),
                Err(why) => skipped.push(format!("layer {} of the signature manifest {shown}: {why}", index + 1)),
            }
        }
        (signatures, skipped)
    }

    /// The signature one layer of a signature manifest holds, or why it holds none.
    async fn signature_layer(&self, signature_ref: &Reference, token: &Token, layer: &OciDescriptor) -> Result<CosignSignature, String> {
        if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
            return Err(format!("its media type is {:?}, not {SIMPLE_SIGNING_MEDIA_TYPE}", layer.media_type));
        }
        let no_signature = || format!("it has no {COSIGN_SIGNATURE_ANNOTATION} annotation");
        let annotations = layer.annotations.as_ref().ok_or_else(no_signature)?;
        let signature = annotations.get(COSIGN_SIGNATURE_ANNOTATION).ok_or_else(no_signature)?;
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > MAX_SIGNATURE_PAYLOAD_BYTES as u64 || signature.len() > MAX_SIGNATURE_PAYLOAD_BYTES {
            return Err(format!("it is larger than the {MAX_SIGNATURE_PAYLOAD_BYTES} bytes a signature may have"));
        }
        let payload = self
            .fetch_blob(signature_ref, token, &layer.digest, size, "a signed payload", &|_, _| {})
            .await
            .map_err(|error| error.to_string())?;
        use base64::Engine as _;
        Ok(CosignSignature {
            payload: base64::engine::general_purpose::STANDARD.encode(payload),
            signature: signature.clone(),
            certificate: annotations.get(COSIGN_CERTIFICATE_ANNOTATION).cloned(),
            chain: annotations.get(COSIGN_CHAIN_ANNOTATION).cloned().filter(|chain| !chain.trim().is_empty()),
            bundle: annotations.get(COSIGN_BUNDLE_ANNOTATION).cloned(),
        })
    }

    /// Pushes `wasm` as a CNCF wasm artifact to `reference` (its tag), and
    /// returns the manifest's digest.
    pub async fn publish(&self, wasm: &[u8], reference: &PackReference) -> Result<String, DistributionError> {
        self.within_deadline("publishing", reference, self.push_pack(wasm, reference)).await
    }

    async fn push_pack(&self, wasm: &[u8], reference: &PackReference) -> Result<String, DistributionError> {
        let target = &reference.0;
        let token = self.sign_in(target, Access::Push).await?;
        let layer_digest = sha256_digest(wasm);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
        }))
        .expect("a JSON value serializes");
        let config_digest = sha256_digest(&config);
        self.push_blob(target, &token, &config, &config_digest).await?;
        self.push_blob(target, &token, wasm, &layer_digest).await?;
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST_MEDIA_TYPE.to_string()),
            config: OciDescriptor {
                media_type: WASM_CONFIG_MEDIA_TYPE.to_string(),
                digest: config_digest,
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers: vec![OciDescriptor {
                media_type: WASM_LAYER_MEDIA_TYPE.to_string(),
                digest: layer_digest,
                size: wasm.len() as i64,
                ..OciDescriptor::default()
            }],
            artifact_type: Some(WASM_CONFIG_MEDIA_TYPE.to_string()),
            ..OciImageManifest::default()
        };
        let manifest = serde_json::to_vec(&manifest).expect("a manifest serializes");
        let digest = sha256_digest(&manifest);
        self.push_manifest(target, &token, manifest).await?;
        Ok(digest)
    }

    /// Stores `signature` of `payload` (cosign's simple signing, naming
    /// `digest`) where cosign does: as a layer of the manifest tagged
    /// `sha256-<hex>.sig`, beside the signatures already there (an author's
    /// and a release team's, or an old key's and a new one's, side by side).
    /// A signature of the same payload for which `replaces` says yes (one
    /// the same key made before) is replaced, not repeated.
    pub async fn push_signature(
        &self,
        reference: &PackReference,
        digest: &str,
        payload: &[u8],
        signature: &str,
        replaces: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(), DistributionError> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let target = reference.at_tag(&tag);
        let shown = PackReference(target.clone());
        self.within_deadline("signing", &shown, self.push_signature_at(&target, payload, signature, replaces)).await
    }

    async fn push_signature_at(
        &self,
        target: &Reference,
        payload: &[u8],
        signature: &str,
        replaces: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(), DistributionError> {
        let token = self.sign_in(target, Access::Push).await?;
        let mut layers = match self.fetch_manifest(target, &token, MANIFEST_ACCEPT).await? {
            // Signatures there that cannot be read are not thrown away.
            Some(existing) => serde_json::from_slice::<OciImageManifest>(&existing).map(|manifest| manifest.layers).map_err(|error| {
                DistributionError::UnreadableSignatures { reference: PackReference(target.clone()).to_string(), why: error.to_string() }
            })?,
            None => Vec::new(),
        };
        let payload_digest = sha256_digest(payload);
        let replaced = |layer: &OciDescriptor| {
            let existing = layer.annotations.as_ref().and_then(|annotations| annotations.get(COSIGN_SIGNATURE_ANNOTATION));
            layer.digest == payload_digest && existing.is_some_and(|existing| existing == signature || replaces(existing))
        };
        layers.retain(|layer| !replaced(layer));
        // The newest are kept: the oldest go first when the manifest is full.
        let excess = (layers.len() + 1).saturating_sub(MAX_SIGNATURES);
        layers.drain(..excess);
        self.push_blob(target, &token, payload, &payload_digest).await?;
        layers.push(OciDescriptor {
            media_type: SIMPLE_SIGNING_MEDIA_TYPE.to_string(),
            digest: payload_digest,
            size: payload.len() as i64,
            annotations: Some([(COSIGN_SIGNATURE_ANNOTATION.to_string(), signature.to_string())].into()),
            ..OciDescriptor::default()
        });
        // The config go-containerregistry writes for cosign's signature image.
        let layer_digests: Vec<&str> = layers.iter().map(|layer| layer.digest.as_str()).collect();
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": layer_digests.iter().map(|_| serde_json::json!({"created": "0001-01-01T00:00:00Z"})).collect::<Vec<_>>(),
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": layer_digests},
            "config": {},
        }))
        .expect("a JSON value serializes");
        let config_digest = sha256_digest(&config);
        self.push_blob(target, &token, &config, &config_digest).await?;
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST_MEDIA_TYPE.to_string()),
            config: OciDescriptor {
                media_type: "application/vnd.oci.image.config.v1+json".to_string(),
                digest: config_digest,
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers,
            ..OciImageManifest::default()
        };
        let manifest = serde_json::to_vec(&manifest).expect("a manifest serializes");
        self.push_manifest(target, &token, manifest).await
    }

    /// Uploads `bytes` as the blob `digest` to `target`'s repository, in one
    /// request (unless the registry has it already). The token goes only to
    /// the registry: an upload location elsewhere gets none.
    async fn push_blob(&self, target: &Reference, token: &Token, bytes: &[u8], digest: &str) -> Result<(), DistributionError> {
        let shown = PackReference(target.clone());
        let base = self.registry_url(target);
        let exists = token.apply(self.http.head(format!("{base}/v2/{}/blobs/{digest}", target.repository()))).send().await;
        if exists.is_ok_and(|response| response.status().is_success()) {
            return Ok(());
        }
        let started = token.apply(self.http.post(format!("{base}/v2/{}/blobs/uploads/", target.repository()))).send().await;
        let started = self.pushed(started, &shown)?;
        let location = started.headers().get(reqwest::header::LOCATION).and_then(|value| value.to_str().ok()).ok_or_else(|| {
            DistributionError::Unreachable { registry: shown.registry().to_string(), why: "it started an upload without a Location".into() }
        })?;
        let registry = url::Url::parse(&format!("{base}/")).expect("a registry URL parses");
        let mut upload = registry.join(location).map_err(|_| DistributionError::Unreachable {
            registry: shown.registry().to_string(),
            why: format!("it started an upload at {location:?}, which is not a URL"),
        })?;
        upload.query_pairs_mut().append_pair("digest", digest);
        let same_origin = upload.origin() == registry.origin();
        let request = self.http.put(upload).header(reqwest::header::CONTENT_TYPE, "application/octet-stream").body(bytes.to_vec());
        let request = if same_origin { token.apply(request) } else { request };
        self.pushed(request.send().await, &shown).map(drop)
    }

    /// Puts `manifest` (an OCI image manifest) at `target`'s tag.
    async fn push_manifest(&self, target: &Reference, token: &Token, manifest: Vec<u8>) -> Result<(), DistributionError> {
        let shown = PackReference(target.clone());
        let name = target.digest().or(target.tag()).unwrap_or("latest");
        let url = format!("{}/v2/{}/manifests/{name}", self.registry_url(target), target.repository());
        let request = self.http.put(url).header(reqwest::header::CONTENT_TYPE, OCI_MANIFEST_MEDIA_TYPE).body(manifest);
        self.pushed(token.apply(request).send().await, &shown).map(drop)
    }

    /// The answer to a push request, if it succeeded.
    fn pushed(&self, sent: reqwest::Result<reqwest::Response>, reference: &PackReference) -> Result<reqwest::Response, DistributionError> {
        let response = sent.map_err(|error| self.unreachable(reference, &error))?;
        match response.status() {
            status if status.is_success() => Ok(response),
            reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN => Err(self.unauthorized(reference)),
            status => Err(DistributionError::Status { what: "pushing", reference: reference.to_string(), status: status.as_u16() }),
        }
    }

    /// Runs `operation` within the configured deadline.
    async fn within_deadline<T>(
        &self,
        what: &'static str,
        reference: &PackReference,
        operation: impl Future<Output = Result<T, DistributionError>>,
    ) -> Result<T, DistributionError> {
        tokio::time::timeout(self.settings.timeout, operation).await.unwrap_or_else(|_| {
            Err(DistributionError::TimedOut { what, reference: reference.to_string(), seconds: self.settings.timeout.as_secs() })
        })
    }

    /// Signs in to `reference`'s repository, to read it or to push to it,
    /// as the distribution specification has it: the registry's `/v2/`
    /// answers with a challenge; for `Basic`, the credentials are the
    /// authorization; for `Bearer`, its token service (the realm) is asked
    /// for a token, with the credentials if any. The answer is read up to
    /// [`MAX_TOKEN_ANSWER_BYTES`]. Every path to a registry signs in here:
    /// the one guard on where credentials go ([`credentials_may_go_to`]) and
    /// which token services are asked ([`refused_realm`]).
    async fn sign_in(&self, reference: &Reference, access: Access) -> Result<Token, DistributionError> {
        let shown = PackReference(reference.clone());
        let credentials = self.credentials(reference.registry());
        let url = format!("{}/v2/", self.registry_url(reference));
        let response = match self.http.get(url).send().await {
            Ok(response) => response,
            Err(error) => {
                let refused = self.unreachable(&shown, &error);
                let Some(registry) = plain_http_fallback(&refused) else { return Err(refused) };
                tracing::warn!(
                    "{registry} answered HTTPS in plain HTTP; it is on this machine, so it is reached over plain HTTP \
                     (as Docker does): list it in [registry] plain_http, or pass --plain-http, to say so"
                );
                self.found_plain_http
                    .lock()
                    .expect("never poisoned: nothing panics holding it")
                    .push(reference.resolve_registry().to_string());
                let url = format!("{}/v2/", self.registry_url(reference));
                self.http.get(url).send().await.map_err(|error| self.unreachable(&shown, &error))?
            }
        };
        let challenge = response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|value| value.to_str().ok()).map(str::to_string);
        drop(response);
        let (basic, identity_token) = match credentials {
            Some(Credentials::Basic(user, password)) => (Some((user, password)), None),
            Some(Credentials::IdentityToken(token)) => (None, Some(token)),
            None => (None, None),
        };
        let Some(challenge) = challenge else { return Ok(Token::None) };
        let Some((realm, service)) = bearer_challenge(&challenge) else {
            return Ok(basic.map_or(Token::None, |(user, password)| Token::Basic(user, password)));
        };
        let refused = |why: String| DistributionError::Realm { registry: shown.registry().to_string(), realm: realm.clone(), why };
        let mut realm_url = url::Url::parse(&realm).map_err(|_| refused("it is not a URL".to_string()))?;
        if let Some(why) = refused_realm(&realm_url) {
            return Err(refused(why));
        }
        realm_url.query_pairs_mut().append_pair("scope", &format!("repository:{}:{}", reference.repository(), access.scope()));
        if let Some(service) = &service {
            realm_url.query_pairs_mut().append_pair("service", service);
        }
        let may_send_credentials = credentials_may_go_to(&realm_url, reference.resolve_registry());
        let withheld = (basic.is_some() || identity_token.is_some()) && !may_send_credentials;
        // No redirect: the guard has looked at this URL, and only at it.
        let token_http = match checked_realm_addresses(&realm_url).await.map_err(refused)? {
            Some((name, addresses)) => self.client(reqwest::redirect::Policy::none(), Some((&name, &addresses)))?,
            None => self.token_http.clone(),
        };
        // The docker config's identity token is a refresh token: exchanged
        // at the token service (the distribution specification's OAuth2
        // token flow, as Docker does), never sent to the registry itself.
        let mut request = match identity_token.filter(|_| may_send_credentials) {
            Some(refresh_token) => {
                let mut form = url::form_urlencoded::Serializer::new(String::new());
                form.append_pair("grant_type", "refresh_token").append_pair("refresh_token", &refresh_token);
                form.append_pair("client_id", "prompt-host");
                for (key, value) in realm_url.query_pairs() {
                    form.append_pair(&key, &value);
                }
                let mut endpoint = realm_url.clone();
                endpoint.set_query(None);
                token_http.post(endpoint).header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(form.finish())
            }
            None => token_http.get(realm_url),
        };
        if let Some((user, password)) = basic.filter(|_| may_send_credentials) {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(|error| self.unreachable(&shown, &error))?;
        if withheld && matches!(response.status(), reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN) {
            return Err(DistributionError::CredentialsWithheld { registry: shown.registry().to_string(), realm });
        }
        if response.status().is_redirection() {
            return Err(refused(format!(
                "it redirects (HTTP {}), and a token service is asked at the address the registry names",
                response.status().as_u16()
            )));
        }
        let answer = self.read_bounded(response, &shown, "the token service's answer", MAX_TOKEN_ANSWER_BYTES as u64, &|_, _| {}).await?;
        #[derive(Deserialize)]
        struct TokenAnswer {
            token: Option<String>,
            access_token: Option<String>,
        }
        serde_json::from_slice::<TokenAnswer>(&answer)
            .ok()
            .and_then(|answer| answer.token.or(answer.access_token))
            .filter(|token| !token.is_empty())
            .map(Token::Bearer)
            .ok_or_else(|| DistributionError::Unreachable {
                registry: shown.registry().to_string(),
                why: "its token service answered without a token".to_string(),
            })
    }

    /// The credentials for `registry`, unless it is reached over plain HTTP
    /// from another machine, where anyone on the way could read them.
    fn credentials(&self, registry: &str) -> Option<Credentials> {
        if self.is_plain_http(registry) && !is_loopback_registry(registry) {
            return None;
        }
        credentials(registry)
    }

    /// A manifest, at most [`MAX_MANIFEST_BYTES`]; `None` if there is none.
    /// Where the manifest `reference` names is: by its digest, else its tag.
    fn manifest_url(&self, reference: &Reference) -> String {
        let name = reference.digest().or(reference.tag()).unwrap_or("latest");
        format!("{}/v2/{}/manifests/{name}", self.registry_url(reference), reference.repository())
    }

    /// The digest the registry gives for a manifest in answer to a HEAD
    /// (`Docker-Content-Digest`), without its body; None when it gives no
    /// sha256 digest that way (not every registry answers HEAD with one), and
    /// the manifest is then fetched and hashed.
    async fn head_manifest_digest(&self, reference: &Reference, token: &Token, accept: &str) -> Result<Option<String>, DistributionError> {
        let url = self.manifest_url(reference);
        let shown = PackReference(reference.clone());
        let request = token.apply(self.http.head(url).header("Accept", accept));
        let response = request.send().await.map_err(|error| self.unreachable(&shown, &error))?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let digest = response.headers().get("Docker-Content-Digest").and_then(|value| value.to_str().ok());
        Ok(digest.filter(|digest| is_sha256_digest(digest)).map(str::to_string))
    }

    async fn fetch_manifest(&self, reference: &Reference, token: &Token, accept: &str) -> Result<Option<Vec<u8>>, DistributionError> {
        let url = self.manifest_url(reference);
        let shown = PackReference(reference.clone());
        let request = token.apply(self.http.get(url).header("Accept", accept));
        let response = request.send().await.map_err(|error| self.unreachable(&shown, &error))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = self.read_bounded(response, &shown, "the manifest", MAX_MANIFEST_BYTES as u64, &|_, _| {}).await?;
        Ok(Some(body))
    }

    /// A blob of `size` bytes, checked against `digest`.
    async fn fetch_blob(
        &self,
        reference: &Reference,
        token: &Token,
        digest: &str,
        size: u64,
        what: &'static str,
        progress: Progress<'_>,
    ) -> Result<Vec<u8>, DistributionError> {
        let shown = PackReference(reference.clone());
        if !is_sha256_digest(digest) {
            return Err(DistributionError::NotAPack {
                reference: shown.to_string(),
                why: format!("{what} has the digest {digest:?}, not a sha256 digest"),
            });
        }
        let url = format!("{}/v2/{}/blobs/{digest}", self.registry_url(reference), reference.repository());
        let response = token.apply(self.http.get(url)).send().await.map_err(|error| self.unreachable(&shown, &error))?;
        let body = self.read_bounded(response, &shown, what, size, progress).await?;
        check_digest(what, &shown, digest, &body)?;
        Ok(body)
    }

    /// `http://REGISTRY` or `https://REGISTRY`.
    fn registry_url(&self, reference: &Reference) -> String {
        let registry = reference.resolve_registry();
        let scheme = if self.is_plain_http(registry) { "http" } else { "https" };
        format!("{scheme}://{registry}")
    }

    /// Reads a response's body, refusing it as soon as it passes `limit`
    /// bytes (or says it will).
    async fn read_bounded(
        &self,
        mut response: reqwest::Response,
        reference: &PackReference,
        what: &'static str,
        limit: u64,
        progress: Progress<'_>,
    ) -> Result<Vec<u8>, DistributionError> {
        match response.status() {
            status if status.is_success() => {}
            reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN => return Err(self.unauthorized(reference)),
            status => return Err(DistributionError::Status { what, reference: reference.to_string(), status: status.as_u16() }),
        }
        let too_large = || DistributionError::TooLarge { what, reference: reference.to_string(), limit };
        if response.content_length().is_some_and(|length| length > limit) {
            return Err(too_large());
        }
        let mut body = Vec::with_capacity(limit.min(1 << 20) as usize);
        while let Some(chunk) = response.chunk().await.map_err(|error| self.unreachable(reference, &error))? {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
            progress(body.len() as u64, limit);
        }
        Ok(body)
    }

    fn unauthorized(&self, reference: &PackReference) -> DistributionError {
        let (registry, shown) = (reference.registry().to_string(), reference.to_string());
        if self.is_plain_http(&registry) && !is_loopback_registry(&registry) {
            return DistributionError::UnauthorizedOverPlainHttp { registry, reference: shown };
        }
        DistributionError::Unauthorized { registry, reference: shown }
    }

    fn unreachable(&self, reference: &PackReference, error: &reqwest::Error) -> DistributionError {
        unreachable(self.is_plain_http(reference.registry()), reference.registry(), error_chain(error))
    }

    /// Whether `registry` is reached over plain HTTP: the config (or
    /// `--plain-http`) says so, or it is on this machine and was found to.
    fn is_plain_http(&self, registry: &str) -> bool {
        self.settings.is_plain_http(registry)
            || self.found_plain_http.lock().expect("never poisoned: nothing panics holding it").iter().any(|found| found == registry)
    }
}

const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// An HTTP client trusting the configured CAs, following `redirects`, and
/// with `pinned`, reaching that name only at those addresses.
fn http_client(
    settings: &RegistrySettings,
    redirects: reqwest::redirect::Policy,
    pinned: Option<(&str, &[std::net::SocketAddr])>,
) -> Result<reqwest::Client, DistributionError> {
    let mut http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(STALL_TIMEOUT)
        .redirect(redirects)
        .dns_resolver(CheckedResolver)
        .proxy(environment_proxy());
    for pem in &settings.ca_certificates {
        let certificate = reqwest::Certificate::from_pem(pem).map_err(|error| DistributionError::Certificate(error.to_string()))?;
        http = http.add_root_certificate(certificate);
    }
    if let Some((name, addresses)) = pinned {
        http = http.resolve_to_addrs(name, addresses);
    }
    http.build().map_err(|error| DistributionError::Certificate(error.to_string()))
}

/// Resolves names as the system does, then drops every address
/// [`refused_ip`] refuses (link-local, unspecified, a cloud metadata
/// service's), before anything connects to it: a registry, or a redirect
/// it sends (each hop of a blob's redirects resolves here), whose name
/// resolves only to such addresses fails, naming them. The addresses
/// returned are the ones connected to, so a name cannot resolve one way for
/// the check and another for the connection.
struct CheckedResolver;

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(async move {
            let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let allowed = checked_addresses(&name, resolved)?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The addresses of `resolved` a request to `name` may connect to, or why
/// none: every address [`refused_ip`] refuses is left out.
fn checked_addresses(name: &str, resolved: Vec<std::net::SocketAddr>) -> Result<Vec<std::net::SocketAddr>, String> {
    let mut refused = Vec::new();
    let allowed: Vec<std::net::SocketAddr> = resolved
        .into_iter()
        .filter(|address| match refused_ip(address.ip()) {
            Some(why) => {
                refused.push(format!("{} ({why})", address.ip()));
                false
            }
            None => true,
        })
        .collect();
    if allowed.is_empty() {
        let what = if refused.is_empty() { "no address".to_string() } else { format!("only refused addresses: {}", refused.join(", ")) };
        return Err(format!("{name:?} resolves to {what}"));
    }
    Ok(allowed)
}

/// The proxies the environment names, as curl and reqwest read them
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, lowercase too, and
/// `NO_PROXY`), but never for a host on this machine: a proxy would carry a
/// request meant for this machine elsewhere, and with it the credentials
/// that go over plain HTTP only to this machine.
fn environment_proxy() -> reqwest::Proxy {
    let named = |names: &[&str]| names.iter().find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()));
    let proxies = Proxies {
        https: named(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]),
        http: named(&["http_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"]),
        exempt: named(&["NO_PROXY", "no_proxy"]).map(|list| Proxies::exempting(&list)),
    };
    reqwest::Proxy::custom(move |url| proxies.for_url(url))
}

/// The proxies to use, and the hosts exempt from them.
struct Proxies {
    https: Option<String>,
    http: Option<String>,
    /// `NO_PROXY`'s hosts, as hyper-util's matcher (the one reqwest's own
    /// environment proxies use) reads them with curl's rules: reqwest 0.13's
    /// `Proxy::custom` never consults `no_proxy`, so it is matched here.
    exempt: Option<hyper_util::client::proxy::matcher::Matcher>,
}

impl Proxies {
    /// A matcher that intercepts every host `no_proxy` does not name.
    fn exempting(no_proxy: &str) -> hyper_util::client::proxy::matcher::Matcher {
        const ANY: &str = "http://proxy.invalid";
        hyper_util::client::proxy::matcher::Matcher::builder().no(no_proxy).http(ANY).https(ANY).build()
    }

    /// The proxy for `url`, if any.
    fn for_url(&self, url: &url::Url) -> Option<String> {
        if url.host_str().is_some_and(is_loopback_host) {
            return None;
        }
        if let Some(exempt) = &self.exempt
            && let Ok(uri) = url.as_str().parse::<http::Uri>()
            && exempt.intercept(&uri).is_none()
        {
            return None;
        }
        if url.scheme() == "https" { self.https.clone() } else { self.http.clone() }
    }
}

/// What a token is asked for.
#[derive(Debug, Clone, Copy)]
enum Access {
    Pull,
    Push,
}

impl Access {
    fn scope(self) -> &'static str {
        match self {
            Access::Pull => "pull",
            Access::Push => "pull,push",
        }
    }
}

/// Why the token service at `realm` is not asked at all, if it is not: a
/// link-local, unspecified or cloud metadata address (a registry could make
/// the host probe them), a scheme other than HTTPS, or plain HTTP off this
/// machine.
fn refused_realm(realm: &url::Url) -> Option<String> {
    if let Some(why) = refused_address(realm) {
        return Some(why);
    }
    let host = realm.host_str().unwrap_or_default().trim_matches(['[', ']']).to_ascii_lowercase();
    match realm.scheme() {
        "https" => None,
        "http" if is_loopback_host(&host) => None,
        "http" => Some("it is plain HTTP on another machine: a token service is reached over HTTPS".into()),
        other => Some(format!("its scheme is {other:?}: a token service is reached over HTTPS")),
    }
}

/// Why the host of `url` is never asked anything, if it is not: a
/// link-local, unspecified or cloud metadata address or name.
fn refused_address(url: &url::Url) -> Option<String> {
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_ascii_lowercase();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => refused_ip(ip),
        Err(_) if METADATA_HOSTS.contains(&host.trim_end_matches('.')) => Some("it is a cloud metadata service's name".into()),
        Err(_) => None,
    }
}

/// Why `ip` is never asked anything, if it is not: link-local, unspecified
/// or a cloud metadata service's, in any IPv6 form that carries such an
/// IPv4 address (a registry on loopback or a private network is asked).
fn refused_ip(ip: std::net::IpAddr) -> Option<String> {
    let why = match prompt_host_addresses::classify(ip)? {
        AddressClass::Unspecified => "it is an unspecified address",
        AddressClass::LinkLocal => "it is a link-local address, where cloud metadata services answer",
        AddressClass::CloudMetadata => "it is a cloud metadata service's address",
        _ => return None,
    };
    Some(why.to_string())
}

/// The addresses the token service at `realm` is asked at: a name is
/// resolved once here, each address checked as [`refused_realm`] checks a
/// literal one (a name resolving to a metadata address is refused, and a
/// plain-HTTP one must resolve to this machine), and the request is pinned
/// to them, so no second lookup can answer otherwise. `None` for a literal
/// address, checked already.
async fn checked_realm_addresses(realm: &url::Url) -> Result<Option<(String, Vec<std::net::SocketAddr>)>, String> {
    let Some(url::Host::Domain(name)) = realm.host() else { return Ok(None) };
    let port = realm.port_or_known_default().unwrap_or(443);
    let addresses: Vec<std::net::SocketAddr> =
        tokio::net::lookup_host((name, port)).await.map_err(|error| format!("its name does not resolve: {error}"))?.collect();
    for address in &addresses {
        if let Some(why) = refused_ip(address.ip()) {
            return Err(format!("{name} resolves to {}: {why}", address.ip()));
        }
        if realm.scheme() == "http" && !address.ip().is_loopback() {
            return Err(format!(
                "{name} resolves to {}: plain HTTP on another machine: a token service is reached over HTTPS",
                address.ip()
            ));
        }
    }
    Ok(Some((name.to_string(), addresses)))
}

/// Names of cloud metadata services.
const METADATA_HOSTS: &[&str] =
    &["metadata.google.internal", "metadata", "metadata.azure.com", "instance-data", "instance-data.ec2.internal"];

/// Whether credentials for the registry `registry_host` (`host[:port]`) may
/// go to the token service at `realm`: over HTTPS, or to the registry's own
/// host on this machine.
fn credentials_may_go_to(realm: &url::Url, registry_host: &str) -> bool {
    let registry = url::Url::parse(&format!("http://{registry_host}")).ok();
    let same_host = registry.as_ref().and_then(|url| url.host_str()) == realm.host_str();
    realm.scheme() == "https" || (same_host && realm.host_str().is_some_and(is_loopback_host))
}

/// How requests to one repository are authorized.
enum Token {
    None,
    Bearer(String),
    Basic(String, String),
}

impl Token {
    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Token::None => request,
            Token::Bearer(token) => request.bearer_auth(token),
            Token::Basic(user, password) => request.basic_auth(user, Some(password)),
        }
    }
}

/// Credentials for one registry. Never logged (no Debug).
enum Credentials {
    Basic(String, String),
    IdentityToken(String),
}

/// The credentials for `registry`: `PROMPT_HOST_REGISTRY_USERNAME` and
/// `PROMPT_HOST_REGISTRY_PASSWORD` when `PROMPT_HOST_REGISTRY` names this
/// registry (so they go to no other), else the docker config file's
/// (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, credential
/// helpers included), else none.
fn credentials(registry: &str) -> Option<Credentials> {
    if let (Ok(user), Ok(password), Ok(for_registry)) = (
        std::env::var("PROMPT_HOST_REGISTRY_USERNAME"),
        std::env::var("PROMPT_HOST_REGISTRY_PASSWORD"),
        std::env::var("PROMPT_HOST_REGISTRY"),
    ) && for_registry == registry
    {
        return Some(Credentials::Basic(user, password));
    }
    match docker_credential::get_credential(registry) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => Some(Credentials::Basic(user, password)),
        Ok(docker_credential::DockerCredential::IdentityToken(token)) => Some(Credentials::IdentityToken(token)),
        Err(_) => None,
    }
}

/// The realm and service of a `Bearer` challenge in a `WWW-Authenticate`
/// header; `None` for any other scheme.
fn bearer_challenge(header: &str) -> Option<(String, Option<String>)> {
    let challenges = http_auth::parse_challenges(header).ok()?;
    let bearer = challenges.iter().find(|challenge| challenge.scheme.eq_ignore_ascii_case("Bearer"))?;
    let param = |name: &str| bearer.params.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.to_unescaped());
    Some((param("realm")?, param("service")))
}

/// Whether `registry` (`host` or `host:port`) is this machine.
/// The registry to reach over plain HTTP instead, as Docker does, when a
/// TLS handshake was answered in plain HTTP (`refusal`) by a registry on
/// this machine; `None` for any other refusal, or a registry elsewhere.
fn plain_http_fallback(refusal: &DistributionError) -> Option<&str> {
    match refusal {
        DistributionError::SpeaksPlainHttp { registry } if is_loopback_registry(registry) => Some(registry),
        _ => None,
    }
}

fn is_loopback_registry(registry: &str) -> bool {
    url::Url::parse(&format!("http://{registry}")).ok().and_then(|url| url.host_str().map(is_loopback_host)).unwrap_or(false)
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost" || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn check_digest(what: &'static str, reference: &PackReference, expected: &str, bytes: &[u8]) -> Result<(), DistributionError> {
    let actual = sha256_digest(bytes);
    if actual != expected {
        return Err(DistributionError::DigestMismatch { what, reference: reference.to_string(), expected: expected.to_string(), actual });
    }
    Ok(())
}

/// The component layer of a pack's manifest, or why it is not a pack.
pub fn pack_layer(reference: &PackReference, manifest: &[u8]) -> Result<OciDescriptor, DistributionError> {
    let not_a_pack = |why: String| DistributionError::NotAPack { reference: reference.to_string(), why };
    let parsed: OciImageManifest =
        serde_json::from_slice(manifest).map_err(|error| not_a_pack(format!("its manifest is not an OCI image manifest: {error}")))?;
    if let Some(media_type) = &parsed.media_type
        && media_type != OCI_MANIFEST_MEDIA_TYPE
        && media_type != DOCKER_MANIFEST_MEDIA_TYPE
    {
        return Err(not_a_pack(format!("its manifest has the media type {media_type:?}, not an image manifest")));
    }
    if parsed.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(not_a_pack(format!("its config has the media type {:?}, not {WASM_CONFIG_MEDIA_TYPE}", parsed.config.media_type)));
    }
    match parsed.layers.as_slice() {
        [layer] if layer.media_type == WASM_LAYER_MEDIA_TYPE => Ok(layer.clone()),
        [layer] => Err(not_a_pack(format!("its layer has the media type {:?}, not {WASM_LAYER_MEDIA_TYPE}", layer.media_type))),
        layers => Err(not_a_pack(format!("it has {} layers, and a pack has exactly one", layers.len()))),
    }
}

/// An error and its causes, on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_resolving_to_link_local_or_metadata_addresses_is_never_connected_to() {
        // Issue "Hardening, round 3", item 13: a blob redirect to a name that
        // resolved to a link-local address was followed. (A unit test of the
        // check every resolution passes through before a connect: no test
        // sends a packet off loopback.)
        let at = |ip: &str| std::net::SocketAddr::new(ip.parse().unwrap(), 443);
        assert_eq!(
            checked_addresses("cdn.evil.example", vec![at("169.254.169.254"), at("fe80::1")]),
            Err("\"cdn.evil.example\" resolves to only refused addresses: 169.254.169.254 (it is a cloud metadata service's \
                 address), fe80::1 (it is a link-local address, where cloud metadata services answer)"
                .to_string())
        );
        assert_eq!(checked_addresses("cdn.example", vec![at("169.254.1.1"), at("127.0.0.1")]), Ok(vec![at("127.0.0.1")]));
        assert_eq!(checked_addresses("empty.example", vec![]), Err("\"empty.example\" resolves to no address".to_string()));
        assert!(checked_addresses("v4mapped.example", vec![at("::ffff:169.254.169.254")]).is_err());
    }

    #[test]
    fn no_proxy_exempts_the_hosts_it_names_and_loopback_is_never_proxied() {
        // Issue "Hardening, round 3", item 12: reqwest's custom proxy never
        // read NO_PROXY. (A unit test: a registry off loopback is never a
        // test's target, and loopback is never proxied.)
        let proxies = Proxies {
            https: Some("http://proxy.corp:3128".to_string()),
            http: Some("http://proxy.corp:3128".to_string()),
            exempt: Some(Proxies::exempting("vm, .internal.example, 10.0.0.0/8")),
        };
        let proxy = |url: &str| proxies.for_url(&url::Url::parse(url).unwrap());
        assert_eq!(proxy("https://vm:5000/v2/"), None);
        assert_eq!(proxy("https://registry.internal.example/v2/"), None);
        assert_eq!(proxy("https://internal.example/v2/"), None);
        assert_eq!(proxy("http://10.1.2.3:5000/v2/"), None);
        assert_eq!(proxy("https://127.0.0.1:5000/v2/"), None);
        assert_eq!(proxy("https://localhost/v2/"), None);
        assert_eq!(proxy("https://ghcr.io/v2/").as_deref(), Some("http://proxy.corp:3128"));
        assert_eq!(proxy("https://vmx:5000/v2/").as_deref(), Some("http://proxy.corp:3128"));
        let unexempted = Proxies { exempt: None, ..proxies };
        assert_eq!(unexempted.for_url(&url::Url::parse("https://vm:5000/v2/").unwrap()).as_deref(), Some("http://proxy.corp:3128"));
    }

    #[test]
    fn references_name_a_registry_a_repository_and_a_tag_or_digest() {
        let tagged = PackReference::parse("oci://127.0.0.1:5000/acme/pack:1.0").unwrap();
        assert_eq!(
            (tagged.registry(), tagged.repository(), tagged.tag(), tagged.digest()),
            ("127.0.0.1:5000", "acme/pack", Some("1.0"), None)
        );
        assert_eq!(tagged.to_string(), "oci://127.0.0.1:5000/acme/pack:1.0");
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = PackReference::parse(&format!("oci://ghcr.io/acme/pack@{digest}")).unwrap();
        assert_eq!(pinned.digest(), Some(digest.as_str()));
        assert_eq!(tagged.at_digest(&digest).to_string(), format!("oci://127.0.0.1:5000/acme/pack@{digest}"));
    }

    #[test]
    fn a_reference_without_scheme_registry_or_valid_digest_is_refused_with_the_reason() {
        let why = |text: &str| PackReference::parse(text).unwrap_err().to_string();
        assert_eq!(
            why("ghcr.io/acme/pack:1"),
            "invalid pack reference \"ghcr.io/acme/pack:1\": it must start with oci://, as in oci://registry.example/team/pack:1.0"
        );
        assert!(why("oci://acme/pack:1").contains("it must name the registry"), "{}", why("oci://acme/pack:1"));
        // Not Docker Hub's `library/acme` (issue "Hardening, round 3", item 13).
        assert_eq!(
            why("oci://acme:1"),
            "invalid pack reference \"oci://acme:1\": it must name the registry (a host, with a port or a dot), then the repository"
        );
        let untagged = PackReference::parse("oci://127.0.0.1:5000/acme/pack").unwrap();
        assert_eq!(untagged.to_string(), "oci://127.0.0.1:5000/acme/pack:latest", "one normal form, as the lockfile writes it");
        let sha512 = format!("oci://ghcr.io/acme/pack@sha512:{}", "a".repeat(128));
        assert_eq!(why(&sha512), format!("invalid pack reference {sha512:?}: its digest must be sha256: and 64 hex digits"));
        assert!(why("oci://ghcr.io/acme/pack@sha256:00").contains("invalid reference format"));
    }

    #[test]
    fn a_mirror_is_signed_as_the_repository_it_copies_by_the_longest_prefix_at_a_slash() {
        let mirrors = Mirrors::new([
            ("mirror.local:5000".to_string(), "registry.example".to_string()),
            ("mirror.local:5000/acme".to_string(), "ghcr.io/acme-corp".to_string()),
        ])
        .unwrap();
        let signed = |text: &str| mirrors.signed_repository(&PackReference::parse(text).unwrap());
        assert_eq!(signed("oci://mirror.local:5000/acme/pack:1"), "ghcr.io/acme-corp/pack");
        assert_eq!(signed("oci://mirror.local:5000/acmeish/pack:1"), "registry.example/acmeish/pack");
        assert_eq!(signed("oci://other.example/acme/pack:1"), "other.example/acme/pack");
        let refused = Mirrors::new([("https://mirror.local/acme".to_string(), "registry.example/acme".to_string())]).unwrap_err();
        assert_eq!(
            refused,
            "registry.mirrors: \"https://mirror.local/acme\" is not a registry and repository prefix, as in \"mirror.local:5000/acme\""
        );
    }

    #[test]
    fn a_tls_handshake_answered_in_plain_http_names_the_setting_and_the_flag() {
        // What rustls says when the first bytes back are no TLS record.
        let why = "error sending request: client error (Connect): received corrupt message of type InvalidContentType".to_string();
        assert_eq!(
            unreachable(false, "registry.example:5000", why.clone()).to_string(),
            "cannot reach the registry registry.example:5000 over HTTPS: it answered in plain HTTP. If it is meant to be \
             reached so, pass --plain-http or list it in the config: [registry] plain_http = [\"registry.example:5000\"] \
             (credentials go over plain HTTP only to a registry on this machine)"
        );
        // Already reached over plain HTTP, or another failure: said as it is.
        assert!(matches!(unreachable(true, "registry.example:5000", why), DistributionError::Unreachable { .. }));
        let refused = unreachable(false, "registry.example:5000", "connection refused".into());
        assert_eq!(refused.to_string(), "cannot reach the registry registry.example:5000: connection refused");
    }

    #[test]
    fn only_a_registry_on_this_machine_falls_back_to_plain_http() {
        let why = "received corrupt message of type InvalidContentType".to_string();
        let fallback = |registry: &str| plain_http_fallback(&unreachable(false, registry, why.clone())).map(str::to_string);
        for here in ["localhost:5000", "127.0.0.1:5000", "127.0.0.2", "[::1]:5000"] {
            assert_eq!(fallback(here), Some(here.to_string()), "{here}");
        }
        for elsewhere in
            ["registry.example:5000", "[::ffff:127.0.0.1]:5000", "0.0.0.0:5000", "registry.localhost:5000", "localhost.example.com"]
        {
            assert_eq!(fallback(elsewhere), None, "{elsewhere}");
        }
        // Another failure, on this machine: no fallback.
        assert_eq!(plain_http_fallback(&unreachable(false, "localhost:5000", "connection refused".into())), None);
    }

    #[test]
    fn token_services_on_link_local_unspecified_or_metadata_addresses_or_plain_http_elsewhere_are_refused() {
        let why = |realm: &str| refused_realm(&url::Url::parse(realm).unwrap());
        let link_local = Some("it is a link-local address, where cloud metadata services answer".to_string());
        let metadata = Some("it is a cloud metadata service's address".to_string());
        assert_eq!(why("http://169.254.169.254/latest/meta-data/"), metadata);
        assert_eq!(why("https://[fe80::1]/token"), link_local);
        assert_eq!(why("https://169.254.1.1/token"), link_local);
        assert_eq!(why("https://[::ffff:169.254.169.254]/token"), metadata);
        // Every IPv6 form that carries a metadata address, and Azure's WireServer (#54).
        for carried in ["[64:ff9b::a9fe:a9fe]", "[64:ff9b:1::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[::169.254.169.254]", "168.63.129.16"] {
            assert_eq!(why(&format!("https://{carried}/token")), metadata, "{carried}");
        }
        assert_eq!(why("https://0.0.0.0/token"), Some("it is an unspecified address".to_string()));
        assert_eq!(why("https://[::]/token"), Some("it is an unspecified address".to_string()));
        assert_eq!(why("https://[fd00:ec2::254]/"), Some("it is a cloud metadata service's address".to_string()));
        assert_eq!(why("http://metadata.google.internal./"), Some("it is a cloud metadata service's name".to_string()));
        assert_eq!(
            why("http://auth.example/token"),
            Some("it is plain HTTP on another machine: a token service is reached over HTTPS".to_string())
        );
        assert_eq!(why("ftp://auth.example/token"), Some("its scheme is \"ftp\": a token service is reached over HTTPS".to_string()));
        assert_eq!(why("https://auth.example/token"), None);
        assert_eq!(why("http://127.0.0.1:5000/token"), None);
        assert_eq!(why("http://[::1]:5000/token"), None);
    }

    #[tokio::test]
    async fn a_token_service_named_by_a_name_is_pinned_to_the_addresses_checked() {
        let realm = url::Url::parse("http://localhost:5000/token").unwrap();
        let (name, addresses) = checked_realm_addresses(&realm).await.unwrap().expect("a name is resolved");
        assert_eq!(name, "localhost");
        assert!(
            !addresses.is_empty() && addresses.iter().all(|address| address.ip().is_loopback() && address.port() == 5000),
            "{addresses:?}"
        );
        assert_eq!(checked_realm_addresses(&url::Url::parse("http://127.0.0.1:5000/token").unwrap()).await, Ok(None));
        assert_eq!(refused_ip("169.254.169.254".parse().unwrap()), Some("it is a cloud metadata service's address".into()));
        assert_eq!(
            refused_ip("64:ff9b::a83f:8110".parse().unwrap()),
            Some("it is a cloud metadata service's address".into()),
            "Azure's WireServer through NAT64"
        );
        assert_eq!(refused_ip("10.0.0.1".parse().unwrap()), None, "a registry on a private network is asked");
        assert_eq!(refused_ip("127.0.0.1".parse().unwrap()), None);
    }

    #[test]
    fn credentials_go_over_https_or_to_the_registrys_own_host_on_this_machine() {
        let may = |realm: &str, registry: &str| credentials_may_go_to(&url::Url::parse(realm).unwrap(), registry);
        assert!(may("https://auth.example/token", "registry.example"));
        assert!(may("http://127.0.0.1:6000/token", "127.0.0.1:5000"));
        assert!(!may("http://localhost:6000/token", "127.0.0.1:5000"));
        assert!(!may("http://127.0.0.1:6000/token", "registry.example"));
    }

    #[test]
    fn only_the_cncf_wasm_layout_is_a_pack() {
        let reference = PackReference::parse("oci://r.example/p:1").unwrap();
        let manifest = |config: &str, layers: &[&str]| {
            serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST_MEDIA_TYPE,
                "config": {"mediaType": config, "digest": format!("sha256:{}", "0".repeat(64)), "size": 2},
                "layers": layers.iter().map(|media_type| serde_json::json!({
                    "mediaType": media_type, "digest": format!("sha256:{}", "1".repeat(64)), "size": 8
                })).collect::<Vec<_>>(),
            }))
            .unwrap()
        };
        let layer = pack_layer(&reference, &manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE])).unwrap();
        assert_eq!(layer.size, 8);
        let why = |bytes: Vec<u8>| pack_layer(&reference, &bytes).unwrap_err().to_string();
        assert_eq!(
            why(manifest("application/vnd.oci.image.config.v1+json", &[WASM_LAYER_MEDIA_TYPE])),
            "oci://r.example/p:1 is not a wasm pack: its config has the media type \"application/vnd.oci.image.config.v1+json\", not application/vnd.wasm.config.v0+json"
        );
        assert_eq!(
            why(manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE])),
            "oci://r.example/p:1 is not a wasm pack: it has 2 layers, and a pack has exactly one"
        );
    }
}

#[cfg(test)]
mod resolving {
    use super::*;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A registry on loopback that answers the `/v2/` probe, a HEAD of a
    /// manifest with `head` (status and `Docker-Content-Digest`, if any),
    /// and a GET of it with `manifest`; it records each request line. (A
    /// stand-in beside the real registry the integration tests run: it is
    /// here to count what the client asks, which the real one does not say.)
    async fn registry(head: (u16, Option<&'static str>), manifest: &'static [u8]) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let noted = asked.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap_or(0) == 1 {
                    request.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&request).lines().next().unwrap_or("").to_string();
                noted.lock().unwrap().push(line.clone());
                let answer = match line.split(' ').next() {
                    _ if line.starts_with("GET /v2/ ") => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                    Some("HEAD") => {
                        let digest = head.1.map(|digest| format!("docker-content-digest: {digest}\r\n")).unwrap_or_default();
                        format!("HTTP/1.1 {} X\r\n{digest}content-length: 0\r\nconnection: close\r\n\r\n", head.0)
                    }
                    _ => format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                        manifest.len(),
                        String::from_utf8_lossy(manifest)
                    ),
                };
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        (address, asked)
    }

    async fn resolve(address: &str) -> Result<String, DistributionError> {
        let settings = RegistrySettings { plain_http: vec![address.to_string()], ..RegistrySettings::default() };
        let client = RegistryClient::new(settings).unwrap();
        client.resolve(&PackReference::parse(&format!("oci://{address}/acme/prompts:1.0")).unwrap()).await
    }

    #[tokio::test]
    async fn a_tag_is_resolved_by_a_head_when_the_registry_says_its_digest() {
        let digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let (address, asked) = registry((200, Some(digest)), b"{}").await;
        assert_eq!(resolve(&address).await.unwrap(), digest);
        assert_eq!(*asked.lock().unwrap(), ["GET /v2/ HTTP/1.1", "HEAD /v2/acme/prompts/manifests/1.0 HTTP/1.1"]);
    }

    #[tokio::test]
    async fn without_a_digest_in_answer_to_the_head_the_manifest_is_fetched_and_hashed() {
        for head in [(200, None), (405, None), (200, Some("md5:0123"))] {
            let (address, asked) = registry(head, b"{\"schemaVersion\":2}").await;
            assert_eq!(resolve(&address).await.unwrap(), sha256_digest(b"{\"schemaVersion\":2}"), "{head:?}");
            let asked = asked.lock().unwrap().clone();
            assert_eq!(asked.last().map(String::as_str), Some("GET /v2/acme/prompts/manifests/1.0 HTTP/1.1"), "{head:?}: {asked:?}");
        }
    }
}
