"""The one decision function: (AgentRun history, policy) → what happens next. Pure: no Dagster, no clock.

Sensors call it when the daemon runs; `awp run` calls it in process. Budgets are counted from the stored
history it is given, so every branch terminates and a restart changes nothing.

Prompt Runner's table: ok+pass → complete; error+pass → complete (the verifier overrides the provider);
ok+fail → repair while the budget lasts, else verification_failed; error+fail → retry within the class
budget, else repair when the workspace changed, else fail. AWP adds fallback: a rate limit, capacity or
auth claim moves to the next account or target of the chain when there is one.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from awp_pipelines.core.decisions.budget import Budget, Spend
from awp_pipelines.core.decisions.rotation import Availability, choose_account
from awp_pipelines.core.packet.agents import target_refusal
from awp_pipelines.core.packet.model.execution import Rotation, TargetSpec
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.records.failures import FALLBACK_WORTHY_CLASSES, REFUSAL_CLASSES
from awp_pipelines.core.records.run_tags import Relaunch

# What the AgentRun does next: end it, or launch an Attempt in one of the relaunching modes (tags.Relaunch).
Action = Literal["complete", Relaunch, "fail", "blocked"]


@dataclass(frozen=True)
class AttemptFact:
    """What the stored record of one finished Attempt says, as far as the decision needs."""

    number: int
    mode: str
    result: str  # completed | verification_failed | provider_failed | verifier_fault | commit_failed | …
    failure_class: str | None = None
    retryable: bool = False
    repairable: bool = False
    suggested_delay_ms: int | None = None
    provider: str = ""
    account: str | None = None
    model: str = ""
    effort: str | None = None
    workspace_changed: bool = False
    cost_usd: float = 0.0  # what the provider reported for this Attempt
    tokens: int = 0
    directive: str | None = None  # agent control: what the iteration's request came to (control.Outcome)
    directive_reason: str = ""
    code: str | None = None  # the failure's provider_code: NO_TARGET marks an Attempt refused before its agent

    @property
    def done(self) -> bool:
        """The contract passed and, under agent control, the agent did not ask for more."""
        return self.result == "completed" and self.directive in (None, "continue", "finish")

    @property
    def spend(self) -> Spend:
        return Spend(self.cost_usd, self.tokens)

    @property
    def target(self) -> Target:
        """Where it ran, as a decision names a target (a record names the model it used; "" is none)."""
        return Target(self.provider, self.model or None, self.account, self.effort)


def adopted_fact(number: int, mode: str, target: Target) -> AttemptFact:
    """A started Attempt whose record was lost after it committed (its commit carries its trailer): the
    work exists and met the contract, so the AgentRun is complete and nothing runs twice."""
    return AttemptFact(number=number, mode=mode, result="completed", provider=target.provider,
                       account=target.account, model=target.model or "", effort=target.effort)


def interrupted_fact(number: int, mode: str, target: Target) -> AttemptFact:
    """A started Attempt whose run ended with no record: its process died. It counts, and is retried."""
    return AttemptFact(number=number, mode=mode, result="provider_failed", failure_class="interrupted",
                       retryable=True, repairable=True, provider=target.provider, account=target.account,
                       model=target.model or "", effort=target.effort)


@dataclass(frozen=True)
class Target:
    provider: str
    model: str | None
    account: str | None
    effort: str | None = None

    def shown(self) -> str:
        return f"{self.provider}/{self.model or 'default'}" + (f" ({self.account})" if self.account else "")


# A target of a chain as fallback tracks it: (provider, account, model). Two aliases on one provider with no
# account (the free chain: two models of opencode-zen) are two targets, not one.
TargetKey = tuple[str, str | None, str | None]
# The code of an Attempt refused before its agent started because no target of its chain was available.
NO_TARGET = "no_target_available"


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str
    status: str = ""
    delay_ms: int = 0
    target: Target | None = None

    @property
    def terminal(self) -> bool:
        return self.action in ("complete", "fail", "blocked")


class Group(NamedTuple):
    """One target of a chain (its account unset) with the accounts it may use, in order."""

    target: Target
    accounts: tuple[str | None, ...]  # (None,): a target without accounts, tried once with none
    probe: bool = False  # checked for availability just before it is chosen
    rotation: Rotation = "fill_first"  # how its accounts are picked


@dataclass(frozen=True)
class Chain:
    """The primary target's accounts, then the fallback targets, in order; `rotation` picks the account
    of a target with several (rotation.py), `primary_probe` marks the primary `probe: true`."""

    primary: Target
    accounts: tuple[str, ...] = ()
    fallback: tuple[TargetSpec, ...] = field(default_factory=tuple)
    rotation: Rotation = "fill_first"
    primary_probe: bool = False
    # (provider, account) pairs this AgentRun may never run on: those the coders it reviews used (agents.py).
    # Every pick (first target, rotation, fallback, past a failed probe) chooses among the others.
    excluded: frozenset[tuple[str, str | None]] = frozenset()
    # The prompt's agent (agents.py) and the providers and model prefixes it may run on (empty: any): every
    # pick chooses among the targets it allows; none left is a policy denial, never a run elsewhere.
    agent: str = ""
    agent_providers: tuple[str, ...] = ()
    agent_models: tuple[str, ...] = ()

    def _written(self) -> list[Group]:
        """The chain as written: the primary, then the fallback targets."""
        first = Group(self.primary, tuple(self.accounts) or (None,), self.primary_probe, self.rotation)
        rest = [Group(Target(t.provider, t.model, None, t.effort), tuple(_or_none(t.accounts)), t.probe,
                      t.rotation or self.rotation) for t in self.fallback]
        return [first, *rest]

    def _allowed(self) -> list[Group]:
        return [g for g in self._written()
                if target_refusal(self.agent_providers, self.agent_models, g.target.provider, g.target.model) is None]

    def groups(self) -> list[Group]:
        allowed = self._allowed()
        if not self.excluded:
            return allowed
        kept = [g._replace(accounts=tuple(a for a in g.accounts if (g.target.provider, a) not in self.excluded))
                for g in allowed]
        return [g for g in kept if g.accounts]

    def refused_by_agent(self) -> list[str]:
        """The chain's targets its agent may not run on, each with why (shown by `awp plan`)."""
        return [f"{g.target.shown()}: {why}" for g in self._written()
                if (why := target_refusal(self.agent_providers, self.agent_models, g.target.provider,
                                          g.target.model)) is not None]

    @property
    def denied(self) -> str | None:
        """The policy denial when the agent's definition or independence leaves no target at all; None while
        one is left."""
        if self.groups():
            return None
        if not self._allowed():
            return (f"policy denial: agent {self.agent} may run on no target of its chain "
                    f"({'; '.join(self.refused_by_agent())}); add a target it allows, or widen its `providers`/"
                    "`models` in providers.yaml")
        used = ", ".join(sorted(f"{p}/{a or 'its own login'}" for p, a in self.excluded))
        return (f"policy denial: independence — every target of its chain is one its coder used ({used}); give the "
                "reviewer another account or provider")

    def key_of(self, target: Target) -> TargetKey:
        """`target` as a key of this chain: the model its chain target names (a record names the provider's
        default model where the chain names none)."""
        group = self.group_of(target)
        return (target.provider, target.account, group.target.model if group is not None else target.model)

    def shown(self) -> str:
        """The chain in order, for a reason: `p/m (a) → p/m2`."""
        return " → ".join(c.shown() for c in self.candidates())

    def candidates(self) -> list[Target]:
        return [replace(group.target, account=a) for group in self.groups() for a in group.accounts]

    def group_of(self, target: Target) -> Group | None:
        """The chain's target that `target` is one account of: the same model and effort, else the same
        provider and account (a record names the provider's default model where the chain names none)."""
        mine = [g for g in self.groups() if g.target.provider == target.provider and target.account in g.accounts]
        same = [g for g in mine if (g.target.model, g.target.effort) == (target.model, target.effort)]
        return next(iter(same or mine), None)


