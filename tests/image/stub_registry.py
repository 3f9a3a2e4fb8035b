"""A scripted HTTP server on loopback for the registry faults the real registry will not produce:
a 500, an unknown manifest media type, an oversized body, and a Docker-Hub-style bearer-token
flow (a 401 challenge naming a token realm on the same server).  Everything else is tested against
the real `docker-registry` (registry_rig.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], bytes]


class StubRegistry:
    def __init__(self, routes: dict[str, Callable[[BaseHTTPRequestHandler], Reply]]):
        self.routes = routes
        self.seen: list[tuple[str, dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                stub.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                route = stub.routes.get(self.path.split("?", 1)[0])
                status, headers, body = route(self) if route else (404, {}, b'{"errors":[{"code":"NAME_UNKNOWN"}]}')
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://{self.host}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> StubRegistry:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
