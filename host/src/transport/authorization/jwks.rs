//! The issuer's keys (its JWKS): fetched over HTTPS (or on loopback),
//! bounded in size and time, cached, fetched again on a rotation or when
//! old, and the one that fits a token's header found.

use super::*;

impl ResourceServer {
    /// The issuer's key `kid` (or its only key, for a token naming none).
    /// A key held is used at once; when the keys are `keys_max_age` old, they
    /// are fetched again in the background. When the key is not held, the
    /// request fetches the keys again itself (a rotation), by one request at
    /// a time and at most once per `keys_min_refresh` (failed fetches
    /// included), or waits for the fetch under way.
    pub(super) async fn key_for(self: &Arc<Self>, kid: Option<&str>, peer: IpAddr) -> Result<Jwk, Denial> {
        let (held, stale, due) = {
            let keys = self.keys.lock().expect("never poisoned");
            (
                find(&keys.set, kid).cloned(),
                keys.fetched.is_none_or(|fetched| fetched.elapsed() >= self.settings.keys_max_age),
                keys.attempted.is_none_or(|attempted| attempted.elapsed() >= self.settings.keys_min_refresh),
            )
        };
        if let Some(key) = held {
            if stale && due && !self.refreshing_in_background.swap(true, std::sync::atomic::Ordering::AcqRel) {
                let server = Arc::clone(self);
                tokio::spawn(async move {
                    server.refresh(false).await;
                    server.refreshing_in_background.store(false, std::sync::atomic::Ordering::Release);
                });
            }
            return Ok(key);
        }
        // The key is not held: fetch the keys again if due, or wait for the
        // fetch under way (its keys may hold it), which takes at most
        // FETCH_TIMEOUT. A token naming a key is no proof of anything yet:
        // few wait at once, from one client fewer, and none for long.
        let Ok(_client_wait) = ClientTurn::take(&self.key_waits, peer, KEY_WAITS_PER_CLIENT) else {
            return Err(self.busy(
                peer,
                format!(
                    "{KEY_WAITS_PER_CLIENT} requests from this client (or {INTROSPECTIONS_PER_PREFIX} from its prefix) already \
                     wait for the issuer's keys"
                ),
            ));
        };
        let Ok(_wait) = Arc::clone(&self.key_wait_places).try_acquire_owned() else {
            return Err(self.busy(peer, format!("{MAX_KEY_WAITS} requests already wait for the issuer's keys")));
        };
        // In a task of its own: a fetch this request started goes on for
        // the others when this request stops waiting.
        let fetch = tokio::spawn({
            let server = Arc::clone(self);
            async move { server.refresh(true).await }
        });
        if tokio::time::timeout(KEY_WAIT, fetch).await.is_err() {
            return Err(Denial::IssuerUnavailable(format!(
                "its key is not held, and the issuer's keys did not come within {} s",
                KEY_WAIT.as_secs()
            )));
        }
        if let Some(key) = find(&self.keys.lock().expect("never poisoned").set, kid).cloned() {
            return Ok(key);
        }
        let keys = self.keys.lock().expect("never poisoned");
        if keys.fetched.is_none() {
            let why = keys.failure.clone().unwrap_or_else(|| "they are being fetched".to_string());
            return Err(Denial::IssuerUnavailable(format!("its keys could not be fetched: {why}")));
        }
        Err(match kid {
            Some(kid) => Denial::InvalidToken(format!("it is signed by a key the issuer does not publish (kid {:?})", cut(kid))),
            None => Denial::InvalidToken("it names no key (kid), and the issuer publishes more than one".to_string()),
        })
    }

    /// Fetches the keys again, unless another request is doing so (then
    /// returns at once, or with `wait`, when that fetch ends) or one was
    /// tried within `keys_min_refresh`. The whole fetch (the issuer's
    /// metadata, then its keys) takes at most [`FETCH_TIMEOUT`].
    pub(super) async fn refresh(&self, wait: bool) {
        let mut uri = match self.refreshing.try_lock() {
            Ok(uri) => uri,
            // A fetch is under way: when it ends, its keys are the newest.
            Err(_) if wait => {
                drop(self.refreshing.lock().await);
                return;
            }
            Err(_) => return,
        };
        {
            let mut keys = self.keys.lock().expect("never poisoned");
            if keys.attempted.is_some_and(|attempted| attempted.elapsed() < self.settings.keys_min_refresh) {
                return;
            }
            keys.attempted = Some(Instant::now());
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch_keys(&mut uri))
            .await
            .unwrap_or_else(|_| Err(format!("the issuer did not answer within {} s", FETCH_TIMEOUT.as_secs())));
        let mut keys = self.keys.lock().expect("never poisoned");
        match fetched {
            Ok(set) => {
                keys.set = set;
                keys.fetched = Some(Instant::now());
                keys.failure = None;
            }
            Err(why) => {
                // At most once per keys_min_refresh: fetches are.
                tracing::warn!(reason = ?why, "cannot fetch the issuer's keys; the ones held, if any, still serve");
                keys.failure = Some(why);
            }
        }
    }

