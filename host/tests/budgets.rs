//! What a pack hands back is bounded before the host pays for it, and what it
//! writes cannot pass for the host's own log: over the real binary, with the
//! `hostile` and `hostile_names` fixtures.

mod support;

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text, plugin_dir, serve_plugins};

/// The copy budget of a `get-prompt` under the default limits: the 8 MiB
/// reply limit, 1 KiB for each of the 256 form fields an input-required
/// answer may hold (more than the 100 messages of a reply), and 64 KiB for
/// the rest (validate::copy_budget).
const REPLY_COPY_BUDGET: u64 = (8 << 20) + 256 * 1024 + (64 << 10);
/// The copy budget of a `complete` under the default limits.
const COMPLETION_COPY_BUDGET: u64 = (8 << 20) + (64 << 10);

fn serve_hostile(extra: &[&str]) -> (tempfile::TempDir, Server) {
    serve_plugins(&["hostile", "code_review"], extra)
}

fn assert_still_serving(server: &mut Server) {
    assert_eq!(only_text(&server.get_prompt("echo", json!({ "text": "still here" }))), "still here");
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
}

fn complete(server: &mut Server, prompt: &str, value: &str) -> Value {
    server.request(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": prompt }, "argument": { "name": "shape", "value": value } }),
    )
}

#[test]
fn strings_aliasing_one_buffer_are_stopped_at_the_copy_budget() {
    let (_dir, mut server) = serve_hostile(&[]);
    // 64 texts of 4 MiB that share one buffer: 256 MiB if copied.
    let error = server.error("prompts/get", json!({ "name": "alias-bomb" }));
    assert_eq!(error["code"], -32603);
    assert_eq!(
        error["message"],
        format!("plugin 'hostile' returned more than the {REPLY_COPY_BUDGET} bytes the host copies out of one call")
    );
    assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "invalid-reply", "limit": { "bytes": REPLY_COPY_BUDGET } }));
    assert_still_serving(&mut server);
}

#[test]
fn an_error_message_too_large_to_copy_is_refused_at_the_copy() {
    let (_dir, mut server) = serve_hostile(&[]);
    let error = server.error("prompts/get", json!({ "name": "big-error", "arguments": { "bytes": "52428800" } }));
    assert_eq!(error["code"], -32603);
    assert_eq!(
        error["message"],
        format!("plugin 'hostile' returned more than the {REPLY_COPY_BUDGET} bytes the host copies out of one call")
    );
    assert_still_serving(&mut server);
}

