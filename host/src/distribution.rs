//! Packs in OCI registries: references, pulling a pack and its cosign
//! signatures with a bound on every byte, and publishing a pack.
//!
//! A pack is a CNCF wasm artifact (the layout `wkg` and `oras` push): an OCI
//! image manifest whose config has the media type
//! [`WASM_CONFIG_MEDIA_TYPE`] and whose one layer, [`WASM_LAYER_MEDIA_TYPE`],
//! is the component. Its cosign signatures live beside it, in the manifest
//! tagged `sha256-<digest>.sig` (cosign's tag scheme).
//!
//! Pulling is the host's own, through reqwest (oci-client's HTTP client):
//! oci-client reads every answer whole, however large the registry makes it,
//! and a registry is not trusted. So signing in, resolving a tag, and
//! fetching manifests and blobs each read at most a bound, refused as soon as
//! it passes it, and every manifest and blob is checked against its digest
//! before use. Every operation has a deadline, and a registry that stops
//! sending is given up on. oci-client pushes (`publish`, `sign`), to a
//! registry its publisher chose.

use std::fmt;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
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
/// The most signatures read for one pack.
pub const MAX_SIGNATURES: usize = 16;
/// The default bound on a pack's component, in MiB (`[registry] max_pack_mib`).
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
    pub fn parse(text: &str) -> Result<PackReference, DistributionError> {
        let invalid = |why: &str| DistributionError::Reference { reference: text.to_string(), why: why.to_string() };
        let rest = text
            .strip_prefix("oci://")
            .ok_or_else(|| invalid("it must start with oci://, as in oci://registry.example/team/pack:1.0"))?;
        if !rest.split('/').next().is_some_and(|host| host.contains(['.', ':']) || host == "localhost") {
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

    pub fn registry(&self) -> &str {
        self.0.registry()
    }

    pub fn repository(&self) -> &str {
        self.0.repository()
    }

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
}

impl Default for RegistrySettings {
    fn default() -> Self {
        RegistrySettings {
            plain_http: Vec::new(),
            ca_certificates: Vec::new(),
            max_pack_bytes: DEFAULT_MAX_PACK_MIB << 20,
            timeout: std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECS),
        }
    }
}

impl RegistrySettings {
    fn is_plain_http(&self, registry: &str) -> bool {
        self.plain_http.iter().any(|plain| plain == registry)
    }
}

