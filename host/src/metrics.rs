//! What an operator can see into: the Prometheus metrics served at
//! `--metrics`, and the health `/readyz` reports.
//!
//! Every metric is defined here, and every module that records one calls a
//! function of this module. The metrics exist only once [`enable`] has been
//! called (by `serve --metrics`); until then each recording function reads one
//! atomic (the unset [`OnceLock`]) and returns. Once enabled, recording is
//! atomic additions on prometheus counters, gauges and histograms, each
//! resolved once per plugin (the crate's label map has a lock; the request
//! path does not take it after a plugin's first call of a kind), except the
//! per-prompt counter, which takes its map's read lock once per
//! `prompts/get`.
//!
//! Label values are bounded: `plugin` is a plugin's name (its file name),
//! `method` and `outcome` are the `&'static str`s below, and `prompt` is a
//! name the catalog serves (a request for any other name counts nothing),
//! so a client cannot make a series. No argument value is ever a label.
//! When a plugin goes, every series labelled with it goes too; when a
//! plugin's new version serves fewer prompts, the series of the prompts it
//! no longer serves go.
//!
//! The health state (whether the initial load has finished, the catalog
//! version, each plugin's state) is kept whether or not metrics are enabled:
//! it changes only when plugins load, never on a request.
//!
//! This module depends on nothing else in the crate, so that every module
//! on the request path may record into it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};
use prompt_host_kernel::grants::IoUsage;
use prompt_host_kernel::sandbox::CallUsage;

/// The calls into a plugin that are counted: what the `method` label says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `prompts/get`: the plugin's `get-prompt`.
    Get = 0,
    /// `completion/complete`: the plugin's `complete`.
    Complete = 1,
    /// The plugin's `list-prompts`, called once at each load.
    List = 2,
}

impl Method {
    pub fn label(self) -> &'static str {
        match self {
            Method::Get => "prompts/get",
            Method::Complete => "completion/complete",
            Method::List => "list",
        }
    }
}

/// The outcome of a call that succeeded. A failure's outcome is the `failure`
/// kind its error data names (`error::failure_kind`, `CallFailure::kind`).
pub const OK: &str = "ok";

/// The outcome of a `prompts/get` the plugin answered by asking for input
/// (a 0.2 pack's forms).
pub const INPUT_REQUIRED: &str = "input-required";

/// The outcomes a call can end in, each counted without a lookup in the
/// crate's label map (see [`PluginSeries`]). Another `&'static str` is still
/// counted, through the map.
const OUTCOMES: [&str; 13] = [
    OK,
    INPUT_REQUIRED,
    "invalid-arguments",
    "not-found",
    "internal",
    "invalid-reply",
    "fuel",
    "deadline",
    "memory",
    "stack",
    "panic",
    "trap",
    "busy",
];

const METHODS: [Method; 3] = [Method::Get, Method::Complete, Method::List];

/// One plugin's series, each resolved from the crate's label map once, so
/// that recording a call takes no lock: the map of these is read without
/// one (an [`ArcSwap`]), and replaced whole when a plugin is first seen.
#[derive(Default)]
struct PluginSeries {
    /// By method, then by outcome (their places in [`METHODS`] and [`OUTCOMES`]).
    calls: [[OnceLock<IntCounter>; OUTCOMES.len()]; METHODS.len()],
    seconds: [OnceLock<Histogram>; METHODS.len()],
    fuel: OnceLock<Histogram>,
    peak_memory: OnceLock<Histogram>,
    /// What its calls did with their grants, in the order of [`GRANTED`].
    granted: [OnceLock<IntCounter>; GRANTED.len()],
}

/// One per-plugin counter of what calls did with their grants: its name,
/// its help, and which part of a call's [`IoUsage`] it counts.
type GrantedCounter = (&'static str, &'static str, fn(&IoUsage) -> u64);

