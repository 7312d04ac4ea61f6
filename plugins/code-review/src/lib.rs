//! The `code_review` prompt, exactly as the MCP specification presents it.

use prompt_pack::*;

struct CodeReview;

impl TemplatePack for CodeReview {
    fn templates() -> Vec<Template> {
        vec![
            template("code_review", "Asks the LLM to analyze code quality and suggest improvements")
                .title("Request Code Review")
                .argument(required("code", "The code to review"))
                .user("Please review this Python code:\n{code}")
                .described("Code review prompt"),
        ]
    }
}

prompt_pack::export_pack!(CodeReview);
