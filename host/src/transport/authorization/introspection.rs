//! Opaque tokens checked with the issuer's introspection endpoint (RFC
//! 7662): asked in turns per client network, answered once per token and
//! cached, a busy refusal logged within a budget.

use super::*;

impl ResourceServer {
    /// Asks the introspection endpoint about an opaque token from `peer`
    /// (or the cache, or awaits the same token's introspection under way): a
    /// token that cannot be one is refused without asking; each client
    /// network has at most `introspections_per_client` under way or waiting
    /// (its prefix [`INTROSPECTIONS_PER_PREFIX`]), and waits at most
    /// [`INTROSPECTION_TURN_WAIT`] for one of the turns of its kind: networks
    /// the issuer refused a token from lately share
    /// [`SUSPECT_INTROSPECTIONS_IN_FLIGHT`], the others the rest.
    ///
    /// The introspection runs in a task of its own, which holds the turns
    /// until the issuer answers: a client that goes away does not give its
    /// turns back before the issuer is done with its token.
    pub(super) async fn introspect(self: &Arc<Self>, token: &str, peer: IpAddr) -> Result<Grant, Denial> {
        use sha2::Digest as _;
        if !could_be_opaque_token(token) {
            return Err(Denial::InvalidToken(format!(
                "it is neither a JWT nor an opaque token (at most {MAX_OPAQUE_TOKEN_BYTES} bytes of the characters RFC 6750 allows)"
            )));
        }
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.introspected.lock().expect("never poisoned").get(&key) {
            return answer;
        }
        let mut answer = {
            let mut introspecting = self.introspecting.lock().expect("never poisoned");
            match introspecting.get(&key) {
                Some(under_way) => under_way.subscribe(),
                None => {
                    let turn = match ClientTurn::take(&self.client_turns, peer, self.settings.introspections_per_client) {
                        Ok(turn) => turn,
                        Err(why) => return Err(self.busy(peer, why)),
                    };
                    let (sender, receiver) = tokio::sync::watch::channel(None);
                    introspecting.insert(key, sender.clone());
                    let server = Arc::clone(self);
                    let token = token.to_string();
                    tokio::spawn(async move {
                        let answer = server.introspect_in_turn(&token, key, peer, turn, &sender).await;
                        server.introspecting.lock().expect("never poisoned").remove(&key);
                        sender.send_replace(answer);
                    });
                    receiver
                }
            }
        };
        let answered = answer.wait_for(Option::is_some).await.ok().and_then(|answer| answer.clone());
        match answered {
            Some(Err(Denial::Busy(why))) => Err(self.busy(peer, why)),
            Some(answer) => answer,
            None => Err(Denial::IssuerUnavailable("the introspection ended without an answer".to_string())),
        }
    }

    /// Waits for a turn of `peer`'s kind (while anyone awaits the answer),
    /// asks the issuer, and remembers the answer and, if it refused the
    /// token, `peer`'s network as suspect.
    pub(super) async fn introspect_in_turn(
        &self,
        token: &str,
        key: [u8; 32],
        peer: IpAddr,
        client_turn: ClientTurn,
        awaited: &tokio::sync::watch::Sender<Option<Result<Grant, Denial>>>,
    ) -> Option<Result<Grant, Denial>> {
        let Some(introspection) = &self.settings.introspection else {
            return Some(Err(Denial::InvalidToken("no introspection endpoint is configured".to_string())));
        };
        let (network, prefix) = (client_network(peer), client_prefix(peer));
        let vouched = self.vouched.lock().expect("never poisoned").get(&network).is_some();
        let (turns, turns_of_its_kind) = {
            let mut suspects = self.suspects.lock().expect("never poisoned");
            match (vouched, suspects.get(&prefix).is_some()) {
                (true, _) => (&self.vouched_turns, VOUCHED_INTROSPECTIONS_IN_FLIGHT),
                // A suspect prefix asking again stays suspect.
                (false, true) => {
                    suspects.insert(prefix, (), Instant::now() + SUSPECT_FOR);
                    (&self.suspect_turns, SUSPECT_INTROSPECTIONS_IN_FLIGHT)
                }
                (false, false) => (&self.clean_turns, CLEAN_INTROSPECTIONS_IN_FLIGHT),
            }
        };
        let turn = tokio::select! {
            turn = tokio::time::timeout(INTROSPECTION_TURN_WAIT, Arc::clone(turns).acquire_owned()) => turn,
            // Everyone awaiting the answer went away before the issuer was asked.
            () = awaited.closed() => return None,
        };
        let Ok(Ok(_turn)) = turn else {
            return Some(Err(Denial::Busy(format!(
                "the {} introspection turns of its kind stayed taken for {} s",
                turns_of_its_kind,
                INTROSPECTION_TURN_WAIT.as_secs()
            ))));
        };
        if let Some(answer) = self.introspected.lock().expect("never poisoned").get(&key) {
            return Some(answer);
        }
        let (answer, ttl) = match self.ask_introspection(token, introspection).await {
            Ok((grant, left)) => (Ok(grant), left.min(INTROSPECTION_CACHE_MAX)),
            // The issuer away is not the token's fault: not remembered.
            Err(denial @ Denial::IssuerUnavailable(_)) => return Some(Err(denial)),
            Err(denial) => {
                self.suspects.lock().expect("never poisoned").insert(prefix, (), Instant::now() + SUSPECT_FOR);
                // A network that sends junk is vouched for no more.
                self.vouched.lock().expect("never poisoned").remove(&network);
                (Err(denial), INTROSPECTION_REFUSAL_TTL)
            }
        };
        self.introspected.lock().expect("never poisoned").remember(key, &answer, Instant::now() + ttl);
        drop(client_turn);
        Some(answer)
    }

