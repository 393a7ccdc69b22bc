"""What an Attempt is on record: its target, identity, usage and spend, and the immutable AttemptRecord every view
reads (attempts.py runs an Attempt and makes one)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.decisions.agent_control import Directive
from awp_pipelines.core.decisions.amendments import Amendment
from awp_pipelines.core.decisions.operator_control import Steer
from awp_pipelines.core.decisions.policy import AttemptFact
from awp_pipelines.core.engine.provenance import AgentProvenance
from awp_pipelines.core.isolation.record import IsolationRecord
from awp_pipelines.core.packet.prices import PriceTable, load_prices
from awp_pipelines.core.providers.base import ProviderUsage
from awp_pipelines.core.records.attempt_lifecycle import Transition
from awp_pipelines.core.records.committer import CommitResult
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.usage import TOKEN_FIELDS, TokenCounts
from awp_pipelines.core.verifiers.report import VerifierReport

CostSource = Literal["provider", "price_table", "unknown"]


AttemptResult = Literal["completed", "verification_failed", "provider_failed", "verifier_fault", "commit_failed",
                        "dirty_tree",  # dirty_tree: refused before its agent started (cleantree.py)
                        "tree_tampered",  # the session changed the tree's git metadata (records/git_tamper.py)
                        "secret_in_work"]  # a secret AWP knows in the work: not committed (records/secret_scan.py)


# An Attempt is immutable once recorded (DESIGN): its record and every part of it are frozen (each says so
# inline, where the pydantic mypy plugin sees it); a changed copy is made with `model_copy(update=...)`.
class AttemptTarget(BaseModel):
    """Fixed for the Attempt's whole life: provider, account and model never switch mid-Attempt."""

    model_config = ConfigDict(frozen=True)

    provider: str
    provider_kind: str
    account: str | None = None
    model: str
    effort: str | None = None
    reason: str = Field(description="Why this target was selected.")


class AttemptIdentity(BaseModel):
    model_config = ConfigDict(frozen=True)

    attempt_id: str
    agent_run: str
    number: int = Field(description="1-based, counted from stored history of the AgentRun.")
    packet: str
    packet_run: str
    prompt: str
    mode: str
    parent_run: str | None = None
    dagster_run: str | None = None


class Usage(TokenCounts):
    """An Attempt's tokens and what they cost (None: unknown)."""

    model_config = ConfigDict(frozen=True)

    cost_usd: float | None = None
    cost_source: CostSource = Field(
        "unknown", description="Where cost_usd comes from: the provider's report, the price table, or "
        "nowhere (None).")


_SOURCE_RANK = {"provider": 0, "price_table": 1, "unknown": 2}


def total_usage(usages: Iterable[Usage]) -> Usage:
    """The sum over Attempts (an AgentRun, a packet run). Its cost is the sum of the known costs, and its
    source the weakest of theirs: `unknown` as soon as one Attempt's cost is."""
    items = list(usages)
    costs = [u.cost_usd for u in items if u.cost_usd is not None]
    source: CostSource = max((u.cost_source for u in items), key=_SOURCE_RANK.__getitem__, default="unknown")
    return Usage(**{k: sum(getattr(u, k) for u in items) for k in TOKEN_FIELDS},
                 cost_usd=round(sum(costs), 6) if costs else None, cost_source=source)