/// Why talking to a registry failed.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    #[error("invalid pack reference {reference:?}: {why}")]
    Reference { reference: String, why: String },
    #[error("cannot reach the registry {registry}: {why}")]
    Unreachable { registry: String, why: String },
    #[error(
        "{registry} refused access to {reference}: give credentials in the docker config file \
         ($DOCKER_CONFIG/config.json or ~/.docker/config.json), or in PROMPT_HOST_REGISTRY_USERNAME and \
         PROMPT_HOST_REGISTRY_PASSWORD with PROMPT_HOST_REGISTRY={registry}"
    )]
    Unauthorized { registry: String, reference: String },
    #[error(
        "{registry} refused access to {reference}, and credentials are never sent to it: it is reached over \
         plain HTTP ([registry] plain_http) and is not on this machine; reach it over HTTPS"
    )]
    UnauthorizedOverPlainHttp { registry: String, reference: String },
    #[error("{what} of {reference} took longer than {seconds} s ([registry] timeout_secs)")]
    TimedOut { what: &'static str, reference: String, seconds: u64 },
    #[error("{what} of {reference}: the registry answered {status}")]
    Status { what: &'static str, reference: String, status: u16 },
    #[error("{what} of {reference} is larger than the {limit} bytes allowed")]
    TooLarge { what: &'static str, reference: String, limit: u64 },
    #[error("{what} of {reference} does not match its digest: expected {expected}, received {actual}")]
    DigestMismatch { what: &'static str, reference: String, expected: String, actual: String },
    #[error("{reference} is not a wasm pack: {why}")]
    NotAPack { reference: String, why: String },
    #[error("cannot read the CA certificate: {0}")]
    Certificate(String),
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
    pub signatures: Vec<CosignSignature>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
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
    oci: oci_client::Client,
    http: reqwest::Client,
    settings: RegistrySettings,
}

impl RegistryClient {
    pub fn new(settings: RegistrySettings) -> Result<RegistryClient, DistributionError> {
        let mut http = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).read_timeout(STALL_TIMEOUT);
        let mut extra_root_certificates = Vec::new();
        for pem in &settings.ca_certificates {
            let certificate = reqwest::Certificate::from_pem(pem).map_err(|error| DistributionError::Certificate(error.to_string()))?;
            http = http.add_root_certificate(certificate);
            extra_root_certificates.push(Certificate { encoding: CertificateEncoding::Pem, data: pem.clone() });
        }
        let http = http.build().map_err(|error| DistributionError::Certificate(error.to_string()))?;
        let oci = oci_client::Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(settings.plain_http.clone()),
            extra_root_certificates,
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(STALL_TIMEOUT),
            ..ClientConfig::default()
        });
        Ok(RegistryClient { oci, http, settings })
    }

    /// The digest `reference` names now: its own digest, or the SHA-256 of
    /// the manifest its tag resolves to (fetched with its bound, as a digest
    /// header would be the registry's word alone).
    pub async fn resolve(&self, reference: &PackReference) -> Result<String, DistributionError> {
        if let Some(digest) = reference.digest() {
            return Ok(digest.to_string());
        }
        self.within_deadline("resolving the tag", reference, async {
            let token = self.sign_in(&reference.0).await?;
            let manifest = self.fetch_manifest(&reference.0, &token, MANIFEST_ACCEPT).await?.ok_or_else(|| {
                DistributionError::Status { what: "the manifest", reference: reference.to_string(), status: 404 }
            })?;
            Ok(sha256_digest(&manifest))
        })
        .await
    }

    /// Pulls the pack at `digest` and its signatures. Every byte is bounded
    /// before it is read, and checked against its digest.
    pub async fn pull(
        &self,
        reference: &PackReference,
        digest: &str,
        progress: Progress<'_>,
    ) -> Result<PulledPack, DistributionError> {
        self.within_deadline("pulling the pack", reference, self.pull_at(reference, digest, progress)).await
    }

    async fn pull_at(&self, reference: &PackReference, digest: &str, progress: Progress<'_>) -> Result<PulledPack, DistributionError> {
        let at_digest = reference.at_digest(digest);
        let token = self.sign_in(&at_digest.0).await?;
        let manifest = self.fetch_manifest(&at_digest.0, &token, MANIFEST_ACCEPT).await?.ok_or_else(|| {
            DistributionError::Status { what: "the manifest", reference: at_digest.to_string(), status: 404 }
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
        let signatures = self.signatures(reference, digest, &token).await?;
        Ok(PulledPack { reference: at_digest, manifest_digest: digest.to_string(), manifest, wasm, signatures })
    }

    /// The cosign signatures stored for `digest`, under cosign's tag
    /// `sha256-<hex>.sig` in the same repository; none if there is no such tag.
    async fn signatures(
        &self,
        reference: &PackReference,
        digest: &str,
        token: &Token,
    ) -> Result<Vec<CosignSignature>, DistributionError> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let signature_ref = reference.at_tag(&tag);
        let shown = PackReference(signature_ref.clone());
        let Some(manifest) = self.fetch_manifest(&signature_ref, token, MANIFEST_ACCEPT).await? else {
            return Ok(Vec::new());
        };
        let manifest: OciImageManifest = serde_json::from_slice(&manifest).map_err(|error| DistributionError::NotAPack {
            reference: shown.to_string(),
            why: format!("the signature manifest is not an OCI image manifest: {error}"),
        })?;
        let mut signatures = Vec::new();
        for layer in manifest.layers.iter().filter(|layer| layer.media_type == SIMPLE_SIGNING_MEDIA_TYPE).take(MAX_SIGNATURES) {
            let Some(annotations) = layer.annotations.as_ref() else { continue };
            let Some(signature) = annotations.get(COSIGN_SIGNATURE_ANNOTATION) else { continue };
            let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
            if size > MAX_SIGNATURE_PAYLOAD_BYTES as u64 || signature.len() > MAX_SIGNATURE_PAYLOAD_BYTES {
                return Err(DistributionError::TooLarge {
                    what: "a signature",
                    reference: shown.to_string(),
                    limit: MAX_SIGNATURE_PAYLOAD_BYTES as u64,
                });
            }
            let payload = self.fetch_blob(&signature_ref, token, &layer.digest, size, "a signed payload", &|_, _| {}).await?;
            use base64::Engine as _;
            signatures.push(CosignSignature {
                payload: base64::engine::general_purpose::STANDARD.encode(payload),
                signature: signature.clone(),
                certificate: annotations.get(COSIGN_CERTIFICATE_ANNOTATION).cloned(),
                chain: annotations.get(COSIGN_CHAIN_ANNOTATION).cloned().filter(|chain| !chain.trim().is_empty()),
                bundle: annotations.get(COSIGN_BUNDLE_ANNOTATION).cloned(),
            });
        }
        Ok(signatures)
    }

    /// Pushes `wasm` as a CNCF wasm artifact to `reference` (its tag), and
    /// returns the manifest's digest.
    pub async fn publish(&self, wasm: &[u8], reference: &PackReference) -> Result<String, DistributionError> {
        self.within_deadline("publishing", reference, self.push_pack(wasm, reference)).await
    }

    async fn push_pack(&self, wasm: &[u8], reference: &PackReference) -> Result<String, DistributionError> {
        let auth = self.registry_auth(reference.registry());
        let target = &reference.0;
        let map = |error| self.failure("publishing", reference, error);
        self.oci.auth(target, &auth, RegistryOperation::Push).await.map_err(map)?;
        let layer_digest = sha256_digest(wasm);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
        }))
        .expect("a JSON value serializes");
        let config_digest = sha256_digest(&config);
        self.oci.push_blob(target, config.clone(), &config_digest).await.map_err(map)?;
        self.oci.push_blob(target, wasm.to_vec(), &layer_digest).await.map_err(map)?;
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
        let content_type = OCI_MANIFEST_MEDIA_TYPE.parse().expect("a valid header value");
        self.oci.push_manifest_raw(target, manifest, content_type).await.map_err(map)?;
        Ok(digest)
    }

    /// Stores `signature` of `payload` (cosign's simple signing, naming
    /// `digest`) where cosign does: as a layer of the manifest tagged
    /// `sha256-<hex>.sig`, beside the signatures already there.
    pub async fn push_signature(
        &self,
        reference: &PackReference,
        digest: &str,
        payload: &[u8],
        signature: &str,
    ) -> Result<(), DistributionError> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let target = reference.at_tag(&tag);
        let shown = PackReference(target.clone());
        self.within_deadline("signing", &shown, self.push_signature_at(&target, payload, signature)).await
    }

    async fn push_signature_at(&self, target: &Reference, payload: &[u8], signature: &str) -> Result<(), DistributionError> {
        let shown = PackReference(target.clone());
        let auth = self.registry_auth(target.registry());
        let map = |error| self.failure("signing", &shown, error);
        self.oci.auth(target, &auth, RegistryOperation::Push).await.map_err(map)?;
        let token = self.sign_in(target).await?;
        let mut layers = match self.fetch_manifest(target, &token, MANIFEST_ACCEPT).await? {
            Some(existing) => serde_json::from_slice::<OciImageManifest>(&existing)
                .map(|manifest| manifest.layers)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let payload_digest = sha256_digest(payload);
        layers.retain(|layer| layer.digest != payload_digest);
        layers.truncate(MAX_SIGNATURES - 1);
        self.oci.push_blob(target, payload.to_vec(), &payload_digest).await.map_err(map)?;
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
        self.oci.push_blob(target, config.clone(), &config_digest).await.map_err(map)?;
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
        let content_type = OCI_MANIFEST_MEDIA_TYPE.parse().expect("a valid header value");
        self.oci.push_manifest_raw(target, manifest, content_type).await.map_err(map)?;
        Ok(())
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

    /// Signs in to read `reference`'s repository, as the distribution
    /// specification has it: the registry's `/v2/` answers with a challenge;
    /// for `Basic`, the credentials are the authorization; for `Bearer`, its
    /// token service (the realm) is asked for a pull token, with the
    /// credentials if any. The answer is read up to
    /// [`MAX_TOKEN_ANSWER_BYTES`]. Credentials go to a realm only over HTTPS
    /// or on this machine.
    async fn sign_in(&self, reference: &Reference) -> Result<Token, DistributionError> {
        let shown = PackReference(reference.clone());
        let credentials = self.credentials(reference.registry());
        if let Some(Credentials::IdentityToken(token)) = &credentials {
            return Ok(Token::Bearer(token.clone()));
        }
        let url = format!("{}/v2/", self.registry_url(reference));
        let response = self.http.get(url).send().await.map_err(|error| self.unreachable(&shown, &error))?;
        let challenge = response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|value| value.to_str().ok()).map(str::to_string);
        drop(response);
        let basic = match credentials {
            Some(Credentials::Basic(user, password)) => Some((user, password)),
            _ => None,
        };
        let Some(challenge) = challenge else { return Ok(Token::None) };
        let Some((realm, service)) = bearer_challenge(&challenge) else {
            return Ok(basic.map_or(Token::None, |(user, password)| Token::Basic(user, password)));
        };
        let mut realm = url::Url::parse(&realm).map_err(|_| DistributionError::Unreachable {
            registry: shown.registry().to_string(),
            why: format!("its sign-in challenge names the token service {realm:?}, which is not a URL"),
        })?;
        realm.query_pairs_mut().append_pair("scope", &format!("repository:{}:pull", reference.repository()));
        if let Some(service) = &service {
            realm.query_pairs_mut().append_pair("service", service);
        }
        let may_send_credentials = realm.scheme() == "https" || realm.host_str().is_some_and(is_loopback_host);
        let mut request = self.http.get(realm);
        if let Some((user, password)) = basic.filter(|_| may_send_credentials) {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(|error| self.unreachable(&shown, &error))?;
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
        if self.settings.is_plain_http(registry) && !is_loopback_registry(registry) {
            return None;
        }
        credentials(registry)
    }

    /// The credentials for `registry` as oci-client takes them (to push).
    fn registry_auth(&self, registry: &str) -> RegistryAuth {
        match self.credentials(registry) {
            Some(Credentials::Basic(user, password)) => RegistryAuth::Basic(user, password),
            Some(Credentials::IdentityToken(token)) => RegistryAuth::Bearer(token),
            None => RegistryAuth::Anonymous,
        }
    }

    /// A manifest, at most [`MAX_MANIFEST_BYTES`]; `None` if there is none.
    async fn fetch_manifest(&self, reference: &Reference, token: &Token, accept: &str) -> Result<Option<Vec<u8>>, DistributionError> {
        let name = reference.digest().or(reference.tag()).unwrap_or("latest");
        let url = format!("{}/v2/{}/manifests/{name}", self.registry_url(reference), reference.repository());
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
        let scheme = if self.settings.is_plain_http(registry) { "http" } else { "https" };
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
        if self.settings.is_plain_http(&registry) && !is_loopback_registry(&registry) {
            return DistributionError::UnauthorizedOverPlainHttp { registry, reference: shown };
        }
        DistributionError::Unauthorized { registry, reference: shown }
    }

    fn unreachable(&self, reference: &PackReference, error: &reqwest::Error) -> DistributionError {
        DistributionError::Unreachable { registry: reference.registry().to_string(), why: error_chain(error) }
    }

    fn failure(&self, what: &'static str, reference: &PackReference, error: oci_client::errors::OciDistributionError) -> DistributionError {
        use oci_client::errors::OciDistributionError as Oci;
        match error {
            Oci::ServerError { code, .. } => DistributionError::Status { what, reference: reference.to_string(), status: code },
            Oci::ImageManifestNotFoundError(_) => {
                DistributionError::Status { what, reference: reference.to_string(), status: 404 }
            }
            Oci::UnauthorizedError { .. } | Oci::AuthenticationFailure(_) => self.unauthorized(reference),
            other => DistributionError::Unreachable { registry: reference.registry().to_string(), why: error_chain(&other) },
        }
    }
}

const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

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
        return Err(not_a_pack(format!(
            "its config has the media type {:?}, not {WASM_CONFIG_MEDIA_TYPE}",
            parsed.config.media_type
        )));
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
    fn references_name_a_registry_a_repository_and_a_tag_or_digest() {
        let tagged = PackReference::parse("oci://127.0.0.1:5000/acme/pack:1.0").unwrap();
        assert_eq!((tagged.registry(), tagged.repository(), tagged.tag(), tagged.digest()), ("127.0.0.1:5000", "acme/pack", Some("1.0"), None));
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
        let sha512 = format!("oci://ghcr.io/acme/pack@sha512:{}", "a".repeat(128));
        assert_eq!(why(&sha512), format!("invalid pack reference {sha512:?}: its digest must be sha256: and 64 hex digits"));
        assert!(why("oci://ghcr.io/acme/pack@sha256:00").contains("invalid reference format"));
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
