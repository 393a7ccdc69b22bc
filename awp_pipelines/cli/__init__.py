"""`awp`: lint, plan, run and author work packets for AI coding agents on Dagster."""

from __future__ import annotations

import click

from awp_pipelines import __version__
from awp_pipelines.cli import (
    accounts_cmd,
    authoring_cmd,
    blame_cmd,
    control_cmd,
    doctor_cmd,
    handoff_cmd,
    lint_cmd,
    list_cmd,
    operator_cmd,
    plan_cmd,
    prompt_runner_cmd,
    repair_cmd,
    resume_cmd,
    run_cmd,
    serve_cmd,
    status_cmd,
    watching_cmd,
)
from awp_pipelines.cli.common import WholeSummaryGroup


@click.group(cls=WholeSummaryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="awp")
def cli() -> None:
    """Run work packets for AI coding agents on Dagster.

    A packet is a folder: a manifest (packet.yaml or Prompt Runner's prompt_runner_packet.md) and
    numbered prompts (prompts/NN_slug.prompt.md), each with a deterministic `verify:` contract.
    """


for module in (lint_cmd, plan_cmd, run_cmd, repair_cmd, resume_cmd, status_cmd, watching_cmd, control_cmd,
               authoring_cmd, blame_cmd, doctor_cmd, handoff_cmd, serve_cmd, accounts_cmd, list_cmd, operator_cmd,
               prompt_runner_cmd):
    module.register(cli)


def main() -> None:
    cli(prog_name="awp")
