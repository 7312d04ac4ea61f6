//! The live plugin directory: packs added, replaced, broken and removed while
//! a client is connected; the directory itself replaced as deploys do;
//! polling; SIGHUP re-reading the config file; pinning
//! across restarts.

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
    // The line on what is served comes at start, and after the rescan that
    // changed it; not after the one that changed nothing.
    let log = server.wait_for_stderr("serving 4 prompts from 2 plugins");
    let served: Vec<&str> = log.lines().filter(|line| line.contains("INFO prompt_host::watch: serving ")).collect();
    assert_eq!(served.len(), 2, "{log}");
    assert!(served[0].contains("serving 1 prompt from 1 plugin"), "{log}");
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
    assert_eq!(error["message"], "stale cursor: the prompt catalog changed after it was issued; list prompts again without a cursor");
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
fn a_bad_file_is_reported_once_until_it_changes_or_sighup_retries_it() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    install_bytes(dir.path(), b"not a component", "bad.wasm");
    let bad = dir.path().join("bad.wasm").display().to_string();
    let reported = format!("plugin not loaded file={bad} error=\"{bad}: not a WebAssembly file");
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

const DEV_ASSISTANT: [&str; 3] = ["git-commit", "explain-code", "debug-error"];
const DEV_AND_MEDIA: [&str; 5] = ["git-commit", "explain-code", "debug-error", "describe-image", "transcribe-audio"];

/// A directory holding copies of the named built plugins at `path`.
fn pack_dir(path: &std::path::Path, names: &[&str]) {
    std::fs::create_dir(path).unwrap();
    for name in names {
        install(path, name, &format!("{name}.wasm"));
    }
}

/// After the directory was replaced: a file added to the new one is seen,
/// which proves the watch moved to it.
fn a_new_file_is_seen(server: &mut Server, dir: &std::path::Path) {
    install(dir, "media_prompts", "media_prompts.wasm");
    // (A notification of an earlier change may still be queued: the line
    // is written once the new pack is served.)
    server.wait_for_stderr("plugin loaded plugin=media_prompts");
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), DEV_AND_MEDIA);
}

/// A server of `ROOT/packs`, which holds code_review.
fn serve_packs_in_a_root() -> (tempfile::TempDir, std::path::PathBuf, Server) {
    let root = tempfile::tempdir().unwrap();
    let packs = root.path().join("packs");
    pack_dir(&packs, &["code_review"]);
    let mut server = Server::start(&["--plugins", packs.to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
    (root, packs, server)
}

#[test]
fn the_watch_follows_a_new_directory_renamed_over_the_old_one() {
    let (root, packs, mut server) = serve_packs_in_a_root();

    // An atomic deploy: build the new directory beside, then swap it in.
    pack_dir(&root.path().join("packs.new"), &["dev_assistant"]);
    std::fs::rename(&packs, root.path().join("packs.old")).unwrap();
    std::fs::rename(root.path().join("packs.new"), &packs).unwrap();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), DEV_ASSISTANT);
    server.wait_for_stderr("the plugin directory was replaced: watching the new one");
    a_new_file_is_seen(&mut server, &packs);
}

#[test]
fn the_watch_follows_a_directory_deleted_and_created_again() {
    let (root, packs, mut server) = serve_packs_in_a_root();

    // While it is gone, what was loaded keeps serving. (It goes at once:
    // emptied in place, a rescan could find it there and empty.)
    std::fs::rename(&packs, root.path().join("deleted")).unwrap();
    std::fs::remove_dir_all(root.path().join("deleted")).unwrap();
    server.wait_for_stderr(&format!("cannot rescan the plugin directory: No such file or directory (os error 2) dir={}", packs.display()));
    assert_eq!(server.list_all_names(), ["code_review"]);

    // Created, then filled: a rescan may find it still empty, and tell the
    // client of that first.
    pack_dir(&packs, &["dev_assistant"]);
    let mut served = Vec::new();
    for _ in 0..2 {
        server.notification(LIST_CHANGED);
        served = server.list_all_names();
        if served == DEV_ASSISTANT {
            break;
        }
        assert_eq!(served, Vec::<String>::new(), "the directory is empty or holds dev_assistant");
    }
    assert_eq!(served, DEV_ASSISTANT);
    a_new_file_is_seen(&mut server, &packs);
}

