#!/usr/bin/env python3
"""Test tooling for prompt-host's registry tests: starts and feeds real parts.

Everything here is independent of prompt-host, so what the host verifies was
made by other code: a real registry (Debian's docker-registry, the CNCF
distribution registry), packs pushed by skopeo and by oras, and cosign-format
signatures made with Python's `cryptography`.

Each subcommand prints its result as JSON on stdout (`serve` prints one line,
then becomes the registry). Run with tests/.venv/bin/python; see `--help` of
each subcommand.
"""

import argparse
import base64
import datetime
import hashlib
import http.server
import json
import os
import shutil
import socket
import ipaddress
import secrets
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.poly1305 import Poly1305
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REGISTRY_BINARY = "/usr/bin/docker-registry"

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_IMAGE_CONFIG = "application/vnd.oci.image.config.v1+json"
WASM_CONFIG = "application/vnd.wasm.config.v0+json"
WASM_LAYER = "application/wasm"
SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"

COSIGN_SIGNATURE = "dev.cosignproject.cosign/signature"
COSIGN_CERTIFICATE = "dev.sigstore.cosign/certificate"
COSIGN_CHAIN = "dev.sigstore.cosign/chain"
COSIGN_BUNDLE = "dev.sigstore.cosign/bundle"

# Fulcio's certificate extensions: the issuer as raw bytes (v1) and as a DER UTF8String (v2).
FULCIO_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
FULCIO_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
FULCIO_SOURCE_REPOSITORY = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
FULCIO_SOURCE_REF = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.14")
FULCIO_BUILD_CONFIG = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.18")

# The prompt-pack world's export, written into the wasm config by default.
DEFAULT_EXPORT = "prompt-host:prompts/prompt-provider@0.1.0"


def emit(result):
    print(json.dumps(result), flush=True)


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(value):
    """Compact JSON with sorted keys: the RFC 8785 form for the plain values used here."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_file(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def parse_user(user):
    name, sep, password = (user or "").partition(":")
    if user and not sep:
        sys.exit("--user must be USER:PASSWORD")
    return (name, password) if user else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def pem_cert(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_private(key):
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def pem_public(key):
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def make_cert(subject_cn, key, issuer_cert, issuer_key, not_before, not_after, extensions, serial=None):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]) if subject_cn else x509.Name([])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_cert.subject if issuer_cert else name)
        .public_key(key.public_key())
        .serial_number(serial or x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    for ext, critical in extensions:
        builder = builder.add_extension(ext, critical=critical)
    return builder.sign(issuer_key or key, hashes.SHA256())


def make_root_ca(cn, days=1):
    key = ec.generate_private_key(ec.SECP256R1())
    now = utc_now()
    cert = make_cert(
        cn, key, None, None, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days),
        [
            (x509.BasicConstraints(ca=True, path_length=None), True),
            (x509.KeyUsage(False, False, False, False, False, True, True, False, False), True),
            (x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False),
        ],
    )
    return key, cert


# ---------------------------------------------------------------- serve


def bcrypt_hash(password):
    """A bcrypt hash for htpasswd: stdlib `crypt` (libxcrypt) where present, else `htpasswd -B`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt  # deprecated since 3.11, removed in 3.13
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 5))
    except ImportError:
        output = subprocess.run(["htpasswd", "-nbB", "x", password], check=True, capture_output=True, text=True)
        return output.stdout.strip().split(":", 1)[1]


def write_server_certificate(directory):
    """A fresh CA (ca.pem) and a certificate for 127.0.0.1 and localhost signed by it."""
    ca_key, ca_cert = make_root_ca("prompt-host test registry CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = utc_now()
    cert = make_cert(
        "127.0.0.1", key, ca_cert, ca_key, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1),
        [
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), False),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        ],
    )
    write_file(os.path.join(directory, "ca.pem"), pem_cert(ca_cert))
    write_file(os.path.join(directory, "server.pem"), pem_cert(cert) + pem_cert(ca_cert))
    write_file(os.path.join(directory, "server.key"), pem_private(key), 0o600)


def cmd_serve(args):
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    port = args.port or free_port()
    address = f"127.0.0.1:{port}"
    http_section = [f"  addr: {address}", f"  secret: {os.urandom(16).hex()}"]
    ca_path = None
    if args.tls:
        ca_path = os.path.join(directory, "ca.pem")
        # A restart on the same directory keeps its CA, so clients keep trusting it.
        if not os.path.exists(ca_path):
            write_server_certificate(directory)
        http_section += [
            "  tls:",
            f"    certificate: {os.path.join(directory, 'server.pem')}",
            f"    key: {os.path.join(directory, 'server.key')}",
        ]
    auth_section = []
    user = parse_user(args.user)
    if user:
        htpasswd = os.path.join(directory, "htpasswd")
        write_file(htpasswd, f"{user[0]}:{bcrypt_hash(user[1])}\n".encode())
        auth_section = ["auth:", "  htpasswd:", "    realm: prompt-host-tests", f"    path: {htpasswd}"]
    config = "\n".join(
        [
            "version: 0.1",
            "log:",
            f"  level: {args.log_level}",
            "  accesslog:",
            f"    disabled: {'false' if args.log_level in ('debug', 'info') else 'true'}",
            "storage:",
            "  filesystem:",
            f"    rootdirectory: {os.path.join(directory, 'data')}",
            "  delete:",
            "    enabled: true",
            "http:",
            *http_section,
            *auth_section,
        ]
    ) + "\n"
    config_path = os.path.join(directory, "config.yml")
    write_file(config_path, config.encode())
    emit({"address": address, "ca": ca_path, "pid": os.getpid(), "config": config_path})
    os.execv(REGISTRY_BINARY, [REGISTRY_BINARY, "serve", config_path])


# ---------------------------------------------------------------- layout and pushes


def wasm_config(wasm, args):
    """The config blob wkg writes (oci-wasm's WasmConfig, serde_json order, camelCase)."""
    created = args.created or utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return json.dumps(
        {
            "created": created,
            "author": args.author,
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [sha256_digest(wasm)],
            "component": {
                "exports": args.export if args.export is not None else [DEFAULT_EXPORT],
                "imports": args.import_ or [],
                "target": None,
            },
        },
        separators=(",", ":"),
    ).encode()


def parse_annotations(pairs):
    annotations = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            sys.exit(f"--annotation must be KEY=VALUE, got {pair!r}")
        annotations[key] = value
    return annotations


