//! Grants over the real binary (issue "Packs that see what they are
//! granted"): a WIT 0.3 pack (fixture `grants_probe`) reads the folders it
//! asked for and the operator granted, through Rust's own `std::fs`, and
//! nothing else: every escape, special file, write and budget overrun ends
//! in the exact error below, and the host goes on serving. Values reach the
//! pack that asked for them and was granted them, and nothing shows them.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text};

/// The secret granted as `API_TOKEN`, from a file: it must appear nowhere
/// but in the pack's own answer.
const SECRET: &str = "s3cret-token-4f2a9";

/// A site: a plugin directory with the probe (as `grants_probe`, granted,
/// and as `other_probe`, granted nothing), the folders it is granted, a
/// folder outside them, and the config that grants them.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new(limits: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in ["plugins", "project/sub", "logs", "outside"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        std::fs::copy(built_plugin("grants_probe"), root.join("plugins/grants_probe.wasm")).unwrap();
        std::fs::copy(built_plugin("grants_probe"), root.join("plugins/other_probe.wasm")).unwrap();
        std::fs::write(root.join("project/main.py"), "print('hi')\n").unwrap();
        std::fs::write(root.join("project/sub/inside.txt"), "inside").unwrap();
        std::fs::write(root.join("logs/app.log"), "line 1\nline 2\n").unwrap();
        std::fs::write(root.join("outside/secret.txt"), "outside secret").unwrap();
        std::fs::write(root.join("token"), format!("{SECRET}\n")).unwrap();
        std::os::unix::fs::symlink("main.py", root.join("project/link_in")).unwrap();
        std::os::unix::fs::symlink(root.join("outside/secret.txt"), root.join("project/link_out")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("project/dir_out")).unwrap();
        let site = Site { dir };
        site.write_config("project = \"project\"\nlogs = \"logs\"\n", limits);
        site
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn write_config(&self, folders: &str, limits: &str) {
        let config = format!(
            "[server]\nplugins = \"plugins\"\n\n[plugins.grants_probe.grants.folders]\n{folders}\n\
             [plugins.grants_probe.grants.env]\nGREETING = \"hello\"\nAPI_TOKEN = {{ file = \"token\" }}\nOTHER = \"not asked for\"\n\n\
             [plugins.grants_probe.limits]\n{limits}\n\n[plugins.other_probe]\nprefix = \"other-\"\n"
        );
        std::fs::write(self.path("config.toml"), config).unwrap();
    }

    fn serve(&self) -> Server {
        Server::start(&["--config", self.path("config.toml").to_str().unwrap()])
    }

    fn serve_with_metrics(&self) -> (Server, std::net::SocketAddr) {
        let server = Server::start(&["--config", self.path("config.toml").to_str().unwrap(), "--metrics", "127.0.0.1:0"]);
        let address = support::metrics_address_in(&server.wait_for_stderr(support::METRICS_SERVED));
        (server, address)
    }
}

fn ask(server: &mut Server, prompt: &str, arguments: Value) -> String {
    only_text(&server.get_prompt(prompt, arguments)).to_string()
}

fn read(server: &mut Server, path: &str) -> String {
    ask(server, "read", json!({ "path": path }))
}

/// The error of a call that used up its budget `key` (`what` says how much).
fn budget(what: &str, key: &str, limit: u64) -> Value {
    json!({
        "code": -32603,
        "message": format!(
            "plugin 'grants_probe' used up its per-call budget of {what} in granted folders (limits.{key}); a failed call keeps none of what it read"
        ),
        "data": { "plugin": "grants_probe", "failure": "grant-budget", "limit": { "budget": key, "limit": limit } },
    })
}

fn failure(server: &mut Server, prompt: &str, arguments: Value) -> Value {
    server.error("prompts/get", json!({ "name": prompt, "arguments": arguments }))
}

