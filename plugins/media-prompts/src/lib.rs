//! Prompts whose replies carry media: an image to describe for accessibility,
//! and a voice clip to transcribe.

use prompt_pack::*;

/// A small bar chart (32x16 PNG) shipped with the pack.
const CHART_PNG: &[u8] = include_bytes!("../assets/chart.png");
/// A quarter-second 440 Hz tone (8 kHz, 8-bit mono WAV) shipped with the pack.
const TONE_WAV: &[u8] = include_bytes!("../assets/tone.wav");

const AUDIENCES: &[&str] = &["screen-reader", "caption", "long-description"];

struct MediaPrompts;

impl Guest for MediaPrompts {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("describe-image", "Write alternative text for the pack's sample chart")
                .title("Describe an Image")
                .argument(optional("audience", "Who the description is for: screen-reader, caption or long-description")),
            prompt("transcribe-audio", "Transcribe the pack's sample voice clip")
                .title("Transcribe Audio"),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "describe-image" => {
                let audience = arguments.get("audience").unwrap_or("screen-reader");
                if !AUDIENCES.contains(&audience) {
                    return Err(PromptError::InvalidArguments(format!(
                        "audience '{audience}' is not one of {}",
                        AUDIENCES.join(", ")
                    )));
                }
                Ok(reply([
                    message(Role::User, image(CHART_PNG, "image/png")),
                    user_text(format!("Write a {audience} description of the image above.")),
                ]))
            }
            "transcribe-audio" => Ok(reply([
                message(Role::User, audio(TONE_WAV, "audio/wav")),
                user_text("Transcribe the audio above. If it holds no speech, describe what you hear."),
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
            ("describe-image", "audience") => Ok(complete_from(AUDIENCES, &value)),
            _ => Ok(no_completions()),
        }
    }
}

prompt_pack::export_pack!(MediaPrompts);
