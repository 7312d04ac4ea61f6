//! Test fixture: a pack that declares the same prompt name twice.

use prompt_pack::*;

struct BadDefinitions;

impl Guest for BadDefinitions {
    fn list_prompts() -> Vec<Prompt> {
        vec![prompt("twice", "The first one"), prompt("twice", "The second one")]
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Err(PromptError::NotFound)
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(BadDefinitions);
