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
