//! Which signatures a host accepts, and checking a pack's against them.
//!
//! A pack from a registry is signed by its publisher with cosign: the
//! signature covers a small JSON payload ("simple signing") that names the
//! pack's manifest digest, its repository and cosign's type, and the
//! manifest names the component's digest. So a signature is bound to exact
//! bytes in one repository, never to a tag. The host keeps
//! what it pulled (the manifest and the signatures: a [`Provenance`]) and
//! checks the whole chain again at every load, from the component's bytes
//! up to a key the configuration trusts: a file changed on disk, in the
//! store or under the compiled cache (which is keyed by the component's
//! digest) no longer matches, and is refused.
//!
//! The cryptography is sigstore-rs's ([`CosignVerificationKey`], and
//! [`SigStoreKeyPair`] for `prompt-host sign`).

use serde::{Deserialize, Serialize};
use sigstore::cosign::payload::simple_signing::{CRITICAL_TYPE_NAME, SimpleSigning};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, Signature, SigningScheme};

use crate::distribution::{self, CosignSignature};

pub mod keyless;

pub use keyless::{Identity, TrustedRoot};

/// What a plugin's signature must be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignaturePolicy {
    /// Whether the plugin is refused without a valid signature.
    pub required: bool,
    /// The keys whose signatures are accepted.
    pub keys: Vec<TrustedKey>,
    /// The identities whose keyless signatures are accepted, and the trusted
    /// root they are checked against.
    pub keyless: Option<Keyless>,
}

/// What keyless signatures are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyless {
    /// The Sigstore trusted root: the certificate authorities, transparency
    /// logs and certificate transparency logs keyless signatures are
    /// checked against.
    pub root: std::sync::Arc<TrustedRoot>,
    /// Never empty: there is no match-anything default.
    pub identities: Vec<Identity>,
}

impl SignaturePolicy {
    /// Whether the policy can check a signature at all.
    fn has_signers(&self) -> bool {
        !self.keys.is_empty() || self.keyless.is_some()
    }

    fn signers(&self) -> Vec<String> {
        let keys = self.keys.iter().map(|key| key.name.clone());
        let identities = self.keyless.iter().flat_map(|keyless| keyless.identities.iter().map(Identity::to_string));
        keys.chain(identities).collect()
    }
}

/// A public key the configuration trusts (cosign's `cosign.pub`, PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The key's file, as the configuration names it.
    pub name: String,
    /// The key, PEM, as read from that file.
    pub pem: String,
}

impl TrustedKey {
    /// Reads a PEM public key, refusing what sigstore cannot verify with.
    pub fn new(name: String, pem: String) -> Result<TrustedKey, String> {
        CosignVerificationKey::try_from_pem(pem.as_bytes())
            .map_err(|error| format!("{name} is not a public key sigstore can verify with: {error}"))?;
        Ok(TrustedKey { name, pem })
    }
}

/// What the host keeps of a pack it pulled, to check it again at each load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Where it was pulled from, at its digest.
    pub reference: String,
    /// The manifest's digest, which the signatures sign.
    pub manifest_digest: String,
    /// The manifest, base64, as the registry sent it.
    pub manifest: String,
    /// The cosign signatures pulled with it, as pulled (checked at each
    /// load, not when kept).
    pub signatures: Vec<CosignSignature>,
}

/// What a Sigstore bundle beside a pack file is named after it:
/// `acme.wasm.sigstore.json`.
pub const BUNDLE_SUFFIX: &str = ".sigstore.json";

/// A signature that was checked, and whose it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// The key that made it, as the configuration names it, or the
    /// identity and issuer of a keyless signature.
    pub signer: String,
    /// What it signs: a manifest's digest (a pack from a registry), or the
    /// pack file's (a Sigstore bundle beside it).
    pub digest: String,
    /// Whether a Sigstore bundle beside the file carried it.
    pub from_bundle: bool,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let signed = if self.from_bundle { "the file, by its Sigstore bundle" } else { "manifest" };
        write!(f, "by {}, {signed} {}", self.signer, self.digest)
    }
}

