"""Decided once (issue 19 item 3): each Attempt's compute reads its packet run's history once to decide (not
again after it: the root run's state is computed from that read and the record), follows the launch its
launcher decided as the run's config, and `awp run` resolves its plan once."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from e2e_support import stored_events

from awp_pipelines import api
from awp_pipelines.core.decisions.agent_run import AWP_RUN_LAUNCHES
from awp_pipelines.core.engine.progress import AttemptStarted, LaunchDecided, LaunchWaiting, ProgressEvent
from awp_pipelines.core.planning import plan
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger


def test_each_attempt_reads_history_once_to_decide_and_follows_the_launchers_decision(
        demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: Counter[str] = Counter()
    plans = Counter[str]()

    real_history = InstanceLedger.history

    def history_read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        # Counted by the module that asked (the compute reads it through the ledger).
        reads[sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1]] += 1
        return real_history(self, *args, **kwargs)

    monkeypatch.setattr(InstanceLedger, "history", history_read)
    real_build = plan.build_plan

    def build(*args, **kwargs):  # type: ignore[no-untyped-def]
        plans["build_plan"] += 1
        return real_build(*args, **kwargs)

    monkeypatch.setattr(plan, "build_plan", build)
    for where in ("awp_pipelines.api", "awp_pipelines.orchestration.compile.binding"):
        monkeypatch.setattr(f"{where}.build_plan", build)

    # A backoff of 5 s before 03's retry: `awp run` says once what it waits for, then launches it. The backoff
    # counts from the Attempt's end, and under load the run's end and the history read took more than 1.5 s,
    # so a shorter one could be over before `awp run` decided (no wait to say; CI of stop 37).
    manifest = demo_copy / "packet.yaml"
    manifest.write_text(manifest.read_text().replace("base_delay_ms: 0\n    max_delay_ms: 0",
                                                     "base_delay_ms: 5000\n    max_delay_ms: 5000"))
    events: list[ProgressEvent] = []
    result = api.run(demo_copy, on_progress=events.append)
    assert result.ok
    waits = [(i, e) for i, e in enumerate(events) if isinstance(e, LaunchWaiting)]
    assert [(e.prompt, e.number, e.mode) for _, e in waits] == [("03", 2, "retry")], waits
    [(at, wait)] = waits
    assert isinstance(events[at + 1], LaunchDecided) and events[at + 1].prompt == "03"  # type: ignore[union-attr]
    assert "rate_limit" in wait.reason and "waits until" in wait.line()
    started = [e for e in events if isinstance(e, AttemptStarted)]
    assert len(started) == 5  # 01, 02, 03, then a repair of 02 and a retry of 03
    # One read to decide each Attempt.
    assert reads["attempt_compute"] == 5, reads
    assert plans["build_plan"] == 1, plans  # `awp run` resolves the packet's plan once
    # The compute takes the launcher's launch as it was decided: the same reason, not asked again.
    decided = {(e.prompt, e.number): e.reason for e in events if isinstance(e, LaunchDecided)}
    for event in started:
        number = int(event.attempt.rsplit(".a", 1)[1])
        if (event.prompt, number) in decided:
            assert event.reason == decided[(event.prompt, number)]


def test_an_attempt_reads_its_stop_marker_once_and_a_pool_s_existence_once_per_process(
        demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Storage round trips per Attempt (issue 17): the stop marker was read three or four times per Attempt
    (with the history, to honour it, for the state after it, and with the history read again for the root
    run's tag); the pools' list once per lease taken. Counted from the compute's own frames."""
    import inspect

    from awp_pipelines.dagster_compat import pools as storage
    from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger

    stop_reads: Counter[str] = Counter()
    pool_lists = Counter[str]()
    real_state = InstanceLedger.stop_state
    real_keys = storage.ensure_pool

    def state(self, packet_run):  # type: ignore[no-untyped-def]
        files = {Path(f.filename).name for f in inspect.stack(0)}
        if "attempt_compute.py" in files:
            stop_reads[packet_run] += 1
        return real_state(self, packet_run)

    monkeypatch.setattr(InstanceLedger, "stop_state", state)

    def ensure_pool(instance, pool, limit=1):  # type: ignore[no-untyped-def]
        storage_keys = instance.event_log_storage.get_concurrency_keys

        def keys():  # type: ignore[no-untyped-def]
            pool_lists[pool] += 1
            return storage_keys()

        monkeypatch.setattr(instance.event_log_storage, "get_concurrency_keys", keys)
        try:
            return real_keys(instance, pool, limit)
        finally:
            monkeypatch.setattr(instance.event_log_storage, "get_concurrency_keys", storage_keys)

    monkeypatch.setattr("awp_pipelines.orchestration.ledger.instance_ledger.ensure_pool", ensure_pool)
    events: list[ProgressEvent] = []
    result = api.run(demo_copy, on_progress=events.append)
    assert result.ok
    attempts = [e for e in events if isinstance(e, AttemptStarted)]
    assert len(attempts) == 5
    assert sum(stop_reads.values()) == len(attempts), stop_reads  # once per Attempt, with its history
    # Each pool's existence is asked once in this process (twice at most: it is created then), not per Attempt.
    assert pool_lists and max(pool_lists.values()) <= 2 < len(attempts), pool_lists