#[test]
fn a_granted_folder_is_read_with_std_fs_and_nothing_outside_it() {
    let site = Site::new("");
    let mut server = site.serve();
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
    assert_eq!(read(&mut server, "/project/sub/inside.txt"), "read 6 bytes: inside");
    assert_eq!(read(&mut server, "/logs/app.log"), "read 14 bytes: line 1\nline 2\n");
    assert_eq!(read(&mut server, "/project/link_in"), "read 12 bytes: print('hi')\n", "a symlink inside the folder is followed");
    assert_eq!(ask(&mut server, "list", json!({ "path": "/project" })), "5 entries: dir_out, link_in, link_out, main.py, sub");
    assert_eq!(
        ask(&mut server, "stat", json!({ "path": "/project/link_out" })),
        "symlink of 44 bytes".replace("44", &site.path("outside/secret.txt").to_str().unwrap().len().to_string())
    );
    let refused = "error PermissionDenied: Operation not permitted (os error 63)";
    for escape in
        ["/project/../outside/secret.txt", "/project/sub/../../outside/secret.txt", "/project/link_out", "/project/dir_out/secret.txt"]
    {
        assert_eq!(read(&mut server, escape), refused, "{escape}");
    }
    assert_eq!(ask(&mut server, "list", json!({ "path": "/project/dir_out" })), refused);
    // Paths of no granted folder are not even found.
    let absent = "error NotFound: No such file or directory (os error 44)";
    for elsewhere in ["/etc/passwd", site.path("outside/secret.txt").to_str().unwrap(), "/proc/self/environ"] {
        assert_eq!(read(&mut server, elsewhere), absent, "{elsewhere}");
    }
    // What cannot be prevented (docs/security/grants.md): a hard link inside the folder
    // to a file outside it is that file.
    std::fs::hard_link(site.path("outside/secret.txt"), site.path("project/hard")).unwrap();
    assert_eq!(read(&mut server, "/project/hard"), "read 14 bytes: outside secret");
}

#[test]
fn a_fifo_a_socket_or_a_device_is_refused_at_once_and_nothing_hangs() {
    let site = Site::new("");
    assert!(std::process::Command::new("mkfifo").arg(site.path("project/pipe")).status().unwrap().success());
    let _socket = std::os::unix::net::UnixListener::bind(site.path("project/socket")).unwrap();
    // A device node needs root (CI runs as root); /dev/zero's numbers.
    let device = std::process::Command::new("mknod").arg(site.path("project/zero")).args(["c", "1", "5"]).status().unwrap().success();
    let mut server = site.serve();
    let refused = "error PermissionDenied: Permission denied (os error 2)";
    // Each would block a reader (the FIFO with no writer) or never end (the
    // device): refused before any read, well within the call's deadline.
    assert_eq!(read(&mut server, "/project/pipe"), refused);
    assert_eq!(read(&mut server, "/project/socket"), refused);
    if device {
        assert_eq!(read(&mut server, "/project/zero"), refused);
    } else {
        eprintln!("mknod failed (not root?): the device case was not run");
    }
    assert_eq!(ask(&mut server, "stat", json!({ "path": "/project/pipe" })), "other of 0 bytes", "looking at it is allowed");
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
}

#[test]
fn read_only_means_the_pack_changes_nothing() {
    let site = Site::new("");
    let before = snapshot(&site.path("project"));
    let mut server = site.serve();
    let read_only = "error ReadOnlyFilesystem: Read-only file system (os error 69)";
    let expected: Vec<String> = ["write", "append", "create", "mkdir", "rename", "remove", "link", "set-times"]
        .iter()
        .map(|what| format!("{what}: {read_only}"))
        .collect();
    assert_eq!(ask(&mut server, "change", json!({ "path": "/project/main.py" })), expected.join("\n"));
    assert_eq!(snapshot(&site.path("project")), before, "the folder changed");
}

/// Every entry below `dir` with its contents and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        let contents = if metadata.is_file() { std::fs::read(&path).unwrap() } else { Vec::new() };
        if metadata.is_dir() {
            entries.extend(snapshot(&path));
        }
        entries.push((path, contents, metadata.modified().unwrap()));
    }
    entries.sort();
    entries
}

