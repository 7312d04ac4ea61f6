"""The registry test tooling (tests/registry/registry_tool.py) against the real parts.

Runs without prompt-host: a real registry (Debian's docker-registry) over HTTP,
over TLS with a generated CA, and with basic auth; packs pushed by skopeo and
oras; cosign-format signatures pushed over the registry API. Everything is read
back with curl and checked with openssl, so the tooling is checked by tools
other than itself.
"""

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "registry" / "registry_tool.py"
sys.path.insert(0, str(TOOL.parent))
import registry_tool  # noqa: E402  (for the secretbox known answer)

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
PASSWORD = "correct horse"


def tool(*args, env=None):
    """Runs a subcommand and returns its JSON output."""
    result = subprocess.run(
        [sys.executable, str(TOOL), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(result.stdout)


class Registry:
    def __init__(self, tmp_path, tls=False, user=None, port=None):
        args = [sys.executable, str(TOOL), "serve", "--dir", str(tmp_path / "registry")]
        args += ["--tls"] if tls else []
        args += ["--user", user] if user else []
        args += ["--port", str(port)] if port else []
        self.user, self.scheme = user, "https" if tls else "http"
        # serve picks a free port before the registry binds it; should another
        # process take it meanwhile, the registry exits and a new port is tried.
        for _ in range(3):
            if self.start(args):
                return
        raise AssertionError("the registry did not start")

    def start(self, args):
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        started = json.loads(self.process.stdout.readline())
        assert started["pid"] == self.process.pid, "serve execs the registry in its own process"
        self.address, self.ca = started["address"], started["ca"]
        self.tool_flags = (["--tls-ca", self.ca] if self.ca else []) + (["--user", self.user] if self.user else [])
        host, port = self.address.split(":")
        for _ in range(400):
            if self.process.poll() is not None:
                return False
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"the registry at {self.address} does not accept connections")

    def curl(self, path, accept=OCI_MANIFEST, auth=True):
        """(status, headers, body) of a GET, by curl."""
        command = ["curl", "-sS", "-D", "-", "-H", f"Accept: {accept}"]
        command += ["--cacert", self.ca] if self.ca else []
        command += ["-u", self.user] if self.user and auth else []
        output = subprocess.run(
            [*command, f"{self.scheme}://{self.address}{path}"], check=True, capture_output=True
        ).stdout
        head, _, body = output.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        return int(lines[0].split()[1]), headers, body

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)


@pytest.fixture(params=["http", "tls"])
def registry(request, tmp_path):
    started = Registry(tmp_path, tls=request.param == "tls")
    yield started
    started.stop()


@pytest.fixture
def pack(tmp_path):
    path = tmp_path / "hello.wasm"
    # A component's header and arbitrary bytes: the tooling never parses it.
    path.write_bytes(b"\0asm\x0d\0\x01\0" + hashlib.sha256(b"pack").digest() * 100)
    return path