#[cfg(unix)]
#[test]
fn the_watch_follows_a_symlink_flipped_to_another_directory() {
    // As Kubernetes mounts a ConfigMap: packs -> ..data -> ..2026_11_22/,
    // updated by pointing a new ..data at a new directory, renamed over the old.
    let root = tempfile::tempdir().unwrap();
    pack_dir(&root.path().join("..2026_11_22"), &["code_review"]);
    std::os::unix::fs::symlink("..2026_11_22", root.path().join("..data")).unwrap();
    std::os::unix::fs::symlink("..data", root.path().join("packs")).unwrap();
    let packs = root.path().join("packs");
    let mut server = Server::start(&["--plugins", packs.to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);

    pack_dir(&root.path().join("..2026_11_23"), &["dev_assistant"]);
    std::os::unix::fs::symlink("..2026_11_23", root.path().join("..data_tmp")).unwrap();
    std::fs::rename(root.path().join("..data_tmp"), root.path().join("..data")).unwrap();
    std::fs::remove_dir_all(root.path().join("..2026_11_22")).unwrap();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), DEV_ASSISTANT);
    a_new_file_is_seen(&mut server, &packs);
}

#[test]
fn polling_picks_up_a_new_file() {
    let dir = plugin_dir(&["dev_assistant"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--watch-poll-ms", "100"]);
    server.wait_for_stderr(&format!("watching the plugin directory dir={} polling_ms=100", dir.path().display()));
    a_new_file_is_seen(&mut server, dir.path());
}

#[test]
fn sighup_rereads_the_config_file_and_keeps_the_running_one_if_it_is_bad() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_file(config_dir.path(), "[plugins.code_review]\nprefix = \"a-\"\n");
    // The command line still applies over the file read again.
    let args = ["--config", &config, "--plugins", dir.path().to_str().unwrap(), "--prefix", "dev_assistant=cli-"];
    let mut server = Server::start(&args);
    let cli_names = ["cli-git-commit", "cli-explain-code", "cli-debug-error"];
    assert_eq!(server.list_all_names(), [&["a-code_review"][..], &cli_names].concat());

    // A changed prefix: the plugin is loaded again with it, though its bytes did not change.
    config_file(config_dir.path(), "[plugins.code_review]\nprefix = \"b-\"\n");
    server.hang_up();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), [&["b-code_review"][..], &cli_names].concat());
    server.wait_for_stderr("configuration reloaded");

    // A bad file: the log says why, and the running configuration stays.
    config_file(config_dir.path(), "[plugins.code_review]\nprefix = \"c-\"\n[limits]\ndeadline_ms = 0\n");
    server.hang_up();
    let stderr = server.wait_for_stderr_count("plugin directory rescanned", 3);
    assert!(
        stderr.contains(&format!(
            "ERROR prompt_host::watch: configuration not reloaded, the running one stays: invalid config file {config}: limits.deadline_ms must be at least 1\n"
        )),
        "{stderr}"
    );
    assert_eq!(server.drain_notifications(), Vec::<serde_json::Value>::new());
    assert_eq!(server.list_all_names(), [&["b-code_review"][..], &cli_names].concat());

    // A pin the serving file does not match takes it out of service.
    config_file(config_dir.path(), &format!("[plugins.code_review]\nprefix = \"b-\"\nsha256 = \"{}\"\n", "0".repeat(64)));
    server.hang_up();
    server.notification(LIST_CHANGED);
    assert_eq!(server.list_all_names(), cli_names);
    server.wait_for_stderr("plugin removed: it does not load under the new configuration");
}