/// Why a pack's signature is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Signatures are required and the pack has none: no provenance record
    /// with a signature, and no Sigstore bundle.
    #[error("it has no signature, and the configuration requires one")]
    Unsigned,
    /// Signatures are required, and the policy has no key or keyless
    /// identity to check one with.
    #[error(
        "the configuration requires a signature but names no key or identity to check it with \
         (signatures.public_keys, signatures.identities)"
    )]
    NoKeys,
    /// The component's bytes are not those the signed manifest's layer (or
    /// the Sigstore bundle's signature) names.
    #[error("its bytes (sha256 {actual}) are not the ones its signed manifest names ({expected})")]
    NotTheSignedBytes {
        /// The digest that was signed, as the manifest or the bundle gives it
        /// (`sha256:HEX`, or what a bundle wrongly holds instead).
        expected: String,
        /// The digest of the component's bytes, `sha256:HEX`.
        actual: String,
    },
    /// The provenance record or the Sigstore bundle cannot be read, or
    /// contradicts itself (a manifest that is not its recorded digest's,
    /// or not a pack's).
    #[error("its provenance record is damaged: {0}")]
    Damaged(String),
    /// There are signatures, but none verifies: none is by a signer the
    /// policy trusts and signs this digest (and, from a registry, this
    /// repository).
    #[error("no signature of {manifest_digest} is by a trusted signer ({}): {}", .signers.join(", "), .problems.join("; "))]
    Untrusted {
        /// What was signed: the manifest's digest, or the pack file's for a
        /// Sigstore bundle.
        manifest_digest: String,
        /// The keys and keyless identities the policy trusts.
        signers: Vec<String>,
        /// What is wrong with each signature, in order.
        problems: Vec<String>,
    },
}

/// What a pack's signatures came to under its policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Accepted {
    /// Who signed it, when a trusted signer did.
    pub verified: Option<Verified>,
    /// The signatures that did not verify, under a policy that does not
    /// require one: the pack is accepted as unsigned, and these are logged.
    pub ignored: Vec<SignatureError>,
}

/// The one rule of a signature policy, over every source of provenance a
/// pack has (`checks`: each one's outcome, from [`verify`],
/// [`check_at_load`] or [`check_bundle`]). A pack is signed when one source
/// verifies. Otherwise, with `require = true` it is refused (saying why the
/// most telling source failed); with `require = false` a signature that
/// does not verify counts as no signature and the pack is accepted as
/// unsigned: refusing it would protect nothing, as anyone can remove a
/// signature (a `.sig` is a separate artifact, a bundle a separate file).
pub fn accept(
    policy: &SignaturePolicy,
    checks: impl IntoIterator<Item = Result<Option<Verified>, SignatureError>>,
) -> Result<Accepted, SignatureError> {
    let mut problems = Vec::new();
    for check in checks {
        match check {
            Ok(Some(verified)) => return Ok(Accepted { verified: Some(verified), ignored: Vec::new() }),
            Ok(None) => {}
            Err(SignatureError::Unsigned) => {}
            Err(problem) => problems.push(problem),
        }
    }
    if !policy.required {
        return Ok(Accepted { verified: None, ignored: problems });
    }
    if !policy.has_signers() {
        return Err(SignatureError::NoKeys);
    }
    Err(problems.into_iter().next().unwrap_or(SignatureError::Unsigned))
}

/// Checks a pack file at load against its policy, from every source of
/// provenance it has: the record the pack store keeps for this plugin's
/// install of exactly these bytes (SHA-256 `digest`, hex), and the Sigstore
/// bundle beside the file.
pub fn check_pack(
    digest: &str,
    bytes: &[u8],
    record: Option<&Provenance>,
    bundle: Option<&[u8]>,
    policy: &SignaturePolicy,
    mirrors: &distribution::Mirrors,
) -> Result<Accepted, SignatureError> {
    let from_record = record.map(|record| check_at_load(digest, Some(record), policy, mirrors));
    let from_bundle = bundle.map(|bundle| check_bundle(bytes, bundle, policy));
    accept(policy, from_record.into_iter().chain(from_bundle))
}

