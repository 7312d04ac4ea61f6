//! Benchmark fixture: a pack that declares 100 prompts, `prompt-00` to
//! `prompt-99`, so that 100 copies (each under its own prefix) make a catalog
//! of 10,000.

use prompt_pack::*;

struct Hundred;

impl Guest for Hundred {
    fn list_prompts() -> Vec<Prompt> {
        (0..100)
            .map(|i| prompt(&format!("prompt-{i:02}"), "One of a hundred").argument(required("topic", "What it is about")))
            .collect()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let topic = Arguments::from(arguments).require("topic")?.to_string();
        Ok(reply([user_text(format!("{name}: {topic}"))]))
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(Hundred);
