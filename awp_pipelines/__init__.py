"""AWP Pipelines: work packets for AI coding agents, compiled into Dagster.

The public SDK (awp_pipelines/api.py) is re-exported here, loaded on first use so that importing a module
of the package stays light:

    import awp_pipelines as awp
    awp.run("assets/demo", on_progress=lambda event: print(event.line()))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from awp_pipelines.api import (
        Overrides,
        RepairResult,
        RunResult,
        Select,
        lint,
        load,
        plan,
        repair,
        run,
        status,
        verify,
    )

__all__ = ["Overrides", "RepairResult", "RunResult", "Select", "__version__", "lint", "load", "plan", "repair",
           "run", "status", "verify"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from awp_pipelines import api

        return getattr(api, name)
    raise AttributeError(f"module 'awp_pipelines' has no attribute {name!r}")
