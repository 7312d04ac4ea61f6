//! What operators and clients meet every day: a log that helps and does not
//! flood (a clash of names reported when it appears, not at every change
//! after; a pack that prints on every call rate-limited), and a typo in a
//! prompt name answered with the name that was probably meant.

mod support;

use serde_json::json;
use support::{install, only_text, serve_plugins};

const LIST_CHANGED: &str = "notifications/prompts/list_changed";

#[test]
fn a_name_clash_is_reported_once_not_at_every_catalog_change() {
    let (dir, mut server) = serve_plugins(&["code_review"], &[]);
    install(dir.path(), "code_review", "zz_copy.wasm");
    server.notification(LIST_CHANGED);
    let clash = "prompt 'code_review' of plugin 'zz_copy' is skipped: plugin 'code_review' already serves that name";
    server.wait_for_stderr(clash);

    // Another change of the catalog, with the clash still there.
    install(dir.path(), "dev_assistant", "dev_assistant.wasm");
    server.notification(LIST_CHANGED);
    server.wait_for_stderr("plugin loaded plugin=dev_assistant");
    assert_eq!(server.list_all_names(), ["code_review", "git-commit", "explain-code", "debug-error"]);
    assert_eq!(server.stderr().matches(clash).count(), 1, "{}", server.stderr());
}

#[test]
fn a_pack_printing_on_every_call_is_rate_limited_in_the_log() {
    let (_dir, mut server) = serve_plugins(&["hostile"], &[]);
    // 30 calls of two lines each (stdout and stderr): 60 lines in well under 10 s.
    for _ in 0..30 {
        assert_eq!(only_text(&server.get_prompt("chatty", json!({}))), "chatted");
    }
    let stderr = server.wait_for_stderr("plugin output rate limit reached");
    assert_eq!(stderr.matches("plugin output rate limit reached").count(), 1, "{stderr}");
    assert_eq!(stderr.matches(r#"plugin output plugin="hostile""#).count(), 50, "{stderr}");
}

#[test]
fn a_typo_in_a_prompt_name_is_answered_with_the_closest_name() {
    let (_dir, mut server) = serve_plugins(&["dev_assistant"], &[]);
    let error = server.error("prompts/get", json!({ "name": "explain-cod", "arguments": { "code": "x" } }));
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], "unknown prompt 'explain-cod' (did you mean 'explain-code'?)");
    assert_eq!(error["data"], json!({ "prompt": "explain-cod" }));
    let error = server.error("prompts/get", json!({ "name": "weather" }));
    assert_eq!(error["message"], "unknown prompt 'weather'");
}

fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host")).args(args).output().unwrap()
}

#[test]
fn the_version_says_what_packs_it_accepts_and_what_it_was_built_with() {
    let output = run(&["--version"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["prompt-host 0.1.0", "accepts packs built against prompt-host:prompts 0.1.x, 0.2.x, 0.3.x or 0.4.x"]);
    assert!(lines[2].starts_with("built with wasmtime 48.0.8, rmcp 3.11.0, commit "), "{text}");
    assert_eq!(lines.len(), 3, "{text}");
}

#[test]
fn shell_completions_and_a_man_page_are_generated() {
    let bash = run(&["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0));
    let script = String::from_utf8(bash.stdout).unwrap();
    assert!(script.contains("complete -F _prompt__host"), "{script:.300}");
    assert!(script.contains("inspect") && script.contains("--log-format"), "{script:.300}");
    let man = run(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(page.contains(".TH prompt-host 1"), "{page:.300}");
    assert!(page.contains("serve"), "{page:.300}");
}

#[test]
fn the_example_packs_are_written_out_with_a_config_that_serves_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("examples");
    let output = run(&["examples", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let mut files: Vec<String> =
        std::fs::read_dir(out.join("plugins")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["code_review.wasm", "dev_assistant.wasm", "media_prompts.wasm", "project_insights.wasm"]);
    // The config serves what the binary serves with no plugin directory.
    let config = out.join("prompt-host.toml");
    let mut written = support::Server::start(&["--config", config.to_str().unwrap()]);
    written.wait_for_stderr(&format!("serving 7 prompts from 4 plugins dir={}", out.join("plugins").display()));
    let mut bundled = support::Server::start(&[]);
    assert_eq!(written.list_all_names(), bundled.list_all_names());
    assert!(written.list_all_names().contains(&"code_review".to_string()));
    // Nothing is overwritten: a second run refuses the directory.
    let again = run(&["examples", "--out", out.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains(&format!("{} already exists and is not empty: choose another directory", out.display())), "{stderr}");
}
