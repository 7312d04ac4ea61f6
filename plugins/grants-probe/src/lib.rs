//! Test fixture (WIT 0.3): a pack that asks to see folders `project`, `logs`
//! and `private`, and values `GREETING` and `API_TOKEN`, and whose prompts
//! try, through Rust's own `std::fs` and `std::env`, everything a pack could
//! do with what it was granted (and more). Each prompt answers one line per
//! attempt, so a test sees exactly what the host allowed:
//! - `read` (`path`): reads the file whole: `read N bytes: TEXT` (the
//!   first 64 characters) or `error KIND: MESSAGE`;
//! - `list` (`path`): lists a folder: `N entries: NAMES` (sorted, the first 20);
//! - `change` (`path`): tries to write, create, rename, remove, link and
//!   set the times of `path`, one line each;
//! - `env` (`name`): `NAME=VALUE` or `NAME is not set`;
//! - `read-many` (`path`, `times`): reads the file that many times, and
//!   answers the distinct contents it saw (for a file swapped while read);
//! - `open-many` (`path`, `count`, and `hold_ms`, undeclared): opens the file
//!   that many times at once, and holds them until `hold_ms` after the call
//!   began;
//! - `stat` (`path`): what the file is, without following a final symlink.
//! - `fetch` (`url`, and undeclared `times`, `header`, `body_kib`,
//!   `burn_first`): runs `burn` for that many iterations first (none if
//!   not given: CPU time, which a spin on the clock is not when the host's
//!   threads are busy), then sends
//!   a request through `wasi:http/outgoing-handler` (a POST of `body_kib`
//!   KiB when given, with `header` as `name: value` when given), following
//!   up to 5 redirects, `times` times (1 if not given): one line per
//!   request, `status N, M bytes: TEXT` (the first 64 characters) or
//!   `error: CODE`; with undeclared `then` = `trap` or `spin`, it then
//!   panics or spins to its deadline instead of answering. It asks for `http://127.0.0.1:P` for P in
//!   47801..=47808, `http://localhost:P` for P in 47801..=47804 and
//!   `https://127.0.0.1:P` for P in 47805..=47808 (16 in all, the most a
//!   pack may ask for), so that a test's loopback server can take any
//!   free port of those.
//! - `burn` (`iterations`, undeclared): runs that many rounds of a small
//!   computation, and answers `burned` (CPU alone, for a fixed amount of work);
//! - `alternate` (`spin_ms`, `wait_ms`, `for_ms`, undeclared): spins `spin_ms`,
//!   then sleeps `wait_ms` (`wasi:clocks`), until `for_ms` have passed, and
//!   answers `alternated`;
//! - `hoard`: makes outgoing requests with bodies, writes to each as much as
//!   it may, and keeps them all, never sending one, until the host refuses
//!   (host memory no budget would charge, but for the resources' cap).
//!
//! Its start reads `/logs` (it must see nothing then: a spare made ahead of
//! a call must not carry what a folder held into the call).

wit_bindgen::generate!({ path: "../../wit/0.3", world: "prompt-pack" });

use exports::prompt_host::prompts::prompt_provider::*;
use std::sync::atomic::{AtomicBool, Ordering};
use wasip2::http::{outgoing_handler, types as http};

/// Whether the start could list `/logs` (it must not).
static START_SAW_LOGS: AtomicBool = AtomicBool::new(false);

/// The module's initializer, run as the component is instantiated (its start).
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    START_SAW_LOGS.store(std::fs::read_dir("/logs").is_ok(), Ordering::Relaxed);
}

fn argument(name: &str) -> PromptArgument {
    PromptArgument { name: name.into(), title: None, description: None, required: true, kind: None, default: None, examples: Vec::new() }
}

fn prompt(name: &str, arguments: &[&str]) -> Prompt {
    Prompt { name: name.into(), title: None, description: None, arguments: arguments.iter().map(|a| argument(a)).collect(), icons: Vec::new() }
}

