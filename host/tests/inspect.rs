//! `prompt-host inspect` on valid and invalid files, and `prompt-host get`.

mod support;

use std::process::{Command, Output};

use serde_json::{Value, json};
use support::built_plugin;

/// `prompt-host` with the log off, and the compiled cache (which inspect,
/// get and complete share with serve) out of the user's home.
fn prompt_host() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command.env("RUST_LOG", "off").env("XDG_CACHE_HOME", std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"));
    command
}

fn inspect(path: &std::path::Path, options: &[&str]) -> Output {
    prompt_host().arg("inspect").arg(path).args(options).output().unwrap()
}

fn json_report(path: &std::path::Path) -> (Option<i32>, Value) {
    let output = inspect(path, &["--json"]);
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("not JSON ({error}): {}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code(), report)
}

#[test]
fn a_valid_pack_is_described_as_json() {
    let path = built_plugin("code_review");
    let (status, report) = json_report(&path);
    assert_eq!(status, Some(0));
    assert_eq!(report["plugin"], "code_review");
    assert_eq!(report["file"], path.display().to_string());
    assert_eq!(report["sizeBytes"], std::fs::metadata(&path).unwrap().len());
    assert_eq!(report["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["exports"], json!(["prompt-host:prompts/prompt-provider@0.1.0"]));
    assert_eq!(report["witVersion"], "0.1.0");
    assert_eq!(report["pack"], json!(null));
    assert!(report["imports"].as_array().unwrap().iter().all(|i| i.as_str().unwrap().starts_with("wasi:")));
    assert_eq!(report["limits"]["fuel"], 500_000_000);
    assert!(report["compileMs"].as_f64().unwrap() > 0.0);
    // Listing ran the pack: it burned some fuel, and held whole 64 KiB pages.
    let fuel = report["listing"]["fuel"].as_u64().unwrap();
    assert!(fuel > 0 && fuel < 500_000_000, "{fuel}");
    let memory = report["listing"]["peakMemoryBytes"].as_u64().unwrap();
    assert!(memory > 0 && memory % 65536 == 0, "{memory}");
    assert_eq!(report["problems"], json!([]));
    assert_eq!(
        report["prompts"],
        json!([{
            "name": "code_review",
            "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{ "name": "code", "description": "The code to review", "required": true }]
        }])
    );
}

#[test]
fn a_valid_pack_is_described_for_people_by_default() {
    let path = built_plugin("code_review");
    let output = inspect(&path, &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "code_review: a prompt pack this host can load");
    assert_eq!(lines[1], format!("  file      {}", path.display()));
    assert!(lines.iter().any(|line| line.starts_with("  exports   prompt-host:prompts/prompt-provider@0.1.0")));
    assert!(lines.contains(&"  wit       prompt-host:prompts 0.1.0"), "{text}");
    assert!(lines.iter().any(|line| line.starts_with("  compile   ") && line.ends_with(" ms")));
    let listing = lines.iter().find(|line| line.starts_with("  listing   fuel ")).unwrap();
    assert!(listing.contains(" of 500,000,000, memory ") && listing.ends_with(" of 1000 ms"), "{listing}");
    assert_eq!(
        lines[lines.len() - 4..],
        [
            "  prompts   1",
            "    code_review: Request Code Review",
            "      Asks the LLM to analyze code quality and suggest improvements",
            "      - code (required) The code to review",
        ]
    );
}

#[test]
fn every_invalid_definition_is_reported_with_a_hint() {
    let path = built_plugin("hostile_bad_definitions");
    let (status, report) = json_report(&path);
    assert_eq!(status, Some(1));
    let names = "use a name a client can type and send back, such as \"code-review\" or \"code_review\"";
    let unique = "give each prompt, and each argument of one prompt, a name of its own";
    assert_eq!(
        report["problems"],
        json!([
            { "problem": "prompt \"twice\": declared more than once", "hint": unique },
            {
                "problem": "prompt \"two words\": name contains ' ', and names may hold no whitespace or control characters",
                "hint": names
            },
            { "problem": "prompt \"two words\", argument \"x\": declared more than once", "hint": unique },
            {
                "problem": "prompt \"two words\", icon 0: src \"icon.png\" is not a URI (relative URL without a base)",
                "hint": "use an absolute URI, such as https://example.com/icon.png or a data: URI"
            },
            {
                "problem": "prompt \"two words\", icon 0: mime type \"text/plain\" does not start with image/",
                "hint": "use an image media type, such as image/png or image/svg+xml"
            },
        ])
    );
    // What it declared is still shown, to help find the mistakes.
    let declared: Vec<&str> = report["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(declared, ["twice", "twice", "two words"]);

    let output = inspect(&path, &[]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("hostile_bad_definitions: this host would refuse it (5 problems)\n"), "{text}");
    assert!(text.contains(&format!("  problems\n    1. prompt \"twice\": declared more than once\n       hint: {unique}\n")), "{text}");
}

/// The report of a file the server would refuse: the one problem, with its
/// hint, on stdout, and on stderr the reason it failed.
fn assert_refused(path: &std::path::Path, problem: &str, hint: Option<&str>) {
    let (status, report) = json_report(path);
    assert_eq!(status, Some(1));
    assert_eq!(report["problems"].as_array().unwrap().len(), 1, "{report}");
    let found = report["problems"][0]["problem"].as_str().unwrap();
    assert!(found.starts_with(problem), "expected {problem:?}, got {found:?}");
    assert_eq!(report["problems"][0]["hint"].as_str(), hint);

    let output = inspect(path, &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!("error: {}: the server would refuse this plugin: {problem}", path.display());
    assert!(stderr.starts_with(&expected), "expected {expected:?}, got {stderr:?}");
}

#[test]
fn a_file_that_is_not_webassembly_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.wasm");
    std::fs::write(&path, "hello").unwrap();
    assert_refused(
        &path,
        "not a WebAssembly file: it does not start with the \\0asm magic bytes",
        Some("a pack is the .wasm file a build for wasm32-wasip2 (or jco, or componentize-py) produces"),
    );
}

#[test]
fn a_core_module_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("core.wasm");
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    assert_refused(
        &path,
        "a core WebAssembly module, not a component",
        Some("build the pack for the wasm32-wasip2 target, or wrap the module with `wasm-tools component new`"),
    );
}

#[test]
fn a_truncated_component_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.wasm");
    let bytes = std::fs::read(built_plugin("code_review")).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(
        &path,
        "not a valid WebAssembly component: ",
        Some(
            "the file may be truncated or corrupt (build it again and copy it whole), \
             or use a WebAssembly feature this host does not enable (the message names it)",
        ),
    );
}

#[test]
fn a_component_of_another_world_is_refused() {
    assert_refused(
        &built_plugin("wrong_world"),
        "does not export prompt-host:prompts/prompt-provider (version 0.1.x, 0.2.x, 0.3.x or 0.4.x; it exports: fixture:greeter/greet@0.1.0)",
        Some("build it against the prompt-pack world of the prompt-host WIT package (`prompt-host new` sets that up)"),
    );
}

#[test]
fn a_pack_that_fails_while_listing_is_refused() {
    let output = prompt_host().args(["inspect", "--json", "--fuel", "2000000"]).arg(built_plugin("hostile_list_loop")).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["problems"],
        json!([{
            "problem": "failed while listing its prompts: it exceeded its fuel budget (2000000 units)",
            "hint": "list-prompts runs once at load, under the pack's limits: return the declarations and do no other \
                     work there; a pack with a large runtime (JavaScript, Python) may need plugins.NAME.limits raised"
        }])
    );
    assert_eq!(report["listing"], Value::Null);
}

#[test]
fn a_template_naming_no_argument_is_reported_at_load() {
    assert_refused(
        &built_plugin("template_mistake"),
        "failed while listing its prompts: it panicked: template of prompt 'greet' uses {nmae}, \
         which is not one of its arguments (at template-mistake/src/lib.rs:10:14)",
        Some(
            "list-prompts must not fail: fix what the message says \
             (the SDK's template packs report mistakes in their templates this way)",
        ),
    );
}

#[test]
fn the_config_file_gives_the_plugin_its_prefix_limits_and_pin() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    let pinned = "0".repeat(64);
    std::fs::write(&config, format!("[plugins.code_review]\nprefix = \"team-\"\nlimits = {{ fuel = 123456 }}\nsha256 = \"{pinned}\"\n"))
        .unwrap();
    let config_option = ["--json", "--config", config.to_str().unwrap()];
    let inspect_configured = || inspect(&built_plugin("code_review"), &config_option);
    // As with serve, the plugin's own limits apply over the command line's.
    let with_fuel_option = inspect(&built_plugin("code_review"), &[&config_option[..], &["--fuel", "999", "--deadline-ms", "77"]].concat());
    let report: Value = serde_json::from_slice(&with_fuel_option.stdout).unwrap();
    assert_eq!((&report["limits"]["fuel"], &report["limits"]["deadlineMs"]), (&json!(123456), &json!(77)));
    let output = inspect_configured();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["limits"]["fuel"], 123456);
    let actual = report["sha256"].as_str().unwrap();
    assert_eq!(
        report["problems"],
        json!([{
            "problem": format!("its SHA-256 is {actual}, but the configuration pins it to {pinned}"),
            "hint": "if this file is the one you mean to serve, pin its new SHA-256 in plugins.NAME.sha256"
        }])
    );

    // Pinned right, it loads, and its prompts are listed under the prefix.
    std::fs::write(&config, format!("[plugins.code_review]\nprefix = \"team-\"\nsha256 = \"{actual}\"\n")).unwrap();
    let output = inspect_configured();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["prompts"][0]["name"], "team-code_review");
}

