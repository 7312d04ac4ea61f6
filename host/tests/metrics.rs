//! Metrics and health over the real binary: `serve --metrics` counts each
//! call into a plugin by method and outcome, with labels bounded to plugin
//! names; `promtool check metrics` (Debian's prometheus package) accepts the
//! text; `/healthz` and `/readyz` answer on the metrics listener and on the
//! MCP listener.

mod support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Server, http_exchange, only_text, plugin_dir, serve_plugins, spawn_http};

/// The metrics listener's address, from the line the server logs.
fn metrics_addr(server: &Server) -> SocketAddr {
    support::metrics_address_in(&server.wait_for_stderr(support::METRICS_SERVED))
}

/// A GET of `path` with `Host: host`: the status and the body.
fn get(addr: SocketAddr, path: &str, host: &str) -> (u16, String) {
    let (status, response) = http_exchange(addr, &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"));
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (status, body)
}

fn scrape(addr: SocketAddr) -> String {
    let (status, body) = get(addr, "/metrics", "localhost");
    assert_eq!(status, 200, "{body}");
    body
}

/// The value of the series written exactly `series` (name and labels, the
/// labels in the order the text format sorts them), or None if absent.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn assert_value(text: &str, series: &str, expected: f64) {
    assert_eq!(value(text, series), Some(expected), "{series} in:\n{text}");
}

/// Every value of label `label` in the scraped text.
fn label_values(text: &str, label: &str) -> BTreeSet<String> {
    let needle = format!("{label}=\"");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let start = line.find(&needle)? + needle.len();
            Some(line[start..start + line[start..].find('"')?].to_string())
        })
        .collect()
}

