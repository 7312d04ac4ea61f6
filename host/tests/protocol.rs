//! The MCP prompts protocol over stdio, against the real binary serving the
//! bundled example packs: handshake, pagination, every example prompt, and
//! every error a client can cause.

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use std::path::Path;

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text, plugin_dir};

/// Every bundled prompt, in catalog order: plugins by name, then each
/// plugin's own order.
const BUNDLED_PROMPTS: &[&str] =
    &["code_review", "git-commit", "explain-code", "debug-error", "describe-image", "transcribe-audio", "analyze-project"];

#[test]
fn every_protocol_revision_in_use_is_negotiated() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut server = Server::spawn(&[]);
        let result = server.initialize(version);
        assert_eq!(result["protocolVersion"], version);
        // project_insights (0.4) carries a skill and a static resource.
        assert_eq!(
            result["capabilities"],
            json!({
                "prompts": { "listChanged": true },
                "completions": {},
                "logging": {},
                "resources": { "listChanged": true },
                "extensions": { "io.modelcontextprotocol/skills": { "directoryRead": true } }
            })
        );
        assert_eq!(result["serverInfo"]["name"], "prompt-host");
        assert_eq!(server.list_all_names(), BUNDLED_PROMPTS, "with protocol {version}");
    }
}

#[test]
fn an_unknown_protocol_revision_gets_the_latest_with_a_handshake() {
    let mut server = Server::spawn(&[]);
    assert_eq!(server.initialize("1999-01-01")["protocolVersion"], "2025-11-25");
}

#[test]
fn pages_of_two_walk_every_prompt_in_order() {
    let mut server = Server::start(&["--page-size", "2"]);
    let mut pages = Vec::new();
    let mut cursor = None::<String>;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |cursor| json!({ "cursor": cursor }));
        let page = server.result("prompts/list", params);
        let names: Vec<String> = page["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
        pages.push(names);
        match page.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_string()),
            None => break,
        }
    }
    assert_eq!(
        pages,
        [
            vec!["code_review", "git-commit"],
            vec!["explain-code", "debug-error"],
            vec!["describe-image", "transcribe-audio"],
            vec!["analyze-project"],
        ]
    );
}

