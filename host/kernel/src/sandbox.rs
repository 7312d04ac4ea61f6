//! The sandbox: where plugin code runs, and the limits it runs under.
//!
//! Every call into a plugin gets a fresh [`Store`] instantiated from a
//! pre-instantiated component, so a trap or a blown limit poisons nothing but
//! that one call. The instance is made ahead of the call when it can be, and
//! dropped after it, off the path of the reply ([`spares`]). Each call is
//! bounded by
//! - fuel (instructions executed),
//! - a wall-clock deadline, enforced by epoch interruption in WebAssembly code
//!   and by a timer around host calls that block,
//! - linear memory, tables and instances (a [`wasmtime::ResourceLimiter`]),
//! - the engine's WebAssembly stack size,
//! - and a bound on how many instances run at once: in all, and of each
//!   plugin (its [`CallQuota`]), so one plugin can only exhaust its own share.
//!
//! Plugins get WASI with nothing granted but what their pack asked for and
//! the operator granted ([`crate::grants`]: read-only folders through the
//! host's own `wasi:filesystem`, named values through the environment, each
//! call's use metered): no other files, no other environment, no
//! arguments, no network, empty stdin. What they print is captured and
//! logged, never written to the host's stdout.
//!
//! Its parts: the engine, the slots and one call's [`Instance`] here; the
//! clocks a pack reads (`clock`), the memory limiter (`memory_guard`), the
//! epoch ticker (`epoch`), the slow lane's turns (`cpu_turn`), what a pack
//! prints (`capture`, `output`), what a call ends in ([`CallFailure`],
//! [`CallUsage`]) and the spare instances ([`spares`]).
//!
//! This module knows nothing of MCP.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::bindings::{Linked, PackExports, WitVersion};
use crate::grants::folders::{self, CallFolders, Descriptors, FolderView, PluginFolders};
use crate::grants::http::{CallHttp, FIELDS_TOO_LARGE, MAX_REQUEST_FIELDS};
use crate::grants::{GrantRefusal, GrantedAccess, IoMeter};
use crate::limits::Limits;
use crate::model::{self, PromptAnswer};

mod capture;
mod clock;
mod cpu_turn;
mod epoch;
mod memory_guard;
mod outcome;
mod output;
pub mod spares;

use capture::CapturedOutput;
use clock::{CallClock, CallWallClock};
use cpu_turn::CpuTurn;
use epoch::{DeadlineReached, RunningCall, RunningCalls, start_epoch_ticker};
use memory_guard::{MAX_INSTANCES, MAX_MEMORIES, MAX_TABLE_ELEMENTS, MAX_TABLES, MemoryGuard};
pub use outcome::{BusyScope, CallFailure, CallUsage, PrepareError};
use output::{OutputLog, panic_message, panic_message_start};
use spares::{SPARE_MEMORY, SPARES, SparePool};

/// Settings of the sandbox shared by every plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// WebAssembly stack one call may use, in bytes.
    pub max_wasm_stack: usize,
    /// Plugin instances that may run at once, across all plugins.
    pub max_concurrent_calls: usize,
    /// How long a call waits for a free slot before it is refused as busy.
    pub queue_wait: Duration,
    /// The largest memory limit of any plugin: the size of a memory slot in
    /// the engine's instance pool.
    pub max_memory_bytes: usize,
    /// How many sandboxes the process runs (one per tenant): each takes
    /// that share of the process's descriptors for grants, so no tenant's
    /// packs can hold another's.
    pub sandboxes: usize,
}

impl SandboxConfig {
    /// These settings, with memory slots large enough for `limits`.
    pub fn fitting(self, limits: &Limits) -> SandboxConfig {
        SandboxConfig { max_memory_bytes: self.max_memory_bytes.max(limits.memory_bytes), ..self }
    }
}

/// The stack each call runs on (wasmtime's default, set here so that the
/// bound below is stated where it is configured).
pub const CALL_STACK: usize = 2 << 20;

/// The largest WebAssembly stack a call may use: the engine refuses more than
/// [`CALL_STACK`], and the host functions a call makes (WASI) run on what the
/// WebAssembly stack leaves of it.
pub const MAX_WASM_STACK: usize = CALL_STACK - (512 << 10);

/// How often, in scheduler ticks, each worker of the runtime that runs
/// calls checks its I/O and timers (tokio's `event_interval`; its default
/// is 61), which is also when it queues again the calls it held back. A
/// call yielded at the epoch's tick is held back by its worker until that
/// worker finds no other work or makes this check, and no other worker can
/// take it meanwhile: so fresh requests run before it, but while long calls
/// hand each other the slow lane on that worker, it waits up to this many
/// of the worker's scheduler ticks, each a task from its queue and up to 3
/// more, each woken by the one before (a long call's poll lasts up to an
/// epoch tick). At the check, the call held back longest runs next, ahead
/// of fresh requests queued meanwhile, and the others go to the back of
/// the worker's queue, where any worker can take them (SECURITY.md, "Known
/// limit"). 16 rather than 61 shortens that wait, for a fifth more time
/// to a fresh request beside busy workers (BENCHMARKS.md, the `busy` row).
pub const RUNTIME_EVENT_INTERVAL: u32 = 16;

