"""Local servers for the length of a `with` block: a socketserver on a thread, a `git daemon`."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """`git daemon` serving the bare repositories under `base` on loopback, pushes allowed: yields the URL
    prefix (git://127.0.0.1:PORT/), so a remote is `<prefix><name>.git`."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                               "--listen=127.0.0.1", f"--port={port}", f"--base-path={base}", str(base)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/"
    finally:
        daemon.terminate()
        daemon.wait(10)

