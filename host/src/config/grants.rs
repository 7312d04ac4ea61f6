//! `[plugins.NAME.grants]`: what the operator lets one pack see of the
//! machine (read by the kernel's `grants`, which gives a pack only what it
//! also asked for).
//!
//! ```toml
//! [plugins.insights.grants.folders]   # the pack's name for a folder = the host's folder, read-only
//! logs = "/var/log/app"
//! project = "../project"               # relative to the config file
//!
//! [plugins.insights.grants.env]        # named values, through the environment
//! REGION = "eu-west-1"
//! API_TOKEN = { file = "secrets/api-token" }   # read at start and at SIGHUP; one trailing newline dropped
//!
//! [plugins.insights.grants]
//! http = ["https://api.example.com/v1/", "http://127.0.0.1:8080"]   # origins: scheme, host, port, path prefix
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use prompt_host_kernel::grants::{Grants, Origin, Secret, is_folder_name, is_value_name};

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsSection {
    #[serde(default)]
    folders: BTreeMap<String, PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, ValueGrant>,
    #[serde(default)]
    http: Vec<String>,
}

#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum ValueGrant {
    Value(String),
    File { file: PathBuf },
}

/// Shows no value: a granted value is a secret wherever it is shown.
impl std::fmt::Debug for ValueGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueGrant::Value(value) => write!(f, "Value({} bytes)", value.len()),
            ValueGrant::File { file } => write!(f, "File({})", file.display()),
        }
    }
}

impl GrantsSection {
    /// The grants of the table `section` (`plugins.NAME.grants`, or
    /// `tenants.T.grants.NAME`), with paths relative to `folder` (the
    /// config file's): each folder must be a directory now, each secret
    /// file readable now (it is read here, so a SIGHUP reads it again).
    pub(super) fn apply(&self, section: &str, folder: &Path) -> Result<Grants, String> {
        let mut grants = Grants::default();
        if !section.starts_with("plugins.") {
            grants.section = Some(section.to_string());
        }
        for origin in &self.http {
            let parsed = Origin::parse(origin).map_err(|why| {
                format!(
                    "{section}.http: {:?} is not an origin such as \"https://api.example.com/v1/\": {why}",
                    origin.escape_debug().to_string()
                )
            })?;
            grants.origins.push(parsed);
        }
        for (name, path) in &self.folders {
            if !is_folder_name(name) {
                return Err(format!(
                    "{section}.folders: {name:?} is not a folder name a pack can ask for (a lowercase letter, then letters, digits, - or _)"
                ));
            }
            let path = folder.join(path);
            let cannot = |error: std::io::Error| format!("{section}.folders.{name}: cannot grant {}: {error}", path.display());
            let dir = prompt_host_files::open_granted_folder(&path).map_err(cannot)?;
            // A kernel without openat2 (before Linux 5.6), or a seccomp
            // profile that forbids it, could give no granted folder at all:
            // said here, not at every call.
            prompt_host_files::open_beneath(&dir, ".", true, prompt_host_files::Beneath::Directory).map_err(cannot)?;
            grants.folders.insert(name.clone(), path);
        }
        for (name, value) in &self.env {
            if !is_value_name(name) {
                return Err(format!("{section}.env: {name:?} is not a value name a pack can ask for (ASCII letters, digits and _)"));
            }
            let value = match value {
                ValueGrant::Value(value) => value.clone(),
                ValueGrant::File { file } => {
                    let path = folder.join(file);
                    let text = prompt_host_files::read_text(&path)
                        .map_err(|error| format!("{section}.env.{name}: cannot read {}: {error}", path.display()))?;
                    let text = text.strip_suffix('\n').map(|text| text.strip_suffix('\r').unwrap_or(text)).unwrap_or(&text);
                    text.to_string()
                }
            };
            if value.contains('\0') {
                return Err(format!("{section}.env.{name}: the value holds a NUL character, which an environment cannot carry"));
            }
            grants.values.insert(name.clone(), Secret::new(value));
        }
        Ok(grants)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> GrantsSection {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn folders_and_values_are_read_relative_to_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
        let grants = section("folders = { logs = \"logs\" }\nenv = { TOKEN = { file = \"token\" }, REGION = \"eu\" }\n")
            .apply("plugins.acme.grants", dir.path())
            .unwrap();
        assert_eq!(grants.folders["logs"], dir.path().join("logs"));
        assert_eq!(grants.values["TOKEN"].expose(), "s3cret");
        assert_eq!(grants.values["REGION"].expose(), "eu");
    }

    #[test]
    fn each_mistake_is_named_by_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let refused = |text: &str| section(text).apply("plugins.acme.grants", dir.path()).unwrap_err();
        assert_eq!(
            refused("folders = { Logs = \"/tmp\" }"),
            "plugins.acme.grants.folders: \"Logs\" is not a folder name a pack can ask for (a lowercase letter, then letters, digits, - or _)"
        );
        assert!(
            refused("folders = { logs = \"missing\" }")
                .starts_with(&format!("plugins.acme.grants.folders.logs: cannot grant {}: ", dir.path().join("missing").display())),
        );
        assert_eq!(
            refused("env = { \"A-B\" = \"x\" }"),
            "plugins.acme.grants.env: \"A-B\" is not a value name a pack can ask for (ASCII letters, digits and _)"
        );
        assert!(refused("env = { T = { file = \"none\" } }").starts_with("plugins.acme.grants.env.T: cannot read "));
        assert_eq!(
            refused("http = [\"ftp://api.example.com\"]"),
            "plugins.acme.grants.http: \"ftp://api.example.com\" is not an origin such as \"https://api.example.com/v1/\": its scheme is neither https nor http"
        );
        assert_eq!(
            section("http = [\"https://API.example.com/v1/\", \"http://127.0.0.1:8080\"]")
                .apply("plugins.acme.grants", dir.path())
                .unwrap()
                .origins,
            [Origin::parse("https://api.example.com/v1/").unwrap(), Origin::parse("http://127.0.0.1:8080/").unwrap()]
        );
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert!(refused("folders = { logs = \"file\" }").ends_with("it is not a directory"));
        assert_eq!(
            refused("folders = { proc = \"/proc\" }"),
            "plugins.acme.grants.folders.proc: cannot grant /proc: it is on procfs, which a pack may not read: grant a folder on a local disk"
        );
    }
}