def manifest(registry, repo, reference):
    status, headers, body = registry.curl(f"/v2/{repo}/manifests/{reference}")
    assert status == 200, body
    assert headers["content-type"] == OCI_MANIFEST
    assert headers["docker-content-digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    return json.loads(body)


def blob(registry, repo, digest):
    status, _, body = registry.curl(f"/v2/{repo}/blobs/{digest}", accept="*/*")
    assert status == 200
    assert "sha256:" + hashlib.sha256(body).hexdigest() == digest
    return body


def assert_wasm_artifact(registry, repo, reference, pack):
    found = manifest(registry, repo, reference)
    assert found["mediaType"] == OCI_MANIFEST
    assert found["config"]["mediaType"] == "application/vnd.wasm.config.v0+json"
    assert [layer["mediaType"] for layer in found["layers"]] == ["application/wasm"]
    assert blob(registry, repo, found["layers"][0]["digest"]) == pack.read_bytes()
    config = json.loads(blob(registry, repo, found["config"]["digest"]))
    assert config["architecture"] == "wasm" and config["os"] == "wasip2"
    assert config["layerDigests"] == [found["layers"][0]["digest"]]
    assert config["component"]["exports"] == ["prompt-host:prompts/prompt-provider@0.1.0"]
    return found


def test_skopeo_pushes_the_layout_unchanged(registry, pack, tmp_path):
    layout = tool("layout", "--wasm", str(pack), "--out", str(tmp_path / "layout"),
                  "--annotation", "org.opencontainers.image.version=1.0.0")
    pushed = tool("push-skopeo", "--layout", layout["layout"], "--ref", f"{registry.address}/packs/hello:1.0",
                  *registry.tool_flags)
    assert pushed["manifest_digest"] == layout["manifest_digest"]
    found = assert_wasm_artifact(registry, "packs/hello", "1.0", pack)
    assert found["annotations"] == {"org.opencontainers.image.version": "1.0.0"}
    assert manifest(registry, "packs/hello", layout["manifest_digest"]) == found


def test_oras_pushes_the_cncf_layout(registry, pack):
    pushed = tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/packs/oras:2.0", *registry.tool_flags)
    found = assert_wasm_artifact(registry, "packs/oras", "2.0", pack)
    assert found["layers"][0]["annotations"] == {"org.opencontainers.image.title": "hello.wasm"}
    status, headers, _ = registry.curl("/v2/packs/oras/manifests/2.0")
    assert headers["docker-content-digest"] == pushed["manifest_digest"]


def openssl_verifies(public_key, payload, signature_b64, tmp_path):
    (tmp_path / "payload").write_bytes(payload)
    (tmp_path / "signature").write_bytes(base64.b64decode(signature_b64))
    result = subprocess.run(
        ["openssl", "dgst", "-sha256", "-verify", str(public_key), "-signature",
         str(tmp_path / "signature"), str(tmp_path / "payload")],
        capture_output=True, text=True,
    )
    return result.returncode == 0 and result.stdout.strip() == "Verified OK"


def signature_layers(registry, repo, digest):
    tag = digest.replace(":", "-") + ".sig"
    found = manifest(registry, repo, tag)
    assert found["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
    config = json.loads(blob(registry, repo, found["config"]["digest"]))
    assert config["rootfs"]["diff_ids"] == [layer["digest"] for layer in found["layers"]]
    for layer in found["layers"]:
        assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    return [(blob(registry, repo, layer["digest"]), layer["annotations"]) for layer in found["layers"]]


def test_cosign_key_signature_verifies_with_openssl(registry, pack, tmp_path):
    keys = tool("keygen", "--out", str(tmp_path / "keys"), env={"COSIGN_PASSWORD": PASSWORD})
    assert (tmp_path / "keys" / "cosign.key").read_text().startswith("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    pushed = tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/packs/signed:1", *registry.tool_flags)
    digest = pushed["manifest_digest"]
    signed = tool("sign", "--registry", registry.address, "--repo", "packs/signed", "--digest", digest,
                  "--key", keys["cosign_key"], *registry.tool_flags, env={"COSIGN_PASSWORD": PASSWORD})
    assert signed["tag"] == digest.replace(":", "-") + ".sig"

    [(payload, annotations)] = signature_layers(registry, "packs/signed", digest)
    assert payload == (
        '{"critical":{"identity":{"docker-reference":"%s/packs/signed"},"image":{"docker-manifest-digest":"%s"},'
        '"type":"cosign container image signature"},"optional":null}' % (registry.address, digest)
    ).encode()
    assert list(annotations) == ["dev.cosignproject.cosign/signature"]
    assert openssl_verifies(keys["public"], payload, annotations["dev.cosignproject.cosign/signature"], tmp_path)

    # Refusal material: a corrupted signature (appended as a second layer) and
    # a payload naming another digest, each still well formed.
    tool("sign", "--registry", registry.address, "--repo", "packs/signed", "--digest", digest,
         "--key", keys["private"], "--corrupt", "--append", *registry.tool_flags)
    [first, (corrupt_payload, corrupt)] = signature_layers(registry, "packs/signed", digest)
    assert first == (payload, annotations)
    assert corrupt_payload == payload
    assert not openssl_verifies(keys["public"], payload, corrupt["dev.cosignproject.cosign/signature"], tmp_path)

    tool("sign", "--registry", registry.address, "--repo", "packs/signed", "--digest", digest,
         "--key", keys["private"], "--wrong-digest", *registry.tool_flags)
    [(wrong_payload, wrong)] = signature_layers(registry, "packs/signed", digest)
    assert json.loads(wrong_payload)["critical"]["image"]["docker-manifest-digest"] != digest
    assert openssl_verifies(keys["public"], wrong_payload, wrong["dev.cosignproject.cosign/signature"], tmp_path)


def test_basic_auth_registry(tmp_path, pack):
    registry = Registry(tmp_path, tls=True, user="alice:s3cret")
    try:
        assert registry.curl("/v2/", auth=False)[0] == 401
        assert registry.curl("/v2/")[0] == 200
        layout = tool("layout", "--wasm", str(pack), "--out", str(tmp_path / "layout"))
        tool("push-skopeo", "--layout", layout["layout"], "--ref", f"{registry.address}/private/pack:1",
             *registry.tool_flags)
        tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/private/oras:1", *registry.tool_flags)
        assert_wasm_artifact(registry, "private/pack", "1", pack)
        assert_wasm_artifact(registry, "private/oras", "1", pack)
    finally:
        registry.stop()


def test_a_restarted_registry_keeps_its_content_and_ca(tmp_path, pack):
    registry = Registry(tmp_path, tls=True)
    pushed = tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/packs/kept:1", *registry.tool_flags)
    ca = Path(registry.ca).read_bytes()
    registry.stop()
    with pytest.raises(subprocess.CalledProcessError):
        registry.curl("/v2/")  # down: the connection is refused
    restarted = Registry(tmp_path, tls=True, port=int(registry.address.split(":")[1]))
    try:
        assert restarted.address == registry.address and Path(restarted.ca).read_bytes() == ca
        assert assert_wasm_artifact(restarted, "packs/kept", pushed["manifest_digest"], pack)
    finally:
        restarted.stop()


def test_keyless_certificate_and_bundle(tmp_path, pack):
    registry = Registry(tmp_path)
    try:
        ca = tool("keyless-ca", "--out", str(tmp_path / "keyless"), "--identity", "dev@example.com",
                  "--issuer", "https://issuer.example.com")
        verify = subprocess.run(["openssl", "verify", "-CAfile", ca["ca"], ca["cert"]], capture_output=True, text=True)
        assert verify.stdout.strip() == f"{ca['cert']}: OK"
        text = subprocess.run(["openssl", "x509", "-in", ca["cert"], "-noout", "-text"],
                              check=True, capture_output=True, text=True).stdout
        assert "email:dev@example.com" in text and "Code Signing" in text
        assert "1.3.6.1.4.1.57264.1.1: \n                https://issuer.example.com" in text

        root = json.loads(Path(ca["trusted_root"]).read_text())
        assert base64.b64decode(root["tlogs"][0]["logId"]["keyId"]).hex() == ca["rekor_log_id"]

        digest = tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/packs/keyless:1")["manifest_digest"]
        tool("sign", "--registry", registry.address, "--repo", "packs/keyless", "--digest", digest, "--key", ca["key"],
             "--cert", ca["cert"], "--chain", ca["ca"], "--rekor-key", ca["rekor_key"])
        [(payload, annotations)] = signature_layers(registry, "packs/keyless", digest)
        assert annotations["dev.sigstore.cosign/certificate"] == Path(ca["cert"]).read_text()
        assert annotations["dev.sigstore.cosign/chain"] == Path(ca["ca"]).read_text()
        subprocess.run(["openssl", "x509", "-in", ca["cert"], "-pubkey", "-noout", "-out", str(tmp_path / "leaf.pub")],
                       check=True)
        assert openssl_verifies(tmp_path / "leaf.pub", payload, annotations["dev.cosignproject.cosign/signature"], tmp_path)

        bundle = json.loads(annotations["dev.sigstore.cosign/bundle"])
        assert bundle["Payload"]["logID"] == ca["rekor_log_id"]
        set_payload = json.dumps(bundle["Payload"], sort_keys=True, separators=(",", ":")).encode()
        assert openssl_verifies(ca["rekor_pub"], set_payload, bundle["SignedEntryTimestamp"], tmp_path)
    finally:
        registry.stop()


def test_keyless_ca_embeds_an_sct_and_rotates_intermediates(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    ca = tool("keyless-ca", "--out", str(tmp_path / "rotated"), "--identity", "dev@example.com",
              "--issuer", "https://issuer.example.com", "--intermediate", "retired")
    verify = subprocess.run(["openssl", "verify", "-CAfile", ca["ca"], "-untrusted", ca["chain"], ca["cert"]],
                            capture_output=True, text=True)
    assert verify.stdout.strip() == f"{ca['cert']}: OK"
    root = json.loads(Path(ca["trusted_root"]).read_text())
    retired, current = root["certificateAuthorities"]
    assert retired["validFor"]["end"] == current["validFor"]["start"] and "end" not in current["validFor"]
    # The leaf's issuer is the retired entry's intermediate; both entries end at the same root.
    leaf = x509.load_pem_x509_certificate(Path(ca["cert"]).read_bytes())
    first = lambda entry: x509.load_der_x509_certificate(base64.b64decode(entry["certChain"]["certificates"][0]["rawBytes"]))
    assert first(retired).subject == leaf.issuer != first(current).subject
    assert retired["certChain"]["certificates"][1] == current["certChain"]["certificates"][1]

    # The SCT: by the trusted root's CT log, over the precertificate as cryptography
    # (not the tool) rebuilds it, checked by openssl.
    [sct] = leaf.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value
    ctlog = root["ctlogs"][0]
    assert sct.log_id == base64.b64decode(ctlog["logId"]["keyId"])
    issuer = first(retired)
    issuer_key_hash = hashlib.sha256(
        issuer.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    ).digest()
    tbs = leaf.tbs_precertificate_bytes
    timestamp = int(sct.timestamp.replace(tzinfo=__import__("datetime").timezone.utc).timestamp() * 1000)
    signed = (b"\x00\x00" + timestamp.to_bytes(8, "big") + b"\x00\x01" + issuer_key_hash
              + len(tbs).to_bytes(3, "big") + tbs + b"\x00\x00")
    (tmp_path / "ctlog.der").write_bytes(base64.b64decode(ctlog["publicKey"]["rawBytes"]))
    subprocess.run(["openssl", "pkey", "-pubin", "-inform", "DER", "-in", str(tmp_path / "ctlog.der"),
                    "-out", str(tmp_path / "ctlog.pem")], check=True)
    signature = base64.b64encode(sct.signature).decode()
    assert openssl_verifies(tmp_path / "ctlog.pem", signed, signature, tmp_path)
    assert not openssl_verifies(tmp_path / "ctlog.pem", signed + b"x", signature, tmp_path)

    none = tool("keyless-ca", "--out", str(tmp_path / "none"), "--identity", "dev@example.com",
                "--issuer", "https://issuer.example.com", "--sct", "none")
    leaf = x509.load_pem_x509_certificate(Path(none["cert"]).read_bytes())
    with pytest.raises(x509.ExtensionNotFound):
        leaf.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps)


def sigstore_bundle(*args, env=None):
    """Runs `bundle` and returns (its JSON output, the bundle written)."""
    made = tool("bundle", *args, env=env)
    bundle = json.loads(Path(made["bundle"]).read_text())
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert list(bundle) == ["mediaType", "verificationMaterial", "messageSignature"]
    assert bundle["messageSignature"]["messageDigest"]["algorithm"] == "SHA2_256"
    digest = base64.b64decode(bundle["messageSignature"]["messageDigest"]["digest"])
    assert made["digest"] == "sha256:" + digest.hex()
    return made, bundle


def der(command, path):
    """A PEM file's DER, by openssl (`x509` or `pkey -pubin`)."""
    return subprocess.run(["openssl", *command, "-in", str(path), "-outform", "DER"],
                          check=True, capture_output=True).stdout


def test_sigstore_bundle_with_a_key(tmp_path, pack):
    keys = tool("keygen", "--out", str(tmp_path / "keys"), env={"COSIGN_PASSWORD": PASSWORD})
    made, bundle = sigstore_bundle("--wasm", str(pack), "--key", keys["cosign_key"], env={"COSIGN_PASSWORD": PASSWORD})
    assert made["bundle"] == str(pack) + ".sigstore.json" and made["log_id"] is None
    assert made["digest"] == "sha256:" + hashlib.sha256(pack.read_bytes()).hexdigest()
    spki = der(["pkey", "-pubin"], keys["public"])
    assert bundle["verificationMaterial"] == {
        "publicKey": {"hint": base64.b64encode(hashlib.sha256(spki).digest()).decode()},
        "tlogEntries": [],
    }
    signature = bundle["messageSignature"]["signature"]
    assert openssl_verifies(keys["public"], pack.read_bytes(), signature, tmp_path)

    _, corrupt = sigstore_bundle("--wasm", str(pack), "--key", keys["private"], "--corrupt",
                                 "--out", str(tmp_path / "corrupt.json"))
    assert corrupt["messageSignature"]["messageDigest"] == bundle["messageSignature"]["messageDigest"]
    assert not openssl_verifies(keys["public"], pack.read_bytes(), corrupt["messageSignature"]["signature"], tmp_path)

    other = tmp_path / "other.wasm"
    other.write_bytes(b"\0asm\x0d\0\x01\0another pack")
    made, elsewhere = sigstore_bundle("--wasm", str(pack), "--key", keys["private"], "--other-file", str(other))
    assert made["bundle"] == str(pack) + ".sigstore.json"
    assert made["digest"] == "sha256:" + hashlib.sha256(other.read_bytes()).hexdigest()
    assert not openssl_verifies(keys["public"], pack.read_bytes(), elsewhere["messageSignature"]["signature"], tmp_path)
    assert openssl_verifies(keys["public"], other.read_bytes(), elsewhere["messageSignature"]["signature"], tmp_path)


def test_sigstore_bundle_keyless(tmp_path, pack):
    ca = tool("keyless-ca", "--out", str(tmp_path / "keyless"), "--identity", "dev@example.com",
              "--issuer", "https://issuer.example.com")
    subprocess.run(["openssl", "x509", "-in", ca["cert"], "-pubkey", "-noout", "-out", str(tmp_path / "leaf.pub")],
                   check=True)
    keyless = ["--key", ca["key"], "--cert", ca["cert"], "--rekor-key", ca["rekor_key"]]
    made, bundle = sigstore_bundle("--wasm", str(pack), *keyless, "--log-index", "42", "--integrated-time", "1700000000")
    assert made["log_id"] == ca["rekor_log_id"]
    material = bundle["verificationMaterial"]
    assert list(material) == ["certificate", "tlogEntries"]
    assert base64.b64decode(material["certificate"]["rawBytes"]) == der(["x509"], ca["cert"])
    signature = bundle["messageSignature"]["signature"]
    assert openssl_verifies(tmp_path / "leaf.pub", pack.read_bytes(), signature, tmp_path)

    def check_entry(bundle):
        """The entry's SET verifies with rekor.pub; returns the hashedrekord body."""
        [entry] = bundle["verificationMaterial"]["tlogEntries"]
        assert set(entry) == {"logIndex", "logId", "kindVersion", "integratedTime", "inclusionPromise",
                              "canonicalizedBody"}
        assert entry["kindVersion"] == {"kind": "hashedrekord", "version": "0.0.1"}
        assert base64.b64decode(entry["logId"]["keyId"]).hex() == ca["rekor_log_id"]
        set_payload = json.dumps({"body": entry["canonicalizedBody"], "integratedTime": int(entry["integratedTime"]),
                                  "logID": ca["rekor_log_id"], "logIndex": int(entry["logIndex"])},
                                 sort_keys=True, separators=(",", ":")).encode()
        assert openssl_verifies(ca["rekor_pub"], set_payload, entry["inclusionPromise"]["signedEntryTimestamp"],
                                tmp_path)
        raw = base64.b64decode(entry["canonicalizedBody"])
        body = json.loads(raw)
        assert raw == json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        assert body["apiVersion"] == "0.0.1" and body["kind"] == "hashedrekord"
        assert body["spec"]["signature"]["content"] == bundle["messageSignature"]["signature"]
        assert base64.b64decode(body["spec"]["signature"]["publicKey"]["content"]) == Path(ca["cert"]).read_bytes()
        assert body["spec"]["data"]["hash"]["algorithm"] == "sha256"
        return entry, body

    entry, body = check_entry(bundle)
    assert (entry["logIndex"], entry["integratedTime"]) == ("42", "1700000000")
    assert body["spec"]["data"]["hash"]["value"] == hashlib.sha256(pack.read_bytes()).hexdigest()
    # The SET signs exactly that payload: another logIndex does not verify.
    forged = json.dumps({"body": entry["canonicalizedBody"], "integratedTime": 1700000000,
                         "logID": ca["rekor_log_id"], "logIndex": 43}, sort_keys=True, separators=(",", ":")).encode()
    assert not openssl_verifies(ca["rekor_pub"], forged, entry["inclusionPromise"]["signedEntryTimestamp"], tmp_path)

    # --corrupt: the signature (and the body recording it) no longer verifies over the pack.
    _, corrupt = sigstore_bundle("--wasm", str(pack), *keyless, "--corrupt", "--out", str(tmp_path / "corrupt.json"))
    check_entry(corrupt)
    assert not openssl_verifies(tmp_path / "leaf.pub", pack.read_bytes(), corrupt["messageSignature"]["signature"],
                                tmp_path)

    # --other-file: a consistent bundle, but for OTHER's bytes.
    other = tmp_path / "other.wasm"
    other.write_bytes(b"\0asm\x0d\0\x01\0another pack")
    made, elsewhere = sigstore_bundle("--wasm", str(pack), *keyless, "--other-file", str(other),
                                      "--out", str(tmp_path / "other.json"))
    _, other_body = check_entry(elsewhere)
    assert other_body["spec"]["data"]["hash"]["value"] == hashlib.sha256(other.read_bytes()).hexdigest()
    assert made["digest"] != "sha256:" + hashlib.sha256(pack.read_bytes()).hexdigest()
    assert not openssl_verifies(tmp_path / "leaf.pub", pack.read_bytes(), elsewhere["messageSignature"]["signature"],
                                tmp_path)
    assert openssl_verifies(tmp_path / "leaf.pub", other.read_bytes(), elsewhere["messageSignature"]["signature"],
                            tmp_path)


def test_blob_liar_serves_wrong_bytes_and_oversized_manifests(tmp_path, pack):
    registry = Registry(tmp_path)
    liar = None
    try:
        pushed = tool("push-oras", "--wasm", str(pack), "--ref", f"{registry.address}/packs/lie:1")
        layer = manifest(registry, "packs/lie", "1")["layers"][0]["digest"]
        liar = subprocess.Popen([sys.executable, str(TOOL), "serve-blob-liar", "--upstream", registry.address,
                                 "--corrupt-blob", layer, "--pad-manifest", "100000"],
                                stdout=subprocess.PIPE, text=True)
        address = json.loads(liar.stdout.readline())["address"]

        def get(path):
            return subprocess.run(["curl", "-sS", "-H", f"Accept: {OCI_MANIFEST}", f"http://{address}{path}"],
                                  check=True, capture_output=True).stdout

        lied = get(f"/v2/packs/lie/blobs/{layer}")
        assert len(lied) == len(pack.read_bytes()) and lied != pack.read_bytes()
        padded = get("/v2/packs/lie/manifests/1")
        assert len(padded) > 100000 and json.loads(padded)["layers"][0]["digest"] == layer
        assert "sha256:" + hashlib.sha256(padded).hexdigest() != pushed["manifest_digest"]
    finally:
        if liar:
            liar.terminate()
            liar.wait(timeout=10)
        registry.stop()


def test_secretbox_known_answer():
    # Computed by libsodium's crypto_secretbox_easy: cosign.key's cipher must match NaCl's.
    sealed = registry_tool.secretbox_seal(bytes(range(32)), bytes(range(24)), b"prompt-host secretbox known answer")
    assert sealed.hex() == (
        "82b3e5d30cb6b9f84beb339e8bfe11342e8d5722b7be8f78d44ffb1e1bea29e537d124b0f405548178d509b434a9d296e6a9"
    )