/// Runs `promtool check metrics` on `text`, and asserts that it passes.
fn assert_promtool_accepts(text: &str) {
    let child =
        Command::new("promtool").args(["check", "metrics"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child = child.expect("promtool is missing: run tests/setup (it installs Debian's prometheus package)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn get_prompt_outcome(plugin: &str, outcome: &str) -> String {
    format!("prompt_host_plugin_calls_total{{method=\"prompts/get\",outcome=\"{outcome}\",plugin=\"{plugin}\"}}")
}

#[test]
fn each_call_is_counted_by_plugin_method_and_outcome_and_promtool_accepts_the_text() {
    let (_dir, mut server) =
        serve_plugins(&["hostile", "code_review"], &["--fuel", "2000000", "--deadline-ms", "60000", "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let prompts = server.list_all_names().len();
    // Two calls that succeed, and one of each way a call can fail.
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "y" }))), "Please review this Python code:\ny");
    assert_eq!(only_text(&server.get_prompt("echo", json!({}))), "echo");
    let failing = [
        ("spin", json!({}), "fuel"),
        ("panic", json!({}), "panic"),
        ("recurse", json!({}), "stack"),
        ("bad-mime", json!({}), "invalid-reply"),
        ("read-file", json!({}), "internal"),
        ("big-error", json!({ "bytes": "many" }), "invalid-arguments"),
    ];
    for (prompt, arguments, failure) in &failing {
        let error = server.error("prompts/get", json!({ "name": prompt, "arguments": arguments }));
        assert_eq!(error["data"]["failure"], *failure, "{prompt}: {error}");
    }
    let error = server
        .error("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "spin" }, "argument": { "name": "a", "value": "" } }));
    assert_eq!(error["data"]["failure"], "fuel");
    // A prompt no plugin serves is no call into a plugin: not counted.
    server.error("prompts/get", json!({ "name": "no-such-prompt" }));

    let text = scrape(addr);
    assert_value(&text, &get_prompt_outcome("code_review", "ok"), 2.0);
    assert_value(&text, &get_prompt_outcome("hostile", "ok"), 1.0);
    for (_, _, failure) in &failing {
        assert_value(&text, &get_prompt_outcome("hostile", failure), 1.0);
    }
    assert_value(&text, "prompt_host_plugin_calls_total{method=\"completion/complete\",outcome=\"fuel\",plugin=\"hostile\"}", 1.0);
    for plugin in ["hostile", "code_review"] {
        assert_value(&text, &format!("prompt_host_plugin_calls_total{{method=\"list\",outcome=\"ok\",plugin=\"{plugin}\"}}"), 1.0);
        assert_value(&text, &format!("prompt_host_plugin_loads_total{{plugin=\"{plugin}\"}}"), 1.0);
        assert!(value(&text, &format!("prompt_host_plugin_last_load_timestamp_seconds{{plugin=\"{plugin}\"}}")).unwrap() > 1.7e9);
    }
    assert_value(&text, "prompt_host_plugin_call_duration_seconds_count{method=\"prompts/get\",plugin=\"code_review\"}", 2.0);
    assert_value(&text, "prompt_host_plugin_call_duration_seconds_count{method=\"prompts/get\",plugin=\"hostile\"}", 7.0);
    // Fuel and peak memory of every call: the listing, and each call above.
    assert_value(&text, "prompt_host_plugin_call_fuel_count{plugin=\"code_review\"}", 3.0);
    assert_value(&text, "prompt_host_plugin_call_fuel_count{plugin=\"hostile\"}", 9.0);
    assert_value(&text, "prompt_host_plugin_call_peak_memory_bytes_count{plugin=\"hostile\"}", 9.0);
    // The call that ran out burned its whole budget, and more than 10^6 lands in no bucket below 10^7.
    assert_value(&text, "prompt_host_plugin_call_fuel_bucket{plugin=\"hostile\",le=\"10000000\"}", 9.0);
    assert!(value(&text, "prompt_host_plugin_call_fuel_sum{plugin=\"hostile\"}").unwrap() >= 4_000_000.0, "{text}");
    assert_value(&text, "prompt_host_catalog_prompts", prompts as f64);
    assert_value(&text, "prompt_host_requests_in_flight", 0.0);
    assert_value(&text, "prompt_host_sessions_open", 0.0);
    assert_value(&text, "prompt_host_reloads_total", 0.0);

    // Labels are bounded: plugin names, the methods and the outcomes, and
    // the names of prompts served that were asked for; never a name the
    // catalog does not serve, and no prompt only completed.
    assert_eq!(label_values(&text, "plugin"), BTreeSet::from(["code_review".to_string(), "hostile".to_string()]));
    assert_eq!(label_values(&text, "method"), BTreeSet::from(["completion/complete", "list", "prompts/get"].map(String::from)));
    let outcomes = ["fuel", "internal", "invalid-arguments", "invalid-reply", "ok", "panic", "stack"];
    assert_eq!(label_values(&text, "outcome"), BTreeSet::from(outcomes.map(String::from)));
    let asked = ["code_review", "echo", "spin", "panic", "recurse", "bad-mime", "read-file", "big-error"];
    assert_eq!(label_values(&text, "prompt"), BTreeSet::from(asked.map(String::from)));
    assert_value(&text, "prompt_host_prompt_calls_total{outcome=\"ok\",plugin=\"code_review\",prompt=\"code_review\"}", 2.0);
    assert_value(&text, "prompt_host_prompt_calls_total{outcome=\"fuel\",plugin=\"hostile\",prompt=\"spin\"}", 1.0);
    assert_value(&text, "prompt_host_prompt_calls_total{outcome=\"invalid-arguments\",plugin=\"hostile\",prompt=\"big-error\"}", 1.0);
    assert_value(&text, "prompt_host_plugins_loaded", 2.0);

    // The catalog version is the one /readyz reports.
    let (status, ready) = get(addr, "/readyz", "localhost");
    assert_eq!(status, 200, "{ready}");
    let ready: Value = serde_json::from_str(&ready).unwrap();
    let version = ready["catalogVersion"].as_str().unwrap();
    assert_value(&text, &format!("prompt_host_catalog_info{{version=\"{version}\"}}"), 1.0);
    assert_eq!(
        ready,
        json!({ "status": "ready", "catalogVersion": version, "prompts": prompts, "plugins": { "code_review": "loaded", "hostile": "loaded" } })
    );
    assert_eq!(get(addr, "/healthz", "localhost"), (200, "ok\n".to_string()));

    assert_promtool_accepts(&text);
}

#[test]
fn a_deadline_and_a_failed_load_are_counted_and_readyz_names_the_failed_plugin() {
    let dir = plugin_dir(&["hostile", "hostile_bad_definitions"]);
    let mut server = Server::start(&[
        "--plugins",
        dir.path().to_str().unwrap(),
        "--deadline-ms",
        "300",
        "--memory-mib",
        "16",
        "--metrics",
        "localhost:0",
    ]);
    let addr = metrics_addr(&server);
    for (prompt, failure) in [("sleep", "deadline"), ("grow", "memory")] {
        let error = server.error("prompts/get", json!({ "name": prompt }));
        assert_eq!(error["data"]["failure"], failure, "{prompt}: {error}");
    }

    let text = scrape(addr);
    assert_value(&text, &get_prompt_outcome("hostile", "deadline"), 1.0);
    assert_value(&text, &get_prompt_outcome("hostile", "memory"), 1.0);
    // The call that hit the limit reached it: its peak is past 4 MiB, within 16.
    assert_value(&text, "prompt_host_plugin_call_peak_memory_bytes_bucket{plugin=\"hostile\",le=\"4194304\"}", 2.0);
    assert_value(&text, "prompt_host_plugin_call_peak_memory_bytes_bucket{plugin=\"hostile\",le=\"16777216\"}", 3.0);
    assert_value(&text, "prompt_host_plugin_load_failures_total{plugin=\"hostile_bad_definitions\"}", 1.0);
    assert_eq!(value(&text, "prompt_host_plugin_loads_total{plugin=\"hostile_bad_definitions\"}"), None);
    let (status, ready) = get(addr, "/readyz", "localhost");
    assert_eq!(status, 200);
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["plugins"], json!({ "hostile": "loaded", "hostile_bad_definitions": "failed" }));
    assert_promtool_accepts(&text);
}

