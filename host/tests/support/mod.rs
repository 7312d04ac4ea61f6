//! Drives the real `prompt-host` binary over stdio, as an MCP client would,
//! with raw JSON-RPC so tests see exactly what goes over the wire.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How long a test waits for one response before it fails.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// The directory the plugin workspace builds its components into.
pub fn built_plugins() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/target/wasm32-wasip2/release")
}

/// The path of one built plugin, by crate file name (`code_review`).
pub fn built_plugin(name: &str) -> PathBuf {
    let path = built_plugins().join(format!("{name}.wasm"));
    assert!(path.exists(), "{} is missing: the build script builds plugins/", path.display());
    path
}

/// Installs a built plugin into `dir` under `file_name` the way operators
/// should: copy beside it, then rename over it.
pub fn install(dir: &Path, plugin: &str, file_name: &str) {
    install_bytes(dir, &std::fs::read(built_plugin(plugin)).unwrap(), file_name);
}

/// Writes `bytes` into `dir` under `file_name`, atomically.
pub fn install_bytes(dir: &Path, bytes: &[u8], file_name: &str) {
    let staging = dir.join(format!(".{file_name}.partial"));
    std::fs::write(&staging, bytes).unwrap();
    std::fs::rename(&staging, dir.join(file_name)).unwrap();
}