def artifact_manifest(config, wasm, annotations):
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": WASM_CONFIG, "digest": sha256_digest(config), "size": len(config)},
        "layers": [{"mediaType": WASM_LAYER, "digest": sha256_digest(wasm), "size": len(wasm)}],
    }
    if annotations:
        manifest["annotations"] = annotations
    return json.dumps(manifest, separators=(",", ":")).encode()


def cmd_layout(args):
    wasm = open(args.wasm, "rb").read()
    config = wasm_config(wasm, args)
    manifest = artifact_manifest(config, wasm, parse_annotations(args.annotation))
    blobs = os.path.join(args.out, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)
    for blob in (wasm, config, manifest):
        write_file(os.path.join(blobs, hashlib.sha256(blob).hexdigest()), blob)
    write_file(os.path.join(args.out, "oci-layout"), b'{"imageLayoutVersion":"1.0.0"}')
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": sha256_digest(manifest), "size": len(manifest)}],
    }
    write_file(os.path.join(args.out, "index.json"), json.dumps(index).encode())
    emit(
        {
            "layout": os.path.abspath(args.out),
            "manifest_digest": sha256_digest(manifest),
            "manifest_size": len(manifest),
            "config_digest": sha256_digest(config),
            "layer_digest": sha256_digest(wasm),
            "layer_size": len(wasm),
        }
    )


def cmd_push_skopeo(args):
    with tempfile.TemporaryDirectory() as tmp:
        digestfile = os.path.join(tmp, "digest")
        command = ["skopeo", "--insecure-policy", "copy", "--quiet", "--digestfile", digestfile]
        if args.tls_ca:
            # skopeo reads CA certificates as *.crt files from a directory.
            certs = os.path.join(tmp, "certs")
            os.makedirs(certs)
            shutil.copy(args.tls_ca, os.path.join(certs, "ca.crt"))
            command += ["--dest-cert-dir", certs]
        else:
            command += ["--dest-tls-verify=false"]
        if args.user:
            command += ["--dest-creds", args.user]
        command += [f"oci:{args.layout}", f"docker://{args.ref}"]
        subprocess.run(command, check=True, stdout=sys.stderr)
        digest = open(digestfile).read().strip()
    emit({"ref": args.ref, "manifest_digest": digest})


def cmd_push_oras(args):
    import oras.client  # imported here: only this subcommand needs it

    wasm = open(args.wasm, "rb").read()
    user = parse_user(args.user)
    client = oras.client.OrasClient(
        hostname=args.ref.split("/", 1)[0],
        insecure=not args.tls_ca,
        tls_verify=args.tls_ca or False,
        auth_backend="basic" if user else "token",
    )
    if user:
        client.auth.set_basic_auth(*user)
    with tempfile.TemporaryDirectory() as tmp:
        config_path = os.path.join(tmp, "config.json")
        write_file(config_path, wasm_config(wasm, args))
        layer_path = os.path.join(tmp, os.path.basename(args.wasm))
        write_file(layer_path, wasm)
        response = client.push(
            target=args.ref,
            files=[f"{layer_path}:{WASM_LAYER}"],
            manifest_config=f"{config_path}:{WASM_CONFIG}",
            manifest_annotations=parse_annotations(args.annotation) or None,
            disable_path_validation=True,
            quiet=True,
        )
    emit({"ref": args.ref, "manifest_digest": response.headers["Docker-Content-Digest"]})


# ---------------------------------------------------------------- raw registry HTTP API