fn failed(error: std::io::Error) -> String {
    format!("error {:?}: {error}", error.kind())
}

fn value<'a>(arguments: &'a [Argument], name: &str) -> &'a str {
    arguments.iter().find(|argument| argument.name == name).map_or("", |argument| argument.value.as_str())
}

/// Reads the whole file in chunks, as a log reader would: no size taken
/// from its metadata (`std::fs::read` would reserve a 10 GiB sparse file's
/// size first, and fail in the pack's own allocator).
fn read_file(path: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let (mut bytes, mut chunk) = (Vec::new(), vec![0; 64 << 10]);
    loop {
        match file.read(&mut chunk)? {
            0 => return Ok(bytes),
            read => bytes.extend_from_slice(&chunk[..read]),
        }
    }
}

fn read(path: &str) -> String {
    match read_file(path) {
        Ok(bytes) => format!("read {} bytes: {}", bytes.len(), String::from_utf8_lossy(&bytes).chars().take(64).collect::<String>()),
        Err(error) => failed(error),
    }
}

fn list(path: &str) -> String {
    match std::fs::read_dir(path) {
        Ok(entries) => {
            let mut names = Vec::new();
            for entry in entries {
                match entry {
                    Ok(entry) => names.push(entry.file_name().to_string_lossy().into_owned()),
                    Err(error) => return failed(error),
                }
            }
            names.sort();
            let count = names.len();
            names.truncate(20);
            format!("{count} entries: {}", names.join(", "))
        }
        Err(error) => failed(error),
    }
}

fn attempt(what: &str, result: std::io::Result<()>) -> String {
    match result {
        Ok(()) => format!("{what}: done"),
        Err(error) => format!("{what}: {}", failed(error)),
    }
}

fn change(path: &str) -> String {
    let times = || -> std::io::Result<()> {
        let file = std::fs::File::open(path)?;
        file.set_modified(std::time::SystemTime::UNIX_EPOCH)
    };
    [
        attempt("write", std::fs::write(path, b"changed")),
        attempt("append", std::fs::OpenOptions::new().append(true).open(path).map(drop)),
        attempt("create", std::fs::write(format!("{path}.new"), b"new")),
        attempt("mkdir", std::fs::create_dir(format!("{path}.d"))),
        attempt("rename", std::fs::rename(path, format!("{path}.moved"))),
        attempt("remove", std::fs::remove_file(path)),
        attempt("link", std::fs::hard_link(path, format!("{path}.link"))),
        attempt("set-times", times()),
    ]
    .join("\n")
}

fn read_many(path: &str, times: usize) -> String {
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..times {
        seen.insert(match read_file(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => failed(error),
        });
    }
    format!("read {times} times; saw: {}", seen.into_iter().collect::<Vec<_>>().join(" | "))
}

/// Opens the file `count` times, and keeps them all open until `hold_ms`
/// after the call began (so that calls running at once hold theirs at once).
fn open_many(path: &str, count: usize, hold_ms: u64) -> String {
    let began = std::time::Instant::now();
    let mut open = Vec::new();
    let mut outcome = None;
    for _ in 0..count {
        match std::fs::File::open(path) {
            Ok(file) => open.push(file),
            Err(error) => {
                outcome = Some(format!("opened {}, then {}", open.len(), failed(error)));
                break;
            }
        }
    }
    while began.elapsed() < std::time::Duration::from_millis(hold_ms) {
        std::hint::spin_loop();
    }
    outcome.unwrap_or_else(|| format!("opened {}", open.len()))
}

fn stat(path: &str) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) => {
            let kind = if metadata.is_symlink() {
                "symlink"
            } else if metadata.is_dir() {
                "folder"
            } else if metadata.is_file() {
                "file"
            } else {
                "other"
            };
            format!("{kind} of {} bytes", metadata.len())
        }
        Err(error) => failed(error),
    }
}

