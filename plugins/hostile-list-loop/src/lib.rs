//! Test fixture: a pack that loops forever when asked for its prompts, so it
//! can never finish loading.

use prompt_pack::*;

struct ListLoop;

impl Guest for ListLoop {
    fn list_prompts() -> Vec<Prompt> {
        let mut counter: u64 = 0;
        loop {
            counter = std::hint::black_box(counter.wrapping_add(1));
        }
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Err(PromptError::NotFound)
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(ListLoop);