def _or_none(accounts: list[str] | None) -> list[str | None]:
    """A target without accounts is tried once, with none."""
    return list(accounts) if accounts else [None]


class Pick(NamedTuple):
    """A target chosen for an Attempt, and why that account (empty when there was no choice)."""

    target: Target
    why: str = ""
    wait_ms: int = 0  # every account of the chain rests: the first comes back in this long


def decide(history: list[AttemptFact], recovery: RecoveryConfig, chain: Chain,
           rng: random.Random | None = None, budget: Budget | None = None,
           max_iterations: int | None = None, accounts: Availability = Availability()) -> Verdict:
    """What the AgentRun does next. A spend cap that has been reached refuses any further Attempt;
    `max_iterations` is set when the agent steers its iterations (agent_control); `accounts` is what the
    store says of the accounts' cooldowns and usage now."""
    last = history[-1] if history else None
    if chain.denied and not (last is not None and last.result == "completed"):
        return Verdict("fail", chain.denied, status="policy_denial")
    if last is not None and last.failure_class == "budget_exhausted":
        # Its session was stopped at a cap (attempts.spend_guard): no further Attempt may start either.
        over = budget.exhausted() if budget is not None else None
        return Verdict("fail", over or f"attempt {last.number} was stopped at a spend cap mid-session",
                       status="budget_exhausted")
    if last is not None and last.result == "completed" and not last.done:
        verdict = _steer(history, last, max_iterations or 1)
    else:
        verdict = _recovery(history, recovery, chain, rng, accounts)
    over = budget.exhausted() if budget is not None and not verdict.terminal else None
    if over is not None:
        return Verdict("fail", over, status="budget_exhausted")
    return verdict


