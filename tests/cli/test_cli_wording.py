"""What the CLI says, word by word: counted nouns, a folder that is not a packet, the plan's dirty-tree line
and `awp run`'s progress counter (issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from awp_pipelines.cli.plan_cmd import dirty_tree_line
from awp_pipelines.cli.run_cmd import _Printer
from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted, LaunchDecided, LaunchWaiting, RunPlanned
from awp_pipelines.core.packet.packet import PacketError, load_packet, packets_below
from awp_pipelines.core.records.plural import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [counted(n, "line") for n in (0, 1, 2)] == ["0 lines", "1 line", "2 lines"]
    assert counted(1, "more line", "more lines") == "1 more line"


def test_a_folder_that_is_not_a_packet_names_the_packets_below_it(tmp_path: Path) -> None:
    for folder in ("assets/demo", "assets/other", ".hidden/p", "workspace/p", "tests/malformed/bad"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "packet.yaml").write_text("name: x\n")
    assert packets_below(tmp_path) == [tmp_path / "assets" / "demo", tmp_path / "assets" / "other"]
    with pytest.raises(PacketError) as err:
        load_packet(tmp_path)
    assert "packets below it: assets/demo, assets/other" in str(err.value)
    assert "packet new" not in str(err.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PacketError, match="packet new"):  # nothing below: how to make one
        load_packet(empty)
    # A folder with no assets/ of its own: whatever holds a manifest below it, as before.
    assert packets_below(tmp_path / "tests") == [tmp_path / "tests" / "malformed" / "bad"]


def test_the_plan_says_what_happens_to_a_dirty_tree_not_that_something_was_refused() -> None:
    line = dirty_tree_line("refuse")
    assert "refused" not in line and "commit or stash" in line
    assert "stash" in dirty_tree_line("set_aside")


def test_the_progress_counter_never_goes_backwards(capsys: pytest.CaptureFixture[str]) -> None:
    printer = _Printer(quiet=False)
    printer.event(RunPlanned(prompts=(("01", "A"), ("02", "B"), ("03", "C"))))

    def started(prompt: str) -> AttemptStarted:
        return AttemptStarted(prompt, f"p.{prompt}.a1", "run", "simulated", "m", None, "")

    for event in (started("01"), AttemptEnded("01", "p.01.a1", "completed"), started("02"),
                  AttemptEnded("02", "p.02.a1", "verification_failed"), started("03"),
                  AttemptEnded("03", "p.03.a1", "completed"), LaunchDecided("02", 2, "repair", "repair 1/2"),
                  AttemptEnded("02", "p.02.a2", "completed")):
        printer.event(event)
    err = capsys.readouterr().err
    counts = [int(line[1]) for line in err.splitlines() if line.startswith("[")]
    assert counts == sorted(counts) and counts[-1] == 3, err


def test_a_wait_for_a_resting_account_is_said_with_its_end(capsys: pytest.CaptureFixture[str]) -> None:
    """Every account of a chain resting: the AgentRun waits (up to an hour) for the first one back, and `awp run`
    says so once instead of going quiet."""
    import time

    printer = _Printer(quiet=False)
    printer.event(RunPlanned(prompts=(("01", "A"),)))
    printer.event(LaunchWaiting("01", 2, "fallback", "every account rests: sim-a until 10:00", time.time() + 600))
    err = capsys.readouterr().err
    assert err.startswith("[0/1 done] 01 A → fallback waits until "), err
    assert "(600 s)" in err or "(599 s)" in err, err
    assert err.rstrip().endswith("every account rests: sim-a until 10:00"), err