/// The multi-threaded tokio runtime calls are made to run on: tokio's
/// defaults (a worker thread per core), with [`RUNTIME_EVENT_INTERVAL`].
/// The bound SECURITY.md states on that wait assumes it: an embedder that
/// runs calls side by side builds its runtime here (the kernel's examples,
/// one call at a time, need not).
pub fn runtime_builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().event_interval(RUNTIME_EVENT_INTERVAL);
    builder
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            max_wasm_stack: 512 << 10,
            max_concurrent_calls: 64,
            queue_wait: Duration::from_millis(2000),
            max_memory_bytes: Limits::default().memory_bytes,
            sandboxes: 1,
        }
    }
}

/// One plugin's share of the sandbox: how many of its calls may run at once,
/// and its one turn in the slow lane.
#[derive(Debug, Clone)]
pub struct CallQuota {
    calls: Arc<Semaphore>,
    limit: usize,
    /// A long call of the plugin takes this before it queues for the slow
    /// lane, so each plugin has at most one call in the lane or queued for
    /// it: the lane's turns go round the plugins a tick at a time, and a
    /// plugin that spins delays another plugin's long call by at most one
    /// tick of one of its calls per round.
    slow_turn: Arc<Semaphore>,
}

impl CallQuota {
    /// A quota of `limit` calls at once.
    pub fn new(limit: usize) -> CallQuota {
        CallQuota { calls: Arc::new(Semaphore::new(limit)), limit, slow_turn: Arc::new(Semaphore::new(1)) }
    }
}

/// The engine's configuration: fuel, epochs, the stack limit, and (if
/// `pooled`) an instance pool sized for the calls that may run at once, so
/// that instantiation costs no mmap or munmap.
fn engine_config(config: &SandboxConfig, pooled: bool) -> Config {
    let mut wasm_config = Config::new();
    wasm_config
        .consume_fuel(true)
        .epoch_interruption(true)
        .max_wasm_stack(config.max_wasm_stack)
        .async_stack_size(CALL_STACK)
        .wasm_component_model(true)
        // Plugins are synchronous components called one call per store: no
        // store needs the component-model-async machinery, whose per-store
        // worker fiber costs an allocation, a fiber switch and an error value
        // (with a backtrace, under RUST_BACKTRACE=1) when each store drops.
        .concurrency_support(false)
        // No toolchain that builds packs (wit-bindgen, componentize-py,
        // jco) emits wasm GC types, and the compiled code of that proposal
        // had an advisory that can abort the host (GHSA-43j2-gcp4-m22g,
        // fixed in wasmtime 48.0.9, which this build cannot take yet:
        // Cargo.toml): a pack that declares a GC type is refused when it
        // is compiled.
        .wasm_gc(false);
    if pooled {
        // Each call, and each spare instance, gets the full share the
        // limiter allows it, so no pack, however hostile, can exhaust the
        // pool for the others.
        let calls = (config.max_concurrent_calls + SPARES) as u32;
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(calls)
            .max_core_instances_per_component(MAX_INSTANCES as u32)
            .max_memories_per_component(MAX_MEMORIES as u32)
            .max_tables_per_component(MAX_TABLES as u32)
            .max_memories_per_module(MAX_MEMORIES as u32)
            .max_tables_per_module(MAX_TABLES as u32)
            .total_core_instances(calls * MAX_INSTANCES as u32)
            .total_memories(calls * MAX_MEMORIES as u32)
            .total_tables(calls * MAX_TABLES as u32)
            .total_stacks(calls)
            .max_memory_size(config.max_memory_bytes)
            .table_elements(MAX_TABLE_ELEMENTS)
            // Reset the pages a call touched with memset rather than handing
            // them back to the kernel: unmapping pages in a multi-threaded
            // process costs a TLB shootdown across cores, which profiling
            // showed to dominate a short call.
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT)
            .async_stack_keep_resident(KEEP_RESIDENT)
            .pagemap_scan(Enabled::Auto);
        wasm_config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    wasm_config
}

/// Bytes of each pooled memory, table and stack kept resident between calls.
const KEEP_RESIDENT: usize = 1 << 20;

/// The engine, the WASI linker and the slots that calls run in.
pub struct Sandbox {
    engine: Engine,
    linker: Linker<CallState>,
    /// The linker of 0.3 packs: `linker` with `wasi:http`, so that a pack
    /// may call the origins it is granted. A 0.1 or 0.2 pack that imports
    /// `wasi:http` is refused at load, as it always was.
    linker_with_http: Linker<CallState>,
    config: SandboxConfig,
    /// The calls running now: the epoch ticker runs only while there are any.
    running: Arc<RunningCalls>,
    output_log: Arc<OutputLog>,
    observer: Arc<dyn CallObserver>,
    slots: Arc<Semaphore>,
    /// Turns for long calls: one fewer than the cores.
    slow_lane: Arc<Semaphore>,
    /// Instances made ahead of their plugins' next calls.
    spares: SparePool<Instance>,
    /// How many spares were built, and how many calls took one.
    spares_made: AtomicU64,
    spares_handed_out: AtomicU64,
    /// This sandbox's share of the process's descriptors for grants (one
    /// of [`SandboxConfig::sandboxes`] equal shares): a tenant's calls,
    /// however many, cannot hold another tenant's.
    descriptors: Arc<Descriptors>,
    /// What a call sees when its plugin sees nothing (a listing's).
    no_access: Arc<PluginFolders>,
}

