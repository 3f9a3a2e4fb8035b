"""Registry credentials, found by name when a registry asks for them; never written, never echoed.

Where they come from, first match wins:

1. ``AUTOBENCH_REGISTRY_CREDENTIALS``: comma-separated ``REGISTRY=USER_VAR:PASSWORD_VAR`` entries
   that NAME two environment variables (``ghcr.io=GHCR_USER:GHCR_TOKEN``).  The values stay in
   those variables; this setting holds no secret.
2. The user's docker config (``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``), as
   ``docker login`` writes it: ``credHelpers[registry]``, then ``auths[registry]`` (``auth`` is
   base64 ``user:password``, or ``username``/``password``), then ``credsStore``.  A credential
   helper is the program ``docker-credential-<name> get``, run with a bounded time.

Docker Hub is looked up under the keys docker itself uses (``https://index.docker.io/v1/`` first).
An OAuth identity token (``identitytoken``, helper username ``<token>``) is not used: the anonymous
flow is tried instead.
"""

from __future__ import annotations

import base64
import binascii
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autobench.digits import load_json
from autobench.errors import RegistryError
from autobench.files import read_regular

DOCKER_HUB = "docker.io"
DOCKER_HUB_KEYS = (
    "https://index.docker.io/v1/",
    "index.docker.io",
    "docker.io",
    "https://docker.io",
    "registry-1.docker.io",
    "https://registry-1.docker.io",
)
ENV_SETTING = "AUTOBENCH_REGISTRY_CREDENTIALS"
HELPER_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)  # never printed
    source: str = ""  # where they came from, by name only ("docker config /root/.docker/config.json")


def config_path(env: Mapping[str, str]) -> Path:
    folder = env.get("DOCKER_CONFIG")
    if folder:
        return Path(folder).expanduser() / "config.json"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".docker" / "config.json"


def lookup_keys(registry: str) -> tuple[str, ...]:
    if registry in (DOCKER_HUB, "index.docker.io", "registry-1.docker.io"):
        return DOCKER_HUB_KEYS
    return (registry, f"https://{registry}", f"http://{registry}", f"https://{registry}/v1/", f"https://{registry}/v2/")


def _from_env(registry: str, env: Mapping[str, str]) -> Credentials | None:
    raw = env.get(ENV_SETTING, "").strip()
    if not raw:
        return None
    keys = set(lookup_keys(registry))
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, names = item.partition("=")
        user_var, sep2, pass_var = names.partition(":")
        if not sep or not sep2 or not host.strip() or not user_var.strip() or not pass_var.strip():
            raise RegistryError(
                f"{ENV_SETTING}: an entry is not REGISTRY=USER_VAR:PASSWORD_VAR",
                hint="name the variables that hold the user and the password, e.g. ghcr.io=GHCR_USER:GHCR_TOKEN",
            )
        if host.strip() not in keys:
            continue
        user_var, pass_var = user_var.strip(), pass_var.strip()
        missing = [n for n in (user_var, pass_var) if not env.get(n)]
        if missing:
            raise RegistryError(
                f"{ENV_SETTING} names {', '.join(missing)} for {registry}, but it is not set",
                hint=f"export {missing[0]} or remove {registry} from {ENV_SETTING}",
            )
        return Credentials(env[user_var], env[pass_var], f"environment {user_var}/{pass_var}")
    return None


def _helper(name: str, server: str, env: Mapping[str, str], required: bool) -> Credentials | None:
    program = f"docker-credential-{name}"
    try:
        done = subprocess.run(
            [program, "get"],
            input=server,
            capture_output=True,
            text=True,
            timeout=HELPER_TIMEOUT_S,
            env=dict(env),
        )
    except FileNotFoundError as exc:
        if not required:
            return None
        raise RegistryError(
            f"the docker config names the credential helper {program}, which is not installed",
            hint=f"install {program} or remove it from credHelpers in the docker config",
        ) from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RegistryError(
            f"the credential helper {program} did not answer ({type(exc).__name__})",
            hint=f"check that `{program} get` works, or run `docker login` again",
        ) from exc
    if done.returncode != 0:
        return None  # "credentials not found in native keychain": anonymous access
    try:
        data = load_json(done.stdout)
        username, secret = str(data["Username"]), str(data["Secret"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RegistryError(
            f"the credential helper {program} answered something that is not its JSON",
            hint=f"check that `{program} get` works",
        ) from exc
    if username == "<token>" or not secret:
        return None
    return Credentials(username, secret, f"credential helper {program}")


def _from_docker_config(registry: str, env: Mapping[str, str]) -> Credentials | None:
    path = config_path(env)
    try:
        if not path.exists():
            return None
        text = read_regular(path, what="docker config", limit=16 * 2**20, error=RegistryError).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegistryError("the docker config is not UTF-8 text", location=str(path)) from exc
    try:
        config = load_json(text)
    except ValueError as exc:
        raise RegistryError(
            "the docker config is not valid JSON", location=str(path), hint="fix it or run `docker login` again"
        ) from exc
    if not isinstance(config, dict):
        return None
    keys = lookup_keys(registry)
    helpers = config.get("credHelpers") or {}
    for key in keys:
        if isinstance(helpers, dict) and isinstance(helpers.get(key), str):
            return _helper(helpers[key], key, env, required=True)
    auths = config.get("auths") or {}
    for key in keys:
        entry = auths.get(key) if isinstance(auths, dict) else None
        if not isinstance(entry, dict):
            continue
        if entry.get("auth"):
            try:
                user, sep, password = base64.b64decode(str(entry["auth"]), validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
                raise RegistryError(
                    f"the docker config's auth entry for {key} is not base64 user:password",
                    location=str(path),
                    hint=f"run `docker login {registry}` again",
                ) from exc
            if sep and user:
                return Credentials(user, password, f"docker config {path}")
        if entry.get("username") and entry.get("password"):
            return Credentials(str(entry["username"]), str(entry["password"]), f"docker config {path}")
    store = config.get("credsStore")
    if isinstance(store, str) and store:
        return _helper(store, keys[0], env, required=False)
    return None


def find_credentials(registry: str, env: Mapping[str, str] | None = None) -> Credentials | None:
    """Credentials for ``registry`` (host[:port] as docker names it), or None: anonymous."""
    env_ = os.environ if env is None else env
    return _from_env(registry, env_) or _from_docker_config(registry, env_)
