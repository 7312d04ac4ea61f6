//! The {{name}} prompt pack.
//!
//! Build it with `cargo build --release`; the pack is
//! target/wasm32-wasip2/release/{{name}}.wasm. See README.md.

use prompt_pack::*;

struct Pack;

impl TemplatePack for Pack {
    fn templates() -> Vec<Template> {
        vec![
            template("summarize", "Asks for a summary of a text")
                .title("Summarize text")
                .argument(required("text", "The text to summarize"))
                .argument(optional("length", "short, medium or long"))
                .default("length", "short")
                .choices("length", &["short", "medium", "long"])
                .user("Write a {length} summary of this text:\n\n{text}"),
        ]
    }
}

prompt_pack::export_pack!(Pack);

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
        let reply = Pack::get_prompt("summarize".into(), vec![argument("text", "Some text.")]).unwrap();
        assert_eq!(reply.messages, [user_text("Write a short summary of this text:\n\nSome text.")]);
    }

    #[test]
    fn the_length_is_one_of_three() {
        let arguments = vec![argument("text", "Some text."), argument("length", "huge")];
        assert_eq!(
            Pack::get_prompt("summarize".into(), arguments),
            Err(PromptError::InvalidArguments("argument 'length' must be one of: short, medium, long".into()))
        );
    }
}
