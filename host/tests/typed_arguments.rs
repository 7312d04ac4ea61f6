//! Typed prompt arguments (WIT 0.3) over the real binary: the host checks
//! every declared value before the pack runs (the exact -32602 refusals),
//! fills in defaults, completes choices and booleans without running the
//! pack (its `complete` traps), and lists each prompt's arguments with a
//! hint in their descriptions and their JSON Schema in the prompt's
//! `_meta`. A pack whose declarations break a bound is refused at load.

mod support;

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text, serve_plugins};

fn report_error(server: &mut Server, arguments: Value) -> Value {
    server.error("prompts/get", json!({ "name": "report", "arguments": arguments }))
}

/// `prompt-host inspect` of the built fixture `fixture`: its exit status and report.
fn inspect(fixture: &str) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["inspect", built_plugin(fixture).to_str().unwrap()])
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8(output.stdout).unwrap())
}

#[test]
fn every_kind_refuses_what_it_does_not_take_before_the_pack_runs() {
    let (_dir, mut server) = serve_plugins(&["typed_arguments"], &[]);
    let cases = [
        ("count", "eleven", "an integer from 1 to 10"),
        ("count", "11", "an integer from 1 to 10"),
        ("count", "+3", "an integer from 1 to 10"),
        ("ratio", "1.5", "a number from 0 to 1"),
        ("ratio", "NaN", "a number from 0 to 1"),
        ("verbose", "yes", "true or false"),
        ("tone", "Formal", "one of: formal, casual, friendly"),
        ("title", "Quarterly report 2026", "text of at most 20 characters matching the pattern \"[A-Za-z ]+\""),
        ("title", "a\u{1b}[2J", "text of at most 20 characters matching the pattern \"[A-Za-z ]+\""),
        ("source", "http://example.com/a.py", "an absolute URI of scheme https or file"),
        ("source", "src/a.py", "an absolute URI of scheme https or file"),
    ];
    for (argument, value, expected) in cases {
        let mut arguments = json!({ "count": "3" });
        arguments[argument] = json!(value);
        let shown = value.replace('\u{1b}', "\\u{1b}");
        assert_eq!(
            report_error(&mut server, arguments),
            json!({
                "code": -32602,
                "message": format!("prompt 'report': argument '{argument}' must be {expected}, not \"{shown}\""),
                "data": { "prompt": "report", "argument": argument, "expected": expected },
            }),
            "{argument}={value:?}"
        );
    }
    // A long value is quoted back cut.
    let long = "x".repeat(10_000);
    let error = report_error(&mut server, json!({ "count": long }));
    assert_eq!(
        error["message"],
        format!(
            "prompt 'report': argument 'count' must be an integer from 1 to 10, not \"{}... [cut by prompt-host: 9744 more bytes]\"",
            "x".repeat(256)
        )
    );
    // A required argument left out is still named as missing.
    assert_eq!(report_error(&mut server, json!({}))["message"], "prompt 'report' is missing required arguments: count");
}

#[test]
fn defaults_fill_in_and_values_of_their_kind_reach_the_pack_as_written() {
    let (_dir, mut server) = serve_plugins(&["typed_arguments"], &[]);
    assert_eq!(only_text(&server.get_prompt("report", json!({ "count": "3" }))), "count=3\ntone=formal");
    let arguments = json!({
        "count": "10", "ratio": "1e-1", "verbose": "false", "tone": "casual",
        "title": "Weekly", "source": "file:///srv/app/main.py", "free": "anything at all",
    });
    assert_eq!(
        only_text(&server.get_prompt("report", arguments)),
        "count=10\nfree=anything at all\nratio=1e-1\nsource=file:///srv/app/main.py\ntitle=Weekly\ntone=casual\nverbose=false"
    );
}

#[test]
fn choices_and_booleans_are_completed_by_the_host_and_the_rest_by_the_pack() {
    let (_dir, mut server) = serve_plugins(&["typed_arguments"], &[]);
    let mut complete = |argument: &str, value: &str| {
        server.request(
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "report" }, "argument": { "name": argument, "value": value } }),
        )
    };
    assert_eq!(
        complete("tone", "f")["result"],
        json!({ "completion": { "values": ["formal", "friendly"], "total": 2, "hasMore": false } })
    );
    assert_eq!(complete("tone", "")["result"]["completion"]["values"], json!(["formal", "casual", "friendly"]));
    assert_eq!(complete("tone", "x")["result"], json!({ "completion": { "values": [], "total": 0, "hasMore": false } }));
    assert_eq!(complete("verbose", "")["result"], json!({ "completion": { "values": ["true", "false"], "total": 2, "hasMore": false } }));
    // Any other argument is the pack's to complete: this one's traps.
    let error = &complete("count", "1")["error"];
    assert_eq!((error["code"].clone(), error["data"]["failure"].clone()), (json!(-32603), json!("panic")), "{error}");
}

/// What a URI may hold after its scheme, as the schema publishes it.
const URI_REST: &str = r"[^\x00-\x20\x7F-\u00A0\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u1680\u180E\u2000-\u200F\u2028-\u202F\u205F-\u2064\u2066-\u206F\u3000\uFEFF\uFFF9-\uFFFB𑂽𑃍𓐰-𓐿𛲠-𛲣𝅳-𝅺󠀁󠀠-󠁿]+";

