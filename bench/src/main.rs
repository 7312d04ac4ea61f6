//! prompt-host-bench: measures prompt-host against a hand-written JSON-RPC
//! floor and an rmcp reference server, and prints the results as markdown.
//!
//! ```sh
//! cargo build --release --locked -p prompt-host -p prompt-host-bench
//! target/release/prompt-host-bench --write BENCHMARKS.md
//! ```
//!
//! The servers are measured alternately, round after round, and each figure
//! is the median over the rounds: the machine is noisy, and ratios measured
//! side by side in one run are what count.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

const CODE: &str = "def hello():\n    print('world')";
const EXPECTED_TEXT: &str = "Please review this Python code:\ndef hello():\n    print('world')";
/// The expected text as it stands, escaped, in a JSON response line.
const EXPECTED_TEXT_JSON: &str = r"Please review this Python code:\ndef hello():\n    print('world')";

/// One section of the bench: what it measures goes into the report.
type Section = fn(&Setup, usize, &mut Report) -> anyhow::Result<()>;

/// The sections, by the names `--only` takes, in the order a full run
/// measures them.
const SECTIONS: [(&str, Section); 20] = [
    ("stdio", |setup, rounds, report| stdio_get(setup, rounds, report)),
    ("sandbox", |setup, _, report| sandbox_alone(setup, report)),
    ("http", |setup, rounds, report| http_get(setup, rounds, report)),
    ("http-sdk", |setup, rounds, report| http_sdk_get(setup, rounds, report)),
    ("list", |setup, _, report| list_walk(setup, report)),
    ("startup", |setup, _, report| startup_and_memory(setup, report)),
    ("scale", |setup, _, report| scale(setup, report)),
    ("languages", |setup, _, report| other_languages(setup, report)),
    ("reload", |setup, _, report| file_to_list_changed(setup, report)),
    ("spinners", |setup, _, report| tail_under_spinners(setup, 8, report)),
    ("fair", |setup, _, report| tail_under_spinners(setup, 64, report)),
    ("busy", |setup, _, report| quick_beside_busy(setup, report)),
    ("idle", |setup, _, report| idle_wakeups(setup, report)),
    ("copy", |setup, _, report| copy_budget_memory(setup, report)),
    ("metrics", |setup, rounds, report| metrics_overhead(setup, rounds, report)),
    ("grants", |setup, rounds, report| granted_calls(setup, rounds, report)),
    ("waiting", |setup, rounds, report| waiting_calls(setup, rounds, report)),
    ("skills", |setup, rounds, report| skills_and_resources(setup, rounds, report)),
    ("sessions", |setup, rounds, report| sealed_sessions(setup, rounds, report)),
    ("fleet", |setup, rounds, report| publish_to_fleet(setup, rounds, report)),
];

fn usage() -> String {
    format!(
        "usage: prompt-host-bench [--write FILE] [--rounds N] [--only SECTION[,SECTION...]] [--compare PROMPT_HOST_BINARY]
       prompt-host-bench --soak floor|rmcp|host|PROMPT_HOST_BINARY IN_FLIGHT REQUESTS
sections: {}",
        SECTIONS.map(|(name, _)| name).join(", ")
    )
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(arguments) = parse_arguments(&args)? else {
        println!("{}", usage());
        return Ok(());
    };
    let write = arguments.values("--write").map(|values| PathBuf::from(&values[0]));
    let rounds: usize = arguments.values("--rounds").map(|values| values[0].parse()).transpose()?.unwrap_or(5);
    ensure!(rounds >= 1, "--rounds takes at least 1 (each figure is a median over the rounds)");
    let setup = Setup::locate(arguments.values("--compare").map(|values| PathBuf::from(&values[0])))?;
    if let Some(values) = arguments.values("--soak") {
        return soak(&setup, &values[0], values[1].parse()?, values[2].parse()?);
    }
    let mut report = Report::default();

    // `--only stdio,sandbox` runs just those sections (for quick comparisons;
    // never with --write, since the table would be incomplete).
    let only: Option<Vec<&str>> = arguments.values("--only").map(|values| values[0].split(',').collect());
    ensure!(only.is_none() || write.is_none(), "--only makes a partial report: do not --write it");
    for (name, measure) in SECTIONS {
        if only.as_ref().is_none_or(|only| only.contains(&name)) {
            measure(&setup, rounds, &mut report)?;
        }
    }

    let text = report.render(&args);
    println!("{text}");
    if let Some(path) = write {
        write_between_markers(&path, &text)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The command line, checked: each option given at most once, with its values.
struct Arguments(Vec<(&'static str, Vec<String>)>);

impl Arguments {
    /// The values given to `option`, if it was given.
    fn values(&self, option: &str) -> Option<&[String]> {
        self.0.iter().find(|(given, _)| *given == option).map(|(_, values)| values.as_slice())
    }
}

/// Reads the command line, refusing what the bench does not know before a
/// run of minutes starts: an unknown option (a typo would otherwise run
/// everything), an option given twice (only one would count), `--soak`
/// beside the others (it would ignore them), an unknown section. None when
/// asked for `--help`.
fn parse_arguments(args: &[String]) -> anyhow::Result<Option<Arguments>> {
    const OPTIONS: [(&str, usize); 5] = [("--write", 1), ("--rounds", 1), ("--only", 1), ("--compare", 1), ("--soak", 3)];
    let mut given = Arguments(Vec::new());
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        if arg == "--help" || arg == "-h" {
            return Ok(None);
        }
        let Some(&(option, count)) = OPTIONS.iter().find(|(option, _)| option == arg) else {
            bail!("unknown argument {arg:?}\n{}", usage());
        };
        ensure!(given.values(option).is_none(), "{option} is given twice\n{}", usage());
        let values: Vec<String> = rest.by_ref().take(count).cloned().collect();
        ensure!(values.len() == count, "{option} takes {count} value(s)\n{}", usage());
        if let Some(value) = values.iter().find(|value| value.starts_with('-')) {
            bail!("{option} takes a value, not {value:?}\n{}", usage());
        }
        if option == "--only" {
            for section in values[0].split(',') {
                ensure!(SECTIONS.iter().any(|(name, _)| *name == section), "no section {section:?}\n{}", usage());
            }
        }
        given.0.push((option, values));
    }
    ensure!(given.values("--soak").is_none() || given.0.len() == 1, "--soak takes no other option\n{}", usage());
    Ok(Some(given))
}

/// How the `--compare` binary is named in the tables.
const COMPARE_NAME: &str = "prompt-host (--compare binary)";

/// Where the binaries and plugins are.
struct Setup {
    bin_dir: PathBuf,
    plugins: PathBuf,
    work: tempfile::TempDir,
    /// `--compare PATH`: another prompt-host binary (an earlier build, say),
    /// measured alternately with the others in the stdio section.
    compare: Option<PathBuf>,
}

impl Setup {
    fn locate(compare: Option<PathBuf>) -> anyhow::Result<Setup> {
        let bin_dir = std::env::current_exe()?.parent().context("no parent")?.to_path_buf();
        for name in ["prompt-host", "floor-server", "rmcp-server"] {
            ensure!(
                bin_dir.join(name).exists(),
                "{} is missing: cargo build --release --locked -p prompt-host -p prompt-host-bench",
                bin_dir.join(name).display()
            );
        }
        let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/target/wasm32-wasip2/release");
        Ok(Setup { bin_dir, plugins, work: tempfile::tempdir()?, compare })
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    fn plugin(&self, name: &str) -> PathBuf {
        self.plugins.join(format!("{name}.wasm"))
    }

    /// A fresh directory under the benchmark's work directory.
    fn dir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = self.work.path().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// A plugin directory with copies of these packs.
    fn plugin_dir(&self, name: &str, packs: &[&str]) -> anyhow::Result<PathBuf> {
        let dir = self.dir(name)?;
        for pack in packs {
            std::fs::copy(self.plugin(pack), dir.join(format!("{pack}.wasm")))?;
        }
        Ok(dir)
    }

    /// The `--compare` binary, if given, in place of `host`'s program.
    fn compare_server(&self, host: &(&'static str, PathBuf, Vec<String>)) -> Option<(&'static str, PathBuf, Vec<String>)> {
        let program = self.compare.clone()?;
        Some((COMPARE_NAME, program, host.2.clone()))
    }

    /// The command line of each server answering `code_review` over stdio.
    fn code_review_servers(&self) -> anyhow::Result<Vec<(&'static str, PathBuf, Vec<String>)>> {
        let dir = self.plugin_dir("code-review", &["code_review"])?;
        let cache = self.work.path().join("cache");
        let host_args =
            vec!["serve".into(), "--plugins".into(), dir.display().to_string(), "--cache-dir".into(), cache.display().to_string()];
        Ok(vec![
            ("floor (hand-written loop)", self.bin("floor-server"), vec![]),
            ("rmcp reference (native)", self.bin("rmcp-server"), vec![]),
            ("prompt-host (sandboxed pack)", self.bin("prompt-host"), host_args),
        ])
    }
}

/// One MCP server over stdio, driven with raw JSON-RPC lines.
struct StdioServer {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioServer {
    fn spawn(program: &Path, args: &[String]) -> anyhow::Result<StdioServer> {
        let mut child = Command::new(program)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let stdin = BufWriter::with_capacity(1 << 16, child.stdin.take().unwrap());
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().unwrap());
        Ok(StdioServer { child, stdin, stdout, next_id: 1 })
    }

    fn start(program: &Path, args: &[String]) -> anyhow::Result<StdioServer> {
        let mut server = StdioServer::spawn(program, args)?;
        server.initialize()?;
        Ok(server)
    }

    fn initialize(&mut self) -> anyhow::Result<()> {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "prompt-host-bench", "version": "0" }
        });
        self.call("initialize", params)?;
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string())?;
        self.stdin.flush()?;
        Ok(())
    }

    fn send(&mut self, line: &str) -> anyhow::Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        Ok(())
    }

    fn read_line(&mut self) -> anyhow::Result<String> {
        let mut line = String::new();
        ensure!(self.stdout.read_line(&mut line)? > 0, "the server closed stdout");
        Ok(line)
    }

    /// One request, waited for; notifications in between are skipped.
    fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string())?;
        self.stdin.flush()?;
        loop {
            let message: Value = serde_json::from_str(&self.read_line()?)?;
            if message["id"] == json!(id) {
                if let Some(error) = message.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(message["result"].clone());
            }
        }
    }

    /// Reads lines until a notification with `method` arrives.
    fn wait_for_notification(&mut self, method: &str) -> anyhow::Result<()> {
        loop {
            if self.read_line()?.contains(&format!("\"method\":\"{method}\"")) {
                return Ok(());
            }
        }
    }

    /// `total` prompts/get of code_review with `in_flight` outstanding,
    /// written as `writes` says.
    fn load(&mut self, total: u64, in_flight: u64, writes: Writes) -> anyhow::Result<Load> {
        self.load_prompt(total, in_flight, writes, &Asked::code_review())
    }

    /// [`StdioServer::load`] of the prompt `asked` names, each answer
    /// checked to hold what it expects.
    fn load_prompt(&mut self, total: u64, in_flight: u64, writes: Writes, asked: &Asked) -> anyhow::Result<Load> {
        self.load_prompt_counting_errors(total, in_flight, writes, asked, false).map(|(load, _)| load)
    }

    /// [`StdioServer::load_prompt`], counting the answers that are errors
    /// when `errors_allowed` (any other answer must be the expected one).
    fn load_prompt_counting_errors(
        &mut self,
        total: u64,
        in_flight: u64,
        writes: Writes,
        asked: &Asked,
        errors_allowed: bool,
    ) -> anyhow::Result<(Load, u64)> {
        let first = self.next_id;
        let mut errors = 0;
        let mut sent_at: HashMap<u64, Instant> = HashMap::with_capacity(in_flight as usize);
        let mut latencies = Vec::with_capacity(total as usize);
        let started = Instant::now();
        let mut sent = 0;
        while sent < in_flight.min(total) {
            self.send_get(first + sent, &mut sent_at, asked)?;
            if writes == Writes::PerMessage {
                self.stdin.flush()?;
            }
            sent += 1;
        }
        self.stdin.flush()?;
        while (latencies.len() as u64) < total {
            let line = self.read_line()?;
            let Some(id) = response_id(&line) else { continue };
            if !line.contains(asked.expected) {
                ensure!(errors_allowed && line.contains(r#""error":"#), "request {id} was answered {line}");
                errors += 1;
            }
            let at = sent_at.remove(&id).context("a response to no request")?;
            latencies.push(at.elapsed());
            if sent < total {
                self.send_get(first + sent, &mut sent_at, asked)?;
                sent += 1;
            }
            match writes {
                Writes::PerMessage => self.stdin.flush()?,
                // Write out once every response read so far is answered.
                Writes::Batched if self.stdout.buffer().is_empty() => self.stdin.flush()?,
                Writes::Batched => {}
            }
        }
        self.next_id = first + total;
        Ok((Load::new(started.elapsed(), latencies), errors))
    }

    /// `total` requests of `method` with `params`, one in flight, one
    /// message per write, each answer checked to hold `expected`; with the
    /// server's CPU and context switches per request.
    fn load_method(&mut self, total: u64, method: &str, params: &Value, expected: &str) -> anyhow::Result<Load> {
        let before = ProcessCost::of(self.pid())?;
        let mut latencies = Vec::with_capacity(total as usize);
        let started = Instant::now();
        for _ in 0..total {
            let id = self.next_id;
            self.next_id += 1;
            let sent = Instant::now();
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string())?;
            self.stdin.flush()?;
            loop {
                let line = self.read_line()?;
                if response_id(&line) == Some(id) {
                    ensure!(line.contains(expected), "{method} was answered {}", &line[..line.len().min(300)]);
                    break;
                }
            }
            latencies.push(sent.elapsed());
        }
        let load = Load::new(started.elapsed(), latencies);
        Ok(before.per_request(ProcessCost::of(self.pid())?, total, load))
    }

    fn send_get(&mut self, id: u64, sent_at: &mut HashMap<u64, Instant>, asked: &Asked) -> anyhow::Result<()> {
        sent_at.insert(id, Instant::now());
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "prompts/get",
            "params": { "name": asked.prompt, "arguments": asked.arguments }
        });
        self.send(&request.to_string())
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A prompt the driver asks for, and what each answer must hold (as
/// serialized JSON).
struct Asked {
    prompt: &'static str,
    arguments: Value,
    expected: &'static str,
}

impl Asked {
    /// `code_review`, as every section but `grants` asks for it.
    fn code_review() -> Asked {
        Asked { prompt: "code_review", arguments: json!({ "code": CODE }), expected: EXPECTED_TEXT_JSON }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the raw JSON-RPC driver writes its requests.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// Each request in its own write, as soon as it can be sent: what real
    /// clients do (the official SDKs write one message per write).
    PerMessage,
    /// Requests gathered and written together once every response read so
    /// far is answered. Fewer, larger writes: this flatters a server that
    /// reads many messages per wake-up.
    Batched,
}

/// A way to drive a stdio server with load.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    Raw(Writes),
    /// The official TypeScript SDK client (`bench/sdk-driver.mjs`).
    TypeScriptSdk,
}

impl Driver {
    const ALL: [Driver; 3] = [Driver::Raw(Writes::PerMessage), Driver::TypeScriptSdk, Driver::Raw(Writes::Batched)];

    fn title(self) -> &'static str {
        match self {
            Driver::Raw(Writes::PerMessage) => "a raw JSON-RPC driver (Rust, pipes), one message per write (as real clients write)",
            Driver::TypeScriptSdk => "the official TypeScript SDK client (`StdioClientTransport`, Node)",
            Driver::Raw(Writes::Batched) => {
                "a raw JSON-RPC driver (Rust, pipes), batched writes (flushed once every response read so far is answered; flatters batch readers)"
            }
        }
    }

    /// The warm-up, 1-in-flight and 64-in-flight loads on one fresh server,
    /// and the server's peak resident memory in KiB.
    fn measure(self, program: &Path, args: &[String], name: &str) -> anyhow::Result<(Load, Load, u64)> {
        const LOADS: [(u64, u64); 3] = [(500, 1), (3000, 1), (30_000, 64)];
        match self {
            Driver::Raw(writes) => {
                let mut server = StdioServer::start(program, args)?;
                check_reply(&mut server, name)?;
                let pid = server.pid();
                let mut loads = LOADS.iter().map(|&(total, in_flight)| {
                    let before = ProcessCost::of(pid)?;
                    let load = server.load(total, in_flight, writes)?;
                    Ok::<_, anyhow::Error>(before.per_request(ProcessCost::of(pid)?, total, load))
                });
                let (_, one, many) = (loads.next().unwrap()?, loads.next().unwrap()?, loads.next().unwrap()?);
                Ok((one, many, memory_kib(server.pid(), "VmHWM")?))
            }
            Driver::TypeScriptSdk => {
                let loads: Vec<Value> = LOADS.iter().map(|&(total, in_flight)| json!({ "total": total, "inFlight": in_flight })).collect();
                let mut arguments = vec![Value::from(loads).to_string().into(), "--".into(), program.as_os_str().to_owned()];
                arguments.extend(args.iter().map(Into::into));
                let mut sdk = SdkDriver::start("sdk-driver.mjs", &arguments)?;
                let pid = sdk.next()?["pid"].as_u64().with_context(|| format!("bench/{} printed no pid", sdk.script))? as u32;
                let mut results = Vec::new();
                let mut peak = 0;
                for _ in LOADS {
                    results.push(sdk.measure(pid)?);
                    // Read before the client closes the server.
                    peak = memory_kib(pid, "VmHWM")?;
                    sdk.measured()?;
                }
                sdk.finish()?;
                Ok((results[1], results[2], peak))
            }
        }
    }
}