/// Checks the signatures of the manifest with `manifest_digest`, pulled
/// for the repository `repository` (`REGISTRY/REPOSITORY`, see
/// [`distribution::Mirrors::signed_repository`]), against the keys of
/// `policy`: the first signature by a trusted key whose payload is cosign's
/// type and names this digest and this repository wins. Without keys there
/// is nothing to check (`Ok(None)`) unless signatures are required.
pub fn verify(
    manifest_digest: &str,
    repository: &str,
    signatures: &[CosignSignature],
    policy: &SignaturePolicy,
) -> Result<Option<Verified>, SignatureError> {
    if !policy.has_signers() {
        return if policy.required { Err(SignatureError::NoKeys) } else { Ok(None) };
    }
    if signatures.is_empty() {
        return if policy.required { Err(SignatureError::Unsigned) } else { Ok(None) };
    }
    let mut problems = Vec::new();
    for (index, signature) in signatures.iter().enumerate() {
        let number = index + 1;
        match signer(signature, policy, manifest_digest, repository) {
            Ok(signer) => return Ok(Some(Verified { signer, digest: manifest_digest.to_string(), from_bundle: false })),
            Err(problem) => problems.push(format!("signature {number} {problem}")),
        }
    }
    Err(SignatureError::Untrusted { manifest_digest: manifest_digest.to_string(), signers: policy.signers(), problems })
}

/// Why a keyless signature cannot count for a plugin whose policy has no
/// keyless identities: none configured, or the plugin names its own signers.
const NO_KEYLESS_IDENTITY: &str = "is keyless, and the configuration trusts no keyless identity for this plugin \
     (signatures.trusted_root and signatures.identities, or plugins.NAME.identities)";

/// Who made `signature`, if a signer the policy trusts did and it signs
/// `manifest_digest` in `repository`; else what is wrong with it, to follow
/// "signature N".
fn signer(signature: &CosignSignature, policy: &SignaturePolicy, manifest_digest: &str, repository: &str) -> Result<String, String> {
    let payload = decode(&signature.payload).ok_or("has a payload that is not base64")?;
    let signer = match &signature.certificate {
        Some(certificate) => {
            let keyless = policy.keyless.as_ref().ok_or(NO_KEYLESS_IDENTITY)?;
            let bundle = signature.bundle.as_deref().ok_or("is keyless but has no transparency log bundle")?;
            let certificate = keyless::certificates_from_pem(certificate)
                .map_err(|error| format!("is keyless, and {error}"))?
                .into_iter()
                .next()
                .ok_or("is keyless but its certificate is empty")?;
            let evidence = keyless::KeylessSignature {
                certificate,
                signed: &payload,
                signature: &signature.signature,
                log_entry: keyless::LogEntry::from_cosign_bundle(bundle).map_err(|error| format!("is keyless, and {error}"))?,
            };
            keyless::verify(&keyless.root, &keyless.identities, &evidence).map_err(|error| format!("is keyless, and {error}"))?.to_string()
        }
        None => policy
            .keys
            .iter()
            .find(|key| signed_by(key, signature, &payload))
            .map(|key| key.name.clone())
            .ok_or("is not by a trusted key")?,
    };
    let signed: SimpleSigning =
        serde_json::from_slice(&payload).map_err(|error| format!("has a payload that is not cosign's simple signing: {error}"))?;
    let critical = &signed.critical;
    if critical.type_name != CRITICAL_TYPE_NAME {
        return Err(format!("(by {signer}) is of the type {:?}, not cosign's {CRITICAL_TYPE_NAME:?}", critical.type_name));
    }
    let named = &critical.image.docker_manifest_digest;
    if named != manifest_digest {
        return Err(format!("(by {signer}) signs {named:?}, another manifest"));
    }
    let named = &critical.identity.docker_reference;
    if docker_hub_as_one(named) != docker_hub_as_one(repository) {
        return Err(format!(
            "(by {signer}) signs it in the repository {named:?}, and it is installed from {repository:?} \
             (a pack pulled from a mirror is signed as the repository [registry] mirrors maps it to)"
        ));
    }
    Ok(signer)
}