#[test]
fn the_default_page_holds_every_bundled_prompt_with_its_definition() {
    let mut server = Server::start(&[]);
    let page = server.result("prompts/list", json!({}));
    assert_eq!(page.get("nextCursor"), None);
    let prompts = page["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), BUNDLED_PROMPTS.len());
    assert_eq!(
        prompts[0],
        json!({
            "name": "code_review",
            "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{ "name": "code", "description": "The code to review", "required": true }],
            "_meta": { "prompt-host/plugin": "code_review" }
        })
    );
    assert_eq!(
        prompts[2],
        json!({
            "name": "explain-code",
            "description": "Explain how code works",
            "arguments": [
                { "name": "code", "description": "Code to explain", "required": true },
                { "name": "language", "description": "Programming language", "required": false }
            ],
            "_meta": { "prompt-host/plugin": "dev_assistant" }
        })
    );
}

#[test]
fn code_review_replies_as_in_the_specification() {
    let mut server = Server::start(&[]);
    let result = server.get_prompt("code_review", json!({ "code": "def hello():\n    print('world')" }));
    assert_eq!(
        result,
        json!({
            "description": "Code review prompt",
            "messages": [{
                "role": "user",
                "content": { "type": "text", "text": "Please review this Python code:\ndef hello():\n    print('world')" }
            }]
        })
    );
}

#[test]
fn the_developer_prompts_reply_with_their_exact_text() {
    let mut server = Server::start(&[]);
    let commit = server.get_prompt("git-commit", json!({ "changes": "fix: typo in README" }));
    assert_eq!(only_text(&commit), "Generate a concise but descriptive commit message for these changes:\n\nfix: typo in README");
    let explained = server.get_prompt("explain-code", json!({ "code": "fn main() {}", "language": "rust" }));
    assert_eq!(only_text(&explained), "Explain how this rust code works:\n\nfn main() {}");
    let unknown_language = server.get_prompt("explain-code", json!({ "code": "x = 1" }));
    assert_eq!(only_text(&unknown_language), "Explain how this unknown code works:\n\nx = 1");

    let debug = server.get_prompt("debug-error", json!({ "error": "ECONNREFUSED" }));
    assert_eq!(
        debug["messages"],
        json!([
            { "role": "user", "content": { "type": "text", "text": "Here's an error I'm seeing: ECONNREFUSED" } },
            { "role": "assistant", "content": { "type": "text", "text": "I'll help analyze this error. What have you tried so far?" } },
            { "role": "user", "content": { "type": "text", "text": "I've tried restarting the service, but the error persists." } }
        ])
    );
}

#[test]
fn analyze_project_embeds_its_checklist_and_links_the_logs_and_file() {
    let mut server = Server::start(&[]);
    let result = server.get_prompt("analyze-project", json!({ "timeframe": "1h", "fileUri": "file:///src/app.py" }));
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(
        messages[0],
        json!({ "role": "user", "content": { "type": "text", "text": "Analyze these system logs and the code file for any issues:" } })
    );
    assert_eq!(
        messages[1]["content"],
        json!({ "type": "resource_link", "uri": "logs://recent?timeframe=1h", "name": "recent-logs", "description": "System logs of the chosen timeframe" })
    );
    assert_eq!(
        messages[2]["content"],
        json!({ "type": "resource_link", "uri": "file:///src/app.py", "name": "code-file", "description": "The code file to analyze" })
    );
    let resource = &messages[3]["content"];
    assert_eq!(resource["type"], "resource");
    assert_eq!(resource["resource"]["uri"], "prompt-pack://project-insights/checklist.md");
    assert_eq!(resource["resource"]["mimeType"], "text/markdown");
    assert!(resource["resource"]["text"].as_str().unwrap().starts_with("# Project analysis checklist\n1. Errors"));
}

/// The bytes of an asset the media pack ships, base64-encoded as on the wire.
fn media_asset(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/media-prompts/assets").join(name);
    BASE64.encode(std::fs::read(path).unwrap())
}

#[test]
fn media_prompts_carry_base64_image_and_audio() {
    let mut server = Server::start(&[]);
    let image = server.get_prompt("describe-image", json!({ "audience": "caption" }));
    assert_eq!(
        image["messages"],
        json!([
            { "role": "user", "content": { "type": "image", "data": media_asset("chart.png"), "mimeType": "image/png" } },
            { "role": "user", "content": { "type": "text", "text": "Write a caption description of the image above." } }
        ])
    );
    let audio = server.get_prompt("transcribe-audio", json!({}));
    assert_eq!(
        audio["messages"][0],
        json!({ "role": "user", "content": { "type": "audio", "data": media_asset("tone.wav"), "mimeType": "audio/wav" } })
    );
}

#[test]
fn client_mistakes_get_invalid_params_naming_the_problem() {
    let mut server = Server::start(&[]);
    let cases: &[(&str, Value, &str)] = &[
        ("prompts/get", json!({ "name": "nope" }), "unknown prompt 'nope'"),
        ("prompts/get", json!({ "name": "analyze-project" }), "prompt 'analyze-project' is missing required arguments: timeframe, fileUri"),
        (
            "prompts/get",
            json!({ "name": "analyze-project", "arguments": { "fileUri": "file:///a.py" } }),
            "prompt 'analyze-project' is missing required arguments: timeframe",
        ),
        (
            "prompts/get",
            json!({ "name": "code_review", "arguments": { "code": 42 } }),
            "prompt 'code_review': argument 'code' must be a string, not a number",
        ),
        (
            "prompts/get",
            json!({ "name": "analyze-project", "arguments": { "timeframe": "2y", "fileUri": "file:///a.py" } }),
            "prompt 'analyze-project': argument 'timeframe' must be one of: 15m, 1h, 6h, 24h, 7d, not \"2y\"",
        ),
        (
            "prompts/get",
            json!({ "name": "analyze-project", "arguments": { "timeframe": "1h", "fileUri": "x" } }),
            "prompt 'analyze-project': argument 'fileUri' must be an absolute URI of scheme file, not \"x\"",
        ),
        ("prompts/get", json!({}), "invalid params for prompts/get: missing field `name`"),
        (
            "prompts/list",
            json!({ "cursor": "not-a-cursor" }),
            "invalid cursor: it is not one this server issued; list prompts again without a cursor",
        ),
        (
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "nope" }, "argument": { "name": "a", "value": "" } }),
            "unknown prompt 'nope'",
        ),
        (
            "completion/complete",
            json!({ "ref": { "type": "ref/resource", "uri": "file:///x" }, "argument": { "name": "a", "value": "" } }),
            "completion/complete supports only ref/prompt references: this server serves no resources",
        ),
    ];
    for (method, params, message) in cases {
        let error = server.error(method, params.clone());
        assert_eq!(error["code"], -32602, "{method} {params}: {error}");
        assert_eq!(error["message"], *message, "{method} {params}");
    }
    assert_eq!(
        server.error("prompts/get", json!({ "name": "analyze-project" }))["data"],
        json!({ "prompt": "analyze-project", "missing": ["timeframe", "fileUri"] })
    );
    let unknown_method = server.error("resources/subscribe-to-everything", json!({}));
    assert_eq!(unknown_method["code"], -32601);
    // After all of that, the server still serves.
    assert_eq!(server.list_all_names(), BUNDLED_PROMPTS);
}

