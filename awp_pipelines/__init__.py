"""AWP Pipelines: work packets for AI coding agents, compiled into Dagster.

The public SDK is `awp_pipelines.api` (load, lint, plan, run, status, repair, verify):

    from awp_pipelines import api
    api.run("assets/demo", on_progress=lambda event: print(event.line()))

It is not re-exported here: `lint`, `plan` and `status` are still modules of this package, and a submodule
import would shadow a function of the same name (docs/architecture.md: the core moves under core/).
"""

__version__ = "0.1.0"