/// The origins it asks for (see above).
fn origins() -> Vec<String> {
    let plain = (47801..=47808).map(|port| format!("http://127.0.0.1:{port}"));
    let named = (47801..=47804).map(|port| format!("http://localhost:{port}"));
    let tls = (47805..=47808).map(|port| format!("https://127.0.0.1:{port}"));
    plain.chain(named).chain(tls).collect()
}

/// Sends one request (and the redirects it leads to): `status N, M bytes:
/// TEXT` or `error: CODE`, and where a redirect leads.
fn fetch_once(url: &str, header: &str, body_kib: usize) -> String {
    let mut url = url.to_string();
    let mut lines = Vec::new();
    for _hop in 0..6 {
        match request(&url, header, body_kib) {
            Ok((status, location, body)) => {
                let text = String::from_utf8_lossy(&body).chars().take(64).collect::<String>();
                lines.push(format!("status {status}, {} bytes: {text}", body.len()));
                match location {
                    Some(location) if (300..400).contains(&status) => url = location,
                    _ => break,
                }
            }
            Err(error) => {
                lines.push(format!("error: {error}"));
                break;
            }
        }
    }
    lines.join(" -> ")
}

fn request(url: &str, header: &str, body_kib: usize) -> Result<(u16, Option<String>, Vec<u8>), String> {
    let (scheme, rest) = url.split_once("://").ok_or("no scheme")?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |at| (&rest[..at], &rest[at..]));
    let fields = http::Fields::new();
    if let Some((name, value)) = header.split_once(": ") {
        fields.append(&name.to_string(), &value.as_bytes().to_vec()).map_err(|error| format!("header {error:?}"))?;
    }
    if body_kib > 0 {
        let length = (body_kib * 1024).to_string();
        fields.append(&"content-length".to_string(), &length.into_bytes()).map_err(|error| format!("header {error:?}"))?;
    }
    let request = http::OutgoingRequest::new(fields);
    let scheme = if scheme == "https" { http::Scheme::Https } else { http::Scheme::Http };
    request.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    request.set_authority(Some(authority)).map_err(|()| "authority")?;
    request.set_path_with_query(Some(path)).map_err(|()| "path")?;
    let body = request.body().map_err(|()| "body")?;
    if body_kib > 0 {
        request.set_method(&http::Method::Post).map_err(|()| "method")?;
    }
    let future = outgoing_handler::handle(request, None).map_err(|error| format!("{error:?}"))?;
    if body_kib > 0 {
        let stream = body.write().map_err(|()| "body stream")?;
        let chunk = vec![b'x'; 1024];
        for _ in 0..body_kib {
            if let Err(error) = stream.blocking_write_and_flush(&chunk) {
                drop(stream);
                return Err(format!("while sending: {error:?}"));
            }
        }
        drop(stream);
    }
    http::OutgoingBody::finish(body, None).map_err(|error| format!("{error:?}"))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(error))) => return Err(format!("{error:?}")),
        _ => return Err("no response".to_string()),
    };
    let status = response.status();
    let location = response.headers().get("location").first().map(|value| String::from_utf8_lossy(value).into_owned());
    let body = response.consume().map_err(|()| "consume")?;
    let stream = body.stream().map_err(|()| "stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(wasip2::io::streams::StreamError::Closed) => break,
            Err(wasip2::io::streams::StreamError::LastOperationFailed(error)) => {
                let code = http::http_error_code(&error);
                return Err(format!("after {} bytes: {code:?}", bytes.len()));
            }
        }
    }
    Ok((status, location, bytes))
}