/// The per-plugin counters of what calls did with the folders and origins
/// they were granted.
const GRANTED: [GrantedCounter; 7] = [
    ("prompt_host_plugin_granted_files_opened_total", "Files and folders calls opened in the plugin's granted folders.", |io| {
        io.files_opened
    }),
    ("prompt_host_plugin_granted_read_bytes_total", "Bytes calls read from the plugin's granted folders.", |io| io.read_bytes),
    ("prompt_host_plugin_granted_dir_entries_total", "Directory entries calls listed in the plugin's granted folders.", |io| {
        io.dir_entries
    }),
    ("prompt_host_plugin_granted_http_requests_total", "HTTP requests calls sent to the plugin's granted origins.", |io| io.http_requests),
    ("prompt_host_plugin_granted_http_sent_bytes_total", "Bytes calls sent to the plugin's granted origins.", |io| io.http_sent_bytes),
    ("prompt_host_plugin_granted_http_received_bytes_total", "Bytes calls received from the plugin's granted origins.", |io| {
        io.http_received_bytes
    }),
    (
        "prompt_host_plugin_granted_denials_total",
        "Uses of grants refused: a path out of a folder, a FIFO, socket or device, a write, a folder or origin not granted, an address refused.",
        |io| io.denials,
    ),
];

/// Every metric the host serves.
pub struct Metrics {
    registry: Registry,
    calls: IntCounterVec,
    call_seconds: HistogramVec,
    call_fuel: HistogramVec,
    call_peak_memory: HistogramVec,
    granted: [IntCounterVec; GRANTED.len()],
    prompt_calls: IntCounterVec,
    content_reads: IntCounterVec,
    loads: IntCounterVec,
    load_failures: IntCounterVec,
    spare_failures: IntCounterVec,
    last_load: IntGaugeVec,
    pack_info: IntGaugeVec,
    pack_updates: IntCounterVec,
    sessions_open: IntGauge,
    requests_in_flight: IntGauge,
    plugins_loaded: IntGauge,
    catalog_prompts: IntGauge,
    catalog_info: IntGaugeVec,
    reloads: IntCounter,
    list_changed: IntCounter,
    http_refusals: IntCounterVec,
    /// Each plugin's series, by plugin name.
    plugins: ArcSwap<HashMap<String, Arc<PluginSeries>>>,
}