impl Sandbox {
    /// Creates the engine and starts its epoch ticker.
    pub fn new(config: SandboxConfig) -> Result<Sandbox, PrepareError> {
        let engine = match Engine::new(&engine_config(&config, true)) {
            Ok(engine) => engine,
            Err(error) => {
                // The pool reserves address space up front, which a
                // `ulimit -v` or a tool like valgrind may forbid.
                tracing::warn!("instance pool unavailable ({error}); allocating instances on demand");
                Engine::new(&engine_config(&config, false)).map_err(|e| PrepareError::Compile(e.to_string()))?
            }
        };
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| PrepareError::Link(e.to_string()))?;
        // The filesystem interfaces are the host's own: granted folders, read-only and metered.
        folders::add_to_linker(&mut linker, CallState::folders).map_err(|e| PrepareError::Link(e.to_string()))?;
        let mut linker_with_http = linker.clone();
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker_with_http).map_err(|e| PrepareError::Link(e.to_string()))?;
        let running = Arc::new(RunningCalls::default());
        start_epoch_ticker(&engine, running.clone());
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Sandbox {
            engine,
            linker,
            linker_with_http,
            running,
            output_log: Arc::default(),
            observer: Arc::new(Unobserved),
            slots: Arc::new(Semaphore::new(config.max_concurrent_calls)),
            slow_lane: Arc::new(Semaphore::new(cores.saturating_sub(1).max(1))),
            spares: SparePool::new(SPARES, SPARE_MEMORY),
            spares_made: AtomicU64::new(0),
            spares_handed_out: AtomicU64::new(0),
            descriptors: Descriptors::for_process().share(config.sandboxes.max(1)),
            no_access: Arc::new(PluginFolders::new(GrantedAccess::default(), Arc::new(Descriptors::new(1)))),
            config,
        })
    }

    /// This sandbox, telling `observer` what each call used.
    pub fn observed_by(self, observer: Arc<dyn CallObserver>) -> Sandbox {
        Sandbox { observer, ..self }
    }

    /// The engine, for compiling components.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Compiles a component from its binary form.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component, PrepareError> {
        Component::new(&self.engine, bytes).map_err(|e| PrepareError::Compile(format!("{e:#}")))
    }

    /// Links a component against the WASI the host provides and checks that
    /// it exports the prompt-provider interface of `version`.
    pub fn prepare(&self, component: &Component, version: WitVersion) -> Result<Linked<CallState>, PrepareError> {
        let linker = if version.can_be_granted() { &self.linker_with_http } else { &self.linker };
        let instance_pre = linker.instantiate_pre(component).map_err(|e| PrepareError::Link(format!("{e:#}")))?;
        version.link(component, instance_pre).map_err(PrepareError::Link)
    }

    /// Instantiates a fresh instance of a prepared component, under `limits`,
    /// once the plugin's `quota` and then the sandbox have a free slot.
    /// The host copies at most `copy_budget` bytes out of the instance in any
    /// one call (its answer, or a call it makes to the host). `plugin` names
    /// the plugin in the log lines of what it printed.
    pub async fn instantiate(
        &self,
        pre: &Linked<CallState>,
        limits: &Limits,
        copy_budget: usize,
        quota: &CallQuota,
        plugin: &str,
    ) -> Result<Instance, CallFailure> {
        let slots = self.call_slots(quota).await?;
        self.new_instance(limits, copy_budget, quota, plugin, &self.no_access.clone(), slots, true).instantiated(pre).await
    }

    /// The folders of a plugin whose calls see `access`, in its share of the
    /// sandbox's descriptors.
    pub fn plugin_folders(&self, access: GrantedAccess) -> Arc<PluginFolders> {
        Arc::new(PluginFolders::new(access, self.descriptors.share(4)))
    }

    /// The spare instances the sandbox holds now, and how many calls took one.
    pub fn spares(&self) -> Spares {
        let (held, memory_bytes) = self.spares.contents();
        let (made, handed_out) = (self.spares_made.load(Ordering::Relaxed), self.spares_handed_out.load(Ordering::Relaxed));
        Spares { held, memory_bytes, made, handed_out }
    }

    /// A slot of the plugin's `quota` and one of the sandbox's, for one call.
    async fn call_slots(&self, quota: &CallQuota) -> Result<[OwnedSemaphorePermit; 2], CallFailure> {
        // Free slots are taken without arming a timer.
        if let Ok(own) = quota.calls.clone().try_acquire_owned()
            && let Ok(slot) = self.slots.clone().try_acquire_owned()
        {
            return Ok([own, slot]);
        }
        // The plugin's own quota first: calls waiting for it hold no sandbox
        // slot, so a plugin that is hammered queues only its own calls. One
        // wait in all, however it is split between the two.
        let waited = self.config.queue_wait;
        let until = tokio::time::Instant::now() + waited;
        let own = tokio::time::timeout_at(until, quota.calls.clone().acquire_owned())
            .await
            .map_err(|_| CallFailure::Busy { limit: quota.limit, waited, scope: BusyScope::Plugin })?
            .expect("a quota never closes its semaphore");
        let slot = tokio::time::timeout_at(until, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| CallFailure::Busy { limit: self.config.max_concurrent_calls, waited, scope: BusyScope::Sandbox })?
            .expect("the sandbox never closes its semaphore");
        Ok([own, slot])
    }

    /// A store for one instance, under `limits`, in the `slots` it holds,
    /// its clock started: what [`Instance::instantiated`] instantiates the pack in.
    /// The host copies at most `copy_budget` bytes out of it in one call.
    /// An instance that is `reported` tells the log and the observer of its
    /// failure (a spare's failure is left to the call that builds the next
    /// instance).
    fn new_instance(
        &self,
        limits: &Limits,
        copy_budget: usize,
        quota: &CallQuota,
        plugin: &str,
        access: &Arc<PluginFolders>,
        slots: [OwnedSemaphorePermit; 2],
        reported: bool,
    ) -> Instance {
        let stdout = CapturedOutput::new(limits.output_capture_bytes);
        let stderr = CapturedOutput::new(limits.output_capture_bytes);
        let clock = CallClock::default();
        let mut wasi = WasiCtxBuilder::new();
        for (name, value) in &access.access().values {
            wasi.env(name, value.expose());
        }
        let wasi = wasi
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .wall_clock(CallWallClock(clock.clone()))
            .monotonic_clock(clock.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let started = Instant::now();
        let folders = CallFolders::new(access.clone(), Arc::new(IoMeter::new(limits)));
        let http = CallHttp::new(folders.meter().clone(), folders.holder(), started + limits.deadline);
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let state = CallState {
            wasi,
            clock,
            table,
            guard: MemoryGuard::new(limits.memory_bytes),
            started,
            deadline: started + limits.deadline,
            cpu: Arc::new(CpuTurn::new(quota.slow_turn.clone(), self.slow_lane.clone())),
            folders,
            http,
            http_fields: http_fields(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.guard);
        store.set_fuel(limits.fuel).expect("fuel is enabled on the engine");
        // wasmtime counts the bytes it copies out of the guest in each call
        // against this "hostcall fuel" (by default 128 MiB), before the host
        // allocates them: many strings aliasing one buffer are stopped here.
        store.set_hostcall_fuel(copy_budget);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|context| {
            let state = context.data();
            if Instant::now() >= state.deadline {
                return Err(DeadlineReached.into());
            }
            // A long call gives its slow-lane turns back at this yield, and
            // queues for them again at once (`cpu_turn`).
            state.cpu.tick();
            // tokio's yield_now holds the call back on its worker until the
            // worker finds no other work or checks its I/O (every
            // RUNTIME_EVENT_INTERVAL of its ticks), so a fresh request runs
            // before the calls that yielded. Woken by itself, the call would
            // go to the back of the worker's queue, and fresh requests would
            // wait behind every yielded call's tick (BENCHMARKS.md).
            Ok(UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now())))
        });

        Instance {
            store,
            pack: None,
            limits: limits.clone(),
            copy_budget,
            max_wasm_stack: self.config.max_wasm_stack,
            plugin: plugin.to_string(),
            stdout,
            stderr,
            slots: Some(slots),
            running: Some(RunningCall::start(&self.running)),
            made_in: Duration::ZERO,
            reported,
            output_log: self.output_log.clone(),
            observer: self.observer.clone(),
        }
    }
}

