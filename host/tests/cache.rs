//! The compiled cache trusts nothing it did not write: over the real binary,
//! restarts load from it, and a tampered, swapped, foreign or writable entry
//! or directory is never deserialized; the pack is compiled instead.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use support::{Server, built_plugin, only_text, plugin_dir};

const FROM_CACHE: &str = "loaded the compiled component from the cache";

fn sha256_of(plugin: &str) -> String {
    prompt_host::loader::digest(&std::fs::read(built_plugin(plugin)).unwrap())
}

/// Serves `plugins` with `cache` as the cache directory until the directory
/// is scanned, and returns what it logged.
fn serve_once(plugins: &Path, cache: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--plugins", plugins.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut server = Server::start(&args);
    server.list_all_names();
    server.wait_for_stderr("plugin directory rescanned")
}

/// The entry of `plugin` in the cache directory `cache`.
fn entry_of(cache: &Path, plugin: &str) -> PathBuf {
    let digest = sha256_of(plugin);
    std::fs::read_dir(cache.join("compiled"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.file_name().unwrap().to_str().unwrap().starts_with(&digest))
        .unwrap_or_else(|| panic!("no cache entry for {plugin}"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_restart_loads_compiled_packs_from_the_cache_and_recompiles_a_tampered_one() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let cache = tempfile::tempdir().unwrap();
    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");
    assert_eq!(std::fs::read_dir(cache.path().join("compiled")).unwrap().count(), 2);

    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert_eq!(stderr.matches(FROM_CACHE).count(), 2, "{stderr}");

    // Flip one byte of one entry: it is refused, deleted and recompiled.
    let victim = entry_of(cache.path(), "code_review");
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    let mut tampered = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--cache-dir", cache.path().to_str().unwrap()]);
    assert_eq!(only_text(&tampered.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    let stderr = tampered.wait_for_stderr("plugin directory rescanned");
    assert!(stderr.contains("compiled cache entry is corrupt or tampered with: deleting it and compiling again"), "{stderr}");
    assert_eq!(stderr.matches(FROM_CACHE).count(), 1, "{stderr}");
}

#[test]
fn an_entry_copied_over_another_packs_entry_is_not_used() {
    let dir = plugin_dir(&["code_review", "media_prompts"]);
    let cache = tempfile::tempdir().unwrap();
    serve_once(dir.path(), cache.path(), &[]);
    // media_prompts' valid entry, under code_review's name.
    std::fs::copy(entry_of(cache.path(), "media_prompts"), entry_of(cache.path(), "code_review")).unwrap();

    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--cache-dir", cache.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review", "describe-image", "transcribe-audio"]);
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    let stderr = server.wait_for_stderr("plugin directory rescanned");
    assert!(
        stderr.contains("compiled cache entry was compiled from other bytes than the plugin's: deleting it and compiling again"),
        "{stderr}"
    );
    assert_eq!(stderr.matches(FROM_CACHE).count(), 1, "{stderr}");
}

#[test]
fn the_configured_directory_keeps_its_mode_and_entries_live_in_a_private_one() {
    let dir = plugin_dir(&["code_review"]);
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    serve_once(dir.path(), cache.path(), &[]);
    assert_eq!(mode(cache.path()), 0o755);
    assert_eq!(mode(&cache.path().join("compiled")), 0o700);
}

#[test]
fn an_entry_others_may_write_or_another_user_owns_is_compiled_afresh() {
    let dir = plugin_dir(&["code_review"]);
    let cache = tempfile::tempdir().unwrap();
    serve_once(dir.path(), cache.path(), &[]);
    let entry = entry_of(cache.path(), "code_review");

    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert!(
        stderr.contains(&format!(
            "compiled cache entry not used, compiling instead: {} is not safe to load native code from: its group or others may write it (mode 666)",
            entry.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");

    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::chown(&entry, Some(65534), None).unwrap();
    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert!(stderr.contains("is not safe to load native code from: it is owned by user 65534, not by this user (0)"), "{stderr}");
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");
}

#[test]
fn a_cache_directory_others_may_write_disables_the_cache() {
    let dir = plugin_dir(&["code_review"]);
    let cache = tempfile::tempdir().unwrap();
    serve_once(dir.path(), cache.path(), &[]);
    std::fs::set_permissions(cache.path().join("compiled"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert!(stderr.contains("compiled cache disabled"), "{stderr}");
    assert!(stderr.contains("its group or others may write it (mode 777)"), "{stderr}");
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");
}

/// Bytes of all the entries in `cache`.
fn cache_bytes(cache: &Path) -> u64 {
    std::fs::read_dir(cache.join("compiled")).unwrap().map(|item| item.unwrap().metadata().unwrap().len()).sum()
}

fn set_mtime(path: &Path, seconds: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)).unwrap();
}

#[test]
fn the_least_recently_used_entries_are_evicted_past_the_size_cap() {
    const MIB: u64 = 1 << 20;
    const EVICTED: &str = "compiled cache entry evicted to keep the cache under its size cap";
    let cache = tempfile::tempdir().unwrap();
    // Four entries (about 170 to 360 KiB each, depending on the build),
    // under the default cap, aged with code_review the oldest...
    let four = ["code_review", "dev_assistant", "media_prompts", "bench_hundred"];
    let stderr = serve_once(plugin_dir(&four).path(), cache.path(), &[]);
    assert!(!stderr.contains(EVICTED), "{stderr}");
    for (age, plugin) in four.iter().enumerate() {
        set_mtime(&entry_of(cache.path(), plugin), 1_000_000 + age as u64);
    }
    // ... then code_review is used again: the least recently used are now
    // dev_assistant, media_prompts, bench_hundred, in that order.
    let stderr = serve_once(plugin_dir(&["code_review"]).path(), cache.path(), &[]);
    assert_eq!(stderr.matches(FROM_CACHE).count(), 1, "{stderr}");
    let least_recent_first = ["dev_assistant", "media_prompts", "bench_hundred", "code_review"];
    let entries: Vec<PathBuf> = least_recent_first.iter().map(|plugin| entry_of(cache.path(), plugin)).collect();
    assert!(cache_bytes(cache.path()) > MIB - 200 * 1024, "the entries are smaller than this test needs");

    // A fifth, under a 1 MiB cap: the least recently used go, oldest first,
    // until the rest fit, and the one just used stays.
    let stderr = serve_once(plugin_dir(&["conformance"]).path(), cache.path(), &["--cache-max-mib", "1"]);
    let evicted = entries.iter().take_while(|entry| !entry.exists()).count();
    assert!(evicted >= 1, "nothing was evicted: {stderr}");
    assert!(entries[evicted..].iter().all(|entry| entry.exists()), "not the least recently used were evicted: {stderr}");
    for entry in &entries[..evicted] {
        assert!(stderr.contains(&format!("{EVICTED} entry={} ", entry.display())), "{stderr}");
    }
    assert_eq!(stderr.matches(EVICTED).count(), evicted, "{stderr}");
    assert!(entries[3].exists(), "code_review, used last, was evicted: {stderr}");
    entry_of(cache.path(), "conformance");
    assert!(cache_bytes(cache.path()) <= MIB, "{}", cache_bytes(cache.path()));
}

#[test]
fn a_fifo_where_the_entries_live_disables_the_cache_and_hangs_nothing() {
    // Issue "Hardening, round 3", item 9: a blocking open of `compiled`
    // waited for a writer for ever, and with it `serve`, `inspect` and `list`.
    let dir = plugin_dir(&["code_review"]);
    let cache = tempfile::tempdir().unwrap();
    let fifo = cache.path().join("compiled");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let stderr = serve_once(dir.path(), cache.path(), &[]);
    assert!(stderr.contains("compiled cache disabled"), "{stderr}");
    assert!(stderr.contains(&format!("{}: it is not a directory", fifo.display())), "{stderr}");
    let inspect = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["inspect", built_plugin("code_review").to_str().unwrap(), "--cache-dir", cache.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(inspect.status.success(), "{}", String::from_utf8_lossy(&inspect.stderr));
}