class Registry:
    """Just enough of the OCI distribution API, over urllib, for pushes and reads."""

    def __init__(self, address, tls_ca=None, user=None):
        self.base = f"{'https' if tls_ca else 'http'}://{address}"
        self.context = ssl.create_default_context(cafile=tls_ca) if tls_ca else None
        self.headers = {}
        if user:
            token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"

    def request(self, method, url, body=None, headers=None):
        if url.startswith("/"):
            url = self.base + url
        request = urllib.request.Request(url, data=body, method=method, headers={**self.headers, **(headers or {})})
        with urllib.request.urlopen(request, context=self.context) as response:
            return response.status, dict(response.headers), response.read()

    def push_blob(self, repo, data):
        digest = sha256_digest(data)
        _, headers, _ = self.request("POST", f"/v2/{repo}/blobs/uploads/")
        location = urllib.parse.urljoin(self.base + "/", headers["Location"])
        separator = "&" if "?" in location else "?"
        self.request(
            "PUT",
            f"{location}{separator}digest={digest}",
            body=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        return digest

    def push_manifest(self, repo, reference, manifest, media_type=OCI_MANIFEST):
        _, headers, _ = self.request(
            "PUT", f"/v2/{repo}/manifests/{reference}", body=manifest, headers={"Content-Type": media_type}
        )
        return headers.get("Docker-Content-Digest", sha256_digest(manifest))

    def get_manifest(self, repo, reference):
        """The manifest's bytes, or None when the registry has none under that reference."""
        try:
            return self.request("GET", f"/v2/{repo}/manifests/{reference}", headers={"Accept": OCI_MANIFEST})[2]
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def delete_blob(self, repo, digest):
        self.request("DELETE", f"/v2/{repo}/blobs/{digest}")


# ---------------------------------------------------------------- keys


# NaCl's secretbox (XSalsa20-Poly1305) for cosign.key: `cryptography` has Poly1305
# but no Salsa20, so the 20-round Salsa20 core is written out here (checked
# against libsodium by test_registry_tooling.py's known answer).


def add_rotate(x, y, bits):
    s = (x + y) & 0xFFFFFFFF
    return ((s << bits) & 0xFFFFFFFF) | (s >> (32 - bits))


def salsa20_rounds(state):
    x = list(state)

    def quarter(a, b, c, d):
        x[b] ^= add_rotate(x[a], x[d], 7)
        x[c] ^= add_rotate(x[b], x[a], 9)
        x[d] ^= add_rotate(x[c], x[b], 13)
        x[a] ^= add_rotate(x[d], x[c], 18)

    for _ in range(10):
        quarter(0, 4, 8, 12), quarter(5, 9, 13, 1), quarter(10, 14, 2, 6), quarter(15, 3, 7, 11)
        quarter(0, 1, 2, 3), quarter(5, 6, 7, 4), quarter(10, 11, 8, 9), quarter(15, 12, 13, 14)
    return x


SIGMA = struct.unpack("<4I", b"expand 32-byte k")


def salsa20_state(key, nonce16):
    k = struct.unpack("<8I", key)
    n = struct.unpack("<4I", nonce16)
    return [SIGMA[0], *k[:4], SIGMA[1], *n, SIGMA[2], *k[4:], SIGMA[3]]


def xsalsa20_stream(key, nonce, length):
    """XSalsa20 key stream: HSalsa20 derives a subkey from the nonce's first 16 bytes."""
    x = salsa20_rounds(salsa20_state(key, nonce[:16]))
    subkey = struct.pack("<8I", *(x[i] for i in (0, 5, 10, 15, 6, 7, 8, 9)))
    stream = b""
    for counter in range((length + 63) // 64):
        state = salsa20_state(subkey, nonce[16:24] + struct.pack("<Q", counter))
        mixed = salsa20_rounds(state)
        stream += struct.pack("<16I", *((a + b) & 0xFFFFFFFF for a, b in zip(mixed, state)))
    return stream[:length]


def secretbox_seal(key, nonce, message):
    """NaCl secretbox (XSalsa20-Poly1305), as Go's secretbox.Seal: tag, then ciphertext."""
    stream = xsalsa20_stream(key, nonce, 32 + len(message))
    ciphertext = bytes(a ^ b for a, b in zip(message, stream[32:]))
    return Poly1305.generate_tag(stream[:32], ciphertext) + ciphertext


def secretbox_open(key, nonce, sealed):
    stream = xsalsa20_stream(key, nonce, 32 + len(sealed) - 16)
    tag, ciphertext = sealed[:16], sealed[16:]
    Poly1305.verify_tag(stream[:32], ciphertext, tag)
    return bytes(a ^ b for a, b in zip(ciphertext, stream[32:]))


SCRYPT = {"N": 32768, "r": 8, "p": 1}


def scrypt_key(password, salt, params):
    return hashlib.scrypt(password, salt=salt, n=params["N"], r=params["r"], p=params["p"], maxmem=1 << 26, dklen=32)


def cosign_encrypted_key(private_key, password):
    """cosign's `cosign.key`: scrypt + nacl/secretbox over the PKCS#8 DER, in a PEM."""
    der = private_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    salt, nonce = os.urandom(32), os.urandom(24)
    sealed = secretbox_seal(scrypt_key(password, salt, SCRYPT), nonce, der)
    data = {
        "kdf": {"name": "scrypt", "params": SCRYPT, "salt": base64.b64encode(salt).decode()},
        "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode()},
        "ciphertext": base64.b64encode(sealed).decode(),
    }
    body = base64.encodebytes(json.dumps(data, separators=(",", ":")).encode()).decode().replace("\n", "")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return ("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n" + "\n".join(lines)
            + "\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n").encode()


def load_private_key(path):
    """A PKCS#8 PEM, or a cosign-format encrypted key (password from COSIGN_PASSWORD)."""
    text = open(path, "rb").read()
    if b"ENCRYPTED SIGSTORE PRIVATE KEY" in text or b"ENCRYPTED COSIGN PRIVATE KEY" in text:
        body = b"".join(line for line in text.splitlines() if line and not line.startswith(b"-----"))
        data = json.loads(base64.b64decode(body))
        password = os.environ.get("COSIGN_PASSWORD", "").encode()
        key = scrypt_key(password, base64.b64decode(data["kdf"]["salt"]), data["kdf"]["params"])
        der = secretbox_open(key, base64.b64decode(data["cipher"]["nonce"]), base64.b64decode(data["ciphertext"]))
        return serialization.load_der_private_key(der, None)
    return serialization.load_pem_private_key(text, None)


def cmd_keygen(args):
    os.makedirs(args.out, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    paths = {name: os.path.abspath(os.path.join(args.out, name)) for name in ("cosign.pub", "private.pem", "cosign.key")}
    write_file(paths["cosign.pub"], pem_public(key.public_key()))
    write_file(paths["private.pem"], pem_private(key), 0o600)
    password = os.environ.get("COSIGN_PASSWORD", "").encode()
    write_file(paths["cosign.key"], cosign_encrypted_key(key, password), 0o600)
    emit({"public": paths["cosign.pub"], "private": paths["private.pem"], "cosign_key": paths["cosign.key"]})


# ---------------------------------------------------------------- signatures


COSIGN_TYPE = "cosign container image signature"


def simple_signing_payload(reference, digest, type_name=COSIGN_TYPE):
    """cosign's payload, byte for byte as Go's json.Marshal writes it."""
    return json.dumps(
        {
            "critical": {
                "identity": {"docker-reference": reference},
                "image": {"docker-manifest-digest": digest},
                "type": type_name,
            },
            "optional": None,
        },
        separators=(",", ":"),
    ).encode()


def cosign_config(layer_digests):
    """The image config go-containerregistry writes for cosign's signature image."""
    return json.dumps(
        {
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"} for _ in layer_digests],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": layer_digests},
            "config": {},
        },
        separators=(",", ":"),
    ).encode()


def rekor_entry(rekor_key, payload, signature_b64, cert_pem, log_index, integrated_time):
    """A hashedrekord entry for PAYLOAD and its SET by the (test) Rekor key.

    Returns (canonicalized body, SET payload, SET signature): the SET signs the
    canonical JSON of {body (base64 of the body), integratedTime, logID (hex),
    logIndex}, as Rekor does."""
    body = canonical_json(
        {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()}},
                "signature": {"content": signature_b64, "publicKey": {"content": base64.b64encode(cert_pem).decode()}},
            },
        }
    )
    entry = {
        "body": base64.b64encode(body).decode(),
        "integratedTime": integrated_time,
        "logIndex": log_index,
        "logID": key_id(rekor_key.public_key()).hex(),
    }
    return body, entry, rekor_key.sign(canonical_json(entry), ec.ECDSA(hashes.SHA256()))


def rekor_bundle(rekor_key, payload, signature_b64, cert_pem, log_index, integrated_time):
    """cosign's old `dev.sigstore.cosign/bundle`: a SET by the (test) Rekor key over the entry."""
    _, entry, set_signature = rekor_entry(rekor_key, payload, signature_b64, cert_pem, log_index, integrated_time)
    return json.dumps({"SignedEntryTimestamp": base64.b64encode(set_signature).decode(), "Payload": entry})


def key_id(public_key):
    """A transparency log's id: SHA-256 of its public key's DER SubjectPublicKeyInfo."""
    return hashlib.sha256(
        public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    ).digest()