/// The id of a JSON-RPC response line, read without parsing the whole line.
fn response_id(line: &str) -> Option<u64> {
    let start = line.find("\"id\":")? + 5;
    let digits: String = line[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Throughput and latency of one load run, and what it cost the server.
#[derive(Debug, Clone, Copy)]
struct Load {
    per_second: f64,
    p50: Duration,
    p99: Duration,
    /// The server's CPU time per request, all threads (when measured).
    cpu: Option<Duration>,
    /// The server's context switches per request, all threads.
    switches: Option<f64>,
}

/// CPU time and context switches of every thread of a process so far, from
/// /proc (`schedstat` counts nanoseconds, where `stat` counts 10 ms ticks).
/// Stable where throughput is noisy: it does not count time spent waiting.
#[derive(Debug, Clone, Default)]
struct ProcessCost {
    /// Each thread's CPU time and context switches, by thread id.
    threads: std::collections::HashMap<String, (Duration, u64)>,
}

impl ProcessCost {
    fn of(pid: u32) -> anyhow::Result<ProcessCost> {
        let mut cost = ProcessCost::default();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            let task = task?.path();
            // A thread may end between the listing and the reads.
            let (Ok(schedstat), Ok(status)) =
                (std::fs::read_to_string(task.join("schedstat")), std::fs::read_to_string(task.join("status")))
            else {
                continue;
            };
            let nanos: u64 = schedstat.split_whitespace().next().context("empty schedstat")?.parse()?;
            let mut switches = 0;
            for line in status.lines().filter(|line| line.contains("ctxt_switches")) {
                switches += line.split_whitespace().nth(1).context("no count")?.parse::<u64>()?;
            }
            let id = task.file_name().context("a task with no id")?.to_string_lossy().into_owned();
            cost.threads.insert(id, (Duration::from_nanos(nanos), switches));
        }
        Ok(cost)
    }

    /// What a load of `requests` cost, from the costs before and after it:
    /// what each thread alive after it spent since before it (all of it, for
    /// a thread started meanwhile). A thread that ended meanwhile counts
    /// nothing: the threads that end are the blocking pool's, after 10 s
    /// idle (summing the threads alive at each reading would take an ended
    /// thread's whole life off the load).
    fn per_request(self, after: ProcessCost, requests: u64, load: Load) -> Load {
        let (mut cpu, mut switches) = (Duration::ZERO, 0);
        for (id, (after_cpu, after_switches)) in &after.threads {
            let (before_cpu, before_switches) = self.threads.get(id).copied().unwrap_or_default();
            cpu += after_cpu.saturating_sub(before_cpu);
            switches += after_switches.saturating_sub(before_switches);
        }
        Load { cpu: Some(cpu / requests as u32), switches: Some(switches as f64 / requests as f64), ..load }
    }
}

impl Load {
    fn new(elapsed: Duration, mut latencies: Vec<Duration>) -> Load {
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
        Load { per_second: latencies.len() as f64 / elapsed.as_secs_f64(), p50: at(0.5), p99: at(0.99), cpu: None, switches: None }
    }

    /// The median of each figure over rounds.
    fn median(loads: &[Load]) -> Load {
        let mid = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        Load {
            per_second: mid(loads.iter().map(|l| l.per_second).collect()),
            p50: Duration::from_secs_f64(mid(loads.iter().map(|l| l.p50.as_secs_f64()).collect())),
            p99: Duration::from_secs_f64(mid(loads.iter().map(|l| l.p99.as_secs_f64()).collect())),
            cpu: loads
                .iter()
                .map(|l| l.cpu.map(|cpu| cpu.as_secs_f64()))
                .collect::<Option<Vec<_>>>()
                .map(|cpu| Duration::from_secs_f64(mid(cpu))),
            switches: loads.iter().map(|l| l.switches).collect::<Option<Vec<_>>>().map(mid),
        }
    }

    /// The server's cost per request, as a table cell.
    fn cost(&self) -> String {
        match (self.cpu, self.switches) {
            (Some(cpu), Some(switches)) => format!("{} / {switches:.1}", micros(cpu)),
            _ => "–".into(),
        }
    }
}

/// Checks that a server answers code_review exactly as the pack does.
fn check_reply(server: &mut StdioServer, name: &str) -> anyhow::Result<()> {
    let reply = server.call("prompts/get", json!({ "name": "code_review", "arguments": { "code": CODE } }))?;
    ensure!(reply["messages"][0]["content"]["text"] == EXPECTED_TEXT, "{name} answered {reply}");
    Ok(())
}

fn stdio_get(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let mut servers = setup.code_review_servers()?;
    servers.extend(setup.compare_server(&servers[2]));
    // Warm the compiled caches, so no round pays for compilation.
    for (name, program, args) in &servers[2..] {
        check_reply(&mut StdioServer::start(program, args)?, name)?;
    }
    for driver in Driver::ALL {
        let mut results: Vec<[Vec<Load>; 2]> = servers.iter().map(|_| [Vec::new(), Vec::new()]).collect();
        let mut peak_rss = 0;
        for _ in 0..rounds {
            for (index, (name, program, args)) in servers.iter().enumerate() {
                let (one, many, peak) = driver.measure(program, args, name)?;
                results[index][0].push(one);
                results[index][1].push(many);
                if index == 2 {
                    peak_rss = peak_rss.max(peak);
                }
            }
        }
        let rows = servers
            .iter()
            .enumerate()
            .map(|(index, (name, _, _))| (name.to_string(), Load::median(&results[index][0]), Load::median(&results[index][1])))
            .collect();
        report.stdio.push((driver.title(), rows));
        if driver == Driver::Raw(Writes::PerMessage) {
            report.facts.push(("Peak resident memory of prompt-host, stdio at 64 in flight".into(), format!("{:.1} MiB", mib(peak_rss))));
        }
    }
    Ok(())
}

/// What `--metrics` costs: prompts/get of code_review over stdio (the raw
/// driver, one message per write), with metrics off and on, the two
/// alternated in each round. Nothing scrapes: this is the cost of recording.
fn metrics_overhead(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let servers = setup.code_review_servers()?;
    let (program, off) = (servers[2].1.clone(), servers[2].2.clone());
    let mut on = off.clone();
    on.extend(["--metrics".to_string(), "127.0.0.1:0".to_string()]);
    // Warm the compiled cache, so no round pays for compilation.
    check_reply(&mut StdioServer::start(&program, &off)?, "prompt-host")?;
    let mut results: [[Vec<Load>; 2]; 2] = Default::default();
    for _ in 0..rounds {
        for (index, args) in [&off, &on].into_iter().enumerate() {
            let (one, many, _) = Driver::Raw(Writes::PerMessage).measure(&program, args, "prompt-host")?;
            results[index][0].push(one);
            results[index][1].push(many);
        }
    }
    for (index, state) in ["off", "on"].into_iter().enumerate() {
        let (one, many) = (Load::median(&results[index][0]), Load::median(&results[index][1]));
        let cpu = many.cpu.map_or("n/a".to_string(), micros);
        report.facts.push((
            format!("stdio prompts/get of code_review, --metrics {state}: p50 at 1 in flight / requests per second at 64 in flight / server CPU per request at 64"),
            format!("{} / {:.0} / {cpu}", micros(one.p50), many.per_second),
        ));
    }
    Ok(())
}

/// `--soak SERVER IN_FLIGHT TOTAL`: one long load on one stdio server
/// (floor, rmcp, host, or a path to another prompt-host binary), for
/// profiling it with `perf record -p`. Prints the server's pid, waits a
/// second for the profiler to attach, then runs the load.
fn soak(setup: &Setup, server: &str, in_flight: u64, total: u64) -> anyhow::Result<()> {
    let servers = setup.code_review_servers()?;
    let (program, args) = match server {
        "floor" => (servers[0].1.clone(), servers[0].2.clone()),
        "rmcp" => (servers[1].1.clone(), servers[1].2.clone()),
        "host" => (servers[2].1.clone(), servers[2].2.clone()),
        path => (PathBuf::from(path), servers[2].2.clone()),
    };
    let mut server = StdioServer::start(&program, &args)?;
    check_reply(&mut server, "server")?;
    server.load(500, in_flight, Writes::PerMessage)?;
    println!("{}", server.pid());
    std::io::stdout().flush()?;
    std::thread::sleep(Duration::from_secs(1));
    let load = server.load(total, in_flight, Writes::PerMessage)?;
    eprintln!("{:.0} req/s, p50 {}, p99 {}", load.per_second, micros(load.p50), micros(load.p99));
    Ok(())
}

/// prompts/get of code_review through the library, without any protocol:
/// the handler's checks, a fresh sandboxed instance, the call, and the
/// conversion of the reply, one call at a time on tokio's default
/// multi-threaded runtime (the server's but for its event interval, which
/// one call at a time never waits for: its worker has no other work). What
/// part of the floor's time per request this takes is what no transport
/// can win back.
fn sandbox_alone(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let (calls_per_second, p50) = sandbox_calls(setup, 20_000)?;
    report.facts.push((
        "prompts/get of code_review in process, no protocol (handler, fresh instance, call, reply), one at a time, 20,000 calls: p50 / calls per second".into(),
        format!("{} / {calls_per_second:.0}", micros(p50)),
    ));
    Ok(())
}

fn sandbox_calls(setup: &Setup, calls: usize) -> anyhow::Result<(f64, Duration)> {
    use prompt_host::config::ServeConfig;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let config = ServeConfig { cache_dir: None, ..ServeConfig::default() };
        let path = setup.plugin("code_review");
        let registry = prompt_host::startup::load_one(&path, &config).await?;
        let server = prompt_host::handler::PromptServer::new(registry, config.page_size);
        let request = || {
            let arguments = [("code".to_string(), Value::String(CODE.into()))].into_iter().collect();
            rmcp::model::GetPromptRequestParams::new("code_review").with_arguments(arguments)
        };
        let reply = server.get_prompt_result(request()).await?;
        ensure!(serde_json::to_value(&reply)?["messages"][0]["content"]["text"] == EXPECTED_TEXT, "the pack answered {reply:?}");
        for _ in 0..1000 {
            server.get_prompt_result(request()).await?;
        }
        let mut latencies = Vec::with_capacity(calls);
        let started = Instant::now();
        for _ in 0..calls {
            let at = Instant::now();
            server.get_prompt_result(request()).await?;
            latencies.push(at.elapsed());
        }
        let load = Load::new(started.elapsed(), latencies);
        Ok((load.per_second, load.p50))
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Resident memory of a process, from /proc: `VmRSS` now (`RssAnon` and
/// `RssFile` its parts), or `VmHWM` at its peak.
fn memory_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    Ok(memory_kibs(pid, [field])?[0])
}

/// Several fields of one read of `/proc/PID/status`: one snapshot.
fn memory_kibs<const N: usize>(pid: u32, fields: [&str; N]) -> anyhow::Result<[u64; N]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let mut values = [0; N];
    for (value, field) in values.iter_mut().zip(fields) {
        let line = status
            .lines()
            .find(|line| line.split(':').next() == Some(field))
            .with_context(|| format!("no {field} in /proc/{pid}/status"))?;
        *value = line.split_whitespace().nth(1).context("no value")?.parse()?;
    }
    Ok(values)
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn wait_for_port(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        ensure!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn http_get(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let mut servers = setup.code_review_servers()?;
    servers.extend(setup.compare_server(&servers[2]));
    let runtime = tokio::runtime::Runtime::new()?;
    let mut results: Vec<Vec<Load>> = vec![Vec::new(); servers.len() - 1];
    for _ in 0..rounds {
        for (index, (_, program, args)) in servers[1..].iter().enumerate() {
            let (child, port) = http_server(program, args)?;
            let before = ProcessCost::of(child.0.id())?;
            let load = runtime.block_on(http_load(port, 64, 200));
            let after = ProcessCost::of(child.0.id());
            drop(child);
            results[index].push(before.per_request(after?, 64 * 200, load?));
        }
    }
    for (index, (name, _, _)) in servers[1..].iter().enumerate() {
        report.http.push((name.to_string(), Load::median(&results[index])));
    }
    Ok(())
}

/// prompts/get of code_review over Streamable HTTP, driven by the official
/// TypeScript SDK client (`bench/sdk-http-driver.mjs`): 1 client, then 16,
/// each its own `Client` over its own `StreamableHTTPClientTransport` (its
/// own session), making its calls one after another. prompt-host, the rmcp
/// reference behind the same front, and the rmcp reference on rmcp's own
/// Streamable HTTP server (`rmcp-server --rmcp-http`), alternated round
/// after round; each server is started afresh in each round and serves both
/// loads.
fn http_sdk_get(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let mut servers = setup.code_review_servers()?;
    servers.extend(setup.compare_server(&servers[2]));
    let (rmcp, host) = (&servers[1], &servers[2]);
    // Each server: its name, program, arguments, and the flag that takes the address.
    let mut http_servers = vec![
        (host.0.to_string(), &host.1, &host.2, "--http"),
        (format!("{}, same HTTP front", rmcp.0), &rmcp.1, &rmcp.2, "--http"),
        (format!("{}, rmcp's own Streamable HTTP server", rmcp.0), &rmcp.1, &rmcp.2, "--rmcp-http"),
    ];
    if let Some(compare) = servers.get(3) {
        http_servers.push((compare.0.to_string(), &compare.1, &compare.2, "--http"));
    }
    let mut results: Vec<[Vec<Load>; SDK_HTTP_LOADS.len()]> = http_servers.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (index, (name, program, args, flag)) in http_servers.iter().enumerate() {
            let port = free_port()?;
            let mut args = args.to_vec();
            args.extend([flag.to_string(), format!("127.0.0.1:{port}")]);
            let server = Killed(
                Command::new(program)
                    .args(&args)
                    .env("RUST_LOG", "warn")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .with_context(|| format!("starting {name}"))?,
            );
            wait_for_port(port)?;
            let loads = sdk_http_loads(port, server.0.id()).with_context(|| format!("{name} under the SDK HTTP driver"))?;
            for (at, load) in loads.into_iter().enumerate() {
                results[index][at].push(load);
            }
        }
    }
    for (index, (name, _, _, _)) in http_servers.iter().enumerate() {
        let rows = SDK_HTTP_LOADS.iter().zip(&results[index]).map(|(&(clients, _), loads)| (clients, Load::median(loads))).collect();
        report.http_sdk.push((name.clone(), rows));
    }
    Ok(())
}

/// The SDK HTTP driver's loads: clients, and prompts/get each makes in a row.
const SDK_HTTP_LOADS: [(usize, usize); 2] = [(1, 1500), (16, 200)];

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// [`SDK_HTTP_LOADS`] on the server listening on `port` (process `pid`),
/// through `bench/sdk-http-driver.mjs`, the server's CPU time and context
/// switches read around each load.
fn sdk_http_loads(port: u16, pid: u32) -> anyhow::Result<Vec<Load>> {
    let loads: Vec<Value> =
        SDK_HTTP_LOADS.iter().map(|&(clients, per_client)| json!({ "clients": clients, "perClient": per_client })).collect();
    let arguments = json!({ "url": format!("http://127.0.0.1:{port}/mcp"), "loads": loads, "warmUp": 20 });
    let mut driver = SdkDriver::start("sdk-http-driver.mjs", &[arguments.to_string().into()])?;
    let mut results = Vec::new();
    for _ in SDK_HTTP_LOADS {
        results.push(driver.measure(pid)?);
        // Now the driver may end its sessions.
        driver.measured()?;
    }
    driver.finish()?;
    Ok(results)
}

/// An official-SDK driver (`bench/sdk-driver.mjs` or
/// `bench/sdk-http-driver.mjs`), which prints one JSON object a line and
/// waits, around each load, for prompt-host-bench to read the server's
/// costs: it prints {"ready": true}, runs the load when it reads a line,
/// prints {"total", "seconds", "latenciesUs": [p50, p99]}, and goes on when
/// it reads another.
struct SdkDriver {
    /// The script's name in `bench/`, as errors name it.
    script: &'static str,
    child: Killed,
    go: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl SdkDriver {
    /// Starts `node bench/SCRIPT ARGUMENTS...`.
    fn start(script: &'static str, arguments: &[std::ffi::OsString]) -> anyhow::Result<SdkDriver> {
        let mut child = Killed(
            Command::new("node")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
                .args(arguments)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .with_context(|| format!("starting node bench/{script} (tests/setup installs the SDK it needs)"))?,
        );
        let go = child.0.stdin.take().context("no stdin")?;
        let lines = BufReader::new(child.0.stdout.take().context("no stdout")?).lines();
        Ok(SdkDriver { script, child, go, lines })
    }

    /// The next object the driver prints.
    fn next(&mut self) -> anyhow::Result<Value> {
        match self.lines.next() {
            Some(line) => Ok(serde_json::from_str(&line?)?),
            // It printed why on stderr.
            None => bail!("bench/{} failed: {}", self.script, self.child.0.wait()?),
        }
    }

    fn write_line(&mut self, line: &str) -> anyhow::Result<()> {
        match writeln!(self.go, "{line}").and_then(|()| self.go.flush()) {
            Ok(()) => Ok(()),
            // It ended: say how.
            Err(error) => bail!("bench/{} stopped reading ({error}): {}", self.script, self.child.0.wait()?),
        }
    }

    /// The driver's next load, with the CPU time and context switches per
    /// request of the server (process `pid`) read around it.
    fn measure(&mut self, pid: u32) -> anyhow::Result<Load> {
        ensure!(self.next()?["ready"] == json!(true), "bench/{} did not get ready", self.script);
        let before = ProcessCost::of(pid)?;
        self.write_line("go")?;
        let result = self.next()?;
        let after = ProcessCost::of(pid)?;
        let total = result["total"].as_u64().context("no total")?;
        let seconds = result["seconds"].as_f64().context("no seconds")?;
        let latency = |at: usize| -> anyhow::Result<Duration> {
            Ok(Duration::from_secs_f64(result["latenciesUs"][at].as_f64().context("no latencies")? / 1e6))
        };
        let load = Load { per_second: total as f64 / seconds, p50: latency(0)?, p99: latency(1)?, cpu: None, switches: None };
        Ok(before.per_request(after, total, load))
    }

    /// Lets the driver go on after a load.
    fn measured(&mut self) -> anyhow::Result<()> {
        self.write_line("measured")
    }

    /// Waits for the driver to end, successfully.
    fn finish(mut self) -> anyhow::Result<()> {
        drop(self.go);
        let status = self.child.0.wait()?;
        ensure!(status.success(), "bench/{} failed: {status}", self.script);
        Ok(())
    }
}

/// `clients` sessions, each making `per_client` prompts/get in a row.
async fn http_load(port: u16, clients: usize, per_client: usize) -> anyhow::Result<Load> {
    let (client, url) = http_client(port)?;
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(http_session(&client, &url).await?);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for session in sessions {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(per_client);
            for id in 0..per_client {
                let request = json!({
                    "jsonrpc": "2.0", "id": id + 10, "method": "prompts/get",
                    "params": { "name": "code_review", "arguments": { "code": CODE } }
                });
                let at = Instant::now();
                let body = http_post(&client, &url, Some(&session), &request).await?.1;
                ensure!(body.contains("Please review this Python code"), "unexpected reply: {body}");
                latencies.push(at.elapsed());
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::new();
    for result in tasks.join_all().await {
        latencies.extend(result?);
    }
    Ok(Load::new(started.elapsed(), latencies))
}

/// A client of the MCP endpoint on `port`, keeping its connections.
fn http_client(port: u16) -> anyhow::Result<(HttpClient, hyper::Uri)> {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_nodelay(true);
    let client: HttpClient =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).pool_max_idle_per_host(64).build(connector);
    Ok((client, format!("http://127.0.0.1:{port}/mcp").parse()?))
}

type HttpClient =
    hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, http_body_util::Full<bytes::Bytes>>;

async fn http_session(client: &HttpClient, url: &hyper::Uri) -> anyhow::Result<String> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } }
    });
    let (session, _) = http_post(client, url, None, &initialize).await?;
    let session = session.context("no Mcp-Session-Id")?;
    http_post(client, url, Some(&session), &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await?;
    Ok(session)
}

