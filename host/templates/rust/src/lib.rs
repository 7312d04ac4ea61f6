//! The {{name}} prompt pack.
//!
//! Build it with `cargo build --release`; the pack is
//! target/wasm32-wasip2/release/{{name}}.wasm. See README.md.

use prompt_pack::v0_4::*;

struct Pack;

impl TemplatePack for Pack {
    fn templates() -> Vec<Template> {
        vec![
            template("summarize", "Asks for a summary of a text")
                .title("Summarize text")
                // Left out, the text is asked for: the host shows the user a
                // form (this prompt is named in export_pack! below).
                .argument(required("text", "The text to summarize"))
                // One of three, short unless given: the host checks and completes it.
                .argument(optional("length", "How long the summary is").choice(["short", "medium", "long"]).default("short"))
                .user("Write a {length} summary of this text:\n\n{text}"),
        ]
    }
}

/// What the pack says it is (`prompt-host inspect` shows it): the name,
/// version, description and the rest of Cargo.toml's [package].
impl DescribePack for Pack {
    fn describe() -> PackInfo {
        // A pack sees nothing of the machine. It may ask to see a folder,
        // call an origin or read a value, which the operator grants in
        // [plugins.NAME.grants]:
        //     PackInfo::from(prompt_pack::cargo_pack_info!())
        //         .folder("logs", "the log files to summarize") // read as /logs
        //         .origin("https://api.example.com/v1/")         // through wasi:http
        //         .env("API_TOKEN")                               // std::env::var
        prompt_pack::cargo_pack_info!().into()
    }
}

/// What the pack carries beside its prompts, for agents that load skills:
/// every file of the `skills/` folder beside Cargo.toml, embedded when the
/// pack is built. (`static_resources()` may list resources a client reads.)
impl Carries for Pack {
    fn skills() -> Vec<SkillFile> {
        prompt_pack::v0_4::include_skills!()
    }
}

// `summarize` has the host ask for its missing required arguments.
prompt_pack::v0_4::export_pack!(Pack, asks_for_missing = ["summarize"]);

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
        // Left out, the length is its default (the host fills it in before
        // it calls the pack; the SDK does too, for tests like this one).
        let arguments = vec![argument("text", "Some text.")];
        let reply = Pack::get_prompt("summarize".into(), arguments, None).unwrap().into_reply().unwrap();
        assert_eq!(reply.messages, [user_text("Write a short summary of this text:\n\nSome text.")]);
    }

    #[test]
    fn the_length_is_one_of_three() {
        let listed = Pack::list_prompts();
        let length = &listed[0].arguments[1];
        assert_eq!(length.kind, Some(ArgumentKind::Choice(vec!["short".into(), "medium".into(), "long".into()])));
        assert_eq!(length.default.as_deref(), Some("short"));
    }

    #[test]
    fn a_text_left_out_is_asked_for_by_the_host() {
        assert_eq!(<Pack as AskingGuest>::prompts_that_ask(), ["summarize"]);
        assert!(Pack::list_prompts()[0].arguments[0].required);
    }

    #[test]
    fn the_skill_is_carried_from_its_folder() {
        let files = Pack::skills();
        assert_eq!(files.iter().map(|file| file.path.as_str()).collect::<Vec<_>>(), ["summarizing/SKILL.md"]);
        assert!(files[0].bytes.starts_with(b"---\nname: summarizing\n"));
        // As the host checks it at load: its frontmatter names it by its folder.
        assert_eq!(check_skills(&files), Ok(()));
    }
}
