"""The instance a sensor tick reads (ledger/instance.py, `tick_instance`): under the daemon each tick arrives with the
instance's ref, and the code server opens that instance once, not on every tick (a `from_ref` per tick was most
of a tick's CPU on SQLite: every migration script loaded to check each database's revision)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance

from awp_pipelines.orchestration.ledger import instance as sensor_instance
from awp_pipelines.orchestration.ledger.instance import open_instance_folder, tick_instance


@dataclass
class Tick:
    """What `tick_instance` reads of a SensorEvaluationContext: the ref the daemon sends, or a test's instance."""

    instance_ref: object
    instance: DagsterInstance | None = None


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    opened = open_instance_folder(tmp_path / "home")
    yield opened
    opened.dispose()


def test_the_ticks_of_one_instance_share_one_opened_instance(instance: DagsterInstance, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []
    real = DagsterInstance.from_ref

    def counting(ref: object) -> DagsterInstance:
        opened.append(ref)
        return real(ref)  # type: ignore[arg-type]

    monkeypatch.setattr(sensor_instance, "_OPEN", {})
    monkeypatch.setattr(DagsterInstance, "from_ref", staticmethod(counting))
    first = tick_instance(Tick(instance.get_ref()))  # type: ignore[arg-type]
    again = tick_instance(Tick(instance.get_ref()))  # type: ignore[arg-type]
    other = open_instance_folder(tmp_path / "other")
    try:
        elsewhere = tick_instance(Tick(other.get_ref()))  # type: ignore[arg-type]
        assert first is again and len(opened) == 2 and elsewhere is not first
        assert first.root_directory == instance.root_directory and elsewhere.root_directory == other.root_directory
    finally:
        other.dispose()
        for opened_instance in sensor_instance._OPEN.values():
            opened_instance.dispose()


def test_a_context_built_with_an_instance_keeps_it(instance: DagsterInstance) -> None:
    assert tick_instance(Tick(None, instance)) is instance  # type: ignore[arg-type]


def test_dagster_still_hands_a_sensor_context_its_instance_ref() -> None:
    """Upgrade canary: `instance_ref` is a plain property of SensorEvaluationContext (not `@public`-marked, not
    underscored); the stand-in above cannot notice a rename, the daemon's ticks would fail on one."""
    import inspect

    from dagster import SensorEvaluationContext

    assert isinstance(inspect.getattr_static(SensorEvaluationContext, "instance_ref", None), property)
