//! The registry commands, `add`, `update`, `remove`, `list` and `publish`:
//! what they print. The work is the library's ([`prompt_host::install`]).

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, bail};
use prompt_host::config::ServeConfig;
use prompt_host::install::{self, Installation, Listed, Sourced, Updated};
use prompt_host_trust::lockfile::{LockedPack, Lockfile};

/// A download's progress: a bar on a terminal, nothing otherwise.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bytes:>10} / {total_bytes} {wide_bar} {bytes_per_sec}").expect("a valid template"),
        );
        bar
    })
}

fn config(path: &Path) -> anyhow::Result<ServeConfig> {
    ServeConfig::from_file(path).context("the registry commands need the config file `serve` uses (--config FILE)")
}

/// `config`, with `reference`'s registry reached over plain HTTP if
/// `plain_http` (`--plain-http`).
fn reaching(mut config: ServeConfig, reference: &str, plain_http: bool) -> anyhow::Result<ServeConfig> {
    if plain_http {
        config.registry.reach_over_plain_http(reference)?;
    }
    Ok(config)
}

pub async fn add(
    config_path: &Path,
    reference: &str,
    name: Option<&str>,
    allow_downgrade: bool,
    replace: bool,
    plain_http: bool,
) -> anyhow::Result<()> {
    let config = reaching(config(config_path)?, reference, plain_http)?;
    let installation = Installation::new(&config)?;
    let bar = progress_bar();
    let progress = |done: u64, total: u64| {
        if let Some(bar) = &bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    };
    let installed = installation.add(reference, name, allow_downgrade, replace, &progress).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    eprintln!("{}", describe("installed", &installed?, &installation));
    Ok(())
}

pub async fn update(
    config_path: &Path,
    name: Option<&str>,
    to: Option<&str>,
    allow_downgrade: bool,
    plain_http: bool,
) -> anyhow::Result<()> {
    let mut config = config(config_path)?;
    if plain_http {
        // The registries this update reaches: --to's, or those of the
        // packs it updates, as prompt-host.lock records them.
        let references: Vec<String> = match to {
            Some(to) => vec![to.to_string()],
            None => {
                let lockfile = Lockfile::read(&Installation::new(&config)?.lockfile)?;
                lockfile.packs.into_iter().filter(|pack| name.is_none_or(|name| pack.name == name)).map(|pack| pack.reference).collect()
            }
        };
        for reference in references {
            config = reaching(config, &reference, true)?;
        }
    }
    let installation = Installation::new(&config)?;
    let outcomes = installation.update(name, to, allow_downgrade, &|_, _| {}).await?;
    let mut failed = 0;
    for (name, outcome) in &outcomes {
        match outcome {
            Ok(Updated::UpToDate(pack)) => eprintln!("{name}: up to date ({})", pack.digest),
            Ok(Updated::Replaced { pack, previous }) => {
                eprintln!("{} (was {previous})", describe("updated", pack, &installation))
            }
            Ok(Updated::Moved { pack, previous }) => {
                eprintln!("{} (was {previous}, the same pack)", describe("moved", pack, &installation))
            }
            Ok(Updated::Restored(pack)) => {
                eprintln!("{} (the file on disk had changed or gone)", describe("restored", pack, &installation))
            }
            Err(error) => {
                failed += 1;
                eprintln!("{name}: not updated, the installed pack stays: {error}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} packs not updated", outcomes.len());
    }
    Ok(())
}

pub async fn remove(config_path: &Path, name: &str) -> anyhow::Result<()> {
    let config = config(config_path)?;
    let removed = Installation::new(&config)?.remove(name).await?;
    eprintln!("removed {} ({} at {})", removed.name, removed.reference, removed.digest);
    Ok(())
}

pub async fn list(config_path: &Path, json: bool) -> anyhow::Result<()> {
    let config = config(config_path)?;
    let listed = Installation::new(&config)?.list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&listed).expect("the list serializes"));
        return Ok(());
    }
    if listed.is_empty() {
        println!("no packs installed");
    }
    for pack in &listed {
        println!("{}", line(pack));
    }
    Ok(())
}

fn optional_config(path: Option<&Path>) -> anyhow::Result<ServeConfig> {
    Ok(match path {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    })
}

pub async fn sign(reference: &str, key: &Path, allow_tag: bool, config_path: Option<&Path>, plain_http: bool) -> anyhow::Result<()> {
    let config = reaching(optional_config(config_path)?, reference, plain_http)?;
    let password = std::env::var("COSIGN_PASSWORD").unwrap_or_default();
    let signed = install::sign(&config, reference, key, password.as_bytes(), allow_tag).await?;
    eprintln!("signed {} in the repository {} with {}", signed.digest, signed.repository, key.display());
    // The digest alone on stdout, for scripts.
    println!("{}", signed.digest);
    Ok(())
}

