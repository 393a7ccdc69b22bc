"""Print every tool call of a packet run as it happens, whoever drives it (`awp run`, the daemon):

    python examples/print_tool_calls.py assets/demo [--packet-run ID] [--instance DAGSTER_HOME]

One line per tool call (prompt, Attempt, tool, its input), then the packet run's end; it follows the newest
packet run, waiting for one to exist.
"""

from __future__ import annotations

import argparse
import json

import awp_pipelines as awp
from awp_pipelines.core.engine.run_stream import PacketRunEnded, ToolCall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packet")
    parser.add_argument("--packet-run")
    parser.add_argument("--instance", help="The Dagster home the runs are stored in (default: <packet>/.awp/dagster).")
    args = parser.parse_args()
    for event in awp.events(args.packet, packet_run=args.packet_run, instance=args.instance):
        if isinstance(event, ToolCall):
            print(f"{event.prompt} {event.attempt} {event.name} {json.dumps(event.input, default=str)}", flush=True)
        elif isinstance(event, PacketRunEnded):
            print(event.line(), flush=True)


if __name__ == "__main__":
    main()
