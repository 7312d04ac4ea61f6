//! Everyday use, round 2: what a new operator, author and client user met
//! (issue 25). `serve` reads `./prompt-host.toml` as the other commands do
//! and says which config it read; sections that cannot apply over stdio are
//! warned of; a port in use and tenants without `[authorization]` say so
//! plainly; a client that leaves before its answer makes no ERROR line; an
//! input-required prompt's errors show the question, and `get` answers forms.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{built_plugin, plugin_dir, start_http, wait_for_text};

/// `prompt-host ARGS` in `cwd`, with the default log filter and stdin
/// closed (so `serve` over stdio stops once started).
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The log lines of `output`'s stderr, without their timestamps.
fn log_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(|line| line.split_once(' ').map_or(line, |(_, rest)| rest.trim_start()).to_string())
        .collect()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn serve_reads_prompt_host_toml_in_the_working_directory_and_says_which_config_it_read() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("packs")).unwrap();
    std::fs::copy(built_plugin("code_review"), folder.path().join("packs/code_review.wasm")).unwrap();
    std::fs::write(folder.path().join("prompt-host.toml"), "[server]\nplugins = \"packs\"\n").unwrap();

    // (stdin is closed before any handshake: serve stops once started.)
    let output = run_in(folder.path(), &["serve"]);
    let lines = log_lines(&output);
    // The start-up summary: what is served, and from which config.
    let summary = format!("INFO prompt_host::watch: serving 1 prompt from 1 plugin dir={}", folder.path().join("packs").display());
    let at = lines.iter().position(|line| *line == summary).unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(
        lines[at + 2],
        format!("INFO prompt_host: configuration read from {}", folder.path().join("prompt-host.toml").display()),
        "{lines:#?}"
    );

    // `--config` names another; without either, the bundled packs, said so.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = run_in(elsewhere.path(), &["serve"]);
    let lines = log_lines(&output);
    let at = lines.iter().position(|line| line == "INFO prompt_host::watch: serving 7 prompts from 4 plugins").unwrap();
    assert_eq!(lines[at + 1], "INFO prompt_host: no configuration file (no --config, no ./prompt-host.toml): the defaults and the options");
    let named = folder.path().join("prompt-host.toml");
    let output = run_in(elsewhere.path(), &["serve", "--config", named.to_str().unwrap()]);
    let said = format!("INFO prompt_host: configuration read from {}", named.display());
    assert!(log_lines(&output).contains(&said), "{}", stderr_of(&output));
}

#[test]
fn over_stdio_authorization_and_tenants_are_warned_of_and_tenants_need_an_authorization_section() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("packs/acme")).unwrap();
    let authorization = "[authorization]\nresource = \"https://prompts.example/mcp\"\nissuer = \"https://idp.example\"\n\
                         tenant_claim = \"tenant\"\n";
    let tenants = "[tenants.acme]\nplugins = \"packs/acme\"\n";
    std::fs::write(folder.path().join("prompt-host.toml"), format!("[server]\nplugins = \"packs\"\n{authorization}{tenants}")).unwrap();
    let output = run_in(folder.path(), &["serve"]);
    let lines = log_lines(&output);
    assert_eq!(
        lines[0],
        "WARN prompt_host: the [authorization] section applies only with --http: over stdio no token is asked for, \
         and every prompt is served to the process that started the server"
    );
    assert_eq!(
        lines[1],
        format!(
            "WARN prompt_host: the [tenants] sections apply only with --http: over stdio server.plugins ({}) is served",
            folder.path().join("packs").display()
        )
    );

    std::fs::write(folder.path().join("prompt-host.toml"), tenants).unwrap();
    let output = run_in(folder.path(), &["serve"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_of(&output),
        format!(
            "error: invalid config file {}: [tenants] need an [authorization] section (resource, issuer and \
             tenant_claim): a tenant is picked by a claim of the client's access token\n",
            folder.path().join("prompt-host.toml").display()
        )
    );
}

#[test]
fn a_port_in_use_is_said_to_be_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let port = taken.local_addr().unwrap().port();
    let folder = tempfile::tempdir().unwrap();
    for option in ["--http", "--metrics"] {
        let output = run_in(folder.path(), &["serve", option, &address]);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            stderr_of(&output).lines().last().unwrap(),
            format!(
                "error: the MCP session could not start: cannot listen on {address}: port {port} is already in use \
                 (another process listens on it): choose another port, or stop that process"
            )
        );
    }
}

/// A client of protocol 2026-07-28 that hangs up while its prompt runs: the
/// call fails at its deadline, and its answer has nowhere to go.
#[test]
fn a_client_that_leaves_before_its_answer_makes_no_error_line() {
    use std::io::Write;
    let dir = plugin_dir(&["hostile"]);
    let mut command = Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command.args(["serve", "--http", "127.0.0.1:0", "--deadline-ms", "300", "--plugins", dir.path().to_str().unwrap()]);
    // The default filter, as an operator runs it.
    let (mut child, stderr, addr) = start_http(command, "info");
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "prompts/get",
        "params": { "name": "sleep", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "prompt-host-tests", "version": "1.0.0" },
            "io.modelcontextprotocol/clientCapabilities": {}
        } }
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: prompts/get\r\nMcp-Name: sleep\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    drop(stream);
    wait_for_text(&stderr, "exceeded its 300 ms deadline", 1);
    // rmcp tries to send the answer within a second of the call's end.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let _ = child.kill();
    let log = stderr.lock().unwrap().clone();
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("channel closed"), "{log}");
}

