"""The deployment files docs/deploy.md shows, validated by the tools that
read them: the systemd unit by `systemd-analyze verify`, the Kubernetes
manifests as `kubectl kustomize` renders the team overlay over the base
(docs/deploy/kubernetes/), against Kubernetes' schemas (kubernetes-validate,
offline, strict: an unknown field fails), the config they carry by
prompt-host itself, and each for the fields an operator relies on.
(docs/deploy/nginx.conf is served by nginx in tests/python/test_replicas.py.)"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from server import BINARY, ROOT

DEPLOY = ROOT / "docs/deploy"
# The oldest Kubernetes the manifests are for: the preStop sleep action is on
# by default from 1.30.
KUBERNETES = "1.30.0"


KUSTOMIZE = DEPLOY / "kubernetes"
OVERLAY = KUSTOMIZE / "overlays/team"


def manifests() -> dict[str, dict]:
    """The team overlay as `kubectl kustomize` renders it, by kind."""
    assert shutil.which("kubectl"), "kubectl is not installed: run tests/setup"
    rendered = subprocess.run(["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True)
    assert rendered.returncode == 0, rendered.stderr
    documents = list(yaml.safe_load_all(rendered.stdout))
    found = {document["kind"]: document for document in documents}
    assert len(found) == len(documents), "one manifest of each kind"
    return found


def arguments(args: list[str]) -> dict[str, str | None]:
    """`--name=value` and `--flag` arguments, by name."""
    return dict((arg.split("=", 1) + [None])[:2] for arg in args if arg.startswith("--"))


def test_the_kubernetes_manifests_are_valid_for_kubernetes():
    found = manifests()
    assert set(found) == {"ConfigMap", "Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget",
                          "HorizontalPodAutoscaler"}
    for kind, manifest in found.items():
        # The overlay's namespace, on everything.
        assert manifest["metadata"]["namespace"] == "team-prompts", kind
        # Raises kubernetes_validate.ValidationError, naming the field.
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
    with pytest.raises(kubernetes_validate.ValidationError):
        deployment = manifests()["Deployment"]
        deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSecond"] = 2
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_the_deployment_probes_drains_and_is_scraped_as_documented():
    found = manifests()
    deployment, config, service = found["Deployment"], found["ConfigMap"], found["Service"]
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    args = arguments(container["args"])
    assert container["args"][0] == "serve"
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert args["--http"] == f"0.0.0.0:{ports['mcp']}" and "--allow-remote" in args
    assert args["--metrics"] == f"0.0.0.0:{ports['metrics']}" and "--metrics-allow-remote" in args

    # Ready once the packs have loaded; alive while the process serves. One
    # missed probe takes no replica out of service.
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["failureThreshold"] >= 3 and container["livenessProbe"]["failureThreshold"] >= 3
    # Only Prometheus's namespace reaches the metrics port; anyone the MCP port.
    policy = found["NetworkPolicy"]
    assert policy["spec"]["podSelector"] == deployment["spec"]["selector"]
    assert policy["spec"]["ingress"] == [
        {"ports": [{"port": "mcp"}]},
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
         "ports": [{"port": "metrics"}]},
    ]
    assert pod["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(ports["metrics"]),
        "prometheus.io/path": "/metrics",
    }

    # A rolling update never takes a replica away before its successor is
    # ready; a drain takes one at a time; the autoscaler keeps at least three.
    assert deployment["spec"]["replicas"] >= 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    # The preStop sleep and the default --shutdown-grace-ms (10 s) end before
    # Kubernetes kills.
    assert "--shutdown-grace-ms" not in args
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] + 10 < pod["spec"]["terminationGracePeriodSeconds"]

    budget, scaler = found["PodDisruptionBudget"], found["HorizontalPodAutoscaler"]
    assert budget["spec"] == {"maxUnavailable": 1, "selector": deployment["spec"]["selector"]}
    assert scaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                "name": deployment["metadata"]["name"]}
    assert scaler["spec"]["minReplicas"] == deployment["spec"]["replicas"] == 3
    assert container["image"] == "registry.example.com/prompt-host:0.1.0"

    # The plugin directory is an emptyDir the config's sources install into,
    # where the config file says; the config is the overlay's, generated.
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert "emptyDir" in volumes["packs"]
    assert volumes["config"]["configMap"]["name"] == config["metadata"]["name"]
    assert config["metadata"]["name"].startswith("prompt-host-config-")
    assert args["--config"] == f"{mounts['config']}/config.toml"
    toml = config["data"]["config.toml"]
    assert f'plugins = "{mounts["packs"]}/plugins"' in toml
    assert 'update_interval = "60s"' in toml
    assert config["data"]["acme.pub"].startswith("-----BEGIN PUBLIC KEY-----")
    assert f'cache_dir = "{mounts["cache"]}"' in toml
    assert "emptyDir" in volumes["cache"]
    # Every replica opens what another sealed: one key, from a Secret.
    assert f'request_state_key_file = "{mounts["state-key"]}/state.key"' in toml
    assert "secret" in volumes["state-key"]
    assert args["--auth-token-file"] == f"{mounts['token']}/token" and "secret" in volumes["token"]

    assert service["spec"]["selector"] == pod["metadata"]["labels"]
    # Any pod serves any session: no affinity.
    assert "sessionAffinity" not in service["spec"]
    assert service["spec"]["ports"][0]["targetPort"] == "mcp"


def test_the_config_the_overlay_carries_is_one_prompt_host_reads(tmp_path):
    config = manifests()["ConfigMap"]["data"]
    for name, text in config.items():
        (tmp_path / name).write_text(text)
    # Where the pod mounts its packs, a folder of the test's.
    (tmp_path / "packs").mkdir()
    toml = config["config.toml"].replace('"/var/lib/prompt-host/plugins"', f'"{tmp_path / "packs"}"')
    (tmp_path / "config.toml").write_text(toml)
    listed = subprocess.run([BINARY, "list", "--json", "--config", str(tmp_path / "config.toml")],
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    # And one it could not read fails: the check can fail.
    (tmp_path / "config.toml").write_text(toml.replace('"60s"', '"60 seconds"'))
    listed = subprocess.run([BINARY, "list", "--json", "--config", str(tmp_path / "config.toml")],
                            capture_output=True, text=True)
    assert listed.returncode == 1 and "server.update_interval" in listed.stderr, listed.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (tests/setup installs it)")
def test_the_systemd_unit_verifies(tmp_path):
    text = (DEPLOY / "prompt-host@.service").read_text()
    # Verified with the binary this checkout built where the unit expects it.
    assert text.count("/usr/local/bin/prompt-host ") == 1
    (tmp_path / "prompt-host@.service").write_text(text.replace("/usr/local/bin/prompt-host ", f"{BINARY} "))
    verified = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "prompt-host@1.service")],
                              capture_output=True, text=True, cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert "prompt-host@" not in verified.stderr, verified.stderr


def test_the_systemd_unit_serves_what_nginx_expects():
    text = (DEPLOY / "prompt-host@.service").read_text()
    nginx = (DEPLOY / "nginx.conf").read_text()
    exec_start = re.search(r"^ExecStart=((?:.*\\\n)*.*)$", text, re.MULTILINE).group(1).replace("\\\n", " ").split()
    args = dict(zip(exec_start, exec_start[1:]))
    assert exec_start[1] == "serve"
    # Instances 1 to 3 are the replicas nginx.conf names.
    assert args["--http"] == "127.0.0.1:808%i"
    assert re.findall(r"server 127\.0\.0\.1:(\d+);", nginx) == ["8081", "8082", "8083"]
    assert args["--metrics"] == "127.0.0.1:946%i"
    assert args["--allow-host"] in nginx  # the server_name nginx passes on as Host
    # systemd waits longer than the default --shutdown-grace-ms (10 s) before it kills.
    assert "--shutdown-grace-ms" not in exec_start
    assert int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.MULTILINE).group(1)) > 10
    assert re.search(r"^KillSignal=SIGTERM$", text, re.MULTILINE)


@pytest.mark.parametrize("name, language", [("nginx.conf", "nginx"), ("prompt-host@.service", "ini"),
                                            ("kubernetes/overlays/team/kustomization.yaml", "yaml"),
                                            ("kubernetes/overlays/team/config.toml", "toml")])
def test_docs_deploy_md_shows_each_file_as_it_is(name, language):
    page = (ROOT / "docs/deploy.md").read_text()
    assert f"```{language}\n{(DEPLOY / name).read_text()}```\n" in page, f"docs/deploy.md does not show docs/deploy/{name} as it is"


# What gcr.io/distroless/cc-debian12 holds of the libraries a binary may
# link: glibc's and libgcc's. The Dockerfile puts the binary on that image.
DISTROLESS_CC_LIBRARIES = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                           "ld-linux-x86-64.so.2", "linux-vdso.so.1"}


def linked_libraries(binary: str) -> dict[str, str]:
    """The shared libraries `binary` links, by name, and where ldd finds them."""
    found = {}
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        path = next((part for part in parts if part.startswith("/")), None)
        found[Path(parts[0]).name] = path
    return found


def test_the_dockerfile_builds_the_release_binary_onto_distroless_cc_as_user_65532():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "RUN cargo build --release --locked -p prompt-host" in dockerfile
    assert "FROM gcr.io/distroless/cc-debian12:nonroot" in dockerfile
    assert "USER 65532:65532" in dockerfile
    assert 'ENTRYPOINT ["/usr/local/bin/prompt-host"]' in dockerfile
    # The manifest runs that user, with a read-only root file system.
    deployment = manifests()["Deployment"]
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 65532
    assert deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_binary_needs_only_what_the_image_holds_and_serves_as_user_65532_in_a_root_of_only_that(tmp_path):
    """No container daemon here: the image's root, built by hand from the
    files distroless cc holds that the binary links, read-only to the user
    the image runs as; the bundled packs served over stdio there."""
    libraries = linked_libraries(BINARY)
    assert set(libraries) <= DISTROLESS_CC_LIBRARIES, f"links what the image lacks: {set(libraries) - DISTROLESS_CC_LIBRARIES}"
    if os.geteuid() != 0:
        pytest.skip("chroot needs root: run the tests as root, as CI does")
    root = tmp_path / "root"
    (root / "usr/local/bin").mkdir(parents=True)
    shutil.copy(BINARY, root / "usr/local/bin/prompt-host")
    for path in filter(None, libraries.values()):
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    (root / "etc").mkdir()
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
    cache = root / "cache"
    cache.mkdir()
    os.chown(cache, 65532, 65532)
    # Nothing else is writable by the user: the root is the image's, read-only to it.
    os.chmod(root, 0o755)
    session = "\n".join(json.dumps(message) for message in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "image-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "code_review", "arguments": {"code": "x"}}},
    ]) + "\n"
    served = subprocess.run(
        [shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin"), "--userspec=65532:65532", str(root), "/usr/local/bin/prompt-host", "serve", "--cache-dir=/cache"],
        input=session, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/local/bin"},
    )
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert [answer.get("id") for answer in answers] == [1, 2], served.stdout + served.stderr
    assert answers[1]["result"]["messages"][0]["content"]["text"] == "Please review this Python code:\nx"
    # The compiled cache went to /cache, and nothing else was written.
    assert any(cache.rglob("*")), served.stderr
    assert sorted(p.name for p in root.iterdir()) == ["cache", "etc", "lib", "lib64", "usr"] or \
        sorted(p.name for p in root.iterdir()) == ["cache", "etc", "lib", "usr"], list(root.iterdir())