/// A fresh plugin directory holding copies of the named built plugins.
pub fn plugin_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::copy(built_plugin(name), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

/// `prompt-host serve` of a fresh directory holding copies of the named built
/// plugins, with `extra` arguments, after the MCP handshake.
pub fn serve_plugins(names: &[&str], extra: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = plugin_dir(names);
    let mut args = vec!["--plugins", dir.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = Server::start(&args);
    (dir, server)
}

/// A running `prompt-host serve`.
pub struct Server {
    child: Child,
    stdin: Box<dyn Write + Send>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Responses read while waiting for another one, by id.
    pending: HashMap<u64, Value>,
    /// Notifications from the server, in the order they came.
    pub notifications: Vec<Value>,
}

impl Server {
    /// Starts `prompt-host serve` with these arguments, without initializing,
    /// its stdin and stdout pipes (as most clients start a server).
    pub fn spawn(args: &[&str]) -> Server {
        Server::spawn_command(Server::command(args))
    }

    fn spawn_command(mut command: Command) -> Server {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("failed to start prompt-host");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        Server::attach(child, Box::new(stdin), Box::new(stdout))
    }

    /// Starts `prompt-host serve` with these arguments, without initializing,
    /// its stdin and stdout the two ends of Unix socket pairs: what Node
    /// gives a child process, and so what the official TypeScript SDK client
    /// and the MCP Inspector give a server.
    pub fn spawn_over_sockets(args: &[&str]) -> Server {
        let (ours_in, theirs_in) = std::os::unix::net::UnixStream::pair().unwrap();
        let (ours_out, theirs_out) = std::os::unix::net::UnixStream::pair().unwrap();
        let child = Server::command(args)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs_in)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
            .spawn()
            .expect("failed to start prompt-host");
        Server::attach(child, Box::new(ours_in), Box::new(ours_out))
    }

    /// Starts `prompt-host serve` with these arguments on two CPUs only
    /// (`taskset`), so that its sandbox's slow lane is one thread wide on
    /// any machine, and completes the MCP handshake.
    pub fn start_on_two_cpus(args: &[&str]) -> Server {
        let cpus = two_allowed_cpus();
        let mut command = Command::new("taskset");
        command.args(["-c", &cpus, env!("CARGO_BIN_EXE_prompt-host")]);
        let mut server = Server::spawn_command(Server::serve_command(command, args));
        server.initialize("2025-11-25");
        server
    }

    fn command(args: &[&str]) -> Command {
        Server::serve_command(Command::new(env!("CARGO_BIN_EXE_prompt-host")), args)
    }

    /// `command` (the binary, or what runs it) told to serve with `args`.
    fn serve_command(mut command: Command, args: &[&str]) -> Command {
        command
            .arg("serve")
            .args(args)
            .env("RUST_LOG", "info,prompt_host=debug")
            // Keep the compiled cache out of the user's home, shared by the tests.
            .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
            .stderr(Stdio::piped());
        command
    }

    fn attach(mut child: Child, stdin: Box<dyn Write + Send>, stdout: Box<dyn Read + Send>) -> Server {
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = collect_stderr(&mut child);
        Server { child, stdin, lines, stderr, next_id: 1, pending: HashMap::new(), notifications: Vec::new() }
    }

    /// Starts `prompt-host serve` and completes the MCP handshake.
    pub fn start(args: &[&str]) -> Server {
        let mut server = Server::spawn(args);
        server.initialize("2025-11-25");
        server
    }

    /// Starts `prompt-host serve` with these arguments and these environment
    /// variables set, and completes the MCP handshake.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Server::command(args);
        command.envs(env.iter().copied());
        let mut server = Server::spawn_command(command);
        server.initialize("2025-11-25");
        server
    }

    /// Sends `initialize` with `version`, then `notifications/initialized`.
    /// Returns the initialize result.
    pub fn initialize(&mut self, version: &str) -> Value {
        self.initialize_with(version, json!({}))
    }

    /// Completes the MCP handshake at `version`, declaring the client
    /// capabilities `capabilities`.
    pub fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        let result = self.result(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": { "name": "prompt-host-tests", "version": "1.0.0" }
            }),
        );
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        result
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Writes a raw line, which need not be valid JSON.
    pub fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Writes raw bytes, which need not be UTF-8 (nor end a line).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes to stdout, as it came.
    pub fn next_line(&mut self) -> String {
        self.lines
            .recv_timeout(RESPONSE_TIMEOUT)
            .unwrap_or_else(|error| panic!("no line on stdout ({error:?}); stderr:\n{}", self.stderr()))
    }

    /// The lines the server wrote to stdout that were not read yet, to its
    /// end: call it once the server has exited.
    pub fn rest_of_stdout(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => return rest,
                Err(RecvTimeoutError::Timeout) => panic!("stdout did not end; stderr:\n{}", self.stderr()),
            }
        }
    }

    /// Sends a request and returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// Reads messages until the response to `id` arrives, and returns it.
    /// Every line on stdout must be a JSON-RPC message.
    pub fn response(&mut self, id: u64) -> Value {
        if let Some(response) = self.pending.remove(&id) {
            return response;
        }
        loop {
            let line = match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("no response to request {id}; stderr:\n{}", self.stderr()),
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout; stderr:\n{}", self.stderr()),
            };
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|error| panic!("stdout carried a line that is not JSON ({error}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
            match message["id"].as_u64() {
                Some(found) if found == id => return message,
                Some(other) => {
                    self.pending.insert(other, message);
                }
                None => self.notifications.push(message),
            }
        }
    }

    /// Reads messages until the server sends a request of `method` (such as
    /// `elicitation/create`), and returns it; responses read meanwhile are
    /// kept for [`Server::response`].
    pub fn server_request(&mut self, method: &str) -> Value {
        loop {
            let line = match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
                Ok(line) => line,
                Err(error) => panic!("no {method} request from the server ({error:?}); stderr:\n{}", self.stderr()),
            };
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|error| panic!("stdout carried a line that is not JSON ({error}): {line}"));
            match (message.get("method"), message["id"].as_u64()) {
                (Some(found), Some(_)) if found == method => return message,
                (None, Some(id)) => {
                    self.pending.insert(id, message);
                }
                _ => self.notifications.push(message),
            }
        }
    }

    /// Sends a request and returns its whole response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// Sends a request that must succeed, and returns its result.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// Sends a request that must fail, and returns its error object.
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("result").is_none(), "{method} should have failed: {response}");
        response["error"].clone()
    }

    /// Gets a prompt that must succeed.
    pub fn get_prompt(&mut self, name: &str, arguments: Value) -> Value {
        self.result("prompts/get", json!({ "name": name, "arguments": arguments }))
    }

    /// Every prompt name, walking all pages of `prompts/list`.
    pub fn list_all_names(&mut self) -> Vec<String> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let page = self.result("prompts/list", params);
            for prompt in page["prompts"].as_array().unwrap() {
                names.push(prompt["name"].as_str().unwrap().to_string());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_string()),
                None => return names,
            }
        }
    }

    /// Reads messages until a notification with `method` arrives (or takes
    /// one that already has), and returns it.
    pub fn notification(&mut self, method: &str) -> Value {
        loop {
            if let Some(index) = self.notifications.iter().position(|n| n["method"] == method) {
                return self.notifications.remove(index);
            }
            let line = match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
                Ok(line) => line,
                Err(_) => panic!("no {method} notification; stderr:\n{}", self.stderr()),
            };
            let message: Value = serde_json::from_str(&line).unwrap();
            match message["id"].as_u64() {
                Some(id) => {
                    self.pending.insert(id, message);
                }
                None => self.notifications.push(message),
            }
        }
    }

    /// Makes a request, which makes the server flush what it had to say
    /// before answering it, and returns the notifications received so far.
    pub fn drain_notifications(&mut self) -> Vec<Value> {
        self.result("ping", json!({}));
        std::mem::take(&mut self.notifications)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the server SIGHUP.
    pub fn hang_up(&self) {
        let status = Command::new("kill").args(["-HUP", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// Sends the server SIGTERM and waits for it to exit; returns its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        self.child.wait().unwrap().code()
    }

    /// Closes the server's stdin, as a client does when it is done, and waits
    /// for the server to exit; returns its exit code.
    pub fn close_stdin(&mut self) -> Option<i32> {
        self.stdin = Box::new(std::io::sink());
        self.child.wait().unwrap().code()
    }

    /// Everything the server has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr contains `text`, or fails after the response timeout.
    pub fn wait_for_stderr(&self, text: &str) -> String {
        self.wait_for_stderr_count(text, 1)
    }

    /// Waits until stderr contains `text` at least `count` times, or fails
    /// after the response timeout. (stderr is read by another thread, so a
    /// line logged before a response may be seen after it.)
    pub fn wait_for_stderr_count(&self, text: &str, count: usize) -> String {
        wait_for_text(&self.stderr, text, count)
    }
}

/// How many descriptors process `pid` holds, once the count has stood still
/// for 200 ms (or fails after the response timeout): a used instance is
/// dropped after its reply is sent, and the next one built, in tasks of
/// their own.
pub fn settled_descriptors(pid: u32) -> usize {
    let descriptors = || std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    let deadline = std::time::Instant::now() + RESPONSE_TIMEOUT;
    let mut last = descriptors();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = descriptors();
        if now == last {
            return now;
        }
        assert!(std::time::Instant::now() < deadline, "process {pid}'s descriptors never settled: {last}, then {now}");
        last = now;
    }
}

/// What the server logs once the metrics listener serves, before its URL.
pub const METRICS_SERVED: &str = "metrics, /healthz and /readyz served on http://";

/// The metrics listener's address, once the server has logged it in `stderr`.
pub fn metrics_address(stderr: &Mutex<String>) -> std::net::SocketAddr {
    metrics_address_in(&wait_for_text(stderr, METRICS_SERVED, 1))
}

/// The metrics listener's address, from the server's log `log`.
pub fn metrics_address_in(log: &str) -> std::net::SocketAddr {
    let rest = &log[log.find(METRICS_SERVED).unwrap() + METRICS_SERVED.len()..];
    rest[..rest.find("/metrics").unwrap()].parse().unwrap()
}

/// Collects what `child` writes to its (piped) stderr, as it comes.
pub fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    let mut pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buffer) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    stderr
}