/// The call latency buckets, in seconds: 100 µs to 10 s (a deadline is at
/// most what the operator sets; the default is 1 s).
const SECONDS_BUCKETS: &[f64] = &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Fuel buckets: 1000 to 10^10 units, by tens (the default budget is 5·10^8).
const FUEL_BUCKETS: &[f64] = &[1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// Peak memory buckets: 64 KiB (one WebAssembly page) to 4 GiB, by fours.
const MEMORY_BUCKETS: &[f64] = &[65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0, 67108864.0, 268435456.0, 1073741824.0, 4294967296.0];

impl Metrics {
    /// Every metric, registered in a registry of their own.
    pub fn new() -> Metrics {
        let registry = Registry::new();
        fn register<M: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
            registry.register(Box::new(metric.clone())).expect("each metric is registered once, under its own name");
            metric
        }
        let histogram_by = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
            register(&registry, HistogramVec::new(opts, labels).expect("valid histogram"))
        };
        let histogram = |name: &str, help: &str, buckets: &[f64]| histogram_by(name, help, &["plugin"], buckets);
        let counter = |name: &str, help: &str, labels: &[&str]| {
            register(&registry, IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter"))
        };
        let gauges = |name: &str, help: &str, labels: &[&str]| {
            register(&registry, IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauge"))
        };
        let gauge = |name: &str, help: &str| register(&registry, IntGauge::new(name, help).expect("valid gauge"));
        let total = |name: &str, help: &str| register(&registry, IntCounter::new(name, help).expect("valid counter"));
        Metrics {
            calls: counter(
                "prompt_host_plugin_calls_total",
                "Calls into a plugin, by method (prompts/get, completion/complete, list at load) and outcome.",
                &["plugin", "method", "outcome"],
            ),
            call_seconds: histogram_by(
                "prompt_host_plugin_call_duration_seconds",
                "How long calls into a plugin took, by method.",
                &["plugin", "method"],
                SECONDS_BUCKETS,
            ),
            call_fuel: histogram("prompt_host_plugin_call_fuel", "Fuel (roughly, WebAssembly instructions) one call burned.", FUEL_BUCKETS),
            call_peak_memory: histogram(
                "prompt_host_plugin_call_peak_memory_bytes",
                "The size one call's largest linear memory reached, in bytes.",
                MEMORY_BUCKETS,
            ),
            granted: GRANTED.map(|(name, help, _)| counter(name, help, &["plugin"])),
            prompt_calls: counter(
                "prompt_host_prompt_calls_total",
                "prompts/get requests for a prompt the catalog serves, by plugin, prompt (as served) and outcome, \
                 including those refused before the plugin runs.",
                &["plugin", "prompt", "outcome"],
            ),
            content_reads: counter(
                "prompt_host_content_reads_total",
                "skills/get, resources/read and resources/directory/read requests, by the plugin serving the URI (empty when \
                 none does), method and outcome (ok, not-found); answered from memory, no plugin runs.",
                &["plugin", "method", "outcome"],
            ),
            loads: counter("prompt_host_plugin_loads_total", "Successful loads of a plugin (at start and at each change).", &["plugin"]),
            load_failures: counter("prompt_host_plugin_load_failures_total", "Loads of a plugin that failed.", &["plugin"]),
            spare_failures: counter(
                "prompt_host_plugin_spare_failures_total",
                "Instances of a plugin made ahead of a call that failed to start (the next call builds its own).",
                &["plugin"],
            ),
            last_load: gauges(
                "prompt_host_plugin_last_load_timestamp_seconds",
                "When the plugin last loaded successfully (Unix time).",
                &["plugin"],
            ),
            pack_info: gauges(
                "prompt_host_pack_info",
                "The pack each plugin serves: its version (as it describes itself; empty when it does not) and the SHA-256 \
                 of its file, as labels. Always 1.",
                &["plugin", "version", "digest"],
            ),
            pack_updates: counter(
                "prompt_host_pack_updates_total",
                "Checks of a pack's source while serving ([server] update_interval), by plugin and outcome (up-to-date, \
                 updated, restored, refused).",
                &["plugin", "outcome"],
            ),
            sessions_open: gauge("prompt_host_sessions_open", "MCP sessions open over Streamable HTTP."),
            requests_in_flight: gauge(
                "prompt_host_requests_in_flight",
                "prompts/list, prompts/get, completion/complete, and skills and resources requests being answered.",
            ),
            plugins_loaded: gauge("prompt_host_plugins_loaded", "Plugins loaded and serving (an earlier version counts while it serves)."),
            catalog_prompts: gauge("prompt_host_catalog_prompts", "Prompts in the catalog served."),
            catalog_info: gauges("prompt_host_catalog_info", "The catalog served: its version, as a label.", &["version"]),
            reloads: total("prompt_host_reloads_total", "Rescans of the plugin directory after start (a change in it, or SIGHUP)."),
            list_changed: total("prompt_host_list_changed_notifications_total", "notifications/prompts/list_changed sent to clients."),
            http_refusals: counter(
                "prompt_host_http_refusals_total",
                "HTTP requests refused before MCP saw them, by reason (no-token, wrong-token, expired-token, invalid-token, \
                 insufficient-scope, issuer-unavailable, busy, host, origin, unserved-tenant, session, other).",
                &["reason"],
            ),
            registry,
            plugins: ArcSwap::default(),
        }
    }

    /// Runs `record` on plugin `plugin`'s series, adding them the first time.
    fn with_series(&self, plugin: &str, record: impl FnOnce(&PluginSeries)) {
        if let Some(series) = self.plugins.load().get(plugin) {
            return record(series);
        }
        self.plugins.rcu(|plugins| {
            let mut plugins = HashMap::clone(plugins);
            plugins.entry(plugin.to_string()).or_default();
            plugins
        });
        // Dropped again in between (its plugin removed): recorded, not kept.
        match self.plugins.load().get(plugin) {
            Some(series) => record(series),
            None => record(&PluginSeries::default()),
        }
    }

    /// Drops every series labelled with plugin `plugin`, and the series it
    /// holds resolved (a call still running when its plugin goes may record
    /// it once more).
    fn drop_plugin(&self, plugin: &str) {
        let of_plugin = |labels: &HashMap<&str, &str>| labels.get("plugin") == Some(&plugin);
        drop_series(&self.calls, of_plugin);
        drop_series(&self.call_seconds, of_plugin);
        drop_series(&self.call_fuel, of_plugin);
        drop_series(&self.call_peak_memory, of_plugin);
        for granted in &self.granted {
            drop_series(granted, of_plugin);
        }
        drop_series(&self.prompt_calls, of_plugin);
        drop_series(&self.content_reads, of_plugin);
        drop_series(&self.loads, of_plugin);
        drop_series(&self.load_failures, of_plugin);
        drop_series(&self.spare_failures, of_plugin);
        drop_series(&self.last_load, of_plugin);
        drop_series(&self.pack_info, of_plugin);
        drop_series(&self.pack_updates, of_plugin);
        self.plugins.rcu(|plugins| {
            let mut plugins = HashMap::clone(plugins);
            plugins.remove(plugin);
            plugins
        });
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut text = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut text).expect("the text encoder writes to a Vec");
        String::from_utf8(text).expect("the text format is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Starts recording metrics (from then on, for the life of the process), and
/// records the health state known so far.
pub fn enable() -> &'static Metrics {
    let metrics = METRICS.get_or_init(Metrics::new);
    let health = HEALTH.lock().expect("the health state is never poisoned");
    if let Some(catalog) = &health.catalog {
        record_catalog(metrics, &catalog.version, catalog.prompts);
    }
    record_plugins_loaded(metrics, &health);
    metrics
}

/// The metrics, if they are enabled.
pub fn enabled() -> Option<&'static Metrics> {
    METRICS.get()
}

/// The start of a call into a plugin, if metrics are enabled (for
/// [`call_finished`]).
pub fn call_started() -> Option<Instant> {
    METRICS.get().map(|_| Instant::now())
}

/// Records a call into plugin `plugin` that ended in `outcome`.
pub fn call_finished(plugin: &str, method: Method, outcome: &'static str, started: Option<Instant>) {
    if let (Some(metrics), Some(started)) = (METRICS.get(), started) {
        record_call(metrics, plugin, method, outcome, started.elapsed());
    }
}

fn record_call(metrics: &Metrics, plugin: &str, method: Method, outcome: &'static str, elapsed: Duration) {
    let at = method as usize;
    metrics.with_series(plugin, |series| {
        match OUTCOMES.iter().position(|known| *known == outcome) {
            Some(index) => {
                series.calls[at][index].get_or_init(|| metrics.calls.with_label_values(&[plugin, method.label(), outcome])).inc()
            }
            None => metrics.calls.with_label_values(&[plugin, method.label(), outcome]).inc(),
        }
        let seconds = series.seconds[at].get_or_init(|| metrics.call_seconds.with_label_values(&[plugin, method.label()]));
        seconds.observe(elapsed.as_secs_f64());
    });
}

/// Records what one call into plugin `plugin` cost (every call, whatever its
/// method and outcome). What it did with its grants makes series only for
/// a plugin whose calls used some.
pub fn call_usage(plugin: &str, usage: &CallUsage) {
    if let Some(metrics) = METRICS.get() {
        metrics.with_series(plugin, |series| {
            series.fuel.get_or_init(|| metrics.call_fuel.with_label_values(&[plugin])).observe(usage.fuel as f64);
            let peak_memory = series.peak_memory.get_or_init(|| metrics.call_peak_memory.with_label_values(&[plugin]));
            peak_memory.observe(usage.peak_memory_bytes as f64);
            for (index, (_, _, part)) in GRANTED.iter().enumerate() {
                let amount = part(&usage.io);
                if amount > 0 {
                    series.granted[index].get_or_init(|| metrics.granted[index].with_label_values(&[plugin])).inc_by(amount);
                }
            }
        });
    }
}

/// Records a `prompts/get` of `prompt` (a name the catalog serves, as the
/// client named it), served by plugin `plugin`, that ended in `outcome`.
pub fn prompt_served(plugin: &str, prompt: &str, outcome: &'static str) {
    if let Some(metrics) = METRICS.get() {
        metrics.prompt_calls.with_label_values(&[plugin, prompt, outcome]).inc();
    }
}

/// Records a read of a skill, resource or folder (`method`), served by
/// `plugin` (none for a URI nothing serves), that ended in `outcome`.
pub fn content_read(plugin: Option<&str>, method: &'static str, outcome: &'static str) {
    if let Some(metrics) = METRICS.get() {
        metrics.content_reads.with_label_values(&[plugin.unwrap_or(""), method, outcome]).inc();
    }
}

/// Records a plugin's `list-prompts` at load, which took `elapsed`.
pub fn listed(plugin: &str, outcome: &'static str, elapsed: Duration) {
    if let Some(metrics) = METRICS.get() {
        record_call(metrics, plugin, Method::List, outcome, elapsed);
    }
}

/// One request being answered, until dropped.
pub struct InFlight(Option<&'static IntGauge>);

/// Counts a request as in flight until the returned guard is dropped.
pub fn request_started() -> InFlight {
    InFlight(METRICS.get().map(|metrics| {
        metrics.requests_in_flight.inc();
        &metrics.requests_in_flight
    }))
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(gauge) = self.0 {
            gauge.dec();
        }
    }
}

/// Records how many HTTP sessions are open.
pub fn sessions_open(count: usize) {
    if let Some(metrics) = METRICS.get() {
        metrics.sessions_open.set(count as i64);
    }
}

/// Records a rescan of the plugin directory after start.
pub fn reloaded() {
    if let Some(metrics) = METRICS.get() {
        metrics.reloads.inc();
    }
}

/// Records an HTTP request refused for `reason` (a `&'static str` of the
/// front's: the label values are bounded).
pub fn http_refused(reason: &'static str) {
    if let Some(metrics) = METRICS.get() {
        metrics.http_refusals.with_label_values(&[reason]).inc();
    }
}

/// Records a `notifications/prompts/list_changed` sent.
pub fn list_changed_sent() {
    if let Some(metrics) = METRICS.get() {
        metrics.list_changed.inc();
    }
}

/// A plugin's state, as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginState {
    /// Serving its prompts.
    Loaded,
    /// Its file did not load (the log says why), and no earlier version of it serves.
    Failed,
}

