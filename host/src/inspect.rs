//! `prompt-host inspect` and `prompt-host get`: one plugin file, loaded as
//! the server would load it, outside a server.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::served_name;
use crate::convert;
use crate::loader::{self, LoadFailure, LoadTrace, Loader, PluginSettings, PluginSource};
use crate::sandbox::{CallUsage, Sandbox, SandboxConfig};
pub use crate::validate::Problem;

/// What `prompt-host inspect` found in a plugin file: what it offers, what
/// loading it cost, and every problem that would stop the server loading it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub plugin: String,
    pub file: String,
    pub sha256: String,
    pub size_bytes: usize,
    /// Empty when the file did not compile.
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// How long compiling took, when it compiled.
    pub compile_ms: Option<f64>,
    /// What the one `list-prompts` call at load cost, when it succeeded.
    pub listing: Option<ListingCost>,
    pub limits: LimitsReport,
    /// The prompts, as `prompts/list` would serve them (empty when listing failed).
    pub prompts: Vec<rmcp::model::Prompt>,
    /// Why the server would refuse the plugin; empty when it would load it.
    pub problems: Vec<Problem>,
}

/// The cost of listing a plugin's prompts, against its limits.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListingCost {
    pub fuel: u64,
    pub peak_memory_bytes: usize,
    pub elapsed_ms: f64,
}

/// The limits a plugin's calls run under.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsReport {
    pub fuel: u64,
    pub deadline_ms: u64,
    pub memory_bytes: usize,
    pub max_wasm_stack_bytes: usize,
    pub max_prompts: usize,
}

impl Report {
    /// Whether the server would load the plugin.
    pub fn loadable(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Loads `path` as the server would, with `settings`, and reports on it. Only
/// a file that cannot be read, or a sandbox that cannot start, is an error:
/// anything wrong with the plugin itself is a problem in the report.
pub async fn inspect(path: &Path, settings: PluginSettings, sandbox_config: SandboxConfig) -> Result<Report, LoadFailure> {
    let source = PluginSource::read(path)?;
    let sandbox = sandbox_for(&source, &settings, sandbox_config.clone())?;
    let loader = Loader::new(sandbox.clone(), None);
    let mut report = Report {
        plugin: source.id.clone(),
        file: source.origin.clone(),
        sha256: loader::digest(&source.bytes),
        size_bytes: source.bytes.len(),
        imports: Vec::new(),
        exports: Vec::new(),
        compile_ms: None,
        listing: None,
        limits: LimitsReport {
            fuel: settings.limits.fuel,
            deadline_ms: settings.limits.deadline.as_millis() as u64,
            memory_bytes: settings.limits.memory_bytes,
            max_wasm_stack_bytes: sandbox_config.max_wasm_stack,
            max_prompts: settings.limits.max_prompts,
        },
        prompts: Vec::new(),
        problems: Vec::new(),
    };
    let prefix = settings.prefix.clone();
    let mut trace = LoadTrace::default();
    let loaded = loader.load_traced(source, settings, &mut trace).await;
    if let Some((component, took)) = &trace.compiled {
        report.compile_ms = Some(milliseconds(*took));
        report.imports = loader::import_names(&sandbox, component);
        report.exports = loader::export_names(&sandbox, component);
    }
    report.listing = trace.listing.map(ListingCost::from);
    let prompts = match &loaded {
        Ok(plugin) => plugin.prompts(),
        Err(_) => &trace.invalid_prompts,
    };
    report.prompts = prompts.iter().map(|prompt| convert::prompt(prompt, &served_name(&prefix, &prompt.name))).collect();
    if let Err(failure) = loaded {
        report.problems = failure.error.into_problems();
    }
    Ok(report)
}

impl From<CallUsage> for ListingCost {
    fn from(usage: CallUsage) -> Self {
        ListingCost {
            fuel: usage.fuel,
            peak_memory_bytes: usage.peak_memory_bytes,
            elapsed_ms: milliseconds(usage.elapsed),
        }
    }
}

/// Milliseconds, to a tenth of a microsecond: enough for a report, and stable
/// to print.
fn milliseconds(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 10_000_000.0).round() / 10_000.0
}

/// The report as a person reads it.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.len() {
            0 => writeln!(f, "{}: a prompt pack this host can load", self.plugin)?,
            1 => writeln!(f, "{}: this host would refuse it (1 problem)", self.plugin)?,
            n => writeln!(f, "{}: this host would refuse it ({n} problems)", self.plugin)?,
        }
        writeln!(f, "  file      {}", self.file)?;
        writeln!(f, "  size      {} bytes", grouped(self.size_bytes as u64))?;
        writeln!(f, "  sha256    {}", self.sha256)?;
        for (label, names) in [("exports", &self.exports), ("imports", &self.imports)] {
            if !names.is_empty() {
                writeln!(f, "  {label:<9} {}", wrapped(names, "\n            "))?;
            }
        }
        if let Some(compile_ms) = self.compile_ms {
            writeln!(f, "  compile   {compile_ms:.1} ms")?;
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
        writeln!(f, "  prompts   {}", self.prompts.len())?;
        for prompt in &self.prompts {
            match &prompt.title {
                Some(title) => writeln!(f, "    {}: {title}", prompt.name)?,
                None => writeln!(f, "    {}", prompt.name)?,
            }
            if let Some(description) = &prompt.description {
                writeln!(f, "      {description}")?;
            }
            for argument in prompt.arguments.iter().flatten() {
                let required = if argument.required == Some(true) { "required" } else { "optional" };
                let description = argument.description.as_deref().unwrap_or("");
                writeln!(f, "      - {} ({required}) {description}", argument.name)?;
            }
        }
        if !self.problems.is_empty() {
            writeln!(f, "  problems")?;
        }
        for (index, problem) in self.problems.iter().enumerate() {
            writeln!(f, "    {}. {}", index + 1, problem.problem)?;
            if let Some(hint) = problem.hint {
                writeln!(f, "       hint: {hint}")?;
            }
        }
        Ok(())
    }
}

