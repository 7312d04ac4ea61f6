//! Packs from OCI registries, against real parts started on loopback by
//! tests/registry/registry_tool.py (installed by tests/setup): Debian's
//! docker-registry (the CNCF distribution registry), over HTTP and over TLS
//! with a generated CA; packs pushed by `prompt-host publish`, by skopeo and
//! by oras; cosign-format signatures made with Python's `cryptography`,
//! independently of the verifier.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};
use support::{Server, built_plugin};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs tests/registry/registry_tool.py with `args`; its stdout as JSON.
fn tool(args: &[&str]) -> Value {
    let output = tool_command(args).output().expect("cannot run tests/registry/registry_tool.py");
    assert!(output.status.success(), "registry_tool {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("registry_tool {args:?} printed no JSON ({error}): {}", String::from_utf8_lossy(&output.stdout)))
}

fn tool_command(args: &[&str]) -> Command {
    let python = repo_root().join("tests/.venv/bin/python");
    assert!(python.exists(), "{} is missing: run tests/setup", python.display());
    let mut command = Command::new(python);
    command.arg(repo_root().join("tests/registry/registry_tool.py")).args(args);
    command
}

/// A registry (or a lying proxy of one) running on loopback until dropped.
struct Registry {
    child: Child,
    address: String,
    ca: Option<PathBuf>,
}

impl Registry {
    fn start(dir: &Path, extra: &[&str]) -> Registry {
        let mut args = vec!["serve", "--dir", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        Registry::spawn(&args)
    }

    /// Starts `registry_tool ARGS` and waits until it listens. The tool picks
    /// a free port before the registry binds it, so another process may take
    /// the port in between: a registry that exits before listening is
    /// started again.
    /// A registry in front of `upstream` whose token service signs in
    /// `alice:s3cret-Pa55` only, started with `extra` arguments.
    fn guarded(upstream: &Registry, extra: &[&str]) -> Registry {
        let mut args = vec!["serve-blob-liar", "--upstream", upstream.address.as_str(), "--bearer", "alice:s3cret-Pa55"];
        args.extend_from_slice(extra);
        Registry::spawn(&args)
    }

    fn spawn(args: &[&str]) -> Registry {
        for _ in 0..3 {
            let mut child = tool_command(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let started: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("registry_tool {args:?} printed {line:?}"));
            let address = started["address"].as_str().unwrap().to_string();
            let ca = started["ca"].as_str().map(PathBuf::from);
            for _ in 0..200 {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if std::net::TcpStream::connect(&address).is_ok() {
                    return Registry { child, address, ca };
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("registry_tool {args:?} did not start listening");
    }

    fn reference(&self, repository: &str) -> String {
        format!("oci://{}/{repository}", self.address)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A config file, its plugin directory and keys, in a fresh directory.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new(config: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("packs")).unwrap();
        std::fs::write(dir.path().join("prompt-host.toml"), format!("[server]\nplugins = \"packs\"\n{config}")).unwrap();
        Site { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self) -> String {
        self.path("prompt-host.toml").display().to_string()
    }

    /// `prompt-host COMMAND ARGS --config` this site's config.
    fn run(&self, command: &str, args: &[&str]) -> Output {
        let config = self.config();
        let mut all = vec![command];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--config", &config]);
        prompt_host(&all)
    }

    /// Like [`Site::run`], which must succeed; its stderr.
    fn ok(&self, command: &str, args: &[&str]) -> String {
        let output = self.run(command, args);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "prompt-host {command} {args:?} failed: {stderr}");
        stderr
    }

    /// Like [`Site::run`], which must fail; its stderr.
    fn refused(&self, command: &str, args: &[&str]) -> String {
        let output = self.run(command, args);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "prompt-host {command} {args:?} should fail: {stderr}");
        stderr
    }

    fn list(&self) -> Vec<Value> {
        let output = self.run("list", &["--json"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap().as_array().unwrap().clone()
    }

    fn lockfile(&self) -> String {
        std::fs::read_to_string(self.path("prompt-host.lock")).unwrap_or_default()
    }
}

fn prompt_host(args: &[&str]) -> Output {
    prompt_host_with(args, &[])
}

/// `prompt-host ARGS` with no registry credentials but those in `env`.
fn prompt_host_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command
        .args(args)
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .env("DOCKER_CONFIG", Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-docker-config"))
        .env_remove("PROMPT_HOST_REGISTRY_USERNAME")
        .env_remove("PROMPT_HOST_REGISTRY_PASSWORD")
        .env_remove("PROMPT_HOST_REGISTRY");
    command.envs(env.iter().copied());
    command.output().unwrap()
}

/// `prompt-host publish FILE REFERENCE`: the manifest digest it prints.
fn publish(site: &Site, plugin: &str, reference: &str) -> String {
    let file = built_plugin(plugin);
    let output = site.run("publish", &[file.to_str().unwrap(), reference]);
    assert!(output.status.success(), "publish failed: {}", String::from_utf8_lossy(&output.stderr));
    let digest = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "publish printed {digest:?}");
    digest
}

fn sha256_of(plugin: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(built_plugin(plugin)).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

fn plain(registry: &Registry) -> String {
    format!("[registry]\nplain_http = [\"{}\"]\n", registry.address)
}

#[test]
fn a_published_pack_is_added_listed_served_and_removed() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let reference = format!("{}:1.0", registry.reference("acme/code-review"));
    let digest = publish(&site, "code_review", &reference);

    let said = site.ok("add", &[&reference, "--name", "review"]);
    let installed = site.path("packs").join("review.wasm");
    assert_eq!(
        said.trim(),
        format!(
            "installed review from {reference} ({digest}, {} bytes, unsigned) as {}",
            std::fs::metadata(built_plugin("code_review")).unwrap().len(),
            installed.display()
        )
    );
    assert_eq!(std::fs::read(&installed).unwrap(), std::fs::read(built_plugin("code_review")).unwrap());
    let lockfile = site.lockfile();
    assert!(
        lockfile.contains(&format!(
            "name = \"review\"\nreference = \"{reference}\"\ndigest = \"{digest}\"\nsha256 = \"{}\"",
            sha256_of("code_review")
        )),
        "{lockfile}"
    );

    assert_eq!(
        site.list(),
        vec![json!({
            "name": "review", "source": reference, "tag": "1.0", "digest": digest, "sha256": sha256_of("code_review"),
            "signer": "unsigned", "prompts": 1, "state": "agrees"
        })]
    );
    // The same name again is refused, naming the command that replaces it.
    let again = site.refused("add", &[&reference, "--name", "review"]);
    assert!(again.contains("a plugin named \"review\" is already installed"), "{again}");

    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    let assistant = format!("{}:2", registry.reference("acme/assistant"));
    publish(&site, "dev_assistant", &assistant);
    site.ok("add", &[&assistant]);
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error", "code_review"]);
    site.ok("remove", &["review"]);
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error"]);
    site.ok("remove", &["assistant"]);
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), Vec::<String>::new());
    assert!(!installed.exists());
    assert_eq!(site.list(), Vec::<Value>::new());
}

#[test]
fn packs_pushed_by_skopeo_and_by_oras_install_as_published_ones_do() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let layout = site.path("layout");
    tool(&["layout", "--wasm", built_plugin("dev_assistant").to_str().unwrap(), "--out", layout.to_str().unwrap()]);
    let by_skopeo = tool(&["push-skopeo", "--layout", layout.to_str().unwrap(), "--ref", &format!("{}/by/skopeo:1", registry.address)]);
    let by_oras =
        tool(&["push-oras", "--wasm", built_plugin("code_review").to_str().unwrap(), "--ref", &format!("{}/by/oras:1", registry.address)]);

    site.ok("add", &[&format!("{}:1", registry.reference("by/skopeo"))]);
    site.ok("add", &[&format!("{}:1", registry.reference("by/oras"))]);
    let listed = site.list();
    let summary: Vec<(String, String, u64, String)> = listed
        .iter()
        .map(|pack| {
            (
                pack["name"].as_str().unwrap().into(),
                pack["digest"].as_str().unwrap().into(),
                pack["prompts"].as_u64().unwrap(),
                pack["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("oras".to_string(), by_oras["manifest_digest"].as_str().unwrap().to_string(), 1, "agrees".to_string()),
            ("skopeo".to_string(), by_skopeo["manifest_digest"].as_str().unwrap().to_string(), 3, "agrees".to_string()),
        ]
    );
    assert_eq!(std::fs::read(site.path("packs/skopeo.wasm")).unwrap(), std::fs::read(built_plugin("dev_assistant")).unwrap());
}

/// A registry, a site requiring signatures by `cosign.pub`, and a key pair
/// made by the test tool (another key pair beside it, untrusted).
struct Signed {
    registry: Registry,
    site: Site,
    key: PathBuf,
    other_key: PathBuf,
    other_public: PathBuf,
    _storage: tempfile::TempDir,
}

impl Signed {
    fn new() -> Signed {
        let storage = tempfile::tempdir().unwrap();
        let registry = Registry::start(storage.path(), &[]);
        let keys = storage.path().join("keys");
        let made = tool(&["keygen", "--out", keys.to_str().unwrap()]);
        let other = tool(&["keygen", "--out", storage.path().join("other").to_str().unwrap()]);
        let site = Site::new(&format!("{}[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\"]\n", plain(&registry)));
        std::fs::copy(made["public"].as_str().unwrap(), site.path("cosign.pub")).unwrap();
        let key = PathBuf::from(made["private"].as_str().unwrap());
        let other_key = PathBuf::from(other["private"].as_str().unwrap());
        let other_public = PathBuf::from(other["public"].as_str().unwrap());
        Signed { registry, site, key, other_key, other_public, _storage: storage }
    }

    /// Publishes `plugin` at `repository:tag` and signs it with `key`, with
    /// the tool's `extra` flags; returns the reference and the digest.
    fn publish_signed(&self, plugin: &str, repository: &str, tag: &str, key: Option<&Path>, extra: &[&str]) -> (String, String) {
        let reference = format!("{}:{tag}", self.registry.reference(repository));
        let digest = publish(&self.site, plugin, &reference);
        if let Some(key) = key {
            let mut args = vec![
                "sign",
                "--registry",
                &self.registry.address,
                "--repo",
                repository,
                "--digest",
                &digest,
                "--key",
                key.to_str().unwrap(),
            ];
            args.extend_from_slice(extra);
            tool(&args);
        }
        (reference, digest)
    }
}

#[test]
fn signatures_are_required_checked_against_the_trusted_key_and_bound_to_the_digest() {
    let signed = Signed::new();
    let site = &signed.site;
    let (good, good_digest) = signed.publish_signed("code_review", "acme/good", "1", Some(&signed.key), &[]);
    let said = site.ok("add", &[&good]);
    assert!(said.contains(&format!("({good_digest}, ")) && said.contains("signed by cosign.pub)"), "{said}");
    assert!(site.lockfile().contains("signer = \"cosign.pub\""));

    let (unsigned, unsigned_digest) = signed.publish_signed("code_review", "acme/unsigned", "1", None, &[]);
    let refused = site.refused("add", &[&unsigned]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{unsigned_digest}: signature refused: it has no signature, and the configuration requires one",
            signed.registry.reference("acme/unsigned")
        )
    );

    let (by_other, other_digest) = signed.publish_signed("code_review", "acme/other", "1", Some(&signed.other_key), &[]);
    let refused = site.refused("add", &[&by_other]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{other_digest}: signature refused: no signature of {other_digest} is by a trusted signer (cosign.pub): signature 1 is not by a trusted key",
            signed.registry.reference("acme/other")
        )
    );

    let (wrong, wrong_digest) = signed.publish_signed("code_review", "acme/wrong", "1", Some(&signed.key), &["--wrong-digest"]);
    let refused = site.refused("add", &[&wrong]);
    assert!(
        refused.contains(&format!(
            "no signature of {wrong_digest} is by a trusted signer (cosign.pub): signature 1 (by cosign.pub) signs \"sha256:"
        )),
        "{refused}"
    );
    let (corrupt, _) = signed.publish_signed("code_review", "acme/corrupt", "1", Some(&signed.key), &["--corrupt"]);
    let refused = site.refused("add", &[&corrupt]);
    assert!(refused.contains("signature 1 is not by a trusted key"), "{refused}");
    // Nothing refused was installed.
    assert_eq!(site.list().iter().map(|pack| pack["name"].clone()).collect::<Vec<_>>(), vec![json!("good")]);

    // At load: the signed pack serves, with its signer shown by inspect; a
    // file copied in by hand and the installed file changed on disk are refused.
    let inspected = prompt_host(&["inspect", site.path("packs/good.wasm").to_str().unwrap(), "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(report.contains(&format!("  signed    by cosign.pub, manifest {good_digest}\n")), "{report}");
    std::fs::copy(built_plugin("dev_assistant"), site.path("packs/by_hand.wasm")).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    server.wait_for_stderr("signature refused: it has no signature, and the configuration requires one");
    let mut tampered = std::fs::read(built_plugin("code_review")).unwrap();
    tampered.extend_from_slice(b"\0\0\0\0\0\0\0");
    support::install_bytes(&site.path("packs"), &tampered, "good.wasm");
    let log = server.wait_for_stderr("new version not loaded, the previous one keeps serving");
    assert!(log.contains(&format!("it is not the pack installed from {good}: its SHA-256 is ")), "{log}");
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    assert_eq!(site.list()[0]["state"], "differs");
}

#[test]
fn a_registry_that_lies_or_sends_too_much_is_refused_before_anything_is_installed() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let digest = publish(&site, "code_review", &format!("{}:1", registry.reference("acme/pack")));
    let layer = format!("sha256:{}", sha256_of("code_review"));

    let liar = Registry::spawn(&["serve-blob-liar", "--upstream", &registry.address, "--corrupt-blob", &layer]);
    let lied_to = Site::new(&plain(&liar));
    let refused = lied_to.refused("add", &[&format!("{}:1", liar.reference("acme/pack"))]);
    assert!(
        refused.contains(&format!(
            "the pack's component of {}@{digest} does not match its digest: expected {layer}, received sha256:",
            liar.reference("acme/pack")
        )),
        "{refused}"
    );
    let padder = Registry::spawn(&["serve-blob-liar", "--upstream", &registry.address, "--pad-manifest", "70000"]);
    let padded = Site::new(&plain(&padder));
    let refused = padded.refused("add", &[&format!("{}@{digest}", padder.reference("acme/pack"))]);
    assert_eq!(
        refused.trim(),
        format!("error: the manifest of {}@{digest} is larger than the 65536 bytes allowed", padder.reference("acme/pack"))
    );
    let small = Site::new(&format!("{}max_pack_mib = 1\n", plain(&registry)));
    let large = repo_root().join("target/large-pack.wasm");
    let mut bytes = std::fs::read(built_plugin("code_review")).unwrap();
    bytes.resize(2 << 20, 0);
    std::fs::write(&large, &bytes).unwrap();
    let output = small.run("publish", &[large.to_str().unwrap(), &format!("{}:large", registry.reference("acme/pack"))]);
    assert!(output.status.success());
    let large_digest = String::from_utf8(output.stdout).unwrap().trim().to_string();
    let refused = small.refused("add", &[&format!("{}:large", registry.reference("acme/pack"))]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: the pack's component of {}@{large_digest} is larger than the 1048576 bytes allowed",
            registry.reference("acme/pack")
        )
    );
    for site in [&lied_to, &padded, &small] {
        assert_eq!(site.lockfile(), "");
        assert_eq!(std::fs::read_dir(site.path("packs")).unwrap().count(), 0);
    }
}

#[test]
fn a_registry_behind_a_token_service_is_signed_in_to_with_bounded_answers_and_one_that_stalls_is_given_up_on() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let digest = publish(&site, "code_review", &format!("{}:1", registry.reference("acme/pack")));

    // Signed in through the token service the registry names, with the credentials for it.
    let guarded = Registry::guarded(&registry, &[]);
    let reference = format!("{}:1", guarded.reference("acme/pack"));
    let behind_tokens = Site::new(&plain(&guarded));
    let refused = behind_tokens.refused("add", &[&reference]);
    assert!(refused.contains(&format!("error: {0} refused access to {reference}: give credentials", guarded.address)), "{refused}");
    let credentials = [
        ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
        ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
        ("PROMPT_HOST_REGISTRY", guarded.address.as_str()),
    ];
    let added = prompt_host_with(&["add", &reference, "--config", &behind_tokens.config()], &credentials);
    let said = String::from_utf8_lossy(&added.stderr);
    assert!(added.status.success() && said.contains(&format!("({digest}, ")), "{said}");

    // A token answer past its bound is refused before it is read whole.
    let flooding = Registry::guarded(&registry, &["--token-bytes", "100000"]);
    let flooded = Site::new(&plain(&flooding));
    let credentials = [
        ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
        ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
        ("PROMPT_HOST_REGISTRY", flooding.address.as_str()),
    ];
    let refused =
        prompt_host_with(&["add", &format!("{}:1", flooding.reference("acme/pack")), "--config", &flooded.config()], &credentials);
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        format!("error: the token service's answer of {}:1 is larger than the 65536 bytes allowed", flooding.reference("acme/pack"))
    );

    // A registry that never answers is given up on at the deadline, by add and by serve.
    let stalled = Registry::spawn(&["serve-blob-liar", "--upstream", &registry.address, "--stall"]);
    let stalled_reference = format!("{}:1", stalled.reference("acme/pack"));
    let waiting = Site::new(&format!("{}timeout_secs = 2\n[plugins.acme]\nsource = \"{stalled_reference}\"\n", plain(&stalled)));
    let refused = waiting.refused("add", &[&stalled_reference, "--name", "other"]);
    assert_eq!(refused.trim(), format!("error: resolving the tag of {stalled_reference} took longer than 2 s ([registry] timeout_secs)"));
    std::fs::copy(built_plugin("code_review"), waiting.path("packs/local.wasm")).unwrap();
    let mut server = Server::start(&["--config", &waiting.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    let log = server.wait_for_stderr("took longer than 2 s");
    assert!(log.contains("acme"), "{log}");
    for site in [&flooded, &waiting] {
        assert_eq!(site.lockfile(), "");
    }
}

#[test]
fn an_update_that_cannot_place_its_file_leaves_the_lockfile_as_it_was() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let reference = format!("{}:stable", registry.reference("acme/pack"));
    let first = publish(&site, "code_review", &reference);
    site.ok("add", &[&reference]);
    let second = publish(&site, "dev_assistant", &reference);
    // Something in the way of the plugin file: a directory cannot be replaced by a file.
    std::fs::remove_file(site.path("packs/pack.wasm")).unwrap();
    std::fs::create_dir(site.path("packs/pack.wasm")).unwrap();
    let refused = site.refused("update", &["pack"]);
    assert!(
        refused
            .contains(&format!("pack: not updated, the installed pack stays: cannot write {}: ", site.path("packs/pack.wasm").display())),
        "{refused}"
    );
    let lockfile = site.lockfile();
    assert!(lockfile.contains(&format!("digest = \"{first}\"")) && !lockfile.contains(&second), "{lockfile}");
    // Nor is anything of the failed install left in the pack store.
    assert_eq!(stored_files(&site, "dev_assistant"), Vec::<String>::new());
    assert_eq!(stored_files(&site, "code_review"), vec!["HEX.pack.provenance.json", "HEX.wasm"]);
}

#[test]
fn update_follows_a_moved_tag_keeps_the_pack_when_it_cannot_and_a_running_server_never_fails_a_request() {
    let signed = Signed::new();
    let site = &signed.site;
    let (reference, first) = signed.publish_signed("code_review", "acme/pack", "stable", Some(&signed.key), &[]);
    site.ok("add", &[&reference, "--name", "pack"]);
    std::fs::copy(built_plugin("code_review"), site.path("packs/steady.wasm")).unwrap();
    // The steady pack is local, so it needs no signature.
    let mut config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    config.push_str("[plugins.steady]\nprefix = \"steady-\"\nrequire_signature = false\n");
    std::fs::write(site.path("prompt-host.toml"), config).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review", "steady-code_review"]);

    // The tag moves to an unsigned pack: update refuses it, the installed one stays.
    signed.publish_signed("dev_assistant", "acme/pack", "stable", None, &[]);
    let refused = site.refused("update", &[]);
    assert!(
        refused.contains("pack: not updated, the installed pack stays: ") && refused.contains("signature refused: it has no signature"),
        "{refused}"
    );
    assert!(site.lockfile().contains(&format!("digest = \"{first}\"")));

    // Moved again, to a signed pack: update installs it while requests keep coming.
    let (_, second) = signed.publish_signed("dev_assistant", "acme/pack", "stable", Some(&signed.key), &[]);
    let mut update = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(["update", "pack", "--config", &site.config()])
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut answered = 0;
    while update.try_wait().unwrap().is_none() || answered == 0 {
        let result = server.result("prompts/get", json!({"name": "steady-code_review", "arguments": {"code": "x"}}));
        assert!(result["messages"].is_array(), "{result}");
        answered += 1;
    }
    assert!(update.wait().unwrap().success());
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error", "steady-code_review"]);
    assert!(site.lockfile().contains(&format!("digest = \"{second}\"")));
    let said = site.ok("update", &[]);
    assert_eq!(said.trim(), format!("pack: up to date ({second})"));

    // With the registry down, update says so and changes nothing.
    let mut registry = signed.registry;
    registry.stop();
    let refused = site.refused("update", &["pack"]);
    assert!(refused.contains("pack: not updated, the installed pack stays: cannot reach the registry"), "{refused}");
    assert!(refused.contains("error: 1 of 1 packs not updated"), "{refused}");
    assert_eq!(site.list()[0]["state"], "agrees");
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error", "steady-code_review"]);
}

#[test]
fn a_pack_named_by_source_is_installed_at_start_and_served_from_the_store_when_the_registry_is_down() {
    let storage = tempfile::tempdir().unwrap();
    let mut registry = Registry::start(storage.path(), &["--tls"]);
    let ca = registry.ca.clone().expect("a TLS registry has a CA");
    let reference = format!("{}:1", registry.reference("acme/pack"));
    let site = Site::new(&format!("[registry]\nca_file = \"{}\"\n[plugins.acme]\nsource = \"{reference}\"\n", ca.display()));
    publish(&site, "code_review", &reference);

    // Without the CA, TLS refuses the registry.
    let untrusting = Site::new("");
    let refused = untrusting.refused("add", &[&reference]);
    assert!(refused.contains(&format!("cannot reach the registry {}", registry.address)) && refused.contains("certificate"), "{refused}");

    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    server.wait_for_stderr("pulled from its source and installed");
    server.close_stdin();
    registry.stop();
    std::fs::remove_file(site.path("packs/acme.wasm")).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    server.wait_for_stderr("its plugin file had changed or gone: put back from the pack store");

    // A damaged store copy is refused, naming both digests.
    server.close_stdin();
    std::fs::remove_file(site.path("packs/acme.wasm")).unwrap();
    let stored = site.path(&format!("prompt-host-store/sha256/{}.wasm", sha256_of("code_review")));
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.push(0);
    std::fs::write(&stored, bytes).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), Vec::<String>::new());
    let log = server.wait_for_stderr("not installed from its source");
    assert!(
        log.contains("is damaged (sha256 ") && log.contains(&format!("prompt-host.lock records {}", sha256_of("code_review"))),
        "{log}"
    );
}

