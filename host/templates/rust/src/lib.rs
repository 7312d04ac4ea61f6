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
                .argument(optional("length", "short, medium or long (default: short)"))
                .default("length", "short")
                .choices("length", &["short", "medium", "long"])
                .user("Write a {length} summary of this text:\n\n{text}"),
        ]
    }
}

prompt_pack::export_pack!(Pack);
