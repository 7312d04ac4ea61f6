//! Input-required prompts (WIT 0.2) over the real binary: the conformance
//! fixture pack's `test_input_required_result_prompt` asks for a context
//! before it answers. A 2026-07-28 client that declared `elicitation` gets
//! an `InputRequiredResult` whose `requestState` the host sealed; the retry
//! with the answer gets the messages. A tampered or foreign state, an answer
//! that violates the form, and a client that cannot be asked are refused
//! with -32602 naming what is wrong. A 2025-11-25 client that declared
//! `elicitation` is asked with `elicitation/create` on its session instead.
//! A 0.1 pack is served beside the 0.2 one. A state is bound to the user it
//! was issued to (over stdio, the one stdio user), and survives a rotation
//! of the key file while the old key is listed as a previous one.

mod support;

use serde_json::{Value, json};
use support::{Server, http_exchange, http_post, only_text, plugin_dir, spawn_http};

const PROMPT: &str = "test_input_required_result_prompt";

/// What a client is told for every way a requestState fails to open.
const BAD_STATE: &str = "prompt 'test_input_required_result_prompt': the requestState was not issued by this server to \
                         this user for this prompt and these arguments, or has expired: send the request again without \
                         requestState and inputResponses";

/// A server of the conformance pack (WIT 0.2) and code_review (WIT 0.1),
/// with `extra` arguments, before any handshake (2026-07-28 needs none).
fn serve(extra: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = plugin_dir(&["conformance", "code_review"]);
    let mut args = vec!["--plugins", dir.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = Server::spawn(&args);
    (dir, server)
}

/// The first round: the InputRequiredResult, and its requestState.
fn ask(server: &mut Server) -> (Value, String) {
    let result = server.result("prompts/get", json!({ "name": PROMPT, "_meta": support::elicitation_2026() }));
    let state = result["requestState"].as_str().expect("a requestState").to_string();
    (result, state)
}

/// The parameters of the elicitation the fixture's form becomes.
fn user_context_elicitation() -> Value {
    json!({
        "mode": "form",
        "message": "What context should the prompt use?",
        "requestedSchema": {
            "type": "object",
            "properties": { "context": { "type": "string" } },
            "required": ["context"]
        }
    })
}

fn accept(content: Value) -> Value {
    json!({ "user_context": { "action": "accept", "content": content } })
}

fn retry(server: &mut Server, responses: Value, state: &str) -> Value {
    server.request(
        "prompts/get",
        json!({ "name": PROMPT, "inputResponses": responses, "requestState": state, "_meta": support::elicitation_2026() }),
    )
}

#[test]
fn an_input_required_prompt_asks_for_its_form_then_answers_the_retry() {
    let (_dir, mut server) = serve(&[]);
    let (result, state) = ask(&mut server);
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"],
        json!({ "user_context": { "method": "elicitation/create", "params": user_context_elicitation() } })
    );
    // The pack checks that its state came back unchanged, and says the answer.
    let done = retry(&mut server, accept(json!({ "context": "test context", "ignored": 1 })), &state);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(only_text(&done["result"]), "Prompt with context: 'test context'");
    // The state is good for more than one retry (until it expires).
    let declined = retry(&mut server, json!({ "user_context": { "action": "decline" } }), &state);
    assert_eq!(only_text(&declined["result"]), "Prompt without context: the user declined to give one");
    // A retry that leaves the form unanswered is asked again, with a fresh seal.
    let again = retry(&mut server, json!({ "other_form": { "action": "accept", "content": {} } }), &state);
    assert_eq!(again["result"]["resultType"], "input_required");
    assert_eq!(again["result"]["inputRequests"], result["inputRequests"]);
}

#[test]
fn a_tampered_or_foreign_request_state_is_refused_before_the_pack_runs() {
    let (_dir, mut server) = serve(&[]);
    let (_, state) = ask(&mut server);
    // One answer for every way of failing: the codec's reason is not passed on.
    let tampered = retry(&mut server, accept(json!({ "context": "x" })), &format!("{state}-TAMPERED"));
    assert_eq!(tampered["error"], json!({ "code": -32602, "message": BAD_STATE, "data": { "prompt": PROMPT, "reason": "input" } }));
    let garbage = retry(&mut server, accept(json!({ "context": "x" })), "rs2.not-a-state");
    assert_eq!(garbage["error"]["message"], BAD_STATE, "{garbage}");

    // Another process has another random key: it refuses this one's state.
    let (_other_dir, mut other) = serve(&[]);
    let foreign = retry(&mut other, accept(json!({ "context": "x" })), &state);
    assert_eq!(foreign["error"]["message"], BAD_STATE, "{foreign}");

    // A state far longer than any the host seals is refused unread, alike.
    let long = "x".repeat(1 << 20);
    let long = retry(&mut server, accept(json!({ "context": "x" })), &long);
    assert_eq!(long["error"]["message"], BAD_STATE, "{long}");
}

