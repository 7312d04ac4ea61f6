//! Keyless signatures, as Sigstore makes them: the signer proves an identity
//! (an email address or a URI) to an OpenID issuer, a certificate authority
//! (Fulcio) issues a certificate for a fresh key naming that identity and
//! issuer and valid for minutes, and a transparency log (Rekor) signs a
//! timestamp of the signature (its SignedEntryTimestamp). The signature
//! counts when:
//! - the log's timestamp is signed by a log the trusted root names, and
//!   records this signature, this certificate and this payload;
//! - the certificate chains to a CA the trusted root names, for code
//!   signing, at the time the log recorded (the certificate has expired since),
//!   within one CA entry of the root trusted at that time (its `validFor`),
//!   through that entry's own certificates only: the intermediates a
//!   signature ships are not used;
//! - the certificate names an identity and issuer the configuration lists:
//!   there is no match-anything default;
//! - the certificate's key made the signature.
//!
//! The trusted root is a file (Sigstore's `trusted_root.json`), so this works
//! offline. sigstore-rs checks chains only inside its registry client, which
//! fetches without bounds, so the chain is checked here by rustls-webpki,
//! and the signatures by sigstore-rs's keys.

use std::collections::BTreeMap;

use rustls_pki_types::{CertificateDer, UnixTime};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sigstore::crypto::{CosignVerificationKey, Signature};
use x509_cert::der::{Decode, DecodePem, Encode};

/// The CAs and transparency logs keyless signatures are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedRoot {
    /// The certificate authorities, each entry of the root on its own: a
    /// certificate chains within one entry, at a time that entry is trusted
    /// for, so a retired intermediate never borrows a current entry's root.
    authorities: Vec<Authority>,
    /// Transparency log keys (DER SubjectPublicKeyInfo), by log id (hex
    /// SHA-256 of the key), each with the time the root trusts it for.
    logs: BTreeMap<String, (Vec<u8>, Validity)>,
    /// Certificate transparency log keys, the same way: the logs whose
    /// signed certificate timestamps (SCTs) a certificate must carry.
    ct_logs: BTreeMap<String, (Vec<u8>, Validity)>,
}

/// One certificate authority of a trusted root: its chain (DER), the last
/// a trust anchor and the others intermediates, and the time the root trusts
/// the whole entry for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    anchor: Vec<u8>,
    intermediates: Vec<Vec<u8>>,
    validity: Validity,
}

/// The span of time a trusted root trusts a CA or a log key for (its
/// `validFor`), in Unix seconds: a CA retired or a log key rotated out
/// vouches for nothing recorded after its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Validity {
    start: i64,
    end: i64,
}

impl Validity {
    fn from_file(valid_for: Option<&ValidFor>) -> Result<Validity, String> {
        let seconds = |time: &Option<String>, default: i64| match time {
            None => Ok(default),
            Some(text) => chrono::DateTime::parse_from_rfc3339(text)
                .map(|time| time.timestamp())
                .map_err(|error| format!("its validFor time {text:?} is not an RFC 3339 time: {error}")),
        };
        let valid_for = valid_for.cloned().unwrap_or_default();
        Ok(Validity { start: seconds(&valid_for.start, i64::MIN)?, end: seconds(&valid_for.end, i64::MAX)? })
    }

    fn contains(&self, time: i64) -> bool {
        self.start <= time && time <= self.end
    }
}

/// An identity a keyless signature may be made by: in the configuration,
/// what a certificate must name; read from a certificate, what it names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The certificate's subject alternative name: an email address or a URI.
    pub identity: String,
    /// The OpenID issuer that vouched for it.
    pub issuer: String,
    /// Fulcio's source repository extension (a CI build's repository,
    /// 1.3.6.1.4.1.57264.1.12), when pinned. Trusting a reusable workflow's
    /// identity trusts every repository that calls it, unless this is pinned.
    #[serde(default)]
    pub source_repository: Option<String>,
    /// Fulcio's source repository ref extension (1.3.6.1.4.1.57264.1.14),
    /// when pinned: `refs/tags/v1`, `refs/heads/main`.
    #[serde(default)]
    pub source_ref: Option<String>,
    /// Fulcio's build config extension (1.3.6.1.4.1.57264.1.18): the
    /// workflow that ran, with its ref, when pinned.
    #[serde(default)]
    pub workflow: Option<String>,
}

