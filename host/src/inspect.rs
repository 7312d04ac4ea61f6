//! `prompt-host inspect`: one plugin file, loaded as the server would load
//! it, outside a server, and what loading it found. (`report` shows it to a
//! person.)

use std::path::Path;

use serde::Serialize;

use crate::catalog::served_name;
use crate::config::ServeConfig;
use crate::convert;
use crate::loader::{self, LoadFailure, LoadTrace, PluginSource};
use crate::startup::loader_for_one;
use prompt_host_kernel::cache::Origin;
use prompt_host_kernel::plugin::Plugin;
use prompt_host_kernel::sandbox::CallUsage;
pub use prompt_host_kernel::validate::Problem;
use prompt_host_trust::signature::Verified;

/// What `prompt-host inspect` found in a plugin file: what it offers, what
/// loading it cost, and every problem that would stop the server loading it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub plugin: String,
    pub file: String,
    pub sha256: String,
    /// The trusted key whose signature covers these bytes, when one was
    /// checked (a pack installed from a registry, under a signature policy).
    pub signature: Option<Verified>,
    pub size_bytes: usize,
    /// Empty when the file did not compile.
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// The version of the prompt-host:prompts WIT package the plugin
    /// targets (`0.2.0`), as its export names it, when it exports the
    /// provider interface at all.
    pub wit_version: Option<String>,
    /// What the pack says it is (0.2 packs), as it said it.
    pub pack: Option<PackDescription>,
    /// How long compiling (or reading it from the compiled cache) took,
    /// when it compiled.
    pub compile_ms: Option<f64>,
    /// Whether the compiled component was read from the compiled cache
    /// (which `serve`, `get` and `complete` share) rather than compiled.
    pub from_cache: bool,
    /// What the one `list-prompts` call at load cost, when it succeeded.
    pub listing: Option<ListingCost>,
    pub limits: LimitsReport,
    /// The prompts, as `prompts/list` would serve them (empty when listing failed).
    pub prompts: Vec<rmcp::model::Prompt>,
    /// What the pack offers to complete each argument to from an empty
    /// value, as a client's first completion/complete asks: for a pack of
    /// the SDK's templates, the argument's choices. Only arguments with
    /// suggestions (or whose completion failed) are listed.
    pub completions: Vec<ArgumentCompletions>,
    /// Arguments whose completion was not tried: past the first
    /// [`MAX_COMPLETIONS_TRIED`].
    pub completions_not_tried: usize,
    /// The skills it carries (a 0.4 pack), as `skills/list` would serve
    /// them: each file's URI, digest and size.
    pub skills: Vec<rmcp::model::Skill>,
    /// The static resources it carries (a 0.4 pack), as `resources/list`
    /// would list them.
    pub resources: Vec<rmcp::model::Resource>,
    /// The prompts (served names) whose missing required arguments the
    /// host asks the user for with a form (a 0.3.1 pack's `asking`).
    pub asks_for_missing: Vec<String>,
    /// What its calls would see under this configuration: what it asks
    /// for and the config grants (never a value itself).
    pub granted: Vec<String>,
    /// What it asks for and the config does not grant, and what the config
    /// grants and it does not ask for (each with its config key).
    pub withheld: Vec<String>,
    /// Why the server would refuse the plugin; empty when it would load it.
    pub problems: Vec<Problem>,
}

/// The most arguments whose completions `inspect` asks a pack for: each is a
/// call, under the pack's limits.
pub const MAX_COMPLETIONS_TRIED: usize = 100;

/// What a pack completes one argument to from an empty value.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentCompletions {
    /// The prompt, by its served name.
    pub prompt: String,
    pub argument: String,
    pub values: Vec<String>,
    /// Whether the pack has more suggestions than it returned.
    pub has_more: bool,
    /// Why completing it failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a pack says it is (`describe-pack`, WIT 0.2).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackDescription {
    pub name: String,
    pub version: String,
    pub description: Option<String>,
    pub authors: Vec<String>,
    pub license: Option<String>,
    pub homepage: Option<String>,
    pub repository: Option<String>,
    /// What it wants to see (WIT 0.3), one line each: `folder logs`,
    /// `origin https://api.example.com/v1/`, `value API_TOKEN`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wants: Vec<String>,
}

