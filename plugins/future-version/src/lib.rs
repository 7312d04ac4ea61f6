//! Test fixture: a pack that exports `prompt-host:prompts/prompt-provider`
//! at version 0.9.0, which this host must refuse with a clear message.

wit_bindgen::generate!({ path: "wit", world: "prompt-pack" });

struct Future;

impl exports::prompt_host::prompts::prompt_provider::Guest for Future {
    fn list_prompt_names() -> Vec<String> {
        vec!["from-the-future".to_string()]
    }
}

export!(Future);