def test_an_attempt_s_start_line_is_its_start_marker_not_a_log_row_of_its_own(demo_copy: Path) -> None:
    """Storage per Attempt (issue 17): every event row costs 1-2 KiB; the start line the run's log shows is
    the start marker's description, not a second row."""
    events: list[ProgressEvent] = []
    assert api.run(demo_copy, on_progress=events.append).ok
    lines = [e.line() for e in events if isinstance(e, AttemptStarted)]
    assert len(lines) == 5
    stored = stored_events(demo_copy)
    logged = [e.user_message for e in stored if not e.is_dagster_event]
    observed = [e.dagster_event.event_specific_data.asset_observation.description  # type: ignore[union-attr]
                for e in stored if e.dagster_event and e.dagster_event.event_type_value == "ASSET_OBSERVATION"]
    assert not [m for m in logged if m in lines], "a start line stored as a log row of its own"
    assert sorted(d.split("when it ends. ", 1)[1] for d in observed if d and "its record follows" in d) \
        == sorted(lines)



def test_a_compute_asks_for_its_run_s_runner_once_per_run(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Storage round trips per Attempt (issue 32 item 5): each compute read its run's runner two or three times
    (the daemon warning, the user's choice, who launches next), though it is noted once, before the run exists."""
    calls: Counter[tuple[str, str]] = Counter()
    real_runners, real_note = InstanceLedger.runners, InstanceLedger.note_runner

    def runners(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[("runners", sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1])] += 1
        return real_runners(self, *args, **kwargs)

    def note_runner(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[("note_runner", "")] += 1
        return real_note(self, *args, **kwargs)

    monkeypatch.setattr(InstanceLedger, "runners", runners)
    monkeypatch.setattr(InstanceLedger, "note_runner", note_runner)
    events: list[ProgressEvent] = []
    assert api.run(demo_copy, on_progress=events.append).ok
    assert len([e for e in events if isinstance(e, AttemptStarted)]) == 5
    assert calls[("note_runner", "")] == 3, calls  # the selection's run, then 02's repair and 03's retry
    compute = sum(n for (name, module), n in calls.items() if name == "runners"
                  and module in ("launch_choice", "prompt_compute"))
    assert compute == 3, calls  # once per run, for its five Attempts (and `awp run` said who launches next)
    # The answer is the stored one: the failed Attempts' next step names `awp run` as its launcher.
    failures = [e.dagster_event.step_failure_data.user_failure_data for e in stored_events(demo_copy)
                if e.dagster_event is not None and e.dagster_event.is_step_failure]
    nexts = [str(f.metadata[tags.NEXT].value) for f in failures if f is not None and tags.NEXT in f.metadata]
    assert len(nexts) == 2 and all(AWP_RUN_LAUNCHES in n for n in nexts), nexts
