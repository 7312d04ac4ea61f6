//! The report of `prompt-host inspect` as a person reads it (the same
//! report serializes to JSON for machines).

use std::fmt;

use crate::inspect::{ArgumentCompletions, MAX_COMPLETIONS_TRIED, Report};
use prompt_host_kernel::limits::grouped;
use prompt_host_kernel::validate::printable;

/// The report as a person reads it.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_file(f)?;
        self.write_pack(f)?;
        self.write_costs(f)?;
        self.write_prompts(f)?;
        self.write_content(f)?;
        self.write_problems(f)
    }
}

impl Report {
    /// The verdict, and what the file is: its size, digest, signature, exports, imports and WIT version.
    fn write_file(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.len() {
            0 => writeln!(f, "{}: a prompt pack this host can load", self.plugin)?,
            1 => writeln!(f, "{}: this host would refuse it (1 problem)", self.plugin)?,
            n => writeln!(f, "{}: this host would refuse it ({n} problems)", self.plugin)?,
        }
        writeln!(f, "  file      {}", self.file)?;
        writeln!(f, "  size      {} bytes", grouped(self.size_bytes as u64))?;
        writeln!(f, "  sha256    {}", self.sha256)?;
        if let Some(signature) = &self.signature {
            writeln!(f, "  signed    {signature}")?;
        }
        // What the host calls, apart from what it never does: a toolchain's
        // own exports (componentize-py's build-time `exports`), which look
        // like part of the pack's contract and are not.
        let contract = format!("{}/", prompt_host_kernel::bindings::PACKAGE);
        let (called, never_called): (Vec<String>, Vec<String>) = self.exports.iter().cloned().partition(|name| name.starts_with(&contract));
        for (label, names) in [("exports", &called), ("imports", &self.imports)] {
            if !names.is_empty() {
                writeln!(f, "  {label:<9} {}", wrapped(names, "\n            "))?;
            }
        }
        if !never_called.is_empty() {
            writeln!(f, "  ignored   {} (exported, never called: not in the WIT contract)", wrapped(&never_called, "\n            "))?;
        }
        if let Some(version) = &self.wit_version {
            writeln!(f, "  wit       prompt-host:prompts {version}")?;
        }
        Ok(())
    }

    /// What the pack says it is and wants, and what this configuration grants it.
    fn write_pack(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(pack) = &self.pack {
            // All of it the pack's own words: shown as a terminal cannot take it for a command.
            writeln!(f, "  pack      {} {}", printable(&pack.name), printable(&pack.version))?;
            let fields = [
                ("about", pack.description.clone()),
                ("authors", (!pack.authors.is_empty()).then(|| pack.authors.join(", "))),
                ("license", pack.license.clone()),
                ("homepage", pack.homepage.clone()),
                ("source", pack.repository.clone()),
            ];
            for (label, value) in fields {
                if let Some(value) = value {
                    writeln!(f, "    {label:<8} {}", printable(&value))?;
                }
            }
            for (index, wanted) in pack.wants.iter().enumerate() {
                let label = if index == 0 { "wants" } else { "" };
                writeln!(f, "    {label:<8} {}", printable(wanted))?;
            }
        }
        if self.pack.as_ref().is_some_and(|pack| !pack.wants.is_empty()) || !self.withheld.is_empty() {
            // Under this configuration: what its calls would see, and what they would not.
            match self.granted.is_empty() {
                true => writeln!(f, "  granted   nothing (no folder, value or network)")?,
                false => writeln!(f, "  granted   {}", self.granted.join("\n            "))?,
            }
            for (index, withheld) in self.withheld.iter().enumerate() {
                let label = if index == 0 { "withheld" } else { "" };
                writeln!(f, "  {label:<9} {}", printable(withheld))?;
            }
        }
        Ok(())
    }