/// Checks the component with SHA-256 `digest` (hex) at load: that the
/// provenance record's manifest is the one signed and names these exact
/// bytes, and that a trusted key signed it. Returns who signed it; `None`
/// when the policy neither requires nor can check a signature.
pub fn check_at_load(
    digest: &str,
    provenance: Option<&Provenance>,
    policy: &SignaturePolicy,
    mirrors: &distribution::Mirrors,
) -> Result<Option<Verified>, SignatureError> {
    let Some(provenance) = provenance else {
        return if policy.required { Err(SignatureError::Unsigned) } else { Ok(None) };
    };
    let manifest = decode(&provenance.manifest).ok_or_else(|| SignatureError::Damaged("the manifest is not base64".into()))?;
    let manifest_digest = distribution::sha256_digest(&manifest);
    if manifest_digest != provenance.manifest_digest {
        return Err(SignatureError::Damaged(format!(
            "the manifest's digest is {manifest_digest}, and the record says {}",
            provenance.manifest_digest
        )));
    }
    let reference =
        distribution::PackReference::parse(&provenance.reference).map_err(|error| SignatureError::Damaged(error.to_string()))?;
    let layer = distribution::pack_layer(&reference, &manifest).map_err(|error| SignatureError::Damaged(error.to_string()))?;
    let actual = format!("sha256:{digest}");
    if layer.digest != actual {
        return Err(SignatureError::NotTheSignedBytes { expected: layer.digest, actual });
    }
    verify(&provenance.manifest_digest, &mirrors.signed_repository(&reference), &provenance.signatures, policy)
}

/// A repository with Docker Hub's two names as one: cosign signs a Docker
/// Hub pack as `index.docker.io/...`, the host binds `docker.io/...`.
fn docker_hub_as_one(repository: &str) -> &str {
    match repository.strip_prefix("index.docker.io/") {
        Some(rest) => &repository[repository.len() - rest.len() - "docker.io/".len()..],
        None => repository,
    }
}

/// A signature [`sign`] made: the simple-signing payload, the signature
/// (base64), and the public key that checks it.
pub struct MadeSignature {
    /// The simple-signing payload signed.
    pub payload: Vec<u8>,
    /// The signature, base64, as cosign stores it.
    pub signature: String,
    public_key_pem: String,
}

impl MadeSignature {
    /// Whether `signature` (base64), of this same payload, was made with the
    /// same key: one this key made before, which the new one replaces
    /// (another key's signature stays beside it).
    pub fn is_by_the_same_key(&self, signature: &str) -> bool {
        CosignVerificationKey::try_from_pem(self.public_key_pem.as_bytes())
            .and_then(|verifier| verifier.verify_signature(Signature::Base64Encoded(signature.as_bytes()), &self.payload))
            .is_ok()
    }
}

/// A signature made as cosign makes one: of the simple-signing payload that
/// names `manifest_digest` in the repository `docker_reference`
/// (`registry/repository`), with the private key `key_pem` (as
/// [`signing_key`] reads it).
pub fn sign(docker_reference: &str, manifest_digest: &str, key_pem: &[u8], password: &[u8]) -> Result<MadeSignature, String> {
    let keys = signing_key(key_pem, password)?;
    let public_key_pem = keys.public_key_to_pem().map_err(|error| format!("cannot read the signing key's public key: {error}"))?;
    let signer = keys
        .to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
        .map_err(|error| format!("the signing key is not an ECDSA P-256 key: {error}"))?;
    let payload = serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": manifest_digest},
            "type": CRITICAL_TYPE_NAME
        },
        "optional": null
    }))
    .expect("a JSON value serializes");
    let signature = signer.sign(&payload).map_err(|error| format!("cannot sign: {error}"))?;
    use base64::Engine as _;
    Ok(MadeSignature { payload, signature: base64::engine::general_purpose::STANDARD.encode(signature), public_key_pem })
}

