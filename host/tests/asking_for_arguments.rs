//! Prompts that have the host ask for their missing arguments (WIT
//! 0.3.1's `asking`) over the real binary. The fixture `typed_arguments`
//! opts `announce` in and leaves `report` out. A 2026-07-28 client that
//! declared elicitation gets one form built from the declared kinds, as an
//! `InputRequiredResult`; its answers are checked as arguments and reach
//! the pack as if the client had passed them. A 2025-11-25 client that
//! declared elicitation is asked over its session. A client that cannot be
//! asked, a user who declines, and a prompt that did not opt in get
//! -32602 as before. A pack built against 0.3.0 is served unchanged.

mod support;

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text, plugin_dir};

fn serve(fixtures: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = plugin_dir(fixtures);
    let server = Server::spawn(&["--plugins", dir.path().to_str().unwrap()]);
    (dir, server)
}

/// The elicitation the host builds for `announce` missing every required
/// argument: one field per argument, in declaration order, of the form
/// kind its declaration maps to, each described with its hint.
fn announce_form(missing: &[&str]) -> Value {
    let all = json!({
        "tone": { "type": "string", "enum": ["formal", "casual"], "description": "The tone (one of: formal, casual)" },
        "count": { "type": "integer", "description": "The count (an integer from 1 to 10)" },
        "ratio": { "type": "number", "description": "The ratio (a number from 0 to 1)" },
        "urgent": { "type": "boolean", "description": "The urgent (true or false)" },
        "headline": { "type": "string", "description": "The headline (text of at most 40 characters)" },
    });
    let properties: serde_json::Map<String, Value> = missing.iter().map(|name| (name.to_string(), all[name].clone())).collect();
    json!({
        "mode": "form",
        "message": format!("The prompt announce needs: {}", missing.join(", ")),
        "requestedSchema": { "type": "object", "properties": properties, "required": missing }
    })
}

fn accept(content: Value) -> Value {
    json!({ "arguments": { "action": "accept", "content": content } })
}

fn retry(server: &mut Server, arguments: Value, responses: Value, state: &str) -> Value {
    server.request(
        "prompts/get",
        json!({ "name": "announce", "arguments": arguments, "inputResponses": responses, "requestState": state, "_meta": support::elicitation_2026() }),
    )
}

#[test]
fn a_2026_client_is_asked_for_the_missing_arguments_with_a_form_of_their_kinds() {
    let (_dir, mut server) = serve(&["typed_arguments"]);
    let asked = server
        .result("prompts/get", json!({ "name": "announce", "arguments": { "tone": "casual" }, "_meta": support::elicitation_2026() }));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = announce_form(&["count", "ratio", "urgent", "headline"]);
    assert_eq!(asked["inputRequests"], json!({ "arguments": { "method": "elicitation/create", "params": form } }));
    let state = asked["requestState"].as_str().unwrap();

    // The answers reach the pack as arguments, beside the client's and the default.
    let answers = accept(json!({ "count": 3, "ratio": 0.5, "urgent": true, "headline": "Launch day" }));
    let done = retry(&mut server, json!({ "tone": "casual" }), answers, state);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(only_text(&done["result"]), "channel=general\ncount=3\nheadline=Launch day\nratio=0.5\ntone=casual\nurgent=true");

    // Answers are checked as arguments are: out of bounds is -32602, the pack not called.
    let answers = accept(json!({ "count": 11, "ratio": 0.5, "urgent": false, "headline": "x" }));
    let refused = retry(&mut server, json!({ "tone": "casual" }), answers, state);
    assert_eq!(
        refused["error"],
        json!({
            "code": -32602,
            "message": "prompt 'announce': argument 'count' must be an integer from 1 to 10, not \"11\"",
            "data": { "prompt": "announce", "argument": "count", "expected": "an integer from 1 to 10" }
        })
    );
    // A value of the wrong kind for the field is refused naming the field.
    let answers = accept(json!({ "count": "three", "ratio": 0.5, "urgent": false, "headline": "x" }));
    let refused = retry(&mut server, json!({ "tone": "casual" }), answers, state);
    assert_eq!(
        refused["error"]["message"],
        "prompt 'announce': inputResponses[\"arguments\"]: field \"count\" must be a whole number, not a string",
        "{refused}"
    );

    // A long answer is an argument like any other: its kind refuses it.
    let long = "x".repeat(70_000);
    let answers = accept(json!({ "count": 3, "ratio": 0.5, "urgent": true, "headline": long }));
    let refused = retry(&mut server, json!({ "tone": "casual" }), answers, state);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("prompt 'announce': argument 'headline' must be text of at most 40 characters, not \"xxx"),
        "{refused}"
    );

    // Declined: the arguments are still missing, and the host does not ask again.
    let declined = retry(&mut server, json!({ "tone": "casual" }), json!({ "arguments": { "action": "decline" } }), state);
    assert_eq!(
        declined["error"],
        json!({
            "code": -32602,
            "message": "prompt 'announce' is missing required arguments: count, ratio, urgent, headline",
            "data": { "prompt": "announce", "missing": ["count", "ratio", "urgent", "headline"] }
        })
    );

    // The state is bound to the arguments the client sent: other arguments are refused.
    let answers = accept(json!({ "count": 3, "ratio": 0.5, "urgent": true, "headline": "x" }));
    let moved = retry(&mut server, json!({ "tone": "formal" }), answers, state);
    assert_eq!(moved["error"]["code"], -32602, "{moved}");
    assert!(moved["error"]["message"].as_str().unwrap().contains("the requestState was not issued by this server"), "{moved}");
}

