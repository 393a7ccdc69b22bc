"""The in-sandbox end of the egress: loopback ports that lead to unix sockets bound in from outside.

Inside the sandbox's own network namespace the agent sees only its loopback. This script (standard library
only: it runs as `python -I -S -c <this source>`, with no AWP installed inside) listens on 127.0.0.1 (and
::1) at each given port, forks a child that carries every connection to its unix socket, and in the parent
execs the agent's command, which keeps the process id, signals and exit status the runner expects. The
listeners are open before the agent starts (no race), and the child dies with the agent (PR_SET_PDEATHSIG).

Usage: forwarder SOCKET_DIR PORT:SOCKET_NAME... -- COMMAND ARGS...

`relay` is shared with the proxy outside (egress_proxy.py), which imports it from here: it takes any socket
(the `socket` module's sockets are `_socket` sockets).
"""

from __future__ import annotations

# `_socket`, not `socket`: the socket module builds its enums at import, about a third of this script's start.
import _socket as socket
import contextlib
import os
import signal
import sys
import threading
import time

_CHUNK = 65536


def _pump(source: socket.socket, sink: socket.socket, idle_s: float | None = None,
          last: list[float] | None = None) -> None:
    """Copy one direction until end of file; then close sink's writing half (or both, on an error). With
    `idle_s`, a read that waits that long while the other direction is quiet too (`last`: the time of the last
    byte either way) ends the connection."""
    how = socket.SHUT_WR
    try:
        while True:
            try:
                data = source.recv(_CHUNK)
            except TimeoutError:
                if idle_s is None or last is None or time.monotonic() - last[0] >= idle_s:
                    raise
                continue  # the other direction is busy: this one may wait
            if not data:
                break
            if last is not None:
                last[0] = time.monotonic()
            sink.sendall(data)
    except OSError:
        how = socket.SHUT_RDWR  # a reset or an idle connection: wake the other direction too
    for sock, side in ((sink, how), (source, socket.SHUT_RD if how == socket.SHUT_WR else how)):
        with contextlib.suppress(OSError):
            sock.shutdown(side)


def relay(a: socket.socket, b: socket.socket, idle_s: float | None = None) -> None:
    """Carry bytes both ways between two connected sockets until both directions end; then close both. With
    `idle_s`, a connection on which no byte moved either way for that long is cut."""
    last = [time.monotonic()]
    if idle_s is not None:
        for sock in (a, b):
            sock.settimeout(idle_s)
    back = threading.Thread(target=_pump, args=(b, a, idle_s, last), daemon=True)
    back.start()
    try:
        _pump(a, b, idle_s, last)
        back.join()
    finally:
        a.close()
        b.close()


def _carry(conn: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        upstream.close()
        conn.close()
        return
    relay(conn, upstream)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # _socket's accept: a descriptor
        conn = socket.socket(fileno=fd)
        threading.Thread(target=_carry, args=(conn, path), daemon=True).start()


def _listen(port: int) -> list[socket.socket]:
    """Listeners on the sandbox's loopback at `port`: IPv4 always, IPv6 where the namespace has ::1."""
    found = []
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address, port))
            sock.listen(128)
        except OSError:
            sock.close()
            if family == socket.AF_INET:
                raise
            continue
        found.append(sock)
    return found


def _die_with(parent: int) -> None:
    """End this process when `parent` (the agent, after its exec) ends."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent:
                threading.Event().wait(0.5)
            os._exit(0)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the agent ended before the signal was armed
        os._exit(0)


def main(args: list[str]) -> None:
    split = args.index("--")
    socket_dir, specs, command = args[0], args[1:split], args[split + 1:]
    served = []
    for spec in specs:
        port, name = spec.split(":", 1)
        served += [(sock, os.path.join(socket_dir, name)) for sock in _listen(int(port))]
    parent = os.getpid()
    if os.fork() == 0:
        _die_with(parent)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the agent's output pipes open
            os.dup2(null, fd)
        for sock, path in served:
            threading.Thread(target=_serve, args=(sock, path), daemon=True).start()
        threading.Event().wait()
    for sock, _ in served:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"awp egress: cannot run {command[0]}: {error}\n")
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
