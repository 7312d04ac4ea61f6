//! Granted origins over the real binary (issue "Packs that see what they
//! are granted"): the fixture `grants_probe` calls out through the standard
//! `wasi:http/outgoing-handler` to a real HTTP server (Python's own
//! `http.server`, started on loopback by each test: `support/origin.py`),
//! and reaches exactly the origins it asked for and was granted. Every
//! refusal (an origin not granted, a redirect out, a granted name that
//! resolves to loopback, each budget) ends in the exact error below, no
//! packet reaches what was refused, and the host serves on. Packets go to
//! loopback only: the other refused address classes are shown by the unit
//! tests of the address check (`grants::http`).

#[path = "support/origin.rs"]
mod origin;
mod support;

use std::path::Path;
use std::process::Command;

use origin::{ALL, NAMED, Origin, TLS};

use serde_json::{Value, json};
use support::{Server, built_plugin, only_text};

/// A plugin directory with the probe (and `other_probe`, granted nothing),
/// and a config granting `grants_probe` the origins `http` under `limits`.
fn serve(http: &[String], limits: &str) -> (tempfile::TempDir, Server) {
    serve_with_env(http, limits, &[])
}

/// [`serve`], with these variables in the host's environment.
fn serve_with_env(http: &[String], limits: &str, env: &[(&str, &str)]) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(built_plugin("grants_probe"), dir.path().join("plugins/grants_probe.wasm")).unwrap();
    std::fs::copy(built_plugin("grants_probe"), dir.path().join("plugins/other_probe.wasm")).unwrap();
    let origins: Vec<String> = http.iter().map(|origin| format!("{origin:?}")).collect();
    let config = format!(
        "[server]\nplugins = \"plugins\"\n\n[plugins.grants_probe.grants]\nhttp = [{}]\n\n\
         [plugins.grants_probe.limits]\n{limits}\n\n[plugins.other_probe]\nprefix = \"other-\"\n",
        origins.join(", ")
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let server = Server::start_with_env(&["--config", dir.path().join("config.toml").to_str().unwrap()], env);
    (dir, server)
}

fn fetch(server: &mut Server, arguments: Value) -> String {
    only_text(&server.get_prompt("fetch", arguments)).to_string()
}

fn refused(server: &mut Server, prompt: &str, arguments: Value) -> Value {
    server.error("prompts/get", json!({ "name": prompt, "arguments": arguments }))
}

/// How many requests reached the origin before this one.
fn reached(server: &mut Server, origin: &Origin) -> String {
    fetch(server, json!({ "url": origin.url("/count") }))
}

fn grant_failure(plugin: &str, failure: &str, message: String) -> Value {
    json!({ "code": -32603, "message": message, "data": { "plugin": plugin, "failure": failure } })
}

