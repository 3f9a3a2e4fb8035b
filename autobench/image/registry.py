"""The OCI distribution client: manifests and small blobs, authenticated, bounded, verified.

Protocol (the distribution spec, as Docker Hub, ghcr.io and the CNCF registry speak it):

* ``GET /v2/<repository>/manifests/<tag|digest>`` with an ``Accept`` of the four manifest media
  types (OCI index and manifest, Docker manifest list and schema 2).  Anything else served is
  refused ("unknown manifest media type").
* ``GET /v2/<repository>/blobs/<digest>`` for an image config (redirects followed; httpx2 drops
  ``Authorization`` when a redirect leaves the registry's host).
* Auth: the first request goes out anonymous.  A ``401`` with ``WWW-Authenticate: Bearer
  realm=…,service=…,scope=…`` is answered by one token request to the realm (with basic
  credentials when some are found, see ``credentials.py``), then the request is repeated with
  ``Bearer <token>``; ``WWW-Authenticate: Basic`` is answered with basic credentials.  The header
  is kept per (registry, repository) for the rest of the command.

Bounded: every read has ``timeout`` seconds, and each request (auth round trip included) ends
after ``3 × timeout`` at most; a manifest or config body is read up to ``MAX_BODY`` bytes and no
further.  Verified: the bytes of anything fetched by digest must hash to that digest, and a
manifest fetched by tag must hash to the ``Docker-Content-Digest`` the registry announces.

Every failure is one RegistryError line naming ``registry/repository:tag`` and a fix; credential
values never appear in one (messages pass through ``redact``).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autobench.digits import is_digits, load_json
from autobench.errors import RegistryError
from autobench.image.credentials import DOCKER_HUB, ENV_SETTING, Credentials, find_credentials

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_KINDS = {OCI_INDEX: "index", DOCKER_LIST: "index", OCI_MANIFEST: "manifest", DOCKER_MANIFEST: "manifest"}
ACCEPT = ", ".join(MANIFEST_KINDS)
MAX_BODY = 4 * 1024 * 1024  # distribution's own manifest limit; image configs are far smaller
MAX_ERROR_BODY = 64 * 1024
DEFAULT_TIMEOUT = 10.0
DOCKER_HUB_API = "https://registry-1.docker.io"
HASHES = {"sha256": 64, "sha384": 96, "sha512": 128}
_CHALLENGE_PARAM = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\s]*)')


class ManifestNotFound(RegistryError):
    """The registry has no manifest for this tag or digest (404 MANIFEST_UNKNOWN)."""


def is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _truthy_float(raw: str | None, name: str) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError as exc:
        raise RegistryError(f"{name}={raw!r} is not a number of seconds", hint="set it to e.g. 10") from exc
    if value <= 0:
        raise RegistryError(f"{name} must be positive", hint="set it to e.g. 10")
    return value


@dataclass(frozen=True)
class RegistrySettings:
    timeout: float = DEFAULT_TIMEOUT
    insecure: frozenset[str] = frozenset()  # hosts spoken to over plain http (loopback always is)
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, *, timeout: float | None = None, env: Mapping[str, str] | None = None) -> RegistrySettings:
        """AUTOBENCH_REGISTRY_TIMEOUT (else AUTOBENCH_HUB_TIMEOUT, else 10 s) and
        AUTOBENCH_INSECURE_REGISTRIES (comma-separated host[:port] reached over http)."""
        env_ = dict(os.environ if env is None else env)
        if timeout is None:
            timeout = (
                _truthy_float(env_.get("AUTOBENCH_REGISTRY_TIMEOUT"), "AUTOBENCH_REGISTRY_TIMEOUT")
                or _truthy_float(env_.get("AUTOBENCH_HUB_TIMEOUT"), "AUTOBENCH_HUB_TIMEOUT")
                or DEFAULT_TIMEOUT
            )
        insecure = frozenset(h.strip() for h in env_.get("AUTOBENCH_INSECURE_REGISTRIES", "").split(",") if h.strip())
        return cls(timeout=float(timeout), insecure=insecure, env=env_)

    def base_url(self, registry: str) -> str:
        if registry in (DOCKER_HUB, "index.docker.io"):
            return DOCKER_HUB_API
        scheme = "http" if registry in self.insecure or is_loopback(registry) else "https"
        return f"{scheme}://{registry}"


@dataclass(frozen=True)
class Manifest:
    """A manifest or index as served, verified against its digest."""

    registry: str
    repository: str
    reference: str  # the tag or digest asked for
    digest: str
    media_type: str
    body: bytes = field(repr=False)
    data: dict[str, Any] = field(repr=False)

    @property
    def kind(self) -> str:
        return MANIFEST_KINDS[self.media_type]


def digest_of(body: bytes, algorithm: str = "sha256") -> str:
    return f"{algorithm}:{hashlib.new(algorithm, body).hexdigest()}"


def is_digest(text: str | None) -> bool:
    if not text or ":" not in text:
        return False
    algo, _, hexpart = text.partition(":")
    return algo in HASHES and len(hexpart) == HASHES[algo] and all(c in "0123456789abcdef" for c in hexpart)


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="…",service="…"`` -> ("bearer", {"realm": …, "service": …})."""
    scheme, _, rest = header.strip().partition(" ")
    params = {}
    for key, value in _CHALLENGE_PARAM.findall(rest):
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[key.lower()] = value
    return scheme.lower(), params


