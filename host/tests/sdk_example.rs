//! The example pack on WIT 0.2 built with the Rust SDK
//! (`plugins/writing-assistant`), over the real binary: its template prompt
//! asks for the arguments a client left out, its code prompt asks with one
//! form of typed fields and state of its own; each retry with the answers
//! gets the final messages. `inspect` reports its WIT version and what it
//! says it is (from its Cargo.toml, through the SDK).

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text, plugin_dir};

const PLUGIN: &str = "writing_assistant";

fn serve() -> (tempfile::TempDir, Server) {
    let dir = plugin_dir(&[PLUGIN]);
    let server = Server::spawn(&["--plugins", dir.path().to_str().unwrap()]);
    (dir, server)
}

fn get(server: &mut Server, name: &str, arguments: Value) -> Value {
    server.result("prompts/get", json!({ "name": name, "arguments": arguments, "_meta": support::elicitation_2026() }))
}

fn retry(server: &mut Server, name: &str, arguments: Value, responses: Value, state: &Value) -> Value {
    server.result(
        "prompts/get",
        json!({
            "name": name, "arguments": arguments, "inputResponses": responses, "requestState": state,
            "_meta": support::elicitation_2026()
        }),
    )
}

fn elicitation_request(message: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties, "required": required }
        }
    })
}

#[test]
fn a_template_prompt_asks_for_what_the_client_left_out_then_answers_the_retry() {
    let (_dir, mut server) = serve();
    // The language is given but is not one of the choices: asked for too.
    let arguments = json!({ "language": "Klingon" });
    let first = get(&mut server, "translate", arguments.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(
        first["inputRequests"],
        json!({
            "text": elicitation_request(
                "What text should be translated?",
                json!({ "text": { "type": "string", "description": "The text to translate" } }),
                &["text"],
            ),
            "language": elicitation_request(
                "Into which language?",
                json!({ "language": {
                    "type": "string",
                    "enum": ["English", "French", "German", "Spanish"],
                    "description": "The language to translate into"
                } }),
                &["language"],
            )
        })
    );
    let responses = json!({
        "text": { "action": "accept", "content": { "text": "Bonjour" } },
        "language": { "action": "accept", "content": { "language": "German" } }
    });
    let done = retry(&mut server, "translate", arguments, responses, &first["requestState"]);
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(only_text(&done), "Translate this text into German:\n\nBonjour");

    // Given everything, it answers at once.
    let at_once = get(&mut server, "translate", json!({ "text": "Hello", "language": "French" }));
    assert_eq!(only_text(&at_once), "Translate this text into French:\n\nHello");
}

#[test]
fn a_code_prompt_asks_with_a_form_of_typed_fields_and_its_state_comes_back() {
    let (_dir, mut server) = serve();
    let arguments = json!({ "topic": "the launch" });
    let first = get(&mut server, "draft_email", arguments.clone());
    assert_eq!(
        first["inputRequests"],
        json!({
            "email": elicitation_request(
                "Who is the email for, and how should it read?",
                json!({
                    "recipient": { "type": "string", "title": "Recipient", "description": "Whom the email is to" },
                    "tone": {
                        "type": "string", "enum": ["friendly", "formal"], "default": "friendly",
                        "description": "How it should sound"
                    },
                    "words": { "type": "integer", "default": 150, "description": "About how many words" },
                    "sign_off": { "type": "boolean", "default": true, "description": "Whether to end with a sign-off" }
                }),
                &["recipient", "tone"],
            )
        })
    );
    let responses = json!({
        "email": { "action": "accept", "content": { "recipient": "Ada", "tone": "formal", "words": 80, "sign_off": false } }
    });
    // The pack checks that its state came back unchanged, and reads every kind of value.
    let done = retry(&mut server, "draft_email", arguments.clone(), responses, &first["requestState"]);
    assert_eq!(done["description"], "Email draft", "{done}");
    assert_eq!(only_text(&done), "Draft a formal email of about 80 words to Ada about the launch.");

    // Optional fields left out take the pack's defaults.
    let responses = json!({ "email": { "action": "accept", "content": { "recipient": "Grace", "tone": "friendly" } } });
    let done = retry(&mut server, "draft_email", arguments.clone(), responses, &first["requestState"]);
    assert_eq!(only_text(&done), "Draft a friendly email of about 150 words to Grace about the launch. End it with a sign-off.");

    // Declined: the pack refuses, and the client is told why.
    let declined = server.request(
        "prompts/get",
        json!({
            "name": "draft_email", "arguments": arguments, "requestState": first["requestState"],
            "inputResponses": { "email": { "action": "decline" } }, "_meta": support::elicitation_2026()
        }),
    );
    assert_eq!(declined["error"]["code"], -32602, "{declined}");
    assert_eq!(
        declined["error"]["message"],
        "plugin 'writing_assistant' rejected the arguments of prompt 'draft_email': an email needs a recipient, and \
         the user declined to give one"
    );
    // A client's mistake, not the pack's failure: logged at info, naming the prompt.
    let log = server.wait_for_stderr("arguments refused by the plugin");
    let line = log.lines().find(|line| line.contains("arguments refused by the plugin")).unwrap();
    assert!(line.contains(" INFO ") && line.contains("prompt=\"draft_email\"") && line.contains("plugin=\"writing_assistant\""), "{line}");
    assert!(!log.contains("plugin call failed"), "{log}");
}

#[test]
fn inspect_reports_wit_0_2_and_what_the_pack_says_it_is() {
    let path = built_plugin(PLUGIN);
    let output = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .env("RUST_LOG", "off")
        .env("XDG_CACHE_HOME", std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .args(["inspect", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["witVersion"], "0.2.0");
    assert_eq!(report["exports"], json!(["prompt-host:prompts/prompt-provider@0.2.0"]));
    assert_eq!(
        report["pack"],
        json!({
            "name": "writing-assistant",
            "version": "0.2.0",
            "description": "Example pack on WIT 0.2: prompts that ask the user for what they need",
            "authors": ["prompt-host developers"],
            "license": "Apache-2.0",
            "homepage": null,
            "repository": "https://github.com/prompt-host/prompt-host"
        })
    );
    let names: Vec<&str> = report["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["translate", "draft_email"]);
    // Asked-for arguments are optional to clients: the host would refuse a
    // request without a required one before the pack could ask.
    assert_eq!(report["prompts"][0]["arguments"][0], json!({ "name": "text", "description": "The text to translate", "required": false }));
}
