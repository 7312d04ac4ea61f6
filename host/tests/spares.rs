//! Instances made ahead of time, in process: a plugin called keeps one spare,
//! built fresh and handed out once, whose call costs what a call on an
//! instance built on the path costs; the sandbox keeps a bounded number of
//! them; a plugin that goes takes its spare with it, and a new version of a
//! plugin never gets the old one's.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prompt_host::loader::{Loader, PluginSettings, PluginSource};
use prompt_host_kernel::model::{self, PromptAnswer};
use prompt_host_kernel::plugin::Plugin;
use prompt_host_kernel::sandbox::spares::SPARES;
use prompt_host_kernel::sandbox::{CallObserver, CallUsage, Sandbox, SandboxConfig};
use support::built_plugin;

/// Remembers what each call used.
#[derive(Default)]
struct Usages(Mutex<Vec<CallUsage>>);

impl CallObserver for Usages {
    fn call_finished(&self, _plugin: &str, usage: &CallUsage) {
        self.0.lock().unwrap().push(*usage);
    }
}

fn sandbox(observer: Arc<Usages>) -> Arc<Sandbox> {
    Arc::new(Sandbox::new(SandboxConfig::default()).unwrap().observed_by(observer))
}

/// The fresh_counter fixture, loaded as `id`.
async fn fresh_counter(sandbox: &Arc<Sandbox>, id: &str) -> Plugin {
    load(sandbox, "fresh_counter", id).await
}

/// The built fixture `fixture`, loaded as `id`.
async fn load(sandbox: &Arc<Sandbox>, fixture: &str, id: &str) -> Plugin {
    load_with(sandbox, fixture, id, PluginSettings::default()).await
}

/// The built fixture `fixture`, loaded as `id` with `settings`.
async fn load_with(sandbox: &Arc<Sandbox>, fixture: &str, id: &str, settings: PluginSettings) -> Plugin {
    let bytes = std::fs::read(built_plugin(fixture)).unwrap();
    let source = PluginSource { id: id.to_string(), origin: "test".into(), bytes, bundle: None };
    Loader::new(sandbox.clone(), None).load(source, settings).await.unwrap()
}

/// What `count` answers: how many times its instance's counter was
/// incremented, once by its start function and once by each call.
async fn count(plugin: &Plugin) -> String {
    text(plugin, "count").await
}

/// The one text `prompt` of `plugin` answers.
async fn text(plugin: &Plugin, prompt: &str) -> String {
    match plugin.get_prompt(prompt, &[], None).await.unwrap() {
        PromptAnswer::Reply(model::PromptReply { messages, .. }) => match &messages[0].content {
            model::Content::Text(text) => text.text.clone(),
            other => panic!("not a text: {other:?}"),
        },
        other => panic!("not a reply: {other:?}"),
    }
}

/// Waits until the sandbox holds `spares` spares, and says whether it did.
async fn spares_reach(sandbox: &Sandbox, spares: usize) -> bool {
    eventually(|| sandbox.spares().held == spares).await
}

/// Waits until the sandbox has built `made` spares, and says whether it did.
async fn made_reach(sandbox: &Sandbox, made: u64) -> bool {
    eventually(|| sandbox.spares().made >= made).await
}

