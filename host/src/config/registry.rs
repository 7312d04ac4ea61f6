//! `[registry]`: how registries are reached (read by `distribution`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::positive;
use prompt_host_trust::distribution::{Mirrors, RegistrySettings};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RegistrySection {
    #[serde(default)]
    pub(super) plain_http: Vec<String>,
    pub(super) ca_file: Option<PathBuf>,
    pub(super) max_pack_mib: Option<u64>,
    pub(super) timeout_secs: Option<u64>,
    #[serde(default)]
    pub(super) mirrors: BTreeMap<String, String>,
}

impl RegistrySection {
    pub(super) fn apply(&self, folder: &Path) -> Result<RegistrySettings, String> {
        let mut settings = RegistrySettings {
            plain_http: self.plain_http.clone(),
            mirrors: Mirrors::new(self.mirrors.clone())?,
            ..RegistrySettings::default()
        };
        if let Some(file) = &self.ca_file {
            let path = folder.join(file);
            let pem = prompt_host_files::read(&path, prompt_host_files::MAX_SMALL_FILE_BYTES)
                .map_err(|error| format!("registry.ca_file: cannot read {}: {error}", path.display()))?;
            settings.ca_certificates.push(pem);
        }
        if let Some(mib) = self.max_pack_mib {
            positive("registry.max_pack_mib", mib)?;
            settings.max_pack_bytes = mib.checked_mul(1 << 20).ok_or("registry.max_pack_mib is too large")?;
            if settings.max_pack_bytes > prompt_host_files::MAX_PACK_FILE_BYTES {
                return Err(format!(
                    "registry.max_pack_mib is {mib}, more than the {} MiB a pack file may have",
                    prompt_host_files::MAX_PACK_FILE_BYTES >> 20
                ));
            }
        }
        if let Some(seconds) = self.timeout_secs {
            positive("registry.timeout_secs", seconds)?;
            settings.timeout = std::time::Duration::from_secs(seconds);
        }
        Ok(settings)
    }
}