#[test]
fn a_missing_file_is_refused() {
    let output = inspect(std::path::Path::new("/nonexistent/pack.wasm"), &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: /nonexistent/pack.wasm: cannot read it: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_pack_built_against_another_wit_version_is_refused() {
    assert_refused(
        &built_plugin("future_version"),
        "is built against version 0.9.0 of the prompt-host:prompts WIT package, and this host accepts 0.1.x, 0.2.x, 0.3.x or 0.4.x",
        Some("rebuild it against the WIT package this host ships"),
    );
}

fn get(args: &[&str]) -> Output {
    prompt_host().arg("get").args(args).output().unwrap()
}

#[test]
fn get_runs_one_prompt_without_a_client() {
    let pack = built_plugin("dev_assistant");
    let output = get(&[pack.to_str().unwrap(), "explain-code", "code=fn main() {}", "language=rust"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result,
        json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Explain how this rust code works:\n\nfn main() {}" } }] })
    );
}

#[test]
fn get_reports_a_failing_prompt_and_exits_1() {
    let pack = built_plugin("dev_assistant");
    let output = get(&[pack.to_str().unwrap(), "explain-code"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&output.stderr), "error: prompt 'explain-code' is missing required arguments: code\n");
}

#[test]
fn get_names_the_closest_prompt_and_lists_the_packs_prompts() {
    let pack = built_plugin("dev_assistant");
    let output = get(&[pack.to_str().unwrap(), "explain-cod", "code=x"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: unknown prompt 'explain-cod' (did you mean 'explain-code'?); {} serves: git-commit, explain-code, debug-error\n",
            pack.display()
        )
    );
}

#[test]
fn get_warns_of_arguments_not_declared_and_given_twice() {
    let pack = built_plugin("dev_assistant");
    let output = get(&[pack.to_str().unwrap(), "explain-code", "code=first", "lang=rust", "code=fn main() {}"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "warning: prompt 'explain-code' declares no argument 'lang' (it declares: code, language)\n\
         warning: argument 'code' is given more than once: the last value is used\n"
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["messages"][0]["content"]["text"], "Explain how this unknown code works:\n\nfn main() {}");
}

#[test]
fn inspect_json_of_a_missing_file_prints_a_json_error_and_exits_1() {
    let output = inspect(std::path::Path::new("/no/such/pack.wasm"), &["--json"]);
    assert_eq!(output.status.code(), Some(1));
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed,
        json!({ "file": "/no/such/pack.wasm", "error": "/no/such/pack.wasm: cannot read it: No such file or directory (os error 2)" })
    );
}

#[test]
fn complete_tries_completions_from_the_command_line() {
    let pack = built_plugin("dev_assistant");
    let output =
        prompt_host().args(["complete", pack.to_str().unwrap(), "explain-code", "language", "py", "--with", "code=x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result, json!({ "completion": { "values": ["python"], "total": 1, "hasMore": false } }));

    let unknown = prompt_host().args(["complete", pack.to_str().unwrap(), "explain", "language"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        format!("error: unknown prompt 'explain'; {} serves: git-commit, explain-code, debug-error\n", pack.display())
    );
}

#[test]
fn inspect_shows_what_each_argument_completes_to() {
    let path = built_plugin("media_prompts");
    let output = inspect(&path, &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(
            "      - audience (optional) Who the description is for: screen-reader, caption or long-description\n\
             \x20         completes to: screen-reader, caption, long-description\n    transcribe-audio"
        ),
        "{text}"
    );
    let (status, report) = json_report(&path);
    assert_eq!(status, Some(0));
    assert_eq!(
        report["completions"],
        json!([{
            "prompt": "describe-image",
            "argument": "audience",
            "values": ["screen-reader", "caption", "long-description"],
            "hasMore": false
        }])
    );
    assert_eq!(report["completionsNotTried"], 0);
    // Under a prefix, by the name a client asks for.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[plugins.dev_assistant]\nprefix = \"d-\"\n").unwrap();
    let output = inspect(&built_plugin("dev_assistant"), &["--json", "--config", config.to_str().unwrap()]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["completions"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["completions"][0]["prompt"], "d-explain-code");
    assert_eq!(report["completions"][0]["values"].as_array().unwrap()[..3], [json!("bash"), json!("c"), json!("c++")]);
}

#[test]
fn inspect_reports_the_wit_version_a_pack_targets() {
    let (status, report) = json_report(&built_plugin("conformance"));
    assert_eq!(status, Some(0));
    assert_eq!(report["witVersion"], "0.4.0");
    assert_eq!(
        report["exports"],
        json!(["prompt-host:prompts/prompt-provider@0.4.0", "prompt-host:prompts/content@0.4.0", "prompt-host:prompts/asking@0.4.0"])
    );
    // A 0.2 pack or later says what it is; a 0.1 pack cannot (see above: no "pack").
    assert_eq!(
        report["pack"],
        json!({
            "name": "conformance",
            "version": "0.1.0",
            "description": "The prompts the official MCP conformance suite asks for",
            "authors": ["prompt-host developers"],
            "license": "Apache-2.0",
            "homepage": null,
            "repository": "https://github.com/prompt-host/prompt-host"
        })
    );
    let text = String::from_utf8(inspect(&built_plugin("conformance"), &[]).stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|line| *line == "  pack      conformance 0.1.0").expect(&text);
    assert_eq!(
        lines[at + 1..at + 5],
        [
            "    about    The prompts the official MCP conformance suite asks for",
            "    authors  prompt-host developers",
            "    license  Apache-2.0",
            "    source   https://github.com/prompt-host/prompt-host",
        ]
    );
    // One the host refuses still says which version it targets.
    let (status, report) = json_report(&built_plugin("future_version"));
    assert_ne!(status, Some(0));
    assert_eq!(report["witVersion"], "0.9.0");
}

/// Hardening round 4, item 9: `get` and `inspect` read `./prompt-host.toml`
/// when no `--config` names one, and say so on stderr; with a config file
/// that `--config` names, or none, they say nothing.
#[test]
fn get_and_inspect_say_which_config_file_they_read() {
    let pack = built_plugin("dev_assistant");
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("prompt-host.toml");
    std::fs::write(&config, "[plugins.dev_assistant]\nprefix = \"team-\"\n").unwrap();
    let run_in = |dir: &std::path::Path, args: &[&str]| prompt_host().current_dir(dir).args(args).output().unwrap();
    let found = format!("config: {} (found in the working directory): its settings for this plugin apply\n", config.display());

    let got = run_in(folder.path(), &["get", pack.to_str().unwrap(), "team-explain-code", "code=x"]);
    assert_eq!((got.status.code(), String::from_utf8_lossy(&got.stderr).into_owned()), (Some(0), found.clone()));
    let inspected = run_in(folder.path(), &["inspect", pack.to_str().unwrap()]);
    assert_eq!((inspected.status.code(), String::from_utf8_lossy(&inspected.stderr).into_owned()), (Some(0), found));
    // The prefix it configures applied: the file was read, not only named.
    assert!(String::from_utf8_lossy(&inspected.stdout).contains("team-explain-code"), "{}", String::from_utf8_lossy(&inspected.stdout));

    // One that --config names is known to whoever named it: nothing is said.
    let named = run_in(
        std::path::Path::new("/"),
        &["get", pack.to_str().unwrap(), "team-explain-code", "code=x", "--config", config.to_str().unwrap()],
    );
    assert_eq!((named.status.code(), String::from_utf8_lossy(&named.stderr).into_owned()), (Some(0), String::new()));

    let elsewhere = tempfile::tempdir().unwrap();
    let none = run_in(elsewhere.path(), &["get", pack.to_str().unwrap(), "explain-code", "code=x"]);
    assert_eq!((none.status.code(), String::from_utf8_lossy(&none.stderr).into_owned()), (Some(0), String::new()));
}

#[test]
fn inspect_lists_the_skills_and_resources_a_pack_carries_with_each_files_digest_and_size() {
    use sha2::{Digest, Sha256};
    let (status, report) = json_report(&built_plugin("project_insights"));
    assert_eq!(status, Some(0), "{report}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/project-insights/skills/analyze-project");
    let entry = |relative: &str| {
        let bytes = std::fs::read(root.join(relative)).unwrap();
        let digest: String = Sha256::digest(&bytes).iter().map(|byte| format!("{byte:02x}")).collect();
        json!({ "uri": format!("skill://analyze-project/{relative}"), "digest": format!("sha256:{digest}"), "size": bytes.len() })
    };
    assert_eq!(report["skills"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["skills"][0]["uri"], "skill://analyze-project/SKILL.md");
    assert_eq!(report["skills"][0]["frontmatter"]["name"], "analyze-project");
    assert_eq!(report["skills"][0]["resources"], json!([entry("SKILL.md"), entry("references/checklist.md")]));
    assert_eq!(report["resources"][0]["uri"], "prompt-pack://project-insights/checklist.md");
    assert_eq!(report["resources"][0]["mimeType"], "text/markdown");
    let text = String::from_utf8(inspect(&built_plugin("project_insights"), &[]).stdout).unwrap();
    assert!(text.contains("\n  skills    1\n    skill://analyze-project/SKILL.md\n"), "{text}");
    assert!(text.contains("\n  resources 1\n    prompt-pack://project-insights/checklist.md  text/markdown, 335 bytes\n"), "{text}");
    // A pack of an earlier version carries none, and the text says nothing of it.
    let (_, report) = json_report(&built_plugin("code_review"));
    assert_eq!((report["skills"].clone(), report["resources"].clone()), (json!([]), json!([])));
}