#[test]
fn a_budget_overrun_fails_the_call_naming_the_budget_and_the_host_serves_on() {
    let site = Site::new("grant_read_kib = 64\ngrant_dir_entries = 1000\ngrant_files_opened = 32\n");
    // A 10 GiB sparse file (it takes no disk), and a folder of 5,000 entries.
    std::fs::File::create(site.path("project/huge")).unwrap().set_len(10 << 30).unwrap();
    std::fs::create_dir(site.path("project/many")).unwrap();
    for index in 0..5000 {
        std::fs::File::create(site.path(&format!("project/many/{index}"))).unwrap();
    }
    let mut server = site.serve();
    assert_eq!(failure(&mut server, "read", json!({ "path": "/project/huge" })), budget("65536 bytes read", "grant_read_kib", 65536));
    assert_eq!(
        failure(&mut server, "list", json!({ "path": "/project/many" })),
        budget("1000 directory entries listed", "grant_dir_entries", 1000)
    );
    assert_eq!(
        failure(&mut server, "open-many", json!({ "path": "/project/main.py", "count": "40" })),
        budget("32 files opened", "grant_files_opened", 32)
    );
    // Exactly the budget is allowed.
    std::fs::write(site.path("project/full"), vec![b'x'; 64 << 10]).unwrap();
    assert_eq!(&read(&mut server, "/project/full")[..20], "read 65536 bytes: xx");
    // The folder's root counts as one: 31 files and it are exactly the budget of 32; one more is not.
    assert_eq!(ask(&mut server, "open-many", json!({ "path": "/project/main.py", "count": "31" })), "opened 31");
    assert_eq!(
        failure(&mut server, "open-many", json!({ "path": "/project/main.py", "count": "32" })),
        budget("32 files opened", "grant_files_opened", 32)
    );
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
}

#[test]
fn a_folder_asked_for_and_not_granted_fails_the_call_naming_the_key_that_grants_it() {
    let site = Site::new("");
    let mut server = site.serve();
    let not_granted = |plugin: &str, folder: &str| {
        json!({
            "code": -32603,
            "message": format!(
                "plugin '{plugin}' used folder '{folder}', which it asks for but is not granted: grant it with \
                 {folder} = \"/path/on/the/host\" in [plugins.{plugin}.grants.folders]"
            ),
            "data": { "plugin": plugin, "failure": "not-granted" },
        })
    };
    // Looking at the folder itself says it is not granted, without failing the call.
    assert_eq!(ask(&mut server, "stat", json!({ "path": "/private" })), "error PermissionDenied: Permission denied (os error 2)");
    assert_eq!(failure(&mut server, "list", json!({ "path": "/private" })), not_granted("grants_probe", "private"));
    assert_eq!(failure(&mut server, "read", json!({ "path": "/private/notes.txt" })), not_granted("grants_probe", "private"));
    // The same pack under another name is granted nothing.
    assert_eq!(failure(&mut server, "other-read", json!({ "path": "/project/main.py" })), not_granted("other_probe", "project"));
    server.wait_for_stderr("it asks for folder 'private', which is not granted");
    server.wait_for_stderr("granted: folder project = ");
}