async fn http_post(client: &HttpClient, url: &hyper::Uri, session: Option<&str>, body: &Value) -> anyhow::Result<(Option<String>, String)> {
    use http_body_util::BodyExt;
    let mut request = hyper::Request::post(url.clone())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = client.request(request.body(http_body_util::Full::new(bytes::Bytes::from(body.to_string())))?).await?;
    ensure!(response.status().is_success(), "HTTP {}", response.status());
    let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((session, String::from_utf8_lossy(&bytes).into_owned()))
}

/// 100 distinct copies of the 100-prompt pack (see [`with_custom_section`]),
/// each under its own prefix, and the config file that names the prefixes.
fn hundred_plugins(setup: &Setup, name: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = setup.dir(name)?;
    let pack = std::fs::read(setup.plugin("bench_hundred"))?;
    let mut config = String::new();
    for i in 0..100 {
        std::fs::write(dir.join(format!("p{i:02}.wasm")), with_custom_section(&pack, "prompt-host-bench-copy", &i.to_string()))?;
        config += &format!("[plugins.p{i:02}]\nprefix = \"p{i:02}-\"\n");
    }
    let config_path = setup.work.path().join(format!("{name}.toml"));
    std::fs::write(&config_path, config)?;
    Ok((dir, config_path))
}