/// Waits up to 10 s for `condition`, and says whether it came true.
async fn eventually(condition: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while !condition() {
        if Instant::now() > until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_called_plugin_keeps_one_fresh_spare_which_costs_its_call_what_building_it_on_the_path_does() {
    let usages = Arc::new(Usages::default());
    let sandbox = sandbox(usages.clone());
    let plugin = fresh_counter(&sandbox, "fresh_counter").await;
    assert_eq!((sandbox.spares().held, sandbox.spares().memory_bytes), (0, 0), "a plugin never called holds no spare");

    // The first call builds its instance on the path; each call after it
    // takes the spare made after the call before.
    for call in 0..20 {
        assert_eq!(count(&plugin).await, "2", "call {call}");
        assert!(spares_reach(&sandbox, 1).await, "no spare after call {call}");
        assert_eq!(sandbox.spares().held, 1, "one spare per plugin");
        assert_eq!(sandbox.spares().handed_out, call, "every call after the first took the spare");
    }
    let usages = usages.0.lock().unwrap().clone();
    // The loader's listing, then each call once; no spare's making.
    assert_eq!(usages.len(), 1 + 20, "{usages:?}");
    let (on_the_path, from_spares) = (usages[1], &usages[2..]);
    for usage in from_spares {
        // Fuel is deterministic: a spare's call is charged for its
        // instantiation as the call on an instance built on the path was.
        // (This fixture's start, its `_initialize`, runs as it is
        // instantiated: a spare that came with a fresh budget would show
        // less.)
        assert_eq!(usage.fuel, on_the_path.fuel, "{usages:?}");
        assert_eq!(usage.peak_memory_bytes, on_the_path.peak_memory_bytes, "{usages:?}");
    }

    // A completion takes the same spare (its copy budget set when it is handed out).
    let completion = plugin.complete("count", "value", "", &[]).await.unwrap();
    assert_eq!(completion.values, ["2"]);
    assert_eq!(sandbox.spares().handed_out, 20);
    assert!(spares_reach(&sandbox, 1).await);

    // A new version of the plugin (the same bytes, loaded again under the
    // same name, as a reload does) never gets the old version's spare.
    let new_version = fresh_counter(&sandbox, "fresh_counter").await;
    assert_eq!(count(&new_version).await, "2");
    assert_eq!(sandbox.spares().handed_out, 20, "the new version built its first instance itself");
    assert!(spares_reach(&sandbox, 2).await, "each version has its own spare");

    drop(plugin);
    assert!(spares_reach(&sandbox, 1).await, "a plugin that goes takes its spare with it");
    drop(new_version);
    assert!(spares_reach(&sandbox, 0).await);
    assert_eq!(sandbox.spares().memory_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_keeps_spares_for_the_plugins_called_last_and_no_more() {
    let sandbox = sandbox(Arc::default());
    let mut plugins = Vec::new();
    for index in 0..SPARES + 4 {
        plugins.push(fresh_counter(&sandbox, &format!("pack{index}")).await);
    }
    for (index, plugin) in plugins.iter().enumerate() {
        assert_eq!(count(plugin).await, "2");
        assert!(made_reach(&sandbox, index as u64 + 1).await, "after {} plugins called: {:?}", index + 1, sandbox.spares());
        assert_eq!(sandbox.spares().held, (index + 1).min(SPARES));
    }
    let (spares, memory) = (sandbox.spares().held, sandbox.spares().memory_bytes);
    assert_eq!(spares, SPARES);
    // Every plugin is the same fixture, and none's spare was handed out.
    assert_eq!(sandbox.spares().handed_out, 0);
    assert!(memory > 0 && memory % SPARES == 0, "each spare's memory is counted: {memory}");
    // The spare made longest ago made room: the first plugin called has
    // none (its next call builds its own instance), the last one has.
    assert_eq!(count(&plugins[0]).await, "2");
    assert_eq!(sandbox.spares().handed_out, 0, "the first plugin's spare was dropped to make room");
    assert_eq!(count(&plugins[SPARES + 3]).await, "2");
    assert_eq!(sandbox.spares().handed_out, 1, "the last plugin called kept its spare");

    // Every one still answers from an instance no call has used, with or
    // without a spare ready.
    for plugin in &plugins {
        assert_eq!(count(plugin).await, "2");
    }
    plugins.clear();
    assert!(spares_reach(&sandbox, 0).await, "{:?}", sandbox.spares());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spare_is_handed_to_one_of_two_calls_at_once() {
    let sandbox = sandbox(Arc::default());
    let plugin = fresh_counter(&sandbox, "fresh_counter").await;
    assert_eq!(count(&plugin).await, "2");
    assert!(spares_reach(&sandbox, 1).await);
    let (one, other) = tokio::join!(count(&plugin), count(&plugin));
    assert_eq!((one.as_str(), other.as_str()), ("2", "2"));
    // One took the spare; the other built its own instance, or took the
    // spare the first one's end made, if that came first.
    let handed_out = sandbox.spares().handed_out;
    assert!((1..=2).contains(&handed_out), "{handed_out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pack_whose_instance_is_larger_than_one_spares_share_keeps_no_spare() {
    // Issue "Hardening, round 3", item 9: a pack with a raised memory limit
    // could fill the shelf with its own spare and push every other pack's
    // off. A spare may hold at most a quarter of the shelf (64 MiB).
    let mut settings = PluginSettings::default();
    settings.limits.memory_bytes = 128 << 20;
    let config = SandboxConfig::default().fitting(&settings.limits);
    let sandbox = Arc::new(Sandbox::new(config).unwrap());
    let small = fresh_counter(&sandbox, "small").await;
    assert_eq!(count(&small).await, "2");
    assert!(spares_reach(&sandbox, 1).await);
    let big = load_with(&sandbox, "big_start", "big", settings).await;
    for _ in 0..3 {
        assert_eq!(text(&big, "size").await, (80usize << 20).to_string());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let spares = sandbox.spares();
    assert_eq!(spares.held, 1, "only the small pack's spare is on the shelf");
    assert!(spares.memory_bytes < 64 << 20, "{}", spares.memory_bytes);
    assert_eq!(count(&small).await, "2");
    assert_eq!(sandbox.spares().handed_out, 1, "the small pack's call took its spare");
}