#[test]
fn values_reach_only_the_pack_that_asked_and_was_granted_and_nothing_shows_them() {
    let site = Site::new("");
    let mut server = site.serve();
    assert_eq!(ask(&mut server, "env", json!({ "name": "GREETING" })), "GREETING=hello");
    assert_eq!(ask(&mut server, "env", json!({ "name": "API_TOKEN" })), format!("API_TOKEN={SECRET}"));
    for absent in ["OTHER", "HOME", "PATH"] {
        assert_eq!(ask(&mut server, "env", json!({ "name": absent })), format!("{absent} is not set"));
    }
    assert_eq!(ask(&mut server, "other-env", json!({ "name": "API_TOKEN" })), "API_TOKEN is not set");
    let log = server.wait_for_stderr("value 'OTHER' is granted");
    assert!(log.contains("but the pack does not ask for it: not given"), "{log}");
    server.terminate();
    assert!(!server.stderr().contains(SECRET), "the secret was logged");
    let (status, report) = inspect(&site, "grants_probe");
    assert_eq!(status, Some(0));
    assert!(!report.contains(SECRET), "inspect showed the secret");
    let granted = format!(
        "  granted   folder project = {} (read-only)\n            folder logs = {} (read-only)\n            value GREETING\n            value API_TOKEN\n\
         \x20 withheld  it asks for origin http://127.0.0.1:47801, which is not granted",
        site.path("project").display(),
        site.path("logs").display()
    );
    assert!(report.contains(&granted), "{report}");
    assert!(report.contains("            it asks for folder 'private', which is not granted"), "{report}");
    // `list` shows what each plugin is granted, and no value.
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["list", "--config", site.path("config.toml").to_str().unwrap()])
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    let probe = listed.lines().find(|line| line.starts_with("grants_probe\t")).unwrap_or_else(|| panic!("{listed}"));
    assert!(
        probe.ends_with(&format!(
            "\tgranted: folder project = {} (read-only), folder logs = {} (read-only), value GREETING, value API_TOKEN",
            site.path("project").display(),
            site.path("logs").display()
        )),
        "{probe}"
    );
    assert!(!listed.contains(SECRET));
    let other = listed.lines().find(|line| line.starts_with("other_probe\t")).unwrap_or_else(|| panic!("{listed}"));
    assert!(!other.contains("granted"), "{other}");
}

#[test]
fn a_start_sees_nothing_of_a_granted_folder() {
    let site = Site::new("");
    let mut server = site.serve();
    // Its start reads a folder, so its instance keeps a host resource (the
    // preopens) and is never made ahead of time: each is built on the path
    // of its call, and its start runs before the call begins.
    for _ in 0..3 {
        assert_eq!(ask(&mut server, "start", json!({})), "the start saw /logs: false");
    }
}

#[test]
fn a_grant_removed_at_sighup_is_refused_from_the_next_call() {
    let site = Site::new("");
    let mut server = site.serve();
    assert_eq!(read(&mut server, "/logs/app.log"), "read 14 bytes: line 1\nline 2\n");
    site.write_config("project = \"project\"\n", "");
    server.hang_up();
    let log = server.wait_for_stderr("grants changed for the next call");
    let line = log.lines().find(|line| line.contains("grants changed for the next call")).unwrap().to_string();
    assert!(line.contains("now folder project = ") && line.contains("; before folder project = "), "{line}");
    assert!(line.contains("folder logs = "), "{line}");
    assert_eq!(failure(&mut server, "read", json!({ "path": "/logs/app.log" }))["data"]["failure"], "not-granted");
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
}

#[test]
fn a_symlink_swapped_in_while_the_pack_reads_never_lets_it_out() {
    let site = Site::new("");
    std::fs::write(site.path("project/swapped"), "inside").unwrap();
    let mut server = site.serve();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, project, outside) = (stop.clone(), site.path("project"), site.path("outside/secret.txt"));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::os::unix::fs::symlink(&outside, project.join("link.tmp")).unwrap();
                std::fs::rename(project.join("link.tmp"), project.join("swapped")).unwrap();
                std::fs::write(project.join("file.tmp"), "inside").unwrap();
                std::fs::rename(project.join("file.tmp"), project.join("swapped")).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let mut seen = Vec::new();
    for _ in 0..10 {
        seen.push(ask(&mut server, "read-many", json!({ "path": "/project/swapped", "times": "200" })));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0);
    for answer in &seen {
        assert!(!answer.contains("outside secret"), "{answer}");
        let contents = answer.strip_prefix("read 200 times; saw: ").unwrap();
        for content in contents.split(" | ") {
            // Read inside, refused as leaving the folder, or refused as
            // swapped between the look at it and its open.
            let outcomes = [
                "inside",
                "error PermissionDenied: Operation not permitted (os error 63)",
                "error PermissionDenied: Permission denied (os error 2)",
            ];
            assert!(outcomes.contains(&content), "{content}");
        }
    }
}

/// `prompt-host inspect` of the site's copy of `plugin`, with its config.
fn inspect(site: &Site, plugin: &str) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["inspect", site.path(&format!("plugins/{plugin}.wasm")).to_str().unwrap()])
        .args(["--config", site.path("config.toml").to_str().unwrap()])
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8(output.stdout).unwrap())
}