/// The PEM labels of the private keys [`signing_key`] reads.
const COSIGN_KEY_LABELS: [&str; 2] = ["ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY"];
const PKCS8_ENCRYPTED_LABEL: &str = "ENCRYPTED PRIVATE KEY";
const PKCS8_LABEL: &str = "PRIVATE KEY";
const SEC1_LABEL: &str = "EC PRIVATE KEY";

/// A private key to sign with, from its PEM: cosign's `cosign.key` (as
/// `cosign generate-key-pair` and `prompt-host keygen` write it), an
/// encrypted PKCS#8 key (`openssl pkcs8 -topk8`), both decrypted with
/// `password`; an unencrypted PKCS#8 key; or a SEC1 key (`openssl ecparam
/// -genkey`, its EC PARAMETERS block before it or not).
pub fn signing_key(key_pem: &[u8], password: &[u8]) -> Result<SigStoreKeyPair, String> {
    use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
    let text = std::str::from_utf8(key_pem).map_err(|_| "the signing key is not a PEM file".to_string())?;
    let unreadable = |error: &dyn std::fmt::Display| format!("cannot read the signing key: {error}");
    let label = |label: &str| text.contains(&format!("-----BEGIN {label}-----"));
    // openssl's P-256 keys are read here, and given to sigstore as PKCS#8.
    let from_p256 = |key: Result<p256::SecretKey, String>| {
        let der = key?.to_pkcs8_der().map_err(|error| unreadable(&error))?;
        SigStoreKeyPair::from_der(der.as_bytes()).map_err(|error| unreadable(&error))
    };
    // An encrypted key that does not open: the likely reason first.
    let not_decrypted = || match password.is_empty() {
        true => "the key is encrypted: set COSIGN_PASSWORD to its password".to_string(),
        false => "the key did not decrypt with the password in COSIGN_PASSWORD: a wrong password, or a damaged file".to_string(),
    };
    if COSIGN_KEY_LABELS.iter().any(|cosign| label(cosign)) {
        SigStoreKeyPair::from_encrypted_pem(key_pem, password).map_err(|_| not_decrypted())
    } else if label(PKCS8_ENCRYPTED_LABEL) {
        let key = p256::SecretKey::from_pkcs8_encrypted_pem(text, password).map_err(|_| not_decrypted());
        from_p256(key)
    } else if label(SEC1_LABEL) {
        // Only the key's block: openssl writes an EC PARAMETERS block before it unless -noout.
        let start = text.find(&format!("-----BEGIN {SEC1_LABEL}-----")).expect("the label was found");
        let end_marker = format!("-----END {SEC1_LABEL}-----");
        let end = text[start..].find(&end_marker).map_or(text.len(), |end| start + end + end_marker.len());
        let key = p256::SecretKey::from_sec1_pem(&text[start..end])
            .map_err(|error| unreadable(&format!("{error} (a SEC1 key of ECDSA P-256, openssl's prime256v1)")));
        from_p256(key)
    } else if label(PKCS8_LABEL) {
        SigStoreKeyPair::from_pem(key_pem).map_err(|error| unreadable(&error))
    } else {
        Err("cannot read the signing key: it is none of cosign.key (prompt-host keygen, cosign generate-key-pair), \
             a PKCS#8 PEM key (encrypted or not) or a SEC1 PEM key (openssl ecparam -genkey)"
            .to_string())
    }
}

