//! Test fixture: the prompts the official MCP conformance suite asks for.

use prompt_pack::*;

/// A 1x1 PNG.
const PIXEL_PNG: &[u8] = include_bytes!("pixel.png");

struct Conformance;

impl Guest for Conformance {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("test_simple_prompt", "A simple prompt without arguments"),
            prompt("test_prompt_with_arguments", "A prompt with required arguments")
                .argument(required("arg1", "First test argument"))
                .argument(required("arg2", "Second test argument")),
            prompt("test_prompt_with_embedded_resource", "A prompt that includes an embedded resource")
                .argument(required("resourceUri", "URI of the resource to embed")),
            prompt("test_prompt_with_image", "A prompt that includes an image"),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "test_simple_prompt" => Ok(reply([user_text("This is a simple prompt for testing.")])),
            "test_prompt_with_arguments" => {
                let arg1 = arguments.require("arg1")?;
                let arg2 = arguments.require("arg2")?;
                Ok(reply([user_text(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                ))]))
            }
            "test_prompt_with_embedded_resource" => {
                let uri = arguments.require("resourceUri")?;
                Ok(reply([
                    message(
                        Role::User,
                        text_resource(uri, "text/plain", "Embedded resource content for testing."),
                    ),
                    user_text("Please process the embedded resource above."),
                ]))
            }
            "test_prompt_with_image" => Ok(reply([
                message(Role::User, image(PIXEL_PNG, "image/png")),
                user_text("Please analyze the image above."),
            ])),
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
            ("test_prompt_with_arguments", "arg1") => {
                Ok(complete_from(&["paris", "park", "party", "penguin"], &value))
            }
            _ => Ok(no_completions()),
        }
    }
}

prompt_pack::export_pack!(Conformance);
