"""Fuzz: every answer shape the Hub client reads.

One loopback server answers every request with the drawn status, headers and body (JSON of any
shape, truncated JSON, HTML, bytes); `autobench hub info` through the real huggingface_hub
client ends with exit 0 or one HubError line (exit 3), never an internal error.
"""

from __future__ import annotations

import io
import json
import threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fuzz_strategies import TEXT
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ANSWER: dict = {}


class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, head_only: bool) -> None:
        status, ctype, body = ANSWER["status"], ANSWER["ctype"], ANSWER["body"]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if 300 <= status < 400:
            self.send_header("Location", self.path)
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(False)

    def do_HEAD(self) -> None:
        self._answer(True)


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a client that hangs up early (a refused answer) is no test output


@pytest.fixture(scope="module")
def hub_url():
    server = QuietServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


SHA = "a" * 40
JSON_ANY = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=12,
)
MODEL_INFO = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.just("o/m"), TEXT, JSON_ANY),
        "sha": st.one_of(st.just(SHA), TEXT, JSON_ANY),
        "siblings": st.one_of(st.lists(st.fixed_dictionaries({"rfilename": TEXT}), max_size=3), JSON_ANY),
        "downloads": st.one_of(st.integers(), TEXT),
        "likes": st.one_of(st.integers(), TEXT),
        "gated": st.one_of(st.booleans(), TEXT),
        "cardData": JSON_ANY,
        "lastModified": st.one_of(st.just("2026-01-01T00:00:00.000Z"), TEXT),
        "private": st.one_of(st.booleans(), TEXT),
        "tags": st.one_of(st.lists(TEXT, max_size=3), JSON_ANY),
    },
)
BODY = st.one_of(
    MODEL_INFO.map(lambda d: json.dumps(d).encode()),
    JSON_ANY.map(lambda d: json.dumps(d).encode()),
    MODEL_INFO.map(lambda d: json.dumps(d).encode()[:-3]),  # truncated
    st.just(b"<html><body>Sign in</body></html>"),
    st.binary(max_size=64),
)


@settings(max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE)
@given(
    st.sampled_from([200, 200, 200, 201, 204, 301, 400, 401, 403, 404, 429, 500, 503]),
    st.sampled_from(["application/json", "text/html", "application/octet-stream"]),
    BODY,
)
def test_any_hub_answer_is_a_result_or_one_hub_error_line(hub_url, monkeypatch, status, ctype, body):
    from autobench.cli import main

    tried("hub: model_info answers")
    ANSWER.update(status=status, ctype=ctype, body=body)
    monkeypatch.setenv("HF_ENDPOINT", hub_url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["hub", "info", "o/m", "--timeout", "2"])
    assert code in (0, 3), (code, err.getvalue())
    if code == 3:
        assert_clean_line(err.getvalue())