/// The prompts guide's `analyze-project`, served as written: the bundled
/// pack embeds the log lines of the timeframe and the code file, from the
/// folders it is granted; without them it links to both (protocol.rs).
#[test]
fn analyze_project_embeds_the_granted_logs_and_code_file() {
    let site = tempfile::tempdir().unwrap();
    let root = site.path();
    for folder in ["plugins", "logs", "project/src"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::copy(built_plugin("project_insights"), root.join("plugins/project_insights.wasm")).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stamp = |seconds_ago: u64| {
        let output = std::process::Command::new("date")
            .args(["-u", "-d", &format!("@{}", now - seconds_ago), "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    };
    let (old, recent) = (stamp(2 * 3600), stamp(600));
    std::fs::write(root.join("logs/app.log"), format!("{old} INFO started\n{recent} ERROR db timeout\n")).unwrap();
    std::fs::write(root.join("logs/notes.txt"), "not a log\n").unwrap();
    std::fs::write(root.join("project/src/app.py"), "def main():\n    connect(timeout=None)\n").unwrap();
    std::fs::write(
        root.join("config.toml"),
        "[server]\nplugins = \"plugins\"\n\n[plugins.project_insights.grants.folders]\nlogs = \"logs\"\nproject = \"project\"\n",
    )
    .unwrap();
    let mut server = Server::start(&["--config", root.join("config.toml").to_str().unwrap()]);
    let result = server.get_prompt("analyze-project", json!({ "timeframe": "1h", "fileUri": "file:///src/app.py" }));
    let contents: Vec<&Value> = result["messages"].as_array().unwrap().iter().map(|message| &message["content"]).collect();
    assert_eq!(contents[0], &json!({ "type": "text", "text": "Analyze these system logs and the code file for any issues:" }));
    assert_eq!(
        contents[1],
        &json!({ "type": "resource", "resource": {
            "uri": "logs://recent?timeframe=1h", "mimeType": "text/plain", "text": format!("app.log: {recent} ERROR db timeout"),
        } })
    );
    assert_eq!(
        contents[2],
        &json!({ "type": "resource", "resource": {
            "uri": "file:///src/app.py", "mimeType": "text/x-python", "text": "def main():\n    connect(timeout=None)\n",
        } })
    );
    assert_eq!(contents[3]["resource"]["uri"], "prompt-pack://project-insights/checklist.md");
    // Only inside the project folder.
    let outside = server.error(
        "prompts/get",
        json!({ "name": "analyze-project", "arguments": { "timeframe": "7d", "fileUri": "file:///../../etc/passwd" } }),
    );
    assert_eq!(outside["code"], -32602, "{outside}");
    assert!(outside["message"].as_str().unwrap().contains("names no file in the project folder"), "{outside}");
}

/// What calls do with their grants is counted per plugin: files opened
/// (a folder's root once per call, then each file), bytes read, entries
/// listed and uses refused; a plugin that uses no grant gets no series.
#[test]
fn what_calls_do_with_their_grants_is_counted_per_plugin() {
    let site = Site::new("");
    let (mut server, address) = site.serve_with_metrics();
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
    assert_eq!(read(&mut server, "/project/link_out"), "error PermissionDenied: Operation not permitted (os error 63)");
    assert_eq!(ask(&mut server, "list", json!({ "path": "/project/sub" })), "1 entries: inside.txt");
    assert_eq!(ask(&mut server, "other-env", json!({ "name": "GREETING" })), "GREETING is not set");
    let (status, response) = support::http_exchange(address, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    let series =
        |name: &str| response.lines().find(|line| line.starts_with(&format!("{name}{{plugin=\"grants_probe\"}} "))).map(str::to_string);
    // Three calls, each opening /project once; then main.py, the refused
    // link_out (an attempt counts: a pack looping on refusals is bounded
    // too), and sub/ and its listing.
    assert_eq!(
        series("prompt_host_plugin_granted_files_opened_total").as_deref(),
        Some("prompt_host_plugin_granted_files_opened_total{plugin=\"grants_probe\"} 7")
    );
    assert_eq!(
        series("prompt_host_plugin_granted_read_bytes_total").as_deref(),
        Some("prompt_host_plugin_granted_read_bytes_total{plugin=\"grants_probe\"} 12")
    );
    assert_eq!(
        series("prompt_host_plugin_granted_dir_entries_total").as_deref(),
        Some("prompt_host_plugin_granted_dir_entries_total{plugin=\"grants_probe\"} 1")
    );
    // The refused link_out, and each call's start, which tries /logs before its call begins.
    assert_eq!(
        series("prompt_host_plugin_granted_denials_total").as_deref(),
        Some("prompt_host_plugin_granted_denials_total{plugin=\"grants_probe\"} 4")
    );
    assert!(!response.contains("granted_files_opened_total{plugin=\"other_probe\"}"), "{response}");
}

/// 64 calls at once, each holding 200 files open: the pack's quota runs 16
/// of them at a time, and its share of the granted descriptors (a quarter
/// of the sandbox's) refuses the opens past it with `busy`; every call is
/// answered, and every descriptor is closed afterwards.
#[test]
fn sixty_four_calls_at_once_stay_within_the_packs_share_of_descriptors() {
    let site = Site::new("");
    let mut server = site.serve();
    let pid = server.pid();
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
    let before = support::settled_descriptors(pid);
    let calls: Vec<u64> = (0..64)
        .map(|_| {
            // Each holds its files for 100 ms, so the 16 the quota runs at once hold theirs at once.
            let arguments = json!({ "path": "/project/main.py", "count": "200", "hold_ms": "100" });
            server.send_request("prompts/get", json!({ "name": "open-many", "arguments": arguments }))
        })
        .collect();
    let mut busy = 0;
    for call in calls {
        let response = server.response(call);
        let text = response["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_else(|| panic!("{response}")).to_string();
        if text == "opened 200" {
            continue;
        }
        let (opened, error) = text.strip_prefix("opened ").and_then(|rest| rest.split_once(", then ")).unwrap_or_else(|| panic!("{text}"));
        assert!(opened.parse::<usize>().unwrap() < 200, "{text}");
        assert_eq!(error, "error ResourceBusy: Resource busy (os error 10)");
        busy += 1;
    }
    assert!(busy > 0, "16 calls of 201 descriptors each fit in the pack's share");
    // Every descriptor a call held is closed once it is answered.
    assert_eq!(support::settled_descriptors(pid), before);
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
}

/// A folder of 1,000,000 entries costs a listing what its budget allows
/// (the default, 10,000 entries), and a file that grows while the pack
/// reads it stops at the byte budget, however fast it grows.
#[test]
fn a_million_entries_and_a_growing_file_stop_at_their_budgets() {
    let site = Site::new("grant_read_kib = 1024\n");
    // On tmpfs where there is one (a million files take seconds there, and
    // minutes on a disk), granted as `logs`: a path never crosses a mount.
    let shm = Path::new("/dev/shm");
    let many = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
    for index in 0..1_000_000 {
        std::fs::File::create(many.path().join(index.to_string())).unwrap();
    }
    site.write_config(&format!("project = \"project\"\nlogs = {:?}\n", many.path().display().to_string()), "grant_read_kib = 1024\n");
    let mut server = site.serve();
    assert_eq!(
        failure(&mut server, "list", json!({ "path": "/logs" })),
        budget("10000 directory entries listed", "grant_dir_entries", 10000)
    );
    // The file holds 2 MiB already, and a writer appends to it while the pack reads.
    let growing = site.path("project/growing.log");
    std::fs::write(&growing, vec![b'x'; 2 << 20]).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (growing, stop) = (growing.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().append(true).open(growing).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                file.write_all(&[b'y'; 64 << 10]).unwrap();
                // 64 MiB a second at most: a log that grows fast, not a disk filled.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    assert_eq!(
        failure(&mut server, "read", json!({ "path": "/project/growing.log" })),
        budget("1048576 bytes read", "grant_read_kib", 1048576)
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(read(&mut server, "/project/main.py"), "read 12 bytes: print('hi')\n");
}