/// The spare instances of a sandbox ([`spares`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spares {
    /// How many it holds.
    pub held: usize,
    /// The bytes of their linear memories, all together.
    pub memory_bytes: usize,
    /// How many were built, since the sandbox was made (held, handed out,
    /// dropped to make room, or dropped at once as too large to keep).
    pub made: u64,
    /// How many calls took one, since the sandbox was made.
    pub handed_out: u64,
}

/// What a spare held while it was built, given back once it is shelved.
struct SpareBuild {
    _slots: Option<[OwnedSemaphorePermit; 2]>,
    _running: Option<RunningCall>,
}

/// One fresh instance of a plugin, for one call (or, while it waits for one,
/// a spare).
pub struct Instance {
    store: Store<CallState>,
    pack: Option<Box<dyn PackExports<CallState>>>,
    limits: Limits,
    copy_budget: usize,
    max_wasm_stack: usize,
    plugin: String,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
    /// The plugin's slot and the sandbox's, both held to the end of the
    /// call (none while a spare waits).
    slots: Option<[OwnedSemaphorePermit; 2]>,
    /// Keeps the epoch ticker going while the instance runs (not while a
    /// spare waits).
    running: Option<RunningCall>,
    /// How long building a spare took: the call that takes it counts it.
    made_in: Duration,
    /// Whether a failure is logged and observed: not while building a spare.
    reported: bool,
    output_log: Arc<OutputLog>,
    observer: Arc<dyn CallObserver>,
}

impl Instance {
    /// This store (made by [`Sandbox::new_instance`]) with the pack of `pre`
    /// instantiated in it, within its deadline.
    async fn instantiated(mut self, pre: &Linked<CallState>) -> Result<Instance, CallFailure> {
        if pre.version().can_be_granted() {
            // Besides, the files its call may hold open at once.
            let cap = MAX_HOST_RESOURCES_WITH_HTTP + self.limits.grant_files_opened;
            self.store.data_mut().table.set_max_capacity(cap);
        }
        let cpu = self.store.data().cpu.clone();
        let result = step(&cpu, self.limits.deadline, pre.instantiate(&mut self.store)).await;
        self.pack = Some(self.settle(result, false)?);
        Ok(self)
    }