#[test]
fn a_private_registry_takes_credentials_from_the_environment_or_the_docker_config_and_they_are_never_printed() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &["--tls", "--user", "alice:s3cret-Pa55"]);
    let ca = registry.ca.clone().unwrap();
    let site = Site::new(&format!("[registry]\nca_file = \"{}\"\n", ca.display()));
    let reference = format!("{}:1", registry.reference("private/pack"));
    let file = built_plugin("code_review");
    let config = site.config();
    let verbose = ("RUST_LOG", "trace");

    let anonymous = prompt_host_with(&["add", &reference, "--config", &config], &[verbose]);
    let said = String::from_utf8_lossy(&anonymous.stderr);
    assert_eq!(anonymous.status.code(), Some(1));
    let refusal = format!(
        "\nerror: {0} refused access to {reference}: give credentials in the docker config file ($DOCKER_CONFIG/config.json or ~/.docker/config.json), or in PROMPT_HOST_REGISTRY_USERNAME and PROMPT_HOST_REGISTRY_PASSWORD with PROMPT_HOST_REGISTRY={0}\n",
        registry.address
    );
    assert!(said.contains(&refusal), "{said}");

    // Credentials in the environment go only to the registry they name.
    let for_another = [
        verbose,
        ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
        ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
        ("PROMPT_HOST_REGISTRY", "registry.example:5000"),
    ];
    let elsewhere = prompt_host_with(&["add", &reference, "--config", &config], &for_another);
    assert!(String::from_utf8_lossy(&elsewhere.stderr).contains(&refusal), "{}", String::from_utf8_lossy(&elsewhere.stderr));

    let from_env = [
        verbose,
        ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
        ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
        ("PROMPT_HOST_REGISTRY", registry.address.as_str()),
    ];
    let published = prompt_host_with(&["publish", file.to_str().unwrap(), &reference, "--config", &config], &from_env);
    assert!(published.status.success(), "{}", String::from_utf8_lossy(&published.stderr));
    let added = prompt_host_with(&["add", &reference, "--name", "by_env", "--config", &config], &from_env);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));

    let docker_config = site.path("docker");
    std::fs::create_dir(&docker_config).unwrap();
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret-Pa55");
    std::fs::write(docker_config.join("config.json"), json!({"auths": {registry.address.clone(): {"auth": auth}}}).to_string()).unwrap();
    let added = prompt_host_with(
        &["add", &reference, "--name", "by_docker_config", "--config", &config],
        &[verbose, ("DOCKER_CONFIG", docker_config.to_str().unwrap())],
    );
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    assert_eq!(site.list().iter().map(|pack| pack["name"].clone()).collect::<Vec<_>>(), vec![json!("by_docker_config"), json!("by_env")]);

    for output in [&anonymous, &elsewhere, &published, &added] {
        for stream in [&output.stdout, &output.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains("s3cret-Pa55") && !text.contains(&auth), "a credential was printed: {text}");
        }
    }
}

#[test]
fn a_pack_signed_by_prompt_host_sign_with_a_cosign_key_verifies_here_and_with_openssl() {
    let signed = Signed::new();
    let site = &signed.site;
    let (reference, digest) = signed.publish_signed("code_review", "acme/signed-here", "1", None, &[]);
    let keys = site.path("cosign-keys");
    let made = {
        let output = tool_command(&["keygen", "--out", keys.to_str().unwrap()]).env("COSIGN_PASSWORD", "correct horse").output().unwrap();
        assert!(output.status.success());
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    std::fs::copy(made["public"].as_str().unwrap(), site.path("cosign.pub")).unwrap();
    let cosign_key = made["cosign_key"].as_str().unwrap();

    let at_digest = format!("{}@{digest}", signed.registry.reference("acme/signed-here"));
    let wrong_password =
        prompt_host_with(&["sign", &at_digest, "--key", cosign_key, "--config", &site.config()], &[("COSIGN_PASSWORD", "wrong")]);
    assert_eq!(wrong_password.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&wrong_password.stderr).trim(),
        format!("error: {cosign_key}: the key did not decrypt with the password in COSIGN_PASSWORD: a wrong password, or a damaged file")
    );
    let no_password = prompt_host_with(&["sign", &at_digest, "--key", cosign_key, "--config", &site.config()], &[]);
    assert_eq!(no_password.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&no_password.stderr).trim(),
        format!("error: {cosign_key}: the key is encrypted: set COSIGN_PASSWORD to its password")
    );

    // A tag may have moved since it was published: signed only when asked for.
    let by_tag =
        prompt_host_with(&["sign", &reference, "--key", cosign_key, "--config", &site.config()], &[("COSIGN_PASSWORD", "correct horse")]);
    assert_eq!(by_tag.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&by_tag.stderr).trim(),
        format!(
            "error: {reference} names a tag, and a tag may have moved since it was published: sign the digest `prompt-host publish` printed (oci://REGISTRY/REPOSITORY@sha256:...), or pass --allow-tag to sign whatever the tag names now"
        )
    );
    let address = &signed.registry.address;
    let signing =
        prompt_host_with(&["sign", &at_digest, "--key", cosign_key, "--config", &site.config()], &[("COSIGN_PASSWORD", "correct horse")]);
    assert!(signing.status.success(), "{}", String::from_utf8_lossy(&signing.stderr));
    assert_eq!(String::from_utf8(signing.stdout).unwrap().trim(), digest, "sign prints the digest it signed");
    assert_eq!(
        String::from_utf8_lossy(&signing.stderr).trim(),
        format!("signed {digest} in the repository {address}/acme/signed-here with {cosign_key}")
    );
    let by_tag = prompt_host_with(
        &["sign", &reference, "--allow-tag", "--key", cosign_key, "--config", &site.config()],
        &[("COSIGN_PASSWORD", "correct horse")],
    );
    assert!(by_tag.status.success(), "{}", String::from_utf8_lossy(&by_tag.stderr));
    assert_eq!(String::from_utf8(by_tag.stdout).unwrap().trim(), digest, "--allow-tag resolves the tag and prints the digest it signed");
    let said = site.ok("add", &[&reference]);
    assert!(said.contains("signed by cosign.pub"), "{said}");

    // The signature as stored, checked by openssl: the payload names the digest.
    let sig_tag = format!("{}.sig", digest.replace(':', "-"));
    let manifest: Value = serde_json::from_slice(
        &Command::new("curl")
            .args(["-sf", "-H", "Accept: application/vnd.oci.image.manifest.v1+json"])
            .arg(format!("http://{address}/v2/acme/signed-here/manifests/{sig_tag}"))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(layer["mediaType"], "application/vnd.dev.cosign.simplesigning.v1+json");
    let payload = Command::new("curl")
        .args(["-sf", &format!("http://{address}/v2/acme/signed-here/blobs/{}", layer["digest"].as_str().unwrap())])
        .output()
        .unwrap()
        .stdout;
    let payload_json: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(payload_json["critical"]["image"]["docker-manifest-digest"], digest.as_str());
    assert_eq!(payload_json["critical"]["identity"]["docker-reference"], format!("{address}/acme/signed-here"));
    use base64::Engine as _;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(layer["annotations"]["dev.cosignproject.cosign/signature"].as_str().unwrap())
        .unwrap();
    std::fs::write(site.path("payload.json"), &payload).unwrap();
    std::fs::write(site.path("payload.sig"), signature).unwrap();
    let verified = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(site.path("cosign.pub"))
        .arg("-signature")
        .arg(site.path("payload.sig"))
        .arg(site.path("payload.json"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&verified.stdout).trim(), "Verified OK");
}

