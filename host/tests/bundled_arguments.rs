//! No argument a client passes makes a bundled example prompt fail as a
//! plugin fault (-32603): a bad argument is the client's to fix, so the pack
//! answers invalid params (-32602). Random values for every argument of every
//! bundled prompt, in process, through the handler `prompt-host get` uses.

use std::collections::BTreeMap;
use std::sync::Arc;

use prompt_host::config::ServeConfig;
use prompt_host::error::RequestError;
use prompt_host::handler::PromptServer;
use prompt_host::registry::Registry;
use prompt_host_kernel::model;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rmcp::model::{ErrorCode, ErrorData, GetPromptRequestParams};
use serde_json::Value;

/// Cases per prompt: enough to reach every branch of the example packs.
const CASES: u32 = 64;

/// One argument of a bundled prompt, and the values its plugin completes it with.
struct Argument {
    name: String,
    suggestions: Vec<String>,
}

/// Text a client might send: empty, blank, any characters, text that looks
/// like a template placeholder, and long text (up to past the argument limit).
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_string()),
        any::<String>(),
        "\\PC{0,64}",
        "[{}a-z \\n]{0,32}",
        ("[a-z{} ]{1,8}", 1..160_000usize).prop_map(|(unit, times)| unit.repeat(times)),
    ]
}

/// Text that starts like a URI, so that URI arguments are checked past their scheme.
fn uri_like() -> impl Strategy<Value = String> {
    let schemes = prop::sample::select(vec!["file", "http", "https", "ftp", "ws", "logs", "x", "mailto", "data", "1x"]);
    let separators = prop::sample::select(vec![":", "://", ":///", "://[", "://a:99999/", "://1.2.3.999/"]);
    (schemes, separators, "\\PC{0,40}").prop_map(|(scheme, separator, rest)| format!("{scheme}{separator}{rest}"))
}

/// A value for `argument`: often one its plugin suggests, so that the other
/// arguments' checks are reached too.
fn value(argument: &Argument) -> BoxedStrategy<String> {
    let random = prop_oneof![any_text(), uri_like()];
    if argument.suggestions.is_empty() {
        random.boxed()
    } else {
        prop_oneof![prop::sample::select(argument.suggestions.clone()), random].boxed()
    }
}

/// The registry `prompt-host serve` builds with no plugin directory.
fn bundled(runtime: &tokio::runtime::Runtime) -> Arc<Registry> {
    let config = ServeConfig { cache_dir: None, watch: false, ..ServeConfig::default() };
    runtime.block_on(prompt_host::startup::start(&config, None)).expect("the bundled packs load").registry
}

/// Every bundled prompt, with its arguments and their suggested values.
fn prompts(runtime: &tokio::runtime::Runtime, registry: &Registry) -> Vec<(String, Vec<Argument>)> {
    let snapshot = registry.snapshot();
    let mut prompts = Vec::new();
    for entry in snapshot.catalog().entries() {
        let (_, plugin) = snapshot.resolve(&entry.prompt.name).unwrap();
        let mut arguments = Vec::new();
        for argument in entry.prompt.arguments.iter().flatten() {
            let completion = runtime.block_on(plugin.complete(&entry.declared_name, &argument.name, "", &[]));
            let suggestions = completion.expect("an empty value completes").values;
            arguments.push(Argument { name: argument.name.clone(), suggestions });
        }
        prompts.push((entry.prompt.name.to_string(), arguments));
    }
    prompts
}

fn code(error: RequestError) -> (ErrorCode, String) {
    let error = ErrorData::from(error);
    (error.code, error.message.to_string())
}

#[test]
fn no_argument_value_makes_a_bundled_prompt_fail_internally() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = bundled(&runtime);
    let server = PromptServer::new(registry.clone(), 100);
    let prompts = prompts(&runtime, &registry);
    let names: Vec<&str> = prompts.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["code_review", "git-commit", "explain-code", "debug-error", "describe-image", "transcribe-audio", "analyze-project"]
    );
    let snapshot = registry.snapshot();

    for (prompt, arguments) in &prompts {
        // Each argument absent now and then, else any value.
        let values: Vec<_> = arguments.iter().map(|argument| prop::option::weighted(0.9, value(argument))).collect();
        let mut runner = TestRunner::new(Config { cases: CASES, failure_persistence: None, ..Config::default() });
        let outcome = runner.run(&values, |values| {
            let given: BTreeMap<String, Value> = arguments
                .iter()
                .zip(&values)
                .filter_map(|(argument, value)| Some((argument.name.clone(), Value::String(value.clone()?))))
                .collect();
            let request = GetPromptRequestParams::new(prompt.clone()).with_arguments(given.clone().into_iter().collect());
            if let Err(error) = runtime.block_on(server.get_prompt_result(request)) {
                let (code, message) = code(error);
                prop_assert_ne!(code, ErrorCode::INTERNAL_ERROR, "prompts/get {} {:?}: {}", prompt, given, message);
            }

            // Completing any typed value, with the others as context, is never a fault either.
            let (entry, plugin) = snapshot.resolve(prompt).unwrap();
            let context: Vec<model::Argument> =
                given.iter().map(|(name, value)| model::Argument { name: name.clone(), value: value.as_str().unwrap().into() }).collect();
            for (argument, value) in arguments.iter().zip(&values) {
                let typed = value.as_deref().unwrap_or_default();
                let completion = runtime.block_on(plugin.complete(&entry.declared_name, &argument.name, typed, &context));
                if let Err(error) = completion {
                    let (code, message) = code(error.into());
                    prop_assert_ne!(code, ErrorCode::INTERNAL_ERROR, "completing {}.{}: {}", prompt, argument.name, message);
                }
            }
            Ok(())
        });
        if let Err(failure) = outcome {
            panic!("{prompt}: {failure}");
        }
    }
}
