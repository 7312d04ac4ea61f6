//! Test fixture: a pack whose prompt definitions break several rules at once:
//! a name declared twice, a name with a space, an argument declared twice,
//! and an icon with a relative URL and a media type that is not an image's.

use prompt_pack::*;

struct BadDefinitions;

impl Guest for BadDefinitions {
    fn list_prompts() -> Vec<Prompt> {
        let icon = Icon { src: "icon.png".into(), mime_type: Some("text/plain".into()), sizes: vec![], theme: None };
        vec![
            prompt("twice", "The first one"),
            prompt("twice", "The second one"),
            prompt("two words", "A name with a space")
                .argument(required("x", "The first x"))
                .argument(optional("x", "The second x"))
                .icon(icon),
        ]
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Err(PromptError::NotFound)
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(BadDefinitions);
