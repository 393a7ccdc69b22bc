"""One driver per packet run: while `awp run` drives a packet run in process, the recovery sensor (under a
daemon on the same instance) launches nothing for it. Two drivers made 01's fallback twice: the daemon test
`test_runs_made_by_awp_run_are_listed…[sqlite]` saw 3 runs where 2 were made, whenever a sensor tick fell
between the rate-limited run's end and `awp run`'s own fallback launch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from dagster import DagsterInstance, build_sensor_context

from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.engine.runlock import packet_lock
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.driver.in_process import Progress, RunOptions, run_packet

LIMITED = {"error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}


def _packet(root: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "one_driver", "provider": "simulated", "accounts": ["sim-a", "sim-b"],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"id": "01", "verify": {"files_exist": ["one.txt"]},
             "simulate": {"attempts": [LIMITED, {"writes": [{"path": "one.txt", "text": "1"}]}]}}
    (root / "prompts" / "01_one.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite one.txt.\n")
    return root


def test_the_sensor_launches_nothing_for_a_packet_run_awp_run_is_driving(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated"},
                                                      "sim-b": {"provider": "simulated"}}}))
    packet = load_packet(_packet(tmp_path / "pkt", make_git_repo))
    compiled = packet_assets(packet, load_catalog(providers), AwpResource())
    defs = compiled.definitions()
    seen: list[tuple[str, list[str]]] = []
    with DagsterInstance.ephemeral() as instance:

        def sensor_tick_before(launch: Launch) -> None:
            # The moment a daemon's tick could fall on: 01.a1 ended rate limited, its fallback not yet launched.
            tick = compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
            seen.append((launch.mode, [r.run_key or "" for r in tick.run_requests or []]))

        # As `awp run` and the SDK do: the runner holds the packet's lock while it drives.
        with packet_lock(packet, AwpResource().state_root(packet.root)):
            _, outcomes = run_packet(compiled, instance, ["01"], RunOptions(), Progress(launch=sensor_tick_before))
        after = compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert [(o.prompt, o.result) for o in outcomes] == [("01", "completed")]
    assert seen == [("fallback", [])]  # awp run launched the fallback; the sensor left it alone
    # Once the runner let go (its process lives on, as a notebook's does) the sensor decides again: nothing is due.
    assert not after.run_requests