#[test]
fn a_long_error_message_is_cut_for_the_client_and_escaped_once_in_the_log() {
    let (_dir, mut server) = serve_hostile(&[]);
    let error = server.error("prompts/get", json!({ "name": "big-error", "arguments": { "bytes": "100000" } }));
    assert_eq!(error["code"], -32603);
    let message = error["message"].as_str().unwrap();
    // The pack's message is escaped (CR, NUL and ESC; LF kept), then cut at
    // 4 KiB, escapes included: 3,654 of its 100,000 bytes fit, and the marker
    // says how many were cut.
    let marker = "... [cut by prompt-host: 96346 more bytes]";
    assert!(message.ends_with(marker), "{message:.200}");
    let kept = &message["plugin 'hostile' failed on prompt 'big-error': ".len()..message.len() - marker.len()];
    assert!(kept.len() <= 4096 && kept.len() > 4096 - 6, "{} bytes kept", kept.len());
    let one =
        "plugin failed\n2026-11-22T10:00:00.000000Z  INFO prompt_host::watch: plugin loaded plugin=trusted_pack\\u{d}\\u{0}\\u{1b}[2K";
    assert!(kept.starts_with(&format!("{one}{one}")), "{message:.300}");
    assert!(!message.contains(['\r', '\0', '\x1b']), "raw control characters reached the client");
    assert_still_serving(&mut server);

    let stderr = server.wait_for_stderr("plugin call failed");
    // Logged once, as an escaped field: no forged line, no raw CR, NUL or ESC.
    assert_eq!(stderr.matches("plugin call failed").count(), 1, "{stderr}");
    assert!(!stderr.contains("response error"), "{stderr}");
    assert!(!stderr.contains(['\r', '\0', '\x1b']), "raw control characters reached the log");
    let forged: Vec<&str> = stderr.lines().filter(|line| line.contains("plugin=trusted_pack")).collect();
    assert_eq!(forged.len(), 1, "{stderr}");
    assert!(forged[0].contains("WARN"), "{}", forged[0]);
    assert!(
        forged[0].contains(r#"plugin failed\n2026-11-22T10:00:00.000000Z  INFO prompt_host::watch: plugin loaded plugin=trusted_pack\\u{d}\\u{0}\\u{1b}[2K"#),
        "{}",
        forged[0]
    );
}

#[test]
fn a_completion_is_held_to_the_reply_budget_as_a_whole() {
    let (_dir, mut server) = serve_hostile(&[]);
    // 40 values of 1 MiB: each under the 4 MiB string limit, 40 MiB in all.
    let response = complete(&mut server, "big-completion", "40x1048576");
    assert_eq!(response["error"]["code"], -32603, "{response:.300}");
    assert_eq!(
        response["error"]["message"],
        format!("plugin 'hostile' returned more than the {COMPLETION_COPY_BUDGET} bytes the host copies out of one call")
    );
    let fine = complete(&mut server, "big-completion", "3x10");
    assert_eq!(fine["result"]["completion"]["values"], json!(["vvvvvvvvvv", "vvvvvvvvvv", "vvvvvvvvvv"]));
    assert_still_serving(&mut server);
}

#[test]
fn a_completion_over_the_reply_limit_is_refused_by_validation() {
    let plugins = plugin_dir(&["hostile"]);
    let config = plugins.path().join("prompt-host.toml");
    std::fs::write(&config, "[limits]\nmax_reply_kib = 64\n").unwrap();
    let mut server = Server::start(&["--plugins", plugins.path().to_str().unwrap(), "--config", config.to_str().unwrap()]);
    // Within the copy budget (64 KiB and 64 KiB of room), over the 64 KiB
    // limit: the result is 90,076 bytes on the wire, the values' 90,000, their
    // quotes and commas (8), and `{"resultType":"complete","completion":
    // {"values":[],"hasMore":false}}` (68).
    let response = complete(&mut server, "big-completion", "3x30000");
    assert_eq!(response["error"]["code"], -32603);
    assert_eq!(
        response["error"]["message"],
        "plugin 'hostile' returned an invalid reply for prompt 'big-completion': it is 90076 bytes on the wire, more than the limit of 65536"
    );
}

fn inspect_json(plugin: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .arg("inspect")
        .arg(built_plugin(plugin))
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("inspect printed no JSON ({error}): {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), report)
}

#[test]
fn names_that_display_as_other_names_are_refused_at_load() {
    let (status, report) = inspect_json("hostile_names", &[]);
    assert_eq!(status, Some(1));
    let hint = "names may hold no invisible formatting characters (bidirectional controls, zero-width characters, \
                byte order marks), which make a name display as another: remove them";
    assert_eq!(
        report["problems"],
        json!([
            { "problem": "prompt \"h_rtl\\u{202e}txt.exe\": name contains the invisible formatting character '\\u{202e}', which makes a name display as another", "hint": hint },
            { "problem": "prompt \"code_review\\u{200b}\": name contains the invisible formatting character '\\u{200b}', which makes a name display as another", "hint": hint },
            { "problem": "prompt \"code_review\\u{200b}\", argument \"code\\u{feff}\": name contains the invisible formatting character '\\u{feff}', which makes a name display as another", "hint": hint },
        ])
    );

    // Served beside code_review, only code_review's prompt is listed.
    let dir = plugin_dir(&["hostile_names", "code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
}

#[test]
fn a_packs_definitions_are_held_to_its_catalog_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[limits]\nmax_catalog_kib = 2\n").unwrap();
    // The hostile pack's names and descriptions, one of 2,000 bytes, come to more than 2 KiB.
    let (status, report) = inspect_json("hostile", &["--config", config.to_str().unwrap()]);
    assert_eq!(status, Some(1));
    assert_eq!(
        report["problems"],
        json!([{
            "problem": "the definitions are 2931 bytes in all, more than the limit of 2048",
            "hint": "shorten the titles, descriptions and icons (use https: icons rather than data: URIs), or ask the \
                     operator to raise limits.max_catalog_kib for this plugin",
        }])
    );
    let (status, report) = inspect_json("hostile", &[]);
    assert_eq!((status, &report["problems"]), (Some(0), &json!([])));
}

#[test]
fn json_logs_carry_pack_text_as_escaped_fields() {
    let (_dir, mut server) = serve_hostile(&["--log-format", "json"]);
    let error = server.error("prompts/get", json!({ "name": "big-error", "arguments": { "bytes": "200" } }));
    assert_eq!(error["code"], -32603);
    let stderr = server.wait_for_stderr("plugin call failed");
    let mut failures = Vec::new();
    for line in stderr.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        if event["fields"]["message"] == "plugin call failed" {
            failures.push(event);
        }
    }
    assert_eq!(failures.len(), 1, "{stderr}");
    let fields = &failures[0]["fields"];
    assert_eq!(failures[0]["level"], "WARN");
    assert_eq!((fields["plugin"].as_str(), fields["method"].as_str()), (Some("hostile"), Some("prompts/get")));
    // Quoted once, as a JSON string: not the Debug text's quotes besides.
    assert_eq!(fields["prompt"], "big-error");
    let logged = fields["error"].as_str().unwrap();
    // The pack's newline stays escaped (two characters), as in the text log.
    assert!(logged.starts_with(r#"plugin 'hostile' failed on prompt 'big-error': plugin failed\n2026-11-22T10"#), "{logged}");
}
