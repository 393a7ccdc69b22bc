"""The launcher in front of bubblewrap: set the sandbox's rlimits, join its pids cgroup, exec the command.

Standard library only: it runs as `python -I -S -c <this source>` (the runner's own interpreter), so the
limits hold from bwrap's first instruction, and every process of the sandbox inherits them. Runs outside
the sandbox, as the runner, for a moment: it execs bwrap, which keeps the process id the runner waits on.

Usage: limiter [--cgroup PROCS_FILE] NAME=VALUE... -- COMMAND ARGS...   (NAME: NPROC, AS, FSIZE, CPU)
"""

from __future__ import annotations

import os
import resource
import signal
import sys


def main(args: list[str]) -> None:
    split = args.index("--")
    options, command = args[:split], args[split + 1:]
    if options[:1] == ["--cgroup"]:
        procs, options = options[1], options[2:]
        try:
            with open(procs, "w") as fh:  # this process, then bwrap and all it starts, are counted there
                fh.write(str(os.getpid()))
        except OSError as error:
            sys.stderr.write(f"awp sandbox: cannot join its cgroup {procs}: {error}\n")
    for option in options:
        name, value = option.split("=", 1)
        limit = int(value)
        # CPU: SIGXCPU at the limit (the shell says "CPU time limit exceeded"), SIGKILL 5 s of CPU later.
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (limit, limit + 5 if name == "CPU" else limit))
    # Python ignores SIGPIPE and SIGXFSZ; an exec'd program expects the defaults. SIGTERM too: in a runner started
    # in the background (SIGINT ignored), Dagster's interrupt handling leaves SIGTERM ignored (docs/upstream.md 8),
    # and the sandbox must end on AWP's SIGTERM.
    for name in ("SIGPIPE", "SIGXFSZ", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"awp sandbox: cannot run {command[0]}: {error}\n")
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
