"""AWP Pipelines: work packets for AI coding agents, compiled into Dagster.

The public SDK (awp_pipelines/api.py) is re-exported here: load, lint, plan, run, status, repair, verify, handoff,
and steer, amend, relax (a person's control of a running AgentRun), events (a packet run as it happens).

    import awp_pipelines as awp
    result = awp.run("assets/demo", on_progress=lambda event: print(event.line()))
    print(result.ok, awp.status("assets/demo").state)

The functions are loaded on first use, so `import awp_pipelines` stays cheap and imports no Dagster (nor does
the SDK until a function needs an instance). No module of the package sits at the root under these names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from awp_pipelines.core.packet.install import VERSION as __version__

SDK = ("load", "lint", "plan", "run", "status", "repair", "verify", "handoff", "steer", "amend", "relax", "events")
__all__ = ["__version__", "amend", "events", "handoff", "lint", "load", "plan", "relax", "repair", "run", "status",
           "steer", "verify"]

if TYPE_CHECKING:
    from awp_pipelines.api import (
        amend,
        events,
        handoff,
        lint,
        load,
        plan,
        relax,
        repair,
        run,
        status,
        steer,
        verify,
    )


def __getattr__(name: str) -> Any:
    if name in SDK:
        from awp_pipelines import api

        return getattr(api, name)
    raise AttributeError(f"module 'awp_pipelines' has no attribute {name!r}")