def _recovery(history: list[AttemptFact], recovery: RecoveryConfig, chain: Chain,
              rng: random.Random | None, accounts: Availability) -> Verdict:
    if not history:
        return Verdict("retry", "no attempt recorded yet", status="queued")
    last = history[-1]
    if last.result == "completed":
        return Verdict("complete", f"attempt {last.number} met the contract", status="completed")
    if last.result in ("verifier_fault", "commit_failed", "dirty_tree", "tree_tampered", "secret_in_work"):
        # A fault says nothing about the work (a dirty tree: there is none): halt, and spend no repair. A tree
        # whose git metadata was tampered with, or work holding a secret, waits for a person: never retried on
        # the same tree blindly.
        return Verdict("fail", f"attempt {last.number} ended {last.result}", status=last.result)
    repairs = sum(1 for fact in history if fact.mode == "repair")
    repair = recovery.repair
    can_repair = repair.enabled and repairs < repair.max_attempts
    if last.result == "verification_failed":
        if can_repair and repair.trigger_on_nominal_success_with_failed_verifier:
            return Verdict("repair", f"repair {repairs + 1}/{repair.max_attempts}: unmet verifier items",
                           status="repairing")
        return Verdict("fail", f"contract unmet after {repairs} repair(s)", status="verification_failed")
    cls = last.failure_class or "unknown"
    if last.code == NO_TARGET:
        return Verdict("fail", f"{NO_TARGET}: no target of the chain {chain.shown()} was available for attempt "
                       f"{last.number}", status=NO_TARGET)
    if cls == "user_cancelled":
        # A person stopped it (the UI's Terminate): a stop of the packet run, stored beside it, holds every
        # launch until the person resumes it; then the AgentRun goes on, no retry budget spent.
        return Verdict("retry", f"attempt {last.number} was cancelled by a person: it goes on once the packet run "
                       "is resumed", status="retry_scheduled")
    if last.retryable:
        used = sum(1 for fact in history if fact.failure_class == cls)
        budget = _class_budget(recovery, cls)
        left = ""
        if cls in FALLBACK_WORTHY_CLASSES:
            pick = _next_target(history, chain, accounts)
            if pick is not None:
                return _fallback(cls, last, pick)
            left = f"; no other target of the chain {chain.shown()} is left"
        if used <= budget:
            delay = retry_delay(recovery, used, last.suggested_delay_ms, rng)
            back = _earliest_back_ms(chain, accounts) if left else 0
            wait = f", waiting {back // 1000}s for the first account's cooldown" if back > delay else ""
            return Verdict("retry", f"{cls}: retry {used}/{budget}{left}{wait}", status="retry_scheduled",
                           delay_ms=max(delay, back))
        if left:
            return Verdict("fail", f"{NO_TARGET}: {cls} and retries exhausted ({budget}){left}", status=NO_TARGET)
        if can_repair and last.workspace_changed and repair.trigger_on_retry_exhaustion_with_workspace_changes:
            return Verdict("repair", f"{cls}: retries exhausted ({budget}); the workspace changed, repairing",
                           status="repairing")
        return Verdict("fail", f"{cls}: retries exhausted ({budget})", status="failed")
    if cls in REFUSAL_CLASSES:
        # Not logged in, an unknown model: the same on every try here, so no retry; another target may serve.
        pick = _next_target(history, chain, accounts, refused=last)
        if pick is not None:
            return _fallback(cls, last, pick, "refused, not retried")
        return Verdict("fail", f"{cls} on {last.provider}: refused, not retried (the same on every try)",
                       status="failed")
    if can_repair and last.repairable and last.workspace_changed \
            and repair.trigger_on_provider_failure_with_workspace_changes:
        return Verdict("repair", f"{cls}: not retryable; the workspace changed, repairing", status="repairing")
    return Verdict("fail", f"{cls}: not retryable", status="failed")


