"""The event loop both the client and the synthetic server run on: uvloop when installed.

uvloop (libuv) cuts the per-callback and per-socket-read cost of the loop, which
is what limits a Python benchmark client at high concurrency.  Set
``AUTOBENCH_EVENT_LOOP=asyncio`` to force the standard library loop (to compare
the two); the loop used is recorded in the result (``event_loop``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_factory() -> tuple[LoopFactory | None, str]:
    """(factory for ``asyncio.Runner(loop_factory=...)``, name): uvloop's, or (None, "asyncio")."""
    if os.environ.get("AUTOBENCH_EVENT_LOOP", "").strip().lower() != "asyncio":
        try:
            import uvloop  # type: ignore[import-not-found, unused-ignore]  # an optional dependency

            return uvloop.new_event_loop, "uvloop"
        except ImportError:
            pass
    return None, "asyncio"