    /// This instance as a spare, and what it held while it was built: its
    /// slots and its place among the running calls (a turn in the slow lane
    /// its start took went back when the start ended). The caller drops
    /// them once the spare is on the shelf (until then the spare still
    /// counts in the pool's share of calls).
    fn shelved(mut self) -> (Instance, SpareBuild) {
        self.made_in = self.store.data().started.elapsed();
        let held = SpareBuild { _slots: self.slots.take(), _running: self.running.take() };
        (self, held)
    }

    /// A spare, handed out to a call that holds `slots`: its clock, deadline
    /// and copy budget start now, less the time its making took; the fuel
    /// it burned while it started stays burned.
    fn hand_out(mut self, slots: [OwnedSemaphorePermit; 2], copy_budget: usize, sandbox: &Sandbox) -> Instance {
        let now = Instant::now();
        self.copy_budget = copy_budget;
        self.slots = Some(slots);
        self.running = Some(RunningCall::start(&sandbox.running));
        self.reported = true;
        let state = self.store.data_mut();
        // (A clock too young to go back that far starts the call now; the
        // deadline below is right either way.)
        state.started = now.checked_sub(self.made_in).unwrap_or(now);
        state.deadline = now + self.limits.deadline.saturating_sub(self.made_in);
        self.store.set_hostcall_fuel(copy_budget);
        // The epoch moved on while the spare waited.
        self.store.set_epoch_deadline(1);
        self
    }

    /// The pack, for its one call: its clocks start now.
    fn take_pack(&mut self) -> Box<dyn PackExports<CallState>> {
        self.store.data().clock.start();
        self.pack.take().expect("an Instance is handed out instantiated, and makes one call")
    }

    fn remaining(&self) -> Duration {
        self.store.data().deadline.saturating_duration_since(Instant::now())
    }

    /// Calls the plugin's `describe-pack`, `list-prompts`,
    /// `prompts-that-ask` and `content` (those its version has), in the same instance and
    /// within the same deadline, and says what the calls cost.
    ///
    /// A 0.4 pack's `content` is copied within `content_budget` bytes
    /// (`validate::copy_budget` of its content), not the listing's.
    pub async fn list_prompts(mut self, content_budget: usize) -> Result<(Listing, CallUsage), CallFailure> {
        let (pack, cpu) = (self.take_pack(), self.store.data().cpu.clone());
        // Only the calls the pack has are made: each step takes the call's
        // turns, which a call it lacks must not wait for.
        let described = match pack.version().describes_itself() {
            true => {
                let result = step(&cpu, self.remaining(), pack.describe_pack(&mut self.store)).await;
                self.settle(result, false)?
            }
            false => None,
        };
        let asks = pack.exports_asking();
        let result = step(&cpu, self.remaining(), pack.list_prompts(&mut self.store)).await;
        let prompts = self.settle(result, !asks && !pack.exports_content())?;
        let carries = pack.exports_content();
        let prompts_that_ask = match asks {
            true => {
                let result = step(&cpu, self.remaining(), pack.prompts_that_ask(&mut self.store)).await;
                self.settle(result, !carries)?
            }
            false => None,
        };
        let content = match carries {
            true => {
                let result = step(&cpu, self.remaining(), pack.content(&mut self.store, content_budget)).await;
                self.settle(result, true)?
            }
            false => None,
        };
        let (info, wants) = described.map_or((None, None), |described| (Some(described.info), described.wants));
        let typed_arguments = pack.version().declares_argument_kinds();
        Ok((Listing { prompts, typed_arguments, info, wants, prompts_that_ask, content }, self.usage()))
    }

    /// Calls the plugin's `get-prompt`, with the answers to the forms it
    /// asked for, if any (`input`; a pack that cannot ask never gets any).
    pub async fn get_prompt(
        &mut self,
        name: &str,
        arguments: &[model::Argument],
        input: Option<&model::Input>,
    ) -> Result<Result<PromptAnswer, model::PromptError>, CallFailure> {
        let (pack, remaining, cpu) = (self.take_pack(), self.remaining(), self.store.data().cpu.clone());
        let result = step(&cpu, remaining, pack.get_prompt(&mut self.store, name, arguments, input)).await;
        self.settle(result, true)
    }

    /// Calls the plugin's `complete`.
    pub async fn complete(
        &mut self,
        prompt: &str,
        argument: &str,
        value: &str,
        context: &[model::Argument],
    ) -> Result<Result<model::Completion, model::PromptError>, CallFailure> {
        let (pack, remaining, cpu) = (self.take_pack(), self.remaining(), self.store.data().cpu.clone());
        let result = step(&cpu, remaining, pack.complete(&mut self.store, prompt, argument, value, context)).await;
        self.settle(result, true)
    }