impl From<prompt_host_kernel::model::PackInfo> for PackDescription {
    fn from(info: prompt_host_kernel::model::PackInfo) -> Self {
        PackDescription {
            name: info.name,
            version: info.version,
            description: info.description,
            authors: info.authors,
            license: info.license,
            homepage: info.homepage,
            repository: info.repository,
            wants: Vec::new(),
        }
    }
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

/// Loads `path` as the server configured by `config` would (its settings for
/// the plugin, the compiled cache), and reports on it. Only a file that
/// cannot be read, or a sandbox that cannot start, is an error: anything
/// wrong with the plugin itself is a problem in the report.
pub async fn inspect(path: &Path, config: &ServeConfig) -> Result<Report, LoadFailure> {
    let source = PluginSource::read_off_runtime(path, config.registry.max_pack_bytes).await?;
    let settings = config.plugin_settings(&source.id);
    let loader = loader_for_one(&source, &settings, config)?;
    let sandbox = loader.sandbox().clone();
    let mut report = Report {
        plugin: source.id.clone(),
        file: source.origin.clone(),
        sha256: loader::digest(&source.bytes),
        signature: None,
        size_bytes: source.bytes.len(),
        imports: Vec::new(),
        exports: Vec::new(),
        wit_version: None,
        pack: None,
        compile_ms: None,
        from_cache: false,
        listing: None,
        limits: LimitsReport {
            fuel: settings.limits.fuel,
            deadline_ms: settings.limits.deadline.as_millis() as u64,
            memory_bytes: settings.limits.memory_bytes,
            max_wasm_stack_bytes: config.sandbox.max_wasm_stack,
            max_prompts: settings.limits.max_prompts,
        },
        prompts: Vec::new(),
        skills: Vec::new(),
        resources: Vec::new(),
        completions: Vec::new(),
        completions_not_tried: 0,
        asks_for_missing: Vec::new(),
        granted: Vec::new(),
        withheld: Vec::new(),
        problems: Vec::new(),
    };
    let prefix = settings.prefix.clone();
    let mut trace = LoadTrace::default();
    let loaded = loader.load_traced(source, settings, &mut trace).await;
    if let Some(compiled) = &trace.compiled {
        report.compile_ms = Some(milliseconds(compiled.took));
        report.from_cache = compiled.origin == Origin::Cache;
        report.imports = loader::import_names(&sandbox, &compiled.component);
        report.exports = loader::export_names(&sandbox, &compiled.component);
        report.wit_version = report.exports.iter().find_map(|export| {
            export.strip_prefix(prompt_host_kernel::bindings::PROVIDER_INTERFACE)?.strip_prefix('@').map(str::to_string)
        });
    }
    report.listing = trace.listing.map(ListingCost::from);
    report.pack = trace.info.map(PackDescription::from);
    if let (Some(pack), Some(wants)) = (&mut report.pack, &trace.wants) {
        let folders = wants.folders.iter().map(|folder| match &folder.description {
            Some(description) => format!("folder {}: {description}", folder.name),
            None => format!("folder {}", folder.name),
        });
        let origins = wants.origins.iter().map(|origin| format!("origin {origin}"));
        let values = wants.env.iter().map(|name| format!("value {name}"));
        pack.wants = folders.chain(origins).chain(values).collect();
    }
    report.signature = trace.signature.take();
    report.granted = trace.access.as_ref().map(|access| access.given()).unwrap_or_default();
    report.withheld = trace.withheld.iter().map(ToString::to_string).collect();
    let prompts = match &loaded {
        Ok(plugin) => plugin.prompts(),
        Err(_) => &trace.invalid_prompts,
    };
    report.prompts = prompts.iter().map(|prompt| convert::prompt(prompt, &served_name(&prefix, &prompt.name))).collect();
    match loaded {
        Ok(plugin) => {
            report.asks_for_missing = plugin
                .prompts()
                .iter()
                .zip(plugin.typed())
                .filter(|(_, typed)| typed.asks_for_missing)
                .map(|(prompt, _)| served_name(&prefix, &prompt.name))
                .collect();
            (report.completions, report.completions_not_tried) = completions(&plugin, &prefix).await;
            (report.skills, report.resources) = content(&plugin);
        }
        Err(failure) => report.problems = failure.error.into_problems(),
    }
    Ok(report)
}

/// The skills and static resources `plugin` carries, as a server serving it
/// alone would list them.
fn content(plugin: &Plugin) -> (Vec<rmcp::model::Skill>, Vec<rmcp::model::Resource>) {
    use crate::served_content::{Carrier, ContentIndex};
    let (index, _) = ContentIndex::build(&[Carrier::from(plugin)], None);
    let skills = index.skills().iter().map(ContentIndex::skill_entry).collect();
    let listed = index.list_resources(None, usize::MAX).map(|page| page.resources).unwrap_or_default();
    let skill_scheme = format!("{}://", prompt_host_kernel::validate::SKILL_SCHEME);
    (skills, listed.into_iter().filter(|resource| !resource.uri.starts_with(&skill_scheme)).collect())
}

/// What `plugin` completes each of its arguments to from an empty value,
/// for the first [`MAX_COMPLETIONS_TRIED`] arguments; and how many were not
/// tried.
async fn completions(plugin: &Plugin, prefix: &str) -> (Vec<ArgumentCompletions>, usize) {
    let arguments: Vec<(usize, &str, &str)> = plugin
        .prompts()
        .iter()
        .enumerate()
        .flat_map(|(at, prompt)| prompt.arguments.iter().map(move |argument| (at, prompt.name.as_str(), argument.name.as_str())))
        .collect();
    let mut found = Vec::new();
    for &(at, prompt, argument) in arguments.iter().take(MAX_COMPLETIONS_TRIED) {
        // As `serve` answers: choices and booleans from the declaration.
        let declared = plugin.typed().get(at).and_then(|typed| typed.completion(argument, ""));
        let completed = match declared {
            Some(completion) => Ok(completion),
            None => plugin.complete(prompt, argument, "", &[]).await,
        };
        let (values, has_more, error) = match completed {
            Ok(completion) => (completion.values, completion.has_more, None),
            Err(error) => (Vec::new(), false, Some(error.to_string())),
        };
        if !values.is_empty() || error.is_some() {
            let (prompt, argument) = (served_name(prefix, prompt), argument.to_string());
            found.push(ArgumentCompletions { prompt, argument, values, has_more, error });
        }
    }
    (found, arguments.len().saturating_sub(MAX_COMPLETIONS_TRIED))
}

impl From<CallUsage> for ListingCost {
    fn from(usage: CallUsage) -> Self {
        ListingCost { fuel: usage.fuel, peak_memory_bytes: usage.peak_memory_bytes, elapsed_ms: milliseconds(usage.elapsed) }
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
