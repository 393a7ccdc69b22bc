"""The launch its launcher decided, as the prompt asset's run config: the recovery sensor (`RunRequest`),
`awp run` and `awp repair` (`execute_in_process`) hand the compute the `Launch` they decided, whole, so the
compute follows it without deciding again. A run without it (the UI's launchpad, "Materialize all", a run of
several prompts) is a manual launch: the compute decides.

Run tags stay what a user filters runs on (tags.RUN_TAGS); they are not read back to learn the launch. That a
launcher decided it (`decided_by_launcher`) tells a run of the sensor's from one the user launched by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import AssetKey, Config

from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.core.records.run_tags import MODES


class AttemptConfig(Config):
    """The decided launch of one Attempt; empty (the default), the compute decides it."""

    number: int = 0  # the Attempt the launcher decided; 0: none (a manual launch)
    mode: str = "run"
    reason: str = ""
    provider: str = ""
    model: str | None = None
    account: str | None = None
    effort: str | None = None
    parent_run: str | None = None

    @classmethod
    def of(cls, launch: Launch) -> AttemptConfig:
        t = launch.target
        return cls(number=launch.number, mode=launch.mode, reason=launch.reason, provider=t.provider,
                   model=t.model, account=t.account, effort=t.effort, parent_run=launch.parent_run)

    def launch(self, prompt: str, number: int) -> Launch | None:
        """The decided launch when it is Attempt `number` (the next one); None for a manual launch, or for a
        stale decision (a re-execution copies its run's config: that Attempt has started since)."""
        if self.number != number or not self.provider or self.mode not in MODES:
            return None
        target = Target(self.provider, self.model, self.account, self.effort)
        return Launch(prompt, self.number, self.mode, self.reason, target, self.parent_run)


def launch_run_config(key: AssetKey, launch: Launch) -> dict[str, Any]:
    """The run config of a run of one prompt (its asset `key`) that carries its decided launch."""
    return {"ops": {key.to_python_identifier(): {"config": AttemptConfig.of(launch).model_dump()}}}


def decided_by_launcher(run_config: Mapping[str, Any]) -> bool:
    """Whether a run's config carries a launch its launcher decided (the sensor's, `awp run`'s): no prompt
    of such a run was picked by the user."""
    ops = run_config.get("ops") or {}
    return any(int(((op or {}).get("config") or {}).get("number") or 0) > 0 for op in ops.values())