    /// Fetches the key set, finding its URI in the issuer's metadata first
    /// if it is not known. Keys for other uses than signatures, and keys
    /// jsonwebtoken cannot read (an X25519 key, say), are left out, not the
    /// whole set.
    pub(super) async fn fetch_keys(&self, uri: &mut Option<url::Url>) -> Result<JwkSet, String> {
        let known = match uri.as_ref() {
            Some(known) => known.clone(),
            None => {
                let discovered = self.discover_keys_uri().await?;
                *uri = Some(discovered.clone());
                discovered
            }
        };
        let body = self.fetch(&known).await?;
        #[derive(serde::Deserialize)]
        struct RawSet {
            keys: Vec<Value>,
        }
        let raw: RawSet = serde_json::from_slice(&body).map_err(|error| format!("{known} is not a JWK set: {error}"))?;
        let keys = raw
            .keys
            .into_iter()
            .filter(|key| key.get("use").and_then(Value::as_str).is_none_or(|used| used == "sig"))
            .filter_map(|key| serde_json::from_value::<Jwk>(key).ok())
            .take(MAX_KEYS)
            .collect();
        Ok(JwkSet { keys })
    }

    /// The `jwks_uri` of the issuer's metadata (OpenID Connect discovery, or
    /// RFC 8414), whose `issuer` must be the one configured.
    pub(super) async fn discover_keys_uri(&self) -> Result<url::Url, String> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let mut last_error = String::new();
        for well_known in ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"] {
            let url = url::Url::parse(&format!("{issuer}{well_known}")).map_err(|error| error.to_string())?;
            let body = match self.fetch(&url).await {
                Ok(body) => body,
                Err(error) => {
                    last_error = error;
                    continue;
                }
            };
            let metadata: Value = serde_json::from_slice(&body).map_err(|error| format!("{url} is not JSON: {error}"))?;
            if metadata["issuer"].as_str().map(|said| said.trim_end_matches('/')) != Some(issuer) {
                return Err(format!("{url} names another issuer: {:?}", metadata["issuer"]));
            }
            let uri = metadata["jwks_uri"].as_str().ok_or_else(|| format!("{url} names no jwks_uri"))?;
            let uri = url::Url::parse(uri).map_err(|error| format!("{url}: its jwks_uri is not a URL: {error}"))?;
            let checked = AuthorizationSettings { jwks_uri: Some(uri.clone()), ..self.settings.clone() };
            checked.check()?;
            return Ok(uri);
        }
        Err(last_error)
    }

    /// GETs `url`, at most [`MAX_KEYS_BYTES`], within [`FETCH_TIMEOUT`].
    pub(super) async fn fetch(&self, url: &url::Url) -> Result<Vec<u8>, String> {
        let response = self.http.get(url.clone()).send().await.map_err(|error| format!("{url}: {error}"))?;
        self.read(url, response).await
    }

    /// A successful answer's body, at most [`MAX_KEYS_BYTES`].
    pub(super) async fn read(&self, url: &url::Url, mut response: reqwest::Response) -> Result<Vec<u8>, String> {
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        if response.content_length().is_some_and(|length| length > MAX_KEYS_BYTES as u64) {
            return Err(format!("{url} is larger than {MAX_KEYS_BYTES} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| format!("{url}: {error}"))? {
            if body.len() + chunk.len() > MAX_KEYS_BYTES {
                return Err(format!("{url} is larger than {MAX_KEYS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// Refuses a key used for an algorithm other than its type's (and its own
/// `alg`, if it names one).
pub(super) fn check_key_fits(key: &Jwk, algorithm: Algorithm) -> Result<(), Denial> {
    use jsonwebtoken::AlgorithmFamily;
    let family = match key.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
        AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
        AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
        AlgorithmParameters::OctetKey(_) => AlgorithmFamily::Hmac,
    };
    let own = match key.common.key_algorithm {
        None => None,
        Some(own) => match own.to_string().parse::<Algorithm>() {
            Ok(own) => Some(own),
            Err(_) => return Err(Denial::InvalidToken(format!("its key is for {own}, not for signatures"))),
        },
    };
    if family != algorithm.family() || own.is_some_and(|own| own != algorithm) {
        return Err(Denial::InvalidToken(format!("its algorithm {algorithm:?} is not the one its key is for")));
    }
    Ok(())
}

pub(super) fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => set.find(kid),
        None => match set.keys.as_slice() {
            [only] => Some(only),
            _ => None,
        },
    }
}