#[test]
fn get_shows_the_question_of_an_input_required_prompt_and_answers_it_with_answer() {
    let pack = built_plugin("writing_assistant");
    let pack = pack.to_str().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let output = run_in(folder.path(), &["get", pack, "translate", "language=French"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_of(&output).lines().last().unwrap(),
        "error: prompt 'translate': it needs input (form 'text': \"What text should be translated?\" (fields: text \
         \"The text to translate\")), and the get command has no answer for it: give --answer FIELD=VALUE for each \
         required field, or run it on a terminal to be asked; or give the argument text=... instead, which skips the form"
    );
    let text_of = |output: &Output| -> String {
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(output));
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        result["messages"][0]["content"]["text"].as_str().unwrap().to_string()
    };
    let answered = run_in(folder.path(), &["get", pack, "translate", "--answer", "text=Hello", "--answer", "language=French"]);
    assert_eq!(text_of(&answered), "Translate this text into French:\n\nHello");
    // Typed fields take typed answers; a required field with a default takes it.
    let email = run_in(
        folder.path(),
        &[
            "get",
            pack,
            "draft_email",
            "topic=the launch",
            "--answer",
            "recipient=Ada",
            "--answer",
            "words=90",
            "--answer",
            "sign_off=false",
        ],
    );
    assert_eq!(text_of(&email), "Draft a friendly email of about 90 words to Ada about the launch.");
    // An answer not of the field's kind is refused by the same checks as a client's.
    let wrong = run_in(folder.path(), &["get", pack, "draft_email", "topic=x", "--answer", "recipient=Ada", "--answer", "words=many"]);
    assert_eq!(
        stderr_of(&wrong).lines().last().unwrap(),
        "error: prompt 'draft_email': inputResponses[\"email\"]: field \"words\" must be a whole number, not a string"
    );
}

#[test]
fn new_takes_the_plugin_names_add_takes_and_says_why_a_rust_crate_cannot() {
    let folder = tempfile::tempdir().unwrap();
    let rust = run_in(folder.path(), &["new", "my-pack"]);
    assert_eq!(rust.status.code(), Some(1));
    assert_eq!(
        stderr_of(&rust),
        "error: 'my-pack' cannot name a Rust pack: its .wasm file is named after its crate, and a crate's file name \
         turns '-' into '_' and cannot start with a digit or '_': name it 'my_pack', or write it in JavaScript or Python\n"
    );
    let js = run_in(folder.path(), &["new", "my-pack", "--lang", "js"]);
    assert_eq!(js.status.code(), Some(0), "{}", stderr_of(&js));
    let package: serde_json::Value = serde_json::from_slice(&std::fs::read(folder.path().join("my-pack/package.json")).unwrap()).unwrap();
    assert!(package["scripts"]["build"].as_str().unwrap().ends_with(" -o my-pack.wasm"), "{package}");
    let bad = run_in(folder.path(), &["new", "My Pack", "--lang", "python"]);
    assert_eq!(
        stderr_of(&bad),
        "error: 'My Pack' cannot name a pack: it names the plugin and its .wasm file, so use lowercase letters, \
         digits, '-' and '_', at most 64, not starting with '-'\n"
    );
}

/// On a terminal (a pty from util-linux's `script`), `get` asks for each
/// field of the form, showing its message and the field's label.
#[test]
fn get_on_a_terminal_asks_the_form_s_questions() {
    use std::io::Write;
    let pack = built_plugin("writing_assistant");
    let command = format!("{} get {} translate", env!("CARGO_BIN_EXE_prompt-host"), pack.display());
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux's script runs the command on a pty");
    let mut stdin = child.stdin.take().unwrap();
    let shown = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let (mut stdout, shown) = (child.stdout.take().unwrap(), shown.clone());
        std::thread::spawn(move || {
            use std::io::Read;
            let mut chunk = [0u8; 4096];
            while let Ok(read @ 1..) = stdout.read(&mut chunk) {
                shown.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        })
    };
    // Each answer typed once its question is shown, as a person would.
    for (question, answer) in
        [("text (The text to translate): ", "Hello there\n"), ("language (The language to translate into): ", "French\n")]
    {
        wait_for_text(&shown, question, 1);
        stdin.write_all(answer.as_bytes()).unwrap();
    }
    wait_for_text(&shown, "Translate this text into French", 1);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    let text = shown.lock().unwrap().replace("\r\n", "\n");
    assert!(
        text.contains(
            "What text should be translated?\n  text (The text to translate): Hello there\n\
             Into which language?\n  language (The language to translate into): French\n"
        ),
        "{text}"
    );
    assert!(text.contains(r#""text": "Translate this text into French:\n\nHello there""#), "{text}");
}
