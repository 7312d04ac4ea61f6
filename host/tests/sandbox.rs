//! Hostile plugins, over the real binary: each misdeed ends in its own clear
//! error naming the plugin, and the host keeps serving.

mod support;

use serde_json::{Value, json};
use support::{Server, only_text, plugin_dir, serve_plugins};

fn serve_hostile(extra: &[&str]) -> (tempfile::TempDir, Server) {
    serve_plugins(&["hostile", "code_review"], extra)
}

/// Asserts that `prompt` fails with `code` and `message`, then that the same
/// plugin and another one still answer.
fn assert_contained(server: &mut Server, prompt: &str, code: i64, message: &str) -> Value {
    let error = server.error("prompts/get", json!({ "name": prompt }));
    assert_eq!(error["code"], code, "{prompt}: {error}");
    assert_eq!(error["message"], message, "{prompt}");
    assert_eq!(only_text(&server.get_prompt("echo", json!({ "text": "still here" }))), "still here");
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    error
}

/// Asserts that the fixture `fixture` is not loaded, for `reason`, and that
/// the plugin beside it is served.
fn assert_not_loaded(fixture: &str, extra: &[&str], reason: &str) {
    let dir = plugin_dir(&[fixture, "code_review"]);
    let mut args = vec!["--plugins", dir.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut server = Server::start(&args);
    assert_eq!(server.list_all_names(), ["code_review"]);
    server.wait_for_stderr(&format!("{}: {reason}", dir.path().join(format!("{fixture}.wasm")).display()));
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let (_dir, mut server) = serve_hostile(&["--fuel", "2000000", "--deadline-ms", "60000"]);
    let error = assert_contained(&mut server, "spin", -32603, "plugin 'hostile' exceeded its fuel budget (2000000 units)");
    assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "fuel", "limit": { "fuel": 2000000 } }));
}

#[test]
fn an_endless_loop_meets_the_deadline() {
    let (_dir, mut server) = serve_hostile(&["--fuel", "100000000000000", "--deadline-ms", "300"]);
    let error = assert_contained(&mut server, "spin", -32603, "plugin 'hostile' exceeded its 300 ms deadline");
    assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "deadline", "limit": { "milliseconds": 300 } }));
}

#[test]
fn a_call_that_never_returns_from_the_host_meets_the_deadline() {
    let (_dir, mut server) = serve_hostile(&["--deadline-ms", "300"]);
    assert_contained(&mut server, "sleep", -32603, "plugin 'hostile' exceeded its 300 ms deadline");
}

#[test]
fn an_endless_completion_runs_out_of_fuel() {
    let (_dir, mut server) = serve_hostile(&["--fuel", "2000000", "--deadline-ms", "60000"]);
    let error = server
        .error("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "spin" }, "argument": { "name": "a", "value": "" } }));
    assert_eq!(error["code"], -32603);
    assert_eq!(error["message"], "plugin 'hostile' exceeded its fuel budget (2000000 units)");
    assert_eq!(only_text(&server.get_prompt("echo", json!({}))), "echo");
}

#[test]
fn unbounded_allocation_meets_the_memory_limit() {
    let (_dir, mut server) = serve_hostile(&["--memory-mib", "16"]);
    let error = assert_contained(&mut server, "grow", -32603, "plugin 'hostile' exceeded its 16 MiB memory limit");
    assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "memory", "limit": { "bytes": 16 << 20 } }));
}

#[test]
fn a_reply_of_hundreds_of_megabytes_meets_the_memory_limit() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_contained(&mut server, "huge-reply", -32603, "plugin 'hostile' exceeded its 64 MiB memory limit");
}

#[test]
fn deep_recursion_overflows_the_stack() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_contained(&mut server, "recurse", -32603, "plugin 'hostile' overflowed its 512 KiB stack");
}

#[test]
fn a_panic_is_reported_with_its_message() {
    let (_dir, mut server) = serve_hostile(&[]);
    let error = server.error("prompts/get", json!({ "name": "panic" }));
    assert_eq!(error["code"], -32603);
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("plugin 'hostile' panicked: hostile plugin panicked on purpose (at hostile/src/lib.rs:"), "{message}");
    assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "panic" }));
    assert_eq!(only_text(&server.get_prompt("echo", json!({}))), "echo");
}

#[test]
fn invalid_replies_never_reach_the_client() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_contained(
        &mut server,
        "bad-mime",
        -32603,
        "plugin 'hostile' returned an invalid reply for prompt 'bad-mime': message 0: image mime type \"text/plain\" does not start with image/",
    );
    assert_contained(
        &mut server,
        "bad-uri",
        -32603,
        "plugin 'hostile' returned an invalid reply for prompt 'bad-uri': message 0: resource uri \"not a uri\" is not a URI (relative URL without a base)",
    );
}

