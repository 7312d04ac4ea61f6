//! `prompt-host inspect` on valid and invalid files, and `prompt-host get`.

mod support;

use std::process::{Command, Output};

use serde_json::{Value, json};
use support::built_plugin;

fn inspect(path: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .arg("inspect")
        .arg(path)
        .env("RUST_LOG", "off")
        .output()
        .unwrap()
}

#[test]
fn a_valid_pack_is_described_as_json() {
    let path = built_plugin("code_review");
    let output = inspect(&path);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["plugin"], "code_review");
    assert_eq!(report["file"], path.display().to_string());
    assert_eq!(report["sizeBytes"], std::fs::metadata(&path).unwrap().len());
    assert_eq!(report["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["exports"], json!(["prompt-host:prompts/prompt-provider@0.1.0"]));
    assert!(report["imports"].as_array().unwrap().iter().all(|i| i.as_str().unwrap().starts_with("wasi:")));
    assert_eq!(report["limits"]["fuel"], 500_000_000);
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

fn assert_refused(path: &std::path::Path, reason: &str) {
    let output = inspect(path);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!("error: {}: {reason}", path.display());
    assert!(stderr.starts_with(&expected), "expected {expected:?}, got {stderr:?}");
}

#[test]
fn a_file_that_is_not_webassembly_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.wasm");
    std::fs::write(&path, "hello").unwrap();
    assert_refused(&path, "not a WebAssembly file: it does not start with the \\0asm magic bytes");
}

#[test]
fn a_core_module_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("core.wasm");
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    assert_refused(&path, "a core WebAssembly module, not a component: build the pack for the wasm32-wasip2 target");
}

#[test]
fn a_truncated_component_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.wasm");
    let bytes = std::fs::read(built_plugin("code_review")).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(&path, "not a valid WebAssembly component: ");
}

#[test]
fn a_component_of_another_world_is_refused() {
    assert_refused(
        &built_plugin("wrong_world"),
        "does not export prompt-host:prompts/prompt-provider@0.1.0 (it exports: fixture:greeter/greet@0.1.0); \
         build it against the prompt-pack world of the prompt-host WIT package",
    );
}

#[test]
fn a_missing_file_is_refused() {
    let output = inspect(std::path::Path::new("/nonexistent/pack.wasm"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: /nonexistent/pack.wasm: cannot read it: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_pack_built_against_another_wit_version_is_refused() {
    assert_refused(
        &built_plugin("future_version"),
        "is built against version 0.2.0 of the prompt-host:prompts WIT package, and this host accepts 0.1.x",
    );
}

fn get(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prompt-host")).arg("get").args(args).env("RUST_LOG", "off").output().unwrap()
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
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: prompt 'explain-code' is missing required arguments: code\n"
    );
}
