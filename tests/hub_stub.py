"""A stand-in for the Hugging Face Hub's file endpoint on loopback, for the data lookup's tests.

It answers what `huggingface_hub.hf_hub_download` asks of a dataset file, as the Hub does:
`HEAD` and `GET /datasets/<repo>/resolve/<revision>/<filename>` with the commit (`X-Repo-Commit`),
the content's `ETag` and its length; 404 with `X-Error-Code: EntryNotFound` for any other file.
The library under test is the real one, pointed here through `HF_ENDPOINT`.
"""

from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator, Mapping

COMMIT = "0" * 39 + "1"


class HubStub:
    """Files by (dataset ID, file name); `requests` lists (method, path) as they arrive."""

    def __init__(self, files: Mapping[tuple[str, str], bytes]):
        self.files = dict(files)
        self.requests: list[tuple[str, str]] = []
        self.url = ""

    def answer(self, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        self.requests.append((method, path))
        parts = path.split("?")[0].strip("/").split("/")
        # datasets/<owner>/<name>/resolve/<revision>/<filename>
        if len(parts) == 6 and parts[0] == "datasets" and parts[3] == "resolve":
            body = self.files.get((f"{parts[1]}/{parts[2]}", parts[5]))
            if body is not None:
                etag = hashlib.sha256(body).hexdigest()
                return 200, {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"', "Content-Length": str(len(body))}, body
        return 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT, "Content-Length": "0"}, b""


@contextmanager
def serve(stub: HubStub) -> Iterator[HubStub]:
    """`stub` listening on a free loopback port (its `url`) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, with_body: bool) -> None:
            status, headers, body = stub.answer(self.command, self.path)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_HEAD(self) -> None:  # the http.server protocol names it
            self._reply(False)

        def do_GET(self) -> None:
            self._reply(True)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