impl Identity {
    /// Whether `named` (what a certificate names) is this identity: the same
    /// identity and issuer, and each pinned extension the same.
    fn allows(&self, named: &Identity) -> bool {
        let pinned = |pin: &Option<String>, value: &Option<String>| pin.is_none() || pin == value;
        self.identity == named.identity
            && self.issuer == named.issuer
            && pinned(&self.source_repository, &named.source_repository)
            && pinned(&self.source_ref, &named.source_ref)
            && pinned(&self.workflow, &named.workflow)
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {}", self.identity, self.issuer)?;
        for (what, value) in [("source repository", &self.source_repository), ("ref", &self.source_ref), ("workflow", &self.workflow)] {
            if let Some(value) = value {
                write!(f, ", {what} {value}")?;
            }
        }
        write!(f, ")")
    }
}

/// The parts of a keyless signature, whichever format carried them (a
/// cosign signature layer's annotations, or a Sigstore bundle).
pub struct KeylessSignature<'a> {
    /// The signing certificate, DER.
    pub certificate: Vec<u8>,
    /// The signed bytes.
    pub signed: &'a [u8],
    /// Their signature, base64.
    pub signature: &'a str,
    /// The transparency log's record of it.
    pub log_entry: LogEntry,
}

/// A transparency log entry and the log's signature of it (a
/// SignedEntryTimestamp).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The entry (a hashedrekord), base64.
    pub body: String,
    /// When the log recorded the entry, in seconds since the Unix epoch:
    /// the time the certificate and the log's key are checked at.
    #[serde(rename = "integratedTime")]
    pub integrated_time: i64,
    /// The log's id, hex.
    #[serde(rename = "logID")]
    pub log_id: String,
    /// The entry's index in the log.
    #[serde(rename = "logIndex")]
    pub log_index: i64,
    /// The log's signature over the entry's canonical JSON, base64.
    #[serde(skip)]
    pub signed_entry_timestamp: String,
}

/// cosign's `dev.sigstore.cosign/bundle` annotation.
#[derive(Deserialize)]
struct CosignBundle {
    #[serde(rename = "SignedEntryTimestamp")]
    signed_entry_timestamp: String,
    #[serde(rename = "Payload")]
    payload: LogEntry,
}

impl LogEntry {
    /// The entry in cosign's bundle annotation.
    pub fn from_cosign_bundle(text: &str) -> Result<LogEntry, String> {
        let bundle: CosignBundle =
            serde_json::from_str(text).map_err(|error| format!("its transparency log bundle is not cosign's: {error}"))?;
        Ok(LogEntry { signed_entry_timestamp: bundle.signed_entry_timestamp, ..bundle.payload })
    }

    /// What the log signs: the entry's canonical JSON (RFC 8785: keys
    /// sorted, no spaces; the field order above is the sorted one).
    fn canonical(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an entry serializes")
    }
}

/// The hashedrekord entry a log records for a signature.
#[derive(Deserialize)]
struct HashedRekord {
    kind: String,
    spec: HashedRekordSpec,
}

#[derive(Deserialize)]
struct HashedRekordSpec {
    data: HashedRekordData,
    signature: HashedRekordSignature,
}

#[derive(Deserialize)]
struct HashedRekordData {
    hash: HashedRekordHash,
}

