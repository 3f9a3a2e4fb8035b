"""A REAL container registry on loopback for the image tests: Debian's `docker-registry` package
(the CNCF distribution server, 2.8), started per test with its own storage folder, deletion
enabled and optionally htpasswd authentication.  The tests fill it over HTTP (stdlib urllib, not
the code under test) with configs, layers and manifests they build themselves -- no docker
engine is involved.  `.ci/run` installs the package (and apache2-utils for `htpasswd`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

BINARY = shutil.which("docker-registry") or "/usr/bin/docker-registry"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def htpasswd_line(user: str, password: str) -> str:
    """A bcrypt htpasswd entry, as `htpasswd -B` writes it (apache2-utils)."""
    out = subprocess.run(["htpasswd", "-Bbn", user, password], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()


@dataclass
class Pushed:
    digest: str  # the manifest (or index) digest
    platforms: dict[str, str] = field(default_factory=dict)  # platform -> manifest digest
    configs: dict[str, str] = field(default_factory=dict)  # platform -> config digest


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenIssuer:
    """Signs registry bearer tokens the way a token service (auth.docker.io, ghcr.io/token) does:
    an RS256 JWT whose x5c header carries a self-signed certificate that the registry trusts
    (``auth: token: rootcertbundle``).  The HTTP realm in front of it lives in the test."""

    ISSUER = "autobench-test-issuer"
    SERVICE = "registry.autobench.test"

    def __init__(self, folder: Path):
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "autobench token issuer")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.bundle = folder / "token-root.pem"
        self.bundle.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self._der = base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()

    def token(self, access: list[dict], subject: str = "") -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._der]}
        claims = {
            "iss": self.ISSUER,
            "sub": subject,
            "aud": self.SERVICE,
            "exp": now + 600,
            "nbf": now - 60,
            "iat": now,
            "jti": f"jti-{now}-{id(access)}",
            "access": access,
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"


class LiveRegistry:
    def __init__(self, root: Path, *, auth: tuple[str, str] | None = None, token_realm: str | None = None):
        self.root = root
        self.auth = auth
        self.token_realm = token_realm  # bearer-token auth: the registry sends clients to this realm
        self.issuer: TokenIssuer | None = None
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._seq = 0

    # -- process ----------------------------------------------------------------------------------
    def start(self) -> LiveRegistry:
        self.root.mkdir(parents=True, exist_ok=True)
        storage = self.root / "storage"
        auth = ""
        if self.auth:
            (self.root / "htpasswd").write_text(htpasswd_line(*self.auth) + "\n")
            auth = f"auth:\n  htpasswd:\n    realm: autobench-test\n    path: {self.root / 'htpasswd'}\n"
        if self.token_realm:
            self.issuer = TokenIssuer(self.root)
            auth = (
                f"auth:\n  token:\n    realm: {self.token_realm}\n    service: {TokenIssuer.SERVICE}\n"
                f"    issuer: {TokenIssuer.ISSUER}\n    rootcertbundle: {self.issuer.bundle}\n"
            )
        config = self.root / "config.yml"
        config.write_text(
            "version: 0.1\n"
            "log:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n"
            "  maintenance:\n    uploadpurging:\n      enabled: false\n"
            f"http:\n  addr: {self.host}\n" + auth
        )
        self.log = (self.root / "registry.log").open("wb")
        self.proc = subprocess.Popen(
            [BINARY, "serve", str(config)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _, _ = self.request("GET", "/v2/", auth=False)
                if status in (200, 401):
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("docker-registry did not start: " + (self.root / "registry.log").read_text()[-2000:])
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if hasattr(self, "log"):
            self.log.close()

    # -- HTTP ---------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[int, dict[str, str], bytes]:
        url = path if path.startswith("http") else self.url + path
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        if auth and self.auth:
            raw = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {raw}")
        if auth and self.issuer is not None:  # the rig signs its own push token
            repo = path.split("/v2/", 1)[1].split("/blobs/", 1)[0].split("/manifests/", 1)[0] if "/v2/" in path else ""
            access = [{"type": "repository", "name": repo, "actions": ["pull", "push", "delete"]}] if repo else []
            req.add_header("Authorization", f"Bearer {self.issuer.token(access)}")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()

    def push_blob(self, repo: str, data: bytes) -> str:
        digest = sha256(data)
        status, headers, body = self.request("POST", f"/v2/{repo}/blobs/uploads/")
        assert status == 202, (status, body)
        location = headers["location"]
        sep = "&" if "?" in location else "?"
        status, _, body = self.request(
            "PUT", f"{location}{sep}digest={digest}", data, {"Content-Type": "application/octet-stream"}
        )
        assert status == 201, (status, body)
        return digest

    def push_manifest(self, repo: str, reference: str, doc: dict, media_type: str) -> str:
        data = json.dumps(doc, indent=3).encode()
        status, headers, body = self.request(
            "PUT", f"/v2/{repo}/manifests/{reference}", data, {"Content-Type": media_type}
        )
        assert status == 201, (status, body)
        assert headers["docker-content-digest"] == sha256(data)
        return sha256(data)

    def delete_manifest(self, repo: str, digest: str) -> None:
        status, _, body = self.request("DELETE", f"/v2/{repo}/manifests/{digest}")
        assert status == 202, (status, body)

    def blob_file(self, digest: str) -> Path:
        hexpart = digest.split(":", 1)[1]
        return (
            self.root / "storage" / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexpart[:2] / hexpart / "data"
        )

    # -- images -----------------------------------------------------------------------------------
    def _platform_manifest(
        self, repo: str, os_: str, arch: str, created: str, docker: bool, variant: str | None = None
    ) -> tuple[str, str, int]:
        self._seq += 1
        config = {
            "architecture": arch,
            "os": os_,
            "created": created,
            "config": {"Env": ["PATH=/usr/bin"], "Labels": {"seq": str(self._seq)}},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
        if variant:
            config["variant"] = variant
        config_bytes = json.dumps(config).encode()
        layer = f"layer {repo} {arch} {created} {self._seq}".encode()
        config_digest = self.push_blob(repo, config_bytes)
        layer_digest = self.push_blob(repo, layer)
        manifest = {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST if docker else OCI_MANIFEST,
            "config": {
                "mediaType": DOCKER_CONFIG if docker else OCI_CONFIG,
                "digest": config_digest,
                "size": len(config_bytes),
            },
            "layers": [
                {"mediaType": DOCKER_LAYER if docker else OCI_LAYER, "digest": layer_digest, "size": len(layer)}
            ],
        }
        data = json.dumps(manifest, indent=3).encode()
        digest = self.push_manifest(repo, sha256(data), manifest, manifest["mediaType"])
        return digest, config_digest, len(data)

    def image(
        self, repo: str, tag: str, *, arch: str = "amd64", created: str = "2026-11-01T00:00:00Z", docker: bool = False
    ) -> Pushed:
        """A single-platform image tagged ``tag``."""
        digest, config, _ = self._platform_manifest(repo, "linux", arch, created, docker)
        status, _, body = self.request(
            "GET", f"/v2/{repo}/manifests/{digest}", headers={"Accept": OCI_MANIFEST + ", " + DOCKER_MANIFEST}
        )
        assert status == 200
        media = DOCKER_MANIFEST if docker else OCI_MANIFEST
        self.push_manifest(repo, tag, json.loads(body), media)
        return Pushed(digest, {f"linux/{arch}": digest}, {f"linux/{arch}": config})

    def index(
        self,
        repo: str,
        tag: str,
        *,
        archs: tuple[str, ...] = ("arm64", "amd64"),
        created: str = "2026-11-01T00:00:00Z",
        docker: bool = False,
        attestation: bool = True,
    ) -> Pushed:
        """A multi-arch index (OCI, or a Docker manifest list) tagged ``tag``."""
        pushed = Pushed("")
        entries = []
        for arch in archs:
            digest, config, size = self._platform_manifest(
                repo, "linux", arch, created, docker, "v8" if arch == "arm64" else None
            )
            platform = {"architecture": arch, "os": "linux"}
            if arch == "arm64":
                platform["variant"] = "v8"
            entries.append(
                {
                    "mediaType": DOCKER_MANIFEST if docker else OCI_MANIFEST,
                    "digest": digest,
                    "size": size,
                    "platform": platform,
                }
            )
            pushed.platforms[f"linux/{arch}"] = digest
            pushed.configs[f"linux/{arch}"] = config
        if attestation and not docker:  # buildx adds one per platform, as unknown/unknown
            digest, _, size = self._platform_manifest(repo, "unknown", "unknown", created, False)
            entries.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": digest,
                    "size": size,
                    "platform": {"architecture": "unknown", "os": "unknown"},
                }
            )
        doc = {"schemaVersion": 2, "mediaType": DOCKER_LIST if docker else OCI_INDEX, "manifests": entries}
        pushed.digest = self.push_manifest(repo, tag, doc, doc["mediaType"])
        return pushed
