//! The {{name}} prompt pack.
//!
//! Build it with `cargo build --release`; the pack is
//! target/wasm32-wasip2/release/{{name}}.wasm. See README.md.

use prompt_pack::v0_2::*;

struct Pack;

impl TemplatePack for Pack {
    fn templates() -> Vec<Template> {
        vec![
            template("summarize", "Asks for a summary of a text")
                .title("Summarize text")
                // Left out, the text is asked for: the client shows the user a form.
                .argument(optional("text", "The text to summarize"))
                .ask_for("text", "What text should be summarized?")
                .argument(optional("length", "short, medium or long"))
                .default("length", "short")
                .choices("length", &["short", "medium", "long"])
                .user("Write a {length} summary of this text:\n\n{text}"),
        ]
    }
}

/// What the pack says it is (`prompt-host inspect` shows it): the name,
/// version, description and the rest of Cargo.toml's [package].
impl DescribePack for Pack {
    fn describe() -> PackInfo {
        // A pack sees nothing of the machine. One on WIT 0.3 (prompt_pack::v0_3,
        // implementing its Guest; this SDK's templates are 0.2) may ask to see
        // a folder, call an origin or read a value, which the operator grants
        // in [plugins.NAME.grants]:
        //     PackInfo::from(prompt_pack::cargo_pack_info!())
        //         .folder("logs", "the log files to summarize")   // read as /logs
        //         .origin("https://api.example.com/v1/")           // through wasi:http
        //         .env("API_TOKEN")                                 // std::env::var
        prompt_pack::cargo_pack_info!()
    }
}

prompt_pack::v0_2::export_pack!(Pack);

// The functions the host calls are plain Rust: test them natively with
// cargo test --target "$(rustc -vV | sed -n 's/^host: //p')"
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_templates_pass_the_checks_the_host_runs_at_load() {
        assert_eq!(Pack::check(), Ok(()));
    }

    #[test]
    fn summaries_are_short_unless_asked() {
        let answer = Pack::get_prompt("summarize".into(), vec![argument("text", "Some text.")], None).unwrap();
        let reply = answer.into_reply().unwrap();
        assert_eq!(reply.messages, [user_text("Write a short summary of this text:\n\nSome text.")]);
    }

    #[test]
    fn the_length_is_one_of_three() {
        let arguments = vec![argument("text", "Some text."), argument("length", "huge")];
        assert_eq!(
            Pack::get_prompt("summarize".into(), arguments, None),
            Err(PromptError::InvalidArguments("argument 'length' must be one of: short, medium, long".into()))
        );
    }

    #[test]
    fn a_text_left_out_is_asked_for() {
        let asked = Pack::get_prompt("summarize".into(), vec![], None).unwrap().into_input_required().unwrap();
        assert_eq!(asked.forms[0].message, "What text should be summarized?");
        // The host calls again with what the user filled in.
        let input = answers([accepted("text", [("text", "Asked text.")])]);
        let reply = Pack::get_prompt("summarize".into(), vec![], Some(input)).unwrap().into_reply().unwrap();
        assert_eq!(reply.messages, [user_text("Write a short summary of this text:\n\nAsked text.")]);
    }
}