#[test]
fn a_second_signer_adds_a_signature_beside_the_first_and_a_key_that_signs_again_replaces_its_own() {
    let signed = Signed::new();
    let (reference, digest) = signed.publish_signed("code_review", "acme/two-signers", "1", None, &[]);
    let at_digest = format!("{}@{digest}", signed.registry.reference("acme/two-signers"));
    let sign = |key: &Path| {
        let output = prompt_host_with(&["sign", &at_digest, "--key", key.to_str().unwrap(), "--config", &signed.site.config()], &[]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    let address = &signed.registry.address;
    let layers = || {
        let sig_tag = format!("{}.sig", digest.replace(':', "-"));
        let manifest = Command::new("curl")
            .args(["-sf", "-H", "Accept: application/vnd.oci.image.manifest.v1+json"])
            .arg(format!("http://{address}/v2/acme/two-signers/manifests/{sig_tag}"))
            .output()
            .unwrap();
        let manifest: Value = serde_json::from_slice(&manifest.stdout).unwrap();
        manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|layer| layer["annotations"]["dev.cosignproject.cosign/signature"].clone())
            .collect::<Vec<_>>()
    };
    // An author signs, then a release team: both signatures stay.
    sign(&signed.key);
    sign(&signed.other_key);
    let both = layers();
    assert_eq!(both.len(), 2, "{both:?}");
    // The author signs again: its signature is replaced, the team's kept.
    sign(&signed.key);
    let again = layers();
    assert_eq!(again.len(), 2, "{again:?}");
    assert_eq!(again[0], both[1], "the other key's signature is kept");
    assert_ne!(again[1], both[0], "the same key's earlier signature is replaced by its new one");

    // A site trusting either key installs the pack, signed by the key it trusts.
    let said = signed.site.ok("add", &[&reference]);
    assert!(said.contains("signed by cosign.pub"), "{said}");
    let other_site = Site::new(&format!("{}[signatures]\nrequire = true\npublic_keys = [\"team.pub\"]\n", plain(&signed.registry)));
    std::fs::copy(&signed.other_public, other_site.path("team.pub")).unwrap();
    let said = other_site.ok("add", &[&reference]);
    assert!(said.contains("signed by team.pub"), "{said}");
}

#[test]
fn keyless_signatures_are_checked_against_the_trusted_root_the_identity_and_the_issuer() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let made = |dir: &str, identity: &str| {
        tool(&[
            "keyless-ca",
            "--out",
            storage.path().join(dir).to_str().unwrap(),
            "--identity",
            identity,
            "--issuer",
            "https://issuer.example",
        ])
    };
    let ours = made("ours", "dev@acme.example");
    let foreign = made("foreign", "dev@acme.example");
    let trusting = |identity: &str| {
        Site::new(&format!(
            "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"{identity}\", issuer = \"https://issuer.example\" }}]\n",
            plain(&registry),
            ours["trusted_root"].as_str().unwrap()
        ))
    };
    let site = trusting("dev@acme.example");
    let publish_signed = |repository: &str, ca: &Value, extra: &[&str]| {
        let reference = format!("{}:1", registry.reference(repository));
        let digest = publish(&site, "code_review", &reference);
        let mut args = vec![
            "sign",
            "--registry",
            &registry.address,
            "--repo",
            repository,
            "--digest",
            &digest,
            "--key",
            ca["key"].as_str().unwrap(),
            "--cert",
            ca["cert"].as_str().unwrap(),
            "--rekor-key",
            ours["rekor_key"].as_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        tool(&args);
        (reference, digest)
    };

    let (good, good_digest) = publish_signed("keyless/good", &ours, &[]);
    let said = site.ok("add", &[&good]);
    assert!(
        said.contains(&format!("({good_digest}, ")) && said.contains("signed by dev@acme.example (issuer https://issuer.example))"),
        "{said}"
    );
    let inspected = prompt_host(&["inspect", site.path("packs/good.wasm").to_str().unwrap(), "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(
        report.contains(&format!("  signed    by dev@acme.example (issuer https://issuer.example), manifest {good_digest}\n")),
        "{report}"
    );

    let elsewhere = trusting("ops@acme.example");
    let refused = elsewhere.refused("add", &[&good]);
    assert!(
        refused.contains(&format!(
            "no signature of {good_digest} is by a trusted signer (ops@acme.example (issuer https://issuer.example)): signature 1 is keyless, and it is signed by dev@acme.example (issuer https://issuer.example), not by an identity the configuration allows (ops@acme.example (issuer https://issuer.example))"
        )),
        "{refused}"
    );

    let (by_foreign_ca, _) = publish_signed("keyless/foreign", &foreign, &[]);
    let refused = site.refused("add", &[&by_foreign_ca]);
    assert!(
        refused.contains(
            "signature 1 is keyless, and its certificate does not chain to a trusted CA for code signing at the time the log recorded"
        ),
        "{refused}"
    );

    // Logged an hour before the certificate was issued: outside its validity.
    let an_hour_ago = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 3600).to_string();
    let (too_early, _) = publish_signed("keyless/early", &ours, &["--integrated-time", &an_hour_ago]);
    let refused = site.refused("add", &[&too_early]);
    assert!(
        refused.contains(
            "signature 1 is keyless, and its certificate does not chain to a trusted CA for code signing at the time the log recorded"
        ),
        "{refused}"
    );

    // The log's timestamp must be the log's: one made with another key is refused.
    let (forged_log, _) = publish_signed("keyless/forged-log", &ours, &["--rekor-key", foreign["rekor_key"].as_str().unwrap()]);
    let refused = site.refused("add", &[&forged_log]);
    assert!(refused.contains("signature 1 is keyless, and its transparency log is not one the trusted root names"), "{refused}");

    // A certificate naming several identities is by each of them.
    let several = tool(&[
        "keyless-ca",
        "--out",
        storage.path().join("several").to_str().unwrap(),
        "--identity",
        "bot@ci.example",
        "--identity",
        "dev@acme.example",
        "--issuer",
        "https://issuer.example",
    ]);
    let trusting_several = Site::new(&format!(
        "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n",
        plain(&registry),
        several["trusted_root"].as_str().unwrap()
    ));
    let reference = format!("{}:1", registry.reference("keyless/several"));
    let digest = publish(&trusting_several, "code_review", &reference);
    tool(&[
        "sign",
        "--registry",
        &registry.address,
        "--repo",
        "keyless/several",
        "--digest",
        &digest,
        "--key",
        several["key"].as_str().unwrap(),
        "--cert",
        several["cert"].as_str().unwrap(),
        "--rekor-key",
        several["rekor_key"].as_str().unwrap(),
    ]);
    let said = trusting_several.ok("add", &[&reference]);
    assert!(said.contains("signed by dev@acme.example (issuer https://issuer.example))"), "{said}");

    // A CA or a log key the trusted root retired vouches for nothing recorded after.
    let retired = |field: &str| {
        let mut root: Value = serde_json::from_str(&std::fs::read_to_string(ours["trusted_root"].as_str().unwrap()).unwrap()).unwrap();
        let an_hour_ago = "2026-01-01T00:00:00Z";
        match field {
            "ca" => root["certificateAuthorities"][0]["validFor"]["end"] = json!(an_hour_ago),
            _ => root["tlogs"][0]["publicKey"]["validFor"]["end"] = json!(an_hour_ago),
        }
        let file = storage.path().join(format!("retired-{field}.json"));
        std::fs::write(&file, root.to_string()).unwrap();
        Site::new(&format!(
            "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n",
            plain(&registry),
            file.display()
        ))
    };
    let refused = retired("ca").refused("add", &[&good]);
    assert!(
        refused.contains(
            "signature 1 is keyless, and no certificate authority of the trusted root was trusted at the time the log recorded (validFor)"
        ),
        "{refused}"
    );
    let refused = retired("log").refused("add", &[&good]);
    assert!(refused.contains("signature 1 is keyless, and its transparency log's key was not trusted at the time the log recorded (validFor in the trusted root)"), "{refused}");

    // There is no match-anything default.
    let open = Site::new(&format!(
        "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\n",
        plain(&registry),
        ours["trusted_root"].as_str().unwrap()
    ));
    let refused = open.refused("add", &[&good]);
    assert!(refused.contains("signatures.trusted_root needs signatures.identities: the identities (and their issuers) whose keyless signatures count; there is no match-anything default"), "{refused}");
}

#[test]
fn a_sigstore_bundle_beside_a_file_signs_exactly_that_file_by_key_or_keyless_at_every_load() {
    let storage = tempfile::tempdir().unwrap();
    let keys = tool(&["keygen", "--out", storage.path().join("keys").to_str().unwrap()]);
    let ca = tool(&[
        "keyless-ca",
        "--out",
        storage.path().join("ca").to_str().unwrap(),
        "--identity",
        "dev@acme.example",
        "--issuer",
        "https://issuer.example",
    ]);
    let site = Site::new(&format!(
        "[signatures]\nrequire = true\npublic_keys = [\"{}\"]\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n",
        keys["public"].as_str().unwrap(),
        ca["trusted_root"].as_str().unwrap()
    ));
    let packs = site.path("packs");
    let place = |name: &str, plugin: &str| {
        let file = packs.join(format!("{name}.wasm"));
        std::fs::copy(built_plugin(plugin), &file).unwrap();
        file.to_str().unwrap().to_string()
    };
    let by_key = place("by_key", "code_review");
    tool(&["bundle", "--wasm", &by_key, "--key", keys["private"].as_str().unwrap()]);
    let keyless = place("keyless", "dev_assistant");
    tool(&[
        "bundle",
        "--wasm",
        &keyless,
        "--key",
        ca["key"].as_str().unwrap(),
        "--cert",
        ca["cert"].as_str().unwrap(),
        "--rekor-key",
        ca["rekor_key"].as_str().unwrap(),
    ]);
    let corrupt = place("corrupt", "code_review");
    tool(&["bundle", "--wasm", &corrupt, "--key", keys["private"].as_str().unwrap(), "--corrupt"]);
    let other = place("other", "code_review");
    tool(&[
        "bundle",
        "--wasm",
        &other,
        "--key",
        keys["private"].as_str().unwrap(),
        "--other-file",
        built_plugin("dev_assistant").to_str().unwrap(),
    ]);
    place("unsigned", "code_review");

    let inspect = |file: &str| {
        let output = prompt_host(&["inspect", file, "--config", &site.config()]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let file_digest = |plugin: &str| format!("sha256:{}", sha256_of(plugin));
    assert!(inspect(&by_key).contains(&format!(
        "  signed    by {}, the file, by its Sigstore bundle {}\n",
        keys["public"].as_str().unwrap(),
        file_digest("code_review")
    )));
    assert!(inspect(&keyless).contains(&format!(
        "  signed    by dev@acme.example (issuer https://issuer.example), the file, by its Sigstore bundle {}\n",
        file_digest("dev_assistant")
    )));
    let report = inspect(&corrupt);
    assert!(report.contains("the bundle's signature is not by a trusted key"), "{report}");
    let report = inspect(&other);
    assert!(
        report.contains(&format!(
            "its bytes (sha256 {}) are not the ones its signed manifest names ({})",
            file_digest("code_review"),
            file_digest("dev_assistant")
        )),
        "{report}"
    );

    // Served: the two signed packs; the others refused, each with its reason.
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review", "git-commit", "explain-code", "debug-error"]);
    let log = server.wait_for_stderr("serving 4 prompts from 2 plugins (3 refused)");
    assert!(log.contains("the bundle's signature is not by a trusted key"), "{log}");
    assert!(log.contains("signature refused: it has no signature, and the configuration requires one"), "{log}");

    // A bundle added later is tried without a restart.
    let unsigned = packs.join("unsigned.wasm");
    tool(&["bundle", "--wasm", unsigned.to_str().unwrap(), "--key", keys["private"].as_str().unwrap()]);
    server.notification("notifications/prompts/list_changed");
    // (Once it is published, which may be after the client hears of it.)
    server.wait_for_stderr("plugin loaded plugin=unsigned");
}

#[test]
fn an_installed_pack_changed_on_disk_is_refused_at_load_even_without_a_signature_policy() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let reference = format!("{}:1", registry.reference("acme/pack"));
    publish(&site, "code_review", &reference);
    site.ok("add", &[&reference]);
    support::install(&site.path("packs"), "dev_assistant", "pack.wasm");
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), Vec::<String>::new());
    let log = server.wait_for_stderr("plugin not loaded");
    assert!(
        log.contains(&format!(
            "it is not the pack installed from {reference}: its SHA-256 is {}, and prompt-host.lock records {}",
            sha256_of("dev_assistant"),
            sha256_of("code_review")
        )),
        "{log}"
    );
    // update puts the installed pack back, and the running server loads it.
    let said = site.ok("update", &[]);
    assert!(said.starts_with("restored pack from"), "{said}");
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), vec!["code_review"]);
}

/// The pack store's files for the component of `plugin` (as built), by name.
fn stored_files(site: &Site, plugin: &str) -> Vec<String> {
    let hex = sha256_of(plugin);
    let Ok(entries) = std::fs::read_dir(site.path("prompt-host-store/sha256")) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&hex))
        .map(|name| name.replacen(&hex, "HEX", 1))
        .collect();
    names.sort();
    names
}