/// 1234567 as "1,234,567".
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
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

/// Loads `path` as the server would, for `prompt-host get`: a registry of
/// that one plugin behind a prompt server, to call without a client.
pub async fn serve_one(
    path: &Path,
    settings: PluginSettings,
    sandbox_config: SandboxConfig,
) -> Result<crate::handler::PromptServer, LoadFailure> {
    let source = PluginSource::read(path)?;
    let sandbox = sandbox_for(&source, &settings, sandbox_config)?;
    let plugin = Loader::new(sandbox, None).load(source, settings).await?;
    let registry = crate::registry::Registry::new(vec![Arc::new(plugin)]);
    Ok(crate::handler::PromptServer::new(Arc::new(registry), crate::handler::DEFAULT_PAGE_SIZE))
}

/// A sandbox for one plugin, with memory slots large enough for its limit.
fn sandbox_for(
    source: &PluginSource,
    settings: &PluginSettings,
    config: SandboxConfig,
) -> Result<Arc<Sandbox>, LoadFailure> {
    let config = SandboxConfig { max_memory_bytes: config.max_memory_bytes.max(settings.limits.memory_bytes), ..config };
    let sandbox = Sandbox::new(config).map_err(|error| LoadFailure {
        origin: source.origin.clone(),
        error: loader::LoadError::Link(error.to_string()),
    })?;
    Ok(Arc::new(sandbox))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::LoadError;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(500_000_000), "500,000,000");
    }

    #[test]
    fn load_errors_become_problems_with_hints() {
        let problems = LoadError::CoreModule.into_problems();
        assert_eq!(
            problems,
            [Problem {
                problem: "a core WebAssembly module, not a component".into(),
                hint: Some("build the pack for the wasm32-wasip2 target, or wrap the module with `wasm-tools component new`"),
            }]
        );
    }
}