fn host_args(config: &Path, dir: &Path, cache: &Path) -> Vec<String> {
    [
        "serve",
        "--config",
        &config.display().to_string(),
        "--plugins",
        &dir.display().to_string(),
        "--cache-dir",
        &cache.display().to_string(),
    ]
    .map(String::from)
    .to_vec()
}

fn walk(server: &mut StdioServer) -> anyhow::Result<usize> {
    let (mut count, mut cursor) = (0, None::<String>);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |cursor| json!({ "cursor": cursor }));
        let page = server.call("prompts/list", params)?;
        count += page["prompts"].as_array().context("no prompts")?.len();
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok(count),
        }
    }
}

fn list_walk(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let (dir, config) = hundred_plugins(setup, "walk")?;
    let cache = setup.dir("walk-cache")?;
    let mut server = StdioServer::start(&setup.bin("prompt-host"), &host_args(&config, &dir, &cache))?;
    let mut times = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        let count = walk(&mut server)?;
        times.push(started.elapsed());
        ensure!(count == 10_000, "walked {count} prompts");
    }
    report.facts.push((
        "prompts/list: full walk of 10,000 prompts from 100 distinct plugins, 100 pages (median of 21)".into(),
        format!("{:.2} ms", median_ms(times)),
    ));
    Ok(())
}

/// 1,000 plugins serving 100,000 prompts: a warm start, the memory they
/// take idle, and a walk of the whole list. Each is a distinct file (the
/// 100-prompt pack with a custom section naming its copy), so that nothing
/// is shared between them that distinct packs would not share.
fn scale(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    const PLUGINS: usize = 1000;
    let dir = setup.dir("scale")?;
    let pack = std::fs::read(setup.plugin("bench_hundred"))?;
    let mut config_text = String::new();
    for i in 0..PLUGINS {
        std::fs::write(dir.join(format!("p{i:04}.wasm")), with_custom_section(&pack, "prompt-host-bench-copy", &i.to_string()))?;
        config_text += &format!("[plugins.p{i:04}]\nprefix = \"p{i:04}-\"\n");
    }
    let config = setup.work.path().join("scale.toml");
    std::fs::write(&config, config_text)?;
    let cache = setup.dir("scale-cache")?;
    let args = host_args(&config, &dir, &cache);
    // The first start compiles and fills the cache; the next three are timed.
    StdioServer::start(&setup.bin("prompt-host"), &args)?.call("prompts/list", json!({}))?;
    // Resident memory of the start that held most: all of it, and its
    // anonymous and file-backed parts (mapped compiled-cache entries are
    // file-backed: clean pages the kernel can reclaim and read back).
    let (mut starts, mut walks, mut idle_rss) = (Vec::new(), Vec::new(), (0, 0, 0));
    for _ in 0..3 {
        let started = Instant::now();
        let mut server = StdioServer::start(&setup.bin("prompt-host"), &args)?;
        server.call("prompts/list", json!({}))?;
        starts.push(started.elapsed());
        std::thread::sleep(Duration::from_millis(300));
        let [rss, anonymous, file_backed] = memory_kibs(server.pid(), ["VmRSS", "RssAnon", "RssFile"])?;
        if rss > idle_rss.0 {
            idle_rss = (rss, anonymous, file_backed);
        }
        let started = Instant::now();
        let count = walk(&mut server)?;
        walks.push(started.elapsed());
        ensure!(count == PLUGINS * 100, "walked {count} prompts");
    }
    report.facts.push((
        "Startup to first prompts/list answer, 1,000 distinct plugins (100,000 prompts), compiled cache warm (median of 3)".into(),
        format!("{:.0} ms", median_ms(starts)),
    ));
    report.facts.push((
        "Resident memory idle, 1,000 distinct plugins (100,000 prompts) loaded (largest of 3 starts): all / anonymous / file-backed".into(),
        format!("{:.1} MiB / {:.1} MiB / {:.1} MiB", mib(idle_rss.0), mib(idle_rss.1), mib(idle_rss.2)),
    ));
    report.facts.push((
        "prompts/list: full walk of 100,000 prompts from 1,000 plugins, 1,000 pages (median of 3)".into(),
        format!("{:.0} ms", median_ms(walks)),
    ));
    Ok(())
}

/// A WebAssembly binary (module or component) with a custom section added
/// at its end: the same code, different bytes (and so a different SHA-256).
fn with_custom_section(binary: &[u8], name: &str, payload: &str) -> Vec<u8> {
    fn leb128(mut value: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            out.push(if value == 0 { byte } else { byte | 0x80 });
            if value == 0 {
                return;
            }
        }
    }
    let mut content = Vec::new();
    leb128(name.len(), &mut content);
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(payload.as_bytes());
    let mut out = binary.to_vec();
    out.push(0); // custom section
    leb128(content.len(), &mut out);
    out.extend_from_slice(&content);
    out
}