#[test]
fn each_argument_is_listed_with_a_hint_and_its_schema_in_the_prompts_meta() {
    let (_dir, mut server) = serve_plugins(&["typed_arguments"], &[]);
    let listed = server.result("prompts/list", json!({}));
    let report = &listed["prompts"][0];
    let described: Vec<(String, Value)> = report["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| (argument["description"].as_str().unwrap().to_string(), argument["required"].clone()))
        .collect();
    assert_eq!(
        described,
        [
            ("The tone (one of: formal, casual, friendly; default formal)".to_string(), json!(false)),
            ("The count (an integer from 1 to 10)".to_string(), json!(true)),
            ("The ratio (a number from 0 to 1)".to_string(), json!(false)),
            ("The verbose (true or false)".to_string(), json!(false)),
            ("The title (text of at most 20 characters matching the pattern \"[A-Za-z ]+\")".to_string(), json!(false)),
            ("The source (an absolute URI of scheme https or file)".to_string(), json!(false)),
            ("The free".to_string(), json!(false)),
        ]
    );
    assert_eq!(
        report["_meta"]["prompt-host/arguments"],
        json!({
            "type": "object",
            "properties": {
                "tone": { "type": "string", "enum": ["formal", "casual", "friendly"], "default": "formal" },
                "count": { "type": "integer", "minimum": 1, "maximum": 10, "examples": [3] },
                "ratio": { "type": "number", "minimum": 0.0, "maximum": 1.0 },
                "verbose": { "type": "boolean" },
                // Published so that ECMA-262 and Python's re read it as the host does.
                "title": { "type": "string", "maxLength": 20, "pattern": r"^(?:[\x20A-Za-z]+)(?![\s\S])" },
                // Either case of the schemes, then no white space, control or format character.
                "source": { "type": "string", "pattern": format!(r"^(?:(?:[Hh][Tt][Tt][Pp][Ss]|[Ff][Ii][Ll][Ee])\x3A{URI_REST})(?![\s\S])") },
                "free": { "type": "string" },
            },
            "required": ["count"],
        })
    );
    assert_eq!(report["_meta"]["prompt-host/plugin"], "typed_arguments");
}

#[test]
fn a_pack_whose_declarations_break_a_bound_is_refused_at_load_naming_each() {
    let (status, report) = inspect("hostile_kinds");
    assert_eq!(status, Some(1));
    for problem in [
        "1. wanted folder \"../etc\" is not a name such as \"logs\"",
        "2. wanted origin \"ftp://x\" is not an https: or http: URL with a host, and no user, query or fragment",
        "3. prompt \"bad\", argument \"many\": 101 choices: declare from 1 to 100",
        "4. prompt \"bad\", argument \"pattern\": pattern is not an ECMA-262 pattern the host can publish: it has a group that is never closed (at character 2)",
        "5. prompt \"bad\", argument \"huge\": pattern compiles to more than 262144 bytes",
        "6. prompt \"bad\", argument \"flag\": pattern is not an ECMA-262 pattern the host can publish: it has an inline flag or another `(?` form, which ECMA-262 does not have (at character 3)",
        "7. prompt \"bad\", argument \"greek\": pattern is not an ECMA-262 pattern the host can publish: it uses a Unicode property (\\p or \\P), which Python's re does not have (at character 3)",
        "8. prompt \"bad\", argument \"posix\": pattern is not an ECMA-262 pattern the host can publish: it has a lone ']' (the `u` flag refuses it: write \\]) (at character 11)",
        "9. prompt \"bad\", argument \"bounds\": min 5 is more than max 1",
        "10. prompt \"bad\", argument \"past\": min 1152921504606846976 is more than the greatest integer the host takes, 9007199254740991",
        "11. prompt \"bad\", argument \"below\": max -1152921504606846976 is less than the least integer the host takes, -9007199254740991",
        "12. prompt \"bad\", argument \"nan\": a bound is not a finite number",
        "13. prompt \"bad\", argument \"default\": default \"yes\" is not true or false",
    ] {
        assert!(report.contains(problem), "{problem} in:\n{report}");
    }
    assert!(report.contains("this host would refuse it (13 problems)"), "{report}");
}

#[test]
fn inspect_shows_what_a_pack_wants_and_that_none_of_it_is_granted() {
    let (status, report) = inspect("typed_arguments");
    assert_eq!(status, Some(0));
    let wants = "    wants    folder logs: recent log lines\n             origin https://api.example.com/v1/\n             value API_TOKEN\n\
                 \x20 granted   nothing (no folder, value or network)\n\
                 \x20 withheld  it asks for origin https://api.example.com/v1/, which is not granted (grant it with http = [\"https://api.example.com/v1/\"] in [plugins.typed_arguments.grants])\n\
                 \x20           it asks for folder 'logs', which is not granted (grant it with logs = \"/path/on/the/host\" in [plugins.typed_arguments.grants.folders])\n\
                 \x20           it asks for value 'API_TOKEN', which is not granted (grant it with API_TOKEN = { file = \"/path/to/secret\" } in [plugins.typed_arguments.grants.env])\n";
    assert!(report.contains(wants), "{report}");
    // Completions of a choice come from the declaration; the pack's complete traps.
    assert!(report.contains("      - tone (optional) The tone (one of: formal, casual, friendly; default formal)\n          completes to: formal, casual, friendly\n"), "{report}");
}
