//! What the binary says while it starts: a compile announced when it starts
//! and when it ends (and nothing when the compiled cache has the pack, which
//! `get`, `complete` and `inspect` share with `serve`), one line on what is
//! served, a `--prefix` for no plugin, and paths in a config file taken
//! relative to the file.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::{Server, built_plugin, plugin_dir, serve_plugins};

/// Runs `prompt-host ARGS` with the default log filter, in `cwd`, with
/// `cache_home` as the default cache's base, and stdin closed (so `serve`
/// over stdio stops after starting).
fn run_in(cwd: &Path, cache_home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .env("XDG_CACHE_HOME", cache_home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The log lines of `stderr`, without their timestamps.
fn log_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().map(|line| line.split_once(' ').map_or(line, |(_, rest)| rest.trim_start())).collect()
}

/// The files in the compiled cache's own directory under `cache`.
fn cache_entries(cache: &Path) -> Vec<String> {
    match std::fs::read_dir(cache.join("compiled")) {
        Ok(entries) => entries.map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn get_compiles_a_pack_once_into_the_cache_serve_uses_and_says_so() {
    let pack = built_plugin("dev_assistant");
    let size = std::fs::metadata(&pack).unwrap().len();
    let (cache, cache_home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let get = ["get", pack.to_str().unwrap(), "explain-code", "code=x", "--cache-dir", cache.path().to_str().unwrap()];

    let first = run_in(cache.path(), cache_home.path(), &get);
    assert_eq!(first.status.code(), Some(0), "{}", stderr_of(&first));
    let stderr = stderr_of(&first);
    let lines = log_lines(&stderr);
    assert_eq!(lines.len(), 2, "{stderr}");
    assert_eq!(
        lines[0],
        format!("INFO prompt_host::loader: compiling dev_assistant ({:.1} MB)… plugin=dev_assistant bytes={size}", size as f64 / 1e6)
    );
    assert!(lines[1].starts_with("INFO prompt_host::loader: compiled dev_assistant in "), "{stderr}");
    assert!(lines[1].contains(" s plugin=dev_assistant elapsed_ms="), "{stderr}");
    let digest = prompt_host::loader::digest(&std::fs::read(&pack).unwrap());
    let entries = cache_entries(cache.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].starts_with(&digest) && entries[0].ends_with(".cwasm"), "{entries:?}");

    // The second time, from the cache: nothing on stderr, the same answer.
    let second = run_in(cache.path(), cache_home.path(), &get);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(stderr_of(&second), "");
    assert_eq!(second.stdout, first.stdout);
    // inspect reads the same cache, and says so.
    let inspect = ["inspect", "--json", pack.to_str().unwrap(), "--cache-dir", cache.path().to_str().unwrap()];
    let inspected = run_in(cache.path(), cache_home.path(), &inspect);
    assert_eq!(inspected.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(report["fromCache"], true);
    assert_eq!(stderr_of(&inspected), "");
    // Nothing went to the default cache.
    assert_eq!(std::fs::read_dir(cache_home.path()).unwrap().count(), 0);
}

#[test]
fn without_the_cache_get_compiles_and_writes_nothing() {
    let pack = built_plugin("dev_assistant");
    let (cwd, cache_home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let get = ["get", pack.to_str().unwrap(), "explain-code", "code=x", "--no-cache"];
    for _ in 0..2 {
        let output = run_in(cwd.path(), cache_home.path(), &get);
        assert_eq!(output.status.code(), Some(0));
        let stderr = stderr_of(&output);
        assert_eq!(stderr.matches("INFO prompt_host::loader: compiling dev_assistant (").count(), 1, "{stderr}");
    }
    assert_eq!(std::fs::read_dir(cache_home.path()).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);

    // Without --cache-dir, the default cache: the one serve uses.
    let output = run_in(cwd.path(), cache_home.path(), &get[..4]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(cache_entries(&cache_home.path().join("prompt-host")).len(), 1);
    let inspected = run_in(cwd.path(), cache_home.path(), &["inspect", pack.to_str().unwrap()]);
    let text = String::from_utf8(inspected.stdout).unwrap();
    assert!(text.lines().any(|line| line.starts_with("  compile   from the compiled cache in ")), "{text}");
}

#[test]
fn serve_says_in_one_line_what_it_serves() {
    let (dir, server) = serve_plugins(&["code_review", "dev_assistant", "hostile_bad_definitions"], &[]);
    let summary = format!("INFO prompt_host::watch: serving 4 prompts from 2 plugins (1 refused) dir={}\n", dir.path().display());
    let stderr = server.wait_for_stderr(&summary);
    assert_eq!(stderr.matches("prompt_host::watch: serving ").count(), 1, "{stderr}");

    let bundled = Server::start(&[]);
    bundled.wait_for_stderr("INFO prompt_host::watch: serving 7 prompts from 4 plugins\n");
}

#[test]
fn serve_warns_when_it_serves_nothing_and_says_why() {
    let empty = plugin_dir(&[]);
    let server = Server::start(&["--plugins", empty.path().to_str().unwrap()]);
    server.wait_for_stderr(&format!(
        "WARN prompt_host::watch: serving no prompts: the plugin directory holds no plugin files (*.wasm) dir={}\n",
        empty.path().display()
    ));

    let (refused, server) = serve_plugins(&["hostile_bad_definitions", "wrong_world"], &[]);
    server.wait_for_stderr(&format!(
        "WARN prompt_host::watch: serving no prompts: 2 plugins found, and every one refused (the errors above say why) dir={}\n",
        refused.path().display()
    ));
}

#[test]
fn a_prefix_for_no_plugin_is_reported_with_the_closest_name() {
    let (dir, server) = serve_plugins(&["code_review"], &["--prefix", "code_reveiw=x_"]);
    server.wait_for_stderr(&format!(
        "WARN prompt_host::watch: --prefix code_reveiw=x_ matches no plugin file (no code_reveiw.wasm). \
         Did you mean 'code_review'? dir={}\n",
        dir.path().display()
    ));
    // The bundled packs are checked the same way.
    let bundled = Server::start(&["--prefix", "dev_asistant=d-"]);
    bundled.wait_for_stderr(
        "WARN prompt_host::startup: --prefix dev_asistant=d- matches no plugin file (no dev_asistant.wasm). \
         Did you mean 'dev_assistant'?\n",
    );
}

#[test]
fn paths_in_a_config_file_are_relative_to_its_folder() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("etc");
    std::fs::create_dir_all(folder.join("packs")).unwrap();
    std::fs::copy(built_plugin("code_review"), folder.join("packs/code_review.wasm")).unwrap();
    std::fs::write(folder.join("prompt-host.toml"), "[server]\nplugins = \"packs\"\ncache_dir = \"cache\"\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let cache_home = tempfile::tempdir().unwrap();
    let config = folder.join("prompt-host.toml");

    let output = run_in(elsewhere.path(), cache_home.path(), &["serve", "--config", config.to_str().unwrap()]);
    let stderr = stderr_of(&output);
    let summary = format!("INFO prompt_host::watch: serving 1 prompt from 1 plugin dir={}", folder.join("packs").display());
    assert!(log_lines(&stderr).contains(&summary.as_str()), "{stderr}");
    assert_eq!(cache_entries(&folder.join("cache")).len(), 1, "{stderr}");

    // A config file named relative to the working directory, naming a
    // directory that is not there: both named by their absolute paths.
    std::fs::write(folder.join("missing.toml"), "[server]\nplugins = \"gone\"\n").unwrap();
    let output = run_in(root.path(), cache_home.path(), &["serve", "--config", "etc/missing.toml"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_of(&output),
        format!("error: cannot read the plugin directory {}: No such file or directory (os error 2)\n", folder.join("gone").display())
    );
    let output = run_in(root.path(), cache_home.path(), &["serve", "--config", "etc/absent.toml"]);
    assert_eq!(
        stderr_of(&output),
        format!("error: invalid config file {}: No such file or directory (os error 2)\n", folder.join("absent.toml").display())
    );
}