    /// Turns a failed step into the [`CallFailure`] that explains it, and
    /// reports the call once it is over: after its `last` step, or after
    /// any step that failed.
    fn settle<R>(&mut self, result: Result<wasmtime::Result<R>, tokio::time::error::Elapsed>, last: bool) -> Result<R, CallFailure> {
        let meter = self.store.data().folders.meter();
        let (refusal, deadline_reached) = (meter.refusal(), meter.deadline_reached());
        let outcome = match result {
            // A refusal is the cause of whatever follows it: the pack's own
            // answer, a trap, or running to its deadline after it.
            _ if let Some(refusal) = refusal => Err(CallFailure::Grant(refusal)),
            Ok(Ok(_)) if deadline_reached => Err(CallFailure::DeadlineExceeded { deadline: self.limits.deadline }),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.classify(&error)),
            Err(_) => Err(CallFailure::DeadlineExceeded { deadline: self.limits.deadline }),
        };
        if self.reported && (last || outcome.is_err()) {
            self.report(matches!(outcome, Err(CallFailure::Panic { .. })));
        }
        outcome
    }

    /// What the call has cost so far.
    fn usage(&self) -> CallUsage {
        CallUsage {
            fuel: self.limits.fuel - self.store.get_fuel().unwrap_or(0),
            peak_memory_bytes: self.store.data().guard.largest,
            elapsed: self.store.data().started.elapsed(),
            io: self.store.data().folders.meter().usage(),
        }
    }

    /// Logs what the plugin printed, and what the call cost (also told to
    /// the sandbox's [`CallObserver`]). When the call
    /// `panicked`, its panic output is left out: the panic's message is
    /// logged once, with the failure it ends in.
    fn report(&self, panicked: bool) {
        let (stderr, dropped) = self.stderr.contents();
        let stderr = match panic_message_start(&stderr) {
            Some(start) if panicked => &stderr[..start],
            _ => &stderr,
        };
        self.output_log.log(&self.plugin, "stderr", stderr, dropped);
        let (stdout, dropped) = self.stdout.contents();
        self.output_log.log(&self.plugin, "stdout", &stdout, dropped);
        let usage = self.usage();
        self.observer.call_finished(&self.plugin, &usage);
        tracing::debug!(
            plugin = %self.plugin.escape_debug(),
            fuel_used = usage.fuel,
            peak_memory_bytes = usage.peak_memory_bytes,
            elapsed_us = usage.elapsed.as_micros() as u64,
            "plugin call finished"
        );
    }

    fn classify(&self, error: &wasmtime::Error) -> CallFailure {
        if error.is::<DeadlineReached>() {
            return CallFailure::DeadlineExceeded { deadline: self.limits.deadline };
        }
        if let Some(refusal) = error.chain().find_map(|cause| cause.downcast_ref::<GrantRefusal>()) {
            return CallFailure::Grant(refusal.clone());
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => return CallFailure::OutOfFuel { budget: self.limits.fuel },
            Some(Trap::StackOverflow) => {
                return CallFailure::StackOverflow { limit_bytes: self.max_wasm_stack };
            }
            Some(Trap::Interrupt) => {
                return CallFailure::DeadlineExceeded { deadline: self.limits.deadline };
            }
            _ => {}
        }
        if error.chain().any(|cause| cause.to_string().contains(HOSTCALL_FUEL_EXHAUSTED)) {
            return CallFailure::CopyBudget { budget: self.copy_budget };
        }
        if error.chain().any(|cause| cause.to_string().contains(FIELDS_TOO_LARGE)) {
            let message = format!("the headers it built for one request passed the {} KiB they may take", MAX_REQUEST_FIELDS >> 10);
            return CallFailure::Trap { message };
        }
        if self.store.data().guard.denied.is_some() {
            return CallFailure::MemoryLimit { limit_bytes: self.limits.memory_bytes };
        }
        if let Some(message) = panic_message(&self.stderr.contents().0) {
            return CallFailure::Panic { message };
        }
        let message = match error.downcast_ref::<Trap>() {
            Some(trap) => trap.to_string(),
            None => error.root_cause().to_string(),
        };
        CallFailure::Trap { message }
    }
}

/// Runs one step of a call (its start, or a function of the pack) within
/// `limit`, counting the time it runs and holding a long call's turns only
/// while it runs ([`cpu_turn`]).
async fn step<F: std::future::Future>(cpu: &Arc<CpuTurn>, limit: Duration, call: F) -> Result<F::Output, tokio::time::error::Elapsed> {
    tokio::time::timeout(limit, cpu.run(call)).await
}

/// How wasmtime's error reads when a call copied more than its hostcall fuel
/// allows (the error type itself is private to wasmtime).
const HOSTCALL_FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";

/// Told what each call into a plugin used, when it finishes: the server
/// records it in its metrics and on the call's trace span. Called on the
/// thread that ran the call, inside the call's span, so it must be quick.
pub trait CallObserver: Send + Sync {
    /// The call into `plugin` finished, having used `usage`.
    fn call_finished(&self, plugin: &str, usage: &CallUsage);

    /// An instance of `plugin` made ahead of a call failed to start (the
    /// next call builds its own, and reports what happens to it).
    fn spare_failed(&self, _plugin: &str) {}
}

/// The observer of a sandbox no one observes.
struct Unobserved;

impl CallObserver for Unobserved {
    fn call_finished(&self, _plugin: &str, _usage: &CallUsage) {}
}