    /// Logs a busy refusal within its own budget, and returns it.
    pub(super) fn busy(&self, peer: IpAddr, why: String) -> Denial {
        use prompt_host_kernel::log_budget::Admission;
        let mut window = self.busy_log.lock().expect("never poisoned");
        if let Some(dropped) = window.roll(BUSY_LOG) {
            tracing::warn!(dropped, "{dropped} requests refused as busy (503) were not logged in the last {} s", BUSY_LOG.window.as_secs());
        }
        if window.admit(BUSY_LOG) == Admission::Log {
            tracing::warn!(%peer, reason = ?why, "refused an HTTP request (503): the access token cannot be checked now");
        }
        Denial::Busy(why)
    }

    /// The introspection endpoint's answer about `token`, checked: what it
    /// grants, and for how long it remains valid.
    pub(super) async fn ask_introspection(&self, token: &str, introspection: &Introspection) -> Result<(Grant, Duration), Denial> {
        let invalid = |why: String| Denial::InvalidToken(why);
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let response = self
            .http
            .post(introspection.endpoint.clone())
            .basic_auth(&introspection.client_id, Some(&introspection.client_secret))
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|error| Denial::IssuerUnavailable(format!("{}: {error}", introspection.endpoint)))?;
        let answer = self.read(&introspection.endpoint, response).await.map_err(Denial::IssuerUnavailable)?;
        let claims: Map<String, Value> = serde_json::from_slice(&answer)
            .map_err(|error| Denial::IssuerUnavailable(format!("{} did not answer JSON: {error}", introspection.endpoint)))?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(invalid("the issuer says it is not active".to_string()));
        }
        // RFC 7662 names the kind of token as RFC 6749 does ("Bearer"); some
        // issuers say "access_token". A refresh token, or a DPoP-bound one,
        // is not a bearer access token.
        if let Some(kind) = claims.get("token_type") {
            let kind = kind.as_str().unwrap_or_default();
            if !(kind.eq_ignore_ascii_case("bearer") || kind == "access_token" || kind == "urn:ietf:params:oauth:token-type:access_token") {
                return Err(invalid(format!("the issuer says it is a {:?} token, not a bearer access token", cut(kind))));
            }
        }
        if claims.get("iss").is_some_and(|issuer| issuer.as_str() != Some(self.settings.issuer.as_str())) {
            return Err(invalid(format!("its issuer is not {}", self.settings.issuer)));
        }
        if !strings(claims.get("aud")).iter().any(|audience| audience == self.settings.resource.as_str()) {
            return Err(invalid(format!("its audience is not this server ({})", self.settings.resource)));
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let leeway = self.settings.leeway.as_secs();
        if let Some(not_before) = claims.get("nbf") {
            let not_before = not_before.as_u64().ok_or_else(|| invalid("its nbf claim is not a time".to_string()))?;
            if not_before > now.as_secs() + leeway {
                return Err(invalid(NOT_VALID_YET.to_string()));
            }
        }
        let expires = claims.get("exp").and_then(Value::as_u64).ok_or_else(|| invalid("it has no exp claim".to_string()))?;
        let left = Duration::from_secs(expires).saturating_sub(now);
        if expires.saturating_add(leeway) < now.as_secs() {
            return Err(invalid(EXPIRED.to_string()));
        }
        Ok((self.grant(&claims)?, left))
    }
}

/// Whether a token that is not a JWT could be an opaque access token: at
/// most [`MAX_OPAQUE_TOKEN_BYTES`] of RFC 6750's `b64token` (letters,
/// digits, `-._~+/`, then `=` padding only).
pub(super) fn could_be_opaque_token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    token.len() <= MAX_OPAQUE_TOKEN_BYTES
        && !body.is_empty()
        && body.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte))
}
