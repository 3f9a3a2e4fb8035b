"""The OCI distribution client and tag resolution against the REAL registry (docker-registry on
loopback), plus a scripted server for the faults a real registry does not produce."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
from pathlib import Path

import pytest
from registry_rig import DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from stub_registry import StubRegistry

from autobench.errors import RegistryError
from autobench.image.registry import ManifestNotFound, RegistryClient, RegistrySettings, parse_challenge
from autobench.image.resolve import resolve


def client(env: dict[str, str] | None = None, timeout: float = 2.0) -> RegistryClient:
    return RegistryClient(RegistrySettings.from_env(timeout=timeout, env=env or {"DOCKER_CONFIG": "/nonexistent"}))


@pytest.mark.integration
def test_a_multi_arch_index_resolves_to_its_digest_and_both_platform_manifests(registry):
    pushed = registry.index("vllm/vllm-openai", "nightly", created="2026-11-20T03:00:00Z")
    with client() as c:
        got = resolve(c, registry.host, "vllm/vllm-openai", "nightly")
    assert got.digest == pushed.digest and got.media_type == OCI_INDEX
    assert list(got.platforms) == ["linux/arm64", "linux/amd64"]  # the attestation entry is skipped
    for name, p in got.platforms.items():
        assert p.digest == pushed.platforms[name] and p.config == pushed.configs[name]
        assert p.created == "2026-11-20T03:00:00Z"


@pytest.mark.integration
def test_a_docker_manifest_list_and_a_single_platform_image(registry):
    lst = registry.index("acme/engine", "v1", docker=True)
    single = registry.image("acme/engine", "arm-only", arch="arm64", docker=True, created="2026-10-01T00:00:00Z")
    with client() as c:
        got = resolve(c, registry.host, "acme/engine", "v1")
        assert got.digest == lst.digest and set(got.platforms) == {"linux/arm64", "linux/amd64"}
        got = resolve(c, registry.host, "acme/engine", "arm-only")
        assert got.digest == single.digest and got.media_type == DOCKER_MANIFEST
        assert {k: v.digest for k, v in got.platforms.items()} == {"linux/arm64": single.digest}
        assert got.created == "2026-10-01T00:00:00Z"
        # by digest: the same bytes, verified against the digest asked for
        assert resolve(c, registry.host, "acme/engine", lst.digest).digest == lst.digest


@pytest.mark.integration
def test_a_moved_tag_resolves_to_the_new_digest_and_a_deleted_one_is_not_found(registry):
    old = registry.index("vllm/vllm-openai", "nightly", created="2026-11-01T00:00:00Z")
    new = registry.index("vllm/vllm-openai", "nightly", created="2026-11-02T00:00:00Z")
    assert old.digest != new.digest
    with client() as c:
        assert resolve(c, registry.host, "vllm/vllm-openai", "nightly").digest == new.digest
        registry.delete_manifest("vllm/vllm-openai", new.digest)
        with pytest.raises(ManifestNotFound) as err:
            c.manifest(registry.host, "vllm/vllm-openai", "nightly")
        assert str(err.value).startswith(f"{registry.host}/vllm/vllm-openai:nightly: not found on {registry.host} (404")
        assert "nightly tags are garbage-collected" in str(err.value)
        with pytest.raises(ManifestNotFound, match="nobody/nothing:latest: not found on"):
            c.manifest(registry.host, "nobody/nothing", "latest")


@pytest.mark.integration
def test_a_platform_missing_from_the_index_is_one_clear_error(registry):
    registry.index("acme/armonly", "v1", archs=("arm64",))
    registry.image("acme/x86", "v1", arch="amd64")
    with client() as c:
        assert list(resolve(c, registry.host, "acme/armonly", "v1").platforms) == ["linux/arm64"]
        with pytest.raises(RegistryError) as err:
            resolve(c, registry.host, "acme/armonly", "v1", platforms=["linux/arm64", "linux/amd64"])
        assert "platform linux/amd64 missing from the multi-arch index (it has: linux/arm64)" in str(err.value)
        with pytest.raises(RegistryError, match="a single-platform image for linux/amd64, not linux/arm64"):
            resolve(c, registry.host, "acme/x86", "v1", platforms=["linux/arm64"])


@pytest.mark.integration
def test_bytes_that_do_not_match_their_digest_are_refused(registry):
    pushed = registry.index("acme/tampered", "v1")
    # Alter the stored platform manifest on disk: the registry serves the altered bytes as they are.
    path = registry.blob_file(pushed.platforms["linux/amd64"])
    path.write_bytes(path.read_bytes().replace(b'"schemaVersion": 2', b'"schemaVersion":  2'))
    with client() as c, pytest.raises(RegistryError) as err:
        resolve(c, registry.host, "acme/tampered", "v1")
    msg = str(err.value)
    assert "the bytes served do not match their digest (expected sha256:" in msg
    assert "nothing was written" in msg
    # ... and a tag whose bytes differ from the Docker-Content-Digest the registry announces
    tag_path = registry.blob_file(pushed.digest)
    tag_path.write_bytes(tag_path.read_bytes() + b"\n")
    with client() as c, pytest.raises(RegistryError, match="do not match their digest"):
        c.manifest(registry.host, "acme/tampered", "v1")


def _docker_config(home: Path, registry: str, user: str, password: str) -> dict[str, str]:
    folder = home / ".docker"
    folder.mkdir(parents=True, exist_ok=True)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {registry: {"auth": auth}}}))
    return {"DOCKER_CONFIG": str(folder)}


@pytest.mark.integration
def test_htpasswd_registry_anonymous_docker_config_env_names_and_wrong_password(auth_registry, tmp_path):
    pushed = auth_registry.image("private/engine", "v1")
    host = auth_registry.host
    with client() as c, pytest.raises(RegistryError) as err:
        c.manifest(host, "private/engine", "v1")
    assert f"{host} requires credentials (401)" in str(err.value)
    assert "docker login" in str(err.value) and "AUTOBENCH_REGISTRY_CREDENTIALS" in str(err.value)

    env = _docker_config(tmp_path / "h1", host, "bench", "s3cret-registry-pass")
    with client(env) as c:
        assert resolve(c, host, "private/engine", "v1").digest == pushed.digest

    env = {
        "DOCKER_CONFIG": "/nonexistent",
        "AUTOBENCH_REGISTRY_CREDENTIALS": f"ghcr.io=A:B, {host}=REG_USER:REG_PASS",
        "REG_USER": "bench",
        "REG_PASS": "s3cret-registry-pass",
    }
    with client(env) as c:
        assert c.manifest(host, "private/engine", "v1").digest == pushed.digest

    env = _docker_config(tmp_path / "h2", host, "bench", "wrong-password-123")
    with client(env) as c, pytest.raises(RegistryError) as err:
        c.manifest(host, "private/engine", "v1")
    msg = str(err.value)
    assert (
        f"{host} rejected the credentials from docker config {tmp_path / 'h2' / '.docker' / 'config.json'} (401)" in msg
    )
    assert "wrong-password-123" not in msg

    env = {"DOCKER_CONFIG": "/nonexistent", "AUTOBENCH_REGISTRY_CREDENTIALS": f"{host}=REG_USER:REG_PASS"}
    with client(env) as c, pytest.raises(RegistryError, match="names REG_USER, REG_PASS for .* but it is not set"):
        c.manifest(host, "private/engine", "v1")


def test_the_bearer_token_flow_sends_credentials_only_to_the_realm():
    """Docker Hub / ghcr.io: 401 + WWW-Authenticate: Bearer realm=... -> token -> retry."""
    manifest = json.dumps(
        {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": {"digest": "sha256:" + "0" * 64}}
    ).encode()
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    tokens: list[dict[str, str]] = []

    def token(h):
        tokens.append({"path": h.path, "auth": h.headers.get("Authorization", "")})
        return 200, {"Content-Type": "application/json"}, b'{"token": "tok-123456"}'

    def manifests(h):
        if h.headers.get("Authorization") != "Bearer tok-123456":
            challenge = (
                f'Bearer realm="{stub.url}/token",service="stub.registry",scope="repository:library/ubuntu:pull"'
            )
            return 401, {"WWW-Authenticate": challenge}, b'{"errors":[{"code":"UNAUTHORIZED"}]}'
        return 200, {"Content-Type": OCI_MANIFEST, "Docker-Content-Digest": digest}, manifest

    with StubRegistry({"/token": token, "/v2/library/ubuntu/manifests/24.04": manifests}) as stub:
        env = {"AUTOBENCH_REGISTRY_CREDENTIALS": f"{stub.host}=U:P", "U": "me", "P": "pw-98765", "DOCKER_CONFIG": "/x"}
        with client(env) as c:
            got = c.manifest(stub.host, "library/ubuntu", "24.04")
            c.manifest(stub.host, "library/ubuntu", "24.04")  # the token is reused
        assert got.digest == digest
        assert len(tokens) == 1
        assert (
            "scope=repository%3Alibrary%2Fubuntu%3Apull" in tokens[0]["path"]
            and "service=stub.registry" in tokens[0]["path"]
        )
        assert tokens[0]["auth"] == "Basic " + base64.b64encode(b"me:pw-98765").decode()
        manifest_auths = [h.get("authorization") for p, h in stub.seen if "/manifests/" in p]
        assert manifest_auths == [None, "Bearer tok-123456", "Bearer tok-123456"]  # never the password


def test_anonymous_token_flow_and_a_token_service_that_refuses():
    def token(h):
        return 401, {}, b"{}"

    def manifests(h):
        return 401, {"WWW-Authenticate": f'Bearer realm="{stub.url}/token",service="s"'}, b""

    with StubRegistry({"/token": token, "/v2/acme/x/manifests/v1": manifests}) as stub:
        with client() as c, pytest.raises(RegistryError, match="token service refuses anonymous access"):
            c.manifest(stub.host, "acme/x", "v1")
        assert "authorization" not in stub.seen[1][1]  # anonymous: no credentials at all


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ((500, {}, b"boom"), "answered HTTP 500"),
        ((403, {}, b""), "denied access (403)"),
        ((429, {}, b""), "rate limited by"),
        (
            (200, {"Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws"}, b"{}"),
            "unknown manifest media type 'application/vnd.docker.distribution.manifest.v1+prettyjws'",
        ),
        ((200, {"Content-Type": "application/json"}, b"[1]"), "not a JSON object"),
        ((200, {"Content-Type": OCI_MANIFEST}, b"x" * (5 * 1024 * 1024)), "more than the 4194304-byte limit"),
    ],
)
def test_registry_faults_are_one_line(reply, expected):
    stub = StubRegistry({"/v2/acme/x/manifests/v1": lambda h: reply})
    with stub, client() as c, pytest.raises(RegistryError) as err:
        c.manifest(stub.host, "acme/x", "v1")
    text = str(err.value)
    assert text.startswith(f"{stub.host}/acme/x:v1: ") and expected in text and "\n" not in text and "(hint: " in text


def test_a_registry_that_never_answers_and_one_that_is_not_there():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    host = f"127.0.0.1:{sock.getsockname()[1]}"
    try:
        with client(timeout=0.5) as c, pytest.raises(RegistryError, match=f"no answer from {host} within 0.5 s"):
            c.manifest(host, "acme/x", "v1")
    finally:
        sock.close()
    with client() as c, pytest.raises(RegistryError, match=f"cannot reach {host}"):
        c.manifest(host, "acme/x", "v1")


def test_challenge_parsing():
    assert parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull"'
    ) == (
        "bearer",
        {"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:a/b:pull"},
    )
    assert parse_challenge('Basic realm="x"') == ("basic", {"realm": "x"})


def test_settings_pick_the_scheme_and_docker_hub_endpoint():
    s = RegistrySettings.from_env(env={"AUTOBENCH_INSECURE_REGISTRIES": "mirror.lan:5000"})
    assert s.base_url("docker.io") == "https://registry-1.docker.io"
    assert s.base_url("ghcr.io") == "https://ghcr.io"
    assert s.base_url("127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert s.base_url("localhost:5000") == "http://localhost:5000"
    assert s.base_url("mirror.lan:5000") == "http://mirror.lan:5000"
    with pytest.raises(RegistryError, match="AUTOBENCH_REGISTRY_TIMEOUT='soon' is not a number"):
        RegistrySettings.from_env(env={"AUTOBENCH_REGISTRY_TIMEOUT": "soon"})


@pytest.mark.integration
def test_the_bearer_token_flow_against_a_real_registry_with_token_auth(tmp_path):
    """docker-registry with `auth: token` (as Docker Hub and ghcr.io run it): it answers 401 with a
    Bearer challenge naming the realm; the token service (here a loopback realm signing JWTs the
    registry verifies against its root certificate) grants pull to anyone, and to private/* only
    with the right basic credentials."""
    from urllib.parse import parse_qs, urlparse

    from registry_rig import LiveRegistry

    seen: list[tuple[str, str, str | None]] = []
    box: dict[str, LiveRegistry] = {}

    def token(h):
        qs = parse_qs(urlparse(h.path).query)
        scope = qs["scope"][0]
        _, name, actions = scope.split(":")
        auth = h.headers.get("Authorization")
        seen.append((qs["service"][0], scope, auth))
        if name.startswith("private/") and auth != "Basic " + base64.b64encode(b"me:pw-98765").decode():
            return (
                401,
                {"Content-Type": "application/json"},
                b'{"details": "access to the requested resource is not authorized"}',
            )
        issued = box["reg"].issuer.token([{"type": "repository", "name": name, "actions": actions.split(",")}])
        return 200, {"Content-Type": "application/json"}, json.dumps({"token": issued, "expires_in": 300}).encode()

    with StubRegistry({"/token": token}) as realm:
        reg = box["reg"] = LiveRegistry(tmp_path / "token-registry", token_realm=f"{realm.url}/token").start()
        try:
            public = reg.index("library/ubuntu", "24.04")
            private = reg.image("private/engine", "v1")
            status, headers, _ = reg.request("GET", "/v2/library/ubuntu/manifests/24.04", auth=False)
            assert status == 401 and headers["www-authenticate"].startswith(f'Bearer realm="{realm.url}/token"')

            with client() as c:
                got = resolve(c, reg.host, "library/ubuntu", "24.04")
                assert got.digest == public.digest and set(got.platforms) == {"linux/arm64", "linux/amd64"}
                assert seen == [
                    ("registry.autobench.test", "repository:library/ubuntu:pull", None)
                ]  # one anonymous token
                with pytest.raises(RegistryError, match="token service refuses anonymous access"):
                    c.manifest(reg.host, "private/engine", "v1")

            env = {
                "AUTOBENCH_REGISTRY_CREDENTIALS": f"{reg.host}=U:P",
                "U": "me",
                "P": "pw-98765",
                "DOCKER_CONFIG": "/x",
            }
            with client(env) as c:
                assert c.manifest(reg.host, "private/engine", "v1").digest == private.digest
            env["P"] = "wrong-pass-1"
            with client(env) as c, pytest.raises(RegistryError) as err:
                c.manifest(reg.host, "private/engine", "v1")
            assert "token service rejected the credentials from environment U/P (401)" in str(err.value)
            assert "wrong-pass-1" not in str(err.value)
        finally:
            reg.stop()


@pytest.mark.integration
def test_a_digest_the_registry_no_longer_serves_says_so(registry):
    pushed = registry.image("acme/engine", "v1")
    registry.delete_manifest("acme/engine", pushed.digest)
    with client() as c, pytest.raises(ManifestNotFound) as err:
        c.manifest(registry.host, "acme/engine", pushed.digest)
    assert (
        f"{registry.host}/acme/engine@{pushed.digest}: {registry.host} does not (or no longer) serve this digest (404)"
        in str(err.value)
    )


@pytest.mark.integration
def test_a_docker_credential_helper_named_in_the_docker_config(auth_registry, tmp_path):
    """`docker login` with a credential store writes credHelpers / credsStore: the helper program
    `docker-credential-<name> get` (a real executable here) is asked with the server on stdin."""
    pushed = auth_registry.image("private/engine", "v1")
    host = auth_registry.host
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-autobenchtest"
    helper.write_text(
        "#!/bin/sh\n"
        'read server\necho "$server" >> "$(dirname "$0")/asked"\n'
        f'if [ "$server" = "{host}" ]; then echo \'{{"ServerURL": "{host}", "Username": "bench", "Secret": "s3cret-registry-pass"}}\'; '
        'else echo "credentials not found in native keychain"; exit 1; fi\n'
    )
    helper.chmod(0o755)
    folder = tmp_path / "docker"
    folder.mkdir()
    path = f"{bin_dir}:{os.environ['PATH']}"
    (folder / "config.json").write_text(json.dumps({"credHelpers": {host: "autobenchtest"}}))
    with client({"DOCKER_CONFIG": str(folder), "PATH": path}) as c:
        assert c.manifest(host, "private/engine", "v1").digest == pushed.digest
    assert (bin_dir / "asked").read_text().splitlines() == [host]  # asked once, for this registry only

    # credsStore: the one helper for every registry
    (folder / "config.json").write_text(json.dumps({"credsStore": "autobenchtest"}))
    with client({"DOCKER_CONFIG": str(folder), "PATH": path}) as c:
        assert c.manifest(host, "private/engine", "v1").digest == pushed.digest
    # a helper that has nothing for this registry ("not found", exit 1): anonymous, hence the 401
    none = bin_dir / "docker-credential-autobenchnone"
    none.write_text("#!/bin/sh\necho 'credentials not found in native keychain'\nexit 1\n")
    none.chmod(0o755)
    (folder / "config.json").write_text(json.dumps({"credsStore": "autobenchnone"}))
    with (
        client({"DOCKER_CONFIG": str(folder), "PATH": path}) as c,
        pytest.raises(RegistryError, match="requires credentials"),
    ):
        c.manifest(host, "private/engine", "v1")
    # a helper named per registry but not installed is one line
    (folder / "config.json").write_text(json.dumps({"credHelpers": {host: "missing"}}))
    with (
        client({"DOCKER_CONFIG": str(folder), "PATH": path}) as c,
        pytest.raises(RegistryError, match="docker-credential-missing, which is not installed"),
    ):
        c.manifest(host, "private/engine", "v1")
