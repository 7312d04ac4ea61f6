//! The access log over the real binary: `[server] access_log` gets one JSON
//! line per `prompts/get` and `completion/complete` (time, tenant, user,
//! method, prompt, plugin, outcome, duration, fuel; over stdio the user is
//! the one stdio client), a client's unknown prompt name written as an
//! escaped JSON string on one line; the file opened again at SIGHUP after
//! logrotate moved it.

mod support;

use serde_json::{Value, json};
use support::{Server, only_text, plugin_dir, send_signal};

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[test]
fn each_get_and_completion_is_one_line_and_the_file_is_opened_again_at_sighup() {
    let plugins = plugin_dir(&["code_review", "typed_arguments"]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, format!("[server]\nplugins = {:?}\naccess_log = \"access.log\"\n", plugins.path())).unwrap();
    let log = dir.path().join("access.log");
    let mut server = Server::start(&["--config", config.to_str().unwrap()]);
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    server.error("prompts/get", json!({ "name": "code_review", "arguments": {} }));
    server.error("prompts/get", json!({ "name": "no\"such\nprompt" }));
    server.result(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "report" }, "argument": { "name": "tone", "value": "f" } }),
    );

    let written = lines(&log);
    let shown: Vec<Value> = written
        .iter()
        .map(|line| json!([line["tenant"], line["user"], line["method"], line["prompt"], line["plugin"], line["outcome"]]))
        .collect();
    assert_eq!(
        shown,
        [
            json!(["", "stdio", "prompts/get", "code_review", "code_review", "ok"]),
            json!(["", "stdio", "prompts/get", "code_review", "code_review", "invalid-arguments"]),
            json!(["", "stdio", "prompts/get", "no\"such\nprompt", null, "not-found"]),
            json!(["", "stdio", "completion/complete", "report", "typed_arguments", "ok"]),
        ]
    );
    // The pack ran for the first only: its fuel is counted; the others burned none.
    assert!(written[0]["fuel"].as_u64().unwrap() > 0, "{:?}", written[0]);
    assert_eq!(written[1]["fuel"], 0);
    assert_eq!(written[3]["fuel"], 0, "the host completed a choice without the pack");
    assert!(written[0]["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(written[0]["time"].as_str().unwrap().ends_with('Z'));

    // logrotate moves the file, then signals: the next line starts a new file.
    std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    send_signal(server.pid(), "HUP");
    server.wait_for_stderr("SIGHUP: the access log opened again");
    server.get_prompt("code_review", json!({ "code": "y" }));
    assert_eq!(lines(&log).len(), 1);
    assert_eq!(lines(&dir.path().join("access.log.1")).len(), 4);
}