#[test]
fn provenance_is_per_install_so_the_same_bytes_installed_unsigned_elsewhere_leave_a_signed_plugin_signed() {
    let signed = Signed::new();
    let site = &signed.site;
    let mut config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    config.push_str("[plugins.loose]\nprefix = \"loose-\"\nrequire_signature = false\n");
    std::fs::write(site.path("prompt-host.toml"), config).unwrap();
    let (good, good_digest) = signed.publish_signed("code_review", "acme/good", "1", Some(&signed.key), &[]);
    site.ok("add", &[&good]);
    // The same bytes, from a mirror without signatures, for a plugin that allows that.
    let (mirror, _) = signed.publish_signed("code_review", "mirror/good", "1", None, &[]);
    let said = site.ok("add", &[&mirror, "--name", "loose"]);
    assert!(said.contains("unsigned"), "{said}");
    // A refused install leaves nothing in the store.
    let (unsigned, _) = signed.publish_signed("code_review", "acme/unsigned", "1", None, &[]);
    site.refused("add", &[&unsigned, "--name", "strict"]);
    assert_eq!(stored_files(site, "code_review"), vec!["HEX.good.provenance.json", "HEX.loose.provenance.json", "HEX.wasm"]);

    // The signed plugin is still signed at its next load, and both serve.
    let inspected = prompt_host(&["inspect", site.path("packs/good.wasm").to_str().unwrap(), "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(report.contains(&format!("  signed    by cosign.pub, manifest {good_digest}\n")), "{report}");
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["code_review", "loose-code_review"]);

    // Every source of provenance counts: the unsigned install's record does
    // not hide a valid Sigstore bundle beside its file.
    let loose = site.path("packs/loose.wasm");
    tool(&["bundle", "--wasm", loose.to_str().unwrap(), "--key", signed.key.to_str().unwrap()]);
    let inspected = prompt_host(&["inspect", loose.to_str().unwrap(), "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(
        report.contains(&format!("  signed    by cosign.pub, the file, by its Sigstore bundle sha256:{}\n", sha256_of("code_review"))),
        "{report}"
    );
}

#[test]
fn a_plugins_own_keys_or_identities_replace_the_global_ones_of_both_kinds() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let global_key = tool(&["keygen", "--out", storage.path().join("global").to_str().unwrap()]);
    let acme_key = tool(&["keygen", "--out", storage.path().join("acme").to_str().unwrap()]);
    let ca = tool(&[
        "keyless-ca",
        "--out",
        storage.path().join("ca").to_str().unwrap(),
        "--identity",
        "dev@acme.example",
        "--issuer",
        "https://issuer.example",
    ]);
    let site = Site::new(&format!(
        "{}[signatures]\nrequire = true\npublic_keys = [\"global.pub\"]\ntrusted_root = \"{}\"\n\
         identities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n\
         [plugins.acme]\npublic_keys = [\"acme.pub\"]\n\
         [plugins.ci]\nidentities = [{{ identity = \"ci@acme.example\", issuer = \"https://issuer.example\" }}]\n",
        plain(&registry),
        ca["trusted_root"].as_str().unwrap()
    ));
    std::fs::copy(global_key["public"].as_str().unwrap(), site.path("global.pub")).unwrap();
    std::fs::copy(acme_key["public"].as_str().unwrap(), site.path("acme.pub")).unwrap();
    let publish_signed = |repository: &str, key: &str, keyless: bool| {
        let reference = format!("{}:1", registry.reference(repository));
        let digest = publish(&site, "code_review", &reference);
        let mut args = vec!["sign", "--registry", &registry.address, "--repo", repository, "--digest", &digest, "--key", key];
        if keyless {
            args.extend_from_slice(&["--cert", ca["cert"].as_str().unwrap(), "--rekor-key", ca["rekor_key"].as_str().unwrap()]);
        }
        tool(&args);
        (reference, digest)
    };
    let (by_identity, identity_digest) = publish_signed("signed/keyless", ca["key"].as_str().unwrap(), true);
    let (by_global_key, global_digest) = publish_signed("signed/global", global_key["private"].as_str().unwrap(), false);
    let (by_acme_key, _) = publish_signed("signed/acme", acme_key["private"].as_str().unwrap(), false);

    // acme names its keys: the global identities no longer count for it.
    let refused = site.refused("add", &[&by_identity, "--name", "acme"]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{identity_digest}: signature refused: no signature of {identity_digest} is by a trusted signer (acme.pub): \
             signature 1 is keyless, and the configuration trusts no keyless identity for this plugin \
             (signatures.trusted_root and signatures.identities, or plugins.NAME.identities)",
            registry.reference("signed/keyless")
        )
    );
    // ci names its identities: the global keys no longer count for it.
    let refused = site.refused("add", &[&by_global_key, "--name", "ci"]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{global_digest}: signature refused: no signature of {global_digest} is by a trusted signer \
             (ci@acme.example (issuer https://issuer.example)): signature 1 is not by a trusted key",
            registry.reference("signed/global")
        )
    );
    // Each plugin's own signer counts for it, and the global ones for the others.
    let said = site.ok("add", &[&by_acme_key, "--name", "acme"]);
    assert!(said.contains("signed by acme.pub)"), "{said}");
    let said = site.ok("add", &[&by_identity, "--name", "other"]);
    assert!(said.contains("signed by dev@acme.example (issuer https://issuer.example))"), "{said}");
    let said = site.ok("add", &[&by_global_key, "--name", "third"]);
    assert!(said.contains("signed by global.pub)"), "{said}");
}

#[test]
fn without_require_a_signature_that_does_not_verify_counts_as_none_at_install_and_at_load() {
    let signed = Signed::new();
    let site = &signed.site;
    let config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap().replace("require = true", "require = false");
    std::fs::write(site.path("prompt-host.toml"), config).unwrap();
    // Signed by an untrusted key, and the same pack with no signature: both install, as unsigned.
    let (by_other, other_digest) = signed.publish_signed("code_review", "acme/other", "1", Some(&signed.other_key), &[]);
    let said = site.ok("add", &[&by_other]);
    assert!(
        said.contains(&format!(
            "a signature that does not verify counts as none (signatures are not required), installed as unsigned: \
             no signature of {other_digest} is by a trusted signer (cosign.pub): signature 1 is not by a trusted key"
        )),
        "{said}"
    );
    let (unsigned, _) = signed.publish_signed("dev_assistant", "acme/unsigned", "1", None, &[]);
    site.ok("add", &[&unsigned]);
    let lockfile = site.lockfile();
    assert_eq!(lockfile.matches("signer = \"unsigned\"").count(), 2, "{lockfile}");

    // At load the same: both served, the unverified signature logged.
    let bundled = site.path("packs/by_hand.wasm");
    std::fs::copy(built_plugin("code_review"), &bundled).unwrap();
    tool(&["bundle", "--wasm", bundled.to_str().unwrap(), "--key", signed.other_key.to_str().unwrap()]);
    let mut config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    config.push_str("[plugins.by_hand]\nprefix = \"by-hand-\"\n");
    std::fs::write(site.path("prompt-host.toml"), config).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["by-hand-code_review", "code_review", "git-commit", "explain-code", "debug-error"]);
    let log = server.wait_for_stderr("serving 5 prompts from 3 plugins");
    assert!(
        log.contains(&format!(
            "a signature that does not verify counts as none (signatures are not required), served as unsigned: \
             no signature of {other_digest} is by a trusted signer (cosign.pub): signature 1 is not by a trusted key"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "served as unsigned: no signature of sha256:{} is by a trusted signer (cosign.pub): the bundle's signature is not by a trusted key",
            sha256_of("code_review")
        )),
        "{log}"
    );

    // With require = true, both are refused, with and without their signature.
    let config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap().replace("require = false", "require = true");
    std::fs::write(site.path("prompt-host.toml"), config).unwrap();
    let inspected = prompt_host(&["inspect", site.path("packs/other.wasm").to_str().unwrap(), "--config", &site.config()]);
    assert!(String::from_utf8_lossy(&inspected.stdout).contains("signature 1 is not by a trusted key"));
    let inspected = prompt_host(&["inspect", site.path("packs/unsigned.wasm").to_str().unwrap(), "--config", &site.config()]);
    assert!(String::from_utf8_lossy(&inspected.stdout).contains("it has no signature, and the configuration requires one"));
}

#[test]
fn a_leaf_from_a_retired_intermediate_is_refused_though_a_current_ca_entry_shares_its_root() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let rotated = |intermediate: &str| {
        tool(&[
            "keyless-ca",
            "--out",
            storage.path().join(intermediate).to_str().unwrap(),
            "--identity",
            "dev@acme.example",
            "--issuer",
            "https://issuer.example",
            "--intermediate",
            intermediate,
        ])
    };
    let trusting = |ca: &Value| {
        Site::new(&format!(
            "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n",
            plain(&registry),
            ca["trusted_root"].as_str().unwrap()
        ))
    };
    // Signed now, with the chain annotation naming the issuer and the root (as cosign ships it), or none.
    let publish_signed = |site: &Site, repository: &str, ca: &Value, chain: bool| {
        let reference = format!("{}:1", registry.reference(repository));
        let digest = publish(site, "code_review", &reference);
        let mut args = vec![
            "sign",
            "--registry",
            &registry.address,
            "--repo",
            repository,
            "--digest",
            &digest,
            "--key",
            ca["key"].as_str().unwrap(),
            "--cert",
            ca["cert"].as_str().unwrap(),
            "--rekor-key",
            ca["rekor_key"].as_str().unwrap(),
        ];
        if chain {
            args.extend_from_slice(&["--chain", ca["chain"].as_str().unwrap()]);
        }
        tool(&args);
        reference
    };

    let current = rotated("current");
    let site = trusting(&current);
    let said = site.ok("add", &[&publish_signed(&site, "rotated/current", &current, true)]);
    assert!(said.contains("signed by dev@acme.example (issuer https://issuer.example))"), "{said}");

    // Review item 8: a CA entry re-keyed under the same name lists both
    // intermediates; the leaf's SCT is checked with the key of the one that
    // issued it on the path found, not the first of that name.
    let rekeyed = rotated("rekeyed");
    let site = trusting(&rekeyed);
    let said = site.ok("add", &[&publish_signed(&site, "rotated/rekeyed", &rekeyed, false)]);
    assert!(said.contains("signed by dev@acme.example (issuer https://issuer.example))"), "{said}");

    let retired = rotated("retired");
    let site = trusting(&retired);
    for (repository, chain) in [("rotated/retired", false), ("rotated/retired-chain", true)] {
        let refused = site.refused("add", &[&publish_signed(&site, repository, &retired, chain)]);
        assert!(
            refused.contains(
                "signature 1 is keyless, and its certificate does not chain to a trusted CA for code signing at the time the log recorded: UnknownIssuer"
            ),
            "{refused}"
        );
    }
}

#[test]
fn a_keyless_certificate_must_carry_an_sct_signed_by_a_ct_log_of_the_trusted_root_checked_offline() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    for (sct, expected) in [
        ("none", "its certificate carries no signed certificate timestamp (SCT): it was not logged to certificate transparency"),
        (
            "unknown-log",
            "its certificate's signed certificate timestamps (SCTs) do not verify: one is by a CT log the trusted root does not name",
        ),
        (
            "forged",
            "its certificate's signed certificate timestamps (SCTs) do not verify: one is not signed by its CT log over this certificate",
        ),
    ] {
        let ca = tool(&[
            "keyless-ca",
            "--out",
            storage.path().join(sct).to_str().unwrap(),
            "--identity",
            "dev@acme.example",
            "--issuer",
            "https://issuer.example",
            "--sct",
            sct,
        ]);
        let site = Site::new(&format!(
            "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"dev@acme.example\", issuer = \"https://issuer.example\" }}]\n",
            plain(&registry),
            ca["trusted_root"].as_str().unwrap()
        ));
        let repository = format!("sct/{sct}");
        let reference = format!("{}:1", registry.reference(&repository));
        let digest = publish(&site, "code_review", &reference);
        tool(&[
            "sign",
            "--registry",
            &registry.address,
            "--repo",
            &repository,
            "--digest",
            &digest,
            "--key",
            ca["key"].as_str().unwrap(),
            "--cert",
            ca["cert"].as_str().unwrap(),
            "--rekor-key",
            ca["rekor_key"].as_str().unwrap(),
        ]);
        let refused = site.refused("add", &[&reference]);
        assert!(refused.contains(&format!("signature 1 is keyless, and {expected}")), "{sct}: {refused}");
    }
}

/// Makes a FIFO at `path`, as `mkfifo` does.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("cannot run mkfifo");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// `prompt-host ARGS`, failing the test if it has not finished within 60
/// seconds (it would hang on a FIFO opened for reading).
fn prompt_host_within(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .args(args)
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("prompt-host {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Copies the built `plugin` into the site's plugin directory; its path.
fn install(site: &Site, plugin: &str) -> String {
    let file = site.path(&format!("packs/{plugin}.wasm"));
    std::fs::copy(built_plugin(plugin), &file).unwrap();
    file.display().to_string()
}

// Files that are not regular files where the host expects one: a FIFO as a
// pack, beside a pack as its Sigstore bundle, as the lockfile, as a record in
// the pack store, as a key file the config names. Each is refused by name,
// and nothing waits on it: `inspect`, `list` and `serve` finish or start, a
// running server keeps rescanning, and SIGTERM stops it.

const NOT_REGULAR: &str = "it is a FIFO (named pipe), not a regular file";

#[test]
fn a_fifo_as_a_pack_or_beside_one_is_refused_by_name_and_the_server_starts_rescans_and_stops() {
    let site = Site::new("");
    let pack = install(&site, "code_review");
    let bundle = format!("{pack}.sigstore.json");
    mkfifo(Path::new(&bundle));
    let fifo_pack = site.path("packs/fifo.wasm");
    mkfifo(&fifo_pack);
    install(&site, "dev_assistant");

    // inspect: refused at once, naming the file.
    let inspected = prompt_host_within(&["inspect", &pack, "--config", &site.config()]);
    assert_eq!(inspected.status.code(), Some(1));
    assert_eq!(
        stderr(&inspected).trim(),
        format!(
            "error: {pack}: its Sigstore bundle {bundle} cannot be read: {NOT_REGULAR} \
             (hint: a Sigstore bundle beside a pack is the file `cosign sign-blob --bundle` writes: replace it, or remove it)"
        )
    );
    let inspected = prompt_host_within(&["inspect", fifo_pack.to_str().unwrap()]);
    assert_eq!(stderr(&inspected).trim(), format!("error: {}: cannot read it: {NOT_REGULAR}", fifo_pack.display()));

    // list: every plugin file, the FIFO as one that does not load.
    let listed = prompt_host_within(&["list", "--config", &site.config()]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let packs = site.path("packs");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        format!(
            "code_review\t{0}/code_review.wasm\t-\t-\t-\tdoes not load\tnot-locked (not from a registry)\n\
             dev_assistant\t{0}/dev_assistant.wasm\t-\t-\t-\t3 prompts\tnot-locked (not from a registry)\n\
             fifo\t{0}/fifo.wasm\t-\t-\t-\tdoes not load\tnot-locked (not from a registry)\n",
            packs.display()
        )
    );

    // serve: starts, serving the one plugin it can read, each refusal named.
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error"]);
    let log = server.wait_for_stderr("serving 3 prompts from 1 plugin (2 refused)");
    assert!(log.contains(&format!("its Sigstore bundle {bundle} cannot be read: {NOT_REGULAR}")), "{log}");
    assert!(log.contains(&format!("{}: cannot read it: {NOT_REGULAR}", fifo_pack.display())), "{log}");

    // A running server rescans past the FIFOs: a removed pack is unloaded.
    std::fs::remove_file(site.path("packs/dev_assistant.wasm")).unwrap();
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), Vec::<String>::new());
    server.wait_for_stderr("plugin removed");

    // And SIGTERM stops it, well within its grace.
    let asked = std::time::Instant::now();
    assert_eq!(server.terminate(), Some(0));
    assert!(asked.elapsed() < std::time::Duration::from_secs(10), "took {:?} to stop", asked.elapsed());
}

