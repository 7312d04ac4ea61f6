//! The stdio transport answers `prompts/get`, `prompts/list` and
//! `completion/complete` itself, on the thread that read them
//! (`transport::stdio`'s `HotPath`): a call that does not answer at once runs
//! on as a task, a cancelled call is not answered, and the end of the input
//! and a stop wait for the calls already read, as rmcp does for the methods
//! it answers. The log line at the end of the input counts the requests the
//! transport answered itself.

mod support;

use serde_json::json;
use support::{Server, plugin_dir, serve_plugins};

/// Lines of a `prompts/get` of code_review with ids `ids`, one write.
fn gets(ids: std::ops::Range<u64>) -> String {
    ids.map(|id| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": { "name": "code_review", "arguments": { "code": id.to_string() } } })
            .to_string()
            + "\n"
    })
    .collect()
}

#[test]
fn requests_read_together_are_all_answered_when_the_input_ends_at_once() {
    // Read in one read, with the end of the input right behind them: every
    // one but the last runs as a task, and the session waits for them.
    let (_dir, mut server) = serve_plugins(&["code_review"], &[]);
    // Once the ping is answered, the session has started: what follows is
    // the transport's.
    server.result("ping", json!({}));
    server.send_raw(gets(100..103).trim_end());
    assert_eq!(server.close_stdin(), Some(0), "{}", server.stderr());
    for id in 100..103 {
        let answer = server.response(id);
        assert_eq!(answer["result"]["messages"][0]["content"]["text"], format!("Please review this Python code:\n{id}"), "{answer}");
    }
    server.wait_for_stderr("the input ended handled_here=3\n");
}

#[test]
fn a_stop_after_answers_written_here_does_not_wait_for_them() {
    // Each answer written by the transport finishes its request: a stop
    // finds none open, and does not wait out the grace.
    let (_dir, mut server) = serve_plugins(&["code_review"], &["--shutdown-grace-ms", "20000"]);
    server.result("ping", json!({}));
    for id in 0..3 {
        let text = server.get_prompt("code_review", json!({ "code": id.to_string() }));
        assert_eq!(text["messages"][0]["content"]["text"], format!("Please review this Python code:\n{id}"));
    }
    let started = std::time::Instant::now();
    assert_eq!(server.terminate(), Some(0), "{}", server.stderr());
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the stop waited {:?}", started.elapsed());
    let stderr = server.stderr();
    assert!(!stderr.contains("left unanswered") && !stderr.contains("abandoning"), "{stderr}");
}

#[test]
fn a_call_that_runs_long_does_not_hold_the_next_line() {
    let (_dir, mut server) = serve_plugins(&["hostile", "code_review"], &["--deadline-ms", "1500"]);
    let sleeping = server.send_request("prompts/get", json!({ "name": "sleep" }));
    let quick = server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" } }));
    let listed = server.send_request("prompts/list", json!({}));
    // The lines come in the order they are answered: both quick ones (in
    // either order: read together, they may run side by side) before the
    // sleeper's.
    let mut first_two: Vec<serde_json::Value> = (0..2).map(|_| serde_json::from_str(&server.next_line()).unwrap()).collect();
    first_two.sort_by_key(|answer| answer["id"].as_u64());
    assert_eq!(first_two[0]["id"], quick, "{first_two:?}");
    assert_eq!(first_two[0]["result"]["messages"][0]["content"]["text"], "Please review this Python code:\nx");
    assert_eq!(first_two[1]["id"], listed, "{first_two:?}");
    assert_eq!(first_two[1]["result"]["prompts"][0]["name"], "code_review");
    let sleeper: serde_json::Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(sleeper["id"], sleeping, "{sleeper}");
    assert_eq!(sleeper["error"]["code"], -32603, "{sleeper}");
    assert_eq!(sleeper["error"]["message"], "plugin 'hostile' exceeded its 1500 ms deadline");
}

