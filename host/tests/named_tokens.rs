//! Bearer tokens with names over the real binary: `prompt-host token new`
//! prints a token once and appends only its SHA-256; `serve --http
//! --auth-tokens-file` accepts each token in force, refuses an expired one
//! naming it in the log, and reads the file again at SIGHUP (a removed
//! token is refused from the next request; a file that no longer reads
//! keeps the tokens in force and says why). The one token of
//! `--auth-token-file` is read again at SIGHUP too.

mod support;

use std::path::Path;
use std::process::Command;

use support::{HTTP_INITIALIZE, http_exchange, http_post, send_signal, spawn_http, wait_for_text};

/// `prompt-host token new NAME --tokens-file FILE` with `extra` options: its
/// stdout (the token) and stderr.
fn token_new(file: &Path, name: &str, extra: &[&str]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["token", "new", name, "--tokens-file", file.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    (String::from_utf8(output.stdout).unwrap().trim().to_string(), String::from_utf8(output.stderr).unwrap())
}

/// The status of an `initialize` carrying `token`, if any.
fn status(addr: std::net::SocketAddr, token: Option<&str>) -> u16 {
    let header = token.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    http_exchange(addr, &http_post(&addr.to_string(), &header, HTTP_INITIALIZE)).0
}

#[test]
fn named_tokens_are_accepted_expired_ones_refused_and_the_file_is_read_again_at_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let (alice, said) = token_new(&file, "alice", &[]);
    assert!(said.starts_with("added the token \"alice\" to "), "{said}");
    let (bob, _) = token_new(&file, "bob", &["--expires", "2001-01-01"]);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(!written.contains(&alice) && !written.contains(&bob), "only hashes are written:\n{written}");
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions()) & 0o777, 0o600);
    // A name given twice is refused, and the file is left as it was.
    let again = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["token", "new", "alice", "--tokens-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has a token named \"alice\""));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);

    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-tokens-file", file.to_str().unwrap()]);
    assert_eq!(status(addr, Some(&alice)), 200);
    assert_eq!(status(addr, Some(&bob)), 401);
    wait_for_text(&stderr, "refused an HTTP request (401): the bearer token \"bob\" has expired", 1);
    assert_eq!(status(addr, None), 401);
    assert_eq!(status(addr, Some("ph_guessed")), 401);

    // Alice's entry removed, carol's added: at SIGHUP, alice is refused and carol served.
    let without_alice = written.split("\n[[token]]").filter(|entry| !entry.contains("\"alice\"")).collect::<Vec<_>>().join("\n[[token]]");
    std::fs::write(&file, without_alice).unwrap();
    let (carol, _) = token_new(&file, "carol", &[]);
    assert_eq!(status(addr, Some(&carol)), 401, "not before SIGHUP");
    send_signal(child.id(), "HUP");
    wait_for_text(&stderr, "SIGHUP: bearer tokens read again", 1);
    assert_eq!(status(addr, Some(&alice)), 401);
    assert_eq!(status(addr, Some(&carol)), 200);

    // No token ever reaches the log.
    let log = stderr.lock().unwrap().clone();
    for token in [&alice, &bob, &carol] {
        assert!(!log.contains(token.as_str()), "a token in the log:\n{log}");
    }
    // A file that no longer reads keeps the tokens in force.
    std::fs::write(&file, "[[token]]\nname = \"dave\"\n").unwrap();
    send_signal(child.id(), "HUP");
    let log = wait_for_text(&stderr, "SIGHUP: the bearer tokens in force are kept: the tokens file", 1);
    assert!(log.contains("missing field `sha256`"), "{log}");
    assert_eq!(status(addr, Some(&carol)), 200);
    // Nor does a file caught empty (being rewritten) refuse everyone.
    std::fs::write(&file, "").unwrap();
    send_signal(child.id(), "HUP");
    wait_for_text(&stderr, "SIGHUP: the bearer tokens in force are kept: the token files name no token now", 1);
    assert_eq!(status(addr, Some(&carol)), 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_one_token_file_is_read_again_at_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "old-token\n").unwrap();
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-token-file", file.to_str().unwrap()]);
    assert_eq!(status(addr, Some("old-token")), 200);
    std::fs::write(&file, "new-token\n").unwrap();
    send_signal(child.id(), "HUP");
    wait_for_text(&stderr, "SIGHUP: bearer tokens read again", 1);
    assert_eq!(status(addr, Some("old-token")), 401);
    assert_eq!(status(addr, Some("new-token")), 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_token_for_a_tenant_the_configuration_does_not_serve_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    token_new(&file, "ci", &["--tenant", "nowhere"]);
    let output = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["serve", "--http", "127.0.0.1:0", "--auth-tokens-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("names the tenant \"nowhere\", which the configuration does not serve: add [tenants.nowhere]"), "{stderr}");
}