#[test]
fn the_plugin_sees_no_files_no_environment_and_no_network() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_contained(
        &mut server,
        "read-file",
        -32603,
        "plugin 'hostile' failed on prompt 'read-file': reading /etc/passwd failed: No such file or directory (os error 44)",
    );
    assert_contained(
        &mut server,
        "read-env",
        -32603,
        "plugin 'hostile' failed on prompt 'read-env': reading $HOME failed: environment variable not found",
    );
    assert_contained(
        &mut server,
        "open-socket",
        -32603,
        "plugin 'hostile' failed on prompt 'open-socket': connecting to 127.0.0.1:80 failed: Permission denied (os error 2)",
    );
}

#[test]
fn what_a_plugin_prints_goes_to_the_log_not_the_protocol() {
    let (_dir, mut server) = serve_hostile(&[]);
    // `response` fails the test if stdout carries anything but JSON-RPC.
    assert_eq!(only_text(&server.get_prompt("chatty", json!({}))), "chatted");
    // stdout is logged after stderr, so once it is read both are.
    let stderr = server.wait_for_stderr("hello from the plugin's stdout");
    assert!(stderr.contains("hello from the plugin's stderr"), "{stderr}");
}

#[test]
fn a_plugin_that_loops_while_listing_is_not_loaded() {
    assert_not_loaded(
        "hostile_list_loop",
        &["--fuel", "2000000"],
        "failed while listing its prompts: it exceeded its fuel budget (2000000 units)",
    );
}

#[test]
fn slow_calls_do_not_hold_up_others() {
    let (_dir, mut server) = serve_hostile(&["--deadline-ms", "3000"]);
    let sleepers: Vec<u64> = (0..4).map(|_| server.send_request("prompts/get", json!({ "name": "sleep" }))).collect();
    let spinners: Vec<u64> = (0..2).map(|_| server.send_request("prompts/get", json!({ "name": "spin" }))).collect();
    let started = std::time::Instant::now();
    let fast = server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" } }));
    let response = server.response(fast);
    let waited = started.elapsed();
    assert_eq!(only_text(&response["result"]), "Please review this Python code:\nx");
    // Generous: the slow calls take 3 s each; the fast one must not wait for them.
    assert!(waited < std::time::Duration::from_millis(2000), "the fast call took {waited:?}");
    for id in sleepers.into_iter().chain(spinners) {
        assert_eq!(server.response(id)["error"]["code"], -32603);
    }
}

#[test]
fn a_plugin_declaring_100000_prompts_is_not_loaded() {
    assert_not_loaded(
        "hostile_many_prompts",
        &[],
        // Stopped at the copy: 1 MiB of definitions (max_catalog_kib) and
        // 4 KiB of room for each of 1000 prompts (max_prompts), and 64 KiB.
        "failed while listing its prompts: it returned more than the 5210112 bytes the host copies out of one call",
    );
}

#[test]
fn a_plugin_importing_what_the_host_does_not_provide_is_not_loaded() {
    assert_not_loaded(
        "hostile_extra_import",
        &[],
        "imports what the host does not provide: fixture:extra-import/vault@0.1.0 (hint: a pack may import only WASI 0.2",
    );
}

#[test]
fn a_flood_of_output_is_cut_and_the_call_succeeds() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_eq!(only_text(&server.get_prompt("flood", json!({}))), "flooded");
    // 16,384 lines of 61 bytes; the first 16 KiB (268 lines) are kept, and
    // the first 50 of those logged before the plugin's rate limit.
    let stderr = server.wait_for_stderr("plugin output rate limit reached: at most 50 lines every 10 s are logged");
    assert_eq!(stderr.matches(r#"plugin output plugin="hostile" stream="stdout""#).count(), 50, "{stderr}");
}

#[test]
fn a_reply_with_too_many_messages_is_refused() {
    let (_dir, mut server) = serve_hostile(&[]);
    assert_contained(
        &mut server,
        "many-messages",
        -32603,
        "plugin 'hostile' returned an invalid reply for prompt 'many-messages': it holds 1000 messages, more than the limit of 100",
    );
}

#[test]
fn arguments_larger_than_the_limit_are_refused_before_the_plugin_runs() {
    let (_dir, mut server) = serve_hostile(&[]);
    let text = "a".repeat(2 << 20);
    let error = server.error("prompts/get", json!({ "name": "echo", "arguments": { "text": text } }));
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], "the arguments of prompt 'echo' are 2097156 bytes, more than the limit of 1048576");
}

