"""Container image references: the OCI / docker reference grammar, parsed and checked.

CONTRACT (other modules rely on it):
    parse_image_ref(text) -> ImageRef        raises ImageRefError (a ValueError) when ``text`` is
                                             not a reference docker would accept as an image
    ImageRef.domain      registry host[:port] as written, or None (Docker Hub implied)
    ImageRef.path        repository path as written, without the domain ("vllm/vllm-openai")
    ImageRef.tag         tag as written, or None
    ImageRef.digest      "algo:hex" as written, or None
    ImageRef.name        domain/path as written ("ghcr.io/org/img", "vllm/vllm-openai")
    ImageRef.registry    the registry docker contacts ("docker.io" when no domain is written)
    ImageRef.repository  the full repository on that registry ("library/ubuntu" for "ubuntu")
    ImageRef.canonical   "docker.io/library/ubuntu:latest"-style full reference
    ImageRef.untagged    neither tag nor digest written (docker would pull ":latest")
    ImageRef.pinned      a digest is written (the bytes cannot move)
    ImageRef.effective_tag  the tag docker resolves: the written one, "latest" when untagged,
                            None when only a digest is written
    ImageRef.with_digest(d) -> ImageRef      same name and tag, digest replaced (for pinning)
    str(ImageRef)        the reference as written (round-trips through parse_image_ref)

Grammar (github.com/distribution/reference, reference.go; docker's own parser):

    reference        := name [ ":" tag ] [ "@" digest ]
    name             := [domain '/'] path-component ['/' path-component]*
    domain           := host [':' port-number]
    host             := domain-name | IPv4address | '[' IPv6address ']'
    domain-name      := domain-component ['.' domain-component]*
    domain-component := /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
    path-component   := /[a-z0-9]+/ [separator /[a-z0-9]+/]*      separator := [._] | __ | -+
    tag              := /[\\w][\\w.-]{0,127}/
    digest           := algorithm ":" hex       (sha256: 64, sha384: 96, sha512: 128 lower-case hex)

The first ``/``-separated part is a domain only if it contains ``.`` or ``:``, is ``localhost``,
or has an upper-case letter (docker's ``splitDockerDomain``); the name is at most 255 characters.
Error messages never repeat the value (a misplaced token must not be echoed): they name the
position and the offending character, escaped.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

DEFAULT_REGISTRY = "docker.io"
NAME_MAX = 255  # distribution/reference NameTotalLengthMax
REF_MAX = 512  # name + tag + digest; anything longer is not an image reference

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = re.compile(rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*", re.ASCII)
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = re.compile(rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])", re.ASCII)
_PORT = re.compile(r"[0-9]{1,5}", re.ASCII)
_TAG = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)
_DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
_DIGEST = re.compile(r"(sha256|sha384|sha512):([0-9a-f]+)", re.ASCII)
# Every character any part of a reference may hold; anything else is refused up front.
_ALLOWED = re.compile(r"[A-Za-z0-9._:/@\[\]-]", re.ASCII)


class ImageRefError(ValueError):
    """``text`` is not an image reference.  ``reason`` says what is wrong without repeating it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ImageRef:
    domain: str | None
    path: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        return f"{self.domain}/{self.path}" if self.domain else self.path

    @property
    def registry(self) -> str:
        return self.domain or DEFAULT_REGISTRY

    @property
    def repository(self) -> str:
        if self.domain is None and "/" not in self.path:
            return f"library/{self.path}"
        return self.path

    @property
    def untagged(self) -> bool:
        return self.tag is None and self.digest is None

    @property
    def pinned(self) -> bool:
        return self.digest is not None

    @property
    def effective_tag(self) -> str | None:
        if self.tag is not None:
            return self.tag
        return None if self.digest is not None else "latest"

    @property
    def canonical(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.effective_tag is not None:
            text += f":{self.effective_tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text

    def with_digest(self, digest: str) -> ImageRef:
        _check_digest(digest)
        return replace(self, digest=digest)

    def __str__(self) -> str:
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def _char(ch: str) -> str:
    """One character for a message: printable ones quoted, others as an escape."""
    if ch.isprintable() and not ch.isspace():
        return f"'{ch}'"
    return repr(ch)[1:-1] if ch not in (" ",) else "a space"


def _check_digest(digest: str) -> None:
    m = _DIGEST.fullmatch(digest)
    if m is None:
        algo = digest.split(":", 1)[0] if ":" in digest else ""
        if algo and algo not in _DIGEST_LENGTHS:
            raise ImageRefError("the digest algorithm is not sha256, sha384 or sha512")
        raise ImageRefError("the digest is not algorithm:hex (e.g. sha256: and 64 lower-case hex digits)")
    algo, hexpart = m.group(1), m.group(2)
    if len(hexpart) != _DIGEST_LENGTHS[algo]:
        raise ImageRefError(f"a {algo} digest has {_DIGEST_LENGTHS[algo]} hex digits, this one has {len(hexpart)}")


def _split_domain(name: str) -> tuple[str | None, str]:
    first, sep, rest = name.partition("/")
    if sep and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        return first, rest
    return None, name


def _check_domain(domain: str) -> None:
    host, port = domain, None
    if domain.startswith("["):
        end = domain.find("]")
        if end == -1:
            raise ImageRefError("the registry's IPv6 address has no closing ']'")
        host, after = domain[: end + 1], domain[end + 1 :]
        if after:
            if not after.startswith(":"):
                raise ImageRefError("the registry host is not host[:port]")
            port = after[1:]
    elif ":" in domain:
        host, port = domain.split(":", 1)
    if not _HOST.fullmatch(host):
        raise ImageRefError("the registry host is not a valid host name (letters, digits, '-', '.')")
    if port is not None and (not _PORT.fullmatch(port) or not 0 < int(port) < 65536):
        raise ImageRefError("the registry port is not a number from 1 to 65535")


def _check_path(path: str) -> None:
    if not path:
        raise ImageRefError("the repository name is empty")
    for index, component in enumerate(path.split("/"), 1):
        if not component:
            raise ImageRefError(f"repository path component {index} is empty ('//' or a trailing '/')")
        if _PATH_COMPONENT.fullmatch(component):
            continue
        if component.lower() != component and _PATH_COMPONENT.fullmatch(component.lower()):
            raise ImageRefError("the repository name must be lower-case")
        raise ImageRefError(
            f"repository path component {index} is not lower-case letters and digits joined by '.', '_', '__' or '-'"
        )


def parse_image_ref(text: str) -> ImageRef:
    """Parse ``text`` as an image reference (see the module docstring), or raise ImageRefError."""
    if not isinstance(text, str):
        raise ImageRefError("an image reference is text")
    return _parse(text)


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ImageRef:
    """``parse_image_ref`` of a string, remembered (a recipe's image is parsed by the schema, the
    rules and the pins; an experiment's thousand treatments share it)."""
    if not text:
        raise ImageRefError("the image reference is empty")
    if text.startswith("-"):
        raise ImageRefError("starts with '-', so docker would read it as an option, not an image")
    if len(text) > REF_MAX:
        raise ImageRefError(f"is {len(text)} characters long; an image reference is at most {REF_MAX}")
    for position, ch in enumerate(text, 1):
        if ch.isspace() or not ch.isprintable():
            raise ImageRefError(f"contains whitespace or a control character ({_char(ch)}) at character {position}")
        if not _ALLOWED.fullmatch(ch):
            raise ImageRefError(f"contains {_char(ch)} at character {position}, which no image reference allows")
    rest, at, digest = text.partition("@")
    if at:
        if "@" in digest:
            raise ImageRefError("contains more than one '@'")
        _check_digest(digest)
    name, tag = rest, None
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):
        name, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise ImageRefError("the tag is not 1-128 letters, digits, '_', '.' or '-' (not starting with '.' or '-')")
    if not name:
        raise ImageRefError("the image name is empty")
    if len(name) > NAME_MAX:
        raise ImageRefError(f"the image name is {len(name)} characters long; docker allows at most {NAME_MAX}")
    domain, path = _split_domain(name)
    if domain is not None:
        _check_domain(domain)
    _check_path(path)
    if domain is None and re.fullmatch(r"[a-f0-9]{64}", path):
        raise ImageRefError("a 64-hex name is an image id, not a repository name")
    return ImageRef(domain=domain, path=path, tag=tag, digest=digest if at else None)


def is_image_ref(text: str) -> bool:
    """Whether ``text`` parses as an image reference."""
    try:
        parse_image_ref(text)
    except ImageRefError:
        return False
    return True