/// Waits until `collected` contains `text` at least `count` times, or fails
/// after the response timeout; returns all of it.
pub fn wait_for_text(collected: &Mutex<String>, text: &str, count: usize) -> String {
    let deadline = std::time::Instant::now() + RESPONSE_TIMEOUT;
    loop {
        let stderr = collected.lock().unwrap().clone();
        if stderr.matches(text).count() >= count {
            return stderr;
        }
        assert!(std::time::Instant::now() < deadline, "stderr never said {text:?} {count} times:\n{stderr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of the only message of a `prompts/get` result.
pub fn only_text(result: &Value) -> &str {
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "expected one message: {result}");
    messages[0]["content"]["text"].as_str().unwrap()
}

/// Sends one raw HTTP/1.1 request (which should ask `Connection: close`) to
/// `addr` and returns the status and everything after it: headers and body.
pub fn http_exchange(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(RESPONSE_TIMEOUT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("the server neither answered nor closed");
    http_status(&String::from_utf8_lossy(&bytes))
}

/// Waits until the server whose metrics are served at `metrics` counts
/// `count` requests in flight (`prompt_host_requests_in_flight`): a call
/// is then running in its pack.
pub fn wait_for_in_flight(metrics: std::net::SocketAddr, count: u64) {
    let began = std::time::Instant::now();
    let expected = format!("prompt_host_requests_in_flight {count}");
    loop {
        let (status, scraped) = http_exchange(metrics, &format!("GET /metrics HTTP/1.1\r\nHost: {metrics}\r\nConnection: close\r\n\r\n"));
        assert_eq!(status, 200, "{scraped}");
        if scraped.lines().any(|line| line == expected) {
            return;
        }
        assert!(began.elapsed() < RESPONSE_TIMEOUT, "never {expected}: {scraped}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Reads from `stream` until what it has read contains `text`; returns it all.
pub fn read_until_text(stream: &mut std::net::TcpStream, text: &str) -> String {
    let (mut seen, mut buffer) = (Vec::new(), [0u8; 4096]);
    while !String::from_utf8_lossy(&seen).contains(text) {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before {text:?}: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// The status of an HTTP response and the rest of it.
pub fn http_status(response: &str) -> (u16, String) {
    let status = response.split(' ').nth(1).and_then(|code| code.parse().ok());
    (status.unwrap_or_else(|| panic!("no HTTP response: {response:?}")), response.to_string())
}

/// A POST of `body` to /mcp with `headers` (each ending in CRLF), asking the
/// server to close the connection after answering.
pub fn http_post(host: &str, headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An `initialize` request body.
pub const HTTP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"prompt-host-tests","version":"1.0.0"}}}"#;

/// `prompt-host serve --http ADDRESS` with `extra` arguments, its stderr
/// collected, once it says where it serves; and that address.
pub fn spawn_http(address: &str, extra: &[&str]) -> (Child, Arc<Mutex<String>>, std::net::SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command.args(["serve", "--http", address]).args(extra);
    start_http(command, "info")
}

/// Starts `command`, a `prompt-host serve --http`, logging with
/// `log_filter`, and waits until it says where it serves; returns it, its
/// stderr as collected, and that address.
pub fn start_http(mut command: Command, log_filter: &str) -> (Child, Arc<Mutex<String>>, std::net::SocketAddr) {
    let mut child = command
        .env("RUST_LOG", log_filter)
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start prompt-host");
    let stderr = collect_stderr(&mut child);
    let log = wait_for_text(&stderr, "serving MCP over Streamable HTTP at http://", 1);
    let rest = &log[log.find("at http://").unwrap() + "at http://".len()..];
    let addr = rest[..rest.find("/mcp").unwrap()].parse().unwrap();
    (child, stderr, addr)
}

/// Sends `signal` (TERM, INT, HUP) to the process `pid`.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

/// The `_meta` a 2026-07-28 client sends with every request, in place of a
/// handshake, declaring the client capabilities `capabilities`.
pub fn meta_2026(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "prompt-host-tests", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// The `_meta` of a 2026-07-28 client that declared elicitation.
pub fn elicitation_2026() -> Value {
    meta_2026(json!({ "elicitation": {} }))
}

/// The first two CPUs this process may run on (from `Cpus_allowed_list`,
/// such as `0-3,8`), as `taskset -c` takes them: a container or CI runner
/// may grant CPUs other than 0 and 1.
fn two_allowed_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    let list = status.lines().find_map(|line| line.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list is listed").trim();
    let allowed = list.split(',').flat_map(|part| {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
        first..=last
    });
    let two: Vec<String> = allowed.take(2).map(|cpu| cpu.to_string()).collect();
    assert_eq!(two.len(), 2, "this process may run on one CPU only ({list}), and the test needs two");
    two.join(",")
}
