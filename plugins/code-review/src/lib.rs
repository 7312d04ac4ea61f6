//! The `code_review` prompt, exactly as the MCP specification presents it.

use prompt_pack::*;

struct CodeReview;

impl Guest for CodeReview {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("code_review", "Asks the LLM to analyze code quality and suggest improvements")
                .title("Request Code Review")
                .argument(required("code", "The code to review")),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "code_review" => {
                let code = arguments.require("code")?;
                Ok(reply([user_text(format!("Please review this Python code:\n{code}"))])
                    .described("Code review prompt"))
            }
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(CodeReview);
