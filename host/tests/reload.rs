//! The live plugin directory: packs added, replaced, broken and removed while
//! a client is connected; pinning; the compiled cache across restarts.

mod support;

use serde_json::json;
use support::{Server, built_plugin, install, install_bytes, only_text, plugin_dir};

const LIST_CHANGED: &str = "notifications/prompts/list_changed";

#[test]
fn packs_come_and_go_while_a_client_is_connected() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);

    // Added: the client hears of it, and sees the new prompts.
    install(dir.path(), "dev_assistant", "tools.wasm");
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), ["code_review", "git-commit", "explain-code", "debug-error"]);

    // Replaced by another version under the same name.
    install(dir.path(), "media_prompts", "tools.wasm");
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), ["code_review", "describe-image", "transcribe-audio"]);

    // Replaced by a broken file: the last good version keeps serving.
    install_bytes(dir.path(), b"\0asm\x0d\0\x01\0 this is no component", "tools.wasm");
    server.wait_for_stderr("new version not loaded, the previous one keeps serving");
    assert_eq!(server.list_all_names(), ["code_review", "describe-image", "transcribe-audio"]);
    assert_eq!(server.get_prompt("transcribe-audio", json!({}))["messages"][0]["content"]["type"], "audio");

    // Removed: its prompts are gone.
    std::fs::remove_file(dir.path().join("tools.wasm")).unwrap();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), ["code_review"]);
    let error = server.error("prompts/get", json!({ "name": "transcribe-audio" }));
    assert_eq!((error["code"].as_i64(), error["message"].as_str()), (Some(-32602), Some("unknown prompt 'transcribe-audio'")));
}

#[test]
fn a_rescan_that_changes_nothing_notifies_no_one() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch"]);
    server.hang_up();
    server.wait_for_stderr("plugin directory rescanned");
    assert_eq!(server.drain_notifications(), Vec::<serde_json::Value>::new());

    // With watching off, SIGHUP is how a change is picked up.
    install(dir.path(), "dev_assistant", "dev_assistant.wasm");
    server.hang_up();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names().len(), 4);
}

#[test]
fn a_cursor_from_before_a_change_must_list_again() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--page-size", "2"]);
    let cursor = server.result("prompts/list", json!({}))["nextCursor"].as_str().unwrap().to_string();
    install(dir.path(), "media_prompts", "media_prompts.wasm");
    server.notification(LIST_CHANGED);
    let error = server.error("prompts/list", json!({ "cursor": cursor }));
    assert_eq!(error["code"], -32602);
    assert_eq!(
        error["message"],
        "stale cursor: the prompt catalog changed after it was issued; list prompts again without a cursor"
    );
    assert_eq!(server.list_all_names().len(), 6);
}

#[test]
fn a_stable_pack_serves_every_request_while_another_is_replaced_50_times() {
    let dir = plugin_dir(&["code_review"]);
    install(dir.path(), "dev_assistant", "churn.wasm");
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);

    let churn_dir = dir.path().to_path_buf();
    let churner = std::thread::spawn(move || {
        for round in 0..50 {
            let version = if round % 2 == 0 { "media_prompts" } else { "dev_assistant" };
            install(&churn_dir, version, "churn.wasm");
            // Longer than the watcher's debounce window, so that each version
            // is seen by a rescan rather than aliased away by the next.
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
    });
    let (mut stable, mut churn_served, mut churn_absent) = (0, 0, 0);
    while !churner.is_finished() {
        let reply = server.get_prompt("code_review", json!({ "code": "x" }));
        assert_eq!(only_text(&reply), "Please review this Python code:\nx");
        stable += 1;
        let response = server.request("prompts/get", json!({ "name": "git-commit", "arguments": { "changes": "c" } }));
        if response.get("result").is_some() {
            churn_served += 1;
        } else {
            assert_eq!(response["error"]["code"], -32602, "{response}");
            assert_eq!(response["error"]["message"], "unknown prompt 'git-commit'");
            churn_absent += 1;
        }
    }
    churner.join().unwrap();
    assert!(stable > 50, "only {stable} requests to the stable pack");
    assert!(churn_served > 0 && churn_absent > 0, "served {churn_served}, absent {churn_absent}: {}", server.stderr());
}