impl PluginState {
    fn label(self) -> &'static str {
        match self {
            PluginState::Loaded => "loaded",
            PluginState::Failed => "failed",
        }
    }
}

/// What `/readyz` reports, kept as plugins load.
#[derive(Default)]
struct Health {
    ready: bool,
    catalog: Option<Catalog>,
    plugins: BTreeMap<String, PluginState>,
}

struct Catalog {
    version: String,
    prompts: usize,
}

static HEALTH: Mutex<Health> = Mutex::new(Health { ready: false, catalog: None, plugins: BTreeMap::new() });

/// Whether the initial load has finished, read without the lock.
static READY: AtomicBool = AtomicBool::new(false);
static STOPPING: AtomicBool = AtomicBool::new(false);
static TENANTED: AtomicBool = AtomicBool::new(false);

/// Records that tenants are served: `/readyz`, which needs no token, then
/// counts plugins by state instead of naming them, and names no catalog
/// (each tenant has its own), so it tells no one which packs a tenant has.
pub fn serving_tenants() {
    TENANTED.store(true, Ordering::Release);
}

fn health() -> std::sync::MutexGuard<'static, Health> {
    // Nothing panics while holding it; if something did, the state is still whole.
    HEALTH.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records that plugin `plugin` loaded, from a file of SHA-256 `digest`,
