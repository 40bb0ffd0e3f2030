"""A local stand-in for CloudFormation's presigned response URL, where a custom resource's
function PUTs its answer: plain HTTP on 127.0.0.1, every PUT's headers and JSON body kept."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.agents.kube_fake import HOST


class ResponseFake:
    """CloudFormation's presigned response URL: records each PUT's headers and JSON body."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                fake.received.append(({k.lower(): v for k, v in self.headers.items()}, json.loads(raw)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.server.server_address[1]}/response?X-Amz-Signature=abc"

    @property
    def response(self) -> dict[str, Any]:
        [(_, body)] = self.received
        return body


@contextmanager
def response_url() -> Iterator[ResponseFake]:
    fake = ResponseFake()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        thread.join()
