//! `prompt-host inspect`: one plugin file, loaded as the server would load
//! it, outside a server, and what loading it found. (`report` shows it to a
//! person.)

use std::path::Path;

use serde::Serialize;

use crate::catalog::served_name;
use crate::convert;
use crate::loader::{self, LoadFailure, LoadTrace, Loader, PluginSettings, PluginSource};
use crate::sandbox::{CallUsage, SandboxConfig};
use crate::startup::sandbox_for_one;
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
    let sandbox = sandbox_for_one(&source, &settings, sandbox_config.clone())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::LoadError;

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
