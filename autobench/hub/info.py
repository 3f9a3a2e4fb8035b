"""``autobench hub info REPO[@REV]``: sha, architecture fingerprint and trust facts of one repo."""

from __future__ import annotations

import re
from typing import Any

from autobench.errors import UsageError
from autobench.hub.fingerprint import fingerprint
from autobench.hub.resolve import Resolver
from autobench.hub.trust import trust_facts

REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[A-Za-z0-9][\w.\-]*$")


def parse_ref(text: str) -> tuple[str, str]:
    """'owner/name@rev' -> (repo, rev); the revision defaults to main."""
    repo, _, rev = text.partition("@")
    if not REPO_RE.match(repo) or (_ and not rev):
        raise UsageError(
            f"{text!r} is not REPO[@REVISION]",
            hint="write it like z-lab/Qwen3.5-122B-A10B-DFlash@main or …@<40-hex sha>",
        )
    return repo, rev or "main"


def hub_info(text: str, resolver: Resolver) -> dict[str, Any]:
    repo, rev = parse_ref(text)
    resolved = resolver.resolve(repo, rev)
    return {
        "repo": repo,
        "revision": rev,
        "sha": resolved.sha,
        "resolved_at": resolved.resolved_at,
        "resolved_from": resolved.source,
        "fingerprint": fingerprint(resolved.config),
        "trust": trust_facts(info=resolved.info, config=resolved.config, files=resolved.files),
    }