#[test]
fn a_granted_origin_is_called_with_the_packs_own_http_and_nothing_else_is() {
    let origin = Origin::start(NAMED, None);
    let (_dir, mut server) = serve(&[origin.url("")], "");
    let stderr = server.wait_for_stderr("granted: ");
    assert!(stderr.contains(&format!("origin http://127.0.0.1:{}", origin.port)), "{stderr}");
    assert_eq!(fetch(&mut server, json!({ "url": origin.url("/hello") })), "status 200, 21 bytes: hello from the origin");
    // A redirect within the origin is followed by the pack, each hop checked.
    let inside = origin.url("/redirect?to=") + &origin.url("/hello");
    assert_eq!(fetch(&mut server, json!({ "url": inside })), "status 302, 0 bytes:  -> status 200, 21 bytes: hello from the origin");

    // An origin the pack asked for and was not granted: the call fails, naming the config line.
    let other = origin.other_port();
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": format!("http://127.0.0.1:{other}/hello") })),
        grant_failure(
            "grants_probe",
            "not-granted",
            format!(
                "plugin 'grants_probe' called http://127.0.0.1:{other}/hello, which no origin granted to it admits: \
                 grant it with http = [\"http://127.0.0.1:{other}\"] in [plugins.grants_probe.grants]"
            )
        )
    );
    // One it did not ask for: no config could grant it.
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": "http://127.0.0.1:9/x" })),
        grant_failure(
            "grants_probe",
            "not-granted",
            "plugin 'grants_probe' called http://127.0.0.1:9/x, which no origin granted to it admits: the pack does not ask \
             for it in its pack-info (wants.origins), so no config can grant it"
                .to_string()
        )
    );
    // A redirect out of the origin (to a name the pack asked for, not granted): the hop out is refused.
    let port = origin.port;
    let out = origin.url("/redirect?to=") + &format!("http://localhost:{port}/hello");
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": out })),
        grant_failure(
            "grants_probe",
            "not-granted",
            format!(
                "plugin 'grants_probe' called http://localhost:{port}/hello, which no origin granted to it admits: \
                 grant it with http = [\"http://localhost:{port}\"] in [plugins.grants_probe.grants]"
            )
        )
    );
    // The same pack under another name, granted nothing, reaches nothing.
    assert_eq!(
        refused(&mut server, "other-fetch", json!({ "url": origin.url("/hello") })),
        grant_failure(
            "other_probe",
            "not-granted",
            format!(
                "plugin 'other_probe' called http://127.0.0.1:{port}/hello, which no origin granted to it admits: \
                 grant it with http = [\"http://127.0.0.1:{port}\"] in [plugins.other_probe.grants]"
            )
        )
    );
    // Four requests reached the origin: the two hellos, the redirect, the
    // redirect out; nothing refused did.
    assert_eq!(reached(&mut server, &origin), "status 200, 1 bytes: 4");
}

#[test]
fn a_granted_name_that_resolves_to_loopback_is_refused_before_any_packet() {
    let origin = Origin::start(NAMED, None);
    let port = origin.port;
    let (_dir, mut server) = serve(&[format!("http://localhost:{port}"), origin.url("")], "");
    let error = refused(&mut server, "fetch", json!({ "url": format!("http://localhost:{port}/hello") }));
    // localhost resolves to 127.0.0.1 or ::1 first, as the system orders them.
    let address = error["data"]["limit"]["address"].as_str().unwrap_or_default().to_string();
    assert!(address == "127.0.0.1" || address == "::1", "{error}");
    let shown = if address == "::1" { "[::1]".to_string() } else { address.clone() };
    assert_eq!(
        error,
        json!({
            "code": -32603,
            "message": format!(
                "plugin 'grants_probe' called localhost:{port}, which resolves to {address}, a loopback address, which a granted \
                 name may not reach: only an origin that is the address itself (such as http://{shown}:{port}) may, asked for and granted"
            ),
            "data": { "plugin": "grants_probe", "failure": "address-refused", "limit": { "address": address, "class": "loopback" } },
        })
    );
    // Nothing reached the origin; its own address, granted by number, does.
    assert_eq!(reached(&mut server, &origin), "status 200, 1 bytes: 0");
}

#[test]
fn each_http_budget_fails_the_call_naming_it_and_the_host_serves_on() {
    let origin = Origin::start(ALL, None);
    let (_dir, mut server) =
        serve(&[origin.url("")], "grant_http_requests = 16\ngrant_http_received_kib = 256\ngrant_http_sent_kib = 64\ndeadline_ms = 3000\n");
    let budget = |what: &str, key: &str, limit: u64| {
        json!({
            "code": -32603,
            "message": format!(
                "plugin 'grants_probe' used up its per-call budget of {what} to granted origins (limits.{key}); a failed call keeps none of what it read"
            ),
            "data": { "plugin": "grants_probe", "failure": "grant-budget", "limit": { "budget": key, "limit": limit } },
        })
    };
    // 10,000 requests in one call: the 17th is refused, and 16 reached the origin.
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": origin.url("/hello"), "times": "10000" })),
        budget("16 HTTP requests", "grant_http_requests", 16)
    );
    assert_eq!(reached(&mut server, &origin), "status 200, 2 bytes: 16");
    // A response that never ends: stopped at the bytes-received budget.
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": origin.url("/endless") })),
        budget("262144 bytes received", "grant_http_received_kib", 262144)
    );
    // A body larger than the bytes-sent budget.
    assert_eq!(
        refused(&mut server, "fetch", json!({ "url": origin.url("/echo"), "body_kib": "100" })),
        budget("65536 bytes sent", "grant_http_sent_kib", 65536)
    );
    // Within it, the body arrives whole.
    assert_eq!(fetch(&mut server, json!({ "url": origin.url("/echo"), "body_kib": "32" })), "status 200, 5 bytes: 32768");
    // A response that drips: the call's deadline ends it, and the host serves on.
    let dripping = refused(&mut server, "fetch", json!({ "url": origin.url("/drip") }));
    assert_eq!(dripping["data"]["failure"], "deadline", "{dripping}");
    // Huge headers: the response head is bounded (64 KiB); the pack is told, the call goes on.
    assert_eq!(
        fetch(&mut server, json!({ "url": origin.url("/huge-headers") })),
        "error: ErrorCode::HttpResponseHeaderSectionSize(Some(65536))"
    );
    assert_eq!(fetch(&mut server, json!({ "url": origin.url("/hello") })), "status 200, 21 bytes: hello from the origin");
}