#[test]
fn a_cancelled_call_is_not_answered_and_the_next_is() {
    // The deadline leaves a loaded machine a second to read the
    // cancellation behind the call.
    let (_dir, mut server) = serve_plugins(&["hostile", "code_review"], &["--deadline-ms", "1000"]);
    let sleeping = server.send_request("prompts/get", json!({ "name": "sleep" }));
    server.send(&json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": sleeping, "reason": "the user gave up" }
    }));
    // Past the sleeper's deadline: had it been answered, its error would be
    // the next line.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let quick = server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": "y" } }));
    let next: serde_json::Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(next["id"], quick, "the cancelled call was answered: {next}");
    assert_eq!(next["result"]["messages"][0]["content"]["text"], "Please review this Python code:\ny");
    // Nor later: nothing more comes.
    assert_eq!(server.close_stdin(), Some(0), "{}", server.stderr());
    assert_eq!(server.rest_of_stdout(), Vec::<String>::new());
    let stderr = server.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_error_from_the_hot_path_carries_the_id_and_rmcps_words() {
    let (_dir, mut server) = serve_plugins(&["code_review"], &[]);
    let unknown = server.error("prompts/get", json!({ "name": "nope" }));
    assert_eq!(unknown, json!({ "code": -32602, "message": "unknown prompt 'nope'", "data": { "prompt": "nope" } }));
    let cursor = server.error("prompts/list", json!({ "cursor": "not-a-cursor" }));
    assert_eq!(cursor["code"], -32602, "{cursor}");
    // A completion of a prompt reference the server does not serve.
    let completion = server.error(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "nope" }, "argument": { "name": "code", "value": "" } }),
    );
    assert_eq!(completion["code"], -32602, "{completion}");
    // Params that are not the method's: rmcp's decoding refuses them before
    // either path sees them.
    let id = 900;
    server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": { "arguments": {} } }));
    let response = server.response(id);
    assert_eq!(response["error"]["code"], -32602, "{response}");
}

#[test]
fn a_reused_id_gets_an_answer_for_each_call() {
    // A client may reuse an id while a call with it runs (JSON-RPC leaves it
    // to the client): each call is answered, and a stop finds none open.
    let (_dir, mut server) = serve_plugins(&["hostile"], &["--deadline-ms", "300", "--shutdown-grace-ms", "20000"]);
    server.result("ping", json!({}));
    for _ in 0..2 {
        server.send(&json!({ "jsonrpc": "2.0", "id": 77, "method": "prompts/get", "params": { "name": "sleep" } }));
    }
    for _ in 0..2 {
        let answer: serde_json::Value = serde_json::from_str(&server.next_line()).unwrap();
        assert_eq!(answer["id"], 77, "{answer}");
        assert_eq!(answer["error"]["message"], "plugin 'hostile' exceeded its 300 ms deadline", "{answer}");
    }
    let started = std::time::Instant::now();
    assert_eq!(server.terminate(), Some(0), "{}", server.stderr());
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the stop waited {:?}", started.elapsed());
}

#[test]
fn a_cancellation_naming_a_reused_id_ends_every_call_with_it() {
    // Both calls with the id are cancelled, neither is answered, and a stop
    // finds neither open (it would wait out the 20 s grace for one).
    let (_dir, mut server) = serve_plugins(&["hostile", "code_review"], &["--deadline-ms", "1000", "--shutdown-grace-ms", "20000"]);
    server.result("ping", json!({}));
    for _ in 0..2 {
        server.send(&json!({ "jsonrpc": "2.0", "id": 78, "method": "prompts/get", "params": { "name": "sleep" } }));
    }
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 78 } }));
    // Past both sleepers' deadline: had either been answered, its error
    // would come before this answer.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let quick = server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": "after" } }));
    let next: serde_json::Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(next["id"], quick, "a cancelled call was answered: {next}");
    assert_eq!(next["result"]["messages"][0]["content"]["text"], "Please review this Python code:\nafter");
    // Nor later: nothing more comes.
    stops_within_answering_nothing_more(&mut server, 10);
}

/// SIGTERM stops `server` within `seconds`, with nothing more on stdout and
/// no request left unanswered in its log.
fn stops_within_answering_nothing_more(server: &mut Server, seconds: u64) {
    let started = std::time::Instant::now();
    assert_eq!(server.terminate(), Some(0), "{}", server.stderr());
    assert!(started.elapsed() < std::time::Duration::from_secs(seconds), "the stop waited {:?}", started.elapsed());
    assert_eq!(server.rest_of_stdout(), Vec::<String>::new());
    // The last line of a stop: the lines before it are all in.
    let stderr = server.wait_for_stderr("stopped\n");
    assert!(!stderr.contains("requests left unanswered"), "{stderr}");
}

