"""A hostile or broken "Hub" gets one clear line, in bounded time and memory (issue 12, item 7).

The real huggingface_hub client against a loopback server that answers the model_info call
(`/api/models/<repo>/revision/<rev>`) with an HTML page, a redirect loop, a 300 MB answer, an
endless chunked answer, or a trickle of one byte at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_hub_lock import run

from autobench.hub.client import MAX_API_BODY


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path
        try:
            if "/evil/html" in path:
                body = b"<html><body>Please log in</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif "/evil/loop" in path:
                self.send_response(302)
                self.send_header("Location", path)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif "/evil/huge" in path:  # announces 300 MB, sends them lazily
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(300 * 1024 * 1024))
                self.end_headers()
                for _ in range(300):
                    self.wfile.write(b" " * (1024 * 1024))
            elif "/evil/endless" in path:  # no length: chunked until the client gives up
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b" " * (1024 * 1024)
                for _ in range(2 * MAX_API_BODY // len(chunk)):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            elif "/evil/slow" in path:  # every read gets a byte in time; the answer never ends
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.25)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def hostile_hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hub_url(monkeypatch):
    with hostile_hub() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield url


def _one_line(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 3, (code, out, err)  # a HubError, not an internal error (70)
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err
    return err


def test_an_html_page_with_200_is_not_a_hub(hub_url, capsys):
    err = _one_line(capsys, "hub", "info", "evil/html")
    assert "does not answer like a Hugging Face Hub (its answer is not JSON)" in err


def test_a_redirect_loop_is_one_line(hub_url, capsys):
    err = _one_line(capsys, "hub", "info", "evil/loop")
    assert "redirects in a loop" in err


@pytest.mark.parametrize("repo", ["evil/huge", "evil/endless"])
def test_a_huge_answer_is_refused_while_it_is_read(hub_url, capsys, repo):
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    err = _one_line(capsys, "hub", "info", repo)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert f"larger than {MAX_API_BODY // (1024 * 1024)} MiB" in err
    assert grown_mib < 200, grown_mib  # the 300 MB answer was never held (bound: 32 MiB read)


def test_a_trickling_answer_is_cut_at_the_deadline_and_says_so(hub_url, capsys):
    # The message is the deadline's: a client that waited for the trickle to end would say nothing
    # (and a hang is pytest-timeout's to catch -- no wall-clock bound here).
    err = _one_line(capsys, "hub", "info", "evil/slow", "--timeout", "1")
    assert "did not finish answering within 4 s (each read waits at most 1 s)" in err


def test_a_json_answer_in_no_utf_encoding_is_one_line(monkeypatch, capsys):
    """Found by tests/fuzz (benchmarks/fuzz.py --random): NUL bytes read as UTF-32 JSON were an
    internal error (UnicodeDecodeError)."""

    class Nul(Hostile):
        def do_GET(self) -> None:
            body = b"\x00\x00\x00\x00\x00"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Nul)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        err = _one_line(capsys, "hub", "info", "o/m")
    finally:
        server.shutdown()
        server.server_close()
    assert "its answer is not JSON" in err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"id": "o/m", "cardData": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested more than 100 levels deep"),
        (b'{"id": "o/m", "x": ' + b"[" * 150 + b"]" * 150 + b"}", "nested more than 100 levels deep"),
        (b'{"id": "o/m", "downloads": ' + b"9" * 5000 + b"}", "does not answer like a Hugging Face Hub"),
    ],
    ids=["recursion-deep", "just-over-the-limit", "5000-digits"],
)
def test_deep_or_huge_number_json_from_the_hub_is_one_line(monkeypatch, capsys, body, said):
    """Before: a RecursionError or Python's 4,300-digit ValueError inside huggingface_hub, exit 70."""

    class Deep(Hostile):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        err = _one_line(capsys, "hub", "info", "o/m")
        assert said in err
    finally:
        server.shutdown()
        server.server_close()