/// A new ECDSA P-256 key pair, as `cosign generate-key-pair` writes it: the
/// private key in cosign's encrypted format (scrypt and NaCl secretbox,
/// `ENCRYPTED SIGSTORE PRIVATE KEY`) under `password`, and the public key
/// (`PUBLIC KEY`, SubjectPublicKeyInfo). Returns both PEMs.
pub fn generate_key_pair(password: &[u8]) -> Result<(String, String), String> {
    let keys = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .map_err(|error| format!("cannot generate a key pair: {error}"))?;
    let private = keys.private_key_to_encrypted_pem(password).map_err(|error| format!("cannot encrypt the private key: {error}"))?;
    let public = keys.public_key_to_pem().map_err(|error| format!("cannot write the public key: {error}"))?;
    // sigstore's PEMs end their lines with CRLF; cosign's with LF.
    Ok((private.replace("\r\n", "\n"), public.replace("\r\n", "\n")))
}

/// A Sigstore bundle (v0.3, as `cosign sign-blob --new-bundle-format`
/// writes it), the parts used.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SigstoreBundle {
    media_type: String,
    verification_material: VerificationMaterial,
    message_signature: MessageSignature,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VerificationMaterial {
    certificate: Option<RawBytes>,
    x509_certificate_chain: Option<CertificateChain>,
    #[serde(default)]
    tlog_entries: Vec<TlogEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBytes {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct CertificateChain {
    certificates: Vec<RawBytes>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogEntry {
    log_index: String,
    log_id: LogId,
    integrated_time: String,
    inclusion_promise: Option<InclusionPromise>,
    canonicalized_body: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InclusionPromise {
    signed_entry_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: MessageDigest,
    signature: String,
}

#[derive(Deserialize)]
struct MessageDigest {
    algorithm: String,
    digest: String,
}

/// Checks the Sigstore bundle beside a pack file (`bundle`, its JSON)
/// against the policy: its signature must be of exactly `bytes`, by a
/// trusted key or (keyless) by an allowed identity. Returns who signed them;
/// `None` when the policy can check no signature and requires none.
pub fn check_bundle(bytes: &[u8], bundle: &[u8], policy: &SignaturePolicy) -> Result<Option<Verified>, SignatureError> {
    if !policy.has_signers() {
        return if policy.required { Err(SignatureError::NoKeys) } else { Ok(None) };
    }
    let damaged = |why: String| SignatureError::Damaged(format!("its Sigstore bundle ({BUNDLE_SUFFIX}) {why}"));
    let bundle: SigstoreBundle = serde_json::from_slice(bundle).map_err(|error| damaged(format!("cannot be read: {error}")))?;
    if !bundle.media_type.starts_with("application/vnd.dev.sigstore.bundle") {
        return Err(damaged(format!("has the media type {:?}, not a Sigstore bundle's", bundle.media_type)));
    }
    let digest = distribution::sha256_digest(bytes);
    let message = &bundle.message_signature;
    let signed_digest = decode(&message.message_digest.digest).map(|raw| format!("sha256:{}", hex(&raw)));
    if message.message_digest.algorithm != "SHA2_256" || signed_digest.as_deref() != Some(digest.as_str()) {
        return Err(SignatureError::NotTheSignedBytes { expected: signed_digest.unwrap_or_default(), actual: digest });
    }
    let material = &bundle.verification_material;
    let certificate =
        material.certificate.as_ref().or_else(|| material.x509_certificate_chain.as_ref().and_then(|chain| chain.certificates.first()));
    let signer = match certificate {
        Some(certificate) => {
            let keyless = policy.keyless.as_ref().ok_or_else(|| untrusted(&digest, policy, NO_KEYLESS_IDENTITY))?;
            let entry =
                material.tlog_entries.first().ok_or_else(|| untrusted(&digest, policy, "is keyless but has no transparency log entry"))?;
            let log_entry = keyless::LogEntry {
                body: entry.canonicalized_body.clone(),
                integrated_time: entry.integrated_time.parse().map_err(|_| damaged("has an integratedTime that is not a number".into()))?,
                log_id: decode(&entry.log_id.key_id)
                    .map(|raw| hex(&raw))
                    .ok_or_else(|| damaged("has a log id that is not base64".into()))?,
                log_index: entry.log_index.parse().map_err(|_| damaged("has a logIndex that is not a number".into()))?,
                signed_entry_timestamp: entry
                    .inclusion_promise
                    .as_ref()
                    .map(|promise| promise.signed_entry_timestamp.clone())
                    .ok_or_else(|| untrusted(&digest, policy, "is keyless but its log entry has no signed timestamp (inclusionPromise)"))?,
            };
            let evidence = keyless::KeylessSignature {
                certificate: decode(&certificate.raw_bytes).ok_or_else(|| damaged("has a certificate that is not base64".into()))?,
                signed: bytes,
                signature: &message.signature,
                log_entry,
            };
            keyless::verify(&keyless.root, &keyless.identities, &evidence)
                .map_err(|error| untrusted(&digest, policy, &format!("is keyless, and {error}")))?
                .to_string()
        }
        None => {
            let signature = CosignSignature { signature: message.signature.clone(), ..CosignSignature::default() };
            policy
                .keys
                .iter()
                .find(|key| signed_by(key, &signature, bytes))
                .map(|key| key.name.clone())
                .ok_or_else(|| untrusted(&digest, policy, "is not by a trusted key"))?
        }
    };
    Ok(Some(Verified { signer, digest, from_bundle: true }))
}

fn untrusted(digest: &str, policy: &SignaturePolicy, problem: &str) -> SignatureError {
    SignatureError::Untrusted {
        manifest_digest: digest.to_string(),
        signers: policy.signers(),
        problems: vec![format!("the bundle's signature {problem}")],
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn signed_by(key: &TrustedKey, signature: &CosignSignature, payload: &[u8]) -> bool {
    CosignVerificationKey::try_from_pem(key.pem.as_bytes())
        .and_then(|verifier| verifier.verify_signature(Signature::Base64Encoded(signature.signature.as_bytes()), payload))
        .is_ok()
}

fn decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use sigstore::crypto::SigningScheme;
    use sigstore::crypto::signing_key::SigStoreSigner;

    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
    const REPOSITORY: &str = "r.example/acme/pack";
    use crate::distribution::Mirrors;

    #[test]
    fn docker_hubs_two_names_are_one_repository_and_nothing_else_is() {
        // Issue "Hardening, round 3", item 13: real cosign signs a Docker Hub
        // pack as index.docker.io/..., the host bound docker.io/....
        assert_eq!(docker_hub_as_one("index.docker.io/acme/pack"), "docker.io/acme/pack");
        assert_eq!(docker_hub_as_one("docker.io/acme/pack"), "docker.io/acme/pack");
        assert_eq!(docker_hub_as_one("ghcr.io/acme/pack"), "ghcr.io/acme/pack");
        assert_eq!(docker_hub_as_one("evil.index.docker.io/acme/pack"), "evil.index.docker.io/acme/pack");
    }

    fn signer() -> (SigStoreSigner, TrustedKey) {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1.create_signer().unwrap();
        let pem = signer.to_sigstore_keypair().unwrap().public_key_to_pem().unwrap();
        (signer, TrustedKey::new("acme.pub".into(), pem).unwrap())
    }

    fn payload(digest: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "critical": {
                "identity": {"docker-reference": "r.example/acme/pack"},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature"
            },
            "optional": null
        }))
        .unwrap()
    }

    fn sign(signer: &SigStoreSigner, payload: &[u8]) -> CosignSignature {
        CosignSignature { payload: B64.encode(payload), signature: B64.encode(signer.sign(payload).unwrap()), ..CosignSignature::default() }
    }

    fn digest(byte: char) -> String {
        format!("sha256:{}", byte.to_string().repeat(64))
    }

    fn policy(keys: Vec<TrustedKey>) -> SignaturePolicy {
        SignaturePolicy { required: true, keys, keyless: None }
    }

    #[test]
    fn a_signature_by_a_trusted_key_of_this_digest_is_accepted_and_names_the_key() {
        let (signer, key) = signer();
        let signature = sign(&signer, &payload(&digest('a')));
        let verified = verify(&digest('a'), REPOSITORY, &[signature], &policy(vec![key])).unwrap();
        assert_eq!(verified, Some(Verified { signer: "acme.pub".into(), digest: digest('a'), from_bundle: false }));
    }

    #[test]
    fn a_signature_of_another_digest_by_another_key_or_altered_is_refused_saying_which() {
        let (signer, key) = signer();
        let (stranger, _) = self::signer();
        let of_other_digest = sign(&signer, &payload(&digest('b')));
        let by_stranger = sign(&stranger, &payload(&digest('a')));
        let mut altered = sign(&signer, &payload(&digest('a')));
        altered.payload = B64.encode(payload(&digest('c')));
        let error = verify(&digest('a'), REPOSITORY, &[of_other_digest, by_stranger, altered], &policy(vec![key])).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "no signature of {} is by a trusted signer (acme.pub): signature 1 (by acme.pub) signs {:?}, another manifest; \
                 signature 2 is not by a trusted key; signature 3 is not by a trusted key",
                digest('a'),
                digest('b')
            )
        );
    }

    #[test]
    fn without_a_signature_or_a_key_a_required_signature_is_refused_and_an_optional_one_is_not_checked() {
        let (_, key) = signer();
        assert_eq!(verify(&digest('a'), REPOSITORY, &[], &policy(vec![key.clone()])), Err(SignatureError::Unsigned));
        assert_eq!(verify(&digest('a'), REPOSITORY, &[], &policy(vec![])), Err(SignatureError::NoKeys));
        let optional = SignaturePolicy { required: false, keys: vec![key], keyless: None };
        assert_eq!(verify(&digest('a'), REPOSITORY, &[], &optional), Ok(None));
        assert_eq!(check_at_load("00", None, &optional, &Mirrors::default()), Ok(None));
        assert_eq!(check_at_load("00", None, &policy(vec![]), &Mirrors::default()), Err(SignatureError::Unsigned));
    }

    #[test]
    fn at_load_the_bytes_must_be_the_ones_the_signed_manifest_names() {
        let (signer, key) = signer();
        let component = "1".repeat(64);
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": distribution::WASM_CONFIG_MEDIA_TYPE, "digest": digest('0'), "size": 2},
            "layers": [{"mediaType": distribution::WASM_LAYER_MEDIA_TYPE, "digest": format!("sha256:{component}"), "size": 8}],
        }))
        .unwrap();
        let manifest_digest = distribution::sha256_digest(&manifest);
        let provenance = Provenance {
            reference: format!("oci://r.example/acme/pack@{manifest_digest}"),
            manifest_digest: manifest_digest.clone(),
            manifest: B64.encode(&manifest),
            signatures: vec![sign(&signer, &payload(&manifest_digest))],
        };
        let policy = policy(vec![key]);
        let verified = check_at_load(&component, Some(&provenance), &policy, &Mirrors::default()).unwrap();
        assert_eq!(verified.map(|verified| verified.signer), Some("acme.pub".to_string()));
        assert_eq!(
            check_at_load(&"2".repeat(64), Some(&provenance), &policy, &Mirrors::default()),
            Err(SignatureError::NotTheSignedBytes {
                expected: format!("sha256:{component}"),
                actual: format!("sha256:{}", "2".repeat(64))
            })
        );
        let swapped = Provenance { manifest: B64.encode(b"{}"), ..provenance };
        let error = check_at_load(&component, Some(&swapped), &policy, &Mirrors::default()).unwrap_err();
        assert!(matches!(&error, SignatureError::Damaged(why) if why.starts_with("the manifest's digest is sha256:44136fa")), "{error}");
    }
}
