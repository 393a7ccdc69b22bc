"""Serve a local test server (socketserver) on a thread for the length of a `with` block."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

Server = TypeVar("Server", bound=socketserver.BaseServer)


@contextmanager
def serving(server: Server) -> Iterator[Server]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