/// a pack of version `version` (as it describes itself), and serves the
/// prompts `served` (as clients name them): the series of prompts an earlier
/// version served and this one does not are dropped, and so is its earlier
/// version's `prompt_host_pack_info`.
pub fn plugin_loaded(plugin: &str, served: &[String], version: Option<&str>, digest: &str) {
    let mut health = health();
    health.plugins.insert(plugin.to_string(), PluginState::Loaded);
    if let Some(metrics) = METRICS.get() {
        metrics.loads.with_label_values(&[plugin]).inc();
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        metrics.last_load.with_label_values(&[plugin]).set(now.as_secs() as i64);
        drop_series(&metrics.prompt_calls, |labels| {
            labels.get("plugin") == Some(&plugin) && !served.iter().any(|p| Some(&p.as_str()) == labels.get("prompt"))
        });
        drop_series(&metrics.pack_info, |labels| labels.get("plugin") == Some(&plugin));
        metrics.pack_info.with_label_values(&[plugin, version.unwrap_or(""), digest]).set(1);
        record_plugins_loaded(metrics, &health);
    }
}

/// Records a check of plugin `plugin`'s source while serving, which ended
/// in `outcome` (`up-to-date`, `updated`, `restored` or `refused`).
pub fn pack_update(plugin: &str, outcome: &'static str) {
    if let Some(metrics) = METRICS.get() {
        metrics.pack_updates.with_label_values(&[plugin, outcome]).inc();
    }
}