#[test]
fn headers_a_pack_controls_cannot_smuggle_a_request() {
    let origin = Origin::start(ALL, None);
    let (_dir, mut server) = serve(&[origin.url("")], "");
    // A header value with a line break, a header of the connection's own.
    assert_eq!(
        fetch(&mut server, json!({ "url": origin.url("/headers"), "header": "x-a: b\r\nx-injected: 1" })),
        "error: header HeaderError::InvalidSyntax"
    );
    assert_eq!(
        fetch(&mut server, json!({ "url": origin.url("/headers"), "header": "host: evil.example" })),
        "error: header HeaderError::Forbidden"
    );
    assert_eq!(
        fetch(&mut server, json!({ "url": origin.url("/headers"), "header": "transfer-encoding: chunked" })),
        "error: header HeaderError::Forbidden"
    );
    // Headers a pack builds take at most 16 KiB (as wasi:http counts them):
    // past it, wasi:http 0.2 has no error the pack could handle, and the
    // call fails saying so (hardening round 4, item 5: one number).
    let big = |bytes: usize| json!({ "url": origin.url("/headers"), "header": format!("x-big: {}", "v".repeat(bytes)) });
    assert_eq!(fetch(&mut server, big(15 << 10)), "status 200, 10 bytes: host\nx-big");
    assert_eq!(
        refused(&mut server, "fetch", big(20 << 10)),
        json!({
            "code": -32603,
            "message": "plugin 'grants_probe' trapped: the headers it built for one request passed the 16 KiB they may take",
            "data": { "plugin": "grants_probe", "failure": "trap" },
        })
    );
    // Every hop-by-hop header is refused, `te` and `trailer` too (hardening round 4, item 4).
    for header in ["te: trailers", "trailer: x-a", "keep-alive: 5", "proxy-connection: close", "upgrade: h2c"] {
        assert_eq!(
            fetch(&mut server, json!({ "url": origin.url("/headers"), "header": header })),
            "error: header HeaderError::Forbidden",
            "{header}"
        );
    }
    // What arrives: the host's own host header and the pack's plain one, nothing else.
    assert_eq!(
        fetch(&mut server, json!({ "url": origin.url("/headers"), "header": "x-plain: yes" })),
        "status 200, 12 bytes: host\nx-plain"
    );
}

/// A CA and a certificate it issued for 127.0.0.1, made by openssl in `dir`:
/// the CA's file, the certificate's and its key's.
fn certificates(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=prompt-host test CA"]].concat(),
    );
    openssl(&[&["req"][..], &ec, &["-keyout", "origin.key", "-out", "origin.csr", "-subj", "/CN=127.0.0.1"]].concat());
    std::fs::write(dir.join("origin.ext"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "origin.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "origin.pem",
        "-days",
        "1",
        "-extfile",
        "origin.ext",
    ]);
    (dir.join("ca.pem"), dir.join("origin.pem"), dir.join("origin.key"))
}