/// A config file in `dir` sealing with the key file `current`, and opening
/// with the `previous` ones too.
fn key_config(dir: &std::path::Path, name: &str, current: &str, previous: &[&str]) -> String {
    let config = dir.join(name);
    let previous: Vec<String> = previous.iter().map(|file| format!("{file:?}")).collect();
    let text = format!("[server]\nrequest_state_key_file = {current:?}\nrequest_state_previous_key_files = [{}]\n", previous.join(", "));
    std::fs::write(&config, text).unwrap();
    config.to_str().unwrap().to_string()
}

#[test]
fn a_state_sealed_before_a_key_rotation_opens_after_it_until_the_old_key_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.key"), format!("{}\n", "11".repeat(32))).unwrap();
    std::fs::write(dir.path().join("new.key"), format!("{}\n", "22".repeat(32))).unwrap();
    // The rotation: every replica first opens with the new key too, then
    // seals with it, then drops the old one.
    let before = key_config(dir.path(), "before.toml", "old.key", &[]);
    let learning = key_config(dir.path(), "learning.toml", "old.key", &["new.key"]);
    let rotated = key_config(dir.path(), "rotated.toml", "new.key", &["old.key"]);
    let retired = key_config(dir.path(), "retired.toml", "new.key", &[]);
    let (_d1, mut before) = serve(&["--config", &before]);
    let (_d2, mut learning) = serve(&["--config", &learning]);
    let (_d3, mut rotated) = serve(&["--config", &rotated]);
    let (_d4, mut retired) = serve(&["--config", &retired]);

    let (_, old_state) = ask(&mut before);
    let (_, new_state) = ask(&mut rotated);
    let done = |server: &mut Server, state: &str| retry(server, accept(json!({ "context": "rotating" })), state);
    for (server, state) in [(&mut rotated, &old_state), (&mut learning, &new_state), (&mut retired, &new_state)] {
        let answer = done(server, state);
        assert_eq!(only_text(&answer["result"]), "Prompt with context: 'rotating'", "{answer}");
    }
    assert_eq!(done(&mut retired, &old_state)["error"]["message"], BAD_STATE);
    assert_eq!(done(&mut before, &new_state)["error"]["message"], BAD_STATE);
}

/// A 2026-07-28 `prompts/get` of the input-required prompt over HTTP to
/// `address`, with `extra` parameters: the JSON-RPC response.
fn get_over_http(address: std::net::SocketAddr, extra: Value) -> Value {
    let mut params = json!({ "name": PROMPT, "_meta": support::elicitation_2026() });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": params }).to_string();
    let headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: prompts/get\r\nMcp-Name: {PROMPT}\r\n");
    let (status, answer) = http_exchange(address, &http_post(&address.to_string(), &headers, &body));
    assert_eq!(status, 200, "{answer}");
    let start = answer.find("{\"").unwrap_or_else(|| panic!("no JSON in {answer}"));
    let end = answer.rfind('}').unwrap() + 1;
    serde_json::from_str(&answer[start..end]).unwrap()
}