/// A config file in a temporary directory.
fn config_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prompt-host.toml");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

#[test]
fn per_plugin_limits_come_from_the_config_file() {
    let plugins = plugin_dir(&["hostile", "code_review"]);
    let (_config_dir, config) = config_file(&format!(
        "[server]\nplugins = {:?}\n\n[limits]\nfuel = 100000000000000\n\n[plugins.hostile.limits]\ndeadline_ms = 250\n",
        plugins.path().display().to_string()
    ));
    let mut server = Server::start(&["--config", &config]);
    assert_contained(&mut server, "spin", -32603, "plugin 'hostile' exceeded its 250 ms deadline");
}

#[test]
fn calls_past_the_concurrency_bound_are_refused_as_busy() {
    let plugins = plugin_dir(&["hostile"]);
    let (_config_dir, config) = config_file("[limits]\ndeadline_ms = 2000\n\n[sandbox]\nmax_concurrent_calls = 1\nqueue_wait_ms = 100\n");
    let mut server = Server::start(&["--config", &config, "--plugins", plugins.path().to_str().unwrap()]);
    let sleeper = server.send_request("prompts/get", json!({ "name": "sleep" }));
    let echo = json!({ "name": "echo" });
    // Once the sleeper holds the one slot (a loaded machine may take a
    // while to start it; an echo before that is answered), an echo is refused.
    let refused = (0..10)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            server.request("prompts/get", echo.clone())
        })
        .find(|response| response.get("error").is_some())
        .expect("an echo is refused while the sleeper runs");
    assert_eq!(
        refused["error"],
        json!({
            "code": -32603,
            "message": "plugin 'hostile' could not be called: all 1 sandbox slots stayed busy for 100 ms",
            "data": { "plugin": "hostile", "failure": "busy", "limit": { "concurrentCalls": 1 } },
        })
    );
    assert_eq!(server.response(sleeper)["error"]["message"], "plugin 'hostile' exceeded its 2000 ms deadline");
    // And the slot is free again: at once, or once the sleeper's next
    // instance, built in that slot after its call, is made (until then, busy).
    let served = (0..100)
        .map(|_| server.request("prompts/get", echo.clone()))
        .find(|response| {
            let busy = response["error"]["data"]["failure"] == "busy";
            assert!(busy || response.get("result").is_some(), "{response}");
            !busy
        })
        .expect("an echo is served once the sleeper is done");
    assert_eq!(served["result"]["messages"][0]["content"]["text"], "echo");
}

/// Runs `serve` with the config file `config`, which must be refused: exit
/// status 1 and nothing on stdout. Returns what it wrote to stderr.
fn refused_config(config: &str) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["serve", "--config", config])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_invalid_config_file_is_refused_at_start_naming_the_key() {
    let (_config_dir, config) = config_file("[limits]\nfuel = 1000\ndeadline = 5\n");
    let stderr = refused_config(&config);
    assert!(stderr.starts_with(&format!("error: invalid config file {config}: line 3, column 1, key deadline: ")), "{stderr}");
    assert!(stderr.contains("unknown field `deadline`"), "{stderr}");
}

/// Hardening round 4, item 8: a mistyped key in a grants table is named,
/// with the keys it could be (key names are no secret; values stay hidden).
#[test]
fn a_mistyped_grants_key_is_named_with_the_keys_it_could_be() {
    let (_config_dir, config) = config_file("[plugins.acme.grants.foldrs]\nlogs = \"/var/log\"\n");
    let stderr = refused_config(&config);
    assert_eq!(
        stderr,
        format!(
            "error: invalid config file {config}: line 1, column 22: unknown field `foldrs`, \
             expected one of `folders`, `env`, `http` (in a grants table, values are not shown)\n"
        )
    );
}