#[derive(Deserialize)]
struct HashedRekordHash {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
struct HashedRekordSignature {
    content: String,
    #[serde(rename = "publicKey")]
    public_key: HashedRekordKey,
}

#[derive(Deserialize)]
struct HashedRekordKey {
    content: String,
}

/// Sigstore's trusted_root.json, the parts used.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrustedRootFile {
    #[serde(default)]
    tlogs: Vec<TransparencyLog>,
    #[serde(default)]
    certificate_authorities: Vec<CertificateAuthority>,
    #[serde(default)]
    ctlogs: Vec<TransparencyLog>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TransparencyLog {
    public_key: PublicKey,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublicKey {
    raw_bytes: String,
    valid_for: Option<ValidFor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateAuthority {
    cert_chain: CertChain,
    valid_for: Option<ValidFor>,
}

#[derive(Clone, Default, Deserialize)]
struct ValidFor {
    start: Option<String>,
    end: Option<String>,
}

#[derive(Deserialize)]
struct CertChain {
    certificates: Vec<RawCertificate>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCertificate {
    raw_bytes: String,
}

/// Fulcio's certificate extension naming the OpenID issuer, as a DER
/// UTF8String (1.3.6.1.4.1.57264.1.8), and its older form, raw bytes
/// (1.3.6.1.4.1.57264.1.1).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Fulcio's source repository, source repository ref and build config
/// extensions, each a DER UTF8String.
const SOURCE_REPOSITORY: &str = "1.3.6.1.4.1.57264.1.12";
const SOURCE_REF: &str = "1.3.6.1.4.1.57264.1.14";
const BUILD_CONFIG: &str = "1.3.6.1.4.1.57264.1.18";
/// The code signing extended key usage, 1.3.6.1.5.5.7.3.3, as DER content.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

impl TrustedRoot {
    /// Reads Sigstore's trusted_root.json: its certificate authorities and
    /// transparency logs.
    pub fn from_json(text: &str) -> Result<TrustedRoot, String> {
        let file: TrustedRootFile = serde_json::from_str(text).map_err(|error| format!("not a Sigstore trusted root: {error}"))?;
        let mut root = TrustedRoot { authorities: Vec::new(), logs: read_logs(&file.tlogs)?, ct_logs: read_logs(&file.ctlogs)? };
        for authority in &file.certificate_authorities {
            let chain: Vec<Vec<u8>> =
                authority.cert_chain.certificates.iter().map(|certificate| decode(&certificate.raw_bytes)).collect::<Result<_, _>>()?;
            let Some((anchor, intermediates)) = chain.split_last() else { continue };
            webpki::anchor_from_trusted_cert(&CertificateDer::from(anchor.as_slice()))
                .map_err(|error| format!("a certificate authority's root is not a usable CA certificate: {error}"))?;
            root.authorities.push(Authority {
                anchor: anchor.clone(),
                intermediates: intermediates.to_vec(),
                validity: Validity::from_file(authority.valid_for.as_ref())?,
            });
        }
        if root.authorities.is_empty() || root.logs.is_empty() || root.ct_logs.is_empty() {
            return Err("it names no certificate authority, no transparency log (tlogs) or no certificate transparency log (ctlogs): \
                 keyless signatures need all three"
                .into());
        }
        Ok(root)
    }
}

/// A trusted root's logs (its `tlogs` or its `ctlogs`), by log id.
fn read_logs(logs: &[TransparencyLog]) -> Result<BTreeMap<String, (Vec<u8>, Validity)>, String> {
    let mut read = BTreeMap::new();
    for log in logs {
        let key = decode(&log.public_key.raw_bytes)?;
        CosignVerificationKey::try_from_der(&key).map_err(|error| format!("a transparency log's key is not usable: {error}"))?;
        let validity = Validity::from_file(log.public_key.valid_for.as_ref())?;
        read.insert(hex(&Sha256::digest(&key)), (key, validity));
    }
    Ok(read)
}

/// Checks a keyless signature against the trusted root and the identities
/// allowed; returns the identity that signed.
pub fn verify(root: &TrustedRoot, identities: &[Identity], signature: &KeylessSignature<'_>) -> Result<Identity, String> {
    let entry = &signature.log_entry;
    let (log_key, log_validity) = root.logs.get(&entry.log_id).ok_or("its transparency log is not one the trusted root names")?;
    if !log_validity.contains(entry.integrated_time) {
        return Err("its transparency log's key was not trusted at the time the log recorded (validFor in the trusted root)".into());
    }
    CosignVerificationKey::try_from_der(log_key)
        .and_then(|key| key.verify_signature(Signature::Base64Encoded(entry.signed_entry_timestamp.as_bytes()), &entry.canonical()))
        .map_err(|_| "its transparency log timestamp is not signed by the log")?;
    check_log_records(entry, signature)?;

    let issuer_key = check_chain(root, &signature.certificate, entry.integrated_time)?;
    check_timestamps(root, &signature.certificate, &issuer_key)?;

    let named = certificate_identities(&signature.certificate)?;
    let Some(named) = named.iter().find(|named| identities.iter().any(|allowed| allowed.allows(named))).cloned() else {
        let allowed: Vec<String> = identities.iter().map(Identity::to_string).collect();
        let named: Vec<String> = named.iter().map(Identity::to_string).collect();
        return Err(format!(
            "it is signed by {}, not by an identity the configuration allows ({})",
            named.join(" and "),
            allowed.join(", ")
        ));
    };
    let spki = x509_cert::Certificate::from_der(&signature.certificate)
        .and_then(|certificate| certificate.tbs_certificate().subject_public_key_info().to_der())
        .map_err(|error| format!("its certificate cannot be read: {error}"))?;
    CosignVerificationKey::try_from_der(&spki)
        .and_then(|key| key.verify_signature(Signature::Base64Encoded(signature.signature.as_bytes()), signature.signed))
        .map_err(|_| "its signature was not made by its certificate's key")?;
    Ok(named)
}

/// Checks that the certificate `leaf` (DER) chains, for code signing at
/// `time` (the log's), within one certificate authority of the trusted root
/// that was trusted at that time: through that entry's own intermediates to
/// its own anchor. Intermediates that came with the signature are not used:
/// a retired intermediate shipped beside a leaf it issued would otherwise
/// chain to the root a current entry shares with it. Returns the key
/// (DER SubjectPublicKeyInfo) of the entry's certificate that issued it.
fn check_chain(root: &TrustedRoot, leaf: &[u8], time: i64) -> Result<Vec<u8>, String> {
    let current: Vec<&Authority> = root.authorities.iter().filter(|authority| authority.validity.contains(time)).collect();
    if current.is_empty() {
        return Err("no certificate authority of the trusted root was trusted at the time the log recorded (validFor)".into());
    }
    let leaf = CertificateDer::from(leaf);
    let certificate = webpki::EndEntityCert::try_from(&leaf).map_err(|error| format!("its certificate cannot be read: {error}"))?;
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(time).map_err(|_| "its transparency log time is negative")?,
    ));
    let mut last_error = None;
    for authority in current {
        let anchor_der = CertificateDer::from(authority.anchor.as_slice());
        let anchor = webpki::anchor_from_trusted_cert(&anchor_der).expect("checked when the root was read");
        let intermediates: Vec<CertificateDer<'_>> =
            authority.intermediates.iter().map(|der| CertificateDer::from(der.as_slice())).collect();
        match certificate.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &intermediates,
            at,
            webpki::KeyUsage::required(CODE_SIGNING),
            None,
            None,
        ) {
            // The key of the certificate that issued the leaf on the path found: a
            // re-keyed certificate of the same name in the entry is not it.
            Ok(path) => return Ok(path.issuer_spki().as_ref().to_vec()),
            Err(error) => last_error = Some(error),
        }
    }
    Err(format!(
        "its certificate does not chain to a trusted CA for code signing at the time the log recorded: {}",
        last_error.expect("at least one authority was tried")
    ))
}

/// Fulcio's embedded SCT list extension (RFC 6962, section 3.3).
const SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";

/// Checks that the certificate `leaf` (DER) was logged to certificate
/// transparency: one of its embedded signed certificate timestamps (SCTs)
/// is signed by a CT log the trusted root names, at a time the root trusts
/// that log for, over the precertificate (the certificate without its SCT
/// list, and the key hash of `issuer_key`, its issuer's). Offline: the
/// SCT carries the log's signature, the trusted root its key.
fn check_timestamps(root: &TrustedRoot, leaf: &[u8], issuer_key: &[u8]) -> Result<(), String> {
    use x509_cert::der::{Any, Tagged};
    let unreadable = |error: x509_cert::der::Error| format!("its certificate cannot be read: {error}");
    let certificate = x509_cert::Certificate::from_der(leaf).map_err(unreadable)?;
    let extensions = certificate.tbs_certificate().extensions().map(|extensions| extensions.as_slice()).unwrap_or_default();
    let list = extensions
        .iter()
        .find(|extension| extension.extn_id.to_string() == SCT_LIST)
        .ok_or("its certificate carries no signed certificate timestamp (SCT): it was not logged to certificate transparency")?;
    let list = x509_cert::der::asn1::OctetString::from_der(list.extn_value.as_bytes()).map_err(unreadable)?;
    // The precertificate's TBS: the certificate's, without the SCT list.
    let mut fields = Vec::<Any>::from_der(&certificate.tbs_certificate().to_der().map_err(unreadable)?).map_err(unreadable)?;
    for field in &mut fields {
        if field.tag().is_context_specific() && field.tag().number().value() == 3 {
            let kept: Vec<x509_cert::ext::Extension> = Vec::<x509_cert::ext::Extension>::from_der(field.value())
                .map_err(unreadable)?
                .into_iter()
                .filter(|extension| extension.extn_id.to_string() != SCT_LIST)
                .collect();
            *field = Any::new(field.tag(), kept.to_der().map_err(unreadable)?).map_err(unreadable)?;
        }
    }
    let precertificate = fields.to_der().map_err(unreadable)?;
    let issuer_key_hash = Sha256::digest(issuer_key);
    let mut problems = Vec::new();
    for sct in parse_sct_list(list.as_bytes()).ok_or("its certificate's SCT list cannot be read")? {
        let Some((log_key, validity)) = root.ct_logs.get(&hex(sct.log_id)) else {
            problems.push("one is by a CT log the trusted root does not name".to_string());
            continue;
        };
        if !validity.contains((sct.timestamp_ms / 1000) as i64) {
            problems.push("one is by a CT log the trusted root did not trust at its time (validFor)".to_string());
            continue;
        }
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(&sct.timestamp_ms.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(&(precertificate.len() as u32).to_be_bytes()[1..]);
        signed.extend_from_slice(&precertificate);
        signed.extend_from_slice(&(sct.extensions.len() as u16).to_be_bytes());
        signed.extend_from_slice(sct.extensions);
        let verified =
            CosignVerificationKey::try_from_der(log_key).and_then(|key| key.verify_signature(Signature::Raw(sct.signature), &signed));
        match verified {
            Ok(()) => return Ok(()),
            Err(_) => problems.push("one is not signed by its CT log over this certificate".to_string()),
        }
    }
    Err(format!("its certificate's signed certificate timestamps (SCTs) do not verify: {}", problems.join("; ")))
}

/// One SCT (RFC 6962, section 3.2), the parts checked.
struct Sct<'a> {
    log_id: &'a [u8],
    timestamp_ms: u64,
    extensions: &'a [u8],
    signature: &'a [u8],
}

/// A TLS-encoded SignedCertificateTimestampList; `None` if malformed.
fn parse_sct_list(bytes: &[u8]) -> Option<Vec<Sct<'_>>> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = bytes.split_at_checked(n)?;
        *bytes = rest;
        Some(taken)
    }
    fn take_u16_prefixed<'a>(bytes: &mut &'a [u8]) -> Option<&'a [u8]> {
        let length = u16::from_be_bytes(take(bytes, 2)?.try_into().ok()?);
        take(bytes, length as usize)
    }
    let mut list = bytes;
    let mut entries = take_u16_prefixed(&mut list)?;
    let mut scts = Vec::new();
    while !entries.is_empty() {
        let mut sct = take_u16_prefixed(&mut entries)?;
        if take(&mut sct, 1)? != [0] {
            continue; // Only v1 SCTs exist.
        }
        let log_id = take(&mut sct, 32)?;
        let timestamp_ms = u64::from_be_bytes(take(&mut sct, 8)?.try_into().ok()?);
        let extensions = take_u16_prefixed(&mut sct)?;
        let _algorithms = take(&mut sct, 2)?;
        let signature = take_u16_prefixed(&mut sct)?;
        scts.push(Sct { log_id, timestamp_ms, extensions, signature });
    }
    Some(scts)
}