/// `prompt-host keygen`: PREFIX.key and PREFIX.pub, as cosign writes them.
pub fn keygen(prefix: &str) -> anyhow::Result<()> {
    let (key_path, pub_path) = (format!("{prefix}.key"), format!("{prefix}.pub"));
    for path in [&key_path, &pub_path] {
        if Path::new(path).exists() {
            bail!("{path} exists: keygen does not replace a key (remove it, or choose another --output-key-prefix)");
        }
    }
    let password = keygen_password()?;
    let (private, public) = prompt_host_trust::signature::generate_key_pair(password.as_bytes()).map_err(anyhow::Error::msg)?;
    write_new(&key_path, private.as_bytes(), 0o600)?;
    write_new(&pub_path, public.as_bytes(), 0o644)?;
    eprintln!("Private key written to {key_path}\nPublic key written to {pub_path}");
    Ok(())
}

/// The password of a new key: COSIGN_PASSWORD if set (empty included, as
/// cosign takes it), else asked for twice on the terminal, unechoed.
fn keygen_password() -> anyhow::Result<String> {
    if let Ok(password) = std::env::var("COSIGN_PASSWORD") {
        return Ok(password);
    }
    if !std::io::stdin().is_terminal() {
        bail!("no password for the private key: set COSIGN_PASSWORD, or run keygen on a terminal to be asked");
    }
    let ask = |prompt: &str| -> anyhow::Result<String> {
        eprint!("{prompt}");
        // stty turns the terminal's echo off and back on: the password is not shown.
        let stty = |setting: &str| std::process::Command::new("stty").arg(setting).stdin(std::process::Stdio::inherit()).status();
        let _ = stty("-echo");
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line);
        let _ = stty("echo");
        eprintln!();
        read.context("reading the password")?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    };
    let password = ask("Enter password for private key: ")?;
    if ask("Enter password for private key again: ")? != password {
        bail!("the passwords differ: no key written");
    }
    Ok(password)
}

/// Writes `bytes` to a new file at `path` (never over one) with `mode`.
fn write_new(path: &str, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).with_context(|| format!("cannot create {path}"))?;
    file.write_all(bytes).with_context(|| format!("cannot write {path}"))
}

pub async fn publish(file: &Path, reference: &str, config_path: Option<&Path>, plain_http: bool) -> anyhow::Result<()> {
    let config = reaching(optional_config(config_path)?, reference, plain_http)?;
    let digest = install::publish(&config, file, reference).await?;
    eprintln!("published {} to {reference}", file.display());
    // The digest alone on stdout, for scripts: it is what a signature signs.
    println!("{digest}");
    Ok(())
}

fn describe(verb: &str, pack: &LockedPack, installation: &Installation<'_>) -> String {
    let signed = if pack.signer == "unsigned" { "unsigned".to_string() } else { format!("signed by {}", pack.signer) };
    format!(
        "{verb} {} from {} ({}, {} bytes, {signed}) as {}",
        pack.name,
        pack.reference,
        pack.digest,
        pack.size,
        installation.plugins_dir.join(format!("{}.wasm", pack.name)).display()
    )
}

fn line(pack: &Listed) -> String {
    let or_dash = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".into());
    let prompts =
        pack.prompts.map_or_else(|| "does not load".to_string(), |count| format!("{count} prompt{}", if count == 1 { "" } else { "s" }));
    let line = format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
        pack.name,
        pack.source,
        or_dash(&pack.tag),
        or_dash(&pack.digest),
        or_dash(&pack.signer),
        prompts,
        pack.state
    );
    match pack.granted.is_empty() {
        true => line,
        false => format!("{line}\tgranted: {}", pack.granted.join(", ")),
    }
}

/// For `serve`: installs the packs the config names by source, before the
/// plugin directory is loaded. A pack that cannot be installed is logged and
/// not served; the rest are.
pub async fn install_sources(config: &ServeConfig) {
    if !config.plugins.values().any(|plugin| plugin.source.is_some()) {
        return;
    }
    let installation = match Installation::new(config) {
        Ok(installation) => installation,
        Err(error) => return tracing::error!("packs named by source not installed: {error}"),
    };
    for (name, outcome) in installation.install_sources().await {
        let plugin = name.escape_debug().to_string();
        match outcome {
            Ok(Sourced::Served(pack)) => {
                tracing::info!(
                    plugin,
                    reference = pack.reference,
                    digest = pack.digest,
                    signer = pack.signer,
                    "already installed from its source"
                )
            }
            Ok(Sourced::Restored(pack)) => tracing::warn!(
                plugin,
                reference = pack.reference,
                digest = pack.digest,
                "its plugin file had changed or gone: put back from the pack store"
            ),
            Ok(Sourced::Installed(pack)) => tracing::info!(
                plugin,
                reference = pack.reference,
                digest = pack.digest,
                signer = pack.signer,
                "pulled from its source and installed"
            ),
            // The error may quote what a registry sent: a Debug field, escaped.
            Err(error) => tracing::error!(plugin, error = ?error.to_string(), "not installed from its source"),
        }
    }
}