#[test]
fn a_fifo_as_the_lockfile_a_store_record_or_a_key_file_is_refused_by_name() {
    // The lockfile: list and serve's loads say which file it is.
    let site = Site::new("");
    install(&site, "dev_assistant");
    let lockfile = site.path("prompt-host.lock");
    mkfifo(&lockfile);
    let listed = prompt_host_within(&["list", "--config", &site.config()]);
    assert_eq!(listed.status.code(), Some(1));
    assert_eq!(stderr(&listed).trim(), format!("error: {}: {NOT_REGULAR}", lockfile.display()));
    let inspected = prompt_host_within(&["inspect", site.path("packs/dev_assistant.wasm").to_str().unwrap(), "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(report.contains(&format!("its provenance cannot be read: {}: {NOT_REGULAR}", lockfile.display())), "{report}");

    // A record in the pack store, where the provenance of the install the
    // lockfile names would be (a record no install names is never opened).
    let site = Site::new("");
    let file = install(&site, "dev_assistant");
    let digest = sha256_of("dev_assistant");
    std::fs::write(
        site.path("prompt-host.lock"),
        format!(
            "version = 1\n\n[[pack]]\nname = \"dev_assistant\"\nreference = \"oci://127.0.0.1:5000/acme/dev:1\"\n\
             digest = \"sha256:{digest}\"\nsha256 = \"{digest}\"\nsize = 1\nsigner = \"unsigned\"\n"
        ),
    )
    .unwrap();
    let store = site.path("prompt-host-store/sha256");
    std::fs::create_dir_all(&store).unwrap();
    let record = store.join(format!("{digest}.dev_assistant.provenance.json"));
    mkfifo(&record);
    let inspected = prompt_host_within(&["inspect", &file, "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(report.contains(&format!("its provenance cannot be read: cannot read {}: {NOT_REGULAR}", record.display())), "{report}");

    // A key file the config names: serve refuses to start, at once.
    let site = Site::new("[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\"]\n");
    install(&site, "dev_assistant");
    let key = site.path("cosign.pub");
    mkfifo(&key);
    let served = prompt_host_within(&["serve", "--config", &site.config()]);
    assert_eq!(served.status.code(), Some(1));
    assert!(
        stderr(&served).contains(&format!("signatures.public_keys: cannot read {}: {NOT_REGULAR}", key.display())),
        "{}",
        stderr(&served)
    );
}

#[test]
fn an_identity_may_pin_the_source_repository_ref_and_workflow_a_ci_certificate_names() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    // A reusable release workflow's identity, called from two repositories.
    let workflow_identity = "https://github.com/acme/workflows/.github/workflows/release.yml@refs/heads/main";
    let issuer = "https://token.actions.githubusercontent.com";
    let build = |dir: &str, repository: &str| {
        tool(&[
            "keyless-ca",
            "--out",
            storage.path().join(dir).to_str().unwrap(),
            "--identity",
            workflow_identity,
            "--issuer",
            issuer,
            "--source-repository",
            repository,
            "--source-ref",
            "refs/tags/v1",
            "--workflow",
            &format!("{repository}/.github/workflows/release.yml@refs/tags/v1"),
        ])
    };
    let ours = build("ours", "https://github.com/acme/prompts");
    let fork = build("fork", "https://github.com/mallory/prompts");
    let trusting = |ca: &Value, pins: &str| {
        Site::new(&format!(
            "{}[signatures]\nrequire = true\ntrusted_root = \"{}\"\nidentities = [{{ identity = \"{workflow_identity}\", issuer = \"{issuer}\"{pins} }}]\n",
            plain(&registry),
            ca["trusted_root"].as_str().unwrap()
        ))
    };
    let publish_signed = |site: &Site, repository: &str, ca: &Value| {
        let reference = format!("{}:1", registry.reference(repository));
        let digest = publish(site, "code_review", &reference);
        tool(&[
            "sign",
            "--registry",
            &registry.address,
            "--repo",
            repository,
            "--digest",
            &digest,
            "--key",
            ca["key"].as_str().unwrap(),
            "--cert",
            ca["cert"].as_str().unwrap(),
            "--rekor-key",
            ca["rekor_key"].as_str().unwrap(),
        ]);
        (reference, digest)
    };
    let pins = ", source_repository = \"https://github.com/acme/prompts\", source_ref = \"refs/tags/v1\"";

    let site = trusting(&ours, pins);
    let (reference, _) = publish_signed(&site, "ci/ours", &ours);
    let said = site.ok("add", &[&reference]);
    assert!(
        said.contains(&format!(
            "signed by {workflow_identity} (issuer {issuer}, source repository https://github.com/acme/prompts, ref refs/tags/v1, \
             workflow https://github.com/acme/prompts/.github/workflows/release.yml@refs/tags/v1))"
        )),
        "{said}"
    );

    // The same workflow run from a fork: refused when the repository is pinned, accepted when it is not.
    let site = trusting(&fork, pins);
    let (reference, _) = publish_signed(&site, "ci/fork", &fork);
    let refused = site.refused("add", &[&reference]);
    assert!(
        refused.contains(&format!(
            "signature 1 is keyless, and it is signed by {workflow_identity} (issuer {issuer}, source repository https://github.com/mallory/prompts, \
             ref refs/tags/v1, workflow https://github.com/mallory/prompts/.github/workflows/release.yml@refs/tags/v1), not by an identity \
             the configuration allows ({workflow_identity} (issuer {issuer}, source repository https://github.com/acme/prompts, ref refs/tags/v1))"
        )),
        "{refused}"
    );
    let unpinned = trusting(&fork, "");
    unpinned.ok("add", &[&reference]);
}

/// `prompt-host ARGS` in `cwd` with COSIGN_PASSWORD set to `password`.
fn prompt_host_in(cwd: &Path, args: &[&str], password: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prompt-host"));
    command
        .args(args)
        .current_dir(cwd)
        .env("COSIGN_PASSWORD", password)
        .env("DOCKER_CONFIG", Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-docker-config"));
    command.output().unwrap()
}

fn openssl(cwd: &Path, args: &[&str]) {
    let output = Command::new("openssl").args(args).current_dir(cwd).output().unwrap();
    assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn keygen_writes_a_cosign_key_pair_that_signs_here_and_in_the_independent_tool_and_openssl_keys_sign_too() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let keys = tempfile::tempdir().unwrap();
    let made = prompt_host_in(keys.path(), &["keygen"], "correct horse");
    assert_eq!(made.status.code(), Some(0), "{}", String::from_utf8_lossy(&made.stderr));
    assert_eq!(String::from_utf8_lossy(&made.stderr), "Private key written to cosign.key\nPublic key written to cosign.pub\n");
    let private = std::fs::read_to_string(keys.path().join("cosign.key")).unwrap();
    assert!(private.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), "{private}");
    assert!(std::fs::read_to_string(keys.path().join("cosign.pub")).unwrap().starts_with("-----BEGIN PUBLIC KEY-----\n"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(keys.path().join("cosign.key")).unwrap().permissions().mode() & 0o777, 0o600);
    // Never over a key.
    let again = prompt_host_in(keys.path(), &["keygen"], "x");
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "error: cosign.key exists: keygen does not replace a key (remove it, or choose another --output-key-prefix)\n"
    );

    // The keys openssl writes, as docs/packs-from-a-registry.md says: SEC1 (with its EC PARAMETERS block) and encrypted PKCS#8.
    openssl(keys.path(), &["ecparam", "-name", "prime256v1", "-genkey", "-out", "sec1.pem"]);
    openssl(keys.path(), &["ec", "-in", "sec1.pem", "-pubout", "-out", "sec1.pub"]);
    openssl(
        keys.path(),
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-aes-256-cbc",
            "-pass",
            "pass:correct horse",
            "-out",
            "pkcs8.pem",
        ],
    );
    openssl(keys.path(), &["pkey", "-in", "pkcs8.pem", "-passin", "pass:correct horse", "-pubout", "-out", "pkcs8.pub"]);

    let site = Site::new(&format!(
        "{}[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\", \"sec1.pub\", \"pkcs8.pub\"]\n",
        plain(&registry)
    ));
    for public in ["cosign.pub", "sec1.pub", "pkcs8.pub"] {
        std::fs::copy(keys.path().join(public), site.path(public)).unwrap();
    }
    let config = site.config();
    for (key, public, repository) in
        [("cosign.key", "cosign.pub", "acme/keygen"), ("sec1.pem", "sec1.pub", "acme/sec1"), ("pkcs8.pem", "pkcs8.pub", "acme/pkcs8")]
    {
        let reference = format!("{}:1", registry.reference(repository));
        let digest = publish(&site, "code_review", &reference);
        let at_digest = format!("{}@{digest}", registry.reference(repository));
        let key = keys.path().join(key);
        let signing =
            prompt_host_in(keys.path(), &["sign", &at_digest, "--key", key.to_str().unwrap(), "--config", &config], "correct horse");
        assert!(signing.status.success(), "{key:?}: {}", String::from_utf8_lossy(&signing.stderr));
        let said = site.ok("add", &[&reference, "--name", &repository.replace("acme/", "")]);
        assert!(said.contains(&format!("signed by {public}")), "{said}");
    }

    // Without COSIGN_PASSWORD, on a terminal (a pty from util-linux's script), the password is asked
    // for twice and not echoed; the key it encrypts signs as the others do.
    let typed = {
        use std::io::Write;
        let command = format!("{} keygen --output-key-prefix typed", env!("CARGO_BIN_EXE_prompt-host"));
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(keys.path())
            .env_remove("COSIGN_PASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for _ in 0..2 {
            std::thread::sleep(std::time::Duration::from_millis(700));
            stdin.write_all(b"typed secret\n").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(700));
        drop(stdin);
        String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).replace("\r\n", "\n")
    };
    assert_eq!(
        typed,
        "Enter password for private key: \nEnter password for private key again: \n\
         Private key written to typed.key\nPublic key written to typed.pub\n"
    );
    std::fs::copy(keys.path().join("typed.pub"), site.path("cosign.pub")).unwrap();
    let reference = format!("{}:1", registry.reference("acme/typed"));
    let digest = publish(&site, "code_review", &reference);
    let at_digest = format!("{}@{digest}", registry.reference("acme/typed"));
    let typed_key = keys.path().join("typed.key");
    let signing =
        prompt_host_in(keys.path(), &["sign", &at_digest, "--key", typed_key.to_str().unwrap(), "--config", &config], "typed secret");
    assert!(signing.status.success(), "{}", String::from_utf8_lossy(&signing.stderr));
    assert!(site.ok("add", &[&reference, "--name", "typed"]).contains("signed by cosign.pub"));
    std::fs::copy(keys.path().join("cosign.pub"), site.path("cosign.pub")).unwrap();

    // The independent tool reads keygen's cosign.key (cosign's format) and signs; the host verifies it.
    let reference = format!("{}:1", registry.reference("acme/by-tool"));
    let digest = publish(&site, "dev_assistant", &reference);
    let cosign_key = keys.path().join("cosign.key");
    let signed = tool_command(&[
        "sign",
        "--registry",
        &registry.address,
        "--repo",
        "acme/by-tool",
        "--digest",
        &digest,
        "--key",
        cosign_key.to_str().unwrap(),
    ])
    .env("COSIGN_PASSWORD", "correct horse")
    .output()
    .unwrap();
    assert!(signed.status.success(), "{}", String::from_utf8_lossy(&signed.stderr));
    let said = site.ok("add", &[&reference, "--name", "by_tool"]);
    assert!(said.contains("signed by cosign.pub"), "{said}");

    // A key that is not a private key is refused, saying which keys are read.
    let refused = prompt_host_in(keys.path(), &["sign", &at_digest, "--key", "sec1.pub", "--config", &config], "");
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "error: sec1.pub: cannot read the signing key: it is none of cosign.key (prompt-host keygen, cosign \
         generate-key-pair), a PKCS#8 PEM key (encrypted or not) or a SEC1 PEM key (openssl ecparam -genkey)"
    );
}

#[test]
fn a_source_added_to_the_config_of_a_running_server_is_installed_at_sighup() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let reference = format!("{}:1", registry.reference("acme/team"));
    publish(&site, "code_review", &reference);
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), Vec::<String>::new());

    let config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    std::fs::write(site.path("prompt-host.toml"), format!("{config}[plugins.team]\nsource = \"{reference}\"\n")).unwrap();
    server.hang_up();
    server.wait_for_stderr("pulled from its source and installed");
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    let log = server.stderr();
    assert!(log.contains("configuration reloaded"), "{log}");
    assert!(!log.contains("the plugin directory was replaced"), "{log}");
    assert!(!log.contains("matches no plugin file"), "{log}");
    assert_eq!(site.list()[0]["state"], "agrees");
    // `list` says the same word as `list --json`.
    let listed = site.run("list", &[]);
    let text = String::from_utf8(listed.stdout).unwrap();
    assert!(text.starts_with(&format!("team\t{reference}\t1\t")) && text.ends_with("\tunsigned\t1 prompt\tagrees\n"), "{text}");
}

/// `registry_tool sign` for `repository` at `digest` with `key`, and `extra` flags.
fn tool_sign(registry: &Registry, repository: &str, digest: &str, key: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["sign", "--registry", &registry.address, "--repo", repository, "--digest", digest, "--key", key.to_str().unwrap()];
    args.extend_from_slice(extra);
    tool(&args)
}

