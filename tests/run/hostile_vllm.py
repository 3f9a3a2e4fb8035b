"""A hostile stand-in for `vllm serve` (run tests; there is no GPU or vLLM here).

Like some proxies in front of a real server, it echoes the request's Authorization header back:
in every completion error body (HTTP 500), in ``/metrics`` (as a label value) and, with
HOSTILE_LOG_KEY set, in its own log output.  ``/metrics`` echoes the last Authorization header any request carried.  It honours VLLM_API_KEY like ``vllm serve``
(401 without the key on /v1/*), so the bench and the readiness probe send the key.

Invoked as ``python hostile_vllm.py serve MODEL ... --served-model-name N --host H --port P``.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    argv = sys.argv[1:]
    opts = {"--served-model-name": argv[1], "--host": "127.0.0.1", "--port": "8000"}
    for i, arg in enumerate(argv):
        if arg in opts and i + 1 < len(argv):
            opts[arg] = argv[i + 1]
    key = os.environ.get("VLLM_API_KEY", "")
    served = opts["--served-model-name"]
    seen = {"auth": ""}  # the last Authorization header received, echoed by /metrics

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _authorized(self) -> bool:
            return not key or self.headers.get("Authorization") == f"Bearer {key}"

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            seen["auth"] = auth or seen["auth"]
            if self.path == "/health":
                self._send(200, b"")
            elif self.path == "/metrics":
                text = f'# echoed by a proxy\nproxy_last_request_info{{authorization="{seen["auth"]}"}} 1\n'
                self._send(200, text.encode(), "text/plain")
            elif self.path == "/v1/models":
                if not self._authorized():
                    self._send(401, json.dumps({"error": f"bad key, got {auth!r}"}).encode())
                    return
                self._send(200, json.dumps({"object": "list", "data": [{"id": served, "object": "model"}]}).encode())
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            auth = self.headers.get("Authorization", "")
            seen["auth"] = auth or seen["auth"]
            if os.environ.get("HOSTILE_LOG_KEY"):
                print(f"ERROR upstream refused request with headers Authorization: {auth}", flush=True)
            body = {"error": {"message": f"upstream failure; request had Authorization: {auth}", "code": 500}}
            self._send(500, json.dumps(body).encode())

    print(f"INFO [hostile_vllm] pid {os.getpid()}", flush=True)
    server = ThreadingHTTPServer((opts["--host"], int(opts["--port"])), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