/// The most WASI resources (streams, pollables, ...) the host holds for one
/// instance at once: past it, the WASI call that would make one traps. A
/// prompt needs a handful; wasmtime's default (a million) let a spare's
/// start hold hundreds of MiB of host memory that no limit counted.
pub const MAX_HOST_RESOURCES: usize = 4096;

/// The most for an instance linked with `wasi:http` (a 0.3 pack's), besides
/// the files its call may open (`grant_files_opened`): each of its fields
/// and outgoing bodies holds host memory of its own (at most
/// [`MAX_REQUEST_FIELDS`] and two chunks of
/// [`crate::grants::http::OUTGOING_BODY_CHUNK`]) before anything is sent or
/// charged, so their number is what bounds it: about 4 MiB per call, and
/// 16 KiB more for each file the budget allows.
pub const MAX_HOST_RESOURCES_WITH_HTTP: usize = 256;

/// What a pack's `list-prompts` (and `describe-pack` and `prompts-that-ask`,
/// where its version has them) answered, in the host's model, for
/// `validate`.
#[derive(Default)]
pub struct Listing {
    /// The prompts.
    pub prompts: Vec<model::Prompt>,
    /// Whether the pack's version declares its arguments' kinds, defaults
    /// and examples (0.3 on): then they are checked and enforced.
    pub typed_arguments: bool,
    /// What the pack says it is (0.2 on).
    pub info: Option<model::PackInfo>,
    /// What the pack wants to see (0.3 on).
    pub wants: Option<model::Wants>,
    /// The prompts a 0.3.1 pack that exports `asking` opts in to have the
    /// host ask for their missing arguments.
    pub prompts_that_ask: Option<Vec<String>>,
    /// What a 0.4 pack that exports `content` carries: skills' files and
    /// static resources.
    pub content: Option<model::PackContent>,
}

/// The state of one call's store.
pub struct CallState {
    wasi: WasiCtx,
    /// The clocks the pack reads (see [`CallClock`]).
    clock: CallClock,
    table: ResourceTable,
    guard: MemoryGuard,
    started: Instant,
    deadline: Instant,
    /// How long the call has run, and its turns in the slow lane while it
    /// runs as a long call ([`cpu_turn`]).
    cpu: Arc<CpuTurn>,
    /// What its pack was granted, and what the call used of it.
    folders: CallFolders,
    /// Its outgoing HTTP, to the origins its pack was granted.
    http: CallHttp,
    http_fields: wasmtime_wasi_http::WasiHttpCtx,
}

/// wasi:http's context: the fields a pack builds bounded.
fn http_fields() -> wasmtime_wasi_http::WasiHttpCtx {
    let mut context = wasmtime_wasi_http::WasiHttpCtx::new();
    context.set_field_size_limit(MAX_REQUEST_FIELDS);
    context
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        self.http.set_call(self.clock.started(), self.deadline);
        wasmtime_wasi_http::WasiHttpCtxView { ctx: &mut self.http_fields, table: &mut self.table, hooks: &mut self.http }
    }
}

impl CallState {
    /// The view the granted folders' `wasi:filesystem` works on.
    fn folders(&mut self) -> FolderView<'_> {
        FolderView { table: &mut self.table, folders: &self.folders, begun: self.clock.started() }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

#[cfg(test)]
mod tests {
    use super::epoch::TICKER_LINGER;
    use super::*;