/// Checks that the log entry records this signature: its hash of the signed
/// bytes, the signature itself and the certificate. Otherwise a timestamp of
/// some other entry could lend its time to this one.
fn check_log_records(entry: &LogEntry, signature: &KeylessSignature<'_>) -> Result<(), String> {
    let body = decode(&entry.body)?;
    let rekord: HashedRekord =
        serde_json::from_slice(&body).map_err(|error| format!("its transparency log entry is not a hashedrekord: {error}"))?;
    let spec = &rekord.spec;
    let recorded_key = decode(&spec.signature.public_key.content)?;
    let recorded_certificate = x509_cert::Certificate::from_pem(&recorded_key)
        .or_else(|_| x509_cert::Certificate::from_der(&recorded_key))
        .and_then(|certificate| certificate.to_der())
        .map_err(|_| "its transparency log entry records no certificate")?;
    let same = rekord.kind == "hashedrekord"
        && spec.data.hash.algorithm == "sha256"
        && spec.data.hash.value == hex(&Sha256::digest(signature.signed))
        && decode(&spec.signature.content)? == decode(signature.signature)?
        && recorded_certificate == signature.certificate;
    if same { Ok(()) } else { Err("its transparency log entry records another signature".into()) }
}

/// The identities a Fulcio certificate names (each email address and URI of
/// its subject alternative name), with the issuer that vouched for them.
fn certificate_identities(der: &[u8]) -> Result<Vec<Identity>, String> {
    let certificate = x509_cert::Certificate::from_der(der).map_err(|error| format!("its certificate cannot be read: {error}"))?;
    let tbs = certificate.tbs_certificate();
    let (_, names) = tbs
        .get_extension::<x509_cert::ext::pkix::SubjectAltName>()
        .map_err(|error| format!("its certificate's subject alternative name cannot be read: {error}"))?
        .ok_or("its certificate names no identity (no subject alternative name)")?;
    let named: Vec<String> = names
        .0
        .iter()
        .filter_map(|name| match name {
            x509_cert::ext::pkix::name::GeneralName::Rfc822Name(email) => Some(email.to_string()),
            x509_cert::ext::pkix::name::GeneralName::UniformResourceIdentifier(uri) => Some(uri.to_string()),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        return Err("its certificate names no email address or URI".into());
    }
    let extensions = tbs.extensions().map(|extensions| extensions.as_slice()).unwrap_or_default();
    let issuer = extensions
        .iter()
        .find(|extension| extension.extn_id.to_string() == ISSUER_V2)
        .and_then(|extension| {
            x509_cert::der::asn1::Utf8StringRef::from_der(extension.extn_value.as_bytes()).ok().map(|text| text.to_string())
        })
        .or_else(|| {
            extensions
                .iter()
                .find(|extension| extension.extn_id.to_string() == ISSUER_V1)
                .and_then(|extension| String::from_utf8(extension.extn_value.as_bytes().to_vec()).ok())
        })
        .ok_or("its certificate names no issuer (Fulcio's issuer extension)")?;
    let text_extension = |oid: &str| {
        extensions
            .iter()
            .find(|extension| extension.extn_id.to_string() == oid)
            .and_then(|extension| x509_cert::der::asn1::Utf8StringRef::from_der(extension.extn_value.as_bytes()).ok())
            .map(|text| text.to_string())
    };
    let (source_repository, source_ref, workflow) =
        (text_extension(SOURCE_REPOSITORY), text_extension(SOURCE_REF), text_extension(BUILD_CONFIG));
    Ok(named
        .into_iter()
        .map(|identity| Identity {
            identity,
            issuer: issuer.clone(),
            source_repository: source_repository.clone(),
            source_ref: source_ref.clone(),
            workflow: workflow.clone(),
        })
        .collect())
}

/// The DER certificates in `pem` (one or more).
pub fn certificates_from_pem(pem: &str) -> Result<Vec<Vec<u8>>, String> {
    x509_cert::Certificate::load_pem_chain(pem.as_bytes())
        .and_then(|chain| chain.iter().map(|certificate| certificate.to_der()).collect())
        .map_err(|error| format!("its certificate is not PEM: {error}"))
}

fn decode(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| "a field that should be base64 is not".to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