def _steer(history: list[AttemptFact], last: AttemptFact, max_iterations: int) -> Verdict:
    """An iteration passed its contract and the agent asked for more, was blocked, or was refused."""
    if last.directive == "blocked":
        return Verdict("blocked", f"the agent is blocked: {last.directive_reason}", status="blocked")
    if last.directive == "invalid_request":
        return Verdict("fail", f"invalid agent-control request: {last.directive_reason}", status="invalid_request")
    done = sum(1 for fact in history if fact.mode == "iterate")
    if done >= max_iterations:
        return Verdict("fail", f"iteration limit: {done}/{max_iterations} iterations", status="iteration_limit")
    why = ("finish rejected: the completion contract is unmet" if last.directive == "finish_rejected"
           else "the agent asked to repeat" + (f": {last.directive_reason}" if last.directive_reason else ""))
    return Verdict("iterate", f"iteration {done + 1}/{max_iterations}: {why}", status="iterating")


def _class_budget(recovery: RecoveryConfig, cls: str) -> int:
    attempts = recovery.retry.class_attempts
    return getattr(attempts, cls) if cls in type(attempts).model_fields else recovery.retry.max_attempts


def _fallback(cls: str, last: AttemptFact, pick: Pick, how: str = "") -> Verdict:
    nxt = pick.target
    return Verdict("fallback", f"{cls} on {last.target.shown()}{': ' + how if how else ''}: falling back to "
                   f"{nxt.shown()}"
                   + _why(pick), status="retry_scheduled", target=nxt)


def _earliest_back_ms(chain: Chain, accounts: Availability) -> int:
    """How long until the first of the chain's accounts comes back, when every one rests; 0 otherwise."""
    names = [c.account for c in chain.candidates()]
    if not names or any(not accounts.resting(a) for a in names):
        return 0
    return min(accounts.cooldowns[a].remaining_ms(accounts.now_ms) for a in names if a is not None)


def _next_target(history: list[AttemptFact], chain: Chain, accounts: Availability,
                 refused: AttemptFact | None = None) -> Pick | None:
    """The first target of the chain, by (provider, account, model), not used yet in this AgentRun (a target
    once exhausted is not tried again) and not resting after a limit (a stored cooldown, shared by every
    process); which of its accounts, the rotation says. A model `refused` as unknown (a config refusal) is
    not asked for again on another account of the same target."""
    used = {chain.key_of(f.target) for f in history}
    groups = chain.groups()
    if refused is not None and refused.failure_class == "provider_config_claim":
        same = chain.group_of(refused.target)
        groups = [g for g in groups if g != same]
    return _first_ready(chain, groups, used, accounts, after=history[-1].account if history else None)


def past_unavailable(chain: Chain, target: Target, unavailable: Collection[TargetKey],
                     accounts: Availability = Availability()) -> Pick | None:
    """Where an Attempt goes when the probe of its `target` failed: the target's other accounts, then the
    targets after it in the chain (down its aliases), passing over those whose probe failed too
    (`unavailable`: provider, account, model) and resting accounts. None when nothing is left: the Attempt
    does not start on a target known to be unavailable."""
    groups = chain.groups()
    group = chain.group_of(target)
    start = groups.index(group) if group is not None else 0
    return _first_ready(chain, groups[start:], set(unavailable), accounts, after=target.account)


def _first_ready(chain: Chain, groups: list[Group], skip: set[TargetKey], accounts: Availability,
                 after: str | None) -> Pick | None:
    for group in groups:
        ready = [a for a in group.accounts
                 if (group.target.provider, a, group.target.model) not in skip and not accounts.resting(a)]
        if ready:
            return _pick(chain, group, ready, accounts, after)
    return None