    /// Whether `condition` holds within five seconds.
    fn eventually(condition: impl Fn() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_pack_that_declares_a_gc_type_is_refused_when_compiled() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let refused = sandbox.compile(br#"(component (core module (type (struct (field i32)))))"#).unwrap_err();
        let PrepareError::Compile(message) = refused else { panic!("refused as {refused:?}") };
        assert!(message.contains("struct indexed types not supported without the gc feature"), "{message}");
        // The same component without the struct type compiles.
        sandbox.compile(br#"(component (core module (type (func))))"#).unwrap();
    }

    #[test]
    fn the_ticker_parks_when_no_call_runs_and_keeps_ticking_while_one_does() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let running = sandbox.running.clone();
        let parked = || running.parked.load(Ordering::SeqCst);
        assert!(eventually(parked), "an idle ticker parks");
        let ticks = || running.ticks.load(Ordering::Relaxed);
        let idle_ticks = ticks();
        std::thread::sleep(TICKER_LINGER);
        assert_eq!(ticks(), idle_ticks, "the epoch advanced with no call running");
        let call = RunningCall::start(&running);
        std::thread::sleep(TICKER_LINGER * 3);
        assert!(!parked(), "the ticker parked while a call ran");
        assert!(ticks() > idle_ticks, "the epoch did not advance while a call ran");
        drop(call);
        assert!(eventually(parked), "the ticker parks again once the call ends");
        let parked_ticks = ticks();
        std::thread::sleep(TICKER_LINGER);
        assert_eq!(ticks(), parked_ticks, "the epoch advanced while the ticker was parked");
    }

    /// A call yielded at the epoch's tick, on a worker that other tasks
    /// keep busy (two that wake each other, as long calls hand each other
    /// the slow lane), runs again once the worker checks its I/O: within
    /// [`RUNTIME_EVENT_INTERVAL`] of the worker's ticks. In a tick the
    /// worker polls a task from its queue and up to 3 more, each woken by
    /// the one before, and each poll here goes round its loop at most twice
    /// (the other's wake may be stored already): at most 8 rounds a tick,
    /// over the ticks between two checks. Measured: 120 rounds with an
    /// interval of 16, 480 with tokio's default of 61: the held-back call
    /// runs in the tick of the check itself, so the bound is the ticks
    /// before it, the interval less one, times 8. That arithmetic is
    /// tokio's (1.54: `MAX_LIFO_POLLS_PER_TICK`, and the held-back calls
    /// woken into the LIFO slot); a tokio that changes it may move the
    /// count. One worker, so that rounds count that worker's ticks (with
    /// two, the busy tasks move between them); counted, not timed. The busy
    /// tasks stop after a million rounds, so a call never queued again
    /// fails the test rather than hanging it.
    #[test]
    fn a_call_yielded_on_a_busy_worker_runs_again_within_the_event_interval() {
        use std::sync::atomic::AtomicBool;
        use tokio::sync::Notify;
        let runtime = runtime_builder().worker_threads(1).build().unwrap();
        let (rounds, done) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (ping, pong) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        for (own, other) in [(ping.clone(), pong.clone()), (pong, ping)] {
            let (rounds, done) = (rounds.clone(), done.clone());
            runtime.spawn(async move {
                while !done.load(Ordering::SeqCst) && rounds.load(Ordering::SeqCst) < 1_000_000 {
                    rounds.fetch_add(1, Ordering::SeqCst);
                    other.notify_one();
                    own.notified().await;
                }
                other.notify_one();
            });
        }
        let yielding = runtime.spawn({
            let rounds = rounds.clone();
            async move {
                let mut gaps = Vec::new();
                for _ in 0..200 {
                    let before = rounds.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    gaps.push(rounds.load(Ordering::SeqCst) - before);
                }
                done.store(true, Ordering::SeqCst);
                gaps
            }
        });
        let gaps = runtime.block_on(yielding).unwrap();
        let longest = *gaps.iter().max().unwrap();
        assert!(longest <= u64::from(RUNTIME_EVENT_INTERVAL - 1) * 8, "the other tasks went round {longest} times while it was held back");
    }

    #[test]
    fn an_instance_holds_at_most_max_host_resources() {
        // Issue "Hardening, round 3", item 9: 99,000 pollables made in a
        // start held about 24 MiB of host memory per spare, uncounted.
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let quota = CallQuota::new(1);
        let slots = [quota.calls.clone().try_acquire_owned().unwrap(), sandbox.slots.clone().try_acquire_owned().unwrap()];
        let mut instance = sandbox.new_instance(&Limits::default(), 1, &quota, "acme", &sandbox.no_access.clone(), slots, false);
        let table = &mut instance.store.data_mut().table;
        for _ in 0..MAX_HOST_RESOURCES {
            table.push(()).unwrap();
        }
        assert!(matches!(table.push(()), Err(wasmtime::component::ResourceTableError::Full)));
    }

    #[test]
    fn a_shelved_spare_gives_back_its_slots_and_a_handed_out_one_counts_its_build_time() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let quota = CallQuota::new(1);
        let lane = sandbox.slow_lane.available_permits();
        let slots = || [quota.calls.clone().try_acquire_owned().unwrap(), sandbox.slots.clone().try_acquire_owned().unwrap()];
        let limits = Limits { deadline: Duration::from_millis(1000), ..Limits::default() };
        let mut instance = sandbox.new_instance(&limits, 1, &quota, "acme", &sandbox.no_access.clone(), slots(), false);
        assert_eq!(sandbox.running.count.load(Ordering::SeqCst), 1);
        instance.store.data_mut().started -= Duration::from_millis(300);

        let (mut spare, held) = instance.shelved();
        assert!(spare.slots.is_none() && spare.running.is_none() && !spare.store.data().cpu.holds_turns());
        assert!((300..400).contains(&spare.made_in.as_millis()), "{:?}", spare.made_in);
        // Until what it held is dropped, none of it is free.
        assert_eq!(quota.calls.available_permits(), 0);
        drop(held);
        assert_eq!(
            (quota.calls.available_permits(), sandbox.slots.available_permits()),
            (1, SandboxConfig::default().max_concurrent_calls)
        );
        assert_eq!((quota.slow_turn.available_permits(), sandbox.slow_lane.available_permits()), (1, lane));
        assert_eq!(sandbox.running.count.load(Ordering::SeqCst), 0, "a waiting spare keeps no ticker running");

        // Handed out, its deadline is what the limit leaves after its build.
        spare.made_in = Duration::from_millis(300);
        let call = spare.hand_out(slots(), 7, &sandbox);
        let remaining = call.remaining();
        assert!(remaining <= Duration::from_millis(700) && remaining > Duration::from_millis(600), "{remaining:?}");
        assert!(call.store.data().started.elapsed() >= Duration::from_millis(300));
        assert_eq!((call.copy_budget, call.reported), (7, true));
        assert_eq!(sandbox.running.count.load(Ordering::SeqCst), 1);
        assert_eq!(quota.calls.available_permits(), 0);
    }
}
