//! A JWT access token read: the bearer header, its algorithm (asymmetric
//! only), why jsonwebtoken refused it, and what its claims grant.

use super::*;

impl ResourceServer {
    /// What checked claims grant, if they carry the scope and the token is
    /// a bearer token: one bound to a key its holder must prove (`cnf`: DPoP,
    /// RFC 9449, or a client certificate, RFC 8705) is refused, since no
    /// proof is verified here and the token alone must not be enough.
    pub(super) fn grant(&self, claims: &Map<String, Value>) -> Result<Grant, Denial> {
        if claims.contains_key("cnf") {
            return Err(Denial::InvalidToken(
                "it is bound to a proof of possession (cnf: DPoP, RFC 9449, or mTLS, RFC 8705), which this server does not verify"
                    .to_string(),
            ));
        }
        if !scopes(claims).contains(self.settings.scope.as_str()) {
            return Err(Denial::InsufficientScope);
        }
        let tenants = match &self.settings.tenant_claim {
            Some(claim) => strings(claims.get(claim)),
            None => Vec::new(),
        };
        // `sub` is a string (RFC 7519 4.1.2); read as no subject, `42` and
        // `43` would share one session binding and one user's caps.
        let subject = match claims.get("sub") {
            None => None,
            Some(Value::String(subject)) => Some(subject.clone()),
            Some(_) => return Err(Denial::InvalidToken("its sub claim is not a string".to_string())),
        };
        let expires = claims
            .get("exp")
            .and_then(Value::as_u64)
            .map(|exp| std::time::UNIX_EPOCH + Duration::from_secs(exp.saturating_add(self.settings.leeway.as_secs())));
        Ok(Grant { subject, tenants, expires })
    }

    pub(super) fn explain(&self, error: &jsonwebtoken::errors::Error) -> String {
        use jsonwebtoken::errors::ErrorKind;
        match error.kind() {
            ErrorKind::ExpiredSignature => EXPIRED.to_string(),
            ErrorKind::ImmatureSignature => NOT_VALID_YET.to_string(),
            ErrorKind::InvalidAudience => format!("its audience is not this server ({})", self.settings.resource),
            ErrorKind::InvalidIssuer => format!("its issuer is not {}", self.settings.issuer),
            ErrorKind::InvalidSignature => "its signature does not verify".to_string(),
            ErrorKind::MissingRequiredClaim(claim) => format!("it has no {claim} claim"),
            other => format!("it cannot be checked: {other:?}"),
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header.
pub(super) fn bearer_token(header: &[u8]) -> Result<&str, Denial> {
    if header.len() > MAX_TOKEN_BYTES + 7 {
        return Err(Denial::InvalidToken(format!("it is longer than {MAX_TOKEN_BYTES} bytes")));
    }
    let text = std::str::from_utf8(header).map_err(|_| Denial::NoToken)?;
    let (scheme, token) = text.split_once(' ').ok_or(Denial::NoToken)?;
    // The scheme is case-insensitive (RFC 9110); the token is not.
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(Denial::NoToken);
    }
    Ok(token.trim())
}

/// The algorithm a token's header names, if it is one accepted: read here
/// rather than by jsonwebtoken, so that `none` or an HMAC is refused by name
/// (cut, escaped in the log). A header naming critical extensions (`crit`)
/// is refused: none is understood here (RFC 7515 §4.1.11).
pub(super) fn token_algorithm(token: &str) -> Result<Algorithm, Denial> {
    use base64::Engine as _;
    let invalid = |why: &str| Denial::InvalidToken(why.to_string());
    let header = token.split('.').next().ok_or_else(|| invalid("it is not a JWT"))?;
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).map_err(|_| invalid("it is not a JWT"))?;
    let header: Value = serde_json::from_slice(&header).map_err(|_| invalid("it is not a JWT"))?;
    if header.get("crit").is_some() {
        return Err(invalid("its header names critical extensions (crit), which this server does not understand (RFC 7515 §4.1.11)"));
    }
    let named = header["alg"].as_str().ok_or_else(|| invalid("its header names no algorithm"))?;
    named
        .parse::<Algorithm>()
        .ok()
        .filter(|algorithm| ACCEPTED.contains(algorithm))
        .ok_or_else(|| Denial::InvalidToken(format!("its algorithm {:?} is not accepted (only asymmetric signatures are)", cut(named))))
}

/// The scopes a token grants: its `scope` (space-separated, RFC 9068) or
/// `scp` (an array, as some issuers write it).
pub(super) fn scopes(claims: &Map<String, Value>) -> BTreeSet<&str> {
    let mut scopes: BTreeSet<&str> = claims.get("scope").and_then(Value::as_str).unwrap_or_default().split_whitespace().collect();
    if let Some(Value::Array(listed)) = claims.get("scp") {
        scopes.extend(listed.iter().filter_map(Value::as_str));
    }
    scopes
}

/// A claim's string values: itself if it is a string, its strings if it is
/// an array.
pub(super) fn strings(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(values)) => values.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}