#[test]
fn a_signature_binds_the_repository_and_cosigns_type_and_a_mirror_is_signed_as_what_it_copies() {
    let signed = Signed::new();
    let site = &signed.site;
    let address = signed.registry.address.clone();
    let (_, digest) = signed.publish_signed("code_review", "acme/real", "1", Some(&signed.key), &[]);

    // The same manifest under another repository, with the signature made for
    // the first one: the registry serves it, and it is refused, naming both.
    let elsewhere = format!("{}:1", signed.registry.reference("acme/elsewhere"));
    assert_eq!(publish(site, "code_review", &elsewhere), digest, "publish is deterministic: the same manifest");
    tool_sign(&signed.registry, "acme/elsewhere", &digest, &signed.key, &["--identity-ref", &format!("{address}/acme/real")]);
    let refused = site.refused("add", &[&elsewhere]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{digest}: signature refused: no signature of {digest} is by a trusted signer (cosign.pub): signature 1 (by cosign.pub) \
             signs it in the repository \"{address}/acme/real\", and it is installed from \"{address}/acme/elsewhere\" (a pack pulled from a \
             mirror is signed as the repository [registry] mirrors maps it to)",
            signed.registry.reference("acme/elsewhere")
        )
    );

    // A payload of another type is no cosign image signature.
    let (typed, typed_digest) =
        signed.publish_signed("dev_assistant", "acme/typed", "1", Some(&signed.key), &["--type", "atomic container signature"]);
    let refused = site.refused("add", &[&typed]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: {}@{typed_digest}: signature refused: no signature of {typed_digest} is by a trusted signer (cosign.pub): signature 1 (by \
             cosign.pub) is of the type \"atomic container signature\", not cosign's \"cosign container image signature\"",
            signed.registry.reference("acme/typed")
        )
    );
    assert_eq!(site.lockfile(), "");

    // A mirror: packs pulled from ADDRESS/mirror are signed as registry.example/acme.
    let mirrored = Site::new(&format!(
        "{}mirrors = {{ \"{address}/mirror\" = \"registry.example/acme\" }}\n[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\"]\n",
        plain(&signed.registry)
    ));
    std::fs::copy(site.path("cosign.pub"), mirrored.path("cosign.pub")).unwrap();
    let reference = format!("{}:1", signed.registry.reference("mirror/pack"));
    let digest = publish(&mirrored, "code_review", &reference);
    tool_sign(&signed.registry, "mirror/pack", &digest, &signed.key, &["--identity-ref", "registry.example/acme/pack"]);
    let said = mirrored.ok("add", &[&reference]);
    assert!(said.contains(&format!("({digest}, ")) && said.contains("signed by cosign.pub)"), "{said}");
    let inspected = prompt_host(&["inspect", mirrored.path("packs/pack.wasm").to_str().unwrap(), "--config", &mirrored.config()]);
    let report = String::from_utf8_lossy(&inspected.stdout);
    assert!(report.contains(&format!("  signed    by cosign.pub, manifest {digest}\n")), "{report}");
    // Signed as the mirror's own name, it is not what the mirror copies.
    let own_name = format!("{}:1", signed.registry.reference("mirror/own"));
    let own_digest = publish(&mirrored, "dev_assistant", &own_name);
    tool_sign(&signed.registry, "mirror/own", &own_digest, &signed.key, &[]);
    let refused = mirrored.refused("add", &[&own_name]);
    assert!(
        refused.contains(&format!(
            "signature 1 (by cosign.pub) signs it in the repository \"{address}/mirror/own\", and it is installed from \"registry.example/acme/own\""
        )),
        "{refused}"
    );
}

/// The last two lines of what a refused command said (loading a pulled pack
/// to read its version may log its compile first).
fn last_two_lines(said: &str) -> String {
    let lines: Vec<&str> = said.trim().lines().collect();
    lines[lines.len().saturating_sub(2)..].join("\n")
}

#[test]
fn a_pack_that_says_no_version_cannot_roll_back_what_the_lockfile_knew() {
    // Issue "Hardening, round 3", item 10: a validly signed WIT 0.1 pack (no
    // describe-pack) replaced 0.2.0, the lockfile then held no version, and
    // the move to an older one refused a moment before was accepted.
    let signed = Signed::new();
    let site = &signed.site;
    let reference = format!("{}:stable", signed.registry.reference("acme/pack"));
    signed.publish_signed("writing_assistant", "acme/pack", "stable", Some(&signed.key), &[]);
    site.ok("add", &[&reference]);
    assert!(site.lockfile().contains("version = \"0.2.0\""), "add records the version: {}", site.lockfile());
    let (_, unsaid) = signed.publish_signed("code_review", "acme/pack", "stable", Some(&signed.key), &[]);
    assert_eq!(
        last_two_lines(&site.refused("update", &[])),
        format!(
            "pack: not updated, the installed pack stays: {reference} now names {unsaid}, which says no version (a WIT 0.1 pack has \
             no describe-pack), so it cannot be shown not to be older than the installed version \"0.2.0\": a registry may be rolling \
             it back; `prompt-host update pack --allow-downgrade` installs it\nerror: 1 of 1 packs not updated"
        )
    );
    // Told to, it is installed, and the lockfile still knows 0.2.0 ...
    site.ok("update", &["pack", "--allow-downgrade"]);
    assert!(site.lockfile().contains("version = \"0.2.0\""), "{}", site.lockfile());
    // ... so an older version is still refused.
    let (_, older) = signed.publish_signed("conformance", "acme/pack", "stable", Some(&signed.key), &[]);
    assert_eq!(
        last_two_lines(&site.refused("update", &[])),
        format!(
            "pack: not updated, the installed pack stays: {reference} now names {older}, version \"0.1.0\", older than the installed \
             version \"0.2.0\": a registry may be rolling it back; `prompt-host update pack --allow-downgrade` installs it\nerror: 1 of 1 \
             packs not updated"
        )
    );
}

#[test]
fn a_source_without_a_tag_is_not_pulled_again_at_start_and_a_source_edited_to_an_older_tag_is_refused() {
    // Issue "Hardening, round 3", item 11: `oci://REG/REPO` never equalled
    // the lockfile's `...:latest`, so every start pulled it again with no
    // rollback check; a source edited back was not checked either.
    let signed = Signed::new();
    let site = &signed.site;
    let untagged = signed.registry.reference("acme/pack");
    signed.publish_signed("writing_assistant", "acme/pack", "latest", Some(&signed.key), &[]);
    let (older_reference, older) = signed.publish_signed("conformance", "acme/pack", "one", Some(&signed.key), &[]);
    let config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    let with_source = |source: &str| {
        std::fs::write(site.path("prompt-host.toml"), format!("{config}[plugins.pack]\nsource = \"{source}\"\n")).unwrap();
    };
    with_source(&untagged);
    let mut server = Server::start(&["--config", &site.config()]);
    server.wait_for_stderr("pulled from its source and installed");
    server.close_stdin();
    let installed = site.lockfile();
    assert!(installed.contains(&format!("reference = \"{untagged}:latest\"")) && installed.contains("version = \"0.2.0\""), "{installed}");

    // The registry moves `latest` back; a restart serves what is installed.
    signed.publish_signed("conformance", "acme/pack", "latest", Some(&signed.key), &[]);
    let mut server = Server::start(&["--config", &site.config()]);
    server.list_all_names();
    let log = server.wait_for_stderr("plugin directory rescanned");
    assert!(!log.contains("pulled from its source and installed"), "{log}");
    server.close_stdin();
    assert_eq!(site.lockfile(), installed);

    // A source edited to an older tag is moved to as `update --to` would be: refused.
    with_source(&older_reference);
    let mut server = Server::start(&["--config", &site.config()]);
    let log = server.wait_for_stderr("not installed from its source");
    let refusal = format!(
        "{older_reference} now names {older}, version \\\"0.1.0\\\", older than the installed version \\\"0.2.0\\\": a registry may \
         be rolling it back; `prompt-host update pack --to {older_reference} --allow-downgrade` installs it"
    );
    assert!(log.contains(&refusal), "{log}");
    server.close_stdin();
    assert_eq!(site.lockfile(), installed);
}

#[test]
fn remove_then_add_is_checked_against_what_the_removed_pack_knew() {
    // Issue "Hardening, round 3", item 11: remove then add forgot the
    // install's history, and an older pack went in unchecked.
    let signed = Signed::new();
    let site = &signed.site;
    let reference = format!("{}:stable", signed.registry.reference("acme/pack"));
    signed.publish_signed("writing_assistant", "acme/pack", "stable", Some(&signed.key), &[]);
    site.ok("add", &[&reference]);
    site.ok("remove", &["pack"]);
    assert!(site.lockfile().contains("[[removed]]") && site.lockfile().contains("version = \"0.2.0\""), "{}", site.lockfile());
    let (_, older) = signed.publish_signed("conformance", "acme/pack", "stable", Some(&signed.key), &[]);
    let refused = site.refused("add", &[&reference]);
    assert!(
        refused.trim().ends_with(&format!(
            "{reference} now names {older}, version \"0.1.0\", older than the installed version \"0.2.0\": a registry may be rolling \
             it back; `prompt-host add {reference} --name pack --allow-downgrade` installs it"
        )),
        "{refused}"
    );
    assert!(!site.path("packs/pack.wasm").exists());
    let said = site.ok("add", &[&reference, "--allow-downgrade"]);
    assert!(said.contains(&format!("({older}, ")), "{said}");
    let lockfile = site.lockfile();
    assert!(!lockfile.contains("[[removed]]") && lockfile.contains("version = \"0.1.0\""), "{lockfile}");
}

#[test]
fn a_fifo_in_place_of_the_stores_copy_hangs_no_update() {
    // Issue "Hardening, round 3", item 13: the store's copy was read with a
    // blocking, unbounded read to learn the installed version (a FIFO hung
    // `update` holding the lockfile guard; a symlink to /dev/zero grew).
    let signed = Signed::new();
    let site = &signed.site;
    let reference = format!("{}:stable", signed.registry.reference("acme/pack"));
    signed.publish_signed("conformance", "acme/pack", "stable", Some(&signed.key), &[]);
    site.ok("add", &[&reference]);
    // A lockfile from before versions were recorded at add: the installed
    // version is then read from the store's copy.
    let lockfile = site.lockfile();
    assert!(lockfile.contains("version = \"0.1.0\"\n"), "{lockfile}");
    std::fs::write(site.path("prompt-host.lock"), lockfile.replace("version = \"0.1.0\"\n", "")).unwrap();
    let stored = site.path(&format!("prompt-host-store/sha256/{}.wasm", sha256_of("conformance")));
    std::fs::remove_file(&stored).unwrap();
    assert!(Command::new("mkfifo").arg(&stored).status().unwrap().success());
    let (_, newer) = signed.publish_signed("writing_assistant", "acme/pack", "stable", Some(&signed.key), &[]);
    let updated = prompt_host_within(&["update", "--config", &site.config()]);
    assert!(updated.status.success(), "{}", stderr(&updated));
    assert!(site.lockfile().contains(&format!("digest = \"{newer}\"")), "{}", site.lockfile());
}

/// `bytes` with a custom section added: the same component, another digest.
fn with_custom_section(bytes: &[u8], name: &str) -> Vec<u8> {
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name.as_bytes());
    section.extend_from_slice(b"another build");
    let mut out = bytes.to_vec();
    out.push(0);
    out.push(section.len() as u8);
    out.extend_from_slice(&section);
    out
}

