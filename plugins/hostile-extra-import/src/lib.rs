//! Test fixture: a pack that needs an interface (`fixture:extra-import/vault`)
//! the host does not provide, so it must be refused at load time.

wit_bindgen::generate!({ path: "wit", world: "pack-with-vault" });

use exports::prompt_host::prompts::prompt_provider::{
    Argument, Completion, Guest, Prompt, PromptError, PromptReply,
};

struct WithVault;

impl Guest for WithVault {
    fn list_prompts() -> Vec<Prompt> {
        Vec::new()
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Err(PromptError::Internal(fixture::extra_import::vault::secret()))
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Err(PromptError::NotFound)
    }
}

export!(WithVault);