#[test]
fn a_hammered_plugin_exhausts_only_its_own_quota() {
    let plugins = plugin_dir(&["hostile", "code_review"]);
    // Three sandbox slots, two of them hostile's at most: without its quota,
    // the spinners would take all three and code_review would be refused.
    let (_config_dir, config) = config_file("[limits]\nconcurrent_calls = 2\n\n[sandbox]\nmax_concurrent_calls = 3\nqueue_wait_ms = 500\n");
    let dir = plugins.path().to_str().unwrap();
    let mut server = Server::start(&["--config", &config, "--plugins", dir, "--deadline-ms", "2000", "--fuel", "100000000000000"]);
    let spinners: Vec<u64> = (0..6).map(|_| server.send_request("prompts/get", json!({ "name": "spin" }))).collect();
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "x" }))), "Please review this Python code:\nx");
    let mut messages: Vec<String> = Vec::new();
    for id in spinners {
        let error = server.response(id)["error"].clone();
        assert_eq!(error["code"], -32603, "{error}");
        if error["data"]["failure"] == "busy" {
            assert_eq!(error["data"], json!({ "plugin": "hostile", "failure": "busy", "limit": { "concurrentCalls": 2 } }));
        }
        messages.push(error["message"].as_str().unwrap().to_string());
    }
    messages.sort();
    assert_eq!(
        messages,
        [
            "plugin 'hostile' could not be called: all 2 of its concurrent calls stayed busy for 500 ms",
            "plugin 'hostile' could not be called: all 2 of its concurrent calls stayed busy for 500 ms",
            "plugin 'hostile' could not be called: all 2 of its concurrent calls stayed busy for 500 ms",
            "plugin 'hostile' could not be called: all 2 of its concurrent calls stayed busy for 500 ms",
            "plugin 'hostile' exceeded its 2000 ms deadline",
            "plugin 'hostile' exceeded its 2000 ms deadline",
        ]
    );
}

#[test]
fn a_stack_larger_than_the_engine_runs_is_refused_at_start_naming_the_maximum() {
    let (_config_dir, config) = config_file("[sandbox]\nmax_wasm_stack_kib = 4096\n");
    assert_eq!(
        refused_config(&config),
        format!(
            "error: invalid config file {config}: sandbox.max_wasm_stack_kib must be at most 1536: calls run on the \
             engine's 2048 KiB stacks, and the host's own functions need the rest\n"
        )
    );
}

/// The `count` prompt of the fresh_counter fixture, which answers how many
/// times its instance's global counter was incremented: once by its start
/// function, once by this call.
fn count(server: &mut Server) -> String {
    only_text(&server.get_prompt("count", json!({}))).to_string()
}

#[test]
fn a_spare_cannot_tell_how_long_it_waited_nor_when_the_previous_call_ended() {
    // Issue "Hardening, round 3", item 7: a spare's start function ran
    // right after the previous call ended, with the real clocks, so the
    // next call could read how long the spare waited (and the previous
    // call could choose it). Now both clocks stand at zero while an
    // instance starts and run from its call's start.
    let (_dir, mut server) = serve_plugins(&["fresh_counter"], &[]);
    for pause_ms in [0, 1500, 0, 1500] {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        let text = only_text(&server.get_prompt("clocks", json!({}))).to_string();
        let (moved_ms, wall_at_start) = text.split_once(' ').unwrap();
        // The wall clock read the UNIX epoch at the start, and the monotonic
        // clock moved only within the call (its deadline is 1000 ms), not
        // while the spare waited 1500 ms.
        assert_eq!(wall_at_start, "0", "{text}");
        assert!(moved_ms.parse::<u64>().unwrap() < 1000, "after a pause of {pause_ms} ms: {text}");
    }
}

#[test]
fn a_spare_cannot_measure_its_wait_with_pollables_made_at_its_start() {
    // Issue "Hardening, round 3", item 7 (review): the clocks stand still
    // while an instance starts, but a pollable made then runs from its
    // making, so a spare's start could keep one and its call see how long
    // it waited. The host keeps no spare of a pack whose start holds a host
    // resource: each call's instance is built for it, and the pollables are
    // never ready.
    let (_dir, mut server) = serve_plugins(&["spare_timer"], &[]);
    for pause_ms in [0, 1500, 1500] {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        assert_eq!(only_text(&server.get_prompt("waited", json!({}))), "500:pending 1000:pending", "after a pause of {pause_ms} ms");
    }
}

#[test]
fn every_call_gets_an_instance_that_no_call_has_used() {
    let (_dir, mut server) = serve_plugins(&["fresh_counter"], &[]);
    for _ in 0..30 {
        assert_eq!(count(&mut server), "2");
    }
    let concurrent: Vec<u64> = (0..40).map(|_| server.send_request("prompts/get", json!({ "name": "count" }))).collect();
    for id in concurrent {
        assert_eq!(only_text(&server.response(id)["result"]), "2");
    }
    // A call that traps takes its instance with it.
    let error = server.error("prompts/get", json!({ "name": "count-then-trap" }));
    assert_eq!(error["code"], -32603);
    assert_eq!(error["data"]["failure"], "trap", "{error}");
    for _ in 0..5 {
        assert_eq!(count(&mut server), "2");
    }
    let completion = json!({ "ref": { "type": "ref/prompt", "name": "count" }, "argument": { "name": "value", "value": "" } });
    for _ in 0..5 {
        assert_eq!(server.result("completion/complete", completion.clone())["completion"]["values"], json!(["2"]));
        assert_eq!(count(&mut server), "2");
    }
}