#[test]
fn update_never_goes_back_to_an_earlier_digest_or_version_unless_told_and_the_store_keeps_only_what_is_installed() {
    let signed = Signed::new();
    let site = &signed.site;
    let reference = format!("{}:stable", signed.registry.reference("acme/pack"));
    // conformance says it is 0.1.0, writing_assistant 0.2.0 (describe-pack).
    let (_, first) = signed.publish_signed("conformance", "acme/pack", "stable", Some(&signed.key), &[]);
    site.ok("add", &[&reference]);
    assert!(site.lockfile().contains(&format!("digest = \"{first}\"")), "{}", site.lockfile());
    let (_, second) = signed.publish_signed("writing_assistant", "acme/pack", "stable", Some(&signed.key), &[]);
    let said = site.ok("update", &[]);
    assert!(said.trim().ends_with(&format!("(was {first})")), "{said}");
    let lockfile = site.lockfile();
    assert!(lockfile.contains("version = \"0.2.0\"") && lockfile.contains(&format!("previous_digests = [\"{first}\"]")), "{lockfile}");

    // The tag moved back to the first, signed, digest: refused.
    assert_eq!(publish(site, "conformance", &reference), first);
    let refused = site.refused("update", &[]);
    assert_eq!(
        refused.trim(),
        format!(
            "pack: not updated, the installed pack stays: {reference} now names {first}, which pack was updated past (it has {second}): a \
             registry may be rolling it back; `prompt-host update pack --allow-downgrade` installs it\nerror: 1 of 1 packs not updated"
        )
    );
    // A new digest of an older version, signed: refused too, and nothing is stored for it.
    let older = with_custom_section(&std::fs::read(built_plugin("conformance")).unwrap(), "rebuild");
    let older_file = site.path("older.wasm");
    std::fs::write(&older_file, &older).unwrap();
    let output = site.run("publish", &[older_file.to_str().unwrap(), &reference]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let third = String::from_utf8(output.stdout).unwrap().trim().to_string();
    tool_sign(&signed.registry, "acme/pack", &third, &signed.key, &[]);
    let refused = site.refused("update", &["pack"]);
    // The last two lines: loading the pulled pack to read its version may log its compile first.
    let last_lines: Vec<&str> = refused.trim().lines().collect();
    assert_eq!(
        last_lines[last_lines.len().saturating_sub(2)..].join("\n"),
        format!(
            "pack: not updated, the installed pack stays: {reference} now names {third}, version \"0.1.0\", older than the installed version \
             \"0.2.0\": a registry may be rolling it back; `prompt-host update pack --allow-downgrade` installs it\nerror: 1 of 1 packs not updated"
        )
    );
    let store = |site: &Site| {
        let mut names: Vec<String> = std::fs::read_dir(site.path("prompt-host-store/sha256"))
            .map(|entries| entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    let sha256 = |bytes: &[u8]| {
        use sha2::Digest;
        sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let installed = sha256_of("writing_assistant");
    assert_eq!(
        store(site),
        vec![format!("{installed}.pack.provenance.json"), format!("{installed}.wasm")],
        "update removed the first pack's store entry"
    );

    // Told to, it goes back; the store then holds only that pack.
    let said = site.ok("update", &["pack", "--allow-downgrade"]);
    assert!(said.trim().ends_with(&format!("(was {second})")), "{said}");
    let lockfile = site.lockfile();
    assert!(lockfile.contains(&format!("previous_digests = [\"{second}\", \"{first}\"]")), "{lockfile}");
    let now = sha256(&older);
    assert_eq!(store(site), vec![format!("{now}.pack.provenance.json"), format!("{now}.wasm")]);

    // A copy of the installed pack dropped in under another name inherits no provenance.
    support::install_bytes(&site.path("packs"), &older, "dropped.wasm");
    let mut server = Server::start(&["--config", &site.config()]);
    let log = server.wait_for_stderr("(1 refused)");
    assert!(log.contains("dropped") && log.contains("signature refused: it has no signature, and the configuration requires one"), "{log}");
    server.close_stdin();
    site.ok("remove", &["pack"]);
    assert_eq!(store(site), Vec::<String>::new());
}

#[test]
fn a_hostile_signature_manifest_is_skipped_and_said_and_junk_layers_hide_no_valid_signature() {
    let signed = Signed::new();
    let site = &signed.site;
    // Twenty layers whose payloads are missing, then the real signature.
    let (junk, junk_digest) = signed.publish_signed("code_review", "acme/junk", "1", Some(&signed.key), &["--junk-layers", "20"]);
    let said = site.ok("add", &[&junk]);
    assert!(said.contains(&format!("({junk_digest}, ")) && said.contains("signed by cosign.pub)"), "{said}");
    let sig = format!("{}:{}.sig", signed.registry.reference("acme/junk"), junk_digest.replace(':', "-"));
    for layer in [1, 20] {
        assert!(
            said.contains(&format!("layer {layer} of the signature manifest {sig}: a signed payload of {sig}: the registry answered 404")),
            "{said}"
        );
    }

    // A signature manifest larger than its bound: skipped, said, and the pull goes on.
    let (oversized, oversized_digest) =
        signed.publish_signed("dev_assistant", "acme/oversized", "1", Some(&signed.key), &["--pad-manifest", "70000"]);
    let refused = site.refused("add", &[&oversized]);
    let sig = format!("{}:{}.sig", signed.registry.reference("acme/oversized"), oversized_digest.replace(':', "-"));
    assert!(
        refused.trim().ends_with(&format!(
            "{}@{oversized_digest}: signature refused: it has no signature, and the configuration requires one (skipped as not signatures: the \
             signature manifest {sig}: the manifest of {sig} is larger than the 65536 bytes allowed)",
            signed.registry.reference("acme/oversized")
        )),
        "{refused}"
    );
    let unchecked = Site::new(&plain(&signed.registry));
    let said = unchecked.ok("add", &[&oversized]);
    assert!(said.contains(&format!("({oversized_digest}, ")) && said.contains(", unsigned) as "), "{said}");

    // A signature manifest that is no manifest.
    let garbage = Registry::spawn(&["serve-blob-liar", "--upstream", &signed.registry.address, "--garbage-signatures"]);
    let lied_to = Site::new(&format!("{}[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\"]\n", plain(&garbage)));
    std::fs::copy(site.path("cosign.pub"), lied_to.path("cosign.pub")).unwrap();
    let refused = lied_to.refused("add", &[&format!("{}:1", garbage.reference("acme/junk"))]);
    let sig = format!("{}:{}.sig", garbage.reference("acme/junk"), junk_digest.replace(':', "-"));
    assert!(
        refused.contains(&format!(
            "signature refused: it has no signature, and the configuration requires one (skipped as not signatures: the signature manifest {sig}: it is not an OCI image manifest: missing field"
        )),
        "{refused}"
    );
}

#[test]
fn a_valid_signature_behind_sixteen_strangers_signatures_is_read() {
    // Issue "Hardening, round 3", item 13: the first 16 well-formed
    // signatures were read and the rest never, so 16 strangers' signatures
    // hid a valid one.
    let signed = Signed::new();
    let (reference, digest) = signed.publish_signed("code_review", "acme/crowd", "1", Some(&signed.other_key), &[]);
    for _ in 1..16 {
        tool_sign(&signed.registry, "acme/crowd", &digest, &signed.other_key, &["--append"]);
    }
    tool_sign(&signed.registry, "acme/crowd", &digest, &signed.key, &["--append"]);
    let said = signed.site.ok("add", &[&reference]);
    assert!(said.contains(&format!("({digest}, ")) && said.contains("signed by cosign.pub)"), "{said}");
}

#[test]
fn sites_sharing_a_store_keep_each_others_trust_records_when_one_removes_its_pack() {
    // Issue "Hardening, round 3", item 13: one site's `remove` cleaned the
    // shared store of every record its lockfile did not name, and the other
    // site's signed pack was then refused.
    let signed = Signed::new();
    let shared = tempfile::tempdir().unwrap();
    let site = || {
        let site = Site::new(&format!(
            "store = \"{}\"\n{}[signatures]\nrequire = true\npublic_keys = [\"cosign.pub\"]\n",
            shared.path().display(),
            plain(&signed.registry)
        ));
        std::fs::copy(signed.site.path("cosign.pub"), site.path("cosign.pub")).unwrap();
        site
    };
    let (first, second) = (site(), site());
    let (a, _) = signed.publish_signed("code_review", "acme/a", "1", Some(&signed.key), &[]);
    let (b, _) = signed.publish_signed("dev_assistant", "acme/b", "1", Some(&signed.key), &[]);
    first.ok("add", &[&a]);
    second.ok("add", &[&b]);
    first.ok("remove", &["a"]);
    let mut server = Server::start(&["--config", &second.config()]);
    assert_eq!(server.list_all_names(), vec!["git-commit", "explain-code", "debug-error"]);
    let log = server.wait_for_stderr("plugin directory rescanned");
    assert!(!log.contains("refused"), "{log}");
}

/// The token requests a guarded registry recorded (`--record`), one JSON object each.
fn recorded(record: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(record).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[test]
fn a_docker_configs_identity_token_is_exchanged_at_the_token_service_never_sent_to_the_registry() {
    // Issue "Hardening, round 3", item 13: the identitytoken (a refresh
    // token) was sent to the registry as a bearer token.
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let record = storage.path().join("token-requests.jsonl");
    let guarded = Registry::guarded(&registry, &["--identity-token", "refresh-0123456789", "--record", record.to_str().unwrap()]);
    let site = Site::new(&plain(&guarded));
    let reference = format!("{}:1", guarded.reference("acme/pack"));
    let basic = [
        ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
        ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
        ("PROMPT_HOST_REGISTRY", guarded.address.as_str()),
    ];
    let file = built_plugin("code_review");
    let published = prompt_host_with(&["publish", file.to_str().unwrap(), &reference, "--config", &site.config()], &basic);
    assert!(published.status.success(), "{}", String::from_utf8_lossy(&published.stderr));
    std::fs::remove_file(&record).unwrap();
    let docker_config = site.path("docker");
    std::fs::create_dir(&docker_config).unwrap();
    std::fs::write(
        docker_config.join("config.json"),
        json!({"auths": {guarded.address.clone(): {"identitytoken": "refresh-0123456789"}}}).to_string(),
    )
    .unwrap();
    let added = prompt_host_with(&["add", &reference, "--config", &site.config()], &[("DOCKER_CONFIG", docker_config.to_str().unwrap())]);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let requests = recorded(&record);
    // Resolving the tag and pulling each sign in: two exchanges, no request
    // to the registry with the identity token.
    assert_eq!(requests, vec![json!({"scope": "repository:acme/pack:pull", "grant_type": "refresh_token"}); 2]);
}

#[test]
fn credentials_go_only_over_https_or_to_the_registrys_own_host_on_every_path_and_metadata_realms_are_never_asked() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let keys = tool(&["keygen", "--out", storage.path().join("keys").to_str().unwrap()]);
    let record = storage.path().join("token-requests.jsonl");
    let guarded = Registry::guarded(&registry, &["--record", record.to_str().unwrap()]);
    let site = Site::new(&plain(&guarded));
    let credentials = |registry: &Registry| {
        vec![
            ("PROMPT_HOST_REGISTRY_USERNAME", "alice"),
            ("PROMPT_HOST_REGISTRY_PASSWORD", "s3cret-Pa55"),
            ("PROMPT_HOST_REGISTRY", registry.address.as_str()),
        ]
        .into_iter()
        .map(|(name, value)| (name, value.to_string()))
        .collect::<Vec<_>>()
    };
    let run = |args: &[&str], registry: &Registry| {
        let env = credentials(registry);
        let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (*name, value.as_str())).collect();
        prompt_host_with(args, &env)
    };
    let file = built_plugin("code_review");

    // publish and sign sign in through the registry's token service, as pulls do.
    let reference = format!("{}:1", guarded.reference("acme/pack"));
    let published = run(&["publish", file.to_str().unwrap(), &reference, "--config", &site.config()], &guarded);
    assert!(published.status.success(), "{}", String::from_utf8_lossy(&published.stderr));
    let digest = String::from_utf8(published.stdout).unwrap().trim().to_string();
    let at_digest = format!("{}@{digest}", guarded.reference("acme/pack"));
    let signing = run(&["sign", &at_digest, "--key", keys["private"].as_str().unwrap(), "--config", &site.config()], &guarded);
    assert!(signing.status.success(), "{}", String::from_utf8_lossy(&signing.stderr));
    let requests = recorded(&record);
    assert_eq!(
        requests,
        vec![
            json!({"scope": "repository:acme/pack:pull,push", "authorization": "basic"}),
            json!({"scope": "repository:acme/pack:pull,push", "authorization": "basic"}),
        ]
    );

    // A token service on this machine but not the registry's host gets no credentials, on any path.
    let record = storage.path().join("other-host.jsonl");
    let other_host = Registry::guarded(&registry, &["--realm", "http://localhost:PORT/token", "--record", record.to_str().unwrap()]);
    let elsewhere = Site::new(&plain(&other_host));
    let realm = format!("http://localhost:{}/token", other_host.address.rsplit(':').next().unwrap());
    let withheld = format!(
        "error: the token service {realm:?} of {0} refused access, and the credentials for {0} are never sent to it: they go only over HTTPS, or to the registry's own host on this machine",
        other_host.address
    );
    let reference = format!("{}:1", other_host.reference("acme/pack"));
    let at_digest = format!("{}@{digest}", other_host.reference("acme/pack"));
    for args in [
        vec!["publish", file.to_str().unwrap(), &reference, "--config", &elsewhere.config()],
        vec!["sign", &at_digest, "--key", keys["private"].as_str().unwrap(), "--config", &elsewhere.config()],
        vec!["add", &reference, "--config", &elsewhere.config()],
    ] {
        let output = run(&args, &other_host);
        assert_eq!(String::from_utf8_lossy(&output.stderr).trim(), withheld, "{args:?}");
    }
    let requests = std::fs::read_to_string(&record).unwrap();
    assert_eq!(requests.lines().count(), 3, "{requests}");
    assert!(requests.lines().all(|line| line.contains("\"authorization\": \"none\"")), "{requests}");

    // Token services on link-local, unspecified or metadata addresses, or on
    // plain HTTP off this machine, are never asked, with or without credentials.
    for (realm, why) in [
        ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "it is a cloud metadata service's address"),
        ("https://[fe80::1]/token", "it is a link-local address, where cloud metadata services answer"),
        ("http://0.0.0.0:PORT/token", "it is an unspecified address"),
        ("https://metadata.google.internal/computeMetadata/v1/", "it is a cloud metadata service's name"),
        ("http://token.example/token", "it is plain HTTP on another machine: a token service is reached over HTTPS"),
    ] {
        let liar = Registry::guarded(&registry, &["--realm", realm]);
        let site = Site::new(&plain(&liar));
        let realm = realm.replace("PORT", liar.address.rsplit(':').next().unwrap());
        let refusal = format!("error: {} names the token service {realm:?}, which is refused: {why}", liar.address);
        let reference = format!("{}:1", liar.reference("acme/pack"));
        let anonymous = prompt_host(&["add", &reference, "--config", &site.config()]);
        assert_eq!(String::from_utf8_lossy(&anonymous.stderr).trim(), refusal);
        let publishing = run(&["publish", file.to_str().unwrap(), &reference, "--config", &site.config()], &liar);
        assert_eq!(String::from_utf8_lossy(&publishing.stderr).trim(), refusal);
    }
}

/// wkg (wasm-pkg-tools), which tests/setup installs: on PATH, or in cargo's
/// bin folder. Missing, the test fails: it is not skipped.
fn wkg() -> Command {
    let on_path =
        std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("wkg")).find(|file| file.is_file()));
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let in_cargo_bin = cargo_home.map(|home| home.join("bin/wkg")).filter(|file| file.is_file());
    let wkg = on_path.or(in_cargo_bin).expect("wkg is missing: tests/setup installs it (cargo install wkg --version 0.16.1 --locked)");
    let mut command = Command::new(wkg);
    command
        .env("DOCKER_CONFIG", Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-docker-config"))
        .env("XDG_CONFIG_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-wkg-config"))
        .env_remove("WKG_OCI_USERNAME")
        .env_remove("WKG_OCI_PASSWORD");
    command
}