fn startup_and_memory(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let (dir, config) = hundred_plugins(setup, "startup")?;
    let (mut idle_rss, mut cold_peak) = (0, 0);
    let (cold, warm) = cold_and_warm_starts(
        setup,
        "startup-cache",
        |cache| host_args(&config, &dir, cache),
        |server, cold| {
            std::thread::sleep(Duration::from_millis(300));
            idle_rss = memory_kib(server.pid(), "VmRSS")?;
            if cold {
                cold_peak = cold_peak.max(memory_kib(server.pid(), "VmHWM")?);
            }
            Ok(())
        },
    )?;
    report.facts.push((
        "Startup to first prompts/list answer, 100 distinct plugins, compiled cache cold (median of 3)".into(),
        format!("{cold:.0} ms"),
    ));
    report.facts.push((
        "Startup to first prompts/list answer, 100 distinct plugins, compiled cache warm (median of 3)".into(),
        format!("{warm:.0} ms"),
    ));
    report.facts.push(("Resident memory idle, 100 distinct plugins loaded".into(), format!("{:.1} MiB", mib(idle_rss))));
    report.facts.push((
        "Peak resident memory of a start with the compiled cache cold, 100 distinct plugins (largest of 3)".into(),
        format!("{:.1} MiB", mib(cold_peak)),
    ));
    Ok(())
}

/// Starts prompt-host three times with an empty compiled cache (in the work
/// directory `cache_name`), each followed by a start with that cache warm.
/// `after` runs on each server once it has answered its first prompts/list,
/// told whether the cache was cold.
/// Returns the median start-up times, cold and warm, in milliseconds.
fn cold_and_warm_starts(
    setup: &Setup,
    cache_name: &str,
    args: impl Fn(&Path) -> Vec<String>,
    mut after: impl FnMut(&mut StdioServer, bool) -> anyhow::Result<()>,
) -> anyhow::Result<(f64, f64)> {
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let cache = setup.dir(cache_name)?;
        for (times, is_cold) in [(&mut cold, true), (&mut warm, false)] {
            let started = Instant::now();
            let mut server = StdioServer::start(&setup.bin("prompt-host"), &args(&cache))?;
            server.call("prompts/list", json!({}))?;
            times.push(started.elapsed());
            after(&mut server, is_cold)?;
        }
    }
    Ok((median_ms(cold), median_ms(warm)))
}

/// The median of some durations, in milliseconds.
fn median_ms(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

/// The code_review pack in JavaScript (on SpiderMonkey, componentize-js's
/// default, and on QuickJS) and in Python, written on the raw WIT objects,
/// and the starter pack `prompt-host new` writes in each language (on the
/// vendored template library; the JavaScript one on QuickJS, as its
/// `npm run build` builds it, and on SpiderMonkey): components that carry
/// their language's runtime. What the compiled cache saves them at start,
/// and what a call costs. tests/build-packs builds them.
fn other_languages(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let components = setup.plugins.join("../../components");
    let summarize = || Asked {
        prompt: "summarize",
        arguments: json!({ "text": "Some text.", "length": "long" }),
        expected: "Write a long summary of this text:",
    };
    let packs = [
        ("js_code_review", "code_review in JavaScript", Asked::code_review()),
        ("js_qjs_code_review", "code_review in JavaScript on QuickJS", Asked::code_review()),
        ("py_code_review", "code_review in Python", Asked::code_review()),
        ("js_starter", "the JavaScript starter (new --lang js, QuickJS)", summarize()),
        ("js_sm_starter", "the JavaScript starter on SpiderMonkey (npm run build:spidermonkey)", summarize()),
        ("py_starter", "the Python starter (new --lang python)", summarize()),
    ];
    for (pack, what, asked) in packs {
        let file = components.join(format!("{pack}.wasm"));
        let label = |measure: &str| format!("{what} ({pack}.wasm): {measure}");
        if !file.exists() {
            report.facts.push((label("all"), "not measured: build it first with tests/build-packs".into()));
            continue;
        }
        let size = std::fs::metadata(&file)?.len();
        let dir = setup.dir(pack)?;
        std::fs::copy(&file, dir.join(format!("{pack}.wasm")))?;
        let config = setup.work.path().join(format!("{pack}.toml"));
        std::fs::write(&config, "")?;
        let mut loads = Vec::new();
        let (cold, warm) = cold_and_warm_starts(
            setup,
            &format!("{pack}-cache"),
            |cache| host_args(&config, &dir, cache),
            |server, _| {
                let reply = server.call("prompts/get", json!({ "name": asked.prompt, "arguments": asked.arguments }))?;
                ensure!(reply.to_string().contains(asked.expected), "{pack} answered {reply}");
                loads.push(server.load_prompt(500, 1, Writes::PerMessage, &asked)?);
                Ok(())
            },
        )?;
        let load = Load::median(&loads);
        report.facts.push((
            label(&format!("{:.1} MB; startup to first prompts/list answer, cache cold / warm (median of 3)", size as f64 / 1e6)),
            format!("{cold:.0} ms / {warm:.0} ms"),
        ));
        report.facts.push((
            label("prompts/get over stdio, 1 in flight, 500 requests (median of 6 runs): req/s, p50"),
            format!("{:.0}, {}", load.per_second, micros(load.p50)),
        ));
        if let Some(compare) = &setup.compare {
            let cache = setup.dir(&format!("{pack}-compare-cache"))?;
            let [this, other] = alternated_loads(&[setup.bin("prompt-host"), compare.clone()], &host_args(&config, &dir, &cache), &asked)?;
            report.facts.push((
                label("the same, this build and the --compare binary alternated (median of 6 runs each): p50, server CPU / context switches per request"),
                format!("{}, {} against {}, {}", micros(this.p50), this.cost(), micros(other.p50), other.cost()),
            ));
        }
    }
    Ok(())
}

/// Six rounds of 500 `asked` over stdio, 1 in flight, one message per
/// write, on each of two binaries in turn (each started afresh
/// each round, its compiled cache warmed first); the median of each.
fn alternated_loads(binaries: &[PathBuf; 2], args: &[String], asked: &Asked) -> anyhow::Result<[Load; 2]> {
    for binary in binaries {
        StdioServer::start(binary, args)?.call("prompts/get", json!({ "name": asked.prompt, "arguments": asked.arguments }))?;
    }
    let mut loads = [Vec::new(), Vec::new()];
    for _ in 0..6 {
        for (binary, loads) in binaries.iter().zip(&mut loads) {
            let mut server = StdioServer::start(binary, args)?;
            let params = json!({ "name": asked.prompt, "arguments": asked.arguments });
            loads.push(server.load_method(500, "prompts/get", &params, asked.expected)?);
        }
    }
    Ok(loads.map(|loads| Load::median(&loads)))
}

/// What a grant costs a call: the fixture `grants_probe` over stdio, 1 in
/// flight, raw driver, one message per write, the four alternated in each
/// round: granted a folder and reading one 4 KiB file from it; granted an
/// origin and sending one request to it (a server on loopback, on a port
/// the fixture asks for); granted both and using neither (its `env`
/// prompt); and served with no grants, using nothing.
fn granted_calls(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let dir = setup.plugin_dir("grants", &["grants_probe"])?;
    let project = setup.dir("grants-project")?;
    std::fs::write(project.join("page.txt"), "x".repeat(4096))?;
    let granted = setup.work.path().join("granted.toml");
    let origin = LoopbackOrigin::start()?;
    std::fs::write(
        &granted,
        format!(
            "[plugins.grants_probe.grants]\nhttp = [\"http://{}\"]\n\n[plugins.grants_probe.grants.folders]\nproject = {:?}\n",
            origin.address,
            project.display().to_string()
        ),
    )?;
    let none = setup.work.path().join("none.toml");
    std::fs::write(&none, "")?;
    let cache = setup.work.path().join("grants-cache");
    let read = || Asked { prompt: "read", arguments: json!({ "path": "/project/page.txt" }), expected: "read 4096 bytes: xxxx" };
    let nothing = || Asked { prompt: "env", arguments: json!({ "name": "GREETING" }), expected: "GREETING is not set" };
    let url = format!("http://{}/hello", origin.address);
    let fetch = Asked { prompt: "fetch", arguments: json!({ "url": url }), expected: "status 200, 21 bytes: hello from the origin" };
    let cases: [(&str, &Path, Asked); 4] = [
        ("granted a folder, reading one 4 KiB file from it", &granted, read()),
        ("granted an origin, one loopback HTTP request to it", &granted, fetch),
        ("granted a folder and an origin, using neither", &granted, nothing()),
        ("granted nothing, reading nothing", &none, nothing()),
    ];
    let mut loads: Vec<Vec<Load>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (index, (_, config, asked)) in cases.iter().enumerate() {
            let mut server = StdioServer::start(&setup.bin("prompt-host"), &host_args(config, &dir, &cache))?;
            server.load_prompt(200, 1, Writes::PerMessage, asked)?;
            loads[index].push(server.load_prompt(2000, 1, Writes::PerMessage, asked)?);
        }
    }
    for ((what, _, _), loads) in cases.iter().zip(&loads) {
        let load = Load::median(loads);
        report.facts.push((
            format!("grants_probe over stdio, {what}: 1 in flight, 2000 requests, raw driver (median of {rounds} rounds): req/s, p50, p99"),
            format!("{:.0}, {}, {}", load.per_second, micros(load.p50), micros(load.p99)),
        ));
    }
    Ok(())
}

/// Calls that wait on their origin (hardening round 4): the fixture
/// `grants_probe` granted a loopback origin that answers each request after
/// 100 ms, each call making 3 requests to it (300 ms of waiting, little CPU),
/// 16 in flight (the pack's `concurrent_calls`), raw driver, one message per
/// write, 160 calls a round; the host and the `--compare` binary, if given,
/// alternated in each round. Calls answered per second, p50, and how many
/// ended in an error (at the default 1 s deadline), medians of the rounds.
fn waiting_calls(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    const ANSWER: &str = "status 200, 21 bytes: hello from the origin\\nstatus 200, 21 bytes: hello from the origin\\nstatus 200, 21 bytes: hello from the origin";
    let dir = setup.plugin_dir("waiting", &["grants_probe"])?;
    let origin = LoopbackOrigin::start_answering_after(Duration::from_millis(100))?;
    let config = setup.work.path().join("waiting.toml");
    std::fs::write(&config, format!("[plugins.grants_probe.grants]\nhttp = [\"http://{}\"]\n", origin.address))?;
    let cache = setup.work.path().join("waiting-cache");
    let url = format!("http://{}/hello", origin.address);
    let asked = Asked { prompt: "fetch", arguments: json!({ "url": url, "times": "3" }), expected: ANSWER };
    let mut hosts = vec![("prompt-host", setup.bin("prompt-host"))];
    if let Some(compare) = &setup.compare {
        hosts.push((COMPARE_NAME, compare.clone()));
    }
    let mut results: Vec<Vec<(Load, u64)>> = vec![Vec::new(); hosts.len()];
    for _ in 0..rounds {
        for (index, (_, program)) in hosts.iter().enumerate() {
            let mut server = StdioServer::start(program, &host_args(&config, &dir, &cache))?;
            server.load_prompt_counting_errors(16, 16, Writes::PerMessage, &asked, true)?;
            results[index].push(server.load_prompt_counting_errors(160, 16, Writes::PerMessage, &asked, true)?);
        }
    }
    for ((name, _), results) in hosts.iter().zip(&results) {
        let load = Load::median(&results.iter().map(|(load, _)| *load).collect::<Vec<_>>());
        let mut errors: Vec<u64> = results.iter().map(|(_, errors)| *errors).collect();
        errors.sort();
        report.facts.push((
            format!(
                "{name}: grants_probe calls that each wait 3 × 100 ms on a loopback origin, 16 in flight, 160 calls, raw driver \
                 (median of {rounds} rounds): calls/s, p50, errors"
            ),
            format!("{:.1}, {}, {}", load.per_second, micros(load.p50), errors[errors.len() / 2]),
        ));
    }
    Ok(())
}