#[test]
fn the_answers_to_the_hosts_form_ride_along_sealed_when_the_pack_then_asks_for_more() {
    let (_dir, mut server) = serve(&["typed_arguments"]);
    let get = |server: &mut Server, extra: Value| {
        let mut params = json!({ "name": "confirm", "arguments": {}, "_meta": support::elicitation_2026() });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        server.result("prompts/get", params)
    };
    // Round 1: the host's form for `tone`.
    let first = get(&mut server, json!({}));
    assert_eq!(first["inputRequests"]["arguments"]["params"]["message"], "The prompt confirm needs: tone", "{first}");
    // Round 2: the client sends its own arguments again (none), the state and
    // the answer; the pack, given tone, asks for more: its own form.
    let answers = json!({ "arguments": { "action": "accept", "content": { "tone": "casual" } } });
    let second = get(&mut server, json!({ "inputResponses": answers, "requestState": first["requestState"] }));
    assert_eq!(second["inputRequests"]["sure"]["params"]["message"], "Sure?", "{second}");
    // Round 3: the pack's answer; `tone` came along in the state, not from the client.
    let answers = json!({ "sure": { "action": "accept", "content": { "sure": true } } });
    let third = get(&mut server, json!({ "inputResponses": answers, "requestState": second["requestState"] }));
    assert_eq!(third["resultType"], "complete", "{third}");
    assert_eq!(only_text(&third), "sure=true\ntone=casual");
    // A state of round 2 is the pack's form: answering it as the host's is no answer, so it is asked again.
    let wrong = json!({ "arguments": { "action": "accept", "content": { "tone": "formal" } } });
    let again = get(&mut server, json!({ "inputResponses": wrong, "requestState": second["requestState"] }));
    assert_eq!(again["inputRequests"], second["inputRequests"], "{again}");
}

#[test]
fn values_the_client_passed_are_checked_before_any_form_and_a_url_only_client_is_not_asked() {
    let (_dir, mut server) = serve(&["typed_arguments"]);
    // A bad `count` is refused at once, though `headline` and others are missing.
    let refused =
        server.error("prompts/get", json!({ "name": "announce", "arguments": { "count": "99" }, "_meta": support::elicitation_2026() }));
    assert_eq!(refused["message"], "prompt 'announce': argument 'count' must be an integer from 1 to 10, not \"99\"");
    // A client that declared only URL elicitation cannot fill in a form.
    let url_only = support::meta_2026(json!({ "elicitation": { "url": {} } }));
    let missing = server.error("prompts/get", json!({ "name": "announce", "arguments": {}, "_meta": url_only }));
    assert_eq!(missing["message"], "prompt 'announce' is missing required arguments: tone, count, ratio, urgent, headline");
}

