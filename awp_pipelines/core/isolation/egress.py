"""An Attempt's network: its own namespace inside the sandbox, and one way out, to the granted hosts only.

The sandbox runs with `bwrap --unshare-net`: inside there is only its own loopback. Outside, in threads of the
runner's process (they end with it, so nothing outlives a killed runner), an allow-list proxy (egress_proxy.py)
listens on a unix socket, and each granted loopback port (a local base_url) gets a unix socket that leads to
that port. The socket folder is bound read-only into the sandbox, where the forwarder (forwarder.py) opens
the same ports on the sandbox's loopback and carries them to the sockets. The agent's environment points
HTTP(S)_PROXY at the forwarded proxy port; loopback stays direct (NO_PROXY), which the forwarded ports serve.

    handle = start_egress(NetworkPolicy(network="provider"), run_dir, kind="claude_code", base_url=url)
    argv = ["bwrap", ..., *handle.bwrap_args(), "--", *handle.wrap_command(agent_argv)]
    env = {**agent_env, **handle.env()}
    ...
    handle.close()
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from awp_pipelines.core.isolation import forwarder
from awp_pipelines.core.isolation.egress_proxy import Denial, DenialLog, Refused, connect, refuse, serve_client
from awp_pipelines.core.isolation.network_policy import NetworkGrant, NetworkPolicy

INSIDE_DIR = "/run/awp-egress"  # where the socket folder appears inside the sandbox
PROXY_PORT = 3128  # the proxy's port on the sandbox's loopback (the next free one if a forwarded port is it)
LOOPBACK_NAMES = "localhost,127.0.0.1,::1"
_SUN_PATH_MAX = 100  # a unix socket's path must fit in 108 bytes; a longer one is bound through its folder
_JOIN_S = 2.0
MAX_CONNECTIONS = 256  # open at once per Attempt (each is a thread of the runner); past it, refused
IDLE_S = 600.0  # a connection on which nothing moved either way for this long is cut


def _interpreter() -> tuple[str, list[str]]:
    """The Python that runs the forwarder inside (the runner's own base install, not its venv), and the
    read-only bind that makes it visible there when it lives outside /usr (pyenv, uv, a home folder)."""
    executable = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    binds: list[str] = []
    for path in dict.fromkeys((prefix, executable)):
        system = path == "/usr" or path.startswith("/usr/")
        if not system and not (path == executable and executable.startswith(prefix + os.sep)):
            binds += ["--ro-bind", path, path]
    return executable, binds


def _bind(sock: socket.socket, path: Path) -> None:
    path.unlink(missing_ok=True)  # left by a runner that was killed
    if len(os.fsencode(path)) < _SUN_PATH_MAX:
        sock.bind(str(path))
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.bind(f"/proc/self/fd/{folder}/{path.name}")
    finally:
        os.close(folder)


class EgressHandle:
    """The running egress of one Attempt: what to add to the sandbox's command, and close() to end it."""

    def __init__(self, grant: NetworkGrant, run_dir: Path, *, max_connections: int = MAX_CONNECTIONS,
                 idle_s: float = IDLE_S) -> None:
        self.grant = grant
        self.max_connections, self.idle_s = max_connections, idle_s
        self._slots = threading.BoundedSemaphore(max_connections)
        self.folder = run_dir / "egress"
        self.socket_dir = self.folder / "sockets"
        self.denial_log = DenialLog(self.folder / "denied.jsonl")
        forwarded = grant.forwarded_ports
        self.proxy_port = next(p for p in range(PROXY_PORT, PROXY_PORT + 64) if p not in forwarded)
        self._lock = threading.Lock()
        self._listeners: list[tuple[socket.socket, Path]] = []
        self._live: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False

    # -- what the sandbox's launch adds ------------------------------------------------------------------
    @property
    def granted_hosts(self) -> list[str]:
        return self.grant.hosts

    @property
    def _routes(self) -> list[tuple[int, str]]:
        """(port inside, socket name) for every way out; none when the policy grants no network."""
        if self.grant.mode == "none":
            return []
        return [(self.proxy_port, "proxy"), *((port, f"port-{port}") for port in self.grant.forwarded_ports)]

    def bwrap_args(self) -> list[str]:
        """The sandbox's own network namespace, and (unless `none`) the socket folder and the forwarder's
        Python, read-only. Put them after the sandbox's own mounts (a later --tmpfs /run would hide them)."""
        if not self._routes:
            return ["--unshare-net"]
        return ["--unshare-net", *_interpreter()[1], "--ro-bind", str(self.socket_dir), INSIDE_DIR]

    def env(self) -> dict[str, str]:
        """Proxy variables for the agent (both spellings: curl reads only the lower case http_proxy)."""
        if not self._routes:
            return {}
        url = f"http://127.0.0.1:{self.proxy_port}"
        proxies = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
        proxies["NO_PROXY"] = LOOPBACK_NAMES
        return {**proxies, **{name.lower(): value for name, value in proxies.items()}}

    def wrap_command(self, argv: Sequence[str]) -> list[str]:
        """`argv` behind the in-sandbox forwarder (which execs it: same process id, signals, exit status)."""
        if not self._routes:
            return list(argv)
        python = _interpreter()[0]
        source = Path(forwarder.__file__).read_text(encoding="utf-8")
        specs = [f"{port}:{name}" for port, name in self._routes]
        return [python, "-I", "-S", "-c", source, INSIDE_DIR, *specs, "--", *argv]

    def denials(self) -> list[Denial]:
        """The connections refused so far, counted per key and interval (also in `denial_log.path`)."""
        return self.denial_log.read()

    # -- the listeners outside ---------------------------------------------------------------------------
    def start(self) -> EgressHandle:
        if not self._routes:
            return self
        self.socket_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            self._listen("proxy", lambda conn: serve_client(conn, self.grant, self.denial_log, self._track,
                                                            idle_s=self.idle_s))
            for port in self.grant.forwarded_ports:
                self._listen(f"port-{port}", self._forward_to(self.grant.loopback_target(port), port))
        except BaseException:
            self.close()
            raise
        return self

    def _forward_to(self, host: str, port: int) -> Callable[[socket.socket], None]:
        def carry(conn: socket.socket) -> None:
            try:
                upstream = connect([(info[0], info[4]) for info in socket.getaddrinfo(host, port,
                                                                                      type=socket.SOCK_STREAM)])
            except OSError:
                conn.close()
                return
            self._track(upstream)
            forwarder.relay(conn, upstream, self.idle_s)
        return carry

    def _listen(self, name: str, serve: Callable[[socket.socket], None]) -> None:
        path = self.socket_dir / name
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _bind(listener, path)
        listener.listen(128)
        self._listeners.append((listener, path))
        self._spawn(self._accept, listener, serve, name=f"awp-egress-{name}")

    def _accept(self, listener: socket.socket, serve: Callable[[socket.socket], None]) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # close() shut the listener
            if not self._slots.acquire(blocking=False):  # a thread each: past the cap, answered here
                refuse(conn, self.denial_log, Refused(503, f"more than {self.max_connections} connections open "
                                                           "at once"))
                continue
            self._track(conn)
            if not self._spawn(self._served, serve, conn, name="awp-egress-client"):
                self._slots.release()
                conn.close()

    def _served(self, serve: Callable[[socket.socket], None], conn: socket.socket) -> None:
        try:
            serve(conn)
        finally:
            self._slots.release()

    def _spawn(self, target: Callable[..., None], *args: object, name: str) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._threads = [t for t in self._threads if t.is_alive()]
            thread = threading.Thread(target=target, args=args, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
            return True

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._live = {s for s in self._live if s.fileno() != -1}
            self._live.add(sock)

    def close(self) -> None:
        """Stop listening, cut every open connection, wait for the threads, remove the sockets. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads, live = list(self._threads), list(self._live)
        for listener, path in self._listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes its accept()
            listener.close()
            path.unlink(missing_ok=True)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(_JOIN_S)
        self.denial_log.flush()
        with contextlib.suppress(OSError):
            self.socket_dir.rmdir()

    def __enter__(self) -> EgressHandle:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def start_egress(policy: NetworkPolicy, run_dir: Path, *, kind: str, base_url: str | None) -> EgressHandle:
    """Start the egress of one Attempt whose agent is a `kind` CLI talking to `base_url` (the account's or
    provider's, or the one its environment names; None for the CLI's default endpoint)."""
    return EgressHandle(NetworkGrant.resolve(policy, kind=kind, base_url=base_url), run_dir).start()
