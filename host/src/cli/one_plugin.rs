//! The commands that load one plugin as `serve` would and use it without a
//! client: `inspect`, `get` and `complete`. What they print is the answer,
//! on stdout; warnings and questions go to stderr.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::{CommandError, OnePluginArgs};
use crate::config::ServeConfig;
use crate::error::RequestError;
use crate::handler::PromptServer;

pub async fn inspect(file: PathBuf, json: bool, plugin: OnePluginArgs) -> Result<(), CommandError> {
    let inspected = async { Ok::<_, CommandError>(crate::inspect::inspect(&file, &plugin.config()?).await?) };
    let report = match inspected.await {
        Ok(report) => report,
        Err(error) => {
            // Tools that read --json read stdout: they get the error there too.
            if json {
                let error = serde_json::json!({ "file": file.display().to_string(), "error": error.chain() });
                println!("{}", serde_json::to_string_pretty(&error)?); // stdout-ok: the command's result (inspect, get, complete), never under serve
            }
            return Err(error);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?); // stdout-ok: the command's result (inspect, get, complete), never under serve
    } else {
        print!("{report}"); // stdout-ok: the command's result (inspect, get, complete), never under serve
    }
    if !report.loadable() {
        return Err(CommandError::Failed(format!("{}: the server would refuse this plugin: {}", report.file, report.problems[0].problem)));
    }
    Ok(())
}

pub async fn get(
    file: PathBuf,
    prompt: String,
    arguments: Vec<(String, String)>,
    answers: Vec<(String, String)>,
    plugin: OnePluginArgs,
) -> Result<(), CommandError> {
    let server = serve_one(&file, &plugin.config()?).await?;
    // An unknown prompt has no arguments to warn of: its error comes below.
    let declared = server.declared_arguments(&prompt);
    for (index, (name, _)) in arguments.iter().enumerate() {
        if arguments[..index].iter().any(|(earlier, _)| earlier == name) {
            eprintln!("warning: argument '{name}' is given more than once: the last value is used");
        } else if let Some(declared) = &declared
            && !declared.contains(name)
        {
            eprintln!("warning: prompt '{prompt}' declares no argument '{name}' (it declares: {})", list_or_none(declared));
        }
    }
    let arguments = arguments.into_iter().map(|(name, value)| (name, serde_json::Value::String(value))).collect();
    let request = rmcp::model::GetPromptRequestParams::new(prompt).with_arguments(arguments);
    let result = server.get_prompt_answering(request, answer_forms(answers)).await;
    let mut result = result.map_err(|error| naming_what_it_serves(error, &file, &server))?;
    // As a client of a handshake revision sees it (rmcp drops the field then).
    result.result_type = None;
    println!("{}", serde_json::to_string_pretty(&result)?); // stdout-ok: the command's result (inspect, get, complete), never under serve
    Ok(())
}

/// How `get` answers a form: with the `--answer FIELD=VALUE` given for a
/// field (the last one), else, on a terminal, by asking on it.
fn answer_forms(answers: Vec<(String, String)>) -> crate::app::Answerer {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    std::sync::Arc::new(move |forms: &crate::input::Forms| {
        forms.answer_each(|question| {
            if let Some((_, value)) = answers.iter().rev().find(|(field, _)| field == question.name) {
                return Some(value.clone());
            }
            if !terminal {
                return None;
            }
            // The pack's words, escaped: a terminal obeys control characters.
            if question.first_of_form {
                eprintln!("{}", question.message.escape_debug());
            }
            let label = question.label.map(|label| format!(" ({})", label.escape_debug())).unwrap_or_default();
            let optional = if question.required { "" } else { " [optional: Enter leaves it out]" };
            eprint!("  {}{label}{optional}: ", question.name.escape_debug());
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).ok()?;
            let typed = line.trim_end_matches(['\r', '\n']);
            (!typed.is_empty()).then(|| typed.to_string())
        })
    })
}

/// The plugin file `file`, loaded as the server would, behind a prompt
/// server to call without a client.
async fn serve_one(file: &std::path::Path, config: &ServeConfig) -> Result<PromptServer, CommandError> {
    let registry = crate::startup::load_one(file, config).await?;
    Ok(PromptServer::new(registry, crate::catalog::DEFAULT_PAGE_SIZE))
}

/// `error`, and when it is an unknown prompt, what `file` serves instead.
fn naming_what_it_serves(error: RequestError, file: &std::path::Path, server: &PromptServer) -> CommandError {
    match error {
        RequestError::UnknownPrompt { .. } => {
            CommandError::Failed(format!("{error}; {} serves: {}", file.display(), list_or_none(&server.prompt_names())))
        }
        other => other.into(),
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".to_string() } else { names.join(", ") }
}

pub async fn complete(
    file: PathBuf,
    prompt: String,
    argument: String,
    typed: String,
    context: Vec<(String, String)>,
    plugin: OnePluginArgs,
) -> Result<(), CommandError> {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, CompletionContext, Reference};
    let server = serve_one(&file, &plugin.config()?).await?;
    let mut request = CompleteRequestParams::new(Reference::for_prompt(prompt), ArgumentInfo::new(argument, typed));
    if !context.is_empty() {
        request.context = Some(CompletionContext::with_arguments(context.into_iter().collect()));
    }
    let mut result = server.complete_result(request).await.map_err(|error| naming_what_it_serves(error, &file, &server))?;
    // As a client of a handshake revision sees it (rmcp drops the field then).
    result.result_type = None;
    println!("{}", serde_json::to_string_pretty(&result)?); // stdout-ok: the command's result (inspect, get, complete), never under serve
    Ok(())
}
