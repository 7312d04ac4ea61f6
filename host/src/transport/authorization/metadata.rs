//! What this resource server publishes: its protected resource metadata
//! (RFC 9728), and the challenge of a refusal (RFC 6750).

use super::*;

impl ResourceServer {
    /// The paths the protected resource metadata is served at: the RFC 9728
    /// one (the well-known path before the resource's path), and the bare
    /// well-known path, which some clients ask first.
    pub fn metadata_paths(&self) -> [String; 2] {
        let path = self.settings.resource.path().trim_end_matches('/');
        [format!("{METADATA_PATH}{path}"), METADATA_PATH.to_string()]
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        serde_json::json!({
            "resource": self.settings.resource.as_str(),
            "authorization_servers": [self.settings.issuer],
            "scopes_supported": [self.settings.scope],
            "bearer_methods_supported": ["header"],
            "resource_name": "prompt-host",
        })
    }

    /// The metadata's URL, as the `resource_metadata` of a challenge.
    pub(super) fn metadata_url(&self) -> String {
        let mut url = self.settings.resource.clone();
        url.set_path(&self.metadata_paths()[0]);
        url.set_query(None);
        url.to_string()
    }

    /// The `WWW-Authenticate` challenge answering `denial`.
    pub fn challenge(&self, denial: &Denial) -> String {
        let metadata = self.metadata_url();
        match denial {
            Denial::NoToken | Denial::IssuerUnavailable(_) | Denial::Busy(_) => format!("Bearer resource_metadata=\"{metadata}\""),
            Denial::InvalidToken(_) => format!(
                "Bearer error=\"invalid_token\", error_description=\"the access token is not valid\", resource_metadata=\"{metadata}\""
            ),
            Denial::InsufficientScope => {
                format!("Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata}\"", self.settings.scope)
            }
        }
    }
}
