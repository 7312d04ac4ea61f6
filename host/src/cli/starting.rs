//! The commands that write files to start from: `new` (a pack) and
//! `examples` (the bundled packs and a config that serves them).

use std::path::PathBuf;

use super::CommandError;
use crate::scaffold::{self, Language};

pub fn new(name: String, language: Language, dir: Option<PathBuf>) -> Result<(), CommandError> {
    let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
    let written = scaffold::create(&dir, &name, language)?;
    // The next steps are what the user asked for: stdout, like every command but serve.
    println!("Created the {language} prompt pack '{name}' in {}:", dir.display()); // stdout-ok: what new and examples wrote, never under serve
    for file in written {
        println!("  {file}"); // stdout-ok: what new and examples wrote, never under serve
    }
    println!("Next, in {}:\n{}", dir.display(), scaffold::next_steps(&name, language)); // stdout-ok: what new and examples wrote, never under serve
    Ok(())
}

pub fn examples(out: PathBuf) -> Result<(), CommandError> {
    let written = crate::bundled::write_examples(&out)?;
    println!("Wrote the example packs and a config that serves them in {}:", out.display()); // stdout-ok: what new and examples wrote, never under serve
    for file in written {
        println!("  {file}"); // stdout-ok: what new and examples wrote, never under serve
    }
    println!("Next:\n  prompt-host serve --config {}", out.join("prompt-host.toml").display()); // stdout-ok: what new and examples wrote, never under serve
    Ok(())
}
