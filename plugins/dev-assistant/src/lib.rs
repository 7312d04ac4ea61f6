//! Everyday developer prompts: the `git-commit` and `explain-code` prompts of
//! the MCP specification's example server, and the multi-turn `debug-error`
//! workflow from its prompt guide.

use prompt_pack::*;

/// Languages offered when completing the `language` argument of `explain-code`.
const LANGUAGES: &[&str] = &[
    "bash", "c", "c++", "c#", "go", "haskell", "java", "javascript", "kotlin", "lua", "php",
    "python", "ruby", "rust", "scala", "sql", "swift", "typescript", "zig",
];

struct DevAssistant;

impl Guest for DevAssistant {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("git-commit", "Generate a Git commit message")
                .argument(required("changes", "Git diff or description of changes")),
            prompt("explain-code", "Explain how code works")
                .argument(required("code", "Code to explain"))
                .argument(optional("language", "Programming language")),
            prompt("debug-error", "Work through an error message step by step")
                .title("Debug an Error")
                .argument(required("error", "The error message you are seeing")),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "git-commit" => {
                let changes = arguments.require("changes")?;
                Ok(reply([user_text(format!(
                    "Generate a concise but descriptive commit message for these changes:\n\n{changes}"
                ))]))
            }
            "explain-code" => {
                let code = arguments.require("code")?;
                let language = arguments.get("language").unwrap_or("unknown");
                Ok(reply([user_text(format!("Explain how this {language} code works:\n\n{code}"))]))
            }
            "debug-error" => {
                let error = arguments.require("error")?;
                Ok(reply([
                    user_text(format!("Here's an error I'm seeing: {error}")),
                    assistant_text("I'll help analyze this error. What have you tried so far?"),
                    user_text("I've tried restarting the service, but the error persists."),
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
            ("explain-code", "language") => Ok(complete_from(LANGUAGES, &value)),
            _ => Ok(no_completions()),
        }
    }
}

prompt_pack::export_pack!(DevAssistant);