/// Requests with bodies written to and kept, never sent: until a call to
/// the host fails (the resource table is full), which traps.
fn hoard() -> String {
    let chunk = vec![b'x'; 1 << 20];
    let mut kept = Vec::new();
    loop {
        let request = http::OutgoingRequest::new(http::Fields::new());
        let Ok(body) = request.body() else { return format!("no body after {}", kept.len()) };
        let Ok(stream) = body.write() else { return format!("no stream after {}", kept.len()) };
        for _ in 0..2 {
            let permitted = stream.check_write().unwrap_or(0) as usize;
            let _ = stream.write(&chunk[..permitted.min(chunk.len())]);
        }
        kept.push((request, body, stream));
    }
}

/// Runs `iterations` rounds of xorshift: work for the CPU alone.
fn burn(iterations: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    // Printed nowhere: kept only so the loop is not optimized away.
    std::hint::black_box(x);
    "burned".into()
}

/// Spins `spin_ms`, then sleeps `wait_ms`, until `for_ms` have passed.
fn alternate(spin_ms: u64, wait_ms: u64, for_ms: u64) -> String {
    use std::time::{Duration, Instant};
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(for_ms) {
        let spun = Instant::now();
        while spun.elapsed() < Duration::from_millis(spin_ms) {
            std::hint::spin_loop();
        }
        std::thread::sleep(Duration::from_millis(wait_ms));
    }
    "alternated".into()
}

struct GrantsProbe;

impl Guest for GrantsProbe {
    fn describe_pack() -> PackInfo {
        let folder = |name: &str| WantedFolder { name: name.into(), description: Some(format!("the {name} folder")) };
        PackInfo {
            name: "grants-probe".into(),
            version: "0.1.0".into(),
            description: None,
            authors: Vec::new(),
            license: None,
            homepage: None,
            repository: None,
            wants: Wants {
                folders: vec![folder("project"), folder("logs"), folder("private")],
                origins: origins(),
                env: vec!["GREETING".into(), "API_TOKEN".into()],
            },
        }
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("read", &["path"]),
            prompt("list", &["path"]),
            prompt("change", &["path"]),
            prompt("env", &["name"]),
            prompt("read-many", &["path", "times"]),
            prompt("open-many", &["path", "count"]),
            prompt("stat", &["path"]),
            prompt("start", &[]),
            prompt("fetch", &["url"]),
            prompt("hoard", &[]),
            prompt("burn", &[]),
            prompt("alternate", &[]),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        let path = value(&arguments, "path");
        let number = |name: &str| value(&arguments, name).parse::<usize>().unwrap_or(0);
        let text = match name.as_str() {
            "read" => read(path),
            "list" => list(path),
            "change" => change(path),
            "env" => {
                let name = value(&arguments, "name");
                std::env::var(name).map_or_else(|_| format!("{name} is not set"), |value| format!("{name}={value}"))
            }
            "read-many" => read_many(path, number("times")),
            "open-many" => open_many(path, number("count"), number("hold_ms") as u64),
            "stat" => stat(path),
            "fetch" => {
                burn(number("burn_first"));
                let times = number("times").max(1);
                let (header, body_kib) = (value(&arguments, "header"), number("body_kib"));
                let answer = (0..times).map(|_| fetch_once(value(&arguments, "url"), header, body_kib)).collect::<Vec<_>>().join("\n");
                match value(&arguments, "then") {
                    "trap" => panic!("trapped after the requests"),
                    "spin" => loop {
                        std::hint::spin_loop();
                    },
                    _ => answer,
                }
            }
            "hoard" => hoard(),
            "burn" => burn(number("iterations")),
            "alternate" => alternate(number("spin_ms") as u64, number("wait_ms") as u64, number("for_ms") as u64),
            "start" => format!("the start saw /logs: {}", START_SAW_LOGS.load(Ordering::Relaxed)),
            _ => return Err(PromptError::NotFound),
        };
        Ok(PromptAnswer::Reply(PromptReply {
            description: None,
            messages: vec![Message { role: Role::User, content: Content::Text(TextContent { text, annotations: None }) }],
        }))
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(Completion { values: Vec::new(), total: None, has_more: false })
    }
}

export!(GrantsProbe);