#[test]
fn tls_is_verified_against_the_systems_roots_and_no_proxy_of_the_host_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, certificate, key) = certificates(dir.path());
    let origin = Origin::start(TLS, Some((&certificate, &key)));
    let url = format!("https://127.0.0.1:{}/hello", origin.port);
    let granted = [format!("https://127.0.0.1:{}", origin.port)];
    // The system's roots do not include the test's CA: the handshake fails,
    // the pack is told, and no request reaches the origin.
    let (_site, mut server) = serve(&granted, "");
    assert_eq!(fetch(&mut server, json!({ "url": url })), "error: ErrorCode::TlsCertificateError");
    // Trusted (as an operator adds a CA, through SSL_CERT_FILE), the same
    // request is answered; the host's proxy variables, pointing nowhere,
    // are not used.
    let env = [
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("https_proxy", "http://127.0.0.1:9"),
        ("ALL_PROXY", "http://127.0.0.1:9"),
    ];
    let (_site, mut trusted) = serve_with_env(&granted, "", &env);
    assert_eq!(fetch(&mut trusted, json!({ "url": url })), "status 200, 21 bytes: hello from the origin");
    let count = format!("https://127.0.0.1:{}/count", origin.port);
    assert_eq!(fetch(&mut trusted, json!({ "url": count })), "status 200, 1 bytes: 1");
}

/// 64 calls at once, each held by a response that drips until the call's
/// deadline: the pack's quota runs 16 at a time, every call is answered
/// once (its deadline), every connection and descriptor is closed
/// afterwards, and the host serves on.
#[test]
fn sixty_four_calls_held_by_dripping_responses_end_at_their_deadlines_and_leave_nothing_open() {
    let origin = Origin::start(ALL, None);
    let (_dir, mut server) = serve(&[origin.url("")], "deadline_ms = 300\n");
    let pid = server.pid();
    let descriptors = || std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    assert_eq!(fetch(&mut server, json!({ "url": origin.url("/hello") })), "status 200, 21 bytes: hello from the origin");
    // (Once the instance that fetched is dropped, with its connection.)
    let before = support::settled_descriptors(pid);
    let calls: Vec<u64> = (0..64)
        .map(|_| server.send_request("prompts/get", json!({ "name": "fetch", "arguments": { "url": origin.url("/drip") } })))
        .collect();
    for call in calls {
        let response = server.response(call);
        assert_eq!(response["error"]["data"]["failure"], "deadline", "{response}");
    }
    // Every connection is closed once its call is answered (a used
    // instance is dropped in a task of its own, hence the wait).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while descriptors() != before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(descriptors(), before);
    // At most one request per call reached the origin (a call whose
    // deadline passed while it waited for its quota sent none).
    let count = fetch(&mut server, json!({ "url": origin.url("/count") }));
    let reached: usize = count.strip_prefix("status 200, 2 bytes: ").unwrap_or_else(|| panic!("{count}")).parse().unwrap();
    assert!((17..=65).contains(&reached), "{count}");
}

/// The example pack `alerts_digest` (plugins/alerts-digest) calls the
/// origin it asks for, Prometheus' API on its default address, here served
/// by the loopback origin (port 9090 must be free): granted, its answer is
/// embedded; not granted, the call fails naming the config line.
#[test]
fn the_alerts_digest_example_embeds_what_its_granted_origin_answers() {
    // The origin the pack asks for is Prometheus's own address: a Prometheus
    // running on this machine (not in CI's container) holds the port, and
    // the origin then fails to start, naming it.
    let origin = Origin::start(9090..=9090, None);
    assert_eq!(origin.port, 9090);
    let serve_digest = |grants: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::copy(built_plugin("alerts_digest"), dir.path().join("plugins/alerts_digest.wasm")).unwrap();
        std::fs::write(dir.path().join("config.toml"), format!("[server]\nplugins = \"plugins\"\n{grants}")).unwrap();
        let server = Server::start(&["--config", dir.path().join("config.toml").to_str().unwrap()]);
        (dir, server)
    };
    let (_dir, mut server) = serve_digest("[plugins.alerts_digest.grants]\nhttp = [\"http://127.0.0.1:9090/api/v1/\"]\n");
    let reply = server.get_prompt("triage-alerts", json!({ "severity": "critical" }));
    assert_eq!(
        reply["messages"][0]["content"]["text"],
        "Triage the alerts firing now: what is wrong, how urgent, and what to check first. Start with the critical ones."
    );
    let resource = &reply["messages"][1]["content"]["resource"];
    assert_eq!(resource["uri"], "prometheus://alerts");
    assert_eq!(resource["mimeType"], "application/json");
    let embedded: Value = serde_json::from_str(resource["text"].as_str().unwrap()).unwrap();
    assert_eq!(embedded["data"]["alerts"][0]["labels"]["alertname"], "HighErrorRate");
    let (_dir, mut ungranted) = serve_digest("");
    assert_eq!(
        refused(&mut ungranted, "triage-alerts", json!({})),
        grant_failure(
            "alerts_digest",
            "not-granted",
            "plugin 'alerts_digest' called http://127.0.0.1:9090/api/v1/alerts, which no origin granted to it admits: \
             grant it with http = [\"http://127.0.0.1:9090/api/v1/\"] in [plugins.alerts_digest.grants]"
                .to_string()
        )
    );
}