#[test]
fn a_reused_id_of_requests_rmcp_answers_leaves_nothing_open() {
    // rmcp keeps one request per id in flight, and writes one answer for
    // them: a stop waits for that one, not for an answer never to come
    // (it would wait out the 20 s grace).
    let dir = plugin_dir(&["hostile"]);
    let mut server = Server::spawn(&["--plugins", dir.path().to_str().unwrap(), "--deadline-ms", "300", "--shutdown-grace-ms", "20000"]);
    // A client that fills in forms: its `prompts/get` is rmcp's.
    server.initialize_with("2025-11-25", json!({ "elicitation": {} }));
    for _ in 0..2 {
        server.send(&json!({ "jsonrpc": "2.0", "id": 79, "method": "prompts/get", "params": { "name": "sleep" } }));
    }
    let answer: serde_json::Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(answer["id"], 79, "{answer}");
    assert_eq!(answer["error"]["message"], "plugin 'hostile' exceeded its 300 ms deadline", "{answer}");
    // Past the second call's deadline.
    std::thread::sleep(std::time::Duration::from_millis(600));
    // One answer for the two.
    stops_within_answering_nothing_more(&mut server, 5);
}

/// A 2025-11-25 session whose client declared `capabilities`, after a
/// `prompts/get` and a `prompts/list`, both answered, and the end of its
/// input.
fn after_a_get_and_a_list(capabilities: serde_json::Value) -> Server {
    let dir = plugin_dir(&["code_review"]);
    let mut server = Server::spawn(&["--plugins", dir.path().to_str().unwrap()]);
    server.initialize_with("2025-11-25", capabilities);
    // Once the ping is answered, the session has started: what follows may
    // be the transport's.
    server.result("ping", json!({}));
    let text = server.get_prompt("code_review", json!({ "code": "z" }));
    assert_eq!(text["messages"][0]["content"]["text"], "Please review this Python code:\nz");
    let listed = server.result("prompts/list", json!({}));
    assert_eq!(listed["prompts"][0]["name"], "code_review", "{listed}");
    assert_eq!(server.close_stdin(), Some(0), "{}", server.stderr());
    server
}

#[test]
fn a_get_from_a_client_that_fills_in_forms_is_left_to_rmcp() {
    // rmcp ties an `elicitation/create` to the request it serves: a
    // `prompts/get` that may be answered with one is rmcp's, whatever the
    // prompt. Of the two requests, one is taken here: the `prompts/list`,
    // which is never asked with a form.
    after_a_get_and_a_list(json!({ "elicitation": {} })).wait_for_stderr("the input ended handled_here=1\n");
}

#[test]
fn a_get_from_a_client_that_cannot_fill_in_forms_is_the_transports() {
    after_a_get_and_a_list(json!({})).wait_for_stderr("the input ended handled_here=2\n");
}

/// The answers of the hot path and of rmcp's own dispatch to the same
/// requests are the same, byte for byte: a session whose client declared
/// `elicitation` has its `prompts/get` answered by rmcp, one whose client
/// did not by the transport. (`prompts/list` and `completion/complete`
/// are the transport's in both; they go through the same
/// `Service::handle_request`.)
#[test]
fn the_hot_path_answers_a_prompts_get_exactly_as_rmcp_does() {
    let requests = [
        json!({ "name": "code_review", "arguments": { "code": "x = 1" } }),
        json!({ "name": "code_review", "arguments": { "code": "x = 1" }, "_meta": { "progressToken": 7 } }),
        json!({ "name": "code_review", "arguments": {} }),
        json!({ "name": "code_review", "arguments": { "code": 5 } }),
        json!({ "name": "no_such_prompt" }),
        json!({ "arguments": { "code": "x" } }),
    ];
    let answers = |capabilities: serde_json::Value, handled_here: usize| {
        let dir = plugin_dir(&["code_review"]);
        let mut server = Server::spawn(&["--plugins", dir.path().to_str().unwrap()]);
        server.initialize_with("2025-11-25", capabilities);
        server.result("ping", json!({}));
        let answers: Vec<serde_json::Value> = requests.iter().map(|params| server.request("prompts/get", params.clone())).collect();
        assert_eq!(server.close_stdin(), Some(0), "{}", server.stderr());
        server.wait_for_stderr(&format!("the input ended handled_here={handled_here}\n"));
        answers
    };
    let by_rmcp = answers(json!({ "elicitation": {} }), 0);
    // The last request names no prompt: rmcp cannot read it as a `prompts/get`,
    // so it is rmcp's on both paths.
    let here = answers(json!({}), requests.len() - 1);
    assert_eq!(here, by_rmcp);
    // What they answer, so that the comparison compares something.
    assert_eq!(here[0]["result"]["messages"][0]["content"]["text"], "Please review this Python code:\nx = 1", "{}", here[0]);
    assert_eq!(here[4]["error"]["code"], -32602, "{}", here[4]);
}