/// `skills/list` of 100 skills and `resources/read` of a 4 KiB skill file
/// against `prompts/list` and `prompts/get`, on one server serving
/// `code_review` and `bench_skills`; then `prompts/get` on a server of
/// `code_review` alone, so that what carrying skills costs a prompt call
/// shows. Over stdio, raw driver, one request in flight, one message per
/// write, as a client that reads a skill before it acts does; the servers
/// alternated in each round, medians over the rounds.
fn skills_and_resources(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    const REQUESTS: u64 = 2_000;
    let with = setup.plugin_dir("skills", &["code_review", "bench_skills"])?;
    let without = setup.plugin_dir("no-skills", &["code_review"])?;
    let cache = setup.work.path().join("skills-cache");
    // 100 skills are past the default max_skills (64): the operator raises it for this pack.
    let config = setup.work.path().join("skills.toml");
    std::fs::write(&config, "[plugins.bench_skills]\nlimits = { max_skills = 100 }\n")?;
    let args = |dir: &Path| host_args(&config, dir, &cache);
    let get = ("prompts/get", json!({ "name": "code_review", "arguments": { "code": "x" } }), "Please review this Python code");
    let measured = [
        ("prompts/list", "prompts/list", json!({}), r#""prompts":["#),
        ("skills/list (100 skills of 2 files, one page)", "skills/list", json!({}), "skill://skill-99/SKILL.md"),
        (
            "resources/read of a 4 KiB skill file",
            "resources/read",
            json!({ "uri": "skill://skill-42/references/data.md" }),
            "0123456789abcdef",
        ),
        ("prompts/get of code_review", get.0, get.1.clone(), get.2),
    ];
    let mut loads: Vec<Vec<Load>> = vec![Vec::new(); measured.len() + 1];
    let mut sizes = vec![0; measured.len() + 1];
    for _ in 0..rounds {
        let mut server = StdioServer::start(&setup.bin("prompt-host"), &args(&with))?;
        for (index, (_, method, params, expected)) in measured.iter().enumerate() {
            sizes[index] = serde_json::to_string(&server.call(method, params.clone())?)?.len();
            server.load_method(200, method, params, expected)?;
            loads[index].push(server.load_method(REQUESTS, method, params, expected)?);
        }
        drop(server);
        let mut server = StdioServer::start(&setup.bin("prompt-host"), &args(&without))?;
        sizes[measured.len()] = serde_json::to_string(&server.call(get.0, get.1.clone())?)?.len();
        server.load_method(200, get.0, &get.1, get.2)?;
        loads[measured.len()].push(server.load_method(REQUESTS, get.0, &get.1, get.2)?);
    }
    let names = measured
        .iter()
        .map(|(name, ..)| format!("{name}, with bench_skills served"))
        .chain(["prompts/get of code_review, no pack with skills served".to_string()]);
    for ((name, loads), size) in names.zip(&loads).zip(&sizes) {
        let load = Load::median(loads);
        report.facts.push((
            format!("skills: {name}, stdio, 1 in flight, raw driver, one message per write (median of {rounds} rounds): req/s, p50, p99, server CPU / context switches per request, result bytes"),
            format!("{:.0}, {}, {}, {}, {size}", load.per_second, micros(load.p50), micros(load.p99), load.cost()),
        ));
    }
    Ok(())
}

/// What a sealed session id costs. In the process: opening one (an HMAC
/// over the id and a JSON parse), for the id this bench's own `initialize`
/// gets and for one near the 4,096-byte bound. Over HTTP: prompts/get in 64
/// sessions (the `http` section's load), server CPU per request, against
/// the `--compare` binary when given (an earlier build, with its own
/// session table), alternated round after round. And a session moving: 64
/// sessions opened on one replica, each then called on a second replica
/// that shares the key, its first request there (which restores the
/// session) against its second.
fn sealed_sessions(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    use prompt_host::identity::Principal;
    use prompt_host::transport::http::session_ids::SessionIds;
    const OPENS: u32 = 100_000;
    let ids = SessionIds::new(prompt_host::input::RequestStateSeal::random());
    let principal = Principal::http_without_oauth();
    let bench_initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } }
    });
    let mut large_initialize = bench_initialize.clone();
    large_initialize["params"]["capabilities"] = json!({ "experimental": { "x": { "pad": "y".repeat(2_800) } } });
    for (name, initialize) in [("this bench's initialize", &bench_initialize), ("an initialize near the bound", &large_initialize)] {
        let issued = ids.issue("0b9f4a8e-5c1d-4f7a-9e3b-2d6c8a1f0e47", initialize.to_string().as_bytes(), None, &principal);
        let started = Instant::now();
        for _ in 0..OPENS {
            std::hint::black_box(ids.open(std::hint::black_box(&issued), &principal).is_ok());
        }
        let each = started.elapsed() / OPENS;
        report.facts.push((
            format!("sessions: opening a sealed session id in the process ({name}, {} bytes), per request", issued.len()),
            format!("{:.2} µs", each.as_secs_f64() * 1e6),
        ));
    }

    let servers = setup.code_review_servers()?;
    let config = setup.work.path().join("sessions.toml");
    std::fs::write(setup.work.path().join("state.key"), "0123456789abcdef0123456789abcdef0123456789abcdef")?;
    std::fs::write(&config, "[server]\nrequest_state_key_file = \"state.key\"\n")?;
    let mut args = servers[2].2.clone();
    args.extend(["--config".to_string(), config.display().to_string()]);
    let mut hosts = vec![("prompt-host (sealed session ids)", servers[2].1.clone())];
    if let Some(compare) = &setup.compare {
        hosts.push((COMPARE_NAME, compare.clone()));
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let mut loads: Vec<Vec<Load>> = vec![Vec::new(); hosts.len()];
    for _ in 0..rounds {
        for (index, (_, program)) in hosts.iter().enumerate() {
            let (child, port) = http_server(program, &args)?;
            let before = ProcessCost::of(child.0.id())?;
            let load = runtime.block_on(http_load(port, 64, 200));
            let after = ProcessCost::of(child.0.id());
            drop(child);
            loads[index].push(before.per_request(after?, 64 * 200, load?));
        }
    }
    for ((name, _), loads) in hosts.iter().zip(&loads) {
        let load = Load::median(loads);
        report.facts.push((
            format!("sessions: {name}, prompts/get over HTTP in 64 sessions, raw driver (median of {rounds} rounds): req/s, p50, p99, server CPU / context switches per request"),
            format!("{:.0}, {}, {}, {}", load.per_second, micros(load.p50), micros(load.p99), load.cost()),
        ));
    }

    let (first, second) = runtime.block_on(async {
        let (opener, opener_port) = http_server(&hosts[0].1, &args)?;
        let (other, other_port) = http_server(&hosts[0].1, &args)?;
        let (client, url) = http_client(opener_port)?;
        let mut sessions = Vec::new();
        for _ in 0..64 {
            sessions.push(http_session(&client, &url).await?);
        }
        let (_, other_url) = http_client(other_port)?;
        let (mut first, mut second) = (Vec::new(), Vec::new());
        let request = json!({ "jsonrpc": "2.0", "id": 10, "method": "prompts/get", "params": { "name": "code_review", "arguments": { "code": CODE } } });
        for session in &sessions {
            for latencies in [&mut first, &mut second] {
                let at = Instant::now();
                let body = http_post(&client, &other_url, Some(session), &request).await?.1;
                ensure!(body.contains("Please review this Python code"), "unexpected reply: {body}");
                latencies.push(at.elapsed());
            }
        }
        drop((opener, other));
        anyhow::Ok((Load::new(Duration::from_secs(1), first), Load::new(Duration::from_secs(1), second)))
    })?;
    report.facts.push((
        "sessions: 64 sessions opened on one replica, each called on another sharing the key: p50 / p99 of the first prompts/get there (restores the session), of the second".into(),
        format!("{} / {}, {} / {}", micros(first.p50), micros(first.p99), micros(second.p50), micros(second.p99)),
    ));
    Ok(())
}