#[test]
fn readyz_is_503_until_the_initial_load_has_finished() {
    // A pack that lists its prompts until its deadline, a minute away: the
    // initial load is still under way when /readyz is asked.
    let dir = plugin_dir(&["hostile_list_loop"]);
    let mut server = Server::spawn(&[
        "--plugins",
        dir.path().to_str().unwrap(),
        "--deadline-ms",
        "60000",
        "--fuel",
        "100000000000000",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let addr = metrics_addr(&server);
    assert_eq!(get(addr, "/readyz", "localhost"), (503, "not ready: plugins are loading\n".to_string()));
    assert_eq!(get(addr, "/healthz", "localhost"), (200, "ok\n".to_string()));
    server.terminate();
}

#[test]
fn readyz_is_503_again_once_the_server_is_stopping_while_calls_finish() {
    let dir = plugin_dir(&["hostile"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--deadline-ms", "3000", "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    assert_eq!(get(addr, "/readyz", "localhost").0, 200);
    // A call that runs until its deadline keeps the server draining.
    let call = server.send_request("prompts/get", json!({ "name": "sleep" }));
    // Answered after the call is read, so the stop finds the call to wait for.
    server.request("ping", json!({}));
    support::send_signal(server.pid(), "TERM");
    server.wait_for_stderr("SIGTERM: stopping");
    assert_eq!(get(addr, "/readyz", "localhost"), (503, "not ready: stopping\n".to_string()));
    assert_eq!(get(addr, "/healthz", "localhost"), (200, "ok\n".to_string()));
    assert_eq!(server.response(call)["error"]["data"]["failure"], "deadline");
}

#[test]
fn a_rescan_and_the_list_changed_notification_it_sends_are_counted() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch", "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let before = scrape(addr);
    assert_value(&before, "prompt_host_reloads_total", 0.0);
    assert_value(&before, "prompt_host_list_changed_notifications_total", 0.0);
    support::install(dir.path(), "hostile", "hostile.wasm");
    server.hang_up();
    server.notification("notifications/prompts/list_changed");
    let after = scrape(addr);
    assert_value(&after, "prompt_host_reloads_total", 1.0);
    assert_value(&after, "prompt_host_list_changed_notifications_total", 1.0);
    assert_value(&after, "prompt_host_plugin_loads_total{plugin=\"hostile\"}", 1.0);
    assert_value(&after, "prompt_host_plugin_loads_total{plugin=\"code_review\"}", 1.0);
}

#[test]
fn prompts_are_counted_by_outcome_and_a_removed_plugins_series_are_dropped() {
    let dir = plugin_dir(&["code_review", "typed_arguments"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--no-watch", "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    // Refused before the plugin runs: counted for the prompt, as the client's mistake.
    server.error("prompts/get", json!({ "name": "code_review", "arguments": {} }));
    // A name no plugin serves makes no series, whatever it is: 10,000 of them.
    server.error("prompts/get", json!({ "name": "made-up\"} 1\nevil" }));
    let ids: Vec<u64> = (0..10_000).map(|n| server.send_request("prompts/get", json!({ "name": format!("unknown-{n}") }))).collect();
    for id in ids {
        assert_eq!(server.response(id)["error"]["code"], -32602);
    }
    let before = scrape(addr);
    let series =
        |outcome: &str| format!("prompt_host_prompt_calls_total{{outcome=\"{outcome}\",plugin=\"code_review\",prompt=\"code_review\"}}");
    assert_value(&before, &series("ok"), 1.0);
    assert_value(&before, &series("invalid-arguments"), 1.0);
    assert_eq!(label_values(&before, "prompt"), BTreeSet::from(["code_review".to_string()]));
    assert_value(&before, "prompt_host_plugins_loaded", 2.0);
    assert!(before.contains("plugin=\"code_review\""), "{before}");

    // Its new version no longer serves `code_review`: that prompt's series go, the plugin's stay.
    support::install(dir.path(), "hostile", "code_review.wasm");
    server.hang_up();
    server.notification("notifications/prompts/list_changed");
    let replaced = scrape(addr);
    assert_eq!(label_values(&replaced, "prompt"), BTreeSet::new(), "{replaced}");
    assert_value(&replaced, "prompt_host_plugin_loads_total{plugin=\"code_review\"}", 2.0);
    assert_value(&replaced, "prompt_host_plugins_loaded", 2.0);

    // The plugin goes: every series labelled with it goes too, and the gauge follows.
    std::fs::remove_file(dir.path().join("code_review.wasm")).unwrap();
    server.hang_up();
    server.notification("notifications/prompts/list_changed");
    let after = scrape(addr);
    assert!(!after.contains("plugin=\"code_review\""), "{after}");
    assert_eq!(label_values(&after, "prompt"), BTreeSet::new());
    assert_value(&after, "prompt_host_plugins_loaded", 1.0);
    assert_value(&after, "prompt_host_plugin_loads_total{plugin=\"typed_arguments\"}", 1.0);
    assert_promtool_accepts(&after);
}

#[test]
fn the_metrics_listener_checks_host_and_stays_on_loopback() {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::start(&["--plugins", dir.path().to_str().unwrap(), "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let (status, body) = get(addr, "/metrics", "attacker.example");
    assert_eq!((status, body.as_str()), (403, "forbidden: the Host header is not a loopback name\n"));
    let (status, body) = get(addr, "/mcp", "127.0.0.1");
    assert_eq!((status, body.as_str()), (404, "not found: /metrics, /healthz and /readyz are served here\n"));
    server.terminate();

    let output =
        Command::new(env!("CARGO_BIN_EXE_prompt-host")).args(["serve", "--metrics", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0, which is not a loopback address: pass --metrics-allow-remote to do so"),
        "{stderr}"
    );
}

#[test]
fn open_http_sessions_are_counted() {
    let dir = plugin_dir(&["code_review"]);
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--plugins", dir.path().to_str().unwrap(), "--metrics", "127.0.0.1:0"]);
    let metrics = support::metrics_address(&stderr);
    assert_value(&scrape(metrics), "prompt_host_sessions_open", 0.0);
    let (status, response) = http_exchange(addr, &support::http_post("localhost", "", support::HTTP_INITIALIZE));
    assert_eq!(status, 200, "{response}");
    let session = response
        .lines()
        // The header's name in any case; its value, a sealed id, as it is.
        .find_map(|line| line.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| line[15..].trim().to_string()))
        .expect("no session id");
    assert_value(&scrape(metrics), "prompt_host_sessions_open", 1.0);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(http_exchange(addr, &delete).0, 200);
    assert_value(&scrape(metrics), "prompt_host_sessions_open", 0.0);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_http_listener_answers_health_without_a_session_or_the_token_and_checks_host() {
    let token = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token.path(), "secret-token\n").unwrap();
    let dir = plugin_dir(&["code_review"]);
    let (mut child, _stderr, addr) =
        spawn_http("127.0.0.1:0", &["--plugins", dir.path().to_str().unwrap(), "--auth-token-file", token.path().to_str().unwrap()]);
    assert_eq!(get(addr, "/healthz", "localhost"), (200, "ok\n".to_string()));
    let (status, ready) = get(addr, "/readyz", &format!("127.0.0.1:{}", addr.port()));
    assert_eq!(status, 200, "{ready}");
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["plugins"], json!({ "code_review": "loaded" }));
    // MCP itself still needs the token.
    assert_eq!(get(addr, "/mcp", "localhost").0, 401);
    let (status, body) = get(addr, "/readyz", "attacker.example");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("--allow-host attacker.example"), "{body}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_prompt_that_asks_for_input_is_counted_as_input_required_then_its_answer_as_ok() {
    let dir = plugin_dir(&["conformance"]);
    let mut server = Server::spawn(&["--plugins", dir.path().to_str().unwrap(), "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "prompt-host-tests", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
    });
    let prompt = "test_input_required_result_prompt";
    let asked = server.result("prompts/get", json!({ "name": prompt, "_meta": meta }));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().unwrap();
    let responses = json!({ "user_context": { "action": "accept", "content": { "context": "tests" } } });
    let answered =
        server.result("prompts/get", json!({ "name": prompt, "inputResponses": responses, "requestState": state, "_meta": meta }));
    assert!(answered["messages"].is_array(), "{answered}");
    let text = scrape(addr);
    assert_value(&text, &get_prompt_outcome("conformance", "input-required"), 1.0);
    assert_value(&text, &get_prompt_outcome("conformance", "ok"), 1.0);
    assert_promtool_accepts(&text);
}

#[test]
fn a_spare_that_fails_to_start_is_counted_and_the_next_call_builds_its_own() {
    // chatty_start's start copies 1.2 MiB out in one host call: under
    // 1 MiB replies, a get's copy budget (1.31 MiB) lets it, a completion's
    // (1.06 MiB) does not. A spare is built under the budget of the call
    // that just ended, so only the spare made after the completion fails.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[limits]\nmax_reply_kib = 1024\n").unwrap();
    let (_plugins, mut server) = serve_plugins(&["chatty_start"], &["--config", config.to_str().unwrap(), "--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let failures = "prompt_host_plugin_spare_failures_total{plugin=\"chatty_start\"}";
    let complete = json!({ "ref": { "type": "ref/prompt", "name": "hello" }, "argument": { "name": "who", "value": "" } });

    let spare_made = "spare instance made plugin=chatty_start";
    // Built on the path; its spare, under a get's budget, starts.
    assert_eq!(only_text(&server.get_prompt("hello", json!({}))), "hello");
    server.wait_for_stderr_count(spare_made, 1);
    // Takes that spare; the spare made after it fails to start.
    assert_eq!(server.result("completion/complete", complete.clone())["completion"]["values"], json!(["world"]));
    assert!(eventually(|| value(&scrape(addr), failures) == Some(1.0)), "{}", scrape(addr));
    // Builds its own instance, and succeeds; its spare starts.
    assert_eq!(only_text(&server.get_prompt("hello", json!({}))), "hello");
    server.wait_for_stderr_count(spare_made, 2);
    assert_eq!(server.result("completion/complete", complete)["completion"]["values"], json!(["world"]));
    assert!(eventually(|| value(&scrape(addr), failures) == Some(2.0)), "{}", scrape(addr));
    // Every call succeeded, and only the two spares made after a completion failed.
    let text = scrape(addr);
    assert_eq!(server.wait_for_stderr_count(spare_made, 2).matches(spare_made).count(), 2);
    assert_value(&text, &get_prompt_outcome("chatty_start", "ok"), 2.0);
    assert_value(&text, "prompt_host_plugin_calls_total{method=\"completion/complete\",outcome=\"ok\",plugin=\"chatty_start\"}", 2.0);
}

/// Waits up to 10 s for `condition`, and says whether it came true.
fn eventually(condition: impl Fn() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !condition() {
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}