/// A pack that makes requests with bodies and keeps them unsent holds host
/// memory no budget charges: the resources of an instance linked with
/// wasi:http are capped (256), and each holds little (16 KiB of fields, two
/// 4 KiB body chunks), so the call ends in a trap with the host's memory
/// barely moved.
#[test]
fn requests_kept_unsent_are_bounded_by_the_resources_cap() {
    let (_dir, mut server) = serve(&[], "");
    let pid = server.pid();
    let peak = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap().to_string();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
    };
    let before = peak();
    let failure = refused(&mut server, "hoard", json!({}));
    assert_eq!(
        failure,
        json!({
            "code": -32603,
            "message": "plugin 'grants_probe' trapped: resource table has no free keys",
            "data": { "plugin": "grants_probe", "failure": "trap" },
        })
    );
    // 85 requests of 3 resources, each body two 4 KiB chunks: under 1 MiB,
    // where wasmtime's defaults (1 MiB chunks, 4096 resources) held 2.7 GiB.
    let grown = peak().saturating_sub(before);
    assert!(grown < 64 << 20, "the host's peak memory grew by {grown} bytes");
    // And the host serves on.
    assert_eq!(only_text(&server.get_prompt("env", json!({ "name": "GREETING" }))), "GREETING is not set");
}

/// Hardening round 4, item 3: a response's head is counted as it is read
/// and refused past 64 KiB exactly. hyper's own buffer bound let heads of
/// 81 KiB (80 headers of 1 KiB) and 97 KiB (95 of 1,000 bytes) reach the
/// pack as `200`.
#[test]
fn a_response_head_is_bounded_at_64_kib_exactly() {
    let origin = Origin::start(ALL, None);
    let (_dir, mut server) = serve(&[origin.url("")], "");
    let head = |server: &mut Server, bytes: usize| fetch(server, json!({ "url": origin.url(&format!("/head?bytes={bytes}")) }));
    assert_eq!(head(&mut server, 65536), "status 200, 0 bytes: ");
    let refused = "error: ErrorCode::HttpResponseHeaderSectionSize(Some(65536))";
    for bytes in [65537, 81 << 10, 97 << 10] {
        assert_eq!(head(&mut server, bytes), refused, "a head of {bytes} bytes");
    }
    assert_eq!(head(&mut server, 1000), "status 200, 0 bytes: ");
}

/// Hardening round 4, item 6: a refused request is the call's failure
/// whatever the pack does after it: answers, traps, or runs to its deadline
/// (reported as `trap` and `deadline` before).
#[test]
fn a_refused_request_is_the_failure_whatever_the_pack_does_next() {
    let origin = Origin::start(NAMED, None);
    let (_dir, mut server) = serve(&[origin.url("")], "deadline_ms = 300");
    let other = origin.other_port();
    let expected = grant_failure(
        "grants_probe",
        "not-granted",
        format!(
            "plugin 'grants_probe' called http://127.0.0.1:{other}/hello, which no origin granted to it admits: \
             grant it with http = [\"http://127.0.0.1:{other}\"] in [plugins.grants_probe.grants]"
        ),
    );
    for then in ["", "trap", "spin"] {
        let url = format!("http://127.0.0.1:{other}/hello");
        assert_eq!(refused(&mut server, "fetch", json!({ "url": url, "then": then })), expected, "then {then:?}");
    }
}