/// `prompt-host token ARGS... --tokens-file FILE`: its exit code, stdout and stderr.
fn token_command(file: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .arg("token")
        .args(args)
        .args(["--tokens-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8(output.stdout).unwrap(), String::from_utf8(output.stderr).unwrap())
}

#[test]
fn token_list_shows_the_tokens_and_token_revoke_removes_one_keeping_the_rest_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let (alice, _) = token_new(&file, "alice", &["--expires", "2999-01-31"]);
    let (bob, _) = token_new(&file, "bob", &["--expires", "2001-01-01"]);
    let (ci, _) = token_new(&file, "ci", &[]);
    // An operator's note in the file, which revoking another token keeps.
    let noted =
        std::fs::read_to_string(&file).unwrap().replace("\n[[token]]\nname = \"ci\"", "\n# the build server\n[[token]]\nname = \"ci\"");
    std::fs::write(&file, &noted).unwrap();

    let (code, listed, _) = token_command(&file, &["list"]);
    assert_eq!(code, Some(0));
    assert_eq!(listed, "NAME\tTENANT\tEXPIRES\nalice\t-\t2999-01-31\nbob\t-\t2001-01-01 (expired)\nci\t-\tnever\n");
    let (code, json, _) = token_command(&file, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json[1], serde_json::json!({"name": "bob", "tenant": null, "expires": "2001-01-01", "expired": true}));
    for token in [&alice, &bob, &ci] {
        assert!(!listed.contains(token.as_str()) && !json.to_string().contains(token.as_str()));
    }

    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-tokens-file", file.to_str().unwrap()]);
    wait_for_text(&stderr, &format!("bearer tokens in force: 3 named from {}", file.display()), 1);
    assert_eq!(status(addr, Some(&alice)), 200);

    let (code, _, said) = token_command(&file, &["revoke", "alice"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.starts_with("revoked the token \"alice\" in "), "{said}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(!after.contains("\"alice\"") && after.contains("# the build server\n[[token]]\nname = \"ci\""), "{after}");
    assert_eq!(
        after,
        noted.replacen(
            &noted[noted.find("\n[[token]]\nname = \"alice\"").unwrap()..noted.find("\n[[token]]\nname = \"bob\"").unwrap()],
            "",
            1
        )
    );
    // Nothing is left beside the file: no lock, no half-written copy.
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["tokens.toml"]);

    assert_eq!(status(addr, Some(&alice)), 200, "not before SIGHUP");
    send_signal(child.id(), "HUP");
    wait_for_text(&stderr, "SIGHUP: bearer tokens read again: 2 named from", 1);
    assert_eq!(status(addr, Some(&alice)), 401);
    assert_eq!(status(addr, Some(&ci)), 200);

    // A name the file does not hold is refused, and the file is left as it was.
    let (code, _, said) = token_command(&file, &["revoke", "alice"]);
    assert_eq!(code, Some(1));
    assert!(said.contains(&format!("the tokens file {} has no token named \"alice\"", file.display())), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    let _ = child.kill();
    let _ = child.wait();
}
