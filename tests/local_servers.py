"""Local servers for the length of a `with` block: a socketserver on a thread, a `git daemon`."""

from __future__ import annotations

import json
import socket
import socketserver
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TypeVar

Server = TypeVar("Server", bound=socketserver.BaseServer)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object,
              headers: dict[str, str] | None = None) -> None:
    """An HTTP handler's JSON answer, with its length (the CLIs' clients keep the connection)."""
    payload = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(payload)


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



@contextmanager
def git_http(base: Path, password: str) -> Iterator[tuple[str, list[str]]]:
    """Git's smart HTTP (`git http-backend`) for the bare repositories under `base`, on loopback, every request
    refused with 401 unless its Basic credential's password is `password`: yields the URL prefix
    (http://127.0.0.1:PORT/) and the list of usernames that authenticated, in order."""
    import base64
    import http.server
    import os

    users: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def _serve(self) -> None:
            scheme, _, encoded = self.headers.get("Authorization", "").partition(" ")
            basic = base64.b64decode(encoded).decode() if scheme == "Basic" else ""
            user, _, given = basic.partition(":")
            if given != password:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            users.append(user)
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {**os.environ, "GIT_PROJECT_ROOT": str(base), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                   "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": user,
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                   "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", "")}
            out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            status = next((int(line.split()[1]) for line in lines if line.startswith("Status:")), 200)
            self.send_response(status)
            for line in lines:
                name, _, value = line.partition(": ")
                if name and name != "Status":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _serve

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/", users
