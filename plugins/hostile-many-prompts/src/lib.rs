//! Test fixture: a pack that declares 100,000 prompts.

use prompt_pack::*;

struct ManyPrompts;

impl Guest for ManyPrompts {
    fn list_prompts() -> Vec<Prompt> {
        (0..100_000).map(|i| prompt(&format!("prompt-{i}"), "One of very many")).collect()
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Err(PromptError::NotFound)
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(ManyPrompts);