#[test]
fn a_pack_pushed_by_wkg_installs_byte_for_byte_and_one_published_here_is_pulled_by_wkg_byte_for_byte() {
    let version = wkg().arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "wkg 0.16.1", "the version tests/setup pins");
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));

    // wkg pushes, prompt-host installs.
    let pushed = wkg()
        .args(["oci", "push", "--insecure", &registry.address, &format!("{}/by/wkg:1", registry.address)])
        .arg(built_plugin("dev_assistant"))
        .output()
        .unwrap();
    assert!(pushed.status.success(), "wkg oci push failed: {}", String::from_utf8_lossy(&pushed.stderr));
    let printed = String::from_utf8(pushed.stdout).unwrap();
    let digest =
        printed.lines().find_map(|line| line.strip_prefix("digest: ")).unwrap_or_else(|| panic!("wkg printed {printed:?}")).to_string();
    let reference = format!("{}:1", registry.reference("by/wkg"));
    let said = site.ok("add", &[&reference]);
    assert!(said.contains(&format!("installed wkg from {reference} ({digest}, ")), "{said}");
    assert_eq!(std::fs::read(site.path("packs/wkg.wasm")).unwrap(), std::fs::read(built_plugin("dev_assistant")).unwrap());
    assert_eq!(site.list()[0]["prompts"], 3);

    // prompt-host publishes, wkg pulls.
    let reference = format!("{}:1", registry.reference("by/prompt-host"));
    publish(&site, "code_review", &reference);
    let pulled = site.path("pulled.wasm");
    let output = wkg()
        .args(["oci", "pull", "--insecure", &registry.address, &format!("{}/by/prompt-host:1", registry.address), "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    assert!(output.status.success(), "wkg oci pull failed: {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read(&pulled).unwrap(), std::fs::read(built_plugin("code_review")).unwrap());
}

// Review item 6: the pack store's record of an install is its provenance
// only while the lockfile has that install: same plugin, same bytes, same
// pull. A record the lockfile does not bind (a lockfile edited or lost, a
// pack removed and its file copied back) does not make the file signed.
#[test]
fn a_store_record_counts_only_for_the_install_the_lockfile_has_now() {
    let signed = Signed::new();
    let site = &signed.site;
    let (good, good_digest) = signed.publish_signed("code_review", "acme/good", "1", Some(&signed.key), &[]);
    site.ok("add", &[&good]);
    let file = site.path("packs/good.wasm");
    let shown = file.display().to_string();
    let inspect = || prompt_host(&["inspect", &shown, "--config", &site.config()]);
    let report = String::from_utf8_lossy(&inspect().stdout).into_owned();
    assert!(report.contains(&format!("  signed    by cosign.pub, manifest {good_digest}\n")), "{report}");
    let refused = |output: Output, problem: &str| {
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert_eq!(stderr(&output), format!("error: {shown}: the server would refuse this plugin: {problem}\n"));
    };
    let unsigned = "signature refused: it has no signature, and the configuration requires one";

    // The lockfile installs the same bytes from another repository: the record names another pull.
    let lockfile = site.lockfile();
    std::fs::write(site.path("prompt-host.lock"), lockfile.replace("acme/good", "acme/evil")).unwrap();
    refused(
        inspect(),
        &format!(
            "its provenance cannot be read: the pack store's record says it was pulled from {}@{good_digest}, \
             and prompt-host.lock installs it from {}:1 at {good_digest}",
            signed.registry.reference("acme/good"),
            signed.registry.reference("acme/evil")
        ),
    );

    // The lockfile lost: the record is still in the store, and counts for nothing.
    std::fs::remove_file(site.path("prompt-host.lock")).unwrap();
    assert_eq!(stored_files(site, "code_review"), vec!["HEX.good.provenance.json", "HEX.wasm"]);
    refused(inspect(), unsigned);

    // Removed, then the signed file copied back by hand: remove took the record out of the store too.
    std::fs::write(site.path("prompt-host.lock"), &lockfile).unwrap();
    let kept = std::fs::read(&file).unwrap();
    site.ok("remove", &["good"]);
    assert_eq!(stored_files(site, "code_review"), Vec::<String>::new());
    std::fs::write(&file, kept).unwrap();
    refused(inspect(), unsigned);
}

// Review item 9: an empty list of a plugin's own keys would replace the
// global signers with none; it is refused when the config is read.
#[test]
fn an_empty_list_of_a_plugins_own_keys_is_refused_when_the_config_is_read() {
    let site = Site::new("[plugins.acme]\npublic_keys = []\n");
    let refused = site.refused("list", &[]);
    assert_eq!(
        refused,
        format!(
            "error: the registry commands need the config file `serve` uses (--config FILE): \
             invalid config file {}: plugins.acme.public_keys is empty: name at least one key file, \
             or leave it out to trust signatures.public_keys and signatures.identities\n",
            site.config()
        )
    );
}

/// The most memory the process `pid` has held (VmHWM), in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

// Review item 10: a file in the plugin directory is bounded as a pulled pack
// is (`registry.max_pack_mib`), checked before it is read: sparse files of
// 1 GiB cost the host nothing, and are refused by name.
#[test]
fn a_huge_sparse_pack_file_is_refused_by_name_before_it_is_read() {
    let site = Site::new("[registry]\nmax_pack_mib = 16\n");
    install(&site, "code_review");
    let huge: Vec<PathBuf> = (0..3).map(|n| site.path(&format!("packs/huge{n}.wasm"))).collect();
    for file in &huge {
        std::fs::File::create(file).unwrap().set_len(1 << 30).unwrap();
    }
    let too_large = |file: &Path| format!("{}: cannot read it: it is larger than the {} bytes it may have", file.display(), 16 << 20);

    let inspected = prompt_host_within(&["inspect", huge[0].to_str().unwrap(), "--config", &site.config()]);
    assert_eq!(inspected.status.code(), Some(1));
    assert_eq!(stderr(&inspected).trim(), format!("error: {}", too_large(&huge[0])));

    let mut server = Server::start(&["--config", &site.config()]);
    for file in &huge {
        server.wait_for_stderr(&too_large(file));
    }
    assert_eq!(server.list_all_names(), vec!["code_review"]);
    let peak = peak_memory(server.pid());
    assert!(peak < 512 << 20, "the host held {peak} bytes at its peak");
}

#[test]
fn update_to_moves_a_pack_to_a_new_tag_in_one_step_under_a_connected_client_with_the_checks_of_add() {
    let signed = Signed::new();
    let site = &signed.site;
    // conformance says it is 0.1.0, writing_assistant 0.2.0 (describe-pack).
    let (old, first) = signed.publish_signed("conformance", "acme/pack", "1.0", Some(&signed.key), &[]);
    site.ok("add", &[&old]);
    let (new, second) = signed.publish_signed("writing_assistant", "acme/pack", "1.1", Some(&signed.key), &[]);

    // Its own tag has not moved; add names the command that moves it.
    assert_eq!(site.ok("update", &["pack"]).trim(), format!("pack: up to date ({first})"));
    let refused = site.refused("add", &[&new, "--name", "pack"]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: a plugin named \"pack\" is already installed ({}): `prompt-host update pack --to REFERENCE` moves it to another \
             reference, in one step, with the same checks as add",
            site.path("packs").join("pack.wasm").display()
        )
    );
    // --to without a name is refused before anything is fetched.
    let unnamed = site.run("update", &["--to", &new]);
    let said = String::from_utf8_lossy(&unnamed.stderr);
    assert_eq!(unnamed.status.code(), Some(2), "{said}");
    assert!(said.starts_with("error: the following required arguments were not provided:\n  <NAME>"), "{said}");

    // Moved under a connected client: the list is never empty, and it changes once.
    let mut server = Server::start(&["--config", &site.config()]);
    let before = server.list_all_names();
    assert!(!before.is_empty());
    let said = std::thread::scope(|scope| {
        let update = scope.spawn(|| site.ok("update", &["pack", "--to", &new]));
        while !update.is_finished() {
            let names = server.list_all_names();
            assert!(!names.is_empty(), "the server served no prompts while the pack moved");
        }
        update.join().unwrap()
    });
    // The last line (loading the pulled pack to read its version may log its compile first).
    let last = said.trim().lines().last().unwrap();
    assert!(last.starts_with(&format!("updated pack from {new} ({second}")) && last.ends_with(&format!("(was {first})")), "{said}");
    server.notification("notifications/prompts/list_changed");
    let mut after = server.list_all_names();
    after.sort();
    assert_eq!(after, vec!["draft_email", "translate"], "writing_assistant's prompts, where conformance's were: {before:?}");
    // Past the watcher's settling time, no second change was announced.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let more: Vec<Value> =
        server.drain_notifications().into_iter().filter(|n| n["method"] == "notifications/prompts/list_changed").collect();
    assert_eq!(more, Vec::<Value>::new());
    let lockfile = site.lockfile();
    assert!(lockfile.contains(&format!("reference = \"{new}\"\ndigest = \"{second}\"")), "{lockfile}");
    assert!(lockfile.contains(&format!("previous_digests = [\"{first}\"]")), "{lockfile}");

    // Back to the old tag is a rollback, refused as update refuses one.
    let back = site.refused("update", &["pack", "--to", &old]);
    assert_eq!(
        back.trim(),
        format!(
            "pack: not updated, the installed pack stays: {old} now names {first}, which pack was updated past (it has {second}): a \
             registry may be rolling it back; `prompt-host update pack --to {old} --allow-downgrade` installs it\nerror: 1 of 1 packs not updated"
        )
    );
    // An unsigned pack at another tag is refused as add refuses it.
    let unsigned = format!("{}:1.2", signed.registry.reference("acme/pack"));
    publish(site, "code_review", &unsigned);
    let refused = site.refused("update", &["pack", "--to", &unsigned]);
    assert!(
        refused
            .trim()
            .ends_with("signature refused: it has no signature, and the configuration requires one\nerror: 1 of 1 packs not updated")
            && refused.contains("pack: not updated, the installed pack stays: "),
        "{refused}"
    );
    assert!(site.lockfile().contains(&format!("reference = \"{new}\"")));

    // A pack the config pins by SHA-256 is not moved to another pack, which
    // serve would refuse: nothing is placed.
    let config = std::fs::read_to_string(site.path("prompt-host.toml")).unwrap();
    let pin = "0".repeat(64);
    std::fs::write(site.path("prompt-host.toml"), format!("{config}\n[plugins.pack]\nsha256 = \"{pin}\"\n")).unwrap();
    let (pinned_away, _) = signed.publish_signed("code_review", "acme/pack", "1.3", Some(&signed.key), &[]);
    let refused = site.refused("update", &["pack", "--to", &pinned_away]);
    let sha256 = sha256_of("code_review");
    assert_eq!(
        refused.trim(),
        format!(
            "pack: not updated, the installed pack stays: {pinned_away} is the pack of SHA-256 {sha256}, but the config pins pack \
             to {pin} ([plugins.pack] sha256), so serve would refuse it: change the pin there first\nerror: 1 of 1 packs not updated"
        )
    );
    assert!(site.lockfile().contains(&format!("reference = \"{new}\"")));

    // A pack the config pins by source is moved there, not with --to.
    std::fs::write(site.path("prompt-host.toml"), format!("{config}\n[plugins.pack]\nsource = \"{new}\"\n")).unwrap();
    let refused = site.refused("update", &["pack", "--to", &unsigned]);
    assert_eq!(
        refused.trim(),
        format!(
            "error: pack is installed from the config's source ([plugins.pack] source = \"{new}\"), which `serve` would put back: \
             change the source there instead of moving it with --to"
        )
    );
    assert!(site.lockfile().contains(&format!("reference = \"{new}\"")));
}

/// A proxy the environment names carries requests to registries elsewhere,
/// never one to a registry on this machine (with the credentials that go
/// over plain HTTP only there).
#[test]
fn a_proxy_in_the_environment_never_carries_a_request_to_a_registry_on_this_machine() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    // A proxy that counts the connections it gets, and answers none.
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let reached = Arc::new(AtomicUsize::new(0));
    let counted = reached.clone();
    std::thread::spawn(move || {
        for connection in proxy.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(connection);
        }
    });
    let proxies = [
        ("HTTP_PROXY", proxy_url.as_str()),
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("ALL_PROXY", proxy_url.as_str()),
        ("http_proxy", proxy_url.as_str()),
        ("https_proxy", proxy_url.as_str()),
        ("NO_PROXY", ""),
        ("no_proxy", ""),
    ];
    let site = Site::new("");
    let file = built_plugin("code_review");
    let reference = format!("{}:1.0", registry.reference("acme/code-review"));
    let published =
        prompt_host_with(&["publish", file.to_str().unwrap(), &reference, "--plain-http", "--config", &site.config()], &proxies);
    assert!(published.status.success(), "{}", String::from_utf8_lossy(&published.stderr));
    let added = prompt_host_with(&["add", &reference, "--plain-http", "--config", &site.config()], &proxies);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    assert_eq!(reached.load(Ordering::SeqCst), 0, "a request to the registry on this machine went through the proxy");
    // A registry elsewhere is reached through it (which here answers nothing).
    let elsewhere = prompt_host_with(&["add", "oci://registry.example:5000/acme/pack:1", "--config", &site.config()], &proxies);
    assert!(!elsewhere.status.success());
    assert!(reached.load(Ordering::SeqCst) > 0, "{}", String::from_utf8_lossy(&elsewhere.stderr));
}

#[test]
fn a_plain_http_registry_on_this_machine_is_reached_over_plain_http_as_docker_does_and_said_so_unless_plain_http_is_given() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    // No [registry] plain_http: HTTPS meets a registry that speaks plain HTTP.
    let site = Site::new("");
    let reference = format!("{}:1.0", registry.reference("acme/code-review"));
    let file = built_plugin("code_review");
    let notice = format!(
        "{} answered HTTPS in plain HTTP; it is on this machine, so it is reached over plain HTTP (as Docker does): list it \
         in [registry] plain_http, or pass --plain-http, to say so",
        registry.address
    );
    let published = site.run("publish", &[file.to_str().unwrap(), &reference]);
    let said = String::from_utf8_lossy(&published.stderr);
    assert!(published.status.success(), "{said}");
    assert!(said.contains(&notice), "{said}");
    let digest = String::from_utf8(published.stdout).unwrap().trim().to_string();

    // With --plain-http, the same without the notice.
    let said = site.ok("add", &[&reference, "--plain-http"]);
    assert!(!said.contains("answered HTTPS in plain HTTP"), "{said}");
    assert!(said.trim().starts_with(&format!("installed code-review from {reference} ({digest}, ")), "{said}");
    let key = storage.path().join("keys");
    let made = tool(&["keygen", "--out", key.to_str().unwrap()]);
    let by_digest = format!("{}@{digest}", registry.reference("acme/code-review"));
    let output = prompt_host(&["sign", &by_digest, "--key", made["private"].as_str().unwrap(), "--plain-http"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("answered HTTPS in plain HTTP"));
    assert_eq!(String::from_utf8(output.stdout).unwrap().trim(), digest);
    // update reaches the registries of the packs it updates: with the
    // notice, and with --plain-http without it.
    let said = site.ok("update", &[]);
    assert!(said.contains(&notice), "{said}");
    assert!(said.trim().ends_with(&format!("{notice}\ncode-review: up to date ({digest})")), "{said}");
    let said = site.ok("update", &["code-review", "--plain-http"]);
    assert_eq!(said.trim(), format!("code-review: up to date ({digest})"));
}

#[test]
fn add_replace_adopts_a_hand_copied_file_in_one_rename_that_a_running_server_sees_as_one_change() {
    let storage = tempfile::tempdir().unwrap();
    let registry = Registry::start(storage.path(), &[]);
    let site = Site::new(&plain(&registry));
    let reference = format!("{}:1", registry.reference("acme/adopted"));
    publish(&site, "dev_assistant", &reference);
    // A file of that name copied in by hand, served.
    std::fs::copy(built_plugin("code_review"), site.path("packs/adopted.wasm")).unwrap();
    let mut server = Server::start(&["--config", &site.config()]);
    assert_eq!(server.list_all_names(), ["code_review"]);

    // Without --replace: refused, naming the command that works; nothing changed.
    let refused = site.run("add", &[&reference]);
    assert_eq!(refused.status.code(), Some(1));
    let path = site.path("packs/adopted.wasm");
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        format!(
            "error: a plugin file {} is there, not installed from a registry (copied in by hand): `prompt-host add {reference} \
             --name adopted --replace` replaces it with the pack, in one rename (a running server swaps it, never serving neither)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(built_plugin("code_review")).unwrap());

    // With it: one rename, which the server sees as one change, never as a removal.
    let said = site.ok("add", &[&reference, "--replace"]);
    assert!(said.starts_with("installed adopted from "), "{said}");
    server.notification("notifications/prompts/list_changed");
    assert_eq!(server.list_all_names(), ["git-commit", "explain-code", "debug-error"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let more: Vec<Value> =
        server.drain_notifications().into_iter().filter(|n| n["method"] == "notifications/prompts/list_changed").collect();
    assert_eq!(more, Vec::<Value>::new(), "one list_changed only");
    assert!(!server.stderr().contains("plugin removed"), "{}", server.stderr());
    // Now from a registry: a second add is refused as installed, as before.
    let again = site.run("add", &[&reference, "--replace"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("is already installed"), "{}", String::from_utf8_lossy(&again.stderr));
}
