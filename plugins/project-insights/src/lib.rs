//! `analyze-project`: the MCP prompt guide's multi-resource workflow.
//!
//! A pack cannot read the machine it runs on, so rather than embedding logs
//! and files it does not have, the reply embeds the review checklist the pack
//! ships, and links to the logs and the file for the client to attach.

use prompt_pack::*;

const CHECKLIST_URI: &str = "prompt-pack://project-insights/checklist.md";

const CHECKLIST: &str = "\
# Project analysis checklist
1. Errors and warnings in the logs: what fails, how often, since when.
2. Stack traces that point into the code file.
3. Unhandled error paths, retries without limits, resources never released.
4. Inputs trusted without validation.
5. For every finding: the evidence, the likely cause, and a proposed fix.
";

const TIMEFRAMES: &[&str] = &["15m", "1h", "6h", "24h", "7d"];

struct ProjectInsights;

impl Guest for ProjectInsights {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("analyze-project", "Analyze project logs and code")
                .title("Analyze Project")
                .argument(required("timeframe", "Time period to analyze logs, such as 1h or 24h"))
                .argument(required("fileUri", "URI of the code file to analyze")),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "analyze-project" => {
                let timeframe = arguments.require("timeframe")?;
                let file_uri = arguments.require("fileUri")?;
                if !TIMEFRAMES.contains(&timeframe) {
                    return Err(PromptError::InvalidArguments(format!(
                        "timeframe '{timeframe}' is not one of {}",
                        TIMEFRAMES.join(", ")
                    )));
                }
                // The host refuses a reply whose links are not URIs, with the
                // same parser: check here, and blame the argument.
                if let Err(error) = url::Url::parse(file_uri) {
                    return Err(PromptError::InvalidArguments(format!(
                        "fileUri '{file_uri}' is not an absolute URI, such as file:///src/app.py: {error}"
                    )));
                }
                Ok(reply([
                    user_text("Analyze these system logs and the code file for any issues:"),
                    message(
                        Role::User,
                        resource_link(
                            format!("logs://recent?timeframe={timeframe}"),
                            "recent-logs",
                            "System logs of the chosen timeframe",
                        ),
                    ),
                    message(Role::User, resource_link(file_uri, "code-file", "The code file to analyze")),
                    message(Role::User, text_resource(CHECKLIST_URI, "text/markdown", CHECKLIST)),
                ]))
            }
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(
        prompt: String,
        argument: String,
        value: String,
        _context: Vec<Argument>,
    ) -> Result<Completion, PromptError> {
        match (prompt.as_str(), argument.as_str()) {
            ("analyze-project", "timeframe") => Ok(complete_from(TIMEFRAMES, &value)),
            _ => Ok(no_completions()),
        }
    }
}

prompt_pack::export_pack!(ProjectInsights);
