//! Test fixture: a template pack with a typo in a placeholder, which the SDK
//! must report when the host lists its prompts.

use prompt_pack::*;

struct TemplateMistake;

impl TemplatePack for TemplateMistake {
    fn templates() -> Vec<Template> {
        vec![template("greet", "Greets someone").argument(required("name", "Who to greet")).user("Say hello to {nmae}.")]
    }
}

prompt_pack::export_pack!(TemplateMistake);