#[test]
fn a_section_for_no_plugin_is_reported_and_refused_under_require_pinned() {
    let dir = plugin_dir(&["code_review"]);
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_file(config_dir.path(), "[plugins.code_reveiw]\nprefix = \"x-\"\n");
    let mut server = Server::start(&["--config", &config, "--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
    let warning = format!(
        "WARN prompt_host::watch: [plugins.code_reveiw] matches no plugin file (no code_reveiw.wasm). Did you mean [plugins.code_review]? dir={}\n",
        dir.path().display()
    );
    server.wait_for_stderr(&warning);
    // Reported when it first appears, not at every rescan.
    install(dir.path(), "dev_assistant", "dev_assistant.wasm");
    server.notification(LIST_CHANGED);
    let stderr = server.wait_for_stderr_count("plugin directory rescanned", 2);
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    drop(server);

    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["serve", "--config", &config, "--plugins", dir.path().to_str().unwrap(), "--require-pinned"])
        .env("XDG_CACHE_HOME", std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(refused.stdout, b"");
    assert_eq!(
        String::from_utf8(refused.stderr).unwrap(),
        format!(
            "error: invalid configuration: in {}: [plugins.code_reveiw] matches no plugin file (no code_reveiw.wasm). \
             Did you mean [plugins.code_review]? Every plugin must be pinned (require_pinned): fix or remove the section\n",
            dir.path().display()
        )
    );
}

#[test]
fn a_limits_only_change_at_sighup_applies_to_the_next_call_and_tells_no_client() {
    // Issue "Hardening, round 3", item 8: the catalog does not change, so
    // the registry kept the plugin with its old limits.
    let dir = plugin_dir(&["hostile"]);
    let config_dir = tempfile::tempdir().unwrap();
    let limits = |deadline_ms: u32| format!("[plugins.hostile.limits]\ndeadline_ms = {deadline_ms}\nfuel = 100000000000000\n");
    let config = config_file(config_dir.path(), &limits(1000));
    let mut server = Server::start(&["--config", &config, "--plugins", dir.path().to_str().unwrap()]);
    let spin = |server: &mut Server| server.error("prompts/get", json!({ "name": "spin" }))["message"].as_str().unwrap().to_string();
    assert_eq!(spin(&mut server), "plugin 'hostile' exceeded its 1000 ms deadline");
    config_file(config_dir.path(), &limits(100));
    server.hang_up();
    server.wait_for_stderr("configuration reloaded");
    server.wait_for_stderr_count("plugin directory rescanned", 2);
    assert_eq!(spin(&mut server), "plugin 'hostile' exceeded its 100 ms deadline");
    assert_eq!(spin(&mut server), "plugin 'hostile' exceeded its 100 ms deadline");
    assert_eq!(server.drain_notifications(), Vec::<serde_json::Value>::new());
}

/// A logged line's message, the grants `grants_probe` was served with when
/// it was written, and how many plugins were served.
type LineAndServed = (String, Vec<String>, usize);

/// Each line the watcher logs, with what the registry served when it was written.
#[derive(Clone)]
struct ServedAtEachLine {
    registry: std::sync::Arc<prompt_host::registry::Registry>,
    lines: std::sync::Arc<std::sync::Mutex<Vec<LineAndServed>>>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ServedAtEachLine {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let message = prompt_host::json_log::event_message(event);
        let snapshot = self.registry.snapshot();
        let probe = snapshot.resolve("read").map(|(_, plugin)| plugin.access().given()).unwrap_or_default();
        let plugins = snapshot.catalog().entries().iter().map(|entry| entry.plugin).collect::<std::collections::BTreeSet<_>>().len();
        self.lines.lock().unwrap().push((message, probe, plugins));
    }
}

#[tokio::test]
async fn a_change_is_logged_once_the_next_call_is_served_by_it() {
    // The grants test's SIGHUP read the log line "grants changed for the
    // next call", made that call, and was served the old grants: the line
    // was written before the change was published.
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt;
    let root = tempfile::tempdir().unwrap();
    for folder in ["plugins", "project", "logs"] {
        std::fs::create_dir_all(root.path().join(folder)).unwrap();
    }
    std::fs::copy(built_plugin("grants_probe"), root.path().join("plugins/grants_probe.wasm")).unwrap();
    let config = |folders: &str| {
        let text = format!("[server]\nplugins = \"plugins\"\n\n[plugins.grants_probe.grants.folders]\n{folders}\n");
        prompt_host::config::ServeConfig::from_toml_in(&text, root.path()).unwrap()
    };
    let first = config("project = \"project\"\nlogs = \"logs\"\n");
    let sandbox = Arc::new(prompt_host_kernel::sandbox::Sandbox::new(first.sandbox_config()).unwrap());
    let loader = Arc::new(prompt_host::loader::Loader::new(sandbox, None));
    let registry = Arc::new(prompt_host::registry::Registry::new(Vec::new()));
    let plugins = root.path().join("plugins");
    let directory = prompt_host::watch::PluginDirectory::new(&plugins, loader, Arc::new(first), registry.clone());
    let seen = ServedAtEachLine { registry, lines: Default::default() };
    let _logging = tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    let line_with = |text: &str| {
        let lines = seen.lines.lock().unwrap();
        let found = lines.iter().filter(|(message, ..)| message.contains(text)).cloned().collect::<Vec<_>>();
        assert_eq!(found.len(), 1, "one line with {text:?} in {lines:?}");
        found.into_iter().next().unwrap()
    };
    let both = vec!["folder project = ".to_string(), "folder logs = ".to_string()];
    let given = |given: Vec<String>| given.iter().map(|grant| grant.split_inclusive("= ").next().unwrap().to_string()).collect::<Vec<_>>();

    directory.rescan(false).await.unwrap();
    let (_, served, served_plugins) = line_with("plugin loaded");
    assert_eq!((given(served), served_plugins), (both, 1));

    directory.replace_config(config("project = \"project\"\n")).unwrap();
    directory.rescan(true).await.unwrap();
    let (message, served, _) = line_with("grants changed for the next call");
    assert!(message.starts_with("grants changed for the next call: now folder project = "), "{message}");
    assert_eq!(given(served), ["folder project = "]);
    let (_, served, _) = line_with("plugin replaced");
    assert_eq!(given(served), ["folder project = "]);

    std::fs::remove_file(plugins.join("grants_probe.wasm")).unwrap();
    directory.rescan(false).await.unwrap();
    let (_, served, served_plugins) = line_with("plugin removed");
    assert_eq!((served, served_plugins), (Vec::<String>::new(), 0));
}

/// Hardening round 4, item 7: a pack added while the server runs never takes
/// a prompt name that a running pack serves, though its file name sorts
/// first: its prompt is the one skipped, and the warning says so. At start,
/// with no pack serving the name yet, the first file name takes it, as
/// documented.
#[test]
fn a_hot_added_pack_never_takes_a_name_a_running_pack_serves() {
    let dir = plugin_dir(&["code_review"]);
    let serving = |server: &mut Server| {
        let listed = server.result("prompts/list", json!({}));
        let prompts = listed["prompts"].as_array().unwrap().clone();
        prompts.iter().map(|prompt| format!("{} by {}", prompt["name"], prompt["_meta"]["prompt-host/plugin"])).collect::<Vec<_>>()
    };
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(serving(&mut server), ["\"code_review\" by \"code_review\""]);
    // `a_review` sorts before `code_review`, and declares the same name.
    install(dir.path(), "code_review", "a_review.wasm");
    let stderr = server.wait_for_stderr("already serves that name");
    assert!(
        stderr.contains("prompt 'code_review' of plugin 'a_review' is skipped: plugin 'code_review' already serves that name"),
        "{stderr}"
    );
    assert_eq!(serving(&mut server), ["\"code_review\" by \"code_review\""]);
    let answer = server.get_prompt("code_review", json!({ "code": "x" }));
    assert_eq!(only_text(&answer), "Please review this Python code:\nx");

    // A new server has no pack serving the name yet: the first by file name takes it.
    let mut restarted = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(serving(&mut restarted), ["\"code_review\" by \"a_review\""]);
    let stderr = restarted.wait_for_stderr("already serves that name");
    assert!(
        stderr.contains("prompt 'code_review' of plugin 'code_review' is skipped: plugin 'a_review' already serves that name"),
        "{stderr}"
    );
}