fn sha256_of(plugin: &str) -> String {
    prompt_host::loader::digest(&std::fs::read(built_plugin(plugin)).unwrap())
}

fn config_file(dir: &std::path::Path, text: &str) -> String {
    let path = dir.join("prompt-host.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_pinned_pack_loads_only_with_its_own_bytes() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let config_dir = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    let config = config_file(
        config_dir.path(),
        &format!("[plugins.code_review]\nsha256 = \"{}\"\n\n[plugins.dev_assistant]\nsha256 = \"{wrong}\"\n", sha256_of("code_review")),
    );
    let mut server = Server::start(&["--config", &config, "--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
    server.wait_for_stderr(&format!(
        "{}: its SHA-256 is {}, but the configuration pins it to {wrong}",
        dir.path().join("dev_assistant.wasm").display(),
        sha256_of("dev_assistant")
    ));

    let mut strict = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--require-pinned"]);
    assert_eq!(strict.list_all_names(), Vec::<String>::new());
    strict.wait_for_stderr("it is not pinned, and the configuration requires every plugin to be pinned");
}

#[test]
fn a_restart_loads_compiled_packs_from_the_cache_and_recompiles_a_tampered_one() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let cache = tempfile::tempdir().unwrap();
    let args = ["--plugins", dir.path().to_str().unwrap(), "--cache-dir", cache.path().to_str().unwrap()];
    const FROM_CACHE: &str = "loaded the compiled component from the cache";

    let mut cold = Server::start(&args);
    assert_eq!(cold.list_all_names().len(), 4);
    let stderr = cold.wait_for_stderr("plugin directory rescanned");
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");
    drop(cold);
    let entries: Vec<_> = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 2, "{entries:?}");

    let mut warm = Server::start(&args);
    assert_eq!(warm.list_all_names().len(), 4);
    let stderr = warm.wait_for_stderr("plugin directory rescanned");
    assert_eq!(stderr.matches(FROM_CACHE).count(), 2, "{stderr}");
    drop(warm);

    // Flip one byte of one entry: it is refused, deleted and recompiled.
    let victim = entries.iter().find(|path| path.to_str().unwrap().contains(&sha256_of("code_review"))).unwrap();
    let mut bytes = std::fs::read(victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(victim, bytes).unwrap();
    let mut tampered = Server::start(&args);
    let reply = tampered.get_prompt("code_review", json!({ "code": "x" }));
    assert_eq!(only_text(&reply), "Please review this Python code:\nx");
    let stderr = tampered.wait_for_stderr("plugin directory rescanned");
    assert!(stderr.contains("compiled cache entry is corrupt or tampered with: deleting it and compiling again"), "{stderr}");
    assert_eq!(stderr.matches(FROM_CACHE).count(), 1, "{stderr}");
}

#[test]
fn a_bad_file_is_reported_once_until_it_changes_or_sighup_retries_it() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    install_bytes(dir.path(), b"not a component", "bad.wasm");
    let reported = format!("plugin not loaded: {}: not a WebAssembly file", dir.path().join("bad.wasm").display());
    server.wait_for_stderr(&reported);

    // Another change in the directory rescans it, but the same bad bytes are
    // not loaded (or reported) again.
    install(dir.path(), "dev_assistant", "dev_assistant.wasm");
    server.notification(LIST_CHANGED);
    let stderr = server.wait_for_stderr_count("plugin directory rescanned", 3);
    assert_eq!(stderr.matches(&reported).count(), 1, "{stderr}");

    // SIGHUP is the operator asking to try everything again.
    server.hang_up();
    server.wait_for_stderr_count(&reported, 2);
    assert_eq!(server.list_all_names().len(), 4);
}
