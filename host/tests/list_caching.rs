//! The caching hints of `prompts/list` (`ttlMs`, `cacheScope`) of protocol
//! 2026-07-28: one minute and `public` by default, `--list-ttl-ms` and
//! `[server] list_ttl_ms` change the TTL, a bearer token makes the list
//! `private`; clients of earlier revisions get neither field.

mod support;

use serde_json::{Value, json};
use support::{Server, http_exchange, http_post, spawn_http};

fn hints(page: &Value) -> (Value, Value) {
    (page["ttlMs"].clone(), page["cacheScope"].clone())
}

#[test]
fn a_2026_07_28_client_may_cache_the_list_for_a_minute_by_default_and_anyone_may_share_it() {
    let mut server = Server::spawn(&["--page-size", "1"]);
    let page = server.result("prompts/list", json!({ "_meta": support::meta_2026(json!({})) }));
    assert_eq!(hints(&page), (json!(60000), json!("public")));
    // Every page carries them.
    let cursor = page["nextCursor"].as_str().expect("a second page").to_string();
    let next = server.result("prompts/list", json!({ "cursor": cursor, "_meta": support::meta_2026(json!({})) }));
    assert_eq!(hints(&next), (json!(60000), json!("public")));
}

#[test]
fn the_flag_sets_the_ttl() {
    let mut server = Server::spawn(&["--list-ttl-ms", "0"]);
    let page = server.result("prompts/list", json!({ "_meta": support::meta_2026(json!({})) }));
    assert_eq!(hints(&page), (json!(0), json!("public")));
}

#[test]
fn the_config_file_sets_the_ttl_and_the_flag_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prompt-host.toml");
    std::fs::write(&config, "[server]\nlist_ttl_ms = 300000\n").unwrap();
    let config = config.to_str().unwrap();
    let mut server = Server::spawn(&["--config", config]);
    let page = server.result("prompts/list", json!({ "_meta": support::meta_2026(json!({})) }));
    assert_eq!(hints(&page), (json!(300000), json!("public")));
    let mut server = Server::spawn(&["--config", config, "--list-ttl-ms", "1500"]);
    let page = server.result("prompts/list", json!({ "_meta": support::meta_2026(json!({})) }));
    assert_eq!(hints(&page), (json!(1500), json!("public")));
}

#[test]
fn a_2025_11_25_client_gets_no_caching_hints() {
    let mut server = Server::start(&[]);
    let page = server.result("prompts/list", json!({}));
    assert_eq!(page["prompts"][0]["name"], "code_review");
    assert_eq!((page.get("ttlMs"), page.get("cacheScope")), (None, None), "{page}");
}

#[test]
fn behind_a_bearer_token_the_list_is_private() {
    let token_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token_file.path(), "the-right-token\n").unwrap();
    let (mut child, _stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-token-file", token_file.path().to_str().unwrap()]);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": { "_meta": support::meta_2026(json!({})) } });
    let headers = "Authorization: Bearer the-right-token\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: prompts/list\r\n";
    let (status, answer) = http_exchange(addr, &http_post(&addr.to_string(), headers, &body.to_string()));
    let _ = child.kill();
    assert_eq!(status, 200, "{answer}");
    let json_start = answer.find("{\"").unwrap_or_else(|| panic!("no JSON in {answer}"));
    let json_end = answer.rfind('}').unwrap() + 1;
    let response: Value = serde_json::from_str(&answer[json_start..json_end]).unwrap();
    assert_eq!(hints(&response["result"]), (json!(60000), json!("private")), "{answer}");
}
