//! `[authorization]` (OAuth access tokens, read by `transport::authorization`)
//! and `[tenants.NAME]`, as the config file writes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::transport::authorization::{
    AuthorizationSettings, DEFAULT_INTROSPECTIONS_PER_CLIENT, DEFAULT_KEYS_MAX_AGE, DEFAULT_KEYS_MIN_REFRESH, DEFAULT_LEEWAY, Introspection,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthorizationSection {
    pub(super) resource: String,
    pub(super) issuer: String,
    pub(super) jwks_uri: Option<String>,
    pub(super) scope: Option<String>,
    pub(super) leeway_secs: Option<u64>,
    pub(super) jwks_min_refresh_secs: Option<u64>,
    pub(super) jwks_max_age_secs: Option<u64>,
    pub(super) ca_file: Option<PathBuf>,
    pub(super) tenant_claim: Option<String>,
    pub(super) default_tenant: Option<String>,
    pub(super) introspection_endpoint: Option<String>,
    pub(super) accept_untyped_jwt: Option<bool>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret_file: Option<PathBuf>,
    pub(super) introspections_per_client: Option<u64>,
    pub(super) trusted_proxies: Option<Vec<String>>,
}

impl AuthorizationSection {
    /// The introspection endpoint and this server's credentials there: all
    /// three or none.
    pub(super) fn introspection(&self, folder: &Path) -> Result<Option<Introspection>, String> {
        match (&self.introspection_endpoint, &self.client_id, &self.client_secret_file) {
            (None, None, None) => Ok(None),
            (Some(endpoint), Some(client_id), Some(secret_file)) => {
                let path = folder.join(secret_file);
                let secret = prompt_host_files::read_text(&path)
                    .map_err(|error| format!("authorization.client_secret_file: cannot read {}: {error}", path.display()))?;
                Ok(Some(Introspection {
                    endpoint: url::Url::parse(endpoint)
                        .map_err(|error| format!("authorization.introspection_endpoint is not a URL: {error}"))?,
                    client_id: client_id.clone(),
                    client_secret: secret.trim().to_string(),
                }))
            }
            _ => Err("authorization.introspection_endpoint, client_id and client_secret_file go together".into()),
        }
    }
}

/// The scope a token needs unless `authorization.scope` says otherwise.
pub const DEFAULT_SCOPE: &str = "prompts";

impl AuthorizationSection {
    pub(super) fn apply(&self, folder: &Path) -> Result<AuthorizationSettings, String> {
        let url = |key: &str, text: &str| url::Url::parse(text).map_err(|error| format!("authorization.{key} is not a URL: {error}"));
        let mut ca_certificates = Vec::new();
        if let Some(file) = &self.ca_file {
            let path = folder.join(file);
            ca_certificates.push(
                prompt_host_files::read(&path, prompt_host_files::MAX_SMALL_FILE_BYTES)
                    .map_err(|error| format!("authorization.ca_file: cannot read {}: {error}", path.display()))?,
            );
        }
        let settings = AuthorizationSettings {
            resource: url("resource", &self.resource)?,
            issuer: self.issuer.clone(),
            jwks_uri: self.jwks_uri.as_deref().map(|uri| url("jwks_uri", uri)).transpose()?,
            scope: self.scope.clone().unwrap_or_else(|| DEFAULT_SCOPE.to_string()),
            leeway: self.leeway_secs.map_or(DEFAULT_LEEWAY, Duration::from_secs),
            introspections_per_client: self
                .introspections_per_client
                .map_or(DEFAULT_INTROSPECTIONS_PER_CLIENT, |count| usize::try_from(count).unwrap_or(usize::MAX)),
            trusted_proxies: self
                .trusted_proxies
                .iter()
                .flatten()
                .map(|proxy| {
                    proxy
                        .parse::<ipnet::IpNet>()
                        .or_else(|_| proxy.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                        .map_err(|_| format!("authorization.trusted_proxies: {proxy:?} is neither an address nor a CIDR block"))
                })
                .collect::<Result<_, _>>()?,
            keys_min_refresh: self.jwks_min_refresh_secs.map_or(DEFAULT_KEYS_MIN_REFRESH, Duration::from_secs),
            keys_max_age: self.jwks_max_age_secs.map_or(DEFAULT_KEYS_MAX_AGE, Duration::from_secs),
            tenant_claim: self.tenant_claim.clone(),
            ca_certificates,
            introspection: self.introspection(folder)?,
            accept_untyped_jwt: self.accept_untyped_jwt.unwrap_or(false),
        };
        settings.check()?;
        Ok(settings)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TenantSection {
    /// The tenant's plugin directory.
    pub(super) plugins: PathBuf,
    /// What the tenant's plugins are granted, by plugin name, in place of
    /// `[plugins.NAME.grants]` (`[tenants.T.grants.NAME]`).
    #[serde(default)]
    pub(super) grants: BTreeMap<String, super::grants::GrantsSection>,
    /// Whether the tenant's prompts are also served as tools, in place of
    /// `server.prompts_as_tools`.
    pub(super) prompts_as_tools: Option<bool>,
}