/// Records that a file of plugin `plugin` did not load; `still_serving` if
/// an earlier version of it keeps serving.
pub fn plugin_load_failed(plugin: &str, still_serving: bool) {
    let state = if still_serving { PluginState::Loaded } else { PluginState::Failed };
    let mut health = health();
    health.plugins.insert(plugin.to_string(), state);
    if let Some(metrics) = METRICS.get() {
        metrics.load_failures.with_label_values(&[plugin]).inc();
        record_plugins_loaded(metrics, &health);
    }
}

/// Records that an instance of `plugin` made ahead of a call failed to start.
pub fn spare_failed(plugin: &str) {
    if let Some(metrics) = METRICS.get() {
        metrics.spare_failures.with_label_values(&[plugin]).inc();
    }
}

/// Records that plugin `plugin` is gone (its file was removed): `/readyz`
/// no longer lists it, and every series labelled with it is dropped.
pub fn plugin_removed(plugin: &str) {
    let mut health = health();
    health.plugins.remove(plugin);
    if let Some(metrics) = METRICS.get() {
        metrics.drop_plugin(plugin);
        record_plugins_loaded(metrics, &health);
    }
}

fn record_plugins_loaded(metrics: &Metrics, health: &Health) {
    let loaded = health.plugins.values().filter(|state| **state == PluginState::Loaded).count();
    metrics.plugins_loaded.set(loaded as i64);
}

/// Drops every series of `vec` whose labels `matches` says.
fn drop_series<T: prometheus::core::MetricVecBuilder>(
    vec: &prometheus::core::MetricVec<T>,
    matches: impl Fn(&HashMap<&str, &str>) -> bool,
) {
    use prometheus::core::Collector;
    for family in vec.collect() {
        for metric in family.get_metric() {
            let labels: HashMap<&str, &str> = metric.get_label().iter().map(|pair| (pair.name(), pair.value())).collect();
            if matches(&labels) {
                let _ = vec.remove(&labels);
            }
        }
    }
}

/// Records the catalog served from now on.
pub fn catalog_published(version: &str, prompts: usize) {
    let mut health = health();
    health.catalog = Some(Catalog { version: version.to_string(), prompts });
    if let Some(metrics) = METRICS.get() {
        record_catalog(metrics, version, prompts);
    }
}

fn record_catalog(metrics: &Metrics, version: &str, prompts: usize) {
    metrics.catalog_prompts.set(prompts as i64);
    metrics.catalog_info.reset();
    metrics.catalog_info.with_label_values(&[version]).set(1);
}

/// Records that the initial load has finished: `/readyz` answers 200 from now on.
pub fn initial_load_finished() {
    health().ready = true;
    READY.store(true, Ordering::Release);
}

/// Records that the server is stopping (SIGTERM, Ctrl-C): `/readyz` answers
/// 503 from now on, so that a load balancer or Kubernetes sends no new
/// request while the calls in flight finish.
pub fn stopping() {
    STOPPING.store(true, Ordering::Release);
}

/// What `/readyz` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The initial load of plugins is under way.
    Loading,
    /// The server is stopping.
    Stopping,
    /// Ready: the catalog version and each plugin's state, as JSON.
    Ready(String),
}