/// How long a published pack takes to reach a fleet: a real registry
/// (Debian's docker-registry, started by tests/registry/registry_tool.py,
/// as the tests do), three replicas following its tag with
/// `update_interval = "2s"` (each its own plugin directory), and a new
/// version published and signed with prompt-host itself; from the end of
/// `sign` until each replica lists the new prompts (each asked every 20 ms
/// in a session of its own). Needs tests/setup's registry and venv.
fn publish_to_fleet(setup: &Setup, rounds: usize, report: &mut Report) -> anyhow::Result<()> {
    let host = setup.bin("prompt-host");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/.venv/bin/python");
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/registry/registry_tool.py");
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let work = setup.dir(&format!("fleet-{round}"))?;
        let mut registry = Command::new(&python)
            .args([tool.as_os_str(), "serve".as_ref(), "--dir".as_ref(), work.join("registry").as_os_str()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the registry (run tests/setup)")?;
        let mut line = String::new();
        BufReader::new(registry.stdout.take().context("no stdout")?).read_line(&mut line)?;
        let registry = Killed(registry);
        let address = serde_json::from_str::<Value>(&line)?["address"].as_str().context("no address")?.to_string();
        wait_for_port(address.rsplit(':').next().context("no port")?.parse()?)?;
        let source = format!("oci://{address}/acme/review:stable");
        let config = |shared: &str| {
            format!(
                "[server]\nplugins = \"packs\"\nupdate_interval = \"2s\"\n\n[registry]\nplain_http = [\"{address}\"]\n\n\
                 [signatures]\nrequire = true\npublic_keys = [\"{shared}cosign.pub\"]\n\n[plugins.review]\nsource = \"{source}\"\n"
            )
        };
        std::fs::write(work.join("prompt-host.toml"), config(""))?;
        let run = |args: &[&str]| -> anyhow::Result<String> {
            let ran = Command::new(&host).args(args).current_dir(&work).env("COSIGN_PASSWORD", "bench").output()?;
            ensure!(ran.status.success(), "prompt-host {args:?}: {}", String::from_utf8_lossy(&ran.stderr));
            Ok(String::from_utf8(ran.stdout)?.trim().to_string())
        };
        run(&["examples", "--out", "examples"])?;
        run(&["keygen"])?;
        let publish = |pack: &str| -> anyhow::Result<()> {
            let digest = run(&["publish", &format!("examples/plugins/{pack}.wasm"), &source, "--config", "prompt-host.toml"])?;
            let repository = source.rsplit_once(':').context("a tag")?.0;
            run(&["sign", &format!("{repository}@{digest}"), "--key", "cosign.key", "--config", "prompt-host.toml"])?;
            Ok(())
        };
        publish("code_review")?;
        let mut replicas = Vec::new();
        for index in 0..3 {
            let home = work.join(format!("replica{index}"));
            std::fs::create_dir_all(home.join("packs"))?;
            std::fs::write(home.join("prompt-host.toml"), config("../"))?;
            let config = home.join("prompt-host.toml").display().to_string();
            replicas.push(http_server(&host, &["serve".into(), "--config".into(), config])?);
        }
        let served = runtime.block_on(async {
            let mut sessions = Vec::new();
            for (_, port) in &replicas {
                let (client, url) = http_client(*port)?;
                let session = http_session(&client, &url).await?;
                sessions.push((client, url, session));
            }
            publish("dev_assistant")?;
            let published = Instant::now();
            let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "prompts/list" });
            let mut served = vec![None; sessions.len()];
            while served.iter().any(Option::is_none) {
                ensure!(published.elapsed() < Duration::from_secs(60), "the fleet did not converge in a minute");
                for ((client, url, session), served) in sessions.iter().zip(&mut served) {
                    if served.is_none() && http_post(client, url, Some(session), &list).await?.1.contains("git-commit") {
                        *served = Some(published.elapsed());
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            anyhow::Ok(served.into_iter().flatten().collect::<Vec<_>>())
        })?;
        drop((replicas, registry));
        first.push(*served.iter().min().context("three replicas")?);
        last.push(*served.iter().max().context("three replicas")?);
    }
    report.facts.push((
        format!(
            "fleet: from a signed publish to the first / the last of 3 replicas serving it, update_interval 2 s (median of {rounds} rounds)"
        ),
        format!("{:.2} s / {:.2} s", median_ms(first) / 1000.0, median_ms(last) / 1000.0),
    ));
    Ok(())
}

/// `program` serving Streamable HTTP on a free loopback port, with `args`.
fn http_server(program: &Path, args: &[String]) -> anyhow::Result<(Killed, u16)> {
    let port = free_port()?;
    let mut args = args.to_vec();
    args.extend(["--http".to_string(), format!("127.0.0.1:{port}")]);
    let child = Killed(Command::new(program).args(&args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?);
    wait_for_port(port)?;
    Ok((child, port))
}

/// An HTTP origin on loopback for the grants section: one port of those
/// the fixture asks for, answering every request with 21 bytes and
/// closing (the host keeps no connection between requests).
struct LoopbackOrigin {
    address: std::net::SocketAddr,
}

impl LoopbackOrigin {
    fn start() -> anyhow::Result<LoopbackOrigin> {
        LoopbackOrigin::start_answering_after(Duration::ZERO)
    }

    /// [`LoopbackOrigin::start`], each answer sent `delay` after its request
    /// was read (each connection on a thread of its own).
    fn start_answering_after(delay: Duration) -> anyhow::Result<LoopbackOrigin> {
        let listener = (47801..=47808)
            .find_map(|port| std::net::TcpListener::bind(("127.0.0.1", port)).ok())
            .ok_or_else(|| anyhow::anyhow!("none of the ports 47801 to 47808 is free for the loopback origin"))?;
        let address = listener.local_addr()?;
        std::thread::spawn(move || {
            use std::io::{BufRead, Write};
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Ok(reading) = stream.try_clone() else { continue };
                let answer = move || {
                    let mut reader = std::io::BufReader::new(reading);
                    let mut line = String::new();
                    // The request's head, to its empty line; a GET has no body.
                    while reader.read_line(&mut line).is_ok_and(|read| read > 0) && line != "\r\n" {
                        line.clear();
                    }
                    std::thread::sleep(delay);
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 21\r\nconnection: close\r\n\r\nhello from the origin");
                };
                match delay.is_zero() {
                    true => answer(),
                    false => drop(std::thread::spawn(answer)),
                }
            }
        });
        Ok(LoopbackOrigin { address })
    }
}

fn file_to_list_changed(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let dir = setup.plugin_dir("landing", &["code_review"])?;
    let cache = setup.dir("landing-cache")?;
    let args = ["serve", "--plugins", &dir.display().to_string(), "--cache-dir", &cache.display().to_string()].map(String::from);
    let mut server = StdioServer::start(&setup.bin("prompt-host"), &args)?;
    let mut times = Vec::new();
    for round in 0..8 {
        let staging = dir.join(".media.wasm.partial");
        std::fs::copy(setup.plugin("media_prompts"), &staging)?;
        let started = Instant::now();
        std::fs::rename(&staging, dir.join("media.wasm"))?;
        server.wait_for_notification("notifications/prompts/list_changed")?;
        if round > 0 {
            times.push(started.elapsed()); // the first compiles the pack
        }
        std::fs::remove_file(dir.join("media.wasm"))?;
        server.wait_for_notification("notifications/prompts/list_changed")?;
    }
    report.facts.push((
        "File renamed into the plugin directory to list_changed at the client (median of 7, cache warm)".into(),
        format!("{:.0} ms", median_ms(times)),
    ));
    Ok(())
}

/// Calls of another pack kept in flight beside the quick `code_review`
/// calls whose latency is measured, each sent again as it ends.
struct Beside {
    /// The section's directory name, and the other pack's file.
    section: &'static str,
    pack: &'static str,
    /// How many are kept in flight.
    calls: u64,
    /// Each one's `prompts/get` params.
    params: Value,
    /// Each one's answer contains one of these.
    ends: &'static [&'static str],
    /// Whether one is timed alone first (warm).
    time_alone: bool,
}

/// prompts/get of code_review for 6 s while `spinners` calls of the hostile
/// pack spin to their deadline, each sent again when it ends. Past the
/// hostile pack's quota of concurrent calls (16 by default), spinners wait
/// for it and are refused as busy: what another pack sees then is the
/// fairness the quota buys.
fn tail_under_spinners(setup: &Setup, spinners: u64, report: &mut Report) -> anyhow::Result<()> {
    let beside = Beside {
        section: "spinners",
        pack: "hostile",
        calls: spinners,
        params: json!({ "name": "spin" }),
        ends: &["exceeded its 1000 ms deadline", "of its concurrent calls stayed busy"],
        time_alone: false,
    };
    let (load, ended, _) = quick_calls_beside(setup, &beside)?;
    report.facts.push((
        format!(
            "prompts/get of code_review while {spinners} calls of another pack spin to their 1000 ms deadline ({ended} spinners ended meanwhile): p50 / p99"
        ),
        format!("{} / {}", micros(load.p50), micros(load.p99)),
    ));
    Ok(())
}

/// prompts/get of code_review for 6 s while 16 calls of another pack, each
/// a few milliseconds of CPU (short of a long call), are kept in flight:
/// both worker threads busy, every call yielded at each epoch tick. How
/// soon a fresh request runs beside calls that yielded (the runtime's
/// `event_interval`, SECURITY.md).
fn quick_beside_busy(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    let beside = Beside {
        section: "busy",
        pack: "grants_probe",
        calls: 16,
        params: json!({ "name": "burn", "arguments": { "iterations": "2500000" } }),
        ends: &["burned"],
        time_alone: true,
    };
    let (load, ended, alone) = quick_calls_beside(setup, &beside)?;
    // Past 10 ms of running, a call is long and takes turns in the slow
    // lane: then this row measures the lane, not the yield.
    let long = if alone >= Duration::from_millis(10) { ", long calls on this machine" } else { "" };
    report.facts.push((
        format!(
            "prompts/get of code_review while 16 calls of another pack, each {:.1} ms alone{long}, are kept in flight ({ended} ended meanwhile): p50 / p99",
            alone.as_secs_f64() * 1000.0
        ),
        format!("{} / {}", micros(load.p50), micros(load.p99)),
    ));
    Ok(())
}

/// The latency of code_review, sent one at a time for 6 s over stdio (one
/// message per write), while the calls `beside` are kept in flight; with
/// how many of those ended meanwhile, and how long one took alone, warm
/// (zero unless `beside.time_alone`).
fn quick_calls_beside(setup: &Setup, beside: &Beside) -> anyhow::Result<(Load, u64, Duration)> {
    let dir = setup.plugin_dir(beside.section, &["code_review", beside.pack])?;
    let cache = setup.dir(&format!("{}-cache", beside.section))?;
    let args = [
        "serve",
        "--plugins",
        &dir.display().to_string(),
        "--cache-dir",
        &cache.display().to_string(),
        "--fuel",
        "100000000000000",
        "--deadline-ms",
        "1000",
    ]
    .map(String::from);
    let mut server = StdioServer::start(&setup.bin("prompt-host"), &args)?;
    const OTHER_IDS: u64 = 1_000_000;
    let mut next_other = OTHER_IDS;
    let mut send_other = |server: &mut StdioServer| -> anyhow::Result<u64> {
        let id = next_other;
        next_other += 1;
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": beside.params });
        server.send(&request.to_string())?;
        server.stdin.flush()?;
        Ok(id)
    };
    // Two alone, first, if asked: the second, warm, is timed.
    let mut alone = Duration::ZERO;
    if beside.time_alone {
        for _ in 0..2 {
            let started = Instant::now();
            let answer = server.call("prompts/get", beside.params.clone())?.to_string();
            alone = started.elapsed();
            ensure!(beside.ends.iter().any(|end| answer.contains(end)), "a call of {} alone ended otherwise: {answer}", beside.pack);
        }
    }
    for _ in 0..beside.calls {
        send_other(&mut server)?;
    }
    let mut latencies = Vec::new();
    let mut ended = 0;
    let until = Instant::now() + Duration::from_secs(6);
    let mut id = 1000;
    while Instant::now() < until {
        id += 1;
        let mut sent_at = HashMap::new();
        server.send_get(id, &mut sent_at, &Asked::code_review())?;
        server.stdin.flush()?;
        loop {
            let line = server.read_line()?;
            match response_id(&line) {
                Some(found) if found >= OTHER_IDS => {
                    ensure!(beside.ends.iter().any(|end| line.contains(end)), "a call of {} ended otherwise: {line}", beside.pack);
                    ended += 1;
                    send_other(&mut server)?;
                }
                Some(found) if found == id => {
                    ensure!(line.contains("Please review"), "{line}");
                    latencies.push(sent_at[&id].elapsed());
                    break;
                }
                _ => {}
            }
        }
    }
    Ok((Load::new(Duration::from_secs(6), latencies), ended, alone))
}

/// Context switches a second across all of prompt-host's threads, read from
/// /proc over 5 s while a client is connected and sends nothing (after one
/// call, so that the sandbox has run).
fn idle_wakeups(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    const WINDOW: Duration = Duration::from_secs(5);
    let dir = setup.plugin_dir("idle", &["code_review"])?;
    let cache = setup.dir("idle-cache")?;
    let args = ["serve", "--plugins", &dir.display().to_string(), "--cache-dir", &cache.display().to_string()].map(String::from);
    let mut server = StdioServer::start(&setup.bin("prompt-host"), &args)?;
    check_reply(&mut server, "code_review")?;
    std::thread::sleep(Duration::from_millis(500));
    let before = context_switches(server.pid())?;
    std::thread::sleep(WINDOW);
    let after = context_switches(server.pid())?;
    report.facts.push((
        "Wake-ups (context switches) a second across all threads, idle with a client connected, over 5 s".into(),
        format!("{:.1}", (after - before) as f64 / WINDOW.as_secs_f64()),
    ));
    Ok(())
}

/// Voluntary and involuntary context switches of every thread of `pid`.
fn context_switches(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let status = std::fs::read_to_string(task?.path().join("status"))?;
        for line in status.lines().filter(|line| line.contains("ctxt_switches:")) {
            total += line.split_whitespace().last().unwrap_or("0").parse::<u64>()?;
        }
    }
    Ok(total)
}