    /// What compiling the pack and listing its prompts cost, against its limits.
    fn write_costs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.compile_ms {
            Some(compile_ms) if self.from_cache => writeln!(f, "  compile   from the compiled cache in {compile_ms:.1} ms")?,
            Some(compile_ms) => writeln!(f, "  compile   {compile_ms:.1} ms")?,
            None => {}
        }
        let limits = &self.limits;
        if let Some(listing) = &self.listing {
            writeln!(
                f,
                "  listing   fuel {} of {}, memory {} of {}, time {:.1} ms of {} ms",
                grouped(listing.fuel),
                grouped(limits.fuel),
                mebibytes(listing.peak_memory_bytes),
                mebibytes(limits.memory_bytes),
                listing.elapsed_ms,
                limits.deadline_ms,
            )?;
        }
        Ok(())
    }

    /// The skills and static resources a 0.4 pack carries: each skill's
    /// files with their size and digest, as `skills/list` gives them.
    fn write_content(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.skills.is_empty() {
            writeln!(f, "  skills    {}", self.skills.len())?;
        }
        for skill in &self.skills {
            // Checked at load: URIs are ASCII paths, names lowercase; the
            // description is the pack's, shown printable.
            writeln!(f, "    {}", skill.uri)?;
            writeln!(f, "      {}", printable(&skill.frontmatter.description))?;
            if let rmcp::model::SkillResources::Files(files) = &skill.resources {
                for file in files {
                    writeln!(f, "      - {}  {} bytes  {}", file.uri, grouped(file.size), file.digest)?;
                }
            }
        }
        if !self.resources.is_empty() {
            writeln!(f, "  resources {}", self.resources.len())?;
        }
        for resource in &self.resources {
            let mime_type = resource.mime_type.as_deref().map(printable).unwrap_or_else(|| "no MIME type".into());
            let size = resource.size.map(grouped).unwrap_or_default();
            writeln!(f, "    {}  {}, {size} bytes", resource.uri, mime_type)?;
        }
        Ok(())
    }

    /// The prompts, their arguments, and what completing each gave.
    fn write_prompts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  prompts   {}", self.prompts.len())?;
        for prompt in &self.prompts {
            // Names are checked at load (no control or format characters);
            // everything else the pack wrote is shown as a terminal cannot
            // take it for a command.
            match &prompt.title {
                Some(title) => writeln!(f, "    {}: {}", prompt.name, printable(title))?,
                None => writeln!(f, "    {}", prompt.name)?,
            }
            if let Some(description) = &prompt.description {
                writeln!(f, "      {}", printable(description))?;
            }
            if self.asks_for_missing.contains(&prompt.name.to_string()) {
                writeln!(f, "      asks the user for its missing required arguments, with a form")?;
            }
            for argument in prompt.arguments.iter().flatten() {
                let required = if argument.required == Some(true) { "required" } else { "optional" };
                let description = printable(argument.description.as_deref().unwrap_or(""));
                writeln!(f, "      - {} ({required}) {description}", argument.name)?;
                let offered = self.completions.iter().find(|offered| offered.prompt == prompt.name && offered.argument == argument.name);
                match offered {
                    Some(ArgumentCompletions { error: Some(error), .. }) => {
                        writeln!(f, "          completing it failed: {}", printable(error))?
                    }
                    Some(offered) => {
                        // What the pack returned: escaped, as a terminal shows it.
                        let values: Vec<String> = offered.values.iter().map(|value| printable(value)).collect();
                        let more = if offered.has_more { ", and more" } else { "" };
                        writeln!(f, "          completes to: {}{more}", wrapped(&values, "\n                        "))?;
                    }
                    None => {}
                }
            }
        }
        if self.completions_not_tried > 0 {
            writeln!(
                f,
                "  (completions tried for the first {MAX_COMPLETIONS_TRIED} arguments; {} more not tried)",
                self.completions_not_tried
            )?;
        }
        Ok(())
    }

    /// Every problem, with its hint.
    fn write_problems(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.problems.is_empty() {
            writeln!(f, "  problems")?;
        }
        for (index, problem) in self.problems.iter().enumerate() {
            writeln!(f, "    {}. {}", index + 1, printable(&problem.problem))?;
            if let Some(hint) = problem.hint {
                writeln!(f, "       hint: {hint}")?;
            }
        }
        Ok(())
    }
}

/// Names separated by commas, in lines of about 80 characters joined by `break_with`.
fn wrapped(names: &[String], break_with: &str) -> String {
    let mut out = String::new();
    let mut line_length = 0;
    for (index, name) in names.iter().enumerate() {
        if index > 0 {
            out.push(',');
            if line_length + name.len() > 80 {
                out.push_str(break_with);
                line_length = 0;
            } else {
                out.push(' ');
            }
        }
        out.push_str(name);
        line_length += name.len() + 2;
    }
    out
}

/// Bytes as MiB, to one decimal.
fn mebibytes(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}