def attempt_usage(usage: ProviderUsage, model: str | None, prices: PriceTable | None = None) -> Usage:
    """The provider's cost where it reports one, else the price table's estimate, else none."""
    tokens = usage.token_counts().model_dump()
    if usage.cost_reported:
        return Usage(**tokens, cost_usd=usage.cost_usd, cost_source="provider")
    cost = (prices or load_prices()).cost(model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
    if cost is None:
        return Usage(**tokens, cost_usd=usage.cost_usd or None, cost_source="unknown")
    return Usage(**tokens, cost_usd=cost, cost_source="price_table")


class SpendTotal(BaseModel):
    """The packet run's recorded spend once this Attempt's own is added."""

    model_config = ConfigDict(frozen=True)

    cost_usd: float = 0.0
    tokens: int = 0


class AttemptRecord(BaseModel):
    """The immutable provenance of one Attempt (materialization / observation metadata)."""

    model_config = ConfigDict(frozen=True)

    identity: AttemptIdentity
    target: AttemptTarget
    role: str
    prompt_name: str
    workspace: dict[str, str] = Field(description="Target repo name → path.")
    cwd: str
    checkpoint: dict[str, str | None] = Field(description="Target repo → HEAD before the Attempt.")
    started_at: str
    ended_at: str
    duration_s: float
    result: AttemptResult
    failure: FailureEnvelope | None = None
    provider_failure: FailureEnvelope | None = Field(None, description="Provider error even when the "
                                                     "verifier overrode it.")
    session_id: str | None = None
    resumes: int = 0
    usage: Usage = Field(default_factory=Usage)
    packet_run_spend: SpendTotal = Field(default_factory=SpendTotal, description="Running total of the packet "
                                         "run's recorded spend, this Attempt included.")
    messages: int = 0
    verifier: VerifierReport | None = None
    workspace_changed: bool = Field(False, description="The agent changed a target repo (repair triggers).")
    commits: list[CommitResult] = Field(default_factory=list)
    events_file: str | None = None
    wip: dict[str, str] = Field(default_factory=dict, description="Target repo → the checkpoint commit "
                                "holding the partial work of an Attempt that did not complete.")
    restored: dict[str, str] = Field(default_factory=dict, description="Target repo → the checkpoint of the "
                                     "AgentRun's previous Attempt this one started from.")
    set_aside: dict[str, str] = Field(default_factory=dict, description="Target repo → the git stash holding the "
                                      "changes a person had left in it, set aside before the Attempt "
                                      "(`dirty_tree: set_aside`); `git stash pop` brings them back.")
    control: Directive | None = Field(None, description="Agent control: what this iteration's request came to "
                                      "(read only once the contract passed and the work was committed).")
    transitions: list[Transition] = Field(default_factory=list, description="The Attempt's lifecycle: created → "
                                          "provisioning → running → checkpointing → terminal, with reasons.")
    adopted: bool = Field(False, description="Written by whoever adopted the Attempt: it committed, then its "
                          "process died before it stored this record.")
    evidence: dict[str, str] = Field(default_factory=dict, description="An adopted Attempt's proof: target repo → "
                                     "the commit sha and the trailer naming the Attempt.")
    provenance: AgentProvenance | None = Field(None, description="Profile, permissions, the model the provider "
                                               "reported and whose credential it used (provenance.py).")
    diff_file: str | None = Field(None, description="The Attempt's stored diff (diffs.py), beside its events.")
    isolation: IsolationRecord | None = Field(None, description="What provisioning set up: the execution profile, "
                                              "the sandbox's grants, the node, the sandbox's version.")
    steers: list[Steer] = Field(default_factory=list, description="A person's steers that reached the Attempt "
                                "(`awp control steer`): delivered into its session, or refused past max_steers.")
    amendments: list[Amendment] = Field(default_factory=list, description="The contract changes in force when it "
                                        "was verified (`awp control amend|relax`), each with when it came.")

    @property
    def completed(self) -> bool:
        return self.result == "completed"

    def stored(self) -> dict[str, Any]:
        """The record as an Attempt's event stores it (JSON): fields at their defaults and the verifier's derived
        lists (`passed`, `failures`, `faults`) left out, since `model_validate` gives them back. Every Attempt
        stores one, so what it repeats is paid once per Attempt, for good."""
        return self.model_dump(mode="json", exclude_defaults=True, exclude=_DERIVED)

    def fact(self) -> AttemptFact:
        """What the decision function needs of this record."""
        failure = self.failure
        return AttemptFact(
            number=self.identity.number, mode=self.identity.mode, result=self.result,
            failure_class=failure.failure_class if failure else None,
            retryable=bool(failure and failure.retryable), repairable=bool(failure and failure.repairable),
            suggested_delay_ms=failure.suggested_delay_ms if failure else None,
            provider=self.target.provider, account=self.target.account, model=self.target.model,
            effort=self.target.effort, workspace_changed=self.workspace_changed,
            cost_usd=self.usage.cost_usd or 0.0, tokens=self.usage.input_tokens + self.usage.output_tokens,
            directive=self.control.outcome if self.control else None,
            directive_reason=self.control.reason if self.control else "",
            code=failure.provider_code if failure else None)


_DERIVED: Any = {"verifier": {"passed", "failures", "faults"}}  # computed from its items on read