def cmd_sign(args):
    if not args.digest.startswith("sha256:") or len(args.digest) != 71:
        sys.exit("--digest must be sha256:<64 hex digits>")
    key = load_private_key(args.key)
    reference = args.identity_ref or f"{args.registry}/{args.repo}"
    signed_digest = sha256_digest(b"not the signed manifest") if args.wrong_digest else args.digest
    payload = simple_signing_payload(reference, signed_digest, args.type)
    signature = bytearray(key.sign(payload, ec.ECDSA(hashes.SHA256())))
    if args.corrupt:
        signature[-1] ^= 0x01  # still DER, no longer a signature of the payload
    signature_b64 = base64.b64encode(bytes(signature)).decode()

    annotations = {COSIGN_SIGNATURE: signature_b64}
    if args.cert:
        cert_pem = open(args.cert, "rb").read()
        annotations[COSIGN_CERTIFICATE] = cert_pem.decode()
        annotations[COSIGN_CHAIN] = open(args.chain).read() if args.chain else ""
        if args.rekor_key:
            rekor_key = serialization.load_pem_private_key(open(args.rekor_key, "rb").read(), None)
            annotations[COSIGN_BUNDLE] = rekor_bundle(
                rekor_key, payload, signature_b64, cert_pem, args.log_index,
                args.integrated_time if args.integrated_time is not None else int(utc_now().timestamp()),
            )
    layer = {"mediaType": SIMPLESIGNING, "digest": sha256_digest(payload), "size": len(payload), "annotations": annotations}

    registry = Registry(args.registry, args.tls_ca, parse_user(args.user))
    tag = args.digest.replace(":", "-") + ".sig"
    layers = []
    if args.append:
        existing = registry.get_manifest(args.repo, tag)
        if existing:
            layers = json.loads(existing)["layers"]
    # Junk before the signature: layers a verifier must skip without giving up.
    missing = []
    for number in range(args.junk_layers):
        junk = simple_signing_payload(reference, sha256_digest(b"junk %d" % number))
        registry.push_blob(args.repo, junk)  # deleted once the manifest is in: a missing layer
        missing.append(sha256_digest(junk))
        layers.append({"mediaType": SIMPLESIGNING, "digest": sha256_digest(junk), "size": len(junk),
                       "annotations": {COSIGN_SIGNATURE: signature_b64}})
    layers.append(layer)
    config = cosign_config([entry["digest"] for entry in layers])
    registry.push_blob(args.repo, payload)
    registry.push_blob(args.repo, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_IMAGE_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": layers,
    }
    if args.pad_manifest:
        manifest["annotations"] = {"padding": "x" * args.pad_manifest}
    manifest = json.dumps(manifest, separators=(",", ":")).encode()
    manifest_digest = registry.push_manifest(args.repo, tag, manifest)
    for digest in missing:
        registry.delete_blob(args.repo, digest)
    emit(
        {
            "tag": tag,
            "manifest_digest": manifest_digest,
            "payload": payload.decode(),
            "payload_digest": sha256_digest(payload),
            "signature": signature_b64,
            "layers": len(layers),
        }
    )


SIGSTORE_BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"


def cmd_bundle(args):
    """A Sigstore bundle v0.3 for a blob, as `cosign sign-blob --new-bundle-format` writes it."""
    if bool(args.cert) != bool(args.rekor_key):
        sys.exit("--cert and --rekor-key go together (keyless), or neither (a key)")
    key = load_private_key(args.key)
    blob = open(args.other_file or args.wasm, "rb").read()
    signature = bytearray(key.sign(blob, ec.ECDSA(hashes.SHA256())))
    if args.corrupt:
        signature[-1] ^= 0x01  # still DER, no longer a signature of the blob
    signature_b64 = base64.b64encode(bytes(signature)).decode()
    log_id = None
    if args.cert:
        cert_pem = open(args.cert, "rb").read()
        cert_der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
        rekor_key = serialization.load_pem_private_key(open(args.rekor_key, "rb").read(), None)
        integrated_time = args.integrated_time if args.integrated_time is not None else int(utc_now().timestamp())
        body, entry, set_signature = rekor_entry(
            rekor_key, blob, signature_b64, cert_pem, args.log_index, integrated_time
        )
        log_id = entry["logID"]
        material = {
            "certificate": {"rawBytes": base64.b64encode(cert_der).decode()},
            "tlogEntries": [
                {
                    "logIndex": str(args.log_index),
                    "logId": {"keyId": base64.b64encode(bytes.fromhex(log_id)).decode()},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": str(integrated_time),
                    "inclusionPromise": {"signedEntryTimestamp": base64.b64encode(set_signature).decode()},
                    "canonicalizedBody": base64.b64encode(body).decode(),
                }
            ],
        }
    else:
        material = {
            "publicKey": {"hint": base64.b64encode(key_id(key.public_key())).decode()},
            "tlogEntries": [],
        }
    result = {
        "mediaType": SIGSTORE_BUNDLE_V03,
        "verificationMaterial": material,
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": base64.b64encode(hashlib.sha256(blob).digest()).decode()},
            "signature": signature_b64,
        },
    }
    out = os.path.abspath(args.out or args.wasm + ".sigstore.json")
    write_file(out, json.dumps(result, indent=2).encode() + b"\n")
    emit({"bundle": out, "digest": sha256_digest(blob), "log_id": log_id})


