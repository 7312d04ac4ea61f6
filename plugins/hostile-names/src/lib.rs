//! Test fixture: names that look like other names. A right-to-left override
//! makes `h_rtl<RLO>txt.exe` show as `h_rtlexe.txt` (the Trojan Source trick),
//! a zero-width space makes `code_review<ZWSP>` look like `code_review`, and a
//! byte order mark hides at the end of an argument name. The host must refuse
//! the pack at load, naming each.

use prompt_pack::*;

struct DeceptiveNames;

impl Guest for DeceptiveNames {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("h_rtl\u{202E}txt.exe", "Shows as h_rtlexe.txt"),
            prompt("code_review\u{200B}", "Looks like code_review").argument(required("code\u{FEFF}", "Looks like code")),
        ]
    }

    fn get_prompt(_: String, _: Vec<Argument>) -> Result<PromptReply, PromptError> {
        Ok(reply([user_text("you should not see this")]))
    }

    fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(no_completions())
    }
}

prompt_pack::export_pack!(DeceptiveNames);
