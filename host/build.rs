//! Builds the plugin workspace (`plugins/`) for `wasm32-wasip2` and bundles
//! the example packs into the binary, so that `prompt-host serve` with no
//! plugin directory serves them at once.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The example packs bundled into the binary, by crate file name.
const BUNDLED_PACKS: &[&str] = &["code_review", "dev_assistant", "media_prompts", "project_insights"];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap();
    let plugins = root.join("plugins");

    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    println!("cargo:rerun-if-changed={}", plugins.join("Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", plugins.join("Cargo.lock").display());
    // Not the whole plugins/ directory: its target/ changes with every build.
    for entry in fs::read_dir(&plugins).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && path.join("Cargo.toml").exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }

    build_plugins(&plugins);
    describe_build(root);

    let release = plugins.join("target/wasm32-wasip2/release");
    let mut bundled = String::from("&[\n");
    for pack in BUNDLED_PACKS {
        let path = release.join(format!("{pack}.wasm"));
        assert!(path.exists(), "the plugin build did not produce {}", path.display());
        bundled += &format!("    ({pack:?}, include_bytes!({:?})),\n", path.display().to_string());
    }
    bundled += "]\n";
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bundled_packs.rs");
    fs::write(out, bundled).unwrap();
}

fn build_plugins(plugins: &Path) {
    // The cargo on PATH (rustup's proxy, where there is one), not the one
    // building the host: the plugins build with the default toolchain, which
    // is the one `rustup target add wasm32-wasip2` equipped, even when the
    // host builds with another (cargo +nightly fuzz, say).
    let mut command = Command::new("cargo");
    command
        .args(["build", "--release", "--target", "wasm32-wasip2", "--manifest-path"])
        .arg(plugins.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(plugins.join("target"));
    // The host's own build settings (toolchain, flags, sanitizers) must not
    // leak into the guest build.
    const HOST_ONLY: &[&str] =
        &["RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOC", "RUSTFLAGS", "RUSTDOCFLAGS", "RUSTUP_TOOLCHAIN"];
    for (key, _) in env::vars() {
        if key.starts_with("CARGO_") && key != "CARGO_HOME" || HOST_ONLY.contains(&key.as_str()) {
            command.env_remove(key);
        }
    }
    // Build-script stdout is read as cargo directives; keep the nested build's output off it.
    command.stdout(std::process::Stdio::from(std::io::stderr()));
    let status = command.status().expect("failed to run cargo for the plugin workspace");
    if !status.success() {
        panic!(
            "building the plugin workspace failed; is the target installed? \
             Run `rustup target add wasm32-wasip2`, then \
             `cargo build --release --target wasm32-wasip2 --manifest-path plugins/Cargo.toml` to see the error"
        );
    }
}

/// Sets `PROMPT_HOST_BUILD` to what `prompt-host --version` reports besides
/// its own version: the wasmtime and rmcp versions it was built with (from
/// Cargo.lock) and the commit it was built from.
fn describe_build(root: &Path) {
    let lock_path = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let lock = fs::read_to_string(&lock_path).unwrap_or_default();
    let version_of = |name: &str| {
        let entry = format!("name = \"{name}\"\nversion = \"");
        lock.find(&entry).map(|start| &lock[start + entry.len()..]).and_then(|rest| rest.split('"').next()).unwrap_or("unknown").to_string()
    };
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(root)
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    // Rebuilt when HEAD moves: a new commit, or a checkout of another one.
    for file in ["HEAD", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", file]) {
            println!("cargo:rerun-if-changed={}", root.join(path).display());
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(&["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PROMPT_HOST_BUILD=wasmtime {}, rmcp {}, commit {commit}", version_of("wasmtime"), version_of("rmcp"));
}