def make_intermediate_ca(cn, root_key, root_cert):
    """An intermediate CA under ROOT, valid a day either side of now (as Fulcio's
    intermediates outlive the trusted root's validFor of their entry)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = utc_now()
    cert = make_cert(
        cn, key, root_cert, root_key, now - datetime.timedelta(minutes=4), now + datetime.timedelta(days=1),
        [
            (x509.BasicConstraints(ca=True, path_length=0), True),
            (x509.KeyUsage(False, False, False, False, False, True, True, False, False), True),
            (x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False),
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), False),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False),
        ],
    )
    return key, cert


SCT_LIST = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")


def embedded_sct_list(ctlog_key, log_id, issuer_cert, precert_tbs, timestamp_ms):
    """An RFC 6962 SignedCertificateTimestampList of one SCT by CTLOG_KEY (as the
    log LOG_ID) over the precertificate entry (the issuer's key hash and the
    TBS), TLS-encoded."""
    issuer_key_hash = hashlib.sha256(
        issuer_cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    ).digest()
    signed = (
        b"\x00\x00" + timestamp_ms.to_bytes(8, "big") + b"\x00\x01" + issuer_key_hash
        + len(precert_tbs).to_bytes(3, "big") + precert_tbs + b"\x00\x00"
    )
    signature = ctlog_key.sign(signed, ec.ECDSA(hashes.SHA256()))
    sct = (
        b"\x00" + log_id + timestamp_ms.to_bytes(8, "big") + b"\x00\x00"
        + b"\x04\x03" + len(signature).to_bytes(2, "big") + signature
    )
    entries = len(sct).to_bytes(2, "big") + sct
    return len(entries).to_bytes(2, "big") + entries


def cmd_keyless_ca(args):
    os.makedirs(args.out, exist_ok=True)
    root_key, root_cert = make_root_ca("prompt-host test Fulcio root")
    ca_key, ca_cert = root_key, root_cert
    intermediates = {}
    if args.intermediate:
        # Two CA entries sharing the root, as Fulcio's do across a rotation:
        # one retired an hour ago, one current; the leaf is issued by the one asked for.
        for name in ("retired", "current"):
            intermediates[name] = make_intermediate_ca(f"prompt-host test Fulcio intermediate ({name})", root_key, root_cert)
        if args.intermediate == "rekeyed":
            # One CA entry holding two intermediates of one name (a re-keyed CA):
            # the earlier key listed first, the leaf issued by the later one.
            intermediates["earlier"] = make_intermediate_ca("prompt-host test Fulcio intermediate (current)", root_key, root_cert)
            ca_key, ca_cert = intermediates["current"]
        else:
            ca_key, ca_cert = intermediates[args.intermediate]
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    now = utc_now()
    issuer = args.issuer.encode()
    extensions = [
        (x509.KeyUsage(True, False, False, False, False, False, False, False, False), True),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False),
        (x509.SubjectAlternativeName([
            x509.UniformResourceIdentifier(identity) if "://" in identity else x509.RFC822Name(identity)
            for identity in args.identity
        ]), True),
        (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
        (x509.UnrecognizedExtension(FULCIO_ISSUER_V1, issuer), False),
        (x509.UnrecognizedExtension(FULCIO_ISSUER_V2, b"\x0c" + der_length(len(issuer)) + issuer), False),
    ]
    for oid, value in ((FULCIO_SOURCE_REPOSITORY, args.source_repository), (FULCIO_SOURCE_REF, args.source_ref),
                       (FULCIO_BUILD_CONFIG, args.workflow)):
        if value:
            extensions.append((x509.UnrecognizedExtension(oid, b"\x0c" + der_length(len(value.encode())) + value.encode()), False))
    serial = x509.random_serial_number()
    validity = (now - datetime.timedelta(seconds=30), now + datetime.timedelta(minutes=args.minutes))
    rekor_key = ec.generate_private_key(ec.SECP256R1())
    ctlog_key = ec.generate_private_key(ec.SECP256R1())
    if args.sct != "none":
        # The precertificate's TBS is the certificate's without the SCT list.
        precert = make_cert(None, leaf_key, ca_cert, ca_key, *validity, extensions, serial=serial)
        other_key = ec.generate_private_key(ec.SECP256R1())
        sct_key = other_key if args.sct in ("unknown-log", "forged") else ctlog_key
        log_id = key_id((other_key if args.sct == "unknown-log" else ctlog_key).public_key())
        sct_list = embedded_sct_list(sct_key, log_id, ca_cert, precert.tbs_certificate_bytes, int(now.timestamp() * 1000))
        extensions.append((x509.UnrecognizedExtension(SCT_LIST, b"\x04" + der_length(len(sct_list)) + sct_list), False))
    leaf = make_cert(None, leaf_key, ca_cert, ca_key, *validity, extensions, serial=serial)
    start = (now - datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def log(url, key):
        spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        return {
            "baseUrl": url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": base64.b64encode(spki).decode(),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": start},
            },
            "logId": {"keyId": base64.b64encode(key_id(key.public_key())).decode()},
        }

    def der_b64(cert):
        return {"rawBytes": base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()}

    def authority(chain, valid_for):
        return {
            "subject": {"organization": "prompt-host tests", "commonName": "prompt-host test Fulcio root"},
            "uri": "https://fulcio.invalid",
            "certChain": {"certificates": [der_b64(cert) for cert in chain]},
            "validFor": valid_for,
        }

    if args.intermediate == "rekeyed":
        authorities = [authority([intermediates["earlier"][1], intermediates["current"][1], root_cert], {"start": start})]
    elif intermediates:
        an_hour_ago = (now - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        authorities = [
            authority([intermediates["retired"][1], root_cert], {"start": start, "end": an_hour_ago}),
            authority([intermediates["current"][1], root_cert], {"start": an_hour_ago}),
        ]
    else:
        authorities = [authority([root_cert], {"start": start})]
    trusted_root = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [log("https://rekor.invalid", rekor_key)],
        "certificateAuthorities": authorities,
        "ctlogs": [log("https://ctfe.invalid", ctlog_key)],
        "timestampAuthorities": [],
    }
    files = {
        "ca.pem": pem_cert(root_cert),
        "chain.pem": pem_cert(ca_cert) + (pem_cert(root_cert) if intermediates else b""),
        "leaf.pem": pem_cert(leaf),
        "leaf.key": pem_private(leaf_key),
        "rekor.key": pem_private(rekor_key),
        "rekor.pub": pem_public(rekor_key.public_key()),
        "trusted_root.json": json.dumps(trusted_root, indent=2).encode(),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = os.path.abspath(os.path.join(args.out, name))
        write_file(paths[name], data, 0o600 if name.endswith(".key") else 0o644)
    emit(
        {
            "ca": paths["ca.pem"],
            "chain": paths["chain.pem"],
            "cert": paths["leaf.pem"],
            "key": paths["leaf.key"],
            "rekor_key": paths["rekor.key"],
            "rekor_pub": paths["rekor.pub"],
            "trusted_root": paths["trusted_root.json"],
            "identity": args.identity[0],
            "issuer": args.issuer,
            "rekor_log_id": key_id(rekor_key.public_key()).hex(),
            "not_after": leaf.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )


def der_length(n):
    return bytes([n]) if n < 0x80 else bytes([0x80 | len(n.to_bytes(2, "big").lstrip(b"\0"))]) + n.to_bytes(2, "big").lstrip(b"\0")


# ---------------------------------------------------------------- a lying registry


def cmd_serve_blob_liar(args):
    upstream = Registry(args.upstream, args.upstream_ca, parse_user(args.user))
    corrupt = set(args.corrupt_blob or [])
    # With --bearer, the liar is also a token service, as ghcr.io or Docker
    # Hub have one: /v2/ challenges with a Bearer realm (its own /token), which
    # hands out TOKEN for these Basic credentials and a pull scope.
    bearer_basic = "Basic " + base64.b64encode(args.bearer.encode()).decode() if args.bearer else None
    token = "test-token-" + secrets.token_hex(8)
    listening = {}

    class Liar(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *values):
            sys.stderr.write("liar: " + format % values + "\n")

        def do_HEAD(self):
            self.relay(send_body=False)

        def do_GET(self):
            self.relay(send_body=True)

        def do_POST(self):
            self.relay(send_body=True, method="POST")

        def do_PUT(self):
            self.relay(send_body=True, method="PUT")

        def do_PATCH(self):
            self.relay(send_body=True, method="PATCH")

        def relay(self, send_body, method="GET"):
            if args.stall:
                time.sleep(3600)  # accept, read the request, and never answer
                return
            if bearer_basic and self.path.startswith("/token"):
                return self.hand_out_token()
            if bearer_basic and self.headers["Authorization"] != "Bearer " + token:
                realm_url = args.realm or f"http://{listening['address']}/token"
                realm_url = realm_url.replace("ADDRESS", listening["address"]).replace("PORT", listening["address"].rsplit(":", 1)[1])
                realm = f'Bearer realm="{realm_url}",service="liar"'
                return self.answer(401, {"WWW-Authenticate": realm, "Content-Type": "application/json"}, b'{"errors":[]}', send_body)
            headers = {name: self.headers[name] for name in ("Accept", "Range", "Content-Type") if self.headers[name]}
            sent = self.rfile.read(int(self.headers["Content-Length"] or 0)) if method != "GET" else None
            try:
                status, upstream_headers, body = upstream.request(method, self.path, body=sent, headers=headers)
            except urllib.error.HTTPError as error:
                status, upstream_headers, body = error.code, dict(error.headers), error.read()
            digest = self.path.rsplit("/", 1)[-1]
            if "/blobs/" in self.path and digest in corrupt and body:
                body = bytes([body[0] ^ 0xFF]) + body[1:]  # same size, wrong bytes
            if "/manifests/" in self.path and args.pad_manifest and status == 200:
                body = body + b" " * args.pad_manifest
            if "/manifests/" in self.path and self.path.endswith(".sig") and args.garbage_signatures:
                status, body = 200, b'{"schemaVersion":2,"not":"a manifest"}'
                upstream_headers = {"Content-Type": OCI_MANIFEST}
            names = ("Content-Type", "Docker-Content-Digest", "Docker-Distribution-Api-Version", "WWW-Authenticate", "Location")
            self.answer(status, {name: upstream_headers[name] for name in names if name in upstream_headers}, body, send_body)

        def hand_out_token(self):
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            if self.command == "POST":
                # The OAuth2 refresh-token grant Docker uses for an identity
                # token (the distribution specification's token flow).
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"] or 0)).decode())
                if args.record:
                    with open(args.record, "a") as record:
                        record.write(json.dumps({"scope": form.get("scope", [""])[0], "grant_type": form.get("grant_type", [""])[0]}) + "\n")
                granted = (args.identity_token and form.get("grant_type") == ["refresh_token"]
                           and form.get("refresh_token") == [args.identity_token] and form.get("service") == ["liar"])
                if not granted:
                    return self.answer(401, {"Content-Type": "application/json"}, b'{"details":"wrong refresh token"}', True)
                answer = json.dumps({"access_token": token, "expires_in": 300}).encode()
                return self.answer(200, {"Content-Type": "application/json"}, answer, True)
            if args.record:
                with open(args.record, "a") as record:
                    sent = "basic" if (self.headers["Authorization"] or "").startswith("Basic ") else "none"
                    record.write(json.dumps({"scope": query.get("scope", [""])[0], "authorization": sent}) + "\n")
            pulls = all(scope.startswith("repository:") and scope.endswith((":pull", ":pull,push")) for scope in query.get("scope", [""]))
            if self.headers["Authorization"] != bearer_basic or not pulls or query.get("service") != ["liar"]:
                return self.answer(401, {"Content-Type": "application/json"}, b'{"details":"wrong credentials"}', True)
            answer = json.dumps({"token": token, "padding": "x" * args.token_bytes}).encode()
            self.answer(200, {"Content-Type": "application/json"}, answer, True)

        def answer(self, status, headers, body, send_body):
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Liar)
    server.daemon_threads = True
    listening["address"] = f"127.0.0.1:{server.server_address[1]}"
    emit({"address": listening["address"], "pid": os.getpid()})
    server.serve_forever()


# ---------------------------------------------------------------- command line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, function, help_text):
        sub = commands.add_parser(name, help=help_text.splitlines()[0], description=help_text,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(function=function)
        return sub

    def tls_and_user(sub, what):
        sub.add_argument("--tls-ca", help=f"the registry's CA (ca.pem from serve --tls): use HTTPS verified by it; without it, {what}")
        sub.add_argument("--user", help="USER:PASSWORD for a registry started with serve --user")

    def config_fields(sub):
        sub.add_argument("--created", help="the config's `created` time (default: now), for reproducible digests")
        sub.add_argument("--author", help="the config's `author` (default: null)")
        sub.add_argument("--export", action="append", help=f"an export named in the config (repeatable; default: {DEFAULT_EXPORT})")
        sub.add_argument("--import", dest="import_", action="append", help="an import named in the config (repeatable; default: none)")
        sub.add_argument("--annotation", action="append", metavar="KEY=VALUE", help="a manifest annotation (repeatable)")

    sub = command("serve", cmd_serve, """Start a real registry (Debian's docker-registry) on 127.0.0.1.

Writes DIR/config.yml (filesystem storage in DIR/data, deletes enabled) and,
with --tls, DIR/ca.pem (a fresh CA) and a server certificate for 127.0.0.1 and
localhost signed by it; with --user, DIR/htpasswd (bcrypt) and basic auth.
Run again on the same DIR (with --port) to restart it: the stored content and
the CA stay. Prints one JSON line, then execs the registry (same pid):
  {"address": "127.0.0.1:PORT", "ca": "/abs/ca.pem" or null, "pid": N, "config": PATH}
The registry may not accept connections yet when the line appears: poll the
address (TCP connect or GET /v2/) until it answers. Stop it by killing pid.""")
    sub.add_argument("--dir", required=True, help="directory for config, certificates and storage (created)")
    sub.add_argument("--tls", action="store_true", help="serve HTTPS with a generated CA")
    sub.add_argument("--user", help="USER:PASSWORD: require basic auth (htpasswd, bcrypt)")
    sub.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    sub.add_argument("--log-level", default="warn", choices=["error", "warn", "info", "debug"],
                     help="registry log level, on stderr (info and debug add access logs; default: warn)")

    sub = command("layout", cmd_layout, """Write an OCI image layout holding a pack in the CNCF wasm artifact layout.

The manifest (application/vnd.oci.image.manifest.v1+json) has the config
application/vnd.wasm.config.v0+json as wkg writes it (created, author,
architecture "wasm", os "wasip2", layerDigests, component {exports, imports,
target}) and one layer application/wasm (FILE's bytes). Prints
  {"layout": DIR, "manifest_digest": "sha256:...", "manifest_size": N,
   "config_digest": "sha256:...", "layer_digest": "sha256:...", "layer_size": N}""")
    sub.add_argument("--wasm", required=True, help="the pack (.wasm)")
    sub.add_argument("--out", required=True, help="the layout directory (created)")
    config_fields(sub)

    sub = command("push-skopeo", cmd_push_skopeo, """Push a layout (from `layout`) with skopeo copy.

Runs skopeo --insecure-policy copy oci:LAYOUT docker://REF, with
--dest-tls-verify=false over HTTP or --dest-cert-dir for --tls-ca. Prints
  {"ref": REF, "manifest_digest": "sha256:..."}""")
    sub.add_argument("--layout", required=True, help="the OCI layout directory")
    sub.add_argument("--ref", required=True, help="ADDRESS/REPO:TAG")
    tls_and_user(sub, "plain HTTP")

    sub = command("push-oras", cmd_push_oras, """Push a pack in the CNCF wasm layout with oras (oras-py's client).

Same config and layer media types as `layout` (oras adds the layer annotation
org.opencontainers.image.title, as the oras CLI does). Prints
  {"ref": REF, "manifest_digest": "sha256:..."}""")
    sub.add_argument("--wasm", required=True, help="the pack (.wasm)")
    sub.add_argument("--ref", required=True, help="ADDRESS/REPO:TAG")
    config_fields(sub)
    tls_and_user(sub, "plain HTTP")

    sub = command("keygen", cmd_keygen, """Make an ECDSA P-256 signing key, in the files cosign generate-key-pair writes.

Writes DIR/cosign.pub (PEM SubjectPublicKeyInfo), DIR/private.pem (PKCS#8 PEM,
unencrypted) and DIR/cosign.key (PEM "ENCRYPTED SIGSTORE PRIVATE KEY": scrypt
N=32768 r=8 p=1 and nacl/secretbox over the PKCS#8 DER), encrypted with the
password in COSIGN_PASSWORD (empty when unset). Prints
  {"public": PATH, "private": PATH, "cosign_key": PATH}""")
    sub.add_argument("--out", required=True, help="directory (created)")

    sub = command("sign", cmd_sign, """Sign a manifest digest in cosign's format and push the signature.

The payload is cosign's simple-signing JSON naming DIGEST and the identity
ADDRESS/REPO; the ECDSA P-256 SHA-256 signature (DER, base64) goes in the layer
annotation dev.cosignproject.cosign/signature; the layer
(application/vnd.dev.cosign.simplesigning.v1+json, blob = payload) is in an OCI
manifest with cosign's image config, tagged sha256-HEX.sig in REPO. Pushed with
plain HTTP API calls (urllib), independent of skopeo and oras. With --cert
(keyless), also the dev.sigstore.cosign/certificate and /chain annotations and,
with --rekor-key, a dev.sigstore.cosign/bundle whose SET that key signs.
Prints
  {"tag": "sha256-HEX.sig", "manifest_digest": "sha256:...", "payload": TEXT,
   "payload_digest": "sha256:...", "signature": BASE64, "layers": N}""")
    sub.add_argument("--registry", required=True, help="ADDRESS (127.0.0.1:PORT)")
    sub.add_argument("--repo", required=True, help="repository, e.g. packs/hello")
    sub.add_argument("--digest", required=True, help="the signed manifest's digest, sha256:HEX")
    sub.add_argument("--key", required=True, help="private key: PKCS#8 PEM, or cosign.key (password from COSIGN_PASSWORD)")
    sub.add_argument("--identity-ref", help="the payload's docker-reference (default: ADDRESS/REPO)")
    sub.add_argument("--type", default=COSIGN_TYPE, help=f"the payload's critical.type (default: {COSIGN_TYPE!r})")
    sub.add_argument("--junk-layers", type=int, default=0, metavar="N",
                     help="put N layers before the signature whose payload blobs are missing (pushed, then deleted)")
    sub.add_argument("--pad-manifest", type=int, default=0, metavar="N",
                     help="an N-byte annotation in the signature manifest (an oversized manifest)")
    sub.add_argument("--wrong-digest", action="store_true", help="the payload names another digest (a refusal test)")
    sub.add_argument("--corrupt", action="store_true", help="alter the signature's last byte (a refusal test)")
    sub.add_argument("--append", action="store_true", help="add a layer to an existing .sig manifest instead of replacing it")
    sub.add_argument("--cert", help="keyless: the signing certificate (PEM), e.g. keyless-ca's leaf.pem; --key is its key")
    sub.add_argument("--chain", help="keyless: the chain annotation's PEM (e.g. keyless-ca's ca.pem; default empty)")
    sub.add_argument("--rekor-key", help="keyless: the test Rekor private key (keyless-ca's rekor.key) signing the bundle")
    sub.add_argument("--log-index", type=int, default=1, help="the bundle's logIndex (default 1)")
    sub.add_argument("--integrated-time", type=int, help="the bundle's integratedTime, Unix seconds (default: now; "
                     "outside the certificate's validity for a refusal test)")
    tls_and_user(sub, "plain HTTP")

    sub = command("bundle", cmd_bundle, """Write a Sigstore bundle (v0.3 JSON) for a file, as cosign sign-blob --new-bundle-format.

The bundle (mediaType application/vnd.dev.sigstore.bundle.v0.3+json) has
messageSignature {messageDigest {algorithm SHA2_256, digest: base64 SHA-256 of
FILE}, signature: base64 DER ECDSA P-256 SHA-256 over FILE's bytes}. With a key
only, verificationMaterial is {publicKey {hint: base64 SHA-256 of the public
key's DER SPKI}, tlogEntries []}. With --cert and --rekor-key (keyless), it is
{certificate {rawBytes: base64 DER of the leaf}, tlogEntries [one hashedrekord
0.0.1 entry: logIndex, logId.keyId, integratedTime (strings as protobuf JSON
writes int64), inclusionPromise.signedEntryTimestamp (the Rekor key's SET over
the canonical {body, integratedTime, logID, logIndex}), canonicalizedBody]}.
Prints
  {"bundle": PATH, "digest": "sha256:HEX" (of the bytes signed), "log_id": HEX or null}""")
    sub.add_argument("--wasm", required=True, metavar="FILE", help="the pack (.wasm) the bundle is for")
    sub.add_argument("--key", required=True, help="private key: PKCS#8 PEM, or cosign.key (password from COSIGN_PASSWORD)")
    sub.add_argument("--cert", help="keyless: the signing certificate (PEM), e.g. keyless-ca's leaf.pem; --key is its key")
    sub.add_argument("--rekor-key", help="keyless: the test Rekor private key (keyless-ca's rekor.key) signing the SET")
    sub.add_argument("--log-index", type=int, default=1, help="the entry's logIndex (default 1)")
    sub.add_argument("--integrated-time", type=int, help="the entry's integratedTime, Unix seconds (default: now)")
    sub.add_argument("--out", help="where to write the bundle (default: FILE.sigstore.json)")
    sub.add_argument("--corrupt", action="store_true", help="alter the signature's last byte (a refusal test)")
    sub.add_argument("--other-file", metavar="OTHER", help="sign OTHER's bytes and digest instead (a bundle for another file)")

    sub = command("keyless-ca", cmd_keyless_ca, """Make a test Fulcio-like CA, a short-lived signing certificate, and a trusted root.

Writes DIR/ca.pem (root CA), DIR/leaf.pem and DIR/leaf.key (a fresh P-256 key;
the certificate has the SAN IDENTITY (email, or URI), digitalSignature, code-signing EKU,
and the Fulcio issuer extensions 1.3.6.1.4.1.57264.1.1 (raw) and .1.8 (DER
UTF8String) set to URL, valid for MINUTES), DIR/rekor.key and rekor.pub (a test
Rekor key), and DIR/trusted_root.json (Sigstore TrustedRoot JSON naming the CA,
the Rekor key as a tlog, and a test CT log key whose SCT the leaf embeds, as
Fulcio's do: RFC 6962, over the precertificate). With --intermediate, the root
has two intermediates, each a CA entry of the trusted root with the root: one
retired an hour ago (validFor end), one current since; the leaf is issued by the
one named, and DIR/chain.pem is its issuer and the root (a cosign chain
annotation). Prints
  {"ca", "chain", "cert", "key", "rekor_key", "rekor_pub", "trusted_root": PATHS,
   "identity", "issuer", "rekor_log_id": HEX, "not_after": TIME}""")
    sub.add_argument("--out", required=True, help="directory (created)")
    sub.add_argument("--identity", required=True, action="append",
                     help="the certificate's SAN: an email address, or a URI if it has :// (repeat for more)")
    sub.add_argument("--issuer", required=True, help="the OIDC issuer URL in the certificate")
    sub.add_argument("--minutes", type=int, default=10, help="certificate lifetime (default 10)")
    sub.add_argument("--sct", choices=["valid", "none", "unknown-log", "forged"], default="valid",
                     help="the leaf's embedded SCT: by the trusted root's CT log (default), none, by a log the root "
                          "does not name, or naming the root's log but signed with another key")
    sub.add_argument("--source-repository", help="Fulcio's source repository URI extension (.1.12), as a CI build's")
    sub.add_argument("--source-ref", help="Fulcio's source repository ref extension (.1.14)")
    sub.add_argument("--workflow", help="Fulcio's build config URI extension (.1.18): the workflow that ran")
    sub.add_argument("--intermediate", choices=["retired", "current", "rekeyed"],
                     help="issue the leaf from an intermediate: the retired CA entry's or the current one's; "
                          "rekeyed: one CA entry with two intermediates of one name, the leaf from the second")

    sub = command("serve-blob-liar", cmd_serve_blob_liar, """Serve pulls from a real registry, lying as told (plain HTTP on 127.0.0.1).

Relays GET, HEAD, POST, PUT and PATCH to UPSTREAM (an upload's Location is
the upstream's own). With --corrupt-blob DIGEST, that blob's first
byte is flipped (same size, so only a digest check catches it); with
--pad-manifest N, every manifest gets N spaces appended (an oversized manifest
whose digest no longer matches). Prints one JSON line, then serves until killed:
  {"address": "127.0.0.1:PORT", "pid": N}""")
    sub.add_argument("--upstream", required=True, help="the real registry's ADDRESS")
    sub.add_argument("--upstream-ca", help="the real registry's CA when it serves TLS")
    sub.add_argument("--user", help="USER:PASSWORD for the upstream")
    sub.add_argument("--corrupt-blob", action="append", metavar="DIGEST", help="sha256:HEX of a blob to corrupt (repeatable)")
    sub.add_argument("--pad-manifest", type=int, default=0, metavar="N", help="append N bytes to every manifest")
    sub.add_argument("--bearer", metavar="USER:PASSWORD", help="require a Bearer token from the liar's own token service, "
                     "which gives one for these Basic credentials")
    sub.add_argument("--garbage-signatures", action="store_true",
                     help="answer every signature manifest (a tag ending in .sig) with JSON that is no manifest")
    sub.add_argument("--token-bytes", type=int, default=0, metavar="N", help="pad the token service's answer with N bytes")
    sub.add_argument("--realm", metavar="URL", help="with --bearer: the realm the challenge names (ADDRESS in it is the liar's "
                     "address, PORT its port; default http://ADDRESS/token)")
    sub.add_argument("--record", metavar="FILE", help="with --bearer: append a JSON line per token request to FILE: "
                     "{\"scope\": SCOPE, \"authorization\": \"basic\" or \"none\"}")
    sub.add_argument("--identity-token", metavar="TOKEN", help="with --bearer: the token service also grants a token for this "
                     "refresh token (POST grant_type=refresh_token, as Docker exchanges a docker config's identitytoken)")
    sub.add_argument("--stall", action="store_true", help="accept every request and never answer it")
    sub.add_argument("--port", type=int, default=0, help="port (default: a free one)")

    args = parser.parse_args(argv)
    args.function(args)


if __name__ == "__main__":
    main()