/// What `/readyz` answers now.
pub fn readiness() -> Readiness {
    if STOPPING.load(Ordering::Acquire) {
        return Readiness::Stopping;
    }
    if !READY.load(Ordering::Acquire) {
        return Readiness::Loading;
    }
    let health = health();
    if TENANTED.load(Ordering::Acquire) {
        let count = |label: &str| health.plugins.values().filter(|state| state.label() == label).count();
        let plugins = serde_json::json!({ "loaded": count("loaded"), "failed": count("failed") });
        return Readiness::Ready(serde_json::json!({ "status": "ready", "plugins": plugins }).to_string());
    }
    let plugins: serde_json::Map<String, serde_json::Value> =
        health.plugins.iter().map(|(name, state)| (name.clone(), state.label().into())).collect();
    let version = health.catalog.as_ref().map(|catalog| catalog.version.clone());
    let prompts = health.catalog.as_ref().map_or(0, |catalog| catalog.prompts);
    let report = serde_json::json!({ "status": "ready", "catalogVersion": version, "prompts": prompts, "plugins": plugins });
    Readiness::Ready(report.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/operating.md's table names every metric registered here (each
    /// name is a string literal of this file).
    #[test]
    fn the_operating_page_names_every_metric() {
        let page = include_str!("../../docs/operating.md");
        let source = include_str!("metrics.rs");
        let names: std::collections::BTreeSet<&str> = source
            .split('"')
            .filter(|text| text.len() > 12 && text.starts_with("prompt_host_") && text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            .collect();
        assert!(names.len() >= 20, "{names:?}");
        let missing: Vec<&&str> = names.iter().filter(|name| !page.contains(&format!("`{name}`"))).collect();
        assert!(missing.is_empty(), "docs/operating.md does not name {missing:?}");
    }

    #[test]
    fn calls_are_counted_by_plugin_method_and_outcome_and_rendered_as_text() {
        let metrics = Metrics::new();
        record_call(&metrics, "acme", Method::Get, OK, Duration::from_millis(2));
        record_call(&metrics, "acme", Method::Get, "fuel", Duration::from_millis(900));
        record_call(&metrics, "acme", Method::Get, OK, Duration::from_micros(50));
        record_catalog(&metrics, "v1", 3);
        record_catalog(&metrics, "v2", 4);
        let text = metrics.render();
        assert!(text.contains("prompt_host_plugin_calls_total{method=\"prompts/get\",outcome=\"ok\",plugin=\"acme\"} 2\n"), "{text}");
        assert!(text.contains("prompt_host_plugin_calls_total{method=\"prompts/get\",outcome=\"fuel\",plugin=\"acme\"} 1\n"), "{text}");
        assert!(
            text.contains("prompt_host_plugin_call_duration_seconds_bucket{method=\"prompts/get\",plugin=\"acme\",le=\"0.0001\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("prompt_host_plugin_call_duration_seconds_count{method=\"prompts/get\",plugin=\"acme\"} 3\n"), "{text}");
        // Only the catalog served now has a version series.
        assert!(text.contains("prompt_host_catalog_info{version=\"v2\"} 1\n"), "{text}");
        assert!(!text.contains("version=\"v1\""), "{text}");
        assert!(text.contains("prompt_host_catalog_prompts 4\n"), "{text}");
    }

    #[test]
    fn an_outcome_outside_the_known_ones_is_counted_too() {
        let metrics = Metrics::new();
        record_call(&metrics, "acme", Method::Complete, "something-new", Duration::ZERO);
        record_call(&metrics, "acme", Method::Complete, "something-new", Duration::ZERO);
        let text = metrics.render();
        let series = "prompt_host_plugin_calls_total{method=\"completion/complete\",outcome=\"something-new\",plugin=\"acme\"} 2\n";
        assert!(text.contains(series), "{text}");
    }

    #[test]
    fn a_plugin_name_is_escaped_in_its_label() {
        let metrics = Metrics::new();
        record_call(&metrics, "a\"b\\c\nd", Method::List, OK, Duration::ZERO);
        let text = metrics.render();
        assert!(text.contains("plugin=\"a\\\"b\\\\c\\nd\""), "{text}");
    }
}
