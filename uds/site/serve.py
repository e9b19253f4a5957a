"""`uds report --serve`: the built site on http://127.0.0.1:PORT (localhost only, until Ctrl-C)."""

from __future__ import annotations

import functools
import http.server
import sys
from pathlib import Path


def serve(folder: Path, port: int) -> None:
    """Serve `folder` read-only on 127.0.0.1; port 0 picks a free one."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        print(f"serving {folder} on http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)", file=sys.stderr)
        httpd.serve_forever()