#[test]
fn a_line_that_is_not_json_does_not_stop_the_server() {
    let mut server = Server::start(&[]);
    server.send_raw("this is not JSON");
    server.send_raw("{\"jsonrpc\": \"2.0\", \"id\": ");
    let result = server.get_prompt("code_review", json!({ "code": "x" }));
    assert_eq!(only_text(&result), "Please review this Python code:\nx");
}

#[test]
fn a_request_that_is_no_json_rpc_message_is_answered_with_its_id() {
    let mut server = Server::start(&[]);
    server.send_raw(r#"{"jsonrpc":"2.0","id":41,"method":{}}"#);
    assert_eq!(
        server.response(41),
        json!({ "jsonrpc": "2.0", "id": 41, "error": { "code": -32600, "message": "Invalid request: unrecognized JSON-RPC message" } })
    );
    // A known method with parameters of the wrong shape names the problem.
    server.send_raw(r#"{"jsonrpc":"2.0","id":42,"method":"prompts/get","params":{}}"#);
    assert_eq!(server.response(42)["error"]["message"], "invalid params for prompts/get: missing field `name`");
}

/// A line of exactly `bytes` bytes: `start`, then `x`s, then `end`.
fn padded(start: &str, end: &str, bytes: usize) -> String {
    format!("{start}{}{end}", "x".repeat(bytes - start.len() - end.len()))
}

/// The error that answers a line of `bytes` bytes over the 64 KiB limit.
fn over_the_limit(code: i32, bytes: usize) -> Value {
    json!({
        "code": code,
        "message": format!("the message is {bytes} bytes, more than the limit of 65536 bytes (set by --max-message-kib)"),
        "data": { "bytes": bytes, "limit": { "bytes": 65536 } }
    })
}

#[test]
fn a_message_over_the_size_limit_is_answered_and_the_server_keeps_serving() {
    let mut server = Server::start(&["--max-message-kib", "64"]);
    let get = r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"code_review","arguments":{"code":""#;
    server.send_raw(&padded(get, r#""}}}"#, 100 << 10));
    assert_eq!(server.response(7), json!({ "jsonrpc": "2.0", "id": 7, "error": over_the_limit(-32600, 100 << 10) }));

    // The official TypeScript SDK writes the id last.
    let get_id_last = r#"{"method":"prompts/get","params":{"name":"code_review","arguments":{"code":""#;
    server.send_raw(&padded(get_id_last, r#""}},"jsonrpc":"2.0","id":8}"#, 100 << 10));
    assert_eq!(server.response(8), json!({ "jsonrpc": "2.0", "id": 8, "error": over_the_limit(-32600, 100 << 10) }));

    // Nothing of a line that is not JSON can be read: no id.
    server.send_raw(&"x".repeat(100 << 10));
    assert_eq!(server.drain_notifications(), [json!({ "jsonrpc": "2.0", "error": over_the_limit(-32700, 100 << 10) })]);

    // A message just under the limit is served whole, and so is the next one.
    let code = "y".repeat(60 << 10);
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": code }))), format!("Please review this Python code:\n{code}"));
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    let stderr = server.wait_for_stderr_count("refused a message over the size limit", 3);
    assert_eq!(stderr.matches("refused a message over the size limit").count(), 3, "{stderr}");
}

#[test]
fn the_message_size_limit_is_checked() {
    for (args, problem) in [
        (&["--max-message-kib", "0"][..], "invalid value '0' for '--max-message-kib <KIB>': 0 is not in 1..=1048576"),
        (&["--max-message-kib", "1048577"][..], "invalid value '1048577' for '--max-message-kib <KIB>': 1048577 is not in 1..=1048576"),
        (
            &["--max-message-kib", "64", "--http", "127.0.0.1:0"][..],
            "the argument '--max-message-kib <KIB>' cannot be used with '--http <ADDR>'",
        ),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host")).arg("serve").args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(problem), "{args:?}: {stderr}");
    }
}

#[test]
fn completions_come_from_the_owning_plugin() {
    let mut server = Server::start(&[]);
    let complete = |server: &mut Server, prompt: &str, argument: &str, value: &str| {
        server.result(
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": prompt }, "argument": { "name": argument, "value": value } }),
        )["completion"]
            .clone()
    };
    assert_eq!(
        complete(&mut server, "explain-code", "language", "ja"),
        json!({ "values": ["java", "javascript"], "total": 2, "hasMore": false })
    );
    assert_eq!(
        complete(&mut server, "analyze-project", "timeframe", "1"),
        json!({ "values": ["15m", "1h"], "total": 2, "hasMore": false })
    );
    // A prompt whose plugin offers no completions gets an empty list.
    assert_eq!(complete(&mut server, "code_review", "code", "def"), json!({ "values": [], "hasMore": false }));
}

#[test]
fn cursors_are_tied_to_the_plugin_set() {
    let same = plugin_dir(&["code_review", "dev_assistant"]);
    let dir = same.path().to_str().unwrap();
    let mut first = Server::start(&["--plugins", dir, "--page-size", "1"]);
    let mut replica = Server::start(&["--plugins", dir, "--page-size", "1"]);
    let cursor = first.result("prompts/list", json!({}))["nextCursor"].as_str().unwrap().to_string();

    // A replica with the same plugins accepts the cursor.
    let page = replica.result("prompts/list", json!({ "cursor": cursor }));
    assert_eq!(page["prompts"][0]["name"], "git-commit");

    // A host with other plugins refuses it as stale.
    let other = plugin_dir(&["code_review", "dev_assistant", "media_prompts"]);
    let mut changed = Server::start(&["--plugins", other.path().to_str().unwrap(), "--page-size", "1"]);
    let error = changed.error("prompts/list", json!({ "cursor": cursor }));
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], "stale cursor: the prompt catalog changed after it was issued; list prompts again without a cursor");
}

#[test]
fn a_prefix_renames_a_plugins_prompts() {
    let dir = plugin_dir(&["code_review", "dev_assistant"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--prefix", "code_review=team-"]);
    assert_eq!(server.list_all_names(), ["team-code_review", "git-commit", "explain-code", "debug-error"]);
    let result = server.get_prompt("team-code_review", json!({ "code": "x" }));
    assert_eq!(only_text(&result), "Please review this Python code:\nx");
    assert_eq!(server.error("prompts/get", json!({ "name": "code_review" }))["message"], "unknown prompt 'code_review'");
}

#[test]
fn a_name_already_served_is_never_taken_over() {
    let dir = plugin_dir(&["code_review"]);
    std::fs::copy(built_plugin("code_review"), dir.path().join("zz_copy.wasm")).unwrap();
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
    server.wait_for_stderr("prompt 'code_review' of plugin 'zz_copy' is skipped: plugin 'code_review' already serves that name");
}

#[test]
fn files_that_are_not_plugins_are_reported_and_the_rest_served() {
    let dir = plugin_dir(&["code_review", "wrong_world", "hostile_bad_definitions"]);
    std::fs::write(dir.path().join("notes.wasm"), "these are my notes").unwrap();
    std::fs::write(dir.path().join("README.txt"), "not a .wasm file, so not looked at").unwrap();
    let truncated = std::fs::read(built_plugin("dev_assistant")).unwrap();
    std::fs::write(dir.path().join("truncated.wasm"), &truncated[..truncated.len() / 2]).unwrap();

    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.list_all_names(), ["code_review"]);
    let stderr = server.wait_for_stderr("plugin directory rescanned");
    let path = |name: &str| dir.path().join(name).display().to_string();
    for expected in [
        format!("{}: not a WebAssembly file: it does not start with the \\0asm magic bytes", path("notes.wasm")),
        format!(
            "{}: does not export prompt-host:prompts/prompt-provider (version 0.1.x, 0.2.x, 0.3.x or 0.4.x; it exports: fixture:greeter/greet@0.1.0)",
            path("wrong_world.wasm")
        ),
        format!(
            "{}: its prompt definitions are invalid: prompt \"twice\": declared more than once; \
             prompt \"two words\": name contains ' ', and names may hold no whitespace or control characters; \
             prompt \"two words\", argument \"x\": declared more than once; \
             prompt \"two words\", icon 0: src \"icon.png\" is not a URI (relative URL without a base); \
             prompt \"two words\", icon 0: mime type \"text/plain\" does not start with image/ \
             (hint: `prompt-host inspect` lists each problem with its own hint)",
            path("hostile_bad_definitions.wasm")
        ),
        format!("{}: not a valid WebAssembly component: ", path("truncated.wasm")),
    ] {
        // The reason is logged as a Debug field: escaped, between quotes.
        let logged = format!("{expected:?}");
        let logged = &logged[1..logged.len() - 1];
        assert!(stderr.contains(logged), "stderr lacks {logged}:\n{stderr}");
    }
    assert!(!stderr.contains("README.txt"));
}

#[test]
fn an_empty_plugin_directory_serves_an_empty_list() {
    let dir = plugin_dir(&[]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    assert_eq!(server.result("prompts/list", json!({})), json!({ "prompts": [] }));
    server.wait_for_stderr("serving no prompts: the plugin directory holds no plugin files");
}

#[test]
fn the_conformance_fixture_serves_what_the_official_suite_expects() {
    let dir = plugin_dir(&["conformance"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap()]);
    let page = server.result("prompts/list", json!({}));
    for prompt in page["prompts"].as_array().unwrap() {
        assert!(!prompt["description"].as_str().unwrap().is_empty(), "{prompt}");
    }
    assert_eq!(
        server.list_all_names(),
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt"
        ]
    );
    let simple = server.get_prompt("test_simple_prompt", json!({}));
    assert_eq!(
        simple["messages"],
        json!([{ "role": "user", "content": { "type": "text", "text": "This is a simple prompt for testing." } }])
    );
    let with_arguments = server.get_prompt("test_prompt_with_arguments", json!({ "arg1": "first", "arg2": "second" }));
    assert_eq!(only_text(&with_arguments), "Prompt with arguments: arg1='first', arg2='second'");
    let embedded = server.get_prompt("test_prompt_with_embedded_resource", json!({ "resourceUri": "test://example-resource" }));
    assert_eq!(
        embedded["messages"],
        json!([
            { "role": "user", "content": { "type": "resource", "resource": {
                "uri": "test://example-resource", "mimeType": "text/plain", "text": "Embedded resource content for testing."
            } } },
            { "role": "user", "content": { "type": "text", "text": "Please process the embedded resource above." } }
        ])
    );
    let image = server.get_prompt("test_prompt_with_image", json!({}));
    let pixel = BASE64.encode(std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/conformance/src/pixel.png")).unwrap());
    assert_eq!(
        image["messages"],
        json!([
            { "role": "user", "content": { "type": "image", "data": pixel, "mimeType": "image/png" } },
            { "role": "user", "content": { "type": "text", "text": "Please analyze the image above." } }
        ])
    );
    let completion = server.result(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" }, "argument": { "name": "arg1", "value": "pa" } }),
    );
    assert_eq!(completion["completion"], json!({ "values": ["paris", "park", "party"], "total": 3, "hasMore": false }));
}
