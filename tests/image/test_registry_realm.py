"""Registry credentials go to a token realm over https, or over plain http only to the registry
itself, the same machine or a host the user lists (AUTOBENCH_INSECURE_REGISTRIES): a registry
naming ``http://`` on another host got the password sent there in clear."""

from __future__ import annotations

import pytest
from stub_registry import StubRegistry

from autobench.errors import RegistryError
from autobench.image.registry import RegistryClient, RegistrySettings


def challenge_to(realm: str):
    def manifests(h):
        return 401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="s"'}, b""

    return manifests


@pytest.mark.parametrize(
    ("realm", "insecure", "sent"),
    [
        ("http://auth.elsewhere.invalid/token", "", False),
        ("http://auth.elsewhere.invalid:8080/token", "auth.elsewhere.invalid:8080", True),
        ("https://auth.elsewhere.invalid/token", "", True),
    ],
)
def test_credentials_never_travel_in_clear_to_another_host(monkeypatch, realm, insecure, sent):
    calls: list[tuple[str, dict[str, str]]] = []

    def send(self, url, headers, limit, deadline, where, registry):
        calls.append((url, dict(headers)))
        raise RegistryError("stopped here by the test")

    with StubRegistry({"/v2/acme/x/manifests/v1": challenge_to(realm)}) as stub:
        env = {
            "AUTOBENCH_REGISTRY_CREDENTIALS": f"{stub.host}=U:P",
            "U": "me",
            "P": "pw-98765",
            "DOCKER_CONFIG": "/x",
            "AUTOBENCH_INSECURE_REGISTRIES": insecure,
        }
        with RegistryClient(RegistrySettings.from_env(timeout=2.0, env=env)) as c:
            real_send = RegistryClient._send
            monkeypatch.setattr(
                RegistryClient,
                "_send",
                lambda self, url, *a: real_send(self, url, *a) if url.startswith(stub.url) else send(self, url, *a),
            )
            with pytest.raises(RegistryError) as info:
                c.manifest(stub.host, "acme/x", "v1")
    to_realm = [h for u, h in calls if not u.startswith(stub.url)]
    if sent:
        assert to_realm and to_realm[0].get("Authorization", "").startswith("Basic ")
    else:
        assert to_realm == []
        assert "over plain http; the registry credentials are not sent there" in str(info.value)
        assert "pw-98765" not in str(info.value)


def test_a_loopback_realm_still_gets_them(monkeypatch):
    """The same machine (tests, a local registry with its token service) is not another host."""
    realm_calls: list[str] = []

    def token(h):
        realm_calls.append(h.headers.get("Authorization", ""))
        return 401, {}, b"{}"

    with (
        StubRegistry({"/token": token}) as realm,
        StubRegistry({"/v2/acme/x/manifests/v1": challenge_to(f"{realm.url}/token")}) as stub,
    ):
        env = {"AUTOBENCH_REGISTRY_CREDENTIALS": f"{stub.host}=U:P", "U": "me", "P": "pw-98765", "DOCKER_CONFIG": "/x"}
        with RegistryClient(RegistrySettings.from_env(timeout=2.0, env=env)) as c, pytest.raises(RegistryError):
            c.manifest(stub.host, "acme/x", "v1")
    assert realm_calls and realm_calls[0].startswith("Basic ")
