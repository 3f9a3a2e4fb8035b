"""Readiness polling against real loopback servers (the synthetic server in a thread)."""

from __future__ import annotations

import threading

from run_helpers import free_port

from autobench.bench.synthetic import SyntheticConfig, ThreadedServer
from autobench.run.readiness import probe, wait_ready


def test_ready_when_health_and_model_list_answer():
    with ThreadedServer(SyntheticConfig(port=0, model="tiny")) as srv:
        r = wait_ready(
            f"{srv.base_url}/health",
            f"{srv.base_url}/v1/models",
            "tiny",
            timeout_s=5,
            exited=lambda: None,
        )
    assert r.ready and r.reason == "ready" and "tiny" in r.models


def test_wrong_model_name_is_not_ready_and_says_why():
    with ThreadedServer(SyntheticConfig(port=0, model="other")) as srv:
        ok, why, ids = probe(f"{srv.base_url}/health", f"{srv.base_url}/v1/models", "tiny")
        r = wait_ready(
            f"{srv.base_url}/health",
            f"{srv.base_url}/v1/models",
            "tiny",
            timeout_s=0.5,
            exited=lambda: None,
            interval_s=0.05,
        )
    assert not ok and ids == ["other"] and "not 'tiny'" in why
    assert not r.ready and r.reason == "timeout" and "not 'tiny'" in r.describe()


def test_fails_fast_when_the_server_exits():
    port = free_port()  # nothing listens
    calls = []

    def exited() -> int | None:
        calls.append(1)
        return 3 if len(calls) >= 3 else None

    r = wait_ready(
        f"http://127.0.0.1:{port}/health",
        f"http://127.0.0.1:{port}/v1/models",
        "tiny",
        timeout_s=60,
        exited=exited,
        interval_s=0.01,
    )
    assert not r.ready and r.reason == "exited" and r.exit_code == 3
    assert "exited with code 3 before it became ready" in r.describe()
    assert "connection failed" in (r.last_error or "")


def test_boot_timeout_uses_the_clock():
    port = free_port()
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    r = wait_ready(
        f"http://127.0.0.1:{port}/health",
        f"http://127.0.0.1:{port}/v1/models",
        "tiny",
        timeout_s=30,
        exited=lambda: None,
        clock=lambda: now[0],
        sleep=sleep,
    )
    assert not r.ready and r.reason == "timeout" and 30 <= r.elapsed_s < 32


def test_becomes_ready_when_the_server_comes_up_late():
    port = free_port()
    srv = ThreadedServer(SyntheticConfig(port=port, model="tiny"))
    timer = threading.Timer(0.4, srv.start)
    timer.start()
    try:
        r = wait_ready(
            f"http://127.0.0.1:{port}/health",
            f"http://127.0.0.1:{port}/v1/models",
            "tiny",
            timeout_s=10,
            exited=lambda: None,
            interval_s=0.05,
        )
    finally:
        timer.join()
        srv.stop()
    assert r.ready and r.elapsed_s >= 0.3