#[test]
fn a_client_that_cannot_be_asked_and_a_prompt_that_did_not_opt_in_get_the_missing_arguments_refused() {
    let (_dir, mut server) = serve(&["typed_arguments"]);
    // A 2026-07-28 client without elicitation.
    let cannot = server.error("prompts/get", json!({ "name": "announce", "arguments": {}, "_meta": support::meta_2026(json!({})) }));
    assert_eq!(
        cannot,
        json!({
            "code": -32602,
            "message": "prompt 'announce' is missing required arguments: tone, count, ratio, urgent, headline",
            "data": { "prompt": "announce", "missing": ["tone", "count", "ratio", "urgent", "headline"] }
        })
    );
    // `report` did not opt in: refused even for a client that can be asked.
    let report = server.error("prompts/get", json!({ "name": "report", "arguments": {}, "_meta": support::elicitation_2026() }));
    assert_eq!(report["message"], "prompt 'report' is missing required arguments: count");
    // Every argument given: no form, the pack answers at once.
    let arguments = json!({ "tone": "formal", "count": "2", "ratio": "1", "urgent": "false", "headline": "Hi" });
    let done = server.result("prompts/get", json!({ "name": "announce", "arguments": arguments, "_meta": support::elicitation_2026() }));
    assert_eq!(only_text(&done), "channel=general\ncount=2\nheadline=Hi\nratio=1\ntone=formal\nurgent=false");
}

#[test]
fn an_earlier_client_with_elicitation_is_asked_over_its_session() {
    let (_dir, mut server) = serve(&["typed_arguments"]);
    server.initialize_with("2025-11-25", json!({ "elicitation": {} }));
    let id =
        server.send_request("prompts/get", json!({ "name": "announce", "arguments": { "count": "4", "ratio": "0", "urgent": "true" } }));
    let asked = server.server_request("elicitation/create");
    let mut params = asked["params"].clone();
    params.as_object_mut().unwrap().remove("_meta");
    assert_eq!(params, announce_form(&["tone", "headline"]));
    let answer = json!({ "action": "accept", "content": { "tone": "formal", "headline": "Over the session" } });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": answer }));
    let done = server.response(id);
    assert_eq!(
        only_text(&done["result"]),
        "channel=general\ncount=4\nheadline=Over the session\nratio=0\ntone=formal\nurgent=true",
        "{done}"
    );

    // A choice that is not among the form's is refused naming the field.
    let id =
        server.send_request("prompts/get", json!({ "name": "announce", "arguments": { "count": "4", "ratio": "0", "urgent": "true" } }));
    let asked = server.server_request("elicitation/create");
    let answer = json!({ "action": "accept", "content": { "tone": "shouty", "headline": "x" } });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": answer }));
    let refused = server.response(id);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "prompt 'announce': inputResponses[\"arguments\"]: field \"tone\" must be one of \"formal\", \"casual\", not \"shouty\""
    );

    // Cancelled: refused as missing.
    let id =
        server.send_request("prompts/get", json!({ "name": "announce", "arguments": { "count": "4", "ratio": "0", "urgent": "true" } }));
    let asked = server.server_request("elicitation/create");
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "cancel" } }));
    let cancelled = server.response(id);
    assert_eq!(cancelled["error"]["message"], "prompt 'announce' is missing required arguments: tone, headline", "{cancelled}");
}

#[test]
fn the_get_command_asks_for_missing_arguments_and_takes_answers() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["get", built_plugin("typed_arguments").to_str().unwrap(), "announce", "tone=formal", "headline=From the command"])
        .args(["--answer", "count=5", "--answer", "ratio=0.25", "--answer", "urgent=false"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(only_text(&result), "channel=general\ncount=5\nheadline=From the command\nratio=0.25\ntone=formal\nurgent=false");
}

#[test]
fn a_pack_built_against_0_3_0_is_served_unchanged() {
    let (_dir, mut server) = serve(&["pack_0_3_0"]);
    let listed = server.result("prompts/list", json!({ "_meta": support::elicitation_2026() }));
    assert_eq!(listed["prompts"][0]["name"], "older");
    assert_eq!(listed["prompts"][0]["arguments"][0]["description"], "(one of: formal, casual)");
    let done =
        server.result("prompts/get", json!({ "name": "older", "arguments": { "tone": "casual" }, "_meta": support::elicitation_2026() }));
    assert_eq!(only_text(&done), "tone=casual");
    let refused =
        server.error("prompts/get", json!({ "name": "older", "arguments": { "tone": "loud" }, "_meta": support::elicitation_2026() }));
    assert_eq!(refused["message"], "prompt 'older': argument 'tone' must be one of: formal, casual, not \"loud\"");
    // No `asking`: a missing argument is refused even for a client that can be asked.
    let missing = server.error("prompts/get", json!({ "name": "older", "arguments": {}, "_meta": support::elicitation_2026() }));
    assert_eq!(missing["message"], "prompt 'older' is missing required arguments: tone");
    assert!(server.stderr().contains("plugin loaded plugin=pack_0_3_0 prompts=1"), "{}", server.stderr());
    assert!(server.stderr().contains("wit=\"0.3\""), "{}", server.stderr());
}
