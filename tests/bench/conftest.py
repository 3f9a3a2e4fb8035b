"""Fixtures for the bench tests: the synthetic server in-process (its own loop, in a thread)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from autobench.bench.synthetic import SyntheticConfig, ThreadedServer


@pytest.fixture
def synth() -> Iterator[Callable[..., ThreadedServer]]:
    """``srv = synth(ttft_ms=50, itl_ms=10)``: a started synthetic server on an ephemeral port."""
    started: list[ThreadedServer] = []

    def start(**kw: object) -> ThreadedServer:
        kw.setdefault("model", "m")
        kw.setdefault("log_stats_interval", 0)
        srv = ThreadedServer(SyntheticConfig(port=0, **kw)).start()  # type: ignore[arg-type]
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