#[test]
fn a_state_issued_to_one_user_is_refused_to_another_with_the_same_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.key"), "33".repeat(32)).unwrap();
    let config = key_config(dir.path(), "prompt-host.toml", "state.key", &[]);
    let plugins = plugin_dir(&["conformance"]);
    let plugins = plugins.path().to_str().unwrap();
    let (_stdio_dir, mut stdio) = serve(&["--config", &config]);
    let (mut one, _, one_address) = spawn_http("127.0.0.1:0", &["--config", &config, "--plugins", plugins]);
    let (mut two, _, two_address) = spawn_http("127.0.0.1:0", &["--config", &config, "--plugins", plugins]);

    // Over HTTP without OAuth every client is the same user: a replica
    // with the same key takes the state.
    let first = get_over_http(one_address, json!({}));
    let state = first["result"]["requestState"].as_str().expect("a requestState").to_string();
    let answers = json!({ "inputResponses": accept(json!({ "context": "over http" })), "requestState": state });
    let done = get_over_http(two_address, answers.clone());
    assert_eq!(only_text(&done["result"]), "Prompt with context: 'over http'", "{done}");
    // The stdio user is another: neither way does a state cross.
    let refused = retry(&mut stdio, accept(json!({ "context": "over http" })), &state);
    assert_eq!(refused["error"]["message"], BAD_STATE, "{refused}");
    let (_, stdio_state) = ask(&mut stdio);
    let crossed = get_over_http(one_address, json!({ "inputResponses": accept(json!({ "context": "x" })), "requestState": stdio_state }));
    let _ = (one.kill(), two.kill());
    assert_eq!(crossed["error"]["message"], BAD_STATE, "{crossed}");
}

#[test]
fn replicas_sharing_a_key_file_accept_each_others_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.key"), format!("{}\n", "5f".repeat(32))).unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[server]\nrequest_state_key_file = \"state.key\"\n").unwrap();
    let config = config.to_str().unwrap();
    let (_one_dir, mut one) = serve(&["--config", config]);
    let (_two_dir, mut two) = serve(&["--config", config]);
    let (_, state) = ask(&mut one);
    let done = retry(&mut two, accept(json!({ "context": "from one" })), &state);
    assert_eq!(only_text(&done["result"]), "Prompt with context: 'from one'", "{done}");
}

#[test]
fn a_key_file_too_short_stops_the_server_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.key"), "short\n").unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[server]\nrequest_state_key_file = \"state.key\"\n").unwrap();
    let mut server = Server::spawn(&["--config", config.to_str().unwrap()]);
    assert_ne!(server.close_stdin(), Some(0));
    let key = dir.path().join("state.key");
    // stderr is read by another thread: wait for the line rather than look once.
    server.wait_for_stderr(&format!("the request state key file {} holds 5 bytes, and a key needs at least 32", key.display()));
}

#[test]
fn an_answer_that_violates_the_form_is_refused_naming_the_field() {
    let (_dir, mut server) = serve(&[]);
    let (_, state) = ask(&mut server);
    let wrong_type = retry(&mut server, accept(json!({ "context": 5 })), &state);
    assert_eq!(wrong_type["error"]["code"], -32602, "{wrong_type}");
    assert_eq!(
        wrong_type["error"]["message"],
        format!("prompt '{PROMPT}': inputResponses[\"user_context\"]: field \"context\" must be a string, not a number")
    );
    assert_eq!(wrong_type["error"]["data"], json!({ "prompt": PROMPT, "form": "user_context", "field": "context" }));
    let left_out = retry(&mut server, accept(json!({})), &state);
    assert_eq!(
        left_out["error"]["message"],
        format!(
            "prompt '{PROMPT}': inputResponses[\"user_context\"]: field \"context\" is required, and the answer leaves \
             it out"
        )
    );
    let not_a_result = retry(&mut server, json!({ "user_context": 12345 }), &state);
    assert_eq!(not_a_result["error"]["code"], -32602, "{not_a_result}");
    assert_eq!(not_a_result["error"]["data"], json!({ "prompt": PROMPT, "form": "user_context" }));
}

#[test]
fn a_client_that_cannot_be_asked_gets_invalid_params_naming_what_is_missing() {
    let (_dir, mut server) = serve(&[]);
    let without = server.error("prompts/get", json!({ "name": PROMPT, "_meta": support::meta_2026(json!({})) }));
    assert_eq!(without["code"], -32602);
    assert_eq!(
        without["message"],
        format!(
            "prompt '{PROMPT}': it needs input (form 'user_context': \"What context should the prompt use?\" (fields: \
             context)), and the client did not declare the elicitation capability"
        )
    );
    // A 2025-11-25 client without elicitation cannot be asked either.
    let (_dir, mut server) = serve(&[]);
    server.initialize("2025-11-25");
    let older = server.error("prompts/get", json!({ "name": PROMPT }));
    assert_eq!(older["code"], -32602);
    assert_eq!(
        older["message"],
        format!(
            "prompt '{PROMPT}': it needs input (form 'user_context': \"What context should the prompt use?\" (fields: \
             context)), and the client declared no elicitation capability, and its protocol revision has no \
             input-required results (they came with 2026-07-28)"
        )
    );
}

