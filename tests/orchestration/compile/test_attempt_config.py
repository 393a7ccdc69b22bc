"""The decided launch as the prompt asset's run config (orchestration/attempt_config.py): what the launcher
decided reaches the compute whole (target, effort, reason, parent run), and only for the Attempt it was
decided for."""

from __future__ import annotations

from dagster import AssetKey

from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig, launch_run_config

DECIDED = Launch("02", 3, "fallback", "provider_rate_limit: fell back to the next provider",
                 Target("codex", "gpt-x", "work", "high"), "run-02-2")


def test_the_launch_travels_whole_through_the_run_config() -> None:
    config = launch_run_config(AssetKey(["demo", "02"]), DECIDED)
    sent = AttemptConfig(**config["ops"]["demo__02"]["config"])  # as Dagster hands it to the compute
    assert sent.launch("02", 3) == DECIDED


def test_a_stale_or_empty_config_is_a_launch_the_compute_decides() -> None:
    sent = AttemptConfig.of(DECIDED)
    assert sent.launch("02", 4) is None  # a re-execution copied the config of an Attempt that has started
    assert AttemptConfig().launch("02", 1) is None  # the UI's launchpad, "Materialize all": no config
    assert AttemptConfig(**{**sent.model_dump(), "mode": "sideways"}).launch("02", 3) is None