def first_target(chain: Chain, accounts: Availability = Availability()) -> Pick:
    """Where a new AgentRun starts: the first target with an account not resting, the account picked by the
    rotation; when every account rests, the one back first, and how long to wait for it (`wait_ms`)."""
    resting: list[str] = []
    for group in chain.groups():
        ready = [a for a in group.accounts if not accounts.resting(a)]
        resting += [a for a in group.accounts if a is not None and a not in ready]
        if ready:
            pick = _pick(chain, group, ready, accounts, after=None)
            if resting:
                rest = "; ".join(f"{a} {accounts.cooldowns[a].said()}" for a in resting)
                return Pick(pick.target, "; ".join(w for w in (pick.why, rest) if w))
            return pick
    back = _earliest_back_ms(chain, accounts)
    if back:
        first = min((c for c in chain.candidates() if c.account and accounts.resting(c.account)),
                    key=lambda c: accounts.cooldowns[c.account or ""].until_ms)
        return Pick(first, f"every account of the chain {chain.shown()} rests; {first.account} is back in "
                    f"{back // 1000}s", back)
    return Pick(next(iter(chain.candidates()), chain.primary))  # none: the chain's denial says why


def next_in_turn(chain: Chain, last: Target, accounts: Availability = Availability()) -> Pick:
    """The target of an AgentRun's next Attempt on the same target (a retry, repair or iteration): under
    `between_attempts` the next of its accounts in turn (passing over resting ones), else the same account:
    the other rotations pick where an AgentRun starts and where it falls back, not between its Attempts."""
    group = chain.group_of(last)
    if group is None or group.rotation != "between_attempts" or len(group.accounts) < 2:
        return Pick(last)
    ready = [a for a in group.accounts if not accounts.resting(a)] or [last.account]
    return _pick(chain, group, ready, accounts, after=last.account)


def _pick(chain: Chain, group: Group, ready: list[str | None], accounts: Availability, after: str | None) -> Pick:
    """Which of a target's `ready` accounts (in the chain's order) the rotation gives; `after`: the account
    of the AgentRun's last Attempt, from which `between_attempts` moves on."""
    if ready == [None] or len(group.accounts) < 2:
        return Pick(replace(group.target, account=ready[0]))
    names = [a for a in ready if a is not None]
    if group.rotation == "between_attempts":
        order = list(group.accounts)
        start = order.index(after) + 1 if after in order else 0
        account = next(a for a in order[start:] + order[:start] if a in names)
        return Pick(replace(group.target, account=account),
                    f"between_attempts: {account} follows {after}" if after in order else "")
    choice = choose_account(names, group.rotation, now_ms=accounts.now_ms, usage=accounts.usage)
    why = choice.reason if group.rotation in ("round_robin", "least_used") else ""
    return Pick(replace(group.target, account=choice.account), why)


def _why(pick: Pick) -> str:
    return f"; {pick.why}" if pick.why else ""


def retry_delay(recovery: RecoveryConfig, retry_number: int, suggested_ms: int | None,
                rng: random.Random | None = None) -> int:
    """min(2^(n-1) × base, max), jittered uniformly in [d/2, d]; a provider's suggestion is a floor."""
    retry = recovery.retry
    delay = min(2 ** max(retry_number - 1, 0) * retry.base_delay_ms, retry.max_delay_ms)
    if retry.jitter and delay > 0:
        delay = int((rng or random.Random()).uniform(delay / 2, delay))
    return max(delay, min(suggested_ms or 0, retry.max_delay_ms)) if retry.max_delay_ms else delay


def chain_of(provider: str, model: str | None, effort: str | None, accounts: list[str],
             fallback: list[TargetSpec], rotation: Rotation = "fill_first", probe: bool = False,
             agent: tuple[str, list[str], list[str]] = ("", [], [])) -> Chain:
    """`agent`: the prompt's agent, and the providers and model prefixes its definition allows (empty: any)."""
    name, providers, models = agent
    return Chain(Target(provider, model, None, effort), tuple(accounts), tuple(fallback), rotation, probe,
                 agent=name, agent_providers=tuple(providers), agent_models=tuple(models))