/// A server of the two packs after the handshake of a 2025-11-25 client that
/// declared elicitation.
fn serve_elicitation_client() -> (tempfile::TempDir, Server) {
    let (dir, mut server) = serve(&[]);
    server.initialize_with("2025-11-25", json!({ "elicitation": {} }));
    (dir, server)
}

#[test]
fn an_earlier_client_with_elicitation_is_asked_over_its_session_and_the_call_continues() {
    let (_dir, mut server) = serve_elicitation_client();
    let id = server.send_request("prompts/get", json!({ "name": PROMPT }));
    let asked = server.server_request("elicitation/create");
    let mut params = asked["params"].clone();
    params.as_object_mut().unwrap().remove("_meta"); // rmcp's progress token
    assert_eq!(params, user_context_elicitation());
    let answer = json!({ "action": "accept", "content": { "context": "over the session" } });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": answer }));
    let done = server.response(id);
    assert_eq!(only_text(&done["result"]), "Prompt with context: 'over the session'", "{done}");

    // An answer that violates the form is refused, naming the field.
    let id = server.send_request("prompts/get", json!({ "name": PROMPT }));
    let asked = server.server_request("elicitation/create");
    let answer = json!({ "action": "accept", "content": { "context": true } });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": answer }));
    let refused = server.response(id);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        format!("prompt '{PROMPT}': inputResponses[\"user_context\"]: field \"context\" must be a string, not a boolean")
    );

    // A client that fails the elicitation gets -32602 naming the form.
    let id = server.send_request("prompts/get", json!({ "name": PROMPT }));
    let asked = server.server_request("elicitation/create");
    let failure = json!({ "code": -32603, "message": "the user closed the dialog" });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "error": failure }));
    let failed = server.response(id);
    assert_eq!(failed["error"]["code"], -32602, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("prompt '{PROMPT}': the client did not answer the elicitation of form \"user_context\": ")),
        "{message}"
    );
}

#[test]
fn a_0_1_pack_is_served_unchanged_beside_a_0_2_pack() {
    let (_dir, mut server) = serve(&[]);
    server.initialize("2025-11-25");
    let mut names = server.list_all_names();
    names.sort();
    assert!(names.contains(&"code_review".to_string()), "{names:?}");
    assert!(names.contains(&PROMPT.to_string()), "{names:?}");
    let review = server.get_prompt("code_review", json!({ "code": "x" }));
    assert_eq!(only_text(&review), "Please review this Python code:\nx");
    let simple = server.get_prompt("test_simple_prompt", json!({}));
    assert_eq!(only_text(&simple), "This is a simple prompt for testing.");
    // The load log line names the WIT version, and what a 0.2 pack says it is.
    let log = server.stderr();
    let loaded = |plugin: &str| {
        let line = log.lines().find(|line| line.contains("plugin loaded") && line.contains(&format!("plugin={plugin} ")));
        line.unwrap_or_else(|| panic!("no load line for {plugin}:\n{log}")).to_string()
    };
    assert!(loaded("code_review").ends_with(" wit=\"0.1\""), "{}", loaded("code_review"));
    assert!(loaded("conformance").ends_with(" wit=\"0.4\" pack=\"conformance 0.1.0\""), "{}", loaded("conformance"));
}

#[test]
fn an_input_required_answer_that_breaks_the_rules_is_refused_without_asking() {
    let dir = plugin_dir(&["hostile_input"]);
    let mut server = Server::spawn(&["--plugins", dir.path().to_str().unwrap()]);
    for (prompt, problem) in [
        ("too-many-forms", "forms: 9, more than the limit of 8"),
        ("huge-state", "its state is 17408 bytes, more than the limit of 16384"),
        ("bad-default", "form \"f\", field \"level\": default \"medium\" is not one of its choices"),
    ] {
        let error = server.error("prompts/get", json!({ "name": prompt, "_meta": support::elicitation_2026() }));
        assert_eq!(error["code"], -32603, "{error}");
        assert_eq!(error["message"], format!("plugin 'hostile_input' returned an invalid reply for prompt '{prompt}': {problem}"));
        assert_eq!(error["data"]["failure"], "invalid-reply");
    }
}