/// Peak resident memory while 16 calls at once each return 64 texts that
/// alias one 4 MiB buffer (the `hostile` pack's `alias-bomb`): with the copy
/// budget the default limits give a call, and with the budget raised to
/// wasmtime's own default of 128 MiB (`max_reply_kib = 131072`), which is
/// what every call had before the host set one. That server's deadline is
/// 10 s: 16 copies of 128 MiB at once on two cores take more than the default
/// second, and a call that ends at its deadline would measure less than
/// what the budget lets through.
fn copy_budget_memory(setup: &Setup, report: &mut Report) -> anyhow::Result<()> {
    const CALLS: u64 = 16;
    let dir = setup.plugin_dir("copy", &["hostile"])?;
    let cache = setup.dir("copy-cache")?;
    for (label, limits) in [
        ("default limits (copy budget 8.2 MiB)", ""),
        ("copy budget 128 MiB, wasmtime's default", "max_reply_kib = 131072\ndeadline_ms = 10000\n"),
    ] {
        let config = setup.dir("copy-config")?.join("prompt-host.toml");
        std::fs::write(&config, format!("[limits]\n{limits}"))?;
        let args = [
            "serve",
            "--plugins",
            &dir.display().to_string(),
            "--cache-dir",
            &cache.display().to_string(),
            "--config",
            &config.display().to_string(),
        ]
        .map(String::from);
        let mut server = StdioServer::start(&setup.bin("prompt-host"), &args)?;
        let before = memory_kib(server.pid(), "VmHWM")?;
        for id in 0..CALLS {
            server.send(
                &json!({ "jsonrpc": "2.0", "id": 1000 + id, "method": "prompts/get", "params": { "name": "alias-bomb" } }).to_string(),
            )?;
        }
        server.stdin.flush()?;
        for _ in 0..CALLS {
            let line = server.read_line()?;
            ensure!(line.contains("bytes the host copies out of one call"), "alias-bomb ended otherwise: {line:.300}");
        }
        let peak = memory_kib(server.pid(), "VmHWM")?;
        report.facts.push((
            format!("Peak resident memory, {CALLS} concurrent calls returning 64 texts aliasing one 4 MiB buffer, {label}: before, after"),
            format!("{:.0} MiB, {:.0} MiB", mib(before), mib(peak)),
        ));
    }
    Ok(())
}

fn micros(duration: Duration) -> String {
    format!("{} µs", duration.as_micros())
}

/// A row per server: its name, and its loads at 1 and at 64 in flight.
type StdioRows = Vec<(String, Load, Load)>;

#[derive(Default)]
struct Report {
    /// Per driver, its rows.
    stdio: Vec<(&'static str, StdioRows)>,
    http: Vec<(String, Load)>,
    /// Per server, its loads under the TypeScript SDK's HTTP client, by
    /// number of clients.
    http_sdk: Vec<(String, Vec<(usize, Load)>)>,
    facts: Vec<(String, String)>,
}

impl Report {
    fn render(&self, args: &[String]) -> String {
        let mut out = String::new();
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_default();
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
        let commit = Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let dirty = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false);
        out += &format!(
            "Measured {} on {cores} cores ({cpu}), commit {commit}{}, with `{}`.\n\n",
            date(),
            if dirty { " plus uncommitted changes" } else { "" },
            std::iter::once("target/release/prompt-host-bench".to_string()).chain(args[1..].iter().cloned()).collect::<Vec<_>>().join(" ")
        );
        for (driver, rows) in &self.stdio {
            out += &format!("### prompts/get of `code_review` over stdio, driven by {driver} (median of rounds)\n\n");
            out += "| server | req/s, 1 in flight | p50 | p99 | server CPU / context switches per request | req/s, 64 in flight | p50 | p99 | server CPU / context switches per request |\n|---|---|---|---|---|---|---|---|---|\n";
            for (name, one, many) in rows {
                out += &format!(
                    "| {name} | {:.0} | {} | {} | {} | {:.0} | {} | {} | {} |\n",
                    one.per_second,
                    micros(one.p50),
                    micros(one.p99),
                    one.cost(),
                    many.per_second,
                    micros(many.p50),
                    micros(many.p99),
                    many.cost()
                );
            }
            if let [floor, rmcp, hosts @ ..] = rows.as_slice() {
                for host in hosts {
                    out += &format!(
                        "\n{} ÷ rmcp reference: **{:.2}** (1 in flight), **{:.2}** (64 in flight). ÷ floor: {:.2} (1 in flight), {:.2} (64 in flight).\n",
                        host.0,
                        host.1.per_second / rmcp.1.per_second,
                        host.2.per_second / rmcp.2.per_second,
                        host.1.per_second / floor.1.per_second,
                        host.2.per_second / floor.2.per_second
                    );
                }
            }
            out += "\n";
        }
        out += "### prompts/get of `code_review` over Streamable HTTP, 64 sessions (median of rounds)\n\n| server | req/s | p50 | p99 | server CPU / context switches per request |\n|---|---|---|---|---|\n";
        for (name, load) in &self.http {
            out += &format!("| {name} | {:.0} | {} | {} | {} |\n", load.per_second, micros(load.p50), micros(load.p99), load.cost());
        }
        if let [rmcp, hosts @ ..] = self.http.as_slice() {
            for host in hosts {
                out += &format!("\n{} ÷ rmcp reference over HTTP: **{:.2}**.\n", host.0, host.1.per_second / rmcp.1.per_second);
            }
        }
        if !self.http_sdk.is_empty() {
            out += "\n### prompts/get of `code_review` over Streamable HTTP, the official TypeScript SDK clients (median of rounds)\n\n";
            out += "Each client is a `Client` over `StreamableHTTPClientTransport` with its own session, making its calls one after another.\n\n";
            out += "| server | clients | req/s | p50 | p99 | server CPU / context switches per request |\n|---|---|---|---|---|---|\n";
            for (name, rows) in &self.http_sdk {
                for (clients, load) in rows {
                    out += &format!(
                        "| {name} | {clients} | {:.0} | {} | {} | {} |\n",
                        load.per_second,
                        micros(load.p50),
                        micros(load.p99),
                        load.cost()
                    );
                }
            }
            let [host, (_, front), (_, own), compared @ ..] = self.http_sdk.as_slice() else {
                unreachable!("the http-sdk section measures three servers, and the --compare binary if given")
            };
            for (name, host) in std::iter::once(host).chain(compared) {
                let ratios = |other: &[(usize, Load)], bold: &str| {
                    host.iter()
                        .zip(other)
                        .map(|((clients, host), (_, other))| {
                            format!("{bold}{:.2}{bold} ({})", host.per_second / other.per_second, clients_named(*clients))
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                out += &format!("\n{name} ÷ rmcp reference on rmcp's own Streamable HTTP server: {}.\n", ratios(own, "**"));
                out += &format!("{name} ÷ rmcp reference behind the same front: {}.\n", ratios(front, ""));
            }
        }
        out += "\n### Catalog, start-up, memory, reloads, isolation\n\n| measure | result |\n|---|---|\n";
        for (measure, result) in &self.facts {
            out += &format!("| {measure} | {result} |\n");
        }
        out
    }
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Replaces what stands between the markers in `path` with `text`.
fn write_between_markers(path: &Path, text: &str) -> anyhow::Result<()> {
    const START: &str = "<!-- bench:start: written by prompt-host-bench; do not edit by hand -->";
    const END: &str = "<!-- bench:end -->";
    let mut current = String::new();
    if path.exists() {
        std::fs::File::open(path)?.read_to_string(&mut current)?;
    }
    let updated = match (current.find(START), current.find(END)) {
        (Some(start), Some(end)) if start < end => format!("{}{START}\n{text}{}", &current[..start], &current[end..]),
        _ => format!("{current}\n{START}\n{text}{END}\n"),
    };
    std::fs::write(path, updated)?;
    Ok(())
}

/// "1 client", "16 clients".
fn clients_named(clients: usize) -> String {
    format!("{clients} client{}", if clients == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> anyhow::Result<Option<Arguments>> {
        let args: Vec<String> = std::iter::once("prompt-host-bench").chain(line.split_whitespace()).map(String::from).collect();
        parse_arguments(&args)
    }

    fn refusal(line: &str) -> String {
        let error = parse(line).err().unwrap_or_else(|| panic!("{line:?} was accepted")).to_string();
        error.lines().next().unwrap().to_string()
    }

    #[test]
    fn options_are_read_once_with_their_values() {
        let arguments = parse("--only stdio,scale --rounds 3 --compare /tmp/ph").unwrap().unwrap();
        assert_eq!(arguments.values("--only"), Some(["stdio,scale".to_string()].as_slice()));
        assert_eq!(arguments.values("--rounds"), Some(["3".to_string()].as_slice()));
        assert_eq!(arguments.values("--compare"), Some(["/tmp/ph".to_string()].as_slice()));
        assert_eq!(arguments.values("--write"), None);
        let soak = parse("--soak host 1 100").unwrap().unwrap();
        assert_eq!(soak.values("--soak").unwrap(), ["host", "1", "100"]);
        assert!(parse("").unwrap().unwrap().0.is_empty());
    }

    #[test]
    fn what_the_bench_does_not_know_is_refused_before_a_run_and_help_is_not_a_run() {
        assert!(parse("--help").unwrap().is_none());
        assert!(parse("--only stdio -h").unwrap().is_none());
        assert_eq!(refusal("--wrte BENCHMARKS.md"), r#"unknown argument "--wrte""#);
        assert_eq!(refusal("--only stdo"), r#"no section "stdo""#);
        assert_eq!(refusal("--only stdio --only list"), "--only is given twice");
        assert_eq!(refusal("--soak host 1 10 --rounds 2"), "--soak takes no other option");
        assert_eq!(refusal("--soak host 1"), "--soak takes 3 value(s)");
        assert_eq!(refusal("--write -h"), r#"--write takes a value, not "-h""#);
        assert_eq!(refusal("--compare --write x"), r#"--compare takes a value, not "--write""#);
    }
}