def short(digest: str | None) -> str:
    """``sha256:0123456789ab`` (12 hex digits), for messages."""
    if not digest:
        return "-"
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:12]}"


class RegistryClient:
    """One per command: HTTP connections and auth headers are reused across requests."""

    def __init__(self, settings: RegistrySettings | None = None):
        self.settings = settings or RegistrySettings.from_env()
        self._http: Any = None
        self._auth: dict[tuple[str, str], str] = {}
        self._creds: dict[str, Credentials | None] = {}
        self.requests = 0  # HTTP requests sent (for tests and the benchmark)
        self.sent: list[tuple[str, str]] = []  # (method, path) of every registry request

    # -- plumbing ---------------------------------------------------------------------------------
    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def http(self) -> Any:
        if self._http is None:
            import httpx2

            t = self.settings.timeout
            self._http = httpx2.Client(
                timeout=httpx2.Timeout(t),
                follow_redirects=True,
                max_redirects=5,
                headers={"User-Agent": "autobench"},
            )
        return self._http

    def credentials(self, registry: str) -> Credentials | None:
        if registry not in self._creds:
            self._creds[registry] = find_credentials(registry, self.settings.env)
        return self._creds[registry]

    def redact(self, text: str) -> str:
        for creds in self._creds.values():
            if creds is not None:
                for secret in (
                    creds.password,
                    base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode(),
                ):
                    if len(secret) >= 4:
                        text = text.replace(secret, "***")
        return text

    def _fail(self, where: str, message: str, hint: str, cls: type[RegistryError] = RegistryError) -> RegistryError:
        return cls(self.redact(f"{where}: {message}"), hint=self.redact(hint))

    def _send(
        self,
        url: str,
        headers: dict[str, str],
        limit: int,
        deadline: float,
        where: str,
        registry: str,
        method: str = "GET",
    ) -> Any:
        """GET ``url``; returns (status, headers, body) with the body read up to ``limit`` bytes."""
        import httpx2

        t = self.settings.timeout
        net_hint = (
            f"check the network and that {registry} is the right registry; raise --timeout / "
            "AUTOBENCH_REGISTRY_TIMEOUT; `lock --no-images` pins only the Hub revisions (`--offline`: from "
            "the images docker already has)"
        )
        self.requests += 1
        self.sent.append((method, url.split("/v2/", 1)[-1]))
        try:
            with self.http.stream(method, url, headers=headers) as resp:
                status = resp.status_code
                cap = limit if status < 400 else MAX_ERROR_BODY
                declared = resp.headers.get("content-length")
                if status < 400 and declared and is_digits(declared) and int(declared) > cap:
                    raise self._fail(
                        where,
                        f"the registry announced {int(declared)} bytes, more than the {cap}-byte limit",
                        "this is not an image manifest or config; check the reference",
                    )
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > cap:
                        if status >= 400:
                            break
                        raise self._fail(
                            where,
                            f"the registry sent more than the {cap}-byte limit",
                            "this is not an image manifest or config; check the reference",
                        )
                    if time.monotonic() > deadline:
                        raise TimeoutError
                return status, resp.headers, bytes(body)
        except RegistryError:
            raise
        except (httpx2.TimeoutException, TimeoutError) as exc:
            raise self._fail(where, f"no answer from {registry} within {t:g} s", net_hint) from exc
        except httpx2.TooManyRedirects as exc:
            raise self._fail(where, f"{registry} redirected more than 5 times", net_hint) from exc
        except (httpx2.TransportError, httpx2.InvalidURL, OSError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise self._fail(where, f"cannot reach {registry} ({reason})", net_hint) from exc

    def _may_send_credentials(self, realm: str, registry: str) -> bool:
        """Credentials go to an https realm, or over plain http only to the registry's own host,
        the same machine (loopback) or a host the user lists in AUTOBENCH_INSECURE_REGISTRIES: a
        registry naming ``http://`` on another host would get them sent there in clear."""
        import httpx2

        if realm.startswith("https://"):
            return True
        url = httpx2.URL(realm)
        host = url.host or ""
        hostport = f"{host}:{url.port}" if url.port else host
        return hostport == registry or host == registry or hostport in self.settings.insecure or is_loopback(host)

    def _token(self, challenge: dict[str, str], registry: str, repository: str, where: str, deadline: float) -> str:
        """One request to the bearer realm; returns the token."""
        import httpx2

        realm = challenge.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise self._fail(where, f"{registry} asked for a token from an unusable realm", "check the registry")
        creds = self.credentials(registry)
        if creds is not None and not self._may_send_credentials(realm, registry):
            raise self._fail(
                where,
                f"{registry} asked for a token from {httpx2.URL(realm).host} over plain http; "
                "the registry credentials are not sent there",
                f"the token service must use https, or list its host in AUTOBENCH_INSECURE_REGISTRIES "
                f"if it is yours (plain http sends the password in clear to {httpx2.URL(realm).host})",
            )
        params = {"scope": challenge.get("scope") or f"repository:{repository}:pull"}
        if challenge.get("service"):
            params["service"] = challenge["service"]
        url = str(httpx2.URL(realm).copy_merge_params(params))
        headers = {}
        if creds is not None:
            raw = f"{creds.username}:{creds.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        status, _, body = self._send(url, headers, MAX_ERROR_BODY, deadline, where, registry)
        if status in (401, 403):
            if creds is None:
                raise self._fail(
                    where,
                    f"{registry}'s token service refuses anonymous access ({status})",
                    f"run `docker login {registry}` or name the variables in {ENV_SETTING}",
                )
            raise self._fail(
                where,
                f"{registry}'s token service rejected the credentials from {creds.source} ({status})",
                f"run `docker login {registry}` again, or fix the variables named in {ENV_SETTING}",
            )
        if status != 200:
            raise self._fail(where, f"{registry}'s token service answered HTTP {status}", "retry later")
        try:
            data = load_json(body)
            token = data.get("token") or data.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise self._fail(where, f"{registry}'s token service sent no token", "check the registry")
        return token

    def _get(
        self, registry: str, repository: str, path: str, accept: str | None, where: str, method: str = "GET"
    ) -> tuple[Any, bytes]:
        url = f"{self.settings.base_url(registry)}/v2/{repository}/{path}"
        deadline = time.monotonic() + 3 * self.settings.timeout
        key = (registry, repository)
        for attempt in range(2):
            headers = {"Accept": accept} if accept else {}
            if key in self._auth:
                headers["Authorization"] = self._auth[key]
            status, resp_headers, body = self._send(url, headers, MAX_BODY, deadline, where, registry, method)
            if status == 401 and attempt == 0:
                scheme, challenge = parse_challenge(resp_headers.get("www-authenticate", ""))
                creds = self.credentials(registry)
                if scheme == "bearer":
                    token = self._token(challenge, registry, repository, where, deadline)
                    self._auth[key] = f"Bearer {token}"
                    continue
                if scheme == "basic" and creds is not None and "Authorization" not in headers:
                    raw = f"{creds.username}:{creds.password}".encode()
                    self._auth[key] = "Basic " + base64.b64encode(raw).decode()
                    continue
            if status >= 400:
                raise self._status_error(status, body, registry, repository, where, bool(headers.get("Authorization")))
            return resp_headers, body
        raise AssertionError("unreachable")  # pragma: no cover

    def _status_error(
        self, status: int, body: bytes, registry: str, repository: str, where: str, authorized: bool
    ) -> RegistryError:
        try:
            codes = [str(e.get("code")) for e in load_json(body).get("errors", []) if isinstance(e, dict)]
        except (ValueError, AttributeError):
            codes = []
        creds = self._creds.get(registry)
        login = f"run `docker login {registry}` or name the variables in {ENV_SETTING}"
        if status == 404 or "MANIFEST_UNKNOWN" in codes or "NAME_UNKNOWN" in codes:
            if "NAME_UNKNOWN" in codes:
                return self._fail(
                    where,
                    f"repository {repository} not found on {registry}",
                    "check the image name in the recipe",
                    ManifestNotFound,
                )
            return self._fail(
                where,
                f"not found on {registry} (404{' ' + codes[0] if codes else ''})",
                "check the tag (it may have been deleted: nightly tags are garbage-collected) or pin another",
                ManifestNotFound,
            )
        if status == 401:
            if creds is not None and authorized:
                return self._fail(
                    where,
                    f"{registry} rejected the credentials from {creds.source} (401)",
                    f"run `docker login {registry}` again, or fix the variables named in {ENV_SETTING}",
                )
            return self._fail(
                where,
                f"{registry} requires credentials (401{': not found, or private' if authorized else ''})",
                login if creds is None else "check the image name; these credentials cannot see it",
            )
        if status == 403:
            return self._fail(where, f"{registry} denied access (403)", login)
        if status == 429:
            return self._fail(
                where, f"rate limited by {registry} (429)", f"wait and retry, or log in: {login} (higher limits)"
            )
        return self._fail(
            where, f"{registry} answered HTTP {status}", "the registry is failing; retry later or use --offline"
        )

    # -- the API ----------------------------------------------------------------------------------
    def manifest(self, registry: str, repository: str, reference: str) -> Manifest:
        """The manifest or index at ``reference`` (a tag or a digest), verified."""
        sep = "@" if ":" in reference else ":"
        where = f"{registry}/{repository}{sep}{reference}"
        try:
            headers, body = self._get(registry, repository, f"manifests/{reference}", ACCEPT, where)
        except ManifestNotFound as exc:
            if not is_digest(reference):
                raise
            raise self._fail(
                where,
                f"{registry} does not (or no longer) serve this digest (404)",
                "the image was deleted from the registry; `autobench outdated` shows where its tag points "
                "now -- write the tag back and `autobench lock` to re-pin",
                ManifestNotFound,
            ) from exc
        if is_digest(reference):
            algorithm = reference.split(":", 1)[0]
            got = digest_of(body, algorithm)
            if got != reference:
                raise self._mismatch(where, reference, got)
            digest = reference
        else:
            digest = digest_of(body)
            announced = headers.get("docker-content-digest")
            if announced and is_digest(announced):
                got = digest_of(body, announced.split(":", 1)[0])
                if got != announced:
                    raise self._mismatch(where, announced, got)
                digest = announced
        try:
            data = load_json(body)
        except ValueError as exc:
            raise self._fail(where, "the manifest is not JSON", "check the registry") from exc
        if not isinstance(data, dict):
            raise self._fail(where, "the manifest is not a JSON object", "check the registry")
        declared = data.get("mediaType")
        header_type = headers.get("content-type", "").split(";", 1)[0].strip()
        media_type = declared if isinstance(declared, str) and declared else header_type
        if media_type not in MANIFEST_KINDS:
            raise self._fail(
                where,
                f"unknown manifest media type {media_type[:100]!r}",
                "autobench pins OCI / Docker schema 2 images and indexes; push the image with a current docker",
            )
        return Manifest(registry, repository, reference, digest, media_type, body, data)

    def head_digest(self, registry: str, repository: str, reference: str) -> str:
        """Where a tag points (or that a digest is served) by a HEAD request: Docker Hub does not
        count HEADs against its pull rate limit.  Falls back to a verified GET when the registry
        announces no digest."""
        sep = "@" if is_digest(reference) else ":"
        where = f"{registry}/{repository}{sep}{reference}"
        try:
            headers, _ = self._get(registry, repository, f"manifests/{reference}", ACCEPT, where, "HEAD")
        except ManifestNotFound:
            if not is_digest(reference):
                raise
            return self.manifest(registry, repository, reference).digest  # the digest-specific message
        announced = headers.get("docker-content-digest")
        if announced and is_digest(announced):
            return str(announced)
        return self.manifest(registry, repository, reference).digest

    def blob(self, registry: str, repository: str, digest: str, *, what: str = "blob") -> bytes:
        """A small blob (an image config), verified against ``digest``."""
        where = f"{registry}/{repository}@{digest}"
        if not is_digest(digest):
            raise self._fail(where, f"the {what} digest is malformed", "check the manifest")
        _, body = self._get(registry, repository, f"blobs/{digest}", None, where)
        got = digest_of(body, digest.split(":", 1)[0])
        if got != digest:
            raise self._mismatch(where, digest, got)
        return body

    def _mismatch(self, where: str, expected: str, got: str) -> RegistryError:
        return self._fail(
            where,
            f"the bytes served do not match their digest (expected {short(expected)}, got {short(got)})",
            "a proxy or the registry altered the content; nothing was written -- retry, or check the registry",
        )
