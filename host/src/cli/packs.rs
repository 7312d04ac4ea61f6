//! The registry commands, `add`, `update`, `remove`, `list`, `publish`,
//! `keygen` and `sign`: what they print. The work is [`crate::install`]'s.

use std::io::IsTerminal;
use std::path::Path;

use prompt_host_trust::lockfile::{LockedPack, Lockfile};

use super::CommandError;
use crate::config::ServeConfig;
use crate::install::{self, Installation, Listed, Updated};

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

fn config(path: &Path) -> Result<ServeConfig, CommandError> {
    ServeConfig::from_file(path).map_err(CommandError::NeedsConfig)
}

/// `config`, with `reference`'s registry reached over plain HTTP if
/// `plain_http` (`--plain-http`).
fn reaching(mut config: ServeConfig, reference: &str, plain_http: bool) -> Result<ServeConfig, CommandError> {
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
) -> Result<(), CommandError> {
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
) -> Result<(), CommandError> {
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
        return Err(CommandError::Failed(format!("{failed} of {} packs not updated", outcomes.len())));
    }
    Ok(())
}

pub async fn remove(config_path: &Path, name: &str) -> Result<(), CommandError> {
    let config = config(config_path)?;
    let removed = Installation::new(&config)?.remove(name).await?;
    eprintln!("removed {} ({} at {})", removed.name, removed.reference, removed.digest);
    Ok(())
}

pub async fn list(config_path: &Path, json: bool) -> Result<(), CommandError> {
    let config = config(config_path)?;
    let listed = Installation::new(&config)?.list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&listed).expect("the list serializes")); // stdout-ok: what a script reads from a registry command, never under serve
        return Ok(());
    }
    if listed.is_empty() {
        println!("no packs installed"); // stdout-ok: what a script reads from a registry command, never under serve
    }
    for pack in &listed {
        println!("{}", line(pack)); // stdout-ok: what a script reads from a registry command, never under serve
    }
    Ok(())
}

fn optional_config(path: Option<&Path>) -> Result<ServeConfig, CommandError> {
    Ok(match path {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    })
}

pub async fn sign(reference: &str, key: &Path, allow_tag: bool, config_path: Option<&Path>, plain_http: bool) -> Result<(), CommandError> {
    let config = reaching(optional_config(config_path)?, reference, plain_http)?;
    let password = std::env::var("COSIGN_PASSWORD").unwrap_or_default();
    let signed = install::sign(&config, reference, key, password.as_bytes(), allow_tag).await?;
    eprintln!("signed {} in the repository {} with {}", signed.digest, signed.repository, key.display());
    // The digest alone on stdout, for scripts.
    println!("{}", signed.digest); // stdout-ok: what a script reads from a registry command, never under serve
    Ok(())
}

/// `prompt-host keygen`: PREFIX.key and PREFIX.pub, as cosign writes them.
pub fn keygen(prefix: &str) -> Result<(), CommandError> {
    let (key_path, pub_path) = (format!("{prefix}.key"), format!("{prefix}.pub"));
    for path in [&key_path, &pub_path] {
        if Path::new(path).exists() {
            return Err(CommandError::Failed(format!(
                "{path} exists: keygen does not replace a key (remove it, or choose another --output-key-prefix)"
            )));
        }
    }
    let password = keygen_password()?;
    let (private, public) = prompt_host_trust::signature::generate_key_pair(password.as_bytes()).map_err(CommandError::Failed)?;
    write_new(&key_path, private.as_bytes(), 0o600)?;
    write_new(&pub_path, public.as_bytes(), 0o644)?;
    eprintln!("Private key written to {key_path}\nPublic key written to {pub_path}");
    Ok(())
}

/// The password of a new key: COSIGN_PASSWORD if set (empty included, as
/// cosign takes it), else asked for twice on the terminal, unechoed.
fn keygen_password() -> Result<String, CommandError> {
    if let Ok(password) = std::env::var("COSIGN_PASSWORD") {
        return Ok(password);
    }
    if !std::io::stdin().is_terminal() {
        return Err(CommandError::Failed(
            "no password for the private key: set COSIGN_PASSWORD, or run keygen on a terminal to be asked".into(),
        ));
    }
    let ask = |prompt: &str| -> Result<String, CommandError> {
        eprint!("{prompt}");
        // stty turns the terminal's echo off and back on: the password is not shown.
        let stty = |setting: &str| std::process::Command::new("stty").arg(setting).stdin(std::process::Stdio::inherit()).status();
        let _ = stty("-echo");
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line);
        let _ = stty("echo");
        eprintln!();
        read.map_err(|error| CommandError::Io { what: "reading the password".into(), error })?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    };
    let password = ask("Enter password for private key: ")?;
    if ask("Enter password for private key again: ")? != password {
        return Err(CommandError::Failed("the passwords differ: no key written".into()));
    }
    Ok(password)
}

/// Writes `bytes` to a new file at `path` (never over one) with `mode`.
fn write_new(path: &str, bytes: &[u8], mode: u32) -> Result<(), CommandError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(|error| CommandError::Io { what: format!("cannot create {path}"), error })?;
    file.write_all(bytes).map_err(|error| CommandError::Io { what: format!("cannot write {path}"), error })
}

pub async fn publish(file: &Path, reference: &str, config_path: Option<&Path>, plain_http: bool) -> Result<(), CommandError> {
    let config = reaching(optional_config(config_path)?, reference, plain_http)?;
    let digest = install::publish(&config, file, reference).await?;
    eprintln!("published {} to {reference}", file.display());
    // The digest alone on stdout, for scripts: it is what a signature signs.
    println!("{digest}"); // stdout-ok: what a script reads from a registry command, never under serve
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
