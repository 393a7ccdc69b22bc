"""The target a launch names, checked before its Attempt starts on it: it must be of the prompt's own chain,
and a `probe: true` target must answer its probe, or the Attempt moves to the next target."""

from __future__ import annotations

from dataclasses import replace

from dagster import Failure

from awp_pipelines.core.decisions.agent_run import DecisionInput
from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.policy import NO_TARGET, Target, TargetKey, past_unavailable
from awp_pipelines.core.engine.progress import AttemptNote
from awp_pipelines.core.packet.agents import target_refusal
from awp_pipelines.core.packet.providers_config import AccountSpec, ProviderSpec
from awp_pipelines.core.planning.target_probe import probe
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.attempt_marks import said
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.compute.step import Step


def probed(step: Step, binding: PacketBinding, launch: Launch,
           state: DecisionInput) -> tuple[Launch, FailureEnvelope | None]:
    """A `probe: true` target is checked just before its Attempt starts on it (probe.py: doctor's checks,
    and the models endpoint of an HTTP provider). When it is not available the Attempt goes to the next
    target the decision gives (`past_unavailable`, down the alias chain); each probe's answer goes into the
    Attempt's reason. When no target is left, the refusal the Attempt records instead of starting its agent
    on a target known to be unavailable (`no_target_available`, the chain shown)."""
    chain = state.chain
    unavailable: set[TargetKey] = set()
    notes: list[str] = []
    refusal: FailureEnvelope | None = None
    resource = step.resource
    while (group := chain.group_of(launch.target)) is not None and group.probe:
        specs_for(resource, binding, launch.prompt, launch.target)
        answer = probe(resource.catalog(), launch.target.provider, launch.target.account, model=launch.target.model)
        where = launch.target.shown()
        if answer.ok:
            notes.append(f"probe of {where}: available ({answer.detail})")
            break
        unavailable.add(chain.key_of(launch.target))
        notes.append(f"probe of {where}: unavailable ({answer.detail})")
        nxt = past_unavailable(chain, launch.target, unavailable, state.accounts)
        if nxt is None:
            notes.append(f"{NO_TARGET}: no target of the chain {chain.shown()} is available; not started")
            refusal = FailureEnvelope.for_class("launch_failed", "; ".join(notes[-2:]), provider_code=NO_TARGET,
                                                deterministic=True)
            break
        launch = replace(launch, target=nxt.target)
    for note in notes:
        said(step, AttemptNote(launch.prompt, launch.number, note))
    return (replace(launch, reason="; ".join([launch.reason, *notes])) if notes else launch), refusal


def specs_for(resource: AwpResource, binding: PacketBinding, prompt_id: str,
              target: Target) -> tuple[ProviderSpec, AccountSpec | None]:
    """The provider and account of a launch's target, as the resource holds them: only a target of the
    prompt's own chain (its plan and fallback) runs it."""
    whole = binding.chains[prompt_id]
    refused = target_refusal(whole.agent_providers, whole.agent_models, target.provider, target.model)
    if refused is not None:  # a launch by hand, or one decided before the agent's definition changed
        raise Failure(description=f"policy denial: agent {whole.agent} may not run on {target.shown()}: {refused}",
                      allow_retries=False)
    chain = whole.candidates()
    if all(c.provider != target.provider for c in chain):
        raise Failure(description=f"provider '{target.provider}' is not among this prompt's targets (its plan "
                      "and fallback chain); launch it with a target of its own chain", allow_retries=False)
    if target.account and all(c.account != target.account for c in chain):
        raise Failure(description=f"account '{target.account}' is not among this prompt's accounts",
                      allow_retries=False)
    return resource.provider(target.provider), resource.account(target.account)
